/* What every convolution kernel shares and nothing of the kernels themselves: the
 * deconvolution coordinate table, the work-item count, an item's epilogue arguments, the
 * general driver's depthwise tile per level.  The kernels (conv_driver.c, conv_tiles.c,
 * conv_deconv.c, conv_f32.c, depthwise/) call these; conv_kernels.c calls the kernels: the
 * call graph has no circle. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "isa_pick.h"
#include "conv_coords.h"

/* A deconvolution's source coordinate of each (output coordinate, kernel index) per dim,
 * -1 where the tap reaches no source pixel ([od][kd], then [oh][kh], then [ow][kw]): built
 * once at creation, it spares the general driver two divisions per tap and pixel (a third
 * of a strided deconvolution's time).  0, or -1 when the allocation failed. */
int dnnq_conv_build_coords(dnnq_conv_t *cv) {
    cv->coords = NULL;
    if (!cv->deconv) return 0;
    const int64_t O[3] = {cv->od, cv->oh, cv->ow}, K[3] = {cv->kd, cv->kh, cv->kw};
    const int64_t S[3] = {cv->sd, cv->sh, cv->sw}, D[3] = {cv->dd, cv->dh, cv->dw};
    const int64_t P[3] = {cv->pd, cv->ph, cv->pw}, I[3] = {cv->id, cv->ih, cv->iw};
    /* absurd sizes (no tensor of them fits a machine's memory): no table, the divisions
     * instead; checked before any product can overflow, and coordinates must fit int32 */
    const int64_t lim = (int64_t)1 << 24;
    int64_t n = 0;
    for (int dim = 0; dim < 3; ++dim) {
        if (O[dim] > lim || K[dim] > lim || I[dim] > INT32_MAX || O[dim] * K[dim] > lim)
            return 0;
        n += O[dim] * K[dim];
    }
    int32_t *c = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    if (!c) return -1;
    cv->coords = c;
    for (int dim = 0; dim < 3; ++dim)
        for (int64_t o = 0; o < O[dim]; ++o)
            for (int64_t k = 0; k < K[dim]; ++k)
                *c++ = (int32_t)src_coord(o, k, S[dim], D[dim], P[dim], I[dim], 1);
    return 0;
}

int64_t dnnq_conv_n_items(const dnnq_conv_t *cv) {
    if (cv->tiles) return cv->N * cv->G * cv->n_panels * cv->n_chunks;
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t groups = cv->depthwise ? 1 : cv->G;
    return cv->N * groups * cv->n_panels * nblk;
}

/* the epilogue description of image n, group g: per-column pointers moved to the group's
 * first output channel, per-image ones to the image */
void dnnq_conv_item_epilogue_args(const dnnq_conv_t *cv, int64_t n, int64_t g,
                                  dnnq_gemm_args_t *ge, dnnq_postop_t *post) {
    *ge = cv->epi;
    const int64_t c0 = g * cv->OCg;
    const int esz = ge->dst_dt == DNNQ_DT_S8 || ge->dst_dt == DNNQ_DT_U8 ? 1 : 4;
    ge->dst = (char *)ge->dst + (n * cv->dst_img + c0) * esz;
    ge->col_comp += c0;
    ge->scale += c0 * ge->scale_sn;
    if (ge->bias) ge->bias += c0 * ge->bias_sn;
    if (ge->dst_zp) ge->dst_zp += c0 * ge->dst_zp_sn;
    if (ge->wzp) {
        ge->wzp += c0 * ge->wzp_sn;
        ge->rowsum += (n * cv->G + g) * cv->rowsum_img;
    }
    for (int i = 0; i < ge->n_post; ++i) {
        post[i] = cv->epi.post[i];
        if (post[i].src1) post[i].src1 += n * cv->post_b[i] + c0 * post[i].s1_n;
        if (post[i].src2) post[i].src2 += n * cv->post2_b[i] + c0 * post[i].s2_n;
    }
    ge->post = post;
}

static DNNQ_DEFINE_PICK(dnnq_dw_tile_fn, dw_s16_tile_for_isa, dnnq_dw_tile, DNNQ_WIDTH_SETS,
                        dnnq_dw_tile_portable)
static DNNQ_DEFINE_PICK(dnnq_dw_tile_fn, dw_vnni4_tile_for_isa, dnnq_dw4_tile, DNNQ_AVX512_SETS,
                        NULL)

dnnq_dw_tile_fn dnnq_dw_tile_for_isa(int isa, int kind) {
    const dnnq_dw_tile_fn vnni4 = kind == DNNQ_DW_VNNI4 ? dw_vnni4_tile_for_isa(isa) : NULL;
    return vnni4 ? vnni4 : dw_s16_tile_for_isa(isa);
}
