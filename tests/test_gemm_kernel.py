"""The raw s32 GEMM of the blocked pipeline (packing + micro-kernel + driver) against numpy
int64 math, on every dispatch level the machine has."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from dnnq.primitives._plan import s32_gemm, PackedGemmWeights
from dnnq.primitives._kernels import _gemm
from conftest import ISA_LEVELS


def _rand(rng, dt, shape):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape, dtype=dt)


@pytest.mark.parametrize("isa_name", ISA_LEVELS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(M=st.integers(1, 40), K=st.integers(1, 300), N=st.integers(1, 150),
       s8=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_gemm_matches_numpy(isa_name, M, K, N, s8, seed):
    rng = np.random.default_rng(seed)
    a = _rand(rng, np.int8 if s8 else np.uint8, (M, K))
    b = _rand(rng, np.int8, (K, N))
    ref = a.astype(np.int64) @ b.astype(np.int64)
    out = s32_gemm(a, b, isa=isa_name)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("isa_name", ISA_LEVELS)
@pytest.mark.parametrize("K", [1, 3, 4, 5, 63, 64, 65, 255, 1000])
@pytest.mark.parametrize("M", [7, 12, 40])
def test_extreme_values(isa_name, K, M):
    # 255 x -128 everywhere: the largest-magnitude products, and no s16 saturation anywhere
    # (M: the row kernels, and AMX's one- and two-row-block tiles)
    N = 70
    a = np.full((M, K), 255, np.uint8)
    b = np.full((K, N), -128, np.int8)
    np.testing.assert_array_equal(s32_gemm(a, b, isa=isa_name), np.full((M, N), -32640 * K))
    a8 = np.full((M, K), -128, np.int8)
    np.testing.assert_array_equal(s32_gemm(a8, b, isa=isa_name), np.full((M, N), 16384 * K))
    a8[:, ::2] = 127
    ref = a8.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(s32_gemm(a8, b, isa=isa_name), ref)


@pytest.mark.parametrize("isa_name", ISA_LEVELS)
def test_multithreaded_large(isa_name):
    rng = np.random.default_rng(7)
    a = _rand(rng, np.uint8, (97, 517))
    b = _rand(rng, np.int8, (517, 200))
    ref = a.astype(np.int64) @ b.astype(np.int64)
    for threads in (1, 2, 3):
        np.testing.assert_array_equal(s32_gemm(a, b, isa=isa_name, num_threads=threads), ref)


def test_packing_layout_and_colsum():
    rng = np.random.default_rng(3)
    K, N = 9, 70
    w = _rand(rng, np.int8, (K, N))
    packed, colsum = _gemm.pack_weights_vnni(w)
    K4 = (K + 3) // 4
    # the panels, then 16 zero k-group rows of slack (read past the last panel by AMX B tiles)
    assert packed.size == 2 * K4 * 4 * 64 + 16 * 4 * 64
    assert not packed[2 * K4 * 4 * 64:].any()
    blocks = packed[:2 * K4 * 4 * 64].reshape(2, K4, 64, 4)
    wpad = np.zeros((K4 * 4, 128), np.int8)
    wpad[:K, :N] = w
    for p in range(2):
        for k4 in range(K4):
            np.testing.assert_array_equal(blocks[p, k4], wpad[4 * k4:4 * k4 + 4, 64 * p:64 * p + 64].T)
    np.testing.assert_array_equal(colsum, w.astype(np.int64).sum(0))
    # strided (transposed) input packs the same
    p2, c2 = _gemm.pack_weights_vnni(np.ascontiguousarray(w.T).T)
    np.testing.assert_array_equal(p2, packed)
    assert PackedGemmWeights(w).nbytes == packed.nbytes + colsum.nbytes


@pytest.mark.parametrize("isa_name", ISA_LEVELS)
@pytest.mark.parametrize("K", [1, 3, 4, 5, 15, 16, 17, 63, 64, 65])
@pytest.mark.parametrize("N", [1, 15, 63, 64, 65, 130])
def test_panel_packing_of_a_batch_is_the_layout(isa_name, K, N):
    """PackedGemmWeights' batch packer (a panel packer per level, AVX-512's copying 4-row
    groups) writes the layout above, checked element by element against an independent
    model, for row-major, transposed and strided batches; slack between batches zeroed."""
    from dnnq.primitives import _dispatch
    from dnnq.primitives._kernels import _gemm_api
    from dnnq.primitives._kernels._gemm_exec import aligned_empty
    rng = np.random.default_rng(K * 1000 + N)
    B = 3
    base = _rand(rng, np.int8, (B, 2 * K, 2 * N))
    K4, P = (K + 3) // 4, (N + 63) // 64
    stride = _gemm.packed_size(K, N)
    for w in (np.ascontiguousarray(base[:, :K, :N]),                    # row-major
              np.ascontiguousarray(base[:, :K, :N].transpose(0, 2, 1)).transpose(0, 2, 1),
              base[:, ::2, ::2][:, :K, :N]):                           # strided both ways
        packed = aligned_empty(B * stride, np.int8)
        packed[:] = 77  # every byte must be written
        colsum = np.empty((B, N), np.int32)
        _gemm_api.pack_vnni_batch(w, packed, colsum, stride, _dispatch.kernel_isa_code(isa_name))
        for b in range(B):
            wpad = np.zeros((K4 * 4, P * 64), np.int8)
            wpad[:K, :N] = w[b]
            want = wpad.reshape(K4, 4, P, 64).transpose(2, 0, 3, 1).reshape(-1)
            got = packed[b * stride:(b + 1) * stride]
            np.testing.assert_array_equal(got[:want.size], want)
            assert not got[want.size:].any()
            np.testing.assert_array_equal(colsum[b], w[b].astype(np.int64).sum(0))
