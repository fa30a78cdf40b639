"""dnnq.set_int8_numerics (SPEC section 9): "avx2" reproduces oneDNN run without VNNI.

The comparison runs in subprocesses (tests/_avx2_numerics_cases.py) because oneDNN reads
ONEDNN_MAX_CPU_ISA once per process; each run must also find problems where the exact numerics
differ from oneDNN's, so that the emulation is what makes the results equal."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS

HERE = os.path.dirname(os.path.abspath(__file__))
LEVELS = [lvl for lvl in ("avx2", "default") if lvl in dnnq.available_isa_levels()]


@pytest.fixture(autouse=True)
def _restore_numerics():
    yield
    dnnq.set_int8_numerics("exact")


def _run_cases(family, isa, cases, seed):
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", DNNL_MAX_CPU_ISA="AVX2",
               OMP_NUM_THREADS="2")
    env.pop("DNNQ_MAX_CPU_ISA", None)
    r = subprocess.run([sys.executable, "-P", os.path.join(HERE, "_avx2_numerics_cases.py"),
                        "--family", family, "--cases", str(cases), "--seed", str(seed),
                        "--dnnq-isa", isa], capture_output=True, text=True, env=env,
                       timeout=600)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode == 0 and out.startswith("ok "), out[-3000:]
    _, n, elements, saturated = out.split()
    return int(n), int(elements), int(saturated)


@pytest.mark.parametrize("isa", LEVELS)
@pytest.mark.parametrize("family,cases", [("matmul", 40), ("ip", 25), ("gemm", 40),
                                          ("conv", 50), ("rnn", 12),
                                          ("fused", 12)])
def test_matches_onednn_without_vnni(family, cases, isa):
    n, elements, saturated = _run_cases(family, isa, cases, seed=11 + len(family))
    assert n >= cases and elements > 0  # n: comparisons (an RNN case has several outputs)
    # most problems saturate some pair: exact numerics would have given another result
    assert saturated >= cases // 3, (n, saturated)


def test_mode_api():
    assert dnnq.get_int8_numerics() == "exact"
    ctx = dnnq.set_int8_numerics("avx2")
    assert dnnq.get_int8_numerics() == "avx2"
    assert dnnq.get_effective_cpu_isa() in ("avx2", "default")
    with ctx:
        pass
    assert dnnq.get_int8_numerics() == "exact"  # leaving restores the mode before the call
    with dnnq.set_int8_numerics("avx2"):
        with dnnq.set_int8_numerics("exact"):
            assert dnnq.get_int8_numerics() == "exact"
        assert dnnq.get_int8_numerics() == "avx2"
    assert dnnq.get_int8_numerics() == "exact"
    for bad in ("AVX2", "vnni", None, 2, b"avx2"):
        with pytest.raises(dnnq.InvalidArguments, match="set_int8_numerics.*'exact', 'avx2'"):
            dnnq.set_int8_numerics(bad)
    assert dnnq.get_int8_numerics() == "exact"


def _saturating_matmul():
    src = np.full((2, 4), 255, np.uint8)
    wei = np.full((4, 3), 127, np.int8)   # each pair: 2 * 255 * 127 = 64770 > 32767
    return src, wei


def test_primitives_keep_their_numerics():
    src, wei = _saturating_matmul()
    descs = (MD(src.shape, "u8"), MD(wei.shape, "s8"), MD((2, 3), "s32"))
    exact = dnnq.MatMul(*descs)
    with dnnq.set_int8_numerics("avx2"):
        emulated = dnnq.MatMul(*descs)
    assert "avx2_numerics" in emulated.impl_info and "avx2_numerics" not in exact.impl_info
    want_exact = src.astype(np.int64) @ wei.astype(np.int64)
    np.testing.assert_array_equal(exact.execute({DNNL_ARG_SRC: src, DNNL_ARG_WEIGHTS: wei}),
                                  want_exact)
    # vpmaddubsw: two saturated pairs of 32767 per output
    np.testing.assert_array_equal(
        emulated.execute({DNNL_ARG_SRC: src, DNNL_ARG_WEIGHTS: wei}), np.full((2, 3), 65534))
    # weights packed by one are refused by the other (their owner differs)
    with pytest.raises(dnnq.InvalidArguments, match="packed"):
        emulated.execute({DNNL_ARG_SRC: src, DNNL_ARG_WEIGHTS: exact.prepare_weights(wei)})


def test_gemm_function_follows_mode():
    src, wei = _saturating_matmul()
    with dnnq.set_int8_numerics("avx2"):
        got = dnnq.gemm_u8s8s32(src, wei)
    np.testing.assert_array_equal(got, np.full((2, 3), 65534))
    np.testing.assert_array_equal(dnnq.gemm_u8s8s32(src, wei),
                                  src.astype(np.int64) @ wei.astype(np.int64))


def test_gemm_s8s8s32_outside_the_reproduced_cases_refused():
    a, b = np.ones((2, 4), np.int8), np.ones((4, 3), np.int8)
    with dnnq.set_int8_numerics("avx2"):
        for kw in (dict(alpha=0.5), dict(beta=0.5), dict(ao=1), dict(bo=-1)):
            with pytest.raises(dnnq.Unimplemented, match="gemm_s8s8s32.*set_int8_numerics"):
                dnnq.gemm_s8s8s32(a, b, np.zeros((2, 3), np.int32), **kw)
        dnnq.gemm_u8s8s32(a.view(np.uint8), b, alpha=0.5, ao=1)  # reproduced: accepted


def test_weights_zero_points_refused():
    attr = PrimitiveAttr()
    attr.set_zero_points_mask(DNNL_ARG_WEIGHTS, 0)
    with dnnq.set_int8_numerics("avx2"):
        with pytest.raises(dnnq.Unimplemented, match="weights zero points.*set_int8_numerics"):
            dnnq.Convolution(MD((1, 8, 5, 5), "u8"), MD((8, 8, 3, 3), "s8"),
                             MD((1, 8, 5, 5), "s32"), strides=(1, 1), padding_l=(1, 1),
                             padding_r=(1, 1), attr=attr)


def test_halved_weights_pickle_as_given():
    """s8-source convolution weights are halved at packing; pickling keeps the caller's."""
    import pickle
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (8, 8, 3, 3)).astype(np.int8)
    x = rng.integers(-128, 128, (1, 8, 5, 5)).astype(np.int8)
    with dnnq.set_int8_numerics("avx2"):
        p = dnnq.Convolution(MD(x.shape, "s8"), MD(w.shape, "s8"), MD((1, 8, 5, 5), "f32"),
                             strides=(1, 1), padding_l=(1, 1), padding_r=(1, 1))
    pw = p.prepare_weights(w)
    want = p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: pw})
    p2, pw2 = pickle.loads(pickle.dumps((p, pw)))
    np.testing.assert_array_equal(p2.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: pw2}), want)
    # the model: twice the convolution with rne(w / 2)
    from _conv_ref import conv_acc
    half = np.rint(w * 0.5).astype(np.int8)
    np.testing.assert_array_equal(want, 2 * conv_acc(x, half, (1, 1), (1, 1), (1, 1)))
