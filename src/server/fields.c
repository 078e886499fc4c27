/* Request field validation shared by the OpenAI endpoints (fields.h). */
#include "server/fields.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool field_in_list(const char *key, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(key, *list))
            return true;
    return false;
}

/* Refuses any field not in allowed. */
int field_check(const json_t *req, const char *const *allowed, reply_t *r)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)req, key, v)
    {
        if (!field_in_list(key, allowed)) {
            reply_error(r, 400, key, "unknown or unsupported parameter '%s'", key);
            return -1;
        }
    }
    return 0;
}

/* A number in [lo, hi] (JSON null or absent: *out unchanged). */
int field_number(const json_t *req, const char *key, double lo, double hi, float *out, reply_t *r)
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

int field_int(const json_t *req, const char *key, json_int_t lo, json_int_t hi, json_int_t *out, bool *present,
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

int field_bool(const json_t *req, const char *key, bool *out, reply_t *r)
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

/* ---- chat and completions fields ---- */

/* n: choices, [1, API_MAX_CHOICES] and no more than the engine runs at once. */
int field_n(server_t *s, const json_t *req, gen_req_t *g, reply_t *r)
{
    json_int_t n = 1;
    if (field_int(req, "n", 1, API_MAX_CHOICES, &n, NULL, r))
        return -1;
    int max_seqs = engine_get_config(s->m.engine)->max_seqs;
    if (n > max_seqs) {
        reply_error(r, 400, "n", "'n' is %d; this server runs at most %d sequences at once (--max-seqs)", (int)n,
                    max_seqs);
        return -1;
    }
    g->n = (int)n;
    return 0;
}

/* Chat: logprobs (boolean) and top_logprobs (0..20, needs logprobs: true).
 * Completions: logprobs (integer 0..20: the alternatives per token). */
int field_logprobs(const json_t *req, gen_req_t *g, reply_t *r)
{
    const bool is_chat = !strcmp(g->prompt_param, "messages");
    json_int_t top = 0;
    bool present = false;
    if (is_chat) {
        if (field_bool(req, "logprobs", &g->p.logprobs, r) ||
            field_int(req, "top_logprobs", 0, SAMPLER_MAX_TOP_LOGPROBS, &top, &present, r))
            return -1;
        if (present && !g->p.logprobs) {
            reply_error(r, 400, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
            return -1;
        }
    } else {
        if (field_int(req, "logprobs", 0, SAMPLER_MAX_TOP_LOGPROBS, &top, &present, r))
            return -1;
        g->p.logprobs = present;
    }
    g->p.top_logprobs = (int)top;
    return 0;
}

/* logit_bias: {"token id": bias in [-100, 100]}, ids in the vocabulary. */
int field_logit_bias(server_t *s, const json_t *req, gen_req_t *g, reply_t *r)
{
    const json_t *v = json_object_get(req, "logit_bias");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v) || json_object_size(v) > SAMPLER_MAX_BIASED) {
        reply_error(r, 400, "logit_bias", "'logit_bias' must be an object of at most %d token ids", SAMPLER_MAX_BIASED);
        return -1;
    }
    if (!json_object_size(v))
        return 0;
    g->bias = malloc(json_object_size(v) * sizeof *g->bias);
    if (!g->bias) {
        reply_nomem(r, "logit_bias", json_object_size(v) * sizeof *g->bias);
        return -1;
    }
    const int vocab = s->m.model->cfg.vocab;
    const char *key;
    json_t *b;
    json_object_foreach((json_t *)v, key, b)
    {
        char *end = NULL;
        long id = strtol(key, &end, 10);
        if (!key[0] || *end || key[0] == '+' || key[0] == ' ' || id < 0 || id >= vocab) {
            reply_error(r, 400, "logit_bias", "logit_bias: '%s' is not a token id in [0, %d)", key, vocab);
            return -1;
        }
        double d = json_is_number(b) ? json_number_value(b) : NAN;
        if (!(d >= -SAMPLER_MAX_BIAS && d <= SAMPLER_MAX_BIAS)) {
            reply_error(r, 400, "logit_bias", "logit_bias: the bias of token %ld must be a number in [-100, 100]", id);
            return -1;
        }
        g->bias[g->p.sampling.n_bias++] = (sampler_bias_t){(int32_t)id, (float)d};
    }
    g->p.sampling.bias = g->bias;
    return 0;
}

/* Fields that change nothing for a local server: accepted when well-typed,
 * then ignored (docs/architecture.md, "OpenAI request fields"). */
int field_ignored(const json_t *req, reply_t *r)
{
    static const struct {
        const char *name;
        int type; /* a jansson json_type; JSON_TRUE stands for either boolean */
    } fields[] = {{"store", JSON_TRUE},          {"metadata", JSON_OBJECT},   {"user", JSON_STRING},
                  {"service_tier", JSON_STRING}, {"prediction", JSON_OBJECT}, {"reasoning_effort", JSON_STRING}};
    static const char *const type_names[] = {
        [JSON_OBJECT] = "an object", [JSON_STRING] = "a string", [JSON_TRUE] = "a boolean"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        const json_t *v = json_object_get(req, fields[i].name);
        if (!v || json_is_null(v))
            continue;
        bool ok = fields[i].type == JSON_TRUE ? json_is_boolean(v) : (int)json_typeof(v) == fields[i].type;
        if (!ok) {
            reply_error(r, 400, fields[i].name, "'%s' must be %s", fields[i].name, type_names[fields[i].type]);
            return -1;
        }
    }
    const json_t *effort = json_object_get(req, "reasoning_effort");
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", NULL};
    if (json_is_string(effort) && !field_in_list(json_string_value(effort), efforts)) {
        reply_error(r, 400, "reasoning_effort", "'reasoning_effort' must be one of none, minimal, low, medium, high");
        return -1;
    }
    return 0;
}

/* echo: the prompt's text, prepended to every choice (a token-id prompt
 * detokenised). The prompt tokens' log-probabilities would need a logits
 * row per prompt position, which the serving engine does not keep. */
int field_echo(server_t *s, const json_t *req, gen_req_t *g, reply_t *r)
{
    bool echo = false;
    if (field_bool(req, "echo", &echo, r))
        return -1;
    if (!echo)
        return 0;
    if (g->p.logprobs) {
        reply_error(r, 400, "echo",
                    "'echo' with 'logprobs' is not supported: the prompt tokens' log-probabilities are not computed");
        return -1;
    }
    const json_t *prompt = json_object_get(req, "prompt");
    if (json_is_array(prompt) && json_array_size(prompt) == 1 && json_is_string(json_array_get(prompt, 0)))
        prompt = json_array_get(prompt, 0);
    if (json_is_string(prompt)) {
        g->echo_len = json_string_length(prompt);
        g->echo = malloc(g->echo_len + 1);
        if (g->echo)
            memcpy(g->echo, json_string_value(prompt), g->echo_len + 1);
    } else {
        err_t err;
        if (tok_decode(s->m.tok, g->ids.v, g->ids.n, &g->echo, &g->echo_len, &err)) {
            reply_error(r, 400, "prompt", "%s", err.msg);
            return -1;
        }
    }
    if (!g->echo) {
        reply_nomem(r, "the echoed prompt", g->echo_len + 1);
        return -1;
    }
    return 0;
}
