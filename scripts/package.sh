#!/usr/bin/env bash
# Builds the Debian packages `leader` (CLI), `libleader-dev` and, when the build has shared
# libraries, `libleader0` with CPack from a complete build in $BUILD_DIR (default build/;
# scripts/build.sh), into $PACKAGE_DIR (default $BUILD_DIR/packages). Libraries go to the
# multiarch /usr/lib/<triplet>: the build directory is configured with that layout for CPack
# (prefix /usr) and given back its own afterwards (install paths only: nothing is recompiled).
# Prints the paths of the .deb files.
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
cached() { sed -n "s|^$1:[A-Z]*=||p" "$BUILD_DIR/CMakeCache.txt"; }
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || gcc -print-multiarch)
old_prefix=$(cached CMAKE_INSTALL_PREFIX)
old_libdir=$(cached CMAKE_INSTALL_LIBDIR)
relayout() {
  cmake "$BUILD_DIR" -DCMAKE_INSTALL_PREFIX="$1" -DCMAKE_INSTALL_LIBDIR="$2" \
    > "$PACKAGE_DIR/configure.log" 2>&1 || { cat "$PACKAGE_DIR/configure.log" >&2; exit 1; }
}
if [ "$old_prefix" != /usr ] || [ "$old_libdir" != "lib/$multiarch" ]; then
  trap 'relayout "$old_prefix" "$old_libdir"' EXIT
  relayout /usr "lib/$multiarch"
fi
(cd "$BUILD_DIR" && cpack -G DEB -B "$PACKAGE_DIR" > "$PACKAGE_DIR/cpack.log" 2>&1) ||
  { cat "$PACKAGE_DIR/cpack.log" >&2; exit 1; }
rm -rf "$PACKAGE_DIR/_CPack_Packages"
ls "$PACKAGE_DIR"/*.deb
