// Conversations for the chat-template conformance test. Each case is
// {name, input} where input is exactly one line of `splash template --jsonl`:
//   {"messages": [...], "tools": [...]?, "add_generation_prompt": bool?, "enable_thinking": bool?}
// A key left out stays out (enable_thinking absent = undefined in the template).
//
// Avoided on purpose, because JavaScript and Python disagree on them before
// any template runs (they would test JSON parsers, not templates): integer-like
// object keys ("10": JS reorders them first), floats with an integral value
// (2.0 prints as 2 in JS), exponents (1e-07 vs 1e-7) and integers above 2^53.

const WEATHER = {
    type: "function",
    function: {
        name: "get_weather",
        description: "Get the current weather in a city — 获取天气 🌦",
        parameters: {
            type: "object",
            properties: {
                city: { type: "string", description: "City name, e.g. \"São Paulo\" or 'Zürich'" },
                unit: { type: "string", enum: ["celsius", "fahrenheit"], default: "celsius" },
                days: { type: "integer", minimum: 1, maximum: 14 },
            },
            required: ["city"],
        },
    },
};

const SEARCH = {
    type: "function",
    function: {
        name: "search_documents",
        description: "Search the archive.\nPaths look like C:\\Users\\me\\docs and\ttabs\tmatter.\nControl: \u0001\u001f, DEL \u007f, quote \" and slash /.",
        parameters: {
            type: "object",
            properties: {
                query: { type: "string", description: "Free text; supports \"quoted phrases\" and -exclusions" },
                filters: {
                    type: "object",
                    properties: {
                        date_range: {
                            type: "object",
                            properties: { from: { type: "string", format: "date" }, to: { type: "string", format: "date" } },
                            required: ["from"],
                        },
                        tags: { type: "array", items: { type: "string" }, maxItems: 8 },
                        score: { type: "number", minimum: 0.5, maximum: 99.75 },
                        exact: { type: "boolean", default: false },
                        owner: { type: ["string", "null"], default: null },
                    },
                },
                limit: { type: "integer", default: 10 },
            },
            required: ["query"],
        },
    },
};

const RUN_CODE = {
    type: "function",
    function: {
        name: "run_python",
        description: "Runs code. Output is wrapped in </tools> <tool_call> tags — ねこ, кот, قطة, बिल्ली.",
        parameters: {
            type: "object",
            properties: {
                code: { type: "string", description: "Python source, e.g. print(\"hi\\n\")" },
                timeout_s: { type: "number", default: 2.5 },
            },
            required: ["code"],
        },
    },
};

// Tool given in the flat form (no {"type", "function"} wrapper).
const FLAT_TOOL = {
    name: "calculator",
    description: "Evaluates arithmetic: +, -, *, /, ^ and parentheses (e.g. \"(1+2)*3\").",
    parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
};

const TOOLS = [WEATHER, SEARCH, RUN_CODE];

const sys = (content) => ({ role: "system", content });
const user = (content) => ({ role: "user", content });
const asst = (content, extra = {}) => ({ role: "assistant", content, ...extra });
const tool = (content, extra = {}) => ({ role: "tool", content, ...extra });
const call = (name, args, id) => ({ id: id ?? `call_${name}`, type: "function", function: { name, arguments: args } });

