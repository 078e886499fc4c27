/* Chat and text completion answers: n choices, each its own engine request,
 * collected or streamed, with log-probabilities (choices.h). */
#include "server/choices.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "server/dialect.h"
#include "server/sse.h"

#define CHOICES_POLL_NS                                                                                                \
    20000000LL                /* n > 1 streams: how long the pump waits on one choice before looking at the others */
#define LOGPROB_FLOOR -9999.0 /* a log-probability JSON cannot hold (-inf): OpenAI's stand-in */

typedef struct choice {
    engine_req_t *req;
    char *text; /* whole answers: the text so far */
    size_t len, cap;
    json_t *lp;    /* whole: every token's entry; streams: entries not yet sent (NULL: none) */
    size_t offset; /* completions: text_offset of the next token */
    engine_finish_t finish;
    engine_usage_t usage;
    char message[160];
    bool is_done;
    out_parser_t parser;   /* chat streams: reasoning, content and tool calls out of the text */
    think_counter_t think; /* chat: reasoning tokens as generated */
} choice_t;

typedef struct gen {
    server_t *s;
    bool is_chat, is_stream, include_usage, logprobs;
    bool is_thinking; /* chat with <think> parsed out: usage counts reasoning tokens */
    int n;
    const structured_req_t *sr; /* whole answers only (the request outlives the collection) */
    char id[64];
    int64_t created, t0, t_prev;
    sse_buf_t out; /* framed events not yet handed to the client */
    int rr;        /* the choice the pump looks at first */
    int64_t idle_ns;
    choice_t ch[API_MAX_CHOICES];
} gen_t;

void gen_req_free(gen_req_t *g)
{
    tok_ids_free(&g->ids);
    structured_free(&g->sr);
    free(g->bias);
    free(g->echo);
    g->bias = NULL;
    g->echo = NULL;
}

uint64_t gen_choice_seed(uint64_t seed, int i)
{
    if (i == 0)
        return seed;
    uint64_t z = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static const char *finish_reason(engine_finish_t f)
{
    return f == ENGINE_FINISH_LENGTH ? "length" : "stop";
}

static json_t *usage_json(const gen_t *g, const engine_usage_t *u)
{
    json_t *j = json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", u->prompt_tokens, "completion_tokens",
                          u->completion_tokens, "total_tokens", u->prompt_tokens + u->completion_tokens,
                          "prompt_tokens_details", "cached_tokens", u->cached_tokens);
    if (j && g->is_chat) { /* OpenAI's completion_tokens_details, summed over the choices */
        int reasoning = 0;
        for (int i = 0; g->is_thinking && i < g->n; i++)
            reasoning += g->ch[i].think.n;
        json_object_set_new(j, "completion_tokens_details", json_pack("{s:i}", "reasoning_tokens", reasoning));
    }
    return j;
}

/* The prompt once (choice 0's, with its cached tokens), completions summed. */
static engine_usage_t usage_sum(const gen_t *g)
{
    engine_usage_t u = g->ch[0].usage;
    for (int i = 1; i < g->n; i++)
        u.completion_tokens += g->ch[i].usage.completion_tokens;
    return u;
}

engine_req_t *gen_submit(server_t *s, gen_req_t *g, reply_t *r)
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
    case ENGINE_E_NOMEM: /* the server is short of memory now, not the request wrong */
        reply_error(r, 503, NULL, "%s; retry later", err.msg);
        r->retry_after = "1";
        return NULL;
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

/* ---- log-probabilities ---- */

static json_t *logprob_json(float lp)
{
    return json_real(isfinite(lp) ? (double)lp : LOGPROB_FLOOR);
}

/* A token's text (lossy UTF-8) and, when bytes is not NULL, its raw bytes. */
static json_t *token_text(const gen_t *g, int32_t id, json_t **bytes)
{
    char buf[512];
    size_t n = vocab_token_bytes(g->s->m.vocab, id, buf, sizeof buf);
    if (bytes) {
        *bytes = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(*bytes, json_integer((unsigned char)buf[i]));
    }
    return text_json(buf, n);
}

static json_t *chat_lp_one(const gen_t *g, int32_t id, float lp)
{
    json_t *bytes, *tok = token_text(g, id, &bytes);
    return json_pack("{s:o,s:o,s:o}", "token", tok, "logprob", logprob_json(lp), "bytes", bytes);
}

