/* Structured output at the API (structured.h): request fields to one engine
 * constraint, and the model's output parsed back into reasoning, content
 * and tool calls. */
#include "server/structured.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema.h"

/* ------------------------------------------------------ grammar cache */

typedef struct cache_entry {
    char *key; /* the grammar's source, with its kind */
    grammar_t *g;
    uint64_t used; /* last use (a counter) */
} cache_entry_t;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_entry_t cache[SERVER_GRAMMAR_CACHE];
static uint64_t cache_clock;

/* A new reference to the cached grammar for key, or NULL. */
static grammar_t *cache_get(const char *key)
{
    grammar_t *g = NULL;
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < SERVER_GRAMMAR_CACHE; i++)
        if (cache[i].key && !strcmp(cache[i].key, key)) {
            cache[i].used = ++cache_clock;
            g = grammar_ref(cache[i].g);
            break;
        }
    pthread_mutex_unlock(&cache_mu);
    return g;
}

static void cache_put(const char *key, grammar_t *g)
{
    char *k = strdup(key);
    if (!k)
        return;
    pthread_mutex_lock(&cache_mu);
    int victim = 0;
    for (int i = 0; i < SERVER_GRAMMAR_CACHE; i++) {
        if (!cache[i].key) {
            victim = i;
            break;
        }
        if (cache[i].used < cache[victim].used)
            victim = i;
    }
    free(cache[victim].key);
    grammar_unref(cache[victim].g);
    cache[victim] = (cache_entry_t){k, grammar_ref(g), ++cache_clock};
    pthread_mutex_unlock(&cache_mu);
}

void structured_cache_clear(void)
{
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < SERVER_GRAMMAR_CACHE; i++) {
        free(cache[i].key);
        grammar_unref(cache[i].g);
        cache[i] = (cache_entry_t){0};
    }
    pthread_mutex_unlock(&cache_mu);
}

/* ------------------------------------------------------ request fields */

static char *dump(const json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
}

/* The grammar for a compiled source: cached, or built by build(). */
static grammar_t *cached(const char *kind, const char *source, grammar_t *(*build)(const void *, err_t *),
                         const void *arg, err_t *err)
{
    size_t n = strlen(kind) + strlen(source) + 2;
    char *key = malloc(n);
    if (!key) {
        err_set(err, "out of memory");
        return NULL;
    }
    snprintf(key, n, "%s:%s", kind, source);
    grammar_t *g = cache_get(key);
    if (!g && (g = build(arg, err)))
        cache_put(key, g);
    free(key);
    return g;
}

static grammar_t *build_schema(const void *schema, err_t *err)
{
    return grammar_from_json_schema(schema, GR_JSON_WS_COMPACT, err);
}

static grammar_t *build_object(const void *unused, err_t *err)
{
    (void)unused;
    return grammar_json_object(GR_JSON_WS_COMPACT, err);
}

static grammar_t *build_gbnf(const void *text, err_t *err)
{
    return grammar_from_gbnf(text, strlen(text), err);
}

