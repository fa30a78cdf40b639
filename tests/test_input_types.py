"""Inputs of the wrong Python type at the public API (issue 13, items 4 and 5): each raises
InvalidArguments (or Unimplemented for an attribute the primitive does not use) naming the
argument -- never a TypeError / AttributeError / ValueError from inside, never a value
silently read as something else (True as DNNL_ARG_SRC, "yes" as a true transa), never an
attribute accepted and then ignored."""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr
from dnnq import args as A

F = np.float32


# ------------------------------------------------------------------------- gemm flags


@pytest.mark.parametrize("bad", ["yes", "no", "", 1, 0, None, 1.0, [True], np.array(True)])
def test_gemm_trans_flags_must_be_bools(bad):
    a = np.ones((3, 3), np.uint8)
    b = np.ones((3, 3), np.int8)
    for name in ("transa", "transb"):
        with pytest.raises(dnnq.InvalidArguments, match=name):
            dnnq.gemm_u8s8s32(a, b, **{name: bad})
        with pytest.raises(dnnq.InvalidArguments, match=name):
            dnnq.gemm_s8s8s32(a.view(np.int8), b, **{name: bad})


def test_gemm_trans_flags_accept_bools_and_dnnl_letters():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (5, 3), dtype=np.uint8)  # stored (K, M) when transa
    b = rng.integers(-128, 128, (4, 5), dtype=np.int8)  # stored (N, K) when transb
    want = a.T.astype(np.int64) @ b.T.astype(np.int64)
    for ta, tb in ((True, True), (np.bool_(True), np.bool_(True)), ("T", "t")):
        got = dnnq.gemm_u8s8s32(a, b, transa=ta, transb=tb)
        assert np.array_equal(got, want), (ta, tb)
    got = dnnq.gemm_u8s8s32(a.T.copy(), b.T.copy(), transa="N", transb=False)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("bad", [None, 0, ["R"], np.array(["R"]), "X", "row"])
def test_gemm_offsetc_must_be_a_letter(bad):
    with pytest.raises(dnnq.InvalidArguments, match="offsetc"):
        dnnq.gemm_u8s8s32(np.ones((2, 3), np.uint8), np.ones((3, 4), np.int8), offsetc=bad)


def test_gemm_empty_n_with_row_offsets():
    """N = 0 with offsetc 'R' (0 row offsets): an empty C, not numpy's ValueError."""
    a = np.ones((2, 3), np.uint8)
    b = np.ones((3, 0), np.int8)
    for co in (None, np.zeros(0, np.int32)):
        out = dnnq.gemm_u8s8s32(a, b, offsetc="R", co=co)
        assert out.shape == (2, 0) and out.dtype == np.int32


# ------------------------------------------------------------------------- small setters


@pytest.mark.parametrize("bad", [None, "1", 1.5, True, -1, 3, 10 ** 400, [1]])
def test_set_verbose_takes_a_level(bad):
    old = dnnq.get_verbose()
    with pytest.raises(dnnq.InvalidArguments, match="set_verbose"):
        dnnq.set_verbose(bad)
    assert dnnq.get_verbose() == old  # unchanged by the refused call
    for level in (0, 1, 2, np.int64(0)):
        dnnq.set_verbose(level)
        assert dnnq.get_verbose() == int(level)
    dnnq.set_verbose(old)


@pytest.mark.parametrize("bad", [[1], (1, 2), None, 3.0, "ab"])
def test_logical_view_needs_an_array(bad):
    with pytest.raises(dnnq.InvalidArguments, match="physical array"):
        MD((2, 3, 4, 5), "f32", "nhwc").logical_view(bad)


def test_logical_view_of_channels_last():
    phys = np.arange(2 * 4 * 5 * 3, dtype=F).reshape(2, 4, 5, 3)
    v = MD((2, 3, 4, 5), "f32", "nhwc").logical_view(phys)
    assert v.shape == (2, 3, 4, 5) and np.array_equal(v, phys.transpose(0, 3, 1, 2))


# ------------------------------------------------------------------------- argument keys


def _matmul():
    p = dnnq.MatMul(MD((4, 8), "u8"), MD((8, 4), "s8"), MD((4, 4), "s32"))
    x = np.arange(32, dtype=np.uint8).reshape(4, 8)
    w = (np.arange(32, dtype=np.int64).reshape(8, 4) % 7 - 3).astype(np.int8)
    return p, {A.DNNL_ARG_SRC: x, A.DNNL_ARG_WEIGHTS: w}, "SRC"


def _matmul_packed():
    p, args, _ = _matmul()
    args[A.DNNL_ARG_WEIGHTS] = p.prepare_weights(args[A.DNNL_ARG_WEIGHTS])
    return p, args, "SRC"


def _conv():
    p = dnnq.Convolution(MD((1, 16, 4, 4), "u8", "nhwc"), MD((16, 16, 1, 1), "s8"),
                         MD((1, 16, 4, 4), "s32", "nhwc"), strides=[1, 1], padding_l=[0, 0],
                         padding_r=[0, 0])
    x = np.ascontiguousarray(np.arange(256, dtype=np.uint8).reshape(1, 4, 4, 16))
    w = np.ones((16, 16, 1, 1), np.int8)
    return p, {A.DNNL_ARG_SRC: x.transpose(0, 3, 1, 2), A.DNNL_ARG_WEIGHTS: p.prepare_weights(w)}, \
        "SRC"


