#!/usr/bin/env bash
# Drives the real splash binary: every command's --help, one clear line and
# exit status 2 on bad input, model info against sha256sum, run on the
# built-in model. Usage: test_cli.sh PATH/TO/splash
set -u
splash=${1:?usage: test_cli.sh PATH/TO/splash}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect STATUS PATTERN -- CMD...: exit status, and stderr is one line matching PATTERN
expect_error() {
    local want=$1 pattern=$2; shift 3
    "$@" >"$work/out" 2>"$work/err"
    local rc=$? lines
    lines=$(wc -l <"$work/err")
    if [ "$rc" -ne "$want" ]; then bad "$* -> exit $rc, want $want ($(head -c 300 "$work/err"))"; return; fi
    if [ "$lines" -ne 1 ]; then bad "$* -> $lines stderr lines, want 1: $(cat "$work/err")"; return; fi
    if ! grep -qE -- "$pattern" "$work/err"; then bad "$* -> '$(cat "$work/err")' does not match '$pattern'"; return; fi
    ok
}

expect_ok() {
    if "$@" >"$work/out" 2>"$work/err"; then ok; else bad "$* -> exit $? ($(head -c 300 "$work/err"))"; fi
}

# --help everywhere
expect_ok "$splash" --help
expect_ok "$splash" --version
expect_ok "$splash" run --help
expect_ok "$splash" model --help
expect_ok "$splash" model info --help
expect_ok "$splash" model synth --help

# bad command lines: exit 2, one line
expect_error 2 "unknown command 'frobnicate'" -- "$splash" frobnicate
expect_error 2 "usage" -- "$splash"
expect_error 2 "unknown option '--bogus'" -- "$splash" run --bogus x
expect_error 2 "no prompt" -- "$splash" run
expect_error 2 "--max-tokens: 'lots' is not an integer" -- "$splash" run --max-tokens lots hi
expect_error 2 "--temperature: -1 is out of range" -- "$splash" run --temperature -1 hi
expect_error 2 "--threads: 0 is out of range" -- "$splash" run --threads 0 hi
expect_error 2 "--model needs a value" -- "$splash" run --model
expect_error 2 "either a text prompt or --prompt-ids" -- "$splash" run --prompt-ids 1,2 hi
expect_error 2 "--prompt-ids: .* is not a comma-separated" -- "$splash" run --prompt-ids 1,,2
expect_error 2 "unknown subcommand 'nope'" -- "$splash" model nope
expect_error 2 "missing FILE" -- "$splash" model info
expect_error 2 "--out FILE is required" -- "$splash" model synth
expect_error 2 "--type 'q3' is not one of" -- "$splash" model synth --out "$work/x.gguf" --type q3
expect_error 2 "unknown preset 'huge'" -- "$splash" model synth --out "$work/x.gguf" --preset huge
expect_error 2 "hidden = 48 is not a multiple of the q8_0 block size 32" -- \
    "$splash" model synth --out "$work/x.gguf" --type q8_0 --hidden 48
expect_error 2 "heads 4 must be a multiple of kv-heads 3" -- "$splash" model synth --out "$work/x.gguf" --kv-heads 3
[ ! -e "$work/x.gguf" ] && ! compgen -G "$work/x.gguf.tmp-*" >/dev/null && ok || bad "a refused synth left a file behind"

# bad files: one line naming the problem
expect_error 1 "No such file" -- "$splash" model info "$work/missing.gguf"
printf 'GGUF\003\000\000\000' >"$work/trunc.gguf"
expect_error 1 "truncated at offset 8" -- "$splash" model info "$work/trunc.gguf"
echo "not a model" >"$work/text.gguf"
expect_error 1 "not a GGUF file" -- "$splash" run --model "$work/text.gguf" hi

