#!/usr/bin/env bash
# Coverage-guided fuzz campaigns (libFuzzer, ASan + UBSan) over every harness
# in tests/fuzz: each target runs until --runs executions or --time seconds,
# whichever comes first (issue 25: 10 M executions or 1 hour). Not CI: CI
# replays the committed corpora (ctest -L fuzz) in seconds.
#
#   bench/fuzz.sh [--time S] [--runs N] [--out DIR] [--input-timeout S] [TARGET ...]
#     defaults: --time 3600 --runs 10000000 --out build-fuzz/campaign, all targets
#     --input-timeout: one input running longer is a hang (default 10 s, wall
#     clock: a fuzzer at nice 19 on a busy machine can be starved that long
#     by inputs that take 0.2 s alone; give it 60 there)
#   e.g. nice -n 19 bench/fuzz.sh --time 150 gguf request
#
# Builds build-fuzz/ with clang (-DSPLASH_FUZZ=ON). Each target's corpus
# grows in OUT/TARGET/corpus (seeded from tests/fuzz/corpus/TARGET, which is
# not modified); crashes, leaks and timeouts land in OUT/TARGET/ as
# crash-*, leak-*, timeout-* (copy each, once fixed, into
# tests/fuzz/corpus/TARGET so CI replays it). OUT/summary.tsv gets one line
# per target: executions, edges covered, features, corpus size, findings.
set -euo pipefail
cd "$(dirname "$0")/.."
time_s=3600 runs=10000000 out=build-fuzz/campaign input_timeout=10 targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --time) time_s=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --input-timeout) input_timeout=$2; shift 2 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        -*) echo "bench/fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
all=$(sed -n 's/^set(FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<<"$all"
for t in "${targets[@]}"; do
    [[ " $all " == *" $t "* ]] || { echo "bench/fuzz.sh: no target '$t' (one of: $all)" >&2; exit 2; }
done

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DSPLASH_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_all >/dev/null
mkdir -p "$out"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
    dir=$out/$t
    mkdir -p "$dir/corpus"
    cp -n tests/fuzz/corpus/"$t"/* "$dir/corpus/" 2>/dev/null || true
    echo "=== $t: up to $runs executions or $time_s s"
    rc=0
    # -timeout: one input taking longer is a hang; -rss_limit_mb: a leak or
    # blow-up is a finding, not a machine-wide OOM
    dict=()
    [ -s tests/fuzz/dict/"$t".dict ] && dict=(-dict=tests/fuzz/dict/"$t".dict) # libFuzzer stops on a missing one
    build-fuzz/tests/fuzz/fuzz_"$t" "$dir/corpus" "${dict[@]}" -runs="$runs" \
        -max_total_time="$time_s" -timeout="$input_timeout" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$dir/" >"$dir/log.txt" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log.txt" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$dir/log.txt" | tail -1)
    findings=$(find "$dir" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' -o -maxdepth 1 -name 'timeout-*' \
        -o -maxdepth 1 -name 'oom-*' | wc -l)
    n_corpus=$(find "$dir/corpus" -type f | wc -l)
    printf '%s\texecs %s\t%s\tcorpus %s\tfindings %s\texit %s\n' "$t" "${execs:-?}" "${cov:-cov: ? ft: ?}" "$n_corpus" \
        "$findings" "$rc" | tee -a "$out/summary.tsv"
    [ "$rc" -eq 0 ] && [ "$findings" -eq 0 ] || status=1
done
exit "$status"
