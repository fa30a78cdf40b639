/* Shared C declarations of dnnq's kernels: CPU features, the packed-weights layout, the
 * f32 epilogue description and the per-ISA GEMM block entry points.
 *
 * Packed weights ("VNNI layout"): the (K, N) s8 matrix is cut into panels of DNNQ_NR = 64
 * columns; inside a panel, k is grouped by 4 so that one 64-byte row holds 16 columns x 4 k,
 * exactly one vpdpbusd operand:   packed[((p * K4 + k4) * 64 + n) * 4 + kk] = W[4*k4 + kk, 64*p + n]
 * with zeros in the K and N padding.  K4 = ceil(K / 4).  The same layout serves every ISA.
 */
#ifndef DNNQ_KERNELS_H
#define DNNQ_KERNELS_H
#include <stdint.h>
#include <stddef.h>
#include "dnnq_codes.h"

#define DNNQ_NR 64
/* the most post-ops one primitive takes (dnnq.post_ops.MAX_POST_OPS): the size of the
 * per-execution copies of the post-op table */
#define DNNQ_MAX_POST 32
/* a_xor value of a u8 source (an s8 source XOR-ed to u8 = s8 + 128 as it is read, -128 *
 * colsum compensated: DNNQ_A_XOR_S8, dnnq_codes.h) */
#define DNNQ_A_U8 0u
/* a_xor value of an s8 source multiplied as the signed operand against weights packed as
 * u8 = w + 128 (kernels that define DNNQ_SWAP_FOLD: AVX-512, AVX-VNNI) */
#define DNNQ_A_SWAP 1u
/* a_xor value of an s8 source multiplied signed x signed (AMX tdpbssd): no +128, no fold */
#define DNNQ_A_SIGNED 2u
#define DNNQ_MR_MAX 8

/* ---- CPU features ------------------------------------------------------------------- */
typedef struct {
    int sse41, avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512dq, avx512_vnni, avx_vnni,
        os_ymm, os_zmm, amx_tile, amx_int8, os_amx,   /* os_amx: XTILEDATA saved and granted */
        avx512_vbmi,                                  /* optional: byte permutes (toolkit) */
        amx_emulated,                                 /* DNNQ_EMULATE_AMX=1 (amx_emulate.h) */
        avx_vnni_emulated;                            /* DNNQ_EMULATE_AVX_VNNI=1 */
} dnnq_cpu_features_t;

void dnnq_cpu_detect(dnnq_cpu_features_t *f);
int dnnq_amx_emulation(void);
int dnnq_avx_vnni_emulation(void);
int dnnq_cpu_best_isa(const dnnq_cpu_features_t *f);

typedef struct {
    int kind, alg;
    float alpha, beta;          /* eltwise parameters; sum: alpha = scale, beta = zero point */
    const float *src1;          /* binary: f32 second input; select: the condition */
    int64_t s1_b, s1_m, s1_n;   /* its element strides along batch, row, column (0 = broadcast) */
    const float *src2;          /* select: the f32 replacement value */
    int64_t s2_b, s2_m, s2_n;
} dnnq_postop_t;

/* dnnq_gemm_args_t.ref_numerics: how oneDNN's reference kernels order the epilogue.
 * ORDER: relu alpha = 0 as x * 0, sum not fused (the caller passes the DNNQ_ELT_*_REF /
 * LINEAR_UNFUSED eltwise codes), NaN stored as C converts it (s8 / u8 0, s32 INT_MIN);
 * ZP: + the zero point, 0 when absent, before the store (-0.0f becomes +0.0f);
 * SPLIT_SCALES: the source scale and then the weights scale multiply the accumulator one
 * after the other (MatMul's ref; the convolution's multiplies them first, as the JIT) */
enum { DNNQ_REF_ORDER = 1, DNNQ_REF_ZP = 2, DNNQ_REF_SPLIT_SCALES = 4 };

