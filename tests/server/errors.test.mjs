// The malformed-request table: each case sends raw bytes and headers through
// node:http to the real `splash serve` and names the status and `param` it
// expects, and every error answer must be the OpenAI error body
// {"error": {"message", "type", "param", "code"}} (on /v1/messages and
// count_tokens, Anthropic's {"type": "error", "error": {"type", "message"}}).
// A few positive controls (the right key, an allowed Host, nesting at the
// limit, text parts, u64 seeds) show the checks are not simply refusing
// everything. After the table the server must be healthy, with no request
// running and no KV block held.
//   node errors.test.mjs --splash BIN --model GGUF
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { get, isErrorBody, options, post, request, startServer, waitStatus } from "./lib.mjs";

const opts = options();
const KEY = "sk-splash-test";
const MAX_BODY = 4096;
const MAX_CONTEXT = 64;
const AUTH = { Authorization: `Bearer ${KEY}` };

const nest = (depth) => "[".repeat(depth) + "]".repeat(depth); // depth levels of arrays
const chat = (extra) => ({ messages: [{ role: "user", content: "hi" }], max_tokens: 2, ...extra });
const cmpl = (extra) => ({ prompt: "hi", max_tokens: 2, ...extra });
const user = (content) => ({ messages: [{ role: "user", content }], max_tokens: 2 });
const msg = (extra) => ({ model: "server-tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 2, ...extra });
const U64_MAX = "18446744073709551615";

// {name, path, method, body (object: JSON; string or Buffer: raw), headers
// (replacing the defaults: JSON type and the key), status, param, match (the
// message), allow (405), ok (a 200 control)}
const CASES = [
    // ---- bad JSON and bodies that are not objects ----
    { name: "truncated JSON", path: "/v1/completions", body: '{"prompt": "hi",', status: 400, param: null, match: /malformed JSON at line 1, column \d+ \(byte \d+\)/ },
    { name: "garbage after the object", path: "/v1/completions", body: '{"prompt": "hi"} x', status: 400, param: null, match: /column 18/ },
    { name: "bad JSON on line 2", path: "/v1/completions", body: '{"prompt": "hi",\n  "max_tokens": }', status: 400, param: null, match: /line 2, column \d+/ },
    { name: "empty body", path: "/v1/completions", body: "", status: 400, param: null, match: /malformed JSON/ },
    { name: "single quotes", path: "/v1/chat/completions", body: "{'messages': []}", status: 400, param: null, match: /malformed JSON/ },
    { name: "duplicate key", path: "/v1/completions", body: '{"prompt": "a", "prompt": "b"}', status: 400, param: null, match: /duplicate/ },
    { name: "body is an array", path: "/v1/completions", body: "[1, 2]", status: 400, param: null, match: /JSON object/ },
    { name: "body is a string", path: "/v1/chat/completions", body: '"hello"', status: 400, param: null, match: /JSON object/ },
    { name: "body is null", path: "/tokenize", body: "null", status: 400, param: null, match: /JSON object/ },
    { name: "invalid UTF-8 in a string", path: "/v1/completions", body: Buffer.concat([Buffer.from('{"prompt": "a'), Buffer.from([0xff, 0xfe]), Buffer.from('b"}')]), status: 400, param: null, match: /column 13 .*decode byte 0xff/ },
    { name: "invalid UTF-8 in message content", path: "/v1/chat/completions", body: Buffer.concat([Buffer.from('{"messages": [{"role": "user", "content": "'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]), status: 400, param: null, match: /decode byte 0xc3/ },
    { name: "JSON nested deeper than 64", path: "/v1/completions", body: `{"prompt": "hi", "stop": ${nest(70)}}`, status: 400, param: null, match: /deeper than 64/ },
    { name: "nesting at the limit reaches the field checks", path: "/v1/completions", body: `{"prompt": "hi", "frobnicate": ${nest(63)}}`, status: 400, param: "frobnicate" },

    // ---- missing and unknown fields ----
    { name: "chat without messages", path: "/v1/chat/completions", body: { max_tokens: 2 }, status: 400, param: "messages" },
    { name: "completions without prompt", path: "/v1/completions", body: { max_tokens: 2 }, status: 400, param: "prompt" },
    { name: "unknown top-level field", path: "/v1/completions", body: cmpl({ frobnicate: 1 }), status: 400, param: "frobnicate" },
    { name: "unknown field in a message", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "x", mood: "happy" }] }, status: 400, param: "messages[0].mood" },
    { name: "chat field on completions", path: "/v1/completions", body: cmpl({ messages: [] }), status: 400, param: "messages" },
    { name: "unknown model", path: "/v1/completions", body: cmpl({ model: "gpt-4" }), status: 404, param: "model" },

    // ---- messages ----
    { name: "messages not an array", path: "/v1/chat/completions", body: { messages: "hi" }, status: 400, param: "messages" },
    { name: "messages empty", path: "/v1/chat/completions", body: { messages: [] }, status: 400, param: "messages" },
    { name: "message not an object", path: "/v1/chat/completions", body: { messages: ["hi"] }, status: 400, param: "messages[0]" },
    { name: "unknown role", path: "/v1/chat/completions", body: { messages: [{ role: "wizard", content: "x" }] }, status: 400, param: "messages[0].role" },
    { name: "missing role", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "a" }, { content: "x" }] }, status: 400, param: "messages[1].role" },
    { name: "content a number", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: 5 }] }, status: 400, param: "messages[0].content" },
    { name: "image content part", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: [{ type: "text", text: "a" }, { type: "image_url", image_url: { url: "http://x/y.png" } }] }] }, status: 400, param: "messages[0].content[1]" },
    { name: "audio content part", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }] }] }, status: 400, param: "messages[0].content[0]" },

    // ---- wrong types, huge and negative numbers ----
    { name: "prompt a number", path: "/v1/completions", body: cmpl({ prompt: 5 }), status: 400, param: "prompt" },
    { name: "prompt token id out of range", path: "/v1/completions", body: cmpl({ prompt: [1, 2, 999999] }), status: 400, param: "prompt", match: /prompt\[2\]/ },
    { name: "prompt token id negative", path: "/v1/completions", body: cmpl({ prompt: [-1] }), status: 400, param: "prompt" },
    { name: "several prompts (n > 1)", path: "/v1/completions", body: cmpl({ prompt: ["a", "b"] }), status: 400, param: "prompt" },
    { name: "max_tokens -1", path: "/v1/completions", body: cmpl({ max_tokens: -1 }), status: 400, param: "max_tokens" },
    { name: "max_tokens 0", path: "/v1/completions", body: cmpl({ max_tokens: 0 }), status: 400, param: "max_tokens" },
    { name: "max_tokens 1e30", path: "/v1/completions", body: '{"prompt": "hi", "max_tokens": 1e30}', status: 400, param: "max_tokens" },
    // beyond int64, jansson refuses the number itself: no field to name yet
    { name: "max_tokens 2^63", path: "/v1/completions", body: '{"prompt": "hi", "max_tokens": 9223372036854775808}', status: 400, param: null, match: /too big integer/ },
    { name: "max_tokens a string", path: "/v1/completions", body: cmpl({ max_tokens: "10" }), status: 400, param: "max_tokens" },
    { name: "max_completion_tokens -5", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "x" }], max_completion_tokens: -5 }, status: 400, param: "max_completion_tokens" },
    { name: "temperature 3", path: "/v1/completions", body: cmpl({ temperature: 3 }), status: 400, param: "temperature" },
    { name: "temperature -0.5", path: "/v1/chat/completions", body: chat({ temperature: -0.5 }), status: 400, param: "temperature" },
    { name: "temperature a string", path: "/v1/completions", body: cmpl({ temperature: "hot" }), status: 400, param: "temperature" },
    { name: "top_p 0", path: "/v1/completions", body: cmpl({ top_p: 0 }), status: 400, param: "top_p" },
    { name: "top_p 1.5", path: "/v1/chat/completions", body: chat({ top_p: 1.5 }), status: 400, param: "top_p" },
    { name: "top_k 1.5", path: "/v1/completions", body: cmpl({ top_k: 1.5 }), status: 400, param: "top_k" },
    { name: "presence_penalty 5", path: "/v1/completions", body: cmpl({ presence_penalty: 5 }), status: 400, param: "presence_penalty" },
    { name: "n 17", path: "/v1/chat/completions", body: chat({ n: 17 }), status: 400, param: "n" },
    { name: "seed \"x\"", path: "/v1/completions", body: cmpl({ seed: "x" }), status: 400, param: "seed" },
    { name: "seed 1.5", path: "/v1/completions", body: cmpl({ seed: 1.5 }), status: 400, param: "seed" },
    { name: "stream \"yes\"", path: "/v1/chat/completions", body: chat({ stream: "yes" }), status: 400, param: "stream" },
    { name: "stream_options without stream", path: "/v1/chat/completions", body: chat({ stream_options: { include_usage: true } }), status: 400, param: "stream_options" },
    { name: "stream_options unknown field", path: "/v1/chat/completions", body: chat({ stream: true, stream_options: { sparkle: true } }), status: 400, param: "stream_options" },
    { name: "stop a number", path: "/v1/completions", body: cmpl({ stop: 5 }), status: 400, param: "stop" },
    { name: "stop empty string", path: "/v1/completions", body: cmpl({ stop: [""] }), status: 400, param: "stop" },
    { name: "stop 17 strings", path: "/v1/completions", body: cmpl({ stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }), status: 400, param: "stop" },
    { name: "cache_salt a number", path: "/v1/completions", body: cmpl({ cache_salt: 7 }), status: 400, param: "cache_salt" },
    { name: "ignore_eos a string", path: "/v1/completions", body: cmpl({ ignore_eos: "true" }), status: 400, param: "ignore_eos" },

    // ---- unsupported options are refused, never ignored ----
    { name: "chat logprobs not a boolean", path: "/v1/chat/completions", body: chat({ logprobs: 3 }), status: 400, param: "logprobs" },
    { name: "completions logprobs 21", path: "/v1/completions", body: cmpl({ logprobs: 21 }), status: 400, param: "logprobs" },
    { name: "top_logprobs 2", path: "/v1/chat/completions", body: chat({ top_logprobs: 2 }), status: 400, param: "top_logprobs" },
    { name: "logit_bias id outside the vocabulary", path: "/v1/completions", body: cmpl({ logit_bias: { 999999999: 10 } }), status: 400, param: "logit_bias" },
    // ---- structured output: malformed schemas, grammars and tools (400 naming the field; schema errors name the JSON pointer) ----
    { name: "response_format type xml", path: "/v1/chat/completions", body: chat({ response_format: { type: "xml" } }), status: 400, param: "response_format.type" },
    { name: "json_schema without json_schema", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema" } }), status: 400, param: "response_format.json_schema" },
    { name: "json_schema without a name", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { schema: {} } } }), status: 400, param: "response_format.json_schema.name" },
    { name: "json_schema name with a space", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "a b", schema: {} } } }), status: 400, param: "response_format.json_schema.name" },
    { name: "json_schema unknown field", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: {}, extra: 1 } } }), status: 400, param: "response_format.json_schema" },
    { name: "json_schema strict a string", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: {}, strict: "yes" } } }), status: 400, param: "response_format.json_schema.strict" },
    { name: "schema keyword not", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "object", properties: { a: { not: {} } } } } } }), status: 400, param: "response_format.json_schema.schema", match: /not.*\/properties\/a/ },
    { name: "schema uniqueItems", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "array", uniqueItems: true } } } }), status: 400, param: "response_format.json_schema.schema", match: /uniqueItems/ },
    { name: "schema $ref to nothing", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { $ref: "#/$defs/missing" } } } }), status: 400, param: "response_format.json_schema.schema", match: /missing/ },
    { name: "schema remote $ref", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { $ref: "http://example.com/s.json" } } } }), status: 400, param: "response_format.json_schema.schema", match: /\$ref/ },
    { name: "schema minItems > maxItems", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "array", minItems: 3, maxItems: 2 } } } }), status: 400, param: "response_format.json_schema.schema", match: /minItems|maxItems/ },
    { name: "schema minLength > maxLength", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "string", minLength: 5, maxLength: 2 } } } }), status: 400, param: "response_format.json_schema.schema", match: /minLength|maxLength/ },
    { name: "schema minimum > maximum", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "integer", minimum: 10, maximum: 2 } } } }), status: 400, param: "response_format.json_schema.schema", match: /integer bounds|minimum|maximum/ },
    { name: "schema minimum on a number", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "number", minimum: 1 } } } }), status: 400, param: "response_format.json_schema.schema", match: /minimum/ },
    { name: "schema empty enum", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { enum: [] } } } }), status: 400, param: "response_format.json_schema.schema", match: /enum/ },
    { name: "schema bad type name", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "numbr" } } } }), status: 400, param: "response_format.json_schema.schema", match: /type/ },
    { name: "schema type a number", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: 5 } } } }), status: 400, param: "response_format.json_schema.schema", match: /type/ },
    { name: "schema false", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: false } } }), status: 400, param: "response_format.json_schema.schema" },
    { name: "schema properties an array", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "object", properties: [] } } } }), status: 400, param: "response_format.json_schema.schema", match: /properties/ },
    { name: "schema items a number", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "array", items: 5 } } } }), status: 400, param: "response_format.json_schema.schema", match: /items/ },
    { name: "schema required a string", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "object", required: "a" } } } }), status: 400, param: "response_format.json_schema.schema", match: /required/ },
    { name: "schema unknown format", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "string", format: "hostname" } } } }), status: 400, param: "response_format.json_schema.schema", match: /format/ },
    { name: "pattern lookahead", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "string", pattern: "^(?=a)b$" } } } }), status: 400, param: "response_format.json_schema.schema", match: /pattern/ },
    { name: "pattern backreference", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "string", pattern: "^(a)\\1$" } } } }), status: 400, param: "response_format.json_schema.schema", match: /pattern/ },
    { name: "pattern unbalanced", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "string", pattern: "^(ab$" } } } }), status: 400, param: "response_format.json_schema.schema", match: /pattern/ },
    { name: "pattern bad repeat", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "string", pattern: "^a{3,1}$" } } } }), status: 400, param: "response_format.json_schema.schema", match: /pattern/ },
    { name: "schema nested unsupported keyword pointer", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "object", properties: { list: { type: "array", items: { type: "object", properties: { x: { contains: {} } } } } } } } } }), status: 400, param: "response_format.json_schema.schema", match: /\/properties\/list\/items\/properties\/x/ },
    { name: "grammar a number", path: "/v1/chat/completions", body: chat({ grammar: 5 }), status: 400, param: "grammar" },
    { name: "grammar without root", path: "/v1/completions", body: cmpl({ grammar: "a ::= \"x\"" }), status: 400, param: "grammar", match: /root/ },
    { name: "grammar undefined rule", path: "/v1/completions", body: cmpl({ grammar: "root ::= foo" }), status: 400, param: "grammar", match: /foo/ },
    { name: "grammar left recursion", path: "/v1/completions", body: cmpl({ grammar: "root ::= root \"a\" | \"b\"" }), status: 400, param: "grammar", match: /recursi/ },
    { name: "grammar unterminated literal", path: "/v1/completions", body: cmpl({ grammar: "root ::= \"abc" }), status: 400, param: "grammar", match: /line 1/ },
    { name: "grammar reversed class range", path: "/v1/completions", body: cmpl({ grammar: "root ::= [z-a]" }), status: 400, param: "grammar" },
    { name: "grammar bad escape", path: "/v1/completions", body: cmpl({ grammar: "root ::= \"\\q\"" }), status: 400, param: "grammar" },
    { name: "grammar unbalanced parenthesis", path: "/v1/completions", body: cmpl({ grammar: "root ::= \"a\" )" }), status: 400, param: "grammar" },
    { name: "grammar and json_object", path: "/v1/chat/completions", body: chat({ grammar: "root ::= \"a\"", response_format: { type: "json_object" } }), status: 400, param: "grammar" },
    { name: "tools not an array", path: "/v1/chat/completions", body: chat({ tools: {} }), status: 400, param: "tools" },
    { name: "tool type not function", path: "/v1/chat/completions", body: chat({ tools: [{ type: "retrieval" }] }), status: 400, param: "tools[0]" },
    { name: "tool without a name", path: "/v1/chat/completions", body: chat({ tools: [{ type: "function", function: {} }] }), status: 400, param: "tools[0].function.name" },
    { name: "tool parameters a string schema", path: "/v1/chat/completions", body: chat({ tools: [{ type: "function", function: { name: "f", parameters: { type: "string" } } }] }), status: 400, param: "tools[0].function.parameters" },
    { name: "tool defined twice", path: "/v1/chat/completions", body: chat({ tools: [{ type: "function", function: { name: "f" } }, { type: "function", function: { name: "f" } }] }), status: 400, param: "tools[1].function.name" },
    { name: "strict tool with an unsupported schema", path: "/v1/chat/completions", body: chat({ tools: [{ type: "function", function: { name: "f", strict: true, parameters: { type: "object", properties: { a: { not: {} } } } } }], tool_choice: "required" }), status: 400, param: "tools[0].function.parameters", match: /not/ },
    { name: "tool_choice names an unknown function", path: "/v1/chat/completions", body: chat({ tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "function", function: { name: "g" } } }), status: 400, param: "tool_choice", match: /g/ },
    { name: "tool_choice required without tools", path: "/v1/chat/completions", body: chat({ tool_choice: "required" }), status: 400, param: "tool_choice" },
    { name: "tool_choice bogus", path: "/v1/chat/completions", body: chat({ tools: [{ type: "function", function: { name: "f" } }], tool_choice: "always" }), status: 400, param: "tool_choice" },
    { name: "parallel_tool_calls a string", path: "/v1/chat/completions", body: chat({ tools: [{ type: "function", function: { name: "f" } }], parallel_tool_calls: "yes" }), status: 400, param: "parallel_tool_calls" },
    // a model may write byte 0 and a client sends that reply back: NUL in text passes, elsewhere it is refused by path
    { name: "NUL in message text passes", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "a\u0000b" }, { role: "assistant", content: "\u0000" }, { role: "user", content: [{ type: "text", text: "c\u0000" }] }], max_tokens: 2 }, status: 200, ok: true },
    { name: "NUL in a prompt passes", path: "/v1/completions", body: cmpl({ prompt: "x\u0000y" }), status: 200, ok: true },
    { name: "NUL in Anthropic text passes", path: "/v1/messages", body: msg({ system: "s\u0000", messages: [{ role: "user", content: [{ type: "text", text: "\u0000" }] }] }), status: 200, ok: true },
    { name: "NUL in the model id", path: "/v1/chat/completions", body: chat({ model: "server-tiny\u0000x" }), status: 400, param: "model", match: /NUL/ },
    { name: "NUL in a role", path: "/v1/chat/completions", body: { messages: [{ role: "user\u0000", content: "hi" }], max_tokens: 2 }, status: 400, param: "messages[0].role", match: /NUL/ },
    { name: "NUL in a stop string", path: "/v1/completions", body: cmpl({ stop: ["a", "\u0000"] }), status: 400, param: "stop[1]", match: /NUL/ },
    { name: "json_object passes", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_object" } }), status: 200, ok: true },
    { name: "a schema passes", path: "/v1/chat/completions", body: chat({ response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "object", properties: { a: { type: "integer" } }, required: ["a"] } } } }), status: 200, ok: true },
    { name: "echo with logprobs", path: "/v1/completions", body: cmpl({ echo: true, logprobs: 1 }), status: 400, param: "echo" },
    { name: "best_of 2", path: "/v1/completions", body: cmpl({ best_of: 2 }), status: 400, param: "best_of" },

    // ---- context limits (--max-context 64) ----
    { name: "prompt longer than the context", path: "/v1/completions", body: cmpl({ prompt: "x".repeat(3 * MAX_CONTEXT) }), status: 400, param: "prompt", match: /context/ },
    { name: "chat longer than the context", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "x".repeat(3 * MAX_CONTEXT) }] }, status: 400, param: "messages" },
    { name: "max_tokens beyond the context", path: "/v1/completions", body: cmpl({ max_tokens: 2 * MAX_CONTEXT }), status: 400, param: "max_tokens", match: /'max_tokens' is 128, but the context is 64 tokens and the prompt takes \d+: at most \d+ can be generated/ },
    { name: "max_completion_tokens beyond the context", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "x" }], max_completion_tokens: 2 * MAX_CONTEXT }, status: 400, param: "max_completion_tokens", match: /'max_completion_tokens' is 128.*at most \d+/ },

    // ---- the text utilities ----
    { name: "tokenize with prompt and messages", path: "/tokenize", body: { prompt: "a", messages: [{ role: "user", content: "b" }] }, status: 400, param: "messages" },
    { name: "tokenize with neither", path: "/tokenize", body: {}, status: 400, param: "prompt" },
    { name: "detokenize tokens a string", path: "/detokenize", body: { tokens: "abc" }, status: 400, param: "tokens" },
    { name: "detokenize token out of range", path: "/detokenize", body: { tokens: [1, 100000] }, status: 400, param: "tokens" },
    { name: "apply-template unknown role", path: "/apply-template", body: { messages: [{ role: "robot", content: "x" }] }, status: 400, param: "messages[0].role" },

    // ---- transport: size, content type ----
    { name: "oversized body (Content-Length)", path: "/v1/completions", body: JSON.stringify(cmpl({ prompt: "x".repeat(2 * MAX_BODY) })), status: 413, param: null },
    { name: "oversized body (chunked)", path: "/v1/completions", chunked: true, body: JSON.stringify(cmpl({ prompt: "x".repeat(2 * MAX_BODY) })), status: 413, param: null },
    { name: "Content-Type text/plain", path: "/v1/completions", body: JSON.stringify(cmpl()), headers: { ...AUTH, "Content-Type": "text/plain" }, status: 415, param: null },
    { name: "Content-Type form", path: "/v1/chat/completions", body: JSON.stringify(chat()), headers: { ...AUTH, "Content-Type": "application/x-www-form-urlencoded" }, status: 415, param: null },
    { name: "no Content-Type", path: "/v1/completions", body: JSON.stringify(cmpl()), headers: { ...AUTH }, noType: true, status: 415, param: null },
    { name: "Content-Type application/jsonx", path: "/v1/completions", body: JSON.stringify(cmpl()), headers: { ...AUTH, "Content-Type": "application/jsonx" }, status: 415, param: null },
    { name: "Content-Type with charset passes", path: "/v1/completions", body: JSON.stringify(cmpl({ max_tokens: 1 })), headers: { ...AUTH, "Content-Type": "application/json; charset=utf-8" }, status: 200, ok: true },

    // ---- API key (--api-key) ----
    { name: "no API key", path: "/v1/completions", body: cmpl(), headers: {}, status: 401, param: null },
    { name: "wrong Bearer key", path: "/v1/completions", body: cmpl(), headers: { Authorization: "Bearer sk-wrong" }, status: 401, param: null },
    { name: "key prefix only", path: "/v1/completions", body: cmpl(), headers: { Authorization: `Bearer ${KEY.slice(0, -1)}` }, status: 401, param: null },
    { name: "key without Bearer", path: "/v1/completions", body: cmpl(), headers: { Authorization: KEY }, status: 401, param: null },
    { name: "wrong x-api-key", path: "/v1/chat/completions", body: chat(), headers: { "x-api-key": "nope" }, status: 401, param: null },
    { name: "/status needs the key", method: "GET", path: "/status", headers: {}, status: 401, param: null },
    { name: "/metrics needs the key", method: "GET", path: "/metrics", headers: {}, status: 401, param: null },
    { name: "right x-api-key passes", path: "/v1/completions", body: cmpl({ max_tokens: 1 }), headers: { "x-api-key": KEY }, status: 200, ok: true },
    { name: "/health public without a key", method: "GET", path: "/health", headers: {}, status: 200, ok: true },
    { name: "/ready public without a key", method: "GET", path: "/ready", headers: {}, status: 200, ok: true },

    // ---- Host allowlist (DNS rebinding) ----
    { name: "Host not allowed", path: "/v1/completions", body: cmpl(), host: "evil.example", status: 403, param: null },
    { name: "Host not allowed, with a port", method: "GET", path: "/v1/models", host: "rebind.attacker.test:8000", status: 403, param: null },
    { name: "Host not allowed on /health", method: "GET", path: "/health", headers: {}, host: "evil.example", status: 403, param: null },
    { name: "Host a suffix of an allowed one", method: "GET", path: "/v1/models", host: "xexample.test", status: 403, param: null },
    { name: "Host --allowed-host passes", method: "GET", path: "/v1/models", host: "Example.TEST:443", status: 200, ok: true },
    { name: "Host localhost passes", method: "GET", path: "/v1/models", host: "localhost:1234", status: 200, ok: true },
    { name: "Host [::1] passes", method: "GET", path: "/v1/models", host: "[::1]:80", status: 200, ok: true },

    // ---- message content as OpenAI has it ----
    { name: "user content null", path: "/v1/chat/completions", body: user(null), status: 400, param: "messages[0].content", match: /required/ },
    { name: "user content missing", path: "/v1/chat/completions", body: { messages: [{ role: "user" }] }, status: 400, param: "messages[0].content", match: /required/ },
    { name: "system content null", path: "/v1/chat/completions", body: { messages: [{ role: "system", content: null }, { role: "user", content: "x" }] }, status: 400, param: "messages[0].content" },
    { name: "developer content missing", path: "/v1/chat/completions", body: { messages: [{ role: "developer" }, { role: "user", content: "x" }] }, status: 400, param: "messages[0].content" },
    { name: "tool content missing", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "c1" }] }, status: 400, param: "messages[1].content" },
    { name: "assistant content null without tool_calls", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "x" }, { role: "assistant", content: null }, { role: "user", content: "y" }] }, status: 400, param: "messages[1].content", match: /tool_calls/ },
    { name: "content an empty array", path: "/v1/chat/completions", body: user([]), status: 400, param: "messages[0].content", match: /empty/ },
    { name: "content an object", path: "/v1/chat/completions", body: user({ type: "text", text: "hi" }), status: 400, param: "messages[0].content" },
    { name: "image_url part named", path: "/v1/chat/completions", body: user([{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }]), status: 400, param: "messages[0].content[0]", match: /'image_url' parts are not supported/ },
    { name: "input_image part named", path: "/v1/chat/completions", body: user([{ type: "text", text: "look" }, { type: "input_image", image_url: "http://x/y.png" }]), status: 400, param: "messages[0].content[1]", match: /'input_image'/ },
    { name: "input_audio part named", path: "/v1/chat/completions", body: user([{ type: "input_audio", input_audio: { data: "", format: "mp3" } }]), status: 400, param: "messages[0].content[0]", match: /'input_audio'/ },
    { name: "file part named", path: "/v1/chat/completions", body: user([{ type: "file", file: { file_id: "file-1" } }]), status: 400, param: "messages[0].content[0]", match: /'file'/ },
    { name: "unknown part type named", path: "/v1/chat/completions", body: user([{ type: "video", video: {} }]), status: 400, param: "messages[0].content[0]", match: /'video'/ },
    { name: "part without a type", path: "/v1/chat/completions", body: user([{ text: "hi" }]), status: 400, param: "messages[0].content[0]" },
    { name: "part not an object", path: "/v1/chat/completions", body: user(["hi"]), status: 400, param: "messages[0].content[0]" },
    { name: "text part text a number", path: "/v1/chat/completions", body: user([{ type: "text", text: 5 }]), status: 400, param: "messages[0].content[0]" },
    { name: "text parts pass", path: "/v1/chat/completions", body: user([{ type: "text", text: "one " }, { type: "text", text: "two" }]), status: 200, ok: true },
    { name: "empty string content passes", path: "/v1/chat/completions", body: user(""), status: 200, ok: true },
    { name: "assistant null content with tool_calls passes", path: "/apply-template", body: { messages: [{ role: "user", content: "x" }, { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] }, { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "ok" }] }] }, status: 200, ok: true },
    { name: "tokenize messages with an image part", path: "/tokenize", body: { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] }, status: 400, param: "messages[0].content[0]", match: /image_url/ },
    { name: "apply-template user content null", path: "/apply-template", body: { messages: [{ role: "user", content: null }] }, status: 400, param: "messages[0].content" },

    // ---- seeds: u64 exactly, as OpenAI (jansson alone refuses above 2^63 - 1) ----
    { name: "seed -1", path: "/v1/completions", body: cmpl({ seed: -1 }), status: 400, param: "seed", match: /18446744073709551615/ },
    { name: "seed -2^63", path: "/v1/chat/completions", body: '{"messages": [{"role": "user", "content": "hi"}], "seed": -9223372036854775808}', status: 400, param: "seed" },
    { name: "seed below int64", path: "/v1/completions", body: '{"prompt": "hi", "max_tokens": 2, "seed": -99999999999999999999}', status: 400, param: "seed" },
    { name: "seed 2^64", path: "/v1/completions", body: '{"prompt": "hi", "max_tokens": 2, "seed": 18446744073709551616}', status: 400, param: "seed" },
    { name: "seed -0", path: "/v1/completions", body: '{"prompt": "hi", "max_tokens": 2, "seed": -0}', status: 400, param: "seed" },
    { name: "seed 1e3", path: "/v1/completions", body: '{"prompt": "hi", "max_tokens": 2, "seed": 1e3}', status: 400, param: "seed" },
    { name: "seed true", path: "/v1/chat/completions", body: chat({ seed: true }), status: 400, param: "seed" },
    { name: "seed as a string of digits", path: "/v1/completions", body: cmpl({ seed: U64_MAX }), status: 400, param: "seed" },
    { name: "seed 2^64 - 1 passes", path: "/v1/completions", body: `{"prompt": "hi", "max_tokens": 2, "seed": ${U64_MAX}}`, status: 200, ok: true },
    { name: "seed 2^63 passes (chat)", path: "/v1/chat/completions", body: '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "seed": 9223372036854775808}', status: 200, ok: true },
    { name: "seed 0 passes", path: "/v1/completions", body: cmpl({ seed: 0 }), status: 200, ok: true },
    { name: "a syntax error still wins over a big seed", path: "/v1/completions", body: `{"seed": ${U64_MAX}, "prompt": }`, status: 400, param: null, match: /^malformed JSON at line 1(?!.*too big)/ },
    { name: "seed on tokenize is unknown", path: "/tokenize", body: { prompt: "a", seed: 1 }, status: 400, param: "seed" },

    // ---- Anthropic Messages (Anthropic's error body) ----
    { name: "messages: max_tokens missing", path: "/v1/messages", body: { model: "server-tiny", messages: [{ role: "user", content: "hi" }] }, status: 400, anthropic: true, match: /max_tokens/ },
    { name: "messages: max_tokens 0", path: "/v1/messages", body: msg({ max_tokens: 0 }), status: 400, anthropic: true },
    { name: "messages: max_tokens beyond the context", path: "/v1/messages", body: msg({ max_tokens: 2 * MAX_CONTEXT }), status: 400, anthropic: true, match: /at most \d+/ },
    { name: "messages: model missing", path: "/v1/messages", body: { messages: [{ role: "user", content: "hi" }], max_tokens: 2 }, status: 400, anthropic: true, match: /model/ },
    { name: "messages: unknown model", path: "/v1/messages", body: msg({ model: "claude-opus" }), status: 404, anthropic: true },
    { name: "messages: messages missing", path: "/v1/messages", body: { model: "server-tiny", max_tokens: 2 }, status: 400, anthropic: true },
    { name: "messages: empty messages", path: "/v1/messages", body: msg({ messages: [] }), status: 400, anthropic: true },
    { name: "messages: content null", path: "/v1/messages", body: msg({ messages: [{ role: "user", content: null }] }), status: 400, anthropic: true, match: /content/ },
    { name: "messages: role system in messages", path: "/v1/messages", body: msg({ messages: [{ role: "system", content: "x" }] }), status: 400, anthropic: true, match: /role/ },
    { name: "messages: image block named", path: "/v1/messages", body: msg({ messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }] }] }), status: 400, anthropic: true, match: /'image' blocks/ },
    { name: "messages: document block named", path: "/v1/messages", body: msg({ messages: [{ role: "user", content: [{ type: "document", source: { type: "text", data: "x" } }] }] }), status: 400, anthropic: true, match: /'document' blocks/ },
    { name: "messages: image in a tool_result named", path: "/v1/messages", body: msg({ messages: [{ role: "user", content: "x" }, { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] }, { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: [{ type: "image", source: {} }] }] }], tools: [{ name: "f", input_schema: { type: "object" } }] }), status: 400, anthropic: true, match: /'image' blocks/ },
    { name: "messages: image in system named", path: "/v1/messages", body: msg({ system: [{ type: "image", source: {} }] }), status: 400, anthropic: true, match: /'image' blocks/ },
    { name: "messages: unknown field", path: "/v1/messages", body: msg({ frobnicate: 1 }), status: 400, anthropic: true, match: /frobnicate/ },
    { name: "messages: temperature 1.5", path: "/v1/messages", body: msg({ temperature: 1.5 }), status: 400, anthropic: true, match: /temperature/ },
    { name: "messages: stream a string", path: "/v1/messages", body: msg({ stream: "yes" }), status: 400, anthropic: true },
    { name: "messages: seed -1", path: "/v1/messages", body: msg({ seed: -1 }), status: 400, anthropic: true, match: /seed/ },
    { name: "messages: seed 2^64 - 1 passes", path: "/v1/messages", body: `{"model": "server-tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "seed": ${U64_MAX}}`, status: 200, ok: true },
    { name: "messages: final assistant turn", path: "/v1/messages", body: msg({ messages: [{ role: "user", content: "x" }, { role: "assistant", content: "y" }] }), status: 400, anthropic: true, match: /prefill/ },
    { name: "messages: thinking budget too small", path: "/v1/messages", body: msg({ max_tokens: 40, thinking: { type: "enabled", budget_tokens: 10 } }), status: 400, anthropic: true, match: /budget_tokens/ },
    { name: "messages: tool_choice bogus", path: "/v1/messages", body: msg({ tools: [{ name: "f", input_schema: { type: "object" } }], tool_choice: { type: "sometimes" } }), status: 400, anthropic: true, match: /tool_choice/ },
    { name: "messages: wrong x-api-key", path: "/v1/messages", body: msg(), headers: { "x-api-key": "nope", "anthropic-version": "2023-06-01" }, status: 401, anthropic: true },
    { name: "messages: GET", method: "GET", path: "/v1/messages", status: 405, anthropic: true, allow: "POST" },
    { name: "messages: malformed JSON", path: "/v1/messages", body: '{"model": ', status: 400, anthropic: true, match: /malformed JSON/ },
    { name: "count_tokens: max_tokens is not its field", path: "/v1/messages/count_tokens", body: msg(), status: 400, anthropic: true, match: /max_tokens/ },
    { name: "count_tokens: messages missing", path: "/v1/messages/count_tokens", body: { model: "server-tiny" }, status: 400, anthropic: true },
    { name: "count_tokens: image block named", path: "/v1/messages/count_tokens", body: { model: "server-tiny", messages: [{ role: "user", content: [{ type: "image", source: {} }] }] }, status: 400, anthropic: true, match: /'image' blocks/ },
    { name: "count_tokens: body an array", path: "/v1/messages/count_tokens", body: "[]", status: 400, anthropic: true, match: /JSON object/ },
    { name: "count_tokens passes", path: "/v1/messages/count_tokens", body: { model: "server-tiny", messages: [{ role: "user", content: "hi" }] }, status: 200, ok: true },

    // ---- more text utilities, status and the other GET routes ----
    { name: "tokenize prompt a number", path: "/tokenize", body: { prompt: 5 }, status: 400, param: "prompt" },
    { name: "tokenize add_special_tokens a string", path: "/tokenize", body: { prompt: "a", add_special_tokens: "no" }, status: 400, param: "add_special_tokens" },
    { name: "tokenize unknown model", path: "/tokenize", body: { prompt: "a", model: "other" }, status: 404, param: "model" },
    { name: "detokenize tokens missing", path: "/detokenize", body: {}, status: 400, param: "tokens" },
    { name: "detokenize negative id", path: "/detokenize", body: { tokens: [-3] }, status: 400, param: "tokens" },
    { name: "apply-template messages missing", path: "/apply-template", body: {}, status: 400, param: "messages" },
    { name: "apply-template unknown field", path: "/apply-template", body: { messages: [{ role: "user", content: "x" }], stream: true }, status: 400, param: "stream" },
    { name: "POST on /status", path: "/status", body: {}, status: 405, param: null, allow: "GET, HEAD" },
    { name: "DELETE on /status", method: "DELETE", path: "/status", status: 405, param: null, allow: "GET, HEAD" },
    { name: "/status wrong key", method: "GET", path: "/status", headers: { Authorization: "Bearer nope" }, status: 401, param: null },
    { name: "PUT on /metrics", method: "PUT", path: "/metrics", status: 405, param: null, allow: "GET, HEAD" },
    { name: "POST /v1/embeddings", path: "/v1/embeddings", body: { input: "x" }, status: 404, param: null },
    { name: "/status with the key passes", method: "GET", path: "/status", status: 200, ok: true },

    // ---- routes and methods ----
    { name: "unknown path", path: "/v1/nope", body: cmpl(), status: 404, param: null },
    { name: "unknown GET path", method: "GET", path: "/v1/embeddings", status: 404, param: null },
    { name: "near-miss path", method: "GET", path: "/healthz", status: 404, param: null },
    { name: "GET on a POST route", method: "GET", path: "/v1/completions", status: 405, param: null, allow: "POST" },
    { name: "DELETE on a POST route", method: "DELETE", path: "/v1/chat/completions", status: 405, param: null, allow: "POST" },
    { name: "POST on a GET route", path: "/v1/models", body: {}, status: 405, param: null, allow: "GET, HEAD" },
];

