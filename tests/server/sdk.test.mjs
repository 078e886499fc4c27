// The official OpenAI Node SDK (npm `openai`, pinned in package.json), used
// unmodified against `splash serve` started with --api-key: chat whole and
// streamed (content reassembled from the chunks, finish_reason, the
// include_usage chunk), completions with a text and a token-id prompt, seed
// reproducibility, stop strings, usage with cached tokens, models, and a
// wrong key as the SDK's AuthenticationError.
//   node sdk.test.mjs --splash BIN --model GGUF --deps DIR
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { options, requireDeps, startServer } from "./lib.mjs";

const opts = options();
const { default: OpenAI, AuthenticationError, BadRequestError } = requireDeps(opts.deps)("openai");
const KEY = "sk-splash-sdk";

let srv, client, model;
before(async () => {
    srv = await startServer(opts, ["--api-key", KEY]);
    model = srv.modelId;
    client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 60000 });
});
after(async () => { assert.equal(await srv.stop(), 0); });

// greedy, to max_tokens: ignore_eos is a splash (and vLLM) field, which the
// SDK sends as it is, like any field it has no type for
const greedy = { temperature: 0, ignore_eos: true };
const messages = [{ role: "system", content: "You are terse." }, { role: "user", content: "Tell me a story." }];

async function streamChat(params) {
    const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    let text = "", finish = null, usage = null, roles = 0, chunks = 0;
    for await (const chunk of stream) {
        chunks++;
        assert.equal(chunk.object, "chat.completion.chunk");
        assert.equal(chunk.model, model);
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) {
            if (c.delta.role) { assert.equal(c.delta.role, "assistant"); roles++; }
            text += c.delta.content ?? "";
            if (c.finish_reason) finish = c.finish_reason;
        }
    }
    return { text, finish, usage, roles, chunks };
}

test("models.list names the served model", async () => {
    const list = await client.models.list();
    const ids = [];
    for await (const m of list) ids.push(m.id);
    assert.deepEqual(ids, [model]);
});

test("chat: whole and streamed give the same greedy text", async () => {
    const whole = await client.chat.completions.create({ model, messages, max_tokens: 20, ...greedy });
    assert.equal(whole.object, "chat.completion");
    assert.equal(whole.choices.length, 1);
    assert.equal(whole.choices[0].message.role, "assistant");
    assert.equal(whole.choices[0].finish_reason, "length");
    assert.ok(whole.choices[0].message.content.length > 0);
    assert.equal(whole.usage.completion_tokens, 20);
    assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + 20);

    const s = await streamChat({ model, messages, max_tokens: 20, ...greedy });
    assert.equal(s.text, whole.choices[0].message.content);
    assert.equal(s.finish, "length");
    assert.equal(s.roles, 1);
    assert.ok(s.chunks >= 3);
    assert.deepEqual({ ...s.usage, prompt_tokens_details: undefined }, { ...whole.usage, prompt_tokens_details: undefined });
});

test("completions: text prompt, token-id prompt and stream agree", async () => {
    const a = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 16, ...greedy });
    assert.equal(a.object, "text_completion");
    assert.equal(a.choices[0].finish_reason, "length");
    assert.equal(a.usage.completion_tokens, 16);
    // the same prompt as token ids (from /tokenize, which the SDK has no method for)
    const tok = await (await fetch(`${srv.base}/tokenize`, { method: "POST", headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ prompt: "Once upon a time" }) })).json();
    const b = await client.completions.create({ model, prompt: tok.tokens, max_tokens: 16, ...greedy });
    assert.equal(b.choices[0].text, a.choices[0].text);
    assert.equal(b.usage.prompt_tokens, tok.count);
    let streamed = "", finish = null;
    const stream = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 16, ...greedy, stream: true });
    for await (const chunk of stream) {
        for (const c of chunk.choices) { streamed += c.text; finish = c.finish_reason ?? finish; }
    }
    assert.equal(streamed, a.choices[0].text);
    assert.equal(finish, "length");
});

test("seed: same seed same text, another seed another text", async () => {
    const run = async (seed) => (await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 1, seed })).choices[0].message.content;
    const [a, b, c] = [await run(7), await run(7), await run(8)];
    assert.equal(a, b);
    assert.notEqual(a, c);
    // and streamed with the same seed
    assert.equal((await streamChat({ model, messages, max_tokens: 24, temperature: 1, seed: 7 })).text, a);
});

// A printable string of 3 to 6 characters that first occurs past the start
// of text (so the text before it is not empty), or undefined.
function stopFor(text) {
    for (let i = 1; i < text.length; i++) {
        const m = text.slice(i).match(/^[\x21-\x7e]{3,6}/);
        if (m && text.indexOf(m[0]) === i) return m[0];
    }
    return undefined;
}

test("stop strings end the text before them with finish_reason stop", async () => {
    const free = (await client.completions.create({ model, prompt: "Stop me", max_tokens: 32, ...greedy })).choices[0].text;
    const stop = stopFor(free);
    assert.ok(stop, `no printable run in ${JSON.stringify(free)}`);
    const want = free.slice(0, free.indexOf(stop));
    assert.ok(want.length > 0);
    const r = await client.completions.create({ model, prompt: "Stop me", max_tokens: 32, ...greedy, stop: [stop, "never-appears-zzz"] });
    assert.equal(r.choices[0].text, want);
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.ok(r.usage.completion_tokens < 32);
    // chat, streamed
    const freeChat = (await client.chat.completions.create({ model, messages, max_tokens: 32, ...greedy })).choices[0].message.content;
    const stopChat = stopFor(freeChat);
    assert.ok(stopChat, `no printable run in ${JSON.stringify(freeChat)}`);
    const s = await streamChat({ model, messages, max_tokens: 32, ...greedy, stop: stopChat });
    assert.equal(s.text, freeChat.slice(0, freeChat.indexOf(stopChat)));
    assert.equal(s.finish, "stop");
});

test("usage: cached tokens for a repeated prompt with the same cache_salt only", async () => {
    const long = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(4);
    const ask = async (salt) => (await client.completions.create({ model, prompt: long, max_tokens: 1, cache_salt: salt })).usage;
    const first = await ask("sdk-a");
    assert.equal(first.prompt_tokens_details.cached_tokens, 0);
    const again = await ask("sdk-a");
    assert.ok(again.prompt_tokens_details.cached_tokens > 0, JSON.stringify(again));
    assert.ok(again.prompt_tokens_details.cached_tokens < again.prompt_tokens);
    assert.equal(again.prompt_tokens, first.prompt_tokens);
    assert.equal((await ask("sdk-b")).prompt_tokens_details.cached_tokens, 0);
});

test("a wrong key is the SDK's AuthenticationError (401)", async () => {
    const wrong = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: "sk-wrong", maxRetries: 0 });
    await assert.rejects(wrong.chat.completions.create({ model, messages, max_tokens: 1 }), (e) => {
        assert.ok(e instanceof AuthenticationError, `${e?.constructor?.name}: ${e}`);
        assert.equal(e.status, 401);
        assert.equal(e.type, "authentication_error");
        assert.equal(e.code, "invalid_api_key");
        return true;
    });
});

test("a refused parameter is the SDK's BadRequestError naming it", async () => {
    await assert.rejects(client.chat.completions.create({ model, messages, n: 17 }), (e) => {
        assert.ok(e instanceof BadRequestError, `${e?.constructor?.name}: ${e}`);
        assert.equal(e.status, 400);
        assert.equal(e.param, "n");
        return true;
    });
});
