#!/usr/bin/env bash
# HTTP overhead of `splash serve` on the tiny synthetic model, under wrk:
#  - requests/s for GET /health and for one-token POST /v1/completions
#    (CONNS keep-alive connections);
#  - the latency the HTTP layer adds over the in-process engine, from one
#    connection sending one-token completions back to back: the client's
#    mean latency minus the engine-side mean duration of the same requests.
#    Client: with one connection in a closed loop each request starts when
#    the previous one ends, so the mean latency is 1 / (requests/s) (wrk's
#    own latency mean is not used: its samples do not add up to the run's
#    duration). Engine: the delta of splash_request_duration_seconds_sum /
#    _count in /metrics over the run, the server's clock from just after
#    engine_submit to the engine's DONE event. The difference, HTTP parsing,
#    validation, tokenising, submitting, building the JSON and the socket
#    round trip (and wrk's own few microseconds), is what the HTTP layer
#    adds. Means of the same requests subtract; medians would not.
#   bench/http.sh [--duration 5] [--conns 8] [--threads 1] [--splash build/splash] [--model FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=5 conns=8 threads=1 splash=build/splash model=
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --splash) splash=$2; shift 2 ;;
        --model) model=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "bench/http.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
command -v wrk >/dev/null || { echo "bench/http.sh: wrk not found (deps/debian-packages.txt)" >&2; exit 1; }
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
if [ -z "$model" ]; then
    model=$work/tiny.gguf
    "$splash" model synth --preset tiny --type q8_0 --seed 1 --out "$model" >/dev/null 2>&1
fi
"$splash" serve --model "$model" --port 0 --threads "$threads" --max-connections 1024 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 300); do grep -q 'ready at' "$work/out" && break; sleep 0.1; done
url=$(sed -n 's/.*ready at \(http:[^ ]*\) .*/\1/p' "$work/out")
[ -n "$url" ] || { echo "bench/http.sh: the server did not start:" >&2; cat "$work/err" >&2; exit 1; }

body='{"prompt": "Hello", "max_tokens": 1, "temperature": 0}'
cat >"$work/post.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
EOF
# a check that the request works before measuring it
code=$(curl -s -o "$work/one" -w '%{http_code}' -H 'Content-Type: application/json' -d "$body" "$url/v1/completions")
[ "$code" = 200 ] || { echo "bench/http.sh: POST /v1/completions -> $code: $(cat "$work/one")" >&2; exit 1; }

# wrk's latency figure in ms ("812.00us", "1.20ms", "1.02s")
to_ms() { awk '{v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
                printf "%.3f", u == "us" ? v / 1000 : u == "s" ? v * 1000 : u == "m" ? v * 60000 : v}' <<<"$1"; }
# run CONNS ARGS...: wrk with --latency; sets rps rps_exact p50 p99 n
run() {
    local conns=$1; shift
    wrk -t1 -c"$conns" -d"${duration}s" --latency "$@" >"$work/wrk" 2>&1
    if grep -q 'Non-2xx' "$work/wrk"; then echo "bench/http.sh: errors under load:" >&2; cat "$work/wrk" >&2; exit 1; fi
    rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$work/wrk")
    rps_exact=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$work/wrk")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$work/wrk")")
    n=$(awk '/requests in/ {print $1}' "$work/wrk")
}
metric() { curl -s "$url/metrics" | awk -v n="$1" '$1 == n {print $2}'; }

echo "splash serve on $(basename "$model") (--threads $threads), wrk -t1 for ${duration} s per row;" \
     "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| request | connections | requests/s | p50 ms | p99 ms |"
echo "|---|---|---|---|---|"
run "$conns" "$url/health"
echo "| GET /health | $conns | $rps | $p50 | $p99 |"
run "$conns" -s "$work/post.lua" "$url/v1/completions"
echo "| POST /v1/completions, 1 token | $conns | $rps | $p50 | $p99 |"

sum0=$(metric splash_request_duration_seconds_sum) cnt0=$(metric splash_request_duration_seconds_count)
run 1 -s "$work/post.lua" "$url/v1/completions"
sum1=$(metric splash_request_duration_seconds_sum) cnt1=$(metric splash_request_duration_seconds_count)
echo "| POST /v1/completions, 1 token | 1 | $rps | $p50 | $p99 |"
rps1=$rps_exact
engine=$(awk -v s0="$sum0" -v s1="$sum1" -v c0="$cnt0" -v c1="$cnt1" 'BEGIN {printf "%.3f", (s1 - s0) / (c1 - c0) * 1000}')
echo
echo "HTTP layer over the engine, one connection, $((cnt1 - cnt0)) one-token completions (wrk counted $n):"
echo
echo "| client mean ms (1 / requests/s) | engine mean ms | added by HTTP, mean ms |"
echo "|---|---|---|"
awk -v r="$rps1" -v e="$engine" 'BEGIN {printf "| %.3f | %.3f | %.3f |\n", 1000 / r, e, 1000 / r - e}'
