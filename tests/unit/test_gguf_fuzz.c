/* Malformed GGUF input, fuzzed: thousands of deterministic mutants of small
 * valid synthetic models (one per weight type) go through the reader, and
 * those it accepts go on through the model loader, the vocabulary and one
 * forward pass. Nothing may crash or trip a sanitizer; every rejection must
 * say why; every file the reader accepts must be consistent with itself; and
 * a few mutations with a known outcome (a reorder keeps a file valid, a
 * duplicated pair never is, a renamed required key is named) are checked for
 * exactly that outcome.
 *
 * Each mutant is copied into a buffer of exactly its size, so ASan reports any
 * read past the end. SPLASH_FUZZ_SEED=n picks another deterministic run;
 * SPLASH_FUZZ_VERBOSE=1 prints each mutant before it is tried (to find the
 * one a sanitizer stops on). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/pool.h"
#include "base/rng.h"
#include "kernels/types.h"
#include "model/forward.h"
#include "model/gguf.h"
#include "model/kv.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "text/vocab.h"
#include "tools/synth.h"

#define FUZZ_DEFAULT_SEED 0x5eed6675ull
#define FUZZ_VOCAB 300 /* tiny preset, shrunk: small files, quick passes */
#define FUZZ_MAX_FIELDS 4096
#define FUZZ_MAX_RECORDS 128
#define FUZZ_MIN_MUTANTS 1000

/* ---- the seed files and what a walk over them finds --------------------- */

typedef enum field_kind {
    F_COUNT_HDR, /* n_tensors, n_kv */
    F_LEN,       /* key, string value or tensor name length */
    F_ELEM_LEN,  /* length of one string array element */
    F_ARR_COUNT,
    F_DIM,
    F_OFFSET,
    F_VTYPE, /* a pair's value type */
    F_ATYPE, /* an array's element type */
    F_NDIMS,
    F_GTYPE,  /* a tensor's ggml type */
    F_U32VAL, /* an integer scalar value (hyperparameters, token ids) */
    F_F32VAL, /* a float scalar value */
} field_kind_t;

typedef struct field {
    size_t at;
    field_kind_t kind;
} field_t;

typedef struct record {
    size_t start, end; /* [start, end) in the file */
    size_t name_at;    /* first byte of the key or tensor name */
    size_t name_len;
    size_t type_at; /* kv: the value type; 0 for tensors */
} record_t;

typedef struct seed {
    const char *label;
    uint32_t wtype;
    uint8_t *bytes;
    size_t size;
    size_t info_end;               /* end of the tensor infos */
    size_t data_offset;            /* start of the data section */
    field_t u64s[FUZZ_MAX_FIELDS]; /* u64 fields other than string array element lengths */
    int n_u64;
    field_t elems[FUZZ_MAX_FIELDS]; /* string array element lengths */
    int n_elems;
    field_t u32s[FUZZ_MAX_FIELDS];
    int n_u32;
    record_t kvs[FUZZ_MAX_RECORDS];
    int n_kvs;
    record_t tinfos[FUZZ_MAX_RECORDS];
    int n_tinfos;
} seed_t;

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void add_field(field_t *list, int *n, size_t at, field_kind_t kind)
{
    assert_true(*n < FUZZ_MAX_FIELDS);
    list[(*n)++] = (field_t){at, kind};
}

static size_t walk_array(seed_t *s, size_t p)
{
    uint32_t t = rd32(s->bytes + p);
    uint64_t n = rd64(s->bytes + p + 4);
    add_field(s->u32s, &s->n_u32, p, F_ATYPE);
    add_field(s->u64s, &s->n_u64, p + 4, F_ARR_COUNT);
    p += 12;
    if (t == GGUF_TYPE_STRING) {
        for (uint64_t i = 0; i < n; i++) {
            add_field(s->elems, &s->n_elems, p, F_ELEM_LEN);
            p += 8 + (size_t)rd64(s->bytes + p);
        }
    } else if (t == GGUF_TYPE_ARRAY) {
        for (uint64_t i = 0; i < n; i++)
            p = walk_array(s, p);
    } else {
        p += (size_t)n * gguf_vtype_size(t);
    }
    return p;
}

