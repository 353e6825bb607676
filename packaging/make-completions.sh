#!/usr/bin/env bash
# Bash and zsh completions for goheap2pprof, made at build time from the binary's own --help
# (cmake/packaging.cmake), so every option of every command is there and none that is not:
# <dir>/goheap2pprof (bash) and <dir>/_goheap2pprof (zsh).
#
#   bash packaging/make-completions.sh <dir> [runner...] <goheap2pprof>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: $0 <dir> [runner...] <goheap2pprof>}
shift
run=("$@")
((${#run[@]})) || { echo "usage: $0 <dir> [runner...] <goheap2pprof>" >&2; exit 2; }
source "$here/help-lib.sh"
mkdir -p "$dir"
mapfile -t commands < <(help_commands)
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# ---- bash
{
  echo "# bash completion for goheap2pprof; generated from its --help by packaging/make-completions.sh"
  echo "_goheap2pprof() {"
  echo '  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd="" i opts'
  echo '  for ((i = 1; i < COMP_CWORD; i++)); do'
  echo "    case \${COMP_WORDS[i]} in $(IFS='|'; echo "${commands[*]}")) cmd=\${COMP_WORDS[i]}; break ;; esac"
  echo '  done'
  echo '  case "$cmd $prev" in'
  for cmd in "" "${commands[@]}"; do
    while IFS=$'\t' read -r short long type choices _; do
      [[ $type == - ]] && continue
      names="\"$cmd $long\""
      [[ $short != - ]] && names+="|\"$cmd $short\""
      if [[ $choices != - ]]; then
        echo "    $names) COMPREPLY=(\$(compgen -W $(sq "$choices") -- \"\$cur\")); return ;;"
      elif [[ $type == TEXT ]]; then
        echo "    $names) COMPREPLY=(\$(compgen -f -- \"\$cur\")); return ;;"
      else
        echo "    $names) COMPREPLY=(); return ;;  # a number"
      fi
    done < <(help_option_rows $cmd)
  done
  echo '  esac'
  echo '  case $cmd in'
  for cmd in "" "${commands[@]}"; do
    opts=$(help_option_rows $cmd | awk -F'\t' '{if ($1 != "-") printf "%s ", $1; printf "%s ", $2}')
    echo "    \"$cmd\") opts=$(sq "${opts% }") ;;"
  done
  echo '  esac'
  echo '  if [[ $cur == -* ]]; then'
  echo '    COMPREPLY=($(compgen -W "$opts" -- "$cur"))'
  echo '  else'
  echo '    # Process ids (and, first, the subcommands).'
  echo "    COMPREPLY=(\$(compgen -W \"\$([[ -z \$cmd ]] && echo $(sq "${commands[*]}")) \$(cd /proc && ls -d [0-9]* 2>/dev/null)\" -- \"\$cur\"))"
  echo '  fi'
  echo '}'
  echo 'complete -F _goheap2pprof goheap2pprof'
} >"$dir/goheap2pprof.new"

# ---- zsh
zsh_specs() {
  while IFS=$'\t' read -r short long type choices desc; do
    [[ $desc == - ]] && desc=""
    desc=${desc%%;*}
    desc=${desc//[\[\]:\'\\]/}
    local action=""
    if [[ $type != - ]]; then
      if [[ $choices != - ]]; then
        action=":value:($choices)"
      elif [[ $type == TEXT ]]; then
        action=":value:_files"
      else
        action=":number: "
      fi
    fi
    if [[ $short != - ]]; then
      echo "    '($short $long)'{$short,$long}'[$desc]$action'"
    else
      echo "    '$long[$desc]$action'"
    fi
  done < <(help_option_rows "$@")
}
{
  echo "#compdef goheap2pprof"
  echo "# zsh completion for goheap2pprof; generated from its --help by packaging/make-completions.sh"
  echo "_goheap2pprof() {"
  echo "  local -a pids"
  echo "  pids=(\${(f)\"\$(cd /proc && print -l [0-9]*(N))\"})"
  echo "  if (( CURRENT > 2 )); then"
  echo "    case \${words[2]} in"
  for cmd in "${commands[@]}"; do
    echo "      $cmd)"
    echo "        shift words; (( CURRENT-- ))"
    echo "        _arguments -s \\"
    zsh_specs "$cmd" | sed 's/$/ \\/'
    echo "          '*:pid:(\$pids)'"
    echo "        return ;;"
  done
  echo "    esac"
  echo "  fi"
  echo "  _arguments -s \\"
  zsh_specs | sed 's/$/ \\/'
  echo "    '1:pid or subcommand:(${commands[*]} \$pids)'"
  echo "}"
  echo '_goheap2pprof "$@"'
} >"$dir/_goheap2pprof.new"
mv "$dir/goheap2pprof.new" "$dir/goheap2pprof"
mv "$dir/_goheap2pprof.new" "$dir/_goheap2pprof"
