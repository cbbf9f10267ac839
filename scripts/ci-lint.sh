#!/usr/bin/env bash
# Lint, as scripts/test.sh runs it (each step prints its time):
#   1. clang-format: every tracked C++ file must already be formatted (.clang-format);
#   2. headers: every public header (include/, src/stores/*/include/) compiles on its own;
#   3. clang-tidy (.clang-tidy, tests/.clang-tidy; warnings are errors) over the translation units
#      of $BUILD_DIR/compile_commands.json (default build/; configured when missing) under
#      LINT_TIDY_PATHS (default "src": the library) but not under LINT_TIDY_EXCLUDE (default
#      "src/stores", not clean yet; LINT_TIDY_EXCLUDE= for none), LINT_JOBS (default: nproc)
#      files at a time. The wider selection (LINT_TIDY_PATHS=. : tests, bench, examples too)
#      costs about 25 CPU-minutes, more than the 2-core CI budget has (docs/lint.md). Findings count in
#      the units and in the project headers under LINT_TIDY_HEADERS (default "include"; "all": the
#      header folders under the selected paths), never in system headers. Prints its wall time
#      and CPU seconds. LINT_TIDY=0 skips this step.
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
# Each .clang-tidy must parse: clang-tidy reports a file it cannot read on stderr (discarded by the
# run below), exits 0 and checks with its defaults instead (the map form of CheckOptions, which
# clang-tidy 14 does not read, went unnoticed that way from de72875 to 6db5538).
for dir in . tests; do
  if ! config_errors=$(cd "$dir" && clang-tidy --dump-config 2>&1 > /dev/null) ||
    [ -n "$config_errors" ]; then
    echo "$config_errors" >&2
    echo "clang-tidy: $dir/.clang-tidy does not parse (clang-tidy --dump-config above)" >&2
    exit 1
  fi
done
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja > /dev/null
fi
t=$(now)
# The project's own translation units (generated files and others' code excluded), and a header
# filter naming the project's header folders under the same paths, and the public headers.
read -r -a tidy_paths <<< "${LINT_TIDY_PATHS:-src}"
read -r -a tidy_exclude <<< "${LINT_TIDY_EXCLUDE-src/stores}"
read -r -a tidy_headers <<< "${LINT_TIDY_HEADERS:-include}"
selection=$(python3 - "$BUILD_DIR/compile_commands.json" "$PWD" "${tidy_headers[*]}" \
  "${#tidy_paths[@]}" "${tidy_paths[@]}" "${tidy_exclude[@]}" <<'PY'
import json, os, subprocess, sys
root, header_paths, n = sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
def dirs(paths):
    return [os.path.normpath(os.path.join(root, p)).rstrip("/") + "/" for p in paths]
wanted, excluded = dirs(sys.argv[5:5 + n]), dirs(sys.argv[5 + n:])
def selected(path):
    return (any(path.startswith(w) for w in wanted) and
            not any(path.startswith(x) or path + "/" == x for x in excluded))
seen = set()
for entry in json.load(open(sys.argv[1])):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    if path.startswith(root + "/build") or path in seen or not selected(path):
        continue
    seen.add(path)
    print("unit " + path)
# Header folders: the first path component, two under src/ (src/core, src/stores, ...).
headers = subprocess.run(["git", "ls-files", "*.hpp", "*.h"], capture_output=True, text=True,
                         cwd=root, check=True).stdout.split()
folders = set()
for h in headers:
    parts = h.split("/")
    folder = "/".join(parts[:2] if parts[0] == "src" and len(parts) > 2 else parts[:1])
    path = os.path.join(root, folder) + "/x"
    if len(parts) > 1 and (header_paths == ["all"] and selected(path) or
                           any(path.startswith(h) for h in dirs(header_paths))):
        folders.add(folder)
def ere(text):  # POSIX ERE literal: special characters in brackets
    return "".join("[" + c + "]" if c in ".[]()*+?{}|^$" else c for c in text)
print("filter ^" + ere(root) + "/(" + "|".join(sorted(map(ere, folders))) + ")/")
PY
)
mapfile -t units < <(sed -n 's/^unit //p' <<< "$selection")
header_filter=$(sed -n 's/^filter //p' <<< "$selection")
log=$(mktemp /tmp/leader-tidy.XXXXXX)
trap 'rm -f "$log" "$log".cpu0 "$log".cpu1' EXIT
times > "$log.cpu0"  # children's CPU time, in this shell (a $(...) subshell would count its own)
status=0
printf '%s\n' "${units[@]}" |
  xargs -P "$JOBS" -n 4 clang-tidy -p "$BUILD_DIR" --quiet --warnings-as-errors='*' \
    --header-filter="$header_filter" > "$log" 2> /dev/null ||
  status=$?
if [ "$status" != 0 ]; then
  grep -E 'warning:|error:' "$log" | sort -u >&2 || cat "$log" >&2
  echo "clang-tidy: findings above (fix them or NOLINT(check) with the reason)" >&2
  exit 1
fi
times > "$log.cpu1"
cpu_s=$(tail -qn1 "$log.cpu0" "$log.cpu1" | awk '{ for (i = 1; i <= 2; ++i) {
  split($i, t, /[ms]/); s[NR] += t[1] * 60 + t[2] } } END { printf "%.0f", s[2] - s[1] }')
echo "clang-tidy: ${#units[@]} translation units under ${tidy_paths[*]}${tidy_exclude:+ (without ${tidy_exclude[*]})} clean, $JOBS at a time ($(took "$t"), ${cpu_s} CPU-s)"
