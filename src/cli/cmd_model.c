/* splash model info FILE | splash model synth ... | splash model convert ... */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cli.h"
#include "base/clock.h"
#include "base/pool.h"
#include "base/sha256.h"
#include "cli/commands.h"
#include "kernels/types.h"
#include "model/gguf.h"
#include "model/model.h"
#include "text/hf_import.h"
#include "text/vocab.h"
#include "tools/convert.h"
#include "tools/synth.h"

static const char model_usage[] =
    "usage: splash model info FILE [--no-hash]\n"
    "       splash model synth --out FILE [--preset tiny|qwen3-0.6b|qwen35-tiny|qwen35-0.8b] [--seed N]\n"
    "                          [--type f32|f16|bf16|q8_0|q4_0|q4_k|q5_k|q6_k|q4_k_m|q5_k_m]\n"
    "                          [--layers N] [--hidden N] [--ffn N] [--heads N] [--kv-heads N] [--head-dim N]\n"
    "                          [--vocab N] [--context N] [--rope-theta X] [--rms-eps X] [--tied|--untied]\n"
    "                          qwen35 only: [--nextn N] [--full-attn-interval N] [--rope-dim N]\n"
    "                          [--conv-kernel N] [--ssm-state N] [--ssm-groups N] [--ssm-v-heads N]\n"
    "                          [--norm-std X] [--name S] [--threads N]\n"
    "                          [--tokenizer tokenizer.json [--tokenizer-config tokenizer_config.json]]\n"
    "       splash model convert --in FILE --type f32|f16|bf16|q8_0|q4_0|q4_k|q5_k|q6_k|q4_k_m|q5_k_m\n"
    "                            --out FILE [--threads N]\n"
    "\n"
    "info   describes a GGUF file: architecture, hyperparameters, metadata, tensor table,\n"
    "       tokenizer summary and the file's SHA-256 fingerprint.\n"
    "synth  writes a Qwen3-architecture GGUF with seeded random weights (normal, std 0.02;\n"
    "       norms at 1, or 1 + X*N(0,1) with --norm-std X) and a byte-level vocabulary.\n"
    "       Presets: tiny (hidden 64, 2 layers, vocab 512) and qwen3-0.6b (the Qwen3-0.6B\n"
    "       shape); any field can be overridden. --tokenizer imports a Hugging Face byte-level\n"
    "       BPE tokenizer (and with --tokenizer-config its special tokens and chat template)\n"
    "       instead; the vocabulary grows to hold it. --type sets the matrices' storage type\n"
    "       (f16 by default); q4_k_m and q5_k_m are llama.cpp's Q4_K_M and Q5_K_M mixes (Q6_K\n"
    "       for the output and for some layers' attn_v / attn_qkv and ffn_down, Q4_K or Q5_K\n"
    "       elsewhere; qwen3 and qwen35).\n"
    "       The K-quants (q4_k, q5_k, q6_k, q4_k_m, q5_k_m) need row widths that are multiples\n"
    "       of 256: not the tiny presets.\n"
    "       qwen35-tiny and qwen35-0.8b write llama.cpp's qwen35 (Qwen3.5) layout: Gated\n"
    "       DeltaNet layers with a full-attention layer every --full-attn-interval (4), plus\n"
    "       --nextn (1) NextN/MTP blocks; --layers counts the main layers. qwen35-0.8b is the\n"
    "       Qwen3.5-0.8B shape; qwen35-tiny keeps its ratios at hidden 128 (4 layers + 1).\n"
    "       ssm_conv1d, ssm_a, ssm_dt.bias and the norms stay f32 whatever --type says.\n"
    "       splash runs qwen35 files everywhere it runs qwen3 files; --draft mtp drafts from\n"
    "       their own NextN block.\n"
    "convert rewrites every weight matrix of a model in another storage type (dequantised to\n"
    "       f32, then quantised with the type's own quantiser); norms, what llama.cpp keeps in\n"
    "       f32 (ssm_conv1d, tensors not named *.weight) and all metadata, the tokenizer\n"
    "       included, are copied unchanged; q4_k_m and q5_k_m give each matrix its type in the\n"
    "       mix. Converting an already quantised file compounds the errors: start from the F16\n"
    "       or F32 file.\n";

