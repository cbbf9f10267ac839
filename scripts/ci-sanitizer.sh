#!/usr/bin/env bash
# Builds core and the stores in $LEADER_SANITIZE_STORES (default: memory sqlite) with a
# sanitizer and runs the unit tests and their contract suites. The network stores run the same
# contract unsanitized in scripts/test.sh; add them here to sanitize them too, e.g.
#   LEADER_SANITIZE_STORES="memory sqlite redis postgres" scripts/ci-asan.sh
# Usage: scripts/ci-sanitizer.sh <build-dir> <sanitizers>
#   LEADER_SANITIZER_PHASE=build   only configure and build; =test: only run the tests (already
#                                  built); default both (scripts/test.sh builds while the server
#                                  tests run). LEADER_SANITIZER_JOBS: ctest -j (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 sanitize=$2
stores=${LEADER_SANITIZE_STORES:-memory sqlite}
phase=${LEADER_SANITIZER_PHASE:-all}
if [ "$phase" != build ] && [ -n "$(tr ' ' '\n' <<< "$stores" | grep -vxE 'memory|sqlite|')" ]; then
  scripts/start-all-servers.sh > /dev/null  # a network store's contract needs its server
fi
flags=() targets="unit_tests leader_contract_child"
# The scheduler's unit tests (fake clock, many threads) when its dependency (date-tz) is installed.
if compgen -G "/usr/lib/*/cmake/date/dateConfig.cmake" > /dev/null; then
  targets="$targets unit_scheduler_tests"
fi
# Every store folder but memory (always built): the ones not asked for are not built at all (the
# contract child links every built store: consul, k8s and mongodb once cost a third of the build).
for s in $(ls src/stores | grep -vx memory); do
  if [[ " $stores " == *" $s "* ]]; then
    flags+=("-DLEADER_WITH_${s^^}=ON")
  else
    flags+=("-DLEADER_WITH_${s^^}=OFF")
  fi
done
for s in $stores; do targets="$targets contract_$s"; done
# verify_asan_link_order=0: the clock-rate contract case preloads libfaketime into its child.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:verify_asan_link_order=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp}
# A failing test is re-run once, alone (scripts/ctest-rerun.sh), unless it died by a signal or its
# output holds a sanitizer report: that is a defect and fails the run at once, while a timing
# test that missed under the sanitizer's 5-15x slowdown (a TSan run once snapshotted a listener's
# event a microsecond before it was recorded) is named loudly as FLAKY and must pass when re-run.
run_tests() {
  scripts/ctest-rerun.sh "$dir" --timeout 900 -j"${LEADER_SANITIZER_JOBS:-2}" -L 'unit|contract'
}
if [ "$phase" = test ]; then
  run_tests
  exit
fi
# -g1: line tables are all a sanitizer report needs, and 15 % cheaper to compile than -g.
BUILD_DIR=$dir BUILD_TYPE=Debug BUILD_TARGETS="$targets" scripts/build.sh \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1" -DCMAKE_C_FLAGS_DEBUG="-g1" -DLEADER_SANITIZE="$sanitize" -DLEADER_UNITY_TESTS=ON -DLEADER_BUILD_BENCH=OFF -DLEADER_BUILD_EXAMPLES=OFF \
  -DLEADER_BUILD_TOOLS=OFF "${flags[@]}"
# The corpus replays of the fuzz harnesses configured here are unit tests too: build them.
replays=$(sed -n 's/^-- leader: fuzz harnesses: //p' "$dir/configure.log" | tr ';' '\n' |
  sed 's/^/fuzz_replay_/' | tr '\n' ' ')
# shellcheck disable=SC2086
[ -z "$replays" ] || cmake --build "$dir" -j"$(nproc)" --target $replays
[ "$phase" != build ] || exit 0
run_tests
