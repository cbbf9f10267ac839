#!/usr/bin/env bash
# Network namespaces for the nft partitions of the fault suite (docs/faults.md). Needs root,
# iproute2 and nftables (Debian: nftables). Worker i runs in namespace <tag>-<i>, linked to the
# host by a veth pair: host side 10.<net>.<i>.1, namespace side 10.<net>.<i>.2 (a /30 each).
# A partition is an nft drop rule inside the worker's namespace (both directions); nothing on the
# host's own rule set changes.
#   netns.sh check                 exit 0 when namespaces, veth and nft work here
#   netns.sh up   TAG NET COUNT    create TAG-0..TAG-<COUNT-1>
#   netns.sh down TAG NET COUNT    delete them (their veth pairs go with them)
#   netns.sh drop TAG I NET        partition worker I (drop every packet to and from the host)
#   netns.sh heal TAG I            remove the partition
set -euo pipefail
cmd=${1:?usage: netns.sh check|up|down|drop|heal ...}
host_if() { echo "lf$1h$2"; }   # interface names are limited to 15 characters
ns_if() { echo "lf$1n$2"; }

case $cmd in
check)
  [ "$(id -u)" = 0 ] || { echo "netns.sh: needs root" >&2; exit 1; }
  command -v nft > /dev/null || { echo "netns.sh: nft not found (Debian: nftables)" >&2; exit 1; }
  t="lfchk$$"
  trap 'ip netns del "$t" 2>/dev/null || true' EXIT
  ip netns add "$t"
  ip netns exec "$t" nft add table inet lf
  ;;
up)
  tag=$2 net=$3 count=$4
  for ((i = 0; i < count; i++)); do
    ns="$tag-$i" h=$(host_if "$tag" "$i") n=$(ns_if "$tag" "$i")
    ip netns add "$ns"
    ip link add "$h" type veth peer name "$n"
    ip link set "$n" netns "$ns"
    ip addr add "10.$net.$i.1/30" dev "$h"
    ip link set "$h" up
    ip netns exec "$ns" ip addr add "10.$net.$i.2/30" dev "$n"
    ip netns exec "$ns" ip link set "$n" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" nft -f - <<NFT
table inet lf {
  chain out { type filter hook output priority 0; policy accept; }
  chain in { type filter hook input priority 0; policy accept; }
}
NFT
  done
  ;;
down)
  tag=$2 count=$4
  for ((i = 0; i < count; i++)); do
    ip link del "$(host_if "$tag" "$i")" 2>/dev/null || true
    ip netns del "$tag-$i" 2>/dev/null || true
  done
  ;;
drop)
  tag=$2 i=$3 net=$4
  ip netns exec "$tag-$i" nft add rule inet lf out ip daddr "10.$net.$i.1" drop
  ip netns exec "$tag-$i" nft add rule inet lf in ip saddr "10.$net.$i.1" drop
  ;;
heal)
  tag=$2 i=$3
  ip netns exec "$tag-$i" nft flush chain inet lf out
  ip netns exec "$tag-$i" nft flush chain inet lf in
  ;;
*)
  echo "usage: netns.sh check|up|down|drop|heal ..." >&2
  exit 64
  ;;
esac
