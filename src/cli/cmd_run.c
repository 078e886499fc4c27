/* splash run: one-shot generation, streamed to stdout. One sequence through
 * the same batched forward the server uses: the prompt in chunks of rows,
 * then one decode row per step. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/cli.h"
#include "base/clock.h"
#include "cli/commands.h"
#include "cli/engine_opts.h"
#include "cli/mtp_logits.h"
#include "engine/engine.h"
#include "model/kv.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

#define RUN_DEFAULT_MAX_TOKENS 64
#define RUN_DEFAULT_CHUNK 64 /* prompt rows per forward pass */
/* Sampling when no sampling option is given: a small model decoding greedily
 * soon repeats itself, so the demo samples (HTTP requests keep OpenAI's
 * defaults; this is the command line only). */
#define RUN_DEMO_TEMPERATURE 0.8f
#define RUN_DEMO_TOP_P 0.95f
#define RUN_DEMO_REPETITION_PENALTY 1.1f
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
    "sampling: with none of the options below, run samples with temperature 0.8, top-p 0.95\n"
    "and repetition penalty 1.1 (a small model decoding greedily soon loops); giving any of\n"
    "them starts from greedy with every filter off, so --temperature 0 alone is plain greedy.\n"
    "  --temperature T     0 = greedy (default 0)\n"
    "  --top-k N           sample from the N most likely tokens (default 0: off)\n"
    "  --top-p P           nucleus sampling threshold (default 1: off)\n"
    "  --min-p P           drop tokens below P x the top probability (default 0: off)\n"
    "  --presence-penalty X, --frequency-penalty X   OpenAI penalties in [-2, 2] (default 0)\n"
    "  --repetition-penalty X  divide repeated tokens' logits by X (default 1: off)\n"
    "  --stop TEXT         stop before TEXT (repeatable, up to %d)\n"
    "  --seed N            sampling seed (default 0)\n"
    "  --ignore-eos        keep generating past the end-of-sequence token\n"
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
    "  --threads N         worker threads (default: CPUs available, %d)\n"
    "  --chunk N           prompt rows per forward pass (default %d)\n"
    "  --prompt-ids LIST   comma-separated token ids instead of a text prompt\n"
    "  --logits-out FILE   write the logits at every prompt position (f32, n_prompt x vocab)\n"
    "  --mtp-logits-out FILE  write the MTP block's logits at every prompt position but the last, fed the\n"
    "                      prompt's next token (f32, (n_prompt - 1) x vocab; qwen35 files with an MTP block)\n"
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
    const char *stop[ENGINE_MAX_STOP];
    int n_stop;
    engine_config_t spec; /* draft_mode, draft_max, verify_rows */
    const char *draft_path;
    bool ignore_eos, quiet;
    bool has_sampling; /* a sampling option was given: the demo defaults are off */
    const char *logits_out, *ids_out, *mtp_logits_out;
} run_opts_t;

/* getopt_long's values for run's own options (engine_opts.h has the
 * shared ones). */
enum {
    RO_IGNORE_EOS = 0x100,
    RO_QUIET,
    RO_MODEL,
    RO_MAX_TOKENS,
    RO_STOP,
    RO_SEED,
    RO_THREADS,
    RO_CHUNK,
    RO_PROMPT_IDS,
    RO_LOGITS_OUT,
    RO_IDS_OUT,
    RO_MTP_LOGITS_OUT,
    /* the sampling options: giving any of them turns the demo defaults off */
    RO_TEMPERATURE,
    RO_TOP_K,
    RO_TOP_P,
    RO_MIN_P,
    RO_PRESENCE,
    RO_FREQUENCY,
    RO_REPETITION
};

