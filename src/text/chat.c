/* The Qwen3 chat template in C (see chat.h for what is accepted and why).
 * The template is not interpreted: render() below follows its control flow
 * statement by statement, and the string operations reproduce
 * @huggingface/jinja's JavaScript semantics (trim, split, tojson). */
#include "text/chat.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bytelevel.h"
#include "text/chat_json.h"

/* The template this file renders, verbatim (no trailing newline). */
const char chat_qwen3_template[] =
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0].role == 'system' %}\n"
    "        {{- messages[0].content + '\\n\\n' }}\n"
    "    {%- endif %}\n"
    "    {{- \"# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou ar"
    "e provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- \"\\n\" }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and argum"
    "ents within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"ar"
    "guments\\\": <args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n"
    "    {%- if messages[0].role == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}\n"
    "{%- for message in messages[::-1] %}\n"
    "    {%- set index = (messages|length - 1) - loop.index0 %}\n"
    "    {%- if ns.multi_step_tool and message.role == \"user\" and not(message.content.startswith('<tool"
    "_response>') and message.content.endswith('</tool_response>')) %}\n"
    "        {%- set ns.multi_step_tool = false %}\n"
    "        {%- set ns.last_query_index = index %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {%- set content = message.content %}\n"
    "        {%- set reasoning_content = '' %}\n"
    "        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}\n"
    "            {%- set reasoning_content = message.reasoning_content %}\n"
    "        {%- else %}\n"
    "            {%- if '</think>' in message.content %}\n"
    "                {%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}\n"
    "                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\\n').split"
    "('<think>')[-1].lstrip('\\n') %}\n"
    "            {%- endif %}\n"
    "        {%- endif %}\n"
    "        {%- if loop.index0 > ns.last_query_index %}\n"
    "            {%- if loop.last or (not loop.last and reasoning_content) %}\n"
    "                {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n')"
    " + '\\n</think>\\n\\n' + content.lstrip('\\n') }}\n"
    "            {%- else %}\n"
    "                {{- '<|im_start|>' + message.role + '\\n' + content }}\n"
    "            {%- endif %}\n"
    "        {%- else %}\n"
    "            {{- '<|im_start|>' + message.role + '\\n' + content }}\n"
    "        {%- endif %}\n"
    "        {%- if message.tool_calls %}\n"
    "            {%- for tool_call in message.tool_calls %}\n"
    "                {%- if (loop.first and content) or (not loop.first) %}\n"
    "                    {{- '\\n' }}\n"
    "                {%- endif %}\n"
    "                {%- if tool_call.function %}\n"
    "                    {%- set tool_call = tool_call.function %}\n"
    "                {%- endif %}\n"
    "                {{- '<tool_call>\\n{\"name\": \"' }}\n"
    "                {{- tool_call.name }}\n"
    "                {{- '\", \"arguments\": ' }}\n"
    "                {%- if tool_call.arguments is string %}\n"
    "                    {{- tool_call.arguments }}\n"
    "                {%- else %}\n"
    "                    {{- tool_call.arguments | tojson }}\n"
    "                {%- endif %}\n"
    "                {{- '}\\n</tool_call>' }}\n"
    "            {%- endfor %}\n"
    "        {%- endif %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if loop.first or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}";

#define TOOLS_HEADER                                                                                                   \
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "  \
    "signatures within <tools></tools> XML tags:\n<tools>"
#define TOOLS_FOOTER                                                                                                   \
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "              \
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "                      \
    "<args-json-object>}\n</tool_call><|im_end|>\n"

/* ---- strings ------------------------------------------------------------ */

typedef struct str {
    const char *p;
    size_t n;
} str_t;

static str_t json_str(const json_t *v)
{
    return (str_t){json_string_value(v), json_string_length(v)};
}

static bool str_eq(str_t s, const char *c)
{
    size_t n = strlen(c);
    return s.n == n && memcmp(s.p, c, n) == 0;
}

static bool str_starts(str_t s, const char *c)
{
    size_t n = strlen(c);
    return s.n >= n && memcmp(s.p, c, n) == 0;
}

static bool str_ends(str_t s, const char *c)
{
    size_t n = strlen(c);
    return s.n >= n && memcmp(s.p + s.n - n, c, n) == 0;
}

/* Offset of the first / last occurrence of c in s, or -1. Byte search is the
 * same as the reference's UTF-16 search: UTF-8 is self-synchronising. */
static ptrdiff_t str_find(str_t s, const char *c)
{
    const char *hit = s.n ? memmem(s.p, s.n, c, strlen(c)) : NULL;
    return hit ? hit - s.p : -1;
}

