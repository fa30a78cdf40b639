/* AMX-INT8 micro-kernel: up to 32 rows x 64 columns, as two 32-column halves of 2 x 2 tiles of
 * 16 x 16 s32 (tdpbusd for u8 sources, tdpbssd for s8 ones: no +128 shift, no compensation).
 * Compiled with -mamx-tile -mamx-int8 and the AVX-512 flags (for the shared epilogue), called
 * only when the CPU has AMX-INT8 and the OS granted the tile state (cpu_features.c); or over
 * the tile emulation (below).
 *
 * Tiles (over 16 rows; up to 16 rows see amx_wide): 0-3 accumulators (rows 0-15 / 16-31 x
 * columns 0-15 / 16-31 of the half), 4-5 A (the two row blocks, 64 bytes of k), 6-7 B (16 k
 * groups x 16 columns x 4 k).  A B tile is read
 * straight from the packed panel: its 16 columns are 64 bytes of every 256-byte k-group row,
 * hence a stride of 256.  The tile rows are configured to the rows present, so A tiles of a
 * short tile never read past the last row; only the block holding the K tail (and every block
 * of a source XOR-ed to u8) goes through a zero-padded copy.  The last B tile of a panel may
 * read up to 15 k-group rows past it (into the next panel or the slack that packed_size adds):
 * they meet the zero padding of the A copy. */
#include <immintrin.h>
#include <string.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"
#include "epilogue_avx512.h"

/* Compiled a second time with DNNQ_AMX_EMULATE (suffix amxemu, AVX-512 flags only): the same
 * kernel over the software tile unit of amx_emulate.h, for tests on CPUs without AMX. */
#ifdef DNNQ_AMX_EMULATE
#define DNNQ_ISA amxemu
#else
#define DNNQ_ISA amx
#endif
#define DNNQ_MR 32

/* gcc's tile intrinsics paste their tile argument into the instruction text: it must be a
 * literal number by then, so the names are macros and the calls go through one more macro
 * level (which expands them) */
#define T_C00 0
#define T_C01 1
#define T_C10 2
#define T_C11 3
#define T_A0 4
#define T_A1 5
#define T_B0 6
#define T_B1 7
#ifdef DNNQ_AMX_EMULATE
#include "amx_emulate.h"
#define TILE_CONFIG(cfg) amx_emu_loadconfig(cfg)
#define TILE_RELEASE() amx_emu_release()
#define TILE_ZERO(t) amx_emu_zero(t)
#define TILE_LOAD(t, p, s) amx_emu_load(t, p, s)
#define TILE_STORE(t, p, s) amx_emu_store(t, p, s)
#define TILE_DPBSSD(c, a, b) amx_emu_dp(c, a, b, 1)
#define TILE_DPBUSD(c, a, b) amx_emu_dp(c, a, b, 0)
#else
#define TILE_CONFIG(cfg) _tile_loadconfig(cfg)
#define TILE_RELEASE() _tile_release()
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_LOAD(t, p, s) _tile_loadd(t, p, s)
#define TILE_STORE(t, p, s) _tile_stored(t, p, s)
#define TILE_DPBSSD(c, a, b) _tile_dpbssd(c, a, b)
#define TILE_DPBUSD(c, a, b) _tile_dpbusd(c, a, b)
#endif

