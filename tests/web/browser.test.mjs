// The chat page and the dashboard in Debian's headless Chromium, driven by
// puppeteer-core, against a real `splash serve` on a synthetic model (issue
// 24). A step delay keeps replies long enough to watch them grow and to stop
// them. Screenshots land in --out. Nothing here asserts a time: rates and
// first paint are printed for docs/benchmarks.md only.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { parseArgs } from "node:util";
import { options, requireDeps, startServer, status, waitStatus } from "../server/lib.mjs";

const opts = options();
const { values: { out } } = parseArgs({ options: { out: { type: "string" } }, strict: false });
const OUT = out || path.resolve(opts.deps, "artifacts");
mkdirSync(OUT, { recursive: true });
const puppeteer = requireDeps(opts.deps)("puppeteer-core");
const chromium = ["chromium", "chromium-browser"].map((n) => { try { return execFileSync("sh", ["-c", `command -v ${n}`]).toString().trim(); } catch { return ""; } }).find(Boolean);
if (!chromium) throw new Error("chromium is not installed (deps/debian-packages.txt lists it)");

const SLOW = ["--test-step-delay-us", "40000"]; // 40 ms a step: a 40-token reply streams over 1.6 s, long enough for a busy browser to draw it growing
let srv, browser;
before(async () => {
    srv = await startServer(opts, SLOW);
    rmSync(path.join(OUT, "chromium-profile"), { recursive: true, force: true }); // no localStorage from a run before
    browser = await puppeteer.launch({
        executablePath: chromium, headless: true, userDataDir: path.join(OUT, "chromium-profile"),
        args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"],
    });
});
after(async () => { await browser?.close(); await srv?.stop(); });

