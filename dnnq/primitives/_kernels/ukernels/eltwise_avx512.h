/* Transcendental eltwise post-ops in AVX-512, 16 lanes at a time, for the fused GEMM epilogue
 * (epilogue_avx512.h): the scalar forms of eltwise_impl.h lane by lane, the same operations in
 * the same order, so every level gives the same bits:
 *   gelu_erf(x)  = 0.5 x (1 + erf(x / sqrt 2))  with erf from erf_table.h (<= 2.2 ulp);
 *   gelu_tanh(x) = ((tanh(g) + 1) 0.5) x, g = fma(x x, 0.044715, 1) x sqrt(2 / pi): oneDNN's
 *                  JIT formula and its tanh (rnn_math_avx512.h), bit for bit.
 * NaN propagates (through the final multiply by x); +-inf give what the scalar formulas give. */
#ifndef DNNQ_ELTWISE_AVX512_H
#define DNNQ_ELTWISE_AVX512_H
#include <immintrin.h>
#include "erf_table.h"
#include "rnn_math_avx512.h"

/* erf(s): the interval's polynomial in t = |s| - k / 4 (k = floor(4 |s|), |s| clamped to 4,
 * where erf is 1 in f32), its coefficients picked per lane by vpermps, the sign put back */
static inline __m512 ev_erf(__m512 s) {
    const __m512 a = _mm512_min_ps(_mm512_abs_ps(s), _mm512_set1_ps(4.0f)); /* NaN -> 4 */
    const __m512i k = _mm512_min_epi32(_mm512_cvttps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(4.0f))),
                                       _mm512_set1_epi32(15));
    const __m512 t = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(k), _mm512_set1_ps(0.25f), a); /* exact */
    __m512 p = _mm512_permutexvar_ps(k, _mm512_loadu_ps((const float *)dnnq_erf_pol[6]));
    for (int d = 5; d >= 0; --d)
        p = _mm512_fmadd_ps(p, t, _mm512_permutexvar_ps(k, _mm512_loadu_ps((const float *)dnnq_erf_pol[d])));
    p = _mm512_min_ps(p, _mm512_set1_ps(1.0f));
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32((int)0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(p), sign));
}

static inline __m512 ev_gelu_erf(__m512 x) {
    const __m512 e = ev_erf(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752440f)));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                         _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

static inline __m512 ev_gelu_tanh(__m512 x, const rv_tanh_tab_t *tab) {
    __m512 g = _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(0.044715f), _mm512_set1_ps(1.0f));
    g = _mm512_mul_ps(_mm512_mul_ps(g, x), _mm512_set1_ps(0.79788456080286535587989211986876f));
    const __m512 h = _mm512_mul_ps(_mm512_add_ps(rv_tanh(g, tab), _mm512_set1_ps(1.0f)),
                                   _mm512_set1_ps(0.5f));
    return _mm512_mul_ps(h, x);
}
#endif
