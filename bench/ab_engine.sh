#!/usr/bin/env bash
# A/B of the elector's core paths: a baseline tree (BASE, default the worktree of 173616b) against
# this tree's build, built and run in the same session, interleaved (base, head, base, head, ...),
# niced, as ratios head / base (bench/README.md "one engine: A/B against 173616b").
#
#   bench/ab_engine.sh build            # both trees' bench targets + ab_core, copied to $OUT/{base,head}
#   bench/ab_engine.sh run [ROUNDS]     # ROUNDS (default 4) interleaved pairs, JSON in $OUT/runs
#   bench/ab_engine.sh table [TAGS]     # medians per side, head / base, of runs tagged TAGS<n>
#                                       # (r: the rounds, recheck, 'r|recheck': both)
#   bench/ab_engine.sh one BIN FILTER [ROUNDS]  # re-run one pair ROUNDS times (order alternates)
#
# ab_core (written below, compiled against each tree's headers and libraries) adds what the
# bench/ programs do not time: a group elector's run_if_leader, LeaderContext::extend, and
# run_if_leader, a group, extend, the future and the executor door on SQLite in /dev/shm.
# HEAD_TREE (default this checkout) is the "head" side; a clean worktree of a commit keeps other
# people's uncommitted edits out of it. Binaries are copied out of the build trees so that a
# relink by someone else cannot change the side under measurement.
set -euo pipefail
HEAD_TREE=${HEAD_TREE:-$(cd "$(dirname "$0")/.." && pwd)}
BASE=${BASE:-/work/base-173616b}
OUT=${OUT:-/tmp/ab_engine}
MIN_TIME=${MIN_TIME:-0.2}
REPS=${REPS:-3}
TARGETS="bench_core_elector bench_core_async bench_core_events bench_sqlite"
LOCK=/tmp/leader-build.lock

write_ab_core() {
  cat >"$OUT/ab_core.cpp" <<'EOF'
#include <benchmark/benchmark.h>

#include <asio.hpp>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>

#include "leader/async.hpp"
#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace {
using namespace std::chrono_literals;

std::shared_ptr<leader::LeaseStore> store_of(int kind) {
  if (kind == 0) return leader::make_memory_store();
  static int n = 0;
  std::string path = "/dev/shm/leader-ab-" + std::to_string(getpid()) + "-" + std::to_string(++n) + ".db";
  for (const char* s : {"", "-wal", "-shm"}) std::remove((path + s).c_str());
  return leader::open("sqlite://" + path);
}

leader::GroupOptions group_options() {
#ifdef AB_BASE
  leader::GroupOptions o;
  o.wait_time = 0s;
  o.lease_time = 30s;
  o.max_leaders = 2;
#else
  leader::GroupOptions o;
  o.election.wait_time = 0s;
  o.election.lease_time = 30s;
  o.max_leaders = 2;
#endif
  return o;
}

struct BackgroundLoop {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  std::thread thread{[this] { io.run(); }};
  ~BackgroundLoop() {
    work.reset();
    thread.join();
  }
};

// range(0): 0 memory, 1 sqlite in /dev/shm
void BM_RunIfLeader(benchmark::State& state) {
  leader::LeaderElector e(store_of(state.range(0)), {.wait_time = 0s, .lease_time = 30s});
  for (auto _ : state) benchmark::DoNotOptimize(e.run_if_leader("bench", [] { return 1; }));
}
BENCHMARK(BM_RunIfLeader)->Arg(1)->ArgName("sqlite");

void BM_Group(benchmark::State& state) {
  leader::LeaderGroupElector g(store_of(state.range(0)), group_options());
  for (auto _ : state) benchmark::DoNotOptimize(g.run_if_leader("bench-group", [] { return 1; }));
}
BENCHMARK(BM_Group)->Arg(0)->Arg(1)->ArgName("sqlite");

void BM_Extend(benchmark::State& state) {
  leader::LeaderElector e(store_of(state.range(0)), {.wait_time = 0s, .lease_time = 30s});
  auto acq = e.acquire("bench-extend");
  if (!acq) {
    state.SkipWithError("acquire failed");
    return;
  }
  auto& ctx = acq.guard->context();
  for (auto _ : state) benchmark::DoNotOptimize(ctx.extend(30s));
}
BENCHMARK(BM_Extend)->Arg(0)->Arg(1)->ArgName("sqlite");

void BM_Future(benchmark::State& state) {
  leader::LeaderElector e(store_of(state.range(0)), {.wait_time = 0s, .lease_time = 30s});
  for (auto _ : state)
    benchmark::DoNotOptimize(leader::run_if_leader_async(e, "bench", [] { return 1; }).get());
}
BENCHMARK(BM_Future)->Arg(1)->ArgName("sqlite");

void BM_ExecutorDispatch(benchmark::State& state) {
  leader::LeaderElector e(store_of(state.range(0)), {.wait_time = 0s, .lease_time = 30s});
  BackgroundLoop loop;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        leader::run_if_leader_on(loop.io.get_executor(), e, "bench", [] { return 1; }).get());
  }
}
BENCHMARK(BM_ExecutorDispatch)->Arg(1)->ArgName("sqlite");
}  // namespace

BENCHMARK_MAIN();
EOF
}

