/* dnnq.gemm_u8s8s32 / gemm_s8s8s32: the pieces around the raw s32 GEMM that reproduce
 * oneDNN 3.2's dnnl_gemm_* numerics (docs/matmul.md, "GEMM functions").
 *
 * oneDNN computes C in K blocks (dnnq/primitives/_gemm_kplan.py says which).  For one block
 * with raw product P[m, n] = sum_k A[m, k] B[k, n] over the block's kb values of k:
 *   acc = P - ao * colsum_B[n] - bo * rowsum_A[m] + kb * ao * bo          (wrapping s32)
 *   rounded block:  C = rtn(f64(alpha) * acc + f64(beta_eff) * C)        (beta_eff 0: no C)
 *                   rtn(x): x + 0.5 (x >= 0) or x - 0.5, clamped to s32, truncated (f64)
 *                   alpha = -1 with beta_eff = 0 is an exact negation instead (wrapping)
 *   integer block:  C = acc (+ C)                                        (wrapping s32)
 * and co, after a slice's last block, is added as a wrapping s32.
 * Compiled with -ffp-contract=off: alpha * acc + beta * C is two roundings, as in oneDNN.
 */
#ifndef DNNQ_GEMM_API_H
#define DNNQ_GEMM_API_H
#include <stdint.h>

typedef struct {
    int64_t N;
    const int32_t *acc;      /* raw product of the block, row stride ld_acc */
    int64_t ld_acc;
    const int32_t *colterm;  /* per column: -ao * colsum_B + kb * ao * bo, or NULL (all 0) */
    const int32_t *rowterm;  /* per row: -bo * rowsum_A, or NULL (all 0) */
    int rounded;             /* 1: rounded block; 0: integer block */
    int has_prev;            /* the block reads C (beta_eff != 0) */
    double alpha, beta_eff;  /* f32 values widened to f64 (oneDNN's float alpha, beta) */
    const int32_t *prev;     /* C before the block (row stride ld_c) when has_prev */
    int32_t *out;            /* C after the block (row stride ld_c); may equal prev or acc */
    int64_t ld_c;
    const int32_t *co;       /* added after the block, or NULL */
    int co_mode;             /* 0: co[0]; 1: co[m] (offsetc "C"); 2: co[n] (offsetc "R") */
    int accumulate_out;      /* 1: out += result (a later K slice) instead of out = result */
} dnnq_gemm_api_block_t;

/* Pack one 64-column panel of op(B) (K x nc, nc <= 64, element strides s_k, s_n) into dnnq's
 * layout (dnnq_kernels.h; zeros in the K and column padding) and its nc column sums.  The
 * generic dnnq_pack_b walks element by element; this one copies 4-row groups (row-major B) or
 * 4-byte k runs (transposed B), which is what makes packing per call affordable. */
void dnnq_gemm_api_pack_panel(const int8_t *w, int64_t s_k, int64_t s_n, int64_t K, int64_t nc,
                              int8_t *packed, int32_t *colsum);

/* The same with AVX-512 BW + VNNI (x86-64 builds only; the caller checks the level). */
void dnnq_gemm_api_pack_panel_avx512(const int8_t *w, int64_t s_k, int64_t s_n, int64_t K,
                                     int64_t nc, int8_t *packed, int32_t *colsum);

typedef void (*dnnq_gemm_api_pack_fn)(const int8_t *w, int64_t s_k, int64_t s_n, int64_t K,
                                      int64_t nc, int8_t *packed, int32_t *colsum);
/* The packer for a dnnq ISA level (DNNQ_ISA_*): AVX-512 from avx512_core_vnni up. */
dnnq_gemm_api_pack_fn dnnq_gemm_api_pack_for_isa(int isa);

/* Finish rows [m0, m1) of one block (rows are independent: callers split them by thread). */
void dnnq_gemm_api_finish(const dnnq_gemm_api_block_t *blk, int64_t m0, int64_t m1);

/* rowsum[m] = sum of a[m * lda + k], k in [0, K), for rows [m0, m1); s8 or u8 bytes. */
void dnnq_gemm_api_rowsum(const uint8_t *a, int64_t lda, int64_t K, int is_s8, int64_t m0,
                          int64_t m1, int32_t *rowsum);

/* dst[m * K + k] = src[m * s_m + k * s_k] (byte strides, any sign) for rows [m0, m1): op(A)
 * made row-contiguous when it is stored transposed or strided. */
void dnnq_gemm_api_gather(const uint8_t *src, int64_t s_m, int64_t s_k, int64_t K, int64_t m0,
                          int64_t m1, uint8_t *dst);

#endif