let srv;
before(async () => {
    srv = await startServer(opts, ["--api-key", KEY, "--allowed-host", "example.test", "--max-body", String(MAX_BODY),
        "--max-context", String(MAX_CONTEXT)]);
});
after(async () => { assert.equal(await srv.stop(), 0); });

// A request with a chunked body (no Content-Length), written in pieces.
function chunked(port, path, body, headers) {
    return new Promise((resolve, reject) => {
        const req = http.request({ host: "127.0.0.1", port, method: "POST", path, agent: false,
            headers: { ...headers, "Content-Type": "application/json", "Transfer-Encoding": "chunked" } }, (res) => {
            let text = "";
            res.on("data", (c) => { text += c; });
            res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, json: JSON.parse(text) }));
        });
        req.on("error", reject);
        for (let i = 0; i < body.length; i += 1000) req.write(body.slice(i, i + 1000));
        req.end();
    });
}

test("the table has at least 80 error cases, across every endpoint", () => {
    const errors = CASES.filter((c) => !c.ok);
    assert.ok(errors.length >= 80, `${errors.length} error cases`);
    for (const p of ["/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/messages/count_tokens", "/tokenize",
        "/detokenize", "/apply-template", "/v1/models", "/status", "/metrics", "/health"])
        assert.ok(errors.some((c) => c.path === p), `no error case for ${p}`);
});