/* Chat: {"token","logprob","bytes","top_logprobs":[...]} appended to arr. */
static void chat_lp_add(const gen_t *g, json_t *arr, const engine_event_t *ev)
{
    json_t *e = chat_lp_one(g, ev->token, ev->logprob), *top = json_array();
    for (int i = 0; i < ev->n_top; i++)
        json_array_append_new(top, chat_lp_one(g, ev->top[i].id, ev->top[i].logprob));
    json_object_set_new(e, "top_logprobs", top);
    json_array_append_new(arr, e);
}

/* Completions: one more position of {"tokens","token_logprobs","top_logprobs","text_offset"}. */
static void text_lp_add(const gen_t *g, json_t *obj, const engine_event_t *ev, size_t *offset)
{
    char buf[512];
    size_t n = vocab_token_bytes(g->s->m.vocab, ev->token, buf, sizeof buf);
    json_array_append_new(json_object_get(obj, "tokens"), text_json(buf, n));
    json_array_append_new(json_object_get(obj, "token_logprobs"), logprob_json(ev->logprob));
    json_t *top = json_object();
    for (int i = 0; i < ev->n_top; i++) {
        json_t *t = token_text(g, ev->top[i].id, NULL);
        if (!json_object_get(top, json_string_value(t))) /* two ids with one text: the likelier */
            json_object_set_new(top, json_string_value(t), logprob_json(ev->top[i].logprob));
        json_decref(t);
    }
    json_array_append_new(json_object_get(obj, "top_logprobs"), top);
    json_array_append_new(json_object_get(obj, "text_offset"), json_integer((json_int_t)*offset));
    *offset += n;
}

static json_t *text_lp_new(void)
{
    return json_pack("{s:[],s:[],s:[],s:[]}", "tokens", "token_logprobs", "top_logprobs", "text_offset");
}

/* A token event's entry into choice c's list (started when empty). */
static void lp_add(gen_t *g, choice_t *c, const engine_event_t *ev)
{
    if (!g->logprobs || !ev->has_logprob)
        return;
    if (!c->lp)
        c->lp = g->is_chat ? json_array() : text_lp_new();
    if (g->is_chat)
        chat_lp_add(g, c->lp, ev);
    else
        text_lp_add(g, c->lp, ev, &c->offset);
}

/* The choice's "logprobs" value: the entries gathered (taken), or null;
 * with logprobs on and nothing gathered, an empty list. */
static json_t *lp_take(gen_t *g, choice_t *c)
{
    if (!g->logprobs)
        return json_null();
    json_t *lp = c->lp ? c->lp : g->is_chat ? json_array() : text_lp_new();
    c->lp = NULL;
    return g->is_chat ? json_pack("{s:o,s:n}", "content", lp, "refusal") : lp;
}

/* ---- whole answers ---- */

/* A whole chat answer parsed into reasoning, content and tool calls: the
 * message OpenAI clients expect (content null when only calls came). */
static json_t *chat_choice(gen_t *g, int i)
{
    choice_t *c = &g->ch[i];
    out_parser_t p;
    out_delta_t d;
    out_parser_init(&p, g->sr);
    out_parser_feed(&p, c->text ? c->text : "", c->len, true, &d);
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
        for (int k = 0; k < p.n_calls; k++)
            json_array_append_new(calls, out_call_json(&p, k, false));
        json_object_set_new(msg, "tool_calls", calls);
    }
    const char *why = p.n_calls && c->finish == ENGINE_FINISH_STOP ? "tool_calls" : finish_reason(c->finish);
    json_t *choice =
        json_pack("{s:i,s:o,s:o,s:s}", "index", i, "message", msg, "logprobs", lp_take(g, c), "finish_reason", why);
    out_delta_free(&d);
    out_parser_free(&p);
    return choice;
}

static void text_append(choice_t *c, const char *text, size_t len)
{
    if (!len)
        return; /* the buffer may not exist yet */
    if (c->len + len > c->cap) {
        size_t nc = c->cap ? c->cap : 256;
        while (nc < c->len + len)
            nc *= 2;
        char *t = realloc(c->text, nc);
        if (!t)
            return; /* out of memory: the text comes back short */
        c->text = t;
        c->cap = nc;
    }
    memcpy(c->text + c->len, text, len);
    c->len += len;
}

static void stream_token(gen_t *g, int i, const engine_event_t *ev);
static void stream_done(gen_t *g, int i, const engine_event_t *ev);