/* Records where every field of the (valid) seed lies. */
static void walk(seed_t *s)
{
    const uint8_t *b = s->bytes;
    uint64_t n_tensors = rd64(b + 8), n_kv = rd64(b + 16);
    add_field(s->u64s, &s->n_u64, 8, F_COUNT_HDR);
    add_field(s->u64s, &s->n_u64, 16, F_COUNT_HDR);
    assert_true(n_kv <= FUZZ_MAX_RECORDS && n_tensors <= FUZZ_MAX_RECORDS);
    size_t p = 24;
    for (uint64_t i = 0; i < n_kv; i++) {
        record_t *r = &s->kvs[s->n_kvs++];
        r->start = p;
        add_field(s->u64s, &s->n_u64, p, F_LEN);
        r->name_len = (size_t)rd64(b + p);
        r->name_at = p + 8;
        p += 8 + r->name_len;
        r->type_at = p;
        uint32_t type = rd32(b + p);
        add_field(s->u32s, &s->n_u32, p, F_VTYPE);
        p += 4;
        if (type == GGUF_TYPE_STRING) {
            add_field(s->u64s, &s->n_u64, p, F_LEN);
            p += 8 + (size_t)rd64(b + p);
        } else if (type == GGUF_TYPE_ARRAY) {
            p = walk_array(s, p);
        } else {
            if (type == GGUF_TYPE_U32 || type == GGUF_TYPE_I32)
                add_field(s->u32s, &s->n_u32, p, F_U32VAL);
            if (type == GGUF_TYPE_F32)
                add_field(s->u32s, &s->n_u32, p, F_F32VAL);
            p += gguf_vtype_size(type);
        }
        r->end = p;
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        record_t *r = &s->tinfos[s->n_tinfos++];
        r->start = p;
        add_field(s->u64s, &s->n_u64, p, F_LEN);
        r->name_len = (size_t)rd64(b + p);
        r->name_at = p + 8;
        p += 8 + r->name_len;
        uint32_t n_dims = rd32(b + p);
        add_field(s->u32s, &s->n_u32, p, F_NDIMS);
        p += 4;
        for (uint32_t d = 0; d < n_dims; d++, p += 8)
            add_field(s->u64s, &s->n_u64, p, F_DIM);
        add_field(s->u32s, &s->n_u32, p, F_GTYPE);
        add_field(s->u64s, &s->n_u64, p + 4, F_OFFSET);
        p += 12;
        r->end = p;
    }
    s->info_end = p;
}

/* ---- the pipeline every mutant goes through ----------------------------- */

typedef enum outcome { OUT_READER_REJECT, OUT_MODEL_REJECT, OUT_FULL } outcome_t;

typedef struct fuzz {
    pool_t *pool;
    rng_t rng;
    bool is_verbose;
    seed_t seeds[4];
    int n_seeds;
    uint8_t *work; /* scratch for building a mutant */
    size_t work_cap;
    char desc[192]; /* the mutant being tried, for failure messages */
    /* counts */
    int total, rejected_reader, rejected_model, fully_loaded;
    int rejected_vocab, forward_runs, rejected_forward;
} fuzz_t;

/* Whatever the reader accepted must hold together: every range inside the
 * buffer, every size what the type and shape say, no overlaps, no
 * duplicates. Reads every tensor byte so ASan sees any stray pointer. */
static void check_consistent(const fuzz_t *fz, const gguf_t *g, const uint8_t *buf, size_t n)
{
    const uint8_t *end = buf + n;
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            fail_msg("accepted but inconsistent (%s): %s", #cond, fz->desc);                                           \
    } while (0)
    CHECK(g->base == buf && g->size == n);
    CHECK(g->version == GGUF_VERSION);
    CHECK(g->alignment >= 8 && g->alignment <= GGUF_MAX_ALIGNMENT && (g->alignment & (g->alignment - 1)) == 0);
    CHECK(g->data_offset % g->alignment == 0);
    CHECK(g->n_tensors == 0 || g->data_offset <= n);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const gguf_kv_t *kv = &g->kv[i];
        CHECK(kv->key.len >= 1 && kv->key.len <= GGUF_MAX_KEY_LEN);
        CHECK((const uint8_t *)kv->key.ptr >= buf && kv->key.len <= (uint64_t)(end - (const uint8_t *)kv->key.ptr));
        CHECK(memchr(kv->key.ptr, '\0', (size_t)kv->key.len) == NULL);
        CHECK(kv->type < GGUF_TYPE_COUNT);
        if (kv->type == GGUF_TYPE_STRING)
            CHECK((const uint8_t *)kv->str.ptr >= buf && kv->str.len <= (uint64_t)(end - (const uint8_t *)kv->str.ptr));
        if (kv->type == GGUF_TYPE_BOOL)
            CHECK(kv->num.u64 <= 1);
        if (kv->type == GGUF_TYPE_ARRAY) {
            CHECK(kv->arr_type < GGUF_TYPE_COUNT);
            CHECK(kv->arr_data >= buf && kv->arr_bytes <= (size_t)(end - kv->arr_data));
            size_t elem = gguf_vtype_size(kv->arr_type);
            if (elem)
                CHECK(kv->arr_bytes == kv->arr_count * elem);
            if (kv->arr_type == GGUF_TYPE_STRING) {
                gguf_str_iter_t it;
                gguf_str_t s;
                gguf_str_iter_init(&it, kv);
                const uint8_t *arr_end = kv->arr_data + kv->arr_bytes;
                uint64_t count = 0;
                while (gguf_str_iter_next(&it, &s)) {
                    CHECK((const uint8_t *)s.ptr >= kv->arr_data &&
                          s.len <= (uint64_t)(arr_end - (const uint8_t *)s.ptr));
                    count++;
                }
                CHECK(count == kv->arr_count);
                CHECK(it.p == arr_end);
            }
            if (elem && kv->arr_type != GGUF_TYPE_BOOL && kv->arr_count > 0)
                (void)gguf_arr_int(kv, kv->arr_count - 1);
        }
        for (uint64_t j = 0; j < i; j++)
            CHECK(
                !(g->kv[j].key.len == kv->key.len && memcmp(g->kv[j].key.ptr, kv->key.ptr, (size_t)kv->key.len) == 0));
    }
    const gguf_kv_t *al = gguf_find(g, "general.alignment");
    CHECK(al ? al->num.u64 == g->alignment : g->alignment == GGUF_DEFAULT_ALIGNMENT);

    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor_t *t = &g->tensors[i];
        size_t len = strnlen(t->name, sizeof t->name);
        CHECK(len >= 1 && len <= GGUF_MAX_NAME_LEN);
        CHECK(t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS);
        int64_t n_elements = 1;
        for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
            CHECK(t->ne[d] >= 1);
            CHECK(d < t->n_dims || t->ne[d] == 1);
            CHECK(!__builtin_mul_overflow(n_elements, t->ne[d], &n_elements));
        }
        CHECK(n_elements == t->n_elements);
        const type_traits_t *tt = type_traits(t->type);
        CHECK(tt != NULL);
        CHECK(t->ne[0] % tt->block_size == 0);
        size_t n_bytes = 0;
        CHECK(type_row_bytes(t->type, t->n_elements, &n_bytes) && n_bytes == t->n_bytes);
        CHECK(t->offset % g->alignment == 0);
        CHECK((const uint8_t *)t->data == buf + g->data_offset + t->offset);
        CHECK((const uint8_t *)t->data >= buf && t->n_bytes <= (size_t)(end - (const uint8_t *)t->data));
        CHECK(gguf_find_tensor(g, t->name) == t);
        for (uint64_t j = 0; j < i; j++) {
            const gguf_tensor_t *u = &g->tensors[j];
            CHECK(strcmp(u->name, t->name) != 0);
            CHECK(u->offset + u->n_bytes <= t->offset || t->offset + t->n_bytes <= u->offset);
        }
        volatile uint8_t sum = 0; /* touch every byte */
        for (size_t j = 0; j < t->n_bytes; j++)
            sum += ((const uint8_t *)t->data)[j];
        (void)sum;
    }
