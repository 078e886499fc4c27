/* Gated DeltaNet's chunk form (kernels/gdn.h, gdn_delta_chunk), AVX-512.
 * Compiled with the AVX-512 flags; called only when cpu_level() says the
 * CPU has them.
 *
 * One chunk of n tokens of one value head in four passes, with
 * d_ti = e^{G_t - G_i} as in gdn.h:
 *   1. the triangles A[t][i] = beta_t d_ti (k_t . k_i) (i < t) and
 *      P[t][i] = d_ti (q_t . k_i) (i <= t), 16 keys at a time against the
 *      keys transposed;
 *   2. one sweep of S_0 for every token: U_t = beta_t (v_t - Gamma_t S_0^T k_t)
 *      and o_t = Gamma_t S_0^T q_t;
 *   3. in token order, the solve and the outputs in one walk of U:
 *      u_t = U_t - sum_{i<t} A[t][i] u_i ;  o_t += sum_{i<=t} P[t][i] u_i;
 *   4. S = Gamma_n S_0 + sum_t d_nt k_t u_t^T.
 * Passes 2 and 4 are the bulk (n dk dv multiply-adds each, twice in 2)
 * and are GEMM-shaped: 16 accumulators take 2 tokens' k and q against 64
 * columns of S_0 packed together (pass 2), or 4 rows of S against 64
 * columns of U (pass 4), so the state is read from L2 twice per chunk
 * instead of twice per token. Pass 1 takes 4 tokens per load of the keys.
 * Every sum runs in a fixed order that depends only on n, dk and dv: the
 * same bits every time, whatever thread. dv % 16 != 0 goes to the
 * reference. */
#ifndef __AVX512F__
/* (not #error: cppcheck, which reads every file without the flags, would skip the file) */
_Static_assert(0, "gdn_chunk_avx512.c needs the AVX-512 flags (CMakeLists.txt, SPLASH_AVX512_SOURCES)");
#endif

#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/gdn.h"
#include "kernels/simd_avx512_common.h"
#include "kernels/simd_exp.h"

#define N GDN_CHUNK_MAX
#define NB 4       /* vectors of columns per block in passes 2 and 4 (64 columns) */
#define NB_SOLVE 8 /* and in pass 3, two accumulators each (128 columns) */
/* A decay e^x below e^-87 (under f32's normal range) is taken as 0, so no
 * weight is denormal (slow on most cores); next to the terms that survive
 * it is nothing. The reference keeps exp()'s value, so strong decay differs
 * by under 1e-38. */
#define EXP_FLOOR (-87.0f)

_Static_assert(N % LANES == 0 && LANES % 4 == 0, "pass 1 takes whole blocks of 16 keys, 4 tokens at a time");

typedef struct {
    float *S, *o, *U, *A, *P, *KT, *Sp; /* U (n, dv), A and P (N, N), KT (dk, N), Sp (dk, 16 NB) */
    const float *q, *k, *v;
    size_t os, qks, vs;
    int n, dk, dv;
    double G[N];                 /* G_t, zero past n */
    float gam[N], wn[N], bet[N]; /* Gamma_t, d_nt = e^{G_n - G_t}, beta_t */
} chunk_t;

static __mmask16 mask_for(int left)
{
    return left >= LANES ? (__mmask16)0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

/* e^x for 16 doubles (lo: lanes 0-7, hi: 8-15) taken to float; 0 under the
 * floor. x is a difference formed in double, so rounding it to float costs
 * at most |x| 2^-24 of e^x relative, under 2.2e-8 absolute. */
AI __m512 exp16(__m512d lo, __m512d hi)
{
    __m512d both = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm512_cvtpd_ps(lo))),
                                      _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1);
    __m512 x = _mm512_castpd_ps(both);
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_FLOOR), _CMP_GE_OQ), exp_ps(x));
}

/* e^{a - G_i} for the 16 tokens from i */
AI __m512 decay16(double a, const double *G)
{
    __m512d va = _mm512_set1_pd(a);
    return exp16(_mm512_sub_pd(va, _mm512_loadu_pd(G)), _mm512_sub_pd(va, _mm512_loadu_pd(G + 8)));
}

/* G_t in double (a difference of two keeps its low bits however far the
 * chunk has decayed), Gamma_t, d_nt and beta_t */
