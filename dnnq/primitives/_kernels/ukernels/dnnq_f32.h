/* f32 layers (partially quantized models): f32 source and f32 weights on the same engine as
 * the int8 primitives -- packing, a batch-reduce micro-kernel, the fused epilogue, the GEMM
 * and convolution drivers -- with an f32, s8 or u8 destination.
 *
 * The accumulation order, one for every ISA level and thread count: each output element is
 * one chain of fused multiply-adds that starts at +0 and runs over the (A, B) pairs in order
 * and over k in order within a pair,
 *
 *     acc = fma(a[k], b[k][n], acc)        (one rounding per step)
 *
 * A convolution's pairs are its kernel taps in (kd, kh, kw) order (input channels inside), a
 * tap that reads no source pixel being left out or multiplying zeros (the same, +0 added).
 * Vector width only decides how many output elements advance side by side; K is never split
 * between accumulators or threads (K blocks of a long K continue the same chain through the
 * accumulator tile).  The portable kernel calls fmaf, which rounds once as the FMA
 * instructions do, so every level gives the same bits.
 *
 * Packed weights: a (K, N) f32 matrix in panels of DNNQ_NR = 64 columns, each K rows of 64
 * f32 (zeros past N):   packed[(p * K + k) * 64 + n] = W[k, 64 p + n].
 * A convolution packs per group g, panel p and pair t a block of kpair rows:
 *   packed + ((g * n_panels + p) * npairs + t) * kpair * 64.
 * Depthwise: per 64-channel panel, [tap][64] f32. */
#ifndef DNNQ_F32_H
#define DNNQ_F32_H
#include <stdint.h>
#include "dnnq_kernels.h"

/* rows of one micro-kernel call, the same at every level (the convolution's tiles are built
 * with it: the same tiles everywhere) */
#define DNNQ_F32_MR 6

/* One (A, B) pair of the f32 batch-reduce kernel:
 *   c[r][n] (+)= sum_{k < K} A[r][k] * B[k][n]      r < mr, n < nc (one 64-column panel) */
typedef struct {
    const float *a;              /* dense A: row r at a + r * lda (when rows == NULL) */
    int64_t lda;
    const float *const *rows;    /* indirect A: row r at rows[r]; NULL = dense */
    const float *b;              /* K rows of the packed panel (64 f32 each) */
    int64_t K;
} dnnq_br_pair_f32_t;

/* c: mr rows of 64 f32 (row stride 64); columns nc .. 63 hold anything afterwards.
 * accumulate = 0 starts the chains at +0, 1 continues them from c. */
typedef void (*dnnq_brgemm_f32_fn)(int mr, int nc, int64_t npairs,
                                   const dnnq_br_pair_f32_t *pairs, int accumulate, float *c);
/* The epilogue of one f32 accumulator tile (rows m .. m + mr - 1 of batch b, panel p, row
 * stride 64): bias, post-ops, dst scale and zero point, rounding, saturation, the store
 * (gemm args g: col_comp, scales and the weights zero point are not read). */
typedef void (*dnnq_gemm_epilogue_f32_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t m,
                                          int mr, int64_t p, const float *tile);
/* Depthwise: acc[r][c] = sum over taps t of x_t(r)[c] * w[t][c] in tap order, c < nc; pixel
 * r of tap t at rows[t * mr + r] (NULL: the tap reads no source pixel and is left out), or,
 * when ps != 0, at rows[t] + r * ps (a run of pixels every tap of which is inside). */
typedef void (*dnnq_dw_f32_fn)(int mr, int64_t ntaps, const float *const *rows, int64_t ps,
                               int nc, const float *w, float *acc);

/* The micro-kernel with the epilogue fused (AVX-512): the common epilogue -- a bias per column
 * or common, eltwise post-ops of exact arithmetic (relu, linear, clip, clip_v2, hardsigmoid,
 * hardswish, round; postop_avx512.h) and sum, the dst scale and zero point, an f32, s8 or u8 dst
 * -- applied straight from the accumulator registers, the same f32 operations in the same
 * order as the generic epilogue (hence the same bits).
 * prepare, once per (batch b, panel p) of g: fills st and returns 1, or 0 when g's epilogue is
 * not one it covers.  Then each call computes the tile as dnnq_brgemm_f32_fn does (c read when
 * accumulate, never written) and writes its row r to dst row m + r * mstep. */
typedef struct {
    int64_t opaque[160];
} __attribute__((aligned(64))) dnnq_f32_epi_state_t;
typedef int (*dnnq_f32_epi_prepare_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                       dnnq_f32_epi_state_t *st);
typedef void (*dnnq_brgemm_f32_epi_fn)(int mr, int64_t npairs, const dnnq_br_pair_f32_t *pairs,
                                       int accumulate, const float *c,
                                       const dnnq_f32_epi_state_t *st, int64_t m,
                                       int64_t mstep);
