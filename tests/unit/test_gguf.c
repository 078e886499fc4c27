/* GGUF reader and writer: a round trip through every value type and a few
 * tensor types, then one hand-built file per defect the reader must reject,
 * each checked for the message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/types.h"
#include "model/gguf.h"
#include "model/gguf_write.h"

/* ---- a byte builder for hand-encoded files ------------------------------- */

typedef struct bb {
    uint8_t *p;
    size_t len, cap;
} bb_t;

static void bb_put(bb_t *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        assert_non_null(b->p);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void bb_u8(bb_t *b, uint8_t v)
{
    bb_put(b, &v, 1);
}
static void bb_u16(bb_t *b, uint16_t v)
{
    bb_put(b, &v, 2);
}
static void bb_u32(bb_t *b, uint32_t v)
{
    bb_put(b, &v, 4);
}
static void bb_u64(bb_t *b, uint64_t v)
{
    bb_put(b, &v, 8);
}

static void bb_strn(bb_t *b, const char *s, size_t n)
{
    bb_u64(b, n);
    bb_put(b, s, n);
}

static void bb_str(bb_t *b, const char *s)
{
    bb_strn(b, s, strlen(s));
}

static void bb_zeros(bb_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        bb_u8(b, 0);
}

static void bb_pad(bb_t *b, size_t align)
{
    bb_zeros(b, (align - b->len % align) % align);
}

static void bb_free(bb_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static void bb_hdr(bb_t *b, uint64_t n_tensors, uint64_t n_kv)
{
    bb_put(b, GGUF_MAGIC, 4);
    bb_u32(b, GGUF_VERSION);
    bb_u64(b, n_tensors);
    bb_u64(b, n_kv);
}

/* Key and value type; the value follows. */
static void bb_key(bb_t *b, const char *key, uint32_t type)
{
    bb_str(b, key);
    bb_u32(b, type);
}

static void bb_kv_u32(bb_t *b, const char *key, uint32_t v)
{
    bb_key(b, key, GGUF_TYPE_U32);
    bb_u32(b, v);
}

static void bb_tinfo(bb_t *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset)
{
    bb_str(b, name);
    bb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        bb_u64(b, ne[d]);
    bb_u32(b, type);
    bb_u64(b, offset);
}

/* A whole file: header, kv bytes, tensor-info bytes, padding to align, data. */
static bb_t assemble(uint64_t n_tensors, uint64_t n_kv, const bb_t *kv, const bb_t *ti, size_t align, size_t data_bytes)
{
    bb_t f = {0};
    bb_hdr(&f, n_tensors, n_kv);
    if (kv)
        bb_put(&f, kv->p, kv->len);
    if (ti)
        bb_put(&f, ti->p, ti->len);
    bb_pad(&f, align);
    for (size_t i = 0; i < data_bytes; i++)
        bb_u8(&f, (uint8_t)i);
    return f;
}

/* Opens a copy of exactly b->len bytes (so ASan sees any over-read). */
static gguf_t *open_exact(const uint8_t *bytes, size_t n, void **copy, err_t *err)
{
    *copy = malloc(n ? n : 1);
    assert_non_null(*copy);
    if (n)
        memcpy(*copy, bytes, n);
    memset(err, 0, sizeof *err);
    return gguf_open_memory(*copy, n, err);
}

/* The file must be rejected, with a message containing every needle given. */
static void expect_reject_n(const uint8_t *bytes, size_t n, const char *needle1, const char *needle2)
{
    void *copy;
    err_t err;
    gguf_t *g = open_exact(bytes, n, &copy, &err);
    if (g)
        fail_msg("file accepted; expected a rejection naming '%s'", needle1 ? needle1 : "");
    if (err.msg[0] == '\0')
        fail_msg("rejected with an empty message");
    if (needle1 && !strstr(err.msg, needle1))
        fail_msg("message \"%s\" does not contain \"%s\"", err.msg, needle1);
    if (needle2 && !strstr(err.msg, needle2))
        fail_msg("message \"%s\" does not contain \"%s\"", err.msg, needle2);
    free(copy);
}

static void expect_reject(const bb_t *b, const char *needle1, const char *needle2)
{
    expect_reject_n(b->p, b->len, needle1, needle2);
}

static void expect_accept(const bb_t *b)
{
    void *copy;
    err_t err;
    gguf_t *g = open_exact(b->p, b->len, &copy, &err);
    if (!g)
        fail_msg("valid file rejected: %s", err.msg);
    gguf_close(g);
    free(copy);
}

/* ---- round trip ---------------------------------------------------------- */

typedef struct rt_tensor {
    const char *name;
    uint32_t type;
    int n_dims;
    int64_t ne[2];
    uint64_t offset; /* expected */
    size_t n_bytes;  /* expected */
} rt_tensor_t;

static const rt_tensor_t rt_tensors[] = {
    {"a.f32", TYPE_F32, 1, {5, 1}, 0, 20},
    {"b.f16", TYPE_F16, 2, {3, 4}, 32, 24},
    {"c.q8_0", TYPE_Q8_0, 2, {64, 2}, 64, 4 * 34},
    {"d.f32", TYPE_F32, 2, {7, 3}, 224, 84},
};
#define RT_N_TENSORS (int)(sizeof rt_tensors / sizeof rt_tensors[0])

static uint8_t pattern(int index, size_t i)
{
    return (uint8_t)(index * 37 + (int)(i * 11) + 5);
}

static int fill_pattern(void *ctx, int index, void *dst, size_t n_bytes, err_t *err)
{
    (void)ctx;
    if (n_bytes != rt_tensors[index].n_bytes)
        return err_set(err, "tensor %d: asked for %zu bytes", index, n_bytes);
    for (size_t i = 0; i < n_bytes; i++)
        ((uint8_t *)dst)[i] = pattern(index, i);
    return 0;
}

static int fill_fails(void *ctx, int index, void *dst, size_t n_bytes, err_t *err)
{
    (void)ctx, (void)dst, (void)n_bytes;
    return err_set(err, "fill refused tensor %d", index);
}

static const char *const rt_strs[] = {"alpha", "", "gamma \xc3\xa9"};

static gguf_writer_t *rt_writer(void)
{
    gguf_writer_t *w = gguf_writer_new();
    assert_non_null(w);
    gguf_w_u32(w, "t.u32", 0xDEADBEEFu);
    gguf_w_i32(w, "t.i32", -123456);
    gguf_w_f32(w, "t.f32", 3.5f);
    gguf_w_bool(w, "t.bool", true);
    gguf_w_str(w, "t.str", "h\xc3\xa9llo");
    gguf_w_arr_str(w, "t.arr_str", rt_strs, 3);
    int32_t ints[3] = {1, -2, 3};
    gguf_w_arr_i32(w, "t.arr_i32", ints, 3);

    /* the types without setters, hand-encoded */
    bb_t b = {0};
    bb_key(&b, "t.u8", GGUF_TYPE_U8), bb_u8(&b, 0xAB);
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    bb_key(&b, "t.i8", GGUF_TYPE_I8), bb_u8(&b, (uint8_t)-5);
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    bb_key(&b, "t.u16", GGUF_TYPE_U16), bb_u16(&b, 0xBEEF);
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    bb_key(&b, "t.i16", GGUF_TYPE_I16), bb_u16(&b, (uint16_t)-1234);
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    bb_key(&b, "t.u64", GGUF_TYPE_U64), bb_u64(&b, 0x0123456789ABCDEFull);
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    bb_key(&b, "t.i64", GGUF_TYPE_I64), bb_u64(&b, (uint64_t) - (INT64_C(1) << 40));
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    double e = 2.718281828459045;
    bb_key(&b, "t.f64", GGUF_TYPE_F64), bb_put(&b, &e, 8);
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    /* [[1, 2], [3], []] */
    bb_key(&b, "t.nested", GGUF_TYPE_ARRAY), bb_u32(&b, GGUF_TYPE_ARRAY), bb_u64(&b, 3);
    bb_u32(&b, GGUF_TYPE_I32), bb_u64(&b, 2), bb_u32(&b, 1), bb_u32(&b, 2);
    bb_u32(&b, GGUF_TYPE_I32), bb_u64(&b, 1), bb_u32(&b, 3);
    bb_u32(&b, GGUF_TYPE_I32), bb_u64(&b, 0);
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    /* strings may hold any bytes, NUL included */
    bb_key(&b, "t.raw_strs", GGUF_TYPE_ARRAY), bb_u32(&b, GGUF_TYPE_STRING), bb_u64(&b, 2);
    bb_strn(&b, "x\0y", 3), bb_str(&b, "zz");
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    bb_key(&b, "t.u16s", GGUF_TYPE_ARRAY), bb_u32(&b, GGUF_TYPE_U16), bb_u64(&b, 2);
    bb_u16(&b, 65535), bb_u16(&b, 7);
    gguf_w_raw_kv(w, b.p, b.len), b.len = 0;
    bb_free(&b);

    err_t err = {{0}};
    for (int i = 0; i < RT_N_TENSORS; i++) {
        const rt_tensor_t *t = &rt_tensors[i];
        if (gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, &err))
            fail_msg("gguf_w_tensor(%s): %s", t->name, err.msg);
    }
    return w;
}
#define RT_N_KV 17

static void check_str(gguf_str_t s, const char *want, size_t want_len)
{
    assert_int_equal(s.len, want_len);
    assert_memory_equal(s.ptr, want, want_len);
}

/* Everything rt_writer put in, read back from g. */
static void check_rt(const gguf_t *g)
{
    err_t err = {{0}};
    assert_int_equal(g->version, GGUF_VERSION);
    assert_int_equal(g->alignment, GGUF_DEFAULT_ALIGNMENT);
    assert_int_equal(g->n_kv, RT_N_KV);
    assert_int_equal(g->n_tensors, RT_N_TENSORS);

    /* pairs keep file order */
    static const char *const keys[RT_N_KV] = {"t.u32",     "t.i32", "t.f32",    "t.bool",     "t.str", "t.arr_str",
                                              "t.arr_i32", "t.u8",  "t.i8",     "t.u16",      "t.i16", "t.u64",
                                              "t.i64",     "t.f64", "t.nested", "t.raw_strs", "t.u16s"};
    static const uint32_t types[RT_N_KV] = {
        GGUF_TYPE_U32,   GGUF_TYPE_I32, GGUF_TYPE_F32,   GGUF_TYPE_BOOL,  GGUF_TYPE_STRING, GGUF_TYPE_ARRAY,
        GGUF_TYPE_ARRAY, GGUF_TYPE_U8,  GGUF_TYPE_I8,    GGUF_TYPE_U16,   GGUF_TYPE_I16,    GGUF_TYPE_U64,
        GGUF_TYPE_I64,   GGUF_TYPE_F64, GGUF_TYPE_ARRAY, GGUF_TYPE_ARRAY, GGUF_TYPE_ARRAY};
    for (int i = 0; i < RT_N_KV; i++) {
        assert_true(gguf_str_eq(g->kv[i].key, keys[i]));
        assert_int_equal(g->kv[i].type, types[i]);
        assert_ptr_equal(gguf_find(g, keys[i]), &g->kv[i]);
    }
    assert_null(gguf_find(g, "t.missing"));
    assert_null(gguf_find(g, "t.u3")); /* a prefix is not a match */

    /* scalars, raw and through the getters */
    uint32_t u32;
    int64_t i64;
    float f32;
    bool b;
    gguf_str_t s;
    assert_int_equal(gguf_get_u32(g, "t.u32", &u32, &err), 0);
    assert_int_equal(u32, 0xDEADBEEFu);
    assert_false(gguf_find(g, "t.u32")->is_signed);
    assert_int_equal(gguf_get_i64(g, "t.i32", &i64, &err), 0);
    assert_int_equal(i64, -123456);
    assert_true(gguf_find(g, "t.i32")->is_signed);
    assert_int_equal(gguf_get_f32(g, "t.f32", &f32, &err), 0);
    assert_true(f32 == 3.5f);
    assert_int_equal(gguf_get_bool(g, "t.bool", &b, &err), 0);
    assert_true(b);
    assert_int_equal(gguf_get_str(g, "t.str", &s, &err), 0);
    check_str(s, "h\xc3\xa9llo", 6);
    assert_int_equal(gguf_get_u32(g, "t.u8", &u32, &err), 0);
    assert_int_equal(u32, 0xAB);
    assert_int_equal(gguf_get_i64(g, "t.i8", &i64, &err), 0);
    assert_int_equal(i64, -5);
    assert_int_equal(gguf_get_u32(g, "t.u16", &u32, &err), 0);
    assert_int_equal(u32, 0xBEEF);
    assert_int_equal(gguf_get_i64(g, "t.i16", &i64, &err), 0);
    assert_int_equal(i64, -1234);
    assert_int_equal(gguf_get_i64(g, "t.u64", &i64, &err), 0);
    assert_int_equal(i64, 0x0123456789ABCDEFll);
    assert_int_equal(gguf_find(g, "t.u64")->num.u64, 0x0123456789ABCDEFull);
    assert_int_equal(gguf_get_i64(g, "t.i64", &i64, &err), 0);
    assert_true(i64 == -(INT64_C(1) << 40));
    assert_true(gguf_find(g, "t.f64")->num.f64 == 2.718281828459045);
    assert_int_equal(gguf_get_f32(g, "t.f64", &f32, &err), 0);
    assert_true(f32 == (float)2.718281828459045);

    /* arrays */
    const gguf_kv_t *a;
    assert_int_equal(gguf_get_arr(g, "t.arr_i32", GGUF_TYPE_I32, &a, &err), 0);
    assert_int_equal(a->arr_count, 3);
    assert_int_equal(a->arr_bytes, 12);
    assert_int_equal(gguf_arr_int(a, 0), 1);
    assert_int_equal(gguf_arr_int(a, 1), -2);
    assert_int_equal(gguf_arr_int(a, 2), 3);
    assert_int_equal(gguf_get_arr(g, "t.u16s", GGUF_TYPE_U16, &a, &err), 0);
    assert_int_equal(gguf_arr_int(a, 0), 65535);
    assert_int_equal(gguf_arr_int(a, 1), 7);

    assert_int_equal(gguf_get_arr(g, "t.arr_str", GGUF_TYPE_STRING, &a, &err), 0);
    assert_int_equal(a->arr_count, 3);
    gguf_str_iter_t it;
    gguf_str_iter_init(&it, a);
    for (int i = 0; i < 3; i++) {
        assert_true(gguf_str_iter_next(&it, &s));
        check_str(s, rt_strs[i], strlen(rt_strs[i]));
    }
    assert_false(gguf_str_iter_next(&it, &s));
    assert_int_equal(a->arr_bytes, 3 * 8 + 5 + 0 + 8);

    assert_int_equal(gguf_get_arr(g, "t.raw_strs", GGUF_TYPE_STRING, &a, &err), 0);
    gguf_str_iter_init(&it, a);
    assert_true(gguf_str_iter_next(&it, &s));
    check_str(s, "x\0y", 3);
    assert_true(gguf_str_iter_next(&it, &s));
    check_str(s, "zz", 2);
    assert_false(gguf_str_iter_next(&it, &s));

    assert_int_equal(gguf_get_arr(g, "t.nested", GGUF_TYPE_ARRAY, &a, &err), 0);
    assert_int_equal(a->arr_count, 3);
    assert_int_equal(a->arr_bytes, (12 + 8) + (12 + 4) + 12);
    uint32_t inner_type;
    uint64_t inner_count;
    int32_t v;
    memcpy(&inner_type, a->arr_data, 4);
    memcpy(&inner_count, a->arr_data + 4, 8);
    memcpy(&v, a->arr_data + 12 + 4, 4);
    assert_int_equal(inner_type, GGUF_TYPE_I32);
    assert_int_equal(inner_count, 2);
    assert_int_equal(v, 2);

    /* tensors: declaration order, shapes, types, offsets, sizes, bytes */
    for (int i = 0; i < RT_N_TENSORS; i++) {
        const rt_tensor_t *want = &rt_tensors[i];
        const gguf_tensor_t *t = &g->tensors[i];
        assert_string_equal(t->name, want->name);
        assert_ptr_equal(gguf_find_tensor(g, want->name), t);
        assert_int_equal(t->n_dims, want->n_dims);
        assert_int_equal(t->ne[0], want->ne[0]);
        assert_int_equal(t->ne[1], want->ne[1]);
        assert_int_equal(t->ne[2], 1);
        assert_int_equal(t->ne[3], 1);
        assert_int_equal(t->type, want->type);
        assert_int_equal(t->offset, want->offset);
        assert_int_equal(t->n_elements, want->ne[0] * want->ne[1]);
        assert_int_equal(t->n_bytes, want->n_bytes);
        assert_ptr_equal(t->data, g->base + g->data_offset + t->offset);
        assert_int_equal(((const uint8_t *)t->data - g->base) % g->alignment, 0);
        for (size_t j = 0; j < t->n_bytes; j++)
            assert_int_equal(((const uint8_t *)t->data)[j], pattern(i, j));
    }
    assert_null(gguf_find_tensor(g, "a.f3"));

    /* the data section starts at the first aligned offset after the last
     * tensor info; the file ends with the last tensor's bytes */
    const rt_tensor_t *last = &rt_tensors[RT_N_TENSORS - 1];
    const uint8_t *name = memmem(g->base, g->data_offset, last->name, strlen(last->name));
    assert_non_null(name);
    size_t info_end = (size_t)(name - g->base) + strlen(last->name) + 4 + (size_t)last->n_dims * 8 + 4 + 8;
    assert_int_equal(g->data_offset % GGUF_DEFAULT_ALIGNMENT, 0);
    assert_int_equal(g->data_offset,
                     (info_end + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT);
    for (size_t i = info_end; i < g->data_offset; i++)
        assert_int_equal(g->base[i], 0);
    assert_int_equal(g->size, g->data_offset + last->offset + last->n_bytes);
}

static void test_round_trip_memory(void **state)
{
    (void)state;
    gguf_writer_t *w = rt_writer();
    err_t err = {{0}};
    void *mem = NULL;
    size_t size = 0;
    if (gguf_writer_write_mem(w, &mem, &size, fill_pattern, NULL, &err))
        fail_msg("write_mem: %s", err.msg);
    gguf_writer_free(w);
    assert_memory_equal(mem, "GGUF", 4);

    void *copy;
    gguf_t *g = open_exact(mem, size, &copy, &err);
    if (!g)
        fail_msg("round trip rejected: %s", err.msg);
    assert_false(g->is_mapped);
    assert_int_equal(g->size, size);
    check_rt(g);
    gguf_close(g);
    free(copy);
    free(mem);
}

/* A file large enough that the read into huge-page memory runs in parts
 * on several threads (64 MB a part or more): every byte lands where the
 * file has it, at the parts' seams too. */
#define BIG_VALUES ((uint64_t)40 << 20) /* f32 values: 160 MB */

static int fill_big(void *ctx, int index, void *dst, size_t n_bytes, err_t *err)
{
    (void)ctx, (void)index;
    if (n_bytes != BIG_VALUES * 4)
        return err_set(err, "asked for %zu bytes", n_bytes);
    uint32_t *v = dst;
    for (uint64_t i = 0; i < BIG_VALUES; i++)
        v[i] = (uint32_t)(i * 2654435761u) & 0x3f7fffffu; /* finite floats */
    return 0;
}

static void test_large_file_read_in_parts(void **state)
{
    (void)state;
    char path[] = "/tmp/splash_test_gguf_big_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    err_t err = {{0}};
    gguf_writer_t *w = gguf_writer_new();
    assert_non_null(w);
    const int64_t ne[2] = {(int64_t)(BIG_VALUES / 1024), 1024};
    assert_int_equal(gguf_w_tensor(w, "big", TYPE_F32, 2, ne, &err), 0);
    if (gguf_writer_write(w, path, fill_big, NULL, &err))
        fail_msg("write: %s", err.msg);
    gguf_writer_free(w);
    gguf_t *g = gguf_open(path, &err);
    unlink(path);
    if (!g)
        fail_msg("open: %s", err.msg);
    /* (read in parts where the file is copied: THP present, memory to spare) */
    const gguf_tensor_t *t = gguf_find_tensor(g, "big");
    assert_non_null(t);
    const uint32_t *v = t->data;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < BIG_VALUES; i++)
        bad += v[i] != ((uint32_t)(i * 2654435761u) & 0x3f7fffffu);
    assert_int_equal(bad, 0);
    gguf_close(g);
}

static void test_round_trip_file(void **state)
{
    (void)state;
    char path[] = "/tmp/splash_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);

    err_t err = {{0}};
    gguf_writer_t *w = rt_writer();
    if (gguf_writer_write(w, path, fill_pattern, NULL, &err))
        fail_msg("write: %s", err.msg);
    void *mem = NULL;
    size_t size = 0;
    assert_int_equal(gguf_writer_write_mem(w, &mem, &size, fill_pattern, NULL, &err), 0);

    char partial[sizeof path + 16];
    snprintf(partial, sizeof partial, "%s.tmp-*", path);
    glob_t found;
    assert_int_equal(glob(partial, 0, NULL, &found), GLOB_NOMATCH); /* renamed into place */

    /* both ways of holding the file: read into huge-page memory (the
     * default where THP exists) and mapped (SPLASH_MMAP=1) */
    for (int mapped = 0; mapped < 2; mapped++) {
        if (mapped)
            setenv("SPLASH_MMAP", "1", 1);
        gguf_t *g = gguf_open(path, &err);
        unsetenv("SPLASH_MMAP");
        if (!g)
            fail_msg("gguf_open: %s", err.msg);
        assert_true(g->is_mapped);
        if (mapped)
            assert_false(g->is_huge_copy);
        if (g->is_huge_copy)
            assert_int_equal((uintptr_t)g->base % (2u << 20), 0); /* huge pages need 2 MB alignment */
        assert_int_equal(g->size, size);                          /* the file and the memory image are the same bytes */
        assert_memory_equal(g->base, mem, size);
        check_rt(g);
        gguf_close(g);
    }

    /* a failing fill leaves neither the file nor the partial behind */
    unlink(path);
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_writer_write(w, path, fill_fails, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "fill refused"));
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(glob(partial, 0, NULL, &found), GLOB_NOMATCH);
    memset(&err, 0, sizeof err);
    void *mem2 = NULL;
    assert_int_equal(gguf_writer_write_mem(w, &mem2, &size, fill_fails, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "fill refused"));
    gguf_writer_free(w);
    free(mem);
}

