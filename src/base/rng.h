/* Seeded pseudo-random numbers: xoshiro256** seeded through splitmix64.
 * Each user (a request, a synthetic tensor) owns its own generator, so the
 * sequence never depends on what else is running. */
#ifndef SPLASH_RNG_H
#define SPLASH_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t s[4];
} rng_t;

void rng_seed(rng_t *r, uint64_t seed);
/* splitmix64: advances *x by the golden ratio and returns its mix (a
 * stateless hash of a key, with the key as *x) */
uint64_t rng_splitmix64(uint64_t *x);
uint64_t rng_u64(rng_t *r);
double rng_uniform(rng_t *r); /* [0, 1) with 53 random bits */
float rng_normal(rng_t *r);   /* standard normal (Box-Muller) */

#endif
