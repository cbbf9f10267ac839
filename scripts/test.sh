#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. install missing Debian packages (as root), build with -Werror,
#   2. start the real servers on 127.0.0.1 (scripts/test-servers.sh) and their extra setups,
#   3. run unit, contract (every built store) and integration tests with ctest,
#   4. build and run a consumer project against the installed package (scripts/ci-package.sh),
#   5. run unit + contract tests under ASan+UBSan and TSan (scripts/ci-asan.sh, ci-tsan.sh),
#   6. fuzz every parser for 30 s, two harnesses at a time (scripts/fuzz.sh; needs clang).
# LEADER_QUICK=1 skips steps 4 to 6. Servers started here are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 ))s] $*"; }

step "dependencies"
if [ "$(id -u)" = 0 ]; then scripts/install-deps.sh; fi
step "build"
scripts/build.sh
step "test servers"
scripts/start-all-servers.sh
trap 'scripts/test-servers.sh stop >/dev/null 2>&1 || true' EXIT
step "unit, contract and integration tests"
# One at a time: fault cases pause the shared servers (SIGSTOP), which must not hit another test.
ctest --test-dir build --output-on-failure --timeout 600 -j1
if [ "${LEADER_QUICK:-0}" != 1 ]; then
  step "package consumer"
  scripts/ci-package.sh
  step "ASan+UBSan"
  scripts/ci-asan.sh
  step "TSan"
  scripts/ci-tsan.sh
  step "fuzzing (30 s per harness, two at a time)"
  if command -v clang++ > /dev/null; then
    FUZZ_JOBS=2 scripts/fuzz.sh "${LEADER_FUZZ_SECONDS:-30}"
  else
    echo "clang++ not found: fuzzing skipped (scripts/install-deps.sh installs clang)"
  fi
fi
step "all tests passed"
