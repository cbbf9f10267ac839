#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan+UBSan, tests/fuzz) in $FUZZ_BUILD_DIR (default
# build-fuzz/, with ccache when installed) and runs each for SECONDS (default 30) on a copy of its
# seed corpus (tests/fuzz/corpus/<harness>/; tests/fuzz/dict/<harness>.dict when present). Fails
# on any crash, leak, timeout or sanitizer report. Prints one row per harness: seconds, execs,
# exec/s, corpus size (inputs), coverage (cov) and features (ft) as libFuzzer's last status line
# prints them, crashes. Crashing inputs are kept in $FUZZ_BUILD_DIR/artifacts/<harness>/.
#   scripts/fuzz.sh [SECONDS]
#   FUZZ_JOBS=2        harnesses run at once (default 2)
#   FUZZ_HARNESSES="fuzz_uri fuzz_resp"   a subset
#   FUZZ_NICE=10       run the harnesses at this nice level (default 0)
#   FUZZ_PHASE=build   only build the harnesses; FUZZ_PHASE=run: only run them (already built);
#                      default both (scripts/test.sh builds while the server tests run)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-30}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${FUZZ_JOBS:-2}
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
mkdir -p "$BUILD"
# -O1 -gline-tables-only, as OSS-Fuzz compiles its fuzz targets: line tables are all a crash's
# stack needs; RelWithDebInfo's -O2 -g made this the CI's largest extra build (600 CPU-s).
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEADER_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DLEADER_FUZZ=ON \
  -DLEADER_BUILD_TESTS=OFF -DLEADER_BUILD_TOOLS=OFF -DLEADER_BUILD_BENCH=OFF \
  -DLEADER_BUILD_EXAMPLES=OFF -DLEADER_INSTALL=OFF "${launcher[@]}" \
  > "$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log" >&2; exit 1; }
harnesses=${FUZZ_HARNESSES:-$(sed -n 's/^-- leader: fuzz harnesses: //p' "$BUILD/configure.log" | tr ';' ' ')}
[ -n "$harnesses" ] || { echo "no fuzz harnesses configured (see $BUILD/configure.log)" >&2; exit 1; }
PHASE=${FUZZ_PHASE:-all}
if [ "$PHASE" != run ]; then
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j"$(nproc)" --target $harnesses
fi
[ "$PHASE" != build ] || exit 0

# One harness: fuzz a scratch copy of the seed corpus, keep libFuzzer's log and final stats.
run_one() {
  local name=$1 work="$BUILD/fuzz-run/$1"
  rm -rf "$work" "$BUILD/artifacts/$name"
  mkdir -p "$work/corpus" "$BUILD/artifacts/$name"
  cp -r "tests/fuzz/corpus/$name/." "$work/corpus/" 2> /dev/null || true
  local rc=0 dict=()
  [ -f "tests/fuzz/dict/$name.dict" ] && dict=(-dict="tests/fuzz/dict/$name.dict")
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    nice -n "${FUZZ_NICE:-0}" "$BUILD/tests/fuzz/$name" "$work/corpus" \
    -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$name/" "${dict[@]}" \
    > "$work/log" 2>&1 || rc=$?
  echo "$rc" > "$work/rc"
}

pids=()
for h in $harnesses; do
  run_one "$h" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$JOBS" ]; then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
done
wait

failed=0
printf '%-20s %8s %12s %9s %8s %8s %9s %8s\n' harness seconds execs exec/s corpus cov features crashes
for h in $harnesses; do
  work="$BUILD/fuzz-run/$h"
  rc=$(cat "$work/rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$work/log" | grep -E 'cov: ' | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corpus=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
  crashes=$(find "$BUILD/artifacts/$h" -type f | wc -l)
  [ "$rc" = 0 ] || crashes=$((crashes > 0 ? crashes : 1))
  printf '%-20s %8s %12s %9s %8s %8s %9s %8s\n' "$h" "$SECONDS_EACH" "${execs:-?}" "${rate:-?}" \
    "$corpus" "${cov:-?}" "${ft:-?}" "$crashes"
  if [ "$rc" != 0 ]; then
    failed=1
    echo "--- $h failed (exit $rc); the end of its log ($work/log):" >&2
    grep -E -A40 'ERROR: |runtime error|deadly signal|uncaught exception|Test unit written' \
      "$work/log" | head -60 >&2 || tail -40 "$work/log" >&2
  fi
done
exit "$failed"
