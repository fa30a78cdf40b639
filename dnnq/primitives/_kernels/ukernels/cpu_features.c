/* Run-time CPU feature detection (cpuid + xgetbv), compiled without any ISA flags so it runs
 * on every x86-64; on other architectures every feature reads as absent. */
/* syscall() is a glibc extension: under -std=c11 unistd.h declares it only when asked */
#define _DEFAULT_SOURCE
#include "dnnq_kernels.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* Linux hands out the AMX tile data state only to processes that ask for it (once, before
 * the first tile instruction; without it they fault).  Returns 1 when granted. */
static int request_amx_permission(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    const long ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
    unsigned long bitmask = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bitmask) != 0) return 0;
    return (bitmask >> XFEATURE_XTILEDATA) & 1;
#else
    return 0;
#endif
}

static uint64_t read_xcr0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

static void detect_hardware(dnnq_cpu_features_t *f) {
    unsigned a, b, c, d;
    memset(f, 0, sizeof(*f));
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int osxsave = (c >> 27) & 1;
    f->sse41 = (c >> 19) & 1;
    f->avx = (c >> 28) & 1;
    f->fma = (c >> 12) & 1;
    uint64_t xcr0 = 0;
    if (osxsave) {
        xcr0 = read_xcr0();
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
        f->avx512_vbmi = (c >> 1) & 1;
        unsigned sub_leaves = a;
        if (sub_leaves >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f->avx_vnni = (a >> 4) & 1;
        }
        __cpuid_count(7, 0, a, b, c, d);
        f->amx_tile = (d >> 24) & 1;
        f->amx_int8 = (d >> 25) & 1;
    }
    /* A feature the OS does not save the registers of is unusable. */
    if (!f->os_ymm) { f->avx = f->avx2 = f->fma = f->avx_vnni = 0; }
    if (!f->os_zmm) { f->avx512f = f->avx512bw = f->avx512vl = f->avx512dq = f->avx512_vnni = f->avx512_vbmi = 0; }
    /* XTILECFG and XTILEDATA (XCR0 bits 17, 18) enabled, and the permission granted */
    if (f->amx_tile && f->amx_int8 && (xcr0 & 0x60000) == 0x60000) {
        static int granted = -1;
        if (granted < 0) granted = request_amx_permission();
        f->os_amx = granted;
    }
    if (!f->os_amx) f->amx_tile = f->amx_int8 = 0;
}

static int env_is_one(const char *name) {
    const char *v = getenv(name);
    return v != NULL && strcmp(v, "1") == 0;
}

static int avx512_vnni_level(const dnnq_cpu_features_t *f) {
    return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512_vnni;
}

/* Whether the emulated kernel sets run (dispatch.c picks them, dnnq_cpu_detect reports their
 * level): the process started with DNNQ_EMULATE_AMX=1 / DNNQ_EMULATE_AVX_VNNI=1 on a CPU that
 * runs the emulated kernels' instructions (AVX512-VNNI; AVX-VNNI: one without AVX-VNNI of its
 * own), so a variable set on another CPU changes nothing.  Read once per module: the same in
 * every module of the process, since the environment and the CPU are. */
int dnnq_amx_emulation(void) {
    static int on = -1;
    if (on < 0) {
        dnnq_cpu_features_t f;
        detect_hardware(&f);
        on = env_is_one("DNNQ_EMULATE_AMX") && avx512_vnni_level(&f);
    }
    return on;
}

int dnnq_avx_vnni_emulation(void) {
    static int on = -1;
    if (on < 0) {
        dnnq_cpu_features_t f;
        detect_hardware(&f);
        on = env_is_one("DNNQ_EMULATE_AVX_VNNI") && !f.avx_vnni && f.avx2 && f.fma &&
             f.avx512vl && f.avx512_vnni;
    }
    return on;
}

void dnnq_cpu_detect(dnnq_cpu_features_t *f) {
    detect_hardware(f);
    if (dnnq_amx_emulation()) {  /* the AMX level over the tile emulation (amx_emulate.h) */
        f->amx_tile = f->amx_int8 = f->os_amx = 1;
        f->amx_emulated = 1;
    }
    if (dnnq_avx_vnni_emulation()) {  /* the EVEX-encoded ymm vpdpbusd (gemm_avxvnni.c) */
        f->avx_vnni = 1;
        f->avx_vnni_emulated = 1;
    }
}
#else
void dnnq_cpu_detect(dnnq_cpu_features_t *f) { memset(f, 0, sizeof(*f)); }
int dnnq_amx_emulation(void) { return 0; }
int dnnq_avx_vnni_emulation(void) { return 0; }
#endif

int dnnq_cpu_best_isa(const dnnq_cpu_features_t *f) {
    if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512_vnni)
        return f->amx_tile && f->amx_int8 ? DNNQ_ISA_AVX512_CORE_AMX : DNNQ_ISA_AVX512_CORE_VNNI;
    if (f->avx2 && f->fma && f->avx_vnni) return DNNQ_ISA_AVX2_VNNI;
    if (f->avx2 && f->fma) return DNNQ_ISA_AVX2;
    return DNNQ_ISA_DEFAULT;
}