# synth + info: the fingerprint agrees with sha256sum, the shape is described
expect_ok "$splash" model synth --preset tiny --type bf16 --layers 3 --vocab 300 --untied --seed 9 --out "$work/m.gguf"
"$splash" model info "$work/m.gguf" >"$work/info" 2>&1
want=$(sha256sum "$work/m.gguf" | cut -d' ' -f1)
grep -q "sha256: *$want" "$work/info" && ok || bad "model info sha256 differs from sha256sum ($want)"
grep -q "layers 3, hidden 64, ffn 128, heads 4, kv heads 2, head dim 16" "$work/info" && ok || bad "info hyperparameters"
grep -q "vocab 300" "$work/info" && ok || bad "info vocab"
grep -q "output separate" "$work/info" && ok || bad "info untied output"
grep -qE "blk.2.ffn_down.weight +bf16 +\[128, 64\] +16384" "$work/info" && ok || bad "info tensor row"
grep -q "300 tokens" "$work/info" && ok || bad "info tokenizer summary"
# the same seed writes the same bytes; another seed does not
"$splash" model synth --preset tiny --type bf16 --layers 3 --vocab 300 --untied --seed 9 --out "$work/m2.gguf" 2>/dev/null
cmp -s "$work/m.gguf" "$work/m2.gguf" && ok || bad "synth is not deterministic for a seed"
"$splash" model synth --preset tiny --type bf16 --layers 3 --vocab 300 --untied --seed 10 --out "$work/m3.gguf" 2>/dev/null
cmp -s "$work/m.gguf" "$work/m3.gguf" && bad "different seeds wrote the same file" || ok
# the thread count does not change the weights
"$splash" model synth --preset tiny --type bf16 --layers 3 --vocab 300 --untied --seed 9 --threads 1 --out "$work/m4.gguf" 2>/dev/null
cmp -s "$work/m.gguf" "$work/m4.gguf" && ok || bad "synth depends on the thread count"

# run: the built-in model (the trained demo, which may end a text early:
# --ignore-eos), greedy is deterministic, seeded sampling too
expect_ok "$splash" run --max-tokens 16 --ignore-eos "Hello"
grep -q "decode: 16 tokens" "$work/err" && ok || bad "run did not report 16 decoded tokens: $(cat "$work/err")"
"$splash" run --model "$work/m.gguf" --max-tokens 24 --ignore-eos --temperature 0 --ids-out "$work/g1" hi >/dev/null 2>&1
"$splash" run --model "$work/m.gguf" --max-tokens 24 --ignore-eos --temperature 0 --ids-out "$work/g2" --threads 1 hi >/dev/null 2>&1
cmp -s "$work/g1" "$work/g2" && [ "$(wc -w <"$work/g1")" -eq 24 ] && ok || bad "greedy run differs across thread counts"
"$splash" run --model "$work/m.gguf" --max-tokens 24 --ignore-eos --temperature 1 --seed 5 --ids-out "$work/s1" hi >/dev/null 2>&1
"$splash" run --model "$work/m.gguf" --max-tokens 24 --ignore-eos --temperature 1 --seed 5 --ids-out "$work/s2" hi >/dev/null 2>&1
"$splash" run --model "$work/m.gguf" --max-tokens 24 --ignore-eos --temperature 1 --seed 6 --ids-out "$work/s3" hi >/dev/null 2>&1
cmp -s "$work/s1" "$work/s2" && ok || bad "seeded sampling is not reproducible"
cmp -s "$work/s1" "$work/s3" && bad "different seeds sampled the same 24 tokens" || ok
expect_error 1 "id 300 is outside the vocabulary" -- "$splash" run --model "$work/m.gguf" --prompt-ids 1,300
expect_error 1 "exceeds the model's context" -- "$splash" run --model "$work/m.gguf" --max-tokens 9999 hi
# a missing built-in model is named with how to get it (copy the binary alone)
mkdir -p "$work/bin" && cp "$splash" "$work/bin/splash"
expect_error 1 "built-in model .* is missing" -- "$work/bin/splash" run hi

# tokenize / detokenize on a synthetic model's byte-level vocabulary (the
# built-in model's BPE is checked by tests/demo), template on the built-in model
bytes="$work/bytes.gguf"
"$splash" model synth --preset tiny --type f32 --out "$bytes" 2>/dev/null
expect_ok "$splash" tokenize --help
expect_ok "$splash" detokenize --help
expect_ok "$splash" template --help
[ "$("$splash" tokenize --model "$bytes" "hi<|im_end|>" 2>&1)" = "104 105 258" ] && ok || bad "tokenize on the built-in model"
[ "$("$splash" tokenize --model "$bytes" --no-parse-special "<|" 2>&1)" = "60 124" ] && ok || bad "tokenize --no-parse-special"
[ "$("$splash" detokenize --model "$bytes" 104,105,258 2>&1)" = "hi<|im_end|>" ] && ok || bad "detokenize ids"
out=$(printf '"a\\u00e9"\n[1,2]\n\n' | "$splash" tokenize --model "$bytes" --jsonl 2>&1)
[ "$(printf '%s\n' "$out" | wc -l)" -eq 3 ] && [ "$(printf '%s\n' "$out" | head -1)" = "[97,195,169]" ] &&
    printf '%s\n' "$out" | sed -n 2p | grep -q '"error"' && ok || bad "tokenize --jsonl: $out"
