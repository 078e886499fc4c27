#!/usr/bin/env bash
# The cost of the null trace sink: the ordinary binary (trace calls compiled
# in, null sink) against a build with the calls compiled out
# (-DSPLASH_TRACE=OFF), decoding through the engine on one thread.
#  1. Wall clock: decode tokens/s, alternated ABBA in one run so drift in the
#     machine's load hits both alike; each round, the median ratio and a
#     bootstrap 95 % interval for it.
#  2. Instructions (when valgrind is installed): instructions executed per
#     decode token by each build, from two decode lengths, so start-up and
#     prefill cancel out. This count does not depend on the machine's load,
#     which on a shared VM blurs the wall clock by a few per cent. It runs the
#     small built-in model on the AVX2 path (valgrind has no AVX-512), where
#     the per-step trace calls weigh the most against the work of a token.
#   [TG=128] bench/trace_overhead.sh [MODEL] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-/tmp/splash-bench/qwen3-0.6b-q8_0.gguf}
ROUNDS=${2:-12}
TG=${TG:-128}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target splash >/dev/null
cmake -S . -B build-notrace -DCMAKE_BUILD_TYPE=Release -DSPLASH_TRACE=OFF >/dev/null
cmake --build build-notrace -j"$(nproc)" --target splash >/dev/null
[ -f "$MODEL" ] || ./build/splash model synth --preset qwen3-0.6b --type q8_0 --seed 1 --out "$MODEL" >/dev/null
tps() { "$1" perf --model "$MODEL" --concurrency 1 --threads 1 --tg "$TG" --reps 1 --json | /usr/bin/python3 -c \
    'import json,sys; print(json.load(sys.stdin)["results"][0]["decode_tokens_per_s"])'; }
on=(); off=()
for ((i = 0; i < ROUNDS; i++)); do
    if ((i % 2 == 0)); then on+=("$(tps build/splash)"); off+=("$(tps build-notrace/splash)")
    else off+=("$(tps build-notrace/splash)"); on+=("$(tps build/splash)"); fi
done
/usr/bin/python3 - "${on[*]}" "${off[*]}" <<'PY'
import random, statistics, sys
on = [float(x) for x in sys.argv[1].split()]
off = [float(x) for x in sys.argv[2].split()]
ratios = [a / b for a, b in zip(on, off)]
rng = random.Random(1)
boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
lo, hi = boot[50], boot[1949]
m = statistics.median(ratios)
print("wall clock, decode tok/s, %d rounds ABBA:" % len(ratios))
print("  null sink (calls compiled in):", " ".join("%.2f" % x for x in on), " median %.2f" % statistics.median(on))
print("  calls compiled out:           ", " ".join("%.2f" % x for x in off), " median %.2f" % statistics.median(off))
print("  per-round ratio in/out:       ", " ".join("%.4f" % r for r in ratios))
print("  median ratio %.4f (%+.2f %%), bootstrap 95 %% interval %+.2f %% to %+.2f %%"
      % (m, 100 * (m - 1), 100 * (lo - 1), 100 * (hi - 1)))
PY
command -v valgrind >/dev/null || { echo "instructions: valgrind not installed, skipped"; exit 0; }
SMALL=build/models/default.gguf
irefs() { SPLASH_CPU=avx2 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$1" perf --model "$SMALL" --concurrency 1 --threads 1 --tg "$2" --reps 1 2>&1 >/dev/null |
    sed -n 's/.*I *refs: *//p' | tr -d ,; }
declare -A ir
for b in build build-notrace; do for tg in 8 40; do ir[$b.$tg]=$(irefs "$b/splash" "$tg"); done; done
/usr/bin/python3 - "${ir[build.8]}" "${ir[build.40]}" "${ir[build-notrace.8]}" "${ir[build-notrace.40]}" <<'PY'
import sys
a8, a40, b8, b40 = (int(x) for x in sys.argv[1:])
on, off = (a40 - a8) / 32, (b40 - b8) / 32
print("instructions per decode token (built-in model, AVX2 path, valgrind):")
print("  null sink %.0f, compiled out %.0f: %+.0f per token (%+.4f %%)" % (on, off, on - off, 100 * (on - off) / off))
PY
