/* The OpenAI-compatible endpoints and the text utilities. Every request
 * field is validated here, where it enters: wrong types, out-of-range
 * values, unknown fields and unsupported options are refused with 400 and
 * the offending `param`; nothing is silently ignored. */
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "server/chat_msgs.h"
#include "server/dialect.h"
#include "server/sse.h"
#include "server/structured.h"
#include "text/chat.h"

#define API_MAX_TOKEN_IDS (1 << 20) /* token ids accepted in one prompt or /detokenize */

/* ---- field validation ---- */

static bool in_list(const char *key, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(key, *list))
            return true;
    return false;
}

/* Refuses any field not in allowed. */
static int check_fields(const json_t *req, const char *const *allowed, reply_t *r)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)req, key, v)
    {
        if (!in_list(key, allowed)) {
            reply_error(r, 400, key, "unknown or unsupported parameter '%s'", key);
            return -1;
        }
    }
    return 0;
}

/* A number in [lo, hi] (JSON null or absent: *out unchanged). */
static int get_number(const json_t *req, const char *key, double lo, double hi, float *out, reply_t *r)
{
    const json_t *v = json_object_get(req, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v)) {
        reply_error(r, 400, key, "'%s' must be a number", key);
        return -1;
    }
    double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) {
        reply_error(r, 400, key, "'%s' must be in [%g, %g]", key, lo, hi);
        return -1;
    }
    *out = (float)d;
    return 0;
}

static int get_int(const json_t *req, const char *key, json_int_t lo, json_int_t hi, json_int_t *out, bool *present,
                   reply_t *r)
{
    const json_t *v = json_object_get(req, key);
    if (present)
        *present = false;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v)) {
        reply_error(r, 400, key, "'%s' must be an integer", key);
        return -1;
    }
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) {
        reply_error(r, 400, key, "'%s' must be in [%" JSON_INTEGER_FORMAT ", %" JSON_INTEGER_FORMAT "]", key, lo, hi);
        return -1;
    }
    *out = x;
    if (present)
        *present = true;
    return 0;
}

static int get_bool(const json_t *req, const char *key, bool *out, reply_t *r)
{
    const json_t *v = json_object_get(req, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v)) {
        reply_error(r, 400, key, "'%s' must be true or false", key);
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}

/* ---- a parsed generation request ---- */

typedef struct gen_req {
    engine_params_t p;
    bool has_max_tokens;
    bool is_stream;
    bool include_usage;
    const char *stop[ENGINE_MAX_STOP];
    tok_ids_t ids;
    const char *prompt_param;     /* "messages" or "prompt": names the prompt in errors */
    const char *max_tokens_param; /* "max_tokens" or "max_completion_tokens", as the request named it */
    structured_req_t sr;          /* response_format, grammar, tools: the constraint and the output parser's mode */
} gen_req_t;

static int check_model(server_t *s, const json_t *req, reply_t *r)
{
    const json_t *v = json_object_get(req, "model");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v)) {
        reply_error(r, 400, "model", "'model' must be a string");
        return -1;
    }
    if (strcmp(json_string_value(v), s->m.id) != 0) {
        reply_error(r, 404, "model", "the model '%s' does not exist (this server serves '%s')", json_string_value(v),
                    s->m.id);
        return -1;
    }
    return 0;
}