[ "$(printf '[97,255]\n' | "$splash" detokenize --model "$bytes" --jsonl 2>&1)" = "$(printf '"a\357\277\275"')" ] && ok || bad "detokenize --jsonl lossy"
out=$(printf '{"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":true}\n' | "$splash" template --jsonl 2>/dev/null)
[ "$out" = '"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"' ] && ok || bad "template --jsonl: $out"
expect_error 2 "exactly one of TEXT, --jsonl or --bench" -- "$splash" tokenize
expect_error 2 "IDS: .* is not a comma-separated" -- "$splash" detokenize 1,x
expect_error 1 "token id 9999 is outside the vocabulary" -- "$splash" detokenize --model "$bytes" 9999

# model convert: the type changes, the tokenizer and metadata stay; bad input named
expect_ok "$splash" model convert --in "$bytes" --type q8_0 --out "$work/conv.gguf"
"$splash" model info --no-hash "$work/conv.gguf" >"$work/info" 2>&1
grep -q "weight types: *f32 x9 (0.0 MiB) q8_0 x16" "$work/info" && grep -q "512 tokens" "$work/info" && ok ||
    bad "convert: $(head -12 "$work/info")"
expect_error 2 "--type 'q3_x' is not one of" -- "$splash" model convert --in "$bytes" --type q3_x --out "$work/x.gguf"
expect_error 2 "--in, --type and --out are required" -- "$splash" model convert --in "$bytes" --type f16
expect_error 1 "not a multiple of the q4_k block size 256" -- "$splash" model convert --in "$bytes" --type q4_k --out "$work/x.gguf"

# perplexity: a figure for a random model near its vocabulary size; bad flags named
printf 'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.\n%.0s' 1 2 3 4 5 6 >"$work/text.txt"
"$splash" perplexity --model "$bytes" --file "$work/text.txt" --ctx 64 --stride 32 >"$work/ppl" 2>/dev/null
n=$(($(wc -c <"$work/text.txt") - 1)) # bytes = tokens here; all but the first are scored
awk -v n=$n '$1 == "perplexity" && $2 > 100 && $2 < 5000 && $6 == n && $8 == n { ok = 1 } END { exit !ok }' "$work/ppl" && ok ||
    bad "perplexity line: $(cat "$work/ppl")"
# convert keeps the weights: F16 -> F16 and F16 -> F32 score exactly as the source
# (on the f32 path: the bfloat16 one, AVX-512 BF16 CPUs, rounds F16 batches only)
export SPLASH_BF16_ROWS=off
"$splash" model synth --preset tiny --type f16 --seed 3 --out "$work/h.gguf" 2>/dev/null
"$splash" model convert --in "$work/h.gguf" --type f16 --out "$work/h16.gguf" 2>/dev/null
"$splash" model convert --in "$work/h.gguf" --type f32 --out "$work/h32.gguf" 2>/dev/null
p0=$("$splash" perplexity --model "$work/h.gguf" --file "$work/text.txt" --ctx 64 2>/dev/null)
p16=$("$splash" perplexity --model "$work/h16.gguf" --file "$work/text.txt" --ctx 64 2>/dev/null)
p32=$("$splash" perplexity --model "$work/h32.gguf" --file "$work/text.txt" --ctx 64 2>/dev/null)
[ -n "$p0" ] && [ "$p0" = "$p16" ] && [ "$p0" = "$p32" ] && ok || bad "convert changed the model: '$p0' / '$p16' / '$p32'"
unset SPLASH_BF16_ROWS
expect_ok "$splash" perplexity --help
# --kv-type: the built-in model (heads of 32) scores the text within 1 % of
# its f32-cache figure with q8_0 keys and values; 16-wide heads refuse q8_0
pf32=$("$splash" perplexity --file "$work/text.txt" --ctx 64 --kv-type f32 2>/dev/null | awk '{ print $2 }')
pq8=$("$splash" perplexity --file "$work/text.txt" --ctx 64 --kv-type q8_0 2>/dev/null | awk '{ print $2 }')
awk -v a="$pf32" -v b="$pq8" 'BEGIN { exit !(a > 1 && b > 1 && b / a < 1.01 && a / b < 1.01) }' && ok ||
    bad "perplexity f32 '$pf32' vs q8_0 '$pq8'"
expect_error 1 "kv-type q8_0 needs a head_dim that is a multiple of 32 \\(this model's is 16\\)" -- \
    "$splash" perplexity --model "$work/h.gguf" --file "$work/text.txt" --kv-type q8_0