/* Everything one GEMM execution needs, filled by the Cython driver. All strides in elements. */
typedef struct {
    int64_t M, N, K, K4, n_panels;
    /* A: u8 or s8, rows contiguous in k */
    const uint8_t *a; int64_t a_sb, a_sm; uint32_t a_xor;   /* 0 or DNNQ_A_* */
    /* packed B (dnnq layout), per batch stride in bytes (0 = broadcast) */
    const int8_t *b; int64_t b_sb;
    /* compensation: acc = raw + col_comp[b*c_sb + n] - wzp[n*wzp_sn] * rowsum[b*r_sb + m] */
    const int32_t *col_comp; int64_t c_sb;
    const int32_t *wzp; int64_t wzp_sn;                     /* NULL when weights zp are 0 */
    const int32_t *rowsum; int64_t r_sb;
    /* f32 epilogue */
    int raw_s32;                                            /* 1: write acc as is (s32 dst, no attrs) */
    int fast_epi;                                           /* post-ops are only relu / linear */
    int fast_epi_sum;                                       /* those, sum, gelu_erf / _tanh,
                                                               clip / clip_v2, hardswish /
                                                               hardsigmoid: the fused epilogues
                                                               with DNNQ_FAST_SUM (AVX-512);
                                                               both set by _gemm.pyx's
                                                               fused_epilogue_flags */
    float src_scale;                                        /* 1 when absent */
    const float *scale; int64_t scale_sn;                   /* weights scales (stride 0 or 1) */
    const float *bias; int64_t bias_sb, bias_sm, bias_sn;   /* NULL when no bias */
    int n_post; const dnnq_postop_t *post;
    float inv_dst_scale;
    const int32_t *dst_zp; int64_t dst_zp_sn;               /* NULL when absent; stride 0 or 1 */
    /* destination */
    void *dst; int dst_dt; int64_t d_sb, d_sm;
    /* 0, or DNNQ_REF_* flags: the order of oneDNN's reference kernels (ref:any), generic
     * epilogue only */
    int ref_numerics;
    /* 1: a NaN stores 255 in a u8 destination (oneDNN's jit_deconvolution: vmaxps(0, x) keeps
     * the NaN, vminps(x, 255) then returns 255), generic epilogue only; 0: it stores 0 */
    int u8_nan_top;
} dnnq_gemm_args_t;

/* the largest weights (K x N bytes) for which the threads of a GEMM or convolution split
 * rows instead of panels where dnnq_dst_lines_shared: beyond, every thread reading all the
 * weights cost more than the shared lines (ResNet-50's 1024 -> 2048 1x1: 10 %) */
#define DNNQ_ROWS_OUTER_MAX_WEIGHTS (256 * 1024)

/* Do the destination's rows share cache lines between 64-column panels (its first byte off a
 * 64-byte line, as numpy puts large arrays 16 bytes past one, or rows of a length that is not
 * a multiple of 64 bytes)?  Then threads take row blocks, not panels: two threads writing
 * neighbouring panels of the same rows met in the same lines (row stride d_sm in elements). */
static inline int dnnq_dst_lines_shared(const void *dst, int64_t d_sm, int dst_dt, int raw_s32) {
    const int64_t esz = !raw_s32 && (dst_dt == DNNQ_DT_S8 || dst_dt == DNNQ_DT_U8) ? 1 : 4;
    return ((uintptr_t)dst % 64) != 0 || (d_sm * esz) % 64 != 0;
}

/* Thread shares of a parallel loop's n items (n < 2^31): thread t runs its own contiguous run
 * [t n / T, (t + 1) n / T) from the front, then what is left of the others' runs from their
 * backs (a thread whose core is taken leaves its last items to the others).  Where no thread
 * falls behind, the same items go to the same thread on every call: a band of output rows,
 * and the next layer's band of the same rows, stay in one core's cache (items taken as they
 * come moved them from core to core).  One word per share, front low and back high, claimed
 * by compare-and-swap; each item runs exactly once. */
static inline void dnnq_shares_init(uint64_t *shares, int64_t n, int nthreads) {
    for (int t = 0; t < nthreads; ++t)
        shares[t] = (uint64_t)(t * n / nthreads) | (uint64_t)((t + 1) * n / nthreads) << 32;
}

