/* The OpenAI Responses dialect's answer: POST /v1/responses submits the
 * chat request responses.c mapped and renders the engine's output as a
 * Response object (output items: reasoning from <think>, a message with
 * output_text, function_call per tool call) or as the Responses event
 * stream: response.created, response.in_progress, then per item
 * output_item.added, content_part.added, the deltas (output_text,
 * reasoning_text, function_call_arguments), their .done events,
 * content_part.done and output_item.done, and last response.completed
 * (response.incomplete when max_output_tokens cut it, response.failed on
 * an error), every event with its sequence_number. Errors before the
 * stream are OpenAI error bodies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "server/dialect.h"
#include "server/responses.h"
#include "server/sse.h"

/* make_id's PREFIX-hex with the underscore OpenAI's ids use. */
static void item_id(server_t *s, const char *prefix, char *out, size_t cap)
{
    make_id(s, prefix, out, cap);
    size_t n = strlen(prefix);
    if (out[n] == '-')
        out[n] = '_';
}

static json_t *usage_json(const engine_usage_t *u, int reasoning_tokens)
{
    return json_pack("{s:i,s:{s:i},s:i,s:{s:i},s:i}", "input_tokens", u->prompt_tokens, "input_tokens_details",
                     "cached_tokens", u->cached_tokens, "output_tokens", u->completion_tokens, "output_tokens_details",
                     "reasoning_tokens", reasoning_tokens, "total_tokens", u->prompt_tokens + u->completion_tokens);
}

/* The Response object before any output: the request's settings and status in_progress. */
static json_t *response_new(server_t *s, const json_t *echo)
{
    char id[64];
    item_id(s, "resp", id, sizeof id);
    json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:n,s:n,s:s,s:[],s:n,s:n}", "id", id, "object", "response", "created_at",
                          (json_int_t)time(NULL), "status", "in_progress", "error", "incomplete_details", "model",
                          s->m.id, "output", "usage", "previous_response_id");
    json_object_update(o, (json_t *)echo);
    return o;
}

static void response_end(json_t *o, engine_finish_t finish, const engine_usage_t *u, int reasoning_tokens)
{
    bool is_cut = finish == ENGINE_FINISH_LENGTH;
    json_object_set_new(o, "status", json_string(is_cut ? "incomplete" : "completed"));
    if (is_cut)
        json_object_set_new(o, "incomplete_details", json_pack("{s:s}", "reason", "max_output_tokens"));
    json_object_set_new(o, "usage", usage_json(u, reasoning_tokens));
}

static json_t *reasoning_item(const char *id, const char *text, size_t n, const char *status)
{
    return json_pack("{s:s,s:s,s:[],s:[{s:s,s:o}],s:s}", "id", id, "type", "reasoning", "summary", "content", "type",
                     "reasoning_text", "text", text_json(text, n), "status", status);
}

static json_t *text_part(const char *text, size_t n)
{
    return json_pack("{s:s,s:o,s:[],s:[]}", "type", "output_text", "text", text_json(text, n), "annotations",
                     "logprobs");
}

static json_t *message_item(const char *id, json_t *content, const char *status)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", id, "type", "message", "status", status, "role", "assistant",
                     "content", content);
}

static json_t *call_item(const char *id, const tool_call_out_t *c, const char *args, const char *status)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "id", id, "type", "function_call", "status", status, "call_id", c->id,
                     "name", c->name, "arguments", args);
}

