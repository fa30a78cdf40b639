/* The convolution kernels' table: a kernel code (dnnq_codes.h dnnq_conv_kernel_t, chosen at
 * creation by dnnq.primitives._impls.CONV) -> its item function, the plan check made once at
 * creation, and the driver entry points that run items (dnnq_conv_run_item, the fused band
 * units). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"

int dnnq_conv_run_item(const dnnq_conv_t *cv, int64_t item) { return cv->run_item(cv, item); }

int dnnq_conv_run_share(const dnnq_conv_t *cv, int t, int nthreads, uint64_t *shares) {
    int failed = 0, k = 0;
    for (int64_t it; (it = dnnq_share_next(shares, t, nthreads, &k)) >= 0;)
        failed |= cv->run_item(cv, it) != 0;
    return failed ? -1 : 0;
}

/* the plain depthwise variant of the plan (dnnq_conv_t.plain): the VBMI stride-2 kernel takes
 * strides 2 x 2 only (others: the column kernel's) */
#ifdef DNNQ_HAVE_X86_KERNELS
static dnnq_conv_item_fn dw_plain_item_fn(const dnnq_conv_t *cv) {
    switch (cv->plain) {
    case 1: return dnnq_dw_item_plain_cols;
    case 2: return cv->sh == 2 && cv->sw == 2 ? dnnq_dw_item_plain_s2 : dnnq_dw_item_plain_cols;
    case 3: return dnnq_dw_item_plain_flat;
    default: return NULL;
    }
}
#else
int dnnq_conv_build_flat_table(dnnq_conv_t *cv) {
    cv->flat_table = NULL;
    return 0;
}
#endif

dnnq_conv_item_fn dnnq_conv_item_fn_for(const dnnq_conv_t *cv) {
    switch (cv->kernel) {
    case DNNQ_CONV_K_GENERAL: return dnnq_conv_run_item_general;
    case DNNQ_CONV_K_TILES: return dnnq_conv_run_item_tiles;
    case DNNQ_CONV_K_DECONV_PHASES: return dnnq_conv_run_item_deconv_phases;
    case DNNQ_CONV_K_DECONV_KS: return dnnq_conv_run_item_deconv_ks;
#ifdef DNNQ_HAVE_X86_KERNELS
    case DNNQ_CONV_K_DW_ROWS3: return dnnq_dw_item_rows3;
    case DNNQ_CONV_K_DW_ROWSK: return dnnq_dw_item_rowsk;
    case DNNQ_CONV_K_FOLD_LANES: return dnnq_conv_item_fold_lanes;
    case DNNQ_CONV_K_STEM: return dnnq_conv_item_stem;
    case DNNQ_CONV_K_DW3X3: return dnnq_dw_item_3x3;
    case DNNQ_CONV_K_DW3X3_PLAIN: return dw_plain_item_fn(cv);
#endif
    case DNNQ_CONV_K_F32_GENERAL: return dnnq_conv_run_item_f32_general;
    case DNNQ_CONV_K_F32_TILES: return dnnq_conv_run_item_f32_tiles;
    case DNNQ_CONV_K_F32_DECONV: return dnnq_conv_run_item_f32_deconv;
    case DNNQ_CONV_K_F32_DW: return dnnq_conv_run_item_f32_dw;
    case DNNQ_CONV_K_F32_DECONV_KS: return dnnq_conv_run_item_f32_deconv_ks;
    default: return NULL;
    }
}

/* The kernels' requirements on the plan's fixed fields: the implementation list
 * (dnnq.primitives._impls.CONV) chose the kernel; this guards the C side against a mismatch
 * once, at creation (an item function never checks its plan). */
