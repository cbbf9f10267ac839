#!/usr/bin/env bash
# Clustered test servers on 127.0.0.1 (issue 15): a 3-member etcd cluster and a 3-server
# ZooKeeper ensemble, data, logs and PIDs under $LE_TEST_ROOT (default /tmp/le-test).
#   scripts/cluster-servers.sh start [etcd-cluster] [zookeeper-ensemble]   start and wait for quorum
#   scripts/cluster-servers.sh stop [etcd-cluster|zookeeper-ensemble]      stop by PID, remove data
#   scripts/cluster-servers.sh member-start <cluster> <i>                 (re)start member i (1..3)
#   scripts/cluster-servers.sh member-stop <cluster> <i> [TERM|KILL]     stop member i, keep its data
#   scripts/cluster-servers.sh leader <cluster>                           print the leader's i
#   scripts/cluster-servers.sh ports <cluster>                            print the client ports
# Ports (change with LE_ETCD_CLUSTER_BASE / LE_ZK_ENSEMBLE_BASE, as the fault suite's private
# copies do):
#   etcd-cluster        client 22379 22381 22383, peer 22380 22382 22384 (base + 2(i-1) [+1])
#   zookeeper-ensemble  client 22181 22182 22183, quorum 22281.., election 22291.. (base + 100/110)
# With LE_CLUSTER_UID_BASE=N (root only) member i runs as uid N+i (setpriv), so that the fault
# suite can cut one member off its peers with nft rules on the socket's owner (meta skuid).
# scripts/test-servers.sh stop stops them too (their PID files are in $LE_TEST_ROOT/pids).
set -euo pipefail
for fd in /proc/$$/fd/*; do  # servers must not inherit a caller's flock descriptor
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
ROOT=${LE_TEST_ROOT:-/tmp/le-test}
# shellcheck source=scripts/ramdisk.sh
. "$(dirname "$0")/ramdisk.sh"
EB=${LE_ETCD_CLUSTER_BASE:-22379}
ZB=${LE_ZK_ENSEMBLE_BASE:-22181}
UIDB=${LE_CLUSTER_UID_BASE:-}
mkdir -p "$ROOT/pids" "$ROOT/logs"

etcd_client() { echo $((EB + 2 * ($1 - 1))); }
etcd_peer() { echo $((EB + 2 * ($1 - 1) + 1)); }
zk_client() { echo $((ZB + $1 - 1)); }
pidfile() { echo "$ROOT/pids/$1-$2.pid"; }
alive() { local f; f=$(pidfile "$1" "$2"); [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }
as_member() {  # as_member I CMD...: as uid UIDB+I when asked (root only)
  local i=$1; shift
  if [ -n "$UIDB" ] && [ "$(id -u)" = 0 ]; then
    exec setpriv --reuid=$((UIDB + i)) --regid=$((UIDB + i)) --clear-groups "$@"
  fi
  exec "$@"
}
zk_mode() {  # zk_mode PORT: prints leader/follower/standalone, or nothing
  local out
  out=$(timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 && printf srvr >&3 && cat <&3" 2>/dev/null) || true
  sed -n 's/^Mode: //p' <<< "$out"
}

etcd_start_member() {
  local i=$1 dir="$ROOT/etcd-cluster/m$1" cluster=""
  for j in 1 2 3; do cluster+="${cluster:+,}e$j=http://127.0.0.1:$(etcd_peer "$j")"; done
  mkdir -p "$dir"
  ram_dir "$dir/data"  # on tmpfs: scripts/ramdisk.sh
  [ -z "$UIDB" ] || [ "$(id -u)" != 0 ] || chown -R $((UIDB + i)):$((UIDB + i)) "$dir" "$(readlink -f "$dir/data")"
  # election timeout 500 ms: a stopped leader is replaced in about 0.5-1 s, and 2 busy cores
  # do not make members miss heartbeats (50 ms) into spurious elections.
  (as_member "$i" etcd --name "e$i" --data-dir "$dir/data" \
    --listen-client-urls "http://127.0.0.1:$(etcd_client "$i")" \
    --advertise-client-urls "http://127.0.0.1:$(etcd_client "$i")" \
    --listen-peer-urls "http://127.0.0.1:$(etcd_peer "$i")" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer "$i")" \
    --initial-cluster "$cluster" --initial-cluster-state new \
    --initial-cluster-token "le-cluster-$EB" \
    --heartbeat-interval 50 --election-timeout 500 \
    --logger zap --log-outputs stderr) >> "$ROOT/logs/etcd-cluster-$i.log" 2>&1 < /dev/null &
  echo $! > "$(pidfile etcd-cluster "$i")"
}

zk_start_member() {
  local i=$1 dir="$ROOT/zk-ensemble/s$1"
  mkdir -p "$dir/data"
  echo "$i" > "$dir/data/myid"
  # tickTime 200 ms, syncLimit 2: a follower cut off from the leader stops serving its clients
  # after 400 ms (src/stores/zookeeper/README.md, Safety: the margin this needs).
  cat > "$dir/zoo.cfg" <<EOF
tickTime=200
initLimit=25
syncLimit=2
minSessionTimeout=1000
maxSessionTimeout=30000
dataDir=$dir/data
clientPort=$(zk_client "$i")
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxClientCnxns=0
forceSync=no
electionPortBindRetry=0
server.1=127.0.0.1:$((ZB + 100)):$((ZB + 110))
server.2=127.0.0.1:$((ZB + 101)):$((ZB + 111))
server.3=127.0.0.1:$((ZB + 102)):$((ZB + 112))
EOF
  cat > "$dir/log4j.properties" <<'EOF'
log4j.rootLogger=INFO,CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
EOF
  [ -z "$UIDB" ] || [ "$(id -u)" != 0 ] || chown -R $((UIDB + i)):$((UIDB + i)) "$dir"
  (as_member "$i" java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -cp "$dir:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg") \
    >> "$ROOT/logs/zookeeper-ensemble-$i.log" 2>&1 < /dev/null &
  echo $! > "$(pidfile zookeeper-ensemble "$i")"
}

member_start() {  # member_start CLUSTER I
  alive "$1" "$2" && return 0
  case $1 in
  etcd-cluster) etcd_start_member "$2" ;;
  zookeeper-ensemble) zk_start_member "$2" ;;
  *) echo "unknown cluster: $1" >&2; exit 2 ;;
  esac
}

member_stop() {  # member_stop CLUSTER I [SIG]
  local f pid sig=${3:-TERM}
  f=$(pidfile "$1" "$2")
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill -CONT "$pid" 2>/dev/null || true
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$f"
}

leader() {  # prints the leader member's i (1..3), or nothing
  local i
  case $1 in
  etcd-cluster)
    for i in 1 2 3; do
      local st
      st=$(curl -s -m 1 -X POST -d '{}' "http://127.0.0.1:$(etcd_client "$i")/v3/maintenance/status" || true)
      [ -n "$st" ] || continue
      local me lead
      me=$(sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p' <<< "$st")
      lead=$(sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' <<< "$st")
      if [ -n "$me" ] && [ "$me" = "$lead" ]; then echo "$i"; return 0; fi
    done ;;
  zookeeper-ensemble)
    for i in 1 2 3; do [ "$(zk_mode "$(zk_client "$i")")" = leader ] && { echo "$i"; return 0; }; done ;;
  esac
  return 0
}

ready() {  # the cluster has a leader and every member serves
  local i
  case $1 in
  etcd-cluster)
    for i in 1 2 3; do
      etcdctl --endpoints="http://127.0.0.1:$(etcd_client "$i")" --command-timeout=1s \
        endpoint health > /dev/null 2>&1 || return 1
    done ;;
  zookeeper-ensemble)
    for i in 1 2 3; do
      case $(zk_mode "$(zk_client "$i")") in leader | follower) ;; *) return 1 ;; esac
    done ;;
  esac
}

wait_ready() {  # wait_ready CLUSTER TIMEOUT_S
  local t0 deadline
  t0=$(date +%s%N) deadline=$(($(date +%s) + $2))
  until ready "$1"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "FAILED: $1 not ready after $2 s (see $ROOT/logs/$1-*.log)" >&2; return 1
    fi
    sleep 0.1
  done
  echo "$1: 3 members ready in $((($(date +%s%N) - t0) / 1000000)) ms"
}

cmd=${1:-start}; shift || true
case $cmd in
start)
  clusters=${*:-etcd-cluster zookeeper-ensemble}
  for c in $clusters; do for i in 1 2 3; do member_start "$c" "$i"; done; done
  for c in $clusters; do wait_ready "$c" 60; done
  ;;
stop)
  clusters=${*:-etcd-cluster zookeeper-ensemble}
  for c in $clusters; do
    for i in 1 2 3; do member_stop "$c" "$i" TERM; done
    [ "${LE_KEEP_DATA:-0}" = 1 ] || case $c in
      etcd-cluster) rm_data "$ROOT/etcd-cluster" ;;
      zookeeper-ensemble) rm -rf "$ROOT/zk-ensemble" ;;
    esac
  done
  ;;
member-start) member_start "$1" "$2" ;;
member-stop) member_stop "$1" "$2" "${3:-TERM}" ;;
leader) leader "$1" ;;
ready) ready "$1" ;;
ports)
  case $1 in
  etcd-cluster) echo "$(etcd_client 1) $(etcd_client 2) $(etcd_client 3)" ;;
  zookeeper-ensemble) echo "$(zk_client 1) $(zk_client 2) $(zk_client 3)" ;;
  esac ;;
*) echo "usage: $0 start|stop [etcd-cluster] [zookeeper-ensemble] | member-start|member-stop C I | leader C | ports C" >&2; exit 64 ;;
esac