typedef struct {
    uint8_t palette_id, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((aligned(64))) amx_tilecfg_t;

/* The tile configuration loaded on this thread (0: none): tiles of the same shape follow one
 * another within a block, and ldtilecfg is not free.  The block driver releases the tiles at
 * its end (DNNQ_BLOCK_END), so nothing else running on the thread ever finds them set. */
static __thread int amx_loaded_cfg = 0;

static void amx_release(void) {
    if (amx_loaded_cfg) {
        TILE_RELEASE();
        amx_loaded_cfg = 0;
    }
}
#define DNNQ_BLOCK_END amx_release

/* Loads the tile shapes `rows` (tiles of 0 rows stay unused), unless the configuration `id`
 * is the one already loaded on this thread. */
static void amx_load_config(int id, const int rows[8]) {
    if (amx_loaded_cfg == id) return;
    amx_loaded_cfg = id;
    amx_tilecfg_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.palette_id = 1;
    for (int t = 0; t < 8; ++t) {
        cfg.rows[t] = (uint8_t)rows[t];
        cfg.colsb[t] = rows[t] ? 64 : 0;
    }
    TILE_CONFIG(&cfg);
}

/* Two row blocks (amx_half): rows0 = 16 and rows1 (1..16) rows. */
static void amx_configure(int rows0, int rows1) {
    const int rows[8] = {rows0, rows0, rows1, rows1, rows0, rows1, 16, 16};
    amx_load_config(1 + rows0 * 32 + rows1, rows);
}

/* The wide layout (amx_wide): accumulators 0-3 and A 4 of `rows` rows, B 5-7 of 16. */
static void amx_configure_wide(int rows) {
    const int r[8] = {rows, rows, rows, rows, rows, 16, 16, 16};
    amx_load_config(1 + 32 * 32 + rows, r); /* ids distinct from every amx_configure one */
}

/* rows [0, mr) of A, bytes k0 .. k0 + kn - 1 (kn <= 64), XOR-ed with x, zero-padded to 64 bytes
 * a row: dense rows (row r at q->a + r * q->lda) or rows by pointer (q->rows) */
static void amx_stage_rows(uint8_t *buf, const dnnq_br_pair_t *q, int mr, int64_t k0,
                           int64_t kn, uint8_t x) {
    const __mmask64 km = kn >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << kn) - 1);
    const __m512i vx = _mm512_set1_epi8((char)x);
    for (int r = 0; r < mr; ++r) {
        const uint8_t *row = q->rows ? q->rows[r] : q->a + r * q->lda;
        const __m512i v = _mm512_maskz_loadu_epi8(km, row + k0);
        _mm512_store_si512((void *)(buf + 64 * r), _mm512_maskz_mov_epi8(km, _mm512_xor_si512(v, vx)));
    }
}

/* the dense GEMM's rows (a, lda) staged */
static void amx_stage_a(uint8_t *buf, const uint8_t *a, int64_t lda, int mr, int64_t k0,
                        int64_t kn, uint8_t x) {
    const dnnq_br_pair_t q = {a, lda, NULL, NULL, 0};
    amx_stage_rows(buf, &q, mr, k0, kn, x);
}

#define AMX_DP(c, a, b)                                                                           \
    do {                                                                                          \
        if (SIGNED) TILE_DPBSSD(c, a, b);                                                         \
        else TILE_DPBUSD(c, a, b);                                                                \
    } while (0)

/* The fused epilogue of the previous tile, run once, right after the first k block's products
 * of the current tile are issued: the AVX-512 work then overlaps the tile unit's instead of
 * following it (measured in C on 512x768x768: 216 -> 192 us; spreading it a row or two per
 * k block gained less, 206 -> 210 us: the calls cost more than they hid). */
typedef struct {
    const dnnq_gemm_args_t *g;
    const dnnq_epi_consts_t *k;
    const int32_t *tile;
    int64_t m;
    int mr, done;
} amx_epi_job_t;

DNNQ_ALWAYS_INLINE void amx_epi_step(amx_epi_job_t *j) {
    if (!j || j->done) return;
    fast_epilogue_avx512(j->g, j->k, j->m, j->mr, j->tile);
    j->done = 1;
}

