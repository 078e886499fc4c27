#!/usr/bin/env bash
# The delta rule's token step with the recurrent state in f32 and in f16
# (--state-type), from memory and in L2, one thread, alternated A B B A
# (bench/gdn_state.c). Needs a Release build in build/.
#   bench/gdn_state.sh [ROUNDS]
exec "$(dirname "$0")/kernel_bench.sh" gdn_state "$@"