static void respond_whole(server_t *s, api_job_t *job, json_t *resp, reply_t *r)
{
    char *text = NULL;
    size_t len = 0;
    api_done_t done;
    if (api_collect(s, job->req, &text, &len, &done, r)) {
        json_decref(resp);
        return;
    }
    out_parser_t p;
    out_delta_t d;
    out_parser_init(&p, &job->sr);
    out_parser_feed(&p, text ? text : "", len, true, &d);
    json_t *output = json_object_get(resp, "output");
    char id[64];
    size_t n_content = d.n_content;
    if (p.n_calls)
        while (n_content && strchr(" \n\t\r", d.content[n_content - 1]))
            n_content--; /* the blank line before a call */
    /* an answer cut inside its reasoning is that reasoning item alone; an
     * empty answer is still a message; the item max_output_tokens cut is
     * "incomplete" (a call is whole or was never parsed as one) */
    bool has_message = n_content || (!p.n_calls && !d.n_reasoning);
    bool is_cut = done.finish == ENGINE_FINISH_LENGTH && !p.n_calls;
    if (d.n_reasoning) {
        item_id(s, "rs", id, sizeof id);
        json_array_append_new(output, reasoning_item(id, d.reasoning, d.n_reasoning,
                                                     is_cut && !has_message ? "incomplete" : "completed"));
    }
    if (has_message) {
        item_id(s, "msg", id, sizeof id);
        json_array_append_new(output,
                              message_item(id, json_pack("[o]", text_part(n_content ? d.content : "", n_content)),
                                           is_cut ? "incomplete" : "completed"));
    }
    for (int i = 0; i < p.n_calls; i++) {
        item_id(s, "fc", id, sizeof id);
        json_array_append_new(output, call_item(id, &p.calls[i], p.calls[i].arguments, "completed"));
    }
    response_end(resp, done.finish, &done.usage, job->sr.is_thinking ? done.reasoning_tokens : 0);
    r->body = resp;
    out_delta_free(&d);
    out_parser_free(&p);
    free(text);
}

/* ---- the event stream ---- */

enum { ITEM_NONE, ITEM_REASONING, ITEM_MESSAGE };

typedef struct resp_sse {
    server_t *s;
    engine_req_t *req;
    json_t *resp; /* the Response object, its output growing as items finish */
    out_parser_t parser;
    int n_prompt;
    bool is_started;    /* response.created went out */
    bool has_message;   /* a message item went out */
    bool has_reasoning; /* a reasoning item went out */
    int seq;            /* the next sequence_number */
    int open;           /* the open item's kind */
    char id[64];        /* the open item's id */
    int index;          /* the open item's output_index */
    char *acc;          /* the open item's text so far */
    size_t n_acc, cap_acc;
    think_counter_t think; /* usage's reasoning_tokens */
    sse_ws_t held;         /* trailing whitespace of the text so far, held back: dropped before a tool call */
    int64_t t0, t_prev;
    sse_buf_t out;
} resp_sse_t;

/* event: TYPE / data: {type, sequence_number, ...}. Takes obj. */
static void event(resp_sse_t *st, const char *type, json_t *obj)
{
    if (!obj)
        return;
    json_object_set_new(obj, "type", json_string(type));
    json_object_set_new(obj, "sequence_number", json_integer(st->seq++));
    sse_buf_event(&st->out, type, obj);
}

static void acc_put(resp_sse_t *st, const char *text, size_t n)
{
    if (!n)
        return; /* the buffer may not exist yet */
    if (st->n_acc + n > st->cap_acc) {
        size_t cap = st->cap_acc ? st->cap_acc : 256;
        while (cap < st->n_acc + n)
            cap *= 2;
        char *p = realloc(st->acc, cap);
        if (!p)
            return;
        st->acc = p;
        st->cap_acc = cap;
    }
    memcpy(st->acc + st->n_acc, text, n);
    st->n_acc += n;
}

static void item_added(resp_sse_t *st, json_t *item)
{
    event(st, "response.output_item.added", json_pack("{s:i,s:o}", "output_index", st->index, "item", item));
}

/* output_item.done, and the item into the Response's output. */
static void item_done(resp_sse_t *st, json_t *item)
{
    json_array_append(json_object_get(st->resp, "output"), item);
    event(st, "response.output_item.done", json_pack("{s:i,s:o}", "output_index", st->index, "item", item));
}

static void part_event(resp_sse_t *st, const char *type, json_t *part)
{
    event(
        st, type,
        json_pack("{s:s,s:i,s:i,s:o}", "item_id", st->id, "output_index", st->index, "content_index", 0, "part", part));
}

/* Ends the open item with `status` ("completed", or "incomplete" for the
 * one max_output_tokens cut). */
static void item_close(resp_sse_t *st, const char *status)
{
    const char *a = st->acc ? st->acc : "";
    if (st->open == ITEM_REASONING) {
        event(st, "response.reasoning_text.done",
              json_pack("{s:s,s:i,s:i,s:o}", "item_id", st->id, "output_index", st->index, "content_index", 0, "text",
                        text_json(a, st->n_acc)));
        part_event(st, "response.content_part.done",
                   json_pack("{s:s,s:o}", "type", "reasoning_text", "text", text_json(a, st->n_acc)));
        item_done(st, reasoning_item(st->id, a, st->n_acc, status));
    } else if (st->open == ITEM_MESSAGE) {
        event(st, "response.output_text.done",
              json_pack("{s:s,s:i,s:i,s:o,s:[]}", "item_id", st->id, "output_index", st->index, "content_index", 0,
                        "text", text_json(a, st->n_acc), "logprobs"));
        part_event(st, "response.content_part.done", text_part(a, st->n_acc));
        item_done(st, message_item(st->id, json_pack("[o]", text_part(a, st->n_acc)), status));
    }
    st->open = ITEM_NONE;
    st->n_acc = 0;
}