static void test_open_bad_paths(void **state)
{
    (void)state;
    err_t err;
    memset(&err, 0, sizeof err);
    assert_null(gguf_open(NULL, &err));
    assert_true(err.msg[0] != '\0');
    memset(&err, 0, sizeof err);
    assert_null(gguf_open("", &err));
    assert_true(err.msg[0] != '\0');
    memset(&err, 0, sizeof err);
    assert_null(gguf_open("/nonexistent-dir/model.gguf", &err));
    assert_non_null(strstr(err.msg, "/nonexistent-dir/model.gguf"));
    memset(&err, 0, sizeof err);
    assert_null(gguf_open("/tmp", &err));
    assert_non_null(strstr(err.msg, "not a regular file"));

    /* an empty file and a file that is only garbage name the path */
    char path[] = "/tmp/splash_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    memset(&err, 0, sizeof err);
    assert_null(gguf_open(path, &err));
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "empty"));
    assert_int_equal(write(fd, "GGUX\3\0\0\0", 8), 8);
    close(fd);
    memset(&err, 0, sizeof err);
    assert_null(gguf_open(path, &err));
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "magic"));
    unlink(path);

    /* the writer reports an unwritable path */
    gguf_writer_t *w = gguf_writer_new();
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_writer_write(w, "/nonexistent-dir/out.gguf", fill_pattern, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/out.gguf"));
    gguf_writer_free(w);
}