/* the next item of share s: its front (own) or its back (taken over); -1 when none is left */
static inline int64_t dnnq_share_claim(uint64_t *s, int own) {
    uint64_t w = __atomic_load_n(s, __ATOMIC_RELAXED);
    for (;;) {
        const uint64_t lo = w & 0xffffffffu, hi = w >> 32;
        if (lo >= hi) return -1;
        const uint64_t next = own ? w + 1 : lo | (hi - 1) << 32;
        if (__atomic_compare_exchange_n(s, &w, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return (int64_t)(own ? lo : hi - 1);
    }
}

/* thread t's next item, its own share first, then the others' from (t + 1) on (*k: the share
 * it is on, 0 at the start); -1 when every share is empty */
static inline int64_t dnnq_share_next(uint64_t *shares, int t, int nthreads, int *k) {
    for (; *k < nthreads; ++*k) {
        const int64_t it = dnnq_share_claim(&shares[(t + *k) % nthreads], *k == 0);
        if (it >= 0) return it;
    }
    return -1;
}

/* Computes the rows [m0, m0 + mc) of batch b for the column panel p, epilogue included. */
typedef void (*dnnq_gemm_block_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t m0, int64_t mc,
                                   int64_t p);
/* Raw micro-kernel: c[mr][64] = sum_k a_u8[r][k] * B_panel[k][:] (no compensation). */
typedef void (*dnnq_gemm_ukr_fn)(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                                 const int8_t *bp, int32_t *c);

/* ---- Batch-reduce GEMM micro-kernel ("brgemm"), the engine under every GEMM-shaped primitive
 *
 *   c[r][n] (+)= sum_i sum_{k < K_i} A_i[r][k] * B_i[k][n]        r < mr, n < 64 (one panel)
 *
 * A_i: u8 rows (s8 rows with a_xor = DNNQ_A_XOR_S8 are XOR-ed to u8 = s8 + 128 as they are read,
 * so the caller subtracts 128 * colsum), given dense (row r at a + r * lda) or indirect (row r
 * at rows[r]).  An implicit-GEMM convolution passes, per kernel tap, pointers to the source
 * rows the tap reads; a tap in the padding points at a row that holds the source zero point
 * (in the source data type), so it adds exactly what the per-column compensation removes.
 * B_i: one packed 64-column panel of K_i rows in the layout above (K4_i = ceil(K_i / 4)
 * groups; panel p of a packed matrix starts at packed + p * K4 * 4 * 64).
 * accumulate = 0 overwrites c, 1 adds to it.  c: mr rows of 64 s32, row stride 64.
 * Only a_xor = 0 and DNNQ_A_XOR_S8 are accepted here (not DNNQ_A_SWAP / DNNQ_A_SIGNED). */
typedef struct {
    const uint8_t *a;            /* dense A: row r at a + r * lda (when rows == NULL) */
    int64_t lda;
    const uint8_t *const *rows;  /* indirect A: row r at rows[r]; NULL = dense */
    const int8_t *b;             /* the packed 64-column panel */
    int64_t K;
} dnnq_br_pair_t;

typedef void (*dnnq_brgemm_ukr_fn)(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                   uint32_t a_xor, int accumulate, int32_t *c);
dnnq_brgemm_ukr_fn dnnq_brgemm_ukr_for_isa(int isa);
/* The same for a panel of at most 32 columns (the first 32 columns of c are exact, the others
 * hold anything), or NULL at levels without one (then the 64-column kernel serves). */
dnnq_brgemm_ukr_fn dnnq_brgemm_ukr_n32_for_isa(int isa);
dnnq_brgemm_ukr_fn dnnq_brgemm_ukr_n16_for_isa(int isa); /* panels of <= 16 columns */
void dnnq_brgemm_ukr_n16_avx512vnni(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                    uint32_t a_xor, int accumulate, int32_t *c);
void dnnq_brgemm_ukr_n32_avx512vnni(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                    uint32_t a_xor, int accumulate, int32_t *c);
int dnnq_brgemm_mr_for_isa(int isa);  /* the largest mr one call takes */

/* The AMX batch-reduce kernel (gemm_amx.c), for the tiled convolution path where the
 * implementation list chose it (tiles_amx): dnnq_brgemm_ukr_fn's contract for up to
 * DNNQ_AMX_BR_MR rows; the variant for a panel of ncols (<= 16, <= 32, else 64) columns (the
 * columns past them in c hold anything).  Only at the AMX level (the real tiles, or their
 * emulation with DNNQ_EMULATE_AMX=1); NULL where the build has no x86 kernels.  It leaves its
 * tile configuration loaded between calls: the caller ends it with dnnq_amx_release() on the
 * same thread before it returns. */
#define DNNQ_AMX_BR_MR 32
/* bytes a B operand must have readable past its last k group for the AMX kernels: their last
 * B tile reads up to 15 k-group rows of 256 bytes past a panel (zero A columns meet them) */
#define DNNQ_AMX_B_SLACK (16 * 4 * DNNQ_NR)
dnnq_brgemm_ukr_fn dnnq_brgemm_amx_for(int64_t ncols);
void dnnq_amx_release(void);
#define DNNQ_DECLARE_AMX_BR(isa)                                                               \
    void dnnq_brgemm_amx_n64_##isa(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,        \
                                   uint32_t a_xor, int accumulate, int32_t *c);                \
    void dnnq_brgemm_amx_n32_##isa(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,        \
                                   uint32_t a_xor, int accumulate, int32_t *c);                \
    void dnnq_brgemm_amx_n16_##isa(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,        \
                                   uint32_t a_xor, int accumulate, int32_t *c);                \
    void dnnq_amx_release_##isa(void);
