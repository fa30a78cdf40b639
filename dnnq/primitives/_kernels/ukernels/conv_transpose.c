/* The plain <-> channels-last copies around the convolution kernels (dnnq_transpose*,
 * declared in dnnq_conv.h). */
#include <stdint.h>
#include <string.h>
#include "dnnq_conv.h"

/* dst (cols, rows) = src (rows, cols)^T of 1- or 4-byte elements (the plain <-> channels-last
 * copies around the kernels).  16 x 16 byte blocks (4 x 4 for 4-byte elements) transposed in
 * registers by repeated perfect shuffles: out[2i], out[2i+1] = interleave(in[i], in[i + n/2]),
 * log2(n) times; edges element by element. */
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#ifdef __SSE2__
/* one register block: B rows of 16 bytes (B = 16 bytes, or 4 rows of 4 s32) */
static inline __attribute__((always_inline)) void
transpose_block(const uint8_t *src, uint8_t *dst, int64_t ldd, int64_t cols, const int esz) {
    const int B = esz == 1 ? 16 : 4, h = B / 2, rounds = esz == 1 ? 4 : 2;
    __m128i v[16], w[16];
#pragma GCC unroll 16
    for (int i = 0; i < B; ++i) v[i] = _mm_loadu_si128((const __m128i *)(src + i * cols * esz));
#pragma GCC unroll 4
    for (int k = 0; k < rounds; ++k) {
        __m128i *in = k & 1 ? w : v, *out = k & 1 ? v : w;
#pragma GCC unroll 8
        for (int i = 0; i < h; ++i) {
            out[2 * i] = esz == 1 ? _mm_unpacklo_epi8(in[i], in[i + h])
                                  : _mm_unpacklo_epi32(in[i], in[i + h]);
            out[2 * i + 1] = esz == 1 ? _mm_unpackhi_epi8(in[i], in[i + h])
                                      : _mm_unpackhi_epi32(in[i], in[i + h]);
        }
    }
    /* an even number of rounds: the result is back in v */
#pragma GCC unroll 16
    for (int i = 0; i < B; ++i) _mm_storeu_si128((__m128i *)(dst + i * ldd * esz), v[i]);
}
#endif

/* A few byte planes interleaved (R rows: a 3-channel image going channels-last) or split
 * again (R columns): one pass with R fixed at compile time -- the 16 x 16 blocks do not fit
 * and the element-by-element edge copy cost 2.3 ns a byte. */
static inline __attribute__((always_inline)) void
interleave_planes(const uint8_t *src, uint8_t *dst, int64_t cols, int64_t cbegin, int64_t cend,
                  int64_t ldd, const int R) {
    for (int64_t c = cbegin; c < cend; ++c)
        for (int r = 0; r < R; ++r) dst[c * ldd + r] = src[r * cols + c];
}

static inline __attribute__((always_inline)) void
split_planes(const uint8_t *src, uint8_t *dst, int64_t rows, int64_t cols, int64_t cbegin,
             int64_t ldd, const int R) {
    for (int c = 0; c < R; ++c)
        for (int64_t r = 0; r < rows; ++r) dst[(cbegin + c) * ldd + r] = src[r * cols + cbegin + c];
}

void dnnq_transpose(const void *src_, void *dst_, int64_t rows, int64_t cols, int64_t cbegin,
                    int64_t cend, int esz, int64_t ldd) {
    const uint8_t *src = (const uint8_t *)src_;
    uint8_t *dst = (uint8_t *)dst_;
    const int B = esz == 1 ? 16 : 4;
    if (esz == 1 && rows >= 2 && rows <= 4) {
        if (rows == 2) interleave_planes(src, dst, cols, cbegin, cend, ldd, 2);
        else if (rows == 3) interleave_planes(src, dst, cols, cbegin, cend, ldd, 3);
        else interleave_planes(src, dst, cols, cbegin, cend, ldd, 4);
        return;
    }
    if (esz == 1 && cend - cbegin >= 2 && cend - cbegin <= 4) {
        const int64_t n = cend - cbegin;
        if (n == 2) split_planes(src, dst, rows, cols, cbegin, ldd, 2);
        else if (n == 3) split_planes(src, dst, rows, cols, cbegin, ldd, 3);
        else split_planes(src, dst, rows, cols, cbegin, ldd, 4);
        return;
    }
    for (int64_t c0 = cbegin; c0 < cend; c0 += B) {
        for (int64_t r0 = 0; r0 < rows; r0 += B) {
#ifdef __SSE2__
            if (r0 + B <= rows && c0 + B <= cend) {
                const uint8_t *s = src + (r0 * cols + c0) * esz;
                uint8_t *d = dst + (c0 * ldd + r0) * esz;
                if (esz == 1) transpose_block(s, d, ldd, cols, 1);
                else transpose_block(s, d, ldd, cols, 4);
                continue;
            }
#endif
            const int64_t r1 = r0 + B < rows ? r0 + B : rows, c1 = c0 + B < cend ? c0 + B : cend;
            for (int64_t c = c0; c < c1; ++c)
                for (int64_t r = r0; r < r1; ++r)
                    memcpy(dst + (c * ldd + r) * esz, src + (r * cols + c) * esz, (size_t)esz);
        }
    }
}

void dnnq_transpose_for_isa(int isa, const void *src, void *dst, int64_t rows, int64_t cols,
                            int64_t cbegin, int64_t cend, int esz, int64_t ldd) {
#ifdef DNNQ_HAVE_X86_KERNELS
    isa = DNNQ_ISA_LEVEL(isa);
    if (esz == 1 && cend - cbegin >= 16 &&
        (isa == DNNQ_ISA_AVX512_CORE_VNNI || isa == DNNQ_ISA_AVX512_CORE_AMX)) {
        dnnq_transpose_u8_avx512((const uint8_t *)src, (uint8_t *)dst, rows, cols, cbegin, cend,
                                 ldd);
        return;
    }
#endif
    (void)isa;
    dnnq_transpose(src, dst, rows, cols, cbegin, cend, esz, ldd);
}

void dnnq_transpose_rows_for_isa(int isa, const void *src, void *dst, int64_t rows, int64_t cols,
                                 int64_t rbegin, int64_t rend, int esz) {
    dnnq_transpose_for_isa(isa, (const uint8_t *)src + rbegin * cols * esz,
                           (uint8_t *)dst + rbegin * esz, rend - rbegin, cols, 0, cols, esz, rows);
}