/* An empty file (no pairs, no tensors) is valid both ways. */
static void test_empty_file(void **state)
{
    (void)state;
    gguf_writer_t *w = gguf_writer_new();
    err_t err = {{0}};
    void *mem = NULL;
    size_t size = 0;
    assert_int_equal(gguf_writer_write_mem(w, &mem, &size, fill_pattern, NULL, &err), 0);
    gguf_writer_free(w);
    void *copy;
    gguf_t *g = open_exact(mem, size, &copy, &err);
    assert_non_null(g);
    assert_int_equal(g->n_kv, 0);
    assert_int_equal(g->n_tensors, 0);
    assert_null(gguf_find(g, "x"));
    assert_null(gguf_find_tensor(g, "x"));
    gguf_close(g);
    free(copy);
    free(mem);
}

static void test_writer_rejects(void **state)
{
    (void)state;
    gguf_writer_t *w = gguf_writer_new();
    err_t err;
    int64_t ne[5] = {32, 2, 1, 1, 1};
    char long_name[GGUF_MAX_NAME_LEN + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';

    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_w_tensor(w, "", TYPE_F32, 1, ne, &err), -1);
    assert_true(err.msg[0] != '\0');
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_w_tensor(w, long_name, TYPE_F32, 1, ne, &err), -1);
    assert_true(err.msg[0] != '\0');
    long_name[GGUF_MAX_NAME_LEN] = '\0'; /* exactly the limit is fine */
    assert_int_equal(gguf_w_tensor(w, long_name, TYPE_F32, 1, ne, &err), 0);
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_w_tensor(w, "w0", TYPE_F32, 0, ne, &err), -1);
    assert_non_null(strstr(err.msg, "w0"));
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_w_tensor(w, "w5", TYPE_F32, 5, ne, &err), -1);
    assert_non_null(strstr(err.msg, "w5"));
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_w_tensor(w, "wt", 4, 1, ne, &err), -1);
    assert_non_null(strstr(err.msg, "wt"));
    int64_t zero[2] = {32, 0};
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_w_tensor(w, "wz", TYPE_F32, 2, zero, &err), -1);
    assert_non_null(strstr(err.msg, "wz"));
    int64_t row48[1] = {48};
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_w_tensor(w, "wq", TYPE_Q8_0, 1, row48, &err), -1);
    assert_non_null(strstr(err.msg, "wq"));
    int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    memset(&err, 0, sizeof err);
    assert_int_equal(gguf_w_tensor(w, "wh", TYPE_F32, 2, huge, &err), -1);
    assert_non_null(strstr(err.msg, "wh"));
    gguf_writer_free(w);
}

