/* The OpenAI Responses dialect's request: POST /v1/responses validated
 * where it enters and mapped onto the chat request api.c builds. `input`
 * (a string, or items: messages, function_call, function_call_output,
 * reasoning) becomes chat messages, `instructions` a system message first,
 * function tools and tool_choice the chat's, `text.format` the chat's
 * response_format (the same grammar engine), `reasoning.effort` thinking on
 * ("none": off; absent: the template's default, as chat).
 *
 * Stateless: store is accepted (nothing is stored); previous_response_id,
 * conversation and prompt are refused, naming the field. Accepted and
 * ignored: metadata, user, safety_identifier, prompt_cache_key (the prefix
 * cache is automatic), service_tier, truncation "disabled", background
 * false, stream_options. Refused: non-function tools, non-text input parts,
 * encrypted reasoning, include, and any unknown field. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "server/fields.h"
#include "server/responses.h"

/* A 400 naming AT.FIELD: "AT.FIELD WHAT". */
static int bad_field(reply_t *r, const char *at, const char *field, const char *what)
{
    char param[192];
    snprintf(param, sizeof param, "%s.%s", at, field);
    return reply_bad(r, param, "%s %s", param, what);
}

/* Refuses a field not in allowed; where names the object ("" at the top). */
static int check_keys(const json_t *obj, const char *where, const char *const *allowed, reply_t *r)
{
    const char *key;
    json_t *v;
    char param[160];
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!field_in_list(key, allowed)) {
            snprintf(param, sizeof param, "%s%s%s", where, where[0] ? "." : "", key);
            return reply_bad(r, param, "unknown or unsupported parameter '%s'", param);
        }
    }
    return 0;
}

static const char *str_of(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool is_set(const json_t *v)
{
    return v && !json_is_null(v);
}

/* ---- input items ---- */

typedef struct inputs {
    json_t *msgs;      /* the chat messages */
    json_t *asst;      /* the last message when it is an assistant turn calls may join, or NULL */
    json_t *reasoning; /* a reasoning item's text waiting for its assistant turn, or NULL */
} inputs_t;

/* Content parts (or a string) as chat's text parts: a new array, or NULL with a reply. */
static json_t *text_parts(const json_t *content, const char *where, reply_t *r)
{
    if (json_is_string(content))
        return json_pack("[{s:s,s:O}]", "type", "text", "text", content);
    if (!json_is_array(content)) {
        reply_bad(r, where, "%s must be a string or an array of input_text parts", where);
        return NULL;
    }
    json_t *out = json_array();
    size_t j;
    json_t *p;
    char at[160];
    json_array_foreach(content, j, p)
    {
        snprintf(at, sizeof at, "%s[%zu]", where, j);
        const char *type = str_of(p, "type");
        static const char *const keys[] = {"type", "text", "annotations", "logprobs", NULL};
        if (!json_is_object(p) || !type) {
            json_decref(out);
            reply_bad(r, at, "%s must be a content part object with a type", at);
            return NULL;
        }
        if (strcmp(type, "input_text") && strcmp(type, "output_text")) {
            json_decref(out);
            reply_bad(r, at, "%s: '%s' parts are not supported (this server reads input_text and output_text)", at,
                      type);
            return NULL;
        }
        if (check_keys(p, at, keys, r)) {
            json_decref(out);
            return NULL;
        }
        if (!json_is_string(json_object_get(p, "text"))) {
            json_decref(out);
            reply_bad(r, at, "%s.text must be a string", at);
            return NULL;
        }
        json_array_append_new(out, json_pack("{s:s,s:O}", "type", "text", "text", json_object_get(p, "text")));
    }
    return out;
}

/* The open assistant turn calls join, made if there is none. */
static json_t *assistant(inputs_t *in)
{
    if (!in->asst) {
        in->asst = json_pack("{s:s,s:s}", "role", "assistant", "content", "");
        json_array_append_new(in->msgs, in->asst);
    }
    if (in->reasoning) {
        json_object_set_new(in->asst, "reasoning_content", in->reasoning);
        in->reasoning = NULL;
    }
    return in->asst;
}

static int message_item(inputs_t *in, const json_t *it, const char *at, reply_t *r)
{
    static const char *const keys[] = {"type", "role", "content", "id", "status", NULL};
    static const char *const roles[] = {"user", "assistant", "system", "developer", NULL};
    if (check_keys(it, at, keys, r))
        return -1;
    const char *role = str_of(it, "role");
    char where[160];
    snprintf(where, sizeof where, "%s.role", at);
    if (!role || !field_in_list(role, roles))
        return reply_bad(r, where, "%s must be one of user, assistant, system, developer", where);
    snprintf(where, sizeof where, "%s.content", at);
    json_t *parts = text_parts(json_object_get(it, "content"), where, r);
    if (!parts)
        return -1;
    json_t *m = json_pack("{s:s,s:o}", "role", role, "content", parts);
    json_array_append_new(in->msgs, m);
    in->asst = NULL;
    if (!strcmp(role, "assistant")) {
        in->asst = m;
        assistant(in); /* a waiting reasoning item is this turn's */
    }
    return 0;
}

static int function_call_item(inputs_t *in, const json_t *it, const char *at, reply_t *r)
{
    static const char *const keys[] = {"type", "call_id", "name", "arguments", "id", "status", NULL};
    if (check_keys(it, at, keys, r))
        return -1;
    const char *call_id = str_of(it, "call_id"), *name = str_of(it, "name"), *args = str_of(it, "arguments");
    if (!call_id || !call_id[0] || !name || !name[0] || !args)
        return reply_bad(r, at, "%s: a function_call item needs call_id, name and arguments (strings)", at);
    json_t *parsed = json_loads(args, JSON_DECODE_ANY, NULL);
    bool is_ok = json_is_object(parsed);
    json_decref(parsed);
    if (!is_ok)
        return bad_field(r, at, "arguments", "must be a JSON object in a string");
    json_t *m = assistant(in);
    json_t *calls = json_object_get(m, "tool_calls");
    if (!calls) {
        calls = json_array();
        json_object_set_new(m, "tool_calls", calls);
    }
    json_array_append_new(calls, json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", call_id, "type", "function", "function",
                                           "name", name, "arguments", args));
    return 0;
}

