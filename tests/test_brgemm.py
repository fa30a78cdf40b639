"""The batch-reduce micro-kernel (brgemm) on every ISA level against numpy int64:
c (+)= sum over (A_i, B_i) pairs, A dense or given by row pointers (with a shared padding
row), every row count up to the kernel's, K tails 1..3 and K below / at / past the vector
blocks, u8 and s8 (XOR +128) sources, overwrite and accumulate."""
import numpy as np
import pytest

import dnnq
from dnnq.primitives import _dispatch
from dnnq.primitives._kernels import _gemm
from dnnq.primitives import _plan


def _panel(w):
    """One packed 64-column panel of a (K, <=64) s8 matrix (zero padded)."""
    packed, _ = _gemm.pack_weights_vnni(w)
    K4 = (w.shape[0] + 3) // 4
    return packed[: max(K4, 1) * 256].copy()


def source_bytes(rng, base_len, pad_off, pad_len, s8):
    """Random u8 / s8 source bytes whose [pad_off, pad_off + pad_len) is a padding row: one
    zero-point value repeated (what an implicit-GEMM convolution points padded taps at)."""
    src_dt = np.int8 if s8 else np.uint8
    lo, hi = (-128, 128) if s8 else (0, 256)
    vals = rng.integers(lo, hi, base_len).astype(src_dt)
    vals[pad_off:pad_off + pad_len] = src_dt(rng.integers(lo, hi))
    return vals


def _run_case(isa, rng, mr, Ks, modes, s8, accumulate, ncols=64, width=64):
    code = _plan.ISA_CODE[isa]
    base_len, pad_off = 4096, 4096 - 600
    base_vals = source_bytes(rng, base_len, pad_off, 512, s8)
    base = base_vals.view(np.uint8)
    pairs, ref = [], np.zeros((mr, 64), np.int64)
    for K, mode in zip(Ks, modes):
        w = rng.integers(-128, 128, (K, ncols)).astype(np.int8)
        panel = _panel(w)
        wf = np.zeros((K, 64), np.int64)
        wf[:, :ncols] = w
        if mode == "dense":
            lda = K + int(rng.integers(0, 9))
            off = int(rng.integers(0, 200))
            offs = off + lda * np.arange(mr)
            pairs.append((None, (off, lda), panel, K))
        else:
            offs = rng.integers(0, pad_off - K, mr).astype(np.int64)
            if mode == "padded":  # some rows point at the shared padding row
                offs[rng.random(mr) < 0.5] = pad_off
            pairs.append((offs.astype(np.int64), None, panel, K))
        a = np.stack([base_vals[o:o + K] for o in offs]).astype(np.int64)
        if s8:
            a = a + 128  # the kernel reads s8 XOR 0x80 = s8 + 128
        ref += a @ wf
    c0 = rng.integers(-2**20, 2**20, (mr, 64)).astype(np.int32)
    c = c0.copy()
    if _gemm.brgemm_micro_kernel(code, base, pairs, s8, accumulate, c, width) is None:
        return False  # no narrow kernel at this level
    expect = ref + (c0 if accumulate else 0)
    expect = (expect.astype(np.uint64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(c[:, :width], expect[:, :width])
    return True


@pytest.mark.parametrize("s8", [False, True])
@pytest.mark.parametrize("accumulate", [False, True])
def test_brgemm_rows_and_tails(isa, s8, accumulate):
    rng = np.random.default_rng(7)
    mr_max = _gemm.brgemm_rows(_plan.ISA_CODE[isa])
    for mr in range(1, mr_max + 1):
        for K in (1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 67, 130):
            _run_case(isa, rng, mr, [K], ["dense"], s8, accumulate)
            _run_case(isa, rng, mr, [K], ["indirect"], s8, accumulate)


@pytest.mark.parametrize("s8", [False, True])
def test_brgemm_pairs_mixed(isa, s8):
    """Several pairs of different K and A modes in one call (LSTM: x.Wx + h.Wh; conv: taps,
    some in the padding); narrow panels (ncols < 64) have zero padded columns."""
    rng = np.random.default_rng(11)
    mr_max = _gemm.brgemm_rows(_plan.ISA_CODE[isa])
    for trial in range(30):
        mr = int(rng.integers(1, mr_max + 1))
        n = int(rng.integers(1, 10))
        Ks = [int(k) for k in rng.integers(1, 150, n)]
        modes = [str(m) for m in rng.choice(["dense", "indirect", "padded"], n)]
        _run_case(isa, rng, mr, Ks, modes, s8, bool(rng.integers(0, 2)),
                  ncols=int(rng.integers(1, 65)))


def test_brgemm_zero_pairs_and_extremes(isa):
    """No pair: overwrite gives zeros, accumulate leaves c as it is; 255 x -128 over long K
    wraps as the s32 hardware accumulators do."""
    code = _plan.ISA_CODE[isa]
    mr = _gemm.brgemm_rows(code)
    c = np.full((mr, 64), 5, np.int32)
    _gemm.brgemm_micro_kernel(code, np.zeros(8, np.uint8), [], False, True, c)
    assert (c == 5).all()
    _gemm.brgemm_micro_kernel(code, np.zeros(8, np.uint8), [], False, False, c)
    assert (c == 0).all()
    K = 4096
    base = np.full(K * mr, 255, np.uint8)
    w = np.full((K, 64), -128, np.int8)
    panel = _panel(w)
    pairs = [(None, (0, K), panel, K)] * 20  # 20 * 4096 * 255 * -128 overflows s32
    _gemm.brgemm_micro_kernel(code, base, pairs, False, False, c)
    expect = np.int64(20 * K * 255 * -128)
    expect = np.array([expect]).astype(np.uint64).astype(np.uint32).view(np.int32)[0]
    assert (c == expect).all()


def test_brgemm_levels_cover_the_cpu():
    # the ISA sweep reaches every level this CPU runs (conftest's `isa` fixture)
    assert dnnq.get_effective_cpu_isa() in _dispatch.available_isa_levels()


@pytest.mark.parametrize("width", [32, 16])
@pytest.mark.parametrize("s8", [False, True])
def test_brgemm_narrow_panels(isa, width, s8):
    """The half / quarter-width kernels (panels of <= 32 / 16 columns: the first columns of c
    only), every row count, K tails, dense / indirect / padded A, overwrite and accumulate."""
    rng = np.random.default_rng(17)
    mr_max = _gemm.brgemm_rows(_plan.ISA_CODE[isa])
    for mr in range(1, mr_max + 1):
        for K in (1, 3, 4, 5, 64, 67):
            for accumulate in (False, True):
                ncols = int(rng.integers(1, width + 1))
                ran = _run_case(isa, rng, mr, [K, K + 4], ["dense", "padded"], s8, accumulate,
                                ncols=ncols, width=width)
                if not ran:
                    pytest.skip(f"no {width}-column kernel at {isa}")