#undef CHECK
}

static void expect_message(const fuzz_t *fz, const err_t *err, const char *stage)
{
    if (err->msg[0] == '\0')
        fail_msg("%s rejected with an empty message: %s", stage, fz->desc);
}

/* The vocabulary over the (possibly damaged) metadata; exercised a little
 * when it loads. */
static void try_vocab(fuzz_t *fz, const gguf_t *g, int n_rows)
{
    vocab_t v;
    err_t err = {{0}};
    if (vocab_load(&v, g, n_rows, &err)) {
        expect_message(fz, &err, "vocab_load");
        fz->rejected_vocab++;
        return;
    }
    char out[64];
    for (int i = 0; i < v.n_tokens; i++)
        assert_true(vocab_token_bytes(&v, i, out, sizeof out) <= sizeof out);
    memset(&err, 0, sizeof err);
    tokenizer_t *tok = tok_load(&v, g, &err);
    if (!tok) {
        expect_message(fz, &err, "tok_load");
    } else {
        static const char text[] = "Hi!\n <|im_start|>x\xff\xe2\x82";
        tok_ids_t ids = {0};
        assert_int_equal(tok_encode(tok, text, sizeof text - 1, true, &ids, &err), 0);
        for (size_t i = 0; i < ids.n; i++)
            assert_true(ids.v[i] >= 0 && ids.v[i] < v.n_tokens);
        char *back = NULL;
        size_t n_back = 0;
        assert_int_equal(tok_decode(tok, ids.v, ids.n, &back, &n_back, &err), 0);
        free(back);
        tok_ids_free(&ids);
        tok_free(tok);
    }
    vocab_free(&v);
}

/* One forward pass of two tokens; NaN is fine, a crash is not. Returns
 * whether it ran (logits are left in *first_logit for the seed checks). */
static bool try_forward(fuzz_t *fz, const model_t *m, float *first_logit)
{
    const model_config_t *c = &m->cfg;
    fwd_ctx_t ctx;
    kv_store_t kv = {0};
    err_t err = {{0}};
    if (fwd_ctx_init(&ctx, m, fz->pool, 2, KV_BLOCK_SIZE, &err)) {
        expect_message(fz, &err, "fwd_ctx_init");
        return false;
    }
    if (kv_store_init(&kv, KV_F32, model_kv_layers(c), 1, KV_BLOCK_SIZE, c->n_kv_heads * c->head_dim, &err)) {
        expect_message(fz, &err, "kv_store_init");
        fwd_ctx_free(&ctx);
        return false;
    }
    float *logits = malloc(2 * (size_t)c->vocab * sizeof(float));
    assert_non_null(logits);
    int32_t tokens[2] = {1, 2}, pos[2] = {0, 1}, table[1] = {0};
    const int32_t *tables[2] = {table, table};
    fwd_batch_t b = {.n_rows = 2, .tokens = tokens, .pos = pos, .block_tables = tables, .want_logits = NULL};
    bool ran = fwd_run(&ctx, &kv, &b, logits, &err) == 0;
    if (ran) {
        fz->forward_runs++;
        if (first_logit)
            *first_logit = logits[(size_t)c->vocab]; /* row 1, token 0 */
    } else {
        expect_message(fz, &err, "fwd_run");
        fz->rejected_forward++;
    }
    free(logits);
    kv_store_free(&kv);
    fwd_ctx_free(&ctx);
    return ran;
}

