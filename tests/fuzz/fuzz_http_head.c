/* Fuzz target: the HTTP request head parser (server/http_parse.c) over
 * arbitrary bytes, as the connection layer calls it: blank lines skipped,
 * the head's end found, the head parsed in place; the rest of the input is
 * read as chunk-size lines. Checks: a refusal has a 4xx/5xx status and a
 * message; an accepted head is consistent (HTTP/1.0 or 1.1, a method and a
 * path, never both a length and chunked, its fields within the limit, every
 * field name a non-empty string without a colon), and its decoded path is
 * no longer than its target. */
#include "fuzz_common.h"
#include "server/http_parse.h"

static void check_head(const http_head_t *h)
{
    if (h->minor != 0 && h->minor != 1)
        abort();
    if (!h->method || !*h->method || !h->target || !h->path || strlen(h->path) > strlen(h->target) + 1)
        abort();
    if (h->has_length && h->is_chunked)
        abort(); /* a smuggling shape got through */
    if (h->n_fields < 0 || h->n_fields > HTTP_MAX_HEADERS)
        abort();
    for (int i = 0; i < h->n_fields; i++)
        if (!*h->fields[i].name || strchr(h->fields[i].name, ':') || !h->fields[i].value)
            abort();
    if (h->minor == 1 && !http_head_field(h, "Host"))
        abort(); /* HTTP/1.1 requires one */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    size_t skip = http_skip_blank(in, size);
    if (skip > size)
        abort();
    size_t end = http_head_end(in + skip, size - skip);
    if (end > size - skip)
        abort();
    size_t n = end ? end : size - skip;
    char *buf = malloc(n + 1);
    if (!buf)
        return 0;
    memcpy(buf, in + skip, n);
    buf[n] = '\0';
    http_head_t h;
    http_refusal_t why = {0};
    if (http_parse_head(buf, n, &h, &why)) {
        check_head(&h);
        http_head_free(&h);
    } else if (why.status < 400 || why.status > 599 || !why.msg[0]) {
        abort();
    }
    if (!end) {
        http_refuse_oversize(in + skip, size - skip, &why);
        if (why.status != 414 && why.status != 431)
            abort();
    }
    free(buf);
    /* what follows the head: chunk-size lines */
    for (size_t off = skip + end; off < size;) {
        const char *nl = memchr(in + off, '\n', size - off);
        size_t len = nl ? (size_t)(nl - (in + off)) : size - off;
        uint64_t chunk;
        if (http_chunk_size(in + off, len, &chunk) && chunk >> 60)
            abort(); /* 15 hex digits at most */
        off += len + 1;
    }
    return 0;
}
