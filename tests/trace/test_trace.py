#!/usr/bin/python3
"""Engine traces end to end: `splash trace report` and `export` against
synthetic captures whose answers are computed here independently (numpy's
percentiles, interval arithmetic), every kind of untrustworthy capture
rejected with exit status 3, and real captures from `splash serve` (a mixed
workload, an overflow, an incomplete capture, a cancelled request).

usage: test_trace.py SPLASH_BINARY WORKDIR
"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np

SPLASH, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
INVALID = 3
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def header(recorded, dropped=0, complete=True, schema="splash.trace.v1", capacity=1 << 20):
    return {"type": "header", "schema": schema, "clock": "CLOCK_MONOTONIC", "capacity": capacity,
            "recorded": recorded, "dropped": dropped, "complete": complete,
            "build": {"version": "test", "binary_sha256": ""}, "model": {"sha256": "", "path": ""}}


def write(path, events, **kw):
    with open(path, "w") as f:
        f.write(json.dumps(header(len(events), **kw)) + "\n")
        for e in events:
            f.write(json.dumps(e) + "\n")


def ev(t, ph, name, i, tid=0, **extra):
    d = {"t": t, "tid": tid, "ph": ph, "name": name, "id": i}
    d.update(extra)
    return d


def run(*args):
    p = subprocess.run([SPLASH, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


# ---- a synthetic capture with known answers ----

def synthetic(seed=1, n_steps=200):
    """Steps with random span durations, two requests with overlapping
    intervals, and gaps both inside and outside them."""
    rng = random.Random(seed)
    events, t = [], 1_000_000
    durations = {k: [] for k in ("step", "admission", "planning", "preparation", "forward", "consume", "apply")}
    steps = []
    reqs = {1: [10_000_000, None], 2: [None, None]}
    events.append(ev(reqs[1][0], "i", "queued", 1, tid=1))
    for s in range(1, n_steps + 1):
        if s == 60:
            reqs[2][0] = t
            events.append(ev(t, "i", "queued", 2, tid=1))
        t0 = t
        events.append(ev(t, "B", "step", s))
        for name in ("admission", "planning", "preparation", "forward", "consume", "apply"):
            d = rng.randint(1_000, 3_000_000)
            extra = {"rows": {"decode": rng.randint(0, 4), "prefill": rng.randint(1, 64), "verify": 0}} \
                if name == "forward" else {}
            events.append(ev(t, "B", name, s, **extra))
            t += d
            end_extra = {"committed": 1} if name == "apply" else {}
            events.append(ev(t, "E", name, s, **end_extra))
            durations[name].append(d / 1e6)
            t += rng.randint(0, 500)
        events.append(ev(t, "E", "step", s))
        durations["step"].append((t - t0) / 1e6)
        steps.append((t0, t))
        if s == 20:
            events.append(ev(t, "i", "started", 1))
            events.append(ev(t, "i", "first_token", 1))
        if s == 90:
            events.append(ev(t, "i", "started", 2))
            events.append(ev(t, "i", "first_token", 2))
        if s == 120:
            reqs[1][1] = t
            events.append(ev(t, "i", "done", 1))
        if s == 150:
            reqs[2][1] = t
            events.append(ev(t, "i", "cancelled", 2))
        t += rng.choice([0, 1_000, 50_000, 2_000_000])  # the gap to the next step
    # the union of request intervals, and each gap's active part
    iv = sorted(tuple(v) for v in reqs.values())
    union = []
    for a, b in iv:
        if union and a <= union[-1][1]:
            union[-1][1] = max(union[-1][1], b)
        else:
            union.append([a, b])
    idle = active = 0
    active_parts = []
    for (_, a), (b, _) in zip(steps, steps[1:]):
        if b <= a:
            continue
        act = sum(max(0, min(b, hi) - max(a, lo)) for lo, hi in union)
        active += act
        idle += (b - a) - act
        if act > 0:
            active_parts.append(act / 1e6)
    answers = {"durations": durations, "idle_ms": idle / 1e6, "active_ms": active / 1e6,
               "active_parts": active_parts, "steps": n_steps}
    return events, answers


def test_percentiles_and_gaps():
    events, ans = synthetic()
    path = os.path.join(WORK, "synthetic.jsonl")
    write(path, events)
    rc, out, err = run("trace", "report", path, "--json")
    check(rc == 0, "synthetic capture is valid (%s)" % err.strip()[:200])
    if rc:
        return
    rep = json.loads(out)
    for name, d in ans["durations"].items():
        s = rep["spans"][name]
        ref = [np.percentile(d, 50), np.percentile(d, 90), np.percentile(d, 99), max(d)]
        got = [s["p50_ms"], s["p90_ms"], s["p99_ms"], s["max_ms"]]
        check(s["count"] == len(d) and np.allclose(got, ref, rtol=1e-9, atol=1e-9),
              "%s: count and p50/p90/p99/max match numpy (%s vs %s)" % (name, got, ref))
    check(abs(rep["gaps"]["idle_ms"] - ans["idle_ms"]) < 1e-6, "idle gap time matches the interval arithmetic")
    check(abs(rep["gaps"]["active_ms"] - ans["active_ms"]) < 1e-6,
          "active gap time (inside the union of overlapping requests) matches")
    check(rep["gaps"]["active_count"] == len(ans["active_parts"]), "number of active gaps matches")
    if ans["active_parts"]:
        check(abs(rep["gaps"]["active"]["p99_ms"] - np.percentile(ans["active_parts"], 99)) < 1e-9,
              "active gap p99 matches numpy")
    check(rep["steps"] == ans["steps"] and rep["committed_tokens"] == ans["steps"], "steps and committed counted")
    check(rep["ttft"]["count"] == 2, "TTFT per request")


def test_rejections():
    events, _ = synthetic(seed=2, n_steps=160)
    cases = []
    cases.append(("dropped events", events, {"dropped": 5}, "dropped"))
    cases.append(("incomplete flag", events, {"complete": False}, "incomplete"))
    cases.append(("unknown schema", events, {"schema": "splash.trace.v9"}, "unknown schema"))
    unbalanced = [e for e in events if not (e["ph"] == "E" and e["name"] == "consume" and e["id"] == 7)]
    cases.append(("unbalanced span", unbalanced, {}, "does not close"))
    swapped = list(events)
    i = next(k for k, e in enumerate(swapped) if e["ph"] == "E" and e["name"] == "forward")
    swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]  # E forward after B consume: bad nesting
    cases.append(("badly nested spans", swapped, {}, "does not close"))
    backwards = [dict(e) for e in events]
    k = next(k for k, e in enumerate(backwards) if e["tid"] == 0 and k > 10)
    backwards[k]["t"] = 0
    cases.append(("time going back on a thread", backwards, {}, "time goes back"))
    in_flight = [e for e in events if e["name"] not in ("done", "cancelled")]
    cases.append(("request in flight at the end", in_flight, {}, "in flight"))
    for what, evs, kw, needle in cases:
        path = os.path.join(WORK, "bad.jsonl")
        write(path, evs, **kw)
        rc, out, err = run("trace", "report", path)
        check(rc == INVALID and needle in err and out == "",
              "rejected, not summarised: %s (rc %d, %s)" % (what, rc, err.strip().splitlines()[-1][:100]))
    path = os.path.join(WORK, "truncated.jsonl")
    write(path, events)
    data = open(path).read()
    open(path, "w").write(data[: len(data) // 2])
    rc, _, err = run("trace", "report", path)
    check(rc == INVALID, "a truncated file is rejected")
    open(path, "w").write("")
    rc, _, err = run("trace", "report", path)
    check(rc == INVALID and "no header" in err, "an empty file is rejected")
    rc, _, _ = run("trace", "export", path, "--format", "chrome", "-o", os.path.join(WORK, "x.json"))
    check(rc == INVALID, "export refuses an invalid capture too")


# ---- real captures from splash serve ----

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, model, capacity, out, *extra):
        self.port = free_port()
        self.out = out
        self.p = subprocess.Popen([SPLASH, "serve", "--model", model, "--port", str(self.port), "--threads", "2",
                                   "--trace-capacity", str(capacity), "--trace-out", out, *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if "ready at" not in line:
            raise RuntimeError("server did not start: " + line + self.p.stderr.read())

    def post(self, path, body, timeout=300):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def stop(self, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        return self.p.wait(timeout=120)


def read_events(path):
    with open(path) as f:
        lines = [json.loads(l) for l in f]
    return lines[0], lines[1:]


def test_mixed_workload(model):
    out = os.path.join(WORK, "mixed.jsonl")
    srv = Server(model, 1_000_000, out, "--prefill-chunk", "64", "--batch-tokens", "72", "--max-context", "8192")
    # a decodes (a long stream); once its first token is out, b's 4,096-token
    # prompt arrives; when b is done, a's client disconnects (a is cancelled)
    results = {}
    a = socket.create_connection(("127.0.0.1", srv.port))
    body = json.dumps({"prompt": "Hello", "max_tokens": 8000, "ignore_eos": True, "stream": True,
                       "temperature": 0}).encode()
    a.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    got = b""
    while b"text_completion" not in got:
        got += a.recv(4096)
    rng = random.Random(5)
    results["b"] = srv.post("/v1/completions", {"prompt": [rng.randrange(256) for _ in range(4096)],
                                                "max_tokens": 4, "temperature": 0})
    a.close()
    time.sleep(2.5)  # the next token write (or SSE keep-alive) finds the client gone
    check(srv.stop() == 0, "server exits 0 after SIGTERM")
    rc, rep, err = run("trace", "report", out, "--json")
    check(rc == 0, "a real mixed workload's capture passes validation (%s)" % err.strip()[:300])
    if rc:
        return
    rep = json.loads(rep)
    hdr, evs = read_events(out)
    fwd = [e for e in evs if e["name"] == "forward" and e["ph"] == "B"]
    mixed = [e for e in fwd if e["rows"]["prefill"] > 0 and e["rows"]["decode"] > 0]
    check(len(mixed) >= 4096 // 64 - 1, "prefill chunks ran in the same steps as decode rows (%d steps)" % len(mixed))
    check(all(e["rows"]["prefill"] <= 64 and e["rows"]["decode"] + e["rows"]["prefill"] <= 72 for e in fwd),
          "rows after cuts: no step above the chunk or the batch budget")
    prompts = sum(e["prompt"] for e in evs if e["name"] == "queued")
    cached = sum(e["cached"] for e in evs if e["name"] == "started")
    check(sum(e["rows"]["prefill"] for e in fwd) == prompts - cached, "every uncached prompt row ran exactly once")
    check(any(e["name"] == "cancelled" for e in evs), "the disconnected stream's request is recorded as cancelled")
    committed = sum(e.get("committed", 0) for e in evs if e["name"] == "apply" and e["ph"] == "E")
    generated = sum(e["generated"] for e in evs if e["name"] in ("done", "cancelled"))
    check(committed == generated, "tokens committed by application (%d) equal the tokens the requests got (%d)"
          % (committed, generated))
    check(results["b"]["usage"]["completion_tokens"] == 4, "the long-prompt request completed")
    check(rep["steps"] == len(fwd), "report counts every forward pass")
    # Chrome export: structure Perfetto accepts
    chrome = os.path.join(WORK, "mixed.chrome.json")
    rc, _, err = run("trace", "export", out, "--format", "chrome", "-o", chrome)
    check(rc == 0, "export succeeds")
    d = json.load(open(chrome))
    tev = d["traceEvents"]
    ok = isinstance(tev, list) and all({"name", "ph", "ts", "pid", "tid"} <= set(e) for e in tev if e["ph"] != "M")
    check(ok, "every Chrome event has name, ph, ts, pid, tid")
    depth = {}
    last = {}
    balanced = True
    for e in tev:
        if e["ph"] in ("B", "E"):
            depth[e["tid"]] = depth.get(e["tid"], 0) + (1 if e["ph"] == "B" else -1)
            balanced &= depth[e["tid"]] >= 0 and e["ts"] >= last.get(e["tid"], -1)
            last[e["tid"]] = e["ts"]
    check(balanced and all(v == 0 for v in depth.values()), "Chrome B/E events balanced, time-ordered per thread")
    cf = [e for e in tev if e["name"] == "forward" and e["ph"] == "B"]
    check(any(e["args"]["prefill_rows"] > 0 and e["args"]["decode_rows"] > 0 for e in cf),
          "Chrome export shows prefill chunks interleaved with decode")
    reqs_b = sum(1 for e in tev if e.get("cat") == "request" and e["ph"] == "b")
    reqs_e = sum(1 for e in tev if e.get("cat") == "request" and e["ph"] == "e")
    check(reqs_b == reqs_e == 2, "each request is an async span in the export")


def test_overflow(model):
    out = os.path.join(WORK, "overflow.jsonl")
    srv = Server(model, 50, out)
    srv.post("/v1/completions", {"prompt": "Hello", "max_tokens": 40, "ignore_eos": True})
    check(srv.stop() == 0, "server exits 0")
    hdr, _ = read_events(out)
    check(hdr["dropped"] > 0 and hdr["recorded"] == 50, "a tiny capacity drops and counts (%s)" % hdr["dropped"])
    rc, out_text, err = run("trace", "report", out)
    check(rc == INVALID and "dropped" in err and out_text == "", "an overflowed capture is rejected")


def test_incomplete(model):
    out = os.path.join(WORK, "incomplete.jsonl")
    srv = Server(model, 1000000, out, "--max-context", "8192")
    hdr = None
    for attempt in range(5):
        s = socket.create_connection(("127.0.0.1", srv.port))
        body = json.dumps({"prompt": "x", "max_tokens": 8000, "ignore_eos": True, "stream": True}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        s.recv(4096)
        dump = srv.post("/trace/dump", {})  # on demand, with the request (very likely) in flight
        check(dump["path"] == out and dump["dropped"] == 0, "POST /trace/dump writes the capture")
        hdr, _ = read_events(out)
        if hdr["complete"] is False:
            break
        s.close()  # the request outran the dump: try again
    srv.p.kill()  # the server dies: nothing more is written
    srv.p.wait()
    s.close()
    check(hdr["complete"] is False, "a capture written with work in flight says so")
    rc, _, err = run("trace", "report", out)
    check(rc == INVALID and "incomplete" in err, "an incomplete capture is rejected")


def main():
    test_percentiles_and_gaps()
    test_rejections()
    model = os.path.join(WORK, "tiny8k.gguf")
    subprocess.run([SPLASH, "model", "synth", "--preset", "tiny", "--type", "q8_0", "--seed", "1", "--context",
                    "8192", "--out", model], check=True, capture_output=True)
    test_mixed_workload(model)
    test_overflow(model)
    test_incomplete(model)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all trace checks passed")


main()
