// The official Anthropic Node SDK (npm `@anthropic-ai/sdk`, pinned in
// package.json), used unmodified against `splash serve --api-key` on
// /v1/messages: text with system as a string and as blocks, max_tokens and
// stop_sequences as stop reasons, the streamed event sequence and its text
// equal to the whole answer, countTokens, a tool use round trip (tool_choice
// any and tool give a tool_use block valid for its schema; a tool_result
// goes back), and malformed requests as Anthropic's error bodies.
//   node anthropic.test.mjs --splash BIN --model GGUF --deps DIR
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { options, request, requireDeps, startServer } from "./lib.mjs";

const opts = options();
const deps = requireDeps(opts.deps);
const { default: Anthropic, AuthenticationError, BadRequestError, NotFoundError } = deps("@anthropic-ai/sdk");
const Ajv = deps("ajv").default;
const KEY = "sk-splash-anthropic";

let srv, client, model;
before(async () => {
    srv = await startServer(opts, ["--api-key", KEY]);
    model = srv.modelId;
    client = new Anthropic({ baseURL: srv.base, apiKey: KEY, maxRetries: 0, timeout: 60000 });
});
after(async () => { assert.equal(await srv.stop(), 0); });

// greedy, to max_tokens (ignore_eos and seed are splash extensions the SDK sends as they are)
const greedy = { temperature: 0, ignore_eos: true };
const messages = [{ role: "user", content: "Tell me a story." }];
const textOf = (msg) => msg.content.filter((b) => b.type === "text").map((b) => b.text).join("");

function checkMessage(m) {
    assert.match(m.id, /^msg_/);
    assert.equal(m.type, "message");
    assert.equal(m.role, "assistant");
    assert.equal(m.model, model);
    assert.ok(Array.isArray(m.content));
    for (const k of ["input_tokens", "output_tokens", "cache_read_input_tokens"])
        assert.equal(typeof m.usage[k], "number", k);
}

test("text: system as a string and as blocks, stop_reason max_tokens", async () => {
    const a = await client.messages.create({ model, max_tokens: 16, system: "You are terse.", messages, ...greedy });
    checkMessage(a);
    assert.equal(a.stop_reason, "max_tokens");
    assert.equal(a.stop_sequence, null);
    assert.equal(a.usage.output_tokens, 16);
    assert.equal(a.content.length, 1);
    assert.equal(a.content[0].type, "text");
    assert.ok(a.content[0].text.length > 0);
    const b = await client.messages.create({
        model, max_tokens: 16, system: [{ type: "text", text: "You are terse." }], messages, ...greedy,
        metadata: { user_id: "u-1" },
    });
    assert.equal(textOf(b), textOf(a));
    const c = await client.messages.create({ model, max_tokens: 16, messages, ...greedy });
    assert.notEqual(textOf(c), textOf(a)); // the system prompt reached the model
});

// A printable string of 3 to 6 characters first occurring past the start of text.
function stopFor(text) {
    for (let i = 1; i < text.length; i++) {
        const m = text.slice(i).match(/^[\x21-\x7e]{3,6}/);
        if (m && text.indexOf(m[0]) === i) return m[0];
    }
    return undefined;
}

test("stop_sequences end the text with stop_reason stop_sequence", async () => {
    const free = textOf(await client.messages.create({ model, max_tokens: 32, messages, ...greedy }));
    const stop = stopFor(free);
    assert.ok(stop, `no printable run in ${JSON.stringify(free)}`);
    const r = await client.messages.create({ model, max_tokens: 32, messages, ...greedy, stop_sequences: ["never-zzz", stop] });
    assert.equal(r.stop_reason, "stop_sequence");
    assert.equal(r.stop_sequence, stop);
    assert.equal(textOf(r), free.slice(0, free.indexOf(stop)));
    assert.ok(r.usage.output_tokens < 32);
});

async function streamEvents(params) {
    const stream = client.messages.stream(params);
    const types = [];
    for await (const ev of stream) types.push(ev.type);
    return { types, final: await stream.finalMessage() };
}

