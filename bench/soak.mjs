// The soak's client side (issue 25 part 3), started by bench/soak.sh against
// one running `splash serve`: mixed traffic for --duration seconds, then the
// verdicts. Traffic, from --clients concurrent loops:
//   - chat and completions, streaming and not, random prompt and answer
//     lengths, seeded sampling and greedy;
//   - a share of the streams (--disconnect, default 0.10) hang up after a
//     few chunks;
//   - cached-prefix repeats: a long shared system prompt per session salt;
//   - every --burst-every seconds a burst of --burst requests at once, more
//     than the server's queue holds, so some must get 429;
//   - every --probe-every seconds the seeded probes, whose text must never
//     change (the first round is the reference).
// The server's RSS (/proc/PID/status) is sampled every 5 s. At the end:
//   zero 5xx; every 429 carries Retry-After; RSS growth over the last half of
//   the run (the last 30 minutes of an hour) under --rss-growth (1 %), both
//   resting level and peaks (rssGrowth says how);
//   /status: no active or queued request, no KV block held by anything but
//   the prefix cache; seeded probes unchanged.
// Writes OUT/soak.json (every figure) and prints a verdict table; exits 1
// when a verdict fails.
//   node bench/soak.mjs --port P --pid PID --duration S --out DIR [options]
//   node bench/soak.mjs --rescore DIR/soak.json   (the verdicts again)
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const opt = {
    port: 0, pid: 0, duration: 3600, out: ".", clients: 6, disconnect: 0.1, burst: 24, "burst-every": 60,
    "probe-every": 300, "rss-growth": 1.0, seed: 1,
};
const RESCORE = process.argv[2] === "--rescore" ? process.argv[3] : null;
for (let i = 2; !RESCORE && i < process.argv.length; i += 2) {
    const k = process.argv[i].replace(/^--/, "");
    if (!(k in opt) || process.argv[i + 1] === undefined) {
        console.error(`soak.mjs: unknown or incomplete option '${process.argv[i]}'`);
        process.exit(2);
    }
    opt[k] = k === "out" ? process.argv[i + 1] : Number(process.argv[i + 1]);
}
if (!RESCORE && (!opt.port || !opt.pid)) {
    console.error("soak.mjs: --port and --pid are required");
    process.exit(2);
}

// A deterministic generator for the traffic mix (Math.random would make two
// soaks incomparable).
let rs = BigInt(opt.seed) || 1n;
function rand() {
    rs ^= rs << 13n; rs &= (1n << 64n) - 1n;
    rs ^= rs >> 7n;
    rs ^= rs << 17n; rs &= (1n << 64n) - 1n;
    return Number(rs >> 11n) / 2 ** 53;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

let MODEL = ""; // the served model's id, from /v1/models
const WORDS = "the engine serves a model and every request streams tokens while the scheduler batches rows of prefill and decode under one memory plan with a prefix cache".split(" ");
const words = (n) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
const SYSTEMS = Array.from({ length: 4 }, (_, i) => `You are assistant ${i}. ${words(300)}`);

const tally = { requests: 0, by_status: {}, http_5xx: 0, r429_without_retry_after: 0, client_disconnects: 0,
    transport_errors: 0, transport_error_samples: [], cached_tokens: 0, prompt_tokens: 0, burst_429: 0, bursts: 0 };
const count = (status) => { tally.by_status[status] = (tally.by_status[status] || 0) + 1; };

// One request; resolves with {status, headers, body} or {aborted} when we
// hung up on purpose, or {error}.
function send(pathName, body, { hangUpAfter = 0 } = {}) {
    return new Promise((resolve) => {
        const data = JSON.stringify(body);
        const req = http.request({ host: "127.0.0.1", port: opt.port, method: "POST", path: pathName,
            headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } });
        let done = false;
        const finish = (r) => { if (!done) { done = true; resolve(r); } };
        req.on("response", (res) => {
            let text = "", chunks = 0;
            res.setEncoding("utf8");
            res.on("data", (d) => {
                text += d;
                if (hangUpAfter && res.statusCode === 200 && ++chunks >= hangUpAfter) {
                    req.destroy();
                    finish({ aborted: true, status: res.statusCode });
                }
            });
            res.on("end", () => finish({ status: res.statusCode, headers: res.headers, body: text }));
            res.on("error", (e) => finish({ error: String(e) }));
        });
        req.on("error", (e) => finish({ error: String(e) }));
        req.setTimeout(600000, () => { req.destroy(); finish({ error: "timeout" }); });
        req.end(data);
    });
}