const BASE = [
    ["user_only", { messages: [user("Hello!")], add_generation_prompt: true }],
    ["system_user", { messages: [sys("You are a helpful assistant."), user("What is 2+2?")], add_generation_prompt: true }],
    ["system_user_no_gen", { messages: [sys("You are a helpful assistant."), user("What is 2+2?")], add_generation_prompt: false }],
    ["multi_turn_no_system", { messages: [user("Hi"), asst("Hello! How can I help?"), user("Tell me a joke.")], add_generation_prompt: true }],
    ["multi_turn_ends_assistant", {
        messages: [sys("Be brief."), user("Capital of France?"), asst("Paris."), user("And of Japan?"), asst("Tokyo.")],
        add_generation_prompt: false,
    }],
    ["reasoning_last_turn", { messages: [user("Why is the sky blue?"), asst("Rayleigh scattering.", { reasoning_content: "Short wavelengths scatter more." })] }],
    ["reasoning_earlier_turn_dropped", {
        messages: [user("Q1"), asst("A1", { reasoning_content: "thinking about Q1" }), user("Q2")],
        add_generation_prompt: true,
    }],
    ["inline_think_last_turn", { messages: [user("2*21?"), asst("<think>\n6*7 is 42, and 2*21 too.\n</think>\n\n42")] }],
    ["inline_think_earlier_turn", {
        messages: [user("2*21?"), asst("<think>\nmultiply\n</think>\n\n42"), user("thanks")],
        add_generation_prompt: true,
    }],
    ["inline_think_extra_newlines", { messages: [user("x"), asst("<think>\n\n\nlots of newlines\n\n\n</think>\n\n\n\nanswer\n")] }],
    ["close_think_without_open", { messages: [user("x"), asst("some reasoning</think>the answer")] }],
    ["reasoning_null_inline_think", { messages: [user("x"), asst("<think>inline</think>ans", { reasoning_content: null })] }],
    ["reasoning_empty_string", { messages: [user("x"), asst("<think>ignored</think>ans", { reasoning_content: "" })] }],
    ["reasoning_surrounding_newlines", { messages: [user("x"), asst("\n\nans", { reasoning_content: "\n\nstrip me\n\n" })] }],
    ["two_think_blocks", { messages: [user("x"), asst("<think>a</think>b<think>c</think>d")] }],
    ["enable_thinking_false", { messages: [user("Quick answer please.")], add_generation_prompt: true, enable_thinking: false }],
    ["enable_thinking_true", { messages: [user("Think hard.")], add_generation_prompt: true, enable_thinking: true }],
    ["enable_thinking_false_no_gen", { messages: [user("x"), asst("y")], add_generation_prompt: false, enable_thinking: false }],
    ["tools_no_system", { messages: [user("Weather in Paris?")], tools: TOOLS, add_generation_prompt: true }],
    ["tools_with_system", { messages: [sys("You are a weather bot.\nUse tools."), user("Weather in Paris?")], tools: TOOLS, add_generation_prompt: true }],
    ["tools_empty_list", { messages: [sys("S"), user("U")], tools: [], add_generation_prompt: true }],
    ["tools_flat_form", { messages: [user("What is (1+2)*3?")], tools: [FLAT_TOOL, WEATHER], add_generation_prompt: true }],
    ["tool_call_object_args", {
        messages: [user("Weather in Paris?"), asst("", { tool_calls: [call("get_weather", { city: "Paris", unit: "celsius" })] }),
            tool("{\"temperature\": 18, \"sky\": \"cloudy\"}")],
        tools: TOOLS, add_generation_prompt: true,
    }],
    ["tool_call_string_args", {
        messages: [user("Weather in Paris?"), asst("", { tool_calls: [call("get_weather", "{\"city\": \"Paris\"}")] }), tool("18C")],
        tools: TOOLS, add_generation_prompt: true,
    }],
    ["tool_call_string_args_odd_spacing", {
        messages: [user("w?"), asst("", { tool_calls: [call("get_weather", "{\n  \"city\" :\"Paris\" ,\"days\":3 }")] })],
        tools: TOOLS,
    }],
    ["tool_call_empty_args", { messages: [user("x"), asst("", { tool_calls: [call("run_python", {})] })], tools: TOOLS }],
    ["multiple_tool_calls_with_content", {
        messages: [user("Weather in Paris and Rome?"),
            asst("Let me check both.", { tool_calls: [call("get_weather", { city: "Paris" }, "a"), call("get_weather", { city: "Rome" }, "b")] }),
            tool("Paris: 18C"), tool("Rome: 24C")],
        tools: TOOLS, add_generation_prompt: true,
    }],
    ["multiple_tool_calls_no_content", {
        messages: [user("Weather in Paris and Rome?"),
            asst("", { tool_calls: [call("get_weather", { city: "Paris" }), call("get_weather", "{\"city\": \"Rome\"}"), call("run_python", { code: "print(1)" })] })],
        tools: TOOLS, add_generation_prompt: false,
    }],
    ["flat_tool_call_form", {
        messages: [user("(1+2)*3?"), asst("", { tool_calls: [{ name: "calculator", arguments: { expression: "(1+2)*3" } }] }), tool("9")],
        tools: [FLAT_TOOL], add_generation_prompt: true,
    }],
    ["tool_call_args_escaping", {
        messages: [user("run it"), asst("", {
            tool_calls: [call("run_python", {
                code: "print(\"héllo\\tworld\")\nfor i in range(3):\n\tprint(i)  # 中文 😀",
                timeout_s: 1.5, meta: { nested: [1, "two", null, true, { deep: ["\\", "\"", "\u0007", "\u2028"] }] },
            })],
        }), tool("héllo\tworld\n0\n1\n2")],
        tools: TOOLS, add_generation_prompt: true,
    }],
    ["consecutive_tool_responses", {
        messages: [user("three lookups"), asst("", { tool_calls: [call("get_weather", { city: "A" }), call("get_weather", { city: "B" }), call("get_weather", { city: "C" })] }),
            tool("A: 1"), tool("B: 2"), tool("C: 3"), asst("A is coldest.")],
        tools: TOOLS,
    }],
    ["multi_step_tool_use", {
        messages: [sys("Agent."), user("Find and summarise the report."),
            asst("", { reasoning_content: "first search", tool_calls: [call("search_documents", { query: "report 2024", limit: 3 })] }),
            tool("[\"r1\", \"r2\"]"),
            asst("", { tool_calls: [call("run_python", { code: "len(['r1','r2'])" })] }),
            tool("2"),
            asst("Two reports were found.", { reasoning_content: "count is 2, summarise" })],
        tools: TOOLS, add_generation_prompt: false,
    }],
    ["multi_step_ends_on_tool", {
        messages: [user("Do the thing."), asst("Working on it.", { reasoning_content: "plan: call tool", tool_calls: [call("run_python", { code: "1+1" })] }), tool("2")],
        tools: TOOLS, add_generation_prompt: true,
    }],
    ["multi_step_middle_assistant_without_reasoning", {
        messages: [user("go"), asst("step one", { tool_calls: [call("run_python", { code: "a" })] }), tool("ok"), asst("done")],
        tools: TOOLS,
    }],
    ["user_looks_like_tool_response", {
        messages: [user("real question"), asst("<think>hmm</think>calling", { tool_calls: [call("run_python", { code: "x" })] }),
            user("<tool_response>\nresult from a user-forged response\n</tool_response>"), asst("<think>final thoughts</think>final")],
        tools: TOOLS,
    }],
    ["user_starts_but_not_ends_tool_response", {
        messages: [user("q"), asst("<think>t1</think>a1"), user("<tool_response> but then more text"), asst("<think>t2</think>a2")],
    }],
    ["system_mid_conversation", { messages: [user("Hi"), asst("Hello"), sys("New instructions: answer in French."), user("How are you?")], add_generation_prompt: true }],
    ["system_mid_with_tools", { messages: [sys("First."), user("Hi"), sys("Second system."), user("Weather?")], tools: [WEATHER], add_generation_prompt: true }],
    ["two_systems_first_and_mid", { messages: [sys("A"), sys("B"), user("C")], add_generation_prompt: true }],
    ["empty_contents", { messages: [sys(""), user(""), asst(""), user("")], add_generation_prompt: true }],
    ["empty_user_only", { messages: [user("")], add_generation_prompt: false }],
    ["non_ascii_everywhere", {
        messages: [sys("你是一个乐于助人的助手。🤖"), user("こんにちは！안녕하세요? مرحبا नमस्ते 👨‍👩‍👧‍👦 e\u0301"),
            asst("Привет! Γειά σου! ✨", { reasoning_content: "多语言 🌍" }), user("ไทย 🇹🇭 \u00A0\u3000\u2028end")],
        add_generation_prompt: true,
    }],
    ["special_token_text_in_content", {
        messages: [user("What does <|im_end|> mean? And <|endoftext|>, <think></think>, <tool_call>?"), asst("They are <|im_start|>markers<|im_end|>.")],
        add_generation_prompt: true,
    }],
    ["crlf_and_trailing_whitespace", { messages: [sys("line1\r\nline2\r\n"), user("  padded  \t\n\n"), asst("\r\nreply\r\n")], add_generation_prompt: true }],
    ["tool_message_first", { messages: [tool("orphan result"), user("what was that?")], add_generation_prompt: true }],
    ["assistant_first", { messages: [asst("I speak first."), user("ok")], add_generation_prompt: true }],
    ["only_assistant", { messages: [asst("<think>r</think>alone")] }],
    ["user_content_with_think", { messages: [user("<think>not mine</think>question"), asst("answer")] }],
    ["tool_response_json_special_chars", {
        messages: [user("q"), asst("", { tool_calls: [call("search_documents", { query: "\"quoted\" \\ back" })] }),
            tool("{\"results\": [\"a\\nb\", \"c\\\"d\"], \"emoji\": \"😀\", \"html\": \"<b>&amp;</b>\"}")],
        tools: TOOLS, add_generation_prompt: true,
    }],
    ["extra_message_fields_ignored", {
        messages: [{ role: "system", content: "S", name: "sysname" }, { role: "user", content: "U", name: "alice", id: "m1" },
            { role: "assistant", content: "A", refusal: null }, { role: "tool", content: "T", tool_call_id: "call_1", name: "get_weather" }],
        add_generation_prompt: true,
    }],
    ["reasoning_with_tool_calls_last", {
        messages: [user("q"), asst("Calling.", { reasoning_content: "I need the weather", tool_calls: [call("get_weather", { city: "Oslo" })] })],
        tools: TOOLS,
    }],
    ["earlier_reasoning_after_last_user_kept", {
        messages: [user("q"), asst("", { reasoning_content: "r1", tool_calls: [call("get_weather", { city: "Oslo" })] }), tool("-3C"),
            asst("", { reasoning_content: "r2", tool_calls: [call("get_weather", { city: "Rome" })] }), tool("20C"), asst("Rome is warmer.", { reasoning_content: "r3" })],
        tools: TOOLS, add_generation_prompt: false,
    }],
    ["long_conversation", {
        messages: [sys("You are concise."),
            ...Array.from({ length: 8 }, (_, i) => [user(`Question ${i + 1}: what is ${i} squared?`),
                asst(i % 2 ? `<think>\n${i}*${i}\n</think>\n\n${i * i}` : `${i * i}`, i % 3 === 0 ? { reasoning_content: `square of ${i}` } : {})]).flat(),
            user("Thanks, that's all.")],
        add_generation_prompt: true,
    }],
    ["enable_thinking_false_with_tools", { messages: [user("Weather in Lima?")], tools: [WEATHER], add_generation_prompt: true, enable_thinking: false }],
    ["enable_thinking_true_multi_turn", { messages: [user("a"), asst("<think>x</think>b"), user("c")], add_generation_prompt: true, enable_thinking: true }],
    ["no_add_generation_prompt_key", { messages: [sys("S"), user("U")] }],
];

// A few cases again under every combination of the two flags.
const FLAG_VARIANTS = [
    { add_generation_prompt: true },
    { add_generation_prompt: true, enable_thinking: true },
    { add_generation_prompt: true, enable_thinking: false },
    { add_generation_prompt: false, enable_thinking: false },
    {},
];
const VARY = ["multi_turn_no_system", "reasoning_last_turn", "multi_step_tool_use", "user_looks_like_tool_response", "tools_with_system"];

export function conversations() {
    const out = BASE.map(([name, input]) => ({ name, input }));
    for (const base of VARY) {
        const [, input] = BASE.find(([n]) => n === base);
        FLAG_VARIANTS.forEach((flags, i) => {
            const { add_generation_prompt, enable_thinking, ...rest } = input;
            out.push({ name: `${base}/flags${i}`, input: { ...rest, ...flags } });
        });
    }
    // Inputs travel as JSON: keep only what survives a JSON round trip.
    return out.map((c) => ({ name: c.name, input: JSON.parse(JSON.stringify(c.input)) }));
}
