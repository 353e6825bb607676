# Shared by packaging/make-manpage.sh, packaging/make-completions.sh and
# tests/e2e/packaging_test.sh: what the binary's --help says, per command.
# Not a script: source it after setting the array `run` to the command that
# runs goheap2pprof (e.g. (qemu-aarch64-static ./goheap2pprof)).

# The subcommands a goheap2pprof may have; one is documented when its
# `--help` answers with its own usage line (every one is a subcommand of the
# one CLI11 app, and the main --help lists them too).
help_candidate_commands=(serve watch push agent mem growth probe)

# help_commands: the subcommands this binary has, one a line.
help_commands() {
  local c
  for c in "${help_candidate_commands[@]}"; do
    # grep reads the whole --help (no -q): under pipefail, a grep that quits at
    # the first match can leave a long --help to die of SIGPIPE, failing the test.
    if "${run[@]}" "$c" --help 2>/dev/null | grep "^Usage: goheap2pprof $c " >/dev/null; then
      echo "$c"
    fi
  done
}

# help_text [command]: the --help of the main program or of a subcommand.
help_text() {
  "${run[@]}" ${1:+"$1"} --help
}

# help_options [command]: the long options of that --help, sorted, one a line
# (from its "Options:" section; --help itself included).
help_options() {
  help_text "$@" | awk '/^Options:/ {on = 1; next} /^[^ ]/ {on = 0} on' |
    grep -oE '^ +(-[a-zA-Z],)?--[a-z][a-z0-9-]*' | sed 's/.*--/--/' | sort -u
}

# help_short_options [command]: the one-letter options (-o, -v, -h), sorted.
help_short_options() {
  help_text "$@" | awk '/^Options:/ {on = 1; next} /^[^ ]/ {on = 0} on' |
    grep -oE '^ +-[a-zA-Z],' | tr -d ' ,' | sort -u
}

# help_choices <command|""> <--option>: the values of an option with a fixed
# set ("--format TEXT:{pprof,json,text}=pprof" gives "pprof json text").
help_choices() {
  help_text ${1:+"$1"} | grep -oE "^ +(-[a-zA-Z],)?$2 [A-Z]+:\{[^}]*\}" |
    sed 's/.*{//; s/}//; s/,/ /g'
}

# help_option_rows [command]: one tab-separated row per option of that
# --help: short, long, value type (TEXT, UINT, ...), choices (space-separated),
# description; "-" stands for an empty field (no short name, a flag, no fixed
# choices), since `read` merges empty tab-separated fields.
help_option_rows() {
  help_text "$@" | awk '
    function e(s) { return s == "" ? "-" : s }
    function flush() {
      if (spec == "") return
      short = ""; long = ""; type = ""; choices = ""
      n = split(spec, w, " ")
      names = w[1]
      if (names ~ /^-[a-zA-Z],/) { short = substr(names, 1, 2); long = substr(names, 4) }
      else long = names
      if (n >= 2 && w[2] ~ /^[A-Z]+/) {
        type = w[2]; sub(/[:=].*/, "", type)
        if (w[2] ~ /:\{/) { choices = w[2]; sub(/.*:\{/, "", choices); sub(/\}.*/, "", choices); gsub(/,/, " ", choices) }
      }
      printf "%s\t%s\t%s\t%s\t%s\n", e(short), long, e(type), e(choices), e(desc)
      spec = ""; desc = ""
    }
    /^Options:/ {on = 1; next}
    /^[^ ]/ {flush(); on = 0}
    !on {next}
    /^  -/ {
      flush()
      line = $0; sub(/^ +/, "", line)
      if (match(line, /   +|  [a-z(]/)) { spec = substr(line, 1, RSTART - 1); desc = substr(line, RSTART); sub(/^ +/, "", desc) }
      else { spec = line; desc = "" }
      next
    }
    /^ +[^ ]/ { d = $0; sub(/^ +/, "", d); desc = (desc == "" ? d : desc " " d); next }
    END {flush()}'
}
