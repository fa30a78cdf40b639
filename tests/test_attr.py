"""PostOps, PrimitiveAttr and the reference eltwise / binary formulas."""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dnnq import args as A
from dnnq.attr import PrimitiveAttr
from dnnq.eltwise_math import binary_reference, eltwise_reference, fma_f32
from dnnq.errors import InvalidArguments
from dnnq.memory import MemoryDesc
from dnnq.post_ops import (BINARY_ALGS, ELTWISE_ALGS, BinaryOp, DepthwiseOp, EltwiseOp, PostOps,
                           SumOp, binary_alg_id, eltwise_alg_id)

F = np.float32
SPEC_ELTWISE = ("relu tanh elu square abs sqrt linear soft_relu logistic exp gelu_tanh gelu_erf "
                "swish log clip clip_v2 pow round mish hardswish hardsigmoid").split()
SPEC_BINARY = "add sub mul div min max ge gt le lt eq ne".split()


# =============================================================== PostOps
def test_algorithm_lists_match_spec_and_kernel_enum_order():
    assert list(ELTWISE_ALGS) == SPEC_ELTWISE
    assert list(BINARY_ALGS) == SPEC_BINARY
    assert eltwise_alg_id("eltwise_hardsigmoid") == 20 and eltwise_alg_id("relu") == 0
    assert binary_alg_id("binary_ne") == 11 and binary_alg_id("add") == 0


@pytest.mark.parametrize("alg", SPEC_ELTWISE)
def test_eltwise_prefix_accepted(alg):
    alpha, beta = (1.0, 2.0)
    a, b = PostOps(), PostOps()
    a.append_eltwise(alg, alpha, beta)
    b.append_eltwise("eltwise_" + alg, alpha, beta)
    assert a == b and a[0].alg == alg and a.kind(0) == "eltwise"


@pytest.mark.parametrize("alg", SPEC_BINARY)
def test_binary_prefix_accepted(alg):
    d = MemoryDesc((1, 8, 1, 1), "f32")
    a, b = PostOps(), PostOps()
    a.append_binary(alg, d)
    b.append_binary("binary_" + alg, d)
    assert a == b and a[0] == BinaryOp(alg, d) and a.kind(0) == "binary"


@pytest.mark.parametrize("alg", ["gelu", "bounded_relu", "RELU", "eltwise_", "binary_relu",
                                 "eltwise_add", "", None, 3])
def test_eltwise_unknown(alg):
    with pytest.raises(InvalidArguments, match="eltwise algorithm"):
        PostOps().append_eltwise(alg)


@pytest.mark.parametrize("alg", ["plus", "binary_", "eltwise_add", "ADD", None])
def test_binary_unknown(alg):
    with pytest.raises(InvalidArguments, match="binary algorithm"):
        PostOps().append_binary(alg, MemoryDesc((1,), "f32"))


def test_chain_reading():
    d = MemoryDesc((1, 4), "s8")
    ops = PostOps()
    ops.append_eltwise("relu", 0.5).append_binary("add", d).append_sum(0.5, 3, "u8")
    ops.append_dw("s8", None, "u8", 3, 2, 1)
    assert len(ops) == 4
    assert [ops.kind(i) for i in range(4)] == ["eltwise", "binary", "sum", "convolution"]
    assert ops[0] == EltwiseOp("relu", 0.5, 0.0)
    assert ops[1] == BinaryOp("add", d)
    assert ops[2] == SumOp(0.5, 3, "u8")
    assert ops[3] == DepthwiseOp("s8", None, "u8", 3, 2, 1)
    assert ops[-1] is ops[3]
    assert [op.kind for op in ops] == ["eltwise", "binary", "sum", "convolution"]
    assert ops.binary_positions() == [1]
    with pytest.raises(IndexError):
        ops[4]
    with pytest.raises(IndexError):
        ops[-5]
    with pytest.raises(TypeError):
        ops["0"]
    for bad in (4, -1, "0", 1.0):
        with pytest.raises(InvalidArguments):
            ops.kind(bad)
    with pytest.raises(Exception):
        ops[0].alpha = 2.0  # frozen


def test_key_equality_and_copy():
    a = PostOps().append_eltwise("linear", 2.0, 1.0)
    b = PostOps().append_eltwise("eltwise_linear", 2, 1)
    assert a == b and a.key() == b.key() and hash(a.key()) == hash(b.key())
    c = a.copy()
    c.append_sum()
    assert len(a) == 1 and a != c
    assert PostOps() == PostOps() and PostOps() != a
    with pytest.raises(TypeError):
        hash(a)


