# The codes of ukernels/dnnq_codes.h as cpdef enums: one declaration for C, Cython and Python.
cdef extern from "dnnq_codes.h":
    cpdef enum dnnq_isa_t:
        DNNQ_ISA_DEFAULT
        DNNQ_ISA_AVX2
        DNNQ_ISA_AVX2_VNNI
        DNNQ_ISA_AVX512_CORE_VNNI
        DNNQ_ISA_AVX512_CORE_AMX

    cpdef enum dnnq_numerics_t:
        DNNQ_NUMERICS_EXACT
        DNNQ_NUMERICS_AVX2

    cpdef enum dnnq_dt_t:
        DNNQ_DT_F32
        DNNQ_DT_S32
        DNNQ_DT_S8
        DNNQ_DT_U8

    cpdef enum dnnq_po_kind_t:
        DNNQ_PO_ELTWISE
        DNNQ_PO_BINARY
        DNNQ_PO_SUM
        DNNQ_PO_CHECKPOINT
        DNNQ_PO_SELECT

    cpdef enum dnnq_eltwise_alg_t:
        DNNQ_ELT_RELU
        DNNQ_ELT_TANH
        DNNQ_ELT_ELU
        DNNQ_ELT_SQUARE
        DNNQ_ELT_ABS
        DNNQ_ELT_SQRT
        DNNQ_ELT_LINEAR
        DNNQ_ELT_SOFT_RELU
        DNNQ_ELT_LOGISTIC
        DNNQ_ELT_EXP
        DNNQ_ELT_GELU_TANH
        DNNQ_ELT_GELU_ERF
        DNNQ_ELT_SWISH
        DNNQ_ELT_LOG
        DNNQ_ELT_CLIP
        DNNQ_ELT_CLIP_V2
        DNNQ_ELT_POW
        DNNQ_ELT_ROUND
        DNNQ_ELT_MISH
        DNNQ_ELT_HARDSWISH
        DNNQ_ELT_HARDSIGMOID

    cpdef enum dnnq_binary_alg_t:
        DNNQ_BIN_ADD
        DNNQ_BIN_SUB
        DNNQ_BIN_MUL
        DNNQ_BIN_DIV
        DNNQ_BIN_MIN
        DNNQ_BIN_MAX
        DNNQ_BIN_GE
        DNNQ_BIN_GT
        DNNQ_BIN_LE
        DNNQ_BIN_LT
        DNNQ_BIN_EQ
        DNNQ_BIN_NE

    cpdef enum dnnq_conv_kernel_t:
        DNNQ_CONV_K_GENERAL
        DNNQ_CONV_K_TILES
        DNNQ_CONV_K_DECONV_PHASES
        DNNQ_CONV_K_DW_ROWS3
        DNNQ_CONV_K_DW3X3
        DNNQ_CONV_K_DW3X3_PLAIN
        DNNQ_CONV_K_F32_GENERAL
        DNNQ_CONV_K_F32_TILES
        DNNQ_CONV_K_F32_DECONV
        DNNQ_CONV_K_F32_DW
        DNNQ_CONV_K_DW_ROWSK
        DNNQ_CONV_K_FOLD_LANES
        DNNQ_CONV_K_DECONV_KS
        DNNQ_CONV_K_STEM
        DNNQ_CONV_K_F32_DECONV_KS

    # (a macro: 0x80808080u, the s8 source's a_xor)
    enum:
        DNNQ_A_XOR_S8
