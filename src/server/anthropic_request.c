/* The Anthropic Messages dialect's requests (anthropic.c has the rest):
 * the request validated where it enters and mapped onto the chat request
 * api.c builds, and Anthropic's error body.
 *
 * Refused with 400 (their meaning would be lost): image, document and other
 * non-text blocks, server tools, redacted_thinking, a final assistant turn
 * (prefill), thinking "adaptive" / "between_tools" / display "omitted",
 * container, mcp_servers and any other unknown field. Accepted and
 * documented: metadata.user_id, service_tier, cache_control (the prefix
 * cache is automatic), thinking.budget_tokens (thinking counts against
 * max_tokens; the budget itself is not enforced), seed and ignore_eos
 * (splash extensions, as on the chat endpoint). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/anthropic.h"
#include "server/dialect.h"
#include "server/fields.h"

/* ---- errors ---- */

void anthropic_error_body(reply_t *r)
{
    const json_t *e = json_object_get(r->body, "error");
    const json_t *m = json_object_get(e, "message");
    const char *type;
    switch (r->status) {
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 408: type = "timeout_error"; break;
    case 413: type = "request_too_large"; break;
    case 429: type = "rate_limit_error"; break;
    case 503: type = "overloaded_error"; break;
    default: type = r->status >= 500 ? "api_error" : "invalid_request_error"; break;
    }
    json_t *body = json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type", type, "message",
                             json_is_string(m) ? json_string_value(m) : "error");
    json_decref(r->body);
    r->body = body;
}

/* Refuses a field not in allowed; where names the object in messages. */
static int check_keys(const json_t *obj, const char *where, const char *const *allowed, reply_t *r)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!field_in_list(key, allowed))
            return reply_bad(r, key, "%s%s%s: unknown or unsupported field", where, where[0] ? "." : "", key);
    }
    return 0;
}

static const char *type_of(const json_t *block)
{
    const json_t *t = json_object_get(block, "type");
    return json_is_string(t) ? json_string_value(t) : "";
}

/* cache_control: {"type": "ephemeral", "ttl"?}: accepted (the prefix cache is automatic). */
static int check_cache_control(const json_t *v, const char *where, reply_t *r)
{
    if (!v || json_is_null(v))
        return 0;
    static const char *const keys[] = {"type", "ttl", NULL};
    if (!json_is_object(v) || strcmp(type_of(v), "ephemeral") || check_keys(v, where, keys, r))
        return reply_bad(r, "cache_control", "%s.cache_control must be {\"type\": \"ephemeral\"}", where);
    return 0;
}

/* A text block {type: "text", text, cache_control?, citations?: null}: its text. */
static const json_t *text_block(const json_t *b, const char *where, reply_t *r)
{
    static const char *const keys[] = {"type", "text", "cache_control", "citations", NULL};
    const json_t *text = json_object_get(b, "text"), *cit = json_object_get(b, "citations");
    if (check_keys(b, where, keys, r) || check_cache_control(json_object_get(b, "cache_control"), where, r))
        return NULL;
    if (!json_is_string(text)) {
        reply_bad(r, "text", "%s.text must be a string", where);
        return NULL;
    }
    if (cit && !json_is_null(cit) && !(json_is_array(cit) && json_array_size(cit) == 0)) {
        reply_bad(r, "citations", "%s.citations: citations are not supported", where);
        return NULL;
    }
    return text;
}

/* Text blocks (or a string) joined with "\n": a new string, or NULL with a reply. */
static json_t *join_text(const json_t *content, const char *where, reply_t *r)
{
    if (json_is_string(content))
        return json_copy((json_t *)content);
    if (!json_is_array(content)) {
        reply_bad(r, where, "%s must be a string or an array of text blocks", where);
        return NULL;
    }
    json_t *out = json_string("");
    size_t i;
    json_t *b;
    char at[96];
    json_array_foreach(content, i, b)
    {
        snprintf(at, sizeof at, "%s[%zu]", where, i);
        if (!json_is_object(b) || strcmp(type_of(b), "text")) {
            json_decref(out);
            if (json_is_object(b) && type_of(b)[0])
                reply_bad(r, at, "%s: '%s' blocks are not supported here (text only)", at, type_of(b));
            else
                reply_bad(r, at, "%s must be a content block with a \"type\"", at);
            return NULL;
        }
        const json_t *t = text_block(b, at, r);
        if (!t) {
            json_decref(out);
            return NULL;
        }
        size_t n0 = json_string_length(out), n1 = json_string_length(t);
        char *buf = malloc(n0 + n1 + 2);
        if (!buf) {
            json_decref(out);
            reply_nomem(r, "joining text blocks", n0 + n1 + 2);
            return NULL;
        }
        memcpy(buf, json_string_value(out), n0);
        size_t n = n0;
        if (i > 0)
            buf[n++] = '\n';
        memcpy(buf + n, json_string_value(t), n1);
        json_string_setn(out, buf, n + n1);
        free(buf);
    }
    return out;
}

