#!/usr/bin/env bash
# Whether this CPU overlaps a streaming kernel's arithmetic with its reads
# from memory (bench/overlap.c): decode's weight stream reads at
# min(c, m) where it does, at 1 / (1 / c + 1 / m) where it does not.
# Needs a Release build in build/.
#   bench/overlap.sh [REPS] [THREADS] [STREAMS 1|2|4]
exec "$(dirname "$0")/kernel_bench.sh" overlap "$@"
