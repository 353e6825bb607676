#!/usr/bin/env bash
# What a user installs: the static executables, the Debian package, the man page.
#
#   bash tests/e2e/packaging_test.sh <path-to-goheap2pprof> <path-to-profdiff>
#
# One run of scripts/package.sh builds the static linux/amd64 and linux/arm64 executables
# (one build tree per arch in <build>/package, reused by the next run, or in
# $GOHEAP2PPROF_PACKAGE_BUILD_ROOT) and makes the .deb from this build tree. Then:
#  - each static executable has no dynamic section and no interpreter (file, readelf), and
#    its tarball holds the binary, man page, completions, unit and licences;
#  - no release executable (static amd64 and arm64, the .deb's) has the test seams: strings
#    finds none of their variables, --version does not say so, and the amd64 capture below
#    runs with GOHEAP2PPROF_TEST_SEAM=pid-reuse set, which would fail it in a test build;
#  - static amd64, copied alone into an empty directory that becomes the root of a new mount
#    namespace with only /proc mounted, captures testdata/oracle (Go 1.26.8) and the profile
#    equals the program's own (tools/profdiff): once sharing the host's pid namespace (the
#    target runs outside, as with a sidecar or --pid=host), once in a new pid namespace that
#    the target runs in too (a container holding both);
#  - static arm64 under qemu-aarch64-static captures the arm64 oracle, itself under
#    qemu-aarch64-static, and the profile equals the program's own;
#  - the .deb's Depends names Capstone and libcurl, which the binary loads when first needed
#    (dlopen: no NEEDED entry for dpkg-shlibdeps), and protobuf, which it links;
#  - the .deb installed with apt-get into a fresh Debian 12 root made by mmdebstrap from
#    Debian's mirror: goheap2pprof --version, man goheap2pprof, a capture equal to the
#    program's own, systemd-analyze verify of the unit (and it is not enabled), the options of
#    the installed man page equal those of the installed binary's --help for every command,
#    the completions parse, and apt-get remove, then purge, leave none of its files behind.
#    Without a mirror (mmdebstrap fails), the package is installed on this machine instead,
#    the build tree being on no PATH; the test says which.
#
# Needs root (namespaces, chroot, apt), unshare, qemu-user-static, mmdebstrap, help2man, zsh,
# and the cross toolchain and arm64 libraries (scripts/install-deps.sh installs them all).
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
set -u
source "$(dirname "$0")/lib.sh"

e2e_init "$@"
e2e_require_executables "$tool" "$profdiff"
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root (mount namespaces, chroot, apt-get install)"
  exit 77
fi
for c in unshare chroot qemu-aarch64-static mmdebstrap help2man zsh aarch64-linux-gnu-g++ cpack; do
  e2e_require_command "$c" "$c is not installed (bash scripts/install-deps.sh)"
done
e2e_make_work packaging
trap 'e2e_stop_pids; exit_cleanup' EXIT
trap 'exit 1' INT TERM
host_installed=0
exit_cleanup() {
  if ((host_installed)); then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq goheap2pprof >/dev/null 2>&1
  fi
}
start=$SECONDS

# ---- build: both static executables and the .deb, once. GOHEAP2PPROF_PACKAGE_BUILD_ROOT
# points at the build trees of an earlier `scripts/package.sh --build-root DIR` to reuse them.
pkg=${GOHEAP2PPROF_PACKAGE_BUILD_ROOT:-$bin/package}
if ! bash "$src/scripts/package.sh" --arch all --deb --build-root "$pkg" --out "$work/dist" \
  --dynamic-build "$bin" >"$work/package.out" 2>&1; then
  fail "scripts/package.sh" "$work/package.out"
  e2e_finish
fi
sed 's/^/    /' "$work/package.out"
echo "    (package.sh: $((SECONDS - start)) s)"
version=$("$tool" --version | awk 'NR == 1 {print $2}')