/* ---- the request: Anthropic's JSON onto the chat request ---- */

/* A user turn: tool_result blocks become tool messages, text blocks one user message. */
static int map_user(const json_t *content, size_t i, json_t *msgs, reply_t *r)
{
    char at[96];
    if (json_is_string(content)) {
        json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "user", "content", content));
        return 0;
    }
    json_t *texts = json_array();
    size_t j;
    json_t *b;
    json_array_foreach(content, j, b)
    {
        snprintf(at, sizeof at, "messages[%zu].content[%zu]", i, j);
        const char *type = type_of(b);
        if (!strcmp(type, "text")) {
            if (!text_block(b, at, r))
                goto fail;
            json_array_append(texts, b);
        } else if (!strcmp(type, "tool_result")) {
            static const char *const keys[] = {"type", "tool_use_id", "content", "is_error", "cache_control", NULL};
            const json_t *id = json_object_get(b, "tool_use_id"), *c = json_object_get(b, "content"),
                         *err = json_object_get(b, "is_error");
            if (check_keys(b, at, keys, r) || check_cache_control(json_object_get(b, "cache_control"), at, r))
                goto fail;
            if (!json_is_string(id) || !json_string_length(id)) {
                reply_bad(r, "tool_use_id", "%s.tool_use_id must be a non-empty string", at);
                goto fail;
            }
            if (err && !json_is_boolean(err)) {
                reply_bad(r, "is_error", "%s.is_error must be a boolean", at);
                goto fail;
            }
            char cat[112];
            snprintf(cat, sizeof cat, "%s.content", at);
            json_t *text = c && !json_is_null(c) ? join_text(c, cat, r) : json_string("");
            if (!text)
                goto fail;
            if (json_is_true(err)) {
                /* the template has no error flag: the model reads it in the text */
                size_t n = json_string_length(text);
                char *s = malloc(n + 8);
                if (!s) {
                    json_decref(text);
                    reply_nomem(r, "a tool result's text", n + 8);
                    goto fail;
                }
                memcpy(s, "Error: ", 7);
                memcpy(s + 7, json_string_value(text), n);
                json_string_setn(text, s, n + 7);
                free(s);
            }
            json_array_append_new(msgs,
                                  json_pack("{s:s,s:O,s:o}", "role", "tool", "tool_call_id", id, "content", text));
        } else {
            reply_bad(r, at, "%s: '%s' blocks are not supported (this server reads text, tool_use and tool_result)", at,
                      type);
            goto fail;
        }
    }
    if (json_array_size(texts)) {
        snprintf(at, sizeof at, "messages[%zu].content", i);
        json_t *text = join_text(texts, at, r);
        if (!text)
            goto fail;
        json_array_append_new(msgs, json_pack("{s:s,s:o}", "role", "user", "content", text));
    }
    json_decref(texts);
    return 0;
fail:
    json_decref(texts);
    return -1;
}