/* The sampling, limit and streaming fields chat and completions share. */
static int parse_common(server_t *s, const json_t *req, gen_req_t *g, reply_t *r)
{
    sampler_params_t *sp = &g->p.sampling;
    *sp = sampler_params_default();
    sp->temperature = 1.0f; /* the OpenAI default */
    json_int_t x = 0;
    bool present = false;
    if (check_model(s, req, r) || get_number(req, "temperature", 0, 2, &sp->temperature, r) ||
        get_number(req, "top_p", 0, 1, &sp->top_p, r) || get_number(req, "min_p", 0, 1, &sp->min_p, r) ||
        get_number(req, "presence_penalty", -2, 2, &sp->presence_penalty, r) ||
        get_number(req, "frequency_penalty", -2, 2, &sp->frequency_penalty, r) ||
        get_number(req, "repetition_penalty", 1e-6, SAMPLER_MAX_REPETITION_PENALTY, &sp->repetition_penalty, r) ||
        get_bool(req, "ignore_eos", &g->p.ignore_eos, r) || get_bool(req, "stream", &g->is_stream, r))
        return -1;
    if (json_object_get(req, "top_p") && sp->top_p == 0.0f) {
        reply_error(r, 400, "top_p", "'top_p' must be in (0, 1]");
        return -1;
    }
    if (get_int(req, "top_k", -1, INT32_MAX, &x, &present, r))
        return -1;
    if (present)
        sp->top_k = x < 0 ? 0 : (int)x; /* -1: off, as vLLM */
    /* a u64: the body loader refused negative literals and keeps those
     * above INT64_MAX as the same 64 bits (json_body.h) */
    if (get_int(req, "seed", INT64_MIN, INT64_MAX, &x, &present, r))
        return -1;
    if (present)
        sp->seed = (uint64_t)x;
    else
        sp->seed = atomic_fetch_add(&s->next_id, 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)clock_now_ns();
    /* max_tokens, or chat's newer name for it */
    g->max_tokens_param = json_object_get(req, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (get_int(req, g->max_tokens_param, 1, INT32_MAX, &x, &g->has_max_tokens, r))
        return -1;
    if (g->has_max_tokens)
        g->p.max_tokens = (int)x;
    json_int_t n = 1;
    if (get_int(req, "n", 1, 1, &n, NULL, r)) {
        reply_error(r, 400, "n", "only n = 1 is supported");
        return -1;
    }
    const json_t *v = json_object_get(req, "stop");
    if (v && !json_is_null(v)) {
        if (json_is_string(v)) {
            g->stop[g->p.n_stop++] = json_string_value(v);
        } else if (json_is_array(v) && json_array_size(v) <= ENGINE_MAX_STOP) {
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e)
            {
                if (!json_is_string(e)) {
                    reply_error(r, 400, "stop", "'stop' must be a string or an array of strings");
                    return -1;
                }
                g->stop[g->p.n_stop++] = json_string_value(e);
            }
        } else {
            reply_error(r, 400, "stop", "'stop' must be a string or an array of at most %d strings", ENGINE_MAX_STOP);
            return -1;
        }
        for (int i = 0; i < g->p.n_stop; i++)
            if (!g->stop[i][0] || strlen(g->stop[i]) > ENGINE_MAX_STOP_BYTES) {
                reply_error(r, 400, "stop", "each stop string must have 1 to %d bytes", ENGINE_MAX_STOP_BYTES);
                return -1;
            }
        g->p.stop = g->stop;
    }
    v = json_object_get(req, "stream_options");
    if (v && !json_is_null(v)) {
        static const char *const so_fields[] = {"include_usage", "continuous_usage_stats", NULL};
        if (!json_is_object(v) || check_fields(v, so_fields, r) || get_bool(v, "include_usage", &g->include_usage, r)) {
            if (!json_is_object(v))
                reply_error(r, 400, "stream_options", "'stream_options' must be an object");
            else
                json_object_set_new(json_object_get(r->body, "error"), "param", json_string("stream_options"));
            return -1;
        }
        if (!g->is_stream) {
            reply_error(r, 400, "stream_options", "'stream_options' is only allowed with stream: true");
            return -1;
        }
    }
    v = json_object_get(req, "cache_salt");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) > 256) {
            reply_error(r, 400, "cache_salt", "'cache_salt' must be a string of 1 to 256 bytes");
            return -1;
        }
        g->p.cache_salt = json_string_value(v);
    }
    v = json_object_get(req, "logprobs");
    if (v && !json_is_null(v) && !json_is_false(v) && !(json_is_integer(v) && json_integer_value(v) == 0)) {
        reply_error(r, 400, "logprobs", "logprobs are not supported");
        return -1;
    }
    v = json_object_get(req, "top_logprobs");
    if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 0)) {
        reply_error(r, 400, "top_logprobs", "logprobs are not supported");
        return -1;
    }
    v = json_object_get(req, "logit_bias");
    if (v && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0)) {
        reply_error(r, 400, "logit_bias", "logit_bias is not supported");
        return -1;
    }
    v = json_object_get(req, "user");
    if (v && !json_is_null(v) && !json_is_string(v)) {
        reply_error(r, 400, "user", "'user' must be a string");
        return -1;
    }
    g->p.timeout_ns = (int64_t)s->cfg.request_timeout_s * 1000000000LL;
    return 0;
}

/* ---- chat messages ---- */

/* Renders the conversation to its prompt text (malloc'd). */
static char *render_chat(const json_t *req, bool default_gen_prompt, size_t *len, reply_t *r)
{
    json_t *msgs = chat_messages_normalise(json_object_get(req, "messages"), r);
    if (!msgs)
        return NULL;
    chat_opts_t opts = {.add_generation_prompt = default_gen_prompt, .enable_thinking = -1};
    bool agp = default_gen_prompt;
    const json_t *tools = json_object_get(req, "tools");
    const json_t *kw = json_object_get(req, "chat_template_kwargs");
    char *text = NULL;
    if (get_bool(req, "add_generation_prompt", &agp, r))
        goto out;
    opts.add_generation_prompt = agp;
    if (tools && !json_is_null(tools) && !json_is_array(tools)) {
        reply_error(r, 400, "tools", "'tools' must be an array");
        goto out;
    }
    if (kw && !json_is_null(kw)) {
        static const char *const kw_fields[] = {"enable_thinking", NULL};
        bool thinking = true;
        if (!json_is_object(kw) || check_fields(kw, kw_fields, r) || get_bool(kw, "enable_thinking", &thinking, r)) {
            reply_error(r, 400, "chat_template_kwargs",
                        "'chat_template_kwargs' must be an object with only enable_thinking (a boolean)");
            goto out;
        }
        if (json_object_get(kw, "enable_thinking"))
            opts.enable_thinking = thinking;
    }
    err_t err;
    if (chat_render_qwen3(msgs, json_is_array(tools) ? tools : NULL, &opts, &text, len, &err))
        reply_error(r, 400, "messages", "%s", err.msg);
out:
    json_decref(msgs);
    return text;
}