static void item_open(resp_sse_t *st, int kind)
{
    item_close(st, "completed");
    st->open = kind;
    st->index = (int)json_array_size(json_object_get(st->resp, "output"));
    if (kind == ITEM_REASONING) {
        st->has_reasoning = true;
        item_id(st->s, "rs", st->id, sizeof st->id);
        item_added(st, json_pack("{s:s,s:s,s:[],s:[],s:s}", "id", st->id, "type", "reasoning", "summary", "content",
                                 "status", "in_progress"));
        part_event(st, "response.content_part.added", json_pack("{s:s,s:s}", "type", "reasoning_text", "text", ""));
    } else {
        item_id(st->s, "msg", st->id, sizeof st->id);
        st->has_message = true;
        item_added(st, message_item(st->id, json_array(), "in_progress"));
        part_event(st, "response.content_part.added", text_part("", 0));
    }
}

static void text_out(resp_sse_t *st, const char *text, size_t n)
{
    if (!n)
        return;
    if (st->open != ITEM_MESSAGE)
        item_open(st, ITEM_MESSAGE);
    acc_put(st, text, n);
    event(st, "response.output_text.delta",
          json_pack("{s:s,s:i,s:i,s:o,s:[]}", "item_id", st->id, "output_index", st->index, "content_index", 0, "delta",
                    text_json(text, n), "logprobs"));
}

/* Text with its trailing whitespace held back (the whole response drops
 * the blank line before a tool call, so the stream does too). */
static void text_out_cb(void *cls, const char *text, size_t n)
{
    text_out(cls, text, n);
}

static void text_in(resp_sse_t *st, const char *text, size_t n)
{
    sse_ws_feed(&st->held, text, n, text_out_cb, st);
}

static void call_out(resp_sse_t *st, const tool_call_out_t *c)
{
    item_close(st, "completed");
    sse_ws_drop(&st->held);
    st->index = (int)json_array_size(json_object_get(st->resp, "output"));
    item_id(st->s, "fc", st->id, sizeof st->id);
    item_added(st, call_item(st->id, c, "", "in_progress"));
    event(st, "response.function_call_arguments.delta",
          json_pack("{s:s,s:i,s:s}", "item_id", st->id, "output_index", st->index, "delta", c->arguments));
    event(st, "response.function_call_arguments.done",
          json_pack("{s:s,s:i,s:s,s:s}", "item_id", st->id, "output_index", st->index, "name", c->name, "arguments",
                    c->arguments));
    item_done(st, call_item(st->id, c, c->arguments, "completed"));
}

static void feed(resp_sse_t *st, const char *text, size_t n, bool is_end)
{
    out_delta_t d;
    out_parser_feed(&st->parser, text, n, is_end, &d);
    if (d.n_reasoning) {
        if (st->open != ITEM_REASONING)
            item_open(st, ITEM_REASONING);
        acc_put(st, d.reasoning, d.n_reasoning);
        event(st, "response.reasoning_text.delta",
              json_pack("{s:s,s:i,s:i,s:o}", "item_id", st->id, "output_index", st->index, "content_index", 0, "delta",
                        text_json(d.reasoning, d.n_reasoning)));
    }
    if (d.n_content)
        text_in(st, d.content, d.n_content);
    for (int i = d.first_call; i < d.first_call + d.n_new_calls; i++)
        call_out(st, &st->parser.calls[i]);
    if (is_end && st->parser.n_calls == 0 && st->held.n_ws) {
        text_out(st, st->held.ws, st->held.n_ws);
        sse_ws_drop(&st->held);
    }
    if (is_end && !st->has_message && !st->has_reasoning && st->parser.n_calls == 0)
        item_open(st, ITEM_MESSAGE); /* an empty answer is still a message, as the whole response has */
    out_delta_free(&d);
}

static void start(resp_sse_t *st)
{
    st->is_started = true;
    event(st, "response.created", json_pack("{s:O}", "response", st->resp));
    event(st, "response.in_progress", json_pack("{s:O}", "response", st->resp));
}