/* Columns 32h .. 32h + 31 of a tile of 17 to 32 rows (two row blocks). */
DNNQ_ALWAYS_INLINE void amx_half(const int SIGNED, int64_t K, const uint8_t *a,
                                 int64_t lda, int mr, uint8_t x, const int8_t *bp, int h,
                                 int32_t *c, uint8_t *abuf, amx_epi_job_t *job) {
    TILE_ZERO(T_C00);
    TILE_ZERO(T_C01);
    TILE_ZERO(T_C10);
    TILE_ZERO(T_C11);
    const int64_t nkb = (K + 63) / 64, ndirect = x ? 0 : K / 64;
    for (int64_t kb = 0; kb < nkb; ++kb) {
        const int64_t k0 = kb * 64;
        /* k groups k0/4 .. k0/4 + 15 of the panel (256 bytes each), columns 32h.. and 32h+16.. */
        const int8_t *bk = bp + k0 * DNNQ_NR + 128 * h;
        const uint8_t *a0 = a + k0, *a1 = a + 16 * lda + k0;
        int64_t sa = lda;
        if (kb >= ndirect) {
            amx_stage_a(abuf, a, lda, mr, k0, K - k0 < 64 ? K - k0 : 64, x);
            a0 = abuf;
            a1 = abuf + 16 * 64;
            sa = 64;
        }
        /* Tile registers are not renamed: a load waits until the products reading the tile it
         * replaces are done.  Each load comes right before its first product, so the loads of
         * this k block overlap the last products of the previous one. */
        TILE_LOAD(T_A0, a0, sa);
        TILE_LOAD(T_B0, bk, 4 * DNNQ_NR);
        AMX_DP(T_C00, T_A0, T_B0);
        TILE_LOAD(T_B1, bk + 64, 4 * DNNQ_NR);
        AMX_DP(T_C01, T_A0, T_B1);
        TILE_LOAD(T_A1, a1, sa);
        AMX_DP(T_C10, T_A1, T_B0);
        AMX_DP(T_C11, T_A1, T_B1);
        amx_epi_step(job);
    }
    TILE_STORE(T_C00, c + 32 * h, 4 * DNNQ_NR);
    TILE_STORE(T_C01, c + 32 * h + 16, 4 * DNNQ_NR);
    TILE_STORE(T_C10, c + 16 * DNNQ_NR + 32 * h, 4 * DNNQ_NR);
    TILE_STORE(T_C11, c + 16 * DNNQ_NR + 32 * h + 16, 4 * DNNQ_NR);
}

/* Up to 16 rows, all 64 columns in one pass over K (the 4 accumulators are tiles 0-3, the B
 * tiles 5-7 in turn): each 256-byte k-group row of the panel is read once, which is what the
 * bandwidth-bound small-M case needs. */
DNNQ_ALWAYS_INLINE void amx_wide(const int SIGNED, int64_t K, const uint8_t *a, int64_t lda,
                                 int mr, uint8_t x, const int8_t *bp, int32_t *c, uint8_t *abuf,
                                 amx_epi_job_t *job) {
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
    const int64_t nkb = (K + 63) / 64, ndirect = x ? 0 : K / 64;
    for (int64_t kb = 0; kb < nkb; ++kb) {
        const int64_t k0 = kb * 64;
        if (kb < ndirect) {
            TILE_LOAD(4, a + k0, lda);
        } else {
            amx_stage_a(abuf, a, lda, mr, k0, K - k0 < 64 ? K - k0 : 64, x);
            TILE_LOAD(4, abuf, 64);
        }
        const int8_t *bk = bp + k0 * DNNQ_NR;
        TILE_LOAD(5, bk, 4 * DNNQ_NR);
        TILE_LOAD(6, bk + 64, 4 * DNNQ_NR);
        TILE_LOAD(7, bk + 128, 4 * DNNQ_NR);
        AMX_DP(0, 4, 5);
        AMX_DP(1, 4, 6);
        AMX_DP(2, 4, 7);
        TILE_LOAD(5, bk + 192, 4 * DNNQ_NR);
        AMX_DP(3, 4, 5);
        amx_epi_step(job);
    }
    TILE_STORE(0, c, 4 * DNNQ_NR);
    TILE_STORE(1, c + 16, 4 * DNNQ_NR);
    TILE_STORE(2, c + 32, 4 * DNNQ_NR);
    TILE_STORE(3, c + 48, 4 * DNNQ_NR);
}

