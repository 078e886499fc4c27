/* splash perplexity: the model's perplexity and bits per byte on a text file,
 * through the engine's own forward pass, in sliding windows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/clock.h"
#include "base/pool.h"
#include "cli/commands.h"
#include "cli/engine_opts.h"
#include "model/forward.h"
#include "model/kv.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

#define PPL_DEFAULT_CTX 512       /* the demo model's training context */
#define PPL_MAX_FILE (256u << 20) /* bytes of text read at most */
#define PPL_CHUNK 64              /* rows per forward pass within a window */
_Static_assert(PPL_CHUNK % GDN_CHUNK_MAX == 0, "a window's passes end on chunk boundaries");
#define PPL_TOKEN_BYTES 512 /* longest token spelling measured */

static const char usage[] =
    "usage: splash perplexity [--model FILE] --file TEXT [--ctx N] [--stride N] [--threads N] [--max-tokens N]\n"
    "                         [--kv-type f32|f16|q8_0] [--state-type f32|f16]\n"
    "\n"
    "Perplexity and bits per byte of the model on a text file, computed with the engine's\n"
    "forward pass. The file is tokenized whole (special-token text stays plain text), then\n"
    "scored in windows of --ctx tokens (default: 512, or the model's context if smaller)\n"
    "starting every --stride tokens (default ctx / 2): each window starts from an empty\n"
    "cache, and only the tokens no earlier window scored count, so every token after the\n"
    "first is predicted from at least ctx - stride tokens of context (or all before it).\n"
    "--max-tokens N scores only the first N tokens. --kv-type: the KV cache's element type\n"
    "(default f32, exact; the engine's --kv-type, to measure what its rounding costs).\n"
    "--state-type: a hybrid model's Gated DeltaNet state between tokens (default f32; the\n"
    "engine's --state-type, likewise).\n"
    "Progress goes to stderr; one line to\n"
    "stdout:\n"
    "  perplexity P bits_per_byte B tokens N bytes M ctx C stride S\n"
    "where N tokens (M bytes of text) were scored, P = exp(mean negative log-likelihood)\n"
    "and B = total negative log-likelihood in bits / M.\n";

typedef struct ppl_opts {
    const char *model, *file;
    int64_t ctx, stride, threads, max_tokens;
    kv_type_t kv_type;
    int state_type;
} ppl_opts_t;

enum { P_MODEL = 0x100, P_FILE, P_CTX, P_STRIDE, P_THREADS, P_KV_TYPE, P_STATE_TYPE, P_MAX_TOKENS };

static int parse_opt(int opt, const char *v, const char *word, void *ctx, err_t *err)
{
    ppl_opts_t *o = ctx;
    switch (opt) {
    case P_MODEL: o->model = v; return 0;
    case P_FILE: o->file = v; return 0;
    case P_CTX: return cli_parse_i64("--ctx", v, 2, 1 << 20, &o->ctx, err);
    case P_STRIDE: return cli_parse_i64("--stride", v, 1, 1 << 20, &o->stride, err);
    case P_THREADS: return cli_parse_i64("--threads", v, 1, POOL_MAX_THREADS, &o->threads, err);
    case P_KV_TYPE: return kv_type_parse("--kv-type", v, &o->kv_type, err);
    case P_STATE_TYPE: return state_type_parse("--state-type", v, &o->state_type, err);
    case P_MAX_TOKENS: return cli_parse_i64("--max-tokens", v, 2, INT32_MAX, &o->max_tokens, err);
    case ':': return err_set(err, "a value is needed after '%s'", word);
    default: return err_set(err, "unknown option '%s'", word);
    }
}

static int parse(int argc, char **argv, ppl_opts_t *o, err_t *err)
{
    *o = (ppl_opts_t){.model = cli_default_model(), .threads = 2, .kv_type = KV_F32, .state_type = TYPE_F32};
    static const struct option options[] = {
        {"model", required_argument, NULL, P_MODEL},
        {"file", required_argument, NULL, P_FILE},
        {"ctx", required_argument, NULL, P_CTX},
        {"stride", required_argument, NULL, P_STRIDE},
        {"threads", required_argument, NULL, P_THREADS},
        {"kv-type", required_argument, NULL, P_KV_TYPE},
        {"state-type", required_argument, NULL, P_STATE_TYPE},
        {"max-tokens", required_argument, NULL, P_MAX_TOKENS},
        {NULL, 0, NULL, 0},
    };
    if (cli_getopt(argc, argv, "", options, parse_opt, o, err))
        return -1;
    if (optind < argc)
        return err_set(err, "unknown option '%s'", argv[optind]);
    if (!o->file)
        return err_set(err, "--file TEXT is required");
    if (o->ctx && o->stride > o->ctx)
        return err_set(err, "--stride %lld exceeds --ctx %lld", (long long)o->stride, (long long)o->ctx);
    return 0;
}

