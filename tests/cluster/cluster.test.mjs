// deploy/cluster.sh end to end: two replicas of the real binary behind the
// real HAProxy (deploy/haproxy.cfg). Both healthy; a session key (header,
// OpenAI `user`, Anthropic `metadata.user_id`, `cache_salt`) keeps landing on
// one replica (x-splash-replica) while different keys use both; SIGTERM to a
// replica loses none of its in-flight requests (streamed or whole) and new
// requests with its keys go to the other; `down` leaves no process behind.
// The round-robin variant (the benchmark's baseline) ignores the key; the
// random variant routes by x-request-id, alike in every slot of a bench run.
// Replicas run with --test-step-delay-us so requests are still running when
// the drain starts; nothing here depends on timings.
//   node cluster.test.mjs --splash BIN --model GGUF --deps DIR
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { get, options, post, reassemble, sseEvents, status, waitStatus } from "../server/lib.mjs";

const opts = options();
const CLUSTER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../deploy/cluster.sh");
const DIR = path.resolve(opts.deps, "state");
const ENV = { ...process.env, SPLASH: path.resolve(opts.splash), SPLASH_CLUSTER_DIR: DIR };
const STEP_DELAY_US = "5000";

const cluster = (...args) => spawnSync("bash", [CLUSTER, ...args], { env: ENV, encoding: "utf8" });
const pidOf = (name) => Number(readFileSync(path.join(DIR, `${name}.pid`), "utf8"));
const portOf = (name) => Number(readFileSync(path.join(DIR, `${name}.port`), "utf8"));
const pidFiles = () => (existsSync(DIR) ? readdirSync(DIR).filter((f) => f.endsWith(".pid")) : []);

// Alive: the process exists and has not ended (an unreaped zombie has).
function isAlive(pid) {
    try {
        return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
    } catch {
        return false;
    }
}

async function freePort() {
    const s = net.createServer();
    await new Promise((resolve) => s.listen(0, "127.0.0.1", resolve));
    const { port } = s.address();
    await new Promise((resolve) => s.close(resolve));
    return port;
}

async function until(pred, what, timeoutMs = 30000) {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
        if (await pred()) return;
        await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`not reached in ${timeoutMs} ms: ${what}`);
}

async function up(port, ...extra) {
    rmSync(DIR, { recursive: true, force: true });
    const r = cluster("up", "2", "--model", opts.model, "--port", String(port), "--drain-timeout", "30", ...extra,
        "--", "--test-step-delay-us", STEP_DELAY_US);
    assert.equal(r.status, 0, `cluster.sh up: ${r.stdout}${r.stderr}`);
}

// Which replica answered a request (and that it answered 200).
async function replicaFor(port, urlPath, body, headers = {}) {
    const r = await post(port, urlPath, body, headers);
    assert.equal(r.status, 200, `${urlPath}: ${r.text}`);
    assert.match(r.headers["x-splash-replica"] ?? "", /^r[12]$/);
    return r.headers["x-splash-replica"];
}

// splash bench's sessions workload through the balancer on port (one round,
// both arms the same URL, tiny turns): its report.
function benchSessions(port, name, sessions, turns) {
    const work = path.join(opts.deps, name);
    rmSync(work, { recursive: true, force: true });
    const url = `http://127.0.0.1:${port}`;
    const b = spawnSync(opts.splash, ["bench", "--baseline-url", url, "--candidate-url", url, "--workload", "sessions",
        "--sessions", String(sessions), "--session-turns", String(turns), "--session-first-tokens", "8",
        "--session-turn-tokens", "8", "--session-max-tokens", "1", "--rounds", "1", "--warmup", "0", "--quiet",
        "--work-dir", work], { encoding: "utf8" });
    assert.ok([0, 10, 11, 12].includes(b.status), b.stdout + b.stderr);
    return JSON.parse(readFileSync(path.join(work, "report.json"), "utf8"));
}

// A streamed completion through the balancer: {started, done}; started once
// its first chunk arrived, done with {status, replica, events}.
function stream(port, key, i) {
    const data = JSON.stringify({ prompt: `Stream ${i}`, max_tokens: 300, ignore_eos: true, stream: true });
    let started;
    const startedP = new Promise((resolve) => { started = resolve; });
    const done = new Promise((resolve, reject) => {
        const req = http.request({ host: "127.0.0.1", port, method: "POST", path: "/v1/completions", agent: false,
            headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data), "x-session-id": key } },
        (res) => {
            let text = "";
            res.on("data", (d) => { text += d; started(); });
            res.on("end", () => resolve({ status: res.statusCode, replica: res.headers["x-splash-replica"], events: sseEvents(text) }));
            res.on("error", reject);
        });
        req.on("error", reject);
        req.end(data);
    });
    return { started: startedP, done };
}

