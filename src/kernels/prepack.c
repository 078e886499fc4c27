#include "kernels/prepack.h"

#include <stddef.h>
#include <string.h>

#include "base/fp16.h"
#include "kernels/kquants.h"
#include "kernels/types.h"

void q8_0_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst)
{
    const int64_t nb = n_in / QK8_0;
    const int lane = (int)(row % Q8_0_PANEL_ROWS);
    const uint8_t *group = (const uint8_t *)packed + (size_t)(row / Q8_0_PANEL_ROWS) * q8_0_panel_group_bytes(n_in);
    block_q8_0_t *out = dst;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = group + (size_t)b * Q8_0_PANEL_BLOCK;
        float d;
        memcpy(&d, blk + 4 * lane, sizeof d);
        out[b].d = f32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) /* vector j / 4, dword `lane`, byte j % 4 */
            out[b].qs[j] = (int8_t)(blk[64 + 64 * (j / 4) + 4 * lane + j % 4] ^ 0x80);
    }
}

void q4_0_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst)
{
    const int64_t nb = n_in / QK4_0;
    const int lane = (int)(row % Q8_0_PANEL_ROWS);
    const uint8_t *group = (const uint8_t *)packed + (size_t)(row / Q8_0_PANEL_ROWS) * q4_0_panel_group_bytes(n_in);
    block_q4_0_t *out = dst;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = group + (size_t)b * Q4_0_PANEL_BLOCK;
        float d;
        memcpy(&d, blk + 4 * lane, sizeof d);
        out[b].d = f32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; j++) /* vector j / 4, dword `lane`, byte j % 4 */
            out[b].qs[j] = blk[64 + 64 * (j / 4) + 4 * lane + j % 4];
    }
}

void bf16_tile_row(const void *packed, int64_t n_in, int64_t row, uint16_t *dst)
{
    const int lane = (int)(row % BF16_TILE_ROWS);
    const uint8_t *group = (const uint8_t *)packed + (size_t)(row / BF16_TILE_ROWS) * bf16_tile_group_bytes(n_in);
    for (int64_t i = 0; i < n_in; i++) {
        const uint8_t *tile = group + (size_t)(i / BF16_TILE_VALUES) * BF16_TILE_BYTES;
        int v = (int)(i % BF16_TILE_VALUES);
        memcpy(&dst[i], tile + 64 * (v / 2) + 4 * lane + 2 * (v % 2), sizeof dst[i]);
    }
}

void bf16x2_tile_row(const void *packed, int64_t n_in, int64_t row, uint16_t *hi, uint16_t *lo)
{
    const int lane = (int)(row % BF16_TILE_ROWS);
    const uint8_t *group = (const uint8_t *)packed + (size_t)(row / BF16_TILE_ROWS) * bf16x2_tile_group_bytes(n_in);
    for (int64_t i = 0; i < n_in; i++) {
        const uint8_t *tile = group + (size_t)(i / BF16_TILE_VALUES) * BF16X2_TILE_BYTES;
        const size_t at = (size_t)(64 * (i % BF16_TILE_VALUES / 2) + 4 * lane + 2 * (i % 2));
        memcpy(&hi[i], tile + at, sizeof hi[i]);
        memcpy(&lo[i], tile + BF16_TILE_BYTES + at, sizeof lo[i]);
    }
}

/* Where row `lane` of a group finds, in a packed block, dword k of its
 * quant stream (vector k, dword lane) and byte s of its paired bytes (Q4_K's
 * mins, Q6_K's scales: pair s / 2, element s % 2). */
static size_t kq_dword(int k, int lane)
{
    return (size_t)(64 * k + 4 * lane);
}

static size_t kq_pair_byte(int s, int lane)
{
    return (size_t)(32 * (s / 2) + 2 * lane + s % 2);
}

_Static_assert(offsetof(block_q4_k_t, dmin) == 2 && offsetof(block_q5_k_t, dmin) == 2,
               "d and dmin are the block's first four bytes");

/* Q4_K's layout from a block's parts (Q5_K's 4-bit part: its quants at
 * qoff). */
static void q4_k_pack_parts(const uint8_t *scales, const uint8_t *qs, const void *d_dmin, size_t qoff, int lane,
                            uint8_t *blk)
{
    for (int k = 0; k < 32; k++) /* vector 8t + k' holds qs[32t + 4k'..]: qs dword k */
        memcpy(blk + qoff + kq_dword(k, lane), qs + 4 * k, 4);
    for (int s = 0; s < 8; s++) {
        int sc, m;
        kq_scale_min_get(scales, s, &sc, &m);
        blk[Q4P_SC + 16 * s + lane] = (uint8_t)sc;
        blk[Q4P_MN + kq_pair_byte(s, lane)] = (uint8_t)m;
    }
    memcpy(blk + Q4P_D + 2 * lane, d_dmin, 2);
    memcpy(blk + Q4P_DM + 2 * lane, (const uint8_t *)d_dmin + 2, 2);
}

static void q4_k_pack_block(const void *raw, int lane, uint8_t *blk)
{
    const block_q4_k_t *in = raw;
    q4_k_pack_parts(in->scales, in->qs, &in->d, Q4P_Q, lane, blk);
}

static void q5_k_pack_block(const void *raw, int lane, uint8_t *blk)
{
    const block_q5_k_t *in = raw;
    q4_k_pack_parts(in->scales, in->qs, &in->d, Q5P_Q, lane, blk);
    for (int k = 0; k < 8; k++)
        memcpy(blk + Q5P_QH + kq_dword(k, lane), in->qh + 4 * k, 4);
}

