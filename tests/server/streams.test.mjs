// Streaming under stress against the real `splash serve`:
//  - a client that disconnects in mid-stream: /status shows its request
//    cancelled and its KV blocks freed (polled, with a generous bound only);
//  - 32 simultaneous streaming clients, each with its own seed and prompt:
//    all complete, and each one's reassembled text equals the same request
//    run alone beforehand (the engine is batch-invariant, so this is exact).
//   node streams.test.mjs --splash BIN --model GGUF
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { options, reassemble, sseEvents, startServer, status, waitStatus } from "./lib.mjs";

const opts = options();
const N_CLIENTS = 32;

let srv;
before(async () => { srv = await startServer(opts, ["--max-seqs", String(N_CLIENTS)]); });
after(async () => { assert.equal(await srv.stop(), 0); });

// A streamed POST; resolves with the whole SSE body once it ends.
function stream(path, body) {
    return new Promise((resolve, reject) => {
        const data = JSON.stringify({ ...body, stream: true });
        const req = http.request({ host: "127.0.0.1", port: srv.port, method: "POST", path, agent: false,
            headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } }, (res) => {
            if (res.statusCode !== 200) reject(new Error(`${path} -> ${res.statusCode}`));
            assert.match(res.headers["content-type"], /^text\/event-stream/);
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (c) => { text += c; });
            res.on("end", () => resolve(text));
            res.on("error", reject);
        });
        req.on("error", reject);
        req.end(data);
    });
}

test("a client that disconnects mid-stream cancels its request and frees its blocks", async () => {
    // the engine publishes counters after the step whose events it sent: wait
    // until the last solo request is seen finished before taking the baseline
    const before = await waitStatus(srv.port, (s) => s.requests.active.length === 0, 30000, "idle before");
    assert.equal(before.cache.blocks_used, 0);
    const data = JSON.stringify({ prompt: "A very long story begins here", max_tokens: 3500, ignore_eos: true, stream: true });
    let events = 0;
    const req = http.request({ host: "127.0.0.1", port: srv.port, method: "POST", path: "/v1/completions", agent: false,
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } });
    const gotChunks = new Promise((resolve, reject) => {
        req.on("response", (res) => {
            res.setEncoding("utf8");
            res.on("data", (c) => {
                events += (c.match(/^data: /gm) ?? []).length;
                if (events >= 4) resolve();
            });
        });
        req.on("error", (e) => { if (events < 4) reject(e); });
    });
    req.end(data);
    await gotChunks;
    // it is running and holds blocks (so the check below can fail)
    const during = await status(srv.port);
    assert.equal(during.requests.active.length, 1);
    assert.ok(during.cache.blocks_used > 0, JSON.stringify(during.cache));
    const id = during.requests.active[0].id;
    req.destroy();
    const done = await waitStatus(srv.port,
        (s) => s.cache.blocks_used === 0 && s.requests.active.length === 0 && s.requests.cancelled > before.requests.cancelled,
        60000, "blocks freed and the request cancelled");
    assert.equal(done.requests.cancelled, before.requests.cancelled + 1);
    assert.equal(done.requests.completed, before.requests.completed);
    assert.ok(done.requests.generated_tokens < before.requests.generated_tokens + 3500, "it stopped early");
    assert.ok(!done.requests.active.some((a) => a.id === id));
});

test(`${N_CLIENTS} simultaneous streaming clients get the texts they get alone`, async () => {
    const bodies = Array.from({ length: N_CLIENTS }, (_, i) => i % 2
        ? { path: "/v1/chat/completions", body: { messages: [{ role: "user", content: `Client ${i}, tell me something.` }], max_tokens: 12 + (i % 5), temperature: 0.9, seed: 1000 + i, stream_options: { include_usage: true } } }
        : { path: "/v1/completions", body: { prompt: `Client ${i} writes:`, max_tokens: 12 + (i % 7), temperature: 0.9, seed: 1000 + i, stream_options: { include_usage: true } } });
    // alone, one after another
    const alone = [];
    for (const b of bodies) alone.push(reassemble(sseEvents(await stream(b.path, b.body))));
    // all at once
    // the engine publishes counters after the step whose events it sent: wait
    // until the last solo request is seen finished before taking the baseline
    const before = await waitStatus(srv.port, (s) => s.requests.active.length === 0, 30000, "idle before");
    const together = (await Promise.all(bodies.map((b) => stream(b.path, b.body)))).map((t) => {
        const ev = sseEvents(t);
        assert.equal(ev[ev.length - 1], "[DONE]");
        return reassemble(ev);
    });
    for (let i = 0; i < N_CLIENTS; i++) {
        assert.equal(together[i].text, alone[i].text, `client ${i}: text differs from its run alone`);
        assert.equal(together[i].finish, alone[i].finish, `client ${i}`);
        assert.ok(together[i].finish === "stop" || together[i].finish === "length", `client ${i}`);
        // usage too, except cached_tokens: the second run finds the first one's prefix
        for (const k of ["prompt_tokens", "completion_tokens", "total_tokens"])
            assert.equal(together[i].usage[k], alone[i].usage[k], `client ${i}: ${k}`);
    }
    // different seeds and prompts gave different texts (the comparison can fail)
    assert.equal(new Set(together.map((t) => t.text)).size, N_CLIENTS);
    const after = await waitStatus(srv.port, (s) => s.requests.active.length === 0 && s.cache.blocks_used === 0, 30000, "idle");
    assert.equal(after.requests.completed - before.requests.completed, N_CLIENTS);
    assert.equal(after.requests.failed, before.requests.failed);
});