static ptrdiff_t str_find_last(str_t s, const char *c)
{
    size_t n = strlen(c);
    for (size_t i = s.n >= n ? s.n - n + 1 : 0; i-- > 0;)
        if (memcmp(s.p + i, c, n) == 0)
            return (ptrdiff_t)i;
    return -1;
}

/* JavaScript's String.prototype.trim set: WhiteSpace and LineTerminator. */
static bool is_js_space(uint32_t cp)
{
    switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
    }
}

/* trimStart(): what the reference's lstrip(anything) does. */
static str_t trim_start(str_t s)
{
    while (s.n > 0) {
        uint32_t cp;
        size_t k = utf8_decode(s.p, s.n, &cp);
        if (k == 0 || !is_js_space(cp))
            break;
        s.p += k;
        s.n -= k;
    }
    return s;
}

/* trimEnd(): what the reference's rstrip(anything) does. */
static str_t trim_end(str_t s)
{
    while (s.n > 0) {
        size_t start = s.n - 1; /* back to the lead byte of the last code point (at most 4 bytes) */
        while (start > 0 && s.n - start < 4 && ((unsigned char)s.p[start] & 0xC0) == 0x80)
            start--;
        uint32_t cp;
        size_t k = utf8_decode(s.p + start, s.n - start, &cp);
        if (k != s.n - start || !is_js_space(cp))
            break;
        s.n = start;
    }
    return s;
}

/* ---- output ------------------------------------------------------------- */

static void sb_str(chat_sbuf_t *b, str_t s)
{
    chat_sb_put(b, s.p, s.n);
}

/* {{ value }}: a string raw, null/undefined nothing, the rest as tojson. */
static int put_value(chat_sbuf_t *b, const json_t *v, err_t *err)
{
    if (!v || json_is_null(v))
        return 0;
    if (json_is_string(v)) {
        sb_str(b, json_str(v));
        return 0;
    }
    return chat_put_json(b, v, err);
}

/* ---- messages ----------------------------------------------------------- */

typedef enum chat_role {
    ROLE_OTHER, /* rendered as nothing */
    ROLE_SYSTEM,
    ROLE_USER,
    ROLE_ASSISTANT,
    ROLE_TOOL,
} chat_role_t;

/* One message, validated: every field the template reads, typed. */
typedef struct chat_msg {
    chat_role_t role;
    str_t role_name;
    str_t content;            /* system, user, assistant */
    const json_t *content_v;  /* tool: any value, NULL when absent */
    bool has_reasoning;       /* reasoning_content is a string (possibly empty) */
    str_t reasoning;          /* assistant */
    const json_t *tool_calls; /* assistant: a non-empty array, or NULL */
} chat_msg_t;

/* "got <type>" for an error message; "missing" for an absent field. */
static const char *type_name(const json_t *v)
{
    if (!v)
        return "missing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "got an object";
    case JSON_ARRAY: return "got an array";
    case JSON_STRING: return "got a string";
    case JSON_INTEGER:
    case JSON_REAL: return "got a number";
    case JSON_TRUE:
    case JSON_FALSE: return "got a boolean";
    case JSON_NULL: return "got null";
    }
    return "?";
}

/* Jinja truthiness as the reference has it: empty strings, arrays and objects,
 * 0, false and null are false. */
static bool json_truthy(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return json_object_size(v) > 0;
    case JSON_ARRAY: return json_array_size(v) > 0;
    case JSON_STRING: return json_string_length(v) > 0;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0;
    case JSON_TRUE: return true;
    case JSON_FALSE:
    case JSON_NULL: return false;
    }
    return false;
}

static int need_content_string(const json_t *c, size_t i, str_t *out, err_t *err)
{
    if (json_is_string(c)) {
        *out = json_str(c);
        return 0;
    }
    return err_set(err, "messages[%zu].content must be a string (%s%s)", i, type_name(c),
                   json_is_array(c) ? "; join a list of content parts into one string" : "");
}

/* The object a tool call's name and arguments are read from: its `function`
 * when that is truthy ({% if tool_call.function %}), else the call itself. */
static const json_t *call_target(const json_t *call)
{
    const json_t *fn = json_object_get(call, "function");
    return fn && json_truthy(fn) ? fn : call;
}

static int check_tool_calls(const json_t *calls, size_t i, err_t *err)
{
    for (size_t j = 0; j < json_array_size(calls); j++) {
        const json_t *call = json_array_get(calls, j);
        if (!json_is_object(call))
            return err_set(err, "messages[%zu].tool_calls[%zu] must be an object (%s)", i, j, type_name(call));
        const json_t *target = call_target(call);
        if (!json_is_object(target))
            return err_set(err, "messages[%zu].tool_calls[%zu].function must be an object (%s)", i, j,
                           type_name(target));
        const json_t *name = json_object_get(target, "name");
        if (!json_is_string(name))
            return err_set(err, "messages[%zu].tool_calls[%zu].%sname must be a string (%s)", i, j,
                           target == call ? "" : "function.", type_name(name));
    }
    return 0;
}

