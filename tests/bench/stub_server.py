#!/usr/bin/env python3
"""A minimal OpenAI-compatible server for the splash bench tests.

Serves /health, /v1/models, /tokenize (one token per byte) and streaming
/v1/completions (one chunk per token, `max_tokens` of them; usage reports as
cached the longest prefix an earlier prompt under the same cache_salt shared,
short of the last token). Prints `stub: ready at http://127.0.0.1:PORT` once listening.

By default it has no /status, for the test that status-based checks are
reported unverifiable. For the strict-json tests:

  --status         serve an idle /status (policy off) with a grammar object
                   whose counters grow with every constrained request
  --no-grammar     ... but without the grammar object (an older server)
  --json MODE      what streaming /v1/chat/completions answers under
                   response_format json_schema (the schema chosen by its name):
                   valid, variant (valid, other values), not-json (cut short
                   but finish_reason stop), violate (an extra property)

For the third-party arm test, llama.cpp's llama-server dialect (as read from
its tools/server source, Aug 2026): no /status; GET /props with build_info,
model_path, total_slots and default_generation_settings.n_ctx; /tokenize
reads "content" and "add_special" (a "prompt" gets an empty list) and answers
{"tokens": [...]} only; cache_salt is ignored and cache_prompt (default true)
starts each prompt from the longest prefix its one slot still holds, the
last token always recomputed; the last completion chunk carries
finish_reason, usage (prompt_tokens_details.cached_tokens) and timings
(cache_n) together:

  --llama          speak that dialect
  --llama-old      ... as older builds did: usage without prompt_tokens_details,
                   the cached count only in timings.cache_n
  --token-ms MS    time per generated token (default 1)

For the cached test: --no-cache reports zero cached tokens always (splash
dialect: a token-granular prefix cache per cache_salt).

usage: stub_server.py [PORT] [--status] [--no-grammar] [--json MODE] [--no-cache] [--llama | --llama-old]
                      [--token-ms MS]
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


OPTS = None
LOCK = threading.Lock()
GRAMMAR = {"requests": 0, "masks": 0, "mask_ns_total": 0, "mask_ns_p99": 0, "mask_wait_ns_total": 0,
           "mask_ns_per_token": 0.0, "forced_tokens": 0, "drafts_cut": 0}
SEQ = [0]
PROMPTS = {}  # cache_salt -> the token-id prompts seen under it


def cached_tokens(salt, prompt):
    """A prefix cache by salt, token-granular: the longest prefix an earlier
    prompt under this salt shared, never the last token."""
    if OPTS.no_cache or not isinstance(prompt, list) or not salt:
        return 0
    with LOCK:
        seen = PROMPTS.setdefault(salt, [])
        best = 0
        for old in seen:
            n = 0
            while n < min(len(old), len(prompt)) and old[n] == prompt[n]:
                n += 1
            best = max(best, n)
        seen.append(list(prompt))
    return min(best, len(prompt) - 1)
SLOT = [[]]  # llama mode: the token ids the one slot's KV holds

# one valid instance of each of bench's built-in schemas (src/tools/bench_json.c)
VALID = {
    "person": {"name": "Emma", "age": 21, "married": False, "born": "1795-12-16", "height_cm": 160, "rating": None},
    "order": {"id": "123e4567-e89b-12d3-a456-426614174000", "status": "shipped",
              "lines": [{"sku": "ABC-123", "qty": 2, "tags": ["gift"]}], "note": None},
    "tree": {"name": "Anne", "kids": [{"name": "Bo", "kids": []}]},
}


def json_answer(name, mode):
    v = json.loads(json.dumps(VALID[name]))
    if mode == "variant":
        v["name" if "name" in v else "status"] = "Jane" if "name" in v else "pending"
    if mode == "violate":
        v["extra"] = 1  # additionalProperties is false in every built-in schema
    text = json.dumps(v, separators=(",", ":"))
    if mode == "not-json":
        text = text[:len(text) // 2]
    return text


def status():
    with LOCK:
        SEQ[0] += 1
        st = {"schema_version": 1, "ready": True, "draining": False,
              "policy": {"verify_rows": "off", "verify_rows_effective": "off"},
              "scheduler": {"queued": 0, "prefilling": 0, "decoding": 0},
              "cache": {"blocks_used": 0}, "requests": {"active": []},
              "memory": {"resident_bytes": 1 << 20}, "snapshot": {"seq": SEQ[0]}}
        if not OPTS.no_grammar:
            g = dict(GRAMMAR)
            g["mask_ns_per_token"] = g["mask_ns_total"] / g["masks"] if g["masks"] else 0.0
            st["grammar"] = g
        return st


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/props" and llama():
            self.reply(200, {"default_generation_settings": {"params": {}, "n_ctx": 4096}, "total_slots": 1,
                             "model_alias": "stub", "model_path": "/nonexistent/stub.gguf",
                             "build_info": "b0-stub", "is_sleeping": False})
        elif self.path == "/health":
            self.reply(200, {"status": "ok"})
        elif self.path == "/status" and OPTS.status:
            self.reply(200, status())
        elif self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
        else:
            self.reply(404, {"error": {"message": "not found", "type": "not_found", "param": None, "code": None}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/tokenize":
            if llama():
                ids = list(req.get("content", "").encode()) if "content" in req else []
                self.reply(200, {"tokens": ids})
            else:
                ids = list(req.get("prompt", "").encode())
                self.reply(200, {"tokens": ids, "count": len(ids)})
            return
        if self.path == "/v1/chat/completions":
            self.chat(req)
            return
        if self.path != "/v1/completions":
            self.reply(404, {"error": {"message": "not found", "type": "not_found", "param": None, "code": None}})
            return
        prompt = req.get("prompt", [])
        n_prompt = len(prompt) if isinstance(prompt, list) else len(str(prompt).encode())
        max_tokens = int(req.get("max_tokens", 16))
        cached = 0
        if not llama():
            cached = cached_tokens(req.get("cache_salt"), prompt)
        else:
            with LOCK:
                if req.get("cache_prompt", True) and isinstance(prompt, list):
                    while cached < min(len(prompt), len(SLOT[0])) and prompt[cached] == SLOT[0][cached]:
                        cached += 1
                    cached = min(cached, len(prompt) - 1)  # the last token is always recomputed
                SLOT[0] = list(prompt) if isinstance(prompt, list) else []
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        time.sleep(0.002 + (n_prompt - cached) * 1e-5)  # "prefill"
        if llama():
            for i in range(max_tokens):
                event({"id": "cmpl-stub", "object": "text_completion", "model": "stub",
                       "choices": [{"index": 0, "text": "ab"[i % 2], "logprobs": None, "finish_reason": None}]})
                time.sleep(OPTS.token_ms / 1000)
            usage = {"completion_tokens": max_tokens, "prompt_tokens": n_prompt,
                     "total_tokens": n_prompt + max_tokens}
            if not OPTS.llama_old:
                usage["prompt_tokens_details"] = {"cached_tokens": cached}
            event({"id": "cmpl-stub", "object": "text_completion", "model": "stub",
                   "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "length"}],
                   "usage": usage, "timings": {"cache_n": cached, "prompt_n": n_prompt - cached,
                                               "predicted_n": max_tokens}})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True
            return
        for i in range(max_tokens):
            last = i == max_tokens - 1
            event({"id": "cmpl-stub", "object": "text_completion", "model": "stub",
                   "choices": [{"index": 0, "text": "ab"[i % 2], "finish_reason": "length" if last else None}]})
            time.sleep(OPTS.token_ms / 1000)
        event({"id": "cmpl-stub", "object": "text_completion", "model": "stub", "choices": [],
               "usage": {"prompt_tokens": n_prompt, "completion_tokens": max_tokens,
                         "total_tokens": n_prompt + max_tokens,
                         "prompt_tokens_details": {"cached_tokens": cached}}})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


    def chat(self, req):
        rf = req.get("response_format") or {}
        name = (rf.get("json_schema") or {}).get("name")
        if rf.get("type") != "json_schema" or name not in VALID:
            self.reply(400, {"error": {"message": "the stub answers only bench's json_schema turns",
                                       "type": "invalid_request_error", "param": None, "code": None}})
            return
        text = json_answer(name, OPTS.json)
        pieces = [text[i:i + 4] for i in range(0, len(text), 4)]
        with LOCK:
            GRAMMAR["requests"] += 1
            GRAMMAR["masks"] += len(pieces)
            GRAMMAR["mask_ns_total"] += 1500 * len(pieces)
            GRAMMAR["mask_wait_ns_total"] += 100 * len(pieces)
            GRAMMAR["forced_tokens"] += 1
        n_prompt = sum(len(str(m.get("content", ""))) for m in req.get("messages", []))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        for i, p in enumerate(pieces):
            last = i == len(pieces) - 1
            event({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": "stub",
                   "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": "stop" if last else None}]})
        usage = {"prompt_tokens": n_prompt, "completion_tokens": len(pieces), "total_tokens": n_prompt + len(pieces)}
        if not OPTS.llama_old:
            usage["prompt_tokens_details"] = {"cached_tokens": 0}
        last = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": "stub", "choices": [],
                "usage": usage}
        if llama():
            last["timings"] = {"cache_n": 0, "prompt_n": n_prompt, "predicted_n": len(pieces)}
        event(last)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def llama():
    return OPTS.llama or OPTS.llama_old


def main():
    global OPTS
    ap = argparse.ArgumentParser()
    ap.add_argument("port", nargs="?", type=int, default=0)
    ap.add_argument("--status", action="store_true")
    ap.add_argument("--no-grammar", action="store_true")
    ap.add_argument("--json", choices=["valid", "variant", "not-json", "violate"], default="valid")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--llama", action="store_true")
    ap.add_argument("--llama-old", action="store_true")
    ap.add_argument("--token-ms", type=float, default=1.0)
    OPTS = ap.parse_args()
    port = OPTS.port
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"stub: ready at http://127.0.0.1:{srv.server_address[1]} (model stub)", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