/* response_format: text, json_object, json_schema {name, schema, strict, description}. */
static int parse_response_format(const json_t *v, grammar_t **out, reply_t *r)
{
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    const json_t *t = json_is_object(v) ? json_object_get(v, "type") : NULL;
    const char *type = json_is_string(t) ? json_string_value(t) : "";
    err_t err;
    if (!strcmp(type, "text")) {
        return 0;
    } else if (!strcmp(type, "json_object")) {
        *out = cached("json_object", "", build_object, NULL, &err);
    } else if (!strcmp(type, "json_schema")) {
        const json_t *js = json_object_get(v, "json_schema");
        if (!json_is_object(js)) {
            reply_error(r, 400, "response_format.json_schema", "'response_format.json_schema' must be an object");
            return -1;
        }
        const char *key;
        json_t *x;
        json_object_foreach((json_t *)js, key, x)
        {
            if (strcmp(key, "name") && strcmp(key, "schema") && strcmp(key, "strict") && strcmp(key, "description")) {
                reply_error(r, 400, "response_format.json_schema", "unknown field 'response_format.json_schema.%s'",
                            key);
                return -1;
            }
        }
        const json_t *name = json_object_get(js, "name"), *strict = json_object_get(js, "strict");
        if (!json_is_string(name) || !json_string_length(name) || json_string_length(name) > 64 ||
            strspn(json_string_value(name), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                json_string_length(name)) {
            reply_error(r, 400, "response_format.json_schema.name",
                        "'response_format.json_schema.name' must be 1 to 64 of a-z, A-Z, 0-9, _ and -");
            return -1;
        }
        if (strict && !json_is_boolean(strict) && !json_is_null(strict)) {
            reply_error(r, 400, "response_format.json_schema.strict", "'strict' must be a boolean");
            return -1;
        }
        const json_t *schema = json_object_get(js, "schema");
        if (!schema || json_is_null(schema)) {
            *out = cached("json_object", "", build_object, NULL, &err);
        } else {
            char *src = dump(schema);
            *out = src ? cached("schema", src, build_schema, schema, &err) : NULL;
            if (!src)
                err_set(&err, "out of memory");
            free(src);
        }
        if (!*out) {
            reply_error(r, 400, "response_format.json_schema.schema", "invalid schema: %s", err.msg);
            return -1;
        }
        return 0;
    } else {
        reply_error(r, 400, "response_format.type",
                    "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"");
        return -1;
    }
    if (!*out) {
        reply_error(r, 500, "response_format", "%s", err.msg);
        return -1;
    }
    return 0;
}

/* One validated entry of `tools`. */
typedef struct tool {
    const char *name;
    const json_t *parameters; /* an object schema, or NULL (no parameters) */
    bool is_strict;
} tool_t;

static int parse_tools(const json_t *tools, tool_t *out, int *n_out, reply_t *r)
{
    *n_out = 0;
    if (!tools || json_is_null(tools))
        return 0;
    if (!json_is_array(tools) || json_array_size(tools) > SERVER_MAX_TOOLS) {
        reply_error(r, 400, "tools", "'tools' must be an array of at most %d tools", SERVER_MAX_TOOLS);
        return -1;
    }
    size_t i;
    json_t *t;
    char param[64];
    json_array_foreach(tools, i, t)
    {
        snprintf(param, sizeof param, "tools[%zu]", i);
        const json_t *type = json_object_get(t, "type"), *fn = json_object_get(t, "function");
        if (!json_is_object(t) || !json_is_string(type) || strcmp(json_string_value(type), "function")) {
            reply_error(r, 400, param, "%s.type must be \"function\"", param);
            return -1;
        }
        if (!json_is_object(fn)) {
            reply_error(r, 400, param, "%s.function must be an object", param);
            return -1;
        }
        const json_t *name = json_object_get(fn, "name"), *params = json_object_get(fn, "parameters"),
                     *strict = json_object_get(fn, "strict");
        if (!json_is_string(name) || !json_string_length(name) || json_string_length(name) > 64 ||
            strspn(json_string_value(name), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
                json_string_length(name)) {
            snprintf(param, sizeof param, "tools[%zu].function.name", i);
            reply_error(r, 400, param, "%s must be 1 to 64 of a-z, A-Z, 0-9, _, . and -", param);
            return -1;
        }
        for (int k = 0; k < *n_out; k++)
            if (!strcmp(out[k].name, json_string_value(name))) {
                snprintf(param, sizeof param, "tools[%zu].function.name", i);
                reply_error(r, 400, param, "%s: the tool '%s' is defined twice", param, json_string_value(name));
                return -1;
            }
        if (params && !json_is_null(params)) {
            const json_t *pt = json_object_get(params, "type");
            if (!json_is_object(params) || (pt && (!json_is_string(pt) || strcmp(json_string_value(pt), "object")))) {
                snprintf(param, sizeof param, "tools[%zu].function.parameters", i);
                reply_error(r, 400, param, "%s must be a JSON Schema object with \"type\": \"object\"", param);
                return -1;
            }
        }
        if (strict && !json_is_boolean(strict) && !json_is_null(strict)) {
            snprintf(param, sizeof param, "tools[%zu].function.strict", i);
            reply_error(r, 400, param, "%s must be a boolean", param);
            return -1;
        }
        out[*n_out] = (tool_t){json_string_value(name), json_is_object(params) ? params : NULL, json_is_true(strict)};
        (*n_out)++;
    }
    return 0;
}

/* The tool-call grammar: calls ::= call ("\n" call)*  (one call when not
 * parallel); call ::= "<tool_call>\n" '{"name": "' NAME '", "arguments": '
 * ARGS "}\n</tool_call>", NAME over the allowed tools (only the named one
 * for a named tool_choice), ARGS each tool's parameters schema in the
 * template's spacing, or any object where a non-strict tool's schema is
 * outside the subset. */
typedef struct tools_src {
    const tool_t *tools;
    int n_tools;
    const char *only; /* a named tool_choice, or NULL */
    bool is_parallel;
    char bad_param[64]; /* out: the tool whose schema failed */
} tools_src_t;

static grammar_t *build_tools(const void *arg, err_t *err)
{
    tools_src_t *ts = (tools_src_t *)arg;
    gr_builder_t *b = gr_builder_new();
    if (!b) {
        err_set(err, "out of memory");
        return NULL;
    }
    int alts[SERVER_MAX_TOOLS], n_alts = 0;
    for (int i = 0; i < ts->n_tools; i++) {
        const tool_t *t = &ts->tools[i];
        if (ts->only && strcmp(ts->only, t->name))
            continue;
        char head[160];
        int n_head = snprintf(head, sizeof head, "{\"name\": \"%s\", \"arguments\": ", t->name);
        int args;
        if (!t->parameters) {
            args = gr_literal(b, "{}", 2);
        } else {
            /* a trial in a scratch builder, since a failure fails the builder:
             * a strict tool's schema must compile; a non-strict one outside
             * the subset gets any object */
            err_t serr;
            gr_builder_t *trial = gr_builder_new();
            bool is_ok = trial && gr_json_schema(trial, t->parameters, GR_JSON_WS_SPACED, &serr) >= 0;
            gr_builder_free(trial);
            if (!is_ok && t->is_strict) {
                snprintf(ts->bad_param, sizeof ts->bad_param, "tools[%d].function.parameters", i);
                err_set(err, "%s", trial ? serr.msg : "out of memory");
                gr_builder_free(b);
                return NULL;
            }
            args = is_ok ? gr_json_schema(b, t->parameters, GR_JSON_WS_SPACED, &serr)
                         : gr_json_object(b, GR_JSON_WS_SPACED);
        }
        int parts[3] = {gr_literal(b, head, (size_t)n_head), args, gr_literal(b, "}", 1)};
        alts[n_alts++] = gr_seq(b, parts, 3);
    }
    int body = gr_choice(b, alts, n_alts);
    int call_parts[3] = {gr_literal(b, "<tool_call>\n", 12), body, gr_literal(b, "\n</tool_call>", 13)};
    int call = gr_seq(b, call_parts, 3);
    int root = call;
    if (ts->is_parallel) {
        int more_parts[2] = {gr_literal(b, "\n", 1), call};
        int more = gr_repeat(b, gr_seq(b, more_parts, 2), 0, GR_INF);
        int all[2] = {call, more};
        root = gr_seq(b, all, 2);
    }
    grammar_t *g = gr_build(b, root, err);
    gr_builder_free(b);
    return g;
}

static int parse_tool_choice(const json_t *req, const tool_t *tools, int n_tools, structured_req_t *out, reply_t *r)
{
    const json_t *tc = json_object_get(req, "tool_choice"), *par = json_object_get(req, "parallel_tool_calls");
    if (par && !json_is_null(par) && !json_is_boolean(par)) {
        reply_error(r, 400, "parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
        return -1;
    }
    const char *mode = "auto", *only = NULL;
    if (tc && !json_is_null(tc)) {
        if (json_is_string(tc)) {
            mode = json_string_value(tc);
            if (strcmp(mode, "auto") && strcmp(mode, "none") && strcmp(mode, "required")) {
                reply_error(r, 400, "tool_choice",
                            "'tool_choice' must be \"auto\", \"none\", \"required\" or "
                            "{\"type\": \"function\", \"function\": {\"name\": ...}}");
                return -1;
            }
        } else {
            const json_t *type = json_object_get(tc, "type"), *fn = json_object_get(tc, "function");
            const json_t *name = json_is_object(fn) ? json_object_get(fn, "name") : NULL;
            if (!json_is_object(tc) || !json_is_string(type) || strcmp(json_string_value(type), "function") ||
                !json_is_string(name)) {
                reply_error(
                    r, 400, "tool_choice",
                    "'tool_choice' as an object must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
                return -1;
            }
            only = json_string_value(name);
            mode = "named";
            bool is_known = false;
            for (int i = 0; i < n_tools; i++)
                is_known |= !strcmp(tools[i].name, only);
            if (!is_known) {
                reply_error(r, 400, "tool_choice", "'tool_choice' names the function '%s', which is not in 'tools'",
                            only);
                return -1;
            }
        }
    }
    if (n_tools == 0) {
        if (strcmp(mode, "auto") && strcmp(mode, "none")) {
            reply_error(r, 400, "tool_choice", "'tool_choice' %s needs 'tools'", mode);
            return -1;
        }
        return 0;
    }
    if (!strcmp(mode, "none"))
        return 0;
    out->has_tools = true;
    tools_src_t ts = {tools, n_tools, only, !json_is_false(par), ""};
    /* the source: the tools as given, and the choice */
    json_t *key_j =
        json_pack("{s:O,s:s?,s:b}", "tools", json_object_get(req, "tools"), "only", only, "parallel", ts.is_parallel);
    char *src = key_j ? dump(key_j) : NULL;
    json_decref(key_j);
    err_t err = {0};
    grammar_t *g = src ? cached("tools", src, build_tools, &ts, &err) : NULL;
    free(src);
    if (!g) {
        reply_error(r, 400, ts.bad_param[0] ? ts.bad_param : "tools", "%s", err.msg[0] ? err.msg : "out of memory");
        return -1;
    }
    out->spec.grammar = g;
    out->spec.trigger = !strcmp(mode, "auto") ? SERVER_TOOL_TRIGGER : NULL;
    return 0;
}

int structured_parse(server_t *s, const json_t *req, bool is_chat, int enable_thinking, structured_req_t *out,
                     reply_t *r)
{
    (void)s;
    memset(out, 0, sizeof *out);
    grammar_t *rf = NULL, *gb = NULL;
    if (parse_response_format(json_object_get(req, "response_format"), &rf, r))
        return -1;
    const json_t *gv = json_object_get(req, "grammar");
    if (gv && !json_is_null(gv)) {
        err_t err;
        if (!json_is_string(gv) || !json_string_length(gv) || json_string_length(gv) > GR_MAX_GBNF_BYTES) {
            grammar_unref(rf);
            reply_error(r, 400, "grammar", "'grammar' must be GBNF text of 1 to %u bytes", GR_MAX_GBNF_BYTES);
            return -1;
        }
        if (!(gb = cached("gbnf", json_string_value(gv), build_gbnf, json_string_value(gv), &err))) {
            grammar_unref(rf);
            reply_error(r, 400, "grammar", "invalid grammar: %s", err.msg);
            return -1;
        }
    }
    if (rf && gb) {
        grammar_unref(rf);
        grammar_unref(gb);
        reply_error(r, 400, "grammar", "'grammar' and a JSON 'response_format' cannot be combined");
        return -1;
    }
    out->spec.grammar = rf ? rf : gb;
    out->is_thinking = is_chat && enable_thinking != 0;
    if (!is_chat)
        return 0;
    tool_t tools[SERVER_MAX_TOOLS];
    int n_tools = 0;
    if (parse_tools(json_object_get(req, "tools"), tools, &n_tools, r))
        goto bad;
    if (out->spec.grammar) {
        /* an answer format and a tool grammar would both claim the output */
        const json_t *tc = json_object_get(req, "tool_choice");
        bool is_none = json_is_string(tc) && !strcmp(json_string_value(tc), "none");
        if (n_tools && !is_none) {
            reply_error(r, 400, "tools",
                        "'tools' with a constrained response_format or grammar needs tool_choice \"none\"");
            goto bad;
        }
        if (json_object_get(req, "tool_choice") && !json_is_null(tc) && !is_none) {
            reply_error(r, 400, "tool_choice", "'tool_choice' needs 'tools'");
            goto bad;
        }
    } else if (parse_tool_choice(req, tools, n_tools, out, r)) {
        goto bad;
    }
    out->spec.has_think = out->spec.grammar && out->is_thinking && !out->spec.trigger;
    return 0;
bad:
    structured_free(out);
    return -1;
}

void structured_free(structured_req_t *sr)
{
    grammar_unref(sr->spec.grammar);
    sr->spec.grammar = NULL;
}

/* ------------------------------------------------------ output parsing */

enum {
    P_START,       /* thinking: does the answer open <think>? */
    P_THINK_START, /* just after <think>: its newline is dropped */
    P_THINK,       /* inside <think> */
    P_AFTER_THINK, /* whitespace after </think> is dropped */
    P_CONTENT,     /* the answer */
    P_CALL,        /* inside <tool_call> ... </tool_call> */
    P_BETWEEN,     /* whitespace after a tool call */
};

static const char THINK_OPEN[] = "<think>", THINK_CLOSE[] = "</think>";
static const char CALL_OPEN[] = "<tool_call>", CALL_CLOSE[] = "</tool_call>";

void out_parser_init(out_parser_t *p, const structured_req_t *sr)
{
    memset(p, 0, sizeof *p);
    p->has_tools = sr && sr->has_tools;
    p->is_thinking = sr && sr->is_thinking;
    p->state = p->is_thinking ? P_START : P_CONTENT;
}

void out_parser_free(out_parser_t *p)
{
    for (int i = 0; i < p->n_calls; i++) {
        free(p->calls[i].name);
        free(p->calls[i].arguments);
    }
    free(p->hold);
    memset(p, 0, sizeof *p);
}

void out_delta_free(out_delta_t *d)
{
    free(d->reasoning);
    free(d->content);
    memset(d, 0, sizeof *d);
}

static void append(char **buf, size_t *n, const char *s, size_t k)
{
    if (!k)
        return;
    char *b = realloc(*buf, *n + k + 1);
    if (!b)
        return;
    memcpy(b + *n, s, k);
    *n += k;
    b[*n] = 0;
    *buf = b;
}

/* Appends to the held text, its capacity doubling (a long tool call's body
 * is held piece by piece until </tool_call>). */
static void hold_put(out_parser_t *p, const char *s, size_t k)
{
    if (p->n_hold + k > p->cap_hold) {
        size_t cap = p->cap_hold ? p->cap_hold : 256;
        while (cap < p->n_hold + k)
            cap *= 2;
        char *b = realloc(p->hold, cap);
        if (!b)
            return;
        p->hold = b;
        p->cap_hold = cap;
    }
    if (k)
        memcpy(p->hold + p->n_hold, s, k);
    p->n_hold += k;
}

/* The first occurrence of tag in s[0..n), or the length of s minus the
 * longest suffix that could begin it (*found false). */
static size_t scan(const char *s, size_t n, const char *tag, bool *found)
{
    size_t k = strlen(tag);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(s + i, tag, k)) {
            *found = true;
            return i;
        }
    *found = false;
    size_t keep = n < k - 1 ? n : k - 1;
    for (; keep > 0; keep--)
        if (!memcmp(s + n - keep, tag, keep))
            break;
    return n - keep;
}

/* A finished call body: {"name": ..., "arguments": {...} | "..."}. */
static bool take_call(out_parser_t *p, const char *body, size_t n)
{
    if (p->n_calls == SERVER_MAX_TOOL_CALLS)
        return false;
    json_error_t je;
    json_t *j = json_loadb(body, n, JSON_DECODE_ANY, &je);
    const json_t *name = json_object_get(j, "name"), *args = json_object_get(j, "arguments");
    if (!json_is_object(j) || !json_is_string(name) || !(json_is_object(args) || json_is_string(args))) {
        json_decref(j);
        return false;
    }
    tool_call_out_t *c = &p->calls[p->n_calls];
    c->name = strdup(json_string_value(name));
    c->arguments = json_is_string(args) ? strdup(json_string_value(args)) : json_dumps(args, JSON_COMPACT);
    json_decref(j);
    if (!c->name || !c->arguments) {
        free(c->name);
        free(c->arguments);
        return false;
    }
    static atomic_uint_fast64_t next_call;
    snprintf(c->id, sizeof c->id, "call_%016" PRIx64,
             (uint64_t)((atomic_fetch_add(&next_call, 1) + 1) * 0x9E3779B97F4A7C15ull));
    p->n_calls++;
    return true;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* One step of out_parser_feed's state machine: s holds the left bytes of
 * the hold not yet consumed; a step consumes a prefix of them (adding it
 * to *at), moves what it parsed into d and may change p->state. True when
 * the next state may consume more of s at once. */
typedef bool parse_step_fn(out_parser_t *p, const char *s, size_t left, bool is_end, out_delta_t *d, size_t *at);

/* Reasoning comes first when the answer opens with <think>. */
static bool step_start(out_parser_t *p, const char *s, size_t left, bool is_end, out_delta_t *d, size_t *at)
{
    (void)d;
    if (left >= 7 && !memcmp(s, THINK_OPEN, 7)) {
        *at += 7;
        p->state = P_THINK_START;
        return true;
    }
    if (left >= 7 || (left && memcmp(s, THINK_OPEN, left)) || is_end) {
        p->state = P_CONTENT;
        return true;
    }
    return false;
}

/* The newline after <think> is the template's, not the reasoning's. */
static bool step_think_start(out_parser_t *p, const char *s, size_t left, bool is_end, out_delta_t *d, size_t *at)
{
    (void)d;
    if (!left && !is_end)
        return false;
    if (left)
        *at += *s == '\n';
    p->state = P_THINK;
    return true;
}

static bool step_think(out_parser_t *p, const char *s, size_t left, bool is_end, out_delta_t *d, size_t *at)
{
    bool found = false;
    size_t i = scan(s, left, THINK_CLOSE, &found);
    if (found || is_end) {
        size_t t = found ? i : left;
        while (t && s[t - 1] == '\n')
            t--; /* the template strips the reasoning's newlines */
        append(&d->reasoning, &d->n_reasoning, s, t);
        *at += found ? i + strlen(THINK_CLOSE) : left;
        p->state = P_AFTER_THINK;
        return found;
    }
    while (i && s[i - 1] == '\n')
        i--; /* newlines wait: they may end the reasoning */
    append(&d->reasoning, &d->n_reasoning, s, i);
    *at += i;
    return false;
}

/* White space after the reasoning or between calls is dropped. */
static bool step_between(out_parser_t *p, const char *s, size_t left, bool is_end, out_delta_t *d, size_t *at)
{
    (void)is_end, (void)d;
    while (left && is_space(*s))
        s++, (*at)++, left--;
    if (!left)
        return false;
    p->state = P_CONTENT;
    return true;
}

static bool step_content(out_parser_t *p, const char *s, size_t left, bool is_end, out_delta_t *d, size_t *at)
{
    if (!p->has_tools) {
        append(&d->content, &d->n_content, s, left);
        *at += left;
        return false;
    }
    bool found = false;
    size_t i = scan(s, left, CALL_OPEN, &found);
    if (is_end && !found)
        i = left;
    append(&d->content, &d->n_content, s, i);
    *at += i;
    if (!found)
        return false;
    *at += strlen(CALL_OPEN);
    p->state = P_CALL;
    p->n_call_clear = 0;
    return true;
}

static bool step_call(out_parser_t *p, const char *s, size_t left, bool is_end, out_delta_t *d, size_t *at)
{
    /* the body stays at the start of what is held until the call ends, so
     * what earlier pieces cleared is not scanned again */
    bool found = false;
    size_t i = p->n_call_clear + scan(s + p->n_call_clear, left - p->n_call_clear, CALL_CLOSE, &found);
    p->n_call_clear = found ? 0 : i;
    if (found) {
        if (take_call(p, s, i)) {
            p->state = P_BETWEEN;
        } else {
            /* not a call after all: the text goes out as it came */
            append(&d->content, &d->n_content, CALL_OPEN, strlen(CALL_OPEN));
            append(&d->content, &d->n_content, s, i + strlen(CALL_CLOSE));
            p->state = P_CONTENT;
        }
        *at += i + strlen(CALL_CLOSE);
        return true;
    }
    if (is_end) {
        /* cut off (max_tokens): the partial call is content */
        append(&d->content, &d->n_content, CALL_OPEN, strlen(CALL_OPEN));
        append(&d->content, &d->n_content, s, left);
        *at += left;
        p->state = P_CONTENT;
    }
    return false;
}

/* The step for each state. */
static parse_step_fn *const parse_steps[] = {
    [P_START] = step_start,         [P_THINK_START] = step_think_start, [P_THINK] = step_think,
    [P_AFTER_THINK] = step_between, [P_BETWEEN] = step_between,         [P_CONTENT] = step_content,
    [P_CALL] = step_call,
};

void out_parser_feed(out_parser_t *p, const char *text, size_t n, bool is_end, out_delta_t *d)
{
    memset(d, 0, sizeof *d);
    d->first_call = p->n_calls;
    hold_put(p, text, n);
    size_t at = 0; /* bytes of hold consumed */
    for (bool is_progress = true; is_progress;)
        is_progress = parse_steps[p->state](p, p->hold ? p->hold + at : "", p->n_hold - at, is_end, d, &at);
    if (at) { /* hold is NULL until the first byte arrives (an empty answer) */
        memmove(p->hold, p->hold + at, p->n_hold - at);
        p->n_hold -= at;
    }
    d->n_new_calls = p->n_calls - d->first_call;
}

json_t *out_call_json(const out_parser_t *p, int i, bool is_stream)
{
    const tool_call_out_t *c = &p->calls[i];
    json_t *j = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", c->id, "type", "function", "function", "name", c->name,
                          "arguments", c->arguments);
    if (is_stream && j)
        json_object_set_new(j, "index", json_integer(i));
    return j;
}

void think_counter_feed(think_counter_t *tc, const char *text, size_t n)
{
    static const char open[] = "<think>", close[] = "</think>";
    if (tc->state == 2)
        return;
    tc->n++; /* a token with no text yet (held back) belongs where the answer is */
    for (size_t i = 0; i < n && tc->state != 2; i++) {
        if (tc->state == 0) {
            if (text[i] != open[tc->matched]) {
                tc->n = 0; /* not a reasoning answer */
                tc->state = 2;
            } else if (++tc->matched == (int)strlen(open)) {
                tc->state = 1;
                tc->matched = 0;
            }
        } else if (text[i] == close[tc->matched]) {
            if (++tc->matched == (int)strlen(close))
                tc->state = 2;
        } else {
            tc->matched = text[i] == close[0]; /* '<' occurs in "</think>" only at its start */
        }
    }
}