/* ---- targeted defects ---------------------------------------------------- */

/* A small valid file to truncate: two pairs, one tensor. Offsets of
 * interesting places are returned. */
typedef struct small_file {
    bb_t f;
    size_t key1_at;   /* the second key's length field */
    size_t value1_at; /* the second pair's value */
    size_t tinfo_at;  /* the tensor info */
    size_t dims_at;   /* the tensor's first dimension */
} small_file_t;

static small_file_t small_file(void)
{
    small_file_t s = {0};
    bb_t kv = {0}, ti = {0};
    bb_key(&kv, "general.architecture", GGUF_TYPE_STRING), bb_str(&kv, "test");
    s.key1_at = 24 + kv.len;
    bb_key(&kv, "test.some_long_key_name", GGUF_TYPE_U64);
    s.value1_at = 24 + kv.len;
    bb_u64(&kv, 12345);
    s.tinfo_at = 24 + kv.len;
    s.dims_at = s.tinfo_at + 8 + strlen("weights.long_tensor_name") + 4;
    uint64_t ne[1] = {32};
    bb_tinfo(&ti, "weights.long_tensor_name", 1, ne, TYPE_F32, 0);
    s.f = assemble(1, 2, &kv, &ti, GGUF_DEFAULT_ALIGNMENT, 32 * 4);
    bb_free(&kv), bb_free(&ti);
    return s;
}

