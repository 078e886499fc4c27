#!/usr/bin/env bash
# Static checks CI runs: clang-format (the root .clang-format) and cppcheck.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h')
clang-format --dry-run --Werror "${files[@]}"
mkdir -p build/generated
[ -f build/generated/build_info.h ] || cp src/base/build_info.h.in build/generated/build_info.h
cppcheck --quiet --enable=warning,performance,portability --std=c11 --error-exitcode=1 --inline-suppr \
    -D__GNUC__ -I src -I build/generated src tests/unit
echo "lint: clang-format and cppcheck clean (${#files[@]} files)"