// Anthropic's error body: {"type": "error", "error": {"type", "message"}}.
function isAnthropicError(j) {
    return j && j.type === "error" && j.error && typeof j.error.type === "string" &&
        typeof j.error.message === "string" && j.error.message.length > 0 && !("param" in j.error);
}

for (const c of CASES) {
    test(`${c.status} ${c.name}`, async () => {
        const headers = { ...(c.headers ?? AUTH) };
        if (c.host) headers.Host = c.host;
        const method = c.method ?? "POST";
        let r;
        if (c.chunked) r = await chunked(srv.port, c.path, c.body, headers);
        else r = await request(srv.port, method, c.path, { body: c.body, headers, json: !c.noType && !("Content-Type" in headers) });
        assert.equal(r.status, c.status, `${method} ${c.path}: ${r.text ?? JSON.stringify(r.json)}`);
        if (c.ok) return;
        assert.equal(r.headers["content-type"], "application/json");
        if (c.match) assert.match(r.json?.error?.message ?? "", c.match, r.text);
        if (c.allow) assert.equal(r.headers.allow, c.allow);
        if (c.anthropic) {
            assert.ok(isAnthropicError(r.json), `not an Anthropic error body: ${r.text}`);
            if (c.status === 400) assert.equal(r.json.error.type, "invalid_request_error");
            if (c.status === 401) assert.equal(r.json.error.type, "authentication_error");
            return;
        }
        assert.ok(isErrorBody(r.json), `not an OpenAI error body: ${r.text}`);
        assert.equal(r.json.error.param, c.param, `param: ${JSON.stringify(r.json)}`);
        if (c.status === 401) {
            assert.equal(r.json.error.type, "authentication_error");
            assert.equal(r.json.error.code, "invalid_api_key");
        }
        if (c.status === 400) assert.equal(r.json.error.type, "invalid_request_error");
    });
}

