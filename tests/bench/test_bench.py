#!/usr/bin/env python3
"""splash bench against the real `splash serve` (and a stub server), one
part per CTest test (label bench):

  aa      the same binary in both arms, N runs: never a gain or a regression
  delay   a candidate slowed by --test-step-delay-us worth about 10 % of a
          step (measured first from the A/A throughput): a regression in at
          least 9 of 10 runs; the same delay on the baseline: a gain
  faults  each serve fault knob makes the run invalid with the right reason
  stub    a server without /status: bench runs, status checks unverifiable
  strict-json  the strict-json probes: against the real server every output
          valid and the arms identical; against stub servers a non-JSON
          output, a schema violation and differing outputs each make the run
          invalid with its reason, and a server without a grammar object in
          /status is refused
  html    the HTML report renders in headless Chromium with its charts
  llama   a third-party arm in llama.cpp's llama-server dialect (a stub: CI has
          no llama.cpp) against the real server: the run completes and is
          valid, the /status checks are unverifiable (never invalid), cached
          tokens are read from its usage (or timings.cache_n), its prompts are
          kept uncached with cache_prompt false, and a candidate faster than
          an unverifiable baseline is never a gain (rule 4)

usage: test_bench.py PART --splash BIN --model M.gguf --dir WORKDIR
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
# The timing verdicts (aa, delay) run on a model that fits in the cache
# (the small one CTest makes): on these VMs a model streamed from memory
# swung 15 % between identical runs, one in cache 1-2 %. Twenty short rounds
# (one request a slot), combined by their median, rather than a few long
# ones: the machine's speed wanders over seconds, so 4x longer slots left the
# round noise where it was, and a slow patch spoils a round or two, which
# the median passes over. Bench restarts both servers every round (its
# default): with one pair of processes for the whole run, A/A results spread
# 1.06 % between runs against 0.60 % with fresh ones (16 runs each), and a CI
# run saw five A/A changes of one sign up to +3.2 %.
TIMING = ["--workload", "serial", "--serial-prompt-tokens", "16", "--serial-repeat", "1", "--max-tokens", "160",
          "--warmup", "2", "--rounds", "20"]
# Both arms' servers on one CPU, bench on the others: left to the scheduler,
# the two servers settled on different vCPUs, and these VMs' vCPUs differ in
# speed by up to 20 % at times (taskset runs of one model), which no
# alternation of slots can cancel.
CPUS = sorted(os.sched_getaffinity(0))
if len(CPUS) > 1:
    TIMING += ["--server-cpus", str(CPUS[-1]), "--client-cpus", ",".join(map(str, CPUS[:-1]))]


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


def part_aa(a):
    n = a.runs
    seen = []
    for i in range(n):
        p, rep = bench(a, f"aa-{i}", TIMING, expect_codes=(0, 10, 11, 12))
        thr = rep["statistics"]["throughput"]["combined"]
        seen.append(p.returncode)
        print(f"A/A run {i}: {EXIT[p.returncode]} (change {100 * thr['change']:+.2f} %, noise "
              f"{100 * thr['noise']:.2f} %)")
        assert rep["validity"]["valid"], reasons(rep)
        if p.returncode in (10, 11):
            raise SystemExit(f"A/A run {i} reported a {EXIT[p.returncode]}")
    print(f"A/A: {n} runs, none a gain or a regression ({seen.count(0)} no change, {seen.count(12)} inconclusive)")


def step_us(a):
    """The decode step as bench sees it: 1 / serial throughput of an A/A run."""
    _, rep = bench(a, "delay-probe", TIMING, expect_codes=(0, 10, 11, 12))
    thr = rep["statistics"]["throughput"]["combined"]["a"]
    return 1e6 / thr


def part_delay(a):
    step = step_us(a)
    delay = max(1, int(round(0.10 * step)))
    print(f"step about {step:.0f} us; candidate delay {delay} us per step (~10 %)")
    n_reg = n_inconclusive = 0
    for i in range(a.runs):
        p, rep = bench(a, f"delay-{i}", TIMING + ["--candidate-args", f"--test-step-delay-us {delay}"],
                       expect_codes=(0, 10, 11, 12))
        thr = rep["statistics"]["throughput"]["combined"]
        print(f"delayed candidate run {i}: {EXIT[p.returncode]} (change {100 * thr['change']:+.2f} %, noise "
              f"{100 * thr['noise']:.2f} %)")
        assert rep["validity"]["valid"], reasons(rep)
        assert p.returncode != 10, "a slower candidate reported as a gain"
        n_reg += p.returncode == 11
        n_inconclusive += p.returncode == 12
    need = a.runs - 1 if a.runs >= 10 else a.runs
    print(f"regression in {n_reg} of {a.runs} runs (need {need})")
    if n_reg < need:
        if n_inconclusive > a.runs - need:
            # the instrument refused to decide because the machine was too
            # noisy (its noise rule, not a wrong verdict): this run cannot
            # judge the 9-of-10 criterion, so it is skipped, not passed
            print(f"SKIP: {n_inconclusive} of {a.runs} runs inconclusive (machine too noisy to judge)")
            raise SystemExit(77)
        raise SystemExit("the delayed candidate was not reliably reported as a regression")
    all_inconclusive = True
    for i in range(3):
        p, rep = bench(a, f"delay-baseline-{i}", TIMING + ["--baseline-args", f"--test-step-delay-us {delay}"],
                       expect_codes=(0, 10, 11, 12))
        thr = rep["statistics"]["throughput"]["combined"]
        print(f"delayed baseline: {EXIT[p.returncode]} (change {100 * thr['change']:+.2f} %)")
        assert p.returncode != 11, "a faster candidate reported as a regression"
        all_inconclusive &= p.returncode == 12
        if p.returncode == 10:
            return
    if all_inconclusive:
        print("SKIP: every delayed-baseline run was inconclusive (machine too noisy to judge)")
        raise SystemExit(77)
    raise SystemExit("the same delay on the baseline was never reported as a gain (3 tries)")


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
    for bad, why in ((["--workload", "strict"], "is not serial, mixed, seeded or strict-json"),
                     (["--strict-json-cycles", "0"], "out of range"), (["--strict-json-tokens", "0"], "out of range")):
        p = subprocess.run([a.splash, "bench", "--model", a.model] + bad, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and why in p.stderr, (bad, p.returncode, p.stderr)
    p = subprocess.run([a.splash, "bench", "--help"], capture_output=True, text=True, timeout=60)
    assert "strict-json" in p.stdout and "--strict-json-cycles" in p.stdout
    print("strict-json: real outputs valid and identical; stub failures invalid with their reasons; old server refused")


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
        # B is plainly faster, but A's checks could not be made: never a gain
        thr = rep["statistics"]["throughput"]["combined"]
        assert thr["b"] > 1.5 * thr["a"], thr
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


def part_html(a):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("chromium is not installed (deps/debian-packages.txt lists it)")
    p, rep = bench(a, "html", ["--serial-prompt-tokens", "16", "--serial-repeat", "1", "--max-tokens", "8",
                               "--mixed-long-prompt", "128", "--mixed-decode-tokens", "64", "--mixed-repeat", "1",
                               "--mixed-shorts", "1", "--poll-ms", "2", "--warmup", "1", "--seeded-probes", "2"],
                   expect_codes=(0, 10, 11, 12, 13))
    html = os.path.join(a.dir, "html", "report.html")
    with open(html) as f:
        src = f.read()
    assert "http://" not in src.split("<code>")[0] and "<script src" not in src and "<link" not in src, \
        "the report must not load anything"
    d = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={os.path.join(a.dir, 'chromium-profile')}", "--dump-dom",
                        "file://" + os.path.abspath(html)], capture_output=True, text=True, timeout=120)
    dom = d.stdout
    m = re.search(r'data-charts="(\d+)"', dom)
    drawn = re.search(r'data-charts-drawn="(\d+)"', dom)
    if not m or not drawn:
        raise SystemExit(f"chromium did not run the page (exit {d.returncode}): {d.stderr[-2000:]}")
    n, k = int(m.group(1)), int(drawn.group(1))
    # one chart per metric (7 with serial + mixed) and the gap distribution
    assert n >= 8, f"{n} charts"
    assert k == n, f"only {k} of {n} charts have a drawn box"
    assert 'id="chart-gaps"' in dom and 'id="chart-throughput"' in dom
    print(f"html: chromium rendered {k} of {n} charts")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=["aa", "delay", "faults", "stub", "strict-json", "html", "llama"])
    ap.add_argument("--splash", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    globals()["part_" + a.part.replace("-", "_")](a)


if __name__ == "__main__":
    main()
