/* Implicit-GEMM convolution and deconvolution on the batch-reduce micro-kernel, and the
 * channels-last depthwise kernel.
 *
 * Source and destination are channels-last (N, D, H, W, C) with 1-D / 2-D problems given as
 * D = H = 1.  Output pixel m of image n is the flattened (od, oh, ow).  For every output pixel
 * and kernel tap the driver builds a pointer to the source row the tap reads (the ICg channels
 * of the pixel's group); a tap in the padding (or, for a deconvolution, a tap that meets no
 * source pixel) points at a "zero-point row" holding the source zero point in the source type,
 * so that it adds exactly what the per-column compensation removes:
 *
 *   raw[m][n] = sum_taps sum_ic a_u8(row_tap(m))[ic] * W[tap][ic][n]
 *   acc       = raw + col_comp[n] - wzp[n] * rowsum[m]           (the GEMM epilogue's formula)
 *   col_comp  = -(128 * [s8 source] + zp_src) * sum_{tap, ic} W          (exact at borders)
 *
 * A zero point that the source type cannot hold is written clamped, and the difference is
 * added back per padded tap from per-tap column sums (`padcorr`).
 *
 * Packed weights: per group g and 64-column panel p, the pairs (taps, or with `fold_kw` the
 * (kd, kh) rows whose KW taps are adjacent in memory) follow each other, each in dnnq's VNNI
 * panel layout of `kpair` rows:  packed + ((g * n_panels + p) * npairs + t) * K4 * 4 * 64.
 */
#ifndef DNNQ_CONV_H
#define DNNQ_CONV_H
#include "dnnq_kernels.h"
#include "dnnq_f32.h"

#define DNNQ_CONV_MAX_POST 32
/* rows of one accumulator tile: the batch-reduce kernel's mr (<= DNNQ_MR_MAX), or for the
 * depthwise kernel up to this many (fewer epilogue calls: its per-call setup is amortised) */
#define DNNQ_CONV_TILE_ROWS 32
/* the most pixels of one micro-tile of the tiled path (AMX tiles; DNNQ_MR_MAX otherwise) */
#define DNNQ_CONV_MR_MAX DNNQ_AMX_BR_MR
/* rows of the depthwise row driver's tile (one epilogue call per output row of up to this) */
#define DNNQ_DW_TILE_ROWS 64

/* One micro-tile of the tiled path (conv_tiles.c): mr output pixels m + r * mstep that read
 * the same kernel taps inside the source (the box k0 <= (kd, kh, kw) < k1), pixel r's tap
 * (0, 0, 0) position at source element src + r * lda of the image (channels included; it
 * may lie outside the source, the taps read are inside). */
typedef struct {
    int64_t m, src, lda;
    int32_t o[3];                    /* (od, oh, ow) of pixel m */
    int32_t mr, mstep;
    int32_t k0[3], k1[3];
    int32_t mixed;                   /* 1: the pixels' taps inside differ (a border pixel
                                      * merged into a run or column): k0..k1 is their union,
                                      * a pixel's taps outside read the zero-point row */
} dnnq_conv_tile_t;


/* Depthwise tile: acc[r][c] = sum_taps x(row_tap(r))[c] * w[tap][c] for the 64 channels of
 * panel p (channels past C are 0); rows[t * mr + r] point at the row's channel p * 64, or,
 * when ps != 0 (a run of interior pixels), pixel r of tap t is at rows[t] + r * ps; w is
 * the panel's weights: [tap][64] s16, or the AVX-512 kernel's tap pairs (conv_dw_avx512.c). */
typedef void (*dnnq_dw_tile_fn)(int mr, int64_t ntaps, const uint8_t *const *rows, int64_t ps,
                                int nc, int src_signed, const int16_t *w, int32_t *acc);

struct dnnq_conv_s;
/* One work item of a plan: 0, or -1 when a scratch allocation failed.  Every kernel of
 * dnnq_conv_kernel_t (dnnq_codes.h) has this signature; dnnq_conv_item_fn_for gives it. */
typedef int (*dnnq_conv_item_fn)(const struct dnnq_conv_s *cv, int64_t item);

