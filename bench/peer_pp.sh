#!/usr/bin/env bash
# Prefill and decode against llama.cpp on the same GGUF files, alternated:
# per model, ROUNDS rounds of A B B A (A = `llama-bench -p PP -n TG -r 1`,
# B = `splash perf --pp PP --tg TG --reps 1`), then the medians of each
# engine's pp and tg and the median of the per-round ratios splash/llama.
#   bench/peer_pp.sh --llama-bin DIR [--models "a.gguf b.gguf"] [--threads 2] [--pp 512] [--tg 128]
#                    [--rounds 3] [--splash build/splash] [--llama-env 'VAR=value ...']
# DIR holds llama-bench (and its shared libraries). Not a test: the figures
# go in docs/benchmarks.md with the machine (lscpu), the command and the date.
set -euo pipefail
cd "$(dirname "$0")/.."
llama_bin="" models="" threads=2 pp=512 tg=128 rounds=3 splash=build/splash llama_env=""
while [ $# -gt 0 ]; do
    case "$1" in
        --llama-bin) llama_bin=$2; shift 2 ;;
        --models) models=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --pp) pp=$2; shift 2 ;;
        --tg) tg=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --splash) splash=$2; shift 2 ;;
        --llama-env) llama_env=$2; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "bench/peer_pp.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
[ -x "$llama_bin/llama-bench" ] || { echo "bench/peer_pp.sh: --llama-bin must hold llama-bench" >&2; exit 2; }
[ -n "$models" ] || { echo "bench/peer_pp.sh: --models is required" >&2; exit 2; }
for v in "$threads" "$pp" "$tg" "$rounds"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "bench/peer_pp.sh: '$v' is not a count" >&2; exit 2; }
done

# one llama-bench run: "pp tg" tokens/s
llama_once() {
    # shellcheck disable=SC2086
    env LD_LIBRARY_PATH="$llama_bin" $llama_env "$llama_bin/llama-bench" -m "$1" -p "$pp" -n "$tg" -t "$threads" \
        -r 1 -o csv 2>/dev/null |
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /avg_ts/) c = i; next }
                 { gsub(/"/, ""); v[++n] = $c } END { printf "%s %s\n", v[1], v[2] }'
}
# one splash perf run: "pp tg" tokens/s
splash_once() {
    "$splash" perf --model "$1" --pp "$pp" --tg "$tg" --reps 1 --threads "$threads" --json 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["pp_tokens_per_s"], r["tg_tokens_per_s"])'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "| model | engine | pp$pp tok/s (median) | tg$tg tok/s (median) | pp runs | tg runs |"
echo "|---|---|---|---|---|---|"
ratios=""
for m in $models; do
    lp=() lt=() sp=() st=() rp=() rt=()
    for _ in $(seq "$rounds"); do
        read -r a1 a2 < <(llama_once "$m")
        read -r b1 b2 < <(splash_once "$m")
        read -r c1 c2 < <(splash_once "$m")
        read -r d1 d2 < <(llama_once "$m")
        lp+=("$a1" "$d1") lt+=("$a2" "$d2") sp+=("$b1" "$c1") st+=("$b2" "$c2")
        rp+=("$(awk -v s="$b1 $c1" -v l="$a1 $d1" 'BEGIN {split(s, x, " "); split(l, y, " "); print (x[1] + x[2]) / (y[1] + y[2])}')")
        rt+=("$(awk -v s="$b2 $c2" -v l="$a2 $d2" 'BEGIN {split(s, x, " "); split(l, y, " "); print (x[1] + x[2]) / (y[1] + y[2])}')")
    done
    name=$(basename "$m")
    echo "| $name | llama.cpp | $(printf '%s\n' "${lp[@]}" | median) | $(printf '%s\n' "${lt[@]}" | median) | ${lp[*]} | ${lt[*]} |"
    echo "| $name | splash | $(printf '%s\n' "${sp[@]}" | median) | $(printf '%s\n' "${st[@]}" | median) | ${sp[*]} | ${st[*]} |"
    ratios+="$name: splash/llama pp$pp $(printf '%s\n' "${rp[@]}" | median) (rounds ${rp[*]}), tg$tg $(printf '%s\n' "${rt[@]}" | median) (rounds ${rt[*]})"$'\n'
done
echo
printf '%s' "$ratios"
