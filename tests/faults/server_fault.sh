#!/usr/bin/env bash
# Server-wide faults on the shared test servers of scripts/test-servers.sh, always undone:
#   server_fault.sh pause   <server> <seconds>   SIGSTOP the server's processes, then SIGCONT
#   server_fault.sh restart <server>             graceful stop, then scripts/test-servers.sh start
#                                                (the private copy of private_servers.sh if any)
# <server>: redis postgres mariadb etcd zookeeper (PIDs from $LE_TEST_ROOT/pids, default
# /tmp/le-test/pids). Other people use these servers: a pause is SIGCONTed on every exit path
# (trap); a restart starts the server again from an EXIT/INT/TERM trap, detached (setsid) so that
# it outlives its caller; both are kept to a few seconds.
set -euo pipefail
ROOT=${LE_TEST_ROOT:-/tmp/le-test}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SERVERS="$REPO/scripts/test-servers.sh"
[ -x "$ROOT/test-servers.sh" ] && SERVERS="$ROOT/test-servers.sh"   # private_servers.sh's copy
cmd=${1:?usage: $0 pause|restart <server> [seconds]}
server=${2:?server}
pidfile="$ROOT/pids/$server.pid"
pid=$(cat "$pidfile")
kill -0 "$pid" 2>/dev/null || { echo "$server is not running (pid $pid)" >&2; exit 3; }

# The server's processes: postgres serves each connection from a forked backend.
server_pids() {
  echo "$pid"
  if [ "$server" = postgres ]; then pgrep -P "$pid" || true; fi
}

case $cmd in
pause)
  secs=${3:-2}
  pids=$(server_pids | tr '\n' ' ')
  trap 'kill -CONT $pids 2>/dev/null || true' EXIT INT TERM HUP
  # shellcheck disable=SC2086
  kill -STOP $pids
  sleep "$secs"
  ;;
restart)
  sig=TERM
  [ "$server" = postgres ] && sig=INT   # postgres "fast" shutdown
  # The start runs on every exit path, even when this script is interrupted while stopping.
  trap 'trap - EXIT INT TERM HUP; setsid -w "$SERVERS" start "$server" < /dev/null' \
    EXIT INT TERM HUP
  kill -CONT "$pid" 2>/dev/null || true
  kill -"$sig" "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  ;;
*)
  echo "usage: $0 pause|restart <server> [seconds]" >&2
  exit 64
  ;;
esac
