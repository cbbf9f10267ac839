#!/usr/bin/env bash
# Configures and builds into $BUILD_DIR (default build/) with Ninja.
#   scripts/build.sh [extra cmake args...]        everything: library, stores, CLI, tests,
#                                                 benchmarks, examples; e.g. -DLEADER_SANITIZE=thread
#   scripts/build.sh --cli [extra cmake args...]  only the core library, the SQLite and in-memory
#                                                 stores and the CLI (what scripts/demo.sh runs)
# $BUILD_TARGETS, when set, names the targets to build instead of the default ones.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
mkdir -p "$BUILD_DIR"
# The stores --cli leaves out: all but the SQLite default and the in-memory store.
other_stores=()
for d in src/stores/*/; do
  s=$(basename "$d")
  [ "$s" = sqlite ] || [ "$s" = memory ] || other_stores+=("${s^^}")
done
# --cli leaves these options in the cache; a later full build of the same directory puts
# their defaults back (so the test suite builds everything after a --cli build).
cli_marker=$BUILD_DIR/.cli-only
mode_args=()
restore=0
if [ "${1:-}" = "--cli" ]; then
  shift
  # Without -g: debug information is about a quarter of the compile time on a 2-core machine.
  mode_args=(-DLEADER_BUILD_TESTS=OFF -DLEADER_BUILD_BENCH=OFF -DLEADER_BUILD_EXAMPLES=OFF
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG")
  for s in "${other_stores[@]}"; do mode_args+=("-DLEADER_WITH_$s=OFF"); done
  BUILD_TARGETS=${BUILD_TARGETS:-leader}
  touch "$cli_marker"
elif [ -e "$cli_marker" ]; then
  restore=1
  mode_args=(-DLEADER_BUILD_TESTS=ON -DLEADER_BUILD_BENCH=ON -DLEADER_BUILD_EXAMPLES=ON
    -UCMAKE_CXX_FLAGS_RELWITHDEBINFO -UCMAKE_C_FLAGS_RELWITHDEBINFO)
  for s in "${other_stores[@]}"; do mode_args+=("-DLEADER_WITH_$s=AUTO"); done
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DLEADER_WERROR=ON \
  "${mode_args[@]}" "$@" > "$BUILD_DIR/configure.log" 2>&1 ||
  { cat "$BUILD_DIR/configure.log" >&2; exit 1; }
if [ "$restore" = 1 ]; then rm -f "$cli_marker"; fi
grep -E '^-- leader' "$BUILD_DIR/configure.log" || true
cmake --build "$BUILD_DIR" -j"$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