static void q6_k_pack_block(const void *raw, int lane, uint8_t *blk)
{
    const block_q6_k_t *in = raw;
    for (int k = 0; k < 32; k++) /* vector 16h + k' holds ql[64h + 4k'..]: ql dword k */
        memcpy(blk + Q6P_QL(k) + 4 * lane, in->ql + 4 * k, 4);
    for (int k = 0; k < 16; k++)
        memcpy(blk + Q6P_QH(k) + 4 * lane, in->qh + 4 * k, 4);
    for (int s = 0; s < 16; s++)
        blk[Q6P_SC(s / 2) + 2 * lane + s % 2] = (uint8_t)in->scales[s];
    memcpy(blk + Q6P_D + 2 * lane, &in->d, 2);
}

/* Rows [row0, row0 + n_w) into their groups, each group zeroed first so
 * that its rows past the matrix (only in the last group) are zeros. */
static void kq_pack(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed, size_t bb,
                    size_t pb, void (*pack_block)(const void *raw, int lane, uint8_t *blk))
{
    const int64_t nb = n_in / QK_K;
    const size_t gb = (size_t)nb * pb;
    for (int64_t r = 0; r < n_w; r += KQ_PANEL_ROWS) {
        uint8_t *group = (uint8_t *)packed + (size_t)((row0 + r) / KQ_PANEL_ROWS) * gb;
        memset(group, 0, gb);
        int nr = n_w - r < KQ_PANEL_ROWS ? (int)(n_w - r) : KQ_PANEL_ROWS;
        for (int lane = 0; lane < nr; lane++) {
            const uint8_t *row = (const uint8_t *)w + (size_t)(row0 + r + lane) * ws;
            for (int64_t b = 0; b < nb; b++)
                pack_block(row + (size_t)b * bb, lane, group + (size_t)b * pb);
        }
    }
}

void q4_k_pack_panels(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    kq_pack(w, ws, row0, n_w, n_in, packed, sizeof(block_q4_k_t), Q4_K_PANEL_BLOCK, q4_k_pack_block);
}

void q5_k_pack_panels(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    kq_pack(w, ws, row0, n_w, n_in, packed, sizeof(block_q5_k_t), Q5_K_PANEL_BLOCK, q5_k_pack_block);
}

void q6_k_pack_panels(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    kq_pack(w, ws, row0, n_w, n_in, packed, sizeof(block_q6_k_t), Q6_K_PANEL_BLOCK, q6_k_pack_block);
}

/* Q4_K's parts of row `lane` of a packed super-block (quants at qoff). */
static void q4_k_unpack_parts(const uint8_t *blk, size_t qoff, int lane, uint8_t *scales, uint8_t *qs, void *d_dmin)
{
    for (int k = 0; k < 32; k++)
        memcpy(qs + 4 * k, blk + qoff + kq_dword(k, lane), 4);
    uint8_t sc[8], m[8];
    for (int s = 0; s < 8; s++) {
        sc[s] = blk[Q4P_SC + 16 * s + lane];
        m[s] = blk[Q4P_MN + kq_pair_byte(s, lane)];
    }
    kq_scale_min_pack(scales, sc, m);
    memcpy(d_dmin, blk + Q4P_D + 2 * lane, 2);
    memcpy((uint8_t *)d_dmin + 2, blk + Q4P_DM + 2 * lane, 2);
}

void q4_k_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst)
{
    const int64_t nb = n_in / QK_K;
    const int lane = (int)(row % KQ_PANEL_ROWS);
    const uint8_t *group = (const uint8_t *)packed + (size_t)(row / KQ_PANEL_ROWS) * q4_k_panel_group_bytes(n_in);
    block_q4_k_t *out = dst;
    for (int64_t b = 0; b < nb; b++)
        q4_k_unpack_parts(group + (size_t)b * Q4_K_PANEL_BLOCK, Q4P_Q, lane, out[b].scales, out[b].qs, &out[b].d);
}

void q5_k_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst)
{
    const int64_t nb = n_in / QK_K;
    const int lane = (int)(row % KQ_PANEL_ROWS);
    const uint8_t *group = (const uint8_t *)packed + (size_t)(row / KQ_PANEL_ROWS) * q5_k_panel_group_bytes(n_in);
    block_q5_k_t *out = dst;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = group + (size_t)b * Q5_K_PANEL_BLOCK;
        q4_k_unpack_parts(blk, Q5P_Q, lane, out[b].scales, out[b].qs, &out[b].d);
        for (int k = 0; k < 8; k++)
            memcpy(out[b].qh + 4 * k, blk + Q5P_QH + kq_dword(k, lane), 4);
    }
}

void q6_k_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst)
{
    const int64_t nb = n_in / QK_K;
    const int lane = (int)(row % KQ_PANEL_ROWS);
    const uint8_t *group = (const uint8_t *)packed + (size_t)(row / KQ_PANEL_ROWS) * q6_k_panel_group_bytes(n_in);
    block_q6_k_t *out = dst;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = group + (size_t)b * Q6_K_PANEL_BLOCK;
        for (int k = 0; k < 32; k++)
            memcpy(out[b].ql + 4 * k, blk + Q6P_QL(k) + 4 * lane, 4);
        for (int k = 0; k < 16; k++)
            memcpy(out[b].qh + 4 * k, blk + Q6P_QH(k) + 4 * lane, 4);
        for (int s = 0; s < 16; s++)
            out[b].scales[s] = (int8_t)blk[Q6P_SC(s / 2) + 2 * lane + s % 2];
        memcpy(&out[b].d, blk + Q6P_D + 2 * lane, 2);
    }
}
