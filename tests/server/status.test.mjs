// /status against its JSON Schema (docs/status.schema.json, draft 2020-12)
// with ajv (pinned in package.json): live snapshots idle, under load with
// several active requests, while draining, and after; snapshot.seq is the
// engine state's version (never back, advancing under load, unchanged by a
// read, one seq one state) and monotonic_ns never decreases. Mutated snapshots
// must fail the schema, so the validation can fail.
//   node status.test.mjs --splash BIN --model GGUF --deps DIR
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { get, options, requireDeps, startServer, status, waitStatus } from "./lib.mjs";
import { spawnSync } from "node:child_process";

const opts = options();
const Ajv2020 = requireDeps(opts.deps)("ajv/dist/2020").default;
const SCHEMA_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../docs/status.schema.json");
const schema = JSON.parse(readFileSync(SCHEMA_PATH, "utf8"));
// strict, except for `required` inside if/then, which lists fields defined at the top level
const validate = new Ajv2020({ allErrors: true, strict: true, strictRequired: false }).compile(schema);

const snapshots = []; // every snapshot taken, in order
async function check(port, what) {
    const s = await status(port);
    assert.ok(validate(s), `${what}: ${JSON.stringify(validate.errors, null, 1)}`);
    snapshots.push(s);
    return s;
}

// A long streamed request: {req, started}, started resolving once its first
// chunk arrived (admitted and running). req.destroy() disconnects it.
function longStream(port, i) {
    const data = JSON.stringify({ prompt: `Long request ${i}`, max_tokens: 3000, ignore_eos: true, stream: true });
    const req = http.request({ host: "127.0.0.1", port, method: "POST", path: "/v1/completions", agent: false,
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } });
    const started = new Promise((resolve, reject) => {
        req.on("response", (res) => { res.once("data", resolve); res.resume(); });
        req.on("error", (e) => { if (!req.destroyed) reject(e); });
    });
    req.end(data);
    return { req, started };
}