static int function_output_item(inputs_t *in, const json_t *it, const char *at, reply_t *r)
{
    static const char *const keys[] = {"type", "call_id", "output", "id", "status", NULL};
    if (check_keys(it, at, keys, r))
        return -1;
    const char *call_id = str_of(it, "call_id");
    if (!call_id || !call_id[0])
        return bad_field(r, at, "call_id", "must be a non-empty string");
    char where[160];
    snprintf(where, sizeof where, "%s.output", at);
    json_t *parts = text_parts(json_object_get(it, "output"), where, r);
    if (!parts)
        return -1;
    json_array_append_new(in->msgs,
                          json_pack("{s:s,s:s,s:o}", "role", "tool", "tool_call_id", call_id, "content", parts));
    in->asst = NULL;
    return 0;
}

/* reasoning {summary, content?}: its text (content, else the summary) goes
 * to the next assistant turn as its reasoning. */
static int reasoning_item(inputs_t *in, const json_t *it, const char *at, reply_t *r)
{
    static const char *const keys[] = {"type", "id", "summary", "content", "encrypted_content", "status", NULL};
    if (check_keys(it, at, keys, r))
        return -1;
    if (is_set(json_object_get(it, "encrypted_content")))
        return bad_field(r, at, "encrypted_content", "is not supported (encrypted reasoning)");
    const json_t *src = json_object_get(it, "content");
    if (!is_set(src))
        src = json_object_get(it, "summary");
    if (is_set(src) && !json_is_array(src))
        return reply_bad(r, at, "%s.summary and .content must be arrays of text parts", at);
    json_t *text = json_string("");
    size_t j;
    json_t *p;
    json_array_foreach(src, j, p)
    {
        const json_t *t = json_object_get(p, "text");
        if (!json_is_object(p) || !json_is_string(t)) {
            json_decref(text);
            return reply_bad(r, at, "%s: each summary or content part needs a text (a string)", at);
        }
        size_t n0 = json_string_length(text), n1 = json_string_length(t);
        char *buf = malloc(n0 + n1 + 2);
        if (!buf) {
            json_decref(text);
            reply_nomem(r, "joining summary or content parts", n0 + n1 + 2);
            return -1;
        }
        memcpy(buf, json_string_value(text), n0);
        size_t n = n0;
        if (n0)
            buf[n++] = '\n';
        memcpy(buf + n, json_string_value(t), n1);
        json_string_setn(text, buf, n + n1);
        free(buf);
    }
    json_decref(in->reasoning);
    in->reasoning = text;
    if (in->asst && !json_object_get(in->asst, "tool_calls") && json_array_size(json_object_get(in->asst, "content")))
        in->asst = NULL; /* a finished assistant message: the reasoning belongs to the next turn */
    return 0;
}

