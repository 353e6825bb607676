# Sourced (bash): where the shared toolchain tarballs are and where they are
# unpacked. Sets
#   shared  GOHEAP2PPROF_SHARED_TOOLCHAINS, else ../shared/toolchains beside
#           the repository (for a git worktree: beside its main checkout too);
#   cache   GOHEAP2PPROF_TOOLCHAINS_DIR, else
#           ${XDG_CACHE_HOME:-$HOME/.cache}/goheap2pprof/toolchains.
# Needs repo (the repository root) set by the caller.
toolchain_shared_dir() {
  local common
  if [[ -n ${GOHEAP2PPROF_SHARED_TOOLCHAINS:-} ]]; then
    echo "$GOHEAP2PPROF_SHARED_TOOLCHAINS"
    return
  fi
  if [[ -d $repo/../shared/toolchains ]]; then
    (cd "$repo/../shared/toolchains" && pwd)
    return
  fi
  # A worktree (git worktree add) lives elsewhere; its main checkout has the
  # shared folder beside it.
  if common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null) &&
    [[ -d $common/../../shared/toolchains ]]; then
    (cd "$common/../../shared/toolchains" && pwd)
    return
  fi
  echo "$repo/../shared/toolchains"
}
shared=$(toolchain_shared_dir)
cache=${GOHEAP2PPROF_TOOLCHAINS_DIR:-${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/goheap2pprof/toolchains}
