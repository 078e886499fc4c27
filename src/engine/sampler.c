#include "engine/sampler.h"

#include <math.h>
#include <stdlib.h>

int sampler_init(sampler_t *s, const sampler_params_t *p, int vocab, err_t *err)
{
    if (!(p->temperature >= 0.0f) || p->top_k < 0 || !(p->top_p > 0.0f && p->top_p <= 1.0f))
        return err_set(err, "sampler: temperature must be >= 0, top_k >= 0 and top_p in (0, 1]");
    s->p = *p;
    s->vocab = vocab;
    rng_seed(&s->rng, p->seed);
    s->cand = malloc((size_t)vocab * sizeof *s->cand);
    if (!s->cand) {
        sampler_free(s);
        return err_set(err, "sampler: out of memory");
    }
    return 0;
}

void sampler_free(sampler_t *s)
{
    free(s->cand);
    s->cand = NULL;
}

static int32_t argmax(const float *x, int n)
{
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* Orders candidates by probability, descending (ties: lower id first). */
static int cmp_cand_desc(const void *a, const void *b)
{
    const sampler_cand_t *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int32_t sampler_sample(sampler_t *s, const float *logits)
{
    int n = s->vocab;
    if (s->p.temperature == 0.0f)
        return argmax(logits, n);

    /* softmax at the temperature (unnormalised; sums carried in double) */
    float max = logits[argmax(logits, n)];
    for (int i = 0; i < n; i++) {
        s->cand[i].p = expf((logits[i] - max) / s->p.temperature);
        s->cand[i].id = i;
    }
    int n_cand = n;
    if (s->p.top_k > 0 || s->p.top_p < 1.0f) {
        qsort(s->cand, (size_t)n, sizeof *s->cand, cmp_cand_desc);
        if (s->p.top_k > 0 && s->p.top_k < n_cand)
            n_cand = s->p.top_k;
        if (s->p.top_p < 1.0f) {
            double total = 0.0, cum = 0.0;
            for (int i = 0; i < n_cand; i++)
                total += s->cand[i].p;
            for (int i = 0; i < n_cand; i++) {
                cum += s->cand[i].p;
                if (cum >= s->p.top_p * total) {
                    n_cand = i + 1;
                    break;
                }
            }
        }
    }
    double sum = 0.0;
    for (int i = 0; i < n_cand; i++)
        sum += s->cand[i].p;
    double u = rng_uniform(&s->rng) * sum;
    double acc = 0.0;
    for (int i = 0; i < n_cand; i++) {
        acc += s->cand[i].p;
        if (u < acc)
            return s->cand[i].id;
    }
    return s->cand[n_cand - 1].id;
}
