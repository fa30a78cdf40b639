# cdef interface of the GEMM driver (_gemm.pyx), for the other Cython drivers (the C-level
# execute path of MatMul / InnerProduct, convolution, RNN): fill a dnnq_gemm_args_t from
# plan.g and call plan.launch(&g, nthreads) without the GIL.
from libc.stdint cimport int64_t
from dnnq._kernels._kernels cimport dnnq_gemm_args_t, dnnq_gemm_block_fn, dnnq_postop_t

cdef class GemmPlan:
    cdef dnnq_gemm_args_t g
    cdef dnnq_gemm_block_fn block
    cdef dnnq_postop_t* post
    cdef public int64_t batch, M, N, K, mc, n_mblocks
    cdef public int isa
    cdef public int64_t min_work_per_thread
    cdef public bint swap_s8, signed_s8, m_outer, f32

    cdef void launch(self, const dnnq_gemm_args_t* g, int nthreads) noexcept nogil
