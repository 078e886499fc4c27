/* Token sampling from one row of logits. Each request owns a sampler with
 * its own seeded generator and its own token history, so its tokens never
 * depend on other requests.
 *
 * Order of operations (vLLM's order; llama.cpp users get the same result
 * for every filter except that llama.cpp applies temperature last):
 *   1. penalties on the logits, in float, as vLLM applies them:
 *        repetition (CTRL / HF, over prompt + generated tokens):
 *          l > 0 ? l / r : l * r        for every token seen so far
 *        frequency and presence (OpenAI, over generated tokens only):
 *          l - count * frequency - presence      for count > 0
 *      NaN logits count as -inf; -inf is a mask and is never drawn.
 *      Then logit_bias (OpenAI): l + bias[id] for every biased token; a
 *      structured-output mask makes a disallowed token -inf whatever its bias.
 *   2. temperature: 0 is greedy, the argmax of the penalised logits (lowest
 *      id on ties), and stops here. Otherwise w = exp((l - l_max) / T), by
 *      kernels/ops.h's ops_exp_weight: within 2e-7 of expf, and 0 where
 *      (l - l_max) / T is below -87 (a weight under 2e-38 of the maximum's).
 *   3. candidates are ranked by penalised logit, descending, ties by the
 *      lower id (the rank never depends on rounding in exp).
 *   4. top_k keeps the first top_k of that ranking.
 *   5. top_p keeps, of what top_k left, the shortest prefix of the ranking
 *      whose mass reaches top_p of that set's mass (a token is kept when the
 *      mass ranked before it is below top_p).
 *   6. min_p keeps tokens with p >= min_p * p_max (p_max survives every
 *      filter, so min_p is a ratio test on w and commutes with 4 and 5).
 *   7. draw: one uniform u from the request's generator, scaled to the kept
 *      mass and walked through the kept tokens in id order.
 * The first token of the ranking always survives, so a sample always exists.
 * When the largest penalised logit is infinite (+inf, or every token -inf),
 * the tokens that share it split the mass equally.
 *
 * Cost. Greedy: one vector pass (the argmax; a copy too with penalties or
 * a mask, the penalties then touching the seen and biased ids alone). With a filter (top_k,
 * top_p, min_p) and a finite maximum: the candidates are found by a vector
 * scan for the ids whose w can reach a threshold (lowered until they
 * provably hold every survivor; for top_k on a near-flat distribution
 * raised by bisection until they number from top_k to vocab / 16), w is
 * computed for them alone, the top_k and top_p cuts by quickselect (plain
 * and mass-weighted), and the draw walks the kept ids; top_p without top_k
 * adds one vector pass for the whole mass. Otherwise (no filter, too many
 * candidates, an infinite maximum): vector passes for w and its sum; top_p
 * (without top_k) finds its cut by halving a range of logits with vector
 * passes (the mass at or above a logit) until at most 1,024 ids straddle
 * it, ranked by quickselect; the cut and min_p applied in one vector pass;
 * the draw a block of 16 ids at a time. Nothing is sorted. Measured in docs/benchmarks.md (session 49): a
 * row of 151,936 logits 45-135 us for top_k 20 / top_p 0.8, against
 * 0.66-1.3 ms before; top_p 0.95 alone on a near-flat row 0.48 ms against
 * 2.7. */
#ifndef SPLASH_SAMPLER_H
#define SPLASH_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/rng.h"

#define SAMPLER_MAX_TEMPERATURE 100.0f       /* beyond this the distribution is flat to float precision */
#define SAMPLER_MAX_ABS_PENALTY 2.0f         /* presence / frequency: [-2, 2], as OpenAI */
#define SAMPLER_MAX_REPETITION_PENALTY 10.0f /* (0, 10]; 1 is off, values > 1 discourage repeats */
#define SAMPLER_MAX_BIAS 100.0f              /* logit_bias values: [-100, 100], as OpenAI */
#define SAMPLER_MAX_BIASED 4096              /* logit_bias entries per request */
#define SAMPLER_MAX_TOP_LOGPROBS 20          /* alternatives sampler_logprobs reports, as OpenAI */

/* One logit_bias entry: added to the token's logit after the penalties. */
typedef struct sampler_bias {
    int32_t id;
    float bias;
} sampler_bias_t;

/* One token's log-probability (sampler_logprobs). */
typedef struct sampler_logprob {
    int32_t id;
    float logprob;
} sampler_logprob_t;

typedef struct sampler_params {
    float temperature;        /* 0: greedy (argmax after penalties, lowest id on ties); [0, 100] */
    int top_k;                /* 0: off; >= 0 (above the vocabulary: off) */
    float top_p;              /* 1: off; (0, 1] */
    float min_p;              /* 0: off; [0, 1]: drop tokens with p < min_p * p_max */
    float presence_penalty;   /* 0: off; [-2, 2], OpenAI semantics, over generated tokens */
    float frequency_penalty;  /* 0: off; [-2, 2], OpenAI semantics, over generated tokens */
    float repetition_penalty; /* 1: off (0, the zero-initialised value, is off too); (0, 10],
                                 CTRL / HF semantics over prompt + generated tokens (vLLM's convention) */
    uint64_t seed;
    const sampler_bias_t *bias; /* (n_bias) logit_bias; ids in [0, vocab), values in [-100, 100]; the
                                   sampler keeps its own dense copy, so the array may go after init */
    int n_bias;
} sampler_params_t;

