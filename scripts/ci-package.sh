#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds tests/package against it, once with
# find_package(leader COMPONENTS ...) and once with pkg-config; both consumers must run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
prefix=$(mktemp -d /tmp/leader-install.XXXXXX)
work=$(mktemp -d /tmp/leader-consumer.XXXXXX)
trap 'rm -rf "$prefix" "$work"' EXIT
cmake --install "$BUILD_DIR" --prefix "$prefix" > /dev/null
cmake -S tests/package -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/cmake" > /dev/null
"$work/cmake/consumer" "$work/a.db"
# shellcheck disable=SC2046
g++ -o "$work/pc-consumer" tests/package/main.cpp \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs leader)
"$work/pc-consumer" "$work/b.db"
echo "package consumer: find_package and pkg-config builds work"