// A page with every console error, page error and failed request recorded.
async function open(urlPath, { width = 1100, height = 800 } = {}) {
    const page = await browser.newPage();
    await page.setViewport({ width, height });
    const problems = [];
    page.on("console", (m) => { if (m.type() === "error") problems.push(`console: ${m.text()}`); });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
    page.on("response", (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
    await page.goto(srv.base + urlPath, { waitUntil: "load" });
    return { page, problems };
}

async function settings(page, values) {
    await page.evaluate((v) => {
        for (const [id, val] of Object.entries(v)) {
            const e = document.getElementById(id);
            e.value = val;
            e.dispatchEvent(new Event("change"));
        }
    }, values);
}

const lastReply = (page, what) => page.evaluate((w) => {
    const all = document.querySelectorAll(".msg.assistant");
    const m = all[all.length - 1];
    if (!m) return null;
    return w === "state" ? m.dataset.state : w === "stats" ? m.querySelector(".stats").textContent
        : w === "error" ? m.querySelector(".error").textContent : m.querySelector(".content").textContent;
}, what);

async function waitReply(page, states) {
    await page.waitForFunction((s) => {
        const all = document.querySelectorAll(".msg.assistant");
        return all.length && s.includes(all[all.length - 1].dataset.state);
    }, { timeout: 120000 }, states);
}

// the newest reply finished; if it failed, the page's error text says why
async function assertDone(page) {
    assert.equal(await lastReply(page, "state"), "done", `the reply failed: ${await lastReply(page, "error")}`);
}

async function say(page, text) {
    await page.type("#input", text);
    await page.keyboard.press("Enter");
}

test("the chat page loads with no console error or failed request, and prints its weight and first paint", async () => {
    const { page, problems } = await open("/");
    await page.waitForFunction(() => document.getElementById("model").textContent.length > 0);
    const fcp = await page.evaluate(() => performance.getEntriesByType("paint").find((p) => p.name === "first-contentful-paint")?.startTime);
    const bytes = await page.evaluate(() => performance.getEntriesByType("resource").reduce((n, r) => n + r.decodedBodySize, 0)
        + performance.getEntriesByType("navigation")[0].decodedBodySize);
    console.log(`chat page: ${bytes} bytes (document, scripts, style), first contentful paint ${fcp?.toFixed(1)} ms`);
    await page.screenshot({ path: path.join(OUT, "chat-empty.png") });
    assert.deepEqual(problems, []);
    await page.close();
});

test("a message streams a reply that grows, with token counts and tokens/s, kept across a reload", async () => {
    const { page, problems } = await open("/");
    await page.evaluate(() => localStorage.clear());
    await page.reload({ waitUntil: "load" });
    await settings(page, { max_tokens: "40", temperature: "0.8", seed: "7", extra: '{"ignore_eos": true}', schema: "", system: "Be brief." });
    // every length the reply's text passes through, as the page draws it
    await page.evaluate(() => {
        window.__lengths = [];
        new MutationObserver(() => {
            const all = document.querySelectorAll(".msg.assistant .content");
            if (all.length) window.__lengths.push(all[all.length - 1].textContent.length);
        }).observe(document.getElementById("log"), { subtree: true, childList: true, characterData: true });
    });
    await say(page, "Tell me a story about a lighthouse.");
    await waitReply(page, ["done", "error"]);
    await assertDone(page);
    const lengths = await page.evaluate(() => window.__lengths);
    const distinct = [...new Set(lengths.filter((n) => n > 0))];
    assert.ok(distinct.length >= 3, `the reply grew through ${distinct.length} lengths: ${lengths}`);
    const stats = await lastReply(page, "stats");
    assert.match(stats, /\d+ prompt \+ 40 completion tokens/);
    assert.match(stats, /tok\/s/);
    assert.match(stats, /finish: length/);
    await page.screenshot({ path: path.join(OUT, "chat.png") });
    const text = await lastReply(page, "content");
    await page.reload({ waitUntil: "load" });
    assert.equal(await page.$$eval(".msg.user", (e) => e.length), 1);
    assert.equal(await lastReply(page, "content"), text);
    // regenerate replaces the reply (same seed: the same text)
    await page.click(".regenerate");
    await waitReply(page, ["done", "error"]);
    assert.equal(await page.$$eval(".msg.assistant", (e) => e.length), 1);
    assert.equal(await lastReply(page, "content"), text);
    assert.deepEqual(problems, []);
    await page.close();
});

test("stop cancels the request: the server counts it cancelled", async () => {
    const { page, problems } = await open("/");
    await settings(page, { max_tokens: "3000", extra: '{"ignore_eos": true}', schema: "", seed: "" });
    const start = await status(srv.port);
    await say(page, "Go on for a long time.");
    await page.waitForFunction(() => {
        const all = document.querySelectorAll(".msg.assistant .content");
        return all.length && all[all.length - 1].textContent.length > 0;
    }, { timeout: 60000 });
    await page.click("#stop");
    await waitReply(page, ["stopped"]);
    const done = await waitStatus(srv.port, (s) => s.requests.cancelled > start.requests.cancelled && s.requests.active.length === 0,
        60000, "the request cancelled");
    assert.equal(done.requests.cancelled, start.requests.cancelled + 1);
    assert.equal(done.requests.completed, start.requests.completed);
    assert.match(await lastReply(page, "stats"), /stopped/);
    // the aborted fetch is the only failed request
    assert.deepEqual(problems.filter((p) => !/^failed: .*\/v1\/chat\/completions net::ERR_ABORTED/.test(p)), []);
    await page.close();
});

test("a reply under a JSON schema is valid JSON matching it", async () => {
    const { page, problems } = await open("/");
    const schema = { type: "object", properties: { mood: { enum: ["calm", "stormy"] }, word: { type: "string", maxLength: 8 } }, required: ["mood", "word"], additionalProperties: false };
    await settings(page, { max_tokens: "200", extra: "", seed: "3", schema: JSON.stringify(schema) });
    await say(page, "Describe the sea as JSON.");
    await waitReply(page, ["done", "error"]);
    await assertDone(page);
    const reply = JSON.parse(await lastReply(page, "content"));
    assert.ok(["calm", "stormy"].includes(reply.mood), JSON.stringify(reply));
    assert.equal(typeof reply.word, "string");
    assert.deepEqual(Object.keys(reply).sort(), ["mood", "word"]);
    assert.deepEqual(problems, []);
    await page.close();
});

test("a forced tool call shows as a block with its name and JSON arguments; thinking is collapsed", async () => {
    const { page, problems } = await open("/");
    await page.evaluate(() => localStorage.removeItem("splash.chat"));
    await page.reload({ waitUntil: "load" });
    const tools = [{ type: "function", function: { name: "get_weather", strict: true,
        parameters: { type: "object", properties: { city: { enum: ["Paris", "Rome"] } }, required: ["city"], additionalProperties: false } } }];
    await settings(page, { max_tokens: "256", seed: "5", schema: "", tools: JSON.stringify(tools),
        extra: '{"tool_choice": "required", "parallel_tool_calls": false}' });
    await say(page, "What is the weather in Paris?");
    await waitReply(page, ["done", "error"]);
    await assertDone(page);
    const block = await page.evaluate(() => [...document.querySelectorAll(".msg.assistant .tool")].map((t) => ({
        name: t.querySelector(".name").textContent, args: t.querySelector("pre").textContent })));
    assert.equal(block.length, 1, JSON.stringify(block));
    assert.match(block[0].name, /^tool call: get_weather/);
    assert.ok(["Paris", "Rome"].includes(JSON.parse(block[0].args).city), block[0].args);
    assert.match(await lastReply(page, "stats"), /finish: tool_calls/);
    await settings(page, { tools: "", extra: "" });
    // reasoning_content, as a reply with thinking would keep it
    await page.evaluate(() => localStorage.setItem("splash.chat", JSON.stringify([{ role: "user", content: "hi" },
        { role: "assistant", content: "Hello.", reasoning: "The user greets me.", state: "done", stats: {} }])));
    await page.reload({ waitUntil: "load" });
    const think = await page.$eval(".msg.assistant .thinking", (d) => ({ hidden: d.hidden, open: d.open, text: d.querySelector(".body").textContent }));
    assert.deepEqual(think, { hidden: false, open: false, text: "The user greets me." });
    assert.deepEqual(problems, []);
    await page.close();
});

test("model text with <script> and <img onerror> renders as text; only http(s) links become links", async () => {
    const { page, problems } = await open("/");
    const evil = "Hi <script>window.__pwned = 1</script> <img src=x onerror=\"window.__pwned = 2\"> **bold** `<b>code</b>`\n\n"
        + "- [bad](javascript:window.__pwned=3)\n- [good](https://example.com/a?b=1&c=\"2\")\n\n```\n<svg onload=alert(1)>\n```";
    await page.evaluate((content) => {
        localStorage.setItem("splash.chat", JSON.stringify([{ role: "user", content: "<i>user</i>" }, { role: "assistant", content, state: "done", stats: {} }]));
    }, evil);
    await page.reload({ waitUntil: "load" });
    const seen = await page.evaluate(() => {
        const log = document.getElementById("log");
        return {
            tags: [...log.querySelectorAll("script, img, svg, i, b")].map((e) => e.tagName),
            links: [...log.querySelectorAll("a")].map((a) => a.getAttribute("href")),
            strong: log.querySelector("strong")?.textContent,
            text: log.textContent,
            pwned: window.__pwned,
            direct: splashMarkdown.render("<img src=x onerror=alert(1)>"),
        };
    });
    assert.deepEqual(seen.tags, []);
    assert.deepEqual(seen.links, ['https://example.com/a?b=1&c="2"']);
    assert.equal(seen.strong, "bold");
    assert.ok(seen.text.includes("<script>window.__pwned = 1</script>"), seen.text);
    assert.ok(seen.text.includes('<img src=x onerror="window.__pwned = 2">'), seen.text);
    assert.ok(seen.text.includes("<svg onload=alert(1)>"), seen.text);
    assert.ok(seen.text.includes("<i>user</i>"));
    assert.equal(seen.pwned, undefined);
    assert.equal(seen.direct, "<p>&lt;img src=x onerror=alert(1)&gt;</p>");
    assert.deepEqual(problems, []);
    await page.close();
});

test("the chat page fits a phone-width screen", async () => {
    const { page, problems } = await open("/", { width: 390, height: 844 });
    await page.evaluate(() => localStorage.setItem("splash.chat", JSON.stringify([{ role: "user", content: "A long line " + "x".repeat(300) },
        { role: "assistant", content: "```\n" + "y".repeat(300) + "\n```\nand `" + "z".repeat(200) + "`", state: "done", stats: {} }])));
    await page.reload({ waitUntil: "load" });
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `the page is ${wide} px wide`);
    await page.screenshot({ path: path.join(OUT, "chat-phone.png") });
    assert.deepEqual(problems, []);
    await page.close();
});

// a long streamed request from node, for the dashboard to watch; resolves the abort function
function longRequest() {
    const data = JSON.stringify({ messages: [{ role: "user", content: "Keep going." }], max_tokens: 3000, ignore_eos: true, stream: true });
    const req = http.request({ host: "127.0.0.1", port: srv.port, method: "POST", path: "/v1/chat/completions", agent: false,
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } }, (res) => res.resume());
    req.on("error", () => {});
    req.end(data);
    return () => req.destroy();
}