static int check_message(const json_t *msg, size_t i, chat_msg_t *m, err_t *err)
{
    if (!json_is_object(msg))
        return err_set(err, "messages[%zu] must be an object (%s)", i, type_name(msg));
    const json_t *role = json_object_get(msg, "role");
    if (!json_is_string(role))
        return err_set(err, "messages[%zu].role must be a string (%s)", i, type_name(role));
    m->role_name = json_str(role);
    m->role = str_eq(m->role_name, "system")      ? ROLE_SYSTEM
              : str_eq(m->role_name, "user")      ? ROLE_USER
              : str_eq(m->role_name, "assistant") ? ROLE_ASSISTANT
              : str_eq(m->role_name, "tool")      ? ROLE_TOOL
                                                  : ROLE_OTHER;
    const json_t *content = json_object_get(msg, "content");
    switch (m->role) {
    case ROLE_OTHER: return 0;
    case ROLE_TOOL: m->content_v = content; return 0;
    case ROLE_SYSTEM:
    case ROLE_USER: return need_content_string(content, i, &m->content, err);
    case ROLE_ASSISTANT: break;
    }
    if (need_content_string(content, i, &m->content, err))
        return -1;
    const json_t *reasoning = json_object_get(msg, "reasoning_content");
    if (reasoning && !json_is_null(reasoning)) {
        if (!json_is_string(reasoning))
            return err_set(err, "messages[%zu].reasoning_content must be a string or null (%s)", i,
                           type_name(reasoning));
        m->has_reasoning = true;
        m->reasoning = json_str(reasoning);
    }
    const json_t *calls = json_object_get(msg, "tool_calls");
    if (calls && !json_is_null(calls)) {
        if (!json_is_array(calls))
            return err_set(err, "messages[%zu].tool_calls must be an array or null (%s)", i, type_name(calls));
        if (check_tool_calls(calls, i, err))
            return -1;
        m->tool_calls = json_array_size(calls) ? calls : NULL;
    }
    return 0;
}

/* ---- the template ------------------------------------------------------- */

static int render_tool_calls(chat_sbuf_t *b, const chat_msg_t *m, str_t content, size_t i, err_t *err)
{
    for (size_t j = 0; j < json_array_size(m->tool_calls); j++) {
        const json_t *target = call_target(json_array_get(m->tool_calls, j));
        if (j > 0 || content.n > 0)
            chat_sb_puts(b, "\n");
        chat_sb_puts(b, "<tool_call>\n{\"name\": \"");
        sb_str(b, json_str(json_object_get(target, "name")));
        chat_sb_puts(b, "\", \"arguments\": ");
        const json_t *args = json_object_get(target, "arguments");
        if (json_is_string(args))
            sb_str(b, json_str(args));
        else if (!args) /* undefined | tojson */
            chat_sb_puts(b, "null");
        else if (chat_put_json(b, args, err))
            return err_prefix(err, "messages[%zu].tool_calls[%zu] arguments: ", i, j);
        chat_sb_puts(b, "}\n</tool_call>");
    }
    return 0;
}

