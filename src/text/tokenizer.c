#include "text/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* A hash slot for token string -> id (id -1: empty). */
typedef struct str_slot {
    uint64_t hash;
    int32_t id;
} str_slot_t;

/* A hash slot for (left id, right id) -> merge rank and merged id. */
typedef struct pair_slot {
    uint64_t key; /* left << 32 | right; PAIR_EMPTY when free */
    int32_t rank;
    int32_t id;
} pair_slot_t;

#define PAIR_EMPTY UINT64_MAX

typedef struct added_token {
    const char *text; /* in the mapping */
    uint32_t len;
    int32_t id;
    bool is_control; /* special: matched only when parsing special tokens */
} added_token_t;

struct tokenizer {
    const vocab_t *v;
    str_slot_t *str_tab;
    uint64_t str_mask;
    pair_slot_t *pair_tab;
    uint64_t pair_mask;
    added_token_t *added; /* sorted by first byte, then longest first */
    int n_added;
    int added_from[257]; /* added tokens starting with byte b: [added_from[b], added_from[b + 1]) */
    pcre2_code *re;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t table_size(uint64_t n)
{
    uint64_t size = 16;
    while (size < 2 * n)
        size *= 2;
    return size;
}

static int32_t str_find(const tokenizer_t *t, const char *s, size_t n)
{
    uint64_t h = hash_bytes(s, n);
    for (uint64_t i = h & t->str_mask;; i = (i + 1) & t->str_mask) {
        const str_slot_t *slot = &t->str_tab[i];
        if (slot->id < 0)
            return -1;
        const gguf_str_t *tok = &t->v->tokens[slot->id];
        if (slot->hash == h && tok->len == n && memcmp(tok->ptr, s, n) == 0)
            return slot->id;
    }
}

static const pair_slot_t *pair_find(const tokenizer_t *t, int32_t a, int32_t b)
{
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (uint64_t i = hash_u64(key) & t->pair_mask;; i = (i + 1) & t->pair_mask) {
        const pair_slot_t *slot = &t->pair_tab[i];
        if (slot->key == key)
            return slot;
        if (slot->key == PAIR_EMPTY)
            return NULL;
    }
}

static int cmp_added(const void *a, const void *b)
{
    const added_token_t *x = a, *y = b;
    uint8_t fx = (uint8_t)x->text[0], fy = (uint8_t)y->text[0];
    if (fx != fy)
        return fx < fy ? -1 : 1;
    return x->len > y->len ? -1 : x->len < y->len;
}

static int build_vocab_index(tokenizer_t *t, err_t *err)
{
    const vocab_t *v = t->v;
    uint64_t size = table_size((uint64_t)v->n_tokens);
    t->str_tab = malloc(size * sizeof *t->str_tab);
    if (!t->str_tab)
        return err_set(err, "tokenizer: out of memory");
    t->str_mask = size - 1;
    for (uint64_t i = 0; i < size; i++)
        t->str_tab[i].id = -1;
    for (int id = 0; id < v->n_tokens; id++) {
        const gguf_str_t *tok = &v->tokens[id];
        if (v->types[id] == TOKEN_TYPE_UNUSED)
            continue;
        if (str_find(t, tok->ptr, (size_t)tok->len) >= 0)
            continue; /* a duplicate spelling: the first id wins */
        uint64_t h = hash_bytes(tok->ptr, (size_t)tok->len);
        uint64_t i = h & t->str_mask;
        while (t->str_tab[i].id >= 0)
            i = (i + 1) & t->str_mask;
        t->str_tab[i] = (str_slot_t){h, id};
    }
    /* added tokens: control (special) and user-defined ones, matched in raw text */
    t->added = calloc((size_t)v->n_tokens, sizeof *t->added);
    if (!t->added)
        return err_set(err, "tokenizer: out of memory");
    for (int id = 0; id < v->n_tokens; id++) {
        int type = v->types[id];
        if ((type == TOKEN_TYPE_CONTROL || type == TOKEN_TYPE_USER_DEFINED) && v->tokens[id].len > 0 &&
            v->tokens[id].len < UINT32_MAX)
            t->added[t->n_added++] =
                (added_token_t){v->tokens[id].ptr, (uint32_t)v->tokens[id].len, id, type == TOKEN_TYPE_CONTROL};
    }
    qsort(t->added, (size_t)t->n_added, sizeof *t->added, cmp_added);
    int k = 0;
    for (int b = 0; b <= 256; b++) {
        while (k < t->n_added && (uint8_t)t->added[k].text[0] < b)
            k++;
        t->added_from[b] = k;
    }
    return 0;
}

static int build_merges(tokenizer_t *t, const gguf_t *g, err_t *err)
{
    const gguf_kv_t *merges = gguf_find(g, "tokenizer.ggml.merges");
    uint64_t n = 0;
    if (merges) {
        if (gguf_get_arr(g, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &merges, err))
            return -1;
        n = merges->arr_count;
    }
    uint64_t size = table_size(n);
    t->pair_tab = malloc(size * sizeof *t->pair_tab);
    if (!t->pair_tab)
        return err_set(err, "tokenizer: out of memory");
    t->pair_mask = size - 1;
    for (uint64_t i = 0; i < size; i++)
        t->pair_tab[i].key = PAIR_EMPTY;
    if (!merges)
        return 0;
    gguf_str_iter_t it;
    gguf_str_t m;
    char buf[1024];
    gguf_str_iter_init(&it, merges);
    for (int32_t rank = 0; gguf_str_iter_next(&it, &m); rank++) {
        const char *space = memchr(m.ptr, ' ', (size_t)m.len);
        if (!space || m.len >= sizeof buf)
            return err_set(err, "tokenizer.ggml.merges[%d] is not \"left right\"", rank);
        size_t la = (size_t)(space - m.ptr), lb = (size_t)m.len - la - 1;
        int32_t a = str_find(t, m.ptr, la), b = str_find(t, space + 1, lb);
        memcpy(buf, m.ptr, la);
        memcpy(buf + la, space + 1, lb);
        int32_t merged = str_find(t, buf, la + lb);
        if (a < 0 || b < 0 || merged < 0)
            return err_set(err, "tokenizer.ggml.merges[%d] '%.*s' names a token that is not in the vocabulary", rank,
                           (int)m.len, m.ptr);
        uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
        uint64_t i = hash_u64(key) & t->pair_mask;
        while (t->pair_tab[i].key != PAIR_EMPTY && t->pair_tab[i].key != key)
            i = (i + 1) & t->pair_mask;
        if (t->pair_tab[i].key == key)
            continue; /* a repeated merge keeps its first (best) rank */
        t->pair_tab[i] = (pair_slot_t){key, rank, merged};
    }
    return 0;
}

tokenizer_t *tok_load(const vocab_t *v, const gguf_t *g, err_t *err)
{
    tokenizer_t *t = calloc(1, sizeof *t);
    if (!t) {
        err_set(err, "tokenizer: out of memory");
        return NULL;
    }
    t->v = v;
    if (v->pre.len && !gguf_str_eq(v->pre, "qwen2")) {
        err_set(err, "key 'tokenizer.ggml.pre' is '%.*s'; only the Qwen2/Qwen3 pre-tokenizer ('qwen2') is supported",
                (int)v->pre.len, v->pre.ptr);
        tok_free(t);
        return NULL;
    }
    for (int b = 0; b < 256; b++) {
        if (v->byte_token[b] < 0) {
            err_set(err, "the vocabulary has no token for byte 0x%02x (byte-level BPE needs all 256)", b);
            tok_free(t);
            return NULL;
        }
    }
    int code;
    PCRE2_SIZE at;
    t->re = pcre2_compile((PCRE2_SPTR)TOK_QWEN2_PATTERN_COMPILED, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
    if (!t->re) {
        err_set(err, "tokenizer: the pre-tokenizer pattern does not compile (PCRE2 error %d)", code);
        tok_free(t);
        return NULL;
    }
    pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* without JIT it still matches, slower */
    if (build_vocab_index(t, err) || build_merges(t, g, err)) {
        tok_free(t);
        return NULL;
    }
    return t;
}

void tok_free(tokenizer_t *t)
{
    if (!t)
        return;
    pcre2_code_free(t->re);
    free(t->str_tab);
    free(t->pair_tab);
    free(t->added);
    free(t);
}

void tok_ids_free(tok_ids_t *ids)
{
    free(ids->v);
    memset(ids, 0, sizeof *ids);
}

static int push(tok_ids_t *out, int32_t id, err_t *err)
{
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 256;
        int32_t *v = realloc(out->v, cap * sizeof *v);
        if (!v)
            return err_set(err, "tokenizer: out of memory");
        out->v = v;
        out->cap = cap;
    }
    out->v[out->n++] = id;
    return 0;
}

/* ---- BPE on one pre-tokenized piece --------------------------------------
 * Symbols start as the piece's byte tokens in a linked list; a min-heap of
 * candidate merges ordered by (rank, position) merges the best pair first,
 * leftmost on ties, as Hugging Face's BPE does. Stale heap entries (a side
 * already merged away) are skipped when popped. */

typedef struct bpe_cand {
    int32_t rank;
    int32_t pos;         /* left symbol */
    int32_t left, right; /* ids when the candidate was made */
} bpe_cand_t;

/* A direct-mapped cache of short pieces' ids, for the length of one encode
 * call: prose repeats its words, so most pieces skip BPE entirely. */
#define PIECE_CACHE_SLOTS 4096
#define PIECE_CACHE_MAX_BYTES 23
#define PIECE_CACHE_MAX_IDS 6
#define PIECE_CACHE_MIN_TEXT 4096 /* shorter texts do not pay for the table */

typedef struct piece_slot {
    uint8_t len; /* 0: empty */
    uint8_t n_ids;
    char bytes[PIECE_CACHE_MAX_BYTES];
    int32_t ids[PIECE_CACHE_MAX_IDS];
} piece_slot_t;

typedef struct bpe_work {
    int32_t *ids, *prev, *next;
    bpe_cand_t *heap;
    size_t cap, n_heap;
    piece_slot_t *cache; /* (PIECE_CACHE_SLOTS) or NULL */
} bpe_work_t;

static bool cand_less(const bpe_cand_t *a, const bpe_cand_t *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(bpe_work_t *w, bpe_cand_t c)
{
    size_t i = w->n_heap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!cand_less(&c, &w->heap[parent]))
            break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = c;
}

static bpe_cand_t heap_pop(bpe_work_t *w)
{
    bpe_cand_t top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->n_heap)
            break;
        if (c + 1 < w->n_heap && cand_less(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!cand_less(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->n_heap)
        w->heap[i] = last;
    return top;
}

static void try_pair(const tokenizer_t *t, bpe_work_t *w, int32_t pos)
{
    if (pos < 0)
        return;
    int32_t nx = w->next[pos];
    if (nx < 0)
        return;
    const pair_slot_t *p = pair_find(t, w->ids[pos], w->ids[nx]);
    if (p)
        heap_push(w, (bpe_cand_t){p->rank, pos, w->ids[pos], w->ids[nx]});
}

static int bpe_merge(const tokenizer_t *t, bpe_work_t *w, const char *s, size_t n, tok_ids_t *out, err_t *err);

static int bpe_piece(const tokenizer_t *t, bpe_work_t *w, const char *s, size_t n, tok_ids_t *out, err_t *err)
{
    if (n == 1)
        return push(out, t->v->byte_token[(uint8_t)s[0]], err);
    if (!w->cache || n > PIECE_CACHE_MAX_BYTES)
        return bpe_merge(t, w, s, n, out, err);
    piece_slot_t *slot = &w->cache[hash_bytes(s, n) & (PIECE_CACHE_SLOTS - 1)];
    if (slot->len == n && memcmp(slot->bytes, s, n) == 0) {
        for (int i = 0; i < slot->n_ids; i++)
            if (push(out, slot->ids[i], err))
                return -1;
        return 0;
    }
    size_t first = out->n;
    if (bpe_merge(t, w, s, n, out, err))
        return -1;
    if (out->n - first <= PIECE_CACHE_MAX_IDS) {
        slot->len = (uint8_t)n;
        slot->n_ids = (uint8_t)(out->n - first);
        memcpy(slot->bytes, s, n);
        memcpy(slot->ids, out->v + first, slot->n_ids * sizeof *slot->ids);
    }
    return 0;
}

static int bpe_merge(const tokenizer_t *t, bpe_work_t *w, const char *s, size_t n, tok_ids_t *out, err_t *err)
{
    if (n > w->cap) {
        size_t cap = n * 2;
        int32_t *ids = realloc(w->ids, cap * sizeof *ids);
        if (ids)
            w->ids = ids;
        int32_t *prev = realloc(w->prev, cap * sizeof *prev);
        if (prev)
            w->prev = prev;
        int32_t *next = realloc(w->next, cap * sizeof *next);
        if (next)
            w->next = next;
        bpe_cand_t *heap = realloc(w->heap, 2 * cap * sizeof *heap);
        if (heap)
            w->heap = heap;
        if (!ids || !prev || !next || !heap)
            return err_set(err, "tokenizer: out of memory");
        w->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        w->ids[i] = t->v->byte_token[(uint8_t)s[i]];
        w->prev[i] = (int32_t)i - 1;
        w->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    w->n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++)
        try_pair(t, w, (int32_t)i);
    while (w->n_heap) {
        bpe_cand_t c = heap_pop(w);
        int32_t nx = w->next[c.pos];
        /* stale: the left symbol was absorbed (ids changed) or its neighbour changed */
        if (w->ids[c.pos] != c.left || nx < 0 || w->ids[nx] != c.right)
            continue;
        const pair_slot_t *p = pair_find(t, c.left, c.right);
        w->ids[c.pos] = p->id;
        w->ids[nx] = -1; /* dead */
        w->next[c.pos] = w->next[nx];
        if (w->next[nx] >= 0)
            w->prev[w->next[nx]] = c.pos;
        try_pair(t, w, w->prev[c.pos]);
        try_pair(t, w, c.pos);
        /* the heap holds at most one entry per live pair plus stale ones: at
         * most n initial + 2 per merge, within the 2 * cap reserved */
    }
    for (int32_t i = 0; i >= 0; i = w->next[i])
        if (push(out, w->ids[i], err))
            return -1;
    return 0;
}

/* A segment without added tokens: NFC, regex pieces, BPE. */
static int encode_segment(const tokenizer_t *t, pcre2_match_data *md, bpe_work_t *w, const char *s, size_t n,
                          tok_ids_t *out, err_t *err)
{
    if (n == 0)
        return 0;
    uint8_t *norm = NULL;
    bool is_ascii = true;
    for (size_t i = 0; i < n && is_ascii; i++)
        is_ascii = (uint8_t)s[i] < 0x80;
    if (!is_ascii) {
        /* NFC; invalid UTF-8 is left as it is (its bytes become byte tokens) */
        utf8proc_ssize_t len =
            utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &norm, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (len >= 0) {
            s = (const char *)norm;
            n = (size_t)len;
        } else {
            norm = NULL;
        }
    }
    int rc = 0;
    size_t pos = 0;
    while (pos < n && !rc) {
        int m = pcre2_match(t->re, (PCRE2_SPTR)s, n, pos, 0, md, NULL);
        size_t start = n, end = n;
        if (m > 0) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            start = ov[0];
            end = ov[1];
        }
        /* bytes the pattern skips are invalid UTF-8: one byte token each */
        for (size_t i = pos; i < start && !rc; i++)
            rc = push(out, t->v->byte_token[(uint8_t)s[i]], err);
        if (!rc && end > start)
            rc = bpe_piece(t, w, s + start, end - start, out, err);
        if (end == start && end < n) /* cannot happen with this pattern; never loop forever */
            end++;
        pos = end;
    }
    free(norm);
    return rc;
}

/* Leftmost added token at or after pos (longest at that position). */
static const added_token_t *find_added(const tokenizer_t *t, const char *s, size_t n, size_t pos, bool parse_special,
                                       size_t *at)
{
    for (size_t i = pos; i < n; i++) {
        uint8_t b = (uint8_t)s[i];
        for (int k = t->added_from[b]; k < t->added_from[b + 1]; k++) {
            const added_token_t *a = &t->added[k];
            if (a->is_control && !parse_special)
                continue;
            if (a->len <= n - i && memcmp(s + i, a->text, a->len) == 0) {
                *at = i;
                return a;
            }
        }
    }
    return NULL;
}

int tok_encode(const tokenizer_t *t, const char *text, size_t n, bool parse_special, tok_ids_t *out, err_t *err)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!md)
        return err_set(err, "tokenizer: out of memory");
    bpe_work_t w = {0};
    if (n >= PIECE_CACHE_MIN_TEXT)
        w.cache = calloc(PIECE_CACHE_SLOTS, sizeof *w.cache); /* NULL: no cache, same result */
    int rc = 0;
    size_t pos = 0;
    while (pos < n && !rc) {
        size_t at = n;
        const added_token_t *a = t->n_added ? find_added(t, text, n, pos, parse_special, &at) : NULL;
        rc = encode_segment(t, md, &w, text + pos, at - pos, out, err);
        if (!rc && a) {
            rc = push(out, a->id, err);
            at += a->len;
        }
        pos = at;
    }
    free(w.ids);
    free(w.prev);
    free(w.next);
    free(w.heap);
    free(w.cache);
    pcre2_match_data_free(md);
    return rc;
}