function record(r) {
    tally.requests++;
    if (r.aborted) {
        tally.client_disconnects++;
        count(r.status);
        return;
    }
    if (r.error) {
        tally.transport_errors++;
        if (tally.transport_error_samples.length < 10) tally.transport_error_samples.push(r.error);
        return;
    }
    count(r.status);
    if (r.status >= 500) tally.http_5xx++;
    if (r.status === 429 && !r.headers["retry-after"]) tally.r429_without_retry_after++;
    if (r.status === 200 && !r.headers["content-type"].startsWith("text/event-stream")) {
        const u = JSON.parse(r.body).usage;
        tally.prompt_tokens += u.prompt_tokens;
        tally.cached_tokens += u.prompt_tokens_details?.cached_tokens ?? 0;
    }
}

// One random request of the mix.
function mixed() {
    const stream = rand() < 0.5;
    const sampling = rand() < 0.5 ? { temperature: 0 } : { temperature: 0.9, seed: between(1, 1000) };
    const max_tokens = between(1, 96);
    const hangUpAfter = stream && rand() < opt.disconnect ? between(1, 4) : 0;
    if (rand() < 0.35) { // a cached-prefix repeat: a session's long system prompt
        const s = between(0, SYSTEMS.length - 1);
        return send("/v1/chat/completions", { model: MODEL, stream, max_tokens, ...sampling, cache_salt: `session-${s}`,
            messages: [{ role: "system", content: SYSTEMS[s] }, { role: "user", content: words(between(2, 20)) }] },
        { hangUpAfter });
    }
    if (rand() < 0.5)
        return send("/v1/completions", { model: MODEL, stream, max_tokens, ...sampling, prompt: words(between(1, 400)) },
            { hangUpAfter });
    return send("/v1/chat/completions", { model: MODEL, stream, max_tokens, ...sampling,
        messages: [{ role: "user", content: words(between(1, 200)) }] }, { hangUpAfter });
}

// The seeded probes: sampled and greedy, chat and completions; their text is
// the engine's output for a fixed request whatever else runs beside it.
const PROBES = () => [
    ["/v1/completions", { model: MODEL, prompt: "the engine serves", max_tokens: 48, temperature: 0.8, seed: 42 }],
    ["/v1/chat/completions", { model: MODEL, max_tokens: 48, temperature: 0, messages: [{ role: "user", content: "prefix cache" }] }],
    ["/v1/chat/completions", { model: MODEL, max_tokens: 48, temperature: 1.0, top_p: 0.9, seed: 7,
        messages: [{ role: "system", content: SYSTEMS[0] }, { role: "user", content: "tokens" }] }],
];
const probeRounds = [];
async function probes() {
    const texts = [];
    for (const [p, body] of PROBES()) {
        let r;
        do { // a probe that meets a full queue waits its turn like a client would
            r = await send(p, body);
            if (r.status === 429) await sleep(1000 * Number(r.headers["retry-after"] || 1));
        } while (r.status === 429);
        record(r);
        const j = r.status === 200 ? JSON.parse(r.body) : null;
        texts.push(j ? (j.choices[0].text ?? j.choices[0].message.content) : `status ${r.status ?? r.error}`);
    }
    probeRounds.push({ t: elapsed(), texts });
}