test("cluster.sh up 2: healthy, affinity by session key, drain without loss, down", async () => {
    const port = await freePort();
    await up(port);
    try {
        const st = cluster("status");
        assert.equal(st.status, 0, st.stdout + st.stderr);
        for (const name of ["r1", "r2"]) assert.match(st.stdout, new RegExp(`^${name} pid \\d+ port \\d+ ready 200$`, "m"));
        assert.match(st.stdout, new RegExp(`^haproxy pid \\d+ port ${port}$`, "m"));
        const modelId = (await get(port, "/v1/models")).json.data[0].id;

        // every key source: one key, one replica; eight keys, both replicas
        const msgs = [{ role: "user", content: "hi" }];
        const sources = {
            "x-session-id": (k) => ["/v1/completions", { prompt: "hello", max_tokens: 1 }, { "x-session-id": k }],
            user: (k) => ["/v1/chat/completions", { messages: msgs, max_tokens: 1, user: k }],
            "metadata.user_id": (k) => ["/v1/messages", { model: modelId, max_tokens: 1, messages: msgs, metadata: { user_id: k } }],
            cache_salt: (k) => ["/v1/completions", { prompt: "hello", max_tokens: 1, cache_salt: k }],
        };
        for (const [source, make] of Object.entries(sources)) {
            const used = new Set();
            for (let k = 0; k < 8; k++) {
                const first = await replicaFor(port, ...make(`${source}-${k}`));
                for (let i = 0; i < 2; i++)
                    assert.equal(await replicaFor(port, ...make(`${source}-${k}`)), first, `${source} key ${k} moved`);
                used.add(first);
            }
            assert.deepEqual([...used].sort(), ["r1", "r2"], `${source}: all keys on one replica`);
        }
        // the header outranks the body's fields
        const byHeader = await replicaFor(port, ...sources["x-session-id"]("x-session-id-0"));
        for (let k = 0; k < 8; k++)
            assert.equal(await replicaFor(port, "/v1/completions", { prompt: "hello", max_tokens: 1, user: `user-${k}` },
                { "x-session-id": "x-session-id-0" }), byHeader);
        // no key: least connections, so both replicas serve
        const keyless = new Set();
        for (let i = 0; i < 6; i++) keyless.add(await replicaFor(port, "/v1/completions", { prompt: "x", max_tokens: 1 }));
        assert.equal(keyless.size, 2, "requests without a key all went to one replica");
        // splash bench's sessions workload through the balancer: its
        // x-session-id names a conversation alike in every slot, so each
        // conversation meets one replica throughout the run
        const rep = benchSessions(port, "bench-sessions", 6, 2);
        assert.equal(rep.config.sessions.session_key, "id");
        const where = new Map();
        for (const s of rep.slots)
            for (const q of s.requests) {
                assert.match(q.session_id, /^splash-bench-conversation-\d+$/);
                if (!where.has(q.session_id)) where.set(q.session_id, new Set());
                where.get(q.session_id).add(q.replica);
            }
        assert.equal(where.size, 6, [...where.keys()].join(" "));
        // (not that the six use both replicas: which replica a fixed id hashes
        // to is HAProxy's business; the key sources above check the spread)
        for (const [id, replicas] of where) assert.equal(replicas.size, 1, `${id} met ${[...replicas]} across the slots`);

        // drain: three streams and a whole answer in flight on the key's replica
        const key = "drain-session";
        const victim = await replicaFor(port, "/v1/completions", { prompt: "x", max_tokens: 1 }, { "x-session-id": key });
        const other = victim === "r1" ? "r2" : "r1";
        const [victimPid, victimPort] = [pidOf(victim), portOf(victim)];
        const streams = [0, 1, 2].map((i) => stream(port, key, i));
        const whole = post(port, "/v1/completions", { prompt: "whole", max_tokens: 300, ignore_eos: true }, { "x-session-id": key });
        await Promise.all(streams.map((s) => s.started));
        await waitStatus(victimPort, (s) => s.requests.active.length === 4, 30000, "4 requests running on the victim");
        process.kill(victimPid, "SIGTERM");
        await until(async () => (await get(victimPort, "/ready")).status === 503, "the victim's /ready turns 503");
        const during = await status(victimPort);
        assert.ok(during.draining && during.requests.active.length > 0, "the drain started with requests in flight");
        // new turns of that session go to the other replica, all answered
        for (let i = 0; i < 6; i++)
            assert.equal(await replicaFor(port, "/v1/completions", { prompt: `after ${i}`, max_tokens: 1 }, { "x-session-id": key }),
                other);
        // nothing in flight was lost: every stream and the whole answer complete
        for (const s of await Promise.all(streams.map((x) => x.done))) {
            assert.equal(s.status, 200);
            assert.equal(s.replica, victim);
            assert.equal(s.events[s.events.length - 1], "[DONE]");
            const { finish } = reassemble(s.events); // throws on an error event
            assert.equal(finish, "length");
        }
        const w = await whole;
        assert.equal(w.status, 200, w.text);
        assert.equal(w.headers["x-splash-replica"], victim);
        assert.equal(w.json.choices[0].finish_reason, "length");
        assert.equal(w.json.usage.completion_tokens, 300);
        await until(() => !isAlive(victimPid), "the drained replica exits");
        const after = cluster("status");
        assert.match(after.stdout, new RegExp(`^${victim} pid ${victimPid} gone$`, "m"));
        assert.match(after.stdout, new RegExp(`^${other} pid \\d+ port \\d+ ready 200$`, "m"));

        // down: every process it started ends, no PID file is left
        const pids = pidFiles().map((f) => Number(readFileSync(path.join(DIR, f), "utf8")));
        assert.equal(pids.length, 3);
        const down = cluster("down");
        assert.equal(down.status, 0, down.stderr);
        for (const pid of pids) assert.ok(!isAlive(pid), `pid ${pid} still running after down`);
        assert.deepEqual(pidFiles(), []);
        await assert.rejects(get(port, "/health"), "the balancer still answers after down");
    } finally {
        if (pidFiles().length) cluster("down");
    }
});

