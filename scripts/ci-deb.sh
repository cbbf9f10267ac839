#!/usr/bin/env bash
# The Debian packages (scripts/package.sh) from a complete build in $BUILD_DIR:
#   1. their contents: `leader` has the stripped CLI, the man page and both shell completions;
#      `libleader-dev` the headers, libraries, CMake package and pkg-config files (and the
#      contract kit, component testing, when built: its header, library and libgtest-dev);
#   2. as root with CI=true (or LEADER_DEB_INSTALL=1): `apt-get install ./leader_*.deb
#      ./libleader-dev_*.deb`, then the installed CLI runs, and a consumer project builds and runs
#      against /usr with find_package and with pkg-config; both packages are removed at the end.
#      Otherwise step 2 is skipped with a message (it writes to /usr).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
T0=$(date +%s.%N)
work=$(mktemp -d /tmp/leader-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "deb: FAIL: $*" >&2; exit 1; }
PACKAGE_DIR="$work/debs" scripts/package.sh > /dev/null
cli=$(ls "$work"/debs/leader_*.deb)
dev=$(ls "$work"/debs/libleader-dev_*.deb)

dpkg-deb -c "$cli" > "$work/cli.list"
for f in ./usr/bin/leader ./usr/share/man/man1/leader.1 ./usr/share/bash-completion/completions/leader \
         ./usr/share/zsh/vendor-completions/_leader; do
  grep -q " $f\$" "$work/cli.list" || fail "$(basename "$cli") lacks $f"
done
dpkg-deb -x "$cli" "$work/cli"
readelf -S "$work/cli/usr/bin/leader" | grep -q '\.symtab' && fail "/usr/bin/leader is not stripped"
dpkg-deb -f "$cli" Depends | grep -q libc6 || fail "leader's Depends lacks the shared libraries"
dpkg-deb -c "$dev" > "$work/dev.list"
for pattern in ./usr/include/leader/leader.hpp 'leader-config.cmake$' 'pkgconfig/leader.pc$' \
               'libleader-core\.(a|so)'; do
  grep -qE " $pattern" "$work/dev.list" || grep -qE "$pattern" "$work/dev.list" ||
    fail "$(basename "$dev") lacks $pattern"
done
# The contract kit (component testing, built with the tests): its header and library together.
if grep -q 'leader-testing-targets\.cmake$' "$work/dev.list"; then
  for pattern in ./usr/include/leader/testing/contract.hpp 'libleader-testing\.a$'; do
    grep -qE "$pattern" "$work/dev.list" || fail "$(basename "$dev") lacks $pattern"
  done
  dpkg-deb -f "$dev" Depends | grep -q libgtest-dev || fail "libleader-dev's Depends lacks libgtest-dev"
fi
echo "deb: $(basename "$cli") ($(du -k "$cli" | cut -f1) KiB), $(basename "$dev") ($(du -k "$dev" | cut -f1) KiB): contents ok"

if [ "$(id -u)" != 0 ] || { [ "${CI:-}" != true ] && [ "${LEADER_DEB_INSTALL:-}" != 1 ]; }; then
  echo "deb: install test skipped: it installs into /usr, so it runs only as root with CI=true" \
       "or LEADER_DEB_INSTALL=1"
  exit 0
fi
cleanup() { apt-get remove -y -qq leader libleader-dev > /dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq "$cli" "$dev" > "$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get install"; }
[ "$(command -v leader)" = /usr/bin/leader ] || fail "leader is not /usr/bin/leader"
/usr/bin/leader --version
/usr/bin/leader run --store "sqlite://$work/deb.db" --lock deb-test -- true ||
  fail "the installed leader run failed"
cmake -S tests/package -B "$work/consumer" -G Ninja -DLEADER_TEST_COMPONENTS="core;sqlite;memory" \
  > "$work/consumer.log" 2>&1 || { cat "$work/consumer.log" >&2; fail "consumer configure against /usr"; }
cmake --build "$work/consumer" > "$work/consumer-build.log" 2>&1 ||
  { cat "$work/consumer-build.log" >&2; fail "consumer build against /usr"; }
"$work/consumer/app/consumer" "$work/app.db" > /dev/null
"$work/consumer/component-sqlite/consumer_sqlite" sqlite store "$work/c.db" > /dev/null
# shellcheck disable=SC2046
g++ -std=c++20 -o "$work/pc" tests/package/component.cpp $(pkg-config --cflags --libs leader-sqlite)
"$work/pc" sqlite store "$work/pc.db" > /dev/null
echo "deb: installed with apt-get; leader ran; consumers built against /usr (CMake, pkg-config)"
printf 'deb tests: %.1f s\n' "$(echo "$(date +%s.%N) - $T0" | bc)"
