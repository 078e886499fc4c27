/* The Anthropic Messages dialect: POST /v1/messages and
 * /v1/messages/count_tokens. A request is validated where it enters and
 * mapped onto the chat request api.c builds (anthropic_request.c: system and messages onto
 * the Qwen chat template's messages, tool_use / tool_result blocks onto
 * tool calls and tool messages, tools and tool_choice onto the tool-call
 * machinery, thinking onto enable_thinking); the engine's events come back
 * as Anthropic's content blocks, whole or as its event stream. Errors use
 * Anthropic's body {"type":"error","error":{"type","message"}}. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "server/anthropic.h"
#include "server/dialect.h"
#include "server/fields.h"
#include "server/sse.h"

/* ---- the response ---- */

static const char *stop_reason(const api_done_t *d, bool has_calls)
{
    if (d->finish == ENGINE_FINISH_LENGTH)
        return "max_tokens";
    if (has_calls)
        return "tool_use";
    return d->stop_index >= 0 ? "stop_sequence" : "end_turn";
}

static json_t *stop_sequence(const json_t *stops, const api_done_t *d)
{
    const json_t *s = d->stop_index >= 0 ? json_array_get(stops, (size_t)d->stop_index) : NULL;
    return s ? json_copy((json_t *)s) : json_null();
}

/* input_tokens are those not read from the cache, as Anthropic counts them. */
static json_t *usage_json(const engine_usage_t *u)
{
    return json_pack("{s:i,s:i,s:i,s:i}", "input_tokens", u->prompt_tokens - u->cached_tokens, "output_tokens",
                     u->completion_tokens, "cache_read_input_tokens", u->cached_tokens, "cache_creation_input_tokens",
                     0);
}

static json_t *tool_use_block(const tool_call_out_t *c)
{
    json_t *input = json_loads(c->arguments, 0, NULL);
    if (!json_is_object(input)) {
        json_decref(input);
        input = json_object();
    }
    return json_pack("{s:s,s:s,s:s,s:o}", "type", "tool_use", "id", c->id, "name", c->name, "input", input);
}

static void make_msg_id(server_t *s, char *out, size_t cap)
{
    uint64_t n = atomic_fetch_add(&s->next_id, 1);
    snprintf(out, cap, "msg_%016" PRIx64 "%08" PRIx64, (uint64_t)s->started_unix, n);
}

static void respond_whole(server_t *s, api_job_t *job, const json_t *stops, reply_t *r)
{
    char *text = NULL;
    size_t len = 0;
    api_done_t done;
    if (api_collect(s, job->req, &text, &len, &done, r))
        return;
    out_parser_t p;
    out_delta_t d;
    out_parser_init(&p, &job->sr);
    out_parser_feed(&p, text ? text : "", len, true, &d);
    json_t *content = json_array();
    if (d.n_reasoning)
        json_array_append_new(content, json_pack("{s:s,s:o,s:s}", "type", "thinking", "thinking",
                                                 text_json(d.reasoning, d.n_reasoning), "signature", ""));
    size_t n_content = d.n_content;
    if (p.n_calls)
        while (n_content && strchr(" \n\t\r", d.content[n_content - 1]))
            n_content--; /* the blank line before a call */
    if (n_content)
        json_array_append_new(content, json_pack("{s:s,s:o}", "type", "text", "text", text_json(d.content, n_content)));
    for (int i = 0; i < p.n_calls; i++)
        json_array_append_new(content, tool_use_block(&p.calls[i]));
    char id[64];
    make_msg_id(s, id, sizeof id);
    r->body = json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:o,s:o}", "id", id, "type", "message", "role", "assistant", "model",
                        s->m.id, "content", content, "stop_reason", stop_reason(&done, p.n_calls > 0), "stop_sequence",
                        stop_sequence(stops, &done), "usage", usage_json(&done.usage));
    out_delta_free(&d);
    out_parser_free(&p);
    free(text);
}

/* ---- the event stream ---- */

enum { BLOCK_NONE, BLOCK_THINKING, BLOCK_TEXT, BLOCK_TOOL };

typedef struct anth_sse {
    server_t *s;
    engine_req_t *req;
    json_t *stops; /* the request's stop_sequences (a reference), or NULL */
    out_parser_t parser;
    char id[64];
    int n_prompt;
    bool is_started; /* message_start went out */
    int block;       /* the open block's kind */
    int n_block;     /* blocks started */
    sse_ws_t held;   /* trailing whitespace of the text so far, held back: dropped before a tool call */
    int64_t t0, t_prev;
    sse_buf_t out; /* framed events not yet handed to the client */
} anth_sse_t;

