#!/usr/bin/env bash
# curl against the real `splash serve` on a synthetic model: chat and
# completions (whole and streamed), prompts as text and as token ids, seed
# reproducibility, stop strings, usage and prefix-cache accounting,
# tokenize / detokenize / apply-template, models, health, ready, metrics,
# and a clean exit on SIGTERM. JSON is read with Debian's python3 (the
# reference tests need it anyway; it starts far faster than node).
#   test_curl.sh PATH/TO/splash MODEL.gguf [PYTHON]
set -u
splash=${1:?usage: test_curl.sh PATH/TO/splash MODEL.gguf [PYTHON]}
model=${2:?usage: test_curl.sh PATH/TO/splash MODEL.gguf [PYTHON]}
python=${3:-/usr/bin/python3}
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION ACTUAL EXPECTED
    if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}

# JSON reads in Python: js EXPR < FILE, where v is the parsed document with
# attribute access (v.choices[0].text); strings print as they are.
js() {
    "$python" -c '
import json, sys
class O(dict):
    __getattr__ = dict.__getitem__
v = json.load(sys.stdin, object_hook=O)
r = eval(sys.argv[1])
sys.stdout.write(r if isinstance(r, str) else json.dumps(r))' "$1"
}
# sse_summary FILE: {text: the reassembled text of a streamed chat or text
# completion, summary: "finish_reason role-chunks objects is-usage-last
# completion-tokens"}
sse_summary() {
    "$python" -c '
import json, sys
chunks = [json.loads(l[6:]) for l in open(sys.argv[1], encoding="utf-8") if l.startswith("data: {")]
text, finish, usage, roles, objects = "", None, None, 0, set()
for c in chunks:
    objects.add(c["object"])
    usage = c.get("usage") or usage
    for ch in c["choices"]:
        d = ch.get("delta")
        roles += bool(d and d.get("role") == "assistant")
        text += (d.get("content") or "") if d is not None else ch["text"]
        finish = ch["finish_reason"] or finish
last = chunks[-1]
is_usage_last = not last["choices"] and bool(last.get("usage"))
names, n_completion = ",".join(sorted(objects)), usage and usage["completion_tokens"]
summary = f"{finish} {roles} {names} {is_usage_last} {n_completion}"
print(json.dumps({"text": text, "summary": summary}))' "$1"
}

"$splash" serve --model "$model" --port 0 --threads 1 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 600); do
    grep -q 'ready at' "$work/out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