expect_error 2 "--kv-type must be f32, f16 or q8_0, not 'q4'" -- "$splash" perplexity --file "$work/text.txt" --kv-type q4
expect_error 2 "--file TEXT is required" -- "$splash" perplexity --model "$bytes"
expect_error 2 "--stride 100 exceeds --ctx 64" -- "$splash" perplexity --model "$bytes" --file "$work/text.txt" --ctx 64 --stride 100
expect_error 1 "--ctx 8192 exceeds the model's context length 4096" -- "$splash" perplexity --model "$bytes" --file "$work/text.txt" --ctx 8192

# perf: a tiny run, JSON that parses, errors on bad flags
expect_ok "$splash" perf --help
"$splash" perf --pp 8 --tg 4 --reps 1 --threads 1,2 --json >"$work/perf.json" 2>/dev/null &&
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["results"];
assert [x["threads"] for x in r]==[1,2] and all(x["tg_tokens_per_s"]>0 and x["pp_tokens_per_s"]>0 and x["probe_read_gbs"]>0 for x in r)
# a probe beside each decode run (before it, and after the last), each run set against them
assert all(len(x["probe_runs"])==2 and min(x["probe_runs"])>0 and x["tg_fraction_of_probe"]>0 for x in r)
# and beside each probe with two threads, their round trip (0 where the partner did not answer in time)
assert r[0]["core_round_trip_ns"] is None and r[0]["core_round_trip_runs"]==[], r[0]
t2=r[1]; assert len(t2["core_round_trip_runs"])==2 and min(t2["core_round_trip_runs"])>=0, t2
assert t2["core_round_trip_ns"] is None or t2["core_round_trip_ns"]>0, t2
# how decode streams the weights: each kind named on AVX-512, null below it
p=d["decode_prefetch"]; modes={"none","burst","spread","l2"}
assert p is None or (set(p)=={"q8_0","k_quants","bf16_rows"} and set(p.values())<=modes)
# and the tiles of several rows: Q8_0 never in the passes mode of the K-quants
b=d["rows_prefetch"]; assert (b is None) == (p is None), b
assert b is None or (set(b)=={"q8_0","k_quants"} and b["q8_0"] in modes|{"nta"} and b["k_quants"] in modes|{"nta","passes"}), b
# and where attention prefetches its keys and values, with the AVX-512 path
assert (p is None) == (d["attention_prefetch"] is None) and d["attention_prefetch"] in (None, "l1", "l2")
# where the decode reps time went: the phases and the rest add up to a token; no recurrent layers in qwen3
for x in r:
    ph=x["tg_phases"]; parts=ph["weights_ms"]+ph["quantize_ms"]+ph["attention_ms"]+ph["recurrent_ms"]+ph["rest_ms"]
    assert ph["ms_per_token"]>0 and ph["weights_ms"]>0 and ph["attention_ms"]>0 and ph["recurrent_ms"]==0, ph
    assert abs(parts-ph["ms_per_token"])<=1e-3*ph["ms_per_token"]+1e-4 and ph["weights_gbs"]>0, ph' \
    "$work/perf.json" && ok || bad "perf --json: $(head -c 300 "$work/perf.json")"
SPLASH_DECODE_PREFETCH=none SPLASH_ATTN_PREFETCH=l1 "$splash" perf --pp 0 --tg 2 --reps 1 --threads 1 --json \
    >"$work/perf.json" 2>/dev/null &&
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["decode_prefetch"]
assert p is None or (set(p.values())=={"none"} and d["attention_prefetch"]=="l1")
b=d["rows_prefetch"]; assert b is None or b["k_quants"]=="none" or (b["k_quants"]=="l2" and b["q8_0"]=="l2"), b' \
    "$work/perf.json" && ok || bad "SPLASH_DECODE_PREFETCH=none: $(head -c 300 "$work/perf.json")"
"$splash" perf --pp 8 --tg 0 --reps 1 --threads 1 --json >"$work/perf.json" 2>/dev/null &&
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]
assert r["probe_read_gbs"]>0 and r["probe_runs"]==[] and r["tg_fraction_of_probe"]==0 and r["tg_phases"] is None' \
    "$work/perf.json" && ok || bad "perf --tg 0 --json: $(head -c 300 "$work/perf.json")"
# --concurrency: every rep runs every level; a level's ratio is each rep's
# run over the same rep's run of one sequence, their median and range
"$splash" perf --concurrency 2,1 --tg 32 --reps 3 --threads 1 --json >"$work/perf.json" 2>/dev/null &&
    /usr/bin/python3 -c 'import json,sys,statistics as st; r=json.load(open(sys.argv[1]))["results"]
