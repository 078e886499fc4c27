#include "model/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/pool.h"
#include "base/sysmem.h"
#include "kernels/types.h"

/* A bounds-checked read cursor over the file. */
typedef struct cursor {
    const uint8_t *base;
    size_t size;
    size_t pos;
    err_t *err;
} cursor_t;

static const char *const vtype_names[GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

const char *gguf_vtype_name(uint32_t type)
{
    return type < GGUF_TYPE_COUNT ? vtype_names[type] : "unknown";
}

size_t gguf_vtype_size(uint32_t type)
{
    static const size_t sizes[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < GGUF_TYPE_COUNT ? sizes[type] : 0;
}

static int need(cursor_t *c, size_t n, const char *what)
{
    if (n > c->size - c->pos)
        return err_set(c->err, "truncated at offset %zu: %s needs %zu bytes, %zu left", c->pos, what, n,
                       c->size - c->pos);
    return 0;
}

static int read_bytes(cursor_t *c, void *dst, size_t n, const char *what)
{
    if (need(c, n, what))
        return -1;
    memcpy(dst, c->base + c->pos, n);
    c->pos += n;
    return 0;
}

static int read_u32(cursor_t *c, uint32_t *v, const char *what)
{
    return read_bytes(c, v, sizeof *v, what);
}

static int read_u64(cursor_t *c, uint64_t *v, const char *what)
{
    return read_bytes(c, v, sizeof *v, what);
}

static int read_str(cursor_t *c, gguf_str_t *s, uint64_t max_len, const char *what)
{
    uint64_t len;
    size_t at = c->pos;
    if (read_u64(c, &len, what))
        return -1;
    if (len > max_len)
        return err_set(c->err, "%s at offset %zu is %" PRIu64 " bytes long (limit %" PRIu64 ")", what, at, len,
                       max_len);
    if (need(c, (size_t)len, what))
        return -1;
    s->ptr = (const char *)c->base + c->pos;
    s->len = len;
    c->pos += (size_t)len;
    return 0;
}

/* Skips over (and validates) the elements of an array; recursion is bounded
 * by GGUF_MAX_ARRAY_DEPTH. */
static int skip_array(cursor_t *c, uint32_t elem_type, uint64_t count, int depth, const char *key)
{
    if (elem_type >= GGUF_TYPE_COUNT)
        return err_set(c->err, "key '%s': array element type %u is not a GGUF value type", key, elem_type);
    size_t elem = gguf_vtype_size(elem_type);
    if (elem) {
        uint64_t bytes;
        if (__builtin_mul_overflow(count, (uint64_t)elem, &bytes) || bytes > c->size - c->pos)
            return err_set(c->err,
                           "key '%s': array of %" PRIu64 " %s values at offset %zu runs past the end of the file", key,
                           count, vtype_names[elem_type], c->pos);
        c->pos += (size_t)bytes;
        if (elem_type == GGUF_TYPE_BOOL) {
            for (uint64_t i = 0; i < count; i++)
                if (c->base[c->pos - (size_t)bytes + (size_t)i] > 1)
                    return err_set(c->err, "key '%s': bool element %" PRIu64 " is not 0 or 1", key, i);
        }
        return 0;
    }
    /* Variable-size elements take at least 8 bytes each: reject absurd counts
     * before looping over them. */
    if (count > (c->size - c->pos) / 8)
        return err_set(c->err, "key '%s': array count %" PRIu64 " at offset %zu exceeds what the file can hold", key,
                       count, c->pos);
    for (uint64_t i = 0; i < count; i++) {
        if (elem_type == GGUF_TYPE_STRING) {
            gguf_str_t s;
            if (read_str(c, &s, UINT64_MAX, "array string"))
                return err_prefix(c->err, "key '%s', element %" PRIu64 ": ", key, i);
        } else { /* nested array */
            if (depth + 1 >= GGUF_MAX_ARRAY_DEPTH)
                return err_set(c->err, "key '%s': arrays nested deeper than %d", key, GGUF_MAX_ARRAY_DEPTH);
            uint32_t t;
            uint64_t n;
            if (read_u32(c, &t, "nested array type") || read_u64(c, &n, "nested array count"))
                return err_prefix(c->err, "key '%s': ", key);
            if (skip_array(c, t, n, depth + 1, key))
                return -1;
        }
    }
    return 0;
}

static int read_kv(cursor_t *c, gguf_kv_t *kv, uint64_t index)
{
    char key[GGUF_MAX_KEY_LEN + 1];
    size_t at = c->pos;
    if (read_str(c, &kv->key, GGUF_MAX_KEY_LEN, "metadata key"))
        return err_prefix(c->err, "metadata pair %" PRIu64 ": ", index);
    if (kv->key.len == 0)
        return err_set(c->err, "metadata pair %" PRIu64 " at offset %zu has an empty key", index, at);
    memcpy(key, kv->key.ptr, (size_t)kv->key.len);
    key[kv->key.len] = '\0';
    if (strlen(key) != kv->key.len)
        return err_set(c->err, "metadata pair %" PRIu64 " at offset %zu: key contains a NUL byte", index, at);
    if (read_u32(c, &kv->type, "value type"))
        return err_prefix(c->err, "key '%s': ", key);
    if (kv->type >= GGUF_TYPE_COUNT)
        return err_set(c->err, "key '%s': value type %u is not a GGUF value type", key, kv->type);

    switch (kv->type) {
    case GGUF_TYPE_STRING:
        if (read_str(c, &kv->str, UINT64_MAX, "string value"))
            return err_prefix(c->err, "key '%s': ", key);
        return 0;
    case GGUF_TYPE_ARRAY: {
        if (read_u32(c, &kv->arr_type, "array type") || read_u64(c, &kv->arr_count, "array count"))
            return err_prefix(c->err, "key '%s': ", key);
        size_t start = c->pos;
        if (skip_array(c, kv->arr_type, kv->arr_count, 0, key))
            return -1;
        kv->arr_data = c->base + start;
        kv->arr_bytes = c->pos - start;
        return 0;
    }
    default: break;
    }
    uint8_t raw[8] = {0};
    size_t n = gguf_vtype_size(kv->type);
    if (read_bytes(c, raw, n, "value"))
        return err_prefix(c->err, "key '%s': ", key);
    switch (kv->type) {
    case GGUF_TYPE_U8: kv->num.u64 = raw[0]; break;
    case GGUF_TYPE_I8:
        kv->num.i64 = (int8_t)raw[0];
        kv->is_signed = true;
        break;
    case GGUF_TYPE_U16: {
        uint16_t v;
        memcpy(&v, raw, 2);
        kv->num.u64 = v;
        break;
    }
    case GGUF_TYPE_I16: {
        int16_t v;
        memcpy(&v, raw, 2);
        kv->num.i64 = v;
        kv->is_signed = true;
        break;
    }
    case GGUF_TYPE_U32: {
        uint32_t v;
        memcpy(&v, raw, 4);
        kv->num.u64 = v;
        break;
    }
    case GGUF_TYPE_I32: {
        int32_t v;
        memcpy(&v, raw, 4);
        kv->num.i64 = v;
        kv->is_signed = true;
        break;
    }
    case GGUF_TYPE_U64: memcpy(&kv->num.u64, raw, 8); break;
    case GGUF_TYPE_I64:
        memcpy(&kv->num.i64, raw, 8);
        kv->is_signed = true;
        break;
    case GGUF_TYPE_F32: {
        float v;
        memcpy(&v, raw, 4);
        kv->num.f64 = v;
        break;
    }
    case GGUF_TYPE_F64: memcpy(&kv->num.f64, raw, 8); break;
    case GGUF_TYPE_BOOL:
        if (raw[0] > 1)
            return err_set(c->err, "key '%s': bool value %u is not 0 or 1", key, raw[0]);
        kv->num.u64 = raw[0];
        break;
    default: break;
    }
    return 0;
}

static int read_tensor_info(cursor_t *c, gguf_tensor_t *t, uint64_t index)
{
    gguf_str_t name;
    size_t at = c->pos;
    if (read_str(c, &name, GGUF_MAX_NAME_LEN, "tensor name"))
        return err_prefix(c->err, "tensor info %" PRIu64 ": ", index);
    memcpy(t->name, name.ptr, (size_t)name.len);
    t->name[name.len] = '\0';
    if (name.len == 0 || strlen(t->name) != name.len)
        return err_set(c->err, "tensor info %" PRIu64 " at offset %zu: name is empty or contains a NUL byte", index,
                       at);
    if (read_u32(c, &t->n_dims, "tensor dimension count"))
        return err_prefix(c->err, "tensor '%s': ", t->name);
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return err_set(c->err, "tensor '%s': %u dimensions (must be 1 to %d)", t->name, t->n_dims, GGUF_MAX_DIMS);
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        uint64_t ne = 1;
        if (d < t->n_dims && read_u64(c, &ne, "tensor dimension"))
            return err_prefix(c->err, "tensor '%s': ", t->name);
        if (ne == 0 || ne > INT64_MAX)
            return err_set(c->err, "tensor '%s': dimension %u is %" PRIu64 " (must be 1 to 2^63-1)", t->name, d, ne);
        t->ne[d] = (int64_t)ne;
        if (__builtin_mul_overflow(n_elements, t->ne[d], &n_elements))
            return err_set(c->err, "tensor '%s': element count overflows 64 bits", t->name);
    }
    t->n_elements = n_elements;
    if (read_u32(c, &t->type, "tensor type") || read_u64(c, &t->offset, "tensor offset"))
        return err_prefix(c->err, "tensor '%s': ", t->name);
    const type_traits_t *tt = type_traits(t->type);
    if (!tt)
        return err_set(c->err, "tensor '%s': type id %u is not a known ggml type", t->name, t->type);
    if (t->ne[0] % tt->block_size != 0)
        return err_set(c->err, "tensor '%s': row length %" PRId64 " is not a multiple of the %s block size %" PRId64,
                       t->name, t->ne[0], tt->name, tt->block_size);
    if (!type_row_bytes(t->type, n_elements, &t->n_bytes))
        return err_set(c->err, "tensor '%s': byte size of %" PRId64 " %s elements overflows", t->name, n_elements,
                       tt->name);
    return 0;
}

static int cmp_tensor_offset(const void *a, const void *b)
{
    const gguf_tensor_t *x = *(const gguf_tensor_t *const *)a, *y = *(const gguf_tensor_t *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int cmp_tensor_name(const void *a, const void *b)
{
    const gguf_tensor_t *x = *(const gguf_tensor_t *const *)a, *y = *(const gguf_tensor_t *const *)b;
    return strcmp(x->name, y->name);
}

static int cmp_kv_key(const void *a, const void *b)
{
    const gguf_kv_t *x = *(const gguf_kv_t *const *)a, *y = *(const gguf_kv_t *const *)b;
    uint64_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
    int r = memcmp(x->key.ptr, y->key.ptr, (size_t)n);
    if (r)
        return r;
    return x->key.len < y->key.len ? -1 : x->key.len > y->key.len;
}

/* No two keys alike, no two tensor names alike, no two tensors' bytes overlapping. */
static int check_unique(gguf_t *g, err_t *err)
{
    uint64_t n_max = g->n_kv > g->n_tensors ? g->n_kv : g->n_tensors;
    if (n_max < 2)
        return 0;
    const void **order = malloc((size_t)n_max * sizeof *order);
    if (!order)
        return err_set(err, "out of memory checking the file's tables");
    int rc = 0;
    for (uint64_t i = 0; i < g->n_kv; i++)
        order[i] = &g->kv[i];
    qsort(order, (size_t)g->n_kv, sizeof *order, cmp_kv_key);
    for (uint64_t i = 1; i < g->n_kv && !rc; i++) {
        if (cmp_kv_key(&order[i - 1], &order[i]) == 0) {
            const gguf_kv_t *kv = order[i];
            rc = err_set(err, "metadata key '%.*s' appears twice", (int)kv->key.len, kv->key.ptr);
        }
    }
    for (uint64_t i = 0; i < g->n_tensors && !rc; i++)
        order[i] = &g->tensors[i];
    if (!rc)
        qsort(order, (size_t)g->n_tensors, sizeof *order, cmp_tensor_name);
    for (uint64_t i = 1; i < g->n_tensors && !rc; i++) {
        if (cmp_tensor_name(&order[i - 1], &order[i]) == 0)
            rc = err_set(err, "tensor '%s' appears twice", ((const gguf_tensor_t *)order[i])->name);
    }
    if (!rc)
        qsort(order, (size_t)g->n_tensors, sizeof *order, cmp_tensor_offset);
    for (uint64_t i = 1; i < g->n_tensors && !rc; i++) {
        const gguf_tensor_t *a = order[i - 1], *b = order[i];
        if (a->offset + a->n_bytes > b->offset) /* both ends already checked against the file size */
            rc = err_set(err, "tensors '%s' and '%s' overlap (offsets %" PRIu64 " and %" PRIu64 ")", a->name, b->name,
                         a->offset, b->offset);
    }
    free(order);
    return rc;
}

static int parse(gguf_t *g, err_t *err)
{
    cursor_t c = {g->base, g->size, 0, err};
    char magic[4];
    if (read_bytes(&c, magic, 4, "magic"))
        return -1;
    if (memcmp(magic, GGUF_MAGIC, 4) != 0)
        return err_set(err, "not a GGUF file (magic bytes at offset 0 are not \"GGUF\")");
    if (read_u32(&c, &g->version, "version"))
        return -1;
    if (g->version != GGUF_VERSION)
        return err_set(err, "GGUF version %u is not supported (only version %d)", g->version, GGUF_VERSION);
    if (read_u64(&c, &g->n_tensors, "tensor count") || read_u64(&c, &g->n_kv, "metadata count"))
        return -1;
    /* Each pair takes at least 13 bytes and each tensor info at least 25:
     * counts the rest of the file cannot hold are rejected before allocating. */
    size_t left = g->size - c.pos;
    if (g->n_kv > GGUF_MAX_KV || g->n_kv > left / 13)
        return err_set(err, "metadata count %" PRIu64 " at offset 16 is more than the file can hold", g->n_kv);
    if (g->n_tensors > GGUF_MAX_TENSORS || g->n_tensors > left / 25)
        return err_set(err, "tensor count %" PRIu64 " at offset 8 is more than the file can hold", g->n_tensors);

    g->kv = calloc(g->n_kv ? (size_t)g->n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors)
        return err_set(err, "out of memory reading the file's tables");
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (read_kv(&c, &g->kv[i], i))
            return -1;

    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv_t *al = gguf_find(g, "general.alignment");
    if (al) {
        if (al->type != GGUF_TYPE_U32)
            return err_set(err, "key 'general.alignment' has type %s, expected u32", gguf_vtype_name(al->type));
        uint64_t a = al->num.u64;
        if (a < 8 || a > GGUF_MAX_ALIGNMENT || (a & (a - 1)) || a % 8)
            return err_set(err, "key 'general.alignment' is %" PRIu64 " (must be a power of two from 8 to %u)", a,
                           GGUF_MAX_ALIGNMENT);
        g->alignment = (uint32_t)a;
    }

    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (read_tensor_info(&c, &g->tensors[i], i))
            return -1;
    size_t pad = (g->alignment - c.pos % g->alignment) % g->alignment;
    g->data_offset = c.pos + pad;
    if (g->n_tensors > 0 && g->data_offset > g->size)
        return err_set(err, "data section at offset %zu starts past the end of the file (%zu bytes)", g->data_offset,
                       g->size);

    size_t data_size = g->n_tensors > 0 ? g->size - g->data_offset : 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor_t *t = &g->tensors[i];
        if (t->offset % g->alignment)
            return err_set(err, "tensor '%s': offset %" PRIu64 " is not a multiple of the alignment %u", t->name,
                           t->offset, g->alignment);
        if (t->offset > data_size || t->n_bytes > data_size - t->offset)
            return err_set(err,
                           "tensor '%s': data at offset %" PRIu64 " with %zu bytes (%s, %" PRId64
                           " elements) runs past the end of the file",
                           t->name, t->offset, t->n_bytes, type_name(t->type), t->n_elements);
        t->data = g->base + g->data_offset + t->offset;
    }
    return check_unique(g, err);
}

gguf_t *gguf_open_memory(const void *data, size_t size, err_t *err)
{
    gguf_t *g = calloc(1, sizeof *g);
    if (!g) {
        err_set(err, "out of memory");
        return NULL;
    }
    g->base = data;
    g->size = size;
    if (parse(g, err)) {
        gguf_close(g);
        return NULL;
    }
    return g;
}

/* Whether to read the file into huge-page memory rather than map it: when
 * the kernel has transparent huge pages, SPLASH_MMAP is not set, and the
 * file takes at most half the memory available (a private copy cannot be
 * dropped under pressure the way mapped file pages can). */
static bool wants_copy(size_t size)
{
    const char *env = getenv("SPLASH_MMAP");
    if (env && *env && strcmp(env, "0"))
        return false;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128] = "";
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = 0;
        fclose(f);
    }
    if (!strstr(line, "[always]") && !strstr(line, "[madvise]"))
        return false;
    uint64_t avail, total;
    sysmem_host(&avail, &total);
    return avail > 0 && (uint64_t)size <= avail / 2;
}