static char *read_file(const char *path, size_t *n, err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, "%s: cannot open", path);
        return NULL;
    }
    char *buf = malloc(PPL_MAX_FILE);
    size_t got = buf ? fread(buf, 1, PPL_MAX_FILE, f) : 0;
    bool is_long = buf && got == PPL_MAX_FILE && fgetc(f) != EOF;
    fclose(f);
    if (!buf || is_long) {
        free(buf);
        err_set(err, buf ? "%s: longer than %u bytes" : "out of memory", path, PPL_MAX_FILE);
        return NULL;
    }
    *n = got;
    return buf;
}

/* Negative log-likelihood (nats) of target under one row of logits. */
static double row_nll(const float *logits, int vocab, int32_t target)
{
    int best = 0;
    for (int i = 1; i < vocab; i++)
        if (logits[i] > logits[best])
            best = i;
    double sum = 1.0; /* the best logit's own term, exp(0) */
    for (int i = 0; i < vocab; i++)
        if (i != best)
            sum += exp((double)logits[i] - logits[best]);
    return log(sum) + logits[best] - logits[target];
}

typedef struct ppl_state {
    const model_t *m;
    fwd_ctx_t fwd;
    kv_store_t kv;
    int32_t *pos, *table;
    const int32_t **tables;
    uint8_t *want;
    float *logits; /* (PPL_CHUNK, vocab) */
} ppl_state_t;

/* Runs one window (tokens w[0..n)) from an empty cache and adds the NLL of
 * predicting w[i + 1] for rows i >= first_scored - 1. */
static int score_window(ppl_state_t *s, const int32_t *w, int n, int first_scored, double *nll, err_t *err)
{
    int vocab = s->m->cfg.vocab;
    uint8_t chunked[PPL_CHUNK];
    memset(chunked, 1, sizeof chunked);
    for (int start = 0; start < n - 1; start += PPL_CHUNK) {
        int rows = n - 1 - start < PPL_CHUNK ? n - 1 - start : PPL_CHUNK;
        for (int r = 0; r < rows; r++) {
            s->pos[r] = start + r;
            s->tables[r] = s->table;
            s->want[r] = start + r + 1 >= first_scored;
        }
        /* a window is one prompt: its rows may take the delta rule in
         * chunks (PPL_CHUNK is a multiple of every chunk length) */
        fwd_batch_t b = {rows, w + start, s->pos, s->tables, s->want, NULL, NULL, NULL, chunked, chunked};
        if (fwd_run(&s->fwd, &s->kv, &b, s->logits, err))
            return -1;
        for (int r = 0, k = 0; r < rows; r++)
            if (s->want[r])
                *nll += row_nll(s->logits + (size_t)k++ * vocab, vocab, w[start + r + 1]);
    }
    return 0;
}

