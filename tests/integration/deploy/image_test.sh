#!/usr/bin/env bash
# The OCI image of scripts/image.sh, built from LEADER_BINARY and run with
# `buildah run --isolation=chroot` (podman run needs setrlimit, which some container hosts refuse):
# `leader --version`, then `leader run` against the shared test Redis (127.0.0.1:16379) with
# `leader status` of the same lock as its command, which must see the lock held by the run.
#   image_test.sh LEADER_BINARY BUILD_DIR        exit 77: skipped (no buildah/mmdebstrap, not root)
set -euo pipefail
cd "$(dirname "$0")/../../.."
binary=$1
export BUILD_DIR=$2
for tool in buildah mmdebstrap; do
  command -v "$tool" > /dev/null ||
    { echo "skip: $tool not installed (Debian: apt-get install buildah mmdebstrap; scripts/install-deps.sh)"; exit 77; }
done
[ "$(id -u)" = 0 ] ||
  { echo "skip: building and running the image needs root (buildah and mmdebstrap in root mode)"; exit 77; }
fail() { echo "image: FAIL: $*" >&2; exit 1; }
seconds_since() { local ds=$((($(date +%s%N) - $1) / 100000000)); echo "$((ds / 10)).$((ds % 10)) s"; }
T0=$(date +%s%N)
tag=localhost/leader-test:ctest
archive=$BUILD_DIR/image/leader-test.oci.tar
scripts/image.sh --binary "$binary" --tag "$tag" --archive "$archive" > /dev/null
T1=$(date +%s%N)
built=$(seconds_since "$T0")
[ -s "$archive" ] || fail "no OCI archive at $archive"
config=$(buildah inspect --type image --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}}' "$tag")
[ "$config" = "65532:65532 [/usr/bin/leader]" ] || fail "image config user/entrypoint: $config"
license=$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "org.opencontainers.image.licenses"}}' "$tag")
[ "$license" = Apache-2.0 ] || fail "image label org.opencontainers.image.licenses: '$license'"

container=$(buildah from --quiet "$tag")
trap 'buildah rm "$container" > /dev/null 2>&1 || true; buildah rmi "$tag" > /dev/null 2>&1 || true' EXIT
in_image() { buildah run --isolation=chroot --network=host "$container" -- "$@"; }
version=$(in_image /usr/bin/leader --version)
expected=$("$binary" --version)
[ "$version" = "$expected" ] || fail "leader --version in the image: '$version', outside: '$expected'"
echo "in the image: $version"

store="redis://127.0.0.1:16379/0?prefix=image-test:"
lock=image-$$
out=$(in_image /usr/bin/leader run --store "$store" --lock "$lock" --ttl 10s -- \
        /usr/bin/leader status --store "$store" --lock "$lock" --json) ||
  fail "leader run in the image exited $?: $out"
echo "in the image: leader run -> leader status: $out"
python3 -c '
import json, sys
s = json.loads(sys.argv[1])
holders = s.get("holders") or []
assert s.get("held") is True and len(holders) == 1 and holders[0].get("fencing_token", 0) > 0, s
' "$out" || fail "the command of leader run did not see the lock held: $out"
in_image /usr/bin/leader status --store "$store" --lock "$lock" > /dev/null 2>&1 && rc=0 || rc=$?
[ "$rc" = 3 ] || fail "after the run the lock should be free (exit 3), got $rc"
echo "image: built in $built, tested in $(seconds_since "$T1")"
