/* Depthwise tile kernel "s16" (dnnq_dw_tile_fn, the general driver's depthwise tile below the
 * AVX-512 levels): plain C compiled once per kernel set (meson: -DDNNQ_DW_SET=portable, avx2)
 * with that set's flags, so that the loops over channels are vectorised with them; the
 * function is dnnq_dw_tile_<set>.
 *
 * Depthwise convolution is not a GEMM: each channel has its own taps, so the work is
 * vectorised over channels.  Products are exact in s32: u8 / s8 source times the s16 weights
 * (s8 weights, or s8 minus a weights zero point), summed in wrapping s32 as the GEMM's
 * accumulators. */
#include <stdint.h>
#include <string.h>
#include "dnnq_conv.h"

#ifndef DNNQ_DW_SET /* (compiled on its own) */
#define DNNQ_DW_SET portable
#endif

#define DNNQ_DW_CAT2(a, b) a##_##b
#define DNNQ_DW_CAT(a, b) DNNQ_DW_CAT2(a, b)

/* acc[c] += x[c] * w[c] for c < 64 (x past nc is never read: nc < 64 takes the tail loop) */
static inline void dw_tap_u8(const uint8_t *restrict x, const int16_t *restrict w,
                             uint32_t *restrict acc, int nc) {
    if (nc == DNNQ_NR) {
        for (int c = 0; c < DNNQ_NR; ++c) acc[c] += (uint32_t)((int32_t)x[c] * (int32_t)w[c]);
    } else {
        for (int c = 0; c < nc; ++c) acc[c] += (uint32_t)((int32_t)x[c] * (int32_t)w[c]);
    }
}

static inline void dw_tap_s8(const int8_t *restrict x, const int16_t *restrict w,
                             uint32_t *restrict acc, int nc) {
    if (nc == DNNQ_NR) {
        for (int c = 0; c < DNNQ_NR; ++c) acc[c] += (uint32_t)((int32_t)x[c] * (int32_t)w[c]);
    } else {
        for (int c = 0; c < nc; ++c) acc[c] += (uint32_t)((int32_t)x[c] * (int32_t)w[c]);
    }
}

void DNNQ_DW_CAT(dnnq_dw_tile, DNNQ_DW_SET)(int mr, int64_t ntaps, const uint8_t *const *rows,
                                            int64_t ps, int nc, int src_signed,
                                            const int16_t *w, int32_t *acc) {
    for (int r = 0; r < mr; ++r) {
        uint32_t a[DNNQ_NR] __attribute__((aligned(64)));
        memset(a, 0, sizeof(a));
        if (src_signed) {
            for (int64_t t = 0; t < ntaps; ++t)
                dw_tap_s8((const int8_t *)(ps ? rows[t] + r * ps : rows[t * mr + r]), w + t * DNNQ_NR, a, nc);
        } else {
            for (int64_t t = 0; t < ntaps; ++t)
                dw_tap_u8(ps ? rows[t] + r * ps : rows[t * mr + r], w + t * DNNQ_NR, a, nc);
        }
        memcpy(acc + r * DNNQ_NR, a, sizeof(a));
    }
}
