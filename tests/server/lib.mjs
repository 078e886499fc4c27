// Shared by the server tests: command-line options, starting and stopping
// the real `splash serve` binary, raw HTTP through node:http (so tests can
// set any Host header or body bytes), SSE parsing, /status polling, and the
// npm packages install.sh put in the build directory.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { parseArgs } from "node:util";

// --splash BIN --model GGUF [--deps DIR]
export function options() {
    const { values } = parseArgs({
        options: { splash: { type: "string" }, model: { type: "string" }, deps: { type: "string" } },
        strict: false,
    });
    if (!values.splash || !values.model) throw new Error("usage: node TEST.mjs --splash BIN --model GGUF [--deps DIR]");
    return values;
}

// require() for the packages install.sh put in DIR (ES imports would
// resolve relative to this source folder instead).
export function requireDeps(dir) {
    if (!dir || !existsSync(path.join(dir, "node_modules")))
        throw new Error(`no node_modules in ${dir}: run tests/server/install.sh ${dir}`);
    return createRequire(path.resolve(dir, "package.json"));
}

// Starts `splash serve --port 0` with extra flags; resolves once the ready
// line names the port. stop() sends SIGTERM and resolves with the exit code.
export function startServer(opts, args = [], env = {}) {
    return new Promise((resolve, reject) => {
        const proc = spawn(opts.splash, ["serve", "--model", opts.model, "--port", "0", "--threads", "1", ...args], {
            env: { ...process.env, ...env },
            stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "", err = "", done = false;
        const exited = new Promise((res) => proc.on("exit", (code, sig) => res(code ?? `signal ${sig}`)));
        const fail = (why) => {
            if (done) return;
            done = true;
            reject(new Error(`splash serve ${args.join(" ")}: ${why}\n${err}`));
        };
        const timer = setTimeout(() => { proc.kill("SIGKILL"); fail("no ready line after 60 s"); }, 60000);
        proc.stderr.on("data", (d) => { err += d; });
        let stopping = false;
        proc.on("exit", (code, sig) => {
            clearTimeout(timer);
            const wasReady = done;
            fail(`exited with ${code} before the ready line`);
            // a server that dies under a test says why (a sanitizer report, an abort)
            if (wasReady && (!stopping || code !== 0)) process.stderr.write(`splash serve exited (${code ?? sig}); its stderr:\n${err}\n`);
        });
        proc.stdout.on("data", (d) => {
            out += d;
            const m = out.match(/^splash serve: ready at http:\/\/(?:127\.0\.0\.1|0\.0\.0\.0|\[::1\]):(\d+) \(model (.+)\)\n/);
            if (!m || done) return;
            done = true;
            clearTimeout(timer);
            const port = Number(m[1]);
            resolve({
                port,
                modelId: m[2],
                base: `http://127.0.0.1:${port}`,
                stderr: () => err,
                stop: async () => { stopping = true; proc.kill("SIGTERM"); return exited; },
            });
        });
    });
}

// One HTTP request with full control: method, path, headers (a Host of our
// own included), body as a string, Buffer or object (sent as JSON).
export function request(port, method, urlPath, { headers = {}, body, json = true } = {}) {
    return new Promise((resolve, reject) => {
        let data = body;
        const h = { ...headers };
        if (body !== undefined && typeof body !== "string" && !Buffer.isBuffer(body)) data = JSON.stringify(body);
        if (data !== undefined) {
            if (json && !Object.keys(h).some((k) => k.toLowerCase() === "content-type")) h["Content-Type"] = "application/json";
            h["Content-Length"] = Buffer.byteLength(data);
        }
        const req = http.request({ host: "127.0.0.1", port, method, path: urlPath, headers: h, agent: false }, (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => {
                const text = Buffer.concat(chunks).toString("utf8");
                let parsed;
                try { parsed = JSON.parse(text); } catch { parsed = undefined; }
                resolve({ status: res.statusCode, headers: res.headers, text, json: parsed });
            });
            res.on("error", reject);
        });
        req.on("error", reject);
        if (data !== undefined) req.write(data);
        req.end();
    });
}

export const post = (port, urlPath, body, headers) => request(port, "POST", urlPath, { body, headers });
export const get = (port, urlPath, headers) => request(port, "GET", urlPath, { headers });

// The data: payloads of an SSE body, in order ("[DONE]" kept as a string).
export function sseEvents(text) {
    const events = [];
    for (const block of text.split("\n\n")) {
        const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (!data) continue;
        events.push(data === "[DONE]" ? data : JSON.parse(data));
    }
    return events;
}

// Reassembled text of a streamed chat or text completion, its finish reason
// and usage (from the include_usage chunk).
export function reassemble(events) {
    let text = "", finish = null, usage = null;
    for (const e of events) {
        if (e === "[DONE]") continue;
        if (e.error) throw new Error(`error in the stream: ${JSON.stringify(e)}`);
        if (e.usage) usage = e.usage;
        for (const c of e.choices ?? []) {
            text += c.delta ? (c.delta.content ?? "") : (c.text ?? "");
            if (c.finish_reason) finish = c.finish_reason;
        }
    }
    return { text, finish, usage };
}

export async function status(port, headers) {
    const r = await get(port, "/status", headers);
    if (r.status !== 200) throw new Error(`/status -> ${r.status}: ${r.text}`);
    return r.json;
}

// Polls /status until pred(snapshot) holds; throws after timeoutMs. Only a
// generous bound against hanging, never a timing assertion.
// headers: for a server started with --api-key.
export async function waitStatus(port, pred, timeoutMs = 30000, what = "condition", headers) {
    const until = Date.now() + timeoutMs;
    let last;
    while (Date.now() < until) {
        last = await status(port, headers);
        if (pred(last)) return last;
        await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`/status: ${what} not reached in ${timeoutMs} ms; last: ${JSON.stringify(last?.requests)} ${JSON.stringify(last?.cache)}`);
}

// The OpenAI error body {"error": {message, type, param, code}}.
export function isErrorBody(j) {
    if (!j || typeof j !== "object" || !j.error || typeof j.error !== "object") return false;
    const e = j.error;
    return typeof e.message === "string" && e.message.length > 0 && typeof e.type === "string" &&
        "param" in e && (e.param === null || typeof e.param === "string") &&
        "code" in e && (e.code === null || typeof e.code === "string");
}
