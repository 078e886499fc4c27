#!/usr/bin/env bash
# The Gated DeltaNet delta rule's scalar reference against the SIMD path the
# CPU selects (kernels/gdn.h), per token, alternated A B B A
# (bench/gdn_kernels.c). Needs a Release build in build/.
#   bench/gdn_kernels.sh [TOKENS] [HEADS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target splash_core >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -std=c17 -Isrc bench/gdn_kernels.c build/libsplash_core.a -lm -lpthread -o "$out/gdn_kernels"
"$out/gdn_kernels" "$@"