/* ---- info --------------------------------------------------------------- */

static void print_value(const gguf_kv_t *kv)
{
    switch (kv->type) {
    case GGUF_TYPE_STRING: {
        /* one line: long strings (chat templates) are cut, newlines escaped */
        uint64_t n = kv->str.len < 80 ? kv->str.len : 80;
        putchar('"');
        for (uint64_t i = 0; i < n; i++) {
            char c = kv->str.ptr[i];
            if (c == '\n')
                fputs("\\n", stdout);
            else if ((unsigned char)c < 0x20)
                printf("\\x%02x", (unsigned char)c);
            else
                putchar(c);
        }
        printf("\"%s", kv->str.len > n ? "..." : "");
        if (kv->str.len > n)
            printf(" (%" PRIu64 " bytes)", kv->str.len);
        break;
    }
    case GGUF_TYPE_ARRAY: printf("[%s x %" PRIu64 "]", gguf_vtype_name(kv->arr_type), kv->arr_count); break;
    case GGUF_TYPE_F32:
    case GGUF_TYPE_F64: printf("%g", kv->num.f64); break;
    case GGUF_TYPE_BOOL: fputs(kv->num.u64 ? "true" : "false", stdout); break;
    default:
        if (kv->is_signed)
            printf("%" PRId64, kv->num.i64);
        else
            printf("%" PRIu64, kv->num.u64);
    }
}

static void print_token(const vocab_t *v, int32_t id)
{
    if (id < 0) {
        fputs("none", stdout);
        return;
    }
    printf("%d '%.*s'", id, (int)v->tokens[id].len, v->tokens[id].ptr);
}

static void print_tokenizer(const gguf_t *g, int n_rows)
{
    vocab_t v;
    err_t err;
    if (vocab_load(&v, g, n_rows, &err)) {
        printf("tokenizer:     not loadable: %s\n", err.msg);
        return;
    }
    int count[7] = {0};
    for (int i = 0; i < v.n_tokens; i++)
        if (v.types[i] >= 1 && v.types[i] <= 6)
            count[v.types[i]]++;
    int n_bytes = 0;
    for (int b = 0; b < 256; b++)
        n_bytes += v.byte_token[b] >= 0;
    printf("tokenizer:     %.*s (pre-tokenizer '%.*s'), %d tokens, %" PRIu64 " merges\n", (int)v.model.len, v.model.ptr,
           (int)v.pre.len, v.pre.ptr, v.n_tokens, v.n_merges);
    printf("  token types: normal %d, control %d, user-defined %d, unused %d, byte %d, unknown %d\n", count[1],
           count[3], count[4], count[5], count[6], count[2]);
    printf("  byte tokens: %d of 256\n", n_bytes);
    printf("  bos: ");
    print_token(&v, v.bos_id);
    printf(", eos: ");
    print_token(&v, v.eos_id);
    printf(", pad: ");
    print_token(&v, v.pad_id);
    printf(", add_bos: %s\n", v.add_bos ? "yes" : "no");
    printf("  chat template: %s\n", v.has_chat_template ? "yes" : "no");
    vocab_free(&v);
}

