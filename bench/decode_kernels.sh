#!/usr/bin/env bash
# Decode's matrix kernels on one thread, per weight type: in L2 (what the
# arithmetic allows) and from memory, beside one- and four-stream reads of
# the same memory, with the in-L2 time per 16-row super-block and the
# CPU's vpdpbusd rate (bench/decode_kernels.c). Needs a Release build in build/.
#   bench/decode_kernels.sh [REPS] [ROWS] [ACTIVATION ROWS]
exec "$(dirname "$0")/kernel_bench.sh" decode_kernels "$@"
