/* The int8 RNN engine: one layer and direction of an LSTM / GRU / LBR-GRU / vanilla RNN, the
 * whole time loop in C (see rnn_impl.h).  Filled by dnnq/primitives/_kernels/_rnn.pyx.
 *
 * Packed weights: the columns of the (K, G*H) ldigo matrix of one layer and direction are
 * regrouped so that one 64-channel block of every gate sits side by side: panel j*G + g holds
 * the channels 64j .. 64j+63 of gate g (zero columns past H), packed by dnnq_pack_b.  So the
 * tiles of one block give all the gates of those channels, and the cell epilogue runs on them
 * right away. */
#ifndef DNNQ_RNN_H
#define DNNQ_RNN_H
#include <stdint.h>
#include <stddef.h>

enum { DNNQ_RNN_LSTM = 0, DNNQ_RNN_GRU = 1, DNNQ_RNN_LBR_GRU = 2, DNNQ_RNN_VANILLA = 3 };
/* vanilla RNN activations */
enum { DNNQ_RNN_ACT_RELU = 0, DNNQ_RNN_ACT_TANH = 1, DNNQ_RNN_ACT_LOGISTIC = 2 };

typedef struct {
    int cell, act;
    int64_t T, N, C, H, G, nblk;     /* nblk = ceil(H / 64) */
    int64_t Ki;                      /* K of the recurrent GEMM: H (another src_iter width
                                        only when T = 1, LSTM / vanilla RNN) */
    int reverse;                     /* right2left: step s is time T - 1 - s */
    /* u8 layer input: x(t, n) at x + t * x_st + n * x_sn (C bytes) */
    const uint8_t *x; int64_t x_st, x_sn;
    const int8_t *wl, *wi;           /* packed layer (K = C) and iteration (K = H) weights */
    const float *bias;               /* (G or 4 for LBR, H): bias with the shift compensation */
    const float *div;                /* (G, H): f32(weight scale * data scale), the divisor */
    float scale, shift;              /* data quantization u8 = scale * x + shift */
    /* u8 initial state h0(n) at h0 + n * h0_sn; LSTM f32 cell state c (N, H) in place */
    const uint8_t *h0; int64_t h0_sn;
    float *c;
    /* u8 output h(t, n) at out + t * out_st + n * out_sn; also read back as the next h */
    uint8_t *out; int64_t out_st, out_sn;
    /* optional f32 copy of the output: (u8 - shift) / scale (NULL = none) */
    float *outf; int64_t outf_st, outf_sn;
    /* scratch: s32 layer products (dnnq_rnn_lacc_rows rows of nblk * G * 64, a ring), GRU r*h
     * (u8, N x H) and update gate (f32, N x H) */
    int32_t *lacc;
    uint8_t *rh;
    float *gate_u;
    /* LSTM extensions (NULL = none): peephole weights (3, H) f32, gates i, f, o; projection
     * (LSTMP): packed (H, P) weights, per-channel divisor f32(pscale * scale) and shift
     * compensation f32(sum_i Wp) * shift, the u8 h before the projection (N x H scratch); the
     * projected h (P channels) is what out / outf / the next step see */
    const float *peep;
    const int8_t *wp;
    const float *pdiv, *pcomp;
    uint8_t *hproj;
    int64_t P;                       /* width of out (H without a projection) */
    int nthreads;
    int fork_join;                   /* 1: a parallel region per phase; 0: one region, barriers */
    int gemm_isa;                    /* ISA level of the GEMM micro-kernel */
} dnnq_rnn_args_t;

typedef void (*dnnq_rnn_fn)(const dnnq_rnn_args_t *a);

void dnnq_rnn_forward_portable(const dnnq_rnn_args_t *a);
void dnnq_rnn_forward_avx2(const dnnq_rnn_args_t *a);
void dnnq_rnn_forward_avx512(const dnnq_rnn_args_t *a);
dnnq_rnn_fn dnnq_rnn_for_isa(int isa);

/* Time steps per layer-GEMM chunk: the layer products of a chunk (N * G * 64 * nblk s32 a
 * step) are computed just before its steps, 256 KiB a chunk (a quarter of L2).  The product
 * scratch is a ring of one chunk, dnnq_rnn_lacc_rows = chunk steps * N rows: each chunk
 * overwrites the last one, which its steps have finished with. */
int64_t dnnq_rnn_chunk_steps(int64_t T, int64_t N, int64_t nblk, int64_t G);
int64_t dnnq_rnn_lacc_rows(int64_t T, int64_t N, int64_t nblk, int64_t G);

/* reads n bytes (multiple of 256) reps times; returns a checksum (bandwidth benchmarks) */
int64_t dnnq_rnn_read_stream(int isa, const uint8_t *buf, int64_t n, int64_t reps);

/* oneDNN 3.2's jit sigmoid / tanh on n floats in place (tests) */
void dnnq_rnn_eltwise(int isa, int alg, float *x, int64_t n);

#endif