static void test_reject_header(void **state)
{
    (void)state;
    small_file_t s = small_file();
    expect_accept(&s.f);

    bb_t b = {0};
    bb_put(&b, s.f.p, s.f.len);
    b.p[3] = 'X';
    expect_reject(&b, "magic", NULL);
    b.p[3] = 'F';
    b.p[4] = 2;
    expect_reject(&b, "version 2", NULL);
    b.p[4] = 4;
    expect_reject(&b, "version 4", NULL);
    b.p[4] = 3;
    expect_accept(&b);

    /* absurd counts */
    uint64_t absurd = UINT64_C(1) << 60;
    memcpy(b.p + 16, &absurd, 8);
    expect_reject(&b, "metadata count", "offset");
    memcpy(b.p + 16, &(uint64_t){2}, 8);
    memcpy(b.p + 8, &absurd, 8);
    expect_reject(&b, "tensor count", "offset");
    memcpy(b.p + 8, &(uint64_t){GGUF_MAX_TENSORS + 1}, 8);
    expect_reject(&b, "tensor count", "offset");
    memcpy(b.p + 8, &(uint64_t){1}, 8);
    expect_accept(&b);

    /* truncated: in the magic, the header, a key, a value, a tensor info,
     * the data */
    expect_reject_n(s.f.p, 0, "magic", "offset");
    expect_reject_n(s.f.p, 2, "magic", "offset");
    expect_reject_n(s.f.p, 6, "version", "offset");
    expect_reject_n(s.f.p, 12, "tensor count", "offset");
    expect_reject_n(s.f.p, 20, "metadata count", "offset");
    expect_reject_n(s.f.p, s.key1_at + 4, "metadata key", "offset");
    expect_reject_n(s.f.p, s.key1_at + 12, "metadata key", "offset");
    expect_reject_n(s.f.p, s.value1_at + 2, "test.some_long_key_name", "offset");
    expect_reject_n(s.f.p, s.value1_at - 2, "test.some_long_key_name", "offset"); /* in the value type */
    expect_reject_n(s.f.p, s.tinfo_at + 12, "tensor name", "offset");
    expect_reject_n(s.f.p, s.dims_at + 3, "weights.long_tensor_name", "offset");
    expect_reject_n(s.f.p, s.f.len - 1, "weights.long_tensor_name", NULL);
    bb_free(&b);
    bb_free(&s.f);
}

/* One pair and nothing after it (no padding that could stand in for bytes
 * a defect leaves out); no tensors. */
static bb_t one_kv(const bb_t *kv)
{
    return assemble(0, 1, kv, NULL, 1, 0);
}

static void reject_kv(const bb_t *kv, const char *needle1, const char *needle2)
{
    bb_t f = one_kv(kv);
    expect_reject(&f, needle1, needle2);
    bb_free(&f);
}

static void accept_kv(const bb_t *kv)
{
    bb_t f = one_kv(kv);
    expect_accept(&f);
    bb_free(&f);
}

static void test_reject_values(void **state)
{
    (void)state;
    bb_t kv = {0};

    /* string length past the end, and absurd */
    bb_key(&kv, "k.str", GGUF_TYPE_STRING), bb_u64(&kv, 100), bb_put(&kv, "short", 5);
    reject_kv(&kv, "k.str", "offset");
    kv.len = 0;
    bb_key(&kv, "k.str", GGUF_TYPE_STRING), bb_u64(&kv, UINT64_MAX);
    reject_kv(&kv, "k.str", "offset");
    kv.len = 0;
    bb_key(&kv, "k.str", GGUF_TYPE_STRING), bb_str(&kv, "exact");
    accept_kv(&kv);

    /* unknown value types */
    kv.len = 0;
    bb_key(&kv, "k.type", GGUF_TYPE_COUNT), bb_u64(&kv, 0);
    reject_kv(&kv, "k.type", NULL);
    kv.len = 0;
    bb_key(&kv, "k.type", 0xFFFFFFFFu), bb_u64(&kv, 0);
    reject_kv(&kv, "k.type", NULL);

    /* unknown array element type */
    kv.len = 0;
    bb_key(&kv, "k.arr", GGUF_TYPE_ARRAY), bb_u32(&kv, 13), bb_u64(&kv, 1), bb_u64(&kv, 0);
    reject_kv(&kv, "k.arr", NULL);

    /* count x element size overflowing 64 bits, or merely past the end */
    kv.len = 0;
    bb_key(&kv, "k.arr", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_U64), bb_u64(&kv, (UINT64_C(1) << 61) + 1);
    bb_u64(&kv, 0);
    reject_kv(&kv, "k.arr", NULL);
    kv.len = 0;
    bb_key(&kv, "k.arr", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_I32), bb_u64(&kv, UINT64_C(1) << 62);
    reject_kv(&kv, "k.arr", NULL);
    kv.len = 0;
    bb_key(&kv, "k.arr", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_I32), bb_u64(&kv, 3), bb_u32(&kv, 1);
    bb_u32(&kv, 2);
    reject_kv(&kv, "k.arr", "offset");
    kv.len = 0;
    bb_key(&kv, "k.arr", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_STRING), bb_u64(&kv, UINT64_C(1) << 60);
    bb_str(&kv, "a");
    reject_kv(&kv, "k.arr", NULL);
    kv.len = 0;
    bb_key(&kv, "k.arr", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_STRING), bb_u64(&kv, 2), bb_str(&kv, "a");
    bb_u64(&kv, 1000), bb_put(&kv, "b", 1);
    reject_kv(&kv, "k.arr", NULL);
    kv.len = 0;
    bb_key(&kv, "k.arr", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_ARRAY), bb_u64(&kv, UINT64_C(1) << 60);
    reject_kv(&kv, "k.arr", NULL);

    /* nesting: exactly GGUF_MAX_ARRAY_DEPTH levels pass, one more fails */
    for (int levels = GGUF_MAX_ARRAY_DEPTH; levels <= GGUF_MAX_ARRAY_DEPTH + 1; levels++) {
        kv.len = 0;
        bb_key(&kv, "k.deep", GGUF_TYPE_ARRAY);
        for (int l = 1; l <= levels; l++)
            bb_u32(&kv, l < levels ? GGUF_TYPE_ARRAY : GGUF_TYPE_I32), bb_u64(&kv, 1);
        bb_u32(&kv, 42);
        if (levels == GGUF_MAX_ARRAY_DEPTH)
            accept_kv(&kv);
        else
            reject_kv(&kv, "k.deep", "nested");
    }
    /* a nested array truncated in its header, and one with a bad inner type */
    kv.len = 0;
    bb_key(&kv, "k.nest", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_ARRAY), bb_u64(&kv, 1);
    bb_u32(&kv, GGUF_TYPE_I32), bb_u32(&kv, 0);
    reject_kv(&kv, "k.nest", "offset");
    kv.len = 0;
    bb_key(&kv, "k.nest", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_ARRAY), bb_u64(&kv, 1);
    bb_u32(&kv, 77), bb_u64(&kv, 0);
    reject_kv(&kv, "k.nest", NULL);

    /* bools are 0 or 1, as scalars and as elements */
    kv.len = 0;
    bb_key(&kv, "k.bool", GGUF_TYPE_BOOL), bb_u8(&kv, 2);
    reject_kv(&kv, "k.bool", NULL);
    kv.len = 0;
    bb_key(&kv, "k.bool", GGUF_TYPE_BOOL), bb_u8(&kv, 1);
    accept_kv(&kv);
    kv.len = 0;
    bb_key(&kv, "k.bools", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_BOOL), bb_u64(&kv, 3);
    bb_u8(&kv, 0), bb_u8(&kv, 1), bb_u8(&kv, 0xFF);
    reject_kv(&kv, "k.bools", NULL);

    /* scalar value cut short */
    kv.len = 0;
    bb_key(&kv, "k.f64", GGUF_TYPE_F64), bb_put(&kv, "abc", 3);
    reject_kv(&kv, "k.f64", "offset");
    bb_free(&kv);
}

