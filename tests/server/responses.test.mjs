// The official OpenAI Node SDK (npm `openai`, pinned in package.json), used
// unmodified against `splash serve --api-key` on /v1/responses: create with
// a string input and with items plus instructions (the instructions reach
// the model), text.format json_schema giving JSON valid for the schema,
// responses.stream (the event sequence in order with sequence numbers, the
// final text equal to the concatenated deltas and to the whole answer for
// the same seed), a tool call round trip (function_call out,
// function_call_output back in), and 400s naming the field
// (previous_response_id, a bad input item type, bad max_output_tokens);
// reasoning items from <think> (the trained demo model), whole and streamed.
//   node responses.test.mjs --splash BIN --model GGUF --deps DIR
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { options, request, requireDeps, startServer } from "./lib.mjs";

const opts = options();
const deps = requireDeps(opts.deps);
const { default: OpenAI, BadRequestError } = deps("openai");
const Ajv = deps("ajv").default;
const KEY = "sk-splash-responses";
const DEMO = fileURLToPath(new URL("../../models/demo/demo-target-f16.gguf", import.meta.url));

let srv, client, model;
before(async () => {
    srv = await startServer(opts, ["--api-key", KEY]);
    model = srv.modelId;
    client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 60000 });
});
after(async () => { assert.equal(await srv.stop(), 0); });

// greedy, to max_output_tokens (ignore_eos is a splash field the SDK sends as it is)
const greedy = { temperature: 0, ignore_eos: true, reasoning: { effort: "none" } };

const textOf = (r) => r.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");

function checkResponse(r, m = model) {
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, "response");
    assert.equal(r.model, m);
    assert.ok(Array.isArray(r.output));
    for (const k of ["input_tokens", "output_tokens", "total_tokens"]) assert.equal(typeof r.usage[k], "number", k);
    assert.equal(typeof r.usage.input_tokens_details.cached_tokens, "number");
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    for (const item of r.output) assert.match(item.id, /^(msg|rs|fc)_/);
}

test("create: string input, items with instructions, max_output_tokens as incomplete", async () => {
    const a = await client.responses.create({ model, input: "Tell me a story.", max_output_tokens: 12, ...greedy });
    checkResponse(a);
    assert.equal(a.status, "incomplete");
    assert.deepEqual(a.incomplete_details, { reason: "max_output_tokens" });
    assert.equal(a.usage.output_tokens, 12);
    const msg = a.output.find((o) => o.type === "message");
    assert.equal(msg.role, "assistant");
    assert.equal(msg.content[0].type, "output_text");
    assert.ok(a.output_text.length > 0);
    // the same conversation as items, then with instructions
    const items = [{ role: "user", content: [{ type: "input_text", text: "Tell me a story." }] }];
    const b = await client.responses.create({ model, input: items, max_output_tokens: 12, ...greedy, store: false, metadata: { k: "v" }, user: "u-1" });
    assert.equal(b.output_text, a.output_text);
    assert.deepEqual(b.metadata, { k: "v" });
    const c = await client.responses.create({ model, input: items, instructions: "You are terse.", max_output_tokens: 12, ...greedy });
    checkResponse(c);
    assert.equal(c.instructions, "You are terse.");
    assert.notEqual(c.output_text, a.output_text); // the instructions reached the model
    assert.ok(c.usage.input_tokens > a.usage.input_tokens);
});

test("items: reasoning and assistant output sent back, system and developer roles", async () => {
    const r = await client.responses.create({
        model, max_output_tokens: 4, ...greedy,
        input: [
            { role: "developer", content: "Be brief." },
            { role: "user", content: "Tell me a story." },
            { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "A short one." }] },
            { type: "message", role: "assistant", id: "msg_1", status: "completed", content: [{ type: "output_text", text: "Once.", annotations: [] }] },
            { role: "system", content: [{ type: "input_text", text: "Stay brief." }] },
            { role: "user", content: "More." },
        ],
    });
    checkResponse(r);
    assert.equal(r.usage.output_tokens, 4);
});

test("text.format json_schema: valid JSON for the schema", async () => {
    const schema = {
        type: "object",
        properties: { name: { type: "string", maxLength: 10 }, age: { type: "integer", minimum: 0, maximum: 120 } },
        required: ["name", "age"],
        additionalProperties: false,
    };
    const validate = new Ajv().compile(schema);
    for (const seed of [1, 2]) {
        const r = await client.responses.create({
            model, input: "A person, as JSON.", max_output_tokens: 200, seed, reasoning: { effort: "none" },
            text: { format: { type: "json_schema", name: "person", schema, strict: true } },
        });
        checkResponse(r);
        assert.equal(r.status, "completed", JSON.stringify(r));
        const value = JSON.parse(r.output_text);
        assert.ok(validate(value), `${r.output_text}: ${JSON.stringify(validate.errors)}`);
        assert.equal(r.text.format.type, "json_schema");
    }
});

