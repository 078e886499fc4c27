#!/usr/bin/env bash
# Quality bound for one weight type: the demo target converted to TYPE must
# score a perplexity on the held-out excerpt within MARGIN percent of the
# same model in F32 (the committed F16 file widened exactly: the baseline).
# TYPE kv-T instead bounds a KV cache type: the F32 model with `--kv-type T`
# against the same model with the exact f32 cache.
#   quality.sh SPLASH MODEL HELDOUT TYPE MARGIN_PERCENT
set -euo pipefail
splash=$1 model=$2 heldout=$3 type=$4 margin=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ppl() { # the perplexity figure of one model file (more perplexity flags after it)
    "$splash" perplexity --model "$@" --file "$heldout" --ctx 512 --stride 512 --threads 2 2>/dev/null |
        awk '$1 == "perplexity" { print $2 }'
}
"$splash" model convert --in "$model" --type f32 --out "$work/f32.gguf" 2>/dev/null
if [[ $type == kv-* ]]; then
    base=$(ppl "$work/f32.gguf" --kv-type f32)
    got=$(ppl "$work/f32.gguf" --kv-type "${type#kv-}")
else
    "$splash" model convert --in "$model" --type "$type" --out "$work/$type.gguf" 2>/dev/null
    base=$(ppl "$work/f32.gguf")
    got=$(ppl "$work/$type.gguf")
fi
[ -n "$base" ] && [ -n "$got" ] || { echo "FAIL: no perplexity figure (f32 '$base', $type '$got')"; exit 1; }
awk -v b="$base" -v g="$got" -v m="$margin" -v t="$type" 'BEGIN {
    d = 100 * (g - b) / b
    printf "%s: perplexity %.4f against f32 %.4f (%+.3f%%, bound %s%%)\n", t, g, b, d, m
    # a sane baseline first: the trained model is far better than chance (4,096)
    if (b > 1000) { print "FAIL: the f32 baseline perplexity is implausibly high"; exit 1 }
    exit (d <= m && d >= -m) ? 0 : 1
}'
