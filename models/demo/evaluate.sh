#!/usr/bin/env bash
# The figures docs/benchmarks.md records for the demo models, measured with
# the engine: perplexity per weight type on the held-out excerpt, perplexity
# of both F16 models on the whole validation split, and the draft's greedy
# agreement with the target.
#   models/demo/evaluate.sh [path/to/splash]     (after build.sh; needs data/)
set -euo pipefail
cd "$(dirname "$0")"
splash=${1:-../../build/splash}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ppl() { "$splash" perplexity --model "$1" --file "$2" --ctx 512 --stride "${3:-512}" --threads 2 2>/dev/null; }
echo "== held-out excerpt (heldout.txt), ctx 512, stride 512"
for t in f32 f16 bf16 q8_0 q6_k q5_k q4_k q4_0; do
    "$splash" model convert --in demo-target-f16.gguf --type $t --out "$work/$t.gguf" 2>/dev/null
    echo "target $t: $(ppl "$work/$t.gguf" heldout.txt)"
done
echo "draft f16: $(ppl demo-draft-f16.gguf heldout.txt)"
echo "== validation split (data/val.txt), ctx 512, stride 512"
echo "target f16: $(ppl demo-target-f16.gguf data/val.txt 512)"
echo "draft f16: $(ppl demo-draft-f16.gguf data/val.txt 512)"
echo "== draft agreement (first 16384 validation tokens)"
/usr/bin/python3 -c 'import numpy as np; print(" ".join(map(str, np.fromfile("data/val.bin", dtype=np.uint16)[:16384])))' >"$work/val.ids"
/usr/bin/python3 agreement.py "$splash" demo-target-f16.gguf demo-draft-f16.gguf "$work/val.ids"