assert [x["seqs"] for x in r]==[2,1] and all(len(x["runs"])==3 and min(x["runs"])>0 for x in r)
two,one=r
want=[a/b for a,b in zip(two["runs"],one["runs"])]
assert all(abs(a-b)<1e-3 for a,b in zip(two["vs_one_runs"],want)), (two, want)
assert abs(two["vs_one"]-st.median(want))<1e-3 and abs(two["vs_one_min"]-min(want))<1e-3 and abs(two["vs_one_max"]-max(want))<1e-3
assert one["vs_one_runs"]==[1,1,1] and one["vs_one"]==1
# one thread: no round trip between threads to measure
assert all(x["core_round_trip_runs"]==[] for x in r)
# the time of each level by phase: shares of the runs wall time that add up to one
for x in r:
    ph=x["phases"]; parts=ph["weights_share"]+ph["quantize_share"]+ph["attention_share"]+ph["recurrent_share"]+ph["rest_share"]
    assert ph["ms_per_token"]>0 and ph["weights_share"]>0 and ph["recurrent_share"]==0 and abs(parts-1)<1e-3, ph' \
    "$work/perf.json" && ok || bad "perf --concurrency --json: $(head -c 400 "$work/perf.json")"
# --concurrency with a request's sampling fields: named in the report
"$splash" perf --concurrency 1 --tg 4 --reps 1 --threads 1 --temperature 0.7 --top-k 20 --top-p 0.8 --json \
    >"$work/perf.json" 2>/dev/null &&
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
assert r["sampling"]=="temperature 0.7, top_k 20, top_p 0.8" and r["results"][0]["decode_tokens_per_s"]>0, r' \
    "$work/perf.json" && ok || bad "perf --concurrency --temperature: $(head -c 300 "$work/perf.json")"
# --concurrency with the engine's element types: used and named
"$splash" perf --concurrency 1 --tg 4 --reps 1 --threads 1 --kv-type q8_0 --json >"$work/perf.json" 2>/dev/null &&
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
assert r["kv_type"]=="q8_0" and r["state_type"]=="f32" and r["results"][0]["decode_tokens_per_s"]>0, r' \
    "$work/perf.json" && ok || bad "perf --concurrency --kv-type: $(head -c 300 "$work/perf.json")"
expect_error 2 "--concurrency measures one thread count" -- "$splash" perf --concurrency 1 --threads 1,2
expect_error 2 "--pp and --depth are the single-stream tests'" -- "$splash" perf --concurrency 1 --pp 64
expect_error 2 "--pp and --depth are the single-stream tests'" -- "$splash" perf --concurrency 1 --depth 64
expect_error 2 "need --concurrency" -- "$splash" perf --temperature 0.7
expect_error 2 "need --temperature above 0" -- "$splash" perf --concurrency 1 --top-k 20
expect_error 2 "--top-p: 1.5 is out of range" -- "$splash" perf --concurrency 1 --temperature 1 --top-p 1.5
expect_error 2 "--pp and --tg are both 0" -- "$splash" perf --pp 0 --tg 0
# --depth moves both tests, as llama-bench's -d: "pp8 @ d100", "tg2 @ d100"
"$splash" perf --pp 8 --tg 2 --depth 100 --reps 1 --threads 1 >"$work/out" 2>"$work/err" &&
    grep -q "| 1 | pp8 @ d100 | " "$work/out" && grep -q "| 1 | tg2 @ d100 | " "$work/out" &&
    grep -q "^Where a decode token's time goes" "$work/out" && ok ||
    bad "perf --depth labels: $(head -c 300 "$work/out") $(head -c 300 "$work/err")"
expect_error 2 "--depth \+ --pp or --depth \+ --tg exceed the model's context \(2048\)" -- \
    "$splash" perf --pp 8 --tg 0 --depth 2041
expect_error 2 "--threads: 0 is out of range" -- "$splash" perf --threads 0
SPLASH_CPU=pentium "$splash" perf --tg 1 --pp 0 >/dev/null 2>"$work/err"; [ $? -eq 2 ] && grep -q "SPLASH_CPU must be" "$work/err" && ok || bad "bad SPLASH_CPU accepted"