static int perplexity(const ppl_opts_t *o, err_t *err)
{
    int rc = -1;
    size_t n_text = 0;
    char *text = NULL;
    model_t *m = NULL;
    vocab_t vocab = {0};
    tokenizer_t *tok = NULL;
    tok_ids_t ids = {0};
    pool_t *pool = NULL;
    ppl_state_t s = {0};
    bool has_fwd = false;
    if (!(text = read_file(o->file, &n_text, err)) || !(m = model_load_runnable(o->model, err)))
        goto done;
    if (vocab_load(&vocab, m->gguf, m->cfg.vocab, err) || !(tok = tok_load(&vocab, m->gguf, err)))
        goto done;
    if (tok_encode(tok, text, n_text, false, &ids, err))
        goto done;
    int n = (int)ids.n;
    if (o->max_tokens && n > o->max_tokens)
        n = (int)o->max_tokens;
    if (n < 2) {
        err_set(err, "%s: fewer than 2 tokens", o->file);
        goto done;
    }
    int ctx = (int)(o->ctx ? o->ctx : PPL_DEFAULT_CTX);
    if (ctx > m->cfg.context_length) {
        if (o->ctx) {
            err_set(err, "--ctx %d exceeds the model's context length %d", ctx, m->cfg.context_length);
            goto done;
        }
        ctx = m->cfg.context_length;
    }
    int stride = (int)(o->stride ? o->stride : (ctx / 2 > 0 ? ctx / 2 : 1));
    if (stride > ctx) {
        err_set(err, "--stride %d exceeds --ctx %d", stride, ctx);
        goto done;
    }
    int n_blocks = (ctx + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    s.m = m;
    s.pos = malloc(PPL_CHUNK * sizeof *s.pos);
    s.tables = malloc(PPL_CHUNK * sizeof *s.tables);
    s.want = malloc(PPL_CHUNK);
    s.table = malloc((size_t)n_blocks * sizeof *s.table);
    s.logits = malloc((size_t)PPL_CHUNK * (size_t)m->cfg.vocab * sizeof *s.logits);
    if (!s.pos || !s.tables || !s.want || !s.table || !s.logits) {
        err_set(err, "out of memory");
        goto done;
    }
    for (int i = 0; i < n_blocks; i++)
        s.table[i] = i;
    if (!(pool = pool_create((int)o->threads, err)) || fwd_ctx_init(&s.fwd, m, pool, PPL_CHUNK, ctx, err))
        goto done;
    has_fwd = true;
    if (fwd_ctx_set_state_slots(&s.fwd, 1, o->state_type, err) || kv_type_check(o->kv_type, m->cfg.head_dim, err) ||
        kv_store_init(&s.kv, o->kv_type, model_kv_layers(&m->cfg), n_blocks, KV_BLOCK_SIZE,
                      m->cfg.n_kv_heads * m->cfg.head_dim, err))
        goto done;

    /* Windows start at 0, stride, 2 * stride, ...; each scores the targets
     * after the previous window's end. */
    double nll = 0;
    long long n_bytes = 0;
    int scored_to = 1; /* targets below this index are scored */
    int n_windows = n <= ctx ? 1 : 1 + (n - ctx + stride - 1) / stride;
    int64_t t0 = clock_now_ns();
    for (int wi = 0; wi < n_windows; wi++) {
        int begin = wi * stride, end = begin + ctx < n ? begin + ctx : n;
        if (score_window(&s, ids.v + begin, end - begin, scored_to - begin, &nll, err))
            goto done;
        for (int i = scored_to; i < end; i++) {
            char buf[PPL_TOKEN_BYTES];
            n_bytes += (long long)vocab_token_bytes(&vocab, ids.v[i], buf, sizeof buf);
        }
        scored_to = end;
        double secs = (clock_now_ns() - t0) / 1e9;
        fprintf(stderr, "perplexity: window %d/%d, %d tokens scored, running perplexity %.3f, %.1f s\n", wi + 1,
                n_windows, scored_to - 1, exp(nll / (scored_to - 1)), secs);
    }
    int n_scored = scored_to - 1;
    printf("perplexity %.4f bits_per_byte %.4f tokens %d bytes %lld ctx %d stride %d\n", exp(nll / n_scored),
           nll / log(2.0) / (double)(n_bytes ? n_bytes : 1), n_scored, n_bytes, ctx, stride);
    rc = 0;
done:
    kv_store_free(&s.kv);
    if (has_fwd)
        fwd_ctx_free(&s.fwd);
    pool_destroy(pool);
    free(s.pos), free(s.tables), free(s.want), free(s.table), free(s.logits);
    tok_ids_free(&ids);
    tok_free(tok);
    vocab_free(&vocab);
    model_free(m);
    free(text);
    return rc;
}

int cmd_perplexity(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
    }
    ppl_opts_t o;
    err_t err = {0};
    if (parse(argc, argv, &o, &err)) {
        fprintf(stderr, "splash perplexity: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (perplexity(&o, &err)) {
        fprintf(stderr, "splash perplexity: %s\n", err.msg);
        return 1;
    }
    return 0;
}