/* chat_template_kwargs.enable_thinking: -1 absent, 0, 1 (render_chat validated it). */
static int enable_thinking(const json_t *req)
{
    const json_t *kw = json_object_get(req, "chat_template_kwargs");
    const json_t *v = json_is_object(kw) ? json_object_get(kw, "enable_thinking") : NULL;
    return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* ---- submission and replies ---- */

void make_id(server_t *s, const char *prefix, char *out, size_t cap)
{
    uint64_t n = atomic_fetch_add(&s->next_id, 1);
    snprintf(out, cap, "%s-%016" PRIx64 "%08" PRIx64, prefix, (uint64_t)s->started_unix, n);
}

/* Valid UTF-8 for JSON (invalid bytes as U+FFFD, as HF decode does). */
json_t *text_json(const char *text, size_t len)
{
    char *buf = malloc(3 * len + 1);
    if (!buf)
        return NULL;
    size_t n = utf8_lossy(text, len, buf);
    json_t *j = json_stringn(buf, n);
    free(buf);
    return j;
}

static const char *finish_reason(engine_finish_t f)
{
    return f == ENGINE_FINISH_LENGTH ? "length" : "stop";
}

static json_t *usage_json(const engine_usage_t *u)
{
    return json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", u->prompt_tokens, "completion_tokens",
                     u->completion_tokens, "total_tokens", u->prompt_tokens + u->completion_tokens,
                     "prompt_tokens_details", "cached_tokens", u->cached_tokens);
}

static engine_req_t *submit(server_t *s, gen_req_t *g, reply_t *r)
{
    const engine_config_t *ec = engine_get_config(s->m.engine);
    int n_prompt = (int)g->ids.n;
    if (n_prompt < 1) {
        reply_error(r, 400, g->prompt_param, "the prompt is empty");
        return NULL;
    }
    if (n_prompt >= ec->max_context) {
        reply_error(r, 400, g->prompt_param, "the prompt is %d tokens; the context is %d", n_prompt, ec->max_context);
        return NULL;
    }
    if (!g->has_max_tokens) {
        g->p.max_tokens = ec->max_context - n_prompt; /* as far as the context allows */
    } else if (g->p.max_tokens > ec->max_context - n_prompt) {
        reply_error(r, 400, g->max_tokens_param,
                    "'%s' is %d, but the context is %d tokens and the prompt takes %d: at most %d can be generated",
                    g->max_tokens_param, g->p.max_tokens, ec->max_context, n_prompt, ec->max_context - n_prompt);
        return NULL;
    }
    g->p.prompt = g->ids.v;
    g->p.n_prompt = n_prompt;
    engine_req_t *req = NULL;
    err_t err;
    switch (engine_submit(s->m.engine, &g->p, &req, &err)) {
    case ENGINE_OK: return req;
    case ENGINE_E_QUEUE_FULL:
        reply_error(r, 429, NULL, "%s; retry later", err.msg);
        r->retry_after = "1";
        return NULL;
    case ENGINE_E_DRAINING: reply_error(r, 503, NULL, "%s", err.msg); return NULL;
    case ENGINE_E_NOMEM: reply_error(r, 500, NULL, "%s", err.msg); return NULL;
    case ENGINE_E_TOO_LONG:
        reply_error(r, 400, g->has_max_tokens ? g->max_tokens_param : g->prompt_param, "%s", err.msg);
        return NULL;
    case ENGINE_E_INVALID: {
        /* the engine's message starts with the field it refuses */
        char param[32] = {0};
        sscanf(err.msg, "%31[a-z_]", param);
        reply_error(r, 400, param[0] ? param : NULL, "%s", err.msg);
        return NULL;
    }
    }
    return NULL;
}

/* A whole chat answer parsed into reasoning, content and tool calls: the
 * message OpenAI clients expect (content null when only calls came). */
