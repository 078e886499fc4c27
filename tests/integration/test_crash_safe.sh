#!/usr/bin/env bash
# Crash-safe outputs (base/atomic_file.h): splash model synth writing a
# ~30 MB model over an existing file is killed with SIGKILL at random points;
# after each kill the destination must hold the old file or the complete new
# one (by SHA-256), never a partial file. A normal run leaves no temporary.
# Also checks that no writer in src/ bypasses the helper (fopen with "w").
# Usage: test_crash_safe.sh PATH/TO/splash SRC_DIR [KILLS]
set -u
splash=${1:?usage: test_crash_safe.sh PATH/TO/splash SRC_DIR [KILLS]}
src=${2:?usage: test_crash_safe.sh PATH/TO/splash SRC_DIR [KILLS]}
kills=${3:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

small=(--type f16 --layers 1 --hidden 16 --ffn 32 --heads 2 --kv-heads 1 --head-dim 8 --vocab 260 --seed 1)
big=(--type f32 --layers 4 --hidden 256 --ffn 1024 --heads 4 --kv-heads 2 --head-dim 64 --vocab 8192 --seed 2)
sha() { sha256sum "$1" | cut -d' ' -f1; }
temporaries() { compgen -G "$work/m.gguf.tmp-*" | wc -l; }

"$splash" model synth --out "$work/ref.gguf" "${big[@]}" 2>/dev/null || bad "the reference synth failed"
new=$(sha "$work/ref.gguf")
rm -f "$work/ref.gguf"
"$splash" model synth --out "$work/m.gguf" "${small[@]}" 2>/dev/null || bad "the first synth failed"
old=$(sha "$work/m.gguf")
[ "$(temporaries)" -eq 0 ] || bad "a normal run left a temporary: $(ls "$work")"

# Kill points: random delays over about the time one write takes here (measured
# once, so a slow machine is still covered end to end; nothing is timed).
t0=$(date +%s%N)
"$splash" model synth --out "$work/m2.gguf" "${big[@]}" 2>/dev/null
span_ms=$((($(date +%s%N) - t0) / 1000000 + 50))
rm -f "$work/m2.gguf"
n_old=0 n_new=0 n_left=0
for i in $(seq 1 "$kills"); do
    # the destination starts each round as the old file
    if [ "$(sha "$work/m.gguf")" != "$old" ]; then
        "$splash" model synth --out "$work/m.gguf" "${small[@]}" 2>/dev/null
    fi
    delay_ms=$((RANDOM % span_ms))
    "$splash" model synth --out "$work/m.gguf" "${big[@]}" 2>/dev/null &
    pid=$!
    sleep "$(awk -v ms="$delay_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    got=$(sha "$work/m.gguf")
    if [ "$got" = "$old" ]; then
        n_old=$((n_old + 1))
    elif [ "$got" = "$new" ]; then
        n_new=$((n_new + 1))
    else
        bad "kill $i after ${delay_ms} ms: the destination is neither the old nor the new file ($(stat -c %s "$work/m.gguf") bytes)"
    fi
    # a kill between create and rename may leave the temporary (never read); tidy it
    n_left=$((n_left + $(temporaries)))
    rm -f "$work"/m.gguf.tmp-*
done
echo "crash-safe: $kills kills: $n_old left the old file, $n_new the new one, $n_left left a temporary (removed)"

# A normal run after all that: the complete new file, no temporary.
"$splash" model synth --out "$work/m.gguf" "${big[@]}" 2>/dev/null || bad "the final synth failed"
[ "$(sha "$work/m.gguf")" = "$new" ] || bad "the final synth is not the reference file"
[ "$(temporaries)" -eq 0 ] || bad "a normal run left a temporary"

# Every output goes through base/atomic_file.c: no other fopen for writing.
# (Child-process logs, opened with open(2) and appended to, are logs, not outputs.)
raw=$(grep -rnE 'fopen\([^;]*"[wa]b?\+?"' "$src" | grep -v '^[^:]*atomic_file\.c:' || true)
[ -z "$raw" ] || bad "writers that bypass base/atomic_file.h: $raw"

[ "$fail" -eq 0 ] && echo "crash-safe: ok" || exit 1
