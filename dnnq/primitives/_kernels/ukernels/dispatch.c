/* Kernel tables indexed by ISA level (the level -> kernel set lists: isa_pick.h).
 * An ISA code with DNNQ_NUMERICS_AVX2 set selects the pair-saturating kernels (oneDNN's
 * numerics without VNNI): the AVX2 ones at the avx2 level and above (a deconvolution oneDNN
 * runs on its AVX2 kernel on an AVX-512 CPU), portable ones otherwise. */
#include "dnnq_kernels.h"
#include "isa_pick.h"

#ifdef DNNQ_HAVE_X86_KERNELS
#define DNNQ_PAIR_SAT(fn, call)                                                                \
    (DNNQ_ISA_LEVEL(isa) >= DNNQ_ISA_AVX2 ? fn##_avx2sat call : fn##_portablesat call)
#else
#define DNNQ_PAIR_SAT(fn, call) fn##_portablesat call
#endif

/* The emulated kernel sets (tests on CPUs without the instructions): the AMX level's GEMM
 * kernels over the tile emulation (DNNQ_EMULATE_AMX=1, amx_emulate.h: set amxemu), the
 * avx2_vnni level's with the EVEX vpdpbusd (DNNQ_EMULATE_AVX_VNNI=1: set avxvnniemu) */
#ifdef DNNQ_HAVE_X86_KERNELS
#define DNNQ_AVX_VNNI_EMULATED(fn, call)                                                       \
    if (DNNQ_ISA_LEVEL(isa) == DNNQ_ISA_AVX2_VNNI && dnnq_avx_vnni_emulation())                \
        return fn##_avxvnniemu call;
#define DNNQ_EMULATED(fn, call)                                                                \
    if (DNNQ_ISA_LEVEL(isa) == DNNQ_ISA_AVX512_CORE_AMX && dnnq_amx_emulation())               \
        return fn##_amxemu call;                                                               \
    DNNQ_AVX_VNNI_EMULATED(fn, call)
#else
#define DNNQ_AVX_VNNI_EMULATED(fn, call)
#define DNNQ_EMULATED(fn, call)
#endif

/* `ret fn_for_isa(int isa)` of an int8 family with pair-saturating variants: those with
 * DNNQ_NUMERICS_AVX2, else the emulated set where one is on (EMU: DNNQ_EMULATED for the
 * families of the amx set, DNNQ_AVX_VNNI_EMULATED for the batch-reduce ones), else the
 * level's kernel from SETS, else the portable one; CASE picks the function
 * (DNNQ_PICK_CASE) or calls it (DNNQ_PICK_CALL_CASE, the mr queries) */
#define DNNQ_DEFINE_INT8_FOR_ISA(ret, fn, SETS, CASE, call, EMU)                               \
    ret fn##_for_isa(int isa) {                                                                \
        if (isa & DNNQ_NUMERICS_AVX2) return DNNQ_PAIR_SAT(fn, call);                          \
        EMU(fn, call)                                                                          \
        DNNQ_PICK_SWITCH(SETS, CASE, fn, isa)                                                  \
        return fn##_portable call;                                                             \
    }

DNNQ_DEFINE_INT8_FOR_ISA(dnnq_gemm_block_fn, dnnq_gemm_block, DNNQ_GEMM_SETS, DNNQ_PICK_CASE, ,
                         DNNQ_EMULATED)
DNNQ_DEFINE_INT8_FOR_ISA(dnnq_gemm_ukr_fn, dnnq_gemm_ukr, DNNQ_GEMM_SETS, DNNQ_PICK_CASE, ,
                         DNNQ_EMULATED)
DNNQ_DEFINE_INT8_FOR_ISA(int, dnnq_gemm_mr, DNNQ_GEMM_SETS, DNNQ_PICK_CALL_CASE, (),
                         DNNQ_EMULATED)
DNNQ_DEFINE_INT8_FOR_ISA(dnnq_gemm_epilogue_fn, dnnq_gemm_epilogue, DNNQ_GEMM_SETS,
                         DNNQ_PICK_CASE, , DNNQ_EMULATED)
DNNQ_DEFINE_INT8_FOR_ISA(dnnq_brgemm_ukr_fn, dnnq_brgemm_ukr, DNNQ_BRGEMM_SETS, DNNQ_PICK_CASE, ,
                         DNNQ_AVX_VNNI_EMULATED)
DNNQ_DEFINE_INT8_FOR_ISA(int, dnnq_brgemm_mr, DNNQ_BRGEMM_SETS, DNNQ_PICK_CALL_CASE, (),
                         DNNQ_AVX_VNNI_EMULATED)

/* AVX-512 only, and none for the pair-saturating numerics (NULL: the caller's generic path) */
#define DNNQ_DEFINE_AVX512_INT8_FOR_ISA(ret, name, fn)                                         \
    ret name(int isa) {                                                                        \
        if (isa & DNNQ_NUMERICS_AVX2) return NULL;                                             \
        DNNQ_PICK_SWITCH(DNNQ_AVX512VNNI_SETS, DNNQ_PICK_CASE, fn, isa)                        \
        return NULL;                                                                           \
    }

DNNQ_DEFINE_AVX512_INT8_FOR_ISA(dnnq_brgemm_ukr_fn, dnnq_brgemm_ukr_n32_for_isa,
                                dnnq_brgemm_ukr_n32)
DNNQ_DEFINE_AVX512_INT8_FOR_ISA(dnnq_brgemm_ukr_fn, dnnq_brgemm_ukr_n16_for_isa,
                                dnnq_brgemm_ukr_n16)
DNNQ_DEFINE_AVX512_INT8_FOR_ISA(dnnq_brgemm_epi_fn, dnnq_brgemm_epi_for_isa, dnnq_brgemm_epi)
DNNQ_DEFINE_AVX512_INT8_FOR_ISA(dnnq_epi_prepare_fn, dnnq_epi_prepare_for_isa, dnnq_epi_prepare)
DNNQ_DEFINE_AVX512_INT8_FOR_ISA(dnnq_epi_tile_prepare_fn, dnnq_epi_tile_prepare_for_isa,
                                dnnq_epi_tile_prepare)
DNNQ_DEFINE_AVX512_INT8_FOR_ISA(dnnq_epi_tile_fn, dnnq_epi_tile_for_isa, dnnq_epi_tile)

/* the AMX batch-reduce kernel for a panel of ncols columns: the emulated set where the
 * emulation is on, else the tiles' own (the caller chose the AMX level) */
dnnq_brgemm_ukr_fn dnnq_brgemm_amx_for(int64_t ncols) {
#ifdef DNNQ_HAVE_X86_KERNELS
    const int emu = dnnq_amx_emulation();
    if (ncols <= 16) return emu ? dnnq_brgemm_amx_n16_amxemu : dnnq_brgemm_amx_n16_amx;
    if (ncols <= 32) return emu ? dnnq_brgemm_amx_n32_amxemu : dnnq_brgemm_amx_n32_amx;
    return emu ? dnnq_brgemm_amx_n64_amxemu : dnnq_brgemm_amx_n64_amx;
#else
    (void)ncols;
    return NULL;
#endif
}

/* each set keeps its own loaded configuration (a thread-local flag): releasing the set that
 * loaded none does nothing, so no tile instruction runs on a CPU without AMX */
void dnnq_amx_release(void) {
#ifdef DNNQ_HAVE_X86_KERNELS
    dnnq_amx_release_amxemu();
    dnnq_amx_release_amx();
#endif
}
