#!/usr/bin/env bash
# Speculative decoding, side by side: decode tokens/s of `splash run` with no
# speculation, verify widths 1, 2, all (= --draft-max 4) and auto, on two
# workloads, the settings interleaved round by round so machine drift hits
# them alike. Prints each run and the median per setting.
#   accepted: greedy continuation of a repetitive prompt (n-gram drafts
#             mostly accepted once the model repeats itself)
#   rejected: the same prompt sampled at temperature 1 (drafts proposed,
#             mostly rejected)
#   bench/spec.sh [MODEL] [ROUNDS] [DRAFT]   (DRAFT: ngram or a draft model file)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-/tmp/splash-bench/qwen3-0.6b-q8_0.gguf}
ROUNDS=${2:-3}
DRAFT=${3:-ngram}
TOKENS=${TOKENS:-128}
THREADS=${THREADS:-2}
SPLASH=${SPLASH:-./build/splash}
[ -f "$MODEL" ] || "$SPLASH" model synth --preset qwen3-0.6b --type q8_0 --seed 1 --out "$MODEL" >/dev/null
PROMPT="the cat sat on the mat and the dog sat on the log. the cat sat on the mat and the dog sat on the log. the cat sat on the mat and the dog"
settings=("none" "1" "2" "all" "auto")
run() { # workload setting -> tok/s
    local extra=()
    [ "$2" = none ] || extra=(--draft "$DRAFT" --draft-max 4 --verify-rows "$2")
    if [ "$1" = rejected ]; then extra+=(--temperature 1 --seed 7); else extra+=(--temperature 0); fi
    "$SPLASH" run --model "$MODEL" --threads "$THREADS" --max-tokens "$TOKENS" --ignore-eos --quiet \
        "${extra[@]}" "$PROMPT" 2>&1 | sed -n 's/.*decode: [0-9]* tokens in [0-9.]* s (\([0-9.]*\) tok\/s).*/\1/p'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A runs
for ((r = 0; r < ROUNDS; r++)); do
    for w in accepted rejected; do
        order=("${settings[@]}")
        ((r % 2)) && order=($(printf '%s\n' "${settings[@]}" | tac))
        for s in "${order[@]}"; do runs[$w.$s]+="$(run $w $s) "; done
    done
done
echo "model $MODEL, drafter $DRAFT, $TOKENS tokens, $THREADS threads, $ROUNDS rounds (interleaved)"
for w in accepted rejected; do
    echo "| $w | setting | runs (tok/s) | median | vs none |"
    echo "|---|---|---|---|---|"
    base=$(printf '%s\n' ${runs[$w.none]} | median)
    for s in "${settings[@]}"; do
        med=$(printf '%s\n' ${runs[$w.$s]} | median)
        echo "| $w | $s | ${runs[$w.$s]}| $med | $(awk -v a="$med" -v b="$base" 'BEGIN {printf "%.2fx", a / b}') |"
    done
done
# auto against the best fixed setting (by median), round by round: each
# round's runs are interleaved, so the per-round ratio cancels the machine's
# slow drifts that the medians above still carry
for w in accepted rejected; do
    best="" bestmed=0
    for s in none 1 2 all; do
        med=$(printf '%s\n' ${runs[$w.$s]} | median)
        if awk -v a="$med" -v b="$bestmed" 'BEGIN {exit !(a > b)}'; then best=$s bestmed=$med; fi
    done
    read -r -a av <<<"${runs[$w.auto]}"
    read -r -a bv <<<"${runs[$w.$best]}"
    ratios=""
    for ((r = 0; r < ROUNDS; r++)); do ratios+="$(awk -v a="${av[r]}" -v b="${bv[r]}" 'BEGIN {printf "%.3f", a / b}') "; done
    echo "$w: auto / $best (best fixed) per round: $ratios-> median $(printf '%s\n' $ratios | median)"
done