static void finish(resp_sse_t *st, const engine_event_t *ev)
{
    if (ev->finish == ENGINE_FINISH_STOP || ev->finish == ENGINE_FINISH_LENGTH) {
        feed(st, ev->text ? ev->text : "", ev->text ? ev->text_len : 0, true);
        bool is_cut = ev->finish == ENGINE_FINISH_LENGTH;
        /* a call is whole or was never parsed as one: only text is cut */
        item_close(st, is_cut && st->parser.n_calls == 0 ? "incomplete" : "completed");
        response_end(st->resp, ev->finish, &ev->usage, st->parser.is_thinking ? st->think.n : 0);
        event(st, is_cut ? "response.incomplete" : "response.completed", json_pack("{s:O}", "response", st->resp));
        atomic_fetch_add(&st->s->metrics.completions, 1);
    } else {
        /* the response is already 200: the error goes in the stream */
        const char *why = ev->finish == ENGINE_FINISH_TIMEOUT     ? "the request took longer than --request-timeout"
                          : ev->finish == ENGINE_FINISH_CANCELLED ? "the request was cancelled"
                                                                  : "generation failed";
        json_object_set_new(st->resp, "status", json_string("failed"));
        json_object_set_new(st->resp, "error", json_pack("{s:s,s:s}", "code", "server_error", "message", why));
        event(st, "response.failed", json_pack("{s:O}", "response", st->resp));
    }
    st->out.is_done = true;
}

static void pump(void *cls)
{
    resp_sse_t *st = cls;
    engine_event_t ev;
    if (engine_next(st->req, &ev, SERVER_KEEPALIVE_NS) == 0) {
        sse_buf_put(&st->out, ": keep-alive\n\n", 14);
        return;
    }
    if (!st->is_started && ev.kind != ENGINE_EV_PROGRESS)
        start(st);
    if (ev.kind == ENGINE_EV_TOKEN) {
        if (!st->t_prev)
            lat_hist_add(&st->s->metrics.ttft, ev.time_ns - st->t0);
        else
            lat_hist_add(&st->s->metrics.itl, ev.time_ns - st->t_prev);
        st->t_prev = ev.time_ns;
        think_counter_feed(&st->think, ev.text, ev.text_len);
        if (ev.text_len)
            feed(st, ev.text, ev.text_len, false);
    } else if (ev.kind == ENGINE_EV_DONE) {
        lat_hist_add(&st->s->metrics.e2e, clock_now_ns() - st->t0);
        finish(st, &ev);
    }
    engine_event_clear(&ev);
}

static ssize_t resp_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    resp_sse_t *st = cls;
    return sse_buf_read(&st->out, buf, max, pump, st);
}

static void resp_free(void *cls)
{
    resp_sse_t *st = cls;
    engine_release(st->req); /* cancels it if the client left early */
    out_parser_free(&st->parser);
    json_decref(st->resp);
    free(st->acc);
    sse_ws_free(&st->held);
    sse_buf_free(&st->out);
    free(st);
}

/* ---- the endpoint ---- */

void api_responses(server_t *s, json_t *req, reply_t *r)
{
    json_t *echo = NULL;
    json_t *chat = responses_to_chat(req, &echo, r);
    if (!chat)
        return;
    api_job_t job;
    if (api_chat_submit(s, chat, &job, r)) {
        responses_rename_error(r);
        json_decref(chat);
        json_decref(echo);
        return;
    }
    json_decref(chat);
    json_t *resp = response_new(s, echo);
    json_decref(echo);
    if (!job.is_stream) {
        respond_whole(s, &job, resp, r);
        structured_free(&job.sr);
        return;
    }
    resp_sse_t *st = calloc(1, sizeof *st);
    if (!st) {
        engine_release(job.req);
        structured_free(&job.sr);
        json_decref(resp);
        reply_nomem(r, "the stream's state", sizeof *st);
        return;
    }
    st->s = s;
    st->req = job.req;
    st->resp = resp;
    st->n_prompt = job.n_prompt;
    out_parser_init(&st->parser, &job.sr);
    structured_free(&job.sr); /* the parser keeps only its mode */
    st->t0 = clock_now_ns();
    atomic_fetch_add(&s->metrics.streamed, 1);
    r->stream = st;
    r->stream_read = resp_read;
    r->stream_free = resp_free;
}