// Several requests share one keep-alive connection after errors: an error
// answer must leave the connection usable (or close it cleanly).
test("errors leave keep-alive connections usable", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const one = (body) => new Promise((resolve, reject) => {
        const data = typeof body === "string" ? body : JSON.stringify(body);
        const req = http.request({ host: "127.0.0.1", port: srv.port, method: "POST", path: "/v1/completions", agent,
            headers: { ...AUTH, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } }, (res) => {
            let text = "";
            res.on("data", (x) => { text += x; });
            res.on("end", () => resolve(res.statusCode));
        });
        req.on("error", reject);
        req.end(data);
    });
    assert.deepEqual([await one("{bad"), await one(cmpl({ n: 17 })), await one(cmpl({ max_tokens: 1 }))], [400, 400, 200]);
    agent.destroy();
});

// 429: one sequence slot and a queue of one. A long streamed request holds
// the slot, a second waits in the queue, a third is refused with Retry-After.
test("429 with Retry-After when the queue is full", async () => {
    const busy = await startServer(opts, ["--max-seqs", "1", "--queue-size", "1"]);
    const long = { prompt: "hold the slot", max_tokens: 3000, ignore_eos: true, stream: true };
    const open = (body) => new Promise((resolve, reject) => {
        const data = JSON.stringify(body);
        const req = http.request({ host: "127.0.0.1", port: busy.port, method: "POST", path: "/v1/completions", agent: false,
            headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(data) } }, (res) => {
            res.once("data", () => resolve({ req, res }));
        });
        req.on("error", reject);
        req.end(data);
    });
    const queued = (n) => async () => (await get(busy.port, "/status")).json.scheduler.queued === n;
    try {
        const first = await open(long); // its first chunk: admitted and running
        const second = post(busy.port, "/v1/completions", { prompt: "wait", max_tokens: 1 });
        for (let i = 0; i < 1500 && !(await queued(1)()); i++) await new Promise((r) => setTimeout(r, 20));
        const third = await post(busy.port, "/v1/completions", { prompt: "no room", max_tokens: 1 });
        assert.equal(third.status, 429, third.text);
        assert.ok(isErrorBody(third.json));
        assert.equal(third.json.error.param, null);
        assert.equal(third.json.error.type, "rate_limit_error");
        assert.match(third.headers["retry-after"] ?? "", /^\d+$/);
        first.req.destroy(); // frees the slot: the queued request then completes
        assert.equal((await second).status, 200);
    } finally {
        assert.equal(await busy.stop(), 0);
    }
});