static int map_input(const json_t *req, json_t *chat, reply_t *r)
{
    const json_t *instr = json_object_get(req, "instructions"), *input = json_object_get(req, "input");
    inputs_t in = {.msgs = json_array()};
    json_object_set_new(chat, "messages", in.msgs);
    if (is_set(instr)) {
        if (!json_is_string(instr))
            return reply_bad(r, "instructions", "instructions must be a string");
        json_array_append_new(in.msgs, json_pack("{s:s,s:O}", "role", "system", "content", instr));
    }
    if (json_is_string(input)) {
        json_array_append_new(in.msgs, json_pack("{s:s,s:O}", "role", "user", "content", input));
        return 0;
    }
    if (!json_is_array(input) || json_array_size(input) == 0)
        return reply_bad(r, "input", "input: a string or a non-empty array of input items is required");
    size_t i;
    json_t *it;
    char at[64];
    int rc = 0;
    json_array_foreach(input, i, it)
    {
        snprintf(at, sizeof at, "input[%zu]", i);
        if (!json_is_object(it)) {
            rc = reply_bad(r, at, "%s must be an object", at);
            break;
        }
        const json_t *t = json_object_get(it, "type");
        const char *type = json_is_string(t)                   ? json_string_value(t)
                           : !t && json_object_get(it, "role") ? "message"
                                                               : "";
        if (!strcmp(type, "message"))
            rc = message_item(&in, it, at, r);
        else if (!strcmp(type, "function_call"))
            rc = function_call_item(&in, it, at, r);
        else if (!strcmp(type, "function_call_output"))
            rc = function_output_item(&in, it, at, r);
        else if (!strcmp(type, "reasoning"))
            rc = reasoning_item(&in, it, at, r);
        else {
            snprintf(at, sizeof at, "input[%zu].type", i);
            rc = reply_bad(r, at,
                           "%s: '%s' items are not supported (this server reads message, function_call, "
                           "function_call_output and reasoning)",
                           at, type);
        }
        if (rc)
            break;
    }
    json_decref(in.reasoning); /* reasoning with no assistant turn after it: nothing to render */
    return rc;
}

/* ---- tools, text.format, reasoning ---- */

static int map_tools(const json_t *req, json_t *chat, reply_t *r)
{
    const json_t *tools = json_object_get(req, "tools"), *tc = json_object_get(req, "tool_choice");
    if (is_set(tools)) {
        if (!json_is_array(tools))
            return reply_bad(r, "tools", "tools must be an array");
        json_t *out = json_array();
        json_object_set_new(chat, "tools", out);
        size_t i;
        json_t *t;
        char at[64];
        json_array_foreach(tools, i, t)
        {
            snprintf(at, sizeof at, "tools[%zu]", i);
            static const char *const keys[] = {"type", "name", "description", "parameters", "strict", NULL};
            const char *type = str_of(t, "type");
            if (!json_is_object(t) || !type)
                return reply_bad(r, at, "%s must be a tool object with a type", at);
            if (strcmp(type, "function"))
                return reply_bad(r, at, "%s: '%s' tools are not supported (only function tools)", at, type);
            if (check_keys(t, at, keys, r))
                return -1;
            const json_t *desc = json_object_get(t, "description"), *params = json_object_get(t, "parameters"),
                         *strict = json_object_get(t, "strict");
            if (!str_of(t, "name"))
                return bad_field(r, at, "name", "must be a string");
            json_t *fn = json_pack("{s:O}", "name", json_object_get(t, "name"));
            json_array_append_new(out, json_pack("{s:s,s:o}", "type", "function", "function", fn));
            if (is_set(desc))
                json_object_set(fn, "description", (json_t *)desc);
            if (is_set(params))
                json_object_set(fn, "parameters", (json_t *)params);
            if (is_set(strict))
                json_object_set(fn, "strict", (json_t *)strict); /* chat validates these three */
        }
    }
    if (!is_set(tc))
        return 0;
    if (json_is_string(tc)) {
        static const char *const modes[] = {"auto", "none", "required", NULL};
        if (!field_in_list(json_string_value(tc), modes))
            return reply_bad(r, "tool_choice",
                             "tool_choice must be \"auto\", \"none\", \"required\" or "
                             "{\"type\": \"function\", \"name\": ...}");
        json_object_set(chat, "tool_choice", (json_t *)tc);
        return 0;
    }
    static const char *const keys[] = {"type", "name", NULL};
    const char *type = str_of(tc, "type"), *name = str_of(tc, "name");
    if (!json_is_object(tc) || !type || strcmp(type, "function") || !name || check_keys(tc, "tool_choice", keys, r))
        return json_is_object(tc) && type && !strcmp(type, "function") && name
                   ? -1
                   : reply_bad(r, "tool_choice",
                               "tool_choice must be \"auto\", \"none\", \"required\" or "
                               "{\"type\": \"function\", \"name\": ...}");
    json_object_set_new(chat, "tool_choice", json_pack("{s:s,s:{s:s}}", "type", "function", "function", "name", name));
    return 0;
}

