#!/usr/bin/python3
"""splash qualify end to end on the built-in model: prepare, execute killed
with kill -9 while a job runs, resume, and no finished job run twice (from
the ledger and the job folders); --only; summary and its page; a changed
binary refused; bad command lines refused with one line. Logits jobs
against the float64 reference (tests/reference): passed on the built-in
model, failed with a tolerance of 0, skipped above logits.max_params, and a
changed reference script refused like a changed binary.

    test_qualify.py --splash BIN --model GGUF --text TXT --dir DIR
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

FINISHED = {"passed", "failed", "invalid", "inconclusive", "gain", "regression", "error", "skipped"}
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference")


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def ledger(d):
    with open(os.path.join(d, "ledger.json")) as f:
        return json.load(f)


def jobs_by_id(d):
    return {j["id"]: j for j in ledger(d)["jobs"]}


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--splash", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    a.model, a.text = os.path.abspath(a.model), os.path.abspath(a.text)
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    # frozen copies: the fingerprint test alters one of them, never the build
    base, cand = os.path.join(a.dir, "baseline.bin"), os.path.join(a.dir, "candidate.bin")
    shutil.copy2(a.splash, base)
    shutil.copy2(a.splash, cand)
    models = os.path.join(a.dir, "models.json")
    with open(models, "w") as f:
        # three cheap scenarios; serving jobs long enough (about a second) to
        # be caught running; logits once (no drafts), the reference found
        # where the build recorded it
        json.dump({
            "scenarios": ["serial", "greedy", "logits"],
            "verify_rows": ["all", "auto"],
            "bench_args": "--rounds 1 --warmup 0 --serial-prompt-tokens 16 --serial-repeat 2 --max-tokens 24",
            "greedy": {"prompts": ["Once upon a time", "The sky is"], "max_tokens": 12},
            "perplexity": {"text": a.text, "max_tokens": 64},
            "logits": {"n_gen": 8},
            "models": [{"name": "demo", "path": a.model}],
        }, f)

    # bad command lines: one line, non-zero
    for args, rc in [(["prepare", "--models", models], 2), (["prepare", "--bogus"], 2),
                     (["execute"], 2), (["execute", os.path.join(a.dir, "none")], 1), (["frobnicate"], 2)]:
        r = run([a.splash, "qualify"] + args)
        check(r.returncode == rc, f"qualify {args}: exit {r.returncode}, wanted {rc}")
        check(len(r.stderr.strip().splitlines()) == 1, f"qualify {args}: not one error line: {r.stderr!r}")
    for sub in ["prepare", "execute", "summary"]:
        r = run([a.splash, "qualify", sub, "--help"])
        check(r.returncode == 0 and "usage" in r.stdout, f"qualify {sub} --help")

    # prepare: 5 unexecuted jobs (serial and greedy per setting, logits once), said plainly
    d = os.path.join(a.dir, "run")
    r = run([a.splash, "qualify", "prepare", "--models", models, "--baseline", base, "--candidate", cand,
             "--output", d])
    check(r.returncode == 0, f"prepare: {r.stderr}")
    check("neither coverage nor a pass" in r.stdout, f"prepare does not say it is no pass: {r.stdout}")
    check("1 models x (2 scenarios x 2 verify-rows settings + 1 scenarios without drafts" in r.stdout,
          f"prepare's arithmetic: {r.stdout}")
    jobs = jobs_by_id(d)
    check(sorted(jobs) == ["demo/greedy/all", "demo/greedy/auto", "demo/logits", "demo/serial/all", "demo/serial/auto"]
          and all(j["status"] == "unexecuted" for j in jobs.values()), f"prepare: 5 unexecuted jobs: {sorted(jobs)}")
    check(all(os.path.isfile(s["path"]) and len(s["sha256"]) == 64 for s in ledger(d)["reference"]["scripts"]),
          "prepare: the reference's scripts are not fingerprinted")
    r = run([a.splash, "qualify", "prepare", "--models", models, "--baseline", base, "--candidate", cand,
             "--output", d])
    check(r.returncode != 0 and "exists" in r.stderr, "prepare over an existing ledger is refused")

    # execute, killed with kill -9 (the whole process group: qualify, bench,
    # its servers) while a job runs after at least one finished
    p = subprocess.Popen([a.splash, "qualify", "execute", d], stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    deadline = time.time() + 300
    caught = None
    while time.time() < deadline and p.poll() is None:
        try:
            st = [j["status"] for j in ledger(d)["jobs"]]
        except (json.JSONDecodeError, OSError) as e:  # must never happen: writes are atomic
            os.killpg(p.pid, signal.SIGKILL)
            fail(f"ledger unreadable while executing: {e}")
        if "running" in st and any(s in FINISHED for s in st):
            os.killpg(p.pid, signal.SIGKILL)
            caught = st
            break
        time.sleep(0.01)
    p.wait()
    check(caught is not None, "execute finished before it could be killed mid-run")
    check(p.returncode == -signal.SIGKILL, f"execute was not killed: {p.returncode}")
    before = jobs_by_id(d)
    running = [i for i, j in before.items() if j["status"] == "running"]
    done_before = {i: j for i, j in before.items() if j["status"] in FINISHED}
    check(len(running) == 1, f"after kill -9: one job running, got {running}")
    print(f"killed with {len(done_before)} done, {running[0]} running", file=sys.stderr)

    # resume: the interrupted job again (and said), the finished ones not
    r = run([a.splash, "qualify", "execute", d])
    check(r.returncode == 0, f"resume: {r.stderr}")
    check(f"{running[0]} was running" in r.stderr, f"resume does not say it re-runs {running[0]}: {r.stderr}")
    after = jobs_by_id(d)
    for i, j in after.items():
        check(j["status"] in FINISHED, f"{i} not finished after resume: {j['status']}")
        runs = sorted(os.listdir(os.path.join(d, "jobs", i.replace("/", "_"))))
        if i == running[0]:
            check(j["runs"] == 2 and j["rerun_after_interruption"], f"{i}: interrupted job not run again: {j}")
            check(runs == ["run-1", "run-2"], f"{i}: run folders {runs}")
        else:
            check(j["runs"] == 1, f"{i} ran {j['runs']} times")
            check(runs == ["run-1"], f"{i}: run folders {runs}")
            check(not j["rerun_after_interruption"], f"{i} marked as re-run")
        if i in done_before:
            check(j == done_before[i], f"{i} finished before the kill but changed on resume")
        check(j["artefacts"], f"{i} has no artefacts")
        for art in j["artefacts"]:
            check(os.path.isfile(os.path.join(d, art)), f"{i}: artefact {art} missing")
            check(art.startswith(f"jobs/{i.replace('/', '_')}/run-{j['runs']}/"), f"{i}: artefact {art} of another run")
        if j["kind"] == "serving":
            check(any(x.endswith("report.json") for x in j["artefacts"]), f"{i}: no bench report kept")
            check(j["status"] in {"passed", "gain", "regression", "inconclusive", "invalid"},
                  f"{i}: bench did not run: {j['status']} {j.get('detail')}")
        elif j["kind"] == "logits":
            check(j["status"] == "passed" and "max_rel" in j["detail"] and "verify_rows" not in j,
                  f"{i}: the built-in model against the float64 reference: {j['status']} {j.get('detail')}")
            check(any(x.endswith("logits.json") for x in j["artefacts"]), f"{i}: compare.py's report not kept")
            check(any(x.endswith(".f32") for x in j["artefacts"]), f"{i}: the candidate's logits not kept")
        else:
            check(j["status"] == "passed", f"{i}: same binary, greedy ids differ: {j.get('detail')}")
        check(j["elapsed_s"] > 0 and j["started_at"] and j["finished_at"], f"{i}: timings missing")
    # nothing left to do: a third execute changes nothing
    r = run([a.splash, "qualify", "execute", d])
    check(r.returncode == 0 and "0 of 5 jobs" in r.stderr, f"third execute: {r.stderr}")
    check(jobs_by_id(d) == after, "a third execute changed the ledger")
    # --retry-failed re-runs only jobs that did not pass: the passed greedy ones stay
    r = run([a.splash, "qualify", "execute", d, "--retry-failed", "--only", "demo/greedy/*"])
    check(r.returncode == 0 and "0 of 5 jobs" in r.stderr, f"--retry-failed re-ran passed jobs: {r.stderr}")

    # summary: the matrix on stdout and a self-contained page
    r = run([a.splash, "qualify", "summary", d])
    check(r.returncode == 0 and "demo" in r.stdout and "serial" in r.stdout, f"summary: {r.stdout} {r.stderr}")
    header = r.stdout.splitlines()[1].split()
    check(header == ["model", "serial", "greedy", "logits"], f"summary: logits is not its own column: {header}")
    with open(os.path.join(d, "matrix.html")) as f:
        page = f.read()
    check("<table>" in page and "demo" in page, "matrix.html has no matrix")
    for origin in ["http://", "https://", "<script", "<link"]:
        check(origin not in page, f"matrix.html refers to {origin}")

    # the page as a browser reads it: one cell entry per job, the ledger's statuses
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    check(chromium, "chromium is not installed (deps/debian-packages.txt lists it)")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={os.path.join(a.dir, 'chromium-profile')}", "--dump-dom",
                          "file://" + os.path.abspath(os.path.join(d, "matrix.html"))],
                         capture_output=True, text=True, timeout=120).stdout
    shown = dict(re.findall(r'data-job="([^"]+)" data-status="([^"]+)"', dom))
    check(shown == {i: j["status"] for i, j in after.items()}, f"matrix page shows {shown}")

    # --only: a pattern over job ids; the rest stays unexecuted
    d2 = os.path.join(a.dir, "only")
    run([a.splash, "qualify", "prepare", "--models", models, "--baseline", base, "--candidate", cand, "--output", d2])
    r = run([a.splash, "qualify", "execute", d2, "--only", "demo/greedy/*"])
    check(r.returncode == 0, f"execute --only: {r.stderr}")
    st = {i: j["status"] for i, j in jobs_by_id(d2).items()}
    check(st["demo/greedy/all"] == "passed" and st["demo/greedy/auto"] == "passed", f"--only: {st}")
    check(st["demo/serial/all"] == "unexecuted" and st["demo/serial/auto"] == "unexecuted", f"--only: {st}")
    check(st["demo/logits"] == "unexecuted", f"--only: {st}")

    # frozen binaries: a candidate changed after preparation is refused
    with open(cand, "ab") as f:
        f.write(b"\0")
    r = run([a.splash, "qualify", "execute", d2])
    check(r.returncode == 1 and "changed since preparation" in r.stderr, f"changed binary not refused: {r.stderr}")
    check(jobs_by_id(d2)["demo/serial/all"]["status"] == "unexecuted", "a refused execute ran a job")
    logits_cases(a, base, cand)
    print("qualify: prepare, kill -9 and resume, --only, summary, frozen binaries and logits jobs all behave")


def logits_cases(a, base, cand):
    """A logits job fails with a tolerance of 0 (float32 against float64 is
    never exact), is skipped above max_params (and --retry-failed leaves it
    so), and a reference named by the models file is fingerprinted: a
    changed script is refused."""
    ref_copy = os.path.join(a.dir, "reference")
    os.makedirs(ref_copy)
    for name in ["compare.py", "qwen3_ref.py", "qwen35_ref.py", "gguf_ref.py"]:
        shutil.copy2(os.path.join(REFERENCE, name), ref_copy)
    base_file = {"scenarios": ["logits"], "models": [{"name": "demo", "path": a.model}]}
    cases = {"tight": {"n_gen": 8, "tolerance": 0, "reference": ref_copy},
             "large": {"n_gen": 8, "max_params": 1000}}
    dirs = {}
    for name, settings in cases.items():
        path = os.path.join(a.dir, f"models-{name}.json")
        with open(path, "w") as f:
            json.dump(dict(base_file, logits=settings), f)
        dirs[name] = os.path.join(a.dir, name)
        r = run([a.splash, "qualify", "prepare", "--models", path, "--baseline", base, "--candidate", cand,
                 "--output", dirs[name]])
        check(r.returncode == 0, f"prepare {name}: {r.stderr}")
        r = run([a.splash, "qualify", "execute", dirs[name]])
        check(r.returncode == 0, f"execute {name}: {r.stderr}")
    tight = jobs_by_id(dirs["tight"])["demo/logits"]
    check(tight["status"] == "failed" and tight["exit_code"] == 1 and "tolerance 0" in tight["detail"],
          f"a tolerance of 0 did not fail: {tight['status']} {tight.get('detail')}")
    large = jobs_by_id(dirs["large"])["demo/logits"]
    check(large["status"] == "skipped" and "too large for the float64 reference" in large["detail"],
          f"a model above max_params was not skipped: {large['status']} {large.get('detail')}")
    r = run([a.splash, "qualify", "summary", dirs["large"]])
    check(r.returncode == 0 and "skipped 1" in r.stdout and "passed 0" in r.stdout, f"summary of a skip: {r.stdout}")
    r = run([a.splash, "qualify", "execute", dirs["large"], "--retry-failed"])
    check("0 of 1 jobs" in r.stderr, f"--retry-failed re-ran a skipped job: {r.stderr}")
    # the failed one is retried, until the reference it was prepared with changes
    r = run([a.splash, "qualify", "execute", dirs["tight"], "--retry-failed"])
    check(r.returncode == 0 and jobs_by_id(dirs["tight"])["demo/logits"]["runs"] == 2, f"retry: {r.stderr}")
    with open(os.path.join(ref_copy, "qwen3_ref.py"), "a") as f:
        f.write("# changed\n")
    r = run([a.splash, "qualify", "execute", dirs["tight"], "--retry-failed"])
    check(r.returncode == 1 and "qwen3_ref.py" in r.stderr and "changed since preparation" in r.stderr,
          f"a changed reference script was not refused: {r.stderr}")


if __name__ == "__main__":
    main()
