#!/usr/bin/env bash
# The man page: help2man generates it from the binary (tools/leader/man/make-man.sh), with the
# title, a section per subcommand (every one `leader --help` lists), the environment, and no path
# of the build it was made in.
#   man_test.sh MAKE_MAN_SCRIPT LEADER_BINARY
set -euo pipefail
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$1" "$2" "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^\.TH LEADER "1"' "$out" || fail "no .TH LEADER 1 header"
commands=$("$2" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$commands" ] || fail "leader --help lists no subcommands"
for section in run status observe list release $commands; do
  grep -q "^\.SS \"leader $section\"" "$out" || fail "no section for leader $section"
done
bindir=$(cd "$(dirname "$2")" && pwd)
! grep -q -- "$bindir" "$out" || fail "the man page shows the build path $bindir"
! grep -q -- "$(dirname "$bindir")" "$out" || fail "the man page shows a build path"
if "$2" serve --help > /dev/null 2>&1; then  # serve: only when built (cpp-httplib)
  grep -q '^\.SS "leader serve"' "$out" || fail "no section for leader serve"
  grep -q 'allow\\-remote\|allow-remote' "$out" || fail "leader serve's --allow-remote is missing"
fi
grep -q 'yes\\-i\\-know\|yes-i-know' "$out" || fail "leader release's --yes-i-know is missing"
grep -q 'LEADER_STORE' "$out" || fail "no ENVIRONMENT section"
if command -v man > /dev/null; then man -l "$out" > /dev/null 2>&1 || fail "man cannot render it"; fi
echo "man page: ok ($(wc -l < "$out") lines)"
