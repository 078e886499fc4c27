/* The engine's pools faulted in while it is idle. The KV store, the
 * recurrent-state slots and the state snapshots are mapped at start-up and
 * committed as first written (base/sysmem.h), so the requests that first
 * reach a page pay for it: under a hypervisor a 2 MB page's first touch
 * took about 4.4 ms here, and a fresh server's first 2,048-token prompt
 * 0.35-0.5 s of its 5.5 s TTFT (docs/benchmarks.md, session 52). The
 * engine thread, when it has nothing to run, faults in one quantum at a
 * time in the order the pools will be used, checking for work between
 * quanta, until every page of them is in: the memory the plan reserved,
 * committed before the requests need it. Contents never change
 * (sysmem_populate), so nothing the forward reads does either. */
#ifndef SPLASH_ENGINE_PREFAULT_H
#define SPLASH_ENGINE_PREFAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Bytes faulted in a step: 1 MB, a KV group's region of one layer (about
 * one 2 MB page's fault), so a request that arrives meanwhile waits at
 * most about one page's fault for the engine. */
#define PREFAULT_QUANTUM ((size_t)1 << 20)

typedef struct prefault_region {
    uint8_t *p;
    size_t bytes;
} prefault_region_t;

typedef struct prefault {
    prefault_region_t *r; /* in the order they will be used */
    int n, cap;
    int next;             /* the first region not wholly faulted in */
    size_t off;           /* bytes of r[next] faulted in */
    uint64_t total, done; /* bytes */
    bool is_failed;       /* the kernel refused: nothing more is tried */
} prefault_t;

/* Room for cap regions; nothing to do until prefault_add. */
int prefault_init(prefault_t *pf, int cap, err_t *err);
/* Appends [p, p + bytes) to the work (past cap, or empty: ignored). */
void prefault_add(prefault_t *pf, void *p, size_t bytes);
/* Whether a step would fault anything in. */
bool prefault_pending(const prefault_t *pf);
/* Faults in up to `quantum` bytes, region by region in order. */
void prefault_step(prefault_t *pf, size_t quantum);
void prefault_free(prefault_t *pf);

#endif
