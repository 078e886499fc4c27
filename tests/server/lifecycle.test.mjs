// Requests whose end the client or the server cuts short, against the real
// `splash serve` (a step delay keeps generation long, so the cut always
// comes first; nothing here asserts on speed):
//  - a non-streaming request whose client disconnects is cancelled: /status
//    shows it cancelled, not completed, and its KV blocks freed;
//  - at shutdown, requests still running when --drain-timeout passes end
//    with an answer, never in silence: an OpenAI stream with an error event
//    and [DONE], an Anthropic stream with its error event, a whole request
//    with 503.
//  - --request-timeout ends a whole request with 408 and a stream with an
//    error event;
//  - the listening socket is loopback unless --host says otherwise.
//   node lifecycle.test.mjs --splash BIN --model GGUF
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import http from "node:http";
import { test } from "node:test";
import { isErrorBody, sseEvents, startServer, status, waitStatus, options } from "./lib.mjs";

const opts = options();
const SLOW = ["--test-step-delay-us", "2000"]; // 2 ms a step: 3000 tokens take 6 s or more
const LONG = { max_tokens: 3000, ignore_eos: true };

// A POST whose response is collected as it comes; firstData resolves at the
// first body bytes, done with {status, text} at the end (or the cut).
function open(port, path, body) {
    const data = JSON.stringify(body);
    let text = "", status = 0, gotData;
    const firstData = new Promise((res) => { gotData = res; });
    const req = http.request({ host: "127.0.0.1", port, method: "POST", path, agent: false,
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } });
    const done = new Promise((resolve) => {
        req.on("response", (res) => {
            status = res.statusCode;
            res.setEncoding("utf8");
            res.on("data", (c) => { text += c; gotData(); });
            res.on("end", () => resolve({ status, text, complete: true }));
            res.on("error", () => resolve({ status, text, complete: false }));
            res.on("aborted", () => resolve({ status, text, complete: false }));
        });
        req.on("error", () => resolve({ status, text, complete: false }));
    });
    req.end(data);
    return { req, firstData, done };
}

test("a non-streaming request whose client leaves is cancelled and frees its blocks", async () => {
    const srv = await startServer(opts, SLOW);
    try {
        const before = await status(srv.port);
        const c = open(srv.port, "/v1/completions", { prompt: "A very long story begins here", ...LONG });
        // decoding, and holding blocks (so the check below can fail)
        const during = await waitStatus(srv.port, (s) => s.requests.active.some((a) => a.generated_tokens > 0),
            30000, "the request decoding");
        assert.ok(during.cache.blocks_used > 0, JSON.stringify(during.cache));
        c.req.destroy();
        const done = await waitStatus(srv.port,
            (s) => s.requests.active.length === 0 && s.cache.blocks_used === 0, 60000, "the request ended");
        assert.equal(done.requests.cancelled, before.requests.cancelled + 1, "cancelled");
        assert.equal(done.requests.completed, before.requests.completed, "not run to max_tokens");
        assert.ok(done.requests.generated_tokens < before.requests.generated_tokens + LONG.max_tokens);
        // the server goes on serving
        const next = open(srv.port, "/v1/completions", { prompt: "hi", max_tokens: 2 });
        assert.equal((await next.done).status, 200);
    } finally {
        assert.equal(await srv.stop(), 0);
    }
});

