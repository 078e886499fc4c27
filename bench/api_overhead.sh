#!/usr/bin/env bash
# What the Anthropic (/v1/messages) and OpenAI Responses (/v1/responses)
# dialects cost over /v1/chat/completions, on one `splash serve` with the
# tiny synthetic model (the model's own time small), under wrk as
# bench/http.sh measures the HTTP layer:
#  1. Per request: one-token answers (max_tokens 1, temperature 0, same
#     prompt and seed) from one keep-alive connection in a closed loop, so
#     the mean latency is 1 / (requests/s). Endpoints alternate A B C C B A
#     each round so drift in the machine's load hits all alike. Beside the
#     wall clock, the server process's CPU time (user + system, from
#     /proc/PID/stat) over each run divided by its requests: on a shared
#     machine the wall clock also counts the time the server waited for a
#     core, its CPU time does not. Printed: each run, the median per
#     endpoint and the median over rounds of the round's difference to chat
#     (each endpoint's two runs averaged).
#  2. Streaming: the same, streamed, TOKENS tokens each (ignore_eos, so every
#     endpoint decodes the same tokens); the difference to chat divided by
#     TOKENS is the dialect's extra cost per token. One curl per endpoint
#     counts the SSE events and the bytes on the wire (headers and chunked
#     body) per token.
#  3. With --instructions (valgrind): the instructions the server executes,
#     which the machine's load cannot blur, from fresh servers under
#     cachegrind, one per figure: per request, (9 one-token requests - 1) / 8;
#     per streamed token, (2 streamed answers of TOKENS - 2 of TOKENS / 4)
#     / (2 * 3 TOKENS / 4). Start-up and shutdown cancel out. valgrind has no
#     AVX-512, so the kernels take the AVX2 path; the HTTP and dialect code
#     is the same.
#   bench/api_overhead.sh [--rounds 3] [--duration 2] [--tokens 256] [--instructions]
#                         [--threads 1] [--splash build/splash] [--model FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 duration=2 tokens=256 threads=1 splash=build/splash model='' instructions=0
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --tokens) tokens=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --splash) splash=$2; shift 2 ;;
        --model) model=$2; shift 2 ;;
        --instructions) instructions=1; shift ;;
        -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
        *) echo "bench/api_overhead.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
for v in "$rounds" "$duration" "$tokens" "$threads"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "bench/api_overhead.sh: '$v' is not a positive integer" >&2; exit 2; }
done
command -v wrk >/dev/null || { echo "bench/api_overhead.sh: wrk not found (deps/debian-packages.txt)" >&2; exit 1; }
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
if [ -z "$model" ]; then
    model=$work/tiny.gguf
    "$splash" model synth --preset tiny --type q8_0 --seed 1 --out "$model" >/dev/null 2>&1
fi
"$splash" serve --model "$model" --port 0 --threads "$threads" --max-connections 64 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 300); do grep -q 'ready at' "$work/out" && break; sleep 0.1; done
url=$(sed -n 's/.*ready at \(http:[^ ]*\) .*/\1/p' "$work/out")
[ -n "$url" ] || { echo "bench/api_overhead.sh: the server did not start:" >&2; cat "$work/err" >&2; exit 1; }

mid=$(curl -s "$url/v1/models" | grep -o '"id": *"[^"]*"' | head -1 | sed 's/.*"\([^"]*\)"$/\1/')
names=(chat messages responses)
paths=(/v1/chat/completions /v1/messages /v1/responses)
# body NAME MAX STREAM: the request, the same prompt and sampling for every
# dialect (thinking off, Anthropic's default, so the templates match too)
body() {
    local common="\"model\": \"$mid\", \"temperature\": 0, \"seed\": 1, \"ignore_eos\": true, \"stream\": $3"
    case "$1" in
        chat) echo "{$common, \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": $2," \
                   "\"chat_template_kwargs\": {\"enable_thinking\": false}}" ;;
        messages) echo "{$common, \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": $2}" ;;
        responses) echo "{$common, \"input\": \"Hello\", \"max_output_tokens\": $2, \"reasoning\": {\"effort\": \"none\"}}" ;;
    esac
}
for mode in one stream short; do
    for name in "${names[@]}"; do
        case $mode in
            one) b=$(body "$name" 1 false) ;;
            stream) b=$(body "$name" "$tokens" true) ;;
            short) b=$(body "$name" $((tokens / 4)) true) ;;
        esac
        printf 'wrk.method = "POST"\nwrk.body = [[%s]]\nwrk.headers["Content-Type"] = "application/json"\n' "$b" \
            >"$work/$mode-$name.lua"
        echo "$b" >"$work/$mode-$name.json"
    done