DNNQ_DECLARE_AMX_BR(amx)
DNNQ_DECLARE_AMX_BR(amxemu)
#undef DNNQ_DECLARE_AMX_BR

/* The fused epilogue of one accumulator tile: rows m .. m + mr - 1 of batch b, columns of
 * panel p -> dst, exactly as the GEMM primitives finish (compensation col_comp / wzp * rowsum,
 * scales, bias, post-ops, dst scale and zero point, round-half-even, saturation).  g describes
 * the problem (g->a and g->b are not read).  tile: 64-byte aligned. */
typedef void (*dnnq_gemm_epilogue_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int mr,
                                      int64_t p, const int32_t *tile);
dnnq_gemm_epilogue_fn dnnq_gemm_epilogue_for_isa(int isa);

/* ---- The batch-reduce micro-kernel with the epilogue fused (AVX-512 VNNI): the hot cases
 * of the fused epilogue (u8 / s8 dst, per-column scales and bias, relu(0) or nothing, dst
 * scale and zero point, no compensation, no clamp needed; or a chain of eltwise / sum
 * post-ops without GELU; or an f32 dst with relu(0) or nothing) applied straight from the
 * accumulator registers, so the s32 tile never goes to memory.
 * prepare, once per (batch b, panel p) block of g: fills st and returns the variant (> 0),
 * or 0 when g's epilogue is not one the fused kernel covers.  Then each call computes the
 * tile of mr (1 .. the ukr's mr) rows as dnnq_brgemm_ukr_fn does and writes dst row m +
 * r * mstep for row r; u8 A (a_xor = 0), or an s8 one with dnnq_epi_kind_xor(kind) (below);
 * every pair's K a multiple of 4. */
typedef struct {
    int64_t opaque[192];
} __attribute__((aligned(64))) dnnq_epi_state_t;
typedef int (*dnnq_epi_prepare_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                   dnnq_epi_state_t *st);
typedef void (*dnnq_brgemm_epi_fn)(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                   const dnnq_epi_state_t *st, int kind, int64_t m,
                                   int64_t mstep);