/* A sampling option's value into o->sp. */
static int parse_sampling(int opt, const char *v, run_opts_t *o, err_t *err)
{
    double d;
    int64_t x;
    switch (opt) {
    case RO_TOP_K:
        if (cli_parse_i64("--top-k", v, 0, INT_MAX, &x, err))
            return -1;
        o->sp.top_k = (int)x;
        return 0;
    case RO_TEMPERATURE:
        if (cli_parse_f64("--temperature", v, 0.0, 100.0, &d, err))
            return -1;
        o->sp.temperature = (float)d;
        return 0;
    case RO_TOP_P:
        if (cli_parse_f64("--top-p", v, 1e-6, 1.0, &d, err))
            return -1;
        o->sp.top_p = (float)d;
        return 0;
    case RO_MIN_P:
        if (cli_parse_f64("--min-p", v, 0.0, 1.0, &d, err))
            return -1;
        o->sp.min_p = (float)d;
        return 0;
    case RO_PRESENCE:
        if (cli_parse_f64("--presence-penalty", v, -2.0, 2.0, &d, err))
            return -1;
        o->sp.presence_penalty = (float)d;
        return 0;
    case RO_FREQUENCY:
        if (cli_parse_f64("--frequency-penalty", v, -2.0, 2.0, &d, err))
            return -1;
        o->sp.frequency_penalty = (float)d;
        return 0;
    default: /* RO_REPETITION */
        if (cli_parse_f64("--repetition-penalty", v, 1e-3, SAMPLER_MAX_REPETITION_PENALTY, &d, err))
            return -1;
        o->sp.repetition_penalty = (float)d;
        return 0;
    }
}

/* One option from getopt_long (opt), its value v; arg: the word it came from. */
static int parse_opt(int opt, const char *v, const char *arg, void *ctx, err_t *err)
{
    run_opts_t *o = ctx;
    if (opt >= EO_DRAFT && opt < EO_END)
        return engine_opt(opt, v, &o->spec, &o->draft_path, err);
    if (opt >= RO_TEMPERATURE && opt <= RO_REPETITION) {
        o->has_sampling = true;
        return parse_sampling(opt, v, o, err);
    }
    switch (opt) {
    case RO_IGNORE_EOS: o->ignore_eos = true; return 0;
    case RO_QUIET: o->quiet = true; return 0;
    case RO_MODEL: o->model = v; return 0;
    case RO_MAX_TOKENS: return cli_parse_i64("--max-tokens", v, 0, 1 << 24, &o->max_tokens, err);
    case RO_STOP:
        if (o->n_stop == ENGINE_MAX_STOP)
            return err_set(err, "--stop: at most %d stop strings", ENGINE_MAX_STOP);
        o->stop[o->n_stop++] = v;
        return 0;
    case RO_SEED: return cli_parse_u64("--seed", v, &o->sp.seed, err);
    case RO_THREADS: return cli_parse_i64("--threads", v, 1, POOL_MAX_THREADS, &o->threads, err);
    case RO_CHUNK: return cli_parse_i64("--chunk", v, 1, RUN_MAX_CHUNK, &o->chunk, err);
    case RO_PROMPT_IDS:
        free(o->prompt_ids);
        o->prompt_ids = NULL;
        return cli_parse_i32_list("--prompt-ids", v, 0, INT32_MAX, &o->prompt_ids, &o->n_prompt_ids, err);
    case RO_LOGITS_OUT: o->logits_out = v; return 0;
    case RO_IDS_OUT: o->ids_out = v; return 0;
    case RO_MTP_LOGITS_OUT: o->mtp_logits_out = v; return 0;
    case ':': return err_set(err, "%s needs a value", arg);
    default: return err_set(err, "unknown option '%s' (splash run --help lists them)", arg);
    }
}

