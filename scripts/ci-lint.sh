#!/usr/bin/env bash
# clang-format check over every C++ file, and clang-tidy (the curated .clang-tidy) over the core.
#   scripts/ci-lint.sh [--fix]      --fix rewrites files with clang-format instead of checking
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
if [ "${1:-}" = --fix ]; then clang-format -i "${files[@]}"; exit 0; fi
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
[ -f build/compile_commands.json ] || scripts/build.sh > /dev/null
clang-tidy -p build --quiet src/core/*.cpp 2>/dev/null | grep -E 'warning|error' && exit 1
echo "clang-tidy: src/core clean"
