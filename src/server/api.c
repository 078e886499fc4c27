/* The OpenAI-compatible endpoints and the text utilities. Every request
 * field is validated here (with fields.c), where it enters: wrong types,
 * out-of-range values, unknown fields and unsupported options are refused
 * with 400 and the offending `param`; the only fields ignored are the few
 * that change nothing for a local server (docs/architecture.md, "OpenAI
 * request fields"). choices.c submits and answers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "server/chat_msgs.h"
#include "server/choices.h"
#include "server/dialect.h"
#include "server/fields.h"
#include "server/sse.h"
#include "server/structured.h"
#include "text/chat.h"

#define API_MAX_TOKEN_IDS (1 << 20) /* token ids accepted in one prompt or /detokenize */

/* ---- a parsed generation request ---- */

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
    if (check_model(s, req, r) || field_number(req, "temperature", 0, 2, &sp->temperature, r) ||
        field_number(req, "top_p", 0, 1, &sp->top_p, r) || field_number(req, "min_p", 0, 1, &sp->min_p, r) ||
        field_number(req, "presence_penalty", -2, 2, &sp->presence_penalty, r) ||
        field_number(req, "frequency_penalty", -2, 2, &sp->frequency_penalty, r) ||
        field_number(req, "repetition_penalty", 1e-6, SAMPLER_MAX_REPETITION_PENALTY, &sp->repetition_penalty, r) ||
        field_bool(req, "ignore_eos", &g->p.ignore_eos, r) || field_bool(req, "stream", &g->is_stream, r))
        return -1;
    if (json_object_get(req, "top_p") && sp->top_p == 0.0f) {
        reply_error(r, 400, "top_p", "'top_p' must be in (0, 1]");
        return -1;
    }
    if (field_int(req, "top_k", -1, INT32_MAX, &x, &present, r))
        return -1;
    if (present)
        sp->top_k = x < 0 ? 0 : (int)x; /* -1: off, as vLLM */
    /* a u64: the body loader refused negative literals and keeps those
     * above INT64_MAX as the same 64 bits (json_body.h) */
    if (field_int(req, "seed", INT64_MIN, INT64_MAX, &x, &present, r))
        return -1;
    if (present)
        sp->seed = (uint64_t)x;
    else
        sp->seed = atomic_fetch_add(&s->next_id, 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)clock_now_ns();
    /* max_tokens, or chat's newer name for it */
    g->max_tokens_param = json_object_get(req, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (field_int(req, g->max_tokens_param, 1, INT32_MAX, &x, &g->has_max_tokens, r))
        return -1;
    if (g->has_max_tokens)
        g->p.max_tokens = (int)x;
    if (field_n(s, req, g, r))
        return -1;
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
        if (!json_is_object(v) || field_check(v, so_fields, r) ||
            field_bool(v, "include_usage", &g->include_usage, r)) {
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
    if (field_logprobs(req, g, r) || field_logit_bias(s, req, g, r) || field_ignored(req, r))
        return -1;
    g->p.timeout_ns = (int64_t)s->cfg.request_timeout_s * 1000000000LL;
    return 0;
}

/* ---- chat messages ---- */

/* Thinking on or off: chat_template_kwargs.enable_thinking when given
 * (render_chat validated it), else off for reasoning_effort "none" (the
 * other efforts keep Qwen3's default); -1: the template's default. */
static int enable_thinking(const json_t *req)
{
    const json_t *kw = json_object_get(req, "chat_template_kwargs");
    const json_t *v = json_is_object(kw) ? json_object_get(kw, "enable_thinking") : NULL;
    if (json_is_boolean(v))
        return json_is_true(v);
    const json_t *effort = json_object_get(req, "reasoning_effort");
    return json_is_string(effort) && !strcmp(json_string_value(effort), "none") ? 0 : -1;
}

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
    if (field_bool(req, "add_generation_prompt", &agp, r))
        goto out;
    opts.add_generation_prompt = agp;
    if (tools && !json_is_null(tools) && !json_is_array(tools)) {
        reply_error(r, 400, "tools", "'tools' must be an array");
        goto out;
    }
    if (kw && !json_is_null(kw)) {
        static const char *const kw_fields[] = {"enable_thinking", NULL};
        bool thinking = true;
        if (!json_is_object(kw) || field_check(kw, kw_fields, r) || field_bool(kw, "enable_thinking", &thinking, r)) {
            reply_error(r, 400, "chat_template_kwargs",
                        "'chat_template_kwargs' must be an object with only enable_thinking (a boolean)");
            goto out;
        }
    }
    opts.enable_thinking = enable_thinking(req);
    err_t err;
    if (chat_render_qwen3(msgs, json_is_array(tools) ? tools : NULL, &opts, &text, len, &err))
        reply_error(r, 400, "messages", "%s", err.msg);
out:
    json_decref(msgs);
    return text;
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

int api_collect(server_t *s, engine_req_t *req, char **text_out, size_t *len_out, api_done_t *done, reply_t *r)
{
    int64_t t0 = clock_now_ns(), t_prev = 0;
    char *text = NULL;
    size_t len = 0, cap = 0;
    engine_event_t ev;
    engine_finish_t finish = ENGINE_FINISH_NONE;
    char message[256] = "";
    *done = (api_done_t){.stop_index = -1};
    think_counter_t think = {0};
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
            think_counter_feed(&think, ev.text, ev.text_len);
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
            done->reasoning_tokens = think.n;
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
                                            "logit_bias",
                                            "user",
                                            "store",
                                            "metadata",
                                            "service_tier",
                                            NULL};

static int check_gen_fields(const json_t *req, const char *const *extra, reply_t *r)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)req, key, v)
    {
        if (!field_in_list(key, common_fields) && !field_in_list(key, extra)) {
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
    static const char *const extra[] = {"messages",
                                        "max_completion_tokens",
                                        "tools",
                                        "tool_choice",
                                        "parallel_tool_calls",
                                        "chat_template_kwargs",
                                        "top_logprobs",
                                        "prediction",
                                        "reasoning_effort",
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
    if (chat_prepare(s, req, &g, false, r) == 0)
        gen_respond(s, &g, true, r);
    gen_req_free(&g);
}

int api_chat_submit(server_t *s, json_t *req, api_job_t *job, reply_t *r)
{
    gen_req_t g = {.prompt_param = "messages"};
    memset(job, 0, sizeof *job);
    if (chat_prepare(s, req, &g, false, r)) {
        gen_req_free(&g);
        return -1;
    }
    job->n_prompt = (int)g.ids.n;
    job->req = gen_submit(s, &g, r);
    tok_ids_free(&g.ids);
    free(g.bias);
    free(g.echo);
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
    int rc = chat_prepare(s, req, &g, true, r);
    *n_tokens = (int)g.ids.n;
    gen_req_free(&g);
    return rc;
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
        reply_nomem(r, "the prompt's token ids", (n ? n : 1) * sizeof *ids->v);
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
    json_int_t best_of = 1;
    if (check_gen_fields(req, extra, r) || parse_common(s, req, &g, r) ||
        field_int(req, "best_of", 1, 1, &best_of, NULL, r))
        goto out;
    const json_t *suffix = json_object_get(req, "suffix");
    if (suffix && !json_is_null(suffix)) {
        reply_error(r, 400, "suffix", "suffix is not supported");
        goto out;
    }
    const json_t *prompt = json_object_get(req, "prompt");
    if (!prompt) {
        reply_error(r, 400, "prompt", "'prompt' is required");
        goto out;
    }
    if (g.has_max_tokens == false)
        g.p.max_tokens = 16, g.has_max_tokens = true; /* the OpenAI completions default */
    if (structured_parse(s, req, false, -1, &g.sr, r))
        goto out;
    g.p.constraint = g.sr.spec;
    if (parse_prompt(s, prompt, "prompt", &g.ids, r) == 0 && field_echo(s, req, &g, r) == 0)
        gen_respond(s, &g, false, r);
out:
    gen_req_free(&g);
}

void api_tokenize(server_t *s, json_t *req, reply_t *r)
{
    static const char *const fields[] = {
        "model", "prompt", "messages", "add_special_tokens", "add_generation_prompt", "tools", "chat_template_kwargs",
        NULL};
    if (field_check(req, fields, r) || check_model(s, req, r))
        return;
    const json_t *prompt = json_object_get(req, "prompt"), *msgs = json_object_get(req, "messages");
    if (!!prompt == !!msgs) {
        reply_error(r, 400, prompt ? "messages" : "prompt", "give exactly one of 'prompt' and 'messages'");
        return;
    }
    bool add_special = true;
    if (field_bool(req, "add_special_tokens", &add_special, r))
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
    if (field_check(req, fields, r) || check_model(s, req, r))
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
    if (field_check(req, fields, r) || check_model(s, req, r))
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

static json_t *model_json(server_t *s)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:i}", "id", s->m.id, "object", "model", "created", (json_int_t)s->started_unix,
                     "owned_by", "splash", "max_model_len", engine_get_config(s->m.engine)->max_context);
}

void api_models(server_t *s, reply_t *r)
{
    r->body = json_pack("{s:s,s:[o]}", "object", "list", "data", model_json(s));
}

void api_model(server_t *s, const char *id, reply_t *r)
{
    if (strcmp(id, s->m.id) != 0) {
        reply_error(r, 404, "model", "the model '%s' does not exist (this server serves '%s')", id, s->m.id);
        return;
    }
    r->body = model_json(s);
}
