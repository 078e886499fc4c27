/* Fuzz target: request validation of every JSON endpoint, called in process
 * the way server/http.c's dispatch calls them (body parsed by json_body_load,
 * objects only, nesting bounded), against a server whose engine runs the demo
 * model with a queue of size 0. Every request that passes validation, the
 * engine's own included (stop strings, grammar masks, KV budget), is
 * answered 429 at admission, so nothing generates and each input costs only
 * its validation. The first byte picks the endpoint; the rest is the body. */
#include <jansson.h>

#include "engine/engine.h"
#include "fuzz_common.h"
#include "server/internal.h"
#include "server/json_body.h"

typedef void (*handler_fn)(server_t *s, json_t *req, reply_t *r);

static const handler_fn handlers[] = {api_chat,     api_completions,    api_tokenize,  api_detokenize,
                                      api_messages, api_messages_count, api_responses, api_apply_template};
#define N_HANDLERS (sizeof handlers / sizeof handlers[0])

/* Each child's depth once: walking it twice per level (as this did) took
 * 2^depth walks, 85-112 s for two 2-4 KB inputs a campaign found
 * (corpus/request/slow-harness-depth-*; the server's own check in http.c
 * walks once). */
static int depth(const json_t *v)
{
    int d = 0, dx;
    const char *key;
    json_t *x;
    size_t i;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, key, x) if ((dx = depth(x)) > d) d = dx;
    if (json_is_array(v))
        json_array_foreach(v, i, x) if ((dx = depth(x)) > d) d = dx;
    return d + (json_is_object(v) || json_is_array(v));
}

static server_t *fuzz_server(void)
{
    static server_t *s;
    if (s)
        return s;
    fuzz_model_t *fm = fuzz_demo();
    engine_config_t ec;
    engine_config_default(&ec);
    ec.n_threads = 1;
    ec.max_seqs = 2;
    ec.batch_tokens = 16;
    ec.prefill_chunk = 16;
    ec.max_context = 2048;
    ec.queue_size = 0;        /* admission refuses everything: validation only */
    ec.max_memory = 1u << 30; /* the demo model needs a few MiB */
    err_t err;
    engine_t *e = engine_create(fm->model, &fm->vocab, &ec, &err);
    if (!e || !(s = calloc(1, sizeof *s))) {
        fprintf(stderr, "fuzz: engine: %s\n", err.msg);
        abort();
    }
    server_config_default(&s->cfg);
    s->m = (server_model_t){.model = fm->model,
                            .vocab = &fm->vocab,
                            .tok = fm->tok,
                            .engine = e,
                            .path = SPLASH_FUZZ_DEMO,
                            .id = "demo",
                            .sha256 = "0"};
    atomic_store(&s->is_ready, true);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    server_t *s = fuzz_server();
    handler_fn handle = handlers[data[0] % N_HANDLERS];
    json_t *req = NULL;
    json_error_t jerr;
    char where[256];
    bool takes_seed = handle == api_chat || handle == api_completions || handle == api_messages;
    if (json_body_load((const char *)data + 1, size - 1, takes_seed ? "seed" : NULL, &req, &jerr) != JSON_BODY_OK ||
        !json_is_object(req) || depth(req) > SERVER_MAX_JSON_DEPTH || json_body_nul_at(req, where, sizeof where)) {
        json_decref(req);
        return 0;
    }
    reply_t r = {.status = 200};
    handle(s, req, &r);
    if (getenv("SPLASH_FUZZ_VERBOSE")) { /* what each seed reaches: 429 is "valid, refused at admission" */
        char *body = r.body ? json_dumps(r.body, JSON_COMPACT) : NULL;
        fprintf(stderr, "  %d %.200s\n", r.status, body ? body : "");
        free(body);
    }
    if (r.stream || (r.status != 200 && !r.body))
        abort(); /* nothing is admitted (queue 0), so nothing streams; every refusal has a body */
    if (r.stream_free)
        r.stream_free(r.stream);
    json_decref(r.body);
    json_decref(req);
    return 0;
}
