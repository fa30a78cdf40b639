/* RNN driver by ISA level: default -> portable, avx2 / avx2_vnni -> avx2, avx512 levels ->
 * avx512 (the GEMM micro-kernel inside is picked separately, per exact level). */
#include "dnnq_kernels.h"
#include "dnnq_rnn.h"

void dnnq_rnn_eltwise_portable(int alg, float *v, int64_t n);
void dnnq_rnn_eltwise_avx2(int alg, float *v, int64_t n);
void dnnq_rnn_eltwise_avx512(int alg, float *v, int64_t n);

int64_t dnnq_rnn_read_stream_portable(const uint8_t *buf, int64_t n, int64_t reps);
int64_t dnnq_rnn_read_stream_avx2(const uint8_t *buf, int64_t n, int64_t reps);
int64_t dnnq_rnn_read_stream_avx512(const uint8_t *buf, int64_t n, int64_t reps);

int64_t dnnq_rnn_read_stream(int isa, const uint8_t *buf, int64_t n, int64_t reps) {
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (DNNQ_ISA_LEVEL(isa)) {
    case DNNQ_ISA_AVX512_CORE_AMX:
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_rnn_read_stream_avx512(buf, n, reps);
    case DNNQ_ISA_AVX2_VNNI:
    case DNNQ_ISA_AVX2: return dnnq_rnn_read_stream_avx2(buf, n, reps);
    default: break;
    }
#endif
    (void)isa;
    return dnnq_rnn_read_stream_portable(buf, n, reps);
}

dnnq_rnn_fn dnnq_rnn_for_isa(int isa) {
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (DNNQ_ISA_LEVEL(isa)) {
    case DNNQ_ISA_AVX512_CORE_AMX:
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_rnn_forward_avx512;
    case DNNQ_ISA_AVX2_VNNI:
    case DNNQ_ISA_AVX2: return dnnq_rnn_forward_avx2;
    default: break;
    }
#endif
    (void)isa;
    return dnnq_rnn_forward_portable;
}

void dnnq_rnn_eltwise(int isa, int alg, float *x, int64_t n) {
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (DNNQ_ISA_LEVEL(isa)) {
    case DNNQ_ISA_AVX512_CORE_AMX:
    case DNNQ_ISA_AVX512_CORE_VNNI: dnnq_rnn_eltwise_avx512(alg, x, n); return;
    case DNNQ_ISA_AVX2_VNNI:
    case DNNQ_ISA_AVX2: dnnq_rnn_eltwise_avx2(alg, x, n); return;
    default: break;
    }
#endif
    (void)isa;
    dnnq_rnn_eltwise_portable(alg, x, n);
}

int64_t dnnq_rnn_chunk_steps(int64_t T, int64_t N, int64_t nblk, int64_t G) {
    /* at N = 32, H = 512 one step a chunk measured 1-5 % faster than 2 MiB chunks, which evict
     * the recurrent weights from L2 */
    const int64_t step_bytes = N * nblk * G * 64 * 4;
    int64_t tc = ((int64_t)256 << 10) / (step_bytes > 0 ? step_bytes : 1);
    return tc < 1 ? 1 : tc > T ? T : tc;
}

int64_t dnnq_rnn_lacc_rows(int64_t T, int64_t N, int64_t nblk, int64_t G) {
    return dnnq_rnn_chunk_steps(T, N, nblk, G) * N;
}