/* text: {format: {type: text | json_object | json_schema (name, schema,
 * description, strict)}, verbosity}: format becomes chat's response_format. */
static int map_text(const json_t *req, json_t *chat, reply_t *r)
{
    const json_t *text = json_object_get(req, "text");
    if (!is_set(text))
        return 0;
    static const char *const keys[] = {"format", "verbosity", NULL};
    if (!json_is_object(text))
        return reply_bad(r, "text", "text must be an object");
    if (check_keys(text, "text", keys, r))
        return -1;
    const json_t *verb = json_object_get(text, "verbosity");
    if (is_set(verb) && !(json_is_string(verb) && !strcmp(json_string_value(verb), "medium")))
        return reply_bad(r, "text.verbosity",
                         "text.verbosity: only \"medium\" is supported (the model has no such control)");
    const json_t *f = json_object_get(text, "format");
    if (!is_set(f))
        return 0;
    const char *type = str_of(f, "type");
    if (!json_is_object(f) || !type)
        return reply_bad(r, "text.format", "text.format must be an object with a type");
    if (!strcmp(type, "text") || !strcmp(type, "json_object")) {
        static const char *const fkeys[] = {"type", NULL};
        if (check_keys(f, "text.format", fkeys, r))
            return -1;
        json_object_set_new(chat, "response_format", json_pack("{s:s}", "type", type));
        return 0;
    }
    if (strcmp(type, "json_schema"))
        return reply_bad(r, "text.format.type",
                         "text.format.type must be \"text\", \"json_object\" or \"json_schema\"");
    static const char *const skeys[] = {"type", "name", "schema", "description", "strict", NULL};
    if (check_keys(f, "text.format", skeys, r))
        return -1;
    if (!json_is_object(json_object_get(f, "schema")))
        return reply_bad(r, "text.format.schema", "text.format.schema must be a JSON Schema object");
    json_t *js = json_deep_copy(f);
    json_object_del(js, "type");
    json_object_set_new(chat, "response_format", json_pack("{s:s,s:o}", "type", "json_schema", "json_schema", js));
    return 0;
}

/* reasoning: {effort, summary}: effort "none" turns thinking off, any
 * other effort on (the model has no finer control); absent or null: the
 * template's default, as on the chat endpoint. */
static int map_reasoning(const json_t *req, json_t *chat, reply_t *r)
{
    const json_t *re = json_object_get(req, "reasoning");
    if (!is_set(re))
        return 0;
    static const char *const keys[] = {"effort", "summary", "generate_summary", NULL};
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", NULL};
    static const char *const summaries[] = {"auto", "concise", "detailed", NULL};
    if (!json_is_object(re))
        return reply_bad(r, "reasoning", "reasoning must be an object");
    if (check_keys(re, "reasoning", keys, r))
        return -1;
    const json_t *e = json_object_get(re, "effort"), *s = json_object_get(re, "summary"),
                 *g = json_object_get(re, "generate_summary");
    if (is_set(e) && !(json_is_string(e) && field_in_list(json_string_value(e), efforts)))
        return reply_bad(
            r, "reasoning.effort",
            "reasoning.effort must be one of none, minimal, low, medium, high, xhigh (none: thinking off)");
    if ((is_set(s) && !(json_is_string(s) && field_in_list(json_string_value(s), summaries))) ||
        (is_set(g) && !(json_is_string(g) && field_in_list(json_string_value(g), summaries))))
        return reply_bad(r, "reasoning.summary", "reasoning.summary must be auto, concise or detailed");
    if (is_set(e))
        json_object_set_new(chat, "chat_template_kwargs",
                            json_pack("{s:b}", "enable_thinking", strcmp(json_string_value(e), "none") != 0));
    return 0;
}

