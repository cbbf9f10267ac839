#!/usr/bin/env bash
# Installs every Debian 12 package the build, the tests and the test servers need (as root).
# Idempotent: does nothing when all are present. Usage: scripts/install-deps.sh
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config clang clang-format clang-tidy libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev sqlite3 libhiredis-dev libssl-dev openssl libpq-dev libmariadb-dev
  libzookeeper-mt-dev libcurl4-openssl-dev nlohmann-json3-dev libasio-dev libcli11-dev
  libhowardhinnant-date-dev tzdata prometheus-cpp-dev libcpp-httplib-dev
  redis-server redis-tools postgresql-15 mariadb-server mariadb-client etcd-server etcd-client
  zookeeper python3-kazoo python3-redis faketime libfaketime iproute2 nftables procps psmisc
  libmongoc-dev libbson-dev python3-mongomock python3-bson python3-pymongo
  python3-kubernetes prometheus
)
# dynalite (the DynamoDB API test server) comes from npm: use the machine's Node.js and npm when
# present (this machine kind ships Node 20 with npm 11, which conflicts with Debian's npm package).
command -v npm > /dev/null 2>&1 || PACKAGES+=(nodejs npm)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
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
apt-get install -y -qq --no-install-recommends "${missing[@]}" > /tmp/leader-apt.log 2>&1 ||
  { tail -30 /tmp/leader-apt.log >&2; exit 1; }
echo "install-deps: done"
