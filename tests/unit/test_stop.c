/* Stop strings over the streamed text: matches across pieces, overlapping
 * prefixes, several strings, multibyte UTF-8, never emitting any part of a
 * stop string, flush; and random streams against a plain recomputation
 * (first occurrence of each string with strstr, whatever the cutting). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "engine/stop.h"

#define OUT_MAX 8192

typedef struct run {
    char out[OUT_MAX]; /* everything emitted, flush included */
    size_t len;
    int stopped_at; /* index of the piece that completed a stop string, or -1 */
} run_t;

static void append(run_t *r, const char *s, size_t n)
{
    assert_true(r->len + n < OUT_MAX);
    memcpy(r->out + r->len, s, n);
    r->len += n;
    r->out[r->len] = '\0';
}

/* Feeds the pieces one by one (then flushes) and records the output. */
static run_t feed_all(const char *const *stops, int n_stops, const char *const *pieces, int n_pieces)
{
    run_t r = {.stopped_at = -1};
    stop_t s;
    err_t err;
    assert_int_equal(stop_init(&s, stops, n_stops, &err), 0);
    char fed[OUT_MAX];
    size_t n_fed = 0;
    for (int i = 0; i < n_pieces; i++) {
        const char *e;
        size_t n;
        int rc = stop_feed(&s, pieces[i], strlen(pieces[i]), &e, &n);
        assert_true(rc == 0 || rc == 1);
        append(&r, e, n);
        assert_true(n_fed + strlen(pieces[i]) < OUT_MAX);
        memcpy(fed + n_fed, pieces[i], strlen(pieces[i]));
        n_fed += strlen(pieces[i]);
        if (rc == 0) {
            /* held back: exactly the longest tail that begins a stop string */
            size_t hold = 0;
            for (int k = 0; k < n_stops; k++)
                for (size_t h = strlen(stops[k]) - 1; h > hold; h--)
                    if (h <= n_fed && !memcmp(fed + n_fed - h, stops[k], h))
                        hold = h;
            if (r.len != n_fed - hold)
                fail_msg("after piece %d: emitted %zu of %zu bytes, expected %zu held back", i, r.len, n_fed, hold);
        }
        if (rc == 1 && r.stopped_at < 0)
            r.stopped_at = i;
        if (r.stopped_at >= 0)
            assert_int_equal(rc, 1); /* and stays stopped */
    }
    const char *e;
    size_t n;
    stop_flush(&s, &e, &n);
    append(&r, e, n);
    stop_free(&s);
    return r;
}

static void test_across_pieces(void **state)
{
    (void)state;
    const char *stops[] = {"</s>"};
    run_t r = feed_all(stops, 1, (const char *[]){"hello <", "/", "s> world", "more"}, 4);
    assert_string_equal(r.out, "hello ");
    assert_int_equal(r.stopped_at, 2);
    /* a false start is released once it cannot be a stop string */
    r = feed_all(stops, 1, (const char *[]){"a </", "b> c"}, 2);
    assert_string_equal(r.out, "a </b> c");
    assert_int_equal(r.stopped_at, -1);
}

