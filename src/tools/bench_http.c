#include "tools/bench_http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"

#define SSE_MAX_LINE (4u << 20) /* longest SSE line accepted */

int bench_http_init(bench_http_t *h, const char *base_url, const char *api_key, long timeout_s, err_t *err)
{
    memset(h, 0, sizeof *h);
    size_t n = strlen(base_url);
    while (n && base_url[n - 1] == '/')
        n--;
    if (n == 0 || n >= sizeof h->base)
        return err_set(err, "URL '%s' is empty or longer than %zu bytes", base_url, sizeof h->base - 1);
    memcpy(h->base, base_url, n);
    h->base[n] = 0;
    h->api_key = api_key;
    h->timeout_s = timeout_s;
    if (!(h->curl = curl_easy_init()))
        return err_set(err, "curl_easy_init failed");
    return 0;
}

void bench_http_free(bench_http_t *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    h->curl = NULL;
}

typedef struct grow {
    char *p;
    size_t len, cap;
    bool is_over;
} grow_t;

static size_t on_body(char *data, size_t size, size_t nmemb, void *cls)
{
    grow_t *g = cls;
    size_t n = size * nmemb;
    if (g->len + n + 1 > BENCH_HTTP_MAX_BODY) {
        g->is_over = true;
        return 0;
    }
    if (g->len + n + 1 > g->cap) {
        size_t cap = g->cap ? g->cap : 4096;
        while (cap < g->len + n + 1)
            cap *= 2;
        char *q = realloc(g->p, cap);
        if (!q)
            return 0;
        g->p = q;
        g->cap = cap;
    }
    memcpy(g->p + g->len, data, n);
    g->len += n;
    g->p[g->len] = 0;
    return n;
}

static struct curl_slist *headers(const bench_http_t *h, bool has_body)
{
    struct curl_slist *l = NULL;
    if (has_body)
        l = curl_slist_append(l, "Content-Type: application/json");
    if (h->api_key) {
        char auth[512];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", h->api_key);
        l = curl_slist_append(l, auth);
    }
    if (h->session_id[0]) {
        char sid[128];
        snprintf(sid, sizeof sid, "x-session-id: %s", h->session_id);
        l = curl_slist_append(l, sid);
    }
    if (h->request_id[0]) {
        char rid[160];
        snprintf(rid, sizeof rid, "x-request-id: %s", h->request_id);
        l = curl_slist_append(l, rid);
    }
    return l;
}

static void setup(bench_http_t *h, const char *path, struct curl_slist *hdr)
{
    char url[BENCH_URL_MAX + 256];
    snprintf(url, sizeof url, "%s%s", h->base, path);
    CURL *c = h->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, h->timeout_s);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
}

static int exchange(bench_http_t *h, const char *path, const json_t *body, int *status, json_t **out, err_t *err)
{
    *status = 0;
    if (out)
        *out = NULL;
    char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct curl_slist *hdr = headers(h, body != NULL);
    setup(h, path, hdr);
    grow_t g = {0};
    curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &g);
    if (payload)
        curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, payload);
    CURLcode rc = curl_easy_perform(h->curl);
    long code = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdr);
    free(payload);
    if (rc != CURLE_OK) {
        free(g.p);
        return err_set(err, "%s%s: %s", h->base, path, g.is_over ? "response too large" : curl_easy_strerror(rc));
    }
    *status = (int)code;
    if (out && g.p)
        *out = json_loadb(g.p, g.len, 0, NULL);
    free(g.p);
    return 0;
}

int bench_http_get(bench_http_t *h, const char *path, int *status, json_t **out, err_t *err)
{
    return exchange(h, path, NULL, status, out, err);
}

int bench_http_post(bench_http_t *h, const char *path, const json_t *body, int *status, json_t **out, err_t *err)
{
    return exchange(h, path, body, status, out, err);
}

/* ---- SSE ---- */

typedef struct stream_ctx {
    bench_stream_t *s;
    volatile int *is_first_flag;
} stream_ctx_t;

static void add_chunk(bench_stream_t *s, int64_t t, const char *text, size_t len)
{
    if (s->n_chunks == s->cap_chunks) {
        size_t cap = s->cap_chunks ? s->cap_chunks * 2 : 256;
        int64_t *q = realloc(s->chunk_ns, cap * sizeof *q);
        if (!q) {
            s->is_oom = true;
            return;
        }
        s->chunk_ns = q;
        s->cap_chunks = cap;
    }
    s->chunk_ns[s->n_chunks++] = t;
    if (s->text_len + len + 1 > s->text_cap) {
        size_t cap = s->text_cap ? s->text_cap : 1024;
        while (cap < s->text_len + len + 1)
            cap *= 2;
        char *q = realloc(s->text, cap);
        if (!q) {
            s->is_oom = true;
            return;
        }
        s->text = q;
        s->text_cap = cap;
    }
    memcpy(s->text + s->text_len, text, len);
    s->text_len += len;
    s->text[s->text_len] = 0;
}

