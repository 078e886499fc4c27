/* splash bench cached scenario (tools/bench_cached.h): the reuse a request
 * should see from the prefix cache, whole blocks only and never the last
 * prompt token, on both sides of every block boundary; the fully cached
 * continuation's length; the full / partial split. The engine half of the
 * rule is checked against the real server by tests/bench (bench.cached). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tools/bench_cached.h"

static void test_expected_whole_blocks(void **state)
{
    (void)state;
    /* a 1,024-token prefix in 16-token blocks: 64 blocks, all reusable by a
     * longer prompt */
    assert_int_equal(bench_cached_expected(1024 + 64, 1024, 16), 1024);
    /* a prefix that ends mid-block: only its whole blocks are cached */
    assert_int_equal(bench_cached_expected(1000 + 64, 1000, 16), 992);
    /* the same prompt again: the last token is recomputed, so when the
     * prefix ends on a boundary its last block is recomputed too */
    assert_int_equal(bench_cached_expected(1024, 1024, 16), 1008);
    assert_int_equal(bench_cached_expected(1025, 1024, 16), 1024);
    assert_int_equal(bench_cached_expected(1000, 1000, 16), 992);
    /* the prompt, not the cache, limits */
    assert_int_equal(bench_cached_expected(17, 1024, 16), 16);
    assert_int_equal(bench_cached_expected(16, 1024, 16), 0);
    /* a block of one token: everything but the last token */
    assert_int_equal(bench_cached_expected(10, 10, 1), 9);
}

static void test_expected_nothing(void **state)
{
    (void)state;
    assert_int_equal(bench_cached_expected(100, 15, 16), 0); /* the prefix fills no block */
    assert_int_equal(bench_cached_expected(1, 1024, 16), 0); /* a one-token prompt computes it */
    assert_int_equal(bench_cached_expected(0, 1024, 16), 0);
    assert_int_equal(bench_cached_expected(100, -1, 16), 0);
    assert_int_equal(bench_cached_expected(100, 100, 0), 0);
}

static void test_full_len(void **state)
{
    (void)state;
    /* whole blocks plus the one row the engine always computes */
    assert_int_equal(bench_cached_full_len(1024, 16), 1025);
    assert_int_equal(bench_cached_full_len(1000, 16), 993);
    assert_int_equal(bench_cached_full_len(16, 16), 17);
    assert_int_equal(bench_cached_full_len(15, 16), 0);
    assert_int_equal(bench_cached_full_len(100, 0), 0);
    /* and such a request reuses all but that row */
    for (int p = 16; p < 200; p += 7) {
        int n = bench_cached_full_len(p, 16);
        assert_int_equal(bench_cached_expected(n, p, 16), n - 1);
    }
}

static void test_is_full(void **state)
{
    (void)state;
    assert_true(bench_cached_is_full(0)); /* an engine that computes no prompt row */
    assert_true(bench_cached_is_full(1)); /* this one: the first token's row */
    assert_false(bench_cached_is_full(2));
    assert_false(bench_cached_is_full(1024));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expected_whole_blocks),
        cmocka_unit_test(test_expected_nothing),
        cmocka_unit_test(test_full_len),
        cmocka_unit_test(test_is_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
