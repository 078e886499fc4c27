/* Speculative decoding: drafters and the verify-width policy.
 *
 * A drafter proposes up to k tokens to follow a sequence; the target model
 * verifies them in the same engine step as everything else (1 + k rows).
 * Drafters here are deterministic (their proposal is a point mass, q
 * one-hot), so exact speculative sampling reduces to: sample the target's
 * token at each row exactly as without speculation, and accept the draft
 * while the sample equals it (accepting with probability p(d) and otherwise
 * drawing from p without d is precisely the rejection rule min(1, p/q) with
 * the residual (p - q)+). The output is therefore token for token what
 * decoding without speculation produces, for greedy and for seeded sampling.
 *
 * The verify width (how many drafted tokens a step verifies) is `all`, a
 * fixed N, or `auto`: spec_fitter_t chooses the width that maximises the
 * expected committed tokens per second (docs/architecture.md, "Speculative
 * decoding"). */
#ifndef SPLASH_SPEC_H
#define SPLASH_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#define SPEC_MAX_DRAFT 16     /* --draft-max limit */
#define SPEC_NGRAM_MAX 8      /* longest suffix the n-gram drafter matches */
#define SPEC_VERIFY_ALL (-1)  /* --verify-rows all */
#define SPEC_VERIFY_AUTO (-2) /* --verify-rows auto */

/* N-gram prompt lookup: finds the longest suffix of hist (up to
 * SPEC_NGRAM_MAX tokens, at least 1) that also occurs earlier in hist, at its
 * most recent earlier occurrence, and proposes the k tokens that followed it,
 * reading on into the proposal itself where hist ends (the pattern repeats:
 * "x y x y" proposes "x y x y ..."). Returns k, or 0 when nothing matches. */
int spec_ngram_draft(const int32_t *hist, int n, int k, int32_t *out);

/* ---- the adaptive fitter (verify-rows auto) ---- */

#define SPEC_FIT_EXPLORE_EVERY 32 /* steps between exploration of another width */
#define SPEC_FIT_HYSTERESIS 1.05  /* switch only for a 5 % better expected rate */
#define SPEC_FIT_COLLAPSE 0.05    /* first-position acceptance below this: no speculation */
#define SPEC_FIT_DECAY 0.99       /* weight kept by past verifications at each new one */

typedef struct spec_fitter {
    int max_width; /* --draft-max */
    /* per-position conditional acceptance: of the drafts verified at position
     * i (1-based) whose predecessors were all accepted, how many were
     * accepted; positions a width cut off are censored, never counted. The
     * counts decay by SPEC_FIT_DECAY per verification, so the estimates follow
     * a workload that changes (about the last 1 / (1 - decay) verifications). */
    double verified[SPEC_MAX_DRAFT + 1];
    double accepted[SPEC_MAX_DRAFT + 1];
    uint64_t total_verified[SPEC_MAX_DRAFT + 1]; /* undecayed totals, for /status */
    uint64_t total_accepted[SPEC_MAX_DRAFT + 1];
    /* step cost by width: an exponentially weighted mean of measured step
     * times over steps run at that width, and how many were seen */
    double cost_ns[SPEC_MAX_DRAFT + 1];
    uint64_t cost_n[SPEC_MAX_DRAFT + 1];
    int width;                           /* the width in use */
    uint64_t steps;                      /* steps observed */
    uint64_t chosen[SPEC_MAX_DRAFT + 1]; /* histogram of widths used */
    int exploring;                       /* -1, or the width being tried this step */
} spec_fitter_t;

void spec_fitter_init(spec_fitter_t *f, int max_width);
/* Conditional acceptance estimate at position i (1-based): the decayed
 * counts plus a prior worth two verifications, centred on position i - 1's
 * estimate (position 1: on 1/2, i.e. Beta(1, 1)). */
double spec_fitter_accept(const spec_fitter_t *f, int i);
/* Expected committed tokens per sequence per step at width w:
 * 1 + sum over i <= w of the product of acceptances up to i. */
double spec_fitter_expected(const spec_fitter_t *f, int w);
/* Estimated step time at width w (measured, or extrapolated linearly from
 * the widths measured so far). */
double spec_fitter_cost(const spec_fitter_t *f, int w);
/* The width for the next step. */
int spec_fitter_choose(spec_fitter_t *f);
/* After a step run at width w that took step_ns. */
void spec_fitter_step(spec_fitter_t *f, int w, int64_t step_ns);
/* One verification: n_verified drafted positions compared, the first
 * n_accepted of them accepted. */
void spec_fitter_verify(spec_fitter_t *f, int n_verified, int n_accepted);
/* A shadow observation: drafts the drafter proposed at a step that verified
 * none (width 0), compared afterwards with the tokens the sequence went on to
 * commit, n_compared positions of which the first n_matched matched. Each
 * committed token is sampled as a verify row would sample it, so "committed
 * == draft" is the acceptance event itself: the estimates learn from it as
 * from a verification, at no cost, and a fitter that fell back to no
 * speculation sees acceptance come back. The /status totals count
 * verifications only, so they leave it out. */
void spec_fitter_observe(spec_fitter_t *f, int n_compared, int n_matched);

#endif