/* An assistant turn: text, thinking (reasoning) and tool_use (tool calls). */
static int map_assistant(const json_t *content, size_t i, json_t *msgs, reply_t *r)
{
    char at[96];
    if (json_is_string(content)) {
        json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "assistant", "content", content));
        return 0;
    }
    json_t *texts = json_array(), *calls = json_array(), *reasoning = NULL;
    size_t j;
    json_t *b;
    json_array_foreach(content, j, b)
    {
        snprintf(at, sizeof at, "messages[%zu].content[%zu]", i, j);
        const char *type = type_of(b);
        if (!strcmp(type, "text")) {
            if (!text_block(b, at, r))
                goto fail;
            json_array_append(texts, b);
        } else if (!strcmp(type, "thinking")) {
            static const char *const keys[] = {"type", "thinking", "signature", NULL};
            const json_t *t = json_object_get(b, "thinking");
            if (check_keys(b, at, keys, r))
                goto fail;
            if (!json_is_string(t)) {
                reply_bad(r, "thinking", "%s.thinking must be a string", at);
                goto fail;
            }
            json_decref(reasoning);
            reasoning = json_copy((json_t *)t);
        } else if (!strcmp(type, "tool_use")) {
            static const char *const keys[] = {"type", "id", "name", "input", "cache_control", NULL};
            const json_t *id = json_object_get(b, "id"), *name = json_object_get(b, "name"),
                         *input = json_object_get(b, "input");
            if (check_keys(b, at, keys, r) || check_cache_control(json_object_get(b, "cache_control"), at, r))
                goto fail;
            if (!json_is_string(id) || !json_is_string(name) || !json_is_object(input)) {
                reply_bad(r, at, "%s: a tool_use block needs id and name (strings) and input (an object)", at);
                goto fail;
            }
            json_array_append_new(calls, json_pack("{s:O,s:s,s:{s:O,s:O}}", "id", id, "type", "function", "function",
                                                   "name", name, "arguments", input));
        } else {
            reply_bad(r, at, "%s: '%s' blocks are not supported in an assistant turn", at, type);
            goto fail;
        }
    }
    snprintf(at, sizeof at, "messages[%zu].content", i);
    json_t *text = join_text(texts, at, r);
    if (!text)
        goto fail;
    json_t *m = json_pack("{s:s,s:o}", "role", "assistant", "content", text);
    if (json_array_size(calls))
        json_object_set(m, "tool_calls", calls);
    if (reasoning)
        json_object_set(m, "reasoning_content", reasoning);
    json_array_append_new(msgs, m);
    json_decref(texts);
    json_decref(calls);
    json_decref(reasoning);
    return 0;
fail:
    json_decref(texts);
    json_decref(calls);
    json_decref(reasoning);
    return -1;
}

static int map_messages(const json_t *req, json_t *chat, reply_t *r)
{
    const json_t *system = json_object_get(req, "system"), *in = json_object_get(req, "messages");
    json_t *msgs = json_array();
    json_object_set_new(chat, "messages", msgs);
    if (system && !json_is_null(system)) {
        json_t *text = join_text(system, "system", r);
        if (!text)
            return -1;
        json_array_append_new(msgs, json_pack("{s:s,s:o}", "role", "system", "content", text));
    }
    if (!json_is_array(in) || json_array_size(in) == 0)
        return reply_bad(r, "messages", "messages: a non-empty array is required");
    size_t i;
    json_t *m;
    char at[64];
    json_array_foreach(in, i, m)
    {
        snprintf(at, sizeof at, "messages[%zu]", i);
        static const char *const keys[] = {"role", "content", NULL};
        if (!json_is_object(m) || check_keys(m, at, keys, r))
            return json_is_object(m) ? -1 : reply_bad(r, at, "%s must be an object", at);
        const json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
        if (!json_is_string(content) && !json_is_array(content))
            return reply_bad(r, at, "%s.content must be a string or an array of content blocks", at);
        if (json_is_string(role) && !strcmp(json_string_value(role), "user")) {
            if (map_user(content, i, msgs, r))
                return -1;
        } else if (json_is_string(role) && !strcmp(json_string_value(role), "assistant")) {
            if (i + 1 == json_array_size(in))
                return reply_bad(r, at, "%s: a final assistant turn (prefill) is not supported", at);
            if (map_assistant(content, i, msgs, r))
                return -1;
        } else {
            return reply_bad(r, at, "%s.role must be \"user\" or \"assistant\"", at);
        }
    }
    return 0;
}

