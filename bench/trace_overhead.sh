#!/usr/bin/env bash
# The cost of the null trace sink: decode tokens/s through the engine with the
# ordinary binary (trace calls compiled in, null sink) against a build with the
# calls compiled out (-DSPLASH_TRACE=OFF), alternated in one run (ABAB...) so
# drift in machine load hits both alike. Prints each run and the median ratio.
#   bench/trace_overhead.sh [MODEL] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-/tmp/splash-bench/qwen3-0.6b-q8_0.gguf}
ROUNDS=${2:-6}
TG=${TG:-64}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target splash >/dev/null
cmake -S . -B build-notrace -DCMAKE_BUILD_TYPE=Release -DSPLASH_TRACE=OFF >/dev/null
cmake --build build-notrace -j"$(nproc)" --target splash >/dev/null
[ -f "$MODEL" ] || ./build/splash model synth --preset qwen3-0.6b --type q8_0 --seed 1 --out "$MODEL" >/dev/null
tps() { "$1" perf --model "$MODEL" --concurrency 1 --tg "$TG" --reps 1 --json | /usr/bin/python3 -c \
    'import json,sys; print(json.load(sys.stdin)["results"][0]["decode_tokens_per_s"])'; }
on=(); off=()
for ((i = 0; i < ROUNDS; i++)); do
    if ((i % 2 == 0)); then on+=("$(tps build/splash)"); off+=("$(tps build-notrace/splash)")
    else off+=("$(tps build-notrace/splash)"); on+=("$(tps build/splash)"); fi
done
/usr/bin/python3 - "${on[*]}" "${off[*]}" <<'PY'
import statistics, sys
on = [float(x) for x in sys.argv[1].split()]
off = [float(x) for x in sys.argv[2].split()]
ratios = [a / b for a, b in zip(on, off)]
print("null sink (calls compiled in):  ", " ".join("%.2f" % x for x in on), " median %.2f tok/s" % statistics.median(on))
print("calls compiled out:             ", " ".join("%.2f" % x for x in off), " median %.2f tok/s" % statistics.median(off))
print("per-round ratio in/out:         ", " ".join("%.4f" % r for r in ratios))
print("median ratio %.4f (difference %+.2f %%)" % (statistics.median(ratios), 100 * (statistics.median(ratios) - 1)))
PY
