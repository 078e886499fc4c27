/* CPU features, detected once. Kernel paths are chosen from these at start-up
 * (never per call); SPLASH_CPU=generic|avx2|avx512|amx caps the choice so
 * every path can be forced for testing. */
#ifndef SPLASH_CPU_H
#define SPLASH_CPU_H

#include <stdbool.h>

typedef struct cpu_features {
    bool avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512vnni, avx512bf16;
    bool amx_tile, amx_int8, amx_bf16; /* usable: the OS granted the tile state */
    bool is_amd;                       /* vendor "AuthenticAMD": some defaults are measured per vendor */
    unsigned family;                   /* cpuid's display family (AMD 0x19: Zen 3/4, 0x1a: Zen 5) */
} cpu_features_t;

/* Kernel path levels, each implying the ones below it. */
typedef enum cpu_level {
    CPU_GENERIC = 0, /* portable scalar reference */
    CPU_AVX2 = 1,    /* AVX2 + FMA + F16C */
    CPU_AVX512 = 2,  /* AVX-512 F/BW/VL (+ VNNI, BF16 where present) */
    CPU_AMX = 3,     /* AMX tiles (INT8 / BF16) */
} cpu_level_t;

/* Detected features (first call detects; thread-safe). */
const cpu_features_t *cpu_features(void);

/* The highest level the CPU supports, capped by SPLASH_CPU if set. An unknown
 * SPLASH_CPU value leaves the level uncapped and is reported by cpu_env_error(). */
cpu_level_t cpu_level(void);
const char *cpu_level_name(cpu_level_t level);
const char *cpu_env_error(void); /* NULL if SPLASH_CPU is unset or valid */

/* "avx2 fma f16c avx512f ..." for reports (/status, splash perf). */
void cpu_features_string(char *buf, unsigned long cap);

#endif
