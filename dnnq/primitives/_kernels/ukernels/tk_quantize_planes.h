/* ONNX QuantizeLinear of 2 - 4 f32 planes into channels-last bytes (see dnnq_toolkit.h,
 * dnnq_qplanes_args_t): an image quantized for its first convolution.  Per value the stages
 * of reorder.QuantizeLinear's program -- x / scale, the clamp to the type's range less the
 * zero point (the lower bound first: a NaN goes to it), rounded half to even, plus the zero
 * point -- and each pixel's C bytes written together: no plain copy and no interleaving pass.
 * Blocks of 16 pixels (the lanes of tk_vec.h, their bytes interleaved by byte shuffles),
 * then the same operations one pixel at a time (the scalar clamps are the vector ones'
 * minps / maxps patterns, the rounding exact), so every vector width gives the same bytes. */
#ifndef DNNQ_TK_QUANTIZE_PLANES_H
#define DNNQ_TK_QUANTIZE_PLANES_H
#include "tk_convert.h"

#if TK_VEC
#define TK_QP_DIV(a, b) TK_P(div_ps)(a, b)
#define TK_QP_IADD(a, b) TK_P(add_epi32)(a, b)
#define TK_QP_ISET(x) TK_P(set1_epi32)(x)
#else
#define TK_QP_DIV(a, b) ((a) / (b))
#define TK_QP_IADD(a, b) ((a) + (b))
#define TK_QP_ISET(x) (x)
#endif

/* 16 pixels' bytes, channel by channel (t[c][0 .. 16)), into 16 C interleaved bytes at d:
 * byte shuffles (SSSE3, in every vector build) or one byte at a time */
#if TK_VEC
typedef struct { __m128i m[4][4]; } tk_qp_masks_t; /* [output block][channel] */
static void tk_qp_masks(int C, tk_qp_masks_t *k) {
    for (int b = 0; b < C; ++b)
        for (int c = 0; c < C; ++c) {
            uint8_t m[16];
            for (int i = 0; i < 16; ++i) {
                const int j = 16 * b + i;
                m[i] = j % C == c ? (uint8_t)(j / C) : (uint8_t)0x80;
            }
            k->m[b][c] = _mm_loadu_si128((const __m128i *)(const void *)m);
        }
}
#endif

void DNNQ_TK_FN(dnnq_quantize_planes_run)(const dnnq_qplanes_args_t *a, int64_t p0,
                                          int64_t p1) {
    const int64_t plane = a->n_pix;
    const int C = a->C, s8 = a->dst_dt == DNNQ_DT_S8, zp = a->zp;
    const float scale = a->scale, lo = a->lo, hi = a->hi;
    const float *const src = a->src;
    uint8_t *const dst = a->dst;
    const tk_vf vs = tk_vf_set1(scale), vlo = tk_vf_set1(lo), vhi = tk_vf_set1(hi);
    const tk_vi vz = TK_QP_ISET(zp);
    uint8_t t[4][16] __attribute__((aligned(16)));
#if TK_VEC
    tk_qp_masks_t mk;
    tk_qp_masks(C, &mk);
#endif
    int64_t p = p0;
    for (; p + 16 <= p1; p += 16) {
        for (int c = 0; c < C; ++c)
            for (int k = 0; k < 16; k += TK_VF) {
                tk_vf v = TK_QP_DIV(tk_vf_loadu(src + c * plane + p + k), vs);
                v = tk_vf_min(tk_vf_max(v, vlo), vhi);
                const tk_vi q = TK_QP_IADD(tk_vi_rne(v), vz);
                if (s8) tk_vi_store_s8(t[c] + k, q);
                else tk_vi_store_u8(t[c] + k, q);
            }
        uint8_t *d = dst + p * C;
#if TK_VEC
        __m128i tv[4];
        for (int c = 0; c < C; ++c) tv[c] = _mm_load_si128((const __m128i *)(const void *)t[c]);
        for (int b = 0; b < C; ++b) {
            __m128i o = _mm_shuffle_epi8(tv[0], mk.m[b][0]);
            for (int c = 1; c < C; ++c) o = _mm_or_si128(o, _mm_shuffle_epi8(tv[c], mk.m[b][c]));
            _mm_storeu_si128((__m128i *)(void *)(d + 16 * b), o);
        }
#else
        for (int i = 0; i < 16; ++i)
            for (int c = 0; c < C; ++c) d[i * C + c] = t[c][i];
#endif
    }
    for (; p < p1; ++p)
        for (int c = 0; c < C; ++c) {
            float v = src[c * plane + p] / scale;
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            const int32_t q = (int32_t)((v + TK_RNE_MAGIC) - TK_RNE_MAGIC) + zp;
            dst[p * C + c] = s8 ? (uint8_t)(int8_t)q : (uint8_t)q;
        }
}
#undef TK_QP_DIV
#undef TK_QP_IADD
#undef TK_QP_ISET
#endif
