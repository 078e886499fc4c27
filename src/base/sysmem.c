#include "base/sysmem.h"

#include <stdio.h>
#include <sys/mman.h>
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

void sysmem_huge_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}
