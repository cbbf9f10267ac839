#!/usr/bin/env bash
# Runs ctest in BUILD_DIR with the given arguments; a failed test is run once more, alone, and if
# it passes then the run goes on, naming it loudly as FLAKY with its first failure's output.
# Never forgiven, whatever a re-run says: a test that died by a signal (SegFault, Subprocess
# aborted, ...) or whose output holds a sanitizer report.
#   scripts/ctest-rerun.sh BUILD_DIR [ctest args...]
# Leaves BUILD_DIR/artifacts/ctest-first-run.log (the first run's console), first-run-tests.log
# (its LastTest.log: every test's output) and flaky-tests.txt.
set -euo pipefail
dir=$1
shift
art=$dir/artifacts
mkdir -p "$art"
if ctest --test-dir "$dir" --output-on-failure "$@" 2>&1 | tee "$art/ctest-first-run.log"; then
  exit 0
fi
tmp=$dir/Testing/Temporary
cp "$tmp/LastTest.log" "$art/first-run-tests.log"
cp "$tmp/LastTestsFailed.log" "$art/flaky-tests.txt"
# ctest's summary lists each failed test, after "The following tests FAILED:", as
# "  12 - name (REASON)": Failed and Timeout may be re-run; any other reason (SEGFAULT,
# Subprocess aborted, ILLEGAL, ...) is a death by signal. (Skipped and Not Run tests are listed
# apart, under "The following tests did not run:".)
crashed=$(awk '/^The following tests FAILED:/ { on = 1; next } on && !/^[[:space:]]+[0-9]+ - / { on = 0 } on' \
  "$art/ctest-first-run.log" | sed -nE 's/^[[:space:]]+[0-9]+ - (.+) \(([^()]+)\)$/\1 (\2)/p' |
  grep -vE ' \((Failed|Timeout|Not Run|Disabled|Skipped)\)$' || true)
if [ -n "$crashed" ]; then
  echo "=== CRASHED: these tests died by a signal; a crash is never re-run away:" >&2
  echo "$crashed" >&2
  exit 1
fi
if grep -qE 'ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:' \
  "$art/first-run-tests.log"; then
  echo "=== a sanitizer reported a defect ($art/first-run-tests.log): no re-run" >&2
  grep -E -m 5 'ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:' \
    "$art/first-run-tests.log" >&2
  exit 1
fi
echo
echo "=== re-running the failed tests once, one at a time"
# The re-run keeps only the arguments that select tests (a label), not the parallelism.
keep=()
while [ $# -gt 0 ]; do
  case $1 in
    -L | -LE | --timeout) keep+=("$1" "$2"); shift 2 ;;
    *) shift ;;
  esac
done
ctest --test-dir "$dir" --output-on-failure "${keep[@]}" --rerun-failed -j1
{
  echo "=== FLAKY: these tests failed once and passed when re-run alone; their first failure:"
  while IFS=: read -r _ name; do
    [ -n "$name" ] || continue
    echo "--- $name (last 40 lines of its first run)"
    awk -v n="$name" '
      $0 ~ "^[0-9]+/[0-9]+ Testing: " && substr($0, index($0, ": ") + 2) == n { on = 1 }
      on && index($0, "\"" n "\" end time:") == 1 { on = 0 }
      on { print }
    ' "$art/first-run-tests.log" | tail -40
  done < "$art/flaky-tests.txt"
} >&2
