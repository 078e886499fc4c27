/* splash grammar bench: the mask cost of a grammar over a model's real
 * vocabulary. Loads only the vocabulary, compiles the grammar, then runs
 * seeded random walks: each step masks the next token (timed), picks an
 * allowed token at random (an end token, once allowed, with a small
 * probability, so walks end) and accepts it. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/clock.h"
#include "base/rng.h"
#include "cli/commands.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "model/gguf.h"
#include "text/vocab.h"

#define GRAMMAR_BENCH_MAX_STEPS 10000000
#define GRAMMAR_BENCH_MAX_FILE (64u << 20)
#define GRAMMAR_BENCH_P_EOS 0.05 /* chance of ending a walk at a step where ending is allowed */

static const char grammar_usage[] =
    "usage: splash grammar bench --model M.gguf (--gbnf FILE | --schema FILE | --json-object)\n"
    "                            [--ws compact|spaced|flex] [--steps N] [--seed S] [--walks K] [--json]\n"
    "\n"
    "Mask cost of a grammar over the model's vocabulary (only the vocabulary is loaded).\n"
    "Compiles the grammar, then runs K seeded random walks (default 4) of N mask steps in all\n"
    "(default 2000): each step computes the token mask (timed), picks an allowed token at\n"
    "random and accepts it; a walk that is done starts again. Prints the compile time,\n"
    "median / p90 / p99 / max microseconds per mask, allowed-token counts and the mask\n"
    "cache's hit rate; --json prints one JSON object instead. --ws: the JSON front-ends'\n"
    "whitespace (default flex).\n";

typedef struct bench_opts {
    const char *model, *gbnf, *schema;
    bool is_json_object, is_json;
    gr_json_ws_t ws;
    int64_t steps, walks;
    uint64_t seed;
} bench_opts_t;