static int map_tools(const json_t *req, json_t *chat, reply_t *r)
{
    const json_t *tools = json_object_get(req, "tools"), *tc = json_object_get(req, "tool_choice");
    if (tools && !json_is_null(tools)) {
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
            static const char *const keys[] = {"type",          "name",   "description", "input_schema",
                                               "cache_control", "strict", NULL};
            if (!json_is_object(t))
                return reply_bad(r, at, "%s must be an object", at);
            const json_t *type = json_object_get(t, "type"), *name = json_object_get(t, "name"),
                         *desc = json_object_get(t, "description"), *schema = json_object_get(t, "input_schema"),
                         *strict = json_object_get(t, "strict");
            if (type && !json_is_null(type) && strcmp(type_of(t), "custom"))
                return reply_bad(r, at, "%s: server tools ('%s') are not supported; give custom tools", at, type_of(t));
            if (check_keys(t, at, keys, r) || check_cache_control(json_object_get(t, "cache_control"), at, r))
                return -1;
            if (!json_is_string(name))
                return reply_bad(r, at, "%s.name must be a string", at);
            if (desc && !json_is_string(desc))
                return reply_bad(r, at, "%s.description must be a string", at);
            if (!json_is_object(schema))
                return reply_bad(r, at, "%s.input_schema must be a JSON Schema object", at);
            if (strict && !json_is_boolean(strict))
                return reply_bad(r, at, "%s.strict must be a boolean", at);
            json_t *fn = json_pack("{s:O,s:O}", "name", name, "parameters", schema);
            if (desc)
                json_object_set(fn, "description", (json_t *)desc);
            if (strict)
                json_object_set(fn, "strict", (json_t *)strict);
            json_array_append_new(out, json_pack("{s:s,s:o}", "type", "function", "function", fn));
        }
    }
    if (!tc || json_is_null(tc))
        return 0;
    static const char *const keys[] = {"type", "name", "disable_parallel_tool_use", NULL};
    const char *type = type_of(tc);
    const json_t *name = json_object_get(tc, "name"), *dp = json_object_get(tc, "disable_parallel_tool_use");
    if (!json_is_object(tc) || check_keys(tc, "tool_choice", keys, r))
        return json_is_object(tc) ? -1 : reply_bad(r, "tool_choice", "tool_choice must be an object");
    if (dp && !json_is_boolean(dp))
        return reply_bad(r, "tool_choice", "tool_choice.disable_parallel_tool_use must be a boolean");
    if (!strcmp(type, "auto") || !strcmp(type, "any") || !strcmp(type, "none")) {
        if (name)
            return reply_bad(r, "tool_choice", "tool_choice.name is only for type \"tool\"");
        json_object_set_new(chat, "tool_choice", json_string(!strcmp(type, "any") ? "required" : type));
    } else if (!strcmp(type, "tool")) {
        if (!json_is_string(name))
            return reply_bad(r, "tool_choice", "tool_choice of type \"tool\" needs a name");
        json_object_set_new(chat, "tool_choice",
                            json_pack("{s:s,s:{s:O}}", "type", "function", "function", "name", name));
    } else {
        return reply_bad(r, "tool_choice", "tool_choice.type must be \"auto\", \"any\", \"tool\" or \"none\"");
    }
    if (json_is_true(dp))
        json_object_set_new(chat, "parallel_tool_calls", json_false());
    return 0;
}

/* thinking: {type: enabled, budget_tokens, display?} or {type: disabled};
 * absent: off, as Anthropic's default. */
static int map_thinking(const json_t *req, json_t *chat, json_int_t max_tokens, reply_t *r)
{
    const json_t *th = json_object_get(req, "thinking");
    bool is_on = false;
    if (th && !json_is_null(th)) {
        const char *type = type_of(th);
        if (!json_is_object(th))
            return reply_bad(r, "thinking", "thinking must be an object");
        if (!strcmp(type, "enabled")) {
            static const char *const keys[] = {"type", "budget_tokens", "display", NULL};
            const json_t *b = json_object_get(th, "budget_tokens"), *d = json_object_get(th, "display");
            if (check_keys(th, "thinking", keys, r))
                return -1;
            if (!json_is_integer(b) || json_integer_value(b) < 1024 ||
                (max_tokens && json_integer_value(b) >= max_tokens))
                return reply_bad(r, "thinking",
                                 "thinking.budget_tokens must be an integer >= 1024 and below max_tokens");
            if (d && !json_is_null(d) && !(json_is_string(d) && !strcmp(json_string_value(d), "summarized")))
                return reply_bad(r, "thinking",
                                 "thinking.display: only \"summarized\" (the whole thinking) is supported");
            is_on = true;
        } else if (!strcmp(type, "disabled")) {
            static const char *const keys[] = {"type", NULL};
            if (check_keys(th, "thinking", keys, r))
                return -1;
        } else {
            return reply_bad(
                r, "thinking",
                "thinking.type must be \"enabled\" or \"disabled\" (the model cannot choose when to think)");
        }
    }
    json_object_set_new(chat, "chat_template_kwargs", json_pack("{s:b}", "enable_thinking", is_on));
    return 0;
}

