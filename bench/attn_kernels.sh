#!/usr/bin/env bash
# Decode attention on one thread: every layer's key/value heads of one
# sequence (Qwen3-0.6B's shape, an f16 cache on 2 MB pages) at 64, 256 and
# 1,024 positions, its read rate beside one forward stream over the same
# memory (bench/attn_kernels.c). Needs a Release build in build/.
#   bench/attn_kernels.sh [REPS] [SEQUENCES]
exec "$(dirname "$0")/kernel_bench.sh" attn_kernels "$@"