test("stream: Anthropic's event sequence, and the text of the whole answer for the same seed", async () => {
    const params = { model, max_tokens: 24, messages, temperature: 1, seed: 7 };
    const whole = await client.messages.create(params);
    const { types, final } = await streamEvents(params);
    assert.equal(types[0], "message_start");
    assert.equal(types.at(-1), "message_stop");
    assert.equal(types.at(-2), "message_delta");
    const body = types.slice(1, -2).filter((t) => t !== "ping");
    assert.equal(body[0], "content_block_start");
    assert.equal(body.at(-1), "content_block_stop");
    assert.ok(body.slice(1, -1).every((t) => t === "content_block_delta"), types.join(" "));
    checkMessage(final);
    assert.equal(textOf(final), textOf(whole));
    assert.equal(final.stop_reason, whole.stop_reason);
    assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
    // and another seed gives another text
    assert.notEqual(textOf(await client.messages.create({ ...params, seed: 8 })), textOf(whole));
});

test("countTokens: the rendered prompt's length, as create counts it", async () => {
    const params = { model, system: "You are terse.", messages };
    const { input_tokens } = await client.messages.countTokens(params);
    assert.ok(input_tokens > 5);
    const r = await client.messages.create({ ...params, max_tokens: 1, seed: 1 }); // seeded: CI stays reproducible
    assert.equal(r.usage.input_tokens + r.usage.cache_read_input_tokens, input_tokens);
});

const weather = {
    name: "get_weather",
    description: "The weather forecast for a city",
    input_schema: {
        type: "object",
        properties: { city: { type: "string", maxLength: 12 }, days: { type: "integer", minimum: 1, maximum: 7 } },
        required: ["city", "days"],
        additionalProperties: false,
    },
};
const clock = { name: "get_time", input_schema: { type: "object", properties: { zone: { type: "string", enum: ["UTC", "CET"] } }, required: ["zone"] } };
const ajv = new Ajv();
const VALID = { get_weather: ajv.compile(weather.input_schema), get_time: ajv.compile(clock.input_schema) };
const toolParams = () => ({ model, max_tokens: 200, tools: [weather, clock], messages: [{ role: "user", content: "Weather in Paris?" }] });

function toolUse(m, name) {
    assert.equal(m.stop_reason, "tool_use", JSON.stringify(m));
    const uses = m.content.filter((b) => b.type === "tool_use");
    assert.equal(uses.length, 1, JSON.stringify(m.content));
    const u = uses[0];
    assert.equal(typeof u.id, "string");
    if (name) assert.equal(u.name, name);
    assert.ok(VALID[u.name](u.input), `${JSON.stringify(u.input)}: ${ajv.errorsText(VALID[u.name].errors)}`);
    return u;
}

test("tools: tool_choice any and tool give a valid tool_use block; tool_result goes back", async () => {
    const toolBase = toolParams();
    const any = { type: "any", disable_parallel_tool_use: true };
    const a = await client.messages.create({ ...toolBase, tool_choice: any, seed: 3 });
    const use = toolUse(a);
    const named = await client.messages.create({ ...toolBase, tool_choice: { type: "tool", name: "get_time", disable_parallel_tool_use: true }, seed: 3 });
    toolUse(named, "get_time");
    // streamed: input_json_delta reassembles the same call
    const { types, final } = await streamEvents({ ...toolBase, tool_choice: any, seed: 3 });
    assert.ok(types.includes("content_block_delta"));
    const s = toolUse(final);
    assert.deepEqual([s.name, s.input], [use.name, use.input]);
    // the round trip: the call and its result sent back
    const back = await client.messages.create({
        ...toolBase,
        max_tokens: 8,
        messages: [
            ...toolBase.messages,
            { role: "assistant", content: a.content },
            { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "Sunny, 21 C" }, { type: "text", text: "Thanks." }] },
        ],
    });
    checkMessage(back);
    const err = await client.messages.create({
        ...toolBase,
        max_tokens: 4,
        tool_choice: { type: "none" },
        messages: [
            ...toolBase.messages,
            { role: "assistant", content: a.content },
            { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: [{ type: "text", text: "no such city" }], is_error: true }] },
        ],
    });
    assert.equal(err.content.filter((b) => b.type === "tool_use").length, 0);
    // a call whose input holds byte 0 (a model can write \u0000 in a JSON string) goes back as it came
    const nul = { ...use, input: { ...use.input, note: "a\u0000b" } };
    const withNul = await client.messages.create({
        ...toolBase,
        max_tokens: 4,
        messages: [
            ...toolBase.messages,
            { role: "assistant", content: [nul] },
            { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "o\u0000k" }] },
        ],
    });
    checkMessage(withNul);
});

