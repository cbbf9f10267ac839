# bash completion for leader(1): subcommands, their options, and the values some options take.
# Installed as share/bash-completion/completions/leader; or: source tools/leader/completion/leader.bash
# Keep the option lists in step with `leader <command> --help` (tests/integration/cli checks it).

_leader_options() {
  case "$1" in
    run) echo "--store --lock --ttl --wait --restart --min-hold --slots --grace --skip-exit-code
               --node-id --json --json-file --verbose --quiet --log-format --help" ;;
    status) echo "--store --lock --slots --json --verbose --log-format --help" ;;
    observe) echo "--store --lock --interval --json --until-free --verbose --log-format --help" ;;
    list) echo "--store --prefix --tenant --json --verbose --log-format --help" ;;
    release) echo "--store --lock --force --yes-i-know --slot --slots --node-id --verbose
                   --log-format --help" ;;
    cron) echo "--store --schedule --lock --time-zone --crontab --ttl --grace --max-clock-skew
                --misfire --node-id --verbose --quiet --log-format --help" ;;
    serve) echo "--store --listen --allow-remote --token-file --clients-file --campaign --campaign-ttl --lock
                 --node-id --history --ready-timeout --max-wait --max-ttl --threads --verbose
                 --log-format --help" ;;
    probe) echo "--listen --ready --timeout --help" ;;
  esac
}

_leader() {
  local cur prev sub i
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  sub=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in
      --) return 0 ;;  # COMMAND and its own arguments: leave them to the default completion
      -*) ;;
      *) if [ -z "$sub" ]; then sub=${COMP_WORDS[i]}; fi ;;
    esac
  done
  if [ -z "$sub" ]; then
    COMPREPLY=($(compgen -W "run status observe list release cron serve probe --help --version" -- "$cur"))
    return 0
  fi
  case "$prev" in
    --log-format) COMPREPLY=($(compgen -W "text json" -- "$cur")); return 0 ;;
    --restart) COMPREPLY=($(compgen -W "never on-failure always" -- "$cur")); return 0 ;;
    --misfire) COMPREPLY=($(compgen -W "skip run-once" -- "$cur")); return 0 ;;
    --store) COMPREPLY=($(compgen -W "sqlite:// redis:// rediss:// postgresql:// mysql:// etcd://
                                      zk:// dynamodb:// consul:// k8s:// mongodb://" -- "$cur"))
             compopt -o nospace 2> /dev/null
             return 0 ;;
    --crontab | --json-file | --token-file | --clients-file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    --wait) COMPREPLY=($(compgen -W "forever 500ms 5s 30s 1m 1m30s 5m 1h 1d" -- "$cur")); return 0 ;;
    --ttl | --min-hold | --grace | --max-clock-skew | --interval | --campaign-ttl | \
      --ready-timeout | --max-wait | --max-ttl | --timeout)
      COMPREPLY=($(compgen -W "500ms 5s 30s 1m 1m30s 5m 1h 1d" -- "$cur")); return 0 ;;
    --lock | --node-id | --prefix | --tenant | --schedule | --time-zone | --slots | --slot | \
      --skip-exit-code | --listen | --campaign | --history | --threads) return 0 ;;
  esac
  COMPREPLY=($(compgen -W "$(_leader_options "$sub")" -- "$cur"))
  return 0
}

complete -F _leader -o default leader