json_t *anthropic_to_chat(const json_t *req, bool is_count, reply_t *r)
{
    static const char *const create_keys[] = {"model",  "max_tokens",  "messages", "system",       "stop_sequences",
                                              "stream", "temperature", "top_p",    "top_k",        "metadata",
                                              "tools",  "tool_choice", "thinking", "service_tier", "cache_control",
                                              "seed",   "ignore_eos",  NULL};
    static const char *const count_keys[] = {"model",       "messages", "system",        "tools",
                                             "tool_choice", "thinking", "cache_control", NULL};
    json_t *chat = json_object();
    if (check_keys(req, "", is_count ? count_keys : create_keys, r) ||
        check_cache_control(json_object_get(req, "cache_control"), "request", r))
        goto fail;
    const json_t *model = json_object_get(req, "model");
    if (!json_is_string(model)) {
        reply_bad(r, "model", "model: a string is required");
        goto fail;
    }
    json_object_set(chat, "model", (json_t *)model);
    json_int_t max_tokens = 0;
    if (!is_count) {
        const json_t *mt = json_object_get(req, "max_tokens");
        if (!json_is_integer(mt) || json_integer_value(mt) < 1 || json_integer_value(mt) > INT32_MAX) {
            reply_bad(r, "max_tokens", "max_tokens: a positive integer is required");
            goto fail;
        }
        max_tokens = json_integer_value(mt);
        json_object_set(chat, "max_tokens", (json_t *)mt);
        const json_t *t = json_object_get(req, "temperature"), *tp = json_object_get(req, "top_p"),
                     *tk = json_object_get(req, "top_k"), *st = json_object_get(req, "stream"),
                     *seed = json_object_get(req, "seed");
        if (t && (!json_is_number(t) || json_number_value(t) < 0 || json_number_value(t) > 1)) {
            reply_bad(r, "temperature", "temperature must be a number in [0, 1]");
            goto fail;
        }
        json_object_set_new(chat, "temperature", json_real(t ? json_number_value(t) : 1.0));
        if (tp && (!json_is_number(tp) || !(json_number_value(tp) > 0) || json_number_value(tp) > 1)) {
            reply_bad(r, "top_p", "top_p must be a number in (0, 1]");
            goto fail;
        }
        if (tp)
            json_object_set(chat, "top_p", (json_t *)tp);
        if (tk && (!json_is_integer(tk) || json_integer_value(tk) < 0 || json_integer_value(tk) > INT32_MAX)) {
            reply_bad(r, "top_k", "top_k must be a non-negative integer");
            goto fail;
        }
        if (tk)
            json_object_set(chat, "top_k", (json_t *)tk);
        if (st && !json_is_boolean(st)) {
            reply_bad(r, "stream", "stream must be a boolean");
            goto fail;
        }
        if (st)
            json_object_set(chat, "stream", (json_t *)st);
        if (seed) /* splash extensions: validated with the chat fields */
            json_object_set(chat, "seed", (json_t *)seed);
        if (json_object_get(req, "ignore_eos"))
            json_object_set(chat, "ignore_eos", json_object_get(req, "ignore_eos"));
        const json_t *ss = json_object_get(req, "stop_sequences");
        if (ss && !json_is_null(ss)) {
            if (!json_is_array(ss) || json_array_size(ss) > ENGINE_MAX_STOP) {
                reply_bad(r, "stop_sequences", "stop_sequences must be an array of at most %d strings",
                          ENGINE_MAX_STOP);
                goto fail;
            }
            if (json_array_size(ss))
                json_object_set(chat, "stop", (json_t *)ss);
        }
        const json_t *md = json_object_get(req, "metadata");
        if (md && !json_is_null(md)) {
            static const char *const keys[] = {"user_id", NULL};
            const json_t *u = json_object_get(md, "user_id");
            if (!json_is_object(md) || check_keys(md, "metadata", keys, r) ||
                (u && !json_is_null(u) && !json_is_string(u))) {
                if (!json_is_object(md) || (u && !json_is_string(u)))
                    reply_bad(r, "metadata", "metadata must be an object with only user_id (a string)");
                goto fail;
            }
        }
        const json_t *tier = json_object_get(req, "service_tier");
        if (tier && !(json_is_string(tier) && (!strcmp(json_string_value(tier), "auto") ||
                                               !strcmp(json_string_value(tier), "standard_only")))) {
            reply_bad(r, "service_tier", "service_tier must be \"auto\" or \"standard_only\"");
            goto fail;
        }
    }
    if (map_messages(req, chat, r) || map_tools(req, chat, r) || map_thinking(req, chat, max_tokens, r))
        goto fail;
    return chat;
fail:
    json_decref(chat);
    return NULL;
}
