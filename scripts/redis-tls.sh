#!/usr/bin/env bash
# A second, TLS-only redis-server for the Redis store's TLS and ACL test cases.
#   scripts/redis-tls.sh start   generate a throwaway CA + server certificate (openssl) under
#                                $LE_TEST_ROOT/redis-tls, start redis-server with --tls-port on
#                                127.0.0.1:16380 (no plain port) and ACL users, wait until ready
#   scripts/redis-tls.sh stop    stop it by PID ($LE_TEST_ROOT/pids/redis-tls.pid; also stopped by
#                                scripts/test-servers.sh stop)
# Files: ca.crt (trust this), other-ca.crt (an unrelated CA, for negative tests), server.crt
# (CN=localhost, SAN DNS:localhost IP:127.0.0.1). ACL users (test-only passwords):
#   leader-test   / leader-test-password   keys ~leader:* ~{leader:*, all commands
#   leader-noperm / leader-test-password   keys ~other:* only (every lock is refused: NOPERM)
set -euo pipefail
# Servers must not inherit descriptors of the caller (as in test-servers.sh): started under
# `flock LOCK scripts/start-all-servers.sh`, a daemon would keep LOCK's descriptor and hold the
# shared lock for its whole life (it happened: every locked test run waited on redis-tls).
for fd in /proc/$$/fd/*; do
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
ROOT=${LE_TEST_ROOT:-/tmp/le-test}
DIR=$ROOT/redis-tls
PORT=${LE_REDIS_TLS_PORT:-16380}
PASSWORD=leader-test-password

stop() {
  local f=$ROOT/pids/redis-tls.pid
  [ -f "$f" ] || return 0
  local pid; pid=$(cat "$f")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped redis-tls ($pid)"
  fi
  rm -f "$f"
}

make_certs() {
  [ -f "$DIR/server.crt" ] && [ -f "$DIR/other-ca.crt" ] && return 0
  local subj_ca="/CN=leader test CA" days=30
  openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days $days -subj "$subj_ca" \
    -keyout "$DIR/ca.key" -out "$DIR/ca.crt" 2>/dev/null
  openssl req -new -nodes -newkey rsa:2048 -sha256 -subj "/CN=localhost" \
    -keyout "$DIR/server.key" -out "$DIR/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$DIR/san.ext"
  openssl x509 -req -sha256 -days $days -in "$DIR/server.csr" -CA "$DIR/ca.crt" \
    -CAkey "$DIR/ca.key" -CAcreateserial -extfile "$DIR/san.ext" -out "$DIR/server.crt" 2>/dev/null
  openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days $days -subj "/CN=unrelated CA" \
    -keyout "$DIR/other-ca.key" -out "$DIR/other-ca.crt" 2>/dev/null
  chmod 600 "$DIR"/*.key
}

start() {
  mkdir -p "$DIR" "$ROOT/pids" "$ROOT/logs"
  make_certs
  cat > "$DIR/users.acl" <<ACL
user default on nopass ~* &* +@all
user leader-test on >$PASSWORD ~leader:* ~{leader:* &* +@all
user leader-noperm on >$PASSWORD ~other:* &* +@all
ACL
  local t0; t0=$(date +%s%N)
  redis-server --bind 127.0.0.1 --port 0 --tls-port "$PORT" \
    --tls-cert-file "$DIR/server.crt" --tls-key-file "$DIR/server.key" \
    --tls-ca-cert-file "$DIR/ca.crt" --tls-auth-clients no \
    --aclfile "$DIR/users.acl" --save '' --appendonly no --dir "$DIR" --daemonize yes \
    --pidfile "$ROOT/pids/redis-tls.pid" --logfile "$ROOT/logs/redis-tls.log"
  for _ in $(seq 200); do
    if redis-cli --tls --cacert "$DIR/ca.crt" -h 127.0.0.1 -p "$PORT" \
         --user leader-test --pass "$PASSWORD" --no-auth-warning ping 2>/dev/null | grep -q PONG; then
      echo "redis-tls: started and ready in $(( ($(date +%s%N) - t0) / 1000000 )) ms (port $PORT)"
      return 0
    fi
    sleep 0.05
  done
  echo "FAILED: redis-tls not ready (see $ROOT/logs/redis-tls.log)" >&2
  return 1
}

case ${1:-start} in
start) stop; start ;;
stop) stop ;;
*) echo "usage: $0 start|stop" >&2; exit 64 ;;
esac