static void test_reject_keys(void **state)
{
    (void)state;
    bb_t kv = {0};

    /* duplicate key */
    bb_kv_u32(&kv, "dup.key", 1), bb_kv_u32(&kv, "other", 2), bb_kv_u32(&kv, "dup.key", 3);
    bb_t f = assemble(0, 3, &kv, NULL, GGUF_DEFAULT_ALIGNMENT, 0);
    expect_reject(&f, "dup.key", "twice");
    bb_free(&f);
    /* keys that differ only in length or a last byte are distinct */
    kv.len = 0;
    bb_kv_u32(&kv, "dup.key", 1), bb_kv_u32(&kv, "dup.ke", 2), bb_kv_u32(&kv, "dup.kez", 3);
    f = assemble(0, 3, &kv, NULL, GGUF_DEFAULT_ALIGNMENT, 0);
    expect_accept(&f);
    bb_free(&f);

    /* embedded NUL, empty key, over-long key */
    kv.len = 0;
    bb_strn(&kv, "bad\0key", 7), bb_u32(&kv, GGUF_TYPE_U32), bb_u32(&kv, 1);
    reject_kv(&kv, "NUL", "offset");
    kv.len = 0;
    bb_strn(&kv, "", 0), bb_u32(&kv, GGUF_TYPE_U32), bb_u32(&kv, 1);
    reject_kv(&kv, "empty key", "offset");
    char long_key[GGUF_MAX_KEY_LEN + 2];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    kv.len = 0;
    bb_kv_u32(&kv, long_key, 1);
    reject_kv(&kv, "metadata key", "offset");
    long_key[GGUF_MAX_KEY_LEN] = '\0';
    kv.len = 0;
    bb_kv_u32(&kv, long_key, 1);
    accept_kv(&kv);
    bb_free(&kv);
}

/* A file with tensors given as infos and a data section of data_bytes. */
static void reject_tensors(uint64_t n, const bb_t *ti, size_t data_bytes, const char *needle1, const char *needle2)
{
    bb_t f = assemble(n, 0, NULL, ti, GGUF_DEFAULT_ALIGNMENT, data_bytes);
    expect_reject(&f, needle1, needle2);
    bb_free(&f);
}

static void accept_tensors(uint64_t n, const bb_t *ti, size_t data_bytes)
{
    bb_t f = assemble(n, 0, NULL, ti, GGUF_DEFAULT_ALIGNMENT, data_bytes);
    expect_accept(&f);
    bb_free(&f);
}

