#!/usr/bin/env bash
# One draw at a time (bench/sampler.c): what sampler_sample costs over a row
# of the Qwen3 vocabulary for greedy and the settings requests use. SPREAD:
# the logits' standard deviation (below 1: a near-flat row). Needs a Release
# build in build/.
#   bench/sampler.sh [SPREAD]
exec "$(dirname "$0")/kernel_bench.sh" sampler "$@"
