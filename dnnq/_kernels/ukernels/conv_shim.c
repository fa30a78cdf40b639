/* TEMPORARY stand-ins for the lead's batch-reduce micro-kernel and per-tile epilogue
 * (dnnq_brgemm_ukr_for_isa / dnnq_gemm_epilogue_for_isa), built from the raw micro-kernel and
 * the GEMM's row epilogue, until those land on main.  Removed at the merge. */
#include <stdlib.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"

#define DNNQ_ISA convshim
#define DNNQ_MR 1
static void dnnq_ukr(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                     const int8_t *bp, int32_t *c) {
    (void)mr; (void)K; (void)a; (void)lda; (void)a_xor; (void)bp; (void)c;
}
#include "gemm_impl.h"

static int shim_isa = 0;

static void shim_brgemm(int mr, int64_t npairs, const dnnq_br_pair_t *pairs, uint32_t a_xor,
                        int accumulate, int32_t *c) {
    int32_t t[DNNQ_MR_MAX * DNNQ_NR];
    dnnq_gemm_ukr_fn ukr = dnnq_gemm_ukr_for_isa(shim_isa);
    if (!accumulate) memset(c, 0, sizeof(int32_t) * mr * DNNQ_NR);
    for (int64_t i = 0; i < npairs; ++i) {
        const dnnq_br_pair_t *q = &pairs[i];
        const int64_t K = q->K;
        uint8_t *buf = (uint8_t *)malloc((size_t)(mr * K + 64));
        for (int r = 0; r < mr; ++r)
            memcpy(buf + r * K, q->rows ? q->rows[r] : q->a + r * q->lda, (size_t)K);
        ukr(mr, K, buf, K, a_xor, q->b, t);
        free(buf);
        for (int r = 0; r < mr * DNNQ_NR; ++r) c[r] = (int32_t)((uint32_t)c[r] + (uint32_t)t[r]);
    }
}

static void shim_epilogue(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int mr, int64_t p,
                          const int32_t *tile) {
    const int64_t n0 = p * DNNQ_NR;
    const int nc = (int)(g->N - n0 < DNNQ_NR ? g->N - n0 : DNNQ_NR);
    for (int r = 0; r < mr; ++r) dnnq_epilogue_row(g, b, m + r, n0, nc, tile + r * DNNQ_NR);
}

dnnq_brgemm_ukr_fn dnnq_conv_shim_brgemm_for_isa(int isa) {
    shim_isa = isa == DNNQ_ISA_AVX512_CORE_AMX ? DNNQ_ISA_AVX512_CORE_VNNI : isa;
    return shim_brgemm;
}
int dnnq_conv_shim_brgemm_mr(int isa) {
    int mr = dnnq_gemm_mr_for_isa(isa == DNNQ_ISA_AVX512_CORE_AMX ? DNNQ_ISA_AVX512_CORE_VNNI : isa);
    return mr > DNNQ_MR_MAX ? DNNQ_MR_MAX : mr;
}
dnnq_gemm_epilogue_fn dnnq_conv_shim_epilogue_for_isa(int isa) {
    (void)isa;
    return shim_epilogue;
}