static json_t *chat_choice(const char *text, size_t len, const structured_req_t *sr, engine_finish_t finish)
{
    out_parser_t p;
    out_delta_t d;
    out_parser_init(&p, sr);
    out_parser_feed(&p, text, len, true, &d);
    json_t *msg = json_pack("{s:s}", "role", "assistant");
    size_t n_content = d.n_content;
    if (p.n_calls)
        while (n_content && strchr(" \n\t\r", d.content[n_content - 1]))
            n_content--; /* the blank line before a call */
    if (p.n_calls && n_content == 0)
        json_object_set_new(msg, "content", json_null());
    else
        json_object_set_new(msg, "content", text_json(d.content ? d.content : "", n_content));
    if (d.reasoning)
        json_object_set_new(msg, "reasoning_content", text_json(d.reasoning, d.n_reasoning));
    if (p.n_calls) {
        json_t *calls = json_array();
        for (int i = 0; i < p.n_calls; i++)
            json_array_append_new(calls, out_call_json(&p, i, false));
        json_object_set_new(msg, "tool_calls", calls);
    }
    const char *why = p.n_calls && finish == ENGINE_FINISH_STOP ? "tool_calls" : finish_reason(finish);
    json_t *choice = json_pack("{s:i,s:o,s:n,s:s}", "index", 0, "message", msg, "logprobs", "finish_reason", why);
    out_delta_free(&d);
    out_parser_free(&p);
    return choice;
}

int api_collect(server_t *s, engine_req_t *req, char **text_out, size_t *len_out, api_done_t *done, reply_t *r)
{
    int64_t t0 = clock_now_ns(), t_prev = 0;
    char *text = NULL;
    size_t len = 0, cap = 0;
    engine_event_t ev;
    engine_finish_t finish = ENGINE_FINISH_NONE;
    char message[256] = "";
    *done = (api_done_t){.stop_index = -1};
    /* the client is checked every SERVER_CLIENT_POLL_NS: one that left has
     * its request cancelled rather than holding KV to max_tokens */
    bool is_client_gone = false;
    int64_t next_check = t0 + SERVER_CLIENT_POLL_NS;
    while (finish == ENGINE_FINISH_NONE) {
        int64_t wait = r->conn && !is_client_gone ? SERVER_CLIENT_POLL_NS : -1;
        int got = engine_next(req, &ev, wait);
        if (wait > 0 && clock_now_ns() >= next_check) {
            next_check = clock_now_ns() + SERVER_CLIENT_POLL_NS;
            if (http_client_gone(r->conn)) {
                is_client_gone = true;
                engine_cancel(req);
            }
        }
        if (!got)
            continue;
        if (ev.kind == ENGINE_EV_TOKEN) {
            if (!t_prev)
                lat_hist_add(&s->metrics.ttft, ev.time_ns - t0);
            else
                lat_hist_add(&s->metrics.itl, ev.time_ns - t_prev);
            t_prev = ev.time_ns;
            if (len + ev.text_len > cap) {
                size_t nc = cap ? cap : 256;
                while (nc < len + ev.text_len)
                    nc *= 2;
                char *t = realloc(text, nc);
                if (t) {
                    text = t;
                    cap = nc;
                }
            }
            /* a token may complete no text yet (held back for a stop string,
             * or part of a UTF-8 sequence): then text can still be NULL */
            if (ev.text_len && len + ev.text_len <= cap) {
                memcpy(text + len, ev.text, ev.text_len);
                len += ev.text_len;
            }
        } else if (ev.kind == ENGINE_EV_DONE) {
            finish = ev.finish;
            done->finish = ev.finish;
            done->usage = ev.usage;
            done->stop_index = ev.stop_index;
            if (ev.message)
                snprintf(message, sizeof message, "%s", ev.message);
        }
        engine_event_clear(&ev);
    }
    engine_release(req);
    lat_hist_add(&s->metrics.e2e, clock_now_ns() - t0);
    if (is_client_gone && finish == ENGINE_FINISH_CANCELLED) {
        /* nobody reads this; nginx's "client closed request" in the metrics */
        reply_error(r, 499, NULL, "the client closed the connection before the answer");
    } else if (finish == ENGINE_FINISH_TIMEOUT) {
        reply_error(r, 408, NULL, "the request took longer than --request-timeout (%d s)", s->cfg.request_timeout_s);
    } else if (finish == ENGINE_FINISH_CANCELLED) {
        reply_error(r, 503, NULL, "the request was cancelled: the server is shutting down");
    } else if (finish == ENGINE_FINISH_ERROR || finish == ENGINE_FINISH_NONE) {
        reply_error(r, 500, NULL, "generation failed: %s", message);
    } else {
        atomic_fetch_add(&s->metrics.completions, 1);
        *text_out = text;
        *len_out = len;
        return 0;
    }
    free(text);
    return -1;
}