def _eltwise():
    p = dnnq.Eltwise("relu", MD((2, 8), "f32"), MD((2, 8), "f32"))
    return p, {A.DNNL_ARG_SRC: np.linspace(-1, 1, 16, dtype=F).reshape(2, 8)}, "SRC"


def _binary():
    p = dnnq.Binary("add", MD((2, 8), "f32"), MD((2, 8), "f32"), MD((2, 8), "f32"))
    x = np.ones((2, 8), F)
    return p, {A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: x}, "SRC_1"


def _gru():
    T, N, C = 2, 1, 4
    attr = PrimitiveAttr().set_rnn_data_qparams(64.0, 128.0)
    p = dnnq.GRU("unidirectional_left2right", MD((T, N, C), "u8"), None,
                 MD((1, 1, C, 3, C), "s8"), MD((1, 1, C, 3, C), "s8"), MD((1, 1, 3, C), "f32"),
                 MD((T, N, C), "u8"), None, attr=attr)
    args = {A.DNNL_ARG_SRC_LAYER: np.full((T, N, C), 130, np.uint8),
            A.DNNL_ARG_WEIGHTS_LAYER: np.ones((1, 1, C, 3, C), np.int8),
            A.DNNL_ARG_WEIGHTS_ITER: np.ones((1, 1, C, 3, C), np.int8),
            A.DNNL_ARG_BIAS: np.zeros((1, 1, 3, C), F)}
    return p, args, "SRC_LAYER"


@pytest.mark.parametrize("make", [_matmul, _matmul_packed, _conv, _eltwise, _binary, _gru])
@pytest.mark.parametrize("bad_key", [True, 1.0, "1", None])
def test_argument_keys_must_be_ints(make, bad_key):
    """True == 1 == 1.0: a dict key True would be found as DNNL_ARG_SRC by the fast paths."""
    p, args, _ = make()
    want = p.execute(dict(args))
    want = {k: v.copy() for k, v in want.items()} if isinstance(want, dict) else want.copy()
    first = min(args)  # DNNL_ARG_SRC (1) / SRC_0 / SRC_LAYER: the id True and 1.0 alias
    bad = {(bad_key if k == first else k): v for k, v in args.items()}
    with pytest.raises(dnnq.InvalidArguments, match="key"):
        p.execute(bad)
    # numpy integer ids are ids: the same result as with ints
    got = p.execute({np.int64(k): v for k, v in args.items()})
    if isinstance(want, dict):
        assert all(np.array_equal(got[k], want[k]) for k in want)
    else:
        assert np.array_equal(got, want)


# ------------------------------------------------------------------------- unused attributes


def _non_rnn_constructors():
    c4 = MD((1, 4, 4, 4), "u8")
    f = MD((4, 4), "f32")
    geo = dict(strides=[1, 1], padding_l=[0, 0], padding_r=[0, 0])
    return {
        "MatMul": lambda a: dnnq.MatMul(MD((2, 4), "u8"), MD((4, 3), "s8"), MD((2, 3), "s32"),
                                        attr=a),
        "InnerProduct": lambda a: dnnq.InnerProduct(MD((2, 4), "u8"), MD((3, 4), "s8"),
                                                    MD((2, 3), "s32"), attr=a),
        "Convolution": lambda a: dnnq.Convolution(c4, MD((4, 4, 1, 1), "s8"),
                                                  MD((1, 4, 4, 4), "s32"), attr=a, **geo),
        "Deconvolution": lambda a: dnnq.Deconvolution(c4, MD((4, 4, 1, 1), "s8"),
                                                      MD((1, 4, 4, 4), "s32"), attr=a, **geo),
        "Pooling": lambda a: dnnq.Pooling("max", c4, c4, kernel=[1, 1], dilation=[0, 0],
                                          attr=a, **geo),
        "Reorder": lambda a: dnnq.Reorder(f, MD((4, 4), "u8"), attr=a),
        "Eltwise": lambda a: dnnq.Eltwise("relu", f, f, attr=a),
        "Binary": lambda a: dnnq.Binary("add", f, f, f, attr=a),
        "Sum": lambda a: dnnq.Sum(f, [f, f], attr=a),
        "Concat": lambda a: dnnq.Concat(MD((8, 4), "f32"), 0, [f, f], attr=a),
        "Softmax": lambda a: dnnq.Softmax("softmax", f, f, 1, attr=a),
    }


@pytest.mark.parametrize("prim", sorted(_non_rnn_constructors()))
def test_rnn_qparams_are_refused_outside_rnn(prim):
    """oneDNN refuses an attribute a primitive does not use; dnnq used to ignore the RNN
    qparams in Convolution / Deconvolution."""
    make = _non_rnn_constructors()[prim]
    make(None)  # the geometry itself is valid
    for setter in (lambda a: a.set_rnn_data_qparams(0.5, 1.0),
                   lambda a: a.set_rnn_weights_qparams(0, [2.0])):
        attr = PrimitiveAttr()
        setter(attr)
        with pytest.raises(dnnq.Unimplemented, match="RNN"):
            make(attr)
    with pytest.raises(dnnq.InvalidArguments, match="attr"):
        make("not an attr")
