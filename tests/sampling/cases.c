/* Harness for the sampling oracle (oracle.py): reads cases on stdin, runs
 * them through the sampler and prints what it computed. Per case, input:
 *   vocab temperature top_k top_p min_p presence frequency repetition seed
 *   n_prompt n_generated n_draws, the prompt ids, the generated ids, then
 *   vocab logits (strtof syntax: inf, -inf and nan allowed)
 * output: "ok" (or "error <message>"), vocab probabilities from
 * sampler_distribution, then n_draws ids from sampler_sample. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/sampler.h"

static int run_case(FILE *in, FILE *out)
{
    int vocab, n_prompt, n_gen, n_draws;
    sampler_params_t p = sampler_params_default(); /* fields the case file does not set stay off */
    if (fscanf(in, "%d %f %d %f %f %f %f %f %" SCNu64 " %d %d %d", &vocab, &p.temperature, &p.top_k, &p.top_p, &p.min_p,
               &p.presence_penalty, &p.frequency_penalty, &p.repetition_penalty, &p.seed, &n_prompt, &n_gen,
               &n_draws) != 12 ||
        vocab <= 0 || n_prompt < 0 || n_gen < 0 || n_draws < 0)
        return -1;
    int32_t *prompt = malloc(((size_t)n_prompt + 1) * sizeof *prompt);
    int32_t *gen = malloc(((size_t)n_gen + 1) * sizeof *gen);
    float *logits = malloc((size_t)vocab * sizeof *logits);
    double *probs = malloc((size_t)vocab * sizeof *probs);
    int rc = -1;
    if (!prompt || !gen || !logits || !probs)
        goto done;
    for (int i = 0; i < n_prompt; i++)
        if (fscanf(in, "%" SCNd32, &prompt[i]) != 1)
            goto done;
    for (int i = 0; i < n_gen; i++)
        if (fscanf(in, "%" SCNd32, &gen[i]) != 1)
            goto done;
    for (int i = 0; i < vocab; i++)
        if (fscanf(in, "%f", &logits[i]) != 1)
            goto done;
    sampler_t s;
    err_t err;
    if (sampler_init(&s, &p, vocab, &err)) {
        fprintf(out, "error %s\n", err.msg);
        rc = 0;
        goto done;
    }
    sampler_accept_prompt(&s, prompt, n_prompt);
    for (int i = 0; i < n_gen; i++)
        sampler_accept(&s, gen[i]);
    sampler_distribution(&s, logits, probs);
    fprintf(out, "ok\n");
    for (int i = 0; i < vocab; i++)
        fprintf(out, "%.17g\n", probs[i]);
    for (int i = 0; i < n_draws; i++)
        fprintf(out, "%" PRId32 "\n", sampler_sample(&s, logits));
    sampler_free(&s);
    rc = 0;
done:
    free(prompt), free(gen), free(logits), free(probs);
    return rc;
}

int main(void)
{
    int n;
    if (scanf("%d", &n) != 1)
        return 2;
    for (int i = 0; i < n; i++)
        if (run_case(stdin, stdout)) {
            fprintf(stderr, "sampler_cases: malformed case %d\n", i);
            return 2;
        }
    return 0;
}