static char *read_file(const char *path, size_t *len, err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            char *q = cap <= GRAMMAR_BENCH_MAX_FILE ? realloc(buf, cap + 1) : NULL;
            if (!q) {
                free(buf);
                fclose(f);
                err_set(err, "%s: too large (more than %u bytes) or out of memory", path, GRAMMAR_BENCH_MAX_FILE);
                return NULL;
            }
            buf = q;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        err_set(err, "%s: read error", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static grammar_t *compile(const bench_opts_t *o, err_t *err)
{
    if (o->is_json_object)
        return grammar_json_object(o->ws, err);
    size_t len;
    char *text = read_file(o->gbnf ? o->gbnf : o->schema, &len, err);
    if (!text)
        return NULL;
    grammar_t *g = NULL;
    if (o->gbnf) {
        g = grammar_from_gbnf(text, len, err);
    } else {
        json_error_t je;
        json_t *schema = json_loadb(text, len, 0, &je);
        if (!schema)
            err_set(err, "%s: line %d: %s", o->schema, je.line, je.text);
        else
            g = grammar_from_json_schema(schema, o->ws, err);
        json_decref(schema);
    }
    free(text);
    return g;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(const int64_t *sorted, int64_t n, double p)
{
    int64_t k = (int64_t)(p * (double)(n - 1) + 0.5);
    return sorted[k] / 1e3;
}

/* The k-th allowed token of the mask (0-based). */
static int32_t nth_allowed(const uint32_t *mask, size_t words, int64_t k)
{
    for (size_t w = 0; w < words; w++) {
        int c = __builtin_popcount(mask[w]);
        if (k >= c) {
            k -= c;
            continue;
        }
        uint32_t m = mask[w];
        while (k--)
            m &= m - 1;
        return (int32_t)(w * 32 + (size_t)__builtin_ctz(m));
    }
    return -1;
}

/* Which tokens end a generation: the vocabulary's eos and the chat end markers. */
static bool *eog_table(const vocab_t *v)
{
    bool *is_eog = calloc((size_t)v->n_tokens, sizeof *is_eog);
    if (!is_eog)
        return NULL;
    if (v->eos_id >= 0 && v->eos_id < v->n_tokens)
        is_eog[v->eos_id] = true;
    static const char *const ends[] = {"<|im_end|>", "<|endoftext|>"};
    for (int i = 0; i < v->n_tokens; i++)
        for (size_t j = 0; j < sizeof ends / sizeof *ends; j++)
            if (v->types[i] == TOKEN_TYPE_CONTROL && v->tokens[i].len == strlen(ends[j]) &&
                !memcmp(v->tokens[i].ptr, ends[j], v->tokens[i].len))
                is_eog[i] = true;
    return is_eog;
}

/* One benchmark's measurements: per step its mask time and allowed count. */
typedef struct gb_run {
    const vocab_t *v;
    const bool *is_eog;
    double vocab_ms, compile_ms;
    int64_t *ns, *allowed, *miss_ns; /* o->steps each; miss_ns: the steps the cache missed */
    int64_t n_miss, n_done, n_stuck, n_forced;
    gr_cache_stats_t cache;
} gb_run_t;

/* A walk's next token from its mask (n allowed): an end token with
 * probability GRAMMAR_BENCH_P_EOS where the grammar may end (or must),
 * else a uniformly drawn allowed one; -1 when nothing is allowed. */
static int32_t pick_token(const gb_run_t *r, const gr_state_t *s, const uint32_t *mask, size_t words, int n, rng_t *rng)
{
    if (n <= 0)
        return -1;
    const vocab_t *v = r->v;
    int n_eog = 0;
    for (int i = 0; i < v->n_tokens && gr_state_can_end(s); i++)
        n_eog += r->is_eog[i] && ((mask[i >> 5] >> (i & 31)) & 1);
    if (n_eog && (n == n_eog || rng_uniform(rng) < GRAMMAR_BENCH_P_EOS)) {
        for (int i = 0; i < v->n_tokens; i++)
            if (r->is_eog[i])
                return i;
    }
    int32_t id;
    do
        id = nth_allowed(mask, words, (int64_t)(rng_uniform(rng) * n));
    while (r->is_eog[id]);
    return id;
}

/* o->steps masks along seeded random walks through the grammar, each timed. */
static int walk(const bench_opts_t *o, grammar_t *g, const gr_vocab_t *gv, gb_run_t *r, err_t *err)
{
    size_t words = gr_vocab_mask_words(gv);
    uint32_t *mask = malloc(words * sizeof *mask);
    gr_state_t *s = gr_state_new(g);
    int rc = 0;
    if (!mask || !s) {
        rc = err_set(err, "out of memory");
        goto out;
    }
    rng_t rng;
    rng_seed(&rng, o->seed);
    int64_t per_walk = (o->steps + o->walks - 1) / o->walks, in_walk = 0;
    for (int64_t step = 0; step < o->steps; step++) {
        int32_t only;
        gr_cache_stats_t before, after;
        gr_cache_stats(g, &before);
        int64_t m0 = clock_now_ns();
        int n = gr_mask(s, gv, mask, &only);
        r->ns[step] = clock_now_ns() - m0;
        gr_cache_stats(g, &after);
        if (after.hits == before.hits)
            r->miss_ns[r->n_miss++] = r->ns[step];
        r->allowed[step] = n;
        r->n_forced += only >= 0;
        int32_t id = pick_token(r, s, mask, words, n, &rng);
        if (id >= 0 && gr_state_accept_token(s, gv, id)) {
            rc = err_set(err, "step %lld: token %d is in the mask but was refused (a bug)", (long long)step, id);
            goto out;
        }
        r->n_stuck += id < 0;
        if (++in_walk >= per_walk || id < 0 || gr_state_is_done(s)) { /* a new walk */
            r->n_done += id >= 0 && gr_state_is_done(s);
            gr_state_free(s);
            if (!(s = gr_state_new(g))) {
                rc = err_set(err, "out of memory");
                goto out;
            }
            if (in_walk >= per_walk)
                in_walk = 0;
        }
    }
    gr_cache_stats(g, &r->cache);
out:
    gr_state_free(s);
    free(mask);
    return rc;
}

/* The figures, as a table of lines or one JSON object. */
static int print_run(const bench_opts_t *o, gb_run_t *r, err_t *err)
{
    int64_t n = o->steps, *ns = r->ns, *allowed = r->allowed;
    double mean_us = 0, mean_allowed = 0;
    for (int64_t k = 0; k < n; k++) {
        mean_us += ns[k] / 1e3 / (double)n;
        mean_allowed += (double)allowed[k] / (double)n;
    }
    qsort(ns, (size_t)n, sizeof *ns, cmp_i64);
    qsort(allowed, (size_t)n, sizeof *allowed, cmp_i64);
    qsort(r->miss_ns, (size_t)r->n_miss, sizeof *r->miss_ns, cmp_i64);
    double miss_med = r->n_miss ? pct_us(r->miss_ns, r->n_miss, 0.5) : 0;
    double miss_p99 = r->n_miss ? pct_us(r->miss_ns, r->n_miss, 0.99) : 0;
    const gr_cache_stats_t *cs = &r->cache;
    double hit_rate = cs->lookups ? (double)cs->hits / (double)cs->lookups : 0;
    const char *what = o->gbnf ? o->gbnf : o->schema ? o->schema : "json-object";
    if (!o->is_json) {
        printf("grammar %s over %d tokens: vocabulary trie %.1f ms, compile %.2f ms\n", what, r->v->n_tokens,
               r->vocab_ms, r->compile_ms);
        printf("mask: %lld steps in %lld walks: median %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us, mean %.1f us\n",
               (long long)n, (long long)o->walks, pct_us(ns, n, 0.5), pct_us(ns, n, 0.9), pct_us(ns, n, 0.99),
               ns[n - 1] / 1e3, mean_us);
        printf("allowed tokens: min %lld, median %lld, max %lld, mean %.0f; forced steps %lld\n", (long long)allowed[0],
               (long long)allowed[n / 2], (long long)allowed[n - 1], mean_allowed, (long long)r->n_forced);
        printf("walks finished %lld, stuck %lld; mask cache: %.1f %% hits of %llu, %llu entries, %.1f MB, %llu "
               "clears\n",
               (long long)r->n_done, (long long)r->n_stuck, 100 * hit_rate, (unsigned long long)cs->lookups,
               (unsigned long long)cs->entries, cs->bytes / 1e6, (unsigned long long)cs->clears);
        printf("cache misses alone: %lld, median %.1f us, p99 %.1f us\n", (long long)r->n_miss, miss_med, miss_p99);
        return 0;
    }
    json_t *j = json_pack(
        "{s:s, s:i, s:f, s:f, s:I, s:I, s:{s:f, s:f, s:f, s:f, s:f}, s:{s:I, s:I, s:I, s:f}, "
        "s:I, s:I, s:I, s:{s:I, s:I, s:f, s:I, s:I, s:I}, s:{s:I, s:f, s:f}}",
        "grammar", what, "vocab", r->v->n_tokens, "vocab_ms", r->vocab_ms, "compile_ms", r->compile_ms, "steps",
        (json_int_t)n, "walks", (json_int_t)o->walks, "mask_us", "median", pct_us(ns, n, 0.5), "p90",
        pct_us(ns, n, 0.9), "p99", pct_us(ns, n, 0.99), "max", ns[n - 1] / 1e3, "mean", mean_us, "allowed", "min",
        (json_int_t)allowed[0], "median", (json_int_t)allowed[n / 2], "max", (json_int_t)allowed[n - 1], "mean",
        mean_allowed, "forced", (json_int_t)r->n_forced, "walks_done", (json_int_t)r->n_done, "stuck",
        (json_int_t)r->n_stuck, "cache", "lookups", (json_int_t)cs->lookups, "hits", (json_int_t)cs->hits, "hit_rate",
        hit_rate, "entries", (json_int_t)cs->entries, "bytes", (json_int_t)cs->bytes, "clears", (json_int_t)cs->clears,
        "miss_us", "count", (json_int_t)r->n_miss, "median", miss_med, "p99", miss_p99);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    int rc = 0;
    if (text)
        puts(text);
    else
        rc = err_set(err, "out of memory");
    free(text);
    json_decref(j);
    return rc;
}

static int run_bench(const bench_opts_t *o, const vocab_t *v, err_t *err)
{
    gb_run_t r = {.v = v};
    bool *is_eog = eog_table(v);
    if (!is_eog)
        return err_set(err, "out of memory");
    r.is_eog = is_eog;
    int64_t t0 = clock_now_ns();
    gr_vocab_t *gv = gr_vocab_new(v, is_eog, err);
    r.vocab_ms = (clock_now_ns() - t0) / 1e6;
    t0 = clock_now_ns();
    grammar_t *g = gv ? compile(o, err) : NULL;
    r.compile_ms = (clock_now_ns() - t0) / 1e6;
    int rc = -1;
    if (g) {
        r.ns = malloc((size_t)o->steps * sizeof *r.ns);
        r.allowed = malloc((size_t)o->steps * sizeof *r.allowed);
        r.miss_ns = malloc((size_t)o->steps * sizeof *r.miss_ns);
        if (!r.ns || !r.allowed || !r.miss_ns)
            err_set(err, "out of memory");
        else if (!walk(o, g, gv, &r, err))
            rc = print_run(o, &r, err);
    }
    free(r.ns);
    free(r.allowed);
    free(r.miss_ns);
    grammar_unref(g);
    gr_vocab_free(gv);
    free(is_eog);
    return rc;
}

int cmd_grammar(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(grammar_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "bench")) {
        fprintf(stderr, "splash grammar: unknown subcommand '%s' (only 'bench')\n", argv[1]);
        return EXIT_USAGE;
    }
    static const struct option options[] = {
        {"model", required_argument, NULL, 'm'},
        {"gbnf", required_argument, NULL, 'g'},
        {"schema", required_argument, NULL, 's'},
        {"json-object", no_argument, NULL, 'o'},
        {"steps", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 'S'},
        {"walks", required_argument, NULL, 'k'},
        {"ws", required_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bench_opts_t o = {.model = cli_default_model(), .ws = GR_JSON_WS_FLEX, .steps = 2000, .walks = 4, .seed = 1};
    err_t err;
    int c;
    optind = 1;
    opterr = 0;
    argc--;
    argv++;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'm': o.model = optarg; break;
        case 'g': o.gbnf = optarg; break;
        case 's': o.schema = optarg; break;
        case 'o': o.is_json_object = true; break;
        case 'j': o.is_json = true; break;
        case 'n': bad = cli_parse_i64("--steps", optarg, 1, GRAMMAR_BENCH_MAX_STEPS, &o.steps, &err); break;
        case 'k': bad = cli_parse_i64("--walks", optarg, 1, GRAMMAR_BENCH_MAX_STEPS, &o.walks, &err); break;
        case 'S': bad = cli_parse_u64("--seed", optarg, &o.seed, &err); break;
        case 'w':
            if (!strcmp(optarg, "compact"))
                o.ws = GR_JSON_WS_COMPACT;
            else if (!strcmp(optarg, "spaced"))
                o.ws = GR_JSON_WS_SPACED;
            else if (!strcmp(optarg, "flex"))
                o.ws = GR_JSON_WS_FLEX;
            else
                bad = err_set(&err, "--ws must be compact, spaced or flex, not '%s'", optarg);
            break;
        case 'h': fputs(grammar_usage, stdout); return 0;
        case ':': bad = err_set(&err, "%s needs a value", argv[optind - 1]); break;
        default: bad = err_set(&err, "unknown option '%s'", argv[optind - 1]); break;
        }
        if (bad) {
            fprintf(stderr, "splash grammar bench: %s\n", err.msg);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "splash grammar bench: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if ((o.gbnf != NULL) + (o.schema != NULL) + o.is_json_object != 1) {
        fprintf(stderr, "splash grammar bench: give exactly one of --gbnf FILE, --schema FILE or --json-object\n");
        return EXIT_USAGE;
    }
    gguf_t *gf = gguf_open(o.model, &err);
    if (!gf) {
        fprintf(stderr, "splash grammar bench: %s\n", err.msg);
        return 1;
    }
    vocab_t v;
    memset(&v, 0, sizeof v);
    const gguf_tensor_t *embd = gguf_find_tensor(gf, "token_embd.weight");
    int rc = 0;
    if (vocab_load(&v, gf, embd ? (int)embd->ne[1] : 0, &err)) {
        fprintf(stderr, "splash grammar bench: %s: %s\n", o.model, err.msg);
        rc = 1;
    } else if (run_bench(&o, &v, &err)) {
        fprintf(stderr, "splash grammar bench: %s\n", err.msg);
        rc = 1;
    }
    vocab_free(&v);
    gguf_close(gf);
    return rc;
}
