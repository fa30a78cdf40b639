"""CPU feature detection and OpenMP thread control."""
from dnnq.primitives._kernels._kernels cimport (
    dnnq_cpu_features_t, dnnq_cpu_detect, dnnq_cpu_best_isa,
)

cimport openmp


def cpu_features():
    """The CPU features dnnq looks at, as detected by cpuid/xgetbv (dict of bool)."""
    cdef dnnq_cpu_features_t f
    dnnq_cpu_detect(&f)
    return {
        "sse4_1": bool(f.sse41), "avx": bool(f.avx), "avx2": bool(f.avx2), "fma": bool(f.fma),
        "avx512f": bool(f.avx512f), "avx512bw": bool(f.avx512bw), "avx512vl": bool(f.avx512vl),
        "avx512dq": bool(f.avx512dq), "avx512_vnni": bool(f.avx512_vnni),
        "avx_vnni": bool(f.avx_vnni), "os_saves_ymm": bool(f.os_ymm),
        "os_saves_zmm": bool(f.os_zmm), "amx_tile": bool(f.amx_tile),
        "amx_int8": bool(f.amx_int8), "os_grants_amx": bool(f.os_amx),
        "avx512_vbmi": bool(f.avx512_vbmi),
        # DNNQ_EMULATE_AMX=1: the AMX level's kernels over a software tile unit (tests)
        "amx_emulated": bool(f.amx_emulated),
        # DNNQ_EMULATE_AVX_VNNI=1: the avx2_vnni level's kernels on an AVX512-VNNI CPU (tests)
        "avx_vnni_emulated": bool(f.avx_vnni_emulated),
    }


def best_isa_level():
    """Highest ISA level (0 default .. 4 avx512_core_amx) this CPU can run."""
    cdef dnnq_cpu_features_t f
    dnnq_cpu_detect(&f)
    return dnnq_cpu_best_isa(&f)


def set_num_threads(int n):
    openmp.omp_set_num_threads(n)


def get_num_threads():
    return openmp.omp_get_max_threads()