/* NULL at levels without them (the pair-saturating numerics included) */
dnnq_brgemm_epi_fn dnnq_brgemm_epi_for_isa(int isa);
/* An s8 A (a_xor DNNQ_A_XOR_S8, XOR-ed to u8 as it is read): the kind to pass, the prepared kind
 * with DNNQ_EPI_XOR -- only the kinds that add the block's compensation, which holds
 * the -128 * colsum (bit 8 of kind - 1); 0 (not fused) otherwise. */
#define DNNQ_EPI_XOR 64
static inline int dnnq_epi_kind_xor(int kind) {
    return kind > 0 && ((kind - 1) & 8) ? kind | DNNQ_EPI_XOR : 0;
}
dnnq_epi_prepare_fn dnnq_epi_prepare_for_isa(int isa);
int dnnq_epi_prepare_avx512vnni(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                dnnq_epi_state_t *st);
/* The separate epilogue of an s32 tile on constants prepared once per (batch b, panel p)
 * block (a convolution's AMX micro-tiles, whose tiles have no fused epilogue: preparing them
 * per call of 32 rows took 40 % of a 3x3 layer's time).  prepare fills st and returns 1 when
 * dnnq_gemm_epilogue_fn would run its fast epilogue for g (0: call that one instead); then
 * each call writes rows m .. m + mr - 1 of the tile exactly as dnnq_gemm_epilogue_fn does.
 * NULL at levels without them. */
typedef int (*dnnq_epi_tile_prepare_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                        dnnq_epi_state_t *st);
typedef void (*dnnq_epi_tile_fn)(const dnnq_gemm_args_t *g, const dnnq_epi_state_t *st,
                                 int64_t m, int mr, const int32_t *tile);
dnnq_epi_tile_prepare_fn dnnq_epi_tile_prepare_for_isa(int isa);
dnnq_epi_tile_fn dnnq_epi_tile_for_isa(int isa);
int dnnq_epi_tile_prepare_avx512vnni(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                     dnnq_epi_state_t *st);
void dnnq_epi_tile_avx512vnni(const dnnq_gemm_args_t *g, const dnnq_epi_state_t *st, int64_t m,
                              int mr, const int32_t *tile);
void dnnq_brgemm_epi_avx512vnni(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                const dnnq_epi_state_t *st, int kind, int64_t m, int64_t mstep);

#define DNNQ_DECLARE_ISA(isa)                                                                    \
    void dnnq_gemm_block_##isa(const dnnq_gemm_args_t *g, int64_t b, int64_t m0, int64_t mc,     \
                               int64_t p);                                                       \
    void dnnq_gemm_ukr_##isa(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,   \
                             const int8_t *bp, int32_t *c);                                      \
    int dnnq_gemm_mr_##isa(void);                                                                \
    void dnnq_brgemm_ukr_##isa(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,              \
                               uint32_t a_xor, int accumulate, int32_t *c);                      \
    int dnnq_brgemm_mr_##isa(void);                                                              \
    void dnnq_gemm_epilogue_##isa(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int mr,       \
                                  int64_t p, const int32_t *tile);

DNNQ_DECLARE_ISA(portable)
DNNQ_DECLARE_ISA(avx2)
DNNQ_DECLARE_ISA(portablesat)
DNNQ_DECLARE_ISA(avx2sat)
DNNQ_DECLARE_ISA(avxvnni)
DNNQ_DECLARE_ISA(avx512vnni)
DNNQ_DECLARE_ISA(amx)
DNNQ_DECLARE_ISA(amxemu)
DNNQ_DECLARE_ISA(avxvnniemu)

dnnq_gemm_block_fn dnnq_gemm_block_for_isa(int isa);
dnnq_gemm_ukr_fn dnnq_gemm_ukr_for_isa(int isa);
int dnnq_gemm_mr_for_isa(int isa);

/* Packing (portable): pack W (K x N, row stride ldw) into the dnnq layout and its column sums. */
void dnnq_pack_b(const int8_t *w, int64_t ldw, int64_t wn_stride, int64_t K, int64_t N,
                 int8_t *packed, int32_t *colsum);

#endif