/* One event of choice i: latencies (choice 0's), then the answer's state. */
static void on_event(gen_t *g, int i, const engine_event_t *ev)
{
    choice_t *c = &g->ch[i];
    if (ev->kind == ENGINE_EV_TOKEN) {
        think_counter_feed(&c->think, ev->text, ev->text_len);
        if (i == 0 && !g->t_prev)
            lat_hist_add(&g->s->metrics.ttft, ev->time_ns - g->t0);
        else if (i == 0)
            lat_hist_add(&g->s->metrics.itl, ev->time_ns - g->t_prev);
        if (i == 0)
            g->t_prev = ev->time_ns;
        if (g->is_stream) {
            stream_token(g, i, ev);
        } else {
            lp_add(g, c, ev);
            if (ev->text_len) /* a token may complete no text yet */
                text_append(c, ev->text, ev->text_len);
        }
    } else if (ev->kind == ENGINE_EV_DONE) {
        c->is_done = true;
        c->finish = ev->finish;
        c->usage = ev->usage;
        if (ev->message)
            snprintf(c->message, sizeof c->message, "%s", ev->message);
        if (g->is_stream)
            stream_done(g, i, ev);
    }
}

/* Waits for every choice and builds the response (or the error reply of
 * the first choice that failed). */
static void respond_whole(gen_t *g, reply_t *r)
{
    server_t *s = g->s;
    engine_event_t ev;
    /* the client is checked every SERVER_CLIENT_POLL_NS: one that left has
     * every choice cancelled rather than holding KV to max_tokens */
    bool is_client_gone = false;
    int64_t next_check = g->t0 + SERVER_CLIENT_POLL_NS;
    for (int i = 0; i < g->n; i++) {
        while (!g->ch[i].is_done) {
            int64_t wait = r->conn && !is_client_gone ? SERVER_CLIENT_POLL_NS : -1;
            int got = engine_next(g->ch[i].req, &ev, wait);
            if (wait > 0 && clock_now_ns() >= next_check) {
                next_check = clock_now_ns() + SERVER_CLIENT_POLL_NS;
                if (http_client_gone(r->conn)) {
                    is_client_gone = true;
                    for (int j = 0; j < g->n; j++)
                        engine_cancel(g->ch[j].req);
                }
            }
            if (got == 0)
                continue;
            on_event(g, i, &ev);
            engine_event_clear(&ev);
        }
    }
    lat_hist_add(&s->metrics.e2e, clock_now_ns() - g->t0);
    for (int i = 0; i < g->n; i++) {
        engine_finish_t f = g->ch[i].finish;
        if (is_client_gone && f == ENGINE_FINISH_CANCELLED) {
            /* nobody reads this; nginx's "client closed request" in the metrics */
            reply_error(r, 499, NULL, "the client closed the connection before the answer");
            return;
        } else if (f == ENGINE_FINISH_TIMEOUT) {
            reply_error(r, 408, NULL, "the request took longer than --request-timeout (%d s)",
                        s->cfg.request_timeout_s);
            return;
        } else if (f == ENGINE_FINISH_CANCELLED) {
            reply_error(r, 503, NULL, "the request was cancelled: the server is shutting down");
            return;
        } else if (f != ENGINE_FINISH_STOP && f != ENGINE_FINISH_LENGTH) {
            reply_error(r, 500, NULL, "generation failed: %s", g->ch[i].message);
            return;
        }
    }
    atomic_fetch_add(&s->metrics.completions, 1);
    json_t *choices = json_array();
    for (int i = 0; i < g->n; i++) {
        choice_t *c = &g->ch[i];
        if (g->is_chat)
            json_array_append_new(choices, chat_choice(g, i));
        else
            json_array_append_new(choices, json_pack("{s:i,s:o,s:o,s:s}", "index", i, "text",
                                                     text_json(c->text ? c->text : "", c->len), "logprobs",
                                                     lp_take(g, c), "finish_reason", finish_reason(c->finish)));
    }
    engine_usage_t u = usage_sum(g);
    r->body = json_pack("{s:s,s:s,s:I,s:s,s:o,s:o}", "id", g->id, "object",
                        g->is_chat ? "chat.completion" : "text_completion", "created", (json_int_t)g->created, "model",
                        s->m.id, "choices", choices, "usage", usage_json(g, &u));
}

/* ---- streams ---- */

/* One chunk for choice i: a chat delta (or a completions text when delta
 * is NULL), with the log-probabilities gathered so far. */
static json_t *chunk(gen_t *g, int i, json_t *delta, const char *text, size_t len, const char *finish)
{
    choice_t *c = &g->ch[i];
    json_t *lp = c->lp ? lp_take(g, c) : json_null();
    json_t *choice;
    if (g->is_chat)
        choice = json_pack("{s:i,s:o,s:o,s:s?}", "index", i, "delta", delta ? delta : json_object(), "logprobs", lp,
                           "finish_reason", finish);
    else
        choice = json_pack("{s:i,s:o,s:o,s:s?}", "index", i, "text", text_json(text ? text : "", text ? len : 0),
                           "logprobs", lp, "finish_reason", finish);
    json_t *ch = json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", g->id, "object",
                           g->is_chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)g->created,
                           "model", g->s->m.id, "choices", choice);
    if (g->include_usage)
        json_object_set_new(ch, "usage", json_null());
    return ch;
}

