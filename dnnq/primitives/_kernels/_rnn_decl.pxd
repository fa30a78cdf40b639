# cdef declarations of the int8 RNN engine (ukernels/dnnq_rnn.h), shared by _rnn.pyx and
# _rnn_exec.pyx
from libc.stdint cimport int8_t, uint8_t, int32_t, int64_t

cdef extern from "dnnq_rnn.h" nogil:
    enum:
        DNNQ_RNN_LSTM
        DNNQ_RNN_GRU
        DNNQ_RNN_LBR_GRU
        DNNQ_RNN_VANILLA
        DNNQ_RNN_ACT_RELU
        DNNQ_RNN_ACT_TANH
        DNNQ_RNN_ACT_LOGISTIC
    ctypedef struct dnnq_rnn_args_t:
        int cell, act
        int64_t T, N, C, H, G, nblk
        int64_t Ki
        int reverse
        const uint8_t *x
        int64_t x_st, x_sn
        const int8_t *wl
        const int8_t *wi
        const float *bias
        const float *div
        float scale, shift
        const uint8_t *h0
        int64_t h0_sn
        float *c
        uint8_t *out
        int64_t out_st, out_sn
        float *outf
        int64_t outf_st, outf_sn
        int32_t *lacc
        uint8_t *rh
        float *gate_u
        const float *peep
        const int8_t *wp
        const float *pdiv
        const float *pcomp
        uint8_t *hproj
        int64_t P
        int nthreads
        int fork_join
        int gemm_isa
    ctypedef void (*dnnq_rnn_fn)(const dnnq_rnn_args_t *a)
    dnnq_rnn_fn dnnq_rnn_for_isa(int isa)
    int64_t dnnq_rnn_lacc_rows(int64_t T, int64_t N, int64_t nblk, int64_t G)
    void dnnq_rnn_eltwise(int isa, int alg, float *x, int64_t n)
    int64_t dnnq_rnn_read_stream(int isa, const uint8_t *buf, int64_t n, int64_t reps)
