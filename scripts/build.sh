#!/usr/bin/env bash
# Configures and builds into $BUILD_DIR (default build/) with Ninja.
#   scripts/build.sh [extra cmake args...]      e.g. -DLEADER_SANITIZE=thread
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
mkdir -p "$BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DLEADER_WERROR=ON "$@" \
  > "$BUILD_DIR/configure.log" 2>&1 || { cat "$BUILD_DIR/configure.log" >&2; exit 1; }
grep -E '^-- leader' "$BUILD_DIR/configure.log" || true
cmake --build "$BUILD_DIR" -j"$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
