/* The depthwise 3x3 column kernel, AVX-512 VNNI (see dnnq_conv.h, dnnq_dw3x3_call_t).
 *
 * The row kernel (conv_dw_avx512.c) groups the three taps of one kernel row per vpdpbusd and
 * so interleaves the source pixels of every kernel row for every output pixel.  Here the
 * four bytes of a vpdpbusd lane are four source rows at one column: the column is
 * interleaved once and serves every output pixel that reads it (kw = 0, 1, 2 along a row of
 * outputs; with two output rows, both: weights A = (w[0][kw], w[1][kw], w[2][kw], 0) for the
 * upper row, B = (0, w[0][kw], w[1][kw], w[2][kw]) for the lower).  Per output pixel and 64
 * channels, stride 1 and two output rows: one interleave (two source loads, four unpacks)
 * and twelve vpdpbusd, against three interleaves for the row kernel.
 *
 * The epilogue is fused: the accumulators of a finished pixel go through the fast epilogue's
 * f32 steps (the same operations in the same order as epilogue_avx512.h's epi_value) in the
 * accumulators' own channel order (the per-channel constants are permuted once per call
 * instead), and the packs to 8 bits put the bytes back in channel order; s32 never goes to
 * memory.  Other destinations (f32, s32, post-ops beyond relu / linear) take the s32
 * accumulators, stored in channel order, to the driver's epilogue. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "epilogue_avx512.h"

/* the epilogue modes: s32 out; the hot fused case; the fused general case */
enum { DW9_RAW = 0, DW9_HOT = 1, DW9_GENERIC = 2 };

#include "conv_dw_store_avx512.h"
#define DW9_STORE_ACC512 DNNQ_DW_STORE_ACC512
#define DW9_STORE_ACC256 DNNQ_DW_STORE_ACC256

/* 64 channels in zmm */
#define DW_W 512
#define DW_V __m512i
#define DW_VF __m512
#define DW_M __mmask64
#define DW_VL 16
#define DW_SFX _512
#define DW9_STORE_ACC DW9_STORE_ACC512
#include "conv_dw3x3_body.h"
#undef DW_W
#undef DW_V
#undef DW_VF
#undef DW_M
#undef DW_VL
#undef DW_SFX
#undef DW9_STORE_ACC

/* up to 32 channels in ymm (the first two lanes of the packed vectors) */
#define DW_W 256
#define DW_V __m256i
#define DW_VF __m256
#define DW_M __mmask32
#define DW_VL 8
#define DW_SFX _256
#define DW9_STORE_ACC DW9_STORE_ACC256
#include "conv_dw3x3_body.h"

/* the epilogue mode of e (NULL: s32 out) */
static int dw9_mode(const dnnq_dw_epi_t *e) {
    return !e ? DW9_RAW
           : e->dt == DNNQ_DT_U8 && e->post != EPI_CHAIN && !e->has_zp &&
                     (e->flags & EPI_F_NOCC) && (e->flags & EPI_F_NOCLAMP)
               ? DW9_HOT : DW9_GENERIC;
}

/* plain (nchw) planes: uses the 512-bit epilogue */
#include "conv_dw3x3_plain.h"

void dnnq_dw3x3_avx512(const dnnq_dw3x3_call_t *c) {
    const int nc = c->nc;
    const int mode = dw9_mode(c->epi);
    if (nc > 32) dw9_call_512(c, nc >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << nc) - 1), mode);
    else dw9_call_256(c, nc >= 32 ? 0xffffffffu : (__mmask32)((1ull << nc) - 1), mode);
}

/* v[j] (channels 16 j ..) -> out in the accumulators' order: vector k (16 lanes, or with
 * narrow 8: channels < 32) holds in 128-bit lane L channels 16 L + 4 k .. + 3 */
static void dw9_permute(const __m512i v[4], int narrow, int32_t *out) {
    if (!narrow) { /* a 4 x 4 transpose of 128-bit lanes */
        const __m512i t0 = _mm512_shuffle_i32x4(v[0], v[1], 0x44);
        const __m512i t1 = _mm512_shuffle_i32x4(v[2], v[3], 0x44);
        const __m512i t2 = _mm512_shuffle_i32x4(v[0], v[1], 0xEE);
        const __m512i t3 = _mm512_shuffle_i32x4(v[2], v[3], 0xEE);
        _mm512_storeu_si512(out, _mm512_shuffle_i32x4(t0, t1, 0x88));
        _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(t0, t1, 0xDD));
        _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(t2, t3, 0x88));
        _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(t2, t3, 0xDD));
        return;
    }
    /* vector k = (lane k of v[0], lane k of v[1]) */
    const __m512i lo = _mm512_shuffle_i32x4(v[0], v[1], 0x44); /* v0.0 v0.1 v1.0 v1.1 */
    const __m512i hi = _mm512_shuffle_i32x4(v[0], v[1], 0xEE); /* v0.2 v0.3 v1.2 v1.3 */
    const __m512i a = _mm512_shuffle_i32x4(lo, lo, 0xD8);      /* v0.0 v1.0 v0.1 v1.1 */
    const __m512i b = _mm512_shuffle_i32x4(hi, hi, 0xD8);      /* v0.2 v1.2 v0.3 v1.3 */
    _mm512_storeu_si512(out, a);
    _mm512_storeu_si512(out + 16, b);
}

/* The fast epilogue's constants for the panel (epi_prepare_avx512), permuted to the
 * accumulators' order: vector k (of VL lanes), lane L, dword j <- channel 16 L + 4 k + j. */
void dnnq_dw3x3_epi_prepare_avx512(const dnnq_gemm_args_t *g, int64_t n0, int nc,
                                   dnnq_dw_epi_t *e) {
    epi_consts_t k;
    epi_prepare_avx512(g, 0, n0, nc, &k);
    const int narrow = nc <= 32;
    dw9_permute(k.cc, narrow, e->cc);
    __m512i t[4];
    for (int j = 0; j < 4; ++j) t[j] = _mm512_castps_si512(k.sc[j]);
    dw9_permute(t, narrow, (int32_t *)e->sc);
    for (int j = 0; j < 4; ++j) t[j] = _mm512_castps_si512(k.bi[j]);
    dw9_permute(t, narrow, (int32_t *)e->bi);
    for (int j = 0; j < 4; ++j) t[j] = _mm512_castps_si512(k.zp[j]);
    dw9_permute(t, narrow, (int32_t *)e->zp);
    e->inv_dst_scale = g->inv_dst_scale;
    e->dt = g->dst_dt;
    e->post = k.post;
    e->flags = k.flags;
    e->has_zp = k.has_zp;
    e->n_post = g->n_post;
    e->po = g->post;
}
