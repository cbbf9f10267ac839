#!/usr/bin/env bash
# Builds the Debian packages `leader` (CLI) and `libleader-dev` with CPack from a complete build
# in $BUILD_DIR (default build/; scripts/build.sh), into $PACKAGE_DIR (default $BUILD_DIR/packages).
# Prints the paths of the two .deb files.
#   scripts/package.sh && sudo apt-get install ./build/packages/leader_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
PACKAGE_DIR=${PACKAGE_DIR:-$BUILD_DIR/packages}
[ -f "$BUILD_DIR/CPackConfig.cmake" ] ||
  { echo "package: no CPackConfig.cmake in $BUILD_DIR: configure and build first (scripts/build.sh)" >&2; exit 1; }
command -v dpkg-shlibdeps > /dev/null ||
  { echo "package: dpkg-shlibdeps not found (Debian: dpkg-dev)" >&2; exit 1; }
mkdir -p "$PACKAGE_DIR"
PACKAGE_DIR=$(cd "$PACKAGE_DIR" && pwd)
rm -f "$PACKAGE_DIR"/*.deb
(cd "$BUILD_DIR" && cpack -G DEB -B "$PACKAGE_DIR" > "$PACKAGE_DIR/cpack.log" 2>&1) ||
  { cat "$PACKAGE_DIR/cpack.log" >&2; exit 1; }
rm -rf "$PACKAGE_DIR/_CPack_Packages"
ls "$PACKAGE_DIR"/leader_*.deb "$PACKAGE_DIR"/libleader-dev_*.deb
