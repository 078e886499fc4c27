#!/usr/bin/env bash
# Memory pressure (issue 25 part 4), on the built-in model and a synthesised
# qwen35 (hybrid) model:
#  (a) --max-memory too small: serve exits non-zero with the plan's breakdown
#      (weights, KV, scratch, the limit);
#  (b) a KV pool just above one full-context sequence, flooded by concurrent
#      long requests: every answer is 200 (preemption) or 429 with
#      Retry-After, the pool did run out (preemptions > 0), and afterwards
#      /status shows nothing active and no block held;
#  (c) `ulimit -v` from too small to start up to enough: each attempt either
#      serves or exits non-zero, not by a signal, with one clear line.
#      Skipped in sanitizer builds (their shadow memory reserves terabytes of
#      address space, so no `ulimit -v` lets them start).
# Nothing here is timed: polls are bounded only to turn a hang into a failure.
# Usage: test_memory_pressure.sh PATH/TO/splash [SANITIZER]
set -u
splash=${1:?usage: test_memory_pressure.sh PATH/TO/splash [SANITIZER]}
sanitizer=${2:-}
work=$(mktemp -d)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# clear one-line errors start "splash serve:" / "splash run:" and say what ran out
is_clear() { grep -qE '^splash (serve|run): .*(does not fit|cannot map|out of memory|cannot start)' "$1"; }

"$splash" model synth --out "$work/q35.gguf" --preset qwen35-tiny --seed 1 2>/dev/null || bad "synth qwen35 failed"
models=(default "$work/q35.gguf")
model_args() { [ "$1" = default ] && return; printf '%s\n' --model "$1"; }
name() { basename "$1" .gguf; }
engine=(--threads 2 --max-seqs 4 --max-context 512)

# Starts serve in the background with the given arguments (and, in $limit_kb
# when set, a ulimit -v); sets server_pid and url, or returns 1 when it exited.
start_server() {
    local out=$work/serve.out err=$work/serve.err
    : >"$out"
    (
        [ -n "${limit_kb:-}" ] && ulimit -v "$limit_kb"
        exec "$splash" serve --port 0 "$@"
    ) >"$out" 2>"$err" &
    server_pid=$!
    for _ in $(seq 1 600); do
        url=$(sed -n 's|^splash serve: ready at \(http://[^ ]*\) .*|\1|p' "$out")
        [ -n "$url" ] && return 0
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        bad "serve $* neither became ready nor exited: $(tail -1 "$err")"
        kill -9 "$server_pid"
    fi
    wait "$server_pid"
    server_rc=$?
    server_pid=
    return 1
}

stop_server() {
    kill -TERM "$server_pid"
    wait "$server_pid"
    local rc=$?
    server_pid=
    [ "$rc" -eq 0 ] || bad "serve exited $rc after SIGTERM: $(tail -2 "$work/serve.err")"
    ! grep -qE 'Sanitizer|runtime error' "$work/serve.err" || bad "a sanitizer report: $(grep -m1 -E 'Sanitizer|runtime error' "$work/serve.err")"
}

json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# ---- (a) --max-memory too small: the breakdown, a non-zero exit ----
declare -A need_mib
for m in "${models[@]}"; do
    # shellcheck disable=SC2046
    if start_server "${engine[@]}" $(model_args "$m") --max-memory 1M; then
        bad "$(name "$m"): serve started with --max-memory 1M"
        stop_server
        continue
    fi
    line=$(grep 'does not fit' "$work/serve.err")
    [ "$server_rc" -ge 1 ] && [ "$server_rc" -lt 128 ] || bad "$(name "$m"): --max-memory 1M exited $server_rc"
    for word in "1.0 MiB (--max-memory)" "needs at least" weights KV scratch; do
        [[ "$line" == *"$word"* ]] || bad "$(name "$m"): the refusal does not show '$word': $(tail -1 "$work/serve.err")"
    done
    need_mib[$m]=$(sed -n 's/.*needs at least \([0-9.]*\) MiB.*/\1/p' <<<"$line")
    echo "memory-pressure: $(name "$m"): --max-memory 1M refused: ${line#splash serve: }"