# build_ab_core TREE BUILD_DIR OUT_BIN [-DAB_BASE]
build_ab_core() {
  local tree=$1 b=$2 bin=$3
  shift 3
  nice -n 10 c++ -std=c++20 -O2 -g -DNDEBUG "$@" -I"$tree/include" "$OUT/ab_core.cpp" -o "$bin" \
    -Wl,-u,leader_store_memory_anchor -Wl,-u,leader_store_sqlite_anchor \
    "$b/src/stores/memory/libleader-memory.a" "$b/src/stores/sqlite/libleader-sqlite.a" \
    "$b/src/core/libleader-core.a" -lbenchmark -lsqlite3 -pthread
}

cmd_build() {
  mkdir -p "$OUT/base" "$OUT/head"
  write_ab_core
  # shellcheck disable=SC2086
  flock "$LOCK" nice -n 10 cmake --build "$BASE/build" --target $TARGETS leader_sqlite -j2
  # shellcheck disable=SC2086
  flock "$LOCK" nice -n 10 cmake --build "$HEAD_TREE/build" --target $TARGETS leader_sqlite -j2
  for t in $TARGETS; do
    cp "$BASE/build/bench/$t" "$OUT/base/"
    cp "$HEAD_TREE/build/bench/$t" "$OUT/head/"
  done
  build_ab_core "$BASE" "$BASE/build" "$OUT/base/ab_core" -DAB_BASE
  build_ab_core "$HEAD_TREE" "$HEAD_TREE/build" "$OUT/head/ab_core"
  git -C "$BASE" rev-parse --short HEAD >"$OUT/base/commit"
  git -C "$HEAD_TREE" rev-parse --short HEAD >"$OUT/head/commit"
}

# run_one SIDE BIN FILTER TAG
run_one() {
  local side=$1 bin=$2 filter=$3 tag=$4
  echo "$(date -u +%H:%M:%S) $side $bin $tag load: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/runs/load.log"
  nice -n 10 "$OUT/$side/$bin" --benchmark_filter="$filter" --benchmark_min_time="$MIN_TIME" \
    --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true \
    --benchmark_out="$OUT/runs/$bin.$side.$tag.json" --benchmark_out_format=json >/dev/null ||
    echo "$side $bin $tag: exit $?" | tee -a "$OUT/runs/load.log"
}

# Binaries and the benchmarks of each that are timed (SQLite on disk is fsync-bound and the raw
# sqlite3 rows are no library code: left out).
BENCHES=(
  "bench_core_elector:."
  "bench_core_async:."
  "bench_core_events:."
  "bench_sqlite:StoreAcquireRelease/shm"
  "ab_core:."
)

cmd_run() {
  local rounds=${1:-4}
  mkdir -p "$OUT/runs"
  for ((r = 1; r <= rounds; r++)); do
    for side in base head; do
      for entry in "${BENCHES[@]}"; do run_one "$side" "${entry%%:*}" "${entry#*:}" "r$r"; done
    done
  done
}

cmd_one() {
  local bin=$1 filter=$2 rounds=${3:-3}
  mkdir -p "$OUT/runs"
  for ((r = 1; r <= rounds; r++)); do
    local order="base head"
    if ((r % 2 == 0)); then order="head base"; fi
    for side in $order; do run_one "$side" "$bin" "$filter" "recheck$r"; done
  done
}

cmd_table() {
  python3 - "$OUT/runs" "${1:-r}" <<'EOF'
import glob, json, os, re, statistics, sys
runs, prefix = sys.argv[1], sys.argv[2]
vals = {}  # (bin, name) -> side -> [(real, cpu)]
for f in sorted(glob.glob(os.path.join(runs, "*.json"))):
    bin_, side, tag = os.path.basename(f)[:-5].rsplit(".", 2)
    if not re.fullmatch(f"(?:{prefix})[0-9]+", tag):
        continue
    try:
        data = json.load(open(f))
    except ValueError:  # still being written
        continue
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        scale = {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
        vals.setdefault((bin_, b["run_name"]), {}).setdefault(side, []).append(
            (b["real_time"] * scale, b["cpu_time"] * scale))
print("| binary | benchmark | base wall (ns) | head wall (ns) | head/base wall | head/base cpu | pairs | within 5 % |")
print("|---|---|---|---|---|---|---|---|")
for (bin_, name), s in vals.items():
    if "base" not in s or "head" not in s:
        continue
    bw = statistics.median(v[0] for v in s["base"]); hw = statistics.median(v[0] for v in s["head"])
    bc = statistics.median(v[1] for v in s["base"]); hc = statistics.median(v[1] for v in s["head"])
    rw, rc = hw / bw, hc / bc
    ok = "yes" if rw <= 1.05 else "NO"
    print(f"| {bin_} | `{name}` | {bw:,.0f} | {hw:,.0f} | {rw:.3f} | {rc:.3f} | {min(len(s['base']), len(s['head']))} | {ok} |")
EOF
}

case ${1:-} in
  build) cmd_build ;;
  run) cmd_run "${2:-4}" ;;
  one) cmd_one "$2" "$3" "${4:-3}" ;;
  table) cmd_table "${2:-r}" ;;
  *) sed -n 2,15p "$0"; exit 2 ;;
esac
