#!/usr/bin/env bash
# The Debian packages (scripts/package.sh) from a complete build in $BUILD_DIR:
#   1. their contents: `leader` has the stripped CLI, the man page, both shell completions and
#      the systemd units (no maintainer script that would enable them); `libleader-dev` the
#      headers, libraries, CMake package and pkg-config files (and the contract kit, component
#      testing, when built: its header, library and libgtest-dev); libraries under the
#      multiarch /usr/lib/<triplet>; shared objects, if any, in the runtime package libleader0
#      (the -dev package has their .so links); a copyright file in each; a Description without
#      stray ';' that names every subcommand of the packaged `leader --help`; lintian (when
#      installed) reports no error;
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
lib=$(ls "$work"/debs/libleader0_*.deb 2> /dev/null || true)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || gcc -print-multiarch)

dpkg-deb -c "$cli" > "$work/cli.list"
for f in ./usr/bin/leader ./usr/share/man/man1/leader.1.gz ./usr/share/bash-completion/completions/leader \
         ./usr/share/zsh/vendor-completions/_leader; do
  grep -q " $f\$" "$work/cli.list" || fail "$(basename "$cli") lacks $f"
done
dpkg-deb -x "$cli" "$work/cli"
readelf -S "$work/cli/usr/bin/leader" | grep -q '\.symtab' && fail "/usr/bin/leader is not stripped"
dpkg-deb -f "$cli" Depends | grep -q libc6 || fail "leader's Depends lacks the shared libraries"
dpkg-deb -f "$cli" Depends | grep -q libleader-dev && fail "leader depends on the -dev package"
for unit in leader-serve.service leader-cron.service; do
  grep -q " ./usr/lib/systemd/system/$unit\$" "$work/cli.list" || fail "$(basename "$cli") lacks $unit"
done
dpkg-deb -e "$cli" "$work/cli.control"
for script in preinst postinst prerm postrm; do  # shipped disabled: nothing enables or starts them
  [ -e "$work/cli.control/$script" ] && fail "$(basename "$cli") has a $script script"
done
# Description: no stray ';' (a CMake list), every subcommand of the packaged binary.
description=$(dpkg-deb -f "$cli" Description)
grep -q ';' <<< "$description" && fail "leader's Description has a ';': $description"
[ "$(head -1 <<< "$description")" != "$(dpkg-deb -f "$dev" Description | head -1)" ] ||
  fail "leader and libleader-dev have the same synopsis: $(head -1 <<< "$description")"
subcommands=$("$work/cli/usr/bin/leader" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$subcommands" ] || fail "no subcommands in leader --help"
for sub in $subcommands; do
  grep -qw "$sub" <<< "$description" || fail "leader's Description does not name '$sub': $description"
done
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
# Multiarch library paths; shared objects in the runtime package, their .so links in -dev.
grep -E '\.(a|so)$|/(cmake|pkgconfig)/' "$work/dev.list" | grep -v " -> " | awk '{ print $NF }' |
  grep -v "^./usr/lib/$multiarch/" && fail "$(basename "$dev"): libraries outside /usr/lib/$multiarch (above)"
awk '{ print $6 }' "$work/dev.list" | grep -E '\.so\.[0-9]' &&
  fail "$(basename "$dev") holds versioned shared objects (above)"
if [ -n "$lib" ]; then
  dpkg-deb -c "$lib" | awk '$1 !~ /^d/ { print $6 }' > "$work/lib.list"
  grep -vE "^./usr/lib/$multiarch/lib[^/]+\.so\.[0-9.]+\$|^./usr/share/doc/libleader0/copyright\$" "$work/lib.list" &&
    fail "$(basename "$lib") holds more than shared objects (above)"
  dpkg-deb -f "$dev" Depends | grep -q 'libleader0 (=' || fail "libleader-dev does not depend on libleader0"
elif grep -qE '\.so(\.[0-9.]+)?$' "$work/dev.list"; then
  fail "$(basename "$dev") has shared objects but no libleader0 package was built"
fi
for deb in "$cli" "$dev" $lib; do
  pkg=$(dpkg-deb -f "$deb" Package)
  dpkg-deb -c "$deb" > "$work/$pkg.list"
  grep -q " ./usr/share/doc/$pkg/copyright\$" "$work/$pkg.list" || fail "$(basename "$deb") has no copyright file"
  dpkg-deb -f "$deb"
done
if command -v lintian > /dev/null; then
  # Errors fail; warnings and information are shown. no-changelog: CPack writes none.
  lintian --suppress-tags no-changelog "$cli" "$dev" $lib > "$work/lintian.txt" 2>&1 || true
  cat "$work/lintian.txt"
  grep -q '^E: ' "$work/lintian.txt" && fail "lintian reports errors (above)"
else
  echo "deb: lintian not installed (Debian: lintian): packages not linted"
fi
echo "deb: $(basename "$cli") ($(du -k "$cli" | cut -f1) KiB), $(basename "$dev") ($(du -k "$dev" | cut -f1) KiB)${lib:+, $(basename "$lib")}: contents ok"

if [ "$(id -u)" != 0 ] || { [ "${CI:-}" != true ] && [ "${LEADER_DEB_INSTALL:-}" != 1 ]; }; then
  echo "deb: install test skipped: it installs into /usr, so it runs only as root with CI=true" \
       "or LEADER_DEB_INSTALL=1"
  exit 0
fi
cleanup() {
  apt-get remove -y -qq leader libleader-dev ${lib:+libleader0} > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq "$cli" "$dev" $lib > "$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get install"; }
[ "$(command -v leader)" = /usr/bin/leader ] || fail "leader is not /usr/bin/leader"
if command -v systemctl > /dev/null; then
  state=$(systemctl is-enabled leader-serve.service 2> /dev/null || true)
  [ "$state" = disabled ] || fail "leader-serve.service is '$state' after install, not disabled"
fi
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
