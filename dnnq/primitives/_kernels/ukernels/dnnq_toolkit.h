/* C interface of the toolkit kernels (reorder, eltwise, binary, sum, concat, pooling, softmax).
 *
 * Pointwise engine
 * ----------------
 * Every element-wise primitive is one loop nest over an iteration space of up to
 * DNNQ_PW_MAXD dims (the destination's physical order, with mergeable dims collapsed by the
 * Python side) and a short "program" of stages run on chunks of up to DNNQ_PW_CHUNK elements
 * of the innermost dim, held as f32 in a few stack buffers:
 *
 *   LOAD      buf[b]  = f32(operand[a])
 *   BIN_OPND  buf[b]  = alg(buf[b], f32(operand[a]))        (operand may broadcast: stride 0)
 *   BIN_BUF   buf[b]  = alg(buf[b], buf[a])
 *   BIN_CONST buf[b]  = alg(buf[b], alpha)
 *   SUM       buf[b]  = fma(alpha, buf[a] - beta, buf[b])   (a sum post-op as oneDNN's JIT
 *             kernels compute it: one rounding; its reference kernels use BIN_CONST + BIN_BUF)
 *   ELTWISE   buf[b]  = alg(buf[b]; alpha, beta)
 *   STORE     operand[a] = saturate(rne(buf[b]))            (f32: as is)
 *   COPY      operand[a2] = operand[a]                      (raw, same data type)
 *   BINARY2   buf[b] = alg((f32(operand[a]) - P0) * P1, (f32(operand[a2]) - P2) * P3), absent
 *             steps skipped; stored into operand[a3] too when a3 >= 0 (uses buf[b + 1])
 *   AFFINE    buf[b]  = (((f32(operand[a]) - P0) * P1) * P2) + P3, each step only when its
 *             parameter operand p[i] >= 0 (row-constant parameters take one fused loop);
 *             when a2 >= 0 the result is also stored into operand[a2] (directly for a
 *             contiguous f32 destination)
 *   SAVE      buf[a]  = buf[b]                               (the checkpoint post-op)
 *   SELECT    buf[b]  = alg(buf[p0], f32(operand[a])) ? f32(operand[a2]) : buf[b], alg a
 *             DNNQ_BIN_* comparison (IEEE: false with a NaN except ne); the value operand is
 *             loaded into buf[p1] (the select post-op; both dnnq extensions)
 *
 * Operands are tensors or runtime parameter vectors (scales, zero points), each with its own
 * element strides over the iteration space (0 = broadcast).  Work items are (row, block of the
 * innermost dim); a driver splits [0, n_items) over threads.  Each ISA compiles the same code
 * (toolkit_impl.h) with its own flags; the results are identical on every ISA (no contraction,
 * explicit fmaf where oneDNN fuses).
 */
#ifndef DNNQ_TOOLKIT_H
#define DNNQ_TOOLKIT_H
#include <stdint.h>
#include "dnnq_kernels.h"

#define DNNQ_PW_MAXD 12
#define DNNQ_PW_CHUNK 1024
#define DNNQ_PW_NBUF 4

/* eltwise algorithm codes beyond dnnq_kernels.h's DNNQ_ELT_*: linear rounded twice
 * (alpha * x, then + beta), as oneDNN's reference kernels compute it (its JIT kernels fuse) */
#define DNNQ_ELT_LINEAR_UNFUSED 100
/* relu with alpha = 0 as max(x, 0) (+0.0 for negative x, -0.0, -inf and NaN), what oneDNN's
 * JIT injectors compute; DNNQ_ELT_RELU is x > 0 ? x : x * alpha (its reference kernels) */
#define DNNQ_ELT_RELU_MAX0 101
/* hardsigmoid / hardswish of oneDNN's reference kernels (NaN stays NaN; the JIT gives 1) */
#define DNNQ_ELT_HARDSIGMOID_REF 102
#define DNNQ_ELT_HARDSWISH_REF 103
/* abs of oneDNN's reference kernels: s > 0 ? s : -s (flips a NaN's sign; the JIT clears it) */
#define DNNQ_ELT_ABS_REF 104

enum {
    DNNQ_PW_LOAD = 1, DNNQ_PW_BIN_OPND = 2, DNNQ_PW_BIN_BUF = 3, DNNQ_PW_BIN_CONST = 4,
    DNNQ_PW_ELTWISE = 5, DNNQ_PW_STORE = 6, DNNQ_PW_COPY = 7, DNNQ_PW_AFFINE = 8,
    DNNQ_PW_BINARY2 = 9, DNNQ_PW_SAVE = 10, DNNQ_PW_SELECT = 11, DNNQ_PW_SUM = 12
};

