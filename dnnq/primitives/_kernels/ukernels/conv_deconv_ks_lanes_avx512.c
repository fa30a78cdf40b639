/* The deconv_ks kernel's products for one or two columns per kernel row (kw * OC <= 2: OC = 1
 * with kw <= 2, OC = 2 with kw = 1), AVX-512 VNNI: 16 source pixels in the vector lanes.
 *
 * The GEMM tile (conv_deconv_ks.c) computes a 16-column micro-tile per pixel of which one or two
 * columns are used.  Here the lanes are 16 consecutive source pixels: for each 4-byte quad of
 * the channels one gather reads the 16 pixels' quads (IC bytes apart), and every output of the
 * pixel -- kernel row r, column n: kd kh kw OC of them, at most KS_LANES_MAX_OUT -- takes one
 * vpdpbusd with its broadcast weights (the regrouped panel's dword).  The sums plus the kernel
 * row's compensation go to that kernel row's epilogue rows in output order (pixel q's column
 * n at q nk + n: two columns interleaved by two permutes): exact integer sums, the bits of the
 * GEMM tile. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "dnnq_conv.h"

#define KSL_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

KSL_TARGET static inline __attribute__((always_inline)) void
ks_lanes_body(const dnnq_conv_t *cv, const uint8_t *src, int64_t cnt, const int32_t *const *comp,
              int32_t *const *flat, const int nk, const int nt) {
    const int64_t IC = cv->IC, K4 = cv->K4, bstep = K4 * 4 * DNNQ_NR;
    const int nrow = nt / nk;
    const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6,
                                                            5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32((int)IC));
    const __m512i flip = _mm512_set1_epi32((int)cv->a_xor);
    /* the two columns' lanes interleaved: pixel q's column n at 2 q + n */
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                        24, 8);
    __m512i cadd[KS_LANES_MAX_OUT];
    for (int t = 0; t < nt; ++t)
        cadd[t] = _mm512_set1_epi32(comp[t / nk] ? comp[t / nk][t % nk] : 0);
    for (int64_t x = 0; x < cnt; x += 16) {
        const __mmask16 m = cnt - x >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (cnt - x)) - 1);
        __m512i acc[KS_LANES_MAX_OUT];
        for (int t = 0; t < nt; ++t) acc[t] = cadd[t];
        const uint8_t *base = src + x * IC;
        for (int64_t k4 = 0; k4 < K4; ++k4) {
            __m512i a = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx,
                                                    base + 4 * k4, 1);
            a = _mm512_xor_si512(a, flip);
            for (int t = 0; t < nt; ++t) {
                int32_t w;
                memcpy(&w, cv->ks_packed + (t / nk) * bstep + (k4 * DNNQ_NR + t % nk) * 4, 4);
                acc[t] = _mm512_dpbusd_epi32(acc[t], a, _mm512_set1_epi32(w));
            }
        }
        for (int r = 0; r < nrow; ++r) {
            int32_t *d = flat[r] + x * nk;
            if (nk == 1) {
                _mm512_mask_storeu_epi32(d, m, acc[r]);
            } else {
                const __m512i a0 = acc[2 * r], a1 = acc[2 * r + 1];
                const int64_t left = 2 * (cnt - x);
                const __mmask16 m0 = left >= 16 ? (__mmask16)0xffff
                                                : (__mmask16)((1u << left) - 1);
                const __mmask16 m1 = left >= 32 ? (__mmask16)0xffff
                                     : left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
                _mm512_mask_storeu_epi32(d, m0, _mm512_permutex2var_epi32(a0, lo, a1));
                _mm512_mask_storeu_epi32(d + 16, m1, _mm512_permutex2var_epi32(a0, hi, a1));
            }
        }
    }
}

/* cnt pixels of a source row from src: kernel row r's outputs to flat[r] (q nk + n), with
 * comp[r] (NULL: 0) added; the plan fits dnnq_deconv_ks_lanes_fits */
KSL_TARGET void dnnq_deconv_ks_lanes_avx512(const dnnq_conv_t *cv, const uint8_t *src,
                                            int64_t cnt, const int32_t *const *comp,
                                            int32_t *const *flat) {
    const int nk = (int)(cv->kw * cv->OC), nt = (int)(cv->kd * cv->kh) * nk;
    switch (nt * 4 + nk) { /* constant counts: the accumulators stay in registers */
#define KSL_CASE(T, K)                                                                        \
    case (T) * 4 + (K): ks_lanes_body(cv, src, cnt, comp, flat, K, T); break;
    KSL_CASE(1, 1) KSL_CASE(2, 1) KSL_CASE(3, 1) KSL_CASE(4, 1) KSL_CASE(5, 1) KSL_CASE(6, 1)
    KSL_CASE(7, 1) KSL_CASE(8, 1) KSL_CASE(2, 2) KSL_CASE(4, 2) KSL_CASE(6, 2) KSL_CASE(8, 2)
#undef KSL_CASE
    default: ks_lanes_body(cv, src, cnt, comp, flat, nk, nt);
    }
}
