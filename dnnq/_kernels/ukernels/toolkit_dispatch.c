/* Toolkit kernel tables by ISA level; the x86 variants exist only in x86-64 builds.
 * default -> portable, avx2 and avx2_vnni -> avx2, avx512_core_vnni and _amx -> avx512. */
#include "dnnq_toolkit.h"

#ifdef DNNQ_HAVE_X86_KERNELS
#define DNNQ_TK_PICK(fn, isa)                                                  \
    switch (isa) {                                                             \
    case DNNQ_ISA_AVX512_CORE_AMX:                                             \
    case DNNQ_ISA_AVX512_CORE_VNNI: return fn##_avx512;                        \
    case DNNQ_ISA_AVX2_VNNI:                                                   \
    case DNNQ_ISA_AVX2: return fn##_avx2;                                      \
    default: return fn##_portable;                                             \
    }
#else
#define DNNQ_TK_PICK(fn, isa) (void)isa; return fn##_portable;
#endif

dnnq_pw_run_fn dnnq_pw_run_for_isa(int isa) { DNNQ_TK_PICK(dnnq_pw_run, isa) }
dnnq_pool_run_fn dnnq_pool_run_for_isa(int isa) { DNNQ_TK_PICK(dnnq_pool_run, isa) }
dnnq_softmax_run_fn dnnq_softmax_run_for_isa(int isa) { DNNQ_TK_PICK(dnnq_softmax_run, isa) }

const char *dnnq_toolkit_isa_name(int isa) {
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (isa) {
    case DNNQ_ISA_AVX512_CORE_AMX:
    case DNNQ_ISA_AVX512_CORE_VNNI: return "avx512";
    case DNNQ_ISA_AVX2_VNNI:
    case DNNQ_ISA_AVX2: return "avx2";
    default: break;
    }
#endif
    (void)isa;
    return "portable";
}