/* ---- the request ---- */

/* Fields that change nothing for a stateless local server, checked for their type. */
static int check_accepted(const json_t *req, reply_t *r)
{
    static const char *const stateful[] = {"previous_response_id", "conversation", "prompt", NULL};
    for (const char *const *k = stateful; *k; k++)
        if (is_set(json_object_get(req, *k)))
            return reply_bad(r, *k,
                             "%s is not supported: this server is stateless (responses are not stored); send the whole "
                             "conversation in input",
                             *k);
    static const char *const strings[] = {"user", "safety_identifier", "prompt_cache_key", "service_tier", NULL};
    for (const char *const *k = strings; *k; k++) {
        const json_t *v = json_object_get(req, *k);
        if (is_set(v) && !json_is_string(v))
            return reply_bad(r, *k, "%s must be a string", *k);
    }
    const json_t *v = json_object_get(req, "store");
    if (is_set(v) && !json_is_boolean(v))
        return reply_bad(r, "store", "store must be a boolean (nothing is stored either way)");
    v = json_object_get(req, "background");
    if (is_set(v) && !json_is_false(v))
        return reply_bad(r, "background", "background: true is not supported (responses are not stored to poll)");
    v = json_object_get(req, "truncation");
    if (is_set(v) &&
        !(json_is_string(v) && (!strcmp(json_string_value(v), "disabled") || !strcmp(json_string_value(v), "auto"))))
        return reply_bad(r, "truncation", "truncation must be \"disabled\" or \"auto\"");
    v = json_object_get(req, "max_tool_calls");
    if (is_set(v) && !(json_is_integer(v) && json_integer_value(v) >= 1))
        return reply_bad(r, "max_tool_calls", "max_tool_calls must be a positive integer");
    v = json_object_get(req, "top_logprobs");
    if (is_set(v) && !(json_is_integer(v) && json_integer_value(v) == 0))
        return reply_bad(r, "top_logprobs", "top_logprobs are not supported on /v1/responses");
    v = json_object_get(req, "include");
    if (is_set(v) && !(json_is_array(v) && json_array_size(v) == 0))
        return reply_bad(r, "include", "include: no extra output data is supported (reasoning is always plain text)");
    v = json_object_get(req, "metadata");
    if (is_set(v)) {
        const char *key;
        json_t *x;
        if (!json_is_object(v) || json_object_size(v) > 16)
            return reply_bad(r, "metadata", "metadata must be an object of at most 16 string values");
        json_object_foreach((json_t *)v, key, x)
        {
            if (!json_is_string(x) || strlen(key) > 64 || json_string_length(x) > 512)
                return reply_bad(r, "metadata", "metadata must map keys of up to 64 bytes to strings of up to 512");
        }
    }
    v = json_object_get(req, "stream_options");
    if (is_set(v)) {
        static const char *const keys[] = {"include_obfuscation", NULL};
        const json_t *o = json_object_get(v, "include_obfuscation");
        if (!json_is_object(v) || (o && !json_is_boolean(o)))
            return reply_bad(r, "stream_options",
                             "stream_options must be an object with only include_obfuscation (a boolean)");
        if (check_keys(v, "stream_options", keys, r))
            return -1;
    }
    return 0;
}

/* The settings a Response object repeats, with the API's defaults. */
static json_t *echo_of(const json_t *req)
{
    json_t *e =
        json_pack("{s:n,s:n,s:{},s:b,s:f,s:f,s:s,s:[],s:{s:{s:s}},s:{s:n,s:n},s:b,s:s,s:n,s:s,s:b,s:n,s:n,"
                  "s:n,s:i}",
                  "instructions", "max_output_tokens", "metadata", "parallel_tool_calls", 1, "temperature", 1.0,
                  "top_p", 1.0, "tool_choice", "auto", "tools", "text", "format", "type", "text", "reasoning", "effort",
                  "summary", "store", 0, "truncation", "disabled", "user", "service_tier", "default", "background", 0,
                  "max_tool_calls", "prompt_cache_key", "safety_identifier", "top_logprobs", 0);
    static const char *const keys[] = {"instructions",
                                       "max_output_tokens",
                                       "metadata",
                                       "parallel_tool_calls",
                                       "temperature",
                                       "top_p",
                                       "tool_choice",
                                       "tools",
                                       "text",
                                       "reasoning",
                                       "store",
                                       "truncation",
                                       "user",
                                       "service_tier",
                                       "max_tool_calls",
                                       "prompt_cache_key",
                                       "safety_identifier",
                                       NULL};
    for (const char *const *k = keys; *k; k++) {
        json_t *v = json_object_get(req, *k);
        if (is_set(v))
            json_object_set(e, *k, v);
    }
    json_t *text = json_object_get(e, "text"), *re = json_object_get(e, "reasoning");
    if (!json_object_get(text, "format"))
        json_object_set_new(text, "format", json_pack("{s:s}", "type", "text"));
    for (const char *const *k = (const char *const[]){"effort", "summary", NULL}; *k; k++)
        if (!json_object_get(re, *k))
            json_object_set_new(re, *k, json_null());
    return e;
}

