#!/usr/bin/env bash
# What an AVX-512 instruction costs beside a stream of vpdpbusd on this CPU,
# in vpdpbusd slots (bench/zmm_ports.c): whether the K-quant tiles' shifts,
# masks and multiplies share the VNNI ports. Needs a Release build in build/.
#   bench/zmm_ports.sh [REPS]
exec "$(dirname "$0")/kernel_bench.sh" zmm_ports "$@"