static void put_delta(gen_t *g, int i, json_t *delta)
{
    sse_buf_event(&g->out, NULL, chunk(g, i, delta, NULL, 0, NULL));
}

/* Chat text through choice i's parser: reasoning and content deltas, then
 * each completed tool call as two tool_calls deltas (index, id and name,
 * then the arguments). */
static void chat_text(gen_t *g, int i, const char *text, size_t len, bool is_end)
{
    out_parser_t *p = &g->ch[i].parser;
    out_delta_t d;
    out_parser_feed(p, text, len, is_end, &d);
    if (d.n_reasoning)
        put_delta(g, i, json_pack("{s:o}", "reasoning_content", text_json(d.reasoning, d.n_reasoning)));
    if (d.n_content)
        put_delta(g, i, json_pack("{s:o}", "content", text_json(d.content, d.n_content)));
    for (int k = d.first_call; k < d.first_call + d.n_new_calls; k++) {
        const tool_call_out_t *c = &p->calls[k];
        put_delta(g, i,
                  json_pack("{s:[{s:i,s:s,s:s,s:{s:s,s:s}}]}", "tool_calls", "index", k, "id", c->id, "type",
                            "function", "function", "name", c->name, "arguments", ""));
        put_delta(g, i,
                  json_pack("{s:[{s:i,s:{s:s}}]}", "tool_calls", "index", k, "function", "arguments", c->arguments));
    }
    out_delta_free(&d);
}

static void stream_token(gen_t *g, int i, const engine_event_t *ev)
{
    lp_add(g, &g->ch[i], ev); /* goes out with the next chunk of this choice */
    if (ev->text_len && g->is_chat)
        chat_text(g, i, ev->text, ev->text_len, false);
    else if (ev->text_len)
        sse_buf_event(&g->out, NULL, chunk(g, i, NULL, ev->text, ev->text_len, NULL));
}

static bool all_done(const gen_t *g)
{
    for (int i = 0; i < g->n; i++)
        if (!g->ch[i].is_done)
            return false;
    return true;
}

/* Choice i ended: its last chunk; once every choice has, usage and [DONE].
 * A failed choice ends the stream at once with an error event (the
 * response is already 200); the others are cancelled when it is freed. */
static void stream_done(gen_t *g, int i, const engine_event_t *ev)
{
    if (ev->finish == ENGINE_FINISH_STOP || ev->finish == ENGINE_FINISH_LENGTH) {
        const char *why = finish_reason(ev->finish);
        if (g->is_chat) {
            chat_text(g, i, ev->text ? ev->text : "", ev->text ? ev->text_len : 0, true);
            why = g->ch[i].parser.n_calls && ev->finish == ENGINE_FINISH_STOP ? "tool_calls" : why;
        }
        sse_buf_event(&g->out, NULL, chunk(g, i, NULL, NULL, 0, why));
        if (!all_done(g))
            return;
        atomic_fetch_add(&g->s->metrics.completions, 1);
    } else {
        const char *why = ev->finish == ENGINE_FINISH_TIMEOUT     ? "the request took longer than --request-timeout"
                          : ev->finish != ENGINE_FINISH_CANCELLED ? "generation failed"
                          : atomic_load(&g->s->is_draining) ? "the request was cancelled: the server is shutting down"
                                                            : "the request was cancelled";
        sse_buf_event(&g->out, NULL,
                      json_pack("{s:{s:s,s:s,s:n,s:s}}", "error", "message", why, "type", "server_error", "param",
                                "code", engine_finish_name(ev->finish)));
    }
    lat_hist_add(&g->s->metrics.e2e, clock_now_ns() - g->t0);
    if (g->include_usage && all_done(g)) {
        engine_usage_t u = usage_sum(g);
        sse_buf_event(&g->out, NULL,
                      json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", g->id, "object",
                                g->is_chat ? "chat.completion.chunk" : "text_completion", "created",
                                (json_int_t)g->created, "model", g->s->m.id, "choices", "usage", usage_json(g, &u)));
    }
    sse_buf_put(&g->out, "data: [DONE]\n\n", 14);
    g->out.is_done = true;
}

/* Fills the pending buffer with what the next event of any choice gives
 * (round robin, so one busy choice cannot starve the others' chunks). */