test("cluster.sh up 2 --balance roundrobin: the key does not pin a replica", async () => {
    const port = await freePort();
    await up(port, "--balance", "roundrobin");
    try {
        const seen = new Set();
        for (let i = 0; i < 4; i++)
            seen.add(await replicaFor(port, "/v1/completions", { prompt: "x", max_tokens: 1 }, { "x-session-id": "one-session" }));
        assert.equal(seen.size, 2);
    } finally {
        const pids = pidFiles().map((f) => Number(readFileSync(path.join(DIR, f), "utf8")));
        assert.equal(cluster("down").status, 0);
        for (const pid of pids) assert.ok(!isAlive(pid), `pid ${pid} still running after down`);
    }
});

test("cluster.sh up 2 --balance random: x-request-id decides, alike in every slot of a bench run", async () => {
    const port = await freePort();
    await up(port, "--balance", "random");
    try {
        // one session key, eight request ids (fixed: the hash is deterministic):
        // both replicas; the same id twice: the same replica
        const byId = new Map();
        for (let i = 1; i <= 8; i++) {
            const h = { "x-session-id": "one-session", "x-request-id": `one-session-turn-${i}` };
            const r = await replicaFor(port, "/v1/completions", { prompt: "x", max_tokens: 1 }, h);
            assert.equal(await replicaFor(port, "/v1/completions", { prompt: "y", max_tokens: 1 }, h), r);
            byId.set(i, r);
        }
        assert.equal(new Set(byId.values()).size, 2, `eight request ids all went to ${[...byId.values()]}`);
        // splash bench's sessions workload: each turn's x-request-id is the
        // same in every slot, so each turn meets one replica throughout
        const rep = benchSessions(port, "bench-sessions-random", 4, 3);
        const where = new Map();
        for (const s of rep.slots)
            for (const q of s.requests) {
                assert.equal(q.request_id, `${q.session_id}-turn-${q.turn}`);
                if (!where.has(q.request_id)) where.set(q.request_id, new Set());
                where.get(q.request_id).add(q.replica);
            }
        assert.equal(where.size, 12, [...where.keys()].join(" "));
        for (const [id, replicas] of where) assert.equal(replicas.size, 1, `${id} met ${[...replicas]} across the slots`);
    } finally {
        const pids = pidFiles().map((f) => Number(readFileSync(path.join(DIR, f), "utf8")));
        assert.equal(cluster("down").status, 0);
        for (const pid of pids) assert.ok(!isAlive(pid), `pid ${pid} still running after down`);
    }
});