test("the dashboard draws non-zero engine data while a request runs", async () => {
    const { page, problems } = await open("/dashboard");
    const start = await status(srv.port);
    const cancel = longRequest();
    try {
        await waitStatus(srv.port, (s) => s.requests.active.length === 1 && s.scheduler.decode_rows > start.scheduler.decode_rows, 60000, "decoding");
        // a few points of history each, so the screenshot shows lines
        const drawn = (id) => `Number(document.getElementById("${id}").dataset.max) > 0 && Number(document.getElementById("${id}").dataset.points) >= 4`;
        await page.waitForFunction(["c-steps", "c-rows-step", "c-rows", "c-queue", "c-kv", "c-width", "c-memory"].map(drawn).join(" && "), { timeout: 60000 });
        const info = await page.$eval("#info", (t) => t.textContent);
        assert.match(info, new RegExp(srv.modelId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
        assert.match(info, /CPU path/);
        assert.match(info, /verify rows/);
        assert.match(info, /kernel threads\d/);
        await page.screenshot({ path: path.join(OUT, "dashboard.png"), fullPage: true });
    } finally {
        cancel();
    }
    await waitStatus(srv.port, (s) => s.requests.active.length === 0, 60000, "the request ended");
    assert.deepEqual(problems, []);
    const fcp = await page.evaluate(() => performance.getEntriesByType("paint").find((p) => p.name === "first-contentful-paint")?.startTime);
    const bytes = await page.evaluate(() => performance.getEntriesByType("resource").filter((r) => !r.name.endsWith("/status")).reduce((n, r) => n + r.decodedBodySize, 0)
        + performance.getEntriesByType("navigation")[0].decodedBodySize);
    console.log(`dashboard: ${bytes} bytes (document, scripts, style), first contentful paint ${fcp?.toFixed(1)} ms`);
    await page.close();
});

test("with speculative decoding the dashboard draws acceptance by position and the verify width auto chose", async () => {
    const spec = await startServer(opts, ["--draft", "ngram"]);
    const page = await browser.newPage();
    const problems = [];
    page.on("console", (m) => { if (m.type() === "error") problems.push(`console: ${m.text()}`); });
    try {
        // greedy on a random model loops, so n-gram drafts are accepted
        const body = JSON.stringify({ messages: [{ role: "user", content: "a b c a b c a b c" }], max_tokens: 200, ignore_eos: true, temperature: 0 });
        await new Promise((resolve, reject) => {
            const req = http.request({ host: "127.0.0.1", port: spec.port, method: "POST", path: "/v1/chat/completions", agent: false,
                headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) } }, (res) => { res.resume(); res.on("end", resolve); });
            req.on("error", reject);
            req.end(body);
        });
        await page.goto(spec.base + "/dashboard", { waitUntil: "load" });
        await page.waitForFunction(() => ["c-accept", "c-verify"].every((id) => Number(document.getElementById(id).dataset.max) > 0), { timeout: 30000 });
        assert.match(await page.$eval("#spec-note", (e) => e.textContent), /^drafter ngram, acceptance \d/);
        assert.match(await page.$eval("#verify-note", (e) => e.textContent), /^verify rows auto: width \d+ now$/);
        assert.deepEqual(problems, []);
    } finally {
        await page.close();
        await spec.stop();
    }
});

