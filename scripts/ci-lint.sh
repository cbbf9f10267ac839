#!/usr/bin/env bash
# Lint, as scripts/test.sh runs it (each step prints its time):
#   1. clang-format: every tracked C++ file must already be formatted (.clang-format);
#   2. headers: every public header (include/, src/stores/*/include/) compiles on its own;
#   3. clang-tidy (.clang-tidy, tests/.clang-tidy; warnings are errors) over every translation unit
#      of $BUILD_DIR/compile_commands.json (default build/; configured when missing) that is the
#      project's own (the library, the stores, tools/, tests/, bench/, examples/; nothing under
#      the build dir), LINT_JOBS (default: nproc) units at a time. Findings count in the units and
#      in the project's headers, never in system headers. LINT_TIDY_PATHS / LINT_TIDY_EXCLUDE
#      (folders, default "." / none: every unit, in CI too, since the cache below holds the whole
#      project, docs/lint.md "Default selection") narrow the selection; LINT_TIDY_HEADERS
#      (folders, default ".": all; "all": those under the selected paths) the headers whose
#      findings count (the default keeps a narrower run's cache keys those of the full run).
#      A committed cache of clean results, .ci/clang-tidy-clean.txt, makes it cheap: a unit whose
#      key (scripts/clang-tidy-cache.py: the clang-tidy build, the .clang-tidy files, the unit's
#      normalized compile commands, the content of every file it reads) is listed there is not
#      checked again, so CI checks only the units a change reached (docs/lint.md: the full run
#      is 20 to 60 CPU-minutes, a run with a current cache a few seconds). A unit whose key is not
#      listed is always checked: a stale cache costs time, never a finding. Every run writes the
#      cache as it would be after the run to $BUILD_DIR/clang-tidy-clean.txt; --refresh-cache
#      also copies it to .ci/ (commit it with the change; refresh from a build configured as
#      CI's, or the test units' keys are not CI's: docs/lint.md). LINT_TIDY_CACHE=0 checks every
#      unit. Prints its wall time and CPU seconds. LINT_TIDY=0 skips this step.
#   scripts/ci-lint.sh [--fix | --refresh-cache]   --fix: clang-format -i instead of checking
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${LINT_JOBS:-$(nproc)}
now() { date +%s.%N; }
took() { printf '%.1f s' "$(echo "$(now) - $1" | bc)"; }

mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
refresh=0
case ${1:-} in
  --fix) clang-format -i "${files[@]}"; exit 0 ;;
  --refresh-cache) refresh=1 ;;
  "") ;;
  *) echo "usage: scripts/ci-lint.sh [--fix | --refresh-cache]" >&2; exit 2 ;;
esac
# CI builds the tests as unity batches: a cache refreshed from a build without them records test
# keys CI never computes (docs/lint.md, "Default selection (CI)").
if [ "$refresh" = 1 ] && ! grep -q '^LEADER_UNITY_TESTS:BOOL=ON$' "$BUILD_DIR/CMakeCache.txt" 2> /dev/null; then
  echo "warning: $BUILD_DIR is not configured as CI (LEADER_UNITY_TESTS is not ON): the test units'" \
    "keys this refresh records are not the ones CI computes; refresh from a CI-configured build" \
    "(docs/lint.md)" >&2
