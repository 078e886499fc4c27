/* Where a forward pass's wall time goes, for measuring (splash perf): the
 * calling thread's time in each phase below, summed until read. Off until
 * phase_enable: then phase_begin returns 0 and phase_end does nothing, so
 * the forward pass pays a load and a branch a matrix or attention pass.
 * One writer, the thread that runs the forward pass (the pool's caller);
 * other threads may read. */
#ifndef SPLASH_PHASE_H
#define SPLASH_PHASE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    PHASE_QUANTIZE,  /* a matrix product's activations quantised (kernels/qact.h) */
    PHASE_WEIGHTS,   /* the matrix products themselves: the weight stream */
    PHASE_ATTENTION, /* attention over the KV cache */
    PHASE_RECURRENT, /* a Gated DeltaNet layer's conv and delta rule (qwen35) */
    PHASE_COUNT
} phase_t;

typedef struct phase_totals {
    uint64_t ns[PHASE_COUNT];    /* wall time in each phase */
    uint64_t calls[PHASE_COUNT]; /* passes through it */
} phase_totals_t;

/* Starts (or stops) measuring, from zero. */
void phase_enable(bool is_on);
/* A timestamp to hand to phase_end, or 0 while off. */
uint64_t phase_begin(void);
/* Adds the time since t0 (phase_begin's) to ph; nothing when t0 is 0. */
void phase_end(phase_t ph, uint64_t t0);
void phase_read(phase_totals_t *out);

#endif
