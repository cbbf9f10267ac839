#!/usr/bin/env bash
# Lint, as scripts/test.sh runs it (each step prints its time):
#   1. clang-format: every tracked C++ file must already be formatted (.clang-format);
#   2. headers: every public header (include/, src/stores/*/include/) compiles on its own;
#   3. clang-tidy (.clang-tidy, warnings are errors) over the translation units of
#      $BUILD_DIR/compile_commands.json (default build/; configured when missing) under
#      LINT_TIDY_PATHS (default "src/core", the part known clean; "." for every source of the
#      project), LINT_JOBS (default: nproc) files at a time. LINT_TIDY=0 skips this step.
#   scripts/ci-lint.sh [--fix]      --fix rewrites files with clang-format instead of checking
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${LINT_JOBS:-$(nproc)}
now() { date +%s.%N; }
took() { printf '%.1f s' "$(echo "$(now) - $1" | bc)"; }

mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
if [ "${1:-}" = --fix ]; then clang-format -i "${files[@]}"; exit 0; fi
t=$(now)
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean ($(took "$t"))"

t=$(now)
mapfile -t headers < <(git ls-files 'include/*.hpp' 'src/stores/*/include/*.hpp')
includes=(-Iinclude)
for d in src/stores/*/include; do includes+=("-I$d"); done
check_header() {  # $1: header path; prints the errors of a header that does not compile alone
  local name=${1#*include/}
  local defs=()
  case $name in leader/asio/*) defs=(-DASIO_STANDALONE) ;; esac
  printf '#include <%s>\n' "$name" |
    g++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror "${defs[@]}" "${@:2}" -x c++ - 2>&1 |
    sed "s|^|$1: |"
}
export -f check_header
errors=$(printf '%s\n' "${headers[@]}" | xargs -P "$JOBS" -I{} bash -c 'check_header "$@"' _ {} "${includes[@]}")
if [ -n "$errors" ]; then echo "$errors" >&2; echo "headers that do not compile alone (above)" >&2; exit 1; fi
echo "headers: ${#headers[@]} public headers compile alone ($(took "$t"))"

[ "${LINT_TIDY:-1}" = 0 ] && { echo "clang-tidy: skipped (LINT_TIDY=0)"; exit 0; }
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja > /dev/null
fi
t=$(now)
# The project's own translation units (generated files and others' code excluded).
read -r -a tidy_paths <<< "${LINT_TIDY_PATHS:-src/core}"
mapfile -t units < <(python3 - "$BUILD_DIR/compile_commands.json" "$PWD" "${tidy_paths[@]}" <<'PY'
import json, os, sys
root = sys.argv[2]
wanted = [os.path.normpath(os.path.join(root, p)) + "/" for p in sys.argv[3:]]
seen = set()
for entry in json.load(open(sys.argv[1])):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    if path.startswith(root + "/build") or path in seen:
        continue
    if any(path.startswith(w) for w in wanted):
        seen.add(path)
        print(path)
PY
)
log=$(mktemp /tmp/leader-tidy.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
printf '%s\n' "${units[@]}" |
  xargs -P "$JOBS" -n 4 clang-tidy -p "$BUILD_DIR" --quiet --warnings-as-errors='*' > "$log" 2> /dev/null ||
  status=$?
if [ "$status" != 0 ]; then
  grep -E 'warning:|error:' "$log" | sort -u >&2 || cat "$log" >&2
  echo "clang-tidy: findings above (fix them or NOLINT(check) with the reason)" >&2
  exit 1
fi
echo "clang-tidy: ${#units[@]} translation units under ${tidy_paths[*]} clean, $JOBS at a time ($(took "$t"))"