def test_params_stored_as_f32():
    ops = PostOps().append_eltwise("linear", 0.1, 1e-3)
    assert ops[0].alpha == float(np.float32(0.1)) and ops[0].beta == float(np.float32(1e-3))


@pytest.mark.parametrize("alpha,beta", [(float("nan"), 0), (0, float("inf")), (1e39, 0),
                                        (True, 0), ("1", 0), (None, 0), (1j, 0)])
def test_eltwise_bad_params(alpha, beta):
    with pytest.raises(InvalidArguments):
        PostOps().append_eltwise("linear", alpha, beta)


def test_eltwise_constraints():
    PostOps().append_eltwise("clip", 0.0, 6.0)
    PostOps().append_eltwise("clip_v2", 1.0, 1.0)
    for alg in ("clip", "clip_v2", "eltwise_clip"):
        with pytest.raises(InvalidArguments, match="beta >= alpha"):
            PostOps().append_eltwise(alg, 2.0, 1.0)
    with pytest.raises(InvalidArguments, match="soft_relu"):
        PostOps().append_eltwise("soft_relu")  # default alpha 0 divides by zero
    PostOps().append_eltwise("soft_relu", -1.0)
    PostOps().append_eltwise("pow", -2.0, 0.5)
    PostOps().append_eltwise("log", 123.0, -7.0)  # unused parameters: any finite value


def test_sum_rules():
    ops = PostOps().append_sum()
    assert ops[0] == SumOp(1.0, 0, None)
    with pytest.raises(InvalidArguments, match="sum"):
        ops.append_sum(2.0)
    PostOps().append_sum(-0.5, -(2 ** 31), np.int8)
    for kw in ({"scale": float("nan")}, {"scale": "1"}, {"zero_point": 2 ** 31},
               {"zero_point": 1.5}, {"zero_point": True}, {"dt": "f16"}, {"dt": np.float64}):
        with pytest.raises(InvalidArguments):
            PostOps().append_sum(**kw)
    assert PostOps().append_sum(dt=np.uint8)[0].dt == "u8"


def test_binary_rules():
    with pytest.raises(InvalidArguments, match="MemoryDesc"):
        PostOps().append_binary("add", (1, 8, 1, 1))
    ops = PostOps()
    for _ in range(31):
        ops.append_binary("mul", MemoryDesc((1,), "f32"))
    with pytest.raises(InvalidArguments, match="31"):
        ops.append_binary("mul", MemoryDesc((1,), "f32"))
    ops.append_eltwise("relu")  # position 31 can still hold a non-binary post-op
    with pytest.raises(InvalidArguments, match="32"):
        ops.append_eltwise("relu")


def test_dw_rules():
    ops = PostOps().append_dw("s8", "f32", "u8", 3, 1, 1)
    with pytest.raises(InvalidArguments):
        ops.append_dw("s8", "f32", "u8", 3, 1, 1)
    for args in [("s16", None, "u8", 3, 1, 1), ("s8", None, None, 3, 1, 1),
                 ("s8", None, "u8", 0, 1, 0), ("s8", None, "u8", 3, 0, 1),
                 ("s8", None, "u8", 3, 1, 3), ("s8", None, "u8", 3, 1, -1),
                 ("s8", None, "u8", 3.0, 1, 1)]:
        with pytest.raises(InvalidArguments):
            PostOps().append_dw(*args)


# =============================================================== PrimitiveAttr
def test_attr_defaults():
    attr = PrimitiveAttr()
    assert attr.scales_mask(A.DNNL_ARG_SRC) is None
    assert attr.zero_points_mask(A.DNNL_ARG_DST) is None
    assert attr.scales_args() == {} and attr.zero_points_args() == {}
    assert isinstance(attr.post_ops, PostOps) and len(attr.post_ops) == 0
    assert attr.rnn_data_qparams is None and attr.rnn_weights_qparams is None
    assert attr == PrimitiveAttr() and attr.key() == PrimitiveAttr().key()