/* Waits for the whole answer. */
static void respond_whole(server_t *s, engine_req_t *req, bool is_chat, const structured_req_t *sr, reply_t *r)
{
    char *text = NULL;
    size_t len = 0;
    api_done_t done;
    if (api_collect(s, req, &text, &len, &done, r))
        return;
    char id[64];
    make_id(s, is_chat ? "chatcmpl" : "cmpl", id, sizeof id);
    json_t *choice;
    if (is_chat) {
        choice = chat_choice(text ? text : "", len, sr, done.finish);
    } else {
        choice = json_pack("{s:i,s:o,s:n,s:s}", "index", 0, "text", text_json(text ? text : "", len), "logprobs",
                           "finish_reason", finish_reason(done.finish));
    }
    r->body = json_pack("{s:s,s:s,s:I,s:s,s:[o],s:o}", "id", id, "object",
                        is_chat ? "chat.completion" : "text_completion", "created", (json_int_t)time(NULL), "model",
                        s->m.id, "choices", choice, "usage", usage_json(&done.usage));
    free(text);
}

/* ---- SSE ---- */

struct sse {
    server_t *s;
    engine_req_t *req;
    bool is_chat;
    bool include_usage;
    bool is_started; /* the role chunk (chat) went out */
    char id[64];
    int64_t created;
    int64_t t0, t_prev;
    sse_buf_t out;       /* framed events not yet handed to the client ([DONE] queued: out.is_done) */
    out_parser_t parser; /* chat: reasoning, content and tool calls out of the text */
};

/* A chat chunk with a ready delta object. */
static json_t *sse_delta_chunk(sse_t *st, json_t *delta, const char *finish)
{
    json_t *choice = json_pack("{s:i,s:o,s:n,s:s?}", "index", 0, "delta", delta, "logprobs", "finish_reason", finish);
    json_t *c = json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", st->id, "object", "chat.completion.chunk", "created",
                          (json_int_t)st->created, "model", st->s->m.id, "choices", choice);
    if (st->include_usage)
        json_object_set_new(c, "usage", json_null());
    return c;
}

/* Chat text through the parser: reasoning and content deltas, then each
 * completed tool call as two tool_calls deltas (index, id and name, then
 * the arguments). */
static void sse_chat_text(sse_t *st, const char *text, size_t len, bool is_end)
{
    out_delta_t d;
    out_parser_feed(&st->parser, text, len, is_end, &d);
    if (d.n_reasoning)
        sse_buf_event(
            &st->out, NULL,
            sse_delta_chunk(st, json_pack("{s:o}", "reasoning_content", text_json(d.reasoning, d.n_reasoning)), NULL));
    if (d.n_content)
        sse_buf_event(&st->out, NULL,
                      sse_delta_chunk(st, json_pack("{s:o}", "content", text_json(d.content, d.n_content)), NULL));
    for (int i = d.first_call; i < d.first_call + d.n_new_calls; i++) {
        const tool_call_out_t *c = &st->parser.calls[i];
        sse_buf_event(
            &st->out, NULL,
            sse_delta_chunk(st,
                            json_pack("{s:[{s:i,s:s,s:s,s:{s:s,s:s}}]}", "tool_calls", "index", i, "id", c->id, "type",
                                      "function", "function", "name", c->name, "arguments", ""),
                            NULL));
        sse_buf_event(&st->out, NULL,
                      sse_delta_chunk(st,
                                      json_pack("{s:[{s:i,s:{s:s}}]}", "tool_calls", "index", i, "function",
                                                "arguments", c->arguments),
                                      NULL));
    }
    out_delta_free(&d);
}

/* One chunk: delta text (or NULL) and finish reason (or NULL). */
static json_t *sse_chunk(sse_t *st, const char *text, size_t len, const char *finish, bool with_role)
{
    json_t *choice;
    if (st->is_chat) {
        json_t *delta = json_object();
        if (with_role)
            json_object_set_new(delta, "role", json_string("assistant"));
        if (text)
            json_object_set_new(delta, "content", text_json(text, len));
        choice = json_pack("{s:i,s:o,s:n,s:s?}", "index", 0, "delta", delta, "logprobs", "finish_reason", finish);
    } else {
        choice = json_pack("{s:i,s:o,s:n,s:s?}", "index", 0, "text", text_json(text ? text : "", text ? len : 0),
                           "logprobs", "finish_reason", finish);
    }
    json_t *c = json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", st->id, "object",
                          st->is_chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)st->created,
                          "model", st->s->m.id, "choices", choice);
    if (st->include_usage)
        json_object_set_new(c, "usage", json_null());
    return c;
}

