/* The host's memory as Linux reports it: what the memory plan sizes itself
 * from and what /status shows. */
#ifndef SPLASH_SYSMEM_H
#define SPLASH_SYSMEM_H

#include <stddef.h>
#include <stdint.h>

/* MemAvailable and MemTotal from /proc/meminfo, in bytes (0 if unknown). */
void sysmem_host(uint64_t *available, uint64_t *total);
/* This process's resident set, in bytes (0 if unknown). */
uint64_t sysmem_resident(void);
/* Address space this process may still map under its RLIMIT_AS (`ulimit -v`):
 * the limit less what is mapped now (VmSize); UINT64_MAX when there is no
 * limit. Every mapping counts, touched or not: thread stacks, malloc arenas. */
uint64_t sysmem_address_space_left(void);
/* The stack a new thread maps (glibc's default, from RLIMIT_STACK). */
uint64_t sysmem_thread_stack(void);
/* Under an RLIMIT_AS, keeps malloc to one arena: glibc otherwise reserves
 * 64 MiB of address space for each arena a new thread happens to create,
 * and how many appear depends on timing, so what is left for the memory
 * plan would too. No effect without a limit. Call at start-up, before
 * threads. */
void sysmem_fit_address_limit(void);

/* Large buffers a decode step streams through (the weights, the KV store,
 * the recurrent state, the logits rows, the bandwidth probe) on 2 MB pages
 * where the kernel allows transparent huge pages: `bytes` of anonymous
 * memory, zero-filled, aligned to 2 MB and advised MADV_HUGEPAGE, committed
 * as it is first touched (2 MB at a time). Streaming 600 MB a token through
 * 4 KB pages costs a TLB walk every 4 KB; on 2 MB pages decode ran faster
 * here (docs/benchmarks.md, "Weights on huge pages", and session 27's KV
 * store). NULL when out of memory. Free with sysmem_huge_free(p, bytes). */
void *sysmem_huge_alloc(size_t bytes);
void sysmem_huge_free(void *p, size_t bytes);
/* Faults in the pages of [p, p + bytes) for writing, their contents
 * unchanged (MADV_POPULATE_WRITE; p is rounded down and the end up to whole
 * 4 KB pages, which must lie in one mapping): what a first write would
 * otherwise pay, paid now. 0, or -1 where the kernel lacks it (Linux
 * before 5.14) or the memory is not there. */
int sysmem_populate(void *p, size_t bytes);

#endif
