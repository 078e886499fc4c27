#!/usr/bin/env bash
# Builds one of the kernel benchmarks (bench/NAME.c, against the Release
# build's core library in build/) into a temporary directory and runs it
# with ARGS; bench/decode_kernels.sh and bench/attn_kernels.sh call it.
#   bench/kernel_bench.sh NAME [ARGS]
set -euo pipefail
name=${1:?usage: bench/kernel_bench.sh NAME [ARGS]}
shift
cd "$(dirname "$0")/.."
cmake --build build --target splash_core >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -std=c17 -mavx2 -I. -Isrc "bench/$name.c" build/libsplash_core.a -lm -lpthread -o "$out/$name"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'); kernel level: ${SPLASH_CPU:-best}"
"$out/$name" "$@"
