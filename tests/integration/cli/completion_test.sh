#!/usr/bin/env bash
# The shell completions of leader: the bash script sources and completes subcommands, options and
# option values; every option `leader <command> --help` shows is offered by bash and zsh; the zsh
# function loads through compinit (skipped with a message when zsh is not installed).
#   completion_test.sh LEADER_BINARY COMPLETION_DIR
set -euo pipefail
leader=$1
dir=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

complete_words() {  # complete_words WORD... : the candidates bash offers for the last word
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _leader; echo "${COMPREPLY[*]}"' \
    _ "$dir/leader.bash" "$@"
}

[ "$(complete_words leader ru)" = "run" ] || fail "leader ru<TAB> gives '$(complete_words leader ru)'"
[ "$(complete_words leader rel)" = "release" ] || fail "leader rel<TAB>"
[ "$(complete_words leader run --lo)" = "--lock --log-format" ] || fail "leader run --lo<TAB>"
[ "$(complete_words leader status --log-format j)" = "json" ] || fail "--log-format j<TAB>"
[ -z "$(complete_words leader run --lock x -- ec)" ] || fail "completed after --"

# Every subcommand `leader --help` lists (cron, serve, probe only when built) is completed, and
# so is each of its options.
commands=$("$leader" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$commands" ] || fail "leader --help lists no subcommands"
top=" $(complete_words leader '') "
for command in $commands; do
  [[ "$top" == *" $command "* ]] || fail "bash: leader <TAB> does not offer $command"
  grep -q -- "'$command:" "$dir/_leader" || fail "zsh: no $command in its commands"
done
for command in $commands; do
  offered=" $(complete_words leader "$command" --) "
  for option in $("$leader" "$command" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    [[ "$offered" == *" $option "* ]] || fail "bash: leader $command does not offer $option"
    grep -q -- "$option" "$dir/_leader" || fail "zsh: leader $command lacks $option"
  done
done

if command -v zsh > /dev/null; then
  out=$(zsh -f -c "fpath=('$dir' \$fpath); autoload -Uz compinit; compinit -u -d \$(mktemp); print -r -- \$_comps[leader]")
  [ "$out" = "_leader" ] || fail "zsh compinit does not map leader to _leader: '$out'"
else
  echo "zsh not installed: zsh completion load check skipped"
fi
echo "completion: ok"
