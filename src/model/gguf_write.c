#include "model/gguf_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "kernels/types.h"
#include "model/gguf.h"

typedef struct buf {
    uint8_t *data;
    size_t len, cap;
} buf_t;

typedef struct wtensor {
    char name[GGUF_MAX_NAME_LEN + 1];
    uint32_t type;
    int n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    size_t n_bytes;
    uint64_t offset;
} wtensor_t;

struct gguf_writer {
    buf_t kv;
    uint64_t n_kv;
    wtensor_t *tensors;
    int n_tensors, cap_tensors;
    uint64_t data_size; /* running total, aligned */
    bool is_oom;
};

static void put(gguf_writer_t *w, const void *p, size_t n)
{
    buf_t *b = &w->kv;
    if (w->is_oom || n == 0) /* n == 0: p may be NULL (no pairs, empty array), which memcpy must not see */
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (!d) {
            w->is_oom = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u32(gguf_writer_t *w, uint32_t v)
{
    put(w, &v, 4);
}
static void put_u64(gguf_writer_t *w, uint64_t v)
{
    put(w, &v, 8);
}

static void put_str(gguf_writer_t *w, const char *s)
{
    size_t n = strlen(s);
    put_u64(w, n);
    put(w, s, n);
}

static void key(gguf_writer_t *w, const char *k, uint32_t type)
{
    put_str(w, k);
    put_u32(w, type);
    w->n_kv++;
}

gguf_writer_t *gguf_writer_new(void)
{
    return calloc(1, sizeof(gguf_writer_t));
}

void gguf_writer_free(gguf_writer_t *w)
{
    if (!w)
        return;
    free(w->kv.data);
    free(w->tensors);
    free(w);
}

void gguf_w_u32(gguf_writer_t *w, const char *k, uint32_t v)
{
    key(w, k, GGUF_TYPE_U32);
    put_u32(w, v);
}
void gguf_w_i32(gguf_writer_t *w, const char *k, int32_t v)
{
    key(w, k, GGUF_TYPE_I32);
    put(w, &v, 4);
}
void gguf_w_f32(gguf_writer_t *w, const char *k, float v)
{
    key(w, k, GGUF_TYPE_F32);
    put(w, &v, 4);
}

void gguf_w_bool(gguf_writer_t *w, const char *k, bool v)
{
    uint8_t b = v;
    key(w, k, GGUF_TYPE_BOOL);
    put(w, &b, 1);
}

void gguf_w_str(gguf_writer_t *w, const char *k, const char *v)
{
    key(w, k, GGUF_TYPE_STRING);
    put_str(w, v);
}

void gguf_w_arr_str(gguf_writer_t *w, const char *k, const char *const *v, uint64_t n)
{
    key(w, k, GGUF_TYPE_ARRAY);
    put_u32(w, GGUF_TYPE_STRING);
    put_u64(w, n);
    for (uint64_t i = 0; i < n; i++)
        put_str(w, v[i]);
}

void gguf_w_arr_i32(gguf_writer_t *w, const char *k, const int32_t *v, uint64_t n)
{
    key(w, k, GGUF_TYPE_ARRAY);
    put_u32(w, GGUF_TYPE_I32);
    put_u64(w, n);
    put(w, v, (size_t)n * 4);
}

void gguf_w_raw_kv(gguf_writer_t *w, const void *bytes, size_t n)
{
    put(w, bytes, n);
    w->n_kv++;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

int gguf_w_tensor(gguf_writer_t *w, const char *name, uint32_t type, int n_dims, const int64_t *ne, err_t *err)
{
    if (strlen(name) == 0 || strlen(name) > GGUF_MAX_NAME_LEN)
        return err_set(err, "tensor name '%s' must be 1 to %d bytes", name, GGUF_MAX_NAME_LEN);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return err_set(err, "tensor '%s': %d dimensions", name, n_dims);
    const type_traits_t *tt = type_traits(type);
    if (!tt)
        return err_set(err, "tensor '%s': unknown type %u", name, type);
    int64_t n = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 1 || __builtin_mul_overflow(n, ne[d], &n))
            return err_set(err, "tensor '%s': bad dimension %d", name, d);
    }
    if (ne[0] % tt->block_size)
        return err_set(err, "tensor '%s': row length %lld is not a multiple of the %s block size %lld", name,
                       (long long)ne[0], tt->name, (long long)tt->block_size);
    if (w->n_tensors == w->cap_tensors) {
        int cap = w->cap_tensors ? w->cap_tensors * 2 : 64;
        wtensor_t *t = realloc(w->tensors, (size_t)cap * sizeof *t);
        if (!t)
            return err_set(err, "out of memory");
        w->tensors = t;
        w->cap_tensors = cap;
    }
    wtensor_t *t = &w->tensors[w->n_tensors++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_dims = n_dims;
    for (int d = 0; d < GGUF_MAX_DIMS; d++)
        t->ne[d] = d < n_dims ? ne[d] : 1;
    type_row_bytes(type, n, &t->n_bytes);
    t->offset = w->data_size;
    w->data_size = align_up(w->data_size + t->n_bytes, GGUF_DEFAULT_ALIGNMENT);
    return 0;
}

/* Header, metadata and tensor infos, padded to the alignment. */
static int build_header(gguf_writer_t *w, buf_t *h, err_t *err)
{
    gguf_writer_t hw = {0};
    put(&hw, GGUF_MAGIC, 4);
    put_u32(&hw, GGUF_VERSION);
    put_u64(&hw, (uint64_t)w->n_tensors);
    put_u64(&hw, w->n_kv);
    put(&hw, w->kv.data, w->kv.len);
    for (int i = 0; i < w->n_tensors; i++) {
        const wtensor_t *t = &w->tensors[i];
        put_str(&hw, t->name);
        put_u32(&hw, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++)
            put_u64(&hw, (uint64_t)t->ne[d]);
        put_u32(&hw, t->type);
        put_u64(&hw, t->offset);
    }
    static const uint8_t zeros[GGUF_DEFAULT_ALIGNMENT];
    put(&hw, zeros, (size_t)(align_up(hw.kv.len, GGUF_DEFAULT_ALIGNMENT) - hw.kv.len));
    if (hw.is_oom || w->is_oom) {
        free(hw.kv.data);
        return err_set(err, "out of memory building the GGUF header");
    }
    *h = hw.kv;
    return 0;
}

typedef int (*sink_fn)(void *sink, const void *p, size_t n, err_t *err);

static int write_all(gguf_writer_t *w, sink_fn sink, void *sink_ctx, gguf_fill_fn fill, void *ctx, err_t *err)
{
    buf_t h = {0};
    if (build_header(w, &h, err))
        return -1;
    int rc = sink(sink_ctx, h.data, h.len, err);
    free(h.data);
    if (rc)
        return -1;
    uint64_t written = 0;
    static const uint8_t zeros[GGUF_DEFAULT_ALIGNMENT];
    for (int i = 0; i < w->n_tensors; i++) {
        const wtensor_t *t = &w->tensors[i];
        void *data = malloc(t->n_bytes ? t->n_bytes : 1);
        if (!data)
            return err_set(err, "out of memory for tensor '%s' (%zu bytes)", t->name, t->n_bytes);
        rc = fill(ctx, i, data, t->n_bytes, err);
        if (!rc)
            rc = sink(sink_ctx, data, t->n_bytes, err);
        free(data);
        if (rc)
            return -1;
        written += t->n_bytes;
        uint64_t pad = align_up(written, GGUF_DEFAULT_ALIGNMENT) - written;
        if (i + 1 < w->n_tensors && pad) {
            if (sink(sink_ctx, zeros, (size_t)pad, err))
                return -1;
            written += pad;
        }
    }
    return 0;
}

static int file_sink(void *f, const void *p, size_t n, err_t *err)
{
    if (fwrite(p, 1, n, f) != n)
        return err_set(err, "write failed: %s", strerror(errno));
    return 0;
}

int gguf_writer_write(gguf_writer_t *w, const char *path, gguf_fill_fn fill, void *ctx, err_t *err)
{
    afile_t a;
    FILE *f = afile_open(&a, path, err);
    if (!f)
        return -1;
    if (write_all(w, file_sink, f, fill, ctx, err)) {
        afile_abort(&a);
        return -1;
    }
    return afile_commit(&a, err);
}

static int mem_sink(void *b, const void *p, size_t n, err_t *err)
{
    gguf_writer_t *mw = b;
    put(mw, p, n);
    return mw->is_oom ? err_set(err, "out of memory") : 0;
}

int gguf_writer_write_mem(gguf_writer_t *w, void **out, size_t *out_size, gguf_fill_fn fill, void *ctx, err_t *err)
{
    gguf_writer_t mw = {0};
    if (write_all(w, mem_sink, &mw, fill, ctx, err)) {
        free(mw.kv.data);
        return -1;
    }
    *out = mw.kv.data;
    *out_size = mw.kv.len;
    return 0;
}