static int render_assistant(chat_sbuf_t *b, const chat_msg_t *m, size_t i, size_t n, ptrdiff_t last_query, err_t *err)
{
    str_t content = m->content, reasoning = {"", 0};
    if (m->has_reasoning) {
        reasoning = m->reasoning;
    } else if (str_find(content, "</think>") >= 0) {
        /* content = content.split('</think>')[-1].lstrip('\n')
         * reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
        size_t tag = strlen("</think>");
        ptrdiff_t last = str_find_last(content, "</think>"), first = str_find(content, "</think>");
        str_t before = trim_end((str_t){content.p, (size_t)first});
        ptrdiff_t open = str_find_last(before, "<think>");
        if (open >= 0) {
            size_t skip = (size_t)open + strlen("<think>");
            before = (str_t){before.p + skip, before.n - skip};
        }
        reasoning = trim_start(before);
        content = trim_start((str_t){content.p + last + tag, content.n - (size_t)last - tag});
    }
    chat_sb_puts(b, "<|im_start|>assistant\n");
    if ((ptrdiff_t)i > last_query && (i == n - 1 || reasoning.n > 0)) {
        chat_sb_puts(b, "<think>\n");
        sb_str(b, trim_end(trim_start(reasoning)));
        chat_sb_puts(b, "\n</think>\n\n");
        sb_str(b, trim_start(content));
    } else {
        sb_str(b, content);
    }
    if (m->tool_calls && render_tool_calls(b, m, content, i, err))
        return -1;
    chat_sb_puts(b, "<|im_end|>\n");
    return 0;
}

static int render(chat_sbuf_t *b, const chat_msg_t *m, size_t n, const json_t *tools, const chat_opts_t *o, err_t *err)
{
    bool has_system = n > 0 && m[0].role == ROLE_SYSTEM;
    if (tools && json_array_size(tools) > 0) {
        chat_sb_puts(b, "<|im_start|>system\n");
        if (has_system) {
            sb_str(b, m[0].content);
            chat_sb_puts(b, "\n\n");
        }
        chat_sb_puts(b, TOOLS_HEADER);
        for (size_t t = 0; t < json_array_size(tools); t++) {
            chat_sb_puts(b, "\n");
            if (chat_put_json(b, json_array_get(tools, t), err))
                return err_prefix(err, "tools[%zu]: ", t);
        }
        chat_sb_puts(b, TOOLS_FOOTER);
    } else if (has_system) {
        chat_sb_puts(b, "<|im_start|>system\n");
        sb_str(b, m[0].content);
        chat_sb_puts(b, "<|im_end|>\n");
    }

    /* The last user message that is not only a tool response wrapped as a user
     * turn; assistant turns after it keep their reasoning. */
    ptrdiff_t last_query = (ptrdiff_t)n - 1;
    for (size_t i = n; i-- > 0;) {
        if (m[i].role == ROLE_USER &&
            !(str_starts(m[i].content, "<tool_response>") && str_ends(m[i].content, "</tool_response>"))) {
            last_query = (ptrdiff_t)i;
            break;
        }
    }

    for (size_t i = 0; i < n; i++) {
        switch (m[i].role) {
        case ROLE_SYSTEM:
            if (i == 0)
                break; /* already in the header */
            /* fall through */
        case ROLE_USER:
            chat_sb_puts(b, "<|im_start|>");
            sb_str(b, m[i].role_name);
            chat_sb_puts(b, "\n");
            sb_str(b, m[i].content);
            chat_sb_puts(b, "<|im_end|>\n");
            break;
        case ROLE_ASSISTANT:
            if (render_assistant(b, &m[i], i, n, last_query, err))
                return -1;
            break;
        case ROLE_TOOL:
            /* consecutive tool messages share one user turn */
            if (i == 0 || m[i - 1].role != ROLE_TOOL)
                chat_sb_puts(b, "<|im_start|>user");
            chat_sb_puts(b, "\n<tool_response>\n");
            if (put_value(b, m[i].content_v, err))
                return err_prefix(err, "messages[%zu].content: ", i);
            chat_sb_puts(b, "\n</tool_response>");
            if (i == n - 1 || m[i + 1].role != ROLE_TOOL)
                chat_sb_puts(b, "<|im_end|>\n");
            break;
        case ROLE_OTHER: break;
        }
    }
    if (o->add_generation_prompt) {
        chat_sb_puts(b, "<|im_start|>assistant\n");
        if (o->enable_thinking == 0)
            chat_sb_puts(b, "<think>\n\n</think>\n\n");
    }
    return 0;
}

int chat_render_qwen3(const json_t *messages, const json_t *tools, const chat_opts_t *opts, char **out, size_t *out_len,
                      err_t *err)
{
    *out = NULL;
    *out_len = 0;
    chat_opts_t o = opts ? *opts : (chat_opts_t){.add_generation_prompt = false, .enable_thinking = -1};
    if (o.enable_thinking < -1 || o.enable_thinking > 1)
        return err_set(err, "enable_thinking must be -1 (undefined), 0 or 1 (got %d)", o.enable_thinking);
    if (!json_is_array(messages))
        return err_set(err, "messages must be an array (%s)", type_name(messages));
    if (tools && !json_is_null(tools) && !json_is_array(tools))
        return err_set(err, "tools must be an array or null (%s)", type_name(tools));
    if (tools && json_is_null(tools))
        tools = NULL;

    size_t n = json_array_size(messages);
    chat_msg_t *m = n ? calloc(n, sizeof *m) : NULL;
    if (n && !m)
        return err_set(err, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = check_message(json_array_get(messages, i), i, &m[i], err);
    chat_sbuf_t b = {0};
    if (rc == 0) {
        chat_sb_put(&b, "", 0); /* an empty rendering is still a string */
        rc = render(&b, m, n, tools, &o, err);
    }
    if (rc == 0 && b.is_oom)
        rc = err_set(err, "out of memory rendering the chat template");
    free(m);
    if (rc) {
        free(b.p);
        return -1;
    }
    *out = b.p;
    *out_len = b.len;
    return 0;
}
