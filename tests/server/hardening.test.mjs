// The HTTP layer against hostile or unusual clients, over raw sockets where
// node:http would refuse to send the bytes: request heads that trickle in
// (slowloris), connections beyond --max-connections, chunked bodies over
// --max-body or never ending, protocol errors and request-smuggling shapes,
// escaped control bytes in the path; plus CORS (--cors-origin), the
// WWW-Authenticate header on 401 and HEAD on GET endpoints. Deadline tests
// check only bounds (closed no sooner than the deadline, and not never).
//   node hardening.test.mjs --splash BIN --model GGUF
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, test } from "node:test";
import { get, isErrorBody, options, post, request, sseEvents, startServer } from "./lib.mjs";

const opts = options();
const KEY = "sk-hardening";
const AUTH = { Authorization: `Bearer ${KEY}` };
const ORIGIN = "http://app.example:5173";
const MAX_BODY = 4096;
const HEADER_TIMEOUT_S = 2;
const BODY_TIMEOUT_S = 2;
const MAX_CONNECTIONS = 4;

let srv;
before(async () => {
    srv = await startServer(opts, ["--api-key", KEY, "--max-body", String(MAX_BODY), "--cors-origin", ORIGIN,
        "--cors-origin", "https://other.example", "--header-timeout", String(HEADER_TIMEOUT_S),
        "--body-timeout", String(BODY_TIMEOUT_S)]);
});
after(async () => { assert.equal(await srv.stop(), 0); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Opens a raw socket; collects what the server sends and when it closes.
function rawSocket(port) {
    return new Promise((resolve, reject) => {
        const sock = net.connect(port, "127.0.0.1");
        const state = { sock, data: Buffer.alloc(0), closed: false, closedAt: 0 };
        state.done = new Promise((res) => {
            sock.on("close", () => { state.closed = true; state.closedAt = Date.now(); res(state); });
        });
        sock.on("data", (d) => { state.data = Buffer.concat([state.data, d]); });
        sock.on("error", () => {}); // a reset counts as closed
        sock.on("connect", () => resolve(state));
        sock.once("error", reject);
    });
}

// One raw request; the parsed response once the server closes the socket
// (every answer here says Connection: close) or a whole response arrived.
async function raw(port, bytes) {
    const s = await rawSocket(port);
    s.sock.write(bytes);
    for (let i = 0; i < 500 && !s.closed && !parse(s.data)?.complete; i++) await sleep(10);
    s.sock.destroy();
    return parse(s.data);
}

function parse(buf) {
    const text = buf.toString("latin1");
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) return undefined;
    const [line, ...lines] = text.slice(0, end).split("\r\n");
    const headers = {};
    for (const l of lines) {
        const i = l.indexOf(":");
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    const body = buf.subarray(Buffer.byteLength(text.slice(0, end + 4), "latin1")).toString("utf8");
    let json;
    try { json = JSON.parse(body); } catch { json = undefined; }
    const want = Number(headers["content-length"] ?? -1);
    return { status: Number(line.split(" ")[1]), headers, body, json, complete: want >= 0 && Buffer.byteLength(body) >= want };
}

const HOST = "Host: localhost\r\n";
const JSON_POST = (extra) => `POST /tokenize HTTP/1.1\r\n${HOST}Authorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n${extra}`;

// ---- protocol errors answered with the OpenAI error body ----
const PROTOCOL = [
    { name: "two differing Content-Length", bytes: JSON_POST("Content-Length: 2\r\nContent-Length: 5\r\n\r\n{}"), status: 400, match: /Content-Length/ },
    { name: "Content-Length twice, equal", bytes: JSON_POST("Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"), status: 400, match: /Content-Length/ },
    { name: "Transfer-Encoding with Content-Length", bytes: JSON_POST("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), status: 400, match: /Transfer-Encoding/ },
    { name: "Transfer-Encoding twice", bytes: JSON_POST("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), status: 400, match: /Transfer-Encoding/ },
    { name: "HTTP/1.1 without Host", bytes: "GET /health HTTP/1.1\r\n\r\n", status: 400, match: /Host/ },
    { name: "duplicate Host", bytes: `GET /health HTTP/1.1\r\n${HOST}${HOST}\r\n`, status: 400, match: /Host/ },
    { name: "head over the limit", bytes: `GET /health HTTP/1.1\r\n${HOST}X-Big: ${"a".repeat(20000)}\r\n\r\n`, status: 431 },
    { name: "URI over the limit", bytes: `GET /${"a".repeat(9000)} HTTP/1.1\r\n${HOST}\r\n`, status: 414 },
    { name: "HTTP/1.2", bytes: `GET /health HTTP/1.2\r\n${HOST}\r\n`, status: 505, match: /HTTP\/1\.2/ },
    { name: "path with %00", bytes: `GET /health%00.json HTTP/1.1\r\n${HOST}\r\n`, status: 400, match: /control/ },
    { name: "path with %0a", bytes: `GET /v1/models%0aX HTTP/1.1\r\n${HOST}\r\n`, status: 400, match: /control/ },
    { name: "query with %1b", bytes: `GET /health?x=%1b HTTP/1.1\r\n${HOST}\r\n`, status: 400, match: /control/ },
];

for (const c of PROTOCOL) {
    test(`${c.status} ${c.name}`, async () => {
        const r = await raw(srv.port, c.bytes);
        assert.ok(r, "no answer");
        assert.equal(r.status, c.status, r.body);
        assert.ok(isErrorBody(r.json), `not an OpenAI error body: ${r.body}`);
        assert.equal(r.headers["content-type"], "application/json");
        if (c.match) assert.match(r.json.error.message, c.match);
    });
}

// Shapes an HTTP library would typically answer with its own page: the own
// parser (src/server/http_parse.c) answers each with the OpenAI error body.
const SHAPES = [
    { name: "malformed request line", bytes: `GET /health HTTP/1.1 extra\r\n${HOST}\r\n`, status: 400, match: /request line/ },
    { name: "method not a token", bytes: `G(T /health HTTP/1.1\r\n${HOST}\r\n`, status: 400, match: /method/ },
    { name: "Content-Length not a number", bytes: JSON_POST("Content-Length: abc\r\n\r\n{}"), status: 400, match: /Content-Length/ },
    { name: "negative Content-Length", bytes: JSON_POST("Content-Length: -2\r\n\r\n{}"), status: 400, match: /Content-Length/ },
    { name: "HTTP/2.0 request line", bytes: `GET /health HTTP/2.0\r\n${HOST}\r\n`, status: 505, match: /HTTP\/2\.0/ },
    { name: "header line without a colon", bytes: `GET /health HTTP/1.1\r\n${HOST}X-No-Colon\r\n\r\n`, status: 400, match: /colon/ },
    { name: "whitespace before a header's colon", bytes: `GET /health HTTP/1.1\r\nHost : localhost\r\n\r\n`, status: 400, match: /colon/ },
    { name: "obs-fold", bytes: `GET /health HTTP/1.1\r\n${HOST}X-A: a\r\n  folded\r\n\r\n`, status: 400, match: /obs-fold/ },
    { name: "NUL in a header", bytes: `GET /health HTTP/1.1\r\n${HOST}X-A: a\0b\r\n\r\n`, status: 400, match: /NUL/ },
    { name: "Transfer-Encoding: gzip", bytes: JSON_POST("Transfer-Encoding: gzip\r\n\r\n"), status: 501, match: /Transfer-Encoding/ },
    { name: "head of 200 KiB", bytes: `GET /health HTTP/1.1\r\n${HOST}X-Big: ${"a".repeat(200 << 10)}\r\n\r\n`, status: 431 },
    { name: "URI of 200 KiB", bytes: `GET /${"a".repeat(200 << 10)} HTTP/1.1\r\n${HOST}\r\n`, status: 414 },
];
for (const c of SHAPES) {
    test(`${c.status} ${c.name} (the own parser's JSON body)`, async () => {
        const r = await raw(srv.port, c.bytes);
        assert.ok(r, "no answer");
        assert.equal(r.status, c.status, r.body);
        assert.ok(isErrorBody(r.json), `not an OpenAI error body: ${r.body}`);
        assert.equal(r.headers["content-type"], "application/json");
        assert.equal(r.headers.connection, "close");
        if (c.match) assert.match(r.json.error.message, c.match);
    });
}

// ---- the connection layer: keep-alive, pipelining, HTTP/1.0, HEAD, 100-continue ----

// Every whole response in buf, in order (HEAD answers have no body).
function parseAll(buf, heads = []) {
    const out = [];
    let off = 0;
    for (;;) {
        const text = buf.subarray(off).toString("latin1");
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) return out;
        const r = parse(buf.subarray(off));
        const len = heads[out.length] ? 0 : Number(r.headers["content-length"] ?? 0);
        if (buf.length - off < end + 4 + len) return out;
        r.body = buf.subarray(off + end + 4, off + end + 4 + len).toString("utf8");
        try { r.json = JSON.parse(r.body); } catch { r.json = undefined; }
        out.push(r);
        off += end + 4 + len;
    }
}

async function exchange(s, bytes, n, heads) {
    const before = s.data.length;
    s.sock.write(bytes);
    let got = [];
    for (let i = 0; i < 500 && got.length < n && !s.closed; i++) {
        await sleep(10);
        got = parseAll(s.data.subarray(before), heads);
    }
    return got;
}

test("two requests on one kept-alive socket are both answered", async () => {
    const s = await rawSocket(srv.port);
    try {
        const [a] = await exchange(s, `GET /health HTTP/1.1\r\n${HOST}\r\n`, 1);
        assert.equal(a?.status, 200);
        assert.equal(a.headers.connection, undefined);
        const [b] = await exchange(s, `GET /v1/models HTTP/1.1\r\n${HOST}Authorization: Bearer ${KEY}\r\n\r\n`, 1);
        assert.equal(b?.status, 200);
        assert.ok(Array.isArray(b.json?.data), b?.body);
        assert.equal(s.closed, false);
    } finally { s.sock.destroy(); }
});

test("pipelined requests on one socket are answered in order", async () => {
    const s = await rawSocket(srv.port);
    try {
        const body = JSON.stringify({ prompt: "hello" });
        const got = await exchange(s, `GET /v1/models HTTP/1.1\r\n${HOST}Authorization: Bearer ${KEY}\r\n\r\n` +
            `POST /tokenize HTTP/1.1\r\n${HOST}Authorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\n\r\n${body}GET /health HTTP/1.1\r\n${HOST}\r\n`, 3);
        assert.equal(got.length, 3);
        assert.ok(Array.isArray(got[0].json?.data), got[0].body);
        assert.ok(Array.isArray(got[1].json?.tokens), got[1].body);
        assert.deepEqual(got[2].json, { status: "ok" });
    } finally { s.sock.destroy(); }
});

test("an HTTP/1.0 request is answered and the connection closed", async () => {
    const s = await rawSocket(srv.port);
    s.sock.write("GET /health HTTP/1.0\r\n\r\n");
    for (let i = 0; i < 500 && !s.closed; i++) await sleep(10);
    assert.ok(s.closed, "HTTP/1.0 without keep-alive must close");
    const [r] = parseAll(s.data);
    assert.equal(r?.status, 200);
    assert.deepEqual(r.json, { status: "ok" });
});

test("HEAD has headers and no body on the wire (the next answer follows at once)", async () => {
    const s = await rawSocket(srv.port);
    try {
        const got = await exchange(s, `HEAD /health HTTP/1.1\r\n${HOST}\r\n` + `GET /health HTTP/1.1\r\n${HOST}\r\n`, 2, [true]);
        assert.equal(got.length, 2);
        assert.equal(got[0].status, 200);
        assert.ok(Number(got[0].headers["content-length"]) > 0);
        assert.equal(got[0].body, "");
        assert.equal(got[1].status, 200);
        assert.deepEqual(got[1].json, { status: "ok" });
    } finally { s.sock.destroy(); }
});

test("Expect: 100-continue gets 100 Continue, then the body is read and answered", async () => {
    const s = await rawSocket(srv.port);
    try {
        const body = JSON.stringify({ prompt: "x".repeat(2000) });
        s.sock.write(`POST /tokenize HTTP/1.1\r\n${HOST}Authorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`);
        for (let i = 0; i < 500 && !s.data.toString().includes("\r\n\r\n") && !s.closed; i++) await sleep(10);
        assert.match(s.data.toString(), /^HTTP\/1\.1 100 Continue\r\n\r\n$/);
        const before = s.data.length;
        s.sock.write(body);
        let got = [];
        for (let i = 0; i < 500 && !got.length; i++, await sleep(10)) got = parseAll(s.data.subarray(before));
        assert.equal(got[0]?.status, 200, got[0]?.body);
        assert.ok(Array.isArray(got[0].json?.tokens));
    } finally { s.sock.destroy(); }
    // refused by its head: no 100 Continue, the refusal at once
    const r = await raw(srv.port, `POST /tokenize HTTP/1.1\r\n${HOST}Content-Type: application/json\r\n` +
        `Content-Length: 10\r\nExpect: 100-continue\r\n\r\n`);
    assert.equal(r?.status, 401);
});

test("a chunked body with chunk extensions and trailers is read whole; malformed chunks are 400", async () => {
    const body = JSON.stringify({ prompt: "hello there" });
    const [p1, p2] = [body.slice(0, 7), body.slice(7)];
    const ok = await raw(srv.port, JSON_POST(`Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
        `${p1.length.toString(16)};name=value\r\n${p1}\r\n${p2.length.toString(16).toUpperCase()}\r\n${p2}\r\n` +
        `0\r\nX-Trailer: t\r\n\r\n`));
    assert.equal(ok?.status, 200, ok?.body);
    assert.ok(Array.isArray(ok.json?.tokens));
    const bad = await raw(srv.port, JSON_POST(`Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`));
    assert.equal(bad?.status, 400, bad?.body);
    assert.ok(isErrorBody(bad.json));
    assert.match(bad.json.error.message, /chunked/);
});

test("a stream is chunked on HTTP/1.1 and close-delimited on HTTP/1.0", async () => {
    const body = JSON.stringify({ prompt: "hi", max_tokens: 3, stream: true });
    const head = (v) => `POST /v1/completions HTTP/1.${v}\r\n${HOST}Authorization: Bearer ${KEY}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const s11 = await rawSocket(srv.port);
    try {
        s11.sock.write(head(1));
        for (let i = 0; i < 1000 && !s11.data.toString().endsWith("0\r\n\r\n"); i++) await sleep(10);
        const r = parse(s11.data);
        assert.equal(r?.status, 200);
        assert.equal(r.headers["transfer-encoding"], "chunked");
        assert.equal(r.headers["content-type"], "text/event-stream");
        assert.match(r.body, /data: \[DONE\]\n\n\r\n0\r\n\r\n$/);
        assert.equal(s11.closed, false);
    } finally { s11.sock.destroy(); }
    const s10 = await rawSocket(srv.port);
    s10.sock.write(head(0));
    for (let i = 0; i < 1000 && !s10.closed; i++) await sleep(10);
    assert.ok(s10.closed, "an HTTP/1.0 stream ends with the connection");
    const r = parse(s10.data);
    assert.equal(r?.status, 200);
    assert.equal(r.headers["transfer-encoding"], undefined);
    assert.equal(r.headers.connection, "close");
    assert.match(r.body, /data: \[DONE\]\n\n$/);
});

test("--host ::1 listens on IPv6 (port 0: the bound port is reported)", async () => {
    const v6 = await startServer(opts, ["--host", "::1"]);
    try {
        assert.ok(v6.port > 0);
        const r = await new Promise((resolve, reject) => {
            const req = http.request({ host: "::1", port: v6.port, path: "/health", agent: false, headers: { Host: "[::1]" } }, (res) => {
                let text = "";
                res.on("data", (d) => { text += d; });
                res.on("end", () => resolve({ status: res.statusCode, json: JSON.parse(text) }));
            });
            req.on("error", reject);
            req.end();
        });
        assert.equal(r.status, 200);
        assert.deepEqual(r.json, { status: "ok" });
    } finally { assert.equal(await v6.stop(), 0); }
});

// ---- slow clients ----

test("a request head trickling one line at a time is closed by the head deadline", async () => {
    const s = await rawSocket(srv.port);
    const start = Date.now();
    s.sock.write("GET /health HTTP/1.1\r\n");
    for (let i = 0; i < 60 && !s.closed; i++) { // at most 30 s of trickling
        s.sock.write(`X-Trickle-${i}: a\r\n`);
        await sleep(500);
    }
    assert.ok(s.closed, "still open after 30 s of trickling");
    assert.ok(s.closedAt - start >= HEADER_TIMEOUT_S * 1000 - 100, `closed after ${s.closedAt - start} ms`);
    assert.equal(s.data.length, 0);
    assert.equal((await get(srv.port, "/health")).status, 200);
    const metrics = await get(srv.port, "/metrics", AUTH);
    assert.ok(Number(metrics.text.match(/^splash_http_connections_cut_total (\d+)$/m)?.[1]) >= 1, "no cut counted");
});

test("an unterminated chunked upload is closed by the body deadline", async () => {
    const s = await rawSocket(srv.port);
    const start = Date.now();
    s.sock.write(JSON_POST("Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n"));
    for (let i = 0; i < 300 && !s.closed; i++) await sleep(100); // at most 30 s
    assert.ok(s.closed, "still open after 30 s");
    assert.ok(s.closedAt - start >= BODY_TIMEOUT_S * 1000 - 100, `closed after ${s.closedAt - start} ms`);
});

test("a chunked body over --max-body gets 413 while it is still being sent", async () => {
    const res = await new Promise((resolve, reject) => {
        const req = http.request({ host: "127.0.0.1", port: srv.port, method: "POST", path: "/v1/completions", agent: false,
            headers: { ...AUTH, "Content-Type": "application/json", "Transfer-Encoding": "chunked", Origin: ORIGIN } });
        let answered = false;
        req.on("response", (r) => {
            answered = true;
            let text = "";
            r.on("data", (d) => { text += d; });
            r.on("end", () => {
                resolve({ status: r.statusCode, headers: r.headers, json: JSON.parse(text), ended: req.writableEnded });
                req.destroy();
            });
        });
        req.on("error", (e) => { if (!answered) reject(e); });
        (async () => { // never ends the body: only the answer can stop this loop
            req.write('{"prompt": "');
            for (let i = 0; i < 2000 && !answered; i++) {
                req.write("x".repeat(512));
                await sleep(5);
            }
        })();
    });
    assert.equal(res.status, 413);
    assert.equal(res.ended, false);
    assert.ok(isErrorBody(res.json));
    assert.equal(res.json.error.code, "request_too_large");
    assert.equal(res.headers["access-control-allow-origin"], ORIGIN);
});

test("connections beyond --max-connections get 503 at once, not silence", async () => {
    const small = await startServer(opts, ["--max-connections", String(MAX_CONNECTIONS), "--header-timeout", "60"]);
    const holders = [];
    try {
        for (let i = 0; i < MAX_CONNECTIONS; i++) {
            const s = await rawSocket(small.port);
            s.sock.write("GET /health HTTP/1.1\r\n"); // a head that never completes
            holders.push(s);
        }
        await sleep(200);
        const r = await get(small.port, "/health");
        assert.equal(r.status, 503, r.text);
        assert.ok(isErrorBody(r.json));
        assert.match(r.json.error.message, /connection limit/);
        assert.match(r.headers["retry-after"] ?? "", /^\d+$/);
        assert.ok(holders.every((s) => !s.closed), "a holder was closed: the 503 was not the overflow path");
        holders.pop().sock.destroy(); // a slot frees: served again
        let ok = 0;
        for (let i = 0; i < 200 && ok !== 200; i++, await sleep(20)) ok = (await get(small.port, "/health")).status;
        assert.equal(ok, 200);
    } finally {
        for (const s of holders) s.sock.destroy();
        assert.equal(await small.stop(), 0);
    }
});

// ---- CORS ----

test("CORS preflight from a listed origin is answered 204 without a key", async () => {
    const r = await request(srv.port, "OPTIONS", "/v1/chat/completions", {
        headers: { Origin: ORIGIN, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os" } });
    assert.equal(r.status, 204);
    assert.equal(r.headers["access-control-allow-origin"], ORIGIN);
    assert.match(r.headers["access-control-allow-methods"], /POST/);
    assert.match(r.headers["access-control-allow-headers"], /authorization/);
    assert.match(r.headers["access-control-allow-headers"], /x-stainless-os/);
    assert.match(r.headers["access-control-max-age"], /^\d+$/);
    assert.match(r.headers.vary, /Origin/);
    const g = await request(srv.port, "OPTIONS", "/v1/models", { headers: { Origin: ORIGIN, "Access-Control-Request-Method": "GET" } });
    assert.equal(g.status, 204);
    assert.match(g.headers["access-control-allow-methods"], /GET/);
});

test("CORS preflight from an unlisted origin is refused", async () => {
    const r = await request(srv.port, "OPTIONS", "/v1/chat/completions", {
        headers: { Origin: "http://evil.example", "Access-Control-Request-Method": "POST" } });
    assert.equal(r.status, 403);
    assert.ok(isErrorBody(r.json));
    assert.equal(r.headers["access-control-allow-origin"], undefined);
});

test("CORS headers on answers, streams and errors for listed origins only", async () => {
    const ok = await get(srv.port, "/v1/models", { ...AUTH, Origin: ORIGIN });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers["access-control-allow-origin"], ORIGIN);
    assert.match(ok.headers.vary, /Origin/);
    const other = await get(srv.port, "/v1/models", { ...AUTH, Origin: "https://OTHER.example" });
    assert.equal(other.headers["access-control-allow-origin"], "https://OTHER.example");
    const stream = await post(srv.port, "/v1/chat/completions",
        { messages: [{ role: "user", content: "hi" }], max_tokens: 2, stream: true }, { ...AUTH, Origin: ORIGIN });
    assert.equal(stream.status, 200);
    assert.equal(stream.headers["access-control-allow-origin"], ORIGIN);
    assert.equal(sseEvents(stream.text).at(-1), "[DONE]");
    const err = await post(srv.port, "/v1/completions", { prompt: 5 }, { ...AUTH, Origin: ORIGIN });
    assert.equal(err.status, 400);
    assert.equal(err.headers["access-control-allow-origin"], ORIGIN);
    const unauth = await get(srv.port, "/v1/models", { Origin: ORIGIN });
    assert.equal(unauth.status, 401);
    assert.equal(unauth.headers["access-control-allow-origin"], ORIGIN);
    const evil = await get(srv.port, "/v1/models", { ...AUTH, Origin: "http://evil.example" });
    assert.equal(evil.status, 200);
    assert.equal(evil.headers["access-control-allow-origin"], undefined);
    const none = await get(srv.port, "/v1/models", AUTH);
    assert.equal(none.headers["access-control-allow-origin"], undefined);
});

test("--cors-origin '*' allows any origin; without the flag there are no CORS headers", async () => {
    const any = await startServer(opts, ["--cors-origin", "*"]);
    const plain = await startServer(opts);
    try {
        const r = await get(any.port, "/health", { Origin: "http://anything.example" });
        assert.equal(r.headers["access-control-allow-origin"], "*");
        const p = await get(plain.port, "/health", { Origin: "http://anything.example" });
        assert.equal(p.headers["access-control-allow-origin"], undefined);
        assert.equal(p.headers.vary, undefined);
        const pre = await request(plain.port, "OPTIONS", "/v1/models", { headers: { Origin: "http://a.example", "Access-Control-Request-Method": "GET" } });
        assert.equal(pre.status, 405);
    } finally {
        assert.equal(await any.stop(), 0);
        assert.equal(await plain.stop(), 0);
    }
});

test("--cors-origin values are validated at start-up", async () => {
    for (const bad of ["app.example", "http://app.example/", "ftp://x", "http://a.example:99999", "http://", "http://a b"])
        await assert.rejects(startServer(opts, ["--cors-origin", bad]), /--cors-origin: .* is not an origin/, bad);
});

// ---- authentication and HEAD ----

test("401 carries WWW-Authenticate: Bearer", async () => {
    const r = await get(srv.port, "/v1/models");
    assert.equal(r.status, 401);
    assert.match(r.headers["www-authenticate"] ?? "", /^Bearer/);
});

test("HEAD on GET endpoints answers like GET without a body", async () => {
    for (const p of ["/health", "/v1/models", "/metrics"]) {
        const g = await get(srv.port, p, AUTH);
        const h = await request(srv.port, "HEAD", p, { headers: AUTH });
        assert.equal(h.status, g.status, p);
        assert.equal(h.headers["content-type"], g.headers["content-type"], p);
        assert.equal(h.text, "", p);
    }
    const post405 = await request(srv.port, "HEAD", "/v1/chat/completions", { headers: AUTH });
    assert.equal(post405.status, 405);
});
