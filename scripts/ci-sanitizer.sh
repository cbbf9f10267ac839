#!/usr/bin/env bash
# Builds with a sanitizer and runs the unit and contract tests (servers must be running, or are
# started here). Usage: scripts/ci-sanitizer.sh <build-dir> <sanitizers>
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 sanitize=$2
scripts/start-all-servers.sh > /dev/null
targets="unit_tests leader_contract_child"
for s in build/tests/contract_* "$dir"/tests/contract_*; do
  [ -e "$s" ] && targets="$targets $(basename "$s")"
done
targets=$(echo "$targets" | tr ' ' '\n' | sort -u | tr '\n' ' ')
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
BUILD_DIR=$dir BUILD_TYPE=Debug BUILD_TARGETS="$targets" scripts/build.sh \
  -DLEADER_SANITIZE="$sanitize" -DLEADER_BUILD_BENCH=OFF -DLEADER_BUILD_EXAMPLES=OFF
ctest --test-dir "$dir" --output-on-failure --timeout 900 -j1 -L 'unit|contract'