/* Threads the read takes at most, and the least bytes a thread's part. */
#define READ_THREADS_MAX 4
#define READ_PART_MIN ((size_t)64 << 20)

/* One thread's part of the read: [lo, hi) of the file into m + lo. */
typedef struct read_part {
    int fd;
    uint8_t *m;
    size_t lo, hi;
    int rc;
} read_part_t;

static void *read_part(void *arg)
{
    read_part_t *p = arg;
    p->rc = 0;
    for (size_t got = p->lo; got < p->hi;) {
        ssize_t k = pread(p->fd, p->m + got, p->hi - got, (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            p->rc = -1;
            break;
        }
        got += (size_t)k;
    }
    return NULL;
}

/* The file read into read-only huge-page memory; NULL (nothing held) on
 * any failure, and the caller maps the file instead. The copy's time is
 * mostly the first touch of each new page (the kernel's zeroing and, in a
 * virtual machine, the host's fault), which runs side by side on separate
 * CPUs, so parts of 64 MB or more are read by up to READ_THREADS_MAX
 * threads at once (a part a thread cannot start for is read in line). */
static void *read_huge(int fd, size_t size)
{
    uint8_t *m = sysmem_huge_alloc(size);
    if (!m)
        return NULL;
    int n = pool_default_threads();
    n = n < READ_THREADS_MAX ? n : READ_THREADS_MAX;
    while (n > 1 && size / (size_t)n < READ_PART_MIN)
        n--;
    read_part_t part[READ_THREADS_MAX];
    pthread_t th[READ_THREADS_MAX];
    bool started[READ_THREADS_MAX] = {false};
    const size_t huge = (size_t)2 << 20;
    for (int i = 0; i < n; i++) { /* parts on 2 MB boundaries, the last to the end */
        part[i] = (read_part_t){fd, m, i ? (size / (size_t)n * (size_t)i) & ~(huge - 1) : 0, size, 0};
        if (i)
            part[i - 1].hi = part[i].lo;
    }
    for (int i = 1; i < n; i++)
        started[i] = pthread_create(&th[i], NULL, read_part, &part[i]) == 0;
    read_part(&part[0]);
    int rc = part[0].rc;
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            read_part(&part[i]);
        rc |= part[i].rc;
    }
    if (rc) {
        sysmem_huge_free(m, size);
        return NULL;
    }
    mprotect(m, size, PROT_READ); /* the weights stay read-only, as when mapped */
    return m;
}