typedef struct {
    const char *ptr;               /* address of iteration index (0, ..., 0) */
    int dt;                        /* DNNQ_DT_* */
    int64_t st[DNNQ_PW_MAXD];      /* element strides along the iteration dims */
} dnnq_pw_opnd_t;

typedef struct {
    int op, buf, arg, arg2, alg;
    float alpha, beta;
    int p[6];                      /* AFFINE: p[0..3], BINARY2: p[0..3] the sources' and, when
                                      it stores, p[4] / p[5] the destination's multiplier /
                                      addend (parameter operands, -1: step absent);
                                      SELECT: p[0] saved buffer, p[1] scratch buffer */
    int arg3;                      /* BINARY2: destination operand (-1: none) */
} dnnq_pw_stage_t;

typedef struct {
    int ndims;
    int64_t dims[DNNQ_PW_MAXD];
    int64_t block;                 /* length of a work item along the innermost dim */
    int n_opnds;
    const dnnq_pw_opnd_t *opnds;
    int n_stages;
    const dnnq_pw_stage_t *stages;
    int use_vbmi;                  /* 1: VBMI byte lookups allowed (CPU and ISA cap:
                                      dnnq.primitives._impls) */
} dnnq_pw_plan_t;

/* Pooling.  Spatial dims are padded to 3 (D, H, W; missing ones have size 1).  The values of
 * one output row (channels-last: the C channels of one position; plain: the OW outputs of one
 * (n, c, od, oh)) are computed into buffer 0 as f32, then `epi` (post-ops + STORE, iteration
 * space = the destination's physical dims, uncollapsed) runs on them.  `raw_store` (max pooling
 * into the source data type without post-ops) writes the integer result directly. */
enum { DNNQ_POOL_MAX = 0, DNNQ_POOL_AVG_INC = 1, DNNQ_POOL_AVG_EXC = 2 };

typedef struct {
    int alg, src_dt, channels_last, raw_store;
    int avg_rcp;                                   /* average = sum * f32(1/count) (oneDNN's
                                                      jit_int) instead of sum / count */
    int fast8;                                     /* channels-last s8 / u8 into the same data
                                                      type and layout, no post-ops: the direct
                                                      int8 kernels (max in int8, average in s16 /
                                                      s32 then one f32 step) */
    int stream8;                                   /* channels-last s8 / u8 average, DW == 1:
                                                      the window rows summed as byte streams
                                                      (tk_pool_stream8.h; dnnq_pool_split) */
    int64_t N, C, ID, IH, IW, OD, OH, OW;
    int64_t KD, KH, KW, SD, SH, SW, DD, DH, DW;   /* DD.. = dilation + 1 */
    int64_t PD, PH, PW;                            /* left padding */
    int64_t window;                                /* KD*KH*KW, capped at INT32_MAX (compared
                                                      with small bounds only) */
    int64_t max_taps;                              /* most taps of one window inside the source
                                                      (< 2^31): the size of a tap list */
    float count_inc;                               /* f32(KD*KH*KW) of the exact product */
    const char *src;
    void *dst;
    dnnq_pw_plan_t epi;
} dnnq_pool_args_t;

/* Softmax over one axis.  Rows are the positions of the other dims (iteration dims `dims`,
 * with the source and destination strides of each); the axis has length `axis_len` and
 * strides `src_as` / `dst_as`.  y = softmax(f32(src)) (or log-softmax), then
 * d = (y * scale) * inv_dst_scale, stored with saturation / rne.  vector_exp: exp and the sum
 * as tk_softmax.h's vector form (the axis innermost in memory, where oneDNN runs its JIT
 * kernel and its own exp); 0: libm's expf and a sequential sum (oneDNN's reference kernel). */
typedef struct {
    int logsoftmax, src_dt, dst_dt, vector_exp;
    int ndims;
    int64_t dims[DNNQ_PW_MAXD], src_st[DNNQ_PW_MAXD], dst_st[DNNQ_PW_MAXD];
    int64_t axis_len, src_as, dst_as;
    float scale, inv_dst_scale;
    const char *src;
    char *dst;
} dnnq_softmax_args_t;

