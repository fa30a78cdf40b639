# cdef interface of the convolution driver (_conv.pyx): the C declarations of dnnq_conv.h and
# ConvPlan's fields, for the C-level execute path (_conv_exec.pyx), which fills a copy of
# plan.cv per call and runs it with plan._launch.
from libc.stdint cimport int8_t, uint8_t, int16_t, int32_t, uint32_t, int64_t, uint64_t
from dnnq.primitives._kernels._kernels cimport (
    dnnq_gemm_args_t, dnnq_postop_t, dnnq_brgemm_ukr_fn, dnnq_gemm_epilogue_fn,
    dnnq_brgemm_f32_fn, dnnq_gemm_epilogue_f32_fn, dnnq_dw_f32_fn, dnnq_f32_epi_prepare_fn,
    dnnq_brgemm_f32_epi_fn, dnnq_dw_f32_epi_fn, dnnq_dw_f32_rows_fn,
)

cdef extern from "dnnq_conv.h" nogil:
    enum:
        DNNQ_CONV_MAX_POST
        DNNQ_MR_MAX
        DNNQ_CONV_TILE_ROWS
        DNNQ_AMX_BR_MR
        DNNQ_DW_S16
        DNNQ_DW_VNNI4
        DNNQ_DW_ROWSK_MIN_KW
        DNNQ_DW_ROWSK_MAX_KW
        DNNQ_FOLD_LANES_MAX_OC
        DNNQ_CONV_STEM_MAX_K
    const int64_t DNNQ_CONV_TILES_MAX_ROWS
    const int64_t DNNQ_CONV_TILES_MAX_OW
    ctypedef int (*dnnq_conv_item_fn)(const void *cv, int64_t item)
    ctypedef void (*dnnq_dw_tile_fn)(int mr, int64_t ntaps, const uint8_t *const *rows,
                                     int64_t ps, int nc, int src_signed, const int16_t *w,
                                     int32_t *acc)
    ctypedef struct dnnq_conv_t:
        int kernel
        dnnq_conv_item_fn run_item
        int dw_fused
        dnnq_dw_tile_fn dw_tile
        int64_t N, G, ICg, OCg, IC, OC
        int64_t id, ih, iw, od, oh, ow
        int64_t kd, kh, kw
        int64_t sd, sh, sw
        int64_t dd, dh, dw
        int64_t pd, ph, pw
        int deconv, depthwise, fold_kw
        int amx
        int64_t kpair, npairs, K4, n_panels, mc
        int mr
        const uint8_t *src
        uint32_t a_xor
        int src_signed
        const uint8_t *zp_rows
        const int32_t *padcorr
        const int8_t *packed
        const int16_t *dw_weights
        int64_t dw_stride
        int dw_kind
        dnnq_gemm_args_t epi
        int64_t dst_img, rowsum_img
        int64_t post_b[DNNQ_CONV_MAX_POST]
        int64_t post2_b[DNNQ_CONV_MAX_POST]
        dnnq_brgemm_ukr_fn brgemm
        dnnq_gemm_epilogue_fn epilogue
        int isa
        int64_t n_chunks
        const void *tiles
        int plain
        int panel_outer
        int rows_outer
        int skip_zero_taps
        const void *flat_table
        int f32
        dnnq_brgemm_f32_fn brgemm_f32
        dnnq_gemm_epilogue_f32_fn epilogue_f32
        dnnq_dw_f32_fn dw_f32
        dnnq_f32_epi_prepare_fn f32_epi_prepare
        dnnq_brgemm_f32_epi_fn brgemm_f32_epi
        dnnq_dw_f32_epi_fn dw_f32_epi
        dnnq_dw_f32_rows_fn dw_f32_rows
    int64_t dnnq_conv_n_items(const dnnq_conv_t *cv)
    int dnnq_conv_build_tiles(dnnq_conv_t *cv)
    void dnnq_conv_free_tiles(dnnq_conv_t *cv)
    int dnnq_conv_build_flat_table(dnnq_conv_t *cv)
    void dnnq_transpose(const void *src, void *dst, int64_t rows, int64_t cols, int64_t cbegin,
                        int64_t cend, int esz, int64_t ldd)
    void dnnq_transpose_for_isa(int isa, const void *src, void *dst, int64_t rows, int64_t cols,
                                int64_t cbegin, int64_t cend, int esz, int64_t ldd)
    void dnnq_transpose_rows_for_isa(int isa, const void *src, void *dst, int64_t rows,
                                     int64_t cols, int64_t rbegin, int64_t rend, int esz)
    int dnnq_conv_run_item(const dnnq_conv_t *cv, int64_t item)
    int dnnq_conv_run_share(const dnnq_conv_t *cv, int t, int nthreads, uint64_t *shares)
    dnnq_conv_item_fn dnnq_conv_item_fn_for(const dnnq_conv_t *cv)
    int dnnq_conv_check_kernel(const dnnq_conv_t *cv, int kernel)
    dnnq_dw_tile_fn dnnq_dw_tile_for_isa(int isa, int kind)
    int dnnq_conv_prepare_run(dnnq_conv_t *cv)
    void dnnq_conv_finish_run(dnnq_conv_t *cv)
    int dnnq_conv_run_band_unit(const dnnq_conv_t *cv, int64_t unit, int isa,
                                const uint8_t *src_plain, int64_t p_src, void *dst_plain,
                                int64_t p_dst, int esz)