// An idle engine faults its pools in (--prefault idle, the default) and
// publishes its progress: the snapshot once that has settled.
async function prefaultSettled(port) {
    for (let i = 0; i < 1200; i++) {
        const s = await check(port, "prefault");
        if (s.memory.prefault.state !== "running") return s;
        await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail("the prefault still running after 60 s");
}

test("live /status snapshots validate: idle, loaded, draining, after", async () => {
    const srv = await startServer(opts, ["--max-seqs", "4", "--drain-timeout", "2"]);
    try {
        await prefaultSettled(srv.port);
        const idle = await check(srv.port, "idle");
        assert.equal(idle.ready, true);
        assert.equal(idle.requests.active.length, 0);
        // an idle engine, its pools faulted in, publishes nothing new: polling again is stale
        const again = await status(srv.port);
        assert.equal(again.snapshot.seq, idle.snapshot.seq, "reading /status must not advance seq");
        assert.ok(again.snapshot.age_ns >= idle.snapshot.age_ns);

        // load: 4 running and 2 queued
        const load = [0, 1, 2, 3, 4, 5].map((i) => longStream(srv.port, i));
        await Promise.all(load.slice(0, 4).map((l) => l.started));
        let busiest = 0;
        for (let i = 0; i < 20 || (busiest < 2 && i < 2000); i++) {
            const s = await check(srv.port, `under load #${i}`);
            busiest = Math.max(busiest, s.requests.active.length);
        }
        assert.ok(busiest >= 2, `saw at most ${busiest} active requests`);
        const loaded = snapshots[snapshots.length - 1];
        assert.ok(loaded.cache.blocks_used > 0);

        // disconnect them all; the server goes idle again
        for (const l of load) l.req.destroy();
        await waitStatus(srv.port, (s) => s.requests.active.length === 0 && s.cache.blocks_used === 0, 60000, "idle after load");
        const after = await check(srv.port, "after");
        assert.ok(after.requests.cancelled >= 4);

        // draining: a request in flight holds the drain open (up to 2 s)
        const last = longStream(srv.port, 99);
        await last.started;
        const stopped = srv.stop();
        let draining;
        for (let i = 0; i < 500 && !draining; i++) {
            const s = await status(srv.port).catch(() => null);
            if (!s) break;
            if (s.draining) draining = s;
        }
        assert.ok(draining, "no snapshot while draining");
        assert.ok(validate(draining), `draining: ${JSON.stringify(validate.errors)}`);
        snapshots.push(draining);
        assert.equal(draining.ready, false);
        last.req.destroy();
        assert.equal(await stopped, 0);
    } finally {
        await srv.stop();
    }
    // freshness: seq is the engine state's version: it never goes back, it
    // advances under load, and a repeated seq is the same state (stale)
    let advanced = 0;
    for (let i = 1; i < snapshots.length; i++) {
        const [a, b] = [snapshots[i - 1], snapshots[i]];
        assert.ok(b.snapshot.seq >= a.snapshot.seq, `seq at ${i}`);
        assert.ok(b.snapshot.monotonic_ns >= a.snapshot.monotonic_ns, `monotonic_ns at ${i}`);
        assert.ok(b.snapshot.unix_ms > 1.6e12);
        if (b.snapshot.seq > a.snapshot.seq) advanced++;
        else if (!a.draining && !b.draining) {
            assert.equal(b.snapshot.monotonic_ns, a.snapshot.monotonic_ns, `stale seq ${b.snapshot.seq}, other time`);
            assert.deepEqual(b.scheduler, a.scheduler, `stale seq ${b.snapshot.seq}, other scheduler state`);
            assert.deepEqual(b.cache, a.cache, `stale seq ${b.snapshot.seq}, other cache state`);
        }
    }
    assert.ok(advanced >= 3, `seq advanced ${advanced} times`);
    assert.ok(snapshots.length >= 23, `${snapshots.length} snapshots`); // idle, 20+ under load, after, draining
});

test("the schema rejects snapshots that break it", () => {
    assert.ok(snapshots.length > 0);
    const good = snapshots.find((s) => s.requests?.active.length > 0) ?? snapshots[0];
    assert.ok(validate(good));
    const mutations = {
        "schema_version 2": (s) => { s.schema_version = 2; },
        "seq missing": (s) => { delete s.snapshot.seq; },
        "seq a string": (s) => { s.snapshot.seq = "7"; },
        "unknown top-level field": (s) => { s.extra = 1; },
        "unknown cache field": (s) => { s.cache.blocks_free = 3; },
        "negative blocks_used": (s) => { s.cache.blocks_used = -1; },
        "ready without model": (s) => { s.ready = true; delete s.model; },
        "model without scheduler": (s) => { delete s.scheduler; },
        "bad phase": (s) => { s.requests.active = [{ id: 1, phase: "sleeping", prompt_tokens: 1, prefilled_tokens: 0, generated_tokens: 0, cached_tokens: 0 }]; },
        "sha256 not hex": (s) => { s.model.sha256 = "xyz"; },
        "histogram bucket without count": (s) => { delete s.scheduler.decode_width_histogram[0].count; },
        "host_pressure 2": (s) => { s.memory.host_pressure = 2; },
        "trace enabled a number": (s) => { s.trace.enabled = 1; },
        "kv_type q4_0": (s) => { s.memory.kv_type = "q4_0"; },
        "kv_bytes_per_token missing": (s) => { delete s.memory.kv_bytes_per_token; },
    };
    for (const [name, mutate] of Object.entries(mutations)) {
        const s = structuredClone(good);
        mutate(s);
        assert.equal(validate(s), false, `the schema accepted: ${name}`);
    }
});

// Speculative decoding: the configured and effective policy for each
// setting, the spec counters validating against the schema.
test("policy and spec counters under --draft ngram for each --verify-rows", async () => {
    for (const [setting, conf, eff] of [["all", "all", /^all$/], ["2", "2", /^2$/], ["auto", "auto", /^(all|[0-9]+)$/],
        ["0", "0", /^0$/]]) {
        const srv = await startServer(opts, ["--draft", "ngram", "--draft-max", "4", "--verify-rows", setting]);
        try {
            const s0 = await check(srv.port, `${setting}: idle`);
            assert.equal(s0.policy.verify_rows, conf);
            assert.match(s0.policy.verify_rows_effective, eff);
            assert.equal(s0.policy.drafter, "ngram");
            assert.equal(s0.policy.draft_max, 4);
            const prompt = "ab ab ab ab ab ab ab ab ab ab ab ab";
            const res = await fetch(`http://127.0.0.1:${srv.port}/v1/completions`, {
                method: "POST", headers: { "Content-Type": "application/json" },
                body: JSON.stringify({ prompt, max_tokens: 64, temperature: 0, ignore_eos: true }) });
            assert.equal(res.status, 200);
            const s1 = await check(srv.port, `${setting}: after a request`);
            assert.match(s1.policy.verify_rows_effective, eff);
            if (setting === "0") {
                assert.equal(s1.spec.verified, 0, "width 0 verifies nothing, so nothing is observed");
                assert.equal(s1.spec.acceptance_rate, null);
            } else {
                assert.ok(s1.spec.drafted > 0, "drafts were verified");
                assert.ok(s1.spec.accepted <= s1.spec.verified && s1.spec.verified <= s1.spec.drafted);
            }
            assert.equal(s1.spec.fitter === null, setting !== "auto");
        } finally {
            assert.equal(await srv.stop(), 0);
        }
    }
    const off = await startServer(opts, []);
    try {
        const s = await check(off.port, "no drafter");
        assert.equal(s.policy.verify_rows, "off");
        assert.equal(s.policy.verify_rows_effective, "off");
        assert.equal(s.policy.drafter, "none");
        assert.equal(s.spec.verified, 0);
    } finally {
        assert.equal(await off.stop(), 0);
    }
});

// Behind a balancer (deploy/, tests/cluster): --replica-id names the replica
// in /status, in a response header and as a label on every /metrics sample;
// /metrics carries what a balancer reads; /ready turns 503 the moment
// draining starts, while a request is still in flight.
test("--replica-id in /status, x-splash-replica and /metrics; /ready 503 while draining", async () => {
    for (const bad of ["", "a b", "x".repeat(65), "r\"1", "r{1}"]) {
        const r = spawnSync(opts.splash, ["serve", "--model", opts.model, "--replica-id", bad], { encoding: "utf8" });
        assert.equal(r.status, 2, `--replica-id '${bad}' accepted`);
        assert.match(r.stderr, /--replica-id/);
    }
    const srv = await startServer(opts, ["--replica-id", "r-1.a_b", "--drain-timeout", "10"]);
    let stopped;
    try {
        const s = await check(srv.port, "replica");
        assert.equal(s.replica_id, "r-1.a_b");
        const ready = await get(srv.port, "/ready");
        assert.equal(ready.status, 200);
        assert.equal(ready.headers["x-splash-replica"], "r-1.a_b");
        const m = await get(srv.port, "/metrics");
        assert.equal(m.headers["x-splash-replica"], "r-1.a_b");
        for (const name of ["splash_queue_depth", "splash_requests_running", "splash_kv_usage_ratio",
            "splash_prefix_cache_hit_ratio"])
            assert.match(m.text, new RegExp(`^${name}\\{replica="r-1\\.a_b"\\} [0-9.]+$`, "m"), name);
        assert.match(m.text, /^splash_http_responses_total\{replica="r-1\.a_b",code="200"\} \d+$/m);
        const samples = m.text.split("\n").filter((l) => l && !l.startsWith("#"));
        assert.ok(samples.length > 20);
        for (const l of samples) assert.match(l, /^[a-z_]+\{replica="r-1\.a_b"[,}]/, l);

        const last = longStream(srv.port, 7);
        await last.started;
        stopped = srv.stop();
        let r;
        for (let i = 0; i < 500; i++) {
            r = await get(srv.port, "/ready");
            if (r.status === 503) break;
        }
        assert.equal(r.status, 503, "/ready stayed 200 while draining");
        // the engine publishes its snapshot after the step whose token the
        // client may already have read: a loaded CI host (TSan, -j2) once
        // read /status before the request's first snapshot, so poll
        let during;
        for (let i = 0; i < 500; i++) {
            during = await status(srv.port);
            if (during.draining && during.requests.active.length === 1) break;
        }
        assert.ok(during.draining && during.requests.active.length === 1, "the in-flight request still runs");
        last.req.destroy();
        assert.equal(await stopped, 0);
    } finally {
        if (!stopped) await srv.stop();
    }
    const plain = await startServer(opts, []);
    try {
        assert.equal((await check(plain.port, "no replica id")).replica_id, null);
        assert.equal((await get(plain.port, "/health")).headers["x-splash-replica"], undefined);
    } finally {
        await plain.stop();
    }
});

// --kv-type: f16 by default (half the bytes per token of f32), q8_0 (34
// bytes per 32 elements: 17/32 of f16) on a model whose heads are whole
// 32-element blocks, reported by /status; q8_0 on the tiny model's 16-wide
// heads and junk are refused with one clear error.
test("--kv-type f16 (default), f32 and q8_0 in /status; q8_0 on 16-wide heads and junk refused", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "splash-kvq8-"));
    const wide = path.join(dir, "hd32.gguf");
    try {
        const synth = spawnSync(opts.splash, ["model", "synth", "--preset", "tiny", "--type", "q8_0", "--head-dim", "32",
                                              "--seed", "1", "--out", wide], { encoding: "utf8" });
        assert.equal(synth.status, 0, synth.stderr);
        const perToken = {};
        const runs = [[opts, [], "f16"], [opts, ["--kv-type", "f32"], "f32"], [opts, ["--kv-type", "f16"], "f16"],
                      [{ ...opts, model: wide }, ["--kv-type", "f16"], "wide f16"],
                      [{ ...opts, model: wide }, ["--kv-type", "q8_0"], "wide q8_0"]];
        for (const [o, args, name] of runs) {
            const srv = await startServer(o, args);
            try {
                const s = await check(srv.port, `kv ${name}`);
                assert.equal(s.memory.kv_type, name.replace("wide ", ""));
                assert.ok(s.memory.kv_bytes_per_token > 0);
                perToken[name] = s.memory.kv_bytes_per_token;
            } finally {
                await srv.stop();
            }
        }
        assert.equal(perToken.f32, 2 * perToken.f16, "f16 keys and values take half the bytes of f32");
        assert.equal(32 * perToken["wide q8_0"], 17 * perToken["wide f16"], "q8_0 takes 34 bytes per 32 elements");
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
    for (const [bad, msg] of [["q8_0", /kv-type q8_0 needs a head_dim that is a multiple of 32 \(this model's is 16\)/],
                              ["f8", /--kv-type must be f32, f16 or q8_0, not 'f8'/]]) {
        const r = spawnSync(opts.splash, ["serve", "--model", opts.model, "--port", "0", "--kv-type", bad],
                            { encoding: "utf8", timeout: 60000 });
        assert.notEqual(r.status, 0, `--kv-type ${bad} accepted`);
        assert.match(r.stderr, msg);
    }
});

// --prefault: idle (the default) faults the KV store and the other pools
// in while the engine has nothing to run, /status counting the bytes until
// done reaches them; off leaves every page to its first write (0 bytes);
// junk is refused with one clear error.
test("--prefault idle (default) and off in /status; junk refused", async () => {
    const srv = await startServer(opts, []);
    try {
        const s = await prefaultSettled(srv.port), p = s.memory.prefault;
        assert.ok(p.bytes >= s.memory.kv_bytes, JSON.stringify(p));
        // done; or stopped (an old kernel, a host short of memory), the rest left to first writes
        assert.ok(p.state === "done" ? p.done_bytes === p.bytes : ["unsupported", "low_memory"].includes(p.state),
                  JSON.stringify(p));
    } finally {
        await srv.stop();
    }
    const off = await startServer(opts, ["--prefault", "off"]);
    try {
        const s = await check(off.port, "prefault off");
        assert.deepEqual(s.memory.prefault, { bytes: 0, done_bytes: 0, state: "off" });
    } finally {
        await off.stop();
    }
    const r = spawnSync(opts.splash, ["serve", "--model", opts.model, "--port", "0", "--prefault", "eager"],
                        { encoding: "utf8", timeout: 60000 });
    assert.notEqual(r.status, 0, "--prefault eager accepted");
    assert.match(r.stderr, /--prefault must be idle or off, not 'eager'/);
});

// --state-type on a hybrid model (qwen35-tiny): f32 by default, f16 halves
// the delta rule's share of every sequence slot's state (the conv state
// stays f32), both in /status; a dense model reports 0 state bytes; junk is
// refused with one clear error.
test("--state-type f32 (default) and f16 in /status on qwen35; junk refused", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "splash-state-"));
    const hybrid = path.join(dir, "q35.gguf");
    try {
        const synth = spawnSync(opts.splash, ["model", "synth", "--preset", "qwen35-tiny", "--type", "q8_0",
                                              "--seed", "1", "--out", hybrid], { encoding: "utf8" });
        assert.equal(synth.status, 0, synth.stderr);
        const bytes = {};
        for (const [args, name] of [[[], "f32"], [["--state-type", "f16"], "f16"]]) {
            const srv = await startServer({ ...opts, model: hybrid }, args);
            try {
                const s = await check(srv.port, `state ${name}`);
                assert.equal(s.memory.state_type, name);
                assert.ok(s.memory.state_bytes > 0 && s.memory.state_bytes <= s.memory.scratch_bytes);
                bytes[name] = s.memory.state_bytes;
            } finally {
                await srv.stop();
            }
        }
        assert.ok(bytes.f16 < bytes.f32 && bytes.f16 > bytes.f32 / 2, `f16 ${bytes.f16} against f32 ${bytes.f32}`);
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
    const srv = await startServer(opts, []);
    try {
        const s = await check(srv.port, "dense state");
        assert.equal(s.memory.state_bytes, 0);
    } finally {
        await srv.stop();
    }
    const r = spawnSync(opts.splash, ["serve", "--model", opts.model, "--port", "0", "--state-type", "bf16"],
                        { encoding: "utf8", timeout: 60000 });
    assert.notEqual(r.status, 0, "--state-type bf16 accepted");
    assert.match(r.stderr, /--state-type must be f32 or f16, not 'bf16'/);
});