done
# a check that each request works before measuring it
for i in 0 1 2; do
    for mode in one stream; do
        code=$(curl -s -o "$work/check" -w '%{http_code}' -H 'Content-Type: application/json' \
            --data-binary "@$work/$mode-${names[i]}.json" "$url${paths[i]}")
        [ "$code" = 200 ] || { echo "bench/api_overhead.sh: ${paths[i]} ($mode) -> $code: $(cat "$work/check")" >&2; exit 1; }
    done
done

# the server's CPU time so far, in clock ticks (user + system, all threads)
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
# run1 MODE I: wrk, one connection; sets w (ms per request: 1000 / requests/s)
# and c (the server's CPU µs per request)
run1() {
    local t0 t1
    t0=$(ticks)
    wrk -t1 -c1 -d"${duration}s" --timeout 60s -s "$work/$1-${names[$2]}.lua" "$url${paths[$2]}" >"$work/wrk" 2>&1
    t1=$(ticks)
    if grep -q 'Non-2xx\|Socket errors' "$work/wrk"; then
        echo "bench/api_overhead.sh: errors under load:" >&2; cat "$work/wrk" >&2; exit 1
    fi
    w=$(awk '/^Requests\/sec:/ {printf "%.4f", 1000 / $2}' "$work/wrk")
    c=$(awk -v t="$((t1 - t0))" -v hz="$hz" '/requests in/ {printf "%.1f", t * 1e6 / hz / $1}' "$work/wrk")
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
avg2() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%.4f", (x + y) / 2}'; }
sub2() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%.4f", x - y}'; }

# measure MODE: per endpoint i, each run's wall ms and CPU µs (wall[i], cpu[i])
# and each round's difference to chat, the endpoint's two runs averaged (dwall[i], dcpu[i])
measure() {
    wall=("" "" "") cpu=("" "" "") dwall=("" "" "") dcpu=("" "" "")
    local r i aw=() ac=() bw=() bc=() rw=() rc=()
    for ((r = 0; r < rounds; r++)); do
        for i in 0 1 2; do run1 "$1" "$i"; aw[i]=$w ac[i]=$c; done
        for i in 2 1 0; do run1 "$1" "$i"; bw[i]=$w bc[i]=$c; done
        for i in 0 1 2; do
            rw[i]=$(avg2 "${aw[i]}" "${bw[i]}") rc[i]=$(avg2 "${ac[i]}" "${bc[i]}")
            wall[i]+="${aw[i]} ${bw[i]} " cpu[i]+="${ac[i]} ${bc[i]} "
        done
        for i in 0 1 2; do
            dwall[i]+="$(sub2 "${rw[i]}" "${rw[0]}") " dcpu[i]+="$(sub2 "${rc[i]}" "${rc[0]}") "
        done
    done
}
# per SCALE: prints endpoint i's median difference to chat times SCALE (- for chat)
added() {
    if [ "$2" = 0 ]; then echo -; else awk -v d="$(median <<<"$3")" -v s="$1" 'BEGIN {printf "%.3f", d * s}'; fi
}

echo "splash serve on $(basename "$model") (--threads $threads), wrk -t1 -c1 for ${duration} s per run," \
     "$rounds rounds A B C C B A; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(wall: 1000 / requests/s; CPU: the server process's user + system time over the run / requests)"
echo
echo "Per request (max_tokens 1):"
echo
echo "| endpoint | wall ms, runs | median | added over chat, ms | server CPU µs, runs | median | added over chat, µs |"
echo "|---|---|---|---|---|---|---|"
measure one
for i in 0 1 2; do
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "${paths[i]}" "${wall[i]% }" "$(median <<<"${wall[i]}")" \
        "$(added 1 "$i" "${dwall[i]}")" "${cpu[i]% }" "$(median <<<"${cpu[i]}")" "$(added 1 "$i" "${dcpu[i]}")"
done

# one streamed answer per endpoint: events, bytes on the wire
for i in 0 1 2; do
    curl -s --raw -D "$work/h$i" -o "$work/b$i" -H 'Content-Type: application/json' \
        --data-binary "@$work/stream-${names[i]}.json" "$url${paths[i]}"
    events[i]=$(grep -c '^data: ' "$work/b$i")
    bytes[i]=$(($(wc -c <"$work/h$i") + $(wc -c <"$work/b$i")))
done
echo
echo "Streaming, $tokens tokens a request (ignore_eos), load average $(cut -d' ' -f1-3 /proc/loadavg):"
echo
echo "| endpoint | events | wire bytes | bytes per token | wall ms, runs | median | added over chat, µs per token |" \
     "server CPU µs, runs | median | added over chat, µs per token |"
echo "|---|---|---|---|---|---|---|---|---|---|"
measure stream
per_token=$(awk -v t="$tokens" 'BEGIN {print 1 / t}')
for i in 0 1 2; do
    printf '| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n' "${paths[i]}" "${events[i]}" "${bytes[i]}" \
        "$(awk -v b="${bytes[i]}" -v t="$tokens" 'BEGIN {printf "%.1f", b / t}')" "${wall[i]% }" \
        "$(median <<<"${wall[i]}")" "$(added "$(awk -v t="$tokens" 'BEGIN {print 1000 / t}')" "$i" "${dwall[i]}")" \
        "${cpu[i]% }" "$(median <<<"${cpu[i]}")" "$(added "$per_token" "$i" "${dcpu[i]}")"
done

[ "$instructions" = 1 ] || exit 0
command -v valgrind >/dev/null || { echo "bench/api_overhead.sh: valgrind not found" >&2; exit 1; }
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=
# irefs MODE I N: a fresh server under cachegrind answers N requests; prints its instructions
irefs() {
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$splash" serve --model "$model" \
        --port 0 --threads "$threads" >"$work/vout" 2>"$work/verr" &
    pid=$!
    local u='' k
    for _ in $(seq 600); do grep -q 'ready at' "$work/vout" && break; sleep 0.1; done
    u=$(sed -n 's/.*ready at \(http:[^ ]*\) .*/\1/p' "$work/vout")
    [ -n "$u" ] || { echo "bench/api_overhead.sh: the server under valgrind did not start:" >&2; cat "$work/verr" >&2; exit 1; }
    for ((k = 0; k < $3; k++)); do
        curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary "@$work/$1-${names[$2]}.json" \
            "$u${paths[$2]}"
    done
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    sed -n 's/.*I *refs: *//p' "$work/verr" | tr -d ,
}
echo
echo "Instructions the server executes (valgrind cachegrind, fresh server per figure):"
echo
echo "| endpoint | per request, max_tokens 1 | added over chat | per streamed token | added over chat |"
echo "|---|---|---|---|---|"
short=$((tokens / 4))
for i in 0 1 2; do
    one1=$(irefs one "$i" 1) one9=$(irefs one "$i" 9)
    s_short=$(irefs short "$i" 2) s_long=$(irefs stream "$i" 2)
    req[i]=$(((one9 - one1) / 8))
    tok[i]=$(((s_long - s_short) / (2 * (tokens - short))))
    if [ "$i" = 0 ]; then a=- b=-; else a=$((req[i] - req[0])) b=$((tok[i] - tok[0])); fi
    echo "| ${paths[i]} | ${req[i]} | $a | ${tok[i]} | $b |"
done