done

# ---- (b) a KV pool exhausted by load: preemption or 429, never 5xx ----
for m in "${models[@]}"; do
    [ -n "${need_mib[$m]:-}" ] || continue
    # what one full-context sequence needs plus 0.5 MiB: a pool of a few
    # blocks more than one 512-token sequence
    limit_k=$(awk -v n="${need_mib[$m]}" 'BEGIN { printf "%dK", (n + 0.5) * 1024 }')
    # --test-step-delay-us keeps each request running long enough that they overlap
    # shellcheck disable=SC2046
    if ! start_server "${engine[@]}" $(model_args "$m") --queue-size 2 --max-memory "$limit_k" \
        --test-step-delay-us 1000; then
        bad "$(name "$m"): serve did not start with --max-memory $limit_k: $(tail -1 "$work/serve.err")"
        continue
    fi
    curl -s -m 10 -o "$work/status" "$url/status"
    blocks=$(json "$work/status" "d['cache']['blocks_total']")
    # B blocks of 16 tokens: four prompts of p blocks are admitted together
    # (4p plus the admission headroom fits), and two answers of t blocks
    # already overflow the pool (2t > B)
    p=$(((blocks - 8) / 4)) t=$((blocks / 2 + 2))
    [ "$t" -gt 32 ] && t=32
    n_prompt=$((16 * p - 8)) max_tokens=$((16 * t - 16 * p + 8 - 1))
    [ "$p" -ge 1 ] && [ $((2 * t)) -gt "$blocks" ] || bad "$(name "$m"): a pool of $blocks blocks is too large for this test"
    n_req=8 curls=()
    for i in $(seq 1 "$n_req"); do
        # odd requests stream: a preempted stream must only pause
        /usr/bin/python3 -c "import json,sys; s,n,g=map(int,sys.argv[1:]); print(json.dumps({'prompt': [(s * 7 + j) % 250 + 10 for j in range(n)], 'max_tokens': g, 'temperature': 0, 'ignore_eos': True, 'stream': s % 2 == 1}))" \
            "$i" "$n_prompt" "$max_tokens" >"$work/body$i"
        curl -s -m 300 -o "$work/resp$i" -D "$work/head$i" -w '%{http_code}' -H 'content-type: application/json' \
            --data-binary @"$work/body$i" "$url/v1/completions" >"$work/code$i" &
        curls+=($!)
    done
    wait "${curls[@]}"
    n200=0 n429=0
    for i in $(seq 1 "$n_req"); do
        code=$(cat "$work/code$i")
        case "$code" in
        200)
            n200=$((n200 + 1))
            if [ $((i % 2)) = 1 ]; then
                [ "$(tail -n 2 "$work/resp$i" | head -n 1)" = "data: [DONE]" ] &&
                    grep -q '"finish_reason":"length"' "$work/resp$i" && ! grep -q '"error"' "$work/resp$i" ||
                    bad "$(name "$m"): stream $i: 200 but not a whole stream: $(tail -c 300 "$work/resp$i")"
            else
                got=$(json "$work/resp$i" "d['usage']['completion_tokens'], d['choices'][0]['finish_reason']" 2>&1)
                [ "$got" = "($max_tokens, 'length')" ] || bad "$(name "$m"): request $i: 200 but $got"
            fi
            ;;
        429)
            n429=$((n429 + 1))
            grep -qi '^retry-after:' "$work/head$i" || bad "$(name "$m"): request $i: 429 without Retry-After"
            json "$work/resp$i" "d['error']['message']" >/dev/null 2>&1 || bad "$(name "$m"): request $i: 429 without a JSON error"
            ;;
        *) bad "$(name "$m"): request $i answered $code: $(head -c 300 "$work/resp$i")" ;;
        esac
    done
    # the engine publishes its idle state just after the last answer: poll
    idle=
    for _ in $(seq 1 200); do
        curl -s -m 10 -o "$work/status" "$url/status"
        idle=$(json "$work/status" "len(d['requests']['active']) + d['scheduler']['queued'] + d['cache']['blocks_used']" 2>/dev/null)
        [ "$idle" = 0 ] && break
        sleep 0.05
    done
    [ "$idle" = 0 ] || bad "$(name "$m"): /status after the flood: active + queued + blocks_used = $idle, not 0"
    stats=$(json "$work/status" "d['scheduler']['preemptions'], d['cache']['blocks_cached'], d['requests']['failed']")
    read -r preemptions cached failed <<<"$(tr -d '(),' <<<"$stats")"
    [ "$preemptions" -gt 0 ] || bad "$(name "$m"): no preemption: the pool ($blocks blocks) never ran out"
    [ "$failed" -eq 0 ] || bad "$(name "$m"): $failed requests failed"
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ] || bad "$(name "$m"): /health after the flood"
    echo "memory-pressure: $(name "$m"): a pool of $blocks blocks (--max-memory $limit_k), $n_req requests of $n_prompt + $max_tokens tokens: $n200 answered 200, $n429 answered 429; $preemptions preemptions; after: nothing active, 0 blocks held, $cached cached"
    stop_server