static void decays(chunk_t *c, const float *g, const float *beta, size_t gs)
{
    double acc = 0.0;
    for (int t = 0; t < N; t++) {
        c->G[t] = t < c->n ? (acc += g[t * gs]) : 0.0;
        c->bet[t] = t < c->n ? beta[t * gs] : 0.0f;
    }
    for (int t = 0; t < c->n; t += LANES) {
        _mm512_storeu_ps(c->gam + t, exp16(_mm512_loadu_pd(c->G + t), _mm512_loadu_pd(c->G + t + 8)));
        _mm512_storeu_ps(c->wn + t, decay16(c->G[c->n - 1], c->G + t));
    }
}

/* pass 1, tokens [t, t + 4) against key blocks [b0, b0 + nb) of 16: four
 * tokens share each load of the keys and give 8 nb independent sums (one
 * token alone would wait on the multiply-add latency). Tokens past n
 * repeat token n - 1 and are not stored. */
AI void triangle_rows(const chunk_t *c, int t, int b0, const int nb)
{
    const float *kt[4], *qt[4];
    for (int m = 0; m < 4; m++) {
        int tm = t + m < c->n ? t + m : c->n - 1;
        kt[m] = c->k + tm * c->qks;
        qt[m] = c->q + tm * c->qks;
    }
    __m512 ak[4][2], aq[4][2];
    for (int m = 0; m < 4; m++)
        for (int b = 0; b < nb; b++)
            ak[m][b] = aq[m][b] = _mm512_setzero_ps();
    for (int d = 0; d < c->dk; d++) {
        __m512 x[2];
        for (int b = 0; b < nb; b++)
            x[b] = _mm512_loadu_ps(c->KT + (size_t)d * N + (b0 + b) * LANES);
        for (int m = 0; m < 4; m++) {
            __m512 kd = _mm512_set1_ps(kt[m][d]), qd = _mm512_set1_ps(qt[m][d]);
            for (int b = 0; b < nb; b++) {
                ak[m][b] = _mm512_fmadd_ps(kd, x[b], ak[m][b]);
                aq[m][b] = _mm512_fmadd_ps(qd, x[b], aq[m][b]);
            }
        }
    }
    for (int m = 0; m < 4 && t + m < c->n; m++) {
        int tm = t + m;
        __m512 bt = _mm512_set1_ps(c->bet[tm]);
        for (int b = 0; b < nb; b++) {
            int i = (b0 + b) * LANES;
            __m512 w = decay16(c->G[tm], c->G + i); /* lanes past tm are masked off below */
            __mmask16 lt = mask_for(tm - i), le = mask_for(tm - i + 1);
            _mm512_storeu_ps(c->A + (size_t)tm * N + i, _mm512_maskz_mul_ps(lt, _mm512_mul_ps(bt, w), ak[m][b]));
            _mm512_storeu_ps(c->P + (size_t)tm * N + i, _mm512_maskz_mul_ps(le, w, aq[m][b]));
        }
    }
}

/* pass 2: tokens [t, t + mt) against columns [j, j + 16 nb) of S_0 */
AI void s0_block(const chunk_t *c, int t, int j, const int mt, const int nb)
{
    __m512 ak[2][NB], aq[2][NB];
    for (int m = 0; m < mt; m++)
        for (int b = 0; b < nb; b++)
            ak[m][b] = aq[m][b] = _mm512_setzero_ps();
    for (int d = 0; d < c->dk; d++) {
        const float *row = c->Sp + (size_t)d * nb * LANES;
        __m512 s[NB];
        for (int b = 0; b < nb; b++)
            s[b] = _mm512_loadu_ps(row + b * LANES);
        for (int m = 0; m < mt; m++) {
            __m512 kd = _mm512_set1_ps(c->k[(t + m) * c->qks + d]), qd = _mm512_set1_ps(c->q[(t + m) * c->qks + d]);
            for (int b = 0; b < nb; b++) {
                ak[m][b] = _mm512_fmadd_ps(kd, s[b], ak[m][b]);
                aq[m][b] = _mm512_fmadd_ps(qd, s[b], aq[m][b]);
            }
        }
    }
    for (int m = 0; m < mt; m++) {
        int tm = t + m;
        __m512 gam = _mm512_set1_ps(c->gam[tm]), bt = _mm512_set1_ps(c->bet[tm]);
        float *ut = c->U + (size_t)tm * c->dv + j, *ot = c->o + tm * c->os + j;
        const float *vt = c->v + tm * c->vs + j;
        for (int b = 0; b < nb; b++) {
            __m512 vv = _mm512_loadu_ps(vt + b * LANES);
            _mm512_storeu_ps(ut + b * LANES, _mm512_mul_ps(bt, _mm512_fnmadd_ps(gam, ak[m][b], vv)));
            _mm512_storeu_ps(ot + b * LANES, _mm512_mul_ps(gam, aq[m][b]));
        }
    }
}