static void test_reject_tensors(void **state)
{
    (void)state;
    bb_t ti = {0};
    uint64_t ne[5] = {32, 2, 1, 1, 1};

    /* duplicate names (at distinct offsets) */
    bb_tinfo(&ti, "blk.0.w", 1, ne, TYPE_F32, 0), bb_tinfo(&ti, "blk.0.w", 1, ne, TYPE_F32, 128);
    reject_tensors(2, &ti, 256, "blk.0.w", "twice");
    ti.len = 0;
    bb_tinfo(&ti, "blk.0.w", 1, ne, TYPE_F32, 0), bb_tinfo(&ti, "blk.0.v", 1, ne, TYPE_F32, 128);
    accept_tensors(2, &ti, 256);

    /* overlapping: the second starts inside the first, and the same offset */
    ti.len = 0;
    bb_tinfo(&ti, "first", 1, ne, TYPE_F32, 0), bb_tinfo(&ti, "second", 1, ne, TYPE_F32, 96);
    reject_tensors(2, &ti, 256, "first", "second");
    ti.len = 0;
    bb_tinfo(&ti, "first", 1, ne, TYPE_F32, 64), bb_tinfo(&ti, "second", 1, ne, TYPE_F32, 64);
    reject_tensors(2, &ti, 256, "overlap", "offset");
    /* declared out of offset order but disjoint: fine */
    ti.len = 0;
    bb_tinfo(&ti, "first", 1, ne, TYPE_F32, 128), bb_tinfo(&ti, "second", 1, ne, TYPE_F32, 0);
    accept_tensors(2, &ti, 256);

    /* dimension counts 0 and 5; 4 is the most */
    for (uint32_t nd = 0; nd <= 5; nd++) {
        ti.len = 0;
        bb_tinfo(&ti, "dims.t", nd, ne, TYPE_F32, 0);
        if (nd >= 1 && nd <= GGUF_MAX_DIMS)
            accept_tensors(1, &ti, 256);
        else
            reject_tensors(1, &ti, 256, "dims.t", "dimensions");
    }

    /* a zero dimension, a dimension above 2^63-1, a product that overflows,
     * a byte size that overflows */
    uint64_t zero[2] = {32, 0};
    ti.len = 0;
    bb_tinfo(&ti, "zero.dim", 2, zero, TYPE_F32, 0);
    reject_tensors(1, &ti, 256, "zero.dim", NULL);
    uint64_t big[2] = {32, UINT64_C(1) << 63};
    ti.len = 0;
    bb_tinfo(&ti, "big.dim", 2, big, TYPE_F32, 0);
    reject_tensors(1, &ti, 256, "big.dim", NULL);
    uint64_t prod[3] = {UINT64_C(1) << 32, UINT64_C(1) << 32, 1};
    ti.len = 0;
    bb_tinfo(&ti, "prod.over", 2, prod, TYPE_F32, 0);
    reject_tensors(1, &ti, 256, "prod.over", "overflow");
    uint64_t prod4[4] = {UINT64_C(1) << 20, UINT64_C(1) << 20, UINT64_C(1) << 20, UINT64_C(1) << 4};
    ti.len = 0;
    bb_tinfo(&ti, "prod.over4", 4, prod4, TYPE_F32, 0);
    reject_tensors(1, &ti, 256, "prod.over4", "overflow");
    uint64_t bytes_over[1] = {UINT64_C(1) << 62};
    ti.len = 0;
    bb_tinfo(&ti, "bytes.over", 1, bytes_over, TYPE_F32, 0);
    reject_tensors(1, &ti, 256, "bytes.over", NULL);
    uint64_t too_big[2] = {UINT64_C(1) << 30, UINT64_C(1) << 10};
    ti.len = 0;
    bb_tinfo(&ti, "too.big", 2, too_big, TYPE_F32, 0);
    reject_tensors(1, &ti, 256, "too.big", NULL);

    /* unknown ggml type ids */
    uint32_t bad_types[] = {4, 5, 31, TYPE_COUNT, 99, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        ti.len = 0;
        bb_tinfo(&ti, "bad.type", 1, ne, bad_types[i], 0);
        reject_tensors(1, &ti, 256, "bad.type", "type");
    }

    /* block-quantised rows must be whole blocks */
    uint64_t q_ne[2] = {48, 2};
    ti.len = 0;
    bb_tinfo(&ti, "q8.rows", 2, q_ne, TYPE_Q8_0, 0);
    reject_tensors(1, &ti, 256, "q8.rows", "block");
    q_ne[0] = 64;
    ti.len = 0;
    bb_tinfo(&ti, "q8.rows", 2, q_ne, TYPE_Q8_0, 0);
    accept_tensors(1, &ti, 2 * 2 * 34);

    /* offsets: unaligned, past the end, data running past the end */
    ti.len = 0;
    bb_tinfo(&ti, "unaligned", 1, ne, TYPE_F32, 16);
    reject_tensors(1, &ti, 256, "unaligned", "offset");
    ti.len = 0;
    bb_tinfo(&ti, "far.away", 1, ne, TYPE_F32, UINT64_C(1) << 62);
    reject_tensors(1, &ti, 256, "far.away", "offset");
    ti.len = 0;
    bb_tinfo(&ti, "past.end", 1, ne, TYPE_F32, 0);
    reject_tensors(1, &ti, 127, "past.end", "offset");
    accept_tensors(1, &ti, 128);
    ti.len = 0;
    bb_tinfo(&ti, "past.end", 1, ne, TYPE_F32, 160);
    reject_tensors(1, &ti, 256, "past.end", "offset");
    /* no data section at all */
    ti.len = 0;
    bb_tinfo(&ti, "no.data", 1, ne, TYPE_F32, 0);
    bb_t f = assemble(1, 0, NULL, &ti, 1, 0);
    expect_reject(&f, "offset", NULL);
    bb_free(&f);

    /* names: over-long, exactly the limit, empty, with a NUL */
    char name[GGUF_MAX_NAME_LEN + 2];
    memset(name, 't', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    ti.len = 0;
    bb_tinfo(&ti, name, 1, ne, TYPE_F32, 0);
    reject_tensors(1, &ti, 256, "tensor name", "offset");
    name[GGUF_MAX_NAME_LEN] = '\0';
    ti.len = 0;
    bb_tinfo(&ti, name, 1, ne, TYPE_F32, 0);
    accept_tensors(1, &ti, 256);
    ti.len = 0;
    bb_tinfo(&ti, "", 1, ne, TYPE_F32, 0);
    reject_tensors(1, &ti, 256, "name", "offset");
    ti.len = 0;
    bb_strn(&ti, "nul\0name", 8), bb_u32(&ti, 1), bb_u64(&ti, 32), bb_u32(&ti, TYPE_F32), bb_u64(&ti, 0);
    reject_tensors(1, &ti, 256, "NUL", "offset");
    bb_free(&ti);
}

static void test_alignment(void **state)
{
    (void)state;
    uint64_t ne[1] = {8};

    /* wrong type, and bad values */
    bb_t kv = {0}, ti = {0};
    bb_tinfo(&ti, "t", 1, ne, TYPE_F32, 0);
    bb_key(&kv, "general.alignment", GGUF_TYPE_U64), bb_u64(&kv, 32);
    bb_t f = assemble(1, 1, &kv, &ti, 32, 64);
    expect_reject(&f, "general.alignment", "u64");
    bb_free(&f);
    kv.len = 0;
    bb_key(&kv, "general.alignment", GGUF_TYPE_I32), bb_u32(&kv, 32);
    f = assemble(1, 1, &kv, &ti, 32, 64);
    expect_reject(&f, "general.alignment", NULL);
    bb_free(&f);
    kv.len = 0;
    bb_key(&kv, "general.alignment", GGUF_TYPE_STRING), bb_str(&kv, "32");
    f = assemble(1, 1, &kv, &ti, 32, 64);
    expect_reject(&f, "general.alignment", NULL);
    bb_free(&f);
    uint32_t bad[] = {0, 1, 3, 4, 12, 48, GGUF_MAX_ALIGNMENT * 2, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kv.len = 0;
        bb_kv_u32(&kv, "general.alignment", bad[i]);
        f = assemble(1, 1, &kv, &ti, 32, 64);
        expect_reject(&f, "general.alignment", NULL);
        bb_free(&f);
    }

    /* good values: the data section and every tensor follow them */
    uint32_t good[] = {8, 16, 64, 256};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint32_t a = good[i];
        kv.len = 0;
        ti.len = 0;
        bb_kv_u32(&kv, "general.alignment", a);
        bb_tinfo(&ti, "t0", 1, ne, TYPE_F32, 0);
        bb_tinfo(&ti, "t1", 1, ne, TYPE_F32, a > 32 ? a : 32);
        f = assemble(2, 1, &kv, &ti, a, (a > 32 ? a : 32) + 32);
        void *copy;
        err_t err;
        gguf_t *g = open_exact(f.p, f.len, &copy, &err);
        if (!g)
            fail_msg("alignment %u rejected: %s", a, err.msg);
        assert_int_equal(g->alignment, a);
        assert_int_equal(g->data_offset % a, 0);
        assert_true(g->data_offset <= f.len);
        assert_true(g->data_offset >= 24 + kv.len + ti.len);
        assert_true(g->data_offset < 24 + kv.len + ti.len + a);
        assert_int_equal(((const uint8_t *)g->tensors[1].data - g->base) % a, 0);
        gguf_close(g);
        free(copy);
        bb_free(&f);
        /* and an offset that is aligned to 32 but not to a */
        if (a == 64) {
            ti.len = 0;
            bb_tinfo(&ti, "t0", 1, ne, TYPE_F32, 0);
            bb_tinfo(&ti, "misaligned", 1, ne, TYPE_F32, 32);
            f = assemble(2, 1, &kv, &ti, a, 128);
            expect_reject(&f, "misaligned", "offset");
            bb_free(&f);
        }
    }
    bb_free(&kv);
    bb_free(&ti);
}