/* qwen35's layer pattern and widths. */
static void print_qwen35(const model_t *m)
{
    const model_config_t *c = &m->cfg;
    int n_full = 0;
    for (int il = 0; il < c->n_layers; il++)
        n_full += model_is_full_attention(c, il);
    printf("  layers: %d (%d Gated DeltaNet, %d full attention", c->n_layers, c->n_layers - n_full, n_full);
    const char *sep = ": ";
    for (int il = 0; il < c->n_layers; il++) {
        if (model_is_full_attention(c, il)) {
            printf("%s%d", sep, il);
            sep = ", ";
        }
    }
    printf("), NextN/MTP layers: %d", c->n_nextn);
    if (c->n_nextn)
        printf(" (block %d%s)", c->n_layers, c->n_nextn > 1 ? " on" : "");
    printf("\n");
    printf("  full attention: gated queries (%d x %d query + gate rows), rope on %d of %d dims, "
           "sections [%d, %d, %d, %d], interval %d\n",
           c->n_heads, c->head_dim, c->rope_dim, c->head_dim, c->rope_sections[0], c->rope_sections[1],
           c->rope_sections[2], c->rope_sections[3], c->full_attn_interval);
    int dk = c->ssm_state * c->ssm_k_heads;
    printf("  Gated DeltaNet: %d key heads x %d, %d value heads x %d (inner %d), conv kernel %d, "
           "qkv width %d\n",
           c->ssm_k_heads, c->ssm_state, c->ssm_v_heads, c->ssm_inner / c->ssm_v_heads, c->ssm_inner,
           c->ssm_conv_kernel, 2 * dk + c->ssm_inner);
    err_t err;
    if (model_check_runnable(m, &err))
        printf("  forward: not available (%s)\n", err.msg);
}

static void fmt_shape(const gguf_tensor_t *t, char *buf, size_t cap)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

enum { I_NO_HASH = 0x100 };

typedef struct info_opts {
    bool do_hash, help;
} info_opts_t;

static int info_opt(int opt, const char *v, const char *word, void *ctx, err_t *err)
{
    (void)v;
    info_opts_t *o = ctx;
    if (opt == 'h') {
        o->help = true;
        return 1;
    }
    if (opt != I_NO_HASH)
        return err_set(err, "unexpected argument '%s'", word);
    o->do_hash = false;
    return 0;
}

static int model_info(int argc, char **argv)
{
    static const struct option options[] = {
        {"no-hash", no_argument, NULL, I_NO_HASH}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    info_opts_t o = {.do_hash = true};
    err_t err;
    int bad = cli_getopt(argc, argv, "h", options, info_opt, &o, &err);
    if (!bad && !o.help && optind + 1 < argc)
        bad = err_set(&err, "unexpected argument '%s'", argv[optind + 1]);
    if (!bad && !o.help && optind == argc)
        bad = err_set(&err, "missing FILE");
    if (bad) {
        fprintf(stderr, "splash model info: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (o.help) {
        fputs(model_usage, stdout);
        return 0;
    }
    const char *path = argv[optind];
    bool do_hash = o.do_hash;
    gguf_t *g = gguf_open(path, &err);
    if (!g) {
        fprintf(stderr, "splash model info: %s\n", err.msg);
        return 1;
    }
    printf("file:          %s (%zu bytes)\n", path, g->size);
    if (do_hash) {
        char hex[SHA256_HEX_LEN];
        if (sha256_hex(g->base, g->size, hex, &err) == 0)
            printf("sha256:        %s\n", hex);
        else
            printf("sha256:        failed: %s\n", err.msg);
    }
    printf("format:        GGUF v%u, %" PRIu64 " metadata pairs, %" PRIu64 " tensors, alignment %u\n", g->version,
           g->n_kv, g->n_tensors, g->alignment);

    model_t *m = model_from_gguf(g, &err);
    if (m) {
        const model_config_t *c = &m->cfg;
        printf("architecture:  %s\n", m->arch);
        printf("  layers %d, hidden %d, ffn %d, heads %d, kv heads %d, head dim %d\n", c->n_layers, c->hidden, c->ffn,
               c->n_heads, c->n_kv_heads, c->head_dim);
        printf("  vocab %d, context %d, rope theta %g, rms eps %g, output %s\n", c->vocab, c->context_length,
               c->rope_theta, c->rms_eps, c->is_tied ? "tied to token_embd" : "separate");
        printf("  parameters %" PRIu64 " (%.3g M), weight bytes %" PRIu64 " (%.1f MiB)\n", m->n_params,
               m->n_params / 1e6, m->weight_bytes, m->weight_bytes / 1048576.0);
        if (c->arch_id == MODEL_ARCH_QWEN35)
            print_qwen35(m);
    } else {
        printf("architecture:  not loadable: %s\n", err.msg);
    }

    /* weight types, counted by tensors and bytes */
    uint64_t n_of[TYPE_COUNT] = {0}, bytes_of[TYPE_COUNT] = {0};
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        n_of[g->tensors[i].type]++;
        bytes_of[g->tensors[i].type] += g->tensors[i].n_bytes;
    }
    printf("weight types: ");
    for (int t = 0; t < TYPE_COUNT; t++)
        if (n_of[t])
            printf(" %s x%" PRIu64 " (%.1f MiB)", type_name((uint32_t)t), n_of[t], bytes_of[t] / 1048576.0);
    printf("\n");

    const gguf_tensor_t *embd = gguf_find_tensor(g, "token_embd.weight");
    print_tokenizer(g, embd ? (int)embd->ne[1] : 0);

    printf("metadata:\n");
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const gguf_kv_t *kv = &g->kv[i];
        printf("  %-44.*s %-7s ", (int)kv->key.len, kv->key.ptr, gguf_vtype_name(kv->type));
        print_value(kv);
        printf("\n");
    }
    printf("tensors:\n  %-32s %-6s %-20s %12s\n", "name", "type", "shape", "bytes");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor_t *t = &g->tensors[i];
        char shape[96];
        fmt_shape(t, shape, sizeof shape);
        printf("  %-32s %-6s %-20s %12zu\n", t->name, type_name(t->type), shape, t->n_bytes);
    }
    if (m)
        model_free(m); /* closes g */
    else
        gguf_close(g);
    return 0;
}

