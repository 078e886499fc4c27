/* splash serve: the HTTP server over the engine. Listens first (so /health
 * and /ready answer while the model loads), loads the model, prints one
 * ready line with the URL, and on SIGINT / SIGTERM drains: new requests get
 * 503, in-flight ones have --drain-timeout to finish, the rest are
 * cancelled; then it exits 0. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/cli.h"
#include "base/sha256.h"
#include "cli/commands.h"
#include "cli/engine_opts.h"
#include "engine/engine.h"
#include "model/kv.h"
#include "server/server.h"
#include "text/tokenizer.h"

#define SERVE_DEFAULT_DRAIN_S 30

static const char serve_usage[] =
    "usage: splash serve [--model FILE] [options]\n"
    "\n"
    "OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions (streaming or not),\n"
    "/tokenize, /detokenize, /apply-template, /v1/models, /health, /ready, /status, /metrics.\n"
    "\n"
    "  --model FILE           GGUF model (default: the built-in model, %s)\n"
    "  --host ADDR            address to bind (default 127.0.0.1; 0.0.0.0 for every interface)\n"
    "  --port N               port (default %d; 0: any free port)\n"
    "  --api-key KEY          require this key (Authorization: Bearer KEY or x-api-key); also SPLASH_API_KEY\n"
    "  --allowed-host NAME    accept this Host header besides localhost names (repeatable)\n"
    "  --max-body BYTES       largest request body (default %u)\n"
    "  --max-connections N    concurrent connections; a few more are answered 503 at once (default %d)\n"
    "  --queue-size N         requests waiting for a sequence slot before 429 (>= 1, default %d)\n"
    "  --request-timeout S    seconds a request may take (default %d)\n"
    "  --header-timeout S     seconds a client has to send a whole request head, also the idle limit of a\n"
    "                         kept-alive connection (default %d)\n"
    "  --body-timeout S       seconds a client has to send a whole request body (default %d)\n"
    "  --cors-origin ORIGIN   let browser pages from ORIGIN (scheme://host[:port], or *) call the API\n"
    "                         (repeatable; default: no cross-origin access)\n"
    "  --drain-timeout S      seconds in-flight requests get on shutdown (default %d)\n"
    "  --replica-id NAME      name this replica behind a balancer: in /status, /metrics labels and an\n"
    "                         x-splash-replica response header ([A-Za-z0-9._-], at most 64)\n"
    "engine:\n"
    "  --threads N            kernel threads (default: CPUs available, %d)\n"
    "  --max-seqs N           sequences decoding or prefilling at once (default %d)\n"
    "  --batch-tokens N       rows per engine step (default %d)\n"
    "  --prefill-chunk N      prompt rows one sequence may take per step (default %d)\n"
    "  --max-context N        tokens per sequence (default: min(model context, %d))\n"
    "  --max-memory BYTES     weights + KV + scratch limit, suffix K/M/G allowed (default: 90%% of available)\n"
    "speculative decoding (output is identical with or without it):\n"
    "  --draft ngram|mtp|none|FILE  drafter: n-gram prompt lookup over the sequence's own history, the\n"
    "                         model's own MTP block (qwen35 files with one), or a smaller\n"
    "                         GGUF model with the same tokenizer (default none)\n"
    "  --draft-max K          drafted tokens per sequence per step (default 4, at most 16)\n"
    "  --verify-rows all|auto|N  verify every draft, an adaptive width (default), or at most N\n"
    "  --kv-type f16|f32|q8_0  the KV cache's element type (default f16: keys and values rounded to half\n"
    "                         precision when stored; f32 keeps them exact at twice the memory; q8_0\n"
    "                         blocks of 32 int8 and an f16 scale, 17/32 of f16's, for heads a multiple\n"
    "                         of 32 wide)\n"
    "  --spec-rollback snapshot|replay  hybrid models: a rejected draft restores the state snapshot after\n"
    "                         the last accepted row (default), or the one after the newest token and\n"
    "                         the accepted rows run again next step\n"
    "  --state-type f32|f16   hybrid models: the Gated DeltaNet state between tokens (default f32, as\n"
    "                         llama.cpp keeps it; f16 halves its memory, snapshots and the bytes a decode\n"
    "                         token moves, rounding the state to half precision after every token)\n"
    "  --prefault idle|off    fault in the KV store's and the recurrent state's pages while the engine\n"
    "                         has nothing to run, so requests do not pay for their first touch (default\n"
    "                         idle: the memory the plan reserves is committed over the first idle\n"
    "                         seconds, leaving the host 10%% of its memory; off: each page when first\n"
    "                         written)\n"
    "tracing:\n"
    "  --trace-capacity N     record engine trace events into a preallocated buffer of N events\n"
    "  --trace-out FILE       where the capture is written (JSON Lines): at shutdown and on POST /trace/dump\n"
    "TEST ONLY (fault knobs that break one property, so benchmark validity checks can be tested):\n"
    "  --test-step-delay-us N     busy-wait N microseconds after every forward pass\n"
    "  --test-ignore-cache-salt   share cached prefixes across cache_salt values\n"
    "  --test-no-prefix-cache     reuse no cached prefix (every request prefills its whole prompt)\n"
    "  --test-serialize-prefill   hold decode rows back while any request prefills\n"
    "  --test-truncate-output     end every request at half its max_tokens\n";

typedef struct serve_opts {
    const char *model;
    server_config_t srv;
    engine_config_t eng;
    int64_t drain_s;
    const char *draft_path;
    int64_t trace_capacity;
    const char *trace_out;
} serve_opts_t;

static int parse_bytes(const char *flag, const char *v, uint64_t *out, err_t *err)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    uint64_t mult = 1;
    if (end != v && *end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mult = 1ull << 10; break;
        case 'M': mult = 1ull << 20; break;
        case 'G': mult = 1ull << 30; break;
        default: mult = 0;
        }
        if (mult && end[1] && strcasecmp(end + 1, "iB") && strcasecmp(end + 1, "B"))
            mult = 0;
    }
    if (end == v || errno || mult == 0 || n == 0 || n > UINT64_MAX / mult || v[0] == '-')
        return err_set(err, "%s: '%s' is not a positive byte count (suffix K, M or G allowed)", flag, v);
    *out = n * mult;
    return 0;
}

/* clang-format off */
#define SERVE_INT(flag, field, lo, hi) {flag, offsetof(serve_opts_t, field), lo, hi}
/* clang-format on */
/* The integer options, each into its int. */
static const cli_int_t serve_ints[] = {
    SERVE_INT("--port", srv.port, 0, 65535),
    SERVE_INT("--max-connections", srv.max_connections, 1, 65536),
    /* at least 1: every request passes through the engine's admission
     * queue, so with 0 each one would be refused as "queue full" */
    SERVE_INT("--queue-size", eng.queue_size, 1, 1 << 20),
    SERVE_INT("--request-timeout", srv.request_timeout_s, 1, 7 * 86400),
    SERVE_INT("--header-timeout", srv.header_timeout_s, 1, 3600),
    SERVE_INT("--body-timeout", srv.body_timeout_s, 1, 86400),
    SERVE_INT("--threads", eng.n_threads, 1, POOL_MAX_THREADS),
    SERVE_INT("--max-seqs", eng.max_seqs, 1, 4096),
    SERVE_INT("--batch-tokens", eng.batch_tokens, 1, 65536),
    SERVE_INT("--prefill-chunk", eng.prefill_chunk, 1, 65536),
    SERVE_INT("--max-context", eng.max_context, 2, INT32_MAX),
    SERVE_INT("--test-step-delay-us", eng.test_step_delay_us, 0, 10000000),
};
#undef SERVE_INT
enum { SERVE_N_INTS = sizeof serve_ints / sizeof serve_ints[0] };

