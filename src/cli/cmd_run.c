/* splash run: one-shot generation, streamed to stdout. One sequence through
 * the same batched forward the server uses: the prompt in chunks of rows,
 * then one decode row per step. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cli.h"
#include "base/clock.h"
#include "cli/commands.h"
#include "engine/sampler.h"
#include "model/forward.h"
#include "model/kv.h"
#include "model/model.h"
#include "text/detok.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

#define RUN_DEFAULT_MAX_TOKENS 64
#define RUN_DEFAULT_CHUNK 64 /* prompt rows per forward pass */
#define RUN_MAX_CHUNK 4096
#define RUN_MAX_PROMPT_BYTES (1 << 20)
#define RUN_PROGRESS_AFTER_NS 2000000000 /* prefill progress once it has taken 2 s */

static const char run_usage[] =
    "usage: splash run [--model FILE] [options] \"prompt\"\n"
    "\n"
    "Generates a continuation of the prompt and streams it to stdout; timing goes to stderr.\n"
    "The prompt is encoded with the model's tokenizer; special-token text in it is parsed.\n"
    "\n"
    "  --model FILE        GGUF model (default: the built-in model, %s)\n"
    "  --max-tokens N      tokens to generate (default %d)\n"
    "  --temperature T     0 = greedy (default 0)\n"
    "  --top-k N           sample from the N most likely tokens (default 0: off)\n"
    "  --top-p P           nucleus sampling threshold (default 1: off)\n"
    "  --seed N            sampling seed (default 0)\n"
    "  --ignore-eos        keep generating past the end-of-sequence token\n"
    "  --threads N         worker threads (default: CPUs available, %d)\n"
    "  --chunk N           prompt rows per forward pass (default %d)\n"
    "  --prompt-ids LIST   comma-separated token ids instead of a text prompt\n"
    "  --logits-out FILE   write the logits at every prompt position (f32, n_prompt x vocab)\n"
    "  --ids-out FILE      write the generated token ids, space-separated\n"
    "  --quiet             no text on stdout (timing only)\n";

static char default_model_path[PATH_MAX];

const char *cli_default_model(void)
{
    if (default_model_path[0])
        return default_model_path;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(default_model_path, sizeof default_model_path, "models/default.gguf");
        return default_model_path;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(default_model_path, sizeof default_model_path, "%.*s/models/default.gguf", PATH_MAX - 32, exe);
    return default_model_path;
}

typedef struct run_opts {
    const char *model;
    const char *prompt;
    int32_t *prompt_ids;
    int n_prompt_ids;
    int64_t max_tokens, threads, chunk;
    sampler_params_t sp;
    bool ignore_eos, quiet;
    const char *logits_out, *ids_out;
} run_opts_t;

static int parse(int argc, char **argv, run_opts_t *o, err_t *err)
{
    memset(o, 0, sizeof *o);
    o->model = cli_default_model();
    o->max_tokens = RUN_DEFAULT_MAX_TOKENS;
    o->threads = pool_default_threads();
    o->chunk = RUN_DEFAULT_CHUNK;
    o->sp = (sampler_params_t){.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .seed = 0};
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        double d;
        int64_t x;
        if (!strcmp(argv[i], "--ignore-eos")) {
            o->ignore_eos = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            o->quiet = true;
        } else if ((v = cli_opt(argc, argv, &i, "--model", &missing))) {
            o->model = v;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--max-tokens", &missing))) {
            if (cli_parse_i64("--max-tokens", v, 0, 1 << 24, &o->max_tokens, err))
                return -1;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--temperature", &missing))) {
            if (cli_parse_f64("--temperature", v, 0.0, 100.0, &d, err))
                return -1;
            o->sp.temperature = (float)d;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--top-k", &missing))) {
            if (cli_parse_i64("--top-k", v, 0, INT_MAX, &x, err))
                return -1;
            o->sp.top_k = (int)x;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--top-p", &missing))) {
            if (cli_parse_f64("--top-p", v, 1e-6, 1.0, &d, err))
                return -1;
            o->sp.top_p = (float)d;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--seed", &missing))) {
            if (cli_parse_u64("--seed", v, &o->sp.seed, err))
                return -1;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--threads", &missing))) {
            if (cli_parse_i64("--threads", v, 1, POOL_MAX_THREADS, &o->threads, err))
                return -1;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--chunk", &missing))) {
            if (cli_parse_i64("--chunk", v, 1, RUN_MAX_CHUNK, &o->chunk, err))
                return -1;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--prompt-ids", &missing))) {
            free(o->prompt_ids);
            if (cli_parse_i32_list("--prompt-ids", v, 0, INT32_MAX, &o->prompt_ids, &o->n_prompt_ids, err))
                return -1;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--logits-out", &missing))) {
            o->logits_out = v;
        } else if (!missing && (v = cli_opt(argc, argv, &i, "--ids-out", &missing))) {
            o->ids_out = v;
        } else if (missing) {
            return err_set(err, "%s needs a value", argv[i]);
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return err_set(err, "unknown option '%s' (splash run --help lists them)", argv[i]);
        } else if (o->prompt) {
            return err_set(err, "more than one prompt given ('%s'); quote the prompt", argv[i]);
        } else {
            o->prompt = argv[i];
        }
    }
    if (!o->prompt && !o->prompt_ids)
        return err_set(err, "no prompt given (a text argument or --prompt-ids)");
    if (o->prompt && o->prompt_ids)
        return err_set(err, "give either a text prompt or --prompt-ids, not both");
    if (o->prompt && strlen(o->prompt) > RUN_MAX_PROMPT_BYTES)
        return err_set(err, "prompt is longer than %d bytes", RUN_MAX_PROMPT_BYTES);
    return 0;
}

