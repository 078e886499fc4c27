/* Token sampling from one row of logits. Each request owns a sampler with
 * its own seeded generator, so its tokens never depend on other requests. */
#ifndef SPLASH_SAMPLER_H
#define SPLASH_SAMPLER_H

#include <stdint.h>

#include "base/err.h"
#include "base/rng.h"

typedef struct sampler_params {
    float temperature; /* 0: greedy (argmax, lowest id on ties) */
    int top_k;         /* 0: off */
    float top_p;       /* 1: off */
    uint64_t seed;
} sampler_params_t;

typedef struct sampler_cand {
    float p; /* unnormalised probability */
    int32_t id;
} sampler_cand_t;

typedef struct sampler {
    sampler_params_t p;
    rng_t rng;
    int vocab;
    sampler_cand_t *cand; /* (vocab) scratch */
} sampler_t;

int sampler_init(sampler_t *s, const sampler_params_t *p, int vocab, err_t *err);
void sampler_free(sampler_t *s);
int32_t sampler_sample(sampler_t *s, const float *logits);

#endif
