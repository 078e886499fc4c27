#!/usr/bin/env bash
# The Gated DeltaNet delta rule token by token against its chunk form at
# C = 16, 32, 64 (kernels/gdn.h), on the path the CPU selects, one thread,
# alternated runs (bench/gdn_chunk.c). Needs a Release build in build/.
#   bench/gdn_chunk.sh [TOKENS] [HEADS] [ROUNDS]     (default 512 16 5)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target splash_core >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -std=c17 -Isrc bench/gdn_chunk.c build/libsplash_core.a -lm -lpthread -o "$out/gdn_chunk"
"$out/gdn_chunk" "$@"
