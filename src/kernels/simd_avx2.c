/* AVX2 + FMA + F16C kernels (this file is compiled with -mavx2 -mfma -mf16c
 * and only called when the CPU has them). */
#include "kernels/dispatch.h"

void kernels_register_avx2(type_kernels_t table[TYPE_COUNT])
{
    (void)table; /* no AVX2 kernels yet: the scalar reference stays */
}