/* The depthwise kernel with the fused epilogue: dnnq_dw_f32_fn's pixels r written to dst row
 * m + r (the panel of the prepared state). */
typedef void (*dnnq_dw_f32_epi_fn)(int mr, int64_t ntaps, const float *const *rows, int64_t ps,
                                   const float *w, const dnnq_f32_epi_state_t *st, int64_t m);
dnnq_dw_f32_epi_fn dnnq_dw_f32_epi_for_isa(int isa);
/* Depthwise by kernel rows (AVX-512): dnnq_dw_f32_fn's sums for a run of mr pixels whose
 * kernel rows are kw (3, 5 or 7) taps one source pixel apart along w, all inside the source
 * along w, pixels sw (1 or 2) source pixels apart; kernel row i (of nkrows: those inside the
 * source) of pixel 0 starts at krows[i], its kw weight vectors (64 floats apart) at wrows[i];
 * source pixels are ic floats apart.  Each source vector of a kernel row is loaded once and multiplied into every pixel it
 * reaches; each pixel's products are still added in tap order, hence dnnq_dw_f32_fn's bits.
 * The caller checks kw and sw.  st NULL: the sums to acc (row stride 64, nc columns), else
 * pixel r through st's fused epilogue to dst row m + r (its panel's columns; acc unused). */
typedef void (*dnnq_dw_f32_rows_fn)(int mr, int64_t nkrows, const float *const *krows,
                                    const float *const *wrows, int64_t ic, int kw, int sw,
                                    int nc, float *acc, const dnnq_f32_epi_state_t *st,
                                    int64_t m);
dnnq_dw_f32_rows_fn dnnq_dw_f32_rows_for_isa(int isa);
void dnnq_dw_f32_rows_avx512(int mr, int64_t nkrows, const float *const *krows,
                             const float *const *wrows, int64_t ic, int kw, int sw, int nc,
                             float *acc, const dnnq_f32_epi_state_t *st, int64_t m);
void dnnq_dw_f32_epi_avx512(int mr, int64_t ntaps, const float *const *rows, int64_t ps,
                            const float *w, const dnnq_f32_epi_state_t *st, int64_t m);
/* NULL at levels without them (then the tile and dnnq_gemm_epilogue_f32_fn) */
dnnq_f32_epi_prepare_fn dnnq_f32_epi_prepare_for_isa(int isa);
dnnq_brgemm_f32_epi_fn dnnq_brgemm_f32_epi_for_isa(int isa);
int dnnq_f32_epi_prepare_avx512(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                dnnq_f32_epi_state_t *st);
void dnnq_brgemm_f32_epi_avx512(int mr, int64_t npairs, const dnnq_br_pair_f32_t *pairs,
                                int accumulate, const float *c, const dnnq_f32_epi_state_t *st,
                                int64_t m, int64_t mstep);

#define DNNQ_DECLARE_F32(isa)                                                                   \
    void dnnq_brgemm_f32_##isa(int mr, int nc, int64_t npairs, const dnnq_br_pair_f32_t *pairs, \
                               int accumulate, float *c);                                      \
    void dnnq_gemm_epilogue_f32_##isa(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int mr,  \
                                      int64_t p, const float *tile);                           \
    void dnnq_gemm_block_f32_##isa(const dnnq_gemm_args_t *g, int64_t b, int64_t m0,           \
                                   int64_t mc, int64_t p);                                     \
    void dnnq_dw_f32_##isa(int mr, int64_t ntaps, const float *const *rows, int64_t ps, int nc, \
                           const float *w, float *acc);
DNNQ_DECLARE_F32(portable)
DNNQ_DECLARE_F32(avx2)
DNNQ_DECLARE_F32(avx512)

/* Per ISA level (dnnq_isa_t; the numerics bits are ignored: f32 has one numerics):
 * avx512_core_vnni / avx512_core_amx -> AVX-512 FMA, avx2 / avx2_vnni -> AVX2 FMA,
 * default -> portable C.  The GEMM block function takes g->a and g->b as f32 (strides in
 * elements), the packed layout above. */
dnnq_brgemm_f32_fn dnnq_brgemm_f32_for_isa(int isa);
dnnq_gemm_epilogue_f32_fn dnnq_gemm_epilogue_f32_for_isa(int isa);
dnnq_gemm_block_fn dnnq_gemm_block_f32_for_isa(int isa);
dnnq_dw_f32_fn dnnq_dw_f32_for_isa(int isa);

/* Packing (portable): W (K x N, element strides ldw along k and wn along n) -> the layout
 * above, zeros past N (packed: n_panels * K * 64 f32). */
void dnnq_pack_b_f32(const float *w, int64_t ldw, int64_t wn, int64_t K, int64_t N,
                     float *packed);

#endif