def test_attr_masks():
    attr = PrimitiveAttr()
    attr.set_scales_mask(A.DNNL_ARG_SRC, 0)
    attr.set_scales(A.DNNL_ARG_WEIGHTS, 1)
    attr.set_scales_mask(A.DNNL_ARG_WEIGHTS, 3)  # overwrites
    attr.set_scales_mask(A.DNNL_ARG_DST, A.DNNL_ARG_SRC and 0)
    attr.set_zero_points_mask(A.DNNL_ARG_SRC, 1 << 12)
    attr.set_zero_points_mask(A.DNNL_ARG_WEIGHTS, np.int32(0))
    attr.set_scales_mask(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(2) | A.DNNL_ARG_SRC_1, 0)
    attr.set_scales_mask(A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_WEIGHTS, 1)
    attr.set_scales_mask(A.DNNL_ARG_MULTIPLE_SRC + 3, 0)
    assert attr.scales_mask(A.DNNL_ARG_WEIGHTS) == 3
    assert attr.scales_mask(A.DNNL_ARG_SRC) == 0
    assert attr.zero_points_mask(A.DNNL_ARG_SRC) == 1 << 12
    assert attr.scales_args() == {1: 0, 33: 3, 17: 0, 3 * 16384 | 2: 0, 8192 | 33: 1, 1027: 0}
    assert attr.zero_points_args() == {1: 1 << 12, 33: 0}
    other = PrimitiveAttr().set_scales_mask(A.DNNL_ARG_WEIGHTS, 1)
    assert other != attr


@pytest.mark.parametrize("method,arg", [
    ("set_zero_points_mask", A.DNNL_ARG_BIAS),
    ("set_scales_mask", A.DNNL_ARG_BIAS),
    ("set_scales_mask", A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC),
    ("set_zero_points_mask", A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC),
    ("set_zero_points_mask", A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | A.DNNL_ARG_SRC_1),
    ("set_zero_points_mask", A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_WEIGHTS),
    ("set_scales_mask", A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_BIAS),
    ("set_scales_mask", 5),
    ("set_scales_mask", -1),
    ("set_scales_mask", "src"),
    ("set_scales_mask", True),
])
def test_attr_bad_args(method, arg):
    with pytest.raises(InvalidArguments):
        getattr(PrimitiveAttr(), method)(arg, 0)


@pytest.mark.parametrize("mask", [-1, 1.5, "0", None, True, 1 << 16, (1 << 12) | 1])
def test_attr_bad_masks(mask):
    with pytest.raises(InvalidArguments, match="mask"):
        PrimitiveAttr().set_scales_mask(A.DNNL_ARG_SRC, mask)


def test_attr_post_ops_copied():
    ops = PostOps().append_eltwise("relu")
    attr = PrimitiveAttr().set_post_ops(ops)
    ops.append_sum()
    assert len(attr.post_ops) == 1
    attr.post_ops.append_sum()  # the getter returns a copy too
    assert len(attr.post_ops) == 1
    with pytest.raises(InvalidArguments):
        attr.set_post_ops([("relu", 0, 0)])
    assert attr.key() != PrimitiveAttr().key()


def test_attr_rnn_qparams():
    attr = PrimitiveAttr().set_rnn_data_qparams(63.5, 128)
    assert attr.rnn_data_qparams == (63.5, 128.0)
    attr.set_rnn_weights_qparams(24, np.array([1.0, 2.0, 3.0]))
    m, s = attr.rnn_weights_qparams
    assert m == 24 and s.dtype == np.float32 and s.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError):
        s[0] = 5  # read-only
    k1 = attr.key()
    attr.set_rnn_weights_qparams(24, [1.0, 2.0, 4.0])
    assert attr.key() != k1
    for scale, shift in [(0, 0), (-1, 0), (float("inf"), 0), (1, float("nan")), ("1", 0),
                         (1, None)]:
        with pytest.raises(InvalidArguments):
            PrimitiveAttr().set_rnn_data_qparams(scale, shift)
    for mask, scales in [(0, [1.0, 2.0]), (24, []), (24, [1.0, 0.0]), (-1, [1.0]),
                         (24, "abc"), (0, [float("nan")])]:
        with pytest.raises(InvalidArguments):
            PrimitiveAttr().set_rnn_weights_qparams(mask, scales)


# =============================================================== eltwise formulas
def _f32_round_exact(q):
    """Round a Fraction to the nearest f32, ties to even (independent of the module)."""
    c = np.float32(float(q))
    with np.errstate(over="ignore"):
        cands = {c, np.nextafter(c, F(np.inf)), np.nextafter(c, F(-np.inf))}
    cands = {v for v in cands if np.isfinite(v)}
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - q),
                                     int(np.array(v).view(np.uint32)) & 1))
    return best