static void pump(void *cls)
{
    gen_t *g = cls;
    engine_event_t ev;
    int live = -1;
    for (int k = 0; k < g->n; k++) {
        int i = (g->rr + k) % g->n;
        if (g->ch[i].is_done)
            continue;
        if (live < 0)
            live = i;
        if (g->n > 1 && engine_next(g->ch[i].req, &ev, 0) == 1) {
            g->rr = (i + 1) % g->n;
            on_event(g, i, &ev);
            engine_event_clear(&ev);
            g->idle_ns = 0;
            return;
        }
    }
    if (live < 0) { /* nothing left (not reached: the last DONE ends the stream) */
        g->out.is_done = true;
        return;
    }
    int64_t wait = g->n > 1 ? CHOICES_POLL_NS : SERVER_KEEPALIVE_NS;
    if (engine_next(g->ch[live].req, &ev, wait) == 1) {
        on_event(g, live, &ev);
        engine_event_clear(&ev);
        g->idle_ns = 0;
        return;
    }
    g->idle_ns += wait;
    if (g->idle_ns >= SERVER_KEEPALIVE_NS) {
        /* nothing for a while (a long prefill): a comment keeps proxies and
         * clients waiting, and finds out whether the client is still there */
        sse_buf_put(&g->out, ": keep-alive\n\n", 14);
        g->idle_ns = 0;
    }
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    gen_t *g = cls;
    return sse_buf_read(&g->out, buf, max, pump, g);
}

/* Releases every choice (cancelling those still running: the client left
 * early or one failed; their blocks go back at the next step). */
static void gen_free(void *cls)
{
    gen_t *g = cls;
    for (int i = 0; i < g->n; i++) {
        choice_t *c = &g->ch[i];
        engine_release(c->req);
        free(c->text);
        json_decref(c->lp);
        out_parser_free(&c->parser);
    }
    sse_buf_free(&g->out);
    free(g);
}

/* ---- submission ---- */

/* n > 1: choice 0 alone until its prompt is in the KV cache (its first
 * token, or its end), so the other choices find the prompt's blocks in the
 * prefix cache instead of computing them again. */
static void wait_first_token(gen_t *g)
{
    engine_event_t ev;
    while (!g->ch[0].is_done && engine_next(g->ch[0].req, &ev, -1) == 1) {
        bool is_token = ev.kind == ENGINE_EV_TOKEN;
        on_event(g, 0, &ev);
        engine_event_clear(&ev);
        if (is_token)
            return;
    }
}

void gen_respond(server_t *s, gen_req_t *q, bool is_chat, reply_t *r)
{
    gen_t *g = calloc(1, sizeof *g);
    if (!g) {
        reply_nomem(r, "the request's generation state", sizeof *g);
        return;
    }
    *g = (gen_t){.s = s,
                 .is_chat = is_chat,
                 .is_stream = q->is_stream,
                 .include_usage = q->include_usage,
                 .logprobs = q->p.logprobs,
                 .sr = &q->sr,
                 .is_thinking = is_chat && q->sr.is_thinking,
                 .created = (int64_t)time(NULL),
                 .t0 = clock_now_ns()};
    make_id(s, is_chat ? "chatcmpl" : "cmpl", g->id, sizeof g->id);
    const uint64_t seed = q->p.sampling.seed;
    g->n = q->n;
    for (int i = 0; i < q->n; i++)
        out_parser_init(&g->ch[i].parser, &q->sr);
    for (int i = 0; i < q->n; i++) {
        choice_t *c = &g->ch[i];
        if (q->echo && !q->is_stream)
            text_append(c, q->echo, q->echo_len);
        c->offset = q->echo_len;
        if (g->is_stream && is_chat)
            put_delta(g, i, json_pack("{s:s,s:s}", "role", "assistant", "content", ""));
        else if (g->is_stream && q->echo)
            sse_buf_event(&g->out, NULL, chunk(g, i, NULL, q->echo, q->echo_len, NULL));
        q->p.sampling.seed = gen_choice_seed(seed, i);
        c->req = gen_submit(s, q, r);
        if (!c->req) {
            gen_free(g);
            return;
        }
        if (i == 0 && q->n > 1)
            wait_first_token(g);
    }
    q->p.sampling.seed = seed;
    if (!g->is_stream) {
        respond_whole(g, r);
        gen_free(g);
        return;
    }
    g->sr = NULL; /* the request goes before the stream */
    atomic_fetch_add(&s->metrics.streamed, 1);
    r->stream = g;
    r->stream_read = stream_read;
    r->stream_free = gen_free;
}