# qwen35 (Qwen3.5 hybrid): synth, info shows the layer pattern, convert keeps
# the f32 tensors f32; run, perf and perplexity compute; speculative decoding
# (as the target or as the draft model) refuses in one line
q35="$work/q35.gguf"
expect_ok "$splash" model synth --preset qwen35-tiny --type q8_0 --out "$q35"
"$splash" model info --no-hash "$q35" >"$work/info" 2>&1
grep -q "architecture:  qwen35" "$work/info" &&
    grep -q "layers: 4 (3 Gated DeltaNet, 1 full attention: 3), NextN/MTP layers: 1" "$work/info" &&
    grep -q "Gated DeltaNet: 8 key heads x 32, 8 value heads x 32 (inner 256), conv kernel 4" "$work/info" &&
    grep -qE "blk.0.ssm_conv1d.weight +f32 +\[4, 768\]" "$work/info" && ok || bad "qwen35 info: $(head -c 600 "$work/info")"
"$splash" run --model "$q35" --prompt-ids 1,2,3,4,5 --max-tokens 6 --temperature 0 --ignore-eos \
    --ids-out "$work/q35-ids.txt" >/dev/null 2>"$work/err" &&
    [ "$(wc -w <"$work/q35-ids.txt")" -eq 6 ] && ok || bad "qwen35 run: $(head -c 300 "$work/err")"
expect_ok "$splash" perf --model "$q35" --pp 8 --tg 4 --reps 1
# --depth on a hybrid model: the recurrent state is brought there by a
# prefill each rep (it cannot jump as a KV cache can), in batches of 512
# (the prefill at depth too: each rep's fill reaches 600 before its pp8)
"$splash" perf --model "$q35" --pp 8 --tg 2 --depth 600 --reps 2 --threads 1 >"$work/out" 2>"$work/err" &&
    grep -q "| 1 | pp8 @ d600 | " "$work/out" && grep -q "| 1 | tg2 @ d600 | " "$work/out" && ok ||
    bad "qwen35 perf --depth: $(head -c 300 "$work/out") $(head -c 300 "$work/err")"
# perf's bytes a decode token reads: every tensor of the file but the NextN
# block's (blk.4, which only the MTP drafter runs), with one row of the tied
# embedding table counted twice (the lookup and the LM head); raw sizes with
# packing off. The recurrent state a sequence (3 GDN layers, conv 3 x 768 and
# 8 heads x 32 x 32, f32) is reported beside it.
"$splash" model info --no-hash "$q35" >"$work/info" 2>&1
SPLASH_PREPACK=0 "$splash" perf --model "$q35" --pp 0 --tg 2 --reps 1 --threads 1 --json >"$work/perf.json" 2>/dev/null &&
    /usr/bin/python3 -c 'import json,re,sys
tot=emb_row=0
for l in open(sys.argv[2]):
    m=re.match(r"^  (blk\.\d+\S*|token_embd\S*|output\S*)\s+\S+\s+\[([^\]]*)\]\s+(\d+)$", l)
    if m and not m.group(1).startswith("blk.4."):
        tot+=int(m.group(3))
        if m.group(1)=="token_embd.weight":
            emb_row=int(m.group(3))//int(m.group(2).split(",")[1])
d=json.load(open(sys.argv[1]))
assert d["weight_bytes_per_token"]==tot+emb_row, (d["weight_bytes_per_token"], tot, emb_row)
assert d["state_bytes_per_sequence"]>=3*(3*768+8*32*32)*4, d["state_bytes_per_sequence"]' \
    "$work/perf.json" "$work/info" && ok || bad "qwen35 perf bytes: $(head -c 300 "$work/perf.json")"
# and the other bytes a decode token moves: the recurrent state read and
# written, and the attention layer's keys and values read at the mean
# position (1.5 for tg 2, 2.5 for tg 4: the difference is one token's KV)
"$splash" perf --model "$q35" --pp 0 --tg 4 --reps 1 --threads 1 --json >"$work/perf4.json" 2>/dev/null &&
    /usr/bin/python3 -c 'import json,sys
d2,d4=(json.load(open(f)) for f in sys.argv[1:3])
kv=d4["other_bytes_per_token"]-d2["other_bytes_per_token"]
assert kv>0 and abs(d2["other_bytes_per_token"]-(2*d2["state_bytes_per_sequence"]+1.5*kv))<=1, (d2, kv)
r=d4["results"][0]
assert r["tg_all_fraction_of_probe"]>r["tg_fraction_of_probe"]>0 and r["tg_all_gbs"]>r["tg_weight_gbs"], r
assert r["tg_phases"]["recurrent_ms"]>0 and r["tg_phases"]["attention_ms"]>0, r' \
    "$work/perf.json" "$work/perf4.json" && ok || bad "qwen35 perf other bytes: $(head -c 400 "$work/perf4.json")"
