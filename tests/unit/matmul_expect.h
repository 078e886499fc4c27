/* What ops_matmul computes for one output element of a batch of n_rows
 * with a kernel set: the integer / bfloat16 path's dot_q on the quantised
 * activation row when the set has one and the batch reaches its q_min_rows
 * (kernels/qact.h), the f32 dot product otherwise. */
#ifndef SPLASH_MATMUL_EXPECT_H
#define SPLASH_MATMUL_EXPECT_H

#include <stdlib.h>

#include "kernels/dispatch.h"
#include "kernels/qact.h"

static inline float matmul_expect(const type_kernels_t *k, const void *w, const float *x, int64_t n, int n_rows)
{
    if (!k->dot_q || n_rows < k->q_min_rows)
        return k->dot_f32(w, x, n);
    void *xq = aligned_alloc(QACT_ALIGN, qact_row_bytes_max(n));
    k->quantize_act(x, xq, n);
    float y = k->dot_q(w, xq, n);
    free(xq);
    return y;
}

#endif
