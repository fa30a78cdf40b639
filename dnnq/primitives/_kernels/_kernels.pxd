# cdef declarations of the C side of dnnq's kernels (ukernels/dnnq_kernels.h).
from libc.stdint cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t

cdef extern from "dnnq_kernels.h" nogil:
    enum:
        DNNQ_NR
        DNNQ_ROWS_OUTER_MAX_WEIGHTS
        DNNQ_MAX_POST

    # dnnq_gemm_args_t.a_xor: how an s8 source is multiplied (DNNQ_A_U8: a u8 source; the
    # XOR to u8 is DNNQ_A_XOR_S8 of _codes.pxd)
    const uint32_t DNNQ_A_U8, DNNQ_A_SWAP, DNNQ_A_SIGNED

    ctypedef struct dnnq_cpu_features_t:
        int sse41, avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512dq, avx512_vnni, avx_vnni
        int os_ymm, os_zmm, amx_tile, amx_int8, os_amx, avx512_vbmi, amx_emulated,
        int avx_vnni_emulated

    int dnnq_dst_lines_shared(const void *dst, int64_t d_sm, int dst_dt, int raw_s32)
    void dnnq_shares_init(uint64_t *shares, int64_t n, int nthreads)
    int64_t dnnq_share_next(uint64_t *shares, int t, int nthreads, int *k)
    void dnnq_cpu_detect(dnnq_cpu_features_t *f)
    int dnnq_cpu_best_isa(const dnnq_cpu_features_t *f)

    ctypedef struct dnnq_postop_t:
        int kind, alg
        float alpha, beta
        const float *src1
        int64_t s1_b, s1_m, s1_n
        const float *src2
        int64_t s2_b, s2_m, s2_n

    enum:
        DNNQ_REF_ORDER
        DNNQ_REF_ZP
        DNNQ_REF_SPLIT_SCALES

    ctypedef struct dnnq_gemm_args_t:
        int64_t M, N, K, K4, n_panels
        const uint8_t *a
        int64_t a_sb, a_sm
        uint32_t a_xor
        const int8_t *b
        int64_t b_sb
        const int32_t *col_comp
        int64_t c_sb
        const int32_t *wzp
        int64_t wzp_sn
        const int32_t *rowsum
        int64_t r_sb
        int raw_s32
        int fast_epi
        int fast_epi_sum
        float src_scale
        const float *scale
        int64_t scale_sn
        const float *bias
        int64_t bias_sb, bias_sm, bias_sn
        int n_post
        const dnnq_postop_t *post
        float inv_dst_scale
        const int32_t *dst_zp
        int64_t dst_zp_sn
        void *dst
        int dst_dt
        int64_t d_sb, d_sm
        int ref_numerics
        int u8_nan_top

    ctypedef void (*dnnq_gemm_block_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t m0,
                                        int64_t mc, int64_t p)
    ctypedef void (*dnnq_gemm_ukr_fn)(int mr, int64_t K, const uint8_t *a, int64_t lda,
                                      uint32_t a_xor, const int8_t *bp, int32_t *c)

    ctypedef struct dnnq_br_pair_t:
        const uint8_t *a
        int64_t lda
        const uint8_t *const *rows
        const int8_t *b
        int64_t K

    ctypedef void (*dnnq_brgemm_ukr_fn)(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                        uint32_t a_xor, int accumulate, int32_t *c)
    ctypedef void (*dnnq_gemm_epilogue_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t m,
                                           int mr, int64_t p, const int32_t *tile)
    dnnq_brgemm_ukr_fn dnnq_brgemm_ukr_for_isa(int isa)
    dnnq_brgemm_ukr_fn dnnq_brgemm_ukr_n32_for_isa(int isa)
    dnnq_brgemm_ukr_fn dnnq_brgemm_ukr_n16_for_isa(int isa)
    int dnnq_brgemm_mr_for_isa(int isa)
    int DNNQ_AMX_BR_MR
    int DNNQ_AMX_B_SLACK
    dnnq_brgemm_ukr_fn dnnq_brgemm_amx_for(int64_t ncols)
    void dnnq_amx_release()
    dnnq_gemm_epilogue_fn dnnq_gemm_epilogue_for_isa(int isa)

    dnnq_gemm_block_fn dnnq_gemm_block_for_isa(int isa)
    dnnq_gemm_ukr_fn dnnq_gemm_ukr_for_isa(int isa)
    int dnnq_gemm_mr_for_isa(int isa)
    void dnnq_pack_b(const int8_t *w, int64_t ldw, int64_t wn_stride, int64_t K, int64_t N,
                     int8_t *packed, int32_t *colsum)

cdef extern from "dnnq_f32.h" nogil:
    enum:
        DNNQ_F32_MR

    ctypedef struct dnnq_br_pair_f32_t:
        const float *a
        int64_t lda
        const float *const *rows
        const float *b
        int64_t K

    ctypedef void (*dnnq_brgemm_f32_fn)(int mr, int nc, int64_t npairs,
                                        const dnnq_br_pair_f32_t *pairs, int accumulate,
                                        float *c)
    ctypedef void (*dnnq_gemm_epilogue_f32_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t m,
                                               int mr, int64_t p, const float *tile)
    ctypedef void (*dnnq_dw_f32_fn)(int mr, int64_t ntaps, const float *const *rows, int64_t ps,
                                    int nc, const float *w, float *acc)
    ctypedef struct dnnq_f32_epi_state_t:
        pass
    ctypedef int (*dnnq_f32_epi_prepare_fn)(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                            dnnq_f32_epi_state_t *st)
    ctypedef void (*dnnq_brgemm_f32_epi_fn)(int mr, int64_t npairs,
                                            const dnnq_br_pair_f32_t *pairs, int accumulate,
                                            const float *c, const dnnq_f32_epi_state_t *st,
                                            int64_t m, int64_t mstep)
    ctypedef void (*dnnq_dw_f32_epi_fn)(int mr, int64_t ntaps, const float *const *rows,
                                        int64_t ps, const float *w,
                                        const dnnq_f32_epi_state_t *st, int64_t m)
    dnnq_dw_f32_epi_fn dnnq_dw_f32_epi_for_isa(int isa)
    ctypedef void (*dnnq_dw_f32_rows_fn)(int mr, int64_t nkrows, const float *const *krows,
                                         const float *const *wrows, int64_t ic, int kw, int sw,
                                         int nc, float *acc, const dnnq_f32_epi_state_t *st,
                                         int64_t m)
    dnnq_dw_f32_rows_fn dnnq_dw_f32_rows_for_isa(int isa)
    dnnq_f32_epi_prepare_fn dnnq_f32_epi_prepare_for_isa(int isa)
    dnnq_brgemm_f32_epi_fn dnnq_brgemm_f32_epi_for_isa(int isa)
    dnnq_brgemm_f32_fn dnnq_brgemm_f32_for_isa(int isa)
    dnnq_gemm_epilogue_f32_fn dnnq_gemm_epilogue_f32_for_isa(int isa)
    dnnq_gemm_block_fn dnnq_gemm_block_f32_for_isa(int isa)
    dnnq_dw_f32_fn dnnq_dw_f32_for_isa(int isa)
    void dnnq_pack_b_f32(const float *w, int64_t ldw, int64_t wn, int64_t K, int64_t N,
                         float *packed)