/* a_xor: 0 u8 source; DNNQ_A_SIGNED s8 source (tdpbssd); DNNQ_A_XOR_S8 s8 source to be taken as
 * u8 = s8 + 128 (the caller compensates), done on the staged copy.  (DNNQ_A_SWAP is never
 * chosen for this ISA: GemmPlan uses DNNQ_A_SIGNED instead.) */
static void amx_ukr(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                    const int8_t *bp, int32_t *c, amx_epi_job_t *job) {
    uint8_t abuf[DNNQ_MR * 64] __attribute__((aligned(64)));
    const uint8_t x = a_xor == DNNQ_A_XOR_S8 ? 0x80 : 0;
    if (mr <= 16) {
        amx_configure_wide(mr);
        if (a_xor == DNNQ_A_SIGNED) amx_wide(1, K, a, lda, mr, 0, bp, c, abuf, job);
        else amx_wide(0, K, a, lda, mr, x, bp, c, abuf, job);
    } else {
        amx_configure(16, mr - 16);
        for (int h = 0; h < 2; ++h) {
            if (a_xor == DNNQ_A_SIGNED) amx_half(1, K, a, lda, mr, 0, bp, h, c, abuf, job);
            else amx_half(0, K, a, lda, mr, x, bp, h, c, abuf, job);
        }
    }
    amx_epi_step(job); /* K = 0: no k block ran it */
}

static void dnnq_ukr(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                     const int8_t *bp, int32_t *c) {
    amx_ukr(mr, K, a, lda, a_xor, bp, c, NULL);
}

/* The tile, with the fused epilogue of the previous one (rows [pm, pm + pmr), in ptile) woven
 * into its k loop; see DNNQ_UKR_PIPELINED in gemm_impl.h. */
static void amx_ukr_pipelined(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                              const int8_t *bp, int32_t *c, const dnnq_gemm_args_t *g,
                              const dnnq_epi_consts_t *k, int64_t pm, int pmr,
                              const int32_t *ptile) {
    amx_epi_job_t job = {g, k, ptile, pm, pmr, 0};
    amx_ukr(mr, K, a, lda, a_xor, bp, c, pmr > 0 ? &job : NULL);
}
#define DNNQ_UKR_PIPELINED amx_ukr_pipelined

/* The dense micro-kernel is AMX's own (above).  The level's general batch-reduce kernel
 * (dnnq_brgemm_ukr_fn at mr <= DNNQ_MR_MAX, under the RNN cells, the general and column-phase
 * deconvolution drivers) is the AVX512-VNNI one (dispatch.c); the tiled convolution path and
 * the deconv_ks kernel take the AMX one below where the implementation list chose it
 * (tiles_amx, deconv_ks_amx). */
#define DNNQ_DENSE_UKR
#define DNNQ_BR_EXTERNAL
#include "gemm_impl.h"

/* ---- The AMX batch-reduce kernel (dnnq_brgemm_amx_for, dnnq_kernels.h) -------------------
 * c[r][n] (+)= sum over pairs of sum_k A_pair[r][k] * B_pair[k][n] for mr <= 32 rows and the
 * NCB 16-column tiles of the panel (1, 2 or 4).  The accumulators stay in tiles across every
 * pair and k block; each pair's 64-byte k blocks load A straight from the source where the
 * rows are dense (a row stride other than 0), u8 and the block is whole, and from a
 * zero-padded (and XOR-ed) copy otherwise: rows by pointer, the zero-point row of padded
 * taps (stride 0), the block holding the K tail, an s8 source.  The zero padding
 * meets the B rows a tile reads past the pair's K (the next pair's, or the DNNQ_AMX_B_SLACK
 * bytes after the last panel), so they add nothing.  The tile configuration stays loaded across
 * calls: the driver ends it with dnnq_amx_release (once per work item).  The products are
 * tdpbusd (u8 x s8): an s8 source is XOR-ed to u8 in the copy, the driver compensates. */

/* the pair's k blocks loaded straight from the source: the whole 64-byte blocks of dense u8
 * rows with a row stride (the others are staged) */