/* ---- synth -------------------------------------------------------------- */

typedef struct progress {
    bool is_tty;
    int64_t start_ns;
    int last_pct;
} progress_t;

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
    progress_t *p = ctx;
    int pct = total ? (int)(100 * done / total) : 100;
    if (pct == p->last_pct)
        return;
    p->last_pct = pct;
    double s = (clock_now_ns() - p->start_ns) / 1e9;
    if (p->is_tty)
        fprintf(stderr, "\rsynth: %3d%% (%.1f / %.1f MiB, %.1f s)", pct, done / 1048576.0, total / 1048576.0, s);
    else if (pct % 25 == 0)
        fprintf(stderr, "synth: %d%% (%.1f s)\n", pct, s);
}

enum { SYNTH_N_INTS = 15, SYNTH_N_QWEN35_INTS = 7, SYNTH_VOCAB = 6 };
/* getopt_long's values for the long options (-h is the only short one);
 * synth_ints[k]'s is SYNTH_OPT_INT + k. */
enum {
    SO_TIED = 0x100,
    SO_UNTIED,
    SO_OUT,
    SO_PRESET,
    SO_TYPE,
    SO_TOKENIZER,
    SO_TOK_CONFIG,
    SO_NAME,
    SO_SEED,
    SO_THREADS,
    SO_THETA,
    SO_NORM_STD,
    SO_EPS,
    SYNTH_OPT_INT
};

typedef struct synth_opts {
    const char *out, *preset, *type, *name, *tok_json, *tok_config;
    uint64_t seed;
    int64_t threads;
    int ints[SYNTH_N_INTS];      /* synth_ints' values, -1 where not given */
    double theta, eps, norm_std; /* 0: the preset's */
    int tied;                    /* -1: the preset's */
    bool help;
} synth_opts_t;

/* clang-format off */
#define SYNTH_INT(flag, k, lo) {flag, offsetof(synth_opts_t, ints[k]), lo, 1 << 24}
/* clang-format on */
/* The shape overrides, in synth_config's order of fields; the last
 * SYNTH_N_QWEN35_INTS apply to the qwen35 presets only. */
static const cli_int_t synth_ints[SYNTH_N_INTS] = {
    SYNTH_INT("--layers", 0, 1),      SYNTH_INT("--hidden", 1, 1),
    SYNTH_INT("--ffn", 2, 1),         SYNTH_INT("--heads", 3, 1),
    SYNTH_INT("--kv-heads", 4, 1),    SYNTH_INT("--head-dim", 5, 1),
    SYNTH_INT("--vocab", 6, 1),       SYNTH_INT("--context", 7, 1),
    SYNTH_INT("--nextn", 8, 0),       SYNTH_INT("--full-attn-interval", 9, 1),
    SYNTH_INT("--rope-dim", 10, 2),   SYNTH_INT("--conv-kernel", 11, 1),
    SYNTH_INT("--ssm-state", 12, 1),  SYNTH_INT("--ssm-groups", 13, 1),
    SYNTH_INT("--ssm-v-heads", 14, 1)};