test("stream: the Responses events in order; the final text is the deltas and the whole answer", async () => {
    const params = { model, input: "Tell me a story.", max_output_tokens: 24, temperature: 1, seed: 7, reasoning: { effort: "none" } };
    const whole = await client.responses.create(params);
    const stream = client.responses.stream(params);
    const events = [];
    for await (const ev of stream) events.push(ev);
    const final = await stream.finalResponse();
    const types = events.map((e) => e.type);
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    assert.deepEqual(types.slice(0, 4), ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    const end = whole.status === "incomplete" ? "response.incomplete" : "response.completed";
    assert.deepEqual(types.slice(-4), ["response.output_text.done", "response.content_part.done", "response.output_item.done", end]);
    assert.ok(types.slice(4, -4).every((t) => t === "response.output_text.delta"), types.join(" "));
    const deltas = events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
    assert.equal(events.at(-4).text, deltas);
    // the SDK's snapshot takes the last event's Response only from response.completed
    const last = events.at(-1).response;
    checkResponse(last);
    assert.equal(last.output[0].content[0].text, deltas);
    assert.equal(textOf(final), deltas); // the SDK's accumulated snapshot
    assert.equal(textOf(final), whole.output_text);
    assert.equal(last.usage.output_tokens, whole.usage.output_tokens);
    assert.equal(last.status, whole.status);
});

const weather = {
    type: "function",
    name: "get_weather",
    description: "The weather forecast for a city",
    parameters: {
        type: "object",
        properties: { city: { type: "string", maxLength: 12 }, days: { type: "integer", minimum: 1, maximum: 7 } },
        required: ["city", "days"],
        additionalProperties: false,
    },
    strict: true,
};
const validArgs = new Ajv().compile(weather.parameters);

test("tools: a function_call out, its function_call_output back in; streamed calls", async () => {
    const input = [{ role: "user", content: "Weather in Paris?" }];
    const base = { model, tools: [weather], max_output_tokens: 200, reasoning: { effort: "none" }, parallel_tool_calls: false, seed: 3 };
    const a = await client.responses.create({ ...base, input, tool_choice: "required" });
    checkResponse(a);
    const calls = a.output.filter((o) => o.type === "function_call");
    assert.equal(calls.length, 1, JSON.stringify(a.output));
    const call = calls[0];
    assert.equal(call.name, "get_weather");
    assert.equal(typeof call.call_id, "string");
    assert.ok(validArgs(JSON.parse(call.arguments)), call.arguments);
    // a named tool_choice, streamed: the arguments events carry the same call
    const stream = client.responses.stream({ ...base, input, tool_choice: { type: "function", name: "get_weather" } });
    const types = [];
    for await (const ev of stream) types.push(ev.type);
    assert.ok(types.includes("response.function_call_arguments.delta"), types.join(" "));
    assert.ok(types.includes("response.function_call_arguments.done"), types.join(" "));
    const s = (await stream.finalResponse()).output.find((o) => o.type === "function_call");
    assert.deepEqual([s.name, JSON.parse(s.arguments)], [call.name, JSON.parse(call.arguments)]);
    // the round trip: the output sent back with the call's result
    const back = await client.responses.create({
        ...base,
        max_output_tokens: 8,
        tool_choice: "none",
        input: [...input, ...a.output, { type: "function_call_output", call_id: call.call_id, output: "Sunny, 21 C" }],
    });
    checkResponse(back);
    assert.equal(back.output.filter((o) => o.type === "function_call").length, 0);
    assert.ok(back.usage.input_tokens > a.usage.input_tokens);
});

// Reasoning needs a model that opens <think>: the trained demo model does
// under a forced call at temperature 1 for some seeds (a random model never
// closes it, tools.test.mjs says more). Each seed's whole answer is checked
// against its stream; among the seeds both kinds of answer occur.
test("reasoning: <think> output is a reasoning item, whole and streamed; cut inside it, that item alone and incomplete", async () => {
    const demo = await startServer({ ...opts, model: DEMO }, ["--api-key", KEY]);
    try {
        const dc = new OpenAI({ baseURL: `${demo.base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 60000 });
        let thought = 0, called = 0;
        for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
            const params = { model: demo.modelId, input: "Weather in Paris?", tools: [weather], tool_choice: "required",
                temperature: 1, seed, max_output_tokens: 120 };
            const whole = await dc.responses.create(params);
            checkResponse(whole, demo.modelId);
            const what = `seed ${seed}: ${JSON.stringify(whole.output)}`;
            const stream = dc.responses.stream(params);
            let deltas = "", last;
            for await (const ev of stream) {
                if (ev.type === "response.reasoning_text.delta") deltas += ev.delta;
                last = ev;
            }
            const final = await stream.finalResponse(); // the SDK's snapshot built from the events
            assert.equal(last.type, whole.status === "completed" ? "response.completed" : "response.incomplete", what);
            const kinds = (r) => r.output.map((o) => [o.type, o.status]);
            assert.deepEqual(kinds(last.response), kinds(whole), what);
            assert.deepEqual(final.output.map((o) => o.type), whole.output.map((o) => o.type), what);
            const rs = whole.output.filter((o) => o.type === "reasoning");
            called += whole.output.some((o) => o.type === "function_call");
            if (!rs.length) {
                assert.equal(deltas, "", what);
                continue;
            }
            thought++;
            assert.equal(rs.length, 1, what);
            const r = rs[0];
            assert.deepEqual(r.summary, [], what);
            assert.equal(r.content.length, 1, what);
            assert.equal(r.content[0].type, "reasoning_text", what);
            const text = r.content[0].text;
            assert.ok(text.length > 0 && !text.includes("<think>") && !text.includes("</think>"), what);
            assert.equal(deltas, text, what);
            assert.equal(final.output.find((o) => o.type === "reasoning").content[0].text, text, what);
            const rt = whole.usage.output_tokens_details.reasoning_tokens;
            assert.ok(rt > 0 && rt <= whole.usage.output_tokens, `${rt} of ${whole.usage.output_tokens}`);
            if (whole.output.length === 1) { // cut inside the reasoning: no empty message after it
                assert.equal(whole.status, "incomplete", what);
                assert.deepEqual(whole.incomplete_details, { reason: "max_output_tokens" });
                assert.equal(r.status, "incomplete", what);
                assert.equal(whole.output_text, "", what);
            } else {
                assert.equal(r.status, "completed", what);
            }
        }
        assert.ok(thought >= 1 && called >= 1, `reasoning in ${thought} of 8 seeds, a call in ${called}`);
    } finally {
        assert.equal(await demo.stop(), 0);
    }
});

// Raw requests, so the body is exactly ours: an OpenAI error body naming the field.
async function openaiError(body, param) {
    const r = await request(srv.port, "POST", "/v1/responses", { headers: { Authorization: `Bearer ${KEY}` }, body });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.type, "invalid_request_error", r.text);
    assert.equal(r.json.error.param, param, r.text);
    assert.ok(r.json.error.message.includes(param), r.text);
    return r.json.error;
}

test("400s: each names its field", async () => {
    const ok = { model, input: "hi", max_output_tokens: 4 };
    await openaiError({ ...ok, previous_response_id: "resp_123" }, "previous_response_id");
    await openaiError({ ...ok, input: [{ type: "web_search_call", id: "ws_1" }] }, "input[0].type");
    await openaiError({ ...ok, max_output_tokens: 0 }, "max_output_tokens");
    await openaiError({ ...ok, max_output_tokens: "ten" }, "max_output_tokens");
    await openaiError({ ...ok, max_output_tokens: 1 << 30 }, "max_output_tokens"); // beyond the context
    await openaiError({ ...ok, frobnicate: 1 }, "frobnicate");
    await openaiError({ ...ok, input: [{ type: "function_call", call_id: "c1", name: "f", arguments: "{oops" }] }, "input[0].arguments");
    await openaiError({ ...ok, input: [{ type: "function_call_output", output: "x" }] }, "input[0].call_id");
    await openaiError({ ...ok, input: [{ type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAA" }] }, "input[0].encrypted_content");
    await openaiError({ ...ok, input: [{ role: "tool", content: "x" }] }, "input[0].role");
    await openaiError({ ...ok, input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }, "input[0].content[0]");
    await openaiError({ ...ok, tools: [{ type: "web_search" }] }, "tools[0]");
    await openaiError({ ...ok, tool_choice: "sometimes" }, "tool_choice");
    await openaiError({ ...ok, text: { format: { type: "json_schema", name: "x" } } }, "text.format.schema");
    await openaiError({ ...ok, reasoning: { effort: "huge" } }, "reasoning.effort");
    await openaiError({ ...ok, temperature: 3 }, "temperature");
    // and through the SDK, its error class
    await assert.rejects(client.responses.create({ ...ok, previous_response_id: "resp_123" }), (e) => e instanceof BadRequestError && e.param === "previous_response_id");
});