static void test_getters(void **state)
{
    (void)state;
    bb_t kv = {0};
    bb_key(&kv, "g.str", GGUF_TYPE_STRING), bb_str(&kv, "text");
    bb_key(&kv, "g.neg", GGUF_TYPE_I32), bb_u32(&kv, (uint32_t)-7);
    bb_key(&kv, "g.big", GGUF_TYPE_U64), bb_u64(&kv, (uint64_t)UINT32_MAX + 1);
    bb_key(&kv, "g.huge", GGUF_TYPE_U64), bb_u64(&kv, UINT64_MAX);
    bb_key(&kv, "g.max", GGUF_TYPE_U64), bb_u64(&kv, UINT32_MAX);
    bb_key(&kv, "g.int", GGUF_TYPE_U32), bb_u32(&kv, 5);
    bb_key(&kv, "g.arr", GGUF_TYPE_ARRAY), bb_u32(&kv, GGUF_TYPE_I32), bb_u64(&kv, 1), bb_u32(&kv, 9);
    bb_key(&kv, "g.u8", GGUF_TYPE_U8), bb_u8(&kv, 1);
    bb_key(&kv, "g.f32", GGUF_TYPE_F32), bb_put(&kv, &(float){NAN}, 4);
    bb_t f = assemble(0, 9, &kv, NULL, GGUF_DEFAULT_ALIGNMENT, 0);
    void *copy;
    err_t err;
    gguf_t *g = open_exact(f.p, f.len, &copy, &err);
    if (!g)
        fail_msg("getter file rejected: %s", err.msg);

    uint32_t u32 = 77;
    int64_t i64 = 77;
    float f32;
    bool b;
    gguf_str_t s;
    const gguf_kv_t *a;
#define EXPECT_FAIL(call, key)                                                                                         \
    do {                                                                                                               \
        memset(&err, 0, sizeof err);                                                                                   \
        assert_int_equal((call), -1);                                                                                  \
        if (!strstr(err.msg, "'" key "'"))                                                                             \
            fail_msg("%s: message \"%s\" does not name %s", #call, err.msg, key);                                      \
    } while (0)
    EXPECT_FAIL(gguf_get_u32(g, "g.missing", &u32, &err), "g.missing");
    assert_non_null(strstr(err.msg, "missing"));
    EXPECT_FAIL(gguf_get_u32(g, "g.str", &u32, &err), "g.str");
    EXPECT_FAIL(gguf_get_u32(g, "g.neg", &u32, &err), "g.neg");
    EXPECT_FAIL(gguf_get_u32(g, "g.big", &u32, &err), "g.big");
    EXPECT_FAIL(gguf_get_u32(g, "g.huge", &u32, &err), "g.huge");
    EXPECT_FAIL(gguf_get_i64(g, "g.huge", &i64, &err), "g.huge");
    EXPECT_FAIL(gguf_get_i64(g, "g.f32", &i64, &err), "g.f32");
    EXPECT_FAIL(gguf_get_i64(g, "g.arr", &i64, &err), "g.arr");
    assert_int_equal(u32, 77); /* failures leave the output alone */
    assert_int_equal(i64, 77);
    EXPECT_FAIL(gguf_get_f32(g, "g.int", &f32, &err), "g.int");
    EXPECT_FAIL(gguf_get_f32(g, "g.missing", &f32, &err), "g.missing");
    EXPECT_FAIL(gguf_get_bool(g, "g.u8", &b, &err), "g.u8");
    EXPECT_FAIL(gguf_get_str(g, "g.arr", &s, &err), "g.arr");
    EXPECT_FAIL(gguf_get_arr(g, "g.arr", GGUF_TYPE_U32, &a, &err), "g.arr");
    EXPECT_FAIL(gguf_get_arr(g, "g.arr", GGUF_TYPE_STRING, &a, &err), "g.arr");
    EXPECT_FAIL(gguf_get_arr(g, "g.int", GGUF_TYPE_U32, &a, &err), "g.int");
    EXPECT_FAIL(gguf_get_arr(g, "g.missing", GGUF_TYPE_I32, &a, &err), "g.missing");
#undef EXPECT_FAIL

    /* the edges that fit */
    assert_int_equal(gguf_get_u32(g, "g.max", &u32, &err), 0);
    assert_int_equal(u32, UINT32_MAX);
    assert_int_equal(gguf_get_i64(g, "g.neg", &i64, &err), 0);
    assert_int_equal(i64, -7);
    assert_int_equal(gguf_get_i64(g, "g.big", &i64, &err), 0);
    assert_int_equal(i64, (int64_t)UINT32_MAX + 1);
    assert_int_equal(gguf_get_f32(g, "g.f32", &f32, &err), 0);
    assert_true(isnan(f32));
    assert_int_equal(gguf_get_arr(g, "g.arr", GGUF_TYPE_I32, &a, &err), 0);
    assert_int_equal(gguf_arr_int(a, 0), 9);
    gguf_close(g);
    free(copy);
    bb_free(&f);
    bb_free(&kv);
}

static void test_type_tables(void **state)
{
    (void)state;
    assert_string_equal(gguf_vtype_name(GGUF_TYPE_U8), "u8");
    assert_string_equal(gguf_vtype_name(GGUF_TYPE_F64), "f64");
    assert_string_equal(gguf_vtype_name(GGUF_TYPE_COUNT), "unknown");
    assert_string_equal(gguf_vtype_name(0xFFFFFFFFu), "unknown");
    static const size_t sizes[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    for (uint32_t t = 0; t < GGUF_TYPE_COUNT; t++)
        assert_int_equal(gguf_vtype_size(t), sizes[t]);
    assert_int_equal(gguf_vtype_size(GGUF_TYPE_COUNT), 0);
    gguf_str_t s = {"abc", 3};
    assert_true(gguf_str_eq(s, "abc"));
    assert_false(gguf_str_eq(s, "ab"));
    assert_false(gguf_str_eq(s, "abcd"));
    gguf_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_tables),     cmocka_unit_test(test_round_trip_memory),
        cmocka_unit_test(test_round_trip_file), cmocka_unit_test(test_large_file_read_in_parts),
        cmocka_unit_test(test_open_bad_paths),  cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_writer_rejects),  cmocka_unit_test(test_reject_header),
        cmocka_unit_test(test_reject_values),   cmocka_unit_test(test_reject_keys),
        cmocka_unit_test(test_reject_tensors),  cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_getters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