int dnnq_conv_check_kernel(const dnnq_conv_t *cv, int kernel) {
    const int avx512 = DNNQ_ISA_LEVEL(cv->isa) == DNNQ_ISA_AVX512_CORE_VNNI ||
                       DNNQ_ISA_LEVEL(cv->isa) == DNNQ_ISA_AVX512_CORE_AMX;
    const int rows3 = cv->depthwise && !cv->deconv && !cv->f32 && avx512 &&
                      cv->dw_kind == DNNQ_DW_VNNI4 && cv->kw == 3 && cv->dw == 1 &&
                      (cv->sw == 1 || cv->sw == 2);
    const int k3x3 = rows3 && cv->kd == 1 && cv->kh == 3 && cv->dh == 1 &&
                     (cv->sh == 1 || cv->sh == 2);
    const int rowsk = cv->depthwise && !cv->deconv && !cv->f32 && avx512 &&
                      cv->dw_kind == DNNQ_DW_VNNI4 && cv->kw >= DNNQ_DW_ROWSK_MIN_KW &&
                      cv->kw <= DNNQ_DW_ROWSK_MAX_KW && cv->dw == 1 && (cv->sw == 1 || cv->sw == 2);
    const int fold_lanes = (cv->fold_kw || (cv->kw == 1 && !cv->deconv && !cv->depthwise)) &&
                           !cv->f32 && avx512 && cv->G == 1 &&
                           cv->OC <= DNNQ_FOLD_LANES_MAX_OC && cv->dw_fused &&
                           cv->npairs <= 64 && cv->K4 <= 16 &&
                           15 * cv->sw * cv->IC + 4 * cv->K4 <= 128 && !cv->epi.raw_s32 &&
                           (cv->epi.dst_dt == DNNQ_DT_U8 || cv->epi.dst_dt == DNNQ_DT_S8);
    const int stem = cv->fold_kw && !cv->f32 && avx512 && cv->G == 1 && cv->OC <= DNNQ_NR &&
                     cv->dw == 1 && cv->kpair <= 64 && cv->npairs <= DNNQ_CONV_STEM_MAX_ROWS &&
                     cv->npairs * cv->kpair <= DNNQ_CONV_STEM_MAX_K &&
                     cv->mc % cv->ow == 0 && cv->brgemm_epi != NULL;
    int ok;
    if (kernel != cv->kernel || !dnnq_conv_item_fn_for(cv)) return -1;
    switch (kernel) {
    case DNNQ_CONV_K_GENERAL: ok = !cv->f32 && (!cv->depthwise || cv->dw_tile); break;
    case DNNQ_CONV_K_TILES: ok = !cv->f32 && cv->tiles != NULL; break;
    case DNNQ_CONV_K_DECONV_PHASES:
        ok = cv->deconv && !cv->depthwise && !cv->f32 && cv->kw <= DNNQ_DECONV_PHASES_MAX_KW &&
             cv->npairs <= DNNQ_DECONV_PHASES_MAX_TAPS && cv->pd >= 0 && cv->ph >= 0 &&
             cv->pw >= 0;
        break;
    case DNNQ_CONV_K_DECONV_KS:
    case DNNQ_CONV_K_F32_DECONV_KS:
        ok = cv->deconv && !cv->depthwise && cv->f32 == (kernel == DNNQ_CONV_K_F32_DECONV_KS) &&
             cv->G == 1 && cv->n_panels == 1 &&
             cv->kd == cv->sd && cv->kh == cv->sh && cv->kw == cv->sw && cv->dd == 1 &&
             cv->dh == 1 && cv->dw == 1 && !cv->pd && !cv->ph && !cv->pw && !cv->fold_kw &&
             cv->od == cv->id * cv->sd && cv->oh == cv->ih * cv->sh && cv->ow == cv->iw * cv->sw &&
             cv->npairs == cv->kd * cv->kh * cv->kw && cv->kw * cv->OC <= DNNQ_DECONV_KS_MAX_COLS &&
             cv->mc > 0 && cv->mc % (cv->kd * cv->kh * cv->ow) == 0;
        break;
    case DNNQ_CONV_K_DW_ROWS3: ok = rows3; break;
    case DNNQ_CONV_K_DW_ROWSK: ok = rowsk; break;
    case DNNQ_CONV_K_FOLD_LANES: ok = fold_lanes; break;
    case DNNQ_CONV_K_STEM: ok = stem; break;
    case DNNQ_CONV_K_DW3X3: ok = k3x3; break;
    case DNNQ_CONV_K_DW3X3_PLAIN: ok = k3x3 && cv->dw_fused && cv->plain >= 1 && cv->plain <= 3;
        break;
    case DNNQ_CONV_K_F32_GENERAL: ok = cv->f32 && !cv->depthwise && !cv->fold_kw; break;
    case DNNQ_CONV_K_F32_TILES: ok = cv->f32 && cv->tiles != NULL; break;
    case DNNQ_CONV_K_F32_DECONV:
        ok = cv->f32 && cv->deconv && !cv->depthwise && cv->kw <= DNNQ_F32_DECONV_MAX_KW;
        break;
    case DNNQ_CONV_K_F32_DW: ok = cv->f32 && cv->depthwise; break;
    default: ok = 0;
    }
    return ok ? 0 : -1;
}

/* One unit of the fused band path (image n, panel p = unit % n_panels): the panel's channels
 * of the plain source copied to the channels-last buffer cv->src, the unit's items (panel-
 * outer order: nblk consecutive items), then the panel's channels of the channels-last dst
 * cv->epi.dst copied to the plain dst.  The copies and the items of a unit read and write
 * only its own channels, so units run on any thread without a barrier between the steps,
 * and each step finds the previous one's bytes in cache. */
int dnnq_conv_run_band_unit(const dnnq_conv_t *cv, int64_t unit, int isa,
                            const uint8_t *src_plain, int64_t p_src, void *dst_plain,
                            int64_t p_dst, int esz) {
    const int64_t C = cv->OC, n = unit / cv->n_panels, p = unit % cv->n_panels;
    const int64_t c0 = p * DNNQ_NR, c1 = c0 + DNNQ_NR < C ? c0 + DNNQ_NR : C;
    const int64_t nblk = dnnq_conv_n_items(cv) / (cv->N * cv->n_panels);
    dnnq_transpose_rows_for_isa(isa, src_plain + n * C * p_src,
                                (uint8_t *)cv->src + n * C * p_src, C, p_src, c0, c1, 1);
    int failed = 0;
    for (int64_t it = unit * nblk; it < (unit + 1) * nblk && !failed; ++it)
        failed = dnnq_conv_run_item(cv, it) != 0;
    if (failed) return -1;
    dnnq_transpose_for_isa(isa, (const char *)cv->epi.dst + n * C * p_dst * esz,
                           (char *)dst_plain + n * C * p_dst * esz, p_dst, C, c0, c1, esz, p_dst);
    return 0;
}
