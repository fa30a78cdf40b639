/* The f32 kernel tables by ISA level (dnnq_f32.h; the level -> kernel set lists:
 * isa_pick.h).  f32 has one numerics: DNNQ_NUMERICS_* bits are ignored. */
#include "dnnq_f32.h"
#include "isa_pick.h"

DNNQ_DEFINE_FOR_ISA(dnnq_brgemm_f32_fn, dnnq_brgemm_f32, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_gemm_epilogue_f32_fn, dnnq_gemm_epilogue_f32, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_gemm_block_fn, dnnq_gemm_block_f32, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_dw_f32_fn, dnnq_dw_f32, DNNQ_WIDTH_SETS)

/* the fused epilogues exist at the AVX-512 levels only (NULL: the generic path) */
DNNQ_DEFINE_PICK(dnnq_f32_epi_prepare_fn, dnnq_f32_epi_prepare_for_isa, dnnq_f32_epi_prepare,
                 DNNQ_AVX512_SETS, NULL)
DNNQ_DEFINE_PICK(dnnq_brgemm_f32_epi_fn, dnnq_brgemm_f32_epi_for_isa, dnnq_brgemm_f32_epi,
                 DNNQ_AVX512_SETS, NULL)
DNNQ_DEFINE_PICK(dnnq_dw_f32_epi_fn, dnnq_dw_f32_epi_for_isa, dnnq_dw_f32_epi,
                 DNNQ_AVX512_SETS, NULL)
DNNQ_DEFINE_PICK(dnnq_dw_f32_rows_fn, dnnq_dw_f32_rows_for_isa, dnnq_dw_f32_rows,
                 DNNQ_AVX512_SETS, NULL)