def _f32s(n, seed, lo=-1e3, hi=1e3):
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, n).astype(F)


def test_linear_is_fused_multiply_add():
    rng = np.random.default_rng(1)
    x = _f32s(4000, 2)
    fused_differs = 0
    for alpha, beta in [(F(0.1), F(0.3)), (F(rng.uniform(-3, 3)), F(rng.uniform(-9, 9))),
                        (F(1.0 / 3.0), F(-7.77))]:
        got = eltwise_reference("linear", x, alpha, beta)
        for xi, gi in zip(x[:400], got[:400]):
            exact = _f32_round_exact(Fraction(float(alpha)) * Fraction(float(xi))
                                     + Fraction(float(beta)))
            assert gi == exact, (alpha, beta, xi)
        fused_differs += int(np.count_nonzero(got != (alpha * x + beta)))
    assert fused_differs > 0  # the test can tell a fused from an unfused evaluation


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False),
       st.floats(width=32, allow_nan=False, allow_infinity=False),
       st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_fma_f32_property(a, x, b):
    q = Fraction(a) * Fraction(x) + Fraction(b)
    if abs(q) > Fraction(float(np.finfo(F).max)):
        return  # overflow region: not a rounding question
    got = fma_f32(F(a), F(x), F(b))
    assert got == _f32_round_exact(q)


def test_round_half_even():
    x = np.concatenate([np.arange(-20, 21) / F(2), _f32s(1000, 3, -1e7, 1e7),
                        np.array([2.0 ** 23 + 1, -0.5, 0.5, 1.5, 2.5], F)]).astype(F)
    got = eltwise_reference("round", x)
    np.testing.assert_array_equal(got, np.round(x.astype(np.float64)).astype(F))
    assert eltwise_reference("eltwise_round", [0.5, 1.5, 2.5, -2.5]).tolist() == [0, 2, 2, -2]


def test_exact_algorithms_against_scalar_python():
    x = np.concatenate([_f32s(500, 4), np.array([0.0, -0.0, 1.0, -1.0], F)]).astype(F)
    a, b = F(0.25), F(3.5)
    cases = {
        "relu": lambda v: v if v > 0 else F(v * a),
        "abs": lambda v: abs(v),
        "square": lambda v: F(v * v),
        "clip": lambda v: min(max(v, F(-2.0)), b),
        "clip_v2": lambda v: min(max(v, F(-2.0)), b),
    }
    for alg, f in cases.items():
        alpha = F(-2.0) if alg.startswith("clip") else a
        got = eltwise_reference(alg, x, alpha, b)
        want = np.array([f(v) for v in x], F)
        np.testing.assert_array_equal(got, want, err_msg=alg)
    xp = np.abs(x)
    np.testing.assert_array_equal(eltwise_reference("sqrt", xp),
                                  np.array([F(math.sqrt(float(v))) for v in xp], F))
    # hardsigmoid / hardswish: alpha*x then + beta (two f32 roundings), clamped to [0, 1]
    hs = np.clip((x * F(1 / 6)) + F(0.5), 0, 1).astype(F)
    np.testing.assert_array_equal(eltwise_reference("hardsigmoid", x, 1 / 6, 0.5), hs)
    np.testing.assert_array_equal(eltwise_reference("hardswish", x, 1 / 6, 0.5), x * hs)
    # clip boundaries: the value at alpha / beta is the bound itself
    assert eltwise_reference("clip", [0.0, 6.0, 7.0, -1.0], 0.0, 6.0).tolist() == [0, 6, 6, 0]


def _ref64(alg, v, alpha, beta):
    e = math.exp
    if alg == "tanh":
        return math.tanh(v)
    if alg == "elu":
        return v if v > 0 else alpha * math.expm1(v)
    if alg == "logistic":
        return 1 / (1 + e(-v)) if -v < 700 else 0.0
    if alg == "exp":
        return e(v)
    if alg == "log":
        return math.log(v)
    if alg == "soft_relu":
        t = alpha * v
        return (math.log1p(e(t)) if t < 700 else t) / alpha
    if alg == "swish":
        return v / (1 + e(-alpha * v)) if -alpha * v < 700 else 0.0
    if alg == "mish":
        return v * math.tanh(math.log1p(e(v)) if v < 700 else v)
    if alg == "gelu_erf":
        return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))
    if alg == "gelu_tanh":
        return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    if alg == "pow":
        return alpha * v ** beta
    raise AssertionError(alg)