test("with --api-key the page asks for the key once and sends it as a bearer token", async () => {
    const keyed = await startServer(opts, ["--api-key", "sesame"]);
    const page = await browser.newPage();
    let asked = 0;
    page.on("dialog", async (d) => { asked++; await d.accept("sesame"); });
    const unauthorised = [];
    page.on("response", (r) => { if (r.status() === 401) unauthorised.push(r.url()); });
    try {
        await page.goto(keyed.base + "/", { waitUntil: "load" });
        await page.waitForFunction(() => document.getElementById("model").textContent.length > 0, { timeout: 30000 });
        assert.equal(asked, 1);
        assert.equal(await page.evaluate(() => localStorage.getItem("splash.apiKey")), "sesame");
        await page.reload({ waitUntil: "load" });
        await page.waitForFunction(() => document.getElementById("model").textContent.length > 0, { timeout: 30000 });
        assert.equal(asked, 1, "asked again after a reload");
        assert.equal(unauthorised.length, 1, unauthorised.join(", "));
        // the dashboard without the key, the question declined: it is not asked again at each poll
        await page.evaluate(() => localStorage.removeItem("splash.apiKey"));
        page.removeAllListeners("dialog");
        page.on("dialog", async (d) => { asked++; await d.dismiss(); });
        await page.goto(keyed.base + "/dashboard", { waitUntil: "load" });
        await page.waitForFunction(() => !document.getElementById("error").hidden, { timeout: 30000 });
        const polls = unauthorised.length;
        for (const until = Date.now() + 30000; unauthorised.length < polls + 3;) { // a bound against hanging only
            assert.ok(Date.now() < until, "the dashboard stopped polling");
            await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(asked, 2, "asked at each poll");
        assert.match(await page.$eval("#error", (e) => e.textContent), /^\/status: 401/);
    } finally {
        await page.evaluate(() => localStorage.removeItem("splash.apiKey"));
        await page.close();
        await keyed.stop();
    }
});
