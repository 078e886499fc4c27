#!/usr/bin/env bash
# The soak (issue 25 part 3; a campaign, not a CI step): one `splash serve`
# under an hour of mixed traffic from bench/soak.mjs (streaming and not,
# random lengths, clients hanging up mid-stream, bursts past the queue,
# cached-prefix repeats, n-gram speculation on, seeded probes), then the
# verdicts: zero 5xx, every 429 with Retry-After, RSS flat over the last
# half, nothing active or leaked in /status, probes unchanged, and a clean
# exit on SIGTERM. Figures in DIR/soak.json and docs/reliability.md.
#   bench/soak.sh [--duration S] [--model FILE] [--dir DIR] [-- SOAK.MJS OPTIONS]
# Server settings: --threads 2 --max-seqs 4 --queue-size 8 --draft ngram
# (override with SPLASH_SOAK_SERVE="...").
set -euo pipefail
cd "$(dirname "$0")/.."
duration=3600 model=build/models/default.gguf dir=$(mktemp -d /tmp/splash-soak.XXXXXX)
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration=$2; shift 2 ;;
        --model) model=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "bench/soak.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
splash=${SPLASH:-$PWD/build/splash}
node=${SPLASH_NODE:-node}
mkdir -p "$dir"
read -r -a serve <<<"${SPLASH_SOAK_SERVE:---threads 2 --max-seqs 4 --queue-size 8 --draft ngram}"
"$splash" serve --model "$model" --port 0 "${serve[@]}" >"$dir/server.out" 2>"$dir/server.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 600); do
    port=$(sed -n 's|^splash serve: ready at http://127.0.0.1:\([0-9]*\) .*|\1|p' "$dir/server.out")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "bench/soak.sh: the server exited:" >&2; cat "$dir/server.log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { echo "bench/soak.sh: no ready line in 60 s" >&2; exit 1; }
echo "bench/soak.sh: server $pid on port $port ($model, ${serve[*]}), ${duration} s, output in $dir"
rc=0
"$node" bench/soak.mjs --port "$port" --pid "$pid" --duration "$duration" --out "$dir" "$@" || rc=$?
kill -TERM "$pid"
exit_code=0
wait "$pid" || exit_code=$?
trap - EXIT
if [ "$exit_code" -eq 0 ]; then echo "  PASS  the server exits 0 on SIGTERM"; else echo "  FAIL  the server exited $exit_code on SIGTERM"; rc=1; fi
exit "$rc"
