#!/usr/bin/env bash
# A second, TLS-only etcd with v3 auth for the etcd store's etcds:// tests (loopback only).
#   scripts/etcd-tls.sh start   generate certs (openssl), start etcd, create users, enable auth
#   scripts/etcd-tls.sh stop    stop it (by PID) and remove its data and certs
# Client https://127.0.0.1:12479 (client certificates required), peer 12480. Files under
# $LE_TEST_ROOT/etcd-tls (default /tmp/le-test/etcd-tls): certs/ca.crt, certs/client.{crt,key}.
# Users: root/rootpw; leader/leaderpw (readwrite on keys starting with /leader);
# outsider/outsiderpw (readwrite on /other only). Simple auth tokens live 2 s (--auth-token-ttl),
# so the tests also cover re-authentication.
set -euo pipefail
# Servers must not inherit descriptors of the caller (as in test-servers.sh): started under
# `flock LOCK scripts/start-all-servers.sh`, a daemon would keep LOCK's descriptor and hold the
# shared lock for its whole life (it happened: every locked test run waited on redis-tls).
for fd in /proc/$$/fd/*; do
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
ROOT=${LE_TEST_ROOT:-/tmp/le-test}
# shellcheck source=scripts/ramdisk.sh
. "$(dirname "$0")/ramdisk.sh"
DIR=$ROOT/etcd-tls
CERTS=$DIR/certs
PIDFILE=$ROOT/pids/etcd-tls.pid
EP=https://127.0.0.1:12479

ctl() {  # as root once auth is on
  local auth=(); [ -f "$DIR/auth-ready" ] && auth=(--user root:rootpw)
  etcdctl "${auth[@]}" --endpoints=$EP --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" \
    --key "$CERTS/client.key" "$@"
}

make_certs() {
  mkdir -p "$CERTS"
  cd "$CERTS"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=leader-test-ca" \
    -keyout ca.key -out ca.crt 2>/dev/null
  # server: SAN 127.0.0.1 and localhost. client: no CN, as etcd's JSON gateway refuses client
  # certificates with a CommonName ("CommonName of client sending a request against gateway will
  # be ignored"); identity comes from v3 auth (user/password) instead.
  for who in server client; do
    subj=$([ $who = server ] && echo /CN=localhost || echo /O=leader-test-client)
    openssl req -newkey rsa:2048 -nodes -subj "$subj" -keyout $who.key -out $who.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' \
      > $who.ext
    openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
      -extfile $who.ext -out $who.crt 2>/dev/null
  done
  chmod 644 ./*.key
  cd - > /dev/null
}

setup_auth() {
  ctl user add root --new-user-password=rootpw > /dev/null
  ctl user grant-role root root > /dev/null
  ctl role add leader > /dev/null
  ctl role grant-permission leader --prefix=true readwrite /leader > /dev/null
  ctl user add leader --new-user-password=leaderpw > /dev/null
  ctl user grant-role leader leader > /dev/null
  ctl role add outsider > /dev/null
  ctl role grant-permission outsider --prefix=true readwrite /other > /dev/null
  ctl user add outsider --new-user-password=outsiderpw > /dev/null
  ctl user grant-role outsider outsider > /dev/null
  ctl auth enable > /dev/null
  touch "$DIR/auth-ready"
}

case ${1:-start} in
start)
  mkdir -p "$ROOT/pids" "$ROOT/logs" "$DIR"
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "etcd-tls: already running"; exit 0
  fi
  T0=$(date +%s%N)
  [ -f "$CERTS/client.crt" ] || make_certs
  ram_dir "$DIR/data"  # on tmpfs: scripts/ramdisk.sh
  nohup etcd --name le-tls --data-dir "$DIR/data" \
    --listen-client-urls $EP --advertise-client-urls $EP \
    --listen-peer-urls http://127.0.0.1:12480 --initial-advertise-peer-urls http://127.0.0.1:12480 \
    --initial-cluster le-tls=http://127.0.0.1:12480 --initial-cluster-state new \
    --cert-file "$CERTS/server.crt" --key-file "$CERTS/server.key" \
    --trusted-ca-file "$CERTS/ca.crt" --client-cert-auth \
    --auth-token simple --auth-token-ttl 2 \
    --heartbeat-interval 50 --election-timeout 250 \
    --logger zap --log-outputs stderr > "$ROOT/logs/etcd-tls.log" 2>&1 &
  echo $! > "$PIDFILE"
  for _ in $(seq 300); do
    if ctl endpoint health > /dev/null 2>&1; then
      [ -f "$DIR/auth-ready" ] || setup_auth
      echo "etcd-tls: started and ready in $(( ($(date +%s%N) - T0) / 1000000 )) ms"
      exit 0
    fi
    sleep 0.1
  done
  echo "FAILED: etcd-tls not ready after 30s (see $ROOT/logs/etcd-tls.log)" >&2
  exit 1
  ;;
stop)
  if [ -f "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
      echo "stopped etcd-tls ($pid)"
    fi
    rm -f "$PIDFILE"
  fi
  [ "${LE_KEEP_DATA:-0}" = 1 ] || rm_data "$DIR"
  ;;
*) echo "usage: $0 start|stop" >&2; exit 64 ;;
esac