test("--queue-size 0 is refused at start-up", async () => {
    await assert.rejects(startServer(opts, ["--queue-size", "0"]), /--queue-size: 0 is out of range/);
});

// Seeds are u64 and exact: 2^64 - 1 and 2^64 - 2 are one double apart from
// nothing (both round to 1.8446744073709552e19), so a server that read them
// as doubles would give both the same text; the same seed gives the same text.
test("u64 seeds are exact", async () => {
    const run = async (seed) => {
        const r = await request(srv.port, "POST", "/v1/completions", { headers: AUTH,
            body: `{"prompt": "Seeds", "max_tokens": 12, "ignore_eos": true, "temperature": 1, "seed": ${seed}}` });
        assert.equal(r.status, 200, r.text);
        return r.json.choices[0].text;
    };
    const top = await run(U64_MAX);
    assert.equal(await run(U64_MAX), top);
    assert.notEqual(await run("18446744073709551614"), top);
    assert.equal(await run("9223372036854775808"), await run("9223372036854775808"));
});

// The limit a max_tokens refusal states is the one applied.
test("max_tokens up to the stated limit passes, one more is refused", async () => {
    const body = (n) => ({ prompt: "hi", max_tokens: n, ignore_eos: true });
    const refused = await post(srv.port, "/v1/completions", body(10 * MAX_CONTEXT), AUTH);
    assert.equal(refused.status, 400);
    const limit = Number(refused.json.error.message.match(/at most (\d+)/)[1]);
    assert.ok(limit > 0 && limit < MAX_CONTEXT, refused.json.error.message);
    const ok = await post(srv.port, "/v1/completions", body(limit), AUTH);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.usage.completion_tokens, limit);
    assert.equal((await post(srv.port, "/v1/completions", body(limit + 1), AUTH)).status, 400);
});

// Last: after every case above the server is healthy and holds nothing.
test("after the table the server is healthy and no KV block is leaked", async () => {
    assert.equal((await get(srv.port, "/health")).status, 200);
    assert.equal((await get(srv.port, "/ready")).status, 200);
    const idle = await waitStatus(srv.port, (s) => s.requests.active.length === 0 && s.scheduler.queued === 0 &&
        s.cache.blocks_used === 0, 30000, "idle with no block held", AUTH);
    assert.ok(idle.requests.completed > 0, "the controls ran");
    assert.equal(idle.requests.failed, 0);
    const r = await post(srv.port, "/v1/completions", cmpl({ max_tokens: 1 }), AUTH);
    assert.equal(r.status, 200, r.text);
});