/* event: TYPE / data: JSON (whose "type" is TYPE). */
static void event(anth_sse_t *st, json_t *data)
{
    const char *type = json_string_value(json_object_get(data, "type"));
    if (!type) {
        json_decref(data);
        return;
    }
    sse_buf_event(&st->out, type, data);
}

static void message_start(anth_sse_t *st, const engine_usage_t *u)
{
    st->is_started = true;
    event(st, json_pack("{s:s,s:{s:s,s:s,s:s,s:s,s:[],s:n,s:n,s:o}}", "type", "message_start", "message", "id", st->id,
                        "type", "message", "role", "assistant", "model", st->s->m.id, "content", "stop_reason",
                        "stop_sequence", "usage", usage_json(u)));
    event(st, json_pack("{s:s}", "type", "ping"));
}

static void block_stop(anth_sse_t *st)
{
    if (st->block == BLOCK_NONE)
        return;
    event(st, json_pack("{s:s,s:i}", "type", "content_block_stop", "index", st->n_block - 1));
    st->block = BLOCK_NONE;
}

static void block_start(anth_sse_t *st, int kind, json_t *block)
{
    block_stop(st);
    event(st, json_pack("{s:s,s:i,s:o}", "type", "content_block_start", "index", st->n_block, "content_block", block));
    st->n_block++;
    st->block = kind;
}

static void delta(anth_sse_t *st, json_t *d)
{
    event(st, json_pack("{s:s,s:i,s:o}", "type", "content_block_delta", "index", st->n_block - 1, "delta", d));
}

static void text_out(anth_sse_t *st, const char *text, size_t n)
{
    if (!n)
        return;
    if (st->block != BLOCK_TEXT)
        block_start(st, BLOCK_TEXT, json_pack("{s:s,s:s}", "type", "text", "text", ""));
    delta(st, json_pack("{s:s,s:o}", "type", "text_delta", "text", text_json(text, n)));
}

/* Text with its trailing whitespace held back (the whole response drops
 * the blank line before a tool call, so the stream does too). */
static void text_out_cb(void *cls, const char *text, size_t n)
{
    text_out(cls, text, n);
}

static void text_in(anth_sse_t *st, const char *text, size_t n)
{
    sse_ws_feed(&st->held, text, n, text_out_cb, st);
}

static void feed(anth_sse_t *st, const char *text, size_t n, bool is_end)
{
    out_delta_t d;
    out_parser_feed(&st->parser, text, n, is_end, &d);
    if (d.n_reasoning) {
        if (st->block != BLOCK_THINKING)
            block_start(st, BLOCK_THINKING,
                        json_pack("{s:s,s:s,s:s}", "type", "thinking", "thinking", "", "signature", ""));
        delta(st, json_pack("{s:s,s:o}", "type", "thinking_delta", "thinking", text_json(d.reasoning, d.n_reasoning)));
    }
    if (d.n_content)
        text_in(st, d.content, d.n_content);
    for (int i = d.first_call; i < d.first_call + d.n_new_calls; i++) {
        const tool_call_out_t *c = &st->parser.calls[i];
        sse_ws_drop(&st->held);
        block_start(st, BLOCK_TOOL,
                    json_pack("{s:s,s:s,s:s,s:{}}", "type", "tool_use", "id", c->id, "name", c->name, "input"));
        delta(st, json_pack("{s:s,s:s}", "type", "input_json_delta", "partial_json", c->arguments));
        block_stop(st);
    }
    if (is_end && st->parser.n_calls == 0 && st->held.n_ws) {
        text_out(st, st->held.ws, st->held.n_ws);
        sse_ws_drop(&st->held);
    }
    out_delta_free(&d);
}