/* Fills the pending buffer with what the next event gives. */
static void sse_pump(sse_t *st)
{
    if (st->is_chat && !st->is_started) {
        st->is_started = true;
        sse_buf_event(&st->out, NULL, sse_chunk(st, "", 0, NULL, true));
        return;
    }
    engine_event_t ev;
    if (engine_next(st->req, &ev, SERVER_KEEPALIVE_NS) == 0) {
        /* nothing for a while (a long prefill): a comment keeps proxies and
         * clients waiting, and finds out whether the client is still there */
        sse_buf_put(&st->out, ": keep-alive\n\n", 14);
        return;
    }
    if (ev.kind == ENGINE_EV_TOKEN) {
        if (!st->t_prev)
            lat_hist_add(&st->s->metrics.ttft, ev.time_ns - st->t0);
        else
            lat_hist_add(&st->s->metrics.itl, ev.time_ns - st->t_prev);
        st->t_prev = ev.time_ns;
        if (ev.text_len && st->is_chat)
            sse_chat_text(st, ev.text, ev.text_len, false);
        else if (ev.text_len)
            sse_buf_event(&st->out, NULL, sse_chunk(st, ev.text, ev.text_len, NULL, false));
    } else if (ev.kind == ENGINE_EV_DONE) {
        lat_hist_add(&st->s->metrics.e2e, clock_now_ns() - st->t0);
        if (ev.finish == ENGINE_FINISH_STOP || ev.finish == ENGINE_FINISH_LENGTH) {
            const char *why = finish_reason(ev.finish);
            if (st->is_chat) {
                sse_chat_text(st, ev.text ? ev.text : "", ev.text ? ev.text_len : 0, true);
                why = st->parser.n_calls && ev.finish == ENGINE_FINISH_STOP ? "tool_calls" : why;
            }
            sse_buf_event(&st->out, NULL, sse_chunk(st, NULL, 0, why, false));
            atomic_fetch_add(&st->s->metrics.completions, 1);
        } else {
            /* the response is already 200: the error goes in the stream */
            const char *why = ev.finish == ENGINE_FINISH_TIMEOUT     ? "the request took longer than --request-timeout"
                              : ev.finish != ENGINE_FINISH_CANCELLED ? "generation failed"
                              : atomic_load(&st->s->is_draining)
                                  ? "the request was cancelled: the server is shutting down"
                                  : "the request was cancelled";
            sse_buf_event(&st->out, NULL,
                          json_pack("{s:{s:s,s:s,s:n,s:s}}", "error", "message", why, "type", "server_error", "param",
                                    "code", engine_finish_name(ev.finish)));
        }
        if (st->include_usage) {
            json_t *c =
                json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", st->id, "object",
                          st->is_chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)st->created,
                          "model", st->s->m.id, "choices", "usage", usage_json(&ev.usage));
            sse_buf_event(&st->out, NULL, c);
        }
        sse_buf_put(&st->out, "data: [DONE]\n\n", 14);
        st->out.is_done = true;
    }
    engine_event_clear(&ev);
}

static void sse_pump_cb(void *cls)
{
    sse_pump(cls);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sse_t *st = cls;
    return sse_buf_read(&st->out, buf, max, sse_pump_cb, st);
}

static void sse_free(void *cls)
{
    sse_t *st = cls;
    engine_release(st->req); /* cancels it if the client left early; its blocks go back at the next step */
    out_parser_free(&st->parser);
    sse_buf_free(&st->out);
    free(st);
}

static void respond(server_t *s, gen_req_t *g, bool is_chat, reply_t *r)
{
    engine_req_t *req = submit(s, g, r);
    if (!req)
        return;
    if (!g->is_stream) {
        respond_whole(s, req, is_chat, &g->sr, r);
        return;
    }
    sse_t *st = calloc(1, sizeof *st);
    if (!st) {
        engine_release(req);
        reply_error(r, 500, NULL, "out of memory");
        return;
    }
    st->s = s;
    st->req = req;
    st->is_chat = is_chat;
    out_parser_init(&st->parser, &g->sr);
    st->include_usage = g->include_usage;
    st->created = (int64_t)time(NULL);
    st->t0 = clock_now_ns();
    make_id(s, is_chat ? "chatcmpl" : "cmpl", st->id, sizeof st->id);
    atomic_fetch_add(&s->metrics.streamed, 1);
    r->stream = st;
    r->stream_read = sse_read;
    r->stream_free = sse_free;
}

/* ---- endpoints ---- */

static const char *const common_fields[] = {"model",
                                            "max_tokens",
                                            "temperature",
                                            "top_p",
                                            "top_k",
                                            "min_p",
                                            "seed",
                                            "stop",
                                            "presence_penalty",
                                            "frequency_penalty",
                                            "repetition_penalty",
                                            "ignore_eos",
                                            "cache_salt",
                                            "response_format",
                                            "grammar",
                                            "stream",
                                            "stream_options",
                                            "n",
                                            "logprobs",
                                            "top_logprobs",
                                            "logit_bias",
                                            "user",
                                            NULL};