/* The stages after a successful open; g is consumed. */
static outcome_t after_open(fuzz_t *fz, gguf_t *g, const uint8_t *buf, size_t n, err_t *err_out)
{
    check_consistent(fz, g, buf, n);
    err_t err = {{0}};
    model_t *m = model_from_gguf(g, &err);
    if (!m) {
        expect_message(fz, &err, "model_from_gguf");
        if (err_out)
            *err_out = err;
        try_vocab(fz, g, 0);
        gguf_close(g);
        fz->rejected_model++;
        return OUT_MODEL_REJECT;
    }
    try_vocab(fz, m->gguf, m->cfg.vocab);
    try_forward(fz, m, NULL);
    model_free(m);
    fz->fully_loaded++;
    return OUT_FULL;
}

/* Tries one mutant from memory; err_out (optional) receives the rejection. */
static outcome_t try_mutant(fuzz_t *fz, const uint8_t *bytes, size_t n, err_t *err_out)
{
    if (fz->is_verbose)
        fprintf(stderr, "mutant %d: %s\n", fz->total, fz->desc);
    fz->total++;
    uint8_t *buf = malloc(n ? n : 1); /* exactly n bytes readable */
    assert_non_null(buf);
    if (n)
        memcpy(buf, bytes, n);
    err_t err = {{0}};
    gguf_t *g = gguf_open_memory(buf, n, &err);
    outcome_t out;
    if (!g) {
        expect_message(fz, &err, "gguf_open_memory");
        if (err_out)
            *err_out = err;
        fz->rejected_reader++;
        out = OUT_READER_REJECT;
    } else {
        out = after_open(fz, g, buf, n, err_out);
    }
    free(buf);
    return out;
}

/* ---- mutations ----------------------------------------------------------- */

static uint64_t rnd(fuzz_t *fz, uint64_t n)
{
    return n ? rng_u64(&fz->rng) % n : 0;
}

/* A position weighted toward where parsing happens: 85% in the header,
 * metadata and tensor infos, the rest anywhere. */
static size_t pick_pos(fuzz_t *fz, const seed_t *s)
{
    if (rnd(fz, 100) < 85)
        return (size_t)rnd(fz, s->data_offset);
    return (size_t)rnd(fz, s->size);
}

static uint8_t *work_from(fuzz_t *fz, const seed_t *s)
{
    memcpy(fz->work, s->bytes, s->size);
    return fz->work;
}

static void wr64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static void wr32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static uint64_t absurd_u64(fuzz_t *fz, const seed_t *s, uint64_t orig)
{
    const uint64_t vals[] = {0,         1,           UINT64_C(1) << 31, UINT32_MAX, UINT64_C(1) << 63, UINT64_MAX,
                             s->size,   s->size - 1, s->size + 1,       orig + 1,   orig - 1,          orig * 2,
                             orig + 32, orig - 32,   UINT64_C(1) << 32, INT64_MAX};
    return vals[rnd(fz, sizeof vals / sizeof vals[0])];
}

