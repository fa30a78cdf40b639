/* The AVX-512 form of rnn_math.h: the same operations, 16 lanes at a time, with the tanh
 * coefficients looked up by vpermt2ps as oneDNN's avx512 injector does (a gather per
 * coefficient would cost more than the whole polynomial).  Masked-off lanes compute on
 * harmless values and are never stored. */
#ifndef DNNQ_RNN_MATH_AVX512_H
#define DNNQ_RNN_MATH_AVX512_H
#include <immintrin.h>
#include "rnn_math.h"

#define RV_F(bits) _mm512_castsi512_ps(_mm512_set1_epi32((int)(bits)))

static inline __m512 rv_exp(__m512 x) {
    const __m512 lo = RV_F(0xc2aeac50u), hi = RV_F(0x42b17218u), one = _mm512_set1_ps(1.0f);
    x = _mm512_min_ps(x, hi);
    x = _mm512_max_ps(x, lo);
    __m512 fx = _mm512_mul_ps(x, RV_F(0x3fb8aa3bu));
    fx = _mm512_add_ps(fx, _mm512_set1_ps(0.5f));
    const __m512 n = _mm512_roundscale_ps(fx, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_fnmadd_ps(n, RV_F(0x3f317218u), x);
    /* 2^(n-1): the biased exponent cvt(n - 1) + 127 as cvt(n) + 126 (n is an integer).  oneDNN
     * zeroes it below lo, but there it is 0 anyway: x is clamped to lo, whose n is -126 */
    const __m512i e = _mm512_slli_epi32(
        _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(126)), 23);
    __m512 p = RV_F(0x3c07cfceu);
    p = _mm512_fmadd_ps(p, r, RV_F(0x3d2b9d0du));
    p = _mm512_fmadd_ps(p, r, RV_F(0x3e2aad40u));
    p = _mm512_fmadd_ps(p, r, RV_F(0x3efffee3u));
    p = _mm512_fmadd_ps(p, r, RV_F(0x3f7ffffbu));
    p = _mm512_fmadd_ps(p, r, one);
    p = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
    return _mm512_mul_ps(p, _mm512_set1_ps(2.0f));
}

static inline __m512 rv_logistic(__m512 x) {
    const __m512i b = _mm512_castps_si512(x), sm = _mm512_set1_epi32((int)0x80000000u);
    const __mmask16 neg = _mm512_test_epi32_mask(b, sm);
    const __m512 e = rv_exp(_mm512_castsi512_ps(_mm512_or_si512(b, sm)));
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 y = _mm512_div_ps(e, _mm512_add_ps(e, one));
    return _mm512_mask_blend_ps(neg, _mm512_sub_ps(one, y), y);
}

/* the 7 coefficient rows as 14 registers (low / high 16 intervals), loaded once per epilogue and
 * rotated by 6 places: oneDNN's interval index ((|x| - 0x39800000) >> 22) mod 32 is
 * ((x >> 22) - 230) mod 32 (the sign lands in bit 9, which vpermt2ps ignores), and 230 mod 32 is
 * 6, so the shifted bits of x index the rotated rows directly */
typedef struct { __m512 lo[7], hi[7]; } rv_tanh_tab_t;

static inline void rv_tanh_load(rv_tanh_tab_t *t) {
    const __m512i rot = _mm512_set_epi32(9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 31, 30, 29, 28, 27, 26);
    const __m512i rot_hi = _mm512_add_epi32(rot, _mm512_set1_epi32(16));  /* low 5 bits used */
    for (int d = 0; d < 7; ++d) {
        const __m512 lo = _mm512_loadu_ps((const float *)dnnq_rnn_tanh_pol[d]);
        const __m512 hi = _mm512_loadu_ps((const float *)dnnq_rnn_tanh_pol[d] + 16);
        t->lo[d] = _mm512_permutex2var_ps(lo, rot, hi);
        t->hi[d] = _mm512_permutex2var_ps(lo, rot_hi, hi);
    }
}

static inline __m512 rv_tanh(__m512 x, const rv_tanh_tab_t *t) {
    const __m512i b = _mm512_castps_si512(x), sign = _mm512_set1_epi32((int)0x80000000u);
    const __m512i ab = _mm512_andnot_si512(sign, b);
    const __m512 s = _mm512_castsi512_ps(ab);
    const __m512i idx = _mm512_srli_epi32(b, 22);
    const __m512 r = _mm512_sub_ps(
        s, _mm512_castsi512_ps(_mm512_and_si512(ab, _mm512_set1_epi32((int)0xffc00000u))));
    __m512 p = _mm512_permutex2var_ps(t->lo[6], idx, t->hi[6]);
    for (int d = 5; d >= 0; --d)
        p = _mm512_fmadd_ps(p, r, _mm512_permutex2var_ps(t->lo[d], idx, t->hi[d]));
    __m512 out = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(RV_F(0x41102cb3u), s, _CMP_GT_OS),
                                      _mm512_set1_ps(1.0f), p);
    out = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(RV_F(0x39ddb3d7u), s, _CMP_GT_OS), out, s);
    /* out has no sign bit (|x|, 1 or the polynomial, positive where it is used): or-ing the
     * sign of x is oneDNN's xor */
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(out), b, sign, 0xf8));
}

/* u8 = saturate(rne(v * scale + shift)) of the m lanes, stored */
static inline void rv_store_u8(uint8_t *dst, __mmask16 m, __m512 v, __m512 sc, __m512 sh) {
    v = _mm512_add_ps(_mm512_mul_ps(v, sc), sh);
    v = _mm512_max_ps(v, _mm512_setzero_ps());
    v = _mm512_min_ps(v, _mm512_set1_ps(255.0f));
    _mm_mask_storeu_epi8(dst, m, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
}

static inline __m512 rv_load_u8(const uint8_t *src, __mmask16 m, __m512 sc, __m512 sh) {
    const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, src)));
    return _mm512_div_ps(_mm512_sub_ps(q, sh), sc);
}

/* f32(acc) / d + b (d of masked-off lanes is 1) */
static inline __m512 rv_gate(const int32_t *l, const float *d, const float *b, __mmask16 m) {
    const __m512 v = _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, l)),
                                   _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), m, d));
    return _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b));
}

static inline __mmask16 rv_mask(int k, int nc) {
    const int left = nc - k;
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}
#endif