expect_ok "$splash" perplexity --model "$q35" --file "$work/text.txt" --ctx 64 --stride 32
# speculation on the hybrid model (state rollback): the same ids with each drafter
for d in ngram mtp; do
    "$splash" run --model "$q35" --prompt-ids 1,2,3,1,2,3,1,2 --max-tokens 24 --temperature 0 --ignore-eos \
        --draft "$d" --ids-out "$work/q35-ids-$d.txt" >/dev/null 2>"$work/err" &&
        "$splash" run --model "$q35" --prompt-ids 1,2,3,1,2,3,1,2 --max-tokens 24 --temperature 0 --ignore-eos \
            --ids-out "$work/q35-ids-none.txt" >/dev/null 2>&1 &&
        cmp -s "$work/q35-ids-$d.txt" "$work/q35-ids-none.txt" && ok || bad "qwen35 --draft $d: $(head -c 300 "$work/err")"
done
expect_error 1 "a hybrid \(qwen35\) draft model is not supported" -- "$splash" run --draft "$q35" hi
# a qwen35 file without a full-attention main layer keeps no KV (it crashed the memory plan once)
"$splash" model synth --preset qwen35-tiny --layers 3 --type f32 --out "$work/q35-gdn-only.gguf" >/dev/null 2>&1
expect_ok "$splash" run --model "$work/q35-gdn-only.gguf" --max-tokens 8 --temperature 0 --draft mtp hi
expect_error 1 "draft mtp: the model \(qwen3\) has no MTP \(NextN\) block" -- "$splash" run --draft mtp hi
expect_ok "$splash" model convert --in "$q35" --type f16 --out "$work/q35-f16.gguf"
"$splash" model info --no-hash "$work/q35-f16.gguf" >"$work/info" 2>&1
grep -qE "blk.0.ssm_conv1d.weight +f32" "$work/info" && grep -qE "blk.0.ssm_a +f32" "$work/info" &&
    grep -qE "blk.0.ssm_alpha.weight +f16" "$work/info" && grep -q "layers: 4 (3 Gated DeltaNet" "$work/info" &&
    ok || bad "qwen35 convert: $(grep -E 'ssm_conv1d|ssm_a |architecture' "$work/info" | head -c 600)"
# llama.cpp's Q4_K_M mix on qwen35 (rows of 256): converting the f32 file and
# synthesising directly give the same table; 5 blocks: attn_qkv / attn_v /
# ffn_down in Q6_K in blocks 2 and 4, the tied embedding Q6_K, ssm_conv1d f32
k35=(--preset qwen35-tiny --hidden 256 --ffn 512)
"$splash" model synth "${k35[@]}" --type f32 --out "$work/k35.gguf" 2>/dev/null
"$splash" model synth "${k35[@]}" --type q4_k_m --out "$work/k35-syn.gguf" 2>/dev/null
expect_ok "$splash" model convert --in "$work/k35.gguf" --type q4_k_m --out "$work/k35-conv.gguf"
for f in syn conv; do
    "$splash" model info --no-hash "$work/k35-$f.gguf" | awk '$1 ~ /^(blk|token_embd|output)/ {print $1, $2}' >"$work/k35-$f.types"
done
grep -qx "blk.2.attn_qkv.weight q6_k" "$work/k35-conv.types" && grep -qx "blk.1.attn_qkv.weight q4_k" "$work/k35-conv.types" &&
    grep -qx "blk.4.attn_v.weight q6_k" "$work/k35-conv.types" && grep -qx "blk.3.attn_v.weight q4_k" "$work/k35-conv.types" &&
    grep -qx "blk.2.ffn_down.weight q6_k" "$work/k35-conv.types" && grep -qx "token_embd.weight q6_k" "$work/k35-conv.types" &&
    grep -qx "blk.0.ssm_conv1d.weight f32" "$work/k35-conv.types" && grep -qx "blk.0.ssm_alpha.weight q4_k" "$work/k35-conv.types" &&
    cmp -s "$work/k35-syn.types" "$work/k35-conv.types" && ok || bad "qwen35 q4_k_m: $(diff "$work/k35-syn.types" "$work/k35-conv.types" | head -5; head -c 400 "$work/k35-conv.types")"
expect_ok "$splash" run --model "$work/k35-conv.gguf" --prompt-ids 1,2,3 --max-tokens 4 --temperature 0
expect_error 1 "blk.0.attn_qkv.weight: row width 128 .* falls back to q5_0" -- \
    "$splash" model convert --in "$q35" --type q4_k_m --out "$work/x.gguf"
