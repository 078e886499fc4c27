"""Loads a local page in Debian's headless Chromium over the DevTools
protocol on a pipe (--remote-debugging-pipe: fd 3 in, fd 4 out, messages
ended by NUL), with no npm package and no network: the page's console
errors, uncaught exceptions and log errors (CSP violations among them) are
collected, an expression is evaluated in the loaded page, and a screenshot
is kept.

    with Page(chromium, profile_dir) as p:
        p.load("file:///...")
        value = p.evaluate("document.title")
        p.errors     # ["console error: ...", ...]
"""
import base64
import json
import os
import select
import subprocess
import time


class Page:
    def __init__(self, chromium, profile_dir, timeout=60):
        self.timeout = timeout
        self.errors = []
        self.events = []
        self.next_id = 0
        self.buf = b""
        to_child, self.w = os.pipe()
        self.r, from_child = os.pipe()
        # the child's ends must land on fds 3 and 4: first move every end
        # above the low numbers, then dup2 them into place in the child
        hi = [os.dup2(fd, 100 + i, inheritable=False) for i, fd in enumerate((to_child, from_child))]
        for fd in (to_child, from_child):
            os.close(fd)

        def place():
            os.dup2(hi[0], 3)
            os.dup2(hi[1], 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--remote-debugging-pipe", f"--user-data-dir={profile_dir}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=place, close_fds=False)
        for fd in hi:
            os.close(fd)
        self.session = None

    def __enter__(self):
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        tid = page["targetId"] if page else self.call("Target.createTarget", {"url": "about:blank"},
                                                       session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": tid, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")
        return self

    def __exit__(self, *exc):
        try:
            self.call("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("chromium did not answer over the DevTools pipe")
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.poll() is not None else ""
                raise RuntimeError(f"chromium closed the DevTools pipe: {err}")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def _note(self, m):
        """Keeps an event; records the ones that are errors."""
        self.events.append(m)
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                             for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            self.errors.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append(f"log error ({e.get('source')}): {e.get('text')}")

    def call(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._note(m)

    def wait_event(self, method):
        deadline = time.monotonic() + self.timeout
        if any(e.get("method") == method for e in self.events):
            return
        while True:
            m = self._read_message(deadline)
            self._note(m)
            if m.get("method") == method:
                return

    def load(self, url):
        self.events.clear()
        r = self.call("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise RuntimeError(f"navigating to {url}: {r['errorText']}")
        self.wait_event("Page.loadEventFired")
        self.evaluate("0")  # drains the events sent before the load finished

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluating {expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