@pytest.mark.parametrize("alg,alpha,beta,lo,hi", [
    ("tanh", 0, 0, -10, 10), ("elu", 0.7, 0, -10, 10), ("logistic", 0, 0, -30, 30),
    ("exp", 0, 0, -20, 20), ("log", 0, 0, 1e-3, 1e3), ("soft_relu", 1.0, 0, -20, 20),
    ("soft_relu", 0.5, 0, -20, 20), ("soft_relu", -1.0, 0, -20, 20), ("swish", 1.5, 0, -20, 20),
    ("mish", 0, 0, -20, 20), ("gelu_erf", 0, 0, -6, 6), ("gelu_tanh", 0, 0, -6, 6),
    ("pow", 1.5, 0.5, 0, 100), ("pow", -2.0, 3.0, -5, 5),
])
def test_transcendental_close_to_f64(alg, alpha, beta, lo, hi):
    x = _f32s(2000, 5, lo, hi)
    got = eltwise_reference(alg, x, alpha, beta).astype(np.float64)
    want = np.array([_ref64(alg, float(v), float(F(alpha)), float(F(beta))) for v in x])
    # a few f32 ulp of the result, plus a few ulp of x where the f32 formula cancels
    # (e.g. 1 + tanh(g) for gelu_tanh at large negative x)
    eps = np.finfo(F).eps
    tol = 16 * eps * np.abs(want) + 4 * eps * np.abs(x.astype(np.float64)) + 1e-30
    bad = np.abs(got - want) > tol
    assert not bad.any(), (alg, x[bad][:5], got[bad][:5], want[bad][:5])


def test_eltwise_overflow_bounds():
    big = np.array([100.0, -100.0, 1e30, -1e30], F)
    np.testing.assert_array_equal(eltwise_reference("logistic", big), [1.0, 0.0, 1.0, 0.0])
    sr = eltwise_reference("soft_relu", big, 1.0)
    assert sr[0] == F(100.0) and sr[2] == F(1e30) and sr[3] == 0.0
    assert 0.0 <= sr[1] < 1e-40  # log1p(exp(-100)) is a subnormal f32
    assert eltwise_reference("mish", [1e30])[0] == F(1e30)


def test_eltwise_shapes_and_dtype():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = eltwise_reference("relu", x)
    assert out.dtype == np.float32 and out.shape == (3, 4)
    assert eltwise_reference("abs", -2.0).shape == ()
    with pytest.raises(InvalidArguments):
        eltwise_reference("nope", x)


# =============================================================== binary formulas
def test_binary_reference():
    a = np.concatenate([_f32s(300, 6, -5, 5), np.array([1.0, 2.0, -0.0], F)]).astype(F)
    b = np.concatenate([_f32s(300, 7, -5, 5), np.array([1.0, 3.0, 0.0], F)]).astype(F)
    b[::7] = a[::7]  # some ties for the comparisons
    b[-1] = F(1.0)   # no 0/0 in the scalar model
    ops = {"add": lambda x, y: F(x + y), "sub": lambda x, y: F(x - y),
           "mul": lambda x, y: F(x * y), "div": lambda x, y: F(x / y),
           "min": lambda x, y: x if x < y else y, "max": lambda x, y: x if x > y else y,
           "ge": lambda x, y: F(x >= y), "gt": lambda x, y: F(x > y),
           "le": lambda x, y: F(x <= y), "lt": lambda x, y: F(x < y),
           "eq": lambda x, y: F(x == y), "ne": lambda x, y: F(x != y)}
    for alg, f in ops.items():
        got = binary_reference("binary_" + alg, a, b)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, np.array([f(x, y) for x, y in zip(a, b)], F),
                                      err_msg=alg)
    # broadcasting like a per-channel post-op
    x = np.ones((2, 3, 2, 2), F)
    ch = np.arange(3, dtype=F).reshape(1, 3, 1, 1)
    np.testing.assert_array_equal(binary_reference("add", x, ch), x + ch)
    with pytest.raises(InvalidArguments):
        binary_reference("relu", x, ch)
