#!/usr/bin/env bash
# The verdict protocols of splash bench as a benchmark: A/A runs (never a
# verdict), a 10 % and a 5 % injected slowdown (called a regression in at
# least 9 and 8 of 10 runs), with the machine's noise beside every count.
# Run it on a quiet machine; it takes about an hour on 2 vCPUs.
#   bench/verdicts.sh [--splash build/splash] [--aa 20] [--runs 10] [--rounds R] [--repeat N] [--tokens T]
# The model (hidden 256, ~7 MB in Q8_0: it stays in the cache, where decode
# swings 1-2 % between runs against 15 % from memory) is written once to
# ${SPLASH_BENCH_DIR:-/tmp/splash-bench}.
set -euo pipefail
cd "$(dirname "$0")/.."
splash=build/splash aa=20 runs=10 extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --splash) splash=$2; shift 2 ;;
        --aa) aa=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --rounds|--repeat|--tokens) extra+=("$1" "$2"); shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "bench/verdicts.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
dir=${SPLASH_BENCH_DIR:-/tmp/splash-bench}
mkdir -p "$dir"
model="$dir/bench-small.gguf"
[ -f "$model" ] || "$splash" model synth --preset tiny --type q8_0 --seed 1 --hidden 256 --ffn 768 \
    --layers 8 --heads 4 --kv-heads 2 --head-dim 64 --out "$model" >&2
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
exec /usr/bin/env python3 bench/verdicts.py --splash "$splash" --model "$model" --dir "$dir/verdicts-$(date +%s)" \
    --aa "$aa" --runs "$runs" "${extra[@]}"