/* Row kernels on quantized 8-bit rows (tk_rows8.h): `rows` rows of `len` dense elements at
 * row strides src_rs / dst_rs (elements); src u8 or s8, dst u8, s8 (inv_dst_scale, dst_zp,
 * |dst_zp| <= 255) or f32.  Softmax: exp_table[255 + d] = exp(f32(d) * src_scale) for the
 * integer d = q - max(row) in [-255, 0]; vbmi: VBMI's byte lookups may be used.  Layer
 * normalization over the row: src_scale / src_zp dequantize, gamma and beta (len each); its
 * source may also be f32 (src_dt DNNQ_DT_F32: src_rs in f32 elements, scale / zp unused). */
typedef struct {
    int64_t rows, len, src_rs, dst_rs;
    int src_dt, dst_dt, dst_zp, vbmi;
    float inv_dst_scale;
    const float *exp_table;
    const uint8_t *src;
    char *dst;
} dnnq_qsoftmax_args_t;

typedef struct {
    int64_t rows, len, src_rs, dst_rs;
    int src_dt, dst_dt, src_zp, dst_zp;
    float src_scale, inv_dst_scale;
    double eps;
    const float *gamma, *beta;
    const uint8_t *src;
    char *dst;
} dnnq_qlayernorm_args_t;

/* Binary ops of 8-bit tensors (tk_rows8.h): rows of `len` dense elements; op one of */
#define DNNQ_Q8_ADD 0      /* same-shape sources: y = x0 a0 + x1 a1 + c */
#define DNNQ_Q8_MUL 1      /* same-shape sources: y = (x0 x1) a0 + c */
#define DNNQ_Q8_MUL_COLS 2 /* y = (x0 cols[i]) a0 + c (per-column multipliers; src1 unused) */
#define DNNQ_Q8_ADD_FMA 3  /* same-shape sources: y = fma(x0, a0, fma(x1, a1, c)) */
#define DNNQ_Q8_ADD_FMA_COLS 4 /* y = fma(x0, a0, cols[i]) (src1 unused) */
typedef struct {
    int64_t rows, len, src0_rs, src1_rs, dst_rs;
    int op, src0_dt, src1_dt, dst_dt, z0, z1, zd;
    float a0, a1, c;
    const float *cols;
    const uint8_t *src0, *src1;
    uint8_t *dst;
} dnnq_q8_binary_args_t;

/* Q((x + x * s) + y) of channels-last rows (tk_scale_residual.h): rows of `len` elements at
 * row strides x_rs / y_rs / dst_rs (elements); x f32; s one f32 per column (a channel's
 * gate); y absent (NULL), f32, or u8 / s8 dequantized as (f32(y) - y_zp) * y_scale; the sum
 * times inv_dst_scale plus dst_zp stored as u8 / s8.  Each operation rounded once, in the
 * order written. */
typedef struct {
    int64_t rows, len, x_rs, y_rs, dst_rs;
    int y_dt, dst_dt;
    float y_zp, y_scale, inv_dst_scale, dst_zp;
    const float *x, *s;
    const char *y;
    char *dst;
} dnnq_scale_residual_args_t;

/* ONNX QuantizeLinear of C (2 - 4) f32 planes of n_pix values into n_pix channels-last
 * pixels of C bytes (tk_quantize_planes.h): x / scale clamped to [lo, hi] (the type's range
 * less zp; the lower bound first, a NaN goes to it), rounded half to even, plus zp; dst_dt
 * DNNQ_DT_U8 or DNNQ_DT_S8.  Run on pixels [p0, p1) of one image. */
typedef struct {
    int64_t n_pix;
    int C, dst_dt, zp;
    float scale, lo, hi;
    const float *src;
    uint8_t *dst;
} dnnq_qplanes_args_t;

/* The run functions return 0, or DNNQ_TK_ENOMEM when a scratch allocation failed (the
 * driver raises MemoryError: the destination is then incomplete). */
#define DNNQ_TK_ENOMEM 1
typedef int (*dnnq_pw_run_fn)(const dnnq_pw_plan_t *p, int64_t it0, int64_t it1);
typedef int (*dnnq_pool_run_fn)(const dnnq_pool_args_t *a, int64_t it0, int64_t it1);
/* One output of a stream8 pooling with its window rows split over nparts threads: part <
 * nparts sums its share into sums[part * C ..] (u32), part == nparts (after all of them)
 * adds the shares and stores the output; sums holds nparts * C entries. */
typedef int (*dnnq_pool_split_fn)(const dnnq_pool_args_t *a, int64_t item, int part, int nparts,
                                  uint32_t *sums);