int tok_decode(const tokenizer_t *t, const int32_t *ids, size_t n_ids, char **out, size_t *n_out, err_t *err)
{
    size_t cap = 64, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return err_set(err, "tokenizer: out of memory");
    for (size_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= t->v->n_tokens) {
            free(buf);
            return err_set(err, "token id %d is outside the vocabulary (%d)", ids[i], t->v->n_tokens);
        }
        size_t need = (size_t)t->v->tokens[ids[i]].len + 1;
        if (n + need > cap) {
            while (n + need > cap)
                cap *= 2;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                return err_set(err, "tokenizer: out of memory");
            }
            buf = b;
        }
        n += vocab_token_bytes(t->v, ids[i], buf + n, cap - n);
    }
    buf[n] = '\0';
    *out = buf;
    *n_out = n;
    return 0;
}

size_t utf8_lossy(const char *s, size_t n, char *out)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t o = 0, i = 0;
    while (i < n) {
        uint8_t c = u[i];
        size_t need = 0;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c < 0x80) {
            out[o++] = (char)c;
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        }
        /* the longest prefix of a valid sequence starting here */
        size_t k = 1;
        while (need && k <= need && i + k < n) {
            uint8_t b = u[i + k];
            if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
                break;
            k++;
        }
        if (need && k == need + 1) {
            memcpy(out + o, s + i, k);
            o += k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3); /* U+FFFD for the maximal invalid subpart */
            o += 3;
        }
        i += k;
    }
    out[o] = '\0';
    return o;
}