typedef struct dnnq_conv_s {
    /* the work-item kernel chosen at creation (dnnq.primitives._impls.CONV;
     * dnnq_conv_check_kernel says the plan fits it) and its function, which the driver calls
     * for every item */
    int kernel;
    dnnq_conv_item_fn run_item;
    /* 1: the AVX-512 depthwise kernels' fused epilogue applies (chosen at creation: 8-bit dst,
     * relu / linear post-ops only, and for the fold_lanes kernel clip / hardswish /
     * hardsigmoid too; dnnq/primitives/_post_op_spec.py dw_fused_epilogue) */
    int dw_fused;
    dnnq_dw_tile_fn dw_tile;         /* the general driver's depthwise tile (isa, dw_kind) */
    /* geometry */
    int64_t N, G, ICg, OCg, IC, OC;
    int64_t id, ih, iw, od, oh, ow;
    int64_t kd, kh, kw;
    int64_t sd, sh, sw;
    int64_t dd, dh, dw;              /* distance between taps (oneDNN dilation + 1) */
    int64_t pd, ph, pw;              /* left paddings */
    int deconv;                      /* 1: the source pixel of a tap is (o + p - k*d) / s */
    int depthwise;                   /* 1: ICg = OCg = 1, the dedicated kernel */
    int fold_kw;                     /* pairs of K = KW * IC (G == 1, dense along w) */
    /* 1: the tiled path or the deconv_ks kernel runs the AMX batch-reduce kernel
     * (dnnq_brgemm_amx_for) on micro-tiles of up to mr <= DNNQ_AMX_BR_MR pixels, without the
     * fused-epilogue kernel (chosen at creation: dnnq.primitives._impls.CONV tiles_amx,
     * deconv_ks_amx) */
    int amx;
    int64_t kpair, npairs, K4, n_panels;
    int64_t mc;                      /* output pixels per work item */
    int mr;                          /* rows per micro-kernel call */
    /* source (channels-last), its byte XOR for the micro-kernel, the zero-point rows */
    const uint8_t *src;
    uint32_t a_xor;
    int src_signed;                  /* depthwise kernel: s8 source read as signed */
    const uint8_t *zp_rows;          /* G rows of kpair bytes (depthwise: one row of C) */
    const int32_t *padcorr;          /* NULL, or [g][tap][OCg] added per padded tap */
    const int8_t *packed;
    const int16_t *dw_weights;       /* depthwise: one block of dw_stride s16 per panel */
    int64_t dw_stride;
    int dw_kind;                     /* DNNQ_DW_S16 or DNNQ_DW_VNNI4 (the weights' layout) */
    /* epilogue template (b = 0): N = OCg, d_sm = OC, per-column pointers at group 0 */
    dnnq_gemm_args_t epi;
    int64_t dst_img;                 /* dst elements per image */
    int64_t rowsum_img;              /* rowsum elements per (image, group) = output pixels */
    int64_t post_b[DNNQ_CONV_MAX_POST], post2_b[DNNQ_CONV_MAX_POST];  /* per-image strides */
    dnnq_brgemm_ukr_fn brgemm;
    dnnq_gemm_epilogue_fn epilogue;
    dnnq_brgemm_epi_fn brgemm_epi;   /* the micro-kernel with the epilogue fused, or NULL */
    dnnq_brgemm_ukr_fn brgemm_n32;   /* brgemm for panels of <= 32 columns, or NULL */
    dnnq_brgemm_ukr_fn brgemm_n16;   /* brgemm for panels of <= 16 columns, or NULL */
    dnnq_epi_prepare_fn epi_prepare; /* (set by dnnq_conv_build_tiles from isa) */
    dnnq_epi_tile_prepare_fn epi_tile_prepare; /* the prepared separate epilogue, or NULL */
    dnnq_epi_tile_fn epi_tile;                 /* (both set by dnnq_conv_build_tiles) */
    int isa;
    /* the tiled path (built at creation by dnnq_conv_build_tiles; NULL: the general driver):
     * the tiles of one image by first pixel, cut into n_chunks chunks [chunks[c], chunks[c+1]) */
    dnnq_conv_tile_t *tiles;   /* (owned: freed by dnnq_conv_free_tiles) */
    int64_t *chunks;
    int64_t n_chunks;
    /* the plain (nchw) depthwise 3x3 variant of a dw3x3_plain plan (src and dst read and
     * written as they are; the fused epilogue's cases, AVX-512 only): 1 the column kernel
     * (dnnq_dw_item_plain_cols), 2 its VBMI stride-2 kernel (dnnq_dw_item_plain_s2), 3 the
     * flat kernel (dnnq_dw_item_plain_flat); of a stem plan (dnnq_conv_item_stem), 1: its
     * AVX512-VBMI row builder may run */
    int plain;
    /* 1: the column kernel's items run panels outermost within an image (ConvExec's channel-
     * band copies of plain data, several threads) */
    int panel_outer;
    /* 1: the general driver's, the tiled path's and the depthwise row kernels' (dw_rows3,
     * dw_rowsk) items run panels innermost, so that the threads split pixels, not panels (set
     * per execution: depthwise plans on several threads, others where the destination's rows
     * share cache lines between panels: dnnq_dst_lines_shared) */
    int rows_outer;
    /* 1: a deconvolution leaves out the taps that read only the zero-point row (the
     * column-phase driver, conv_deconv.c); set at creation (_conv.set_skip_zero_taps) */
    int skip_zero_taps;
    /* a deconvolution's source coordinates per (output coordinate, kernel index) of each dim
     * (dnnq_conv_build_coords, by dnnq_conv_build_tiles; freed by dnnq_conv_free_tiles) */
    const int32_t *coords;
    /* per execution (dnnq_conv_prepare_run): the zero-point row's product with each tap's
     * weights, [g][panel][tap][64] s32, for the column-phase deconvolution driver when that
     * row does not read as zero bytes; NULL otherwise */
    const int32_t *deconv_zc;
    /* per execution, the deconv_ks kernel's weights regrouped per kernel row ([kd kh][K4 * 4 *
     * 64]) and its compensation per kernel row ([kd kh][64] s32, NULL: none) (conv_deconv_ks.c) */
    const int8_t *ks_packed;
    const int32_t *ks_comp;
    /* the flat depthwise kernel's index vectors (plain = 3; dnnq_conv_build_flat_table at
     * creation, freed by dnnq_conv_free_tiles; NULL: built per item) */
    const void *flat_table;
    /* f32 layers (dnnq_f32.h, conv_f32.c): 1 = src, the packed weights (packed / dw_weights)
     * and zp_rows (zeros, at least kpair) are f32, and these kernels run */
    int f32;
    dnnq_brgemm_f32_fn brgemm_f32;
    dnnq_gemm_epilogue_f32_fn epilogue_f32;
    dnnq_dw_f32_fn dw_f32;
    dnnq_f32_epi_prepare_fn f32_epi_prepare;  /* the fused epilogue, or NULL (dnnq_f32.h) */
    dnnq_brgemm_f32_epi_fn brgemm_f32_epi;
    dnnq_dw_f32_epi_fn dw_f32_epi;
    dnnq_dw_f32_rows_fn dw_f32_rows;  /* NULL below AVX-512 */
} dnnq_conv_t;

