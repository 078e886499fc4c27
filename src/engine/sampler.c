#include "engine/sampler.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"

/* The first candidate threshold on w (w is 1 at the most likely token) and
 * the factor it is lowered by until the candidates provably hold every
 * survivor of the filters; below the floor the threshold drops to 0. */
#define SAMPLER_FIRST_THRESHOLD 1e-3f
#define SAMPLER_THRESHOLD_STEP 1e-3f
#define SAMPLER_THRESHOLD_FLOOR 1e-30f
/* How far below log(t) the sparse path's candidates reach, in units of
 * (l - l_max) / T: past every rounding of that quotient and of expf, so
 * the candidates hold every id with w >= t. */
#define SAMPLER_Z_MARGIN 1e-2f
/* Candidates past vocab / this: the dense path (a near-flat distribution). */
#define SAMPLER_SPARSE_DIV 16
/* Where sampler_logprobs looks for the most likely ids, in turn, in units
 * of (l - l_max) / T (weights down to e^-1, e^-4, e^-16 of the maximum's;
 * then every id). */
#define SAMPLER_LOGPROB_Z                                                                                              \
    {                                                                                                                  \
        -1.0f, -4.0f, -16.0f                                                                                           \
    }
/* The ids top_p_cut ranks by quickselect, at most (more: its bisection
 * goes on). */
#define SAMPLER_BOUNDARY_IDS 1024
/* Where top_p_cut's first probe goes, in temperatures below the maximum. */
#define SAMPLER_TOP_P_FIRST_Z 2.0f
/* Bisection steps narrow_top_k takes at most (each a vector scan). */
#define SAMPLER_NARROW_STEPS 24

sampler_params_t sampler_params_default(void)
{
    return (sampler_params_t){.temperature = 0.0f, .top_p = 1.0f, .repetition_penalty = 1.0f};
}