line=$(head -n 1 "$work/out")
if ! [[ $line =~ ^splash\ serve:\ ready\ at\ http://127\.0\.0\.1:([0-9]+)\ \(model\ ([^\)]+)\)$ ]]; then
    echo "FAIL: no ready line: '$line'"; cat "$work/err"; exit 1
fi
port=${BASH_REMATCH[1]} id=${BASH_REMATCH[2]}
check "model id is the file name without .gguf" "$id" "$(basename "$model" .gguf)"
base=http://127.0.0.1:$port

# post PATH JSON -> body in $work/body, status in $code
post() {
    rm -f "$work/body"
    code=$(curl -s -o "$work/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$2" "$base$1")
}
getp() { rm -f "$work/body"; code=$(curl -s -o "$work/body" -w '%{http_code}' "$base$1"); }
field() { js "$1" <"$work/body"; }

# ---- probes and models ----
getp /health; check "/health" "$code $(field v.status)" "200 ok"
getp /ready; check "/ready" "$code $(field v.status)" "200 ready"
getp /v1/models
check "/v1/models" "$code $(field 'f"{v.object} {len(v.data)} {v.data[0].id} {v.data[0].object}"')" \
    "200 list 1 $id model"

# ---- completions: whole, text prompt ----
# (greedy runs ignore end-of-generation tokens, so their length does not
# depend on what the random weights happen to produce)
post /v1/completions '{"prompt": "Hello there", "max_tokens": 24, "temperature": 0, "ignore_eos": true}'
check "completions status" "$code" 200
check "completions shape" "$(field 'f"{v.object} {v.model} {len(v.choices)} {v.choices[0].finish_reason}"')" \
    "text_completion $id 1 length"
check "completions usage" "$(field 'f"{v.usage.completion_tokens} {v.usage.total_tokens == v.usage.prompt_tokens + v.usage.completion_tokens} {type(v.usage.prompt_tokens_details.cached_tokens).__name__}"')" \
    "24 True int"
free_text=$(field v.choices[0].text)
[ -n "$free_text" ] && ok || bad "completions: empty text"

# greedy is deterministic: the same request again, and the same prompt as token ids
post /v1/completions '{"prompt": "Hello there", "max_tokens": 24, "temperature": 0, "ignore_eos": true}'
check "greedy repeat" "$(field v.choices[0].text)" "$free_text"
post /tokenize '{"prompt": "Hello there"}'
check "/tokenize status" "$code" 200
ids=$(field v.tokens)
check "/tokenize count" "$(field 'v.count == len(v.tokens) and v.count > 0')" true
post /v1/completions "{\"prompt\": $ids, \"max_tokens\": 24, \"temperature\": 0, \"ignore_eos\": true}"
check "completions with token ids" "$code $(field v.choices[0].text)" "200 $free_text"
check "token-id prompt usage" "$(field v.usage.prompt_tokens)" "$(js 'len(v)' <<<"$ids")"

# ---- /detokenize round trip, /apply-template ----
post /detokenize "{\"tokens\": $ids}"
check "/detokenize round trip" "$code $(field v.prompt)" "200 Hello there"
post /apply-template '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}'
check "/apply-template" "$code $(field 'json.dumps(v.prompt)')" \
    '200 "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"'

# ---- chat: whole and streamed give the same greedy text ----
chat='{"messages": [{"role": "user", "content": "Say something"}], "max_tokens": 16, "temperature": 0, "ignore_eos": true'
post /v1/chat/completions "$chat}"
check "chat status" "$code" 200
check "chat shape" "$(field 'f"{v.object} {v.choices[0].message.role} {v.choices[0].finish_reason} {v.usage.completion_tokens}"')" \
    "chat.completion assistant length 16"
chat_text=$(field v.choices[0].message.content)
curl -sN -H 'Content-Type: application/json' \
    --data-binary "$chat, \"stream\": true, \"stream_options\": {\"include_usage\": true}}" \
    "$base/v1/chat/completions" >"$work/sse"
check "chat stream ends with [DONE]" "$(grep '^data: ' "$work/sse" | tail -n 1)" "data: [DONE]"
sse_summary "$work/sse" >"$work/stream.json"
check "chat stream text = whole text" "$(js v.text <"$work/stream.json")" "$chat_text"
check "chat stream framing" "$(js v.summary <"$work/stream.json")" "length 1 chat.completion.chunk True 16"

# completions streamed
curl -sN -H 'Content-Type: application/json' --data-binary \
    '{"prompt": "Hello there", "max_tokens": 24, "temperature": 0, "ignore_eos": true, "stream": true}' "$base/v1/completions" >"$work/sse2"
streamed=$(sse_summary "$work/sse2" | js v.text)
check "completions stream text = whole text" "$streamed" "$free_text"
check "completions stream ends with [DONE]" "$(grep '^data: ' "$work/sse2" | tail -n 1)" "data: [DONE]"

# ---- seeds: temperature > 0 ----
seeded() { post /v1/completions "{\"prompt\": \"Once\", \"max_tokens\": 32, \"temperature\": 1.0, \"seed\": $1}"; field v.choices[0].text; }
a=$(seeded 42) b=$(seeded 42) c=$(seeded 43)
check "same seed, same text" "$a" "$b"
[ "$a" != "$c" ] && ok || bad "seeds 42 and 43 gave the same text '$a'"

# ---- stop strings: a printable substring of the free run ----
# a printable string of 3 to 6 characters that first occurs past the start
stop=$(printf '%s' "$free_text" | "$python" -c '
import re, sys
t = sys.stdin.read()
for i in range(1, len(t)):
    m = re.match(r"[\x21-\x7e]{3,6}", t[i:])
    if m and t.index(m.group()) == i:
        sys.stdout.write(m.group())
        break')
if [ -z "$stop" ]; then
    bad "no printable substring in the free run '$free_text'"
else
    prefix=$("$python" -c 'import sys; t, s = sys.argv[1:]; sys.stdout.write(t[:t.index(s)])' "$free_text" "$stop")
    body=$("$python" -c 'import json, sys; print(json.dumps({"prompt": "Hello there", "max_tokens": 24, "temperature": 0, "ignore_eos": True, "stop": [sys.argv[1]]}))' "$stop")
    post /v1/completions "$body"
    check "stop string: status" "$code" 200
    check "stop string: text before it" "$(field v.choices[0].text)" "$prefix"
    check "stop string: finish_reason" "$(field v.choices[0].finish_reason)" stop
    [ -n "$prefix" ] && ok || bad "stop string '$stop': empty text before it"
fi

# ---- cached tokens: a long prompt again with the same salt, then another ----
long=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 8))
cached() { post /v1/completions "{\"prompt\": \"$long\", \"max_tokens\": 1, \"cache_salt\": \"$1\"}"; field v.usage.prompt_tokens_details.cached_tokens; }
cached alpha >/dev/null
n_alpha=$(cached alpha)
n_beta=$(cached beta)
[ "$n_alpha" -gt 0 ] 2>/dev/null && ok || bad "repeated prompt, same salt: cached_tokens $n_alpha, want > 0"
check "another salt shares nothing" "$n_beta" 0

# ---- metrics: Prometheus text parses, counters move ----
metric() { curl -s "$base/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
curl -s -o "$work/metrics" -w '%{content_type}\n' "$base/metrics" >"$work/ctype"
grep -q '^text/plain' "$work/ctype" && ok || bad "/metrics content type $(cat "$work/ctype")"
# every line is a comment or `name{labels} value`
badlines=$(grep -vE '^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+|[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? [-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf|NaN))$' "$work/metrics" | head -3)
check "/metrics lines parse" "$badlines" ""
for m in splash_completions_total splash_request_duration_seconds_count splash_generation_tokens_total \
         'splash_requests_total{outcome="completed"}' splash_kv_blocks'{state="total"}' \
         splash_pool_jobs_total splash_pool_jobs_alone_total; do
    grep -qF "$m " "$work/metrics" && ok || bad "/metrics lacks $m"
done
before=$(metric splash_completions_total) gen_before=$(metric splash_generation_tokens_total)
# (ignore_eos: a sampled end-of-generation token within three steps would
# end it early and move the counter by less, a rare flake)
post /v1/completions '{"prompt": "count me", "max_tokens": 3, "ignore_eos": true}'
after=$(metric splash_completions_total) gen_after=$(metric splash_generation_tokens_total)
check "splash_completions_total moved by one" "$((after - before))" 1
check "splash_generation_tokens_total moved by three" "$((gen_after - gen_before))" 3
# a constrained request moves the grammar counters
g_before=$(metric splash_grammar_requests_total) m_before=$(metric splash_grammar_masks_total)
post /v1/completions '{"prompt": "json", "max_tokens": 8, "response_format": {"type": "json_object"}}'
check "splash_grammar_requests_total moved by one" "$(( $(metric splash_grammar_requests_total) - g_before ))" 1
[ "$(metric splash_grammar_masks_total)" -gt "$m_before" ] && ok || bad "splash_grammar_masks_total did not move"

# ---- SIGTERM: drain and exit 0 ----
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
check "exit status after SIGTERM" "$rc" 0
grep -q 'draining' "$work/err" && ok || bad "no drain line on stderr"

echo "server curl: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
