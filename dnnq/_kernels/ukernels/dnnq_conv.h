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
    /* the work-item kernel chosen at creation (dnnq._impls.CONV; dnnq_conv_check_kernel says
     * the plan fits it) and its function, which the driver calls for every item */
    int kernel;
    dnnq_conv_item_fn run_item;
    /* 1: the depthwise 3x3 kernels' fused epilogue applies (chosen at creation: 8-bit dst,
     * relu / linear post-ops only; dnnq/primitives/_post_op_spec.py dw_fused_epilogue) */
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
    dnnq_epi_prepare_fn epi_prepare; /* (set by dnnq_conv_build_tiles from isa) */
    int isa;
    /* the tiled path (built at creation by dnnq_conv_build_tiles; NULL: the general driver):
     * the tiles of one image by first pixel, cut into n_chunks chunks [chunks[c], chunks[c+1]) */
    dnnq_conv_tile_t *tiles;   /* (owned: freed by dnnq_conv_free_tiles) */
    int64_t *chunks;
    int64_t n_chunks;
    /* 1: src and dst are plain (nchw) and the depthwise 3x3 column kernel reads them as
     * they are (dnnq_dw3x3_plain_avx512: the fused epilogue's cases, AVX-512 only); 2: the
     * same with AVX512-VBMI (its stride-2 kernel); 3: the flat kernel (VBMI) */
    int plain;
    /* 1: the column kernel's items run panels outermost within an image (ConvExec's channel-
     * band copies of plain data, several threads) */
    int panel_outer;
    /* 1: the general driver's and the tiled path's items run panels innermost, so that the
     * threads split pixels, not panels (set per execution where the destination's rows share
     * cache lines between panels: dnnq_dst_lines_shared) */
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
} dnnq_conv_t;

/* The fused micro-kernel's kind for panel p of the item's epilogue ge (its state into st), or
 * 0 (not fused): u8 sources, and s8 ones XOR-ed to u8 (the kinds with a compensation). */
static inline int dnnq_conv_fuse_kind(const dnnq_conv_t *cv, const dnnq_gemm_args_t *ge,
                                      int64_t p, dnnq_epi_state_t *st) {
    if (!cv->brgemm_epi || (cv->a_xor != 0 && cv->a_xor != 0x80808080u)) return 0;
    const int kind = cv->epi_prepare(ge, 0, p, st);
    return kind && cv->a_xor ? dnnq_epi_kind_xor(kind) : kind;
}

/* The batch-reduce micro-kernel for a panel of nc columns: the half-width one where there is
 * one and nc <= 32. */
static inline dnnq_brgemm_ukr_fn dnnq_conv_brgemm_for(const dnnq_conv_t *cv, int64_t nc) {
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
 * of memory: they are then built per item).  Only where the flat kernel runs (VBMI). */
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
/* 0, or -1 when a scratch allocation failed (dst then incomplete: raise MemoryError):
 * cv->run_item(cv, item) */
int dnnq_conv_run_item(const dnnq_conv_t *cv, int64_t item);
/* The item function of a kernel code (NULL: not built here), and whether the plan's fixed
 * fields fit it (0; -1: they do not): a check made once at creation, never per item. */
dnnq_conv_item_fn dnnq_conv_item_fn_for(int kernel);
int dnnq_conv_check_kernel(const dnnq_conv_t *cv, int kernel);
/* the kernels, one per file: conv_driver.c (general), conv_tiles.c, conv_deconv.c,
 * conv_f32.c, depthwise/ (the AVX-512 depthwise kernels) */