/* Every filter and penalty off, greedy. */
sampler_params_t sampler_params_default(void);

typedef struct sampler_cand {
    float l; /* penalised logit */
    int32_t id;
} sampler_cand_t;

typedef struct sampler {
    sampler_params_t p;
    rng_t rng;
    int vocab;
    int32_t *count;    /* (vocab) times each id was generated */
    uint8_t *seen;     /* (vocab) 1: in the prompt or generated (repetition penalty) */
    int32_t *seen_ids; /* (vocab) the ids with seen set, in the order they came: the penalties' */
    int n_seen;
    int32_t *biased; /* (n_biased) the ids with a logit_bias, each once */
    int n_biased;
    int32_t n_accepted;   /* generated tokens so far */
    float *l;             /* (vocab) scratch: penalised logits */
    const float *lv;      /* the last draw's penalised logits: l, or (greedy with nothing to apply) the
                             caller's logits themselves, NaN there standing for -inf */
    float *w;             /* (vocab) scratch: unnormalised probabilities, 1 at the maximum */
    sampler_cand_t *cand; /* (vocab) scratch: candidates being ranked */
    int32_t *ids;         /* (vocab) scratch: candidate ids; after a sparse draw, its kept ids ascending */
    int n_kept;           /* the kept ids of the last draw, when is_sparse */
    bool is_sparse;       /* the last draw kept ids[0, n_kept) with w[id] > 0; otherwise w is dense */
    float lmax;           /* the last non-greedy draw's largest penalised logit */
    const uint32_t *mask; /* during a masked call: bit (id & 31) of mask[id >> 5] set = allowed */
    float *bias;          /* (vocab) dense logit_bias, or NULL when none */
    double kept;          /* the kept mass of the last non-greedy draw (sampler_logprobs) */
} sampler_t;

/* Validates every field (the message names the one at fault) and allocates
 * the per-request history and scratch, O(vocab). */
int sampler_init(sampler_t *s, const sampler_params_t *p, int vocab, err_t *err);
void sampler_free(sampler_t *s);
/* Forgets the history and reseeds from p.seed, for reuse by another request
 * with the same parameters (O(vocab) memset, no allocation). */
void sampler_reset(sampler_t *s);

void sampler_accept_prompt(sampler_t *s, const int32_t *ids, int n); /* prompt tokens (for repetition_penalty) */
void sampler_accept(sampler_t *s, int32_t id);                       /* a generated token (all penalties) */
/* Ids outside [0, vocab) are ignored by both. */

/* Draws the next token (one uniform from the generator unless greedy). */
int32_t sampler_sample(sampler_t *s, const float *logits);
/* The same with a token mask (structured output): a token whose bit is
 * clear counts as a -inf logit before every other step, so masks combine
 * with every penalty and filter; the draw only ever picks an allowed token
 * (the first allowed one if every allowed logit is -inf). mask must allow
 * at least one token. */
int32_t sampler_sample_masked(sampler_t *s, const float *logits, const uint32_t *mask);
void sampler_distribution_masked(sampler_t *s, const float *logits, const uint32_t *mask, double *probs);
/* The final distribution the next sample would be drawn from (after
 * penalties, temperature, filters), for tests and speculative verification:
 * writes probabilities summing to 1 into probs[vocab] (0 for filtered
 * tokens; greedy puts 1 on the argmax). Does not advance the generator. */
void sampler_distribution(sampler_t *s, const float *logits, double *probs);

/* Log-probabilities of the distribution the last sampler_sample* call drew
 * from (call it right after, with no other call between): chosen's, and the
 * n_top (<= SAMPLER_MAX_TOP_LOGPROBS) most likely tokens in top[], most
 * likely first (ties: lower id). Which distribution:
 *   temperature > 0: the one drawn from: penalties, logit_bias, mask,
 *     temperature, top_k / top_p / min_p; filtered tokens have probability
 *     0 and are never listed, so fewer than n_top may come back;
 *   greedy: the log-softmax (temperature 1, no filters) of the logits the
 *     argmax was taken of: penalties, logit_bias and mask applied (with none
 *     of those set, the raw logits).
 * Returns the number of entries written to top. Uses the sampler's scratch
 * (a vector scan for the most likely ids; greedy's normaliser a vector
 * pass, ops_exp_weights at temperature 1, within 2e-7 of exp). */
int sampler_logprobs(sampler_t *s, int32_t chosen, int n_top, float *chosen_logprob, sampler_logprob_t *top);

#endif