#undef SYNTH_INT

/* One option from getopt_long (c) and its value. */
static int synth_parse_opt(int c, const char *v, const char *arg, void *ctx, err_t *err)
{
    synth_opts_t *o = ctx;
    if (c >= SYNTH_OPT_INT && c < SYNTH_OPT_INT + SYNTH_N_INTS)
        return cli_int_set(&synth_ints[c - SYNTH_OPT_INT], v, o, err);
    switch (c) {
    case SO_TIED: o->tied = 1; return 0;
    case SO_UNTIED: o->tied = 0; return 0;
    case SO_OUT: o->out = v; return 0;
    case SO_PRESET: o->preset = v; return 0;
    case SO_TYPE: o->type = v; return 0;
    case SO_TOKENIZER: o->tok_json = v; return 0;
    case SO_TOK_CONFIG: o->tok_config = v; return 0;
    case SO_NAME: o->name = v; return 0;
    case SO_SEED: return cli_parse_u64("--seed", v, &o->seed, err);
    case SO_THREADS: return cli_parse_i64("--threads", v, 1, POOL_MAX_THREADS, &o->threads, err);
    case SO_THETA: return cli_parse_f64("--rope-theta", v, 1.0, 1e12, &o->theta, err);
    case SO_NORM_STD: return cli_parse_f64("--norm-std", v, 0.0, 1.0, &o->norm_std, err);
    case SO_EPS: return cli_parse_f64("--rms-eps", v, 1e-12, 1.0, &o->eps, err);
    case 'h': o->help = true; return 1;
    case ':': return err_set(err, "%s needs a value", arg);
    default: return err_set(err, "unknown option '%s'", arg);
    }
}

