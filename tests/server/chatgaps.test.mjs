// Chat and completions beyond one plain choice, through the official OpenAI
// Node SDK (npm `openai`, pinned): logprobs and top_logprobs (chat and
// completions shapes, whole and streamed), n = 2 with a seed, logit_bias
// forcing and banning a token, completions echo, models.retrieve, and the
// fields a local server accepts and ignores (docs/architecture.md, "OpenAI request fields").
//   node chatgaps.test.mjs --splash BIN --model GGUF --deps DIR
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import http from "node:http";
import { options, post, requireDeps, startServer, status, waitStatus } from "./lib.mjs";

const opts = options();
const { default: OpenAI, BadRequestError, NotFoundError } = requireDeps(opts.deps)("openai");

let srv, client, model;
before(async () => {
    srv = await startServer(opts, ["--max-seqs", "4"]);
    model = srv.modelId;
    client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: "none", maxRetries: 0, timeout: 60000 });
});
after(async () => { assert.equal(await srv.stop(), 0); });

const greedy = { temperature: 0, ignore_eos: true };
const messages = [{ role: "user", content: "Tell me a story." }];
const PROMPT = [11, 22, 33, 44, 55, 66, 77, 88];

function checkTop(entry, n) {
    assert.ok(Array.isArray(entry.bytes));
    assert.ok(entry.top_logprobs.length >= 1 && entry.top_logprobs.length <= n);
    let mass = 0;
    for (const t of entry.top_logprobs) {
        assert.ok(t.logprob <= 0);
        mass += Math.exp(t.logprob);
    }
    assert.ok(mass <= 1 + 1e-5, `top_logprobs mass ${mass} > 1`);
    for (let i = 1; i < entry.top_logprobs.length; i++)
        assert.ok(entry.top_logprobs[i - 1].logprob >= entry.top_logprobs[i].logprob, "most likely first");
    return mass;
}

test("chat logprobs, greedy: each token is the argmax of its top_logprobs", async () => {
    const r = await client.chat.completions.create({ model, messages, max_tokens: 8, logprobs: true, top_logprobs: 5, ...greedy });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, r.usage.completion_tokens);
    for (const e of content) {
        checkTop(e, 5);
        assert.equal(e.top_logprobs[0].token, e.token);
        assert.ok(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6);
    }
    assert.equal(content.map((e) => e.token).join(""), r.choices[0].message.content);
    // streamed: the same entries, spread over the chunks
    const stream = await client.chat.completions.create({
        model, messages, max_tokens: 8, logprobs: true, top_logprobs: 5, stream: true, ...greedy });
    const streamed = [];
    for await (const chunk of stream)
        for (const c of chunk.choices) streamed.push(...(c.logprobs?.content ?? []));
    assert.deepEqual(streamed.map((e) => [e.token, e.logprob]), content.map((e) => [e.token, e.logprob]));
});

test("chat logprobs, sampled with top_k: the kept tokens are all listed and sum to 1", async () => {
    const r = await client.chat.completions.create({
        model, messages, max_tokens: 6, logprobs: true, top_logprobs: 20, temperature: 1.3, top_k: 4, seed: 9, ignore_eos: true });
    for (const e of r.choices[0].logprobs.content) {
        assert.ok(e.top_logprobs.length <= 4, "filtered tokens have probability 0 and are not listed");
        const mass = checkTop(e, 20);
        assert.ok(Math.abs(mass - 1) < 1e-4, `kept mass ${mass}`);
        assert.ok(e.top_logprobs.some((t) => t.token === e.token && t.logprob === e.logprob), "chosen token listed");
    }
    await assert.rejects(client.chat.completions.create({ model, messages, top_logprobs: 21, logprobs: true }), BadRequestError);
    await assert.rejects(client.chat.completions.create({ model, messages, top_logprobs: 2 }), BadRequestError);
});

