#!/usr/bin/env python3
"""splash bench against the real `splash serve` (and a stub server), one
part per CTest test (label bench):

  faults  each serve fault knob makes the run invalid with the right reason
  stub    a server without /status: bench runs, status checks unverifiable
  strict-json  the strict-json probes: against the real server every output
          valid and the arms identical; against stub servers a non-JSON
          output, a schema violation and differing outputs each make the run
          invalid with its reason, and a server without a grammar object in
          /status is refused
  cached  the cached scenario against the real server: exact reuse per
          pair, full and partial continuations told apart, cached TTFT
          metrics; a cache shared across salts and a disabled cache each
          make the run invalid with their reason
  sessions  concurrent multi-turn conversations against the real server:
          each later turn reuses exactly its previous prompt's whole blocks,
          one salt per conversation, per-replica tallies by x-splash-replica;
          a server that reuses nothing is valid at 0 % cached
  html    the HTML report in headless Chromium (DevTools protocol on a pipe,
          cdp_page.py): no console errors, the environment table, drawn
          charts for every metric, each validity reason's links resolving to
          the request rows it names; a tampered copy shows CSP errors
  trace   --trace: captures validated and attached, verdict diagnostic; a URL
          arm and a server that cannot trace refused
  llama   a third-party arm in llama.cpp's llama-server dialect (a stub: CI has
          no llama.cpp) against the real server: the run completes and is
          valid, the /status checks are unverifiable (never invalid), cached
          tokens are read from its usage (or timings.cache_n), its prompts are
          kept uncached with cache_prompt false, and a candidate faster than
          an unverifiable baseline is never a gain (rule 4)

usage: test_bench.py PART --splash BIN --model M.gguf --dir WORKDIR

No part decides anything from wall time: the A/A and injected-slowdown
protocols, whose verdicts depend on the machine's load, are a benchmark
(bench/verdicts.sh) with figures in docs/benchmarks.md.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

EXIT = {0: "no change", 10: "gain", 11: "regression", 12: "inconclusive", 13: "invalid"}
# every server gets one kernel thread: two resident servers on a small
# machine must not fight over cores; a short prefill chunk makes a long
# prefill take many steps, so /status can watch it advance
SERVER = "--threads 1 --prefill-chunk 16"

def bench(a, name, extra, expect_codes=None):
    out = os.path.join(a.dir, name)
    cmd = [a.splash, "bench", "--model", a.model, "--server-args", SERVER, "--work-dir", out, "--quiet"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    rep = None
    path = os.path.join(out, "report.json")
    if os.path.exists(path):
        with open(path) as f:
            rep = json.load(f)
    if expect_codes is not None and p.returncode not in expect_codes:
        sys.stdout.write(p.stdout + p.stderr)
        raise SystemExit(f"{name}: exit {p.returncode}, expected one of {expect_codes}")
    return p, rep


def reasons(rep):
    return rep["validity"]["reasons"]


def expect_invalid(a, name, extra, pattern):
    p, rep = bench(a, name, extra, expect_codes=(13,))
    rs = reasons(rep)
    if not any(re.search(pattern, r) for r in rs):
        raise SystemExit(f"{name}: invalid, but no reason matches /{pattern}/: {rs}")
    print(f"{name}: invalid (exit 13): {next(r for r in rs if re.search(pattern, r))}")


def part_faults(a):
    quick = ["--serial-prompt-tokens", "32", "--serial-repeat", "2", "--max-tokens", "8", "--warmup", "1"]
    # identical prompts under fresh salts: a shared cache shows cached tokens
    expect_invalid(a, "fault-salt", ["--workload", "serial"] + quick + ["--candidate-args", "--test-ignore-cache-salt"],
                   r"cached tokens \d+ > 0")
    expect_invalid(a, "fault-truncate", ["--workload", "serial"] + quick + ["--candidate-args", "--test-truncate-output"],
                   r"output budget not met")
    mixed = ["--workload", "mixed", "--mixed-repeat", "1", "--mixed-long-prompt", "256", "--mixed-decode-tokens", "96",
             "--mixed-shorts", "1", "--poll-ms", "2", "--warmup", "1"]
    expect_invalid(a, "fault-serialize", mixed + ["--candidate-args", "--test-serialize-prefill"],
                   r"overlap not proven")
    # the knob is what breaks it: the same mixed run without it is valid
    p, rep = bench(a, "fault-none", mixed, expect_codes=(0, 10, 11, 12))
    assert rep["validity"]["valid"], reasons(rep)
    assert all(s["mixed"]["overlap"] == "proven" for s in rep["slots"])
    # a declared policy that /status does not report
    expect_invalid(a, "fault-policy", ["--workload", "serial"] + quick + ["--candidate-verify-rows", "all"],
                   r"policy mismatch")
    # auto runs whatever width its fitter picks (all, N, 0): declared auto is
    # valid whatever /status reports as effective; declared all is not
    spec = ["--candidate-args", "--draft ngram --verify-rows auto"]
    p, rep = bench(a, "policy-auto", ["--workload", "serial", "--serial-prompt-tokens", "32", "--serial-repeat", "2",
                                      "--max-tokens", "64", "--warmup", "1", "--warmup-tokens", "64",
                                      "--serial-temperature", "0.8", "--candidate-verify-rows", "auto"] + spec,
                   expect_codes=(0, 10, 11, 12))
    assert rep["validity"]["valid"], reasons(rep)
    assert rep["config"]["serial_temperature"] == 0.8 and rep["config"]["warmup_tokens"] == 64
    expect_invalid(a, "fault-policy-auto", ["--workload", "serial"] + quick + ["--candidate-verify-rows", "all"] + spec,
                   r"policy mismatch")
    # a CPU list is checked where it enters
    for bad, why in (("x", "not a CPU list"), ("3-1", "not a CPU list"), ("0,", "not a CPU list"),
                     (str(max(os.sched_getaffinity(0)) + 1), "not one this process may run on")):
        p = subprocess.run([a.splash, "bench", "--model", a.model, "--server-cpus", bad], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 2 and why in p.stderr, (bad, p.returncode, p.stderr)
    # --restart is checked against the residency and the arms; values where they enter
    for bad, why in ((["--restart", "sometimes"], "is not round or never"),
                     (["--restart", "never", "--residency", "sequential"], "is for paired residency"),
                     (["--restart", "round", "--candidate-url", "http://127.0.0.1:9"], "a URL arm's server cannot be"),
                     (["--serial-temperature", "-1"], "out of range"), (["--warmup-tokens", "0"], "out of range")):
        p = subprocess.run([a.splash, "bench", "--model", a.model] + bad, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and why in p.stderr, (bad, p.returncode, p.stderr)
    print("faults: every knob made the run invalid with its reason; bad CPU lists and restarts refused")


def part_stub(a):
    stub = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "stub_server.py")],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = stub.stdout.readline()
        url = re.search(r"(http://\S+)", line).group(1)
        out = os.path.join(a.dir, "stub")
        p = subprocess.run([a.splash, "bench", "--baseline-url", url, "--candidate-url", url, "--work-dir", out,
                            "--quiet", "--warmup", "1", "--serial-prompt-tokens", "16", "--mixed-long-prompt", "64",
                            "--mixed-decode-tokens", "32", "--mixed-repeat", "1"],
                           capture_output=True, text=True, timeout=300)
        sys.stdout.write(p.stdout)
        if p.returncode not in EXIT or p.returncode == 13:
            raise SystemExit(f"bench against the stub: exit {p.returncode}\n{p.stderr}")
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        unv = " ".join(rep["validity"]["unverifiable"])
        for check in ("policy", "overlap", "idle"):
            assert check in unv, f"'{check}' not reported unverifiable: {unv}"
        assert "unverifiable" in rep["verdict"], rep["verdict"]
        assert all(s["mixed"]["overlap"] == "unverifiable" for s in rep["slots"])
        print(f"stub: {rep['verdict']}")
        # cached without /status: the exact reuse is unverifiable, so any
        # reuse passes (the stub's cache is token-granular), none does not
        cached = ["--warmup", "0", "--workload", "cached", "--cached-prefix-tokens", "40", "--cached-suffix-tokens",
                  "8", "--cached-pairs", "2", "--cached-max-tokens", "2", "--quiet", "--restart", "never"]
        for name, flag, codes in (("stub-cached", "", (0, 10, 11, 12)), ("stub-cached-off", " --no-cache", (13,))):
            out = os.path.join(a.dir, name)
            stub_cmd = f"{sys.executable} {STUB}{flag}"
            p = subprocess.run([a.splash, "bench", "--baseline-cmd", f"{sys.executable} {STUB}", "--candidate-cmd",
                                stub_cmd, "--work-dir", out] + cached, capture_output=True, text=True, timeout=300)
            assert p.returncode in codes, (name, p.returncode, p.stdout, p.stderr)
            with open(os.path.join(out, "report.json")) as f:
                rep = json.load(f)
            assert "cached reuse count" in " ".join(rep["validity"]["unverifiable"]), rep["validity"]
            for s in rep["slots"]:
                c = s["cached"]
                assert c["block_size"] is None and c["expected_partial"] is None, c
                if s["arm"] == "A" or not flag:
                    assert c["observed"][0] == {"cold": 0, "partial": 40, "full": 39, "partial_served_as": "partial",
                                                "full_served_as": "full"}, c
        assert any(re.search(r"cached pair 0 \(cached-partial\): the prefix cache reused 0 tokens of the 40-token "
                             r"prefix .*unverifiable without /status", r) for r in reasons(rep)), reasons(rep)
        print("stub cached: reuse > 0 required without /status (exact count unverifiable); none is invalid")
        # a URL arm's server is not bench's to pin
        p = subprocess.run([a.splash, "bench", "--baseline-url", url, "--candidate-url", url, "--server-cpus", "0"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and "cannot be pinned" in p.stderr, (p.returncode, p.stderr)
    finally:
        stub.terminate()
        stub.wait()


STUB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stub_server.py")
STRICT = ["--workload", "strict-json", "--warmup", "1", "--restart", "never"]


def stub_bench(a, name, mode_a, mode_b, extra=(), expect_codes=None):
    """bench over two stub servers it starts (/status with a grammar object)."""
    out = os.path.join(a.dir, name)
    cmd = [a.splash, "bench", "--baseline-cmd", f"{sys.executable} {STUB} --status {mode_a}",
           "--candidate-cmd", f"{sys.executable} {STUB} --status {mode_b}", "--work-dir", out, "--quiet"]
    p = subprocess.run(cmd + STRICT + list(extra), capture_output=True, text=True, timeout=300)
    rep = None
    if os.path.exists(os.path.join(out, "report.json")):
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
    if expect_codes is not None and p.returncode not in expect_codes:
        sys.stdout.write(p.stdout + p.stderr)
        raise SystemExit(f"{name}: exit {p.returncode}, expected one of {expect_codes}")
    return p, rep


def stub_invalid(a, name, mode_b, pattern, extra=()):
    p, rep = stub_bench(a, name, "--json valid", mode_b, extra, expect_codes=(13,))
    rs = reasons(rep)
    if not any(re.search(pattern, r) for r in rs):
        raise SystemExit(f"{name}: invalid, but no reason matches /{pattern}/: {rs}")
    print(f"{name}: invalid (exit 13): {next(r for r in rs if re.search(pattern, r))}")
    return rep


def part_strict_json(a):
    # the real server: constrained output of a random model, judged by bench's own validator
    # SPLASH_TEST_QUICK (the sanitizer builds): each schema once, one turn
    quick = ["--strict-json-cycles", "1"] if os.environ.get("SPLASH_TEST_QUICK") else []
    p, rep = bench(a, "sj-real", STRICT + quick, expect_codes=(0, 10, 11, 12))
    assert rep["validity"]["valid"], reasons(rep)
    sj = rep["strict_json"]
    n = rep["config"]["strict_json"]["probes"] * rep["config"]["strict_json"]["cycles"] * 2  # two slots an arm
    for arm in ("A", "B"):
        x = sj["arms"][arm]
        assert x["requests"] == n and x["valid"] + x["cut_offs"] == n and x["invalid"] == 0, x
        assert x["valid"] > 0 and x["masks"] > 0 and x["mask_ns_per_token"] > 0, x
    assert sj["compared"] and sj["identical"], sj
    assert rep["config"]["strict_json"]["schemas"] == ["person", "order", "tree"]
    for s in rep["slots"]:
        for q in s["requests"]:
            assert q["cached_tokens"] == 0 and q["json"] in ("valid", "cut off"), q
            if q["json"] == "valid":
                json.loads(q["output"])
    assert "mask_ns_per_token" in rep["statistics"]
    assert "strict-json:" in p.stdout and "outputs between A and B: identical" in p.stdout, p.stdout
    print(f"strict-json real: {sj['arms']['A']['valid']} valid, {sj['arms']['A']['cut_offs']} cut off per arm, "
          f"mask {sj['arms']['A']['mask_ns_per_token']:.0f} / {sj['arms']['B']['mask_ns_per_token']:.0f} ns per token")
    # stubs: valid output passes, with the stub's own grammar counters in the report
    p, rep = stub_bench(a, "sj-stub-valid", "--json valid", "--json valid", expect_codes=(0, 10, 11, 12))
    assert rep["validity"]["valid"], reasons(rep)
    assert rep["strict_json"]["identical"] and rep["strict_json"]["arms"]["B"]["mask_ns_per_token"] == 1500.0
    # each failure, with its reason
    stub_invalid(a, "sj-stub-not-json", "--json not-json", r"strict-json probe 0 \(person\) turn 1: not JSON")
    stub_invalid(a, "sj-stub-violate", "--json violate",
                 r"violates the schema: /extra: property 'extra' is not allowed")
    rep = stub_invalid(a, "sj-stub-variant", "--json variant", r"strict-json outputs differ between A and B")
    assert rep["strict_json"]["compared"] and not rep["strict_json"]["identical"]
    assert all(s["strict_json"]["invalid"] == 0 for s in rep["slots"])  # valid, only different
    p, rep = stub_bench(a, "sj-stub-variant-expected", "--json valid", "--json variant", ["--expect-output-change"],
                        expect_codes=(0, 10, 11, 12))
    assert rep["validity"]["valid"], reasons(rep)
    assert "differ (expected" in p.stdout, p.stdout
    # a server without a grammar object is refused, naming the arm
    p, rep = stub_bench(a, "sj-stub-old", "--json valid", "--no-grammar", expect_codes=(1,))
    assert "arm B: the strict-json workload is refused" in p.stderr, p.stderr
    # the workload name and its flags are checked where they enter
    for bad, why in ((["--workload", "strict"], "is not serial, mixed, seeded, strict-json, cached or sessions"),
                     (["--strict-json-cycles", "0"], "out of range"), (["--strict-json-tokens", "0"], "out of range")):
        p = subprocess.run([a.splash, "bench", "--model", a.model] + bad, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and why in p.stderr, (bad, p.returncode, p.stderr)
    p = subprocess.run([a.splash, "bench", "--help"], capture_output=True, text=True, timeout=60)
    assert "strict-json" in p.stdout and "--strict-json-cycles" in p.stdout
    print("strict-json: real outputs valid and identical; stub failures invalid with their reasons; old server refused")


# cached: a 100-token prefix ends mid-block (16-token blocks), so the
# partial continuation reuses 96 tokens and the fully cached one is 97 tokens
# long with only its last computed; two pairs, so a shared namespace shows on
# the second pair's cold request even when the warm-up left nothing behind
CACHED = ["--workload", "cached", "--cached-prefix-tokens", "100", "--cached-suffix-tokens", "16",
          "--cached-pairs", "2", "--cached-max-tokens", "4", "--warmup", "1"]


def part_cached(a):
    p, rep = bench(a, "cached-plain", CACHED, expect_codes=(0, 10, 11, 12))
    assert rep["validity"]["valid"], reasons(rep)
    assert rep["config"]["cached"] == {"pairs": 2, "prefix_tokens": 100, "suffix_tokens": 16, "max_tokens": 4}
    assert "cached" in rep["config"]["workloads"]
    for s in rep["slots"]:
        c = s["cached"]
        bs = c["block_size"]
        assert bs > 0, c
        whole = 100 // bs * bs
        # whole blocks of the prefix, never the last prompt token
        assert c["expected_partial"] == whole and c["expected_full"] == whole, c
        assert c["full_prompt_tokens"] == whole + 1 and c["partial_prompt_tokens"] == 116, c
        assert c["observed"] == [{"cold": 0, "partial": whole, "full": whole, "partial_served_as": "partial",
                                  "full_served_as": "full"}] * 2, c
        assert c["fully_cached"] == 2 and c["partially_cached"] == 2, c
        assert c["salt_leaks"] == 0 and c["reuse_failures"] == 0, c
        kinds = [q["kind"] for q in s["requests"]]
        assert kinds == ["cached-cold", "cached-partial", "cached-full"] * 2, kinds
        for i in range(0, 6, 3):
            cold, part, full = s["requests"][i:i + 3]
            assert cold["cache_salt"] == part["cache_salt"] == full["cache_salt"]
            assert part["prefill_rows"] == 116 - whole and full["prefill_rows"] == 1, (part, full)
            assert part["continuation"] == "partial" and full["continuation"] == "full"
        assert s["requests"][0]["cache_salt"] != s["requests"][3]["cache_salt"]  # a salt per pair
        for k in ("ttft_cold", "ttft_cached", "ttft_cached_full"):
            assert s["metrics"][k] > 0, (k, s["metrics"])
    for k in ("ttft_cold", "ttft_cached", "ttft_cached_full"):
        assert k in rep["statistics"], k
    assert rep["statistics"]["ttft_cached"]["decides"] and not rep["statistics"]["ttft_cold"]["decides"]
    assert "cached: 2 pair(s)" in p.stdout and "TTFT cached prefix" in p.stdout, p.stdout
    print(f"cached plain: valid, {whole} of 116 and {whole} of {whole + 1} tokens reused as expected; TTFT cold "
          f"{rep['statistics']['ttft_cold']['combined']['a']:.1f} ms, cached "
          f"{rep['statistics']['ttft_cached']['combined']['a']:.1f} ms, fully cached "
          f"{rep['statistics']['ttft_cached_full']['combined']['a']:.1f} ms (A)")
    # one namespace for every salt: the prefix of an earlier pair is reused cold
    expect_invalid(a, "cached-salt", CACHED + ["--candidate-args", "--test-ignore-cache-salt"],
                   r"cached pair 1 \(cached-cold\): \d+ cached tokens under a fresh cache_salt: a salt leak")
    # no reuse at all: the scenario says so
    expect_invalid(a, "cached-off", CACHED + ["--candidate-args", "--test-no-prefix-cache"],
                   r"cached pair 0 \(cached-partial\): the prefix cache reused 0 of \d+ expected tokens")
    # a prefix shorter than a block can reuse nothing: said, not measured
    expect_invalid(a, "cached-short", CACHED[:2] + ["--cached-prefix-tokens", "8", "--warmup", "0"],
                   r"the 8-token prefix does not fill one \d+-token KV block")
    # the options are checked where they enter
    for bad, why in ((["--cached-pairs", "0"], "out of range"), (["--cached-prefix-tokens", "1"], "out of range"),
                     (["--cached-suffix-tokens", "1"], "out of range"), (["--cached-max-tokens", "0"], "out of range"),
                     (["--workload", "cached", "--cached-prefix-tokens", "999999", "--cached-suffix-tokens", "999"],
                      "exceed the longest prompt")):
        p = subprocess.run([a.splash, "bench", "--model", a.model] + bad, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and why in p.stderr, (bad, p.returncode, p.stderr)
    print("cached: a shared namespace and a disabled cache each invalid with their reason; bad options refused")
SESSIONS = ["--workload", "sessions", "--sessions", "3", "--session-turns", "3", "--session-first-tokens", "40",
            "--session-turn-tokens", "24", "--session-max-tokens", "4", "--warmup", "1",
            "--decide", "session_prefill,session_ttft"]


def part_sessions(a):
    # each later turn adds 16-40 tokens, drawn per conversation and turn
    args = SESSIONS + ["--session-turn-tokens", "16-40", "--session-name", "t.bench_1"]
    p, rep = bench(a, "sessions", args + ["--baseline-args", "--replica-id a", "--candidate-args", "--replica-id b"],
                   expect_codes=(0, 10, 11, 12))
    assert rep["validity"]["valid"], reasons(rep)
    assert rep["config"]["sessions"] == {"sessions": 3, "turns": 3, "first_tokens": 40, "turn_tokens": 16,
                                         "turn_tokens_max": 40, "max_tokens": 4, "session_key": "id",
                                         "session_name": "t.bench_1", "stagger_ms": 0, "think_ms": 0}
    ids = {}  # a conversation's x-session-id is the same in every slot, its salt new in each
    salts = set()
    lens = {}  # (session, turn) -> prompt length: the same in every slot
    for s in rep["slots"]:
        for q in s["requests"]:
            assert lens.setdefault((q["session"], q["turn"]), q["prompt_tokens"]) == q["prompt_tokens"], q
    adds = [lens[(i, t)] - lens[(i, t - 1)] for i in range(3) for t in (2, 3)]
    assert all(lens[(i, 1)] == 40 for i in range(3)) and all(16 <= d <= 40 for d in adds) and len(set(adds)) > 1, lens
    for s in rep["slots"]:
        ss = s["sessions"]
        bs = ss["block_size"]
        assert bs > 0 and ss["requests"] == ss["valid"] == 9, ss
        # one server: every later turn reuses its previous prompt's whole
        # blocks (never its own last token), nothing else, and the first none
        want = {(i, t): 0 if t == 1 else min((lens[(i, t)] - 1) // bs, lens[(i, t - 1)] // bs) * bs
                for (i, t) in lens}
        by_session = {}
        for q in s["requests"]:
            assert q["kind"] == "session", q
            assert q["cached_tokens"] == want[(q["session"], q["turn"])], (q, want)
            assert q["session_id"] == f't.bench_1-conversation-{q["session"]}', q
            by_session.setdefault(q["session"], set()).add(q["cache_salt"])
            ids.setdefault(q["session"], set()).add(q["session_id"])
            # a turn's x-request-id: its conversation's id and the turn, alike in every slot
            assert q["request_id"] == f'{q["session_id"]}-turn-{q["turn"]}', q
            salts.add(q["cache_salt"])
        assert sorted(by_session) == [0, 1, 2] and all(len(v) == 1 for v in by_session.values()), by_session
        assert len(set().union(*by_session.values())) == 3, "one salt per conversation"
        assert ss["cached_tokens"] == sum(want.values()) and ss["prompt_tokens"] == sum(lens.values()), ss
        name = "a" if s["slot"][0] == "A" else "b"
        assert list(ss["replicas"]) == [name] and ss["replicas"][name]["requests"] == 9, ss["replicas"]
        assert s["metrics"]["session_prefill"] == (sum(lens.values()) - ss["cached_tokens"]) / 9, (s["metrics"], ss)
        for k in ("session_ttft", "session_throughput"):
            assert s["metrics"][k] > 0, (k, s["metrics"])
    assert all(len(v) == 1 for v in ids.values()) and len(set().union(*ids.values())) == 3, ids
    assert len(salts) == 3 * len(rep["slots"]), "a fresh salt per conversation and slot"
    assert rep["statistics"]["session_prefill"]["decides"] and not rep["statistics"]["session_throughput"]["decides"]
    assert "sessions: 3 conversations at once, 3 turns each (40 tokens, +16-40 a turn)" in p.stdout, p.stdout
    assert " a " in p.stdout, p.stdout
    print(f"sessions: valid, {rep['statistics']['session_prefill']['combined']['a']:.1f} tokens prefilled a turn (A), "
          f"each later turn reusing its previous prompt's whole blocks")
    # reuse is measured, not required: a server that reuses nothing is valid: every turn prefills all its prompt;
    # on a schedule like users': conversation i starts 150 ms x i into the slot, a turn 100 ms after the last answer
    lens = [40, 64, 88]
    p, rep = bench(a, "sessions-off", SESSIONS + ["--candidate-args", "--test-no-prefix-cache", "--session-key", "salt",
                                                  "--session-stagger-ms", "150", "--session-think-ms", "100"],
                   expect_codes=(0, 10, 11, 12))
    assert rep["validity"]["valid"], reasons(rep)
    assert rep["config"]["sessions"]["stagger_ms"] == 150 and rep["config"]["sessions"]["think_ms"] == 100
    pauses = []  # each slot's pauses between a conversation's turns: 50-150 ms, not all alike
    for s in rep["slots"]:
        turns = {(q["session"], q["turn"]): q for q in s["requests"] if q["kind"] == "session"}
        for (i, t), q in turns.items():
            if t == 1:
                assert q["submit_ms"] >= 150 * i, (s["slot"], q)
            else:
                assert q["submit_ms"] >= turns[(i, t - 1)]["end_ms"] + 50, (s["slot"], q, turns[(i, t - 1)])
        pauses.append([turns[(i, t)]["submit_ms"] - turns[(i, t - 1)]["end_ms"] for i in range(3) for t in (2, 3)])
    assert all(max(p) - min(p) > 20 for p in pauses), pauses
    assert "started 150 ms apart, 0.5-1.5 x 100 ms between an answer and the next turn" in p.stdout, p.stdout
    for s in rep["slots"]:
        assert (s["sessions"]["cached_tokens"] == 0) == (s["slot"][0] == "B"), (s["slot"], s["sessions"])
        if s["slot"][0] == "B":
            assert s["metrics"]["session_prefill"] == sum(lens) / 3, s["metrics"]
    assert rep["statistics"]["session_prefill"]["combined"]["verdict"] == "regression", rep["statistics"]["session_prefill"]
    assert rep["config"]["sessions"]["session_key"] == "salt"
    assert all(q["session_id"] is None and q["request_id"] is None for s in rep["slots"] for q in s["requests"]), \
        "--session-key salt sent an id"
    for bad, why in ((["--sessions", "0"], "out of range"), (["--session-turns", "65"], "out of range"),
                     (["--session-first-tokens", "0"], "out of range"), (["--session-key", "user"], "is not id or salt"),
                     (["--session-think-ms", "-1"], "out of range"), (["--session-stagger-ms", "600001"], "out of range"),
                     (["--session-turn-tokens", "40-16"], "high end is below its low end"),
                     (["--session-turn-tokens", "0-16"], "out of range"),
                     (["--session-turn-tokens", "-16"], "is not N or LO-HI"),
                     (["--session-name", "a/b"], "is not 1-48 letters"),
                     (["--workload", "sessions", "--session-first-tokens", "999999", "--session-turns", "64"],
                      "exceeds the longest prompt")):
        p = subprocess.run([a.splash, "bench", "--model", a.model] + bad, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and why in p.stderr, (bad, p.returncode, p.stderr)
    print("sessions: no prefix cache prefills every prompt token (a regression, still valid); bad options refused")


def start_stub(*args):
    stub = subprocess.Popen([sys.executable, STUB] + list(args), stdout=subprocess.PIPE, text=True)
    return stub, re.search(r"(http://\S+)", stub.stdout.readline()).group(1)


def post(url, path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


def part_llama(a):
    stub, url = start_stub("--llama", "--token-ms", "20")
    try:
        # the stub is a fair llama-server: without cache_prompt false its slot
        # hands back the shared prefix as cached tokens (so a bench that kept
        # only cache_salt would be invalid here), and a "prompt" tokenises to
        # nothing
        body = {"prompt": list(range(40)), "max_tokens": 2, "stream": True}
        post(url, "/v1/completions", body)
        last = [json.loads(x[6:]) for x in post(url, "/v1/completions", body).splitlines()
                if x.startswith("data: {")][-1]
        assert last["usage"]["prompt_tokens_details"]["cached_tokens"] == 39, last
        assert json.loads(post(url, "/tokenize", {"prompt": "abc"}))["tokens"] == []
        # A: llama-server (slow: 20 ms a token); B: the real splash serve
        p, rep = bench(a, "llama", ["--baseline-url", url, "--workload", "serial,mixed", "--warmup", "1",
                                    "--serial-prompt-tokens", "16", "--serial-repeat", "1", "--max-tokens", "16",
                                    "--mixed-long-prompt", "128", "--mixed-decode-tokens", "64",
                                    "--mixed-repeat", "1", "--mixed-shorts", "1", "--poll-ms", "2"],
                       expect_codes=(0, 10, 11, 12, 13))
        sys.stdout.write(p.stdout)
        assert rep["validity"]["valid"], reasons(rep)
        kinds = [x["fingerprint"]["server_kind"] for x in rep["arms"]]
        assert kinds == ["llama.cpp", "splash"], kinds
        assert rep["arms"][0]["fingerprint"]["uncached_by"] == "cache_prompt false"
        assert rep["arms"][0]["fingerprint"]["build_version"] == "b0-stub"
        unv = " ".join(rep["validity"]["unverifiable"])
        for check in ("policy", "overlap", "idle"):
            assert check in unv, f"'{check}' not reported unverifiable: {unv}"
        assert "cached tokens" not in unv, unv
        for s in rep["slots"]:
            assert s["mixed"]["overlap"] == ("unverifiable" if s["arm"] == "A" else "proven"), s["mixed"]
            for q in s["requests"]:
                assert q["cached_tokens"] == 0, q
                assert q["cached_tokens_field"] == "usage.prompt_tokens_details.cached_tokens", q
        # A's checks could not be made: never a gain, whatever the speeds
        # (which depend on the build: under ASan splash is slower than the
        # stub; the two-stub run below has B plainly faster)
        assert p.returncode != 10 and not rep["verdict"].startswith("gain"), \
            f"a gain over an arm whose checks were unverifiable (rule 4): {rep['verdict']}"
        print(f"llama: {rep['verdict']}")
    finally:
        stub.terminate()
        stub.wait()
    # older llama-servers: the cached count only in timings.cache_n; strict-json
    # judged on the outputs alone, the grammar counters unverifiable; and B
    # 4x faster than A with only throughput deciding: without rule 4 a sure
    # gain, with it (an unverifiable run is never a gain) not one
    stub_a, url_a = start_stub("--llama-old", "--token-ms", "40")
    stub_b, url_b = start_stub("--llama-old", "--token-ms", "10")
    try:
        p, rep = bench(a, "llama-old", ["--baseline-url", url_a, "--candidate-url", url_b, "--workload",
                                        "serial,strict-json", "--warmup", "1", "--serial-prompt-tokens", "16",
                                        "--serial-repeat", "1", "--max-tokens", "16", "--strict-json-cycles", "1",
                                        "--rounds", "3", "--decide", "throughput"],
                       expect_codes=(0, 10, 11, 12))
        assert rep["validity"]["valid"], reasons(rep)
        unv = " ".join(rep["validity"]["unverifiable"])
        assert "grammar counters" in unv and "cached tokens" not in unv, unv
        for s in rep["slots"]:
            for q in s["requests"]:
                assert q["cached_tokens"] == 0 and q["cached_tokens_field"] == "timings.cache_n", q
        assert all(rep["strict_json"]["arms"][x]["valid"] > 0 for x in "AB"), rep["strict_json"]
        thr = rep["statistics"]["throughput"]["combined"]
        assert thr["b"] > 2 * thr["a"], thr
        assert p.returncode != 10 and not rep["verdict"].startswith("gain"), \
            f"a gain over arms whose checks were unverifiable (rule 4): {rep['verdict']}"
        print(f"llama-old: {rep['verdict']}")
    finally:
        for x in (stub_a, stub_b):
            x.terminate()
            x.wait()


# what the page reports about itself once Chromium loaded it
PAGE_FACTS = """(() => {
  const charts = {};
  for (const s of document.querySelectorAll('svg.chart')) {
    const k = s.dataset.metric, b = s.getBBox();
    charts[k] = charts[k] || {n: 0, drawn: 0};
    charts[k].n++;
    if (b.width > 0 && s.querySelectorAll('rect,line,circle').length > 0) charts[k].drawn++;
  }
  const reasons = [...document.querySelectorAll('#reasons > li')].map(li => ({
    text: li.textContent,
    links: [...li.querySelectorAll('a')].map(a => {
      const href = a.getAttribute('href'), t = href.startsWith('#') && document.getElementById(href.slice(1));
      return {href, target: t ? t.tagName : null};
    })}));
  return {rows: [...document.querySelectorAll('#env tr[id^="env-"]')].map(r => r.id), charts, reasons,
          th: getComputedStyle(document.querySelector('#env th')).backgroundColor,
          scripts: document.scripts.length};
})()"""
ENV_ROWS = ["machine", "cpu", "kernel", "build", "binary", "binary-sha256", "model", "model-sha256", "args",
            "residency", "rounds", "workloads"]


def check_page(a, chromium, name, rep):
    """The report page of run `name` in headless Chromium: no console
    errors, the environment table, drawn charts for every metric, every
    validity reason listed with links that resolve (a reason naming a
    request links to its row); a screenshot is kept beside it."""
    from cdp_page import Page
    html = os.path.join(a.dir, name, "report.html")
    with open(html) as f:
        src = f.read()
    assert not any(t in src for t in ("<script", "<link", "<img", "<iframe", "url(")), "the report must not load anything"
    assert "Content-Security-Policy" in src
    with Page(chromium, os.path.join(a.dir, "chromium-profile")) as p:
        p.load("file://" + os.path.abspath(html))
        facts = p.evaluate(PAGE_FACTS)
        p.screenshot(os.path.join(a.dir, name, "report.png"))
        errors = list(p.errors)
    assert not errors, f"{name}: console errors: {errors}"
    assert facts["scripts"] == 0, facts["scripts"]
    # the page's own style sheet applied under its CSP hash
    assert facts["th"] == "rgb(242, 242, 242)", facts["th"]
    missing = [r for r in ENV_ROWS if "env-" + r not in facts["rows"]]
    assert not missing, f"{name}: environment rows missing: {missing} (have {facts['rows']})"
    for key in rep["statistics"]:
        c = facts["charts"].get(key, {"n": 0, "drawn": 0})
        assert c["n"] >= 1 and c["drawn"] == c["n"], f"{name}: charts of {key}: {c}"
    assert facts["charts"].get("gaps", {}).get("drawn") == 1, facts["charts"]
    val = rep["validity"]
    assert len(val["reason_refs"]) == len(val["reasons"]) == len(facts["reasons"]), (val, facts["reasons"])
    for text, r in zip(val["reasons"], facts["reasons"]):
        assert r["text"].startswith(text), (text, r["text"])
        bad = [x["href"] for x in r["links"] if not x["target"]]
        assert not bad, f"{name}: reason {text!r} links to nothing: {bad}"
        m = re.match(r"(\w+) \(round (\d+)\): \S+ request (\d+):", text)
        if m:
            want = f"#req-{m.group(2)}-{m.group(1)}-{m.group(3)}"
            assert any(x["href"] == want and x["target"] == "TR" for x in r["links"]), (text, r["links"])
    n_links = sum(len(r["links"]) for r in facts["reasons"])
    print(f"html {name}: charts {sum(c['n'] for c in facts['charts'].values())}, environment rows "
          f"{len(facts['rows'])}, {len(facts['reasons'])} reason(s) with {n_links} link(s), no console errors")
    return html


def part_html(a):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("chromium is not installed (deps/debian-packages.txt lists it)")
    sys.path.insert(0, os.path.dirname(__file__))
    from cdp_page import Page
    small = ["--serial-prompt-tokens", "16", "--max-tokens", "8", "--mixed-long-prompt", "128",
             "--mixed-decode-tokens", "64", "--mixed-repeat", "1", "--mixed-shorts", "1", "--poll-ms", "2",
             "--warmup", "1", "--seeded-probes", "2"]
    p, rep = bench(a, "html", small + ["--serial-repeat", "1"], expect_codes=(0, 10, 11, 12, 13))
    check_page(a, chromium, "html", rep)
    # a run made invalid on purpose: a candidate that shares its cache across
    # salts names requests in its reasons, each linking to its row
    p, rep = bench(a, "html-invalid", small + ["--serial-repeat", "2", "--candidate-args", "--test-ignore-cache-salt"],
                   expect_codes=(13,))
    assert any(re.search(r" request \d+: cached tokens", r) for r in rep["validity"]["reasons"]), \
        rep["validity"]["reasons"]
    html = check_page(a, chromium, "html-invalid", rep)
    # the checker sees what it must refuse: an inline script (blocked by the
    # page's CSP) and an external image both show as errors
    with open(html) as f:
        bad = f.read().replace("</body>", "<script>document.title='x'</script><img src=\"http://127.0.0.1:9/x.png\">"
                                          "</body>")
    bad_path = os.path.join(a.dir, "html-invalid", "tampered.html")
    with open(bad_path, "w") as f:
        f.write(bad)
    with Page(chromium, os.path.join(a.dir, "chromium-profile")) as pg:
        pg.load("file://" + bad_path)
        errors, title = list(pg.errors), pg.evaluate("document.title")
    assert title != "x" and len(errors) >= 2 and all("Content Security Policy" in e for e in errors), (title, errors)
    print(f"html: a tampered copy shows {len(errors)} CSP error(s), its inline script blocked")


def part_trace(a):
    """--trace: owned servers record, each capture is validated and attached,
    the verdict is diagnostic (exit 14); a URL arm and a server that cannot
    trace are refused."""
    small = ["--workload", "serial,mixed", "--serial-prompt-tokens", "16", "--serial-repeat", "1", "--max-tokens", "8",
             "--mixed-long-prompt", "128", "--mixed-decode-tokens", "64", "--mixed-repeat", "1", "--mixed-shorts", "1",
             "--poll-ms", "2", "--warmup", "1"]
    p = subprocess.run([a.splash, "bench", "--baseline-url", "http://127.0.0.1:9", "--model", a.model, "--trace"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "URL arm" in p.stderr, (p.returncode, p.stderr)
    stub = os.path.join(os.path.dirname(__file__), "stub_server.py")
    # a server that does not take the capture flags fails to start: refused
    p, _ = bench(a, "trace-refused-flags", small + ["--trace", "--candidate-cmd", f"{sys.executable} {stub} {{port}}"])
    assert p.returncode == 1 and "cannot trace" in p.stderr, (p.returncode, p.stderr)
    # one that starts (it ignores them) but whose /status has no trace: refused
    wrapped = f"sh -c 'exec {sys.executable} {stub} --status \"$0\"' {{port}}"
    p, _ = bench(a, "trace-refused-status", small + ["--trace", "--candidate-cmd", wrapped])
    assert p.returncode == 1 and "cannot trace" in p.stderr and "no trace object" in p.stderr, (p.returncode, p.stderr)
    # two splash servers: measured, captured, checked, no speed verdict
    p, rep = bench(a, "trace", small + ["--trace"], expect_codes=(14,))
    assert rep["diagnostic"] is True and rep["verdict"].startswith("diagnostic"), rep["verdict"]
    assert rep["validity"]["valid"], reasons(rep)
    for arm in rep["arms"]:
        assert len(arm["traces"]) == arm["starts"] >= 1, arm["traces"]
        for t in arm["traces"]:
            assert t["valid"] and t["dropped"] == 0 and t["recorded"] > 0, t
            assert os.path.exists(t["file"]) and t["summary"], t
    print(f"trace: {rep['verdict']}; captures " +
          ", ".join(f"{arm['arm']}{t['start']} {t['recorded']} events" for arm in rep["arms"] for t in arm["traces"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=["faults", "stub", "strict-json", "cached", "sessions", "html", "trace",
                                     "llama"])
    ap.add_argument("--splash", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    globals()["part_" + a.part.replace("-", "_")](a)


if __name__ == "__main__":
    main()
