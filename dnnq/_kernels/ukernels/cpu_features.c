/* Run-time CPU feature detection (cpuid + xgetbv), compiled without any ISA flags so it runs
 * on every x86-64; on other architectures every feature reads as absent. */
#include "dnnq_kernels.h"
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>

static uint64_t read_xcr0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

void dnnq_cpu_detect(dnnq_cpu_features_t *f) {
    unsigned a, b, c, d;
    memset(f, 0, sizeof(*f));
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int osxsave = (c >> 27) & 1;
    f->sse41 = (c >> 19) & 1;
    f->avx = (c >> 28) & 1;
    f->fma = (c >> 12) & 1;
    if (osxsave) {
        uint64_t xcr0 = read_xcr0();
        f->os_ymm = (xcr0 & 0x6) == 0x6;           /* XMM and YMM state */
        f->os_zmm = f->os_ymm && (xcr0 & 0xE0) == 0xE0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    }
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f->avx2 = (b >> 5) & 1;
        f->avx512f = (b >> 16) & 1;
        f->avx512dq = (b >> 17) & 1;
        f->avx512bw = (b >> 30) & 1;
        f->avx512vl = (b >> 31) & 1;
        f->avx512_vnni = (c >> 11) & 1;
        unsigned sub_leaves = a;
        if (sub_leaves >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f->avx_vnni = (a >> 4) & 1;
        }
    }
    /* A feature the OS does not save the registers of is unusable. */
    if (!f->os_ymm) { f->avx = f->avx2 = f->fma = f->avx_vnni = 0; }
    if (!f->os_zmm) { f->avx512f = f->avx512bw = f->avx512vl = f->avx512dq = f->avx512_vnni = 0; }
}
#else
void dnnq_cpu_detect(dnnq_cpu_features_t *f) { memset(f, 0, sizeof(*f)); }
#endif

int dnnq_cpu_best_isa(const dnnq_cpu_features_t *f) {
    if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512_vnni)
        return DNNQ_ISA_AVX512_CORE_VNNI;
    if (f->avx2 && f->fma && f->avx_vnni) return DNNQ_ISA_AVX2_VNNI;
    if (f->avx2 && f->fma) return DNNQ_ISA_AVX2;
    return DNNQ_ISA_DEFAULT;
}
