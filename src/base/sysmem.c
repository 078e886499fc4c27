#include "base/sysmem.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

void sysmem_host(uint64_t *available, uint64_t *total)
{
    *available = *total = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return;
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            *available = (uint64_t)kb * 1024;
        else if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
            *total = (uint64_t)kb * 1024;
    }
    fclose(f);
}

uint64_t sysmem_resident(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t sysmem_address_space_left(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return UINT64_MAX;
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    uint64_t mapped = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
    return (uint64_t)rl.rlim_cur > mapped ? (uint64_t)rl.rlim_cur - mapped : 0;
}

uint64_t sysmem_thread_stack(void)
{
    size_t stack = 0;
    pthread_attr_t a;
    if (pthread_attr_init(&a) == 0) {
        pthread_attr_getstacksize(&a, &stack);
        pthread_attr_destroy(&a);
    }
    return stack;
}

void sysmem_fit_address_limit(void)
{
    if (sysmem_address_space_left() != UINT64_MAX)
        mallopt(M_ARENA_MAX, 1);
}

#define HUGE_PAGE_BYTES ((size_t)2 << 20)

void *sysmem_huge_alloc(size_t bytes)
{
    if (bytes == 0 || bytes > SIZE_MAX - HUGE_PAGE_BYTES)
        return NULL;
    /* over-allocate by one huge page, then trim to a 2 MB-aligned start:
     * only aligned 2 MB ranges can be backed by huge pages */
    size_t span = bytes + HUGE_PAGE_BYTES;
    uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t start = ((uintptr_t)m + HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1);
    size_t head = start - (uintptr_t)m, tail = span - head - bytes;
    if (head)
        munmap(m, head);
    if (tail)
        munmap((uint8_t *)start + bytes, tail);
    madvise((void *)start, bytes, MADV_HUGEPAGE); /* advice: without THP the pages are simply small */
    return (void *)start;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14's value, for headers older than the kernel */
#endif

int sysmem_populate(void *p, size_t bytes)
{
    const uintptr_t page = 4096, lo = (uintptr_t)p & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)p + bytes + page - 1) & ~(page - 1);
    if (!bytes)
        return 0;
    return madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) ? -1 : 0;
}

void sysmem_huge_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}
