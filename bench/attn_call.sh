#!/usr/bin/env bash
# One decode attention call at a time on one thread (bench/attn_call.c): its
# cost per position with the keys and values in cache or from memory. Needs
# a Release build in build/.
#   bench/attn_call.sh [POSITIONS] [HEADS] [QUERIES] [HEADS_PER_BLOCK]
exec "$(dirname "$0")/kernel_bench.sh" attn_call "$@"
