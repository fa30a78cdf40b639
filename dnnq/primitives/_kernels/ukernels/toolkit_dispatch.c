/* Toolkit kernel tables by ISA level (the level -> kernel set lists: isa_pick.h): default ->
 * portable, avx2 and avx2_vnni -> avx2, avx512_core_vnni and _amx -> avx512. */
#include "dnnq_toolkit.h"
#include "isa_pick.h"

DNNQ_DEFINE_FOR_ISA(dnnq_pw_run_fn, dnnq_pw_run, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_pool_run_fn, dnnq_pool_run, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_pool_split_fn, dnnq_pool_split, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_softmax_run_fn, dnnq_softmax_run, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_table_run_fn, dnnq_table_run, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_qsoftmax_run_fn, dnnq_qsoftmax_run, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_qlayernorm_run_fn, dnnq_qlayernorm_run, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_q8_binary_run_fn, dnnq_q8_binary_run, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_scale_residual_run_fn, dnnq_scale_residual_run, DNNQ_WIDTH_SETS)
DNNQ_DEFINE_FOR_ISA(dnnq_quantize_planes_run_fn, dnnq_quantize_planes_run, DNNQ_WIDTH_SETS)

#define DNNQ_SET_NAME_CASE(level, set, fn) case level: return #set;
const char *dnnq_toolkit_isa_name(int isa) {
    DNNQ_PICK_SWITCH(DNNQ_WIDTH_SETS, DNNQ_SET_NAME_CASE, unused, isa)
    return "portable";
}
