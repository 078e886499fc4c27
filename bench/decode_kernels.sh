#!/usr/bin/env bash
# Decode's matrix kernels on one thread, per weight type: in L2 (what the
# arithmetic allows) and from memory, beside one- and four-stream reads of
# the same memory, with the in-L2 time per 16-row super-block and the
# CPU's vpdpbusd rate (bench/decode_kernels.c). Needs a Release build in build/.
#   bench/decode_kernels.sh [REPS] [ROWS] [ACTIVATION ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target splash_core >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -std=c17 -mavx2 -I. -Isrc bench/decode_kernels.c build/libsplash_core.a -lm -lpthread -o "$out/decode_kernels"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'); kernel level: ${SPLASH_CPU:-best}"
"$out/decode_kernels" "$@"
