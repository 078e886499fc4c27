/* The engine's idle-time prefault (engine/prefault.h): the regions are
 * faulted in in order, a quantum at a time, their contents unchanged; the
 * work ends where the regions do, or at the first region the kernel
 * refuses. Residency is read back with mincore(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/sysmem.h"
#include "engine/prefault.h"

#define MB ((size_t)1 << 20)

/* Pages of [p, p + bytes) resident now. */
static size_t resident_pages(const uint8_t *p, size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = (uintptr_t)p & ~(page - 1);
    const size_t n = ((uintptr_t)p + bytes - lo + page - 1) / page;
    unsigned char *v = malloc(n);
    assert_non_null(v);
    assert_int_equal(mincore((void *)lo, n * page, v), 0);
    size_t in = 0;
    for (size_t i = 0; i < n; i++)
        in += v[i] & 1;
    free(v);
    return in;
}

static size_t pages(size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + page - 1) / page;
}

/* Skips where the kernel lacks MADV_POPULATE_WRITE (Linux before 5.14). */
static void need_populate(void)
{
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    int rc = sysmem_populate(p, 4096);
    munmap(p, 4096);
    if (rc)
        skip();
}

static void test_regions_in_order(void **state)
{
    (void)state;
    need_populate();
    uint8_t *a = mmap(NULL, 3 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *b = mmap(NULL, 5 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(a != MAP_FAILED && b != MAP_FAILED);
    madvise(a, 3 * MB, MADV_NOHUGEPAGE); /* page by page, so residency is exact */
    madvise(b, 5 * MB, MADV_NOHUGEPAGE);
    a[100] = 7; /* written before: kept */
    b[5 * MB - 1] = 9;
    prefault_t pf;
    err_t err;
    assert_int_equal(prefault_init(&pf, 3, 0, &err), 0);
    assert_false(prefault_pending(&pf));
    assert_int_equal(prefault_state(&pf), PREFAULT_OFF);
    prefault_add(&pf, a, 3 * MB);
    prefault_add(&pf, NULL, MB);    /* nothing: ignored */
    prefault_add(&pf, a + 8, 0);    /* empty: ignored */
    prefault_add(&pf, b + 100, MB); /* an unaligned start: its first page counts too */
    prefault_add(&pf, b + 2 * MB, 3 * MB);
    prefault_add(&pf, b, 4096); /* past cap: ignored */
    assert_int_equal(pf.n, 3);
    assert_int_equal(pf.total, 7 * MB);
    assert_true(prefault_pending(&pf));
    assert_int_equal(prefault_state(&pf), PREFAULT_RUNNING);
    assert_true(resident_pages(a, 3 * MB) <= 1);
    /* quantum by quantum, a region after the one before */
    prefault_step(&pf, 2 * MB);
    assert_int_equal(pf.done, 2 * MB);
    assert_int_equal(resident_pages(a, 2 * MB), pages(2 * MB));
    assert_true(resident_pages(a + 2 * MB, MB) <= 1);
    assert_int_equal(resident_pages(b, 5 * MB), 1); /* only the page written before */
    prefault_step(&pf, 2 * MB);                     /* a's last MB, then b's first region */
    assert_int_equal(pf.done, 4 * MB);
    assert_int_equal(pf.next, 2);
    assert_int_equal(resident_pages(a, 3 * MB), pages(3 * MB));
    assert_int_equal(resident_pages(b, MB + 100), pages(MB + 100));
    while (prefault_pending(&pf))
        prefault_step(&pf, PREFAULT_QUANTUM);
    assert_int_equal(pf.done, pf.total);
    assert_int_equal(prefault_state(&pf), PREFAULT_DONE);
    assert_int_equal(resident_pages(b + 2 * MB, 3 * MB), pages(3 * MB));
    assert_int_equal(a[100], 7);
    assert_int_equal(b[5 * MB - 1], 9);
    for (size_t i = 0; i < 3 * MB; i += 4096)
        assert_int_equal(a[i + 1], 0); /* zero pages stay zero */
    prefault_free(&pf);
    munmap(a, 3 * MB);
    munmap(b, 5 * MB);
}

/* A region the kernel refuses (memory no longer mapped) ends the work:
 * nothing more is tried, done stops where it was. */
static void test_refusal_stops(void **state)
{
    (void)state;
    need_populate();
    uint8_t *a = mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *gone = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(a != MAP_FAILED && gone != MAP_FAILED);
    munmap(gone, MB);
    prefault_t pf;
    err_t err;
    assert_int_equal(prefault_init(&pf, 3, 0, &err), 0);
    prefault_add(&pf, a, MB);
    prefault_add(&pf, gone, MB);
    prefault_add(&pf, a + MB, MB);
    prefault_step(&pf, 8 * MB);
    assert_int_equal(prefault_state(&pf), PREFAULT_UNSUPPORTED);
    assert_false(prefault_pending(&pf));
    assert_int_equal(pf.done, MB);
    prefault_step(&pf, 8 * MB);
    assert_int_equal(pf.done, MB);
    prefault_free(&pf);
    munmap(a, 2 * MB);
}

/* A floor above what the host has: no step faults anything in, and the
 * work stops for good (the pages then fault on their first write). */
static void test_low_memory_stops(void **state)
{
    (void)state;
    uint64_t avail, total;
    sysmem_host(&avail, &total);
    if (!total)
        skip(); /* no /proc/meminfo: no floor is read */
    uint8_t *a = mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(a != MAP_FAILED);
    madvise(a, 2 * MB, MADV_NOHUGEPAGE);
    prefault_t pf;
    err_t err;
    assert_int_equal(prefault_init(&pf, 1, total, &err), 0);
    prefault_add(&pf, a, 2 * MB);
    prefault_step(&pf, 8 * MB);
    assert_int_equal(prefault_state(&pf), PREFAULT_LOW_MEMORY);
    assert_string_equal(prefault_state_name(prefault_state(&pf)), "low_memory");
    assert_false(prefault_pending(&pf));
    assert_int_equal(pf.done, 0);
    assert_int_equal(resident_pages(a, 2 * MB), 0);
    prefault_free(&pf);
    munmap(a, 2 * MB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regions_in_order),
        cmocka_unit_test(test_refusal_stops),
        cmocka_unit_test(test_low_memory_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
