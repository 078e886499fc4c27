#!/usr/bin/env bash
# Builds splash in one configuration and runs the whole test suite (unit,
# integration, reference conformance) with CTest.
#   scripts/test.sh [release|asan|tsan]     (default: release)
# release -> build/, asan (ASan + UBSan, Debug) -> build-asan/, tsan -> build-tsan/
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
ctest_extra=()
case "$kind" in
    release) dir=build; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
    # ASan + UBSan leave out the perplexity bounds per weight type (label
    # "quality"): they measure numbers that do not depend on the sanitizer,
    # and every weight type's kernels already run under ASan in the
    # reference conformance tests and the kernel unit tests.
    asan) dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=Debug -DSPLASH_SANITIZE=address); ctest_extra=(-LE quality) ;;
    # TSan is for the threaded code; the full-vocabulary reference runs
    # (label "slow") and the perplexity bounds per weight type (label
    # "quality", single-request arithmetic that TSan slows tenfold) already
    # run in the other two configurations, as do the long bench harness runs
    # (label "long", tests/CMakeLists.txt says why), and so do the kernel
    # unit tests that start no thread (label "serial").
    tsan) dir=build-tsan; flags=(-DCMAKE_BUILD_TYPE=Debug -DSPLASH_SANITIZE=thread); ctest_extra=(-LE "slow|quality|long|serial") ;;
    *) echo "scripts/test.sh: unknown configuration '$kind' (release, asan, tsan)" >&2; exit 2 ;;
esac
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$dir" "${flags[@]}" -DSPLASH_WERROR=ON >/dev/null
cmake --build "$dir" -j"$jobs"
# sanitizers: fail on the first report
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1}
ctest --test-dir "$dir" --output-on-failure -j"$jobs" "${ctest_extra[@]}" ${SPLASH_CTEST_ARGS:-}