static int check_gen_fields(const json_t *req, const char *const *extra, reply_t *r)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)req, key, v)
    {
        if (!in_list(key, common_fields) && !in_list(key, extra)) {
            reply_error(r, 400, key, "unknown or unsupported parameter '%s'", key);
            return -1;
        }
    }
    return 0;
}

/* A chat request validated, rendered and tokenised: into g (count_only:
 * only g->ids). The Anthropic dialect builds such a request too. */
static int chat_prepare(server_t *s, json_t *req, gen_req_t *g, bool count_only, reply_t *r)
{
    static const char *const extra[] = {"messages",    "max_completion_tokens", "tools",
                                        "tool_choice", "parallel_tool_calls",   "chat_template_kwargs",
                                        NULL};
    if (check_gen_fields(req, extra, r) || parse_common(s, req, g, r))
        return -1;
    if (!json_object_get(req, "messages")) {
        reply_error(r, 400, "messages", "'messages' is required");
        return -1;
    }
    size_t len = 0;
    char *text = render_chat(req, true, &len, r);
    if (!text)
        return -1;
    if (!count_only && structured_parse(s, req, true, enable_thinking(req), &g->sr, r)) {
        free(text);
        return -1;
    }
    g->p.constraint = g->sr.spec;
    err_t err;
    /* the rendered template holds control tokens (<|im_start|>): parsed as such */
    int rc = tok_encode(s->m.tok, text, len, true, &g->ids, &err);
    free(text);
    if (rc) {
        reply_error(r, 400, "messages", "%s", err.msg);
        structured_free(&g->sr);
        tok_ids_free(&g->ids);
        return -1;
    }
    return 0;
}

void api_chat(server_t *s, json_t *req, reply_t *r)
{
    gen_req_t g = {.prompt_param = "messages"};
    if (chat_prepare(s, req, &g, false, r))
        return;
    respond(s, &g, true, r);
    tok_ids_free(&g.ids);
    structured_free(&g.sr);
}

int api_chat_submit(server_t *s, json_t *req, api_job_t *job, reply_t *r)
{
    gen_req_t g = {.prompt_param = "messages"};
    memset(job, 0, sizeof *job);
    if (chat_prepare(s, req, &g, false, r))
        return -1;
    job->n_prompt = (int)g.ids.n;
    job->req = submit(s, &g, r);
    tok_ids_free(&g.ids);
    if (!job->req) {
        structured_free(&g.sr);
        return -1;
    }
    job->sr = g.sr;
    job->is_stream = g.is_stream;
    return 0;
}

int api_chat_count(server_t *s, json_t *req, int *n_tokens, reply_t *r)
{
    gen_req_t g = {.prompt_param = "messages"};
    if (chat_prepare(s, req, &g, true, r))
        return -1;
    *n_tokens = (int)g.ids.n;
    tok_ids_free(&g.ids);
    return 0;
}

/* A prompt: a string (encoded; special-token text stays text unless it is
 * the model's own control token, as llama.cpp's server does) or an array of
 * token ids (or a one-element array of either). */
static int parse_prompt(server_t *s, const json_t *v, const char *param, tok_ids_t *ids, reply_t *r)
{
    if (json_is_array(v) && json_array_size(v) == 1 &&
        (json_is_string(json_array_get(v, 0)) || json_is_array(json_array_get(v, 0))))
        v = json_array_get(v, 0);
    if (json_is_string(v)) {
        err_t err;
        if (tok_encode(s->m.tok, json_string_value(v), json_string_length(v), true, ids, &err)) {
            reply_error(r, 400, param, "%s", err.msg);
            return -1;
        }
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) > API_MAX_TOKEN_IDS) {
        reply_error(r, 400, param,
                    "'%s' must be a string or an array of token ids (one prompt; n > 1 prompts are "
                    "not supported)",
                    param);
        return -1;
    }
    size_t n = json_array_size(v);
    ids->v = malloc((n ? n : 1) * sizeof *ids->v);
    if (!ids->v) {
        reply_error(r, 500, NULL, "out of memory");
        return -1;
    }
    ids->cap = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= s->m.model->cfg.vocab) {
            reply_error(r, 400, param, "%s[%zu] must be a token id in [0, %d)", param, i, s->m.model->cfg.vocab);
            return -1;
        }
        ids->v[ids->n++] = (int32_t)json_integer_value(e);
    }
    return 0;
}

