#include "kernels/prepack.h"

#include <string.h>

#include "base/fp16.h"
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
