#!/usr/bin/env python3
"""Concurrent capacity with default requests (issue 22 part 3): how many
sequences a server admits at once when every request is a chat completion
without max_tokens (the rest of the context), before any preemption.

It starts `splash serve`, sends N such requests at once (N = --max-seqs),
and polls /status for the most sequences running (prefilling + decoding)
while the rest queue and nothing has been preempted; then it stops the
server. Admission is a memory-plan decision, so the count does not depend
on the machine's speed (the forward only has to be slow enough for the
requests to be seen running together, which a 0.6B model is). Published in
docs/benchmarks.md, not run as a test.

  bench/kv_capacity.py --splash build/splash --model M.gguf [--max-context 40960]
                       [--max-seqs 64] [--max-memory 16G] [--port 18231]
"""
import argparse
import json
import subprocess
import threading
import time
import urllib.request


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--splash", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--max-context", default="40960")
    ap.add_argument("--max-seqs", type=int, default=64)
    ap.add_argument("--max-memory", default="16G")
    ap.add_argument("--port", default="18231")
    a = ap.parse_args()
    n = a.max_seqs
    srv = subprocess.Popen([a.splash, "serve", "--model", a.model, "--port", a.port, "--threads", "1",
                            "--max-context", a.max_context, "--max-seqs", str(n), "--max-memory", a.max_memory,
                            "--batch-tokens", str(max(n, 64)), "--prefill-chunk", "16"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{a.port}"

    def status():
        with urllib.request.urlopen(base + "/status", timeout=5) as r:
            return json.load(r)

    try:
        for _ in range(600):
            try:
                s = status()
                if s.get("ready"):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        model = s.get("model", {}).get("id")

        def fire(i):
            body = {"messages": [{"role": "user", "content": f"request {i} says hello"}], "stream": True}
            if model:
                body["model"] = model
            req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=600).read()
            except OSError:
                pass

        for i in range(n):
            threading.Thread(target=fire, args=(i,), daemon=True).start()
        best = None
        t0 = time.time()
        while time.time() - t0 < 40 and not (best and best["running"] == n):
            s = status()
            sc = s["scheduler"]
            run = sc["prefilling"] + sc["decoding"]
            if sc["queued"] + run == n and not sc.get("preemptions") and (not best or run > best["running"]):
                best = {"running": run, "queued": sc["queued"], "blocks_total": s["cache"]["blocks_total"],
                        "blocks_used": s["cache"]["blocks_used"]}
            time.sleep(0.2)
        print(json.dumps({"splash": a.splash, "max_context": a.max_context, "max_seqs": n, **(best or {})}))
    finally:
        srv.kill()


if __name__ == "__main__":
    main()