fi
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
work=$(mktemp -d /tmp/leader-tidy.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The build's compile commands, and the consumer sources of tests/package: scripts/ci-package.sh
# builds them against the installed package, outside this build, so they get the command such a
# consumer's compiler sees (the public headers; component.cpp with its optional parts on).
export LINT_TIDY_DB=$work/db/compile_commands.json
mkdir -p "$work/db"
python3 - "$BUILD_DIR" "$LINT_TIDY_DB" <<'PY'
import json, os, re, shlex, sys
build, root = os.path.realpath(sys.argv[1]), os.getcwd()
entries = []
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    # A CMake unity batch (LEADER_UNITY_TESTS, CI's test build): its sources, each with the
    # batch's command (the batch's object, and so its recorded dependencies, stay for the key).
    path = os.path.normpath(os.path.join(e["directory"], e["file"]))
    if re.search(r"/Unity/unity_\w+\.(cxx|c)$", path):
        sources = re.findall(r'^#include "(.+)"$', open(path).read(), re.M)
        cmd = e.get("command") or " ".join(shlex.quote(a) for a in e["arguments"])
        for src in sources:
            entries.append({"directory": e["directory"], "file": src,
                            "command": cmd.replace(e["file"], src).replace(path, src)})
    else:
        entries.append(e)
for f, defs in (("tests/package/app/main.cpp", []),
                ("tests/package/component.cpp",
                 ["-DLEADER_TEST_ASIO", "-DLEADER_TEST_METRICS", "-DASIO_STANDALONE"])):
    path = os.path.join(root, f)
    if os.path.exists(path):
        entries.append({"directory": build, "file": path, "arguments": [
            "/usr/bin/c++", *defs, "-I" + os.path.join(root, "include"), "-std=c++20", "-c", path]})
json.dump(entries, open(sys.argv[2], "w"), indent=1)
PY
# The project's own translation units (generated files and others' code excluded), and a header
# filter naming the project's header folders under the same paths, and the public headers.
read -r -a tidy_paths <<< "${LINT_TIDY_PATHS:-.}"
# Every unit by default, CI included (docs/lint.md, "Default selection"): .ci/clang-tidy-clean.txt
# holds the whole project, so CI checks only the units a commit changed. (Until 2 December 2026 the
# default was "src/stores tools tests bench examples", the units the cache did not hold yet.)
read -r -a tidy_exclude <<< "${LINT_TIDY_EXCLUDE:-}"
read -r -a tidy_headers <<< "${LINT_TIDY_HEADERS:-.}"
selection=$(python3 - "$LINT_TIDY_DB" "$PWD" "${tidy_headers[*]}" \
  "${#tidy_paths[@]}" "${tidy_paths[@]}" "${tidy_exclude[@]}" <<'PY'
import json, os, subprocess, sys
root, header_paths, n = sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
def dirs(paths):
    return [os.path.normpath(os.path.join(root, p)).rstrip("/") + "/" for p in paths]
wanted, excluded = dirs(sys.argv[5:5 + n]), dirs(sys.argv[5 + n:])
def selected(path):
    return (any(path.startswith(w) or path + "/" == w for w in wanted) and
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
tidy_args=(--quiet --warnings-as-errors='*' --header-filter="$header_filter")
# The cache (scripts/clang-tidy-cache.py, docs/lint.md): a unit whose key is a line of $CACHE is
# clean as it stands and not checked again; LINT_TIDY_CACHE=0 checks every unit.
CACHE=${LINT_TIDY_CACHE_FILE:-.ci/clang-tidy-clean.txt}  # (another file: to measure or experiment)
cache_in=$CACHE
[ "${LINT_TIDY_CACHE:-1}" = 0 ] && cache_in=/dev/null
printf '%s\n' "${units[@]}" |
  python3 scripts/clang-tidy-cache.py plan "$BUILD_DIR" "$cache_in" "${tidy_args[*]}" > "$work/plan"
mapfile -t check < <(sed -n 's/^check //p' "$work/plan")
cached=$(grep -c '^cached ' "$work/plan" || true)
times > "$work/cpu0"  # children's CPU time, in this shell (a $(...) subshell would count its own)
tidy_one() {  # $1: index, $2: unit; one unit per clang-tidy, its -H include lines kept for the cache
  local out=$work/results/$1
  printf '%s\n' "$2" > "$out.file"
  date +%s%N > "$out.start"
  local rc=0
  clang-tidy -p "$work/db" "${tidy_args[@]}" --extra-arg=-H "$2" > "$out.out" 2> "$out.err" || rc=$?
  echo "$rc" > "$out.rc"
}
export -f tidy_one
export work BUILD_DIR
mkdir -p "$work/results"
# (an exported function cannot take the array: pass the arguments through the environment)
export TIDY_ARGS_0=${tidy_args[0]} TIDY_ARGS_1=${tidy_args[1]} TIDY_ARGS_2=${tidy_args[2]}
# shellcheck disable=SC2016  # the single-quoted script expands in the child bash
for i in "${!check[@]}"; do printf '%s\n%s\n' "$i" "${check[$i]}"; done |
  xargs -d '\n' -P "$JOBS" -n 2 bash -c \
    'tidy_args=("$TIDY_ARGS_0" "$TIDY_ARGS_1" "$TIDY_ARGS_2"); tidy_one "$@"' _
times > "$work/cpu1"
printf '%s\n' "${units[@]}" |
  python3 scripts/clang-tidy-cache.py record "$BUILD_DIR" "$cache_in" "${tidy_args[*]}" \
    "$work/results" "$BUILD_DIR/clang-tidy-clean.txt"
cpu_s=$(tail -qn1 "$work/cpu0" "$work/cpu1" | awk '{ for (i = 1; i <= 2; ++i) {
  split($i, t, /[ms]/); s[NR] += t[1] * 60 + t[2] } } END { printf "%.0f", s[2] - s[1] }')
failed=()
for rc in "$work"/results/*.rc; do
  [ -e "$rc" ] || continue
  base=${rc%.rc}
  if [ "$(cat "$rc")" != 0 ] || grep -qE '(warning|error):' "$base.out"; then
    failed+=("$(cat "$base.file")")
    grep -E '(warning|error):' "$base.out" || cat "$base.out" "$base.err" | grep -v '^\.'
  fi
done > "$work/findings"
sort -u "$work/findings" >&2
summary="${#units[@]} translation units under ${tidy_paths[*]}${tidy_exclude:+ (without ${tidy_exclude[*]})}: ${#check[@]} checked $JOBS at a time ($(took "$t"), ${cpu_s} CPU-s), $cached clean in $CACHE"
if [ "${#failed[@]}" != 0 ]; then
  echo "clang-tidy: findings above in ${#failed[@]} units (fix them or NOLINT(check) with the reason); $summary" >&2
  exit 1
fi
echo "clang-tidy: clean; $summary"
if [ "$refresh" = 1 ]; then
  # Keys use the build's recorded dependencies: objects not rebuilt since their sources changed
  # give keys that CI's fresh build will not reproduce (CI then checks those units again).
  stale=$(ninja -C "$BUILD_DIR" -n 2> /dev/null | grep -c 'Building CXX object' || true)
  [ "$stale" = 0 ] || echo "clang-tidy: note: $stale objects of $BUILD_DIR are out of date; build" \
    "them and refresh again, or CI checks their units again" >&2
  cp "$BUILD_DIR/clang-tidy-clean.txt" "$CACHE"
  echo "clang-tidy: $CACHE refreshed ($(grep -vc '^#' "$CACHE") units; commit it)"
fi