static uint32_t u32_replacement(fuzz_t *fz, field_kind_t kind, uint32_t orig)
{
    switch (kind) {
    case F_VTYPE:
    case F_ATYPE: {
        const uint32_t v[] = {GGUF_TYPE_COUNT, GGUF_TYPE_COUNT + 1, 255, 0x80000000u, 0xFFFFFFFFu};
        return rnd(fz, 2) ? v[rnd(fz, 5)] : (uint32_t)rnd(fz, GGUF_TYPE_COUNT);
    }
    case F_NDIMS: {
        const uint32_t v[] = {0, 5, 255, 0xFFFFFFFFu, 1, 2, 3, 4};
        return v[rnd(fz, 8)];
    }
    case F_GTYPE: {
        const uint32_t v[] = {4,        5,         31,        TYPE_COUNT, 99,        0xFFFFFFFFu, TYPE_F32,
                              TYPE_F16, TYPE_Q4_0, TYPE_Q8_0, TYPE_BF16,  TYPE_Q4_K, TYPE_I8};
        return rnd(fz, 4) ? v[rnd(fz, 13)] : (uint32_t)rnd(fz, TYPE_COUNT);
    }
    case F_F32VAL: {
        const float v[] = {NAN, INFINITY, -INFINITY, 0.0f, -1.0f, 1e-45f, 1e30f, FLT_MAX, 2.0f};
        float f = v[rnd(fz, 9)];
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    default: { /* F_U32VAL */
        const uint32_t v[] = {0,        1,        2,        3,        7,        0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu,
                              orig + 1, orig - 1, orig * 2, orig / 2, 1u << 24, 299,         300};
        return v[rnd(fz, 15)];
    }
    }
}

/* The seed with bytes [at, at+len) removed and ins (ins_len bytes) put at
 * at; returns the new size. */
static size_t edit(fuzz_t *fz, const seed_t *s, size_t at, size_t len, const uint8_t *ins, size_t ins_len)
{
    assert_true(at + len <= s->size && s->size - len + ins_len <= fz->work_cap);
    memcpy(fz->work, s->bytes, at);
    if (ins_len)
        memcpy(fz->work + at, ins, ins_len);
    memcpy(fz->work + at + ins_len, s->bytes + at + len, s->size - at - len);
    return s->size - len + ins_len;
}

static const char *const required_keys[] = {
    "general.architecture",      "qwen3.block_count",          "qwen3.embedding_length",
    "qwen3.feed_forward_length", "qwen3.attention.head_count", "qwen3.attention.head_count_kv",
    "qwen3.context_length",      "qwen3.rope.freq_base",       "qwen3.attention.layer_norm_rms_epsilon",
};

static bool is_required_key(const uint8_t *name, size_t len)
{
    for (size_t i = 0; i < sizeof required_keys / sizeof required_keys[0]; i++)
        if (strlen(required_keys[i]) == len && memcmp(required_keys[i], name, len) == 0)
            return true;
    return false;
}

static void fuzz_seed(fuzz_t *fz, seed_t *s)
{
    uint8_t *w;
    size_t n;
    err_t err;

    /* the unmutated seed loads all the way, with finite logits */
    snprintf(fz->desc, sizeof fz->desc, "%s: unmutated", s->label);
    assert_int_equal(try_mutant(fz, s->bytes, s->size, NULL), OUT_FULL);

    /* truncation: every length in the first 256 bytes, then random ones */
    for (size_t len = 0; len < 256; len++) {
        snprintf(fz->desc, sizeof fz->desc, "%s: truncated to %zu bytes", s->label, len);
        assert_int_equal(try_mutant(fz, s->bytes, len, NULL), OUT_READER_REJECT);
    }
    for (int i = 0; i < 40; i++) {
        size_t len = i % 2 ? (size_t)rnd(fz, s->data_offset + 64) : (size_t)rnd(fz, s->size);
        snprintf(fz->desc, sizeof fz->desc, "%s: truncated to %zu bytes", s->label, len);
        /* the file ends with the last tensor's bytes: any cut loses some */
        assert_int_equal(try_mutant(fz, s->bytes, len, NULL), OUT_READER_REJECT);
    }

    /* single bit flips */
    for (int i = 0; i < 300; i++) {
        w = work_from(fz, s);
        size_t at = pick_pos(fz, s);
        int bit = (int)rnd(fz, 8);
        w[at] ^= (uint8_t)(1u << bit);
        snprintf(fz->desc, sizeof fz->desc, "%s: bit %d of byte %zu flipped", s->label, bit, at);
        try_mutant(fz, w, s->size, NULL);
    }

    /* several bit flips */
    for (int i = 0; i < 100; i++) {
        w = work_from(fz, s);
        int k = 2 + (int)rnd(fz, 15);
        size_t first = 0;
        for (int j = 0; j < k; j++) {
            size_t at = pick_pos(fz, s);
            if (j == 0)
                first = at;
            w[at] ^= (uint8_t)(1u << rnd(fz, 8));
        }
        snprintf(fz->desc, sizeof fz->desc, "%s: %d bit flips (first at byte %zu, rng draw %d)", s->label, k, first, i);
        try_mutant(fz, w, s->size, NULL);
    }

    /* absurd u64s: in real u64 fields (mostly), or at any header offset */
    for (int i = 0; i < 150; i++) {
        w = work_from(fz, s);
        size_t at;
        uint64_t r = rnd(fz, 100);
        if (r < 60)
            at = s->u64s[rnd(fz, (uint64_t)s->n_u64)].at;
        else if (r < 75 && s->n_elems)
            at = s->elems[rnd(fz, (uint64_t)s->n_elems)].at;
        else
            at = (size_t)rnd(fz, s->data_offset - 8);
        uint64_t v = absurd_u64(fz, s, rd64(w + at));
        wr64(w + at, v);
        snprintf(fz->desc, sizeof fz->desc, "%s: u64 at byte %zu set to %llu", s->label, at, (unsigned long long)v);
        try_mutant(fz, w, s->size, NULL);
    }

    /* u32 fields: value types, element types, dimension counts, ggml types,
     * integer and float values */
    for (int i = 0; i < 150; i++) {
        w = work_from(fz, s);
        const field_t *f = &s->u32s[rnd(fz, (uint64_t)s->n_u32)];
        uint32_t v = u32_replacement(fz, f->kind, rd32(w + f->at));
        wr32(w + f->at, v);
        snprintf(fz->desc, sizeof fz->desc, "%s: u32 field (kind %d) at byte %zu set to %u", s->label, (int)f->kind,
                 f->at, v);
        try_mutant(fz, w, s->size, NULL);
    }

    /* splices: a chunk copied over another place (same size) */
    for (int i = 0; i < 60; i++) {
        w = work_from(fz, s);
        size_t from = pick_pos(fz, s), to = pick_pos(fz, s);
        size_t len = 1 + (size_t)rnd(fz, 64);
        if (from + len > s->size)
            len = s->size - from;
        if (to + len > s->size)
            len = s->size - to;
        memmove(w + to, s->bytes + from, len);
        snprintf(fz->desc, sizeof fz->desc, "%s: %zu bytes from %zu copied over %zu", s->label, len, from, to);
        try_mutant(fz, w, s->size, NULL);
    }

    /* chunks duplicated (inserted) and deleted */
    for (int i = 0; i < 60; i++) {
        size_t from = pick_pos(fz, s), to = pick_pos(fz, s);
        size_t len = 1 + (size_t)rnd(fz, 48);
        if (from + len > s->size)
            len = s->size - from;
        bool is_insert = i % 2 == 0;
        n = is_insert ? edit(fz, s, to, 0, s->bytes + from, len) : edit(fz, s, from, len, NULL, 0);
        snprintf(fz->desc, sizeof fz->desc, "%s: %zu bytes %s %zu", s->label, len,
                 is_insert ? "inserted at" : "deleted from", is_insert ? to : from);
        try_mutant(fz, fz->work, n, NULL);
    }

    /* a whole pair or tensor info duplicated: never valid once the count
     * says so (a duplicate key or name, if nothing else) */
    for (int i = 0; i < 30; i++) {
        bool is_kv = i % 2 == 0;
        const record_t *r = is_kv ? &s->kvs[rnd(fz, (uint64_t)s->n_kvs)] : &s->tinfos[rnd(fz, (uint64_t)s->n_tinfos)];
        bool bump = i % 4 < 2;
        uint8_t rec[4096 * 4];
        size_t rec_len = r->end - r->start;
        if (rec_len > sizeof rec)
            continue; /* the token list: too long to bother */
        memcpy(rec, s->bytes + r->start, rec_len);
        n = edit(fz, s, r->end, 0, rec, rec_len);
        if (bump) {
            size_t count_at = is_kv ? 16 : 8;
            wr64(fz->work + count_at, rd64(fz->work + count_at) + 1);
        }
        snprintf(fz->desc, sizeof fz->desc, "%s: %s at %zu duplicated%s", s->label, is_kv ? "pair" : "tensor info",
                 r->start, bump ? " and counted" : "");
        outcome_t out = try_mutant(fz, fz->work, n, NULL);
        if (bump && out != OUT_READER_REJECT)
            fail_msg("a duplicated record was accepted: %s", fz->desc);
    }

    /* two neighbouring pairs or tensor infos swapped: still a valid model */
    for (int i = 0; i < 12; i++) {
        bool is_kv = i % 2 == 0;
        int n_rec = is_kv ? s->n_kvs : s->n_tinfos;
        int j = (int)rnd(fz, (uint64_t)n_rec - 1);
        const record_t *a = is_kv ? &s->kvs[j] : &s->tinfos[j], *b = a + 1;
        w = work_from(fz, s);
        size_t la = a->end - a->start, lb = b->end - b->start;
        memcpy(w + a->start, s->bytes + b->start, lb);
        memcpy(w + a->start + lb, s->bytes + a->start, la);
        snprintf(fz->desc, sizeof fz->desc, "%s: %s %d and %d swapped", s->label, is_kv ? "pairs" : "tensor infos", j,
                 j + 1);
        int loaded_before = fz->fully_loaded, ran_before = fz->forward_runs, vocab_rej = fz->rejected_vocab;
        memset(&err, 0, sizeof err);
        if (try_mutant(fz, w, s->size, &err) != OUT_FULL)
            fail_msg("a reordered file failed to load (%s): %s", err.msg, fz->desc);
        assert_int_equal(fz->fully_loaded, loaded_before + 1);
        assert_int_equal(fz->forward_runs, ran_before + 1);
        assert_int_equal(fz->rejected_vocab, vocab_rej);
    }

    /* a key or tensor renamed (one byte changed): a required key or tensor
     * goes missing and the loader must say which */
    for (int i = 0; i < 30; i++) {
        bool is_kv = i % 3 != 0;
        const record_t *r = is_kv ? &s->kvs[rnd(fz, (uint64_t)s->n_kvs)] : &s->tinfos[rnd(fz, (uint64_t)s->n_tinfos)];
        w = work_from(fz, s);
        size_t at = r->name_at + (size_t)rnd(fz, r->name_len);
        w[at] = w[at] == '~' ? '^' : '~';
        char name[GGUF_MAX_KEY_LEN + 1];
        snprintf(name, sizeof name, "%.*s", (int)r->name_len, (const char *)s->bytes + r->name_at);
        snprintf(fz->desc, sizeof fz->desc, "%s: %s '%.96s' renamed (byte %zu)", s->label, is_kv ? "key" : "tensor",
                 name, at);
        memset(&err, 0, sizeof err);
        outcome_t out = try_mutant(fz, w, s->size, &err);
        bool must_fail =
            is_kv ? is_required_key(s->bytes + r->name_at, r->name_len) : strcmp(name, "output.weight") != 0;
        if (must_fail && (out != OUT_MODEL_REJECT || !strstr(err.msg, name)))
            fail_msg("expected the loader to name '%s', got outcome %d (%s): %s", name, (int)out, err.msg, fz->desc);
        if (!must_fail && out != OUT_FULL)
            fail_msg("renaming an optional key or tensor stopped the model loading (%s): %s", err.msg, fz->desc);
    }

    /* an integer value retyped u32 <-> i32 still loads (the getters take
     * any integer width that fits); a float retyped as an integer fails
     * naming the key */
    for (int i = 0; i < s->n_kvs; i++) {
        const record_t *r = &s->kvs[i];
        uint32_t type = rd32(s->bytes + r->type_at);
        if (type != GGUF_TYPE_U32 && type != GGUF_TYPE_I32 && type != GGUF_TYPE_F32)
            continue;
        w = work_from(fz, s);
        uint32_t to = type == GGUF_TYPE_U32 ? GGUF_TYPE_I32 : GGUF_TYPE_U32;
        wr32(w + r->type_at, to);
        char name[GGUF_MAX_KEY_LEN + 1];
        snprintf(name, sizeof name, "%.*s", (int)r->name_len, (const char *)s->bytes + r->name_at);
        snprintf(fz->desc, sizeof fz->desc, "%s: key '%.96s' retyped %s -> %s", s->label, name, gguf_vtype_name(type),
                 gguf_vtype_name(to));
        memset(&err, 0, sizeof err);
        outcome_t out = try_mutant(fz, w, s->size, &err);
        if (type == GGUF_TYPE_F32 && (out != OUT_MODEL_REJECT || !strstr(err.msg, name)))
            fail_msg("expected the loader to name '%s' (%s): %s", name, err.msg, fz->desc);
        if (type != GGUF_TYPE_F32 && out != OUT_FULL)
            fail_msg("an integer retyped failed to load (%s): %s", err.msg, fz->desc);
    }
}

/* Some mutants through a real file, so the mmap path is covered too. */
static outcome_t try_file(fuzz_t *fz, const uint8_t *bytes, size_t n)
{
    char path[] = "/tmp/splash_test_gguf_fuzz_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    close(fd);
    if (fz->is_verbose)
        fprintf(stderr, "file mutant %d: %s\n", fz->total, fz->desc);
    fz->total++;
    err_t err = {{0}};
    gguf_t *g = gguf_open(path, &err);
    outcome_t out;
    if (!g) {
        expect_message(fz, &err, "gguf_open");
        if (!strstr(err.msg, path))
            fail_msg("gguf_open's message does not name the file: %s", err.msg);
        fz->rejected_reader++;
        out = OUT_READER_REJECT;
    } else {
        assert_true(g->is_mapped);
        out = after_open(fz, g, g->base, g->size, NULL);
    }
    /* model_load agrees with the two-step path */
    memset(&err, 0, sizeof err);
    model_t *m = model_load(path, &err);
    if ((m != NULL) != (out == OUT_FULL))
        fail_msg("model_load and gguf_open + model_from_gguf disagree (%s): %s", err.msg, fz->desc);
    if (!m)
        expect_message(fz, &err, "model_load");
    model_free(m);
    unlink(path);
    return out;
}

static void test_fuzz_memory(void **state)
{
    fuzz_t *fz = *state;
    for (int i = 0; i < fz->n_seeds; i++)
        fuzz_seed(fz, &fz->seeds[i]);
    print_message("gguf fuzz (memory): %d mutants, %d rejected by the reader, %d by the model loader, %d fully "
                  "loaded (%d forward passes, %d vocabularies and %d batches rejected)\n",
                  fz->total, fz->rejected_reader, fz->rejected_model, fz->fully_loaded, fz->forward_runs,
                  fz->rejected_vocab, fz->rejected_forward);
    assert_true(fz->total >= FUZZ_MIN_MUTANTS);
    assert_true(fz->rejected_reader > 0);
    assert_true(fz->rejected_model > 0);
    assert_true(fz->fully_loaded > 0);
    assert_true(fz->forward_runs > 0);
}

static void test_fuzz_files(void **state)
{
    fuzz_t *fz = *state;
    int total0 = fz->total, rej0 = fz->rejected_reader, model0 = fz->rejected_model, full0 = fz->fully_loaded;

    /* an empty file, a file of one byte, a file that is only the magic */
    snprintf(fz->desc, sizeof fz->desc, "empty file");
    assert_int_equal(try_file(fz, (const uint8_t *)"", 0), OUT_READER_REJECT);
    snprintf(fz->desc, sizeof fz->desc, "one-byte file");
    assert_int_equal(try_file(fz, (const uint8_t *)"G", 1), OUT_READER_REJECT);
    snprintf(fz->desc, sizeof fz->desc, "magic only");
    assert_int_equal(try_file(fz, (const uint8_t *)"GGUF", 4), OUT_READER_REJECT);

    for (int i = 0; i < fz->n_seeds; i++) {
        seed_t *s = &fz->seeds[i];
        snprintf(fz->desc, sizeof fz->desc, "%s: unmutated file", s->label);
        assert_int_equal(try_file(fz, s->bytes, s->size), OUT_FULL);
        snprintf(fz->desc, sizeof fz->desc, "%s: file cut at the data section", s->label);
        assert_int_equal(try_file(fz, s->bytes, s->data_offset), OUT_READER_REJECT);
        snprintf(fz->desc, sizeof fz->desc, "%s: file missing its last byte", s->label);
        assert_int_equal(try_file(fz, s->bytes, s->size - 1), OUT_READER_REJECT);
        for (int j = 0; j < 4; j++) {
            uint8_t *w = work_from(fz, s);
            size_t at = pick_pos(fz, s);
            w[at] ^= (uint8_t)(1u << rnd(fz, 8));
            snprintf(fz->desc, sizeof fz->desc, "%s: file with byte %zu flipped", s->label, at);
            try_file(fz, w, s->size);
        }
        uint8_t *w = work_from(fz, s);
        w[s->size - 1] ^= 0x40; /* in the data: still loads */
        snprintf(fz->desc, sizeof fz->desc, "%s: file with its last data byte changed", s->label);
        assert_int_equal(try_file(fz, w, s->size), OUT_FULL);
    }
    print_message("gguf fuzz (files): %d mutants, %d rejected by the reader, %d by the model loader, %d fully "
                  "loaded\n",
                  fz->total - total0, fz->rejected_reader - rej0, fz->rejected_model - model0,
                  fz->fully_loaded - full0);
    print_message("gguf fuzz (all): %d mutants, %d rejected by the reader, %d by the model loader, %d fully loaded\n",
                  fz->total, fz->rejected_reader, fz->rejected_model, fz->fully_loaded);
}

/* The seeds themselves: valid, loading, giving finite logits. */
static void test_seeds_load(void **state)
{
    fuzz_t *fz = *state;
    for (int i = 0; i < fz->n_seeds; i++) {
        const seed_t *s = &fz->seeds[i];
        err_t err = {{0}};
        void *buf = malloc(s->size);
        memcpy(buf, s->bytes, s->size);
        gguf_t *g = gguf_open_memory(buf, s->size, &err);
        if (!g)
            fail_msg("%s: %s", s->label, err.msg);
        model_t *m = model_from_gguf(g, &err);
        if (!m)
            fail_msg("%s: %s", s->label, err.msg);
        assert_int_equal(m->cfg.vocab, FUZZ_VOCAB);
        assert_int_equal(m->cfg.n_layers, 1);
        vocab_t v;
        if (vocab_load(&v, m->gguf, m->cfg.vocab, &err))
            fail_msg("%s: %s", s->label, err.msg);
        vocab_free(&v);
        float logit = NAN;
        snprintf(fz->desc, sizeof fz->desc, "%s: seed", s->label);
        assert_true(try_forward(fz, m, &logit));
        assert_true(isfinite(logit));
        model_free(m);
        free(buf);
        /* the walk found the structure the synthesiser writes */
        assert_true(s->n_kvs >= 20);
        assert_int_equal(s->n_tinfos, 14);        /* 11 per layer + embedding, output norm, output */
        assert_int_equal(s->n_elems, FUZZ_VOCAB); /* the token strings (and no merges) */
        assert_true(s->info_end <= s->data_offset && s->data_offset - s->info_end < GGUF_DEFAULT_ALIGNMENT);
    }
}

static int setup(void **state)
{
    fuzz_t *fz = calloc(1, sizeof *fz);
    assert_non_null(fz);
    err_t err = {{0}};
    fz->pool = pool_create(1, &err);
    assert_non_null(fz->pool);
    const char *env = getenv("SPLASH_FUZZ_SEED");
    uint64_t rng_seed_value = env ? strtoull(env, NULL, 0) : FUZZ_DEFAULT_SEED;
    rng_seed(&fz->rng, rng_seed_value);
    fz->is_verbose = getenv("SPLASH_FUZZ_VERBOSE") != NULL;
    print_message("gguf fuzz: seed %#llx\n", (unsigned long long)rng_seed_value);

    static const struct {
        const char *label;
        uint32_t type;
    } types[] = {{"f32", TYPE_F32}, {"f16", TYPE_F16}, {"bf16", TYPE_BF16}, {"q8_0", TYPE_Q8_0}};
    model_config_t cfg;
    assert_int_equal(synth_preset("tiny", &cfg, &err), 0);
    cfg.vocab = FUZZ_VOCAB;
    cfg.n_layers = 1;
    size_t max_size = 0;
    for (int i = 0; i < 4; i++) {
        seed_t *s = &fz->seeds[fz->n_seeds++];
        s->label = types[i].label;
        s->wtype = types[i].type;
        char path[] = "/tmp/splash_test_gguf_seed_XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        if (synth_write(path, "fuzz", &cfg, s->wtype, 7 + (uint64_t)i, 0.0f, NULL, fz->pool, NULL, NULL, &err))
            fail_msg("synth %s: %s", s->label, err.msg);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        s->size = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        s->bytes = malloc(s->size);
        assert_non_null(s->bytes);
        assert_int_equal(fread(s->bytes, 1, s->size, f), s->size);
        fclose(f);
        unlink(path);
        gguf_t *g = gguf_open_memory(s->bytes, s->size, &err);
        if (!g)
            fail_msg("seed %s: %s", s->label, err.msg);
        s->data_offset = g->data_offset;
        gguf_close(g);
        walk(s);
        if (s->size > max_size)
            max_size = s->size;
    }
    fz->work_cap = max_size + 64 * 1024;
    fz->work = malloc(fz->work_cap);
    assert_non_null(fz->work);
    *state = fz;
    return 0;
}

static int teardown(void **state)
{
    fuzz_t *fz = *state;
    for (int i = 0; i < fz->n_seeds; i++)
        free(fz->seeds[i].bytes);
    free(fz->work);
    pool_destroy(fz->pool);
    free(fz);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeds_load),
        cmocka_unit_test(test_fuzz_memory),
        cmocka_unit_test(test_fuzz_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
