#!/usr/bin/env bash
# Decode speed of `splash run` on the Qwen3-0.6B-shape synthetic model:
# median tokens/s over REPS runs for each weight type and thread count, and
# the effective weight-streaming rate (weight bytes read per token / time).
#   bench/decode.sh [--types "f16 q8_0"] [--threads "1 2"] [--reps 3] [--tokens 32] [--splash build/splash]
# Models are written once to ${SPLASH_BENCH_DIR:-/tmp/splash-bench}.
set -euo pipefail
cd "$(dirname "$0")/.."
types="f16 q8_0" threads="1 2" reps=3 tokens=32 splash=build/splash
while [ $# -gt 0 ]; do
    case "$1" in
        --types) types=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --tokens) tokens=$2; shift 2 ;;
        --splash) splash=$2; shift 2 ;;
        -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
        *) echo "bench/decode.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
dir=${SPLASH_BENCH_DIR:-/tmp/splash-bench}
mkdir -p "$dir"
echo "| model | type | threads | decode tok/s (median of $reps) | runs | weight GB/s |"
echo "|---|---|---|---|---|---|"
for type in $types; do
    model="$dir/qwen3-0.6b-$type.gguf"
    [ -f "$model" ] || "$splash" model synth --preset qwen3-0.6b --type "$type" --seed 1 --out "$model" >&2
    bytes=$("$splash" model info --no-hash "$model" | sed -n 's/.*weight bytes \([0-9]*\).*/\1/p')
    for t in $threads; do
        runs=()
        for _ in $(seq "$reps"); do
            line=$("$splash" run --model "$model" --threads "$t" --max-tokens "$tokens" --ignore-eos --quiet "Hello" 2>&1 >/dev/null | tail -1)
            runs+=("$(sed -n 's/.*tokens in [0-9.]* s (\([0-9.]*\) tok\/s); threads.*/\1/p' <<<"$line")")
        done
        median=$(printf '%s\n' "${runs[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
        gbs=$(awk -v b="$bytes" -v r="$median" 'BEGIN {printf "%.2f", b * r / 1e9}')
        echo "| qwen3-0.6b (synthetic) | $type | $t | $median | ${runs[*]} | $gbs |"
    done
done