int dnnq_conv_run_item_general(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_f32_general(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_f32_tiles(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_f32_deconv(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_f32_dw(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_dw_rows3(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_dw3x3(const dnnq_conv_t *cv, int64_t item);
int dnnq_conv_run_item_dw3x3_plain(const dnnq_conv_t *cv, int64_t item);
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

#define DNNQ_DECLARE_DW(isa)                                                                    \
    void dnnq_dw_tile_##isa(int mr, int64_t ntaps, const uint8_t *const *rows, int64_t ps,       \
                            int nc, int src_signed, const int16_t *w, int32_t *acc);
DNNQ_DECLARE_DW(portable)
DNNQ_DECLARE_DW(avx2)
DNNQ_DECLARE_DW(avx512)
/* the AVX-512 VNNI kernel taking taps four at a time (s8 weights, "vnni4" layout) */
void dnnq_dw4_tile_avx512(int mr, int64_t ntaps, const uint8_t *const *rows, int64_t ps, int nc,
                          int src_signed, const int16_t *w, int32_t *acc);
/* mr consecutive output pixels of one output row, for a kernel whose rows are three taps along
 * w (dilation 0 along w), stride sw (1 or 2): the run reads source columns x0 + c,
 * c = 0 .. sw * (mr - 1) + 2; kernel row i (of nrows) reads column x at rows[i] + x *
 * strides[i] when 0 <= x < iw (a stride of 0: the zero-point pixel), else the zero-point
 * pixel zpix, with the weights of kernel row widx[i]; w: the panel's vnni4 weights with their
 * "rows3" block (conv_dw_avx512.c) */
void dnnq_dw3row_avx512(int mr, int nrows, const uint8_t *const *rows, const int64_t *strides,
                        const int *widx, int64_t x0, int64_t iw, const uint8_t *zpix, int sw,
                        int nc, int src_signed, const int8_t *w, int64_t ntaps, int32_t *acc);
/* The 3x3 column kernel (conv_dw3x3_avx512.c): kernel 3x3 (dilation 0, stride 1 or 2 along
 * h and w), one or two output rows of one 64-channel panel.  Per source column, the pixels of
 * four source rows are interleaved per channel once (vpdpbusd's four bytes = four kernel
 * rows) and serve the output columns that column meets: kw = 0, 1, 2, and with two output
 * rows (stride 1 along h) both rows (weights A = (w0, w1, w2, 0) and B = (0, w0, w1, w2) per
 * kw, the "cols3" block after "rows3").  The epilogue is fused (8-bit dst, the fast epilogue's
 * post-ops) or the s32 accumulators are stored in channel order. */
typedef struct {
    float sc[64], bi[64], zp[64];   /* in the accumulators' (k, L, j) order */
    int32_t cc[64];
    float inv_dst_scale;
    int dt, post, flags, has_zp, n_post; /* post: 0 none, 1 relu(0), 2 chain of relu / linear */
    const dnnq_postop_t *po;
} dnnq_dw_epi_t;
typedef struct {
    const uint8_t *row[4];          /* source rows at column 0 (the panel's first channel) */
    int64_t rs[4];                  /* their pixel strides (0: the zero-point pixel) */
    int nro;                        /* output rows: 1 (rows 0..2) or 2 (rows 0..3) */
    int64_t o0, n;                  /* output columns o0 .. o0 + n - 1 */
    int sw;
    int64_t pw, iw;
    int nc, src_signed;
    const int8_t *w;                /* the panel's vnni4 weights */
    int64_t ntaps;
    const uint8_t *zpix;            /* the zero-point pixel (the panel's channels) */
    const dnnq_dw_epi_t *epi;       /* NULL: s32 to acc */
    uint8_t *dst[2];                /* fused: output column o of row r at dst[r] + o * ldd */
    int64_t ldd;
    int32_t *acc[2];                /* else: output column o0 + i of row r at acc[r] + 64 i */
} dnnq_dw3x3_call_t;
void dnnq_dw3x3_avx512(const dnnq_dw3x3_call_t *c);
/* The 3x3 column kernel on plain (nchw) planes (conv_dw3x3_plain.h): the same geometries, the
 * fused epilogue only (dnnq_dw3x3_epi_prepare_avx512 took it); one work item: the output rows
 * of pixels m0 .. mend - 1 (whole rows, flattened (od, oh, ow)) of the nc channels of one
 * panel of one image, lanes = 16 output columns of one channel. */
typedef struct {
    const uint8_t *src;             /* the panel's first channel's source plane of the image */
    const uint8_t *src_lo, *src_hi; /* the whole source array */
    uint8_t *dst;                   /* its destination plane */
    int64_t src_plane, dst_plane;   /* bytes per plane: id * ih * iw, od * oh * ow */
    int64_t id, ih, iw, od, oh, ow;
    int64_t sd, sh, sw, pd, ph, pw;
    int64_t m0, mend;
    int nc, src_signed;
    const int8_t *w;                /* the panel's vnni4 weights */
    int64_t ntaps;
    const uint8_t *zpix;            /* the source zero point of the panel's channels */
    const dnnq_dw_epi_t *epi;
    /* 1: rows at stride 2 along h and w take the AVX512-VBMI kernel (conv_dw3x3_plain_s2.h;
     * the caller checked the CPU has VBMI) */
    int vbmi;
    /* 1: the flat kernel (conv_dw3x3_flat.h: 2-D, VBMI, the geometries _conv_kernel_choice.py's
     * _dw_flat gives it; others fall back to the column kernel): lanes = 16 consecutive
     * pixels of the plane, across row ends */
    int flat;
    /* the flat kernel's index vectors of items of whole planes, built at creation
     * (dnnq_conv_t.flat_table); NULL: built per item */
    const void *flat_table;
} dnnq_dw3x3_plain_t;
void dnnq_dw3x3_plain_avx512(const dnnq_dw3x3_plain_t *c);
/* the flat kernel's index vectors (every block, up to 16 of 32 vectors) and stacked-rows
 * store permute for c's items when they are whole planes (c: the geometry; m0 = 0, mend =
 * dst_plane), in a block of memory to free(); NULL: none (other geometries, larger planes)
 * or out of memory.  The CPU must have AVX512-VBMI. */
void *dnnq_dw3x3_flat_table_avx512(const dnnq_dw3x3_plain_t *c);
/* e prepared for the panel's columns n0 .. n0 + nc - 1 of g, whose epilogue the creation
 * found fused (dnnq_conv_t.dw_fused: 8-bit dst, relu / linear post-ops) */
void dnnq_dw3x3_epi_prepare_avx512(const dnnq_gemm_args_t *g, int64_t n0, int nc,
                                   dnnq_dw_epi_t *e);
/* depthwise weight layouts: the ISA's s16 one (natural [tap][64], or the AVX-512 tap pairs),
 * or s8 taps by four for vpdpbusd (AVX-512 only) */
enum { DNNQ_DW_S16 = 0, DNNQ_DW_VNNI4 = 1 };
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