/* getopt_long's values for the other options; serve_ints' follow them
 * (SO_INT + k), engine_opts.h's lie above. */
enum {
    SO_MODEL = 0x100,
    SO_HOST,
    SO_API_KEY,
    SO_ALLOWED_HOST,
    SO_MAX_BODY,
    SO_CORS_ORIGIN,
    SO_REPLICA_ID,
    SO_DRAIN,
    SO_TRACE_CAPACITY,
    SO_TRACE_OUT,
    SO_MAX_MEMORY,
    SO_IGNORE_SALT,
    SO_NO_PREFIX_CACHE,
    SO_SERIALIZE_PREFILL,
    SO_TRUNCATE_OUTPUT,
    SO_INT
};
_Static_assert(SO_INT + SERVE_N_INTS <= EO_DRAFT, "serve's option values below engine_opts.h's");

static const struct option serve_named[] = {
    {"model", required_argument, NULL, SO_MODEL},
    {"host", required_argument, NULL, SO_HOST},
    {"api-key", required_argument, NULL, SO_API_KEY},
    {"allowed-host", required_argument, NULL, SO_ALLOWED_HOST},
    {"max-body", required_argument, NULL, SO_MAX_BODY},
    {"cors-origin", required_argument, NULL, SO_CORS_ORIGIN},
    {"replica-id", required_argument, NULL, SO_REPLICA_ID},
    {"drain-timeout", required_argument, NULL, SO_DRAIN},
    {"trace-capacity", required_argument, NULL, SO_TRACE_CAPACITY},
    {"trace-out", required_argument, NULL, SO_TRACE_OUT},
    {"max-memory", required_argument, NULL, SO_MAX_MEMORY},
    {"test-ignore-cache-salt", no_argument, NULL, SO_IGNORE_SALT},
    {"test-no-prefix-cache", no_argument, NULL, SO_NO_PREFIX_CACHE},
    {"test-serialize-prefill", no_argument, NULL, SO_SERIALIZE_PREFILL},
    {"test-truncate-output", no_argument, NULL, SO_TRUNCATE_OUTPUT},
    ENGINE_OPTIONS,
    {NULL, 0, NULL, 0},
};

