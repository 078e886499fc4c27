/* Phase clocks (base/phase.h). */
#include "base/phase.h"

#include <stdatomic.h>

#include "base/clock.h"

static atomic_bool is_enabled;
static _Atomic uint64_t total_ns[PHASE_COUNT], total_calls[PHASE_COUNT];

void phase_enable(bool is_on)
{
    for (int i = 0; i < PHASE_COUNT; i++) {
        atomic_store_explicit(&total_ns[i], 0, memory_order_relaxed);
        atomic_store_explicit(&total_calls[i], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&is_enabled, is_on, memory_order_release);
}

uint64_t phase_begin(void)
{
    if (!atomic_load_explicit(&is_enabled, memory_order_acquire))
        return 0;
    int64_t t = clock_now_ns();
    return t > 0 ? (uint64_t)t : 1;
}

/* One writer: a load and a store, not a locked add (which would wait for
 * the loads a decode kernel has in flight, as base/pool.c's counters say). */
static void add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

void phase_end(phase_t ph, uint64_t t0)
{
    if (!t0 || (unsigned)ph >= PHASE_COUNT)
        return;
    uint64_t t = (uint64_t)clock_now_ns();
    add(&total_ns[ph], t > t0 ? t - t0 : 0);
    add(&total_calls[ph], 1);
}

void phase_read(phase_totals_t *out)
{
    for (int i = 0; i < PHASE_COUNT; i++) {
        out->ns[i] = atomic_load_explicit(&total_ns[i], memory_order_relaxed);
        out->calls[i] = atomic_load_explicit(&total_calls[i], memory_order_relaxed);
    }
}
