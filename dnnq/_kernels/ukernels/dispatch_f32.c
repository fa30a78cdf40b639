/* The f32 kernel tables by ISA level (dnnq_f32.h); the x86 kernels exist only in x86-64
 * builds.  f32 has one numerics: DNNQ_NUMERICS_* bits are ignored. */
#include "dnnq_f32.h"

#ifdef DNNQ_HAVE_X86_KERNELS
#define DNNQ_F32_PICK(fn)                                                                      \
    switch (DNNQ_ISA_LEVEL(isa)) {                                                             \
    case DNNQ_ISA_AVX512_CORE_AMX:                                                             \
    case DNNQ_ISA_AVX512_CORE_VNNI: return fn##_avx512;                                        \
    case DNNQ_ISA_AVX2_VNNI:                                                                   \
    case DNNQ_ISA_AVX2: return fn##_avx2;                                                      \
    default: return fn##_portable;                                                             \
    }
#else
#define DNNQ_F32_PICK(fn) (void)isa; return fn##_portable;
#endif

dnnq_brgemm_f32_fn dnnq_brgemm_f32_for_isa(int isa) { DNNQ_F32_PICK(dnnq_brgemm_f32) }
dnnq_gemm_epilogue_f32_fn dnnq_gemm_epilogue_f32_for_isa(int isa) {
    DNNQ_F32_PICK(dnnq_gemm_epilogue_f32)
}
dnnq_gemm_block_fn dnnq_gemm_block_f32_for_isa(int isa) { DNNQ_F32_PICK(dnnq_gemm_block_f32) }
dnnq_dw_f32_fn dnnq_dw_f32_for_isa(int isa) { DNNQ_F32_PICK(dnnq_dw_f32) }

dnnq_f32_epi_prepare_fn dnnq_f32_epi_prepare_for_isa(int isa) {
#ifdef DNNQ_HAVE_X86_KERNELS
    if (DNNQ_ISA_LEVEL(isa) >= DNNQ_ISA_AVX512_CORE_VNNI) return dnnq_f32_epi_prepare_avx512;
#endif
    (void)isa;
    return NULL;
}

dnnq_brgemm_f32_epi_fn dnnq_brgemm_f32_epi_for_isa(int isa) {
#ifdef DNNQ_HAVE_X86_KERNELS
    if (DNNQ_ISA_LEVEL(isa) >= DNNQ_ISA_AVX512_CORE_VNNI) return dnnq_brgemm_f32_epi_avx512;
#endif
    (void)isa;
    return NULL;
}

dnnq_dw_f32_epi_fn dnnq_dw_f32_epi_for_isa(int isa) {
#ifdef DNNQ_HAVE_X86_KERNELS
    if (DNNQ_ISA_LEVEL(isa) >= DNNQ_ISA_AVX512_CORE_VNNI) return dnnq_dw_f32_epi_avx512;
#endif
    (void)isa;
    return NULL;
}
