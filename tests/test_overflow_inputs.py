"""Values beyond the machine types at the public API (found by fuzzing): numbers that do not
fit a double or an f32, descriptors beyond the addressable size, thread counts beyond any
machine.  Each raises InvalidArguments naming the argument -- never OverflowError, never a
crash in a later execute."""
import subprocess
import sys

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PostOps, PrimitiveAttr

HUGE = 10 ** 400  # a Python int float() cannot convert


@pytest.mark.parametrize("v", [HUGE, -HUGE, 2 ** 1024])
def test_scalars_beyond_float_raise_invalid_arguments(v):
    """r09: float(10**400) raised OverflowError out of the attribute setters."""
    cases = [
        ("alpha", lambda: PostOps().append_eltwise("relu", v)),
        ("beta", lambda: PostOps().append_eltwise("linear", 1.0, v)),
        ("sum scale", lambda: PostOps().append_sum(v)),
        ("alpha", lambda: dnnq.Eltwise("relu", MD((2,), "f32"), MD((2,), "f32"), v)),
        ("rnn data scale", lambda: PrimitiveAttr().set_rnn_data_qparams(v, 0.0)),
        ("rnn data shift", lambda: PrimitiveAttr().set_rnn_data_qparams(1.0, v)),
        ("pct", lambda: dnnq.calibrate.percentile(np.ones(4, np.float32), "u8", pct=v)),
    ]
    for name, make in cases:
        with pytest.raises(dnnq.InvalidArguments, match=name):
            make()


def test_descriptors_beyond_the_addressable_size():
    """r09: a 2^63-element descriptor reached the kernels' int64 plans (OverflowError)."""
    for dims, dt in (((2 ** 63,), "f32"), ((2 ** 62, 2 ** 62), "u8"), ((2 ** 61,), "s32"),
                     ((2 ** 63,), "u8"), ((3, 2 ** 62), "s8")):
        with pytest.raises(dnnq.InvalidArguments, match=r"dims: .*2\^63 - 1 bytes"):
            MD(dims, dt)
    # the largest ones are accepted, and primitives build their plans over them
    assert MD((2 ** 63 - 1,), "u8").nelems == 2 ** 63 - 1
    big = MD((2 ** 61 - 1,), "f32")
    dnnq.Eltwise("relu", big, big)
    dnnq.Reorder(MD((2 ** 30, 2 ** 30), "f32"), MD((2 ** 30, 2 ** 30), "s8"))


def test_thread_count_bounds():
    """r09 / r12: set_num_threads(2**31) leaked OverflowError, 100000 was accepted and the
    next execute died creating the threads."""
    old = dnnq.get_num_threads()
    try:
        for bad in (2 ** 31, 2 ** 64, 100000, dnnq.MAX_NUM_THREADS + 1):
            with pytest.raises(dnnq.InvalidArguments, match=r"set_num_threads: .*\[1, 1024\]"):
                dnnq.set_num_threads(bad)
            assert dnnq.get_num_threads() == old
        dnnq.set_num_threads(dnnq.MAX_NUM_THREADS)
        assert dnnq.get_num_threads() == dnnq.MAX_NUM_THREADS
    finally:
        dnnq.set_num_threads(old)


_THREADS_SCRIPT = r"""
import numpy as np, dnnq
from dnnq import MemoryDesc as MD, DNNL_ARG_SRC
try:
    dnnq.set_num_threads(100000)
except dnnq.InvalidArguments:
    pass
# plain pooling: one work item per (n, c, od, oh), so 120000 items for the thread team
x = np.arange(120000, dtype=np.float32).reshape(1, 120000, 1) - 1000
p = dnnq.Pooling("max", MD(x.shape, "f32"), MD(x.shape, "f32"), kernel=1, strides=1)
y = p.execute({DNNL_ARG_SRC: x})
assert np.array_equal(y, x)
print("ok", dnnq.get_num_threads())
"""


def test_huge_thread_count_then_execute():
    """r12: after asking for 100000 threads, the next (parallel) execute still runs."""
    # -P: never the uncompiled dnnq/ of the checkout (CI runs from its root)
    r = subprocess.run([sys.executable, "-P", "-c", _THREADS_SCRIPT], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("ok"), (r.returncode, r.stdout,
                                                            r.stderr[-2000:])


@pytest.mark.parametrize("bad", [10**400, -10**400, "1", b"1", True, None, float("nan"), 1e39])
def test_gemm_alpha_beta_must_be_finite_f32_reals(bad):
    """oneDNN's GEMM takes alpha / beta as float: anything that is not a real number of the f32
    range raises InvalidArguments naming the argument (no OverflowError, no silent str)."""
    A = np.ones((2, 3), np.uint8)
    B = np.ones((3, 4), np.int8)
    for name in ("alpha", "beta"):
        kw = {name: bad}
        if name == "beta":
            kw["C"] = np.zeros((2, 4), np.int32)
        with pytest.raises(dnnq.InvalidArguments, match=name):
            dnnq.gemm_u8s8s32(A, B, **kw)
