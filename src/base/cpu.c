#include "base/cpu.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023 /* arch_prctl: ask for the AMX tile state */
#define XFEATURE_XTILEDATA 18

static cpu_features_t features;
static cpu_level_t level;
static const char *env_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static unsigned long long xgetbv0(void)
{
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static void detect(void)
{
    cpu_features_t *f = &features;
    unsigned int a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        char vendor[13];
        memcpy(vendor, &b, 4);
        memcpy(vendor + 4, &d, 4);
        memcpy(vendor + 8, &c, 4);
        vendor[12] = 0;
        f->is_amd = !strcmp(vendor, "AuthenticAMD");
    }
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        unsigned base = (a >> 8) & 0xf;
        f->family = base == 0xf ? base + ((a >> 20) & 0xff) : base;
        bool osxsave = c & (1u << 27);
        unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
        bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
        f->fma = ymm && (c & (1u << 12));
        f->f16c = ymm && (c & (1u << 29));
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            f->avx2 = ymm && (b & (1u << 5));
            f->avx512f = zmm && (b & (1u << 16));
            f->avx512bw = zmm && (b & (1u << 30));
            f->avx512vl = zmm && (b & (1u << 31));
            f->avx512vnni = zmm && (c & (1u << 11));
            bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24), amx_int8 = d & (1u << 25);
            unsigned int a1, b1, c1, d1;
            if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1))
                f->avx512bf16 = zmm && (a1 & (1u << 5));
            /* AMX needs the kernel's permission for the tile data state */
            if (amx_tile && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0) {
                f->amx_tile = true;
                f->amx_int8 = amx_int8;
                f->amx_bf16 = amx_bf16;
            }
        }
    }
    level = CPU_GENERIC;
    if (f->avx2 && f->fma && f->f16c)
        level = CPU_AVX2;
    if (level == CPU_AVX2 && f->avx512f && f->avx512bw && f->avx512vl)
        level = CPU_AVX512;
    if (level == CPU_AVX512 && f->amx_tile && f->amx_int8)
        level = CPU_AMX;
    const char *env = getenv("SPLASH_CPU");
    if (env && *env) {
        int cap = -1;
        for (int l = CPU_GENERIC; l <= CPU_AMX; l++)
            if (strcmp(env, cpu_level_name((cpu_level_t)l)) == 0)
                cap = l;
        if (cap < 0)
            env_error = "SPLASH_CPU must be generic, avx2, avx512 or amx";
        else if ((int)level > cap)
            level = (cpu_level_t)cap;
    }
}

const cpu_features_t *cpu_features(void)
{
    pthread_once(&once, detect);
    return &features;
}

cpu_level_t cpu_level(void)
{
    pthread_once(&once, detect);
    return level;
}

const char *cpu_env_error(void)
{
    pthread_once(&once, detect);
    return env_error;
}

const char *cpu_level_name(cpu_level_t l)
{
    static const char *const names[] = {"generic", "avx2", "avx512", "amx"};
    return l >= CPU_GENERIC && l <= CPU_AMX ? names[l] : "unknown";
}

void cpu_features_string(char *buf, unsigned long cap)
{
    const cpu_features_t *f = cpu_features();
    struct {
        bool on;
        const char *name;
    } list[] = {{f->avx2, "avx2"},
                {f->fma, "fma"},
                {f->f16c, "f16c"},
                {f->avx512f, "avx512f"},
                {f->avx512bw, "avx512bw"},
                {f->avx512vl, "avx512vl"},
                {f->avx512vnni, "avx512vnni"},
                {f->avx512bf16, "avx512bf16"},
                {f->amx_tile, "amx-tile"},
                {f->amx_int8, "amx-int8"},
                {f->amx_bf16, "amx-bf16"}};
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof list / sizeof list[0] && n < cap; i++)
        if (list[i].on)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? " " : "", list[i].name);
}