AI void s0_cols(const chunk_t *c, int j, const int nb)
{
    int t = 0;
    for (; t + 2 <= c->n; t += 2)
        s0_block(c, t, j, 2, nb);
    if (t < c->n)
        s0_block(c, t, j, 1, nb);
}

/* pass 3, token t, columns [j, j + 16 nb): u_i for i < t are final */
AI void solve_block(const chunk_t *c, int t, int j, const int nb)
{
    float *ut = c->U + (size_t)t * c->dv + j, *ot = c->o + t * c->os + j;
    const float *a = c->A + (size_t)t * N, *p = c->P + (size_t)t * N;
    __m512 au[NB_SOLVE], ao[NB_SOLVE];
    for (int b = 0; b < nb; b++) {
        au[b] = _mm512_loadu_ps(ut + b * LANES);
        ao[b] = _mm512_loadu_ps(ot + b * LANES);
    }
    for (int i = 0; i < t; i++) {
        const float *ui = c->U + (size_t)i * c->dv + j;
        __m512 ai = _mm512_set1_ps(a[i]), pi = _mm512_set1_ps(p[i]);
        for (int b = 0; b < nb; b++) {
            __m512 x = _mm512_loadu_ps(ui + b * LANES);
            au[b] = _mm512_fnmadd_ps(ai, x, au[b]);
            ao[b] = _mm512_fmadd_ps(pi, x, ao[b]);
        }
    }
    __m512 pt = _mm512_set1_ps(p[t]);
    for (int b = 0; b < nb; b++) {
        _mm512_storeu_ps(ut + b * LANES, au[b]);
        _mm512_storeu_ps(ot + b * LANES, _mm512_fmadd_ps(pt, au[b], ao[b]));
    }
}

AI void solve_cols(const chunk_t *c, int j, const int nb)
{
    for (int t = 0; t < c->n; t++)
        solve_block(c, t, j, nb);
}

/* pass 4: rows [i, i + mr) of S, columns [j, j + 16 nb); U holds d_nt u_t */
AI void state_block(const chunk_t *c, int i, int j, const int mr, const int nb)
{
    __m512 acc[4][NB], gn = _mm512_set1_ps(c->gam[c->n - 1]);
    for (int r = 0; r < mr; r++)
        for (int b = 0; b < nb; b++)
            acc[r][b] = _mm512_mul_ps(gn, _mm512_loadu_ps(c->S + (size_t)(i + r) * c->dv + j + b * LANES));
    for (int t = 0; t < c->n; t++) {
        const float *ut = c->U + (size_t)t * c->dv + j;
        __m512 x[NB];
        for (int b = 0; b < nb; b++)
            x[b] = _mm512_loadu_ps(ut + b * LANES);
        for (int r = 0; r < mr; r++) {
            __m512 kr = _mm512_set1_ps(c->KT[(size_t)(i + r) * N + t]);
            for (int b = 0; b < nb; b++)
                acc[r][b] = _mm512_fmadd_ps(kr, x[b], acc[r][b]);
        }
    }
    for (int r = 0; r < mr; r++)
        for (int b = 0; b < nb; b++)
            _mm512_storeu_ps(c->S + (size_t)(i + r) * c->dv + j + b * LANES, acc[r][b]);
}

AI void state_cols(const chunk_t *c, int j, const int nb)
{
    int i = 0;
    for (; i + 4 <= c->dk; i += 4)
        state_block(c, i, j, 4, nb);
    for (; i < c->dk; i++)
        state_block(c, i, j, 1, nb);
}

/* KT[d][t] = k_t[d], zero from n to n16: 16 x 16 blocks through
 * registers. Walked one float at a time, each load (the keys' rows are a
 * conv row apart, a multiple of 4 KB on qwen35) waited for the store before
 * it: 9 % of this kernel's samples. */
static void keys_transposed(const chunk_t *c, int n16)
{
    int d0 = 0;
    for (; d0 + LANES <= c->dk; d0 += LANES)
        for (int t0 = 0; t0 < n16; t0 += LANES) {
            __m512i v[LANES], tr[LANES];
            for (int r = 0; r < LANES; r++)
                v[r] =
                    t0 + r < c->n ? _mm512_loadu_si512(c->k + (size_t)(t0 + r) * c->qks + d0) : _mm512_setzero_si512();
            avx512_transpose16(v, tr);
            for (int j = 0; j < LANES; j++)
                _mm512_storeu_si512(c->KT + (size_t)(d0 + j) * N + t0, tr[j]);
        }
    for (int d = d0; d < c->dk; d++)
        for (int t = 0; t < n16; t++)
            c->KT[(size_t)d * N + t] = t < c->n ? c->k[t * c->qks + d] : 0.0f;
}