test("completions logprobs: tokens, token_logprobs, top_logprobs, text_offset", async () => {
    const r = await client.completions.create({ model, prompt: PROMPT, max_tokens: 6, logprobs: 3, ...greedy });
    const lp = r.choices[0].logprobs;
    assert.equal(lp.tokens.length, 6);
    const stream = await client.completions.create({ model, prompt: PROMPT, max_tokens: 6, logprobs: 3, stream: true, ...greedy });
    const streamed = [];
    for await (const chunk of stream)
        for (const c of chunk.choices) streamed.push(...(c.logprobs?.token_logprobs ?? []));
    assert.deepEqual(streamed, lp.token_logprobs);
    assert.equal(lp.token_logprobs.length, 6);
    assert.equal(lp.top_logprobs.length, 6);
    assert.equal(lp.tokens.join(""), r.choices[0].text);
    // text_offset: bytes into the text (a token string ending in part of a
    // UTF-8 sequence shows U+FFFD, so only whole ones are summed exactly)
    let offset = 0, exact = true;
    for (let i = 0; i < 6; i++) {
        if (exact) assert.equal(lp.text_offset[i], offset);
        if (i) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
        exact &&= !lp.tokens[i].includes("\uFFFD");
        offset += Buffer.byteLength(lp.tokens[i]);
        const top = Object.entries(lp.top_logprobs[i]);
        assert.ok(top.length >= 1 && top.length <= 3);
        const best = Math.max(...top.map(([, v]) => v));
        assert.ok(Math.abs(best - lp.token_logprobs[i]) < 1e-6, "greedy: the chosen token is the most likely");
    }
});

test("n = 2 with a seed: two choices, the same on a second identical request", async () => {
    const params = { model, messages, max_tokens: 8, n: 2, seed: 1234, temperature: 1.5, ignore_eos: true };
    const a = await client.chat.completions.create(params);
    const b = await client.chat.completions.create(params);
    assert.deepEqual(a.choices.map((c) => c.index), [0, 1]);
    assert.deepEqual(a.choices.map((c) => c.message.content), b.choices.map((c) => c.message.content));
    assert.equal(a.usage.completion_tokens, 16);
    const one = await client.chat.completions.create({ ...params, n: 1 });
    assert.equal(a.usage.prompt_tokens, one.usage.prompt_tokens, "the prompt is counted once");
    assert.equal(one.choices[0].message.content, a.choices[0].message.content, "choice 0 keeps the request's seed");
    // streamed: chunks carry their choice's index and reassemble to the same texts
    const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    const texts = ["", ""], finishes = [null, null];
    let usage = null;
    for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) {
            texts[c.index] += c.delta.content ?? "";
            if (c.finish_reason) finishes[c.index] = c.finish_reason;
        }
    }
    assert.deepEqual(texts, a.choices.map((c) => c.message.content));
    assert.deepEqual(finishes, ["length", "length"]);
    assert.equal(usage.completion_tokens, 16);
    // completions too
    const c = await client.completions.create({ model, prompt: PROMPT, max_tokens: 4, n: 2, seed: 5, temperature: 1, ignore_eos: true });
    assert.deepEqual(c.choices.map((x) => x.index), [0, 1]);
    await assert.rejects(client.chat.completions.create({ ...params, n: 5 }), BadRequestError, "n above --max-seqs");
    await assert.rejects(client.chat.completions.create({ ...params, n: 0 }), BadRequestError);
});

async function tokenText(id) {
    const r = await post(srv.port, "/detokenize", { tokens: [id] });
    assert.equal(r.status, 200);
    return r.json.prompt;
}

test("logit_bias: +100 forces a token, -100 bans the one greedy would pick", async () => {
    const X = 300, Y = 301;
    const [tx, ty] = [await tokenText(X), await tokenText(Y)];
    assert.notEqual(tx, ty);
    const run = async (bias) => (await client.completions.create({
        model, prompt: PROMPT, max_tokens: 4, logprobs: 0, logit_bias: bias, ...greedy })).choices[0].logprobs.tokens;
    assert.deepEqual(await run({ [X]: 100 }), [tx, tx, tx, tx]);
    // both lifted: greedy takes the one with the higher logit; banning it leaves the other
    const both = await run({ [X]: 100, [Y]: 100 });
    const winner = both[0] === tx ? X : Y, other = winner === X ? Y : X;
    const banned = await run({ [X]: 100, [Y]: 100, [winner]: -100 });
    assert.deepEqual(banned, Array(4).fill(winner === X ? ty : tx));
    assert.ok(!banned.includes(await tokenText(winner)));
    assert.equal(other === X ? tx : ty, banned[0]);
    for (const bad of [{ "-1": 5 }, { 99999999: 5 }, { x: 1 }, { [X]: 101 }, { [X]: "5" }])
        await assert.rejects(client.completions.create({ model, prompt: PROMPT, max_tokens: 2, logit_bias: bad }), BadRequestError);
});

test("completions echo: the prompt text comes first", async () => {
    const prompt = "Once upon a time";
    const plain = await client.completions.create({ model, prompt, max_tokens: 4, ...greedy });
    const echoed = await client.completions.create({ model, prompt, max_tokens: 4, echo: true, ...greedy });
    assert.equal(echoed.choices[0].text, prompt + plain.choices[0].text);
    const stream = await client.completions.create({ model, prompt, max_tokens: 4, echo: true, stream: true, ...greedy });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    assert.equal(text, echoed.choices[0].text);
    await assert.rejects(client.completions.create({ model, prompt, max_tokens: 4, echo: true, logprobs: 1 }), BadRequestError);
});

