/* Byte transposes (the plain <-> channels-last copies around the convolution kernels) with
 * AVX-512 (BW) intrinsics: dst (cols, rows) = src (rows, cols)^T of bytes, the src columns
 * cbegin .. cend - 1 (cend - cbegin >= 16: dnnq_transpose_for_isa sends narrower ranges to the
 * portable copy); dst rows are ldd bytes apart (rows for a whole transpose; more for a block
 * of src rows, dnnq_transpose_rows_for_isa). */
#include <immintrin.h>
#include "dnnq_conv.h"

/* Bands of 64 or 16 columns (sources of fewer than 64 rows, and the last rows of tall
 * ones, from rbeg): the 16 x 16 register transpose of conv_driver.c done on four blocks at
 * once: row i of four horizontally adjacent blocks is one 64-byte load, the four rounds of
 * in-lane unpacks transpose each 128-bit lane's block, and lane L's rows are stored to the dst
 * rows of block L, a 16-byte piece each.  The last 16 rows overlap the previous block
 * (rewriting the same bytes) instead of being masked: masked stores are slow on Zen 4.  Only
 * a source of fewer than 16 rows takes masked blocks.  (The rows here are never a multiple of
 * 64 bytes apart: no L1 set holds more than its share of the 64 dst rows being written.) */
#define DW_TRANSPOSE_BAND(W, VT, LOAD, LANES)                                                   \
    for (; c0 + 16 * LANES <= cend; c0 += 16 * LANES) {                                        \
        for (int64_t r1 = rbeg; r1 < rows && rows >= 16; r1 += 16) {                           \
            const int64_t r0 = r1 + 16 <= rows ? r1 : rows - 16; /* the last overlaps */       \
            VT v[16], w[16];                                                                   \
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i)                              \
                v[i] = LOAD(src + (r0 + i) * cols + c0);                                       \
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; ++k) {                              \
                VT *in = k & 1 ? w : v, *out = k & 1 ? v : w;                                  \
                _Pragma("GCC unroll 8") for (int i = 0; i < 8; ++i) {                          \
                    out[2 * i] = _mm##W##_unpacklo_epi8(in[i], in[i + 8]);                     \
                    out[2 * i + 1] = _mm##W##_unpackhi_epi8(in[i], in[i + 8]);                 \
                }                                                                              \
            }                                                                                  \
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) {                            \
                uint8_t *d = dst + (c0 + i) * ldd + r0;                                        \
                DW_STORE_LANES_##W(d, v[i]);                                                   \
            }                                                                                  \
        }                                                                                      \
        if (rows < 16) /* a band of fewer than 16 rows */                                      \
            for (int64_t c = c0; c < c0 + 16 * LANES; c += 16)                                 \
                transpose16_tail(src, dst, rows, cols, ldd, 0, c, (int)rows, 16);              \
    }
#define DW_STORE_LANES_512(d, x)                                                               \
    do {                                                                                       \
        _mm_storeu_si128((__m128i *)(d), _mm512_castsi512_si128(x));                           \
        _mm_storeu_si128((__m128i *)((d) + 16 * ldd) , _mm512_extracti32x4_epi32(x, 1));       \
        _mm_storeu_si128((__m128i *)((d) + 32 * ldd) , _mm512_extracti32x4_epi32(x, 2));       \
        _mm_storeu_si128((__m128i *)((d) + 48 * ldd) , _mm512_extracti32x4_epi32(x, 3));       \
    } while (0)
#define DW_STORE_LANES_(d, x) _mm_storeu_si128((__m128i *)(d), x)
#define DW_LD512(p) _mm512_loadu_si512((const void *)(p))
#define DW_LD128(p) _mm_loadu_si128((const __m128i *)(p))

/* a partial 16 x 16 block (nr rows from r0, nc columns from c0): masked loads (rows past nr
 * are zeros), the register transpose, masked stores of the nc output rows */