static int parse(int argc, char **argv, run_opts_t *o, err_t *err)
{
    static const struct option options[] = {
        {"ignore-eos", no_argument, NULL, RO_IGNORE_EOS},
        {"quiet", no_argument, NULL, RO_QUIET},
        {"model", required_argument, NULL, RO_MODEL},
        {"max-tokens", required_argument, NULL, RO_MAX_TOKENS},
        {"stop", required_argument, NULL, RO_STOP},
        {"seed", required_argument, NULL, RO_SEED},
        {"threads", required_argument, NULL, RO_THREADS},
        {"chunk", required_argument, NULL, RO_CHUNK},
        {"prompt-ids", required_argument, NULL, RO_PROMPT_IDS},
        {"logits-out", required_argument, NULL, RO_LOGITS_OUT},
        {"ids-out", required_argument, NULL, RO_IDS_OUT},
        {"mtp-logits-out", required_argument, NULL, RO_MTP_LOGITS_OUT},
        {"temperature", required_argument, NULL, RO_TEMPERATURE},
        {"top-k", required_argument, NULL, RO_TOP_K},
        {"top-p", required_argument, NULL, RO_TOP_P},
        {"min-p", required_argument, NULL, RO_MIN_P},
        {"presence-penalty", required_argument, NULL, RO_PRESENCE},
        {"frequency-penalty", required_argument, NULL, RO_FREQUENCY},
        {"repetition-penalty", required_argument, NULL, RO_REPETITION},
        ENGINE_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->model = cli_default_model();
    o->max_tokens = RUN_DEFAULT_MAX_TOKENS;
    o->threads = pool_default_threads();
    o->chunk = RUN_DEFAULT_CHUNK;
    o->sp = sampler_params_default();
    engine_config_default(&o->spec);
    if (cli_getopt(argc, argv, "", options, parse_opt, o, err))
        return -1;
    /* the words left (getopt_long moved them behind the options): the prompt */
    if (optind < argc)
        o->prompt = argv[optind];
    if (optind + 1 < argc)
        return err_set(err, "more than one prompt given ('%s'); quote the prompt", argv[optind + 1]);
    if (!o->has_sampling) {
        o->sp.temperature = RUN_DEMO_TEMPERATURE;
        o->sp.top_p = RUN_DEMO_TOP_P;
        o->sp.repetition_penalty = RUN_DEMO_REPETITION_PENALTY;
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
    model_t *draft; /* --draft FILE */
    vocab_t vocab;
    tokenizer_t *tok;
    engine_t *engine;
    float *prompt_logits; /* (n_prompt, vocab) when --logits-out */
    int32_t *gen_ids;     /* (max_tokens) */
} run_state_t;

static void run_free(run_state_t *s)
{
    engine_destroy(s->engine);
    model_free(s->draft);
    tok_free(s->tok);
    free(s->prompt_logits);
    free(s->gen_ids);
    vocab_free(&s->vocab);
    model_free(s->model);
}

/* The prompt's token ids: --prompt-ids as given, or the text encoded (with
 * special-token text parsed, as llama.cpp's CLI does, and a BOS first when
 * the file asks for one; Qwen's do not). */
static int prompt_tokens(run_state_t *s, const run_opts_t *o, tok_ids_t *ids, err_t *err)
{
    if (o->prompt_ids) {
        ids->v = malloc((size_t)o->n_prompt_ids * sizeof *ids->v);
        if (!ids->v)
            return err_set(err, "out of memory");
        memcpy(ids->v, o->prompt_ids, (size_t)o->n_prompt_ids * sizeof *ids->v);
        ids->n = ids->cap = (size_t)o->n_prompt_ids;
        return 0;
    }
    if (s->vocab.add_bos && s->vocab.bos_id >= 0) {
        ids->v = malloc(sizeof *ids->v);
        if (!ids->v)
            return err_set(err, "out of memory");
        ids->v[0] = s->vocab.bos_id;
        ids->n = ids->cap = 1;
    }
    if (tok_encode(s->tok, o->prompt, strlen(o->prompt), true, ids, err))
        return -1;
    if (ids->n > INT32_MAX / 2)
        return err_set(err, "the prompt is too long");
    return 0;
}

/* With a drafter: how many drafts were accepted, by position, and (for
 * --verify-rows auto) the widths the fitter ran, on stderr after the timing
 * line. */
static int print_spec_summary(engine_t *e, err_t *err)
{
    engine_snapshot_t snap = {0};
    if (engine_snapshot(e, &snap, err))
        return -1;
    if (snap.draft_mode && snap.spec_verifications) {
        fprintf(stderr, "speculation: %llu of %llu drafts accepted in %llu verifications; by position",
                (unsigned long long)snap.spec_accepted, (unsigned long long)snap.spec_verified,
                (unsigned long long)snap.spec_verifications);
        for (int i = 1; i <= snap.draft_max && snap.spec_pos_verified[i]; i++)
            fprintf(stderr, " %d:%.2f", i, (double)snap.spec_pos_accepted[i] / (double)snap.spec_pos_verified[i]);
        if (snap.verify_rows == SPEC_VERIFY_AUTO) {
            fputs("; widths run", stderr);
            for (int w = 0; w <= snap.draft_max; w++)
                if (snap.spec_width_hist[w])
                    fprintf(stderr, " %d:%llu", w, (unsigned long long)snap.spec_width_hist[w]);
        }
        fputc('\n', stderr);
    }
    engine_snapshot_free(&snap);
    return 0;
}

/* One sequence through the serving engine: the prompt in chunks of --chunk
 * rows, then one decode row per step (room for a step's drafts beside). */
static int start_engine(run_state_t *s, const run_opts_t *o, int64_t n_ctx, err_t *err)
{
    engine_config_t ec;
    engine_config_default(&ec);
    ec.n_threads = (int)o->threads;
    ec.max_seqs = 1;
    ec.prefill_chunk = (int)o->chunk;
    ec.max_context = (int)n_ctx;
    ec.queue_size = 1;
    ec.prompt_logit_rows = o->logits_out ? (int)o->chunk : 0;
    ec.draft_mode = o->spec.draft_mode;
    ec.draft_max = o->spec.draft_max;
    ec.verify_rows = o->spec.verify_rows;
    ec.spec_rollback = o->spec.spec_rollback;
    ec.kv_type = o->spec.kv_type;
    ec.state_type = o->spec.state_type;
    if (o->draft_path) {
        if (!(s->draft = model_load_draft(o->draft_path, err)))
            return err_prefix(err, "--draft %s: ", o->draft_path);
        ec.draft_model = s->draft;
    }
    ec.batch_tokens = (int)o->chunk + (ec.draft_mode ? ec.draft_max + 1 : 0);
    return (s->engine = engine_create(s->model, &s->vocab, &ec, err)) ? 0 : -1;
}

/* What streaming a request's events gave. */
typedef struct run_result {
    int n_gen;
    int64_t t0, t1, t2; /* submitted, first token, done */
    engine_finish_t finish;
    char *message; /* the finish's message, owned */
} run_result_t;

/* The request's events until it is done: tokens printed as they come (and
 * kept in s->gen_ids), a long prefill's progress on a terminal. */
static void stream(run_state_t *s, const run_opts_t *o, engine_req_t *r, int n_prompt, run_result_t *res)
{
    bool show_progress = isatty(STDERR_FILENO) && n_prompt > o->chunk, progress_shown = false;
    engine_event_t ev;
    while (res->finish == ENGINE_FINISH_NONE && engine_next(r, &ev, -1) == 1) {
        if (ev.kind == ENGINE_EV_PROGRESS && show_progress && ev.time_ns - res->t0 > RUN_PROGRESS_AFTER_NS) {
            /* a long prompt on a slow model: show progress on a terminal */
            fprintf(stderr, "\rprefill: %d / %d tokens", ev.n_prefilled, n_prompt);
            progress_shown = true;
        } else if (ev.kind == ENGINE_EV_TOKEN) {
            if (res->n_gen == 0)
                res->t1 = ev.time_ns;
            s->gen_ids[res->n_gen++] = ev.token;
            if (!o->quiet) {
                fwrite(ev.text, 1, ev.text_len, stdout);
                fflush(stdout);
            }
        } else if (ev.kind == ENGINE_EV_DONE) {
            res->finish = ev.finish;
            res->t2 = ev.time_ns;
            res->message = ev.message;
            ev.message = NULL;
        }
        engine_event_clear(&ev);
    }
    if (progress_shown)
        fputc('\n', stderr);
    if (!o->quiet) {
        fputc('\n', stdout);
        fflush(stdout);
    }
}

/* --logits-out and --ids-out, written whole or not at all. */
static int write_outputs(const run_state_t *s, const run_opts_t *o, int n_prompt, int n_gen, err_t *err)
{
    size_t logit_bytes = (size_t)n_prompt * s->model->cfg.vocab * sizeof(float);
    if (o->logits_out && afile_write(o->logits_out, s->prompt_logits, logit_bytes, err))
        return -1;
    if (!o->ids_out)
        return 0;
    afile_t a;
    FILE *f = afile_open(&a, o->ids_out, err);
    if (!f)
        return -1;
    for (int i = 0; i < n_gen; i++)
        fprintf(f, "%s%d", i ? " " : "", s->gen_ids[i]);
    fputc('\n', f);
    return afile_commit(&a, err);
}

static int generate(run_state_t *s, const run_opts_t *o, tok_ids_t *prompt_ids, err_t *err)
{
    const model_config_t *c = &s->model->cfg;
    if (prompt_tokens(s, o, prompt_ids, err))
        return -1;
    int n_prompt = (int)prompt_ids->n;
    if (n_prompt == 0)
        return err_set(err, "the prompt is empty");
    for (int i = 0; i < n_prompt; i++)
        if (prompt_ids->v[i] >= c->vocab)
            return err_set(err, "--prompt-ids: id %d is outside the vocabulary (%d)", prompt_ids->v[i], c->vocab);
    int64_t n_ctx = n_prompt + o->max_tokens;
    if (n_ctx > c->context_length)
        return err_set(err, "prompt (%d tokens) + --max-tokens (%lld) exceeds the model's context (%d)", n_prompt,
                       (long long)o->max_tokens, c->context_length);
    if (o->mtp_logits_out &&
        mtp_logits_write(s->model, (int)o->threads, prompt_ids->v, n_prompt, o->mtp_logits_out, err))
        return -1;
    if (o->max_tokens == 0)
        return 0;
    if (start_engine(s, o, n_ctx, err))
        return -1;
    s->gen_ids = malloc((size_t)o->max_tokens * sizeof *s->gen_ids);
    if (o->logits_out)
        s->prompt_logits = malloc((size_t)n_prompt * c->vocab * sizeof(float));
    if (!s->gen_ids || (o->logits_out && !s->prompt_logits))
        return err_set(err, "out of memory");

    engine_params_t p = {.prompt = prompt_ids->v,
                         .n_prompt = n_prompt,
                         .sampling = o->sp,
                         .max_tokens = (int)o->max_tokens,
                         .ignore_eos = o->ignore_eos,
                         .stop = o->stop,
                         .n_stop = o->n_stop,
                         .prompt_logits = s->prompt_logits};
    engine_req_t *r;
    if (engine_submit(s->engine, &p, &r, err) != ENGINE_OK)
        return -1;
    run_result_t res = {.t0 = clock_now_ns(), .finish = ENGINE_FINISH_NONE};
    stream(s, o, r, n_prompt, &res);
    engine_release(r);
    if (res.finish == ENGINE_FINISH_ERROR || res.finish == ENGINE_FINISH_CANCELLED ||
        res.finish == ENGINE_FINISH_TIMEOUT) {
        err_set(err, "generation ended (%s): %s", engine_finish_name(res.finish), res.message ? res.message : "");
        free(res.message);
        return -1;
    }
    free(res.message);
    if (write_outputs(s, o, n_prompt, res.n_gen, err))
        return -1;
    double pre_s = (res.t1 - res.t0) / 1e9, dec_s = (res.t2 - res.t1) / 1e9;
    /* n_gen tokens took n_gen - 1 decode steps (the first came from prefill) */
    int n_dec = res.n_gen > 1 ? res.n_gen - 1 : 0;
    fprintf(stderr,
            "prompt: %d tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s (%.2f tok/s); threads %d; "
            "finish %s\n",
            n_prompt, pre_s, n_prompt / (pre_s > 0 ? pre_s : 1e-9), res.n_gen, dec_s,
            n_dec / (dec_s > 0 ? dec_s : 1e-9), (int)o->threads, engine_finish_name(res.finish));
    return print_spec_summary(s->engine, err);
}

int cmd_run(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(run_usage, cli_default_model(), RUN_DEFAULT_MAX_TOKENS, ENGINE_MAX_STOP, pool_default_threads(),
                   RUN_DEFAULT_CHUNK);
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
    s.model = model_load_runnable(o.model, &err);
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
        !(s.tok = tok_load(&s.vocab, s.model->gguf, &err)) || generate(&s, &o, &prompt_ids, &err)) {
        fprintf(stderr, "splash run: %s\n", err.msg);
        rc = 1;
    }
    run_free(&s);
    tok_ids_free(&prompt_ids);
    free(o.prompt_ids);
    return rc;
}
