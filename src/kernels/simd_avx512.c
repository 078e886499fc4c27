/* AVX-512 kernels (this file is compiled with -mavx512f -mavx512bw -mavx512vl
 * -mavx512vnni -mavx512bf16 -mfma -mf16c and only called when the CPU has
 * AVX-512 F/BW/VL; VNNI and BF16 paths check cpu_features() first). */
#include "kernels/dispatch.h"

void kernels_register_avx512(type_kernels_t table[TYPE_COUNT])
{
    (void)table; /* no AVX-512 kernels yet: the AVX2 or scalar ones stay */
}
