#!/usr/bin/env bash
# Installs the Debian 12 packages leader needs (as root). Idempotent: does nothing when all are
# present.
#   scripts/install-deps.sh                everything the build, the tests and the test servers need
#   scripts/install-deps.sh --cli          only what building the library and the CLI with the SQLite
#                                          default needs (scripts/build.sh --cli, scripts/demo.sh)
#   scripts/install-deps.sh --store redis  only what building the CLI (and library) with the SQLite
#                                          default and that one store needs; then configure with
#                                          -DLEADER_WITH_<STORE>=ON and the other stores OFF (README)
set -euo pipefail
# Building the core, the CLI with its SQLite default and `leader cron` (date-tz).
CLI_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libsqlite3-dev nlohmann-json3-dev libcli11-dev libhowardhinnant-date-dev tzdata
)
# What each store adds to CLI_PACKAGES (its client library; leader_http stores need libcurl).
declare -A STORE_PACKAGES=(
  [memory]="" [sqlite]=""
  [redis]="libhiredis-dev libssl-dev" [postgres]="libpq-dev" [mysql]="libmariadb-dev"
  [etcd]="libcurl4-openssl-dev libssl-dev" [zookeeper]="libzookeeper-mt-dev"
  [dynamodb]="libcurl4-openssl-dev libssl-dev" [consul]="libcurl4-openssl-dev"
  [k8s]="libcurl4-openssl-dev libyaml-cpp-dev" [mongodb]="libmongoc-dev libbson-dev"
)
if [ "${1:-}" = "--cli" ]; then
  PACKAGES=("${CLI_PACKAGES[@]}")
elif [ "${1:-}" = "--store" ]; then
  store=${2:-}
  if [ -z "$store" ] || [ -z "${STORE_PACKAGES[$store]+set}" ]; then
    echo "install-deps: --store needs one of: ${!STORE_PACKAGES[*]}" >&2
    exit 64
  fi
  read -r -a extra <<< "${STORE_PACKAGES[$store]}"
  PACKAGES=("${CLI_PACKAGES[@]}" "${extra[@]}")
elif [ $# -gt 0 ]; then
  echo "install-deps: unknown argument '$1'; usage: scripts/install-deps.sh [--cli | --store STORE]" >&2
  exit 64
else
PACKAGES=(
  build-essential cmake ninja-build pkg-config clang clang-format clang-tidy libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev sqlite3 libhiredis-dev libssl-dev openssl libpq-dev libmariadb-dev
  libzookeeper-mt-dev libcurl4-openssl-dev nlohmann-json3-dev libasio-dev libcli11-dev
  libhowardhinnant-date-dev tzdata prometheus-cpp-dev libcpp-httplib-dev libyaml-cpp-dev
  redis-server redis-tools redis-sentinel postgresql-15 mariadb-server mariadb-client etcd-server etcd-client
  zookeeper python3-kazoo python3-redis faketime libfaketime iproute2 nftables procps psmisc
  libmongoc-dev libbson-dev python3-mongomock python3-bson python3-pymongo
  python3-kubernetes prometheus chromium
  help2man python3-yaml systemd zsh libsystemd-dev
  buildah mmdebstrap lintian
  golang-go dpkg-dev openjdk-17-jdk-headless
  python3-cffi python3-pytest python3-venv python3-setuptools
)
# kubectl (deploy/k8s's offline check): Debian's kubernetes-client unless one is installed.
command -v kubectl > /dev/null 2>&1 || PACKAGES+=(kubernetes-client)
# dynalite (the DynamoDB API test server) comes from npm: use the machine's Node.js and npm when
# present (this machine kind ships Node 20 with npm 11, which conflicts with Debian's npm package).
command -v npm > /dev/null 2>&1 || PACKAGES+=(nodejs npm)
fi
# One dpkg-query for all (it exits 1 when it knows some name not at all: those count as missing).
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2> /dev/null |
  awk '/ install ok installed$/ { print $1 }' || true)
missing=()
for p in "${PACKAGES[@]}"; do
  grep -qxF "$p" <<< "$installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing packages (run as root): ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# CI's machines are thrown away after the run: there dpkg may skip its fsync per unpacked file
# (--force-unsafe-io; a power loss mid-install could leave a file unwritten, which CI never sees).
apt_opts=()
if [ "${CI:-}" = true ]; then apt_opts=(-o Dpkg::Options::=--force-unsafe-io); fi
apt-get install -y -qq --no-install-recommends "${apt_opts[@]}" "${missing[@]}" > /tmp/leader-apt.log 2>&1 ||
  { tail -30 /tmp/leader-apt.log >&2; exit 1; }
echo "install-deps: done"
