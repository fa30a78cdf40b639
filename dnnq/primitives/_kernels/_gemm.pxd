# cdef interface of the GEMM driver (_gemm.pyx), for the other Cython drivers (the C-level
# execute path of MatMul / InnerProduct, convolution, RNN).
#
# One executor: a caller fills a gemm_operands_t (the arrays of one execution, already checked)
# and calls plan.execute(&op, nthreads); it alone fills the C argument struct from the plan
# and the operands and launches the kernel.  plan.launch(&g, nthreads) runs an already filled
# struct (the drivers that build their own: the raw GEMM API, convolution's 1x1 path).
from libc.stdint cimport int8_t, uint8_t, int32_t, uint32_t, int64_t
from dnnq.primitives._kernels._kernels cimport (
    dnnq_gemm_args_t, dnnq_gemm_block_fn, dnnq_postop_t, DNNQ_MAX_POST,
)

cdef struct gemm_post_input_t:
    # one post-op's inputs: binary src1 / select condition (src1) and select value (src2),
    # strides over (batch, row, column); NULL where the post-op takes none
    const float *src1
    int64_t s1[3]
    const float *src2
    int64_t s2[3]

cdef struct gemm_operands_t:
    # A (u8 / s8 bytes, or f32) and its batch / row strides in elements
    const void *a
    int64_t a_sb, a_sm
    bint s8_src
    # packed B and its batch stride (bytes; 0 = broadcast)
    const void *b
    int64_t b_sb
    # compensation (see dnnq_gemm_args_t): col_comp may be NULL for f32 plans
    const int32_t *col_comp
    int64_t c_sb
    const int32_t *wzp
    int64_t wzp_sn
    const int32_t *rowsum
    int64_t r_sb
    bint raw_s32
    float src_scale
    const float *scale
    int64_t scale_sn
    const float *bias
    int64_t bias_sb, bias_sm, bias_sn
    float dst_scale
    const int32_t *dst_zp
    int64_t dst_zp_sn
    void *dst
    int64_t d_sb, d_sm
    # one entry per post-op of the plan (NULL when it has none)
    const gemm_post_input_t *post_in

cdef class GemmPlan:
    cdef dnnq_gemm_args_t g
    cdef dnnq_gemm_block_fn block
    cdef dnnq_postop_t* post
    cdef public int64_t batch, M, N, K, mc, n_mblocks
    cdef public int isa
    cdef public int64_t min_work_per_thread
    cdef public bint swap_s8, signed_s8, m_outer, f32
    cdef readonly uint32_t a_xor_s8

    cdef int execute(self, const gemm_operands_t* op, int nthreads) except -1
    cdef void launch(self, const dnnq_gemm_args_t* g, int nthreads) noexcept nogil