for arch in amd64 arm64; do
  exe=$pkg/static-$arch/goheap2pprof.stripped
  what=$(file -b "$exe")
  if [[ $what == *"statically linked"* ]] && ! LC_ALL=C readelf -d "$exe" | grep -q 'Dynamic section' &&
    ! LC_ALL=C readelf -l "$exe" | grep -q INTERP; then
    pass "static linux/$arch has no dynamic section and no interpreter ($(stat -c %s "$exe") bytes; ${what%%,*})"
  else
    fail "static linux/$arch is not fully static: $what"
  fi
  tarball=$work/dist/goheap2pprof-$version-linux-$arch.tar.gz
  listing=$(tar -tzf "$tarball" 2>/dev/null | sed 's|^[^/]*/||' | sort)
  missing=()
  for f in goheap2pprof goheap2pprof.1 completions/goheap2pprof completions/_goheap2pprof \
    systemd/goheap2pprof-serve.service README.txt LICENSES/goheap2pprof.txt \
    $(awk '$1 !~ /^#/ && NF == 2 {print "LICENSES/" $1 ".txt"}' "$src/packaging/linked-libraries.txt"); do
    grep -qxF "$f" <<<"$listing" || missing+=("$f")
  done
  if ((${#missing[@]} == 0)); then
    pass "$(basename "$tarball") holds the binary, man page, completions, unit and $(grep -c '^LICENSES/.*\.txt$' <<<"$listing") licence texts"
  else
    fail "$(basename "$tarball") lacks ${missing[*]}"
  fi
done

# no_seams <label> <binary>: a release build reads no test seam (CMake option
# GOHEAP2PPROF_TEST_SEAMS, off but in test builds).
no_seams() {
  local found
  found=$(strings -a "$2" | grep -oE 'GOHEAP2PPROF_(SERVE_SEAM|TEST_SEAM|TEST_CGROUP_ROOT)' | sort -u | tr '\n' ' ')
  if [[ -z $found ]] && ! strings -a "$2" | grep -q '^test seams compiled in'; then
    pass "$1 has no test seams (strings finds none of their variables)"
  else
    fail "$1 has test seams: ${found:-the --version line}"
  fi
}
for arch in amd64 arm64; do
  no_seams "static linux/$arch" "$pkg/static-$arch/goheap2pprof.stripped"
done
deb_exe=$work/deb-contents/usr/bin/goheap2pprof
if dpkg-deb -x "$(ls "$work"/dist/goheap2pprof_*.deb | head -n 1)" "$work/deb-contents" 2>/dev/null &&
  [[ -x $deb_exe ]]; then
  no_seams "the .deb's goheap2pprof" "$deb_exe"
else
  fail "cannot unpack the .deb's goheap2pprof"
fi
# The libraries the binary loads when first needed (dlopen) are no NEEDED
# entry for dpkg-shlibdeps to find: the package names them itself.
depends=$(dpkg-deb -f "$(ls "$work"/dist/goheap2pprof_*.deb | head -n 1)" Depends 2>&1)
for lib in libcapstone4 libcurl4 libprotobuf32; do
  if [[ $depends == *"$lib"* ]]; then
    pass "the .deb depends on $lib"
  else
    fail "the .deb's Depends lacks $lib: $depends"
  fi
done

# ---- the oracle targets (the go_programs fixture's Go 1.26.8 builds).
if [[ $(go_programs_status go1.26.8) != ok ]]; then
  fail "go1.26.8 test programs: $(go_programs_status go1.26.8)"
  e2e_finish
fi
oracle_amd64=$(go_program go1.26.8 oracle-amd64-exe)
oracle_arm64=$(go_program go1.26.8 oracle-arm64-exe)

# compare <label> <dir>: profdiff of <dir>/oracle.pb.gz and <dir>/ours.pb.gz; under qemu
# every mapping must match too.
compare() {
  local label=$1 dir=$2 samples
  if "$profdiff" "$dir/oracle.pb.gz" "$dir/ours.pb.gz" >"$dir/profdiff.out" 2>&1 &&
    ! grep -q 'other mappings differ' "$dir/profdiff.out"; then
    samples=$(sed -n 's/^samples: expected \([0-9]*\),.*/\1/p' "$dir/profdiff.out")
    pass "$label: equals the program's own profile (${samples:-?} samples)"
  else
    fail "$label: differs from the program's own profile (files in $dir)" "$dir/profdiff.out"
  fi
}

# start_oracle <dir> <rate> [runner...] <binary>: starts a target, waits for READY.
start_oracle() {
  local dir=$1 rate=$2
  shift 2
  mkdir -p "$dir"
  e2e_start "$dir/target.out" "$dir/target.err" "$@" -rate "$rate" -out "$dir/oracle.pb.gz"
  if ! e2e_wait_for_line "$dir/target.out" '^READY ' "$target_pid" 300; then
    sed 's/^/    target: /' "$dir/target.err" | tail -n 5
    return 1
  fi
}

# ---- static amd64, alone in an empty root, host pid namespace shared.
root=$work/empty-root
mkdir -p "$root/proc"
cp "$pkg/static-amd64/goheap2pprof.stripped" "$root/goheap2pprof"
dir=$work/empty-root-shared-pid
label="static amd64 alone in an empty root (new mount namespace, host pid namespace, only /proc; GOHEAP2PPROF_TEST_SEAM=pid-reuse ignored)"
if start_oracle "$dir" 1 "$oracle_amd64"; then
  GOHEAP2PPROF_TEST_SEAM=pid-reuse unshare --mount --propagation private bash -c \
    'mount -t proc proc "$0/proc" && exec chroot "$0" /goheap2pprof "$1" -o /ours.pb.gz' \
    "$root" "$target_pid" >"$dir/tool.out" 2>&1
  rc=$?
  e2e_stop_pids
  mv "$root/ours.pb.gz" "$dir/" 2>/dev/null
  if [[ $rc == 0 ]]; then compare "$label" "$dir"; else fail "$label: exited $rc" "$dir/tool.out"; fi
else
  e2e_stop_pids
  fail "$label: the target did not start"
fi
if [[ $(find "$root" -mindepth 1 | sort | tr '\n' ' ') == "$root/goheap2pprof $root/proc " ]]; then
  pass "the empty root held only goheap2pprof and /proc"
else
  fail "the empty root holds more: $(find "$root" -mindepth 1 | tr '\n' ' ')"
fi

# ---- the same, in a new pid namespace that the target runs in too.
dir=$work/empty-root-new-pid
mkdir -p "$dir"
label="static amd64 alone in an empty root (new mount and pid namespaces shared with the target)"
unshare --mount --pid --fork --propagation private bash -c '
  root=$0 dir=$1 target=$2
  mount -t proc proc "$root/proc" || exit 2
  "$target" -rate 0 -out "$dir/oracle.pb.gz" >"$dir/target.out" 2>"$dir/target.err" &
  pid=$!
  for ((i = 0; i < 1200; i++)); do grep -q "^READY " "$dir/target.out" && break; sleep 0.1; done
  chroot "$root" /goheap2pprof "$pid" -o /ours.pb.gz
  rc=$?
  echo "target pid in the namespace: $pid"
  kill "$pid"; wait "$pid"
  exit $rc' "$root" "$dir" "$oracle_amd64" >"$dir/tool.out" 2>&1
rc=$?
mv "$root/ours.pb.gz" "$dir/" 2>/dev/null
if [[ $rc == 0 ]]; then compare "$label" "$dir"; else fail "$label: exited $rc" "$dir/tool.out"; fi

# ---- static arm64 under qemu-user, capturing an arm64 program under qemu-user.
dir=$work/arm64-qemu
label="static arm64 under qemu-aarch64-static, target under qemu-aarch64-static"
if start_oracle "$dir" 1 qemu-aarch64-static "$oracle_arm64"; then
  qemu-aarch64-static "$pkg/static-arm64/goheap2pprof.stripped" "$target_pid" \
    -o "$dir/ours.pb.gz" >"$dir/tool.out" 2>&1
  rc=$?
  e2e_stop_pids
  if [[ $rc == 0 ]]; then compare "$label" "$dir"; else fail "$label: exited $rc" "$dir/tool.out"; fi
else
  e2e_stop_pids
  fail "$label: the target did not start"
fi
qemu-aarch64-static "$pkg/static-arm64/goheap2pprof.stripped" --version >"$work/arm64-version" 2>&1
if grep -q '^linux/arm64, statically linked$' "$work/arm64-version"; then
  pass "static arm64 --version says linux/arm64, statically linked"
else
  fail "static arm64 --version" "$work/arm64-version"
fi

# ---- the Debian package in a fresh Debian 12 root.
deb=$(ls "$work"/dist/goheap2pprof_"$version"_*.deb 2>/dev/null | head -n 1)
if [[ -z $deb ]]; then
  fail "no .deb in $work/dist"
  e2e_finish
fi
droot=$work/debian12
mm_start=$SECONDS
if mmdebstrap --variant=minbase --include=man-db,systemd bookworm "$droot" \
  http://deb.debian.org/debian >"$work/mmdebstrap.out" 2>&1; then
  where="a fresh Debian 12 root (mmdebstrap from Debian's mirror, $((SECONDS - mm_start)) s)"
  cp /etc/resolv.conf "$droot/etc/resolv.conf"
  cp "$deb" "$droot/tmp/"
  # in_root <command...>: runs it chrooted into the Debian root, with /proc mounted there
  # for the command only (a mount namespace of its own).
  in_root() {
    unshare --mount --propagation private bash -c \
      'mount -t proc proc "$0/proc" && exec chroot "$0" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"' \
      "$droot" "$@"
  }
  debfile=/tmp/$(basename "$deb")
  prefix=$droot
else
  echo "    mmdebstrap failed (the end of its output below); using this machine instead"
  tail -n 5 "$work/mmdebstrap.out" | sed 's/^/    /'
  where="this machine (no Debian 12 root could be made), with the build tree on no PATH"
  in_root() {
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
  }
  debfile=$deb
  prefix=""
  host_installed=1
fi
echo "    installing $(basename "$deb") into $where"
label="apt-get install ./$(basename "$deb") into $where"
in_root find / -xdev \( -path /proc -o -path /tmp -o -path /var -o -path /root \) -prune -o -print 2>/dev/null |
  sort >"$work/files-before"
if in_root sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$0"' \
  "$debfile" >"$work/apt-install.out" 2>&1; then
  pass "$label"
else
  fail "$label" "$work/apt-install.out"
  e2e_finish
fi
in_root dpkg -L goheap2pprof | sort >"$work/dpkg-L"

# --version from PATH: the installed binary, not the build tree.
if in_root sh -c 'command -v goheap2pprof && goheap2pprof --version' >"$work/version.out" 2>&1 &&
  [[ $(head -n 1 "$work/version.out") == /usr/bin/goheap2pprof ]] &&
  grep -q "^goheap2pprof $version\$" "$work/version.out" && grep -q '^  protobuf ' "$work/version.out"; then
  pass "goheap2pprof --version (/usr/bin/goheap2pprof): $(sed -n 2p "$work/version.out"), $(sed -n 3p "$work/version.out")"
else
  fail "goheap2pprof --version" "$work/version.out"
fi

if in_root sh -c 'MANWIDTH=100 man goheap2pprof' >"$work/man.out" 2>&1 &&
  grep -q '^EXIT STATUS' "$work/man.out" && grep -q '^PERMISSIONS' "$work/man.out" &&
  grep -q '^EXAMPLES' "$work/man.out" && grep -q '^SUBCOMMANDS' "$work/man.out"; then
  pass "man goheap2pprof ($(wc -l <"$work/man.out") lines, with EXIT STATUS, PERMISSIONS, EXAMPLES, SUBCOMMANDS)"
else
  fail "man goheap2pprof" "$work/man.out"
fi

# The options of each command in the installed man page and in the installed --help.
# man_options <command|"">: the options the rendered page lists for it (the OPTIONS section
# for the main command, the command's subsection of SUBCOMMANDS otherwise).
man_options() {
  awk -v cmd="$1" '
    cmd == "" && /^OPTIONS/ {on = 1; next}
    cmd == "" && /^[A-Z]/ {on = 0}
    cmd != "" && /^   goheap2pprof / {on = ($2 == cmd); next}
    cmd != "" && /^[A-Z]/ {on = 0}
    on' "$work/man.out" | grep -oE '^ {7}(-[a-zA-Z],)?--[a-z][a-z0-9-]*' | sed 's/.*--/--/' | sort -u
}
run=(in_root goheap2pprof)
source "$src/packaging/help-lib.sh"
commands=$(help_commands | tr '\n' ' ')
for cmd in "" $commands; do
  name="goheap2pprof${cmd:+ $cmd}"
  diff <(man_options "$cmd") <(help_options $cmd) >"$work/options-diff" 2>&1
  if [[ $? == 0 && -n $(help_options $cmd) ]]; then
    pass "man page and --help list the same $(help_options $cmd | wc -l) options for $name"
  else
    fail "man page and --help differ for $name (< man, > --help)" "$work/options-diff"
  fi
done

# The completions parse, and know every command.
if in_root bash -c 'source /usr/share/bash-completion/completions/goheap2pprof && complete -p goheap2pprof' \
  >"$work/bash-completion.out" 2>&1 &&
  zsh -n "$prefix/usr/share/zsh/vendor-completions/_goheap2pprof" 2>"$work/zsh.out"; then
  pass "bash and zsh completions parse (commands: $commands)"
else
  fail "completions" "$work/bash-completion.out"
  sed 's/^/    zsh: /' "$work/zsh.out"
fi

# A capture with the installed binary (the target runs on the host; the root sees it
# through its /proc).
dir=$work/deb-capture
if start_oracle "$dir" 0 "$oracle_amd64"; then
  in_root goheap2pprof "$target_pid" -o /tmp/deb-capture.pb.gz >"$dir/tool.out" 2>&1
  rc=$?
  e2e_stop_pids
  mv "$prefix/tmp/deb-capture.pb.gz" "$dir/ours.pb.gz" 2>/dev/null
  if [[ $rc == 0 ]]; then
    compare "a capture with the installed goheap2pprof" "$dir"
  else
    fail "a capture with the installed goheap2pprof exited $rc" "$dir/tool.out"
  fi
else
  e2e_stop_pids
  fail "a capture with the installed goheap2pprof: the target did not start"
fi

# The unit: valid for systemd, and installed but not enabled.
unit=/usr/lib/systemd/system/goheap2pprof-serve.service
if in_root systemd-analyze verify "$unit" >"$work/verify.out" 2>&1 && ! grep -q goheap2pprof "$work/verify.out"; then
  pass "systemd-analyze verify $unit"
else
  fail "systemd-analyze verify $unit" "$work/verify.out"
fi
enabled=$(in_root systemctl is-enabled goheap2pprof-serve.service 2>&1)
if [[ $enabled == disabled ]]; then
  pass "goheap2pprof-serve.service is installed disabled"
else
  fail "goheap2pprof-serve.service is-enabled says: $enabled"
fi

# apt-get remove, then purge: no file of the package, nothing new left.
left_behind() {
  local f
  while read -r f; do
    [[ -z $f || $f == /. ]] && continue
    if [[ -d $1$f ]]; then grep -qxF "$f" "$work/files-before" || echo "$f"; elif [[ -e $1$f || -L $1$f ]]; then echo "$f"; fi
  done <"$work/dpkg-L"
}
if in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq goheap2pprof' >"$work/remove.out" 2>&1 &&
  [[ -z $(left_behind "$prefix") ]]; then
  pass "apt-get remove leaves none of the package's $(grep -vc '^/\.$' "$work/dpkg-L") files and directories"
else
  fail "apt-get remove left: $(left_behind "$prefix" | tr '\n' ' ')" "$work/remove.out"
fi
in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq goheap2pprof' >"$work/purge.out" 2>&1
status=$(in_root dpkg-query -W -f='${db:Status-Abbrev}' goheap2pprof 2>/dev/null)
in_root find / -xdev \( -path /proc -o -path /tmp -o -path /var -o -path /root \) -prune -o -print 2>/dev/null |
  sort >"$work/files-after"
# What is new after the purge may only be the dependencies apt brought (not goheap2pprof's).
new=$(comm -13 "$work/files-before" "$work/files-after" | grep -i goheap2pprof)
if [[ -z $status || $status == "un " || $status == "pn " ]] && [[ -z $new ]]; then
  pass "apt-get purge: the package is gone and no path naming goheap2pprof remains"
else
  fail "apt-get purge: status '$status', left: $new" "$work/purge.out"
fi
host_installed=0

echo "    (the suite took $((SECONDS - start)) s)"
e2e_finish