test("streams cut by the drain timeout end with an error event, whole answers with 503", async () => {
    const srv = await startServer(opts, [...SLOW, "--drain-timeout", "1"]);
    const chat = open(srv.port, "/v1/chat/completions",
        { messages: [{ role: "user", content: "Tell me everything." }], stream: true, ...LONG });
    const cmpl = open(srv.port, "/v1/completions", { prompt: "Once", stream: true, ...LONG });
    const msgs = open(srv.port, "/v1/messages",
        { model: srv.modelId, messages: [{ role: "user", content: "Go on." }], stream: true, ...LONG });
    const whole = open(srv.port, "/v1/completions", { prompt: "Whole", ...LONG });
    await Promise.all([chat.firstData, cmpl.firstData, msgs.firstData]);
    await waitStatus(srv.port, (s) => s.requests.active.length === 4 &&
        s.requests.active.every((a) => a.generated_tokens > 0), 30000, "all four decoding");
    assert.equal(await srv.stop(), 0);
    const [c, p, m, w] = await Promise.all([chat.done, cmpl.done, msgs.done, whole.done]);

    for (const [name, r] of [["chat", c], ["completions", p]]) {
        assert.equal(r.status, 200, name);
        assert.ok(r.complete, `${name}: the stream was cut without an end`);
        const ev = sseEvents(r.text);
        assert.equal(ev[ev.length - 1], "[DONE]", `${name}: ends with [DONE]: ${r.text.slice(-300)}`);
        const err = ev[ev.length - 2];
        assert.ok(isErrorBody(err), `${name}: an error event before [DONE]: ${JSON.stringify(err)}`);
        assert.equal(err.error.code, "cancelled");
        assert.match(err.error.message, /shutting down/);
        assert.ok(ev.length > 3, `${name}: it had streamed tokens first`);
    }

    assert.equal(m.status, 200);
    assert.ok(m.complete, "messages: the stream was cut without an end");
    const blocks = m.text.trim().split("\n\n");
    const last = blocks[blocks.length - 1];
    assert.match(last, /^event: error\n/, m.text.slice(-300));
    const body = JSON.parse(last.split("\n").find((l) => l.startsWith("data: ")).slice(6));
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "overloaded_error");
    assert.match(body.error.message, /shutting down/);

    assert.equal(w.status, 503, w.text);
    assert.ok(isErrorBody(JSON.parse(w.text)), w.text);
    assert.match(srv.stderr(), /draining \(up to 1 s\)/);
});

test("--request-timeout ends a whole request with 408 and a stream with an error event; blocks are freed", async () => {
    const srv = await startServer(opts, [...SLOW, "--request-timeout", "1"]);
    try {
        const whole = open(srv.port, "/v1/completions", { prompt: "Whole", ...LONG });
        const stream = open(srv.port, "/v1/chat/completions",
            { messages: [{ role: "user", content: "Tell me everything." }], stream: true, ...LONG });
        const [w, s] = await Promise.all([whole.done, stream.done]);
        assert.equal(w.status, 408, w.text);
        const body = JSON.parse(w.text);
        assert.ok(isErrorBody(body), w.text);
        assert.equal(body.error.code, "request_timeout");
        assert.match(body.error.message, /--request-timeout \(1 s\)/);
        assert.equal(s.status, 200);
        assert.ok(s.complete, "the stream was cut without an end");
        const ev = sseEvents(s.text);
        assert.equal(ev[ev.length - 1], "[DONE]", s.text.slice(-300));
        assert.ok(isErrorBody(ev[ev.length - 2]), JSON.stringify(ev[ev.length - 2]));
        assert.match(ev[ev.length - 2].error.message, /request-timeout/);
        await waitStatus(srv.port, (st) => st.requests.active.length === 0 && st.cache.blocks_used === 0, 30000,
            "both requests ended and their blocks freed");
    } finally {
        assert.equal(await srv.stop(), 0);
    }
});

// The listening sockets of a port, as the kernel lists them: "ADDR" in
// /proc/net/tcp's hex (0100007F is 127.0.0.1, 00000000 any address).
function listeners(port) {
    const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
    const out = [];
    for (const f of ["/proc/net/tcp", "/proc/net/tcp6"]) {
        let text = "";
        try { text = readFileSync(f, "utf8"); } catch { continue; }
        for (const line of text.split("\n").slice(1)) {
            const col = line.trim().split(/\s+/);
            if (col.length > 3 && col[3] === "0A" && col[1].endsWith(`:${hexPort}`)) out.push(col[1].split(":")[0]);
        }
    }
    return out;
}

test("the server listens on loopback only unless --host says otherwise", async () => {
    const local = await startServer(opts);
    try {
        assert.deepEqual(listeners(local.port), ["0100007F"]);
    } finally {
        assert.equal(await local.stop(), 0);
    }
    const any = await startServer(opts, ["--host", "0.0.0.0"]);
    try {
        assert.deepEqual(listeners(any.port), ["00000000"]);
    } finally {
        assert.equal(await any.stop(), 0);
    }
});
