#!/usr/bin/env bash
# Decode attention on one thread: every layer's key/value heads of one
# sequence (Qwen3-0.6B's shape, an f16 cache on 2 MB pages) at 64, 256 and
# 1,024 positions, its read rate beside one forward stream over the same
# memory (bench/attn_kernels.c). Needs a Release build in build/.
#   bench/attn_kernels.sh [REPS] [SEQUENCES]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target splash_core >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -std=c17 -mavx2 -I. -Isrc bench/attn_kernels.c build/libsplash_core.a -lm -lpthread -o "$out/attn_kernels"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'); kernel level: ${SPLASH_CPU:-best}"
"$out/attn_kernels" "$@"