static int json_int_or(const json_t *o, const char *key, int dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

/* One "data: ..." payload: a completion chunk (text or chat delta), the
 * usage chunk, an error event, or [DONE]. */
static void on_event(stream_ctx_t *c, const char *data, size_t len, int64_t t)
{
    bench_stream_t *s = c->s;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        s->is_done = true;
        return;
    }
    json_t *j = json_loadb(data, len, 0, NULL);
    if (!j) {
        snprintf(s->error, sizeof s->error, "a stream event is not JSON");
        return;
    }
    const json_t *e = json_object_get(j, "error");
    if (e) {
        const char *m = json_string_value(json_object_get(e, "message"));
        snprintf(s->error, sizeof s->error, "stream error: %s", m ? m : "(no message)");
    }
    const json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    if (ch) {
        const json_t *txt = json_object_get(ch, "text");
        if (!txt)
            txt = json_object_get(json_object_get(ch, "delta"), "content");
        if (json_is_string(txt) && json_string_length(txt)) {
            if (!s->t_first_ns) {
                s->t_first_ns = t;
                if (c->is_first_flag)
                    __atomic_store_n(c->is_first_flag, 1, __ATOMIC_RELEASE);
            }
            add_chunk(s, t, json_string_value(txt), json_string_length(txt));
        }
        const char *fr = json_string_value(json_object_get(ch, "finish_reason"));
        if (fr)
            snprintf(s->finish_reason, sizeof s->finish_reason, "%s", fr);
    }
    static const char *const usage_field = "usage.prompt_tokens_details.cached_tokens";
    const json_t *u = json_object_get(j, "usage");
    if (json_is_object(u)) {
        s->prompt_tokens = json_int_or(u, "prompt_tokens", -1);
        s->completion_tokens = json_int_or(u, "completion_tokens", -1);
        int cached = json_int_or(json_object_get(u, "prompt_tokens_details"), "cached_tokens", -1);
        if (cached >= 0) {
            s->cached_tokens = cached;
            s->cached_tokens_field = usage_field;
        }
    }
    /* llama-server also reports the prompt tokens it took from its cache as
     * timings.cache_n (on the last chunk; the only place in its older builds) */
    int cache_n = json_int_or(json_object_get(j, "timings"), "cache_n", -1);
    if (cache_n >= 0 && s->cached_tokens_field != usage_field) {
        s->cached_tokens = cache_n;
        s->cached_tokens_field = "timings.cache_n";
    }
    json_decref(j);
}

static size_t on_stream(char *data, size_t size, size_t nmemb, void *cls)
{
    stream_ctx_t *c = cls;
    bench_stream_t *s = c->s;
    size_t n = size * nmemb;
    int64_t t = clock_now_ns();
    for (size_t i = 0; i < n; i++) {
        char ch = data[i];
        if (ch == '\n') {
            if (s->line_len >= 5 && !memcmp(s->line, "data:", 5)) {
                size_t off = 5;
                while (off < s->line_len && s->line[off] == ' ')
                    off++;
                on_event(c, s->line + off, s->line_len - off, t);
            } else if (s->line_len && s->line[0] == '{') {
                /* a whole JSON error body instead of a stream */
                on_event(c, s->line, s->line_len, t);
            }
            s->line_len = 0;
            continue;
        }
        if (ch == '\r')
            continue;
        if (s->line_len + 1 >= SSE_MAX_LINE)
            return 0;
        if (s->line_len + 1 >= s->line_cap) {
            size_t cap = s->line_cap ? s->line_cap * 2 : 1024;
            char *q = realloc(s->line, cap);
            if (!q)
                return 0;
            s->line = q;
            s->line_cap = cap;
        }
        s->line[s->line_len++] = ch;
    }
    return n;
}

/* Keeps the x-splash-replica header: behind a balancer, which replica
 * served the request (the sessions workload counts reuse per replica). */
static size_t on_header(char *data, size_t size, size_t nmemb, void *cls)
{
    bench_stream_t *s = cls;
    size_t n = size * nmemb;
    static const char name[] = "x-splash-replica:";
    if (n > sizeof name - 1 && !strncasecmp(data, name, sizeof name - 1)) {
        const char *v = data + sizeof name - 1;
        size_t len = n - (sizeof name - 1);
        while (len && (*v == ' ' || *v == '\t'))
            v++, len--;
        while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
            len--;
        if (len < sizeof s->replica) {
            memcpy(s->replica, v, len);
            s->replica[len] = 0;
        }
    }
    return n;
}

int bench_http_stream(bench_http_t *h, const char *path, const json_t *body, bench_stream_t *s,
                      volatile int *is_first_flag, err_t *err)
{
    memset(s, 0, sizeof *s);
    s->prompt_tokens = s->completion_tokens = s->cached_tokens = -1;
    char *payload = json_dumps(body, JSON_COMPACT);
    if (!payload)
        return err_set(err, "out of memory");
    struct curl_slist *hdr = headers(h, true);
    setup(h, path, hdr);
    stream_ctx_t c = {s, is_first_flag};
    curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_stream);
    curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &c);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, s);
    s->t_submit_ns = clock_now_ns();
    CURLcode rc = curl_easy_perform(h->curl);
    s->t_end_ns = clock_now_ns();
    if (s->line_len && s->line[0] == '{')
        on_event(&c, s->line, s->line_len, s->t_end_ns); /* an error body without a final newline */
    long code = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
    s->status = (int)code;
    curl_slist_free_all(hdr);
    free(payload);
    if (rc != CURLE_OK)
        return err_set(err, "%s%s: %s", h->base, path, curl_easy_strerror(rc));
    if (s->is_oom)
        return err_set(err, "out of memory reading the stream");
    return 0;
}

void bench_stream_free(bench_stream_t *s)
{
    free(s->chunk_ns);
    free(s->text);
    free(s->line);
    memset(s, 0, sizeof *s);
}