/* The fused micro-kernel's kind for panel p of the item's epilogue ge (its state into st), or
 * 0 (not fused): u8 sources, and s8 ones XOR-ed to u8 (the kinds with a compensation). */
static inline int dnnq_conv_fuse_kind(const dnnq_conv_t *cv, const dnnq_gemm_args_t *ge,
                                      int64_t p, dnnq_epi_state_t *st) {
    if (!cv->brgemm_epi || (cv->a_xor != DNNQ_A_U8 && cv->a_xor != DNNQ_A_XOR_S8)) return 0;
    const int kind = cv->epi_prepare(ge, 0, p, st);
    return kind && cv->a_xor ? dnnq_epi_kind_xor(kind) : kind;
}

/* Rows of one batch-reduce call of the plan (the pixels of a micro-tile): its mr, at most
 * what the kernel takes (DNNQ_AMX_BR_MR on AMX tiles, else DNNQ_MR_MAX). */
static inline int dnnq_conv_call_rows(const dnnq_conv_t *cv) {
    const int cap = cv->amx ? DNNQ_AMX_BR_MR : DNNQ_MR_MAX;
    return cv->mr < cap ? cv->mr : cap;
}

/* The batch-reduce micro-kernel for a panel of nc columns: the quarter / half-width one where
 * there is one and nc <= 16 / 32. */
static inline dnnq_brgemm_ukr_fn dnnq_conv_brgemm_for(const dnnq_conv_t *cv, int64_t nc) {
    if (nc <= 16 && cv->brgemm_n16) return cv->brgemm_n16;
    return nc <= 32 && cv->brgemm_n32 ? cv->brgemm_n32 : cv->brgemm;
}