# llama.cpp's Q5_K_M mix (general.file_type 17): the same rule on a Q5_K base.
# The tiny preset with rows of 256, 2 blocks: use_more_bits picks block 1 only
# (7n/8 = 1), so attn_v and ffn_down are Q6_K there and Q5_K in block 0; the
# untied output Q6_K, the embedding and every other matrix Q5_K. Synthesised
# and converted from f32 alike.
k5=(--preset tiny --hidden 256 --ffn 512 --heads 4 --kv-heads 2 --head-dim 64)
"$splash" model synth "${k5[@]}" --type f32 --out "$work/k5.gguf" 2>/dev/null
expect_ok "$splash" model synth "${k5[@]}" --type q5_k_m --out "$work/k5-syn.gguf"
expect_ok "$splash" model convert --in "$work/k5.gguf" --type q5_k_m --out "$work/k5-conv.gguf"
for f in syn conv; do
    "$splash" model info --no-hash "$work/k5-$f.gguf" >"$work/k5-$f.info" 2>&1
    awk '$1 ~ /^(blk|token_embd|output)/ {print $1, $2}' "$work/k5-$f.info" >"$work/k5-$f.types"
done
grep -qE "general.file_type +u32 +17$" "$work/k5-syn.info" && grep -qE "general.file_type +u32 +17$" "$work/k5-conv.info" &&
    grep -qE "weight types: +f32 x9 .* q5_k x13 .* q6_k x3 " "$work/k5-conv.info" &&
    grep -qx "blk.0.attn_v.weight q5_k" "$work/k5-conv.types" && grep -qx "blk.1.attn_v.weight q6_k" "$work/k5-conv.types" &&
    grep -qx "blk.0.ffn_down.weight q5_k" "$work/k5-conv.types" && grep -qx "blk.1.ffn_down.weight q6_k" "$work/k5-conv.types" &&
    grep -qx "blk.1.attn_q.weight q5_k" "$work/k5-conv.types" && grep -qx "output.weight q6_k" "$work/k5-conv.types" &&
    grep -qx "token_embd.weight q5_k" "$work/k5-conv.types" && grep -qx "blk.0.attn_norm.weight f32" "$work/k5-conv.types" &&
    cmp -s "$work/k5-syn.types" "$work/k5-conv.types" && ok || bad "q5_k_m: $(diff "$work/k5-syn.types" "$work/k5-conv.types" | head -5; grep -E 'file_type|weight types' "$work/k5-conv.info")"
expect_ok "$splash" run --model "$work/k5-conv.gguf" --prompt-ids 1,2,3 --max-tokens 4 --temperature 0
expect_error 1 "token_embd.weight: row width 64 .* q5_k block size 256, and llama.cpp's Q5_K_M falls back to q5_1" -- \
    "$splash" model convert --in "$bytes" --type q5_k_m --out "$work/x.gguf"
# and on qwen35: blocks 2 and 4 (the NextN block) in Q6_K as for Q4_K_M, Q5_K elsewhere
expect_ok "$splash" model convert --in "$work/k35.gguf" --type q5_k_m --out "$work/k35-q5.gguf"
"$splash" model info --no-hash "$work/k35-q5.gguf" | awk '$1 ~ /^(blk|token_embd|output)/ {print $1, $2}' >"$work/k35-q5.types"
grep -qx "blk.2.attn_qkv.weight q6_k" "$work/k35-q5.types" && grep -qx "blk.1.attn_qkv.weight q5_k" "$work/k35-q5.types" &&
    grep -qx "blk.4.attn_v.weight q6_k" "$work/k35-q5.types" && grep -qx "blk.3.attn_v.weight q5_k" "$work/k35-q5.types" &&
    grep -qx "blk.2.ffn_down.weight q6_k" "$work/k35-q5.types" && grep -qx "token_embd.weight q6_k" "$work/k35-q5.types" &&
    grep -qx "blk.0.ssm_conv1d.weight f32" "$work/k35-q5.types" && grep -qx "blk.0.ssm_alpha.weight q5_k" "$work/k35-q5.types" &&
    ok || bad "qwen35 q5_k_m: $(head -c 400 "$work/k35-q5.types")"
expect_error 2 "--nextn applies to the qwen35 presets only" -- "$splash" model synth --out "$work/x.gguf" --nextn 1
expect_error 2 "ssm-v-heads 12 must be a multiple of ssm-groups 8" -- \
    "$splash" model synth --preset qwen35-tiny --out "$work/x.gguf" --ssm-v-heads 12

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