static void transpose16_tail(const uint8_t *src, uint8_t *dst, int64_t rows, int64_t cols,
                             int64_t ldd, int64_t r0, int64_t c0, int nr, int nc) {
    const __mmask16 kc = (__mmask16)((1u << nc) - 1), kr = (__mmask16)((1u << nr) - 1);
    __m128i v[16], w[16];
    for (int i = 0; i < 16; ++i)
        v[i] = i < nr ? _mm_maskz_loadu_epi8(kc, src + (r0 + i) * cols + c0) : _mm_setzero_si128();
    for (int k = 0; k < 4; ++k) {
        __m128i *in = k & 1 ? w : v, *out = k & 1 ? v : w;
        for (int i = 0; i < 8; ++i) {
            out[2 * i] = _mm_unpacklo_epi8(in[i], in[i + 8]);
            out[2 * i + 1] = _mm_unpackhi_epi8(in[i], in[i + 8]);
        }
    }
    for (int i = 0; i < nc; ++i) _mm_mask_storeu_epi8(dst + (c0 + i) * ldd + r0, kr, v[i]);
}

/* Tall sources (rows >= 64: the copy to channels-last of C >= 64 channels, or back from it
 * with 64 pixels or more).  The same in-lane transpose on 64 rows x 16 columns: lane L of
 * register i holds src row r0 + 16 L + i (columns c0 .. c0 + 15), so that after the four
 * rounds register j is the 64 bytes r0 .. r0 + 63 of dst row c0 + j: whole 64-byte stores
 * (the bands store 16-byte pieces of 64 dst rows, whose lines must wait in L1 until they
 * are whole; the copies of 256 x 784 and 128 x 3136 bytes to channels-last went from 0.046 -
 * 0.055 to 0.031 - 0.033 ns / byte).  The last column block overlaps its predecessor instead
 * of being masked; the rows past the last whole group of 64 go to the bands. */
static inline __attribute__((always_inline)) void
transpose_64x16(const uint8_t *src, uint8_t *dst, int64_t cols, int64_t ldd, int64_t r0,
                int64_t c0) {
    const uint8_t *s = src + r0 * cols + c0;
    const int64_t s16 = 16 * cols;
    __m512i v[16], w[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
        const uint8_t *p = s + i * cols;
        __m512i x = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p));
        x = _mm512_mask_broadcast_i32x4(x, 0x00f0, _mm_loadu_si128((const __m128i *)(p + s16)));
        x = _mm512_mask_broadcast_i32x4(x, 0x0f00,
                                        _mm_loadu_si128((const __m128i *)(p + 2 * s16)));
        v[i] = _mm512_mask_broadcast_i32x4(x, 0xf000,
                                           _mm_loadu_si128((const __m128i *)(p + 3 * s16)));
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
        __m512i *in = k & 1 ? w : v, *out = k & 1 ? v : w;
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            out[2 * i] = _mm512_unpacklo_epi8(in[i], in[i + 8]);
            out[2 * i + 1] = _mm512_unpackhi_epi8(in[i], in[i + 8]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) _mm512_storeu_si512((void *)(dst + (c0 + j) * ldd + r0), v[j]);
}

/* rows 0 .. rend - 1 (a multiple of 64): column chunks of 64 (the 64 src rows of a group,
 * 64 x 64 bytes, stay in L1 for the chunk's four blocks), row groups of 64 within a chunk */
static void transpose_tall(const uint8_t *src, uint8_t *dst, int64_t cols, int64_t ldd,
                           int64_t rend, int64_t cbegin, int64_t cend) {
    for (int64_t cc = cbegin; cc < cend; cc += 64) {
        const int64_t ce = cc + 64 < cend ? cc + 64 : cend;
        for (int64_t r0 = 0; r0 < rend; r0 += 64)
            for (int64_t c0 = cc; c0 < ce; c0 += 16)
                transpose_64x16(src, dst, cols, ldd, r0, c0 + 16 <= cend ? c0 : cend - 16);
    }
}

void dnnq_transpose_u8_avx512(const uint8_t *src, uint8_t *dst, int64_t rows, int64_t cols,
                              int64_t cbegin, int64_t cend, int64_t ldd) {
    int64_t rbeg = 0;
    if (rows >= 64) {
        rbeg = rows - rows % 64;
        transpose_tall(src, dst, cols, ldd, rbeg, cbegin, cend);
        if (rbeg == rows) return;
    }
    int64_t c0 = cbegin;
    DW_TRANSPOSE_BAND(512, __m512i, DW_LD512, 4)
    DW_TRANSPOSE_BAND(, __m128i, DW_LD128, 1)
    if (c0 < cend) { /* the last columns (fewer than 16): a block overlapping the previous */
        c0 = cend - 16;
        DW_TRANSPOSE_BAND(, __m128i, DW_LD128, 1)
    }
}