/* Range checks written so that NaN fails them. */
static int check_params(const sampler_params_t *p, int vocab, err_t *err)
{
    if (vocab <= 0)
        return err_set(err, "sampler: vocabulary size must be positive, got %d", vocab);
    if (!(p->temperature >= 0.0f && p->temperature <= SAMPLER_MAX_TEMPERATURE))
        return err_set(err, "sampler: temperature must be in [0, %g], got %g", (double)SAMPLER_MAX_TEMPERATURE,
                       (double)p->temperature);
    if (p->top_k < 0)
        return err_set(err, "sampler: top_k must be >= 0 (0: off), got %d", p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return err_set(err, "sampler: top_p must be in (0, 1] (1: off), got %g", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return err_set(err, "sampler: min_p must be in [0, 1] (0: off), got %g", (double)p->min_p);
    if (!(fabsf(p->presence_penalty) <= SAMPLER_MAX_ABS_PENALTY))
        return err_set(err, "sampler: presence_penalty must be in [-%g, %g], got %g", (double)SAMPLER_MAX_ABS_PENALTY,
                       (double)SAMPLER_MAX_ABS_PENALTY, (double)p->presence_penalty);
    if (!(fabsf(p->frequency_penalty) <= SAMPLER_MAX_ABS_PENALTY))
        return err_set(err, "sampler: frequency_penalty must be in [-%g, %g], got %g", (double)SAMPLER_MAX_ABS_PENALTY,
                       (double)SAMPLER_MAX_ABS_PENALTY, (double)p->frequency_penalty);
    if (!(p->repetition_penalty >= 0.0f && p->repetition_penalty <= SAMPLER_MAX_REPETITION_PENALTY))
        return err_set(err, "sampler: repetition_penalty must be in (0, %g] (1: off), got %g",
                       (double)SAMPLER_MAX_REPETITION_PENALTY, (double)p->repetition_penalty);
    if (p->n_bias < 0 || p->n_bias > SAMPLER_MAX_BIASED || (p->n_bias && !p->bias))
        return err_set(err, "logit_bias: at most %d entries, got %d", SAMPLER_MAX_BIASED, p->n_bias);
    for (int i = 0; i < p->n_bias; i++) {
        if (p->bias[i].id < 0 || p->bias[i].id >= vocab)
            return err_set(err, "logit_bias: token id %d is outside the vocabulary [0, %d)", p->bias[i].id, vocab);
        if (!(fabsf(p->bias[i].bias) <= SAMPLER_MAX_BIAS))
            return err_set(err, "logit_bias: the bias of token %d must be in [-%g, %g], got %g", p->bias[i].id,
                           (double)SAMPLER_MAX_BIAS, (double)SAMPLER_MAX_BIAS, (double)p->bias[i].bias);
    }
    return 0;
}

int sampler_init(sampler_t *s, const sampler_params_t *p, int vocab, err_t *err)
{
    memset(s, 0, sizeof *s);
    if (check_params(p, vocab, err))
        return -1;
    s->p = *p;
    if (s->p.repetition_penalty == 0.0f)
        s->p.repetition_penalty = 1.0f; /* zero-initialised params: off */
    if (s->p.top_k >= vocab)
        s->p.top_k = 0;
    s->vocab = vocab;
    size_t n = (size_t)vocab;
    s->count = calloc(n, sizeof *s->count);
    s->seen = calloc(n, sizeof *s->seen);
    s->l = malloc(n * sizeof *s->l);
    s->w = malloc(n * sizeof *s->w);
    s->cand = malloc(n * sizeof *s->cand);
    s->ids = malloc(n * sizeof *s->ids);
    s->seen_ids = malloc(n * sizeof *s->seen_ids);
    s->lv = s->l;
    if (p->n_bias)
        s->bias = calloc(n, sizeof *s->bias);
    if (p->n_bias)
        s->biased = malloc((size_t)p->n_bias * sizeof *s->biased);
    if (!s->count || !s->seen || !s->l || !s->w || !s->cand || !s->ids || !s->seen_ids ||
        (p->n_bias && (!s->bias || !s->biased))) {
        sampler_free(s);
        return err_set(err, "sampler: out of memory for a %d-token vocabulary", vocab);
    }
    for (int i = 0; i < p->n_bias; i++) {
        const int32_t id = p->bias[i].id;
        if (!s->seen[id]) { /* seen is all zero here: it marks the ids listed so far */
            s->seen[id] = 1;
            s->biased[s->n_biased++] = id;
        }
        s->bias[id] = p->bias[i].bias; /* a repeated id: the last value */
    }
    for (int j = 0; j < s->n_biased; j++)
        s->seen[s->biased[j]] = 0;
    s->p.bias = NULL; /* the caller's array is not kept */
    s->p.n_bias = 0;
    rng_seed(&s->rng, p->seed);
    return 0;
}

void sampler_free(sampler_t *s)
{
    free(s->count);
    free(s->seen);
    free(s->l);
    free(s->w);
    free(s->cand);
    free(s->ids);
    free(s->seen_ids);
    free(s->biased);
    free(s->bias);
    s->bias = NULL;
    s->count = NULL;
    s->seen = NULL;
    s->l = s->w = NULL;
    s->lv = NULL;
    s->cand = NULL;
    s->ids = NULL;
    s->seen_ids = NULL;
    s->biased = NULL;
}

void sampler_reset(sampler_t *s)
{
    memset(s->count, 0, (size_t)s->vocab * sizeof *s->count);
    memset(s->seen, 0, (size_t)s->vocab * sizeof *s->seen);
    s->n_seen = 0;
    s->n_accepted = 0;
    rng_seed(&s->rng, s->p.seed);
}

static void see(sampler_t *s, int32_t id)
{
    if (!s->seen[id]) {
        s->seen[id] = 1;
        s->seen_ids[s->n_seen++] = id;
    }
}

void sampler_accept_prompt(sampler_t *s, const int32_t *ids, int n)
{
    for (int i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < s->vocab)
            see(s, ids[i]);
}

void sampler_accept(sampler_t *s, int32_t id)
{
    if (id < 0 || id >= s->vocab)
        return;
    see(s, id);
    if (s->count[id] < INT32_MAX)
        s->count[id]++;
    s->n_accepted++;
}

static bool mask_has(const uint32_t *mask, int i)
{
    return (mask[i >> 5] >> (i & 31)) & 1u;
}

/* Whether the mask allows more than k ids. */
static bool mask_allows_more(const uint32_t *mask, int vocab, int k)
{
    int n = 0;
    for (int w = 0; w < (vocab + 31) / 32 && n <= k; w++)
        n += __builtin_popcount(mask[w]);
    return n > k;
}

static int32_t first_allowed(const uint32_t *mask, int vocab)
{
    for (int i = 0; i < vocab; i++)
        if (mask_has(mask, i))
            return i;
    return 0;
}

/* Step 1: s->l = the penalised logits (NaN and masked-out tokens as -inf);
 * s->lv = s->l, or the caller's logits where greedy has nothing to apply.
 * Returns the argmax, the lowest id on ties (0, or the first allowed token
 * under a mask, when every logit is -inf). */
static int32_t penalise(sampler_t *s, const float *logits)
{
    const float r = s->p.repetition_penalty, freq = s->p.frequency_penalty, pres = s->p.presence_penalty;
    const bool has_rep = r != 1.0f, has_counts = s->n_accepted > 0 && (freq != 0.0f || pres != 0.0f);
    const uint32_t *mask = s->mask;
    const float *bias = s->bias;
    float *l = s->l;
    /* nothing to apply (a plain request): the same pick, vectorised; greedy
     * over the caller's logits as they are, not copied (a decode step of 4
     * sequences spent 2.4 % of its time writing 4 x 600 KB of copies;
     * logprobs read the caller's logits, s->lv), a draw into the copy its
     * weights come from */
    if (!has_rep && !has_counts && !mask && !bias) {
        if (s->p.temperature == 0.0f) {
            s->lv = logits;
            return (int32_t)ops_argmax(logits, s->vocab);
        }
        s->lv = l;
        return (int32_t)ops_argmax_copy(l, logits, s->vocab);
    }
    s->lv = l;
    /* the copy (NaN and, under a mask, the ids it does not allow as -inf)
     * and its pick; penalties and biases touch the seen and biased ids
     * alone, as step 1 (sampler.h) applies them (-inf stays -inf: a mask
     * wins over any bias), then the pick again */
    int32_t best =
        (int32_t)(mask ? ops_argmax_copy_masked(l, logits, mask, s->vocab) : ops_argmax_copy(l, logits, s->vocab));
    for (int j = 0; (has_rep || has_counts) && j < s->n_seen; j++) {
        const int32_t i = s->seen_ids[j];
        float v = l[i];
        if (has_rep)
            v = v > 0.0f ? v / r : v * r;
        if (has_counts && s->count[i] > 0) {
            float f = (float)s->count[i] * freq;
            v = v - f;
            v = v - pres;
        }
        l[i] = v;
    }
    for (int j = 0; bias && j < s->n_biased; j++)
        l[s->biased[j]] += bias[s->biased[j]];
    if (has_rep || has_counts || bias)
        best = (int32_t)ops_argmax(l, s->vocab);
    if (mask && l[best] == -INFINITY) /* nothing allowed above -inf: the first allowed */
        best = first_allowed(mask, s->vocab);
    return best;
}

/* Step 2: s->w = exp((l - l_max) / T) (ops_exp_weight), 1 at the maximum.
 * Returns their sum (ops_exp_weights' order). An infinite maximum shares
 * the mass among the tokens at it. */
static double weigh(sampler_t *s, int32_t best)
{
    const float lmax = s->l[best], t = s->p.temperature;
    const float *l = s->l;
    float *w = s->w;
    double sum = 0.0;
    if (isinf(lmax)) {
        for (int i = 0; i < s->vocab; i++) {
            w[i] = l[i] == lmax && (!s->mask || mask_has(s->mask, i)) ? 1.0f : 0.0f;
            sum += w[i];
        }
    } else {
        sum = ops_exp_weights(w, l, s->vocab, lmax, t);
    }
    return sum;
}

/* The ranking of step 3: by penalised logit, descending, then lower id. */
static bool ranks_before(float la, int32_t ia, float lb, int32_t ib)
{
    return la > lb || (la == lb && ia < ib);
}

static bool cand_before(sampler_cand_t a, sampler_cand_t b)
{
    return ranks_before(a.l, a.id, b.l, b.id);
}

static void swap_cand(sampler_cand_t *a, sampler_cand_t *b)
{
    sampler_cand_t t = *a;
    *a = *b;
    *b = t;
}

/* Partitions c[0, n) (n >= 2) around a median-of-three pivot: returns p
 * with c[0, p) ranked before c[p] and c(p, n) after it. */
static int partition(sampler_cand_t *c, int n)
{
    int mid = n / 2;
    if (cand_before(c[mid], c[0]))
        swap_cand(&c[mid], &c[0]);
    if (cand_before(c[n - 1], c[0]))
        swap_cand(&c[n - 1], &c[0]);
    if (cand_before(c[n - 1], c[mid]))
        swap_cand(&c[n - 1], &c[mid]);
    swap_cand(&c[mid], &c[n - 1]); /* the median is the pivot, at the end */
    sampler_cand_t pivot = c[n - 1];
    int p = 0;
    for (int i = 0; i < n - 1; i++)
        if (cand_before(c[i], pivot))
            swap_cand(&c[i], &c[p++]);
    swap_cand(&c[p], &c[n - 1]);
    return p;
}

/* Moves the first k of the ranking into c[0, k), in no particular order
 * (quickselect, expected O(n)). */
static void select_top(sampler_cand_t *c, int n, int k)
{
    int lo = 0, hi = n;
    while (hi - lo > 1) {
        int p = lo + partition(c + lo, hi - lo);
        if (p == k || p == k - 1)
            return;
        if (p > k)
            hi = p;
        else
            lo = p + 1;
    }
}

/* The last candidate of c[0, n) in the ranking. */
static sampler_cand_t last_ranked(const sampler_cand_t *c, int n)
{
    sampler_cand_t last = c[0];
    for (int i = 1; i < n; i++)
        if (cand_before(last, c[i]))
            last = c[i];
    return last;
}

/* top_p's cut: the candidate whose mass ranked before it is below need and,
 * with its own, reaches need (a weighted quickselect, expected O(n)).
 * Returns false when rounding leaves the whole set short of need. */
static bool select_mass(sampler_cand_t *c, int n, const float *w, double need, sampler_cand_t *cut)
{
    int lo = 0, hi = n;
    double before = 0.0; /* mass ranked before c[lo, hi) */
    while (hi - lo > 1) {
        int p = lo + partition(c + lo, hi - lo);
        double left = 0.0;
        for (int i = lo; i < p; i++)
            left += w[c[i].id];
        if (before + left >= need) {
            hi = p;
        } else if (before + left + w[c[p].id] >= need) {
            *cut = c[p];
            return true;
        } else {
            before += left + w[c[p].id];
            lo = p + 1;
        }
    }
    if (lo == hi || before + w[c[lo].id] < need)
        return false;
    *cut = c[lo];
    return true;
}

/* top_k's candidates when those above zmin are too many (a flat
 * distribution): any prefix of the ranking holding k ids holds top_k's
 * set, so the cut is raised, by bisection between zmin and 0, until the
 * candidates number between k and the sparse path's cap. Returns how many
 * (s->ids holds them), or 0 (ties leave no such cut: the dense path). */
static int narrow_top_k(sampler_t *s, float lmax, float zmin, int n)
{
    const int k = s->p.top_k, cap = s->vocab / SAMPLER_SPARSE_DIV;
    const float inv_t = 1.0f / s->p.temperature;
    if (zmin < -87.0f) /* the last threshold: fewer than k ids weigh anything */
        return 0;
    float lo = zmin, hi = 0.0f; /* above lo: too many; at hi: maybe too few */
    for (int it = 0; it < SAMPLER_NARROW_STEPS && (n < k || n > cap); it++) {
        const float mid = 0.5f * (lo + hi);
        n = (int)ops_collect_ge(s->ids, s->l, s->vocab, lmax, inv_t, mid, cap);
        if (n > cap)
            lo = mid;
        else if (n < k)
            hi = mid;
    }
    return n >= k && n <= cap ? n : 0;
}

/* cut_by_thresholds' answer when the sparse path's candidates are too many. */
#define SAMPLER_GO_DENSE (-1)

/* Steps 4 and 5 (and how far 6 reaches). Their survivors are a prefix of
 * the ranking, described by the last one kept, *cut. Only candidates with
 * w >= t are looked at, t lowered until they provably hold every survivor:
 * any set {w >= t} is itself a prefix of the ranking, and once t <= min_p
 * it holds everything min_p (step 6) keeps. Dense: the candidates are read
 * off s->w over the vocabulary (weigh() filled it, total_all its sum).
 * Sparse (a finite maximum): they are the ids with
 *   (l - l_max) / T >= log(t) - SAMPLER_Z_MARGIN
 * (every id with w >= t among them, whatever expf rounds) from the vector
 * scan ops_collect_ge, w is computed for them alone, and total_all, where
 * top_p without top_k needs it, once (total_all < 0 until then). Returns 1
 * with *cut set, or SAMPLER_GO_DENSE when the sparse candidates are more
 * than a SAMPLER_SPARSE_DIV-th of the vocabulary (a near-flat row) and
 * top_k cannot narrow them. *n_out: how many candidates the cut was found
 * among (sparse: their ids in s->ids[0, *n_out), in id order). */
static int cut_by_thresholds(sampler_t *s, bool sparse, double total_all, sampler_cand_t *cut, int *n_out)
{
    const int k = s->p.top_k;
    const float top_p = s->p.top_p, min_p = s->p.min_p, lmax = s->lmax, T = s->p.temperature;
    const bool use_p = top_p<1.0f, use_min = min_p> 0.0f;
    float *w = s->w;
    const float *l = s->l;
    sampler_cand_t *c = s->cand;
    int32_t *ids = s->ids;
    /* the sparse path's bound on its candidates; their scan stops once
     * past it and top_k, the two counts it is compared with (a near-flat
     * row's scan then stops early instead of listing most of the vocabulary) */
    const int cap = s->vocab / SAMPLER_SPARSE_DIV, scan_cap = cap > k ? cap : k;
    float t = use_min && min_p > SAMPLER_FIRST_THRESHOLD ? min_p : SAMPLER_FIRST_THRESHOLD;
    if (sparse && k && s->mask && !mask_allows_more(s->mask, s->vocab, k))
        t = 0.0f; /* top_k's set is whatever weighs anything: the last threshold at once */
    for (;; t = t < SAMPLER_THRESHOLD_FLOOR ? 0.0f : t * SAMPLER_THRESHOLD_STEP) {
        if (use_min && t < min_p && t * (1.0f / SAMPLER_THRESHOLD_STEP) > min_p)
            t = min_p; /* never step over min_p */
        const bool is_last = t == 0.0f, holds_min = use_min && t <= min_p;
        /* sparse, the last threshold: every id whose weight is not 0
         * (ops_exp_weight cuts below -87), so a masked row's few allowed
         * ids stay few */
        const float zmin = (is_last ? -87.0f : logf(t)) - SAMPLER_Z_MARGIN;
        int n = 0;
        if (sparse) {
            n = (int)ops_collect_ge(ids, l, s->vocab, lmax, 1.0f / T, zmin, scan_cap);
        } else {
            for (int i = 0; i < s->vocab; i++)
                if (w[i] >= t)
                    c[n++] = (sampler_cand_t){l[i], i};
        }
        if (k ? n < k && !is_last && !(holds_min && !use_p) : !use_p && !holds_min && !is_last)
            continue; /* top_k's set, or min_p's, reaches past the candidates */
        if (sparse) {
            if (n > cap && !(k && (n = narrow_top_k(s, lmax, zmin, n)) > 0))
                return SAMPLER_GO_DENSE;
            for (int i = 0; i < n; i++)
                c[i] = (sampler_cand_t){l[ids[i]], ids[i]};
        }
        *n_out = n;
        int n_top = n;
        if (k && n > k) {
            select_top(c, n, k);
            n_top = k;
        }
        double mass = 0.0;
        for (int i = 0; i < n_top; i++) {
            if (sparse)
                w[c[i].id] = ops_exp_weight((c[i].l - lmax) / T);
            mass += w[c[i].id];
        }
        if (!use_p) {
            *cut = last_ranked(c, n_top);
            return 1;
        }
        if (!k && total_all < 0.0)
            total_all = ops_exp_weights(NULL, l, s->vocab, lmax, T);
        const double need = (double)top_p * (k ? mass : total_all);
        const bool may_look_further = !k && !holds_min && !is_last;
        if (may_look_further && mass < need)
            continue;
        if (select_mass(c, n_top, w, need, cut))
            return 1;
        if (may_look_further)
            continue;
        *cut = last_ranked(c, n_top);
        return 1;
    }
}

/* Steps 4 and 5 over dense weights (total_all their sum); false when
 * neither is set. */
static bool filter(sampler_t *s, double total_all, sampler_cand_t *cut)
{
    int n;
    return (s->p.top_k || s->p.top_p < 1.0f) && cut_by_thresholds(s, false, total_all, cut, &n) == 1;
}

/* top_p's cut (without top_k) over dense weights whose mass is total and
 * whose maximum is finite: the last id the ranking keeps. The logit range
 * is halved (ops_mass_ge: the mass and number of ids at or above a logit)
 * until the ids between lo and hi, where the mass at or above lo reaches
 * need and that at or above hi does not, number at most
 * SAMPLER_BOUNDARY_IDS; the cut is then found among them alone by the
 * mass-weighted quickselect, the mass above hi ranked before them. No pass
 * but vector ones over the vocabulary, where filter() would rank a
 * near-flat distribution's hundred thousand candidates. */
static bool top_p_cut(sampler_t *s, double total, sampler_cand_t *cut)
{
    const float lmax = s->lmax, *l = s->l;
    const double need = (double)s->p.top_p * total;
    float lo = lmax - 88.0f * s->p.temperature, hi = nextafterf(lmax, INFINITY);
    int64_t n_lo = 0, n_hi = 0;
    double m_lo = 0.0, m_hi = 0.0;
    /* from 2 temperatures below the maximum, doubling down until the mass
     * reaches need: the dense path's rows are near-flat, their cut a few
     * temperatures down, where probes a quarter, a half and one below were
     * passes spent (a cut less than 2 below: the bisection starts from the
     * maximum); at 88 below, every weight is in */
    for (float z = SAMPLER_TOP_P_FIRST_Z;; z *= 2.0f) {
        const float at = z < 88.0f ? lmax - z * s->p.temperature : lo;
        m_lo = ops_mass_ge(s->w, l, s->vocab, at, &n_lo);
        if (m_lo >= need || !(z < 88.0f)) {
            lo = at;
            break;
        }
        hi = at, m_hi = m_lo, n_hi = n_lo;
    }
    if (!(m_lo >= need)) /* below lo every weight is 0: short only by rounding */
        return false;
    for (int it = 0; it < SAMPLER_NARROW_STEPS * 2 && n_lo - n_hi > SAMPLER_BOUNDARY_IDS; it++) {
        const float mid = lo + 0.5f * (hi - lo);
        if (!(mid > lo && mid < hi))
            break; /* adjacent floats */
        int64_t n_mid;
        const double m_mid = ops_mass_ge(s->w, l, s->vocab, mid, &n_mid);
        if (m_mid >= need)
            lo = mid, m_lo = m_mid, n_lo = n_mid;
        else
            hi = mid, m_hi = m_mid, n_hi = n_mid;
    }
    if (n_lo - n_hi > s->vocab / SAMPLER_SPARSE_DIV)
        return filter(s, total, cut); /* ties pile up in one logit: the candidates' way */
    sampler_cand_t *c = s->cand;
    const int n = (int)ops_collect_range(s->ids, l, s->vocab, lo, hi);
    for (int i = 0; i < n; i++)
        c[i] = (sampler_cand_t){l[s->ids[i]], s->ids[i]};
    if (n && select_mass(c, n, s->w, need - m_hi, cut))
        return true;
    if (n) /* rounding left the boundary short: all of it */
        *cut = last_ranked(c, n);
    return n > 0;
}

/* Steps 3 to 6 from candidates alone (cut_by_thresholds' sparse way),
 * when a filter is set and the maximum is finite; the kept ids, ascending,
 * end in s->ids[0, s->n_kept). No pass over the vocabulary but the
 * candidates' vector scans (and, for top_p without top_k, the whole mass,
 * ops_exp_weights). Returns false, leaving the dense path to it, when
 * there is no filter, the maximum is infinite, or the candidates are too
 * many (SAMPLER_GO_DENSE). */
static bool prepare_sparse(sampler_t *s)
{
    const float min_p = s->p.min_p;
    if ((!s->p.top_k && s->p.top_p >= 1.0f && min_p <= 0.0f) || isinf(s->lmax))
        return false;
    sampler_cand_t cut;
    int n;
    if (cut_by_thresholds(s, true, -1.0, &cut, &n) != 1)
        return false;
    /* the kept: ranked no later than the cut (so within top_k's set), w >=
     * min_p and w > 0, in id order as the candidates came */
    const float *w = s->w;
    int32_t *ids = s->ids;
    int m = 0;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        const int32_t id = ids[i];
        if (!ranks_before(cut.l, cut.id, s->l[id], id) && w[id] >= min_p && w[id] > 0.0f) {
            ids[m++] = id;
            sum += w[id];
        }
    }
    s->n_kept = m;
    s->is_sparse = true;
    s->kept = sum;
    return true;
}

/* Steps 1 to 6: leaves s->w zero for filtered tokens (or, sparse, the kept
 * ids in s->ids) and returns the kept mass. */
static double prepare(sampler_t *s, const float *logits)
{
    int32_t best = penalise(s, logits);
    s->lmax = s->l[best];
    if (prepare_sparse(s))
        return s->kept;
    s->is_sparse = false;
    double sum = weigh(s, best);
    sampler_cand_t cut = {-INFINITY, INT32_MAX}; /* no cut: every id ranks before it */
    const bool has_cut =
        !s->p.top_k && s->p.top_p < 1.0f && !isinf(s->lmax) ? top_p_cut(s, sum, &cut) : filter(s, sum, &cut);
    const float min_p = s->p.min_p; /* w is 1 at p_max: a ratio test */
    if (!has_cut && min_p == 0.0f)
        return sum;
    return ops_keep_ranked(s->w, s->l, s->vocab, cut.l, cut.id, min_p);
}

int32_t sampler_sample_masked(sampler_t *s, const float *logits, const uint32_t *mask)
{
    s->mask = mask;
    int32_t id = sampler_sample(s, logits);
    s->mask = NULL;
    return id;
}

void sampler_distribution_masked(sampler_t *s, const float *logits, const uint32_t *mask, double *probs)
{
    s->mask = mask;
    sampler_distribution(s, logits, probs);
    s->mask = NULL;
}

int32_t sampler_sample(sampler_t *s, const float *logits)
{
    if (s->p.temperature == 0.0f)
        return penalise(s, logits);
    double sum = prepare(s, logits);
    s->kept = sum;
    /* step 7: inverse CDF in id order */
    double u = rng_uniform(&s->rng) * sum, acc = 0.0;
    int32_t last = 0;
    if (s->is_sparse) {
        for (int j = 0; j < s->n_kept; j++) {
            last = s->ids[j];
            acc += s->w[last];
            if (u < acc)
                return last;
        }
        return last; /* rounding left u at the very top */
    }
    /* a block of 16 at a time: its mass as a tree of sums (no chain of
     * additions through the whole vocabulary; ops_mass_walk), then id by
     * id inside the block u falls in */
    const float *w = s->w;
    for (int64_t b = 0; (b += ops_mass_walk(w + b, s->vocab - b, u, &acc)) < s->vocab; b += 16) {
        const int e = b + 16 < s->vocab ? (int)b + 16 : s->vocab;
        double a = acc;
        for (int i = (int)b; i < e; i++)
            if (w[i] != 0.0f && u < (a += w[i]))
                return i;
        acc += ops_block_mass(w + b, e - (int)b); /* rounding left u past the block's ids one by one: on to the next */
    }
    for (last = s->vocab - 1; last > 0 && w[last] == 0.0f; last--)
        ;
    return last; /* rounding left u at the very top */
}

void sampler_distribution(sampler_t *s, const float *logits, double *probs)
{
    if (s->p.temperature == 0.0f) {
        memset(probs, 0, (size_t)s->vocab * sizeof *probs);
        probs[penalise(s, logits)] = 1.0;
        return;
    }
    double sum = prepare(s, logits);
    if (s->is_sparse) {
        memset(probs, 0, (size_t)s->vocab * sizeof *probs);
        for (int j = 0; j < s->n_kept; j++)
            probs[s->ids[j]] = s->w[s->ids[j]] / sum;
        return;
    }
    for (int i = 0; i < s->vocab; i++)
        probs[i] = s->w[i] / sum;
}

/* Inserts (id, l) into top[0, *n) kept in ranking order, at most cap long. */
static void top_insert(sampler_cand_t *top, int *n, int cap, int32_t id, float l)
{
    if (*n == cap && !ranks_before(l, id, top[cap - 1].l, top[cap - 1].id))
        return;
    int at = *n < cap ? (*n)++ : cap - 1;
    while (at > 0 && ranks_before(l, id, top[at - 1].l, top[at - 1].id)) {
        top[at] = top[at - 1];
        at--;
    }
    top[at] = (sampler_cand_t){l, id};
}

/* log p of a token whose penalised logit is l, given the maximum lmax and
 * log of the normaliser (in units of exp((l - lmax) / t)). */
static float logprob_of(float l, float lmax, float t, double log_norm)
{
    if (isinf(lmax))
        return l == lmax ? (float)-log_norm : -INFINITY;
    return (float)((double)(l - lmax) / t - log_norm);
}

/* The last draw's penalised logit of id, NaN (only ever in the caller's
 * logits, s->lv's greedy case) as -inf. */
static float lv_at(const sampler_t *s, int32_t id)
{
    const float v = s->lv[id];
    return isnan(v) ? -INFINITY : v;
}

/* The first n_top of the ranking among the kept ids (greedy: every finite
 * one; otherwise w > 0), into best, most likely first: from the ids near
 * the maximum ((lv - lmax) / t >= z, a prefix of the ranking), z moving
 * down SAMPLER_LOGPROB_Z until they hold n_top kept ids, at last every id.
 * lmax is finite. Returns how many. */
static int top_kept(sampler_t *s, bool is_greedy, float lmax, float t, int n_top, sampler_cand_t *best)
{
    static const float z[] = SAMPLER_LOGPROB_Z;
    const int n_pass = (int)(sizeof z / sizeof z[0]);
    int n = 0;
    for (int pass = 0; pass <= n_pass && n < n_top; pass++) {
        const int64_t m =
            ops_collect_ge(s->ids, s->lv, s->vocab, lmax, 1.0f / t, pass < n_pass ? z[pass] : -INFINITY, s->vocab);
        n = 0;
        for (int64_t j = 0; j < m; j++) {
            const int32_t i = s->ids[j];
            if (is_greedy ? lv_at(s, i) > -INFINITY : s->w[i] > 0.0f)
                top_insert(best, &n, n_top, i, lv_at(s, i));
        }
    }
    return n;
}

int sampler_logprobs(sampler_t *s, int32_t chosen, int n_top, float *chosen_logprob, sampler_logprob_t *top)
{
    const bool is_greedy = s->p.temperature == 0.0f;
    const float t = is_greedy ? 1.0f : s->p.temperature;
    if (n_top > SAMPLER_MAX_TOP_LOGPROBS)
        n_top = SAMPLER_MAX_TOP_LOGPROBS;
    const float lmax = is_greedy ? lv_at(s, (int32_t)ops_argmax(s->lv, s->vocab)) : s->lmax;
    double norm = 0.0; /* greedy: the full softmax's; otherwise the kept mass of the draw */
    if (!is_greedy) {
        norm = s->kept;
    } else if (isinf(lmax)) {
        for (int i = 0; i < s->vocab; i++)
            norm += lv_at(s, i) == lmax;
    } else { /* the weights of a draw at temperature 1 (NaN, like -inf, weighs 0) */
        norm = ops_exp_weights(NULL, s->lv, s->vocab, lmax, 1.0f);
    }
    if (!(norm > 0.0) || (isinf(lmax) && lmax < 0)) { /* nothing finite: all mass on the choice */
        *chosen_logprob = 0.0f;
        if (n_top > 0)
            top[0] = (sampler_logprob_t){chosen, 0.0f};
        return n_top > 0;
    }
    const double log_norm = log(norm);
    sampler_cand_t best[SAMPLER_MAX_TOP_LOGPROBS];
    int n = 0;
    if (n_top > 0 && !is_greedy && s->is_sparse) {
        for (int j = 0; j < s->n_kept; j++)
            top_insert(best, &n, n_top, s->ids[j], s->l[s->ids[j]]);
    } else if (n_top > 0 && !isinf(lmax)) {
        n = top_kept(s, is_greedy, lmax, t, n_top, best);
    } else if (n_top > 0) { /* +inf: the ids at it */
        for (int i = 0; i < s->vocab; i++)
            if (is_greedy ? lv_at(s, i) == lmax : s->w[i] > 0.0f)
                top_insert(best, &n, n_top, i, lv_at(s, i));
    }
    for (int i = 0; i < n; i++)
        top[i] = (sampler_logprob_t){best[i].id, logprob_of(best[i].l, lmax, t, log_norm)};
    float lp = logprob_of(lv_at(s, chosen), lmax, t, log_norm);
    *chosen_logprob = lp > 0.0f ? 0.0f : lp;
    return n;
}