/* The options whose values are names, addresses or byte counts. */
static int parse_named(int opt, const char *v, serve_opts_t *o, err_t *err)
{
    switch (opt) {
    case SO_API_KEY:
        if (!v[0])
            return err_set(err, "--api-key must not be empty");
        o->srv.api_key = v;
        return 0;
    case SO_ALLOWED_HOST:
        if (o->srv.n_allowed_hosts == SERVER_MAX_ALLOWED_HOSTS)
            return err_set(err, "--allowed-host: at most %d", SERVER_MAX_ALLOWED_HOSTS);
        if (!v[0] || strlen(v) > 253)
            return err_set(err, "--allowed-host: '%s' is not a host name", v);
        o->srv.allowed_hosts[o->srv.n_allowed_hosts++] = v;
        return 0;
    case SO_CORS_ORIGIN:
        if (o->srv.n_cors_origins == SERVER_MAX_CORS_ORIGINS)
            return err_set(err, "--cors-origin: at most %d", SERVER_MAX_CORS_ORIGINS);
        if (!server_origin_valid(v))
            return err_set(err, "--cors-origin: '%s' is not an origin (http://host[:port], https://host[:port] or *)",
                           v);
        o->srv.cors_origins[o->srv.n_cors_origins++] = v;
        return 0;
    case SO_REPLICA_ID:
        if (!server_replica_id_valid(v))
            return err_set(err, "--replica-id: '%s' is not 1 to %d of letters, digits, '.', '_', '-'", v,
                           SERVER_MAX_REPLICA_ID);
        o->srv.replica_id = v;
        return 0;
    case SO_MAX_BODY: return parse_bytes("--max-body", v, &o->srv.max_body, err);
    default: return parse_bytes("--max-memory", v, &o->eng.max_memory, err); /* SO_MAX_MEMORY */
    }
}

