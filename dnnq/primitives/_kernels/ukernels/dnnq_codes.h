/* Every code shared by C, Cython and Python, declared once: ISA levels, data types, post-op
 * kinds, eltwise and binary algorithms.  Cython sees them through
 * dnnq/primitives/_kernels/_codes.pxd (cpdef enums), Python through
 * dnnq.primitives._kernels._codes, which derives its name tables from the enumerator names
 * (DNNQ_ELT_GELU_TANH <-> "gelu_tanh"): add a code here and every layer has it. */
#ifndef DNNQ_CODES_H
#define DNNQ_CODES_H

/* ISA levels, lowest first (dnnq.primitives._dispatch.ISA_LEVELS) */
typedef enum dnnq_isa_t {
    DNNQ_ISA_DEFAULT = 0, DNNQ_ISA_AVX2 = 1, DNNQ_ISA_AVX2_VNNI = 2, DNNQ_ISA_AVX512_CORE_VNNI = 3,
    DNNQ_ISA_AVX512_CORE_AMX = 4
} dnnq_isa_t;

/* int8 numerics (dnnq.set_int8_numerics), OR-ed into an ISA code given to the GEMM kernel
 * tables: AVX2 makes the u8 x s8 products saturate in s16 pairs, as oneDNN's vpmaddubsw does
 * on CPUs without VNNI.  Only the default and avx2 levels carry it; every other table reads
 * DNNQ_ISA_LEVEL(isa). */
typedef enum dnnq_numerics_t { DNNQ_NUMERICS_EXACT = 0, DNNQ_NUMERICS_AVX2 = 16 } dnnq_numerics_t;
#define DNNQ_ISA_LEVEL(isa) ((isa) & 15)

/* data types of kernel operands */
typedef enum dnnq_dt_t { DNNQ_DT_F32 = 0, DNNQ_DT_S32 = 1, DNNQ_DT_S8 = 2, DNNQ_DT_U8 = 3 } dnnq_dt_t;

/* post-op kinds; CHECKPOINT and SELECT are dnnq extensions (no oneDNN 3.2 equivalent):
 * CHECKPOINT saves the current value, SELECT sets v = alg(saved, src1) ? src2 : v with alg one
 * of the DNNQ_BIN_* comparisons */
typedef enum dnnq_po_kind_t {
    DNNQ_PO_ELTWISE = 1, DNNQ_PO_BINARY = 2, DNNQ_PO_SUM = 3, DNNQ_PO_CHECKPOINT = 4,
    DNNQ_PO_SELECT = 5
} dnnq_po_kind_t;

/* eltwise algorithms (oneDNN's names without the eltwise_ prefix) */
typedef enum dnnq_eltwise_alg_t {
    DNNQ_ELT_RELU = 0, DNNQ_ELT_TANH, DNNQ_ELT_ELU, DNNQ_ELT_SQUARE, DNNQ_ELT_ABS, DNNQ_ELT_SQRT,
    DNNQ_ELT_LINEAR, DNNQ_ELT_SOFT_RELU, DNNQ_ELT_LOGISTIC, DNNQ_ELT_EXP, DNNQ_ELT_GELU_TANH,
    DNNQ_ELT_GELU_ERF, DNNQ_ELT_SWISH, DNNQ_ELT_LOG, DNNQ_ELT_CLIP, DNNQ_ELT_CLIP_V2, DNNQ_ELT_POW,
    DNNQ_ELT_ROUND, DNNQ_ELT_MISH, DNNQ_ELT_HARDSWISH, DNNQ_ELT_HARDSIGMOID
} dnnq_eltwise_alg_t;

/* binary algorithms (oneDNN's names without the binary_ prefix) */
typedef enum dnnq_binary_alg_t {
    DNNQ_BIN_ADD = 0, DNNQ_BIN_SUB, DNNQ_BIN_MUL, DNNQ_BIN_DIV, DNNQ_BIN_MIN, DNNQ_BIN_MAX,
    DNNQ_BIN_GE, DNNQ_BIN_GT, DNNQ_BIN_LE, DNNQ_BIN_LT, DNNQ_BIN_EQ, DNNQ_BIN_NE
} dnnq_binary_alg_t;

/* convolution work-item kernels (dnnq_conv_t.kernel): chosen once at creation by the
 * implementation list dnnq.primitives._impls.CONV, run for every item without a second decision */
typedef enum dnnq_conv_kernel_t {
    DNNQ_CONV_K_GENERAL = 0, DNNQ_CONV_K_TILES = 1, DNNQ_CONV_K_DECONV_PHASES = 2,
    DNNQ_CONV_K_DW_ROWS3 = 3, DNNQ_CONV_K_DW3X3 = 4, DNNQ_CONV_K_DW3X3_PLAIN = 5,
    DNNQ_CONV_K_F32_GENERAL = 6, DNNQ_CONV_K_F32_TILES = 7, DNNQ_CONV_K_F32_DECONV = 8,
    DNNQ_CONV_K_F32_DW = 9, DNNQ_CONV_K_DW_ROWSK = 10,
    DNNQ_CONV_K_FOLD_LANES = 11, DNNQ_CONV_K_DECONV_KS = 12, DNNQ_CONV_K_STEM = 13,
    DNNQ_CONV_K_F32_DECONV_KS = 14
} dnnq_conv_kernel_t;

/* the batch-reduce kernels' a_xor of an s8 source: XOR-ed to u8 = s8 + 128 as it is read */
#define DNNQ_A_XOR_S8 0x80808080u

#endif