DNNQ_ALWAYS_INLINE int64_t amx_br_direct_blocks(const dnnq_br_pair_t *q, uint8_t x) {
    return x || q->rows || !q->lda ? 0 : q->K / 64;
}

/* A of k block k0 for rows [r0, r0 + 16): straight from the source (*stride = lda), or from the
 * staged copy (stride 64; staged once per block, by the call for r0 = 0) */
DNNQ_ALWAYS_INLINE const uint8_t *amx_br_a(const dnnq_br_pair_t *q, int mr, int64_t k0, uint8_t x,
                                           int direct, int r0, int stage, uint8_t *abuf,
                                           int64_t *stride) {
    if (direct) {
        *stride = q->lda;
        return q->a + r0 * q->lda + k0;
    }
    if (stage) amx_stage_rows(abuf, q, mr, k0, q->K - k0 < 64 ? q->K - k0 : 64, x);
    *stride = 64;
    return abuf + 64 * r0;
}

/* Up to 16 rows: accumulators 0 .. NCB - 1 (columns 16j ..), A in tile 4, B in tiles 5 - 7 */
DNNQ_ALWAYS_INLINE void amx_br_wide(const int NCB, int mr, int64_t npairs,
                                    const dnnq_br_pair_t *pairs, uint8_t x, int accumulate,
                                    int32_t *c, uint8_t *abuf) {
    /* (tile numbers are literals: see TILE_LOAD) */
#define AMX_BR_START(t)                                                                        \
    do {                                                                                       \
        if (NCB > t) {                                                                         \
            if (accumulate) TILE_LOAD(t, c + 16 * t, 4 * DNNQ_NR);                             \
            else TILE_ZERO(t);                                                                 \
        }                                                                                      \
    } while (0)
    AMX_BR_START(0);
    AMX_BR_START(1);
    AMX_BR_START(2);
    AMX_BR_START(3);
#undef AMX_BR_START
    for (int64_t i = 0; i < npairs; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        const int64_t nkb = (q->K + 63) / 64, ndirect = amx_br_direct_blocks(q, x);
        for (int64_t kb = 0; kb < nkb; ++kb) {
            const int64_t k0 = kb * 64;
            int64_t sa;
            const uint8_t *a = amx_br_a(q, mr, k0, x, kb < ndirect, 0, 1, abuf, &sa);
            const int8_t *bk = q->b + k0 * DNNQ_NR;
            TILE_LOAD(4, a, sa);
            TILE_LOAD(5, bk, 4 * DNNQ_NR);
            TILE_DPBUSD(0, 4, 5);
            if (NCB > 1) {
                TILE_LOAD(6, bk + 64, 4 * DNNQ_NR);
                TILE_DPBUSD(1, 4, 6);
            }
            if (NCB > 2) {
                TILE_LOAD(7, bk + 128, 4 * DNNQ_NR);
                TILE_DPBUSD(2, 4, 7);
                TILE_LOAD(5, bk + 192, 4 * DNNQ_NR);
                TILE_DPBUSD(3, 4, 5);
            }
        }
    }
    TILE_STORE(0, c, 4 * DNNQ_NR);
    if (NCB > 1) TILE_STORE(1, c + 16, 4 * DNNQ_NR);
    if (NCB > 2) {
        TILE_STORE(2, c + 32, 4 * DNNQ_NR);
        TILE_STORE(3, c + 48, 4 * DNNQ_NR);
    }
}

/* 17 to 32 rows, columns 32h .. 32h + 16 NCB - 1 (NCB 1 or 2): accumulators 0 - 3 (rows 0-15 /
 * 16-31 x the two 16-column tiles), A 4 - 5, B 6 - 7 */
