/* Which compiled kernel set serves each ISA level, declared once for every `*_for_isa`
 * function.  A kernel family is compiled once per set with that set's flags
 * (dnnq/primitives/_kernels/meson.build, `isa_flags`) into functions named <fn>_<set>; the
 * lists below map the ISA levels onto those sets, and DNNQ_DEFINE_FOR_ISA writes the switch.
 * Levels not listed (the default level, and every level in a build without x86 kernels) get
 * the family's fallback: its portable kernel, or NULL where the caller has a generic path. */
#ifndef DNNQ_ISA_PICK_H
#define DNNQ_ISA_PICK_H

#include "dnnq_codes.h"

/* X(level, set, fn) for each level that has kernels of its own */

/* int8 GEMM blocks, micro-kernels and epilogues: one set per level */
#define DNNQ_GEMM_SETS(X, fn)                                                                  \
    X(DNNQ_ISA_AVX512_CORE_AMX, amx, fn) X(DNNQ_ISA_AVX512_CORE_VNNI, avx512vnni, fn)         \
    X(DNNQ_ISA_AVX2_VNNI, avxvnni, fn) X(DNNQ_ISA_AVX2, avx2, fn)

/* the batch-reduce micro-kernel of up to DNNQ_MR_MAX rows: the AVX512-VNNI one serves the AMX
 * level (the tiled convolution path takes the AMX kernel of gemm_amx.c instead:
 * dnnq_brgemm_amx_for) */
#define DNNQ_BRGEMM_SETS(X, fn)                                                                \
    X(DNNQ_ISA_AVX512_CORE_AMX, avx512vnni, fn) X(DNNQ_ISA_AVX512_CORE_VNNI, avx512vnni, fn)  \
    X(DNNQ_ISA_AVX2_VNNI, avxvnni, fn) X(DNNQ_ISA_AVX2, avx2, fn)

/* int8 kernels that exist at the AVX-512 levels only (the n32 micro-kernel, the fused
 * epilogue) */
#define DNNQ_AVX512VNNI_SETS(X, fn)                                                            \
    X(DNNQ_ISA_AVX512_CORE_AMX, avx512vnni, fn) X(DNNQ_ISA_AVX512_CORE_VNNI, avx512vnni, fn)

/* kernels built per vector width (toolkit, RNN driver, f32 layers, depthwise): VNNI and AMX
 * add nothing to them */
#define DNNQ_WIDTH_SETS(X, fn)                                                                 \
    X(DNNQ_ISA_AVX512_CORE_AMX, avx512, fn) X(DNNQ_ISA_AVX512_CORE_VNNI, avx512, fn)          \
    X(DNNQ_ISA_AVX2_VNNI, avx2, fn) X(DNNQ_ISA_AVX2, avx2, fn)

/* width-built kernels that exist at the AVX-512 levels only */
#define DNNQ_AVX512_SETS(X, fn)                                                                \
    X(DNNQ_ISA_AVX512_CORE_AMX, avx512, fn) X(DNNQ_ISA_AVX512_CORE_VNNI, avx512, fn)

#define DNNQ_PICK_CASE(level, set, fn) case level: return fn##_##set;
#define DNNQ_PICK_CALL_CASE(level, set, fn) case level: return fn##_##set();

#ifdef DNNQ_HAVE_X86_KERNELS
#define DNNQ_PICK_SWITCH(SETS, CASE, fn, isa)                                                  \
    switch (DNNQ_ISA_LEVEL(isa)) {                                                             \
    SETS(CASE, fn)                                                                             \
    default: break;                                                                            \
    }
#else
#define DNNQ_PICK_SWITCH(SETS, CASE, fn, isa) (void)(isa);
#endif

/* `ret name(int isa)`: the kernel fn_<set> of isa's level, else `fallback` */
#define DNNQ_DEFINE_PICK(ret, name, fn, SETS, fallback)                                        \
    ret name(int isa) {                                                                        \
        DNNQ_PICK_SWITCH(SETS, DNNQ_PICK_CASE, fn, isa)                                        \
        return fallback;                                                                       \
    }

/* `ret fn_for_isa(int isa)`, the common case: fn_<set>, else fn_portable */
#define DNNQ_DEFINE_FOR_ISA(ret, fn, SETS)                                                     \
    DNNQ_DEFINE_PICK(ret, fn##_for_isa, fn, SETS, fn##_portable)

#endif
