#!/usr/bin/env bash
# Go side by side, same servers, same run: uncontended acquire + release, one goroutine, one lock,
# for leader.dev/leader (go/, cgo over libleader.so.0) and for the Go locks Debian packages:
#   etcd       ours RunIfLeader, ours Acquire + Release | concurrency.Mutex Lock + Unlock (gRPC)
#              | raw: our store's two Txns over gRPC and over the JSON gateway (Go net/http),
#                one Range over gRPC and over the gateway (a round trip, no write)
#   ZooKeeper  ours RunIfLeader, ours Acquire + Release | go-zookeeper Lock + Unlock
#              | raw: ephemeral-sequential create + delete over go-zookeeper and over the C
#                client (libzookeeper_mt, the client our ZooKeeper store is built on)
# Builds bench/go/ in GOPATH mode, offline, against Debian's /usr/share/gocode
# (apt-get install golang-go golang-etcd-server-dev golang-github-samuel-go-zookeeper-dev) and
# go/ (linked into a private GOPATH as leader.dev/leader); the go/ module keeps no dependency.
# Starts no server: uses the shared ones (scripts/start-all-servers.sh). Each row runs SECONDS
# (default 2) in its own process; ROUNDS (default 5) interleaved rounds; the table shows, per row,
# the median over the rounds of p50 and of throughput (1/mean), with the rounds' p50 range.
# With $BUILD/bench/bench_peers, the C++ engine's run_if_leader on the same URIs is a row too
# (what the Go layer adds), and so is bench_etcd's raw gateway cycle (our store's two Txns through
# its own HTTP client, without the store). Names carry this process's id; keys and znodes written are removed at the end.
#   bench/go_peers.sh [SECONDS] [ROUNDS]      (after: cmake --build build --target leader_c)
# Environment: ETCD, ZK (host:port of the servers, default the shared 127.0.0.1:12379 and
# 127.0.0.1:12181), BUILD (default build), WORK (default /tmp/leader-go-peers: GOPATH, GOCACHE, binary).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-2}
ROUNDS=${2:-5}
BUILD=${BUILD:-build}
WORK=${WORK:-/tmp/leader-go-peers}
ETCD=${ETCD:-127.0.0.1:12379}
ZK=${ZK:-127.0.0.1:12181}
ID=$$
ROOT=$PWD
LIB=$ROOT/$BUILD/src/capi
[ -e "$LIB/libleader.so" ] || { echo "build $LIB/libleader.so first (cmake --build $BUILD --target leader_c)" >&2; exit 2; }
for d in go.etcd.io/etcd/clientv3/concurrency github.com/samuel/go-zookeeper/zk; do
  [ -d /usr/share/gocode/src/$d ] || { echo "missing /usr/share/gocode/src/$d (apt-get install golang-etcd-server-dev golang-github-samuel-go-zookeeper-dev)" >&2; exit 2; }
done

# Copies of the library and of bench_peers: a rebuild in the tree during the run cannot reach them.
mkdir -p "$WORK/gopath/src/leader.dev" "$WORK/lib"
cp -L "$LIB/libleader.so.0" "$WORK/lib/libleader.so.0"
ln -sfn libleader.so.0 "$WORK/lib/libleader.so"
ln -sfn "$ROOT/go" "$WORK/gopath/src/leader.dev/leader"
BIN=$WORK/go-peers
(cd bench/go && GO111MODULE=off GOFLAGS= GOPROXY=off GOPATH="$WORK/gopath:/usr/share/gocode" \
  GOCACHE="$WORK/cache" CGO_CFLAGS="-I$ROOT/include" \
  CGO_LDFLAGS="-L$WORK/lib -Wl,-rpath,$WORK/lib" go build -o "$BIN" .)

cleanup() {
  etcdctl --endpoints=http://$ETCD del --prefix /gopeers-$ID >/dev/null 2>&1 || true
  "$BIN" zk-remove $ZK /gopeers-$ID >/dev/null 2>&1 || true
}
trap cleanup EXIT