DNNQ_ALWAYS_INLINE void amx_br_half(const int NCB, int mr, int64_t npairs,
                                    const dnnq_br_pair_t *pairs, uint8_t x, int accumulate,
                                    int h, int32_t *c, uint8_t *abuf) {
    int32_t *c0 = c + 32 * h, *c1 = c + 16 * DNNQ_NR + 32 * h;
    if (accumulate) {
        TILE_LOAD(T_C00, c0, 4 * DNNQ_NR);
        TILE_LOAD(T_C10, c1, 4 * DNNQ_NR);
        if (NCB > 1) {
            TILE_LOAD(T_C01, c0 + 16, 4 * DNNQ_NR);
            TILE_LOAD(T_C11, c1 + 16, 4 * DNNQ_NR);
        }
    } else {
        TILE_ZERO(T_C00);
        TILE_ZERO(T_C10);
        if (NCB > 1) {
            TILE_ZERO(T_C01);
            TILE_ZERO(T_C11);
        }
    }
    for (int64_t i = 0; i < npairs; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        const int64_t nkb = (q->K + 63) / 64, ndirect = amx_br_direct_blocks(q, x);
        for (int64_t kb = 0; kb < nkb; ++kb) {
            const int64_t k0 = kb * 64;
            const int direct = kb < ndirect;
            int64_t s0, s1;
            const uint8_t *a0 = amx_br_a(q, mr, k0, x, direct, 0, 1, abuf, &s0);
            const uint8_t *a1 = amx_br_a(q, mr, k0, x, direct, 16, 0, abuf, &s1);
            const int8_t *bk = q->b + k0 * DNNQ_NR + 128 * h;
            TILE_LOAD(T_A0, a0, s0);
            TILE_LOAD(T_B0, bk, 4 * DNNQ_NR);
            TILE_DPBUSD(T_C00, T_A0, T_B0);
            if (NCB > 1) {
                TILE_LOAD(T_B1, bk + 64, 4 * DNNQ_NR);
                TILE_DPBUSD(T_C01, T_A0, T_B1);
            }
            TILE_LOAD(T_A1, a1, s1);
            TILE_DPBUSD(T_C10, T_A1, T_B0);
            if (NCB > 1) TILE_DPBUSD(T_C11, T_A1, T_B1);
        }
    }
    TILE_STORE(T_C00, c0, 4 * DNNQ_NR);
    TILE_STORE(T_C10, c1, 4 * DNNQ_NR);
    if (NCB > 1) {
        TILE_STORE(T_C01, c0 + 16, 4 * DNNQ_NR);
        TILE_STORE(T_C11, c1 + 16, 4 * DNNQ_NR);
    }
}

DNNQ_ALWAYS_INLINE void amx_br(const int NCB, int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                               uint32_t a_xor, int accumulate, int32_t *c) {
    uint8_t abuf[DNNQ_AMX_BR_MR * 64] __attribute__((aligned(64)));
    const uint8_t x = a_xor == DNNQ_A_XOR_S8 ? 0x80 : 0;
    if (mr <= 16) {
        amx_configure_wide(mr);
        amx_br_wide(NCB, mr, npairs, pairs, x, accumulate, c, abuf);
        return;
    }
    amx_configure(16, mr - 16);
    if (NCB == 1) {
        amx_br_half(1, mr, npairs, pairs, x, accumulate, 0, c, abuf);
        return;
    }
    for (int h = 0; h < NCB / 2; ++h) amx_br_half(2, mr, npairs, pairs, x, accumulate, h, c, abuf);
}

void DNNQ_CAT(dnnq_brgemm_amx_n64, DNNQ_ISA)(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                            uint32_t a_xor, int accumulate, int32_t *c) {
    amx_br(4, mr, npairs, pairs, a_xor, accumulate, c);
}
void DNNQ_CAT(dnnq_brgemm_amx_n32, DNNQ_ISA)(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                            uint32_t a_xor, int accumulate, int32_t *c) {
    amx_br(2, mr, npairs, pairs, a_xor, accumulate, c);
}
void DNNQ_CAT(dnnq_brgemm_amx_n16, DNNQ_ISA)(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                            uint32_t a_xor, int accumulate, int32_t *c) {
    amx_br(1, mr, npairs, pairs, a_xor, accumulate, c);
}
void DNNQ_CAT(dnnq_amx_release, DNNQ_ISA)(void) { amx_release(); }
