# Shared part of the examples' ctest drivers (sourced, not run):
#   source "$(dirname "$0")/../test-lib.sh"
#   example_init <binary> <default-uri> <URI env variable> <name>
# sets: $bin, $uri (the variable's value if set, else the default), $out (a scratch directory
# removed on exit), $lock (a lock name unique to this run), and
#   spawn LOG CMD...        start CMD in the background, output to $out/LOG.log; pid in $!
#   wait_all                wait for every spawned process; fail if one exited non-zero
#   wait_for LOG REGEX [S]  wait up to S seconds (default 20) for a line of $out/LOG.log
#   count REGEX [LOGS...]   lines matching REGEX in the given logs (default: every log)
#   fail MESSAGE            print MESSAGE and every log, exit 1
# Spawned processes still running on exit are continued (if stopped) and killed.
set -u

example_init() {
  bin=$1
  uri=${!3:-$2}
  out=$(mktemp -d "/tmp/leader-example-$4.XXXXXX")
  lock="$4-$$-$RANDOM"
  pids=()
  trap _example_cleanup EXIT
}

_example_cleanup() {
  for p in "${pids[@]}"; do
    kill -CONT "$p" 2>/dev/null
    kill "$p" 2>/dev/null
  done
  rm -rf "$out"
}

fail() {
  echo "FAIL: $*"
  for f in "$out"/*.log; do
    [ -e "$f" ] || continue
    echo "--- $f"
    cat "$f"
  done
  exit 1
}

spawn() {
  local log=$1
  shift
  "$@" >"$out/$log.log" 2>&1 &
  pids+=($!)
}

wait_all() {
  local p rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  pids=()
  [ "$rc" = 0 ] || fail "a process exited non-zero"
}

wait_for() {
  local i
  for i in $(seq $((${3:-20} * 20))); do
    grep -qE "$2" "$out/$1.log" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "no line matching '$2' in $1.log within ${3:-20} s"
}

count() {
  local re=$1
  shift
  if [ $# = 0 ]; then
    cat "$out"/*.log | grep -cE "$re"
  else
    (cd "$out" && cat "${@/%/.log}") | grep -cE "$re"
  fi
}