test("thinking: enabled and disabled are accepted; a bad budget is refused", async () => {
    // max_tokens must exceed the budget; the stop sequences end the answer
    // within a few tokens (half the tiny vocabulary renders as "[PAD…]"), so
    // the request stays short in the sanitizer builds too
    const stops = ["[PAD", "a", "e", " "];
    const on = await client.messages.create({ model, max_tokens: 2048, messages, thinking: { type: "enabled", budget_tokens: 1024 }, temperature: 0, stop_sequences: stops });
    checkMessage(on);
    assert.equal(on.stop_reason, "stop_sequence");
    assert.ok(on.usage.output_tokens < 64, `${on.usage.output_tokens} tokens`);
    const off = await client.messages.create({ model, max_tokens: 4, messages, thinking: { type: "disabled" } });
    checkMessage(off);
    await assert.rejects(client.messages.create({ model, max_tokens: 2048, messages, thinking: { type: "enabled", budget_tokens: 10 } }), BadRequestError);
});

// Raw requests, so the body and headers are exactly ours.
async function anthropicError(body, status, path = "/v1/messages", headers = { "x-api-key": KEY, "anthropic-version": "2023-06-01" }) {
    const r = await request(srv.port, "POST", path, { headers, body });
    assert.equal(r.status, status, r.text);
    const j = JSON.parse(r.text);
    assert.equal(j.type, "error", r.text);
    assert.equal(typeof j.error.type, "string", r.text);
    assert.equal(typeof j.error.message, "string", r.text);
    assert.deepEqual(Object.keys(j).sort(), ["error", "type"]);
    return j.error;
}

test("malformed requests: Anthropic's error body with the right status", async () => {
    const ok = { model, max_tokens: 4, messages };
    const bad = [
        [{ model, messages }, "max_tokens"],
        [{ ...ok, max_tokens: 0 }, "max_tokens"],
        [{ ...ok, temperature: 1.5 }, "temperature"],
        [{ ...ok, frobnicate: 1 }, "frobnicate"],
        [{ ...ok, messages: [] }, "messages"],
        [{ ...ok, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "" } }] }] }, "image"],
        [{ ...ok, messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "Once" }] }, "prefill"],
        [{ ...ok, tools: [{ type: "web_search_20250305", name: "web_search" }] }, "server tools"],
        [{ ...ok, tool_choice: { type: "tool", name: "nope" } }, "tool_choice"],
        [{ ...ok, thinking: { type: "adaptive" } }, "thinking"],
        [{ ...ok, metadata: { user_id: "u", other: 1 } }, "metadata"],
        [{ ...ok, stop_sequences: "x" }, "stop_sequences"],
    ];
    for (const [body, word] of bad) {
        const e = await anthropicError(body, 400);
        assert.equal(e.type, "invalid_request_error");
        assert.ok(e.message.includes(word), `${e.message} should name ${word}`);
    }
    await anthropicError("{not json", 400);
    assert.equal((await anthropicError({ model, messages, extra: 1 }, 400, "/v1/messages/count_tokens")).type, "invalid_request_error");
    assert.equal((await anthropicError(ok, 401, "/v1/messages", { "x-api-key": "wrong" })).type, "authentication_error");
    assert.equal((await anthropicError({ ...ok, model: "claude-x" }, 404)).type, "not_found_error");
    // and through the SDK, its error classes with the body
    await assert.rejects(client.messages.create({ model, messages }), (e) => e instanceof BadRequestError && e.error?.error?.type === "invalid_request_error");
    await assert.rejects(client.messages.create({ ...ok, model: "nope" }), NotFoundError);
    const wrong = new Anthropic({ baseURL: srv.base, apiKey: "wrong", maxRetries: 0 });
    await assert.rejects(wrong.messages.create(ok), AuthenticationError);
});