void api_completions(server_t *s, json_t *req, reply_t *r)
{
    static const char *const extra[] = {"prompt", "echo", "suffix", "best_of", NULL};
    gen_req_t g = {.prompt_param = "prompt"};
    if (check_gen_fields(req, extra, r) || parse_common(s, req, &g, r))
        return;
    bool echo = false;
    json_int_t best_of = 1;
    if (get_bool(req, "echo", &echo, r) || get_int(req, "best_of", 1, 1, &best_of, NULL, r))
        return;
    if (echo) {
        reply_error(r, 400, "echo", "echo is not supported");
        return;
    }
    const json_t *suffix = json_object_get(req, "suffix");
    if (suffix && !json_is_null(suffix)) {
        reply_error(r, 400, "suffix", "suffix is not supported");
        return;
    }
    const json_t *prompt = json_object_get(req, "prompt");
    if (!prompt) {
        reply_error(r, 400, "prompt", "'prompt' is required");
        return;
    }
    if (g.has_max_tokens == false)
        g.p.max_tokens = 16, g.has_max_tokens = true; /* the OpenAI completions default */
    if (structured_parse(s, req, false, -1, &g.sr, r))
        return;
    g.p.constraint = g.sr.spec;
    if (parse_prompt(s, prompt, "prompt", &g.ids, r) == 0)
        respond(s, &g, false, r);
    tok_ids_free(&g.ids);
    structured_free(&g.sr);
}

void api_tokenize(server_t *s, json_t *req, reply_t *r)
{
    static const char *const fields[] = {
        "model", "prompt", "messages", "add_special_tokens", "add_generation_prompt", "tools", "chat_template_kwargs",
        NULL};
    if (check_fields(req, fields, r) || check_model(s, req, r))
        return;
    const json_t *prompt = json_object_get(req, "prompt"), *msgs = json_object_get(req, "messages");
    if (!!prompt == !!msgs) {
        reply_error(r, 400, prompt ? "messages" : "prompt", "give exactly one of 'prompt' and 'messages'");
        return;
    }
    bool add_special = true;
    if (get_bool(req, "add_special_tokens", &add_special, r))
        return;
    tok_ids_t ids = {0};
    err_t err;
    if (prompt) {
        if (!json_is_string(prompt)) {
            reply_error(r, 400, "prompt", "'prompt' must be a string");
            return;
        }
        if (tok_encode(s->m.tok, json_string_value(prompt), json_string_length(prompt), add_special, &ids, &err)) {
            reply_error(r, 400, "prompt", "%s", err.msg);
            return;
        }
    } else {
        size_t len = 0;
        char *text = render_chat(req, true, &len, r);
        if (!text)
            return;
        int rc = tok_encode(s->m.tok, text, len, true, &ids, &err);
        free(text);
        if (rc) {
            reply_error(r, 400, "messages", "%s", err.msg);
            return;
        }
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < ids.n; i++)
        json_array_append_new(arr, json_integer(ids.v[i]));
    r->body = json_pack("{s:o,s:I,s:i}", "tokens", arr, "count", (json_int_t)ids.n, "max_model_len",
                        engine_get_config(s->m.engine)->max_context);
    tok_ids_free(&ids);
}

void api_detokenize(server_t *s, json_t *req, reply_t *r)
{
    static const char *const fields[] = {"model", "tokens", NULL};
    if (check_fields(req, fields, r) || check_model(s, req, r))
        return;
    const json_t *toks = json_object_get(req, "tokens");
    if (!toks) {
        reply_error(r, 400, "tokens", "'tokens' is required");
        return;
    }
    tok_ids_t ids = {0};
    if (parse_prompt(s, json_is_array(toks) ? toks : NULL, "tokens", &ids, r) == 0) {
        char *text = NULL;
        size_t len = 0;
        err_t err;
        if (tok_decode(s->m.tok, ids.v, ids.n, &text, &len, &err))
            reply_error(r, 400, "tokens", "%s", err.msg);
        else
            r->body = json_pack("{s:o}", "prompt", text_json(text, len));
        free(text);
    }
    tok_ids_free(&ids);
}

void api_apply_template(server_t *s, json_t *req, reply_t *r)
{
    static const char *const fields[] = {"model", "messages", "tools", "add_generation_prompt", "chat_template_kwargs",
                                         NULL};
    if (check_fields(req, fields, r) || check_model(s, req, r))
        return;
    if (!json_object_get(req, "messages")) {
        reply_error(r, 400, "messages", "'messages' is required");
        return;
    }
    size_t len = 0;
    char *text = render_chat(req, true, &len, r);
    if (!text)
        return;
    r->body = json_pack("{s:o}", "prompt", text_json(text, len));
    free(text);
}

void api_models(server_t *s, reply_t *r)
{
    r->body = json_pack("{s:s,s:[{s:s,s:s,s:I,s:s,s:i}]}", "object", "list", "data", "id", s->m.id, "object", "model",
                        "created", (json_int_t)s->started_unix, "owned_by", "splash", "max_model_len",
                        engine_get_config(s->m.engine)->max_context);
}