gguf_t *gguf_open(const char *path, err_t *err)
{
    if (!path || !*path) {
        err_set(err, "no model path given");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err_set(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        err_set(err, "%s: not a regular file", path);
        return NULL;
    }
    if (st.st_size == 0) {
        close(fd);
        err_set(err, "%s: file is empty", path);
        return NULL;
    }
    bool is_copy = wants_copy((size_t)st.st_size);
    void *m = is_copy ? read_huge(fd, (size_t)st.st_size) : NULL;
    if (!m) {
        is_copy = false;
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    }
    if (!is_copy)
        close(fd);
    if (m == MAP_FAILED) {
        err_set(err, "%s: cannot map the file's %.1f MiB: %s", path, (double)st.st_size / 1048576.0, strerror(errno));
        return NULL;
    }
    gguf_t *g = gguf_open_memory(m, (size_t)st.st_size, err);
    if (!g) {
        if (is_copy)
            close(fd);
        munmap(m, (size_t)st.st_size);
        err_prefix(err, "%s: ", path);
        return NULL;
    }
    g->is_mapped = true;
    g->is_huge_copy = is_copy;
    g->copy_fd = fd;
    return g;
}

size_t gguf_release(gguf_t *g, const void *p, size_t n)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), base = (uintptr_t)g->base;
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + n) & ~(page - 1);
    if (!g->is_mapped || hi <= lo || lo < base || hi > base + g->size)
        return 0;
    size_t len = hi - lo;
    if (!g->is_huge_copy)
        return madvise((void *)lo, len, MADV_DONTNEED) == 0 ? len : 0;
    /* the copy starts 2 MB-aligned, so an address's offset into it is the
     * file offset, page-aligned as mmap wants */
    void *r = mmap((void *)lo, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, g->copy_fd, (off_t)(lo - base));
    return r == MAP_FAILED ? 0 : len;
}