typedef struct run_state {
    model_t *model;
    vocab_t vocab;
    pool_t *pool;
    fwd_ctx_t fwd;
    kv_store_t kv;
    int32_t *block_table;
    sampler_t sampler;
    tokenizer_t *tok;
    float *logits;
    int32_t *tokens; /* (n_ctx) prompt then generated ids */
    int n_ctx;
} run_state_t;

static void run_free(run_state_t *s)
{
    sampler_free(&s->sampler);
    tok_free(s->tok);
    free(s->logits);
    free(s->tokens);
    free(s->block_table);
    kv_store_free(&s->kv);
    fwd_ctx_free(&s->fwd);
    pool_destroy(s->pool);
    vocab_free(&s->vocab);
    model_free(s->model);
}

static int write_file(const char *path, const void *data, size_t n, err_t *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return err_set(err, "%s: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || w != n)
        return err_set(err, "%s: write failed", path);
    return 0;
}

static int generate(run_state_t *s, const run_opts_t *o, tok_ids_t *prompt_ids, err_t *err)
{
    const model_config_t *c = &s->model->cfg;
    int n_prompt = 0;
    if (o->prompt_ids) {
        for (int i = 0; i < o->n_prompt_ids; i++)
            if (o->prompt_ids[i] >= c->vocab)
                return err_set(err, "--prompt-ids: id %d is outside the vocabulary (%d)", o->prompt_ids[i], c->vocab);
        n_prompt = o->n_prompt_ids;
    } else {
        /* the prompt is user text: special-token text in it is parsed, as llama.cpp's CLI does;
         * a BOS token first when the file asks for one (Qwen's do not) */
        if (s->vocab.add_bos && s->vocab.bos_id >= 0) {
            prompt_ids->v = malloc(sizeof *prompt_ids->v);
            if (!prompt_ids->v)
                return err_set(err, "out of memory");
            prompt_ids->v[0] = s->vocab.bos_id;
            prompt_ids->n = prompt_ids->cap = 1;
        }
        if (tok_encode(s->tok, o->prompt, strlen(o->prompt), true, prompt_ids, err))
            return -1;
        if (prompt_ids->n > INT32_MAX / 2)
            return err_set(err, "the prompt is too long");
        n_prompt = (int)prompt_ids->n;
    }
    if (n_prompt == 0)
        return err_set(err, "the prompt is empty");
    int64_t n_ctx = n_prompt + o->max_tokens;
    if (n_ctx > c->context_length)
        return err_set(err, "prompt (%d tokens) + --max-tokens (%lld) exceeds the model's context (%d)", n_prompt,
                       (long long)o->max_tokens, c->context_length);
    s->n_ctx = (int)n_ctx;
    int n_blocks = (s->n_ctx + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    int rows = (int)(o->chunk < n_prompt ? o->chunk : n_prompt);
    bool all_logits = o->logits_out != NULL;
    s->tokens = malloc((size_t)s->n_ctx * sizeof *s->tokens);
    s->block_table = malloc((size_t)n_blocks * sizeof *s->block_table);
    s->logits = malloc((size_t)(all_logits ? n_prompt : 1) * (size_t)c->vocab * sizeof(float));
    if (!s->tokens || !s->block_table || !s->logits)
        return err_set(err, "out of memory");
    if (o->prompt_ids)
        memcpy(s->tokens, o->prompt_ids, (size_t)n_prompt * sizeof *s->tokens);
    else
        memcpy(s->tokens, prompt_ids->v, (size_t)n_prompt * sizeof *s->tokens);
    for (int i = 0; i < n_blocks; i++)
        s->block_table[i] = i; /* one sequence: blocks in order */
    if (fwd_ctx_init(&s->fwd, s->model, s->pool, rows, s->n_ctx, err) ||
        kv_store_init(&s->kv, c->n_layers, n_blocks, KV_BLOCK_SIZE, c->n_kv_heads * c->head_dim, err) ||
        sampler_init(&s->sampler, &o->sp, c->vocab, err))
        return -1;

    int32_t pos[RUN_MAX_CHUNK];
    const int32_t *tables[RUN_MAX_CHUNK];
    uint8_t want[RUN_MAX_CHUNK];
    for (int i = 0; i < rows; i++)
        tables[i] = s->block_table;

    /* prefill: the prompt in chunks; logits of the last row (or every row) */
    bool show_progress = isatty(STDERR_FILENO) && n_prompt > rows;
    int64_t t0 = clock_now_ns();
    for (int done = 0; done < n_prompt;) {
        int n = n_prompt - done < rows ? n_prompt - done : rows;
        for (int i = 0; i < n; i++) {
            pos[i] = done + i;
            want[i] = all_logits || done + i == n_prompt - 1;
        }
        fwd_batch_t b = {n, s->tokens + done, pos, tables, want};
        float *out = all_logits ? s->logits + (size_t)done * c->vocab : s->logits;
        if (fwd_run(&s->fwd, &s->kv, &b, out, err))
            return -1;
        done += n;
        /* a long prompt on a slow model: show progress on a terminal */
        if (show_progress && clock_now_ns() - t0 > RUN_PROGRESS_AFTER_NS)
            fprintf(stderr, "\rprefill: %d / %d tokens", done, n_prompt);
    }
    if (show_progress && clock_now_ns() - t0 > RUN_PROGRESS_AFTER_NS)
        fputc('\n', stderr);
    int64_t t1 = clock_now_ns();
    if (all_logits && write_file(o->logits_out, s->logits, (size_t)n_prompt * c->vocab * sizeof(float), err))
        return -1;
    const float *last = s->logits + (size_t)(all_logits ? n_prompt - 1 : 0) * c->vocab;

    /* decode: sample, stream, feed back */
    detok_t dt;
    detok_init(&dt, &s->vocab);
    char text[DETOK_MAX_TOKEN_BYTES + 8];
    int n_gen = 0;
    while (n_gen < o->max_tokens) {
        int32_t id = sampler_sample(&s->sampler, last);
        int p = n_prompt + n_gen;
        s->tokens[p] = id;
        n_gen++;
        if (!o->quiet) {
            size_t k = detok_push(&dt, id, text);
            fwrite(text, 1, k, stdout);
            fflush(stdout);
        }
        if ((id == s->vocab.eos_id && !o->ignore_eos) || n_gen == o->max_tokens)
            break; /* the last token needs no forward pass */
        pos[0] = p;
        want[0] = 1;
        fwd_batch_t b = {1, &s->tokens[p], pos, tables, want};
        if (fwd_run(&s->fwd, &s->kv, &b, s->logits, err))
            return -1;
        last = s->logits;
    }
    int64_t t2 = clock_now_ns();
    if (!o->quiet) {
        size_t k = detok_flush(&dt, text);
        fwrite(text, 1, k, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    if (o->ids_out) {
        FILE *f = fopen(o->ids_out, "w");
        if (!f)
            return err_set(err, "%s: %s", o->ids_out, strerror(errno));
        for (int i = 0; i < n_gen; i++)
            fprintf(f, "%s%d", i ? " " : "", s->tokens[n_prompt + i]);
        fputc('\n', f);
        if (fclose(f) != 0)
            return err_set(err, "%s: write failed", o->ids_out);
    }
    double pre_s = (t1 - t0) / 1e9, dec_s = (t2 - t1) / 1e9;
    /* n_gen tokens took n_gen - 1 forward passes (the first came from prefill) */
    int n_dec = n_gen > 1 ? n_gen - 1 : 0;
    fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s (%.2f tok/s); threads %d\n",
            n_prompt, pre_s, n_prompt / (pre_s > 0 ? pre_s : 1e-9), n_gen, dec_s, n_dec / (dec_s > 0 ? dec_s : 1e-9),
            pool_size(s->pool));
    return 0;
}

int cmd_run(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(run_usage, cli_default_model(), RUN_DEFAULT_MAX_TOKENS, pool_default_threads(), RUN_DEFAULT_CHUNK);
            return 0;
        }
    }
    run_opts_t o;
    err_t err;
    if (parse(argc, argv, &o, &err)) {
        fprintf(stderr, "splash run: %s\n", err.msg);
        free(o.prompt_ids);
        return EXIT_USAGE;
    }
    run_state_t s = {0};
    int rc = 0;
    s.model = model_load(o.model, &err);
    if (!s.model) {
        if (!strcmp(o.model, cli_default_model()) && access(o.model, F_OK) != 0)
            fprintf(stderr, "splash run: the built-in model %s is missing (the build writes it; or pass --model)\n",
                    o.model);
        else
            fprintf(stderr, "splash run: %s\n", err.msg);
        free(o.prompt_ids);
        return 1;
    }
    tok_ids_t prompt_ids = {0};
    if (vocab_load(&s.vocab, s.model->gguf, s.model->cfg.vocab, &err) ||
        !(s.tok = tok_load(&s.vocab, s.model->gguf, &err)) || !(s.pool = pool_create((int)o.threads, &err)) ||
        generate(&s, &o, &prompt_ids, &err)) {
        fprintf(stderr, "splash run: %s\n", err.msg);
        rc = 1;
    }
    run_free(&s);
    tok_ids_free(&prompt_ids);
    free(o.prompt_ids);
    return rc;
}
