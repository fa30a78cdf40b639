/* Kernel tables indexed by ISA level; the x86 kernels exist only in x86-64 builds.
 * An ISA code with DNNQ_NUMERICS_AVX2 set selects the pair-saturating kernels (oneDNN's
 * numerics without VNNI): the AVX2 ones at the avx2 level and above (a deconvolution oneDNN
 * runs on its AVX2 kernel on an AVX-512 CPU), portable ones otherwise. */
#include "dnnq_kernels.h"

#ifdef DNNQ_HAVE_X86_KERNELS
#define DNNQ_PAIR_SAT_PICK(fn)                                                                 \
    (DNNQ_ISA_LEVEL(isa) >= DNNQ_ISA_AVX2 ? fn##_avx2sat : fn##_portablesat)
#define DNNQ_PAIR_SAT_PICK_MR(fn)                                                              \
    (DNNQ_ISA_LEVEL(isa) >= DNNQ_ISA_AVX2 ? fn##_avx2sat() : fn##_portablesat())
#else
#define DNNQ_PAIR_SAT_PICK(fn) fn##_portablesat
#define DNNQ_PAIR_SAT_PICK_MR(fn) fn##_portablesat()
#endif

dnnq_gemm_block_fn dnnq_gemm_block_for_isa(int isa) {
    if (isa & DNNQ_NUMERICS_AVX2) return DNNQ_PAIR_SAT_PICK(dnnq_gemm_block);
    isa = DNNQ_ISA_LEVEL(isa);
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (isa) {
    case DNNQ_ISA_AVX512_CORE_AMX: return dnnq_gemm_block_amx;
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_gemm_block_avx512vnni;
    case DNNQ_ISA_AVX2_VNNI: return dnnq_gemm_block_avxvnni;
    case DNNQ_ISA_AVX2: return dnnq_gemm_block_avx2;
    default: break;
    }
#endif
    (void)isa;
    return dnnq_gemm_block_portable;
}

dnnq_gemm_ukr_fn dnnq_gemm_ukr_for_isa(int isa) {
    if (isa & DNNQ_NUMERICS_AVX2) return DNNQ_PAIR_SAT_PICK(dnnq_gemm_ukr);
    isa = DNNQ_ISA_LEVEL(isa);
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (isa) {
    case DNNQ_ISA_AVX512_CORE_AMX: return dnnq_gemm_ukr_amx;
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_gemm_ukr_avx512vnni;
    case DNNQ_ISA_AVX2_VNNI: return dnnq_gemm_ukr_avxvnni;
    case DNNQ_ISA_AVX2: return dnnq_gemm_ukr_avx2;
    default: break;
    }
#endif
    (void)isa;
    return dnnq_gemm_ukr_portable;
}

int dnnq_gemm_mr_for_isa(int isa) {
    if (isa & DNNQ_NUMERICS_AVX2) return DNNQ_PAIR_SAT_PICK_MR(dnnq_gemm_mr);
    isa = DNNQ_ISA_LEVEL(isa);
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (isa) {
    case DNNQ_ISA_AVX512_CORE_AMX: return dnnq_gemm_mr_amx();
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_gemm_mr_avx512vnni();
    case DNNQ_ISA_AVX2_VNNI: return dnnq_gemm_mr_avxvnni();
    case DNNQ_ISA_AVX2: return dnnq_gemm_mr_avx2();
    default: break;
    }
#endif
    (void)isa;
    return dnnq_gemm_mr_portable();
}

dnnq_brgemm_ukr_fn dnnq_brgemm_ukr_for_isa(int isa) {
    if (isa & DNNQ_NUMERICS_AVX2) return DNNQ_PAIR_SAT_PICK(dnnq_brgemm_ukr);
    isa = DNNQ_ISA_LEVEL(isa);
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (isa) {
    case DNNQ_ISA_AVX512_CORE_AMX: /* AMX tiles need strided A: the VNNI kernel serves */
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_brgemm_ukr_avx512vnni;
    case DNNQ_ISA_AVX2_VNNI: return dnnq_brgemm_ukr_avxvnni;
    case DNNQ_ISA_AVX2: return dnnq_brgemm_ukr_avx2;
    default: break;
    }
#endif
    (void)isa;
    return dnnq_brgemm_ukr_portable;
}

dnnq_brgemm_ukr_fn dnnq_brgemm_ukr_n32_for_isa(int isa) {
    if (isa & DNNQ_NUMERICS_AVX2) return NULL; /* the pair-saturating kernels: no variant */
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (DNNQ_ISA_LEVEL(isa)) {
    case DNNQ_ISA_AVX512_CORE_AMX:
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_brgemm_ukr_n32_avx512vnni;
    default: break;
    }
#endif
    return NULL;
}

int dnnq_brgemm_mr_for_isa(int isa) {
    if (isa & DNNQ_NUMERICS_AVX2) return DNNQ_PAIR_SAT_PICK_MR(dnnq_brgemm_mr);
    isa = DNNQ_ISA_LEVEL(isa);
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (isa) {
    case DNNQ_ISA_AVX512_CORE_AMX:
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_brgemm_mr_avx512vnni();
    case DNNQ_ISA_AVX2_VNNI: return dnnq_brgemm_mr_avxvnni();
    case DNNQ_ISA_AVX2: return dnnq_brgemm_mr_avx2();
    default: break;
    }
#endif
    (void)isa;
    return dnnq_brgemm_mr_portable();
}

dnnq_gemm_epilogue_fn dnnq_gemm_epilogue_for_isa(int isa) {
    if (isa & DNNQ_NUMERICS_AVX2) return DNNQ_PAIR_SAT_PICK(dnnq_gemm_epilogue);
    isa = DNNQ_ISA_LEVEL(isa);
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (isa) {
    case DNNQ_ISA_AVX512_CORE_AMX: return dnnq_gemm_epilogue_amx;
    case DNNQ_ISA_AVX512_CORE_VNNI: return dnnq_gemm_epilogue_avx512vnni;
    case DNNQ_ISA_AVX2_VNNI: return dnnq_gemm_epilogue_avxvnni;
    case DNNQ_ISA_AVX2: return dnnq_gemm_epilogue_avx2;
    default: break;
    }
#endif
    (void)isa;
    return dnnq_gemm_epilogue_portable;
}

dnnq_brgemm_epi_fn dnnq_brgemm_epi_for_isa(int isa) {
#ifdef DNNQ_HAVE_X86_KERNELS
    if (!(isa & DNNQ_NUMERICS_AVX2) && DNNQ_ISA_LEVEL(isa) >= DNNQ_ISA_AVX512_CORE_VNNI)
        return dnnq_brgemm_epi_avx512vnni;
#endif
    (void)isa;
    return NULL;
}

dnnq_epi_prepare_fn dnnq_epi_prepare_for_isa(int isa) {
#ifdef DNNQ_HAVE_X86_KERNELS
    if (!(isa & DNNQ_NUMERICS_AVX2) && DNNQ_ISA_LEVEL(isa) >= DNNQ_ISA_AVX512_CORE_VNNI)
        return dnnq_epi_prepare_avx512vnni;
#endif
    (void)isa;
    return NULL;
}
