/* The exact eltwise post-ops and the sum post-op on one vector of 16 f32 values (al, be: alpha
 * and beta broadcast): oneDNN's JIT operations in its order, so each gives the bits of the
 * scalar loops of postop_chain.h (which the generic epilogues run) for every input, NaN and
 * -0.0 included.  Shared by the int8 epilogues (epilogue_avx512.h: epi_tile_chain, the fused
 * micro-kernel's chain of epilogue_chain_avx512.h) and the f32 kernels' fused epilogue
 * (gemm_f32_avx512.c).  AVX-512 flags. */
#ifndef DNNQ_POSTOP_AVX512_H
#define DNNQ_POSTOP_AVX512_H
#include <immintrin.h>
#include "ukr_common.h"
#include "dnnq_codes.h"

DNNQ_ALWAYS_INLINE __m512 epo_relu0(__m512 x) { /* -0.0, NaN -> +0 */
    return _mm512_max_ps(x, _mm512_setzero_ps());
}
DNNQ_ALWAYS_INLINE __m512 epo_relu(__m512 x, __m512 al) {
    return _mm512_mask_mov_ps(_mm512_mul_ps(x, al),
                              _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), x);
}
/* min(be, .) keeps a NaN, as t > be ? be : t */
DNNQ_ALWAYS_INLINE __m512 epo_clip(__m512 x, __m512 al, __m512 be) {
    return _mm512_min_ps(be, _mm512_max_ps(x, al));
}
/* t < be ? t : be: NaN -> be */
DNNQ_ALWAYS_INLINE __m512 epo_clip_v2(__m512 x, __m512 al, __m512 be) {
    return _mm512_min_ps(_mm512_max_ps(x, al), be);
}
/* t = min(x al + be, 1) then max(t, 0): two roundings and NaN -> 1, oneDNN's JIT */
DNNQ_ALWAYS_INLINE __m512 epo_hardsigmoid(__m512 x, __m512 al, __m512 be) {
    return _mm512_max_ps(_mm512_min_ps(_mm512_add_ps(_mm512_mul_ps(x, al), be),
                                       _mm512_set1_ps(1.0f)),
                         _mm512_setzero_ps());
}
DNNQ_ALWAYS_INLINE __m512 epo_hardswish(__m512 x, __m512 al, __m512 be) {
    return _mm512_mul_ps(x, epo_hardsigmoid(x, al, be));
}
/* half to even, as nearbyintf: a NaN stays NaN */
DNNQ_ALWAYS_INLINE __m512 epo_round(__m512 x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* linear, fused as oneDNN does */
DNNQ_ALWAYS_INLINE __m512 epo_linear(__m512 x, __m512 al, __m512 be) {
    return _mm512_fmadd_ps(al, x, be);
}
/* sum: fma(scale, prev - zp, x), dnnq_po_sum's */
DNNQ_ALWAYS_INLINE __m512 epo_sum(__m512 x, __m512 prev, __m512 al, __m512 be) {
    return _mm512_fmadd_ps(al, _mm512_sub_ps(prev, be), x);
}
/* the binary post-ops (add, sub, mul, div, min, max) the fused epilogues apply with their
 * input's vector: X(code, operation), the operations of dnnq_binary (eltwise_impl.h) --
 * vminps / vmaxps are a < b ? a : b and a > b ? a : b */
#define EPO_BINARY_ALGS(X)                                                                        \
    X(DNNQ_BIN_ADD, _mm512_add_ps) X(DNNQ_BIN_SUB, _mm512_sub_ps) X(DNNQ_BIN_MUL, _mm512_mul_ps)  \
    X(DNNQ_BIN_DIV, _mm512_div_ps) X(DNNQ_BIN_MIN, _mm512_min_ps) X(DNNQ_BIN_MAX, _mm512_max_ps)
static inline int epo_binary_fused(int alg) {
#define EPO_BINARY_CASE(ALG, OP) case ALG:
    switch (alg) { EPO_BINARY_ALGS(EPO_BINARY_CASE) return 1; }
#undef EPO_BINARY_CASE
    return 0;
}
#endif
