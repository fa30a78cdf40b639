/* RNN driver by ISA level (the level -> kernel set lists: isa_pick.h): default -> portable,
 * avx2 / avx2_vnni -> avx2, avx512 levels -> avx512 (the GEMM micro-kernel inside is picked
 * separately, per exact level). */
#include "dnnq_kernels.h"
#include "dnnq_rnn.h"
#include "isa_pick.h"

void dnnq_rnn_eltwise_portable(int alg, float *v, int64_t n);
void dnnq_rnn_eltwise_avx2(int alg, float *v, int64_t n);
void dnnq_rnn_eltwise_avx512(int alg, float *v, int64_t n);

int64_t dnnq_rnn_read_stream_portable(const uint8_t *buf, int64_t n, int64_t reps);
int64_t dnnq_rnn_read_stream_avx2(const uint8_t *buf, int64_t n, int64_t reps);
int64_t dnnq_rnn_read_stream_avx512(const uint8_t *buf, int64_t n, int64_t reps);

#define DNNQ_RNN_READ_CASE(level, set, fn) case level: return fn##_##set(buf, n, reps);
int64_t dnnq_rnn_read_stream(int isa, const uint8_t *buf, int64_t n, int64_t reps) {
    DNNQ_PICK_SWITCH(DNNQ_WIDTH_SETS, DNNQ_RNN_READ_CASE, dnnq_rnn_read_stream, isa)
    return dnnq_rnn_read_stream_portable(buf, n, reps);
}

DNNQ_DEFINE_PICK(dnnq_rnn_fn, dnnq_rnn_for_isa, dnnq_rnn_forward, DNNQ_WIDTH_SETS,
                 dnnq_rnn_forward_portable)

#define DNNQ_RNN_ELTWISE_CASE(level, set, fn) case level: fn##_##set(alg, x, n); return;
void dnnq_rnn_eltwise(int isa, int alg, float *x, int64_t n) {
    DNNQ_PICK_SWITCH(DNNQ_WIDTH_SETS, DNNQ_RNN_ELTWISE_CASE, dnnq_rnn_eltwise, isa)
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