static void pass_triangles(const chunk_t *c)
{
    int n = c->n, n16 = (n + LANES - 1) / LANES * LANES;
    keys_transposed(c, n16);
    for (int t = 0; t < n; t += 4) { /* 4 divides 16: a group's keys end in one block */
        int n_blocks = t / LANES + 1;
        for (int b0 = 0; b0 < n_blocks; b0 += 2) {
            if (n_blocks - b0 >= 2)
                triangle_rows(c, t, b0, 2);
            else
                triangle_rows(c, t, b0, 1);
        }
    }
}

/* Each pass over its column blocks; a switch gives every width its own
 * unrolled copy, so the accumulators stay in registers. */
static void pass_s0(const chunk_t *c)
{
    for (int j = 0; j < c->dv; j += NB * LANES) {
        /* the panel's rows packed together: rows of S 512 B apart (dv = 128)
         * fall in half of L1's sets, 16 lines to a 12-way set, and would
         * miss on every token; packed, the panel stays in L1 */
        int nb = (c->dv - j) / LANES < NB ? (c->dv - j) / LANES : NB;
        for (int d = 0; d < c->dk; d++)
            for (int b = 0; b < nb; b++)
                _mm512_storeu_ps(c->Sp + ((size_t)d * nb + b) * LANES,
                                 _mm512_loadu_ps(c->S + (size_t)d * c->dv + j + b * LANES));
        switch (nb) {
        case 1: s0_cols(c, j, 1); break;
        case 2: s0_cols(c, j, 2); break;
        case 3: s0_cols(c, j, 3); break;
        default: s0_cols(c, j, NB); break;
        }
    }
}

static void pass_solve(const chunk_t *c)
{
    for (int j = 0; j < c->dv; j += NB_SOLVE * LANES) {
        switch ((c->dv - j) / LANES) {
        case 1: solve_cols(c, j, 1); break;
        case 2: solve_cols(c, j, 2); break;
        case 3: solve_cols(c, j, 3); break;
        case 4: solve_cols(c, j, 4); break;
        case 5: solve_cols(c, j, 5); break;
        case 6: solve_cols(c, j, 6); break;
        case 7: solve_cols(c, j, 7); break;
        default: solve_cols(c, j, NB_SOLVE); break;
        }
    }
}

static void pass_state(const chunk_t *c)
{
    for (int j = 0; j < c->dv; j += NB * LANES) {
        switch ((c->dv - j) / LANES) {
        case 1: state_cols(c, j, 1); break;
        case 2: state_cols(c, j, 2); break;
        case 3: state_cols(c, j, 3); break;
        default: state_cols(c, j, NB); break;
        }
    }
}

void gdn_delta_chunk_avx512(float *S, float *o, size_t os, const float *q, const float *k, size_t qks, const float *v,
                            size_t vs, const float *g, const float *beta, size_t gs, int n, int dk, int dv, float *tmp)
{
    if (dv % LANES != 0 || n < 1 || n > N) { /* the reference, which also refuses n outside [1, N] */
        gdn_delta_chunk(S, o, os, q, k, qks, v, vs, g, beta, gs, n, dk, dv, tmp);
        return;
    }
    /* denormal results flushed to zero (and denormal inputs read as zero)
     * while the chunk runs: a model's strong decays (e^g of e^-11 a token)
     * underflow inside the chunk's weights and products, and denormal
     * arithmetic ran the qwen35-0.8b prefill's chunks 3.3x slower */
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040); /* FTZ | DAZ */
    chunk_t c = {.S = S, .o = o, .q = q, .k = k, .v = v, .os = os, .qks = qks, .vs = vs, .n = n, .dk = dk, .dv = dv};
    c.U = tmp;
    c.A = c.U + (size_t)N * dv;
    c.P = c.A + (size_t)N * N;
    c.KT = c.P + (size_t)N * N;
    c.Sp = c.KT + (size_t)dk * N;
    decays(&c, g, beta, gs);
    pass_triangles(&c);
    pass_s0(&c);
    pass_solve(&c);
    /* U_t *= d_nt: the state update's weights (u_t is not needed again) */
    for (int t = 0; t < n; t++) {
        __m512 w = _mm512_set1_ps(c.wn[t]);
        for (int j = 0; j < dv; j += LANES)
            _mm512_storeu_ps(c.U + (size_t)t * dv + j, _mm512_mul_ps(w, _mm512_loadu_ps(c.U + (size_t)t * dv + j)));
    }
    pass_state(&c);
    _mm_setcsr(csr);
}
