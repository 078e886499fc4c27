#!/usr/bin/env python3
"""A minimal OpenAI-compatible completions server with no /status, for the
splash bench test that status-based checks are reported unverifiable.

Serves /health, /v1/models, /tokenize (one token per byte) and streaming
/v1/completions (one chunk per token, `max_tokens` of them, usage with zero
cached tokens). Prints `stub: ready at http://127.0.0.1:PORT` once listening.
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
        if self.path == "/health":
            self.reply(200, {"status": "ok"})
        elif self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
        else:
            self.reply(404, {"error": {"message": "not found", "type": "not_found", "param": None, "code": None}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/tokenize":
            ids = list(req.get("prompt", "").encode())
            self.reply(200, {"tokens": ids, "count": len(ids)})
            return
        if self.path != "/v1/completions":
            self.reply(404, {"error": {"message": "not found", "type": "not_found", "param": None, "code": None}})
            return
        prompt = req.get("prompt", [])
        n_prompt = len(prompt) if isinstance(prompt, list) else len(str(prompt).encode())
        max_tokens = int(req.get("max_tokens", 16))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        time.sleep(0.002 + n_prompt * 1e-5)  # "prefill"
        for i in range(max_tokens):
            last = i == max_tokens - 1
            event({"id": "cmpl-stub", "object": "text_completion", "model": "stub",
                   "choices": [{"index": 0, "text": "ab"[i % 2], "finish_reason": "length" if last else None}]})
            time.sleep(0.001)
        event({"id": "cmpl-stub", "object": "text_completion", "model": "stub", "choices": [],
               "usage": {"prompt_tokens": n_prompt, "completion_tokens": max_tokens,
                         "total_tokens": n_prompt + max_tokens, "prompt_tokens_details": {"cached_tokens": 0}}})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"stub: ready at http://127.0.0.1:{srv.server_address[1]} (model stub)", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