test("models.retrieve: the served model, and 404 for another", async () => {
    const m = await client.models.retrieve(model);
    assert.equal(m.id, model);
    assert.equal(m.object, "model");
    await assert.rejects(client.models.retrieve("no-such-model"), NotFoundError);
});

test("fields that change nothing locally are accepted and ignored; others still refused", async () => {
    const base = { model, messages, max_tokens: 6, ...greedy };
    const plain = await client.chat.completions.create(base);
    const ignored = await client.chat.completions.create({
        ...base, store: false, metadata: { team: "x" }, user: "u-1", service_tier: "auto", parallel_tool_calls: true,
        reasoning_effort: "low", prediction: { type: "content", content: "a guess" } });
    assert.equal(ignored.choices[0].message.content, plain.choices[0].message.content);
    const c = await client.completions.create({ model, prompt: PROMPT, max_tokens: 2, user: "u", store: true, metadata: {} });
    assert.equal(c.choices.length, 1);
    await assert.rejects(client.chat.completions.create({ ...base, audio: { voice: "alloy", format: "mp3" } }), BadRequestError);
    await assert.rejects(client.chat.completions.create({ ...base, reasoning_effort: "extreme" }), BadRequestError);
    // reasoning_effort "none" is thinking off, rendered as enable_thinking: false
    const none = await client.chat.completions.create({ ...base, reasoning_effort: "none" });
    const off = await client.chat.completions.create({ ...base, chat_template_kwargs: { enable_thinking: false } });
    assert.equal(none.usage.prompt_tokens, off.usage.prompt_tokens);
    assert.notEqual(none.usage.prompt_tokens, plain.usage.prompt_tokens);
    assert.equal(none.choices[0].message.content, off.choices[0].message.content);
    await assert.rejects(client.chat.completions.create({ ...base, metadata: "x" }), BadRequestError);
});

test("n = 3: the other choices read the prompt from the prefix cache", async () => {
    await waitStatus(srv.port, (s) => s.requests.active.length === 0, 30000, "idle before");
    const before = await status(srv.port);
    const prompt = Array.from({ length: 100 }, (_, i) => 7 + ((i * 37) % 200));
    const r = await client.completions.create({
        model, prompt, max_tokens: 2, n: 3, temperature: 1, seed: 3, ignore_eos: true, cache_salt: "chatgaps-n3" });
    assert.equal(r.choices.length, 3);
    assert.equal(r.usage.prompt_tokens, 100);
    assert.equal(r.usage.completion_tokens, 6);
    const after = await waitStatus(srv.port, (s) => s.requests.active.length === 0, 30000, "idle after");
    // choice 0 computes the prompt; 1 and 2 find its six full 16-token blocks
    assert.ok(after.cache.hit_tokens - before.cache.hit_tokens >= 2 * 96,
        `hit tokens ${before.cache.hit_tokens} -> ${after.cache.hit_tokens}`);
});

test("n = 3 streamed: a client that leaves cancels every choice", async () => {
    const before = await waitStatus(srv.port, (s) => s.requests.active.length === 0, 30000, "idle before");
    const data = JSON.stringify({ model, prompt: "A long tale", max_tokens: 3000, n: 3, ignore_eos: true, stream: true });
    let events = 0;
    const req = http.request({ host: "127.0.0.1", port: srv.port, method: "POST", path: "/v1/completions", agent: false,
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } });
    await new Promise((resolve, reject) => {
        req.on("response", (res) => {
            res.setEncoding("utf8");
            res.on("data", (c) => {
                events += (c.match(/^data: /gm) ?? []).length;
                if (events >= 6) resolve();
            });
        });
        req.on("error", (e) => { if (events < 6) reject(e); });
        req.end(data);
    });
    /* choices 1 and 2 join once choice 0 has its first token: wait for all three */
    await waitStatus(srv.port, (s) => s.requests.active.length === 3, 30000, "three choices running");
    req.destroy();
    const done = await waitStatus(srv.port,
        (s) => s.requests.active.length === 0 && s.cache.blocks_used === 0 && s.requests.cancelled >= before.requests.cancelled + 3,
        60000, "all three cancelled and their blocks freed");
    assert.equal(done.requests.cancelled, before.requests.cancelled + 3);
});
