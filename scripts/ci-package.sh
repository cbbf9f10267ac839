#!/usr/bin/env bash
# The installed package, as consumers use it (tests/package):
#   1. exported targets carry no absolute library path, and no .pc file forces a -std flag;
#   2. CMake: one consumer project with one target per installed component, each configured by its
#      own find_package(leader COMPONENTS <c>) in its own directory scope (so a dependency missing
#      from <c>'s declaration fails), plus the README's application (sqlite + memory) and the
#      contract kit (testing) against the memory store; all run;
#   3. pkg-config: one object compiled with `pkg-config --cflags leader`, linked per component with
#      `pkg-config --libs leader-<c>` (leader for the core); all run.
# BUILD_DIR (default build) must hold a complete build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
T0=$(date +%s.%N)
prefix=$(mktemp -d /tmp/leader-install.XXXXXX)
work=$(mktemp -d /tmp/leader-consumer.XXXXXX)
trap 'rm -rf "$prefix" "$work"' EXIT
cmake --install "$BUILD_DIR" --prefix "$prefix" > /dev/null
cmakedir="$prefix/lib/cmake/leader"
pcdir="$prefix/lib/pkgconfig"
pc() { PKG_CONFIG_PATH="$pcdir" pkg-config "$@"; }

# The components the package offers, as its generated leader-config.cmake lists them.
read -r -a components < <(sed -n 's/^set(_leader_available \(.*\))$/\1/p' "$cmakedir/leader-config.cmake" |
  tr ';' ' ')
[ "${#components[@]}" -gt 1 ] || { echo "no components found in leader-config.cmake" >&2; exit 1; }
read -r -a stores < <(sed -n 's/^set(_leader_stores \([^)]*\)).*$/\1/p' "$cmakedir/leader-config.cmake" |
  tr ';' ' ')
kind() { [[ " ${stores[*]} " == *" $1 "* ]] && echo store || echo library; }
echo "components: ${components[*]} (stores: ${stores[*]})"

if grep -nE '(^|[ ";<>])/(usr|lib|opt|home|tmp)/' "$cmakedir"/leader-*-targets*.cmake; then
  echo "absolute paths in the exported targets (above)" >&2; exit 1
fi
for f in "$pcdir"/*.pc; do
  if pc --cflags "$(basename "$f" .pc)" | grep -- '-std='; then
    echo "$(basename "$f") forces a language standard" >&2; exit 1
  fi
done

list=$(IFS=';'; echo "${components[*]}")
cmake -S tests/package -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DLEADER_TEST_COMPONENTS="$list" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/cmake" -j"$(nproc)" > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
"$work/cmake/app/consumer" "$work/a.db" > /dev/null
for c in "${components[@]}"; do
  [ "$c" = c ] && continue  # the C interface: its own consumer, below
  "$work/cmake/component-$c/consumer_$c" "$c" "$(kind "$c")" "$work/cmake-$c.db"
done
echo "find_package(leader COMPONENTS <c>): ${#components[@]} consumers built and ran"
# The contract kit (component testing) against the memory store, as a store's author runs it:
# every case of the project's own contract programs runs, and passes or is skipped for what a
# store factory alone cannot provide (an outage, other processes) or the memory store lacks (a
# LockWatcher): any other skip fails.
if [[ " ${components[*]} " == *" testing "* ]]; then
  "$work/cmake/kit/store_contract" --gtest_brief=1 > "$work/kit.log" 2>&1 ||
    { cat "$work/kit.log" >&2; echo "the contract kit failed on the memory store" >&2; exit 1; }
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\.$/\1/p' "$work/kit.log")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\?[.,].*$/\1/p' "$work/kit.log")
  echo "find_package(leader COMPONENTS testing memory): contract kit on memory: ${passed:-0} passed," \
       "${skipped:-0} skipped:"
  { grep -A1 ': Skipped$' "$work/kit.log" || true; } | { grep -v -e ': Skipped$' -e '^--$' || true; } |
    sort | uniq -c | tee "$work/kit-skips.txt"
  if grep -v -e 'has no outage hook' -e 'Backend::child' -e 'has no LockWatcher' -e 'not built' \
       "$work/kit-skips.txt"; then
    echo "the contract kit skipped a case for another reason (above)" >&2; exit 1
  fi
  if [ -x "$BUILD_DIR/tests/contract_memory" ]; then
    cases=$("$BUILD_DIR/tests/contract_memory" --gtest_list_tests | grep -c '^  ')
    [ "$(( ${passed:-0} + ${skipped:-0} ))" = "$cases" ] ||
      { echo "the contract kit ran $(( ${passed:-0} + ${skipped:-0} )) cases, contract_memory has $cases" >&2; exit 1; }
  fi
fi

# shellcheck disable=SC2046
g++ -std=c++20 -c -o "$work/component.o" tests/package/component.cpp $(pc --cflags leader)
for c in "${components[@]}"; do
  [ "$c" = asio ] && continue  # header-only: its .pc adds a define; covered by the CMake consumer
  [ "$c" = c ] && continue     # the C interface: below
  module=leader-$c
  [ "$c" = core ] && module=leader
  # shellcheck disable=SC2046
  g++ -o "$work/pc-$c" "$work/component.o" $(pc --libs "$module")
  "$work/pc-$c" "$c" "$(kind "$c")" "$work/pc-$c.db" > /dev/null
done
pc --cflags leader-asio > /dev/null
echo "pkg-config leader-<c>: $(( ${#components[@]} - 1 )) consumers linked and ran"
# The C interface (component c, libleader.so.0): a C11 consumer through CMake and through
# pkg-config leader-c, warnings as errors; it links libleader.so.0 alone (no C++ library).
if [[ " ${components[*]} " == *" c "* ]]; then
  LD_LIBRARY_PATH="$prefix/lib" "$work/cmake/c/consumer_c_api" "$work/c-cmake.db" > /dev/null
  # shellcheck disable=SC2046
  gcc -std=c11 -Wall -Wextra -Werror -pedantic -o "$work/c-pc" tests/package/c/main.c $(pc --cflags --libs leader-c)
  LD_LIBRARY_PATH="$prefix/lib" "$work/c-pc" "$work/c-pc.db"
  readelf -d "$work/c-pc" | grep -q 'NEEDED.*libleader\.so\.0' ||
    { echo "the C consumer does not link libleader.so.0" >&2; exit 1; }
fi
printf 'package tests: %.1f s\n' "$(echo "$(date +%s.%N) - $T0" | bc)"