# group|row|label|target|name
ROWS=$(cat <<ROWS
etcd|ours-run|ours: RunIfLeader (no-op)|etcd://$ETCD?prefix=/gopeers-$ID/ours|run
etcd|ours-acquire|ours: Acquire + Release|etcd://$ETCD?prefix=/gopeers-$ID/ours|acq
etcd|cxx-ours-elector|C++ run_if_leader (bench_peers, the engine without Go)|etcd://$ETCD?prefix=/gopeers-$ID/cxx|run
etcd|etcd-mutex|**concurrency.Mutex** Lock + Unlock (gRPC)|$ETCD|/gopeers-$ID/mutex
etcd|cxx-raw-session-cycle|raw: our 2 Txns over the JSON gateway (C++, our store's HTTP client)|-|-
etcd|etcd-grpc-txns|raw: our 2 Txns over gRPC (clientv3)|$ETCD|/gopeers-$ID/grpc
etcd|etcd-gateway-txns|raw: our 2 Txns over the JSON gateway (net/http)|$ETCD|/gopeers-$ID/gw
etcd|etcd-grpc-range|raw: 1 Range over gRPC (round trip)|$ETCD|/gopeers-$ID/grpc
etcd|etcd-gateway-range|raw: 1 Range over the JSON gateway (round trip)|$ETCD|/gopeers-$ID/gw
zookeeper|ours-run|ours: RunIfLeader (no-op)|zk://$ZK?session_timeout=10s&prefix=/gopeers-$ID/ours|run
zookeeper|ours-acquire|ours: Acquire + Release|zk://$ZK?session_timeout=10s&prefix=/gopeers-$ID/ours|acq
zookeeper|cxx-ours-elector|C++ run_if_leader (bench_peers, the engine without Go)|zk://$ZK?session_timeout=10s&prefix=/gopeers-$ID/cxx|run
zookeeper|zk-lock|**go-zookeeper Lock** + Unlock|$ZK|/gopeers-$ID/lock
zookeeper|zk-create-delete|raw: go-zookeeper create(ephemeral, sequence) + delete|$ZK|/gopeers-$ID/raw
zookeeper|zk-c-create-delete|raw: the same over the C client (libzookeeper_mt, as our store)|$ZK|/gopeers-$ID/craw
ROWS
)
PEERS=$WORK/bench_peers
BENCH_ETCD=$WORK/bench_etcd
if [ -x "$BUILD/bench/bench_peers" ] && [ -x "$BUILD/bench/bench_etcd" ]; then
  cp "$BUILD/bench/bench_peers" "$PEERS"
  cp "$BUILD/bench/bench_etcd" "$BENCH_ETCD"
else
  echo "no $BUILD/bench/bench_peers or bench_etcd (cmake --build $BUILD --target bench_peers bench_etcd): the C++ rows skipped" >&2
  ROWS=$(grep -v '|cxx-' <<<"$ROWS")
fi
# bench_etcd's BM_RawSessionCycle as a row: "n= mean_us= p50_us=" from its counters.
raw_session_cycle() {
  LEADER_BENCH_ETCD_ENDPOINT=$ETCD "$BENCH_ETCD" --benchmark_filter='^BM_RawSessionCycle' --benchmark_min_time="$SECS" --benchmark_format=csv 2>/dev/null |
    python3 -c 'import csv, sys
r = [x for x in csv.DictReader(l for l in sys.stdin if "," in l) if "RawSessionCycle" in x["name"]][0]
print("raw-session-cycle n=%s mean_us=%.1f p50_us=%s" % (r["iterations"], 1e6 / float(r["items_per_second"]), r["p50_us"]))'
}
OUT=$(mktemp)
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  while IFS='|' read -r group row label target name; do
    if [[ $row == cxx-raw-session-cycle ]]; then
      cmd=(raw_session_cycle)
    elif [[ $row == cxx-* ]]; then
      cmd=("$PEERS" "${row#cxx-}")
    else
      cmd=("$BIN" "$row")
    fi
    line=$("${cmd[@]}" "$target" "$SECS" "$name" 2> >(grep -v 'mongoc: Falling back' >&2)) ||
      { echo "round $r: $group $row failed" >&2; continue; }
    echo "$group|$row|$r|$line" >>"$OUT"
  done <<<"$ROWS"
done

python3 - "$OUT" "$ROWS" <<'PY'
import re, statistics, sys
out, rows = sys.argv[1], sys.argv[2]
res = {}
for line in open(out):
    group, row, _, rest = line.rstrip("\n").split("|", 3)
    f = dict(re.findall(r"(\w+)=([\d.]+)", rest))
    res.setdefault((group, row), []).append((float(f["p50_us"]), 1e6 / float(f["mean_us"])))
print("| store | row | p50 us (median) | p50 range | ops/s (median) | row p50 / ours RunIfLeader p50 | ours ops/s / row ops/s |")
print("|---|---|---|---|---|---|---|")
for spec in rows.splitlines():
    group, row, label = spec.split("|")[:3]
    if (group, row) not in res:
        print(f"| {group} | {label} | failed | | | | |")
        continue
    p50s = [p for p, _ in res[(group, row)]]
    ops = [o for _, o in res[(group, row)]]
    base = res[(group, "ours-run")]
    bp = statistics.median(p for p, _ in base)
    bo = statistics.median(o for _, o in base)
    p, o = statistics.median(p50s), statistics.median(ops)
    print(f"| {group} | {label} | {p:,.0f} | {min(p50s):,.0f}-{max(p50s):,.0f} | {o:,.0f} | "
          f"{p / bp:.2f} | {bo / o:.2f} |")
PY
rm -f "$OUT"