json_t *responses_to_chat(const json_t *req, json_t **echo, reply_t *r)
{
    static const char *const keys[] = {"model",
                                       "input",
                                       "instructions",
                                       "max_output_tokens",
                                       "temperature",
                                       "top_p",
                                       "tools",
                                       "tool_choice",
                                       "text",
                                       "reasoning",
                                       "metadata",
                                       "user",
                                       "store",
                                       "parallel_tool_calls",
                                       "stream",
                                       "stream_options",
                                       "previous_response_id",
                                       "conversation",
                                       "prompt",
                                       "include",
                                       "truncation",
                                       "service_tier",
                                       "background",
                                       "max_tool_calls",
                                       "prompt_cache_key",
                                       "safety_identifier",
                                       "top_logprobs",
                                       "seed",
                                       "ignore_eos",
                                       NULL};
    *echo = NULL;
    if (check_keys(req, "", keys, r) || check_accepted(req, r))
        return NULL;
    json_t *chat = json_object();
    const json_t *mt = json_object_get(req, "max_output_tokens");
    if (is_set(mt)) {
        if (!json_is_integer(mt) || json_integer_value(mt) < 1 || json_integer_value(mt) > INT32_MAX) {
            reply_bad(r, "max_output_tokens", "max_output_tokens must be a positive integer");
            goto fail;
        }
        json_object_set(chat, "max_tokens", (json_t *)mt);
    }
    /* validated with the chat fields, whose names they share */
    static const char *const same[] = {"model",  "temperature", "top_p", "seed", "user", "parallel_tool_calls",
                                       "stream", "ignore_eos",  NULL};
    for (const char *const *k = same; *k; k++) {
        json_t *v = json_object_get(req, *k);
        if (is_set(v))
            json_object_set(chat, *k, v);
    }
    if (map_input(req, chat, r) || map_tools(req, chat, r) || map_text(req, chat, r) || map_reasoning(req, chat, r))
        goto fail;
    *echo = echo_of(req);
    return chat;
fail:
    json_decref(chat);
    return NULL;
}

/* ---- errors ---- */

/* s with every `from` replaced by `to` (a new string), or NULL. */
static char *replace_all(const char *s, const char *from, const char *to)
{
    size_t nf = strlen(from), nt = strlen(to), n = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + nf, from))
        n++;
    char *out = malloc(strlen(s) + n * (nt > nf ? nt - nf : 0) + 1);
    if (!out)
        return NULL;
    char *w = out;
    for (const char *p; (p = strstr(s, from)); s = p + nf) {
        memcpy(w, s, (size_t)(p - s));
        w += p - s;
        memcpy(w, to, nt);
        w += nt;
    }
    strcpy(w, s);
    return out;
}

void responses_rename_error(reply_t *r)
{
    static const char *const names[][2] = {
        {"response_format.json_schema.", "text.format."},
        {"response_format", "text.format"},
        {"max_tokens", "max_output_tokens"},
        {"chat_template_kwargs", "reasoning"},
        {"messages", "input"},
        {".function.", "."},
    };
    json_t *err = json_object_get(r->body, "error");
    if (!json_is_object(err))
        return;
    static const char *const fields[] = {"param", "message"};
    for (size_t f = 0; f < 2; f++) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            const char *v = str_of(err, fields[f]);
            char *fixed = v ? replace_all(v, names[i][0], names[i][1]) : NULL;
            if (fixed)
                json_object_set_new(err, fields[f], json_string(fixed));
            free(fixed);
        }
    }
}
