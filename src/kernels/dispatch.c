#include "kernels/dispatch.h"

#include <pthread.h>

static type_kernels_t active[TYPE_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

void kernels_table_for_level(cpu_level_t level, type_kernels_t table[TYPE_COUNT])
{
    for (uint32_t t = 0; t < TYPE_COUNT; t++) {
        const type_traits_t *tt = type_traits(t);
        table[t] = (type_kernels_t){.dot_f32 = tt ? tt->dot_f32 : NULL, .path = "generic"};
    }
    if (level >= CPU_AVX2)
        kernels_register_avx2(table);
    if (level >= CPU_AVX512)
        kernels_register_avx512(table);
    if (level >= CPU_AMX)
        kernels_register_amx(table);
}

static void init(void)
{
    kernels_table_for_level(cpu_level(), active);
}

const type_kernels_t *type_kernels(uint32_t type)
{
    pthread_once(&once, init);
    return &active[type < TYPE_COUNT ? type : 0];
}

const char *kernels_decode_prefetch(uint32_t type)
{
    return cpu_level() >= CPU_AVX512 ? kernels_decode_prefetch_avx512(type) : NULL;
}

const char *kernels_rows_prefetch(uint32_t type)
{
    return cpu_level() >= CPU_AVX512 ? kernels_rows_prefetch_avx512(type) : NULL;
}