/* One option from getopt_long (opt), its value v; arg: the word it came from. */
static int parse_opt(int opt, const char *v, const char *arg, void *ctx, err_t *err)
{
    serve_opts_t *o = ctx;
    if (opt >= EO_DRAFT && opt < EO_END)
        return engine_opt(opt, v, &o->eng, &o->draft_path, err);
    if (opt >= SO_INT && opt < SO_INT + SERVE_N_INTS)
        return cli_int_set(&serve_ints[opt - SO_INT], v, o, err);
    switch (opt) {
    case SO_MODEL: o->model = v; return 0;
    case SO_HOST: o->srv.host = v; return 0;
    case SO_DRAIN: return cli_parse_i64("--drain-timeout", v, 0, 86400, &o->drain_s, err);
    case SO_TRACE_CAPACITY: return cli_parse_i64("--trace-capacity", v, 1, TRACE_MAX_CAPACITY, &o->trace_capacity, err);
    case SO_TRACE_OUT: o->trace_out = v; return 0;
    case SO_IGNORE_SALT: o->eng.test_ignore_cache_salt = true; return 0;
    case SO_NO_PREFIX_CACHE: o->eng.test_no_prefix_cache = true; return 0;
    case SO_SERIALIZE_PREFILL: o->eng.test_serialize_prefill = true; return 0;
    case SO_TRUNCATE_OUTPUT: o->eng.test_truncate_output = true; return 0;
    case SO_API_KEY:
    case SO_ALLOWED_HOST:
    case SO_CORS_ORIGIN:
    case SO_REPLICA_ID:
    case SO_MAX_BODY:
    case SO_MAX_MEMORY: return parse_named(opt, v, o, err);
    case ':': return err_set(err, "%s needs a value", arg);
    default: return err_set(err, "unknown argument '%s' (splash serve --help lists the options)", arg);
    }
}

static int parse(int argc, char **argv, serve_opts_t *o, err_t *err)
{
    memset(o, 0, sizeof *o);
    o->model = cli_default_model();
    server_config_default(&o->srv);
    engine_config_default(&o->eng);
    o->drain_s = SERVE_DEFAULT_DRAIN_S;
    const char *env_key = getenv("SPLASH_API_KEY");
    if (env_key && env_key[0])
        o->srv.api_key = env_key;
    struct option options[sizeof serve_named / sizeof serve_named[0] + SERVE_N_INTS];
    cli_options_join(options, serve_named, serve_ints, SERVE_N_INTS, SO_INT);
    if (cli_getopt(argc, argv, "", options, parse_opt, o, err))
        return -1;
    if (optind < argc)
        return err_set(err, "unknown argument '%s' (splash serve --help lists the options)", argv[optind]);
    if (!o->trace_capacity != !o->trace_out)
        return err_set(err, "--trace-capacity and --trace-out go together");
    return 0;
}

/* The model's name in the API: its file name without directory or .gguf. */
static void model_id(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".gguf"))
        n -= 5;
    snprintf(out, cap, "%.*s", (int)n, base);
}

/* The file's SHA-256 (/status model.sha256); the hash reads every byte,
 * so the packed matrices' raw pages it brought back go back again
 * (model_prepack). */