typedef int (*dnnq_softmax_run_fn)(const dnnq_softmax_args_t *a, int64_t it0, int64_t it1, float *work);
/* dst[i] = table[src[i]] for i < n (vbmi: VBMI's byte lookups may be used) */
typedef void (*dnnq_table_run_fn)(uint8_t *dst, const uint8_t *src, const uint8_t *table,
                                  int64_t n, int vbmi);
/* rows r0 .. r1 - 1 */
typedef void (*dnnq_qsoftmax_run_fn)(const dnnq_qsoftmax_args_t *a, int64_t r0, int64_t r1);
typedef void (*dnnq_qlayernorm_run_fn)(const dnnq_qlayernorm_args_t *a, int64_t r0, int64_t r1);
typedef void (*dnnq_q8_binary_run_fn)(const dnnq_q8_binary_args_t *a, int64_t r0, int64_t r1);
typedef void (*dnnq_scale_residual_run_fn)(const dnnq_scale_residual_args_t *a, int64_t r0,
                                           int64_t r1);
typedef void (*dnnq_quantize_planes_run_fn)(const dnnq_qplanes_args_t *a, int64_t p0,
                                            int64_t p1);

#define DNNQ_DECLARE_TOOLKIT(isa)                                                             \
    int dnnq_pw_run_##isa(const dnnq_pw_plan_t *p, int64_t it0, int64_t it1);                 \
    int dnnq_pool_run_##isa(const dnnq_pool_args_t *a, int64_t it0, int64_t it1);             \
    int dnnq_pool_split_##isa(const dnnq_pool_args_t *a, int64_t item, int part, int nparts,  \
                              uint32_t *sums);                                          \
    int dnnq_softmax_run_##isa(const dnnq_softmax_args_t *a, int64_t it0, int64_t it1,        \
                               float *work);                                            \
    void dnnq_table_run_##isa(uint8_t *dst, const uint8_t *src, const uint8_t *table,        \
                              int64_t n, int vbmi);                                       \
    void dnnq_qsoftmax_run_##isa(const dnnq_qsoftmax_args_t *a, int64_t r0, int64_t r1);      \
    void dnnq_qlayernorm_run_##isa(const dnnq_qlayernorm_args_t *a, int64_t r0, int64_t r1);  \
    void dnnq_q8_binary_run_##isa(const dnnq_q8_binary_args_t *a, int64_t r0, int64_t r1);  \
    void dnnq_scale_residual_run_##isa(const dnnq_scale_residual_args_t *a, int64_t r0,      \
                                       int64_t r1);                                          \
    void dnnq_quantize_planes_run_##isa(const dnnq_qplanes_args_t *a, int64_t p0, int64_t p1);

DNNQ_DECLARE_TOOLKIT(portable)
DNNQ_DECLARE_TOOLKIT(avx2)
DNNQ_DECLARE_TOOLKIT(avx512)

/* ISA level (DNNQ_ISA_*) -> kernel; `name` receives "portable", "avx2" or "avx512". */
dnnq_pw_run_fn dnnq_pw_run_for_isa(int isa);
dnnq_pool_run_fn dnnq_pool_run_for_isa(int isa);
dnnq_pool_split_fn dnnq_pool_split_for_isa(int isa);
dnnq_softmax_run_fn dnnq_softmax_run_for_isa(int isa);
dnnq_table_run_fn dnnq_table_run_for_isa(int isa);
dnnq_qsoftmax_run_fn dnnq_qsoftmax_run_for_isa(int isa);
dnnq_qlayernorm_run_fn dnnq_qlayernorm_run_for_isa(int isa);
dnnq_q8_binary_run_fn dnnq_q8_binary_run_for_isa(int isa);
dnnq_scale_residual_run_fn dnnq_scale_residual_run_for_isa(int isa);
dnnq_quantize_planes_run_fn dnnq_quantize_planes_run_for_isa(int isa);
const char *dnnq_toolkit_isa_name(int isa);

/* Number of work items of a pointwise plan: rows * blocks per row. */
static inline int64_t dnnq_pw_items(const dnnq_pw_plan_t *p) {
    int64_t rows = 1;
    for (int d = 0; d + 1 < p->ndims; ++d) rows *= p->dims[d];
    const int64_t inner = p->ndims > 0 ? p->dims[p->ndims - 1] : 1;
    const int64_t blk = p->block > 0 ? p->block : inner;
    return rows * ((inner + blk - 1) / blk);
}
#endif