done

# ---- (c) ulimit -v: serve and run either work or exit with one clear line ----
if [ -n "$sanitizer" ]; then
    echo "memory-pressure: ulimit -v part skipped: this is a sanitizer build ($sanitizer), whose shadow memory reserves terabytes of address space"
else
    # the smallest limit the dynamic loader can map the binary under (below it
    # the loader fails before splash runs), then up in 4 MiB steps
    floor=8192
    until (ulimit -v "$floor" && exec "$splash" --version) >/dev/null 2>&1; do
        floor=$((floor + 4096))
        [ "$floor" -lt 262144 ] || { bad "splash --version does not run under ulimit -v 256 MiB"; break; }
    done
    for m in "${models[@]}"; do
        n_refused=0 saw_plan=0 served=
        for limit_kb in $(seq "$floor" 4096 $((floor + 262144))); do
            # shellcheck disable=SC2046
            (ulimit -v "$limit_kb" && exec timeout 60 "$splash" run $(model_args "$m") --max-tokens 2 --temperature 0 hi) \
                >/dev/null 2>"$work/run.err"
            rc=$?
            if [ "$rc" -ne 0 ] && { [ "$rc" -ge 128 ] || ! is_clear "$work/run.err"; }; then
                bad "$(name "$m"): run under ulimit -v $limit_kb exited $rc: $(tail -2 "$work/run.err")"
            fi
            # shellcheck disable=SC2046
            if start_server --threads 2 $(model_args "$m"); then
                served=$limit_kb
                break
            fi
            n_refused=$((n_refused + 1))
            grep -q 'ulimit -v' "$work/serve.err" && saw_plan=1
            if [ "$server_rc" -ge 128 ] || ! is_clear "$work/serve.err"; then
                bad "$(name "$m"): serve under ulimit -v $limit_kb exited $server_rc: $(tail -2 "$work/serve.err")"
            fi
        done
        if [ -z "$served" ]; then
            bad "$(name "$m"): serve never started under ulimit -v up to $((floor + 262144)) KiB"
            continue
        fi
        code=$(curl -s -m 60 -o "$work/resp" -w '%{http_code}' -H 'content-type: application/json' \
            -d '{"prompt":"hello","max_tokens":4}' "$url/v1/completions")
        [ "$code" = 200 ] || bad "$(name "$m"): under ulimit -v $served KiB a request answered $code: $(head -c 300 "$work/resp")"
        stop_server
        [ "$saw_plan" = 1 ] || bad "$(name "$m"): no refusal under ulimit -v came from the memory plan"
        echo "memory-pressure: $(name "$m"): ulimit -v from $floor KiB: $n_refused limits refused with a clear line, served from $served KiB"
    done
    limit_kb=
fi

[ "$fail" -eq 0 ] && echo "memory-pressure: ok" || exit 1