static int synth_parse(int argc, char **argv, synth_opts_t *o, err_t *err)
{
    static const struct option named[] = {
        {"tied", no_argument, NULL, SO_TIED},
        {"untied", no_argument, NULL, SO_UNTIED},
        {"out", required_argument, NULL, SO_OUT},
        {"preset", required_argument, NULL, SO_PRESET},
        {"type", required_argument, NULL, SO_TYPE},
        {"tokenizer", required_argument, NULL, SO_TOKENIZER},
        {"tokenizer-config", required_argument, NULL, SO_TOK_CONFIG},
        {"name", required_argument, NULL, SO_NAME},
        {"seed", required_argument, NULL, SO_SEED},
        {"threads", required_argument, NULL, SO_THREADS},
        {"rope-theta", required_argument, NULL, SO_THETA},
        {"norm-std", required_argument, NULL, SO_NORM_STD},
        {"rms-eps", required_argument, NULL, SO_EPS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct option options[sizeof named / sizeof named[0] + SYNTH_N_INTS];
    cli_options_join(options, named, synth_ints, SYNTH_N_INTS, SYNTH_OPT_INT);
    *o = (synth_opts_t){.preset = "tiny", .type = "f16", .seed = 1, .threads = pool_default_threads(), .tied = -1};
    for (int k = 0; k < SYNTH_N_INTS; k++)
        o->ints[k] = -1;
    if (cli_getopt(argc, argv, "h", options, synth_parse_opt, o, err))
        return -1;
    if (o->help)
        return 0;
    if (optind < argc)
        return err_set(err, "unexpected argument '%s'", argv[optind]);
    if (!o->out)
        return err_set(err, "--out FILE is required");
    if (o->tok_config && !o->tok_json)
        return err_set(err, "--tokenizer-config needs --tokenizer");
    return 0;
}

/* The preset's shape with the command line's overrides. */
static int synth_config(const synth_opts_t *o, model_config_t *cfg, err_t *err)
{
    if (synth_preset(o->preset, cfg, err))
        return -1;
    int *fields[SYNTH_N_INTS] = {&cfg->n_layers,   &cfg->hidden,
                                 &cfg->ffn,        &cfg->n_heads,
                                 &cfg->n_kv_heads, &cfg->head_dim,
                                 &cfg->vocab,      &cfg->context_length,
                                 &cfg->n_nextn,    &cfg->full_attn_interval,
                                 &cfg->rope_dim,   &cfg->ssm_conv_kernel,
                                 &cfg->ssm_state,  &cfg->ssm_k_heads,
                                 &cfg->ssm_v_heads};
    for (int k = 0; k < SYNTH_N_INTS; k++) {
        if (o->ints[k] < 0)
            continue;
        if (k >= SYNTH_N_INTS - SYNTH_N_QWEN35_INTS && cfg->arch_id != MODEL_ARCH_QWEN35)
            return err_set(err, "%s applies to the qwen35 presets only", synth_ints[k].name);
        *fields[k] = o->ints[k];
    }
    if (cfg->arch_id == MODEL_ARCH_QWEN35) {
        /* value heads as wide as key heads (state), as in Qwen3.5 */
        if ((int64_t)cfg->ssm_state * cfg->ssm_v_heads > (1 << 20))
            return err_set(err, "--ssm-state x --ssm-v-heads must be at most %d", 1 << 20);
        cfg->ssm_inner = cfg->ssm_state * cfg->ssm_v_heads;
        synth_rope_sections(cfg->rope_dim, cfg->rope_sections);
    }
    if (o->theta > 0)
        cfg->rope_theta = (float)o->theta;
    if (o->eps > 0)
        cfg->rms_eps = (float)o->eps;
    if (o->tied >= 0)
        cfg->is_tied = o->tied;
    return 0;
}

/* --tokenizer: the tokenizer into *spec, the embedding grown to cover it.
 * 0, or the exit code with err set. */
static int synth_tokenizer(const synth_opts_t *o, model_config_t *cfg, tok_spec_t *spec, err_t *err)
{
    if (hf_import(o->tok_json, o->tok_config, spec, err))
        return EXIT_USAGE;
    /* the embedding covers the whole tokenizer: a smaller preset vocabulary
     * grows to it; a larger one (Qwen's padded 151,936) is kept and padded */
    if (o->ints[SYNTH_VOCAB] >= 0 && cfg->vocab < spec->n_tokens) {
        err_set(err, "--vocab %d is smaller than the tokenizer's %d tokens", cfg->vocab, spec->n_tokens);
        return EXIT_USAGE;
    }
    if (cfg->vocab < spec->n_tokens)
        cfg->vocab = spec->n_tokens;
    return tok_spec_pad(spec, cfg->vocab, err) ? 1 : 0;
}

/* Writes the file: 0, or the exit code with err set. */
static int synth_run(const synth_opts_t *o, tok_spec_t *spec, err_t *err)
{
    model_config_t cfg;
    int rc;
    if (synth_config(o, &cfg, err))
        return EXIT_USAGE;
    if (o->tok_json && (rc = synth_tokenizer(o, &cfg, spec, err)))
        return rc;
    int wtype = synth_type_from_name(o->type);
    if (wtype < 0) {
        err_set(err, "--type '%s' is not one of %s", o->type, SYNTH_TYPE_NAMES);
        return EXIT_USAGE;
    }
    if (synth_check(&cfg, (uint32_t)wtype, err))
        return EXIT_USAGE;
    char default_name[96];
    snprintf(default_name, sizeof default_name, "splash-synth-%s-%s", o->preset, synth_type_name((uint32_t)wtype));
    pool_t *pool = pool_create((int)o->threads, err);
    if (!pool)
        return 1;
    progress_t prog = {isatty(STDERR_FILENO), clock_now_ns(), -1};
    rc = synth_write(o->out, o->name ? o->name : default_name, &cfg, (uint32_t)wtype, o->seed, (float)o->norm_std,
                     o->tok_json ? spec : NULL, pool, show_progress, &prog, err);
    pool_destroy(pool);
    if (prog.is_tty)
        fputc('\n', stderr);
    if (rc)
        return 1;
    fprintf(stderr, "synth: wrote %s (%s, %s, %d layers, hidden %d, vocab %d) in %.1f s\n", o->out, o->preset,
            synth_type_name((uint32_t)wtype), cfg.n_layers, cfg.hidden, cfg.vocab,
            (clock_now_ns() - prog.start_ns) / 1e9);
    return 0;
}

static int model_synth(int argc, char **argv)
{
    synth_opts_t o;
    err_t err = {0};
    if (synth_parse(argc, argv, &o, &err)) {
        fprintf(stderr, "splash model synth: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (o.help) {
        fputs(model_usage, stdout);
        return 0;
    }
    tok_spec_t spec = {0};
    int rc = synth_run(&o, &spec, &err);
    if (rc)
        fprintf(stderr, "splash model synth: %s\n", err.msg);
    tok_spec_free(&spec);
    return rc;
}

/* ---- convert ------------------------------------------------------------ */

typedef struct convert_opts {
    const char *in, *out, *type;
    int64_t threads;
    bool help;
} convert_opts_t;

enum { C_IN = 0x100, C_OUT, C_TYPE, C_THREADS };

static int convert_opt(int opt, const char *v, const char *word, void *ctx, err_t *err)
{
    convert_opts_t *o = ctx;
    switch (opt) {
    case 'h': o->help = true; return 1;
    case C_IN: o->in = v; return 0;
    case C_OUT: o->out = v; return 0;
    case C_TYPE: o->type = v; return 0;
    case C_THREADS: return cli_parse_i64("--threads", v, 1, POOL_MAX_THREADS, &o->threads, err);
    case ':': return err_set(err, "a value is needed after '%s'", word);
    default: return err_set(err, "unknown option '%s'", word);
    }
}

static int model_convert(int argc, char **argv)
{
    static const struct option options[] = {
        {"in", required_argument, NULL, C_IN},     {"out", required_argument, NULL, C_OUT},
        {"type", required_argument, NULL, C_TYPE}, {"threads", required_argument, NULL, C_THREADS},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    convert_opts_t o = {.threads = 2};
    err_t err = {0};
    int bad = cli_getopt(argc, argv, "h", options, convert_opt, &o, &err);
    if (!bad && !o.help && optind < argc)
        bad = err_set(&err, "unknown option '%s'", argv[optind]);
    if (bad) {
        fprintf(stderr, "splash model convert: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (o.help) {
        fputs(model_usage, stdout);
        return 0;
    }
    const char *in = o.in, *out = o.out, *type = o.type;
    int64_t threads = o.threads;
    if (!in || !out || !type) {
        fprintf(stderr, "splash model convert: --in, --type and --out are required\n");
        return EXIT_USAGE;
    }
    int wtype = synth_type_from_name(type);
    if (wtype < 0) {
        fprintf(stderr, "splash model convert: --type '%s' is not one of %s\n", type, SYNTH_TYPE_NAMES);
        return EXIT_USAGE;
    }
    pool_t *pool = pool_create((int)threads, &err);
    if (!pool)
        goto fail;
    int64_t t0 = clock_now_ns();
    int rc = convert_model(in, out, (uint32_t)wtype, pool, &err);
    pool_destroy(pool);
    if (rc)
        goto fail;
    fprintf(stderr, "convert: wrote %s (%s) in %.1f s\n", out, synth_type_name((uint32_t)wtype),
            (clock_now_ns() - t0) / 1e9);
    return 0;
fail:
    fprintf(stderr, "splash model convert: %s\n", err.msg);
    return 1;
}

int cmd_model(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(model_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "info"))
        return model_info(argc - 1, argv + 1);
    if (!strcmp(argv[1], "synth"))
        return model_synth(argc - 1, argv + 1);
    if (!strcmp(argv[1], "convert"))
        return model_convert(argc - 1, argv + 1);
    fprintf(stderr, "splash model: unknown subcommand '%s' (info, synth, convert)\n", argv[1]);
    return EXIT_USAGE;
}