static void pump(anth_sse_t *st)
{
    engine_event_t ev;
    if (engine_next(st->req, &ev, SERVER_KEEPALIVE_NS) == 0) {
        /* a long wait: Anthropic's ping once the message started, a comment before */
        if (st->is_started)
            event(st, json_pack("{s:s}", "type", "ping"));
        else
            sse_buf_put(&st->out, ": keep-alive\n\n", 14);
        return;
    }
    if (!st->is_started && ev.kind != ENGINE_EV_PROGRESS) {
        engine_usage_t u = {.prompt_tokens = st->n_prompt};
        if (ev.kind == ENGINE_EV_STARTED)
            u.cached_tokens = ev.usage.cached_tokens;
        message_start(st, &u);
    }
    if (ev.kind == ENGINE_EV_TOKEN) {
        if (!st->t_prev)
            lat_hist_add(&st->s->metrics.ttft, ev.time_ns - st->t0);
        else
            lat_hist_add(&st->s->metrics.itl, ev.time_ns - st->t_prev);
        st->t_prev = ev.time_ns;
        if (ev.text_len)
            feed(st, ev.text, ev.text_len, false);
    } else if (ev.kind == ENGINE_EV_DONE) {
        lat_hist_add(&st->s->metrics.e2e, clock_now_ns() - st->t0);
        if (ev.finish == ENGINE_FINISH_STOP || ev.finish == ENGINE_FINISH_LENGTH) {
            feed(st, ev.text ? ev.text : "", ev.text ? ev.text_len : 0, true);
            block_stop(st);
            api_done_t done = {.finish = ev.finish, .usage = ev.usage, .stop_index = ev.stop_index};
            event(st, json_pack("{s:s,s:{s:s,s:o},s:o}", "type", "message_delta", "delta", "stop_reason",
                                stop_reason(&done, st->parser.n_calls > 0), "stop_sequence",
                                stop_sequence(st->stops, &done), "usage", usage_json(&ev.usage)));
            event(st, json_pack("{s:s}", "type", "message_stop"));
            atomic_fetch_add(&st->s->metrics.completions, 1);
        } else {
            /* the response is already 200: the error goes in the stream */
            const char *type = ev.finish == ENGINE_FINISH_TIMEOUT     ? "timeout_error"
                               : ev.finish == ENGINE_FINISH_CANCELLED ? "overloaded_error"
                                                                      : "api_error";
            const char *why = ev.finish == ENGINE_FINISH_TIMEOUT     ? "the request took longer than --request-timeout"
                              : ev.finish != ENGINE_FINISH_CANCELLED ? "generation failed"
                              : atomic_load(&st->s->is_draining)
                                  ? "the request was cancelled: the server is shutting down"
                                  : "the request was cancelled";
            event(st, json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type", type, "message", why));
        }
        st->out.is_done = true;
    }
    engine_event_clear(&ev);
}

static void pump_cb(void *cls)
{
    pump(cls);
}

static ssize_t anth_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    anth_sse_t *st = cls;
    return sse_buf_read(&st->out, buf, max, pump_cb, st);
}

static void anth_free(void *cls)
{
    anth_sse_t *st = cls;
    engine_release(st->req); /* cancels it if the client left early */
    out_parser_free(&st->parser);
    json_decref(st->stops);
    sse_ws_free(&st->held);
    sse_buf_free(&st->out);
    free(st);
}

/* ---- endpoints ---- */

void api_messages(server_t *s, json_t *req, reply_t *r)
{
    json_t *chat = anthropic_to_chat(req, false, r);
    if (!chat)
        return;
    api_job_t job;
    if (api_chat_submit(s, chat, &job, r)) {
        json_decref(chat);
        return;
    }
    json_t *stops = json_object_get(chat, "stop");
    if (!job.is_stream) {
        respond_whole(s, &job, stops, r);
        structured_free(&job.sr);
        json_decref(chat);
        return;
    }
    anth_sse_t *st = calloc(1, sizeof *st);
    if (!st) {
        engine_release(job.req);
        structured_free(&job.sr);
        json_decref(chat);
        reply_nomem(r, "the stream's state", sizeof *st);
        return;
    }
    st->s = s;
    st->req = job.req;
    st->stops = json_incref(stops);
    st->n_prompt = job.n_prompt;
    out_parser_init(&st->parser, &job.sr);
    structured_free(&job.sr); /* the parser keeps only its mode */
    st->t0 = clock_now_ns();
    make_msg_id(s, st->id, sizeof st->id);
    atomic_fetch_add(&s->metrics.streamed, 1);
    r->stream = st;
    r->stream_read = anth_read;
    r->stream_free = anth_free;
    json_decref(chat);
}

void api_messages_count(server_t *s, json_t *req, reply_t *r)
{
    json_t *chat = anthropic_to_chat(req, true, r);
    int n = 0;
    if (chat && api_chat_count(s, chat, &n, r) == 0)
        r->body = json_pack("{s:i}", "input_tokens", n);
    json_decref(chat);
}