static void test_overlapping_prefix(void **state)
{
    (void)state;
    /* "aab" fed a, a, a, b: the first a is released only when the third
     * arrives, and the match starts at the second */
    const char *stops[] = {"aab"};
    stop_t s;
    assert_int_equal(stop_init(&s, stops, 1, NULL), 0);
    const char *e;
    size_t n;
    assert_int_equal(stop_feed(&s, "a", 1, &e, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(stop_feed(&s, "a", 1, &e, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(stop_feed(&s, "a", 1, &e, &n), 0);
    assert_int_equal(n, 1);
    assert_memory_equal(e, "a", 1);
    assert_int_equal(stop_feed(&s, "b", 1, &e, &n), 1);
    assert_int_equal(n, 0);
    assert_int_equal(stop_feed(&s, "xyz", 3, &e, &n), 1); /* nothing after a stop */
    assert_int_equal(n, 0);
    stop_flush(&s, &e, &n);
    assert_int_equal(n, 0);
    stop_free(&s);
    /* "abab" in "abababx": not there; the text comes out whole */
    run_t r = feed_all((const char *[]){"ababx!"}, 1, (const char *[]){"ab", "ab", "ab", "x"}, 4);
    assert_string_equal(r.out, "abababx");
}

static void test_several_strings(void **state)
{
    (void)state;
    const char *stops[] = {"abcd", "bc", "\n\n"};
    /* "bc" completes before "abcd" could: the earliest end wins, whatever
     * the cutting */
    run_t r = feed_all(stops, 3, (const char *[]){"xabcd"}, 1);
    assert_string_equal(r.out, "xa");
    r = feed_all(stops, 3, (const char *[]){"xa", "b", "cd"}, 3);
    assert_string_equal(r.out, "xa");
    r = feed_all(stops, 3, (const char *[]){"line\n", "\nnext"}, 2);
    assert_string_equal(r.out, "line");
    /* same end: the longer string (the earlier start) wins */
    r = feed_all((const char *[]){"c", "abc"}, 2, (const char *[]){"xab", "cz"}, 2);
    assert_string_equal(r.out, "x");
}

static void test_utf8(void **state)
{
    (void)state;
    /* stop strings with multibyte characters, fed a character at a time;
     * "é" and "éa" share a first character with the text */
    const char *stops[] = {"日本", "🙂!"};
    run_t r = feed_all(stops, 2, (const char *[]){"こんにちは", "日", "は", "🙂", "🙂", "!", "tail"}, 7);
    assert_string_equal(r.out, "こんにちは日は🙂");
    assert_int_equal(r.stopped_at, 5);
    r = feed_all((const char *[]){"é!"}, 1, (const char *[]){"café", " ok"}, 2);
    assert_string_equal(r.out, "café ok");
    /* the hold-back never ends inside a character: "ab" is held as a whole
     * after "é" (it could begin "ab€") and released at the end */
    stop_t s;
    assert_int_equal(stop_init(&s, (const char *[]){"ab€"}, 1, NULL), 0);
    const char *e;
    size_t n;
    assert_int_equal(stop_feed(&s, "éab", 4, &e, &n), 0);
    assert_int_equal(n, 2);
    assert_memory_equal(e, "é", 2);
    assert_int_equal(stop_feed(&s, "\xe2\x82\xac", 3, &e, &n), 1); /* € */
    assert_int_equal(n, 0);
    stop_free(&s);
}

static void test_passthrough_and_limits(void **state)
{
    (void)state;
    stop_t s;
    err_t err;
    assert_int_equal(stop_init(&s, NULL, 0, &err), 0);
    const char *text = "anything at all", *e;
    size_t n;
    assert_int_equal(stop_feed(&s, text, strlen(text), &e, &n), 0);
    assert_ptr_equal(e, text);
    assert_int_equal(n, strlen(text));
    stop_flush(&s, &e, &n);
    assert_int_equal(n, 0);
    stop_free(&s);
    /* a piece much larger than the buffer */
    assert_int_equal(stop_init(&s, (const char *[]){"STOP"}, 1, &err), 0);
    size_t big = 100000;
    char *x = malloc(big + 5);
    memset(x, 'x', big);
    memcpy(x + big, "STO", 4);
    assert_int_equal(stop_feed(&s, x, big + 3, &e, &n), 0);
    assert_int_equal(n, big);
    assert_int_equal(stop_feed(&s, "P", 1, &e, &n), 1);
    assert_int_equal(n, 0);
    stop_free(&s);
    free(x);
    /* validation */
    const char *too_many[STOP_MAX_STRINGS + 1];
    for (int i = 0; i <= STOP_MAX_STRINGS; i++)
        too_many[i] = "x";
    assert_int_equal(stop_init(&s, too_many, STOP_MAX_STRINGS + 1, &err), -1);
    assert_int_equal(stop_init(&s, too_many, STOP_MAX_STRINGS, &err), 0);
    stop_free(&s);
    assert_int_equal(stop_init(&s, (const char *[]){"ok", ""}, 2, &err), -1);
    assert_non_null(strstr(err.msg, "empty"));
    assert_int_equal(stop_init(&s, (const char *[]){"ok", NULL}, 2, &err), -1);
    assert_int_equal(stop_init(&s, (const char *[]){"\xc3"}, 1, &err), -1);
    assert_non_null(strstr(err.msg, "UTF-8"));
    char *long_stop = malloc(STOP_MAX_BYTES + 2);
    memset(long_stop, 'y', STOP_MAX_BYTES + 1);
    long_stop[STOP_MAX_BYTES + 1] = '\0';
    assert_int_equal(stop_init(&s, (const char *[]){long_stop}, 1, &err), -1);
    long_stop[STOP_MAX_BYTES] = '\0';
    assert_int_equal(stop_init(&s, (const char *[]){long_stop}, 1, &err), 0);
    stop_free(&s);
    free(long_stop);
}

/* Random texts over a small alphabet of 1- to 4-byte characters, random stop
 * strings, random cuttings at character boundaries. Expected: the text up
 * to the stop string that ends first (ties: the longest), or all of it. */
static void test_random_streams(void **state)
{
    (void)state;
    static const char *const alphabet[] = {"a", "b", "é", "€", "🙂"};
    rng_t r;
    rng_seed(&r, 42);
    for (int iter = 0; iter < 3000; iter++) {
        char stops_buf[4][32];
        const char *stops[4];
        int n_stops = (int)(rng_u64(&r) % 4);
        for (int i = 0; i < n_stops; i++) {
            stops_buf[i][0] = '\0';
            int len = 1 + (int)(rng_u64(&r) % 3);
            for (int j = 0; j < len; j++)
                strcat(stops_buf[i], alphabet[rng_u64(&r) % 3 == 0 ? 2 + rng_u64(&r) % 3 : rng_u64(&r) % 2]);
            stops[i] = stops_buf[i];
        }
        char text[512] = "", pieces_buf[64][64];
        const char *pieces[64];
        int n_pieces = (int)(rng_u64(&r) % 12);
        for (int i = 0; i < n_pieces; i++) {
            pieces_buf[i][0] = '\0';
            int chars = (int)(rng_u64(&r) % 4);
            for (int j = 0; j < chars; j++)
                strcat(pieces_buf[i], alphabet[rng_u64(&r) % 3 == 0 ? 2 + rng_u64(&r) % 3 : rng_u64(&r) % 2]);
            pieces[i] = pieces_buf[i];
            strcat(text, pieces_buf[i]);
        }
        size_t want = strlen(text), best_end = SIZE_MAX, best_len = 0;
        for (int i = 0; i < n_stops; i++) {
            const char *at = strstr(text, stops[i]);
            if (!at)
                continue;
            size_t len = strlen(stops[i]), end = (size_t)(at - text) + len;
            if (end < best_end || (end == best_end && len > best_len))
                best_end = end, best_len = len;
        }
        if (best_end != SIZE_MAX)
            want = best_end - best_len;
        run_t got = feed_all(stops, n_stops, pieces, n_pieces);
        if (got.len != want || memcmp(got.out, text, want))
            fail_msg("iteration %d: emitted '%s', expected '%.*s' of '%s'", iter, got.out, (int)want, text, text);
        assert_int_equal(got.stopped_at >= 0, best_end != SIZE_MAX);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_across_pieces),          cmocka_unit_test(test_overlapping_prefix),
        cmocka_unit_test(test_several_strings),        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_passthrough_and_limits), cmocka_unit_test(test_random_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
