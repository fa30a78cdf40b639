"""Where oneDNN 3.2's int8 GEMM (dnnl_gemm_u8s8s32 / dnnl_gemm_s8s8s32) rounds: its K blocks.

oneDNN's x64 GEMM driver (src/cpu/x64/gemm/gemm_driver.cpp) computes C in K blocks.  With
alpha = 1 and beta in {0, 1} everything is integer (wrapping s32 sums), so the blocking does not
show.  Otherwise each block's s32 accumulator (offsets ao / bo included, over that block's k
only) goes through `add_results`: C = round(f64(alpha_f32) * acc + f64(beta_eff) * C) with
beta_eff = beta for the first block and 1 afterwards, so a long K is rounded once per block.
When oneDNN splits K across threads (few rows, K >= 3072, 6 or more threads), each thread's
K slice is such a chain of its own (the later slices with beta = 0 and no co) and the slices
are summed as integers.  This module reproduces those decisions from the problem size, the
thread count and the ISA level's blocking constants (gemm_info.cpp); see docs/matmul.md.

Names follow oneDNN's column-major view: its m is the row-major N, its n the row-major M.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class _Traits:
    um: int           # micro-tile rows (column-major m) of the copy kernels
    uk: int           # k granularity of the copy kernels
    bm: int
    bk: int           # K block
    bk_traditional: int  # K up to this is one block
    veclen: int       # s32 lanes per vector (get_vector_length<int32_t>)
    avx512: bool      # mayiuse(avx512_core)


# oneDNN's int8 blocking per ISA (gemm_info.cpp), keyed by the dnnq level that matches it
_TRAITS = {
    "avx512_core_amx": _Traits(um=32, uk=64, bm=9984, bk=1536, bk_traditional=0, veclen=16,
                               avx512=True),
    "avx512_core_vnni": _Traits(um=48, uk=1, bm=9984, bk=1536, bk_traditional=384, veclen=16,
                                avx512=True),
    "avx2_vnni": _Traits(um=24, uk=1, bm=9984, bk=768, bk_traditional=256, veclen=8,
                         avx512=False),
    "avx2": _Traits(um=16, uk=1, bm=9984, bk=384, bk_traditional=256, veclen=8, avx512=False),
    "default": _Traits(um=16, uk=1, bm=4096, bk=256, bk_traditional=256, veclen=4,
                       avx512=False),
}


def _div_up(a, b):
    return -(-a // b)


def _rnd_up(a, b):
    return _div_up(a, b) * b


def _k_padd(k, bk, t):
    """gemm_driver.cpp get_k_padd: the K block of a (thread's) K range."""
    if k <= t.bk_traditional:
        return max(128, _rnd_up(k, t.uk))
    if k < 2 * bk:
        return _rnd_up((k + 1) // 2, t.uk)
    return bk


def _adjust_thread_count(m, n, k, nthrs, t):
    """gemm_driver.cpp adjust_thread_count for s32 C (small problems use fewer threads)."""
    if not t.avx512 and t.veclen == 8:  # "is_only_avx2"
        if m > 10 * n and n < nthrs and m // nthrs < t.veclen * 3:
            nthrs = max(m // t.veclen // 3, 1)
    gemm_cycles = m * n * k / (2.0 * 2.0 * t.veclen) * 8.0
    i = nthrs
    if nthrs <= 4:
        if gemm_cycles < 3.0e3:
            return 1
        while i > 1:
            if 3.0e3 * i < gemm_cycles * (i - 1):
                break
            i -= 1
    else:
        if gemm_cycles < 4.0e3 + 2 * 5.0e2:
            return 1
        while i > 1:
            if (4.0e3 + i * 5.0e2) * i < gemm_cycles * (i - 1):
                break
            i -= 2 if i < 10 else 4 if i < 30 else 8
    return max(i, 1)


def _choose_blocking(size, nthr, block_init, align):
    thread = _div_up(size, nthr)
    num_blk = _div_up(thread, block_init)
    block = _rnd_up(_div_up(thread, num_blk), align)
    thread = num_blk * block
    if thread * nthr > size:
        nthr = _div_up(size, thread)
    return thread, nthr, block


def _k_partition(m, n, k, nthrs, t):
    """set_thread_opts_pack(do_k_blocking, do_m_blocking, no n blocking) as the driver calls
    it for int8 with n <= 128 and k >= 3072: (nthr_k, thread_k, block_k) when K is split
    across threads (nthr_k > 1 and nthr_m > 1), else None."""
    kblk = 384  # int8 with m blocking only
    nthr_k = 1
    if m // 64 + n // 64 < nthrs:
        for nk in range(1, 5):
            if k < (kblk + 1) * nk:
                break
            if nthrs % nk == 0:
                nthr_k = nk
        if nthr_k == 1 and nthrs > 1:  # sacrifice one thread and try again
            nthrs -= 1
            for nk in range(1, 5):
                if k < (kblk + 1) * nk:
                    break
                if nthrs % nk == 0:
                    nthr_k = nk
    thread_k, nthr_k, block_k = _choose_blocking(k, nthr_k, t.bk, max(t.uk, 4))
    # partition_2d_minblk with min_n = n: only m is split, in blocks of at least um
    nthr = nthrs // nthr_k
    nthr_m = 1 if max(1, m // t.um) == 1 else min(_div_up(m, t.um), nthr)
    _, nthr_m, _ = _choose_blocking(m, nthr_m, t.bm, t.um)
    if nthr_k > 1 and nthr_m > 1:
        return nthr_k, thread_k, block_k
    return None


def _shared_a_copy(m, n, nthrs, a_offset, b_offset, t):
    """set_thread_opts_nopack's choice of the shared-A-copy driver (parallel_a_copy).  Its
    oneDNN names: ao is the offset of its A (the row-major B), bo of its B (row-major A)."""
    if t.avx512:
        if m >= 1000 and n >= nthrs * 68:
            return True
    elif m >= 1000 and n >= 4000:
        return True
    return a_offset != 0 and (b_offset != 0 or t.avx512)


def k_plan(isa, M, N, K, alpha, beta, nthreads, ao=0, bo=0, s8_a=False):
    """oneDNN's K blocks for a row-major M x N x K int8 GEMM at dnnq ISA level `isa`.

    alpha and beta are the f32 values oneDNN uses; ao / bo the row-major A / B offsets;
    s8_a: A is s8 (gemm_s8s8s32).  Returns a list of slices, each a list of blocks
    (k0, k1, rounded): slice 0 starts from beta * C and gets co; the others start from 0 and
    are added as s32.  A rounded block is C = round(alpha * acc + beta_eff * C) (beta_eff =
    beta for a slice's first block, else 1); the others are s32 sums C = acc (+ C).
    """
    t = _TRAITS[isa]
    m, n = N, M  # oneDNN's column-major view
    nthr = _adjust_thread_count(m, n, K, nthreads, t) if nthreads > 1 else 1
    slices = [(0, K, t.bk)]
    shared_a = False
    if n <= 128 and K >= 3072 and nthr > 1 and (part := _k_partition(m, n, K, nthr, t)):
        nthr_k, thread_k, block_k = part
        slices = [(i * thread_k, min(K, (i + 1) * thread_k), block_k)
                  for i in range(nthr_k) if i * thread_k < K]
    elif nthr > 1:
        # its B is the row-major A: an s8 A is copied as u8 with offset ao + 128 (not AMX)
        b_offset = ao + 128 if s8_a and isa != "avx512_core_amx" else ao
        shared_a = _shared_a_copy(m, n, nthr, bo, b_offset, t)
    plan = []
    for i, (s0, s1, bk) in enumerate(slices):
        beta_s = beta if i == 0 else 0.0
        if alpha == 1.0 and beta_s in (0.0, 1.0):
            plan.append([(s0, s1, False)])
            continue
        kp = _k_padd(s1 - s0, bk, t)
        blocks = [(k0, min(s1, k0 + kp), True) for k0 in range(s0, s1, kp)]
        if shared_a and alpha == 1.0 and len(blocks) > 1:
            # parallel_a_copy decides the C buffer per block: with beta_eff = 1 the later
            # blocks are plain s32 sums (they wrap instead of saturating)
            blocks = [blocks[0], (blocks[1][0], s1, False)]
        plan.append(blocks)
    return plan