/* the tiles are built row by row and run by run: beyond these sizes (no tensor of them fits a
 * machine's memory) the general driver runs, and creation stays fast (a fuzzed output height
 * of 2^39 rows took minutes here); _impls.CONV's "tiles" entry reads them (_conv.TILES_MAX) */
#define DNNQ_CONV_TILES_MAX_ROWS ((int64_t)1 << 22)
#define DNNQ_CONV_TILES_MAX_OW ((int64_t)1 << 24)
/* The tiled path of an ungrouped or grouped convolution (not deconvolution, depthwise or the
 * folded-tap kernel): 0, or -1 when an allocation failed; freed by dnnq_conv_free_tiles. */
int dnnq_conv_build_tiles(dnnq_conv_t *cv);
int dnnq_conv_build_coords(dnnq_conv_t *cv);
void dnnq_conv_free_tiles(dnnq_conv_t *cv);
/* the flat depthwise kernel's index vectors for the plan's whole-plane items, kept in
 * cv->flat_table (freed by dnnq_conv_free_tiles): 1 built, 0 not (another geometry, or out
 * of memory: they are then built per item).  Only where the flat kernel runs (VBMI;
 * depthwise/dw3x3_flat_vbmi.c). */
int dnnq_conv_build_flat_table(dnnq_conv_t *cv);
int dnnq_conv_run_item_tiles(const dnnq_conv_t *cv, int64_t item);
/* the epilogue description of image n, group g (per-column pointers moved to the group) */
void dnnq_conv_item_epilogue_args(const dnnq_conv_t *cv, int64_t n, int64_t g,
                                  dnnq_gemm_args_t *ge, dnnq_postop_t *post);

/* Work items: (image, group, panel, pixel block or tile chunk), innermost last. */
/* The fused band path of a depthwise plan with panel-outer items and plain src / dst:
 * unit = image * n_panels + panel (conv_kernels.c); 0, or -1 as dnnq_conv_run_item */
int dnnq_conv_run_band_unit(const dnnq_conv_t *cv, int64_t unit, int isa,
                            const uint8_t *src_plain, int64_t p_src, void *dst_plain,
                            int64_t p_dst, int esz);
int64_t dnnq_conv_n_items(const dnnq_conv_t *cv);
/* The item of a plan whose items are blocks of mc output pixels of one image (pixel blocks
 * innermost): its image *n and its pixels [*m0, *mend). */
static inline void dnnq_conv_item_pixels(const dnnq_conv_t *cv, int64_t item, int64_t *n,
                                         int64_t *m0, int64_t *mend) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    *n = item / nblk;
    *m0 = item % nblk * cv->mc;
    *mend = *m0 + (osp - *m0 < cv->mc ? osp - *m0 : cv->mc);
}
/* Thread t's share of a plan's items, for one parallel region of nthreads threads: its own
 * contiguous run of the items first (shares[t]), then what is left of the others' runs,
 * taken from their ends (a thread whose core is taken leaves its last items to the others).
 * shares: nthreads words from dnnq_shares_init (dnnq_kernels.h), shared by the region's
 * threads; each item runs exactly once.  0, or -1 as dnnq_conv_run_item (the thread's other
 * items still run). */
int dnnq_conv_run_share(const dnnq_conv_t *cv, int t, int nthreads, uint64_t *shares);
/* 0, or -1 when a scratch allocation failed (dst then incomplete: raise MemoryError):
 * cv->run_item(cv, item) */
int dnnq_conv_run_item(const dnnq_conv_t *cv, int64_t item);
/* The item function of the plan's kernel code cv->kernel (for the plain depthwise kernels:
 * its `plain` variant and strides; NULL: not built here), and whether the plan's fixed fields
 * fit it (0; -1: they do not): a choice and a check made once at creation, never per item. */
dnnq_conv_item_fn dnnq_conv_item_fn_for(const dnnq_conv_t *cv);
int dnnq_conv_check_kernel(const dnnq_conv_t *cv, int kernel);
/* the kernels, one per file: conv_driver.c (general), conv_tiles.c, conv_deconv.c,
 * conv_f32.c, depthwise/ (the depthwise variants, below) */