function rss() {
    const m = fs.readFileSync(`/proc/${opt.pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/);
    return Number(m[1]) * 1024;
}
function get(p) {
    return new Promise((resolve, reject) => {
        http.get({ host: "127.0.0.1", port: opt.port, path: p }, (res) => {
            let body = "";
            res.on("data", (d) => { body += d; });
            res.on("end", () => resolve({ status: res.statusCode, body }));
        }).on("error", reject);
    });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const t0 = Date.now();
const elapsed = () => (Date.now() - t0) / 1000;

async function main() {
    const models = JSON.parse((await get("/v1/models")).body);
    MODEL = models.data[0].id;
    const rssSamples = [];
    const end = t0 + opt.duration * 1000;
    const sampler = setInterval(() => rssSamples.push({ t: elapsed(), rss: rss() }), 5000);
    await probes();
    const loops = Array.from({ length: opt.clients }, async () => {
        while (Date.now() < end) {
            const r = await mixed();
            record(r);
            if (r.status === 429) // as a well-behaved client does
                await sleep(1000 * Number(r.headers["retry-after"] || 1));
        }
    });
    const periodic = (async () => {
        let nextBurst = opt["burst-every"], nextProbe = opt["probe-every"];
        while (Date.now() < end) {
            await sleep(1000);
            if (elapsed() >= nextBurst) {
                nextBurst += opt["burst-every"];
                tally.bursts++;
                const rs = await Promise.all(Array.from({ length: opt.burst }, () => mixed()));
                rs.forEach(record);
                tally.burst_429 += rs.filter((r) => r.status === 429).length;
            }
            if (elapsed() >= nextProbe) {
                nextProbe += opt["probe-every"];
                await probes();
            }
        }
    })();
    await Promise.all([...loops, periodic]);
    await probes();
    clearInterval(sampler);
    rssSamples.push({ t: elapsed(), rss: rss() });
    await sleep(2000); // a hung-up stream's cancellation reaches the engine
    const status = JSON.parse((await get("/status")).body);
    return finish(rssSamples, status);
}

// RSS growth over the last half, like with like: the samples of its first
// window (5 minutes of an hour) against those of the run's last window, by
// median (the resting level) and by peak (a burst lifts RSS by a few MiB
// for seconds; a peak against a median would call every burst growth).
function rssGrowth(samples, duration) {
    const win = Math.min(300, duration / 10), half = duration / 2;
    const pick = (lo, hi) => samples.filter((s) => s.t >= lo && s.t < hi).map((s) => s.rss).sort((a, b) => a - b);
    const a = pick(half, half + win), b = pick(duration - win, Infinity);
    const med = (v) => v[v.length >> 1] ?? 0, peak = (v) => v[v.length - 1] ?? 0;
    const pct = (x, y) => (x ? (100 * (y - x)) / x : 0);
    return { window_s: win, from_median: med(a), to_median: med(b), from_peak: peak(a), to_peak: peak(b),
        median_percent: pct(med(a), med(b)), peak_percent: pct(peak(a), peak(b)) };
}

const MIB = (x) => (x / 2 ** 20).toFixed(2);

// The verdicts from what the run recorded (also `--rescore soak.json`).
function verdicts(r) {
    const { tally, probes, status_end: status } = r;
    const g = rssGrowth(r.rss, r.options.duration);
    const limit = r.options["rss-growth"];
    const c = status.cache;
    const held = c.blocks_used; // blocks some sequence holds (the prefix cache's are counted apart)
    const reference = JSON.stringify(probes[0].texts);
    const changed = probes.filter((p) => JSON.stringify(p.texts) !== reference).map((p) => p.t);
    const checks = [
        ["zero 5xx", tally.http_5xx === 0, `${tally.http_5xx} of ${tally.requests}`],
        ["every 429 has Retry-After", tally.r429_without_retry_after === 0,
            `${tally.by_status[429] || 0} answered 429, ${tally.r429_without_retry_after} without it`],
        ["bursts went past the queue", tally.burst_429 > 0, `${tally.burst_429} 429s in ${tally.bursts} bursts`],
        ["no transport error", tally.transport_errors === 0, `${tally.transport_errors} ${tally.transport_error_samples.join("; ")}`],
        [`RSS growth over the last half < ${limit} % (median and peak of ${g.window_s} s windows)`,
            g.median_percent < limit && g.peak_percent < limit,
            `median ${MIB(g.from_median)} -> ${MIB(g.to_median)} MiB (${g.median_percent.toFixed(2)} %), ` +
            `peak ${MIB(g.from_peak)} -> ${MIB(g.to_peak)} MiB (${g.peak_percent.toFixed(2)} %)`],
        ["/status: no active or queued request", status.requests.active.length === 0 && status.scheduler.queued === 0,
            `${status.requests.active.length} active, ${status.scheduler.queued} queued`],
        ["/status: no KV block leaked", held === 0, `${c.blocks_used} used, ${c.blocks_cached} cached`],
        ["seeded probes unchanged", changed.length === 0, `${probes.length} rounds; changed at ${changed.join(", ") || "none"} s`],
    ];
    r.rss_growth = g;
    r.checks = checks.map(([name, ok, detail]) => ({ name, ok, detail }));
    console.log(`soak: ${tally.requests} requests in ${r.duration_s.toFixed(0)} s; statuses ${JSON.stringify(tally.by_status)}; ` +
        `${tally.client_disconnects} hung up by the client; prefix cache ${tally.cached_tokens} of ${tally.prompt_tokens} prompt tokens; ` +
        `spec accepted ${status.spec.accepted} of ${status.spec.drafted}`);
    for (const [name, ok, detail] of checks) console.log(`  ${ok ? "PASS" : "FAIL"}  ${name}: ${detail}`);
    return checks.every(([, ok]) => ok) ? 0 : 1;
}

function finish(rssSamples, status) {
    const report = { options: opt, duration_s: elapsed(), tally, probes: probeRounds, rss: rssSamples,
        status_end: { requests: status.requests, scheduler: status.scheduler, cache: status.cache,
            spec: status.spec, memory: status.memory } };
    const code = verdicts(report);
    fs.writeFileSync(path.join(opt.out, "soak.json"), JSON.stringify(report, null, 1));
    return code;
}

if (RESCORE) { // the verdicts again from a finished run's soak.json
    const r = JSON.parse(fs.readFileSync(RESCORE, "utf8"));
    const code = verdicts(r);
    fs.writeFileSync(RESCORE, JSON.stringify(r, null, 1));
    process.exit(code);
}
main().then((code) => process.exit(code), (e) => { console.error(`soak.mjs: ${e.stack || e}`); process.exit(2); });