static int hash_model(model_t *m, char *sha, err_t *err)
{
    if (sha256_hex(m->gguf->base, m->gguf->size, sha, err))
        return -1;
    model_prepack(m);
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(serve_usage, cli_default_model(), SERVER_DEFAULT_PORT, SERVER_DEFAULT_MAX_BODY,
                   SERVER_DEFAULT_MAX_CONNECTIONS, ENGINE_DEFAULT_QUEUE, SERVER_DEFAULT_REQUEST_TIMEOUT_S,
                   SERVER_DEFAULT_HEADER_TIMEOUT_S, SERVER_DEFAULT_BODY_TIMEOUT_S, SERVE_DEFAULT_DRAIN_S,
                   pool_default_threads(), ENGINE_DEFAULT_MAX_SEQS, ENGINE_DEFAULT_BATCH_TOKENS,
                   ENGINE_DEFAULT_PREFILL_CHUNK, ENGINE_DEFAULT_MAX_CONTEXT);
            return 0;
        }
    }
    serve_opts_t o;
    err_t err;
    if (parse(argc, argv, &o, &err)) {
        fprintf(stderr, "splash serve: %s\n", err.msg);
        return EXIT_USAGE;
    }
    /* SIGINT / SIGTERM are taken by sigwait below: blocked here, before any
     * thread starts, so every thread inherits the mask */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    trace_t *trace = NULL;
    if (o.trace_capacity && !(trace = trace_create((uint64_t)o.trace_capacity, &err))) {
        fprintf(stderr, "splash serve: %s\n", err.msg);
        return 1;
    }
    o.srv.trace = o.eng.trace = trace;
    o.srv.trace_out = o.trace_out;
    server_t *srv = server_start(&o.srv, &err);
    if (!srv) {
        trace_destroy(trace);
        fprintf(stderr, "splash serve: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "splash serve: listening on %s:%d, loading %s\n", o.srv.host, server_port(srv), o.model);
    int rc = 0;
    model_t *m = model_load_runnable(o.model, &err), *draft = NULL;
    vocab_t vocab = {0};
    tokenizer_t *tok = NULL;
    engine_t *engine = NULL;
    char sha[SHA256_HEX_LEN] = "", id[256];
    bool has_vocab = false;
    if (!m) {
        if (!strcmp(o.model, cli_default_model()) && access(o.model, F_OK) != 0)
            err_set(&err, "the built-in model %s is missing (the build writes it; or pass --model)", o.model);
        rc = 1;
    } else if ((o.draft_path && !(draft = model_load_draft(o.draft_path, &err))) ||
               vocab_load(&vocab, m->gguf, m->cfg.vocab, &err) || !(has_vocab = true) ||
               !(tok = tok_load(&vocab, m->gguf, &err)) || hash_model(m, sha, &err) ||
               !((o.eng.draft_model = draft), engine = engine_create(m, &vocab, &o.eng, &err))) {
        rc = 1;
    }
    if (rc) {
        fprintf(stderr, "splash serve: %s\n", err.msg);
    } else {
        char plan[512];
        engine_plan_format(engine_get_plan(engine), plan, sizeof plan);
        fprintf(stderr, "splash serve: %s\n", plan);
        model_id(o.model, id, sizeof id);
        server_model_t sm = {m, &vocab, tok, engine, o.model, id, sha};
        server_set_ready(srv, &sm);
        const char *host = o.srv.host;
        bool is_v6 = strchr(host, ':') != NULL;
        printf("splash serve: ready at http://%s%s%s:%d (model %s)\n", is_v6 ? "[" : "", host, is_v6 ? "]" : "",
               server_port(srv), id);
        fflush(stdout);
        int sig = 0;
        sigwait(&sigs, &sig);
        fprintf(stderr, "splash serve: %s: draining (up to %lld s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
                (long long)o.drain_s);
        server_drain(srv, o.drain_s * 1000000000LL);
        engine_cancel_all(engine); /* whatever is still running ends now */
    }
    server_close(srv); /* joins every connection thread */
    engine_destroy(engine);
    if (trace && !rc) {
        /* the engine has stopped: nothing is in flight, the capture is complete */
        if (server_trace_write(srv, true, &err))
            fprintf(stderr, "splash serve: trace: %s\n", err.msg);
        else
            fprintf(stderr, "splash serve: trace written to %s\n", o.trace_out);
    }
    server_stop(srv);
    trace_destroy(trace);
    tok_free(tok);
    if (has_vocab)
        vocab_free(&vocab);
    model_free(m);
    model_free(draft);
    if (!rc)
        fprintf(stderr, "splash serve: stopped\n");
    return rc;
}