# One execution's arrays and runtime values, as pointers (the caller keeps the arrays alive):
# what ConvPlan.execute, the one executor, puts into a copy of the plan's dnnq_conv_t.
cdef struct ConvRun:
    const uint8_t* src             # channels-last, or plain with plain_data
    const uint8_t* zp_rows
    const int32_t* padcorr         # NULL, or a zero point the source type cannot hold
    const int8_t* packed
    const int16_t* dw_weights
    const int32_t* col_comp
    const int32_t* wzp             # NULL: no weights zero point
    int64_t wzp_sn
    const int32_t* rowsum
    float src_scale
    const float* scale
    int64_t scale_sn
    const float* bias              # f32 (OC,) or NULL
    float dst_scale
    const int32_t* dst_zp          # NULL: none
    int64_t dst_zp_sn
    void* dst                      # channels-last, or plain with plain_data
    const float* src1[DNNQ_CONV_MAX_POST]   # per post-op: binary / select inputs, or NULL
    int64_t s1[DNNQ_CONV_MAX_POST][3]       # (image, pixel, channel) strides
    const float* src2[DNNQ_CONV_MAX_POST]
    int64_t s2[DNNQ_CONV_MAX_POST][3]
    bint plain_data                # src and dst are the user's plain planes (plain kernel)
    bint panel_outer               # the column kernel's items panel-outer (channel bands)
    # the fused band path (ConvExec._fused_bands): the plain arrays, src / dst the buffers
    const uint8_t* band_src
    void* band_dst
    int64_t band_p_src, band_p_dst
    int band_esz


cdef class ConvPlan:
    cdef dnnq_conv_t cv
    cdef dnnq_postop_t* post
    cdef public int64_t n_items, work
    cdef public int kernel         # the chosen work-item kernel (_codes.CONV_KERNEL)
    cdef bint s8_src, raw_s32
    cdef int64_t dw_strides[2]
    # a depthwise plan's item size per thread count: item_pixels(threads) -> mc, asked once
    # per count (cached in mc_by_threads[threads - 1], 0: not asked yet)
    cdef object item_pixels
    cdef int64_t mc_by_threads[64]

    cdef int64_t _item_mc(self, int nthreads) except -1
    cdef int execute(self, const ConvRun* r, int nthreads) except -1
    cdef int _launch(self, const dnnq_conv_t* cv, int nthreads) except -1
    cdef int _launch_bands(self, const dnnq_conv_t* cv, int nthreads, int isa,
                           const uint8_t* src_plain, int64_t p_src, void* dst_plain,
                           int64_t p_dst, int esz) except -1