int dnnq_conv_run_item_general(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_f32_general(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_f32_tiles(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_f32_deconv(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_f32_dw(const dnnq_conv_t *cv, int64_t item);
/* the widest deconvolution kernel (along w) the f32 column driver takes */
#define DNNQ_F32_DECONV_MAX_KW 64
/* the largest deconvolutions the column-phase driver takes (kw, taps), and the taps up to
 * which it takes a zero-point row that does not read as zero bytes (its products computed
 * per execution, dnnq_conv_prepare_run) */
#define DNNQ_DECONV_PHASES_MAX_KW 64
#define DNNQ_DECONV_PHASES_MAX_TAPS 4096
#define DNNQ_ZC_TAPS 128
/* Around the work items of one execution (cv filled for it): what the items need computed
 * once (deconv_zc); 0, or -1 when an allocation failed.  finish frees it. */
int dnnq_conv_prepare_run(dnnq_conv_t *cv);
void dnnq_conv_finish_run(dnnq_conv_t *cv);
int dnnq_conv_run_item_deconv_phases(const dnnq_conv_t *cv, int64_t item);
/* kernel = stride, no padding or dilation, no groups, kw * OC <= 64: one GEMM of kw * OC
 * columns per (source row, kernel row) (conv_deconv_ks.c); its per-execution set-up (by
 * dnnq_conv_prepare_run) and the items (the plan's mc: whole source rows' output pixels) */
#define DNNQ_DECONV_KS_MAX_COLS 64
int dnnq_conv_prepare_deconv_ks(dnnq_conv_t *cv);
void dnnq_conv_finish_deconv_ks(dnnq_conv_t *cv);
int dnnq_conv_run_item_deconv_ks(const dnnq_conv_t *cv, int64_t item);
/* the same for f32 layers (f32_deconv_ks): per execution the f32 panels regrouped per kernel
 * row (into ks_packed, as f32), then f32 GEMMs of kw * OC columns per (source row, kernel row) */
int dnnq_conv_prepare_f32_deconv_ks(dnnq_conv_t *cv);
int dnnq_conv_run_item_f32_deconv_ks(const dnnq_conv_t *cv, int64_t item);
/* its AVX-512 products with 16 source pixels in the lanes, for kw * OC <= 2 and at most this
 * many outputs per source pixel (conv_deconv_ks_lanes_avx512.c): cnt pixels of a source row
 * at src, kernel row r's sums (+ comp[r], NULL: 0) to flat[r] in output order */
#define KS_LANES_MAX_OUT 8
void dnnq_deconv_ks_lanes_avx512(const dnnq_conv_t *cv, const uint8_t *src, int64_t cnt,
                                 const int32_t *const *comp, int32_t *const *flat);
/* few output channels over folded kernel rows, 16 output pixels in the lanes (AVX-512 VNNI
 * with VBMI; conv_fold_lanes_vbmi.c): at most this many output channels, and the bytes a
 * vector's 16 windows span (15 sw IC + 4 K4) at most 128 */
#define DNNQ_FOLD_LANES_MAX_OC 8
int dnnq_conv_item_fold_lanes(const dnnq_conv_t *cv, int64_t item);
/* the whole kernel window of a pixel as one reduction (few input channels, one panel of
 * output channels, AVX-512 VNNI; conv_stem_avx512.c): at most this many bytes per window
 * (KD KH KW IC) and kernel rows (KD KH) */
#define DNNQ_CONV_STEM_MAX_K 256
#define DNNQ_CONV_STEM_MAX_ROWS 64
int dnnq_conv_item_stem(const dnnq_conv_t *cv, int64_t item);

/* ---- Depthwise (ukernels/depthwise/, docs/conv_kernels.md) -------------------------------
 * Every depthwise variant is a work item of the plan: one signature, dnnq_conv_item_fn, one
 * file per variant, what the AVX-512 ones share in depthwise/dw_avx512.h.  The plan's kernel
 * code (dnnq.primitives._impls.CONV) and, for the plain kernels, its `plain` field and
 * strides give the item function (dnnq_conv_item_fn_for).
 *   dw               dnnq_conv_run_item_general with the plan's dw_tile (below)
 *   dw_rows3         dnnq_dw_item_rows3       dw_rows3_avx512.c
 *   dw_rowsk         dnnq_dw_item_rowsk       dw_rowsk_avx512.c
 *   dw3x3            dnnq_dw_item_3x3         dw3x3_avx512.c (+ dw3x3_body.h per width)
 *   dw3x3_plain      dnnq_dw_item_plain_cols  dw3x3_plain_avx512.c
 *   dw3x3_plain_vbmi dnnq_dw_item_plain_s2    dw3x3_plain_s2_vbmi.c (stride 2 x 2; else cols)
 *   dw3x3_plain_flat dnnq_dw_item_plain_flat  dw3x3_flat_vbmi.c */
#define DNNQ_DECLARE_DW_VARIANT(name) int dnnq_dw_item_##name(const dnnq_conv_t *cv, int64_t item);
DNNQ_DECLARE_DW_VARIANT(rows3)
DNNQ_DECLARE_DW_VARIANT(rowsk)
DNNQ_DECLARE_DW_VARIANT(3x3)
DNNQ_DECLARE_DW_VARIANT(plain_cols)
DNNQ_DECLARE_DW_VARIANT(plain_s2)
DNNQ_DECLARE_DW_VARIANT(plain_flat)
#undef DNNQ_DECLARE_DW_VARIANT
/* the kernel row widths (kw) dw_rowsk takes, and its weights block's bytes per kernel row
 * (kw + 3 variants of 256 bytes); _conv_geometry.pack_depthwise packs them */
#define DNNQ_DW_ROWSK_MIN_KW 4
#define DNNQ_DW_ROWSK_MAX_KW 16

/* The general driver's depthwise tile (dnnq_dw_tile_fn above), one kernel per set:
 * dw_tile.c compiled per set (portable, avx2: s16 weights), dw_tile_avx512.c (s16 tap pairs),
 * dw_tile4_avx512.c (s8 taps by four, VNNI) */
#define DNNQ_DECLARE_DW_TILE(name)                                                             \
    void name(int mr, int64_t ntaps, const uint8_t *const *rows, int64_t ps, int nc,           \
              int src_signed, const int16_t *w, int32_t *acc);
DNNQ_DECLARE_DW_TILE(dnnq_dw_tile_portable)
DNNQ_DECLARE_DW_TILE(dnnq_dw_tile_avx2)
DNNQ_DECLARE_DW_TILE(dnnq_dw_tile_avx512)
DNNQ_DECLARE_DW_TILE(dnnq_dw4_tile_avx512)
#undef DNNQ_DECLARE_DW_TILE
/* depthwise weight layouts: the ISA's s16 one (natural [tap][64], or the AVX-512 tap pairs),
 * or s8 taps by four for vpdpbusd (AVX-512 only) */
enum { DNNQ_DW_S16 = 0, DNNQ_DW_VNNI4 = 1 };
/* the tile kernel of isa's level for the weights layout kind (isa_pick.h's sets; a vnni4
 * layout below the AVX-512 levels takes the s16 kernel) */
dnnq_dw_tile_fn dnnq_dw_tile_for_isa(int isa, int kind);

/* dst (cols, rows) = src (rows, cols)^T for elements of esz = 1 or 4 bytes, the columns
 * cbegin .. cend - 1 of src (the dst rows of that range; 0, cols: all; a range starting at a
 * multiple of 64 transposes as the whole does, so threads may split the columns); dst rows
 * are ldd elements apart (rows for a whole transpose); the AVX-512 level has its own byte
 * transpose (transpose_avx512.c), picked by isa */
void dnnq_transpose(const void *src, void *dst, int64_t rows, int64_t cols, int64_t cbegin,
                    int64_t cend, int esz, int64_t ldd);
void dnnq_transpose_u8_avx512(const uint8_t *src, uint8_t *dst, int64_t rows, int64_t cols,
                              int64_t cbegin, int64_t cend, int64_t ldd);
void dnnq_transpose_for_isa(int isa, const void *src, void *dst, int64_t rows, int64_t cols,
                            int64_t cbegin, int64_t cend, int esz, int64_t ldd);
/* the src rows rbegin .. rend - 1 only (the dst columns of that range, in every dst row): a
 * thread's band of channels in the copy of plain data to channels-last */
void dnnq_transpose_rows_for_isa(int isa, const void *src, void *dst, int64_t rows, int64_t cols,
                                 int64_t rbegin, int64_t rend, int esz);

#endif
