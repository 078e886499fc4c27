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
 * (sysmem_populate), so nothing the forward reads does either. It stops
 * for good where the host's available memory would fall below a floor:
 * another process on the host (a second server, whose plan was made
 * beside this one's untouched pool) keeps its room, and pages left are
 * faulted by their first write as before. */
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
/* The host's MemAvailable a step leaves: this share of MemTotal. */
#define PREFAULT_FLOOR_SHARE 0.1

typedef enum {
    PREFAULT_OFF,         /* nothing to do (--prefault off, or no pools) */
    PREFAULT_RUNNING,     /* regions left */
    PREFAULT_DONE,        /* every region faulted in */
    PREFAULT_UNSUPPORTED, /* the kernel refused (MADV_POPULATE_WRITE needs Linux 5.14) */
    PREFAULT_LOW_MEMORY,  /* stopped: the host's available memory reached the floor */
} prefault_state_t;

typedef struct prefault_region {
    uint8_t *p;
    size_t bytes;
} prefault_region_t;

typedef struct prefault {
    prefault_region_t *r; /* in the order they will be used */
    int n, cap;
    int next;                 /* the first region not wholly faulted in */
    size_t off;               /* bytes of r[next] faulted in */
    uint64_t total, done;     /* bytes */
    uint64_t floor;           /* MemAvailable a step leaves (0: none) */
    prefault_state_t stopped; /* PREFAULT_UNSUPPORTED or _LOW_MEMORY once stopped; else PREFAULT_RUNNING */
} prefault_t;

/* Room for cap regions; nothing to do until prefault_add. Steps leave
 * `floor` bytes of the host's MemAvailable (0: no floor). */
int prefault_init(prefault_t *pf, int cap, uint64_t floor, err_t *err);
/* Appends [p, p + bytes) to the work (past cap, or empty: ignored). */
void prefault_add(prefault_t *pf, void *p, size_t bytes);
/* Whether a step would fault anything in. */
bool prefault_pending(const prefault_t *pf);
/* Faults in up to `quantum` bytes, region by region in order. */
void prefault_step(prefault_t *pf, size_t quantum);
prefault_state_t prefault_state(const prefault_t *pf);
/* "off", "running", "done", "unsupported", "low_memory". */
const char *prefault_state_name(prefault_state_t s);
void prefault_free(prefault_t *pf);

#endif