void gguf_close(gguf_t *g)
{
    if (!g)
        return;
    if (g->is_huge_copy) {
        sysmem_huge_free((void *)g->base, g->size);
        close(g->copy_fd);
    } else if (g->is_mapped)
        munmap((void *)g->base, g->size);
    free(g->kv);
    free(g->tensors);
    free(g);
}

bool gguf_str_eq(gguf_str_t s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

const gguf_kv_t *gguf_find(const gguf_t *g, const char *key)
{
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (gguf_str_eq(g->kv[i].key, key))
            return &g->kv[i];
    return NULL;
}

const gguf_tensor_t *gguf_find_tensor(const gguf_t *g, const char *name)
{
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return &g->tensors[i];
    return NULL;
}

static const gguf_kv_t *find_required(const gguf_t *g, const char *key, err_t *err)
{
    const gguf_kv_t *kv = gguf_find(g, key);
    if (!kv)
        err_set(err, "metadata key '%s' is missing", key);
    return kv;
}

static bool is_int_type(uint32_t t)
{
    return t <= GGUF_TYPE_I32 || t == GGUF_TYPE_U64 || t == GGUF_TYPE_I64;
}

int gguf_get_i64(const gguf_t *g, const char *key, int64_t *out, err_t *err)
{
    const gguf_kv_t *kv = find_required(g, key, err);
    if (!kv)
        return -1;
    if (!is_int_type(kv->type))
        return err_set(err, "key '%s' has type %s, expected an integer", key, gguf_vtype_name(kv->type));
    if (!kv->is_signed && kv->num.u64 > INT64_MAX)
        return err_set(err, "key '%s' = %" PRIu64 " is too large", key, kv->num.u64);
    *out = kv->is_signed ? kv->num.i64 : (int64_t)kv->num.u64;
    return 0;
}

int gguf_get_u32(const gguf_t *g, const char *key, uint32_t *out, err_t *err)
{
    int64_t v;
    if (gguf_get_i64(g, key, &v, err))
        return -1;
    if (v < 0 || v > UINT32_MAX)
        return err_set(err, "key '%s' = %" PRId64 " is out of range for u32", key, v);
    *out = (uint32_t)v;
    return 0;
}

int gguf_get_f32(const gguf_t *g, const char *key, float *out, err_t *err)
{
    const gguf_kv_t *kv = find_required(g, key, err);
    if (!kv)
        return -1;
    if (kv->type != GGUF_TYPE_F32 && kv->type != GGUF_TYPE_F64)
        return err_set(err, "key '%s' has type %s, expected f32", key, gguf_vtype_name(kv->type));
    *out = (float)kv->num.f64;
    return 0;
}

int gguf_get_bool(const gguf_t *g, const char *key, bool *out, err_t *err)
{
    const gguf_kv_t *kv = find_required(g, key, err);
    if (!kv)
        return -1;
    if (kv->type != GGUF_TYPE_BOOL)
        return err_set(err, "key '%s' has type %s, expected bool", key, gguf_vtype_name(kv->type));
    *out = kv->num.u64 != 0;
    return 0;
}

int gguf_get_str(const gguf_t *g, const char *key, gguf_str_t *out, err_t *err)
{
    const gguf_kv_t *kv = find_required(g, key, err);
    if (!kv)
        return -1;
    if (kv->type != GGUF_TYPE_STRING)
        return err_set(err, "key '%s' has type %s, expected string", key, gguf_vtype_name(kv->type));
    *out = kv->str;
    return 0;
}

int gguf_get_arr(const gguf_t *g, const char *key, uint32_t elem_type, const gguf_kv_t **out, err_t *err)
{
    const gguf_kv_t *kv = find_required(g, key, err);
    if (!kv)
        return -1;
    if (kv->type != GGUF_TYPE_ARRAY || kv->arr_type != elem_type)
        return err_set(err, "key '%s' has type %s%s%s, expected array of %s", key, gguf_vtype_name(kv->type),
                       kv->type == GGUF_TYPE_ARRAY ? " of " : "",
                       kv->type == GGUF_TYPE_ARRAY ? gguf_vtype_name(kv->arr_type) : "", gguf_vtype_name(elem_type));
    *out = kv;
    return 0;
}

void gguf_str_iter_init(gguf_str_iter_t *it, const gguf_kv_t *arr)
{
    it->p = arr->arr_data;
    it->left = arr->arr_count;
}

bool gguf_str_iter_next(gguf_str_iter_t *it, gguf_str_t *out)
{
    if (it->left == 0)
        return false;
    uint64_t len;
    memcpy(&len, it->p, 8);
    out->ptr = (const char *)it->p + 8;
    out->len = len;
    it->p += 8 + len;
    it->left--;
    return true;
}

int64_t gguf_arr_int(const gguf_kv_t *arr, uint64_t i)
{
    const uint8_t *p = arr->arr_data + i * gguf_vtype_size(arr->arr_type);
    switch (arr->arr_type) {
    case GGUF_TYPE_U8: return p[0];
    case GGUF_TYPE_I8: return (int8_t)p[0];
    case GGUF_TYPE_U16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case GGUF_TYPE_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case GGUF_TYPE_U32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case GGUF_TYPE_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case GGUF_TYPE_U64: {
        uint64_t v;
        memcpy(&v, p, 8);
        return (int64_t)v;
    }
    case GGUF_TYPE_I64: {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    default: return 0;
    }
}

/* The bytes of one metadata pair as the file stores it (key length, key,
 * type, value), for copying unchanged. */
void gguf_kv_span(const gguf_kv_t *kv, const uint8_t **start, size_t *n)
{
    const uint8_t *p = (const uint8_t *)kv->key.ptr - sizeof(uint64_t);
    const uint8_t *end;
    if (kv->type == GGUF_TYPE_STRING)
        end = (const uint8_t *)kv->str.ptr + kv->str.len;
    else if (kv->type == GGUF_TYPE_ARRAY)
        end = kv->arr_data + kv->arr_bytes;
    else
        end = (const uint8_t *)kv->key.ptr + kv->key.len + sizeof(uint32_t) + gguf_vtype_size(kv->type);
    *start = p;
    *n = (size_t)(end - p);
}
