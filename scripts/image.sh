#!/usr/bin/env bash
# Builds the OCI image of the `leader` CLI from Debian packages only (no image registry):
#   1. the root file system: the Debian packages of the binary's shared libraries (ldd + dpkg -S)
#      and those of deploy/image/packages, unpacked by mmdebstrap (variant extract: no shell, no
#      package manager, no maintainer scripts), plus a CA bundle and deploy/image/{passwd,group};
#      cached as $BUILD_DIR/image/rootfs-<hash>.tar, keyed by suite, mirror, package list,
#      deploy/image/{passwd,group} and this script;
#   2. the image: `buildah from scratch`, that root file system, the binary (debug info stripped)
#      as /usr/bin/leader, entrypoint leader, user 65532 (leader), OCI labels; committed as
#      --tag (default localhost/leader:<version>) in buildah's store (as root: also podman's).
# Usage (as root; Debian: apt-get install buildah mmdebstrap):
#   scripts/image.sh [--binary PATH] [--tag NAME] [--archive FILE]
#     --binary   the leader to put in (default $BUILD_DIR/tools/leader/leader, $BUILD_DIR=build)
#     --tag      the image name (default localhost/leader:<version of the binary>)
#     --archive  also write the image as an OCI archive (podman load -i FILE / skopeo copy)
# Environment: LEADER_IMAGE_SUITE (bookworm), LEADER_IMAGE_MIRROR (http://deb.debian.org/debian).
# Prints the image name on stdout, progress and timings on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
SUITE=${LEADER_IMAGE_SUITE:-bookworm}
MIRROR=${LEADER_IMAGE_MIRROR:-http://deb.debian.org/debian}
binary=$BUILD_DIR/tools/leader/leader
tag=""
archive=""
while [ $# -gt 0 ]; do
  case $1 in
    --binary) binary=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    *) echo "image: unknown argument '$1'; usage: scripts/image.sh [--binary PATH] [--tag NAME]" \
            "[--archive FILE]" >&2; exit 64 ;;
  esac
done
say() { echo "image: $*" >&2; }
for tool in buildah mmdebstrap objcopy dpkg-query; do
  command -v "$tool" > /dev/null ||
    { say "$tool not found (Debian: apt-get install buildah mmdebstrap binutils)"; exit 1; }
done
[ -x "$binary" ] || { say "no leader binary at $binary (build it: scripts/build.sh --cli)"; exit 1; }
T0=$(date +%s%N)
elapsed() { local ds=$((($(date +%s%N) - T0) / 100000000)); echo "$((ds / 10)).$((ds % 10)) s"; }

# The package that ships the shared library `lib` (as ldd resolved it; usr-merged or not).
package_of() {
  local lib=$1 real candidate owner
  real=$(readlink -f "$lib")
  for candidate in "$lib" "$real" "${lib#/usr}" "/usr$lib" "${real#/usr}"; do
    owner=$(dpkg-query -S "$candidate" 2> /dev/null | head -1) || continue
    [ -n "$owner" ] && { echo "${owner%%:*}"; return 0; }
  done
  say "$lib (needed by $binary) comes from no Debian package; the image holds Debian packages only"
  return 1
}
packages=$(
  { ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
      package_of "$lib"
    done
    grep -v '^#' deploy/image/packages | grep -v '^$'
  } | sort -u)
[ -n "$packages" ] || { say "no packages found for $binary"; exit 1; }

key=$( { echo "$SUITE $MIRROR"; echo "$packages"
         cat deploy/image/passwd deploy/image/group scripts/image.sh; } | sha256sum | cut -c1-16)
mkdir -p "$BUILD_DIR/image"
rootfs=$BUILD_DIR/image/rootfs-$key.tar
if [ -f "$rootfs" ]; then
  say "root file system cached: $rootfs"
else
  say "root file system from $SUITE: $(echo "$packages" | wc -l) packages and their dependencies"
  # Documentation except the copyright files, manuals and translations are left out.
  hook='cd "$1" && cat usr/share/ca-certificates/mozilla/*.crt > etc/ssl/certs/ca-certificates.crt'
  hook+=' && find usr/share/doc -type f ! -name copyright -delete'
  hook+=' && rm -rf usr/share/man usr/share/info usr/share/locale usr/share/lintian'
  hook+=' && mkdir -p -m 1777 tmp && chmod 1777 tmp'
  mmdebstrap --quiet --variant=extract --include="$(echo "$packages" | paste -sd,)" \
    --extract-hook="$hook" \
    --extract-hook="cp deploy/image/passwd \"\$1/etc/passwd\"" \
    --extract-hook="cp deploy/image/group \"\$1/etc/group\"" \
    "$SUITE" "$rootfs.part.tar" "$MIRROR" > "$BUILD_DIR/image/mmdebstrap.log" 2>&1 ||
    { tail -20 "$BUILD_DIR/image/mmdebstrap.log" >&2; rm -f "$rootfs.part.tar"; exit 1; }
  mv "$rootfs.part.tar" "$rootfs"
  find "$BUILD_DIR/image" -maxdepth 1 -name 'rootfs-*.tar' ! -path "$rootfs" -delete  # stale keys
  say "root file system built in $(elapsed): $rootfs ($(du -m "$rootfs" | cut -f1) MiB)"
fi

version=$("$binary" --version | awk '{ print $2 }')
tag=${tag:-localhost/leader:$version}
stripped=$BUILD_DIR/image/leader
objcopy --strip-debug "$binary" "$stripped"
container=$(buildah from scratch)
trap 'buildah rm "$container" > /dev/null 2>&1 || true' EXIT
buildah add --quiet "$container" "$rootfs" / > /dev/null
buildah copy --quiet --chmod 0755 "$container" "$stripped" /usr/bin/leader > /dev/null
buildah copy --quiet "$container" deploy/debian/copyright /usr/share/doc/leader/copyright > /dev/null
buildah config \
  --entrypoint '["/usr/bin/leader"]' --cmd '["--help"]' \
  --user 65532:65532 --workingdir /tmp --port 9464/tcp \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --label org.opencontainers.image.title=leader \
  --label "org.opencontainers.image.description=Distributed leader election: leader run, status, list, observe, release, cron, serve, probe" \
  --label "org.opencontainers.image.version=$version" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label "org.opencontainers.image.base.name=debian:$SUITE (mmdebstrap, shared libraries only)" \
  "$container"
buildah commit --quiet --format oci --rm "$container" "$tag" > /dev/null
trap - EXIT
if [ -n "$archive" ]; then
  rm -f "$archive"
  buildah push --quiet "$tag" "oci-archive:$archive:$tag" > /dev/null
  say "archive: $archive ($(du -m "$archive" | cut -f1) MiB)"
fi
say "$tag built in $(elapsed)"
echo "$tag"
