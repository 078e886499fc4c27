#!/usr/bin/env python3
"""The verdict protocols of splash bench on real servers, as a benchmark
(SPEC section 6; issue 23 part 6). Wall-clock verdicts depend on the
machine's load, so they are measured here and published in
docs/benchmarks.md, never run as pass/fail tests in CI.

  A/A        the same binary in both arms, --aa runs: the acceptance is no
             gain and no regression in every run (inconclusive is the
             instrument refusing a noisy machine, counted apart)
  slowdown   the candidate delayed per engine step by 10 % and by 5 % of
             the measured step, --runs runs each: called a regression in at
             least 9 of 10 (10 %) and 8 of 10 (5 %)

Each run is one `splash bench` of 20 short rounds on a model that stays in
the cache; the table gives each protocol's verdict counts with the median
change, the median per-round noise and the median combined noise, so the
machine's noise is stated next to every count.

  bench/verdicts.py --splash build/splash --model M.gguf --dir OUT [--aa 20] [--runs 10]
"""
import argparse
import os
import statistics
import subprocess
import sys
import json

EXIT = {0: "no change", 10: "gain", 11: "regression", 12: "inconclusive", 13: "invalid"}
# every server gets one kernel thread (two resident servers on a small
# machine must not fight over cores)
SERVER = "--threads 1 --prefill-chunk 16"
# Twenty short rounds (one request a slot), combined by their median, rather
# than a few long ones: the machine's speed wanders over seconds, so 4x
# longer slots left the round noise where it was, and a slow patch spoils a
# round or two, which the median passes over. Bench restarts both servers
# every round (its default): with one pair of processes for the whole run,
# A/A results spread 1.06 % between runs against 0.60 % with fresh ones.
TIMING = ["--workload", "serial", "--serial-prompt-tokens", "16", "--warmup", "2"]
# Both arms' servers on one CPU, bench on the others: left to the scheduler,
# the two servers settled on different vCPUs, and these VMs' vCPUs differ in
# speed by up to 20 % at times, which no alternation of slots can cancel.
CPUS = sorted(os.sched_getaffinity(0))
if len(CPUS) > 1:
    TIMING += ["--server-cpus", str(CPUS[-1]), "--client-cpus", ",".join(map(str, CPUS[:-1]))]


def bench(a, name, extra):
    out = os.path.join(a.dir, name)
    cmd = [a.splash, "bench", "--model", a.model, "--server-args", SERVER, "--work-dir", out, "--quiet"] + TIMING + [
        "--rounds", str(a.rounds), "--serial-repeat", str(a.repeat), "--max-tokens", str(a.tokens)] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    path = os.path.join(out, "report.json")
    if not os.path.exists(path):
        sys.stdout.write(p.stdout + p.stderr)
        raise SystemExit(f"{name}: no report (exit {p.returncode})")
    with open(path) as f:
        rep = json.load(f)
    if p.returncode not in EXIT:
        raise SystemExit(f"{name}: exit {p.returncode}")
    thr = rep["statistics"]["throughput"]["combined"]
    return p.returncode, thr, rep


def protocol(a, label, n, extra):
    codes, changes, rnoise, noise = [], [], [], []
    for i in range(n):
        code, thr, rep = bench(a, f"{label.replace('/', '').replace(' ', '-').replace('%', 'pct')}-{i}", extra)
        codes.append(code)
        changes.append(thr["change"])
        rnoise.append(thr.get("round_noise", float("nan")))
        noise.append(thr["noise"])
        print(f"  {label} run {i + 1}/{n}: {EXIT[code]} (change {100 * thr['change']:+.2f} %, per-round noise "
              f"{100 * rnoise[-1]:.2f} %, combined noise {100 * thr['noise']:.2f} %)", flush=True)
        if code == 13:
            print("    invalid: " + "; ".join(rep["validity"]["reasons"][:3]))
    return {"label": label, "runs": n, "counts": {EXIT[c]: codes.count(c) for c in EXIT},
            "median_change": statistics.median(changes), "median_round_noise": statistics.median(rnoise),
            "median_noise": statistics.median(noise)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splash", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--aa", type=int, default=20)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=20, help="A B B A rounds per run")
    ap.add_argument("--repeat", type=int, default=1, help="requests per slot")
    ap.add_argument("--tokens", type=int, default=160, help="output tokens per request")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    # the decode step as bench sees it: 1 / the serial throughput of one A/A run
    _, thr, _ = bench(a, "step-probe", [])
    step = 1e6 / thr["a"]
    print(f"step about {step:.0f} us ({thr['a']:.1f} tok/s)", flush=True)
    rows = [protocol(a, "A/A", a.aa, [])]
    for pct in (10, 5) if a.runs > 0 else ():
        delay = max(1, int(round(pct / 100 * step)))
        print(f"candidate delayed {delay} us a step (~{pct} %)", flush=True)
        rows.append(protocol(a, f"slowdown {pct} %", a.runs, ["--candidate-args", f"--test-step-delay-us {delay}"]))
    print("\n| protocol | runs | no change | gain | regression | inconclusive | invalid | median change | "
          "median per-round noise | median combined noise |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["counts"]
        print(f"| {r['label']} | {r['runs']} | {c['no change']} | {c['gain']} | {c['regression']} | "
              f"{c['inconclusive']} | {c['invalid']} | {100 * r['median_change']:+.2f} % | "
              f"{100 * r['median_round_noise']:.2f} % | {100 * r['median_noise']:.2f} % |")
    with open(os.path.join(a.dir, "verdicts.json"), "w") as f:
        json.dump({"step_us": step, "protocols": rows}, f, indent=1)
    if a.runs <= 0:
        print("\nno slowdown runs: the acceptance is not judged")
        return 0
    aa, s10, s5 = rows
    ok = (aa["counts"]["gain"] + aa["counts"]["regression"] == 0 and s10["counts"]["regression"] >= -(-a.runs * 9 // 10)
          and s5["counts"]["regression"] >= -(-a.runs * 8 // 10))
    print(f"\nacceptance (A/A never a verdict; 10 % >= 9/10; 5 % >= 8/10): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
