"""One small, non-trivial configuration of every primitive class dnnq exports: the primitive
and an execution-argument dict (scales, zero points and post-op chains with binary and sum
inputs where the primitive takes them).  Used by the pickling tests; CASES must name every
primitive class in dnnq.__all__ (test_pickle checks it, so a new primitive needs a case)."""
import numpy as np

import dnnq
from dnnq import (MemoryDesc as MD, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_SRC_0,
                  DNNL_ARG_SRC_1, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SCALE,
                  DNNL_ARG_ATTR_ZERO_POINTS, DNNL_ARG_MULTIPLE_SRC, DNNL_ARG_SRC_LAYER,
                  DNNL_ARG_SRC_ITER, DNNL_ARG_SRC_ITER_C, DNNL_ARG_WEIGHTS_LAYER,
                  DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_ATTR_MULTIPLE_POST_OP)


def primitive_classes():
    """Every primitive class exported by dnnq (a class with an ``execute`` method)."""
    out = {}
    for name in dnnq.__all__:
        obj = getattr(dnnq, name)
        if isinstance(obj, type) and callable(getattr(obj, "execute", None)):
            out[name] = obj
    return out


def _rng(seed):
    return np.random.default_rng(seed)


def _u8(rng, shape):
    return rng.integers(0, 256, shape, dtype=np.uint8)


def _s8(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def _f32(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def _scales(rng, n):
    return rng.uniform(0.01, 0.1, n).astype(np.float32)


def _po(i, arg=DNNL_ARG_SRC_1):
    return DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | arg


def _chain(src1_dims, sum_=True):
    """eltwise, binary add (src1 f32 of src1_dims), [sum], linear: a chain with every kind of
    execution input."""
    ops = PostOps()
    ops.append_eltwise("relu", 0.25)
    ops.append_binary("add", MD(src1_dims, "f32"))
    if sum_:
        ops.append_sum(0.5, 3)
    ops.append_eltwise("linear", 1.5, -0.25)
    return ops


def matmul():
    rng = _rng(1)
    M, K, N = 7, 37, 70
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 0).set_scales_mask(DNNL_ARG_WEIGHTS, 2)
    attr.set_scales_mask(DNNL_ARG_DST, 0)
    attr.set_zero_points_mask(DNNL_ARG_SRC, 0).set_zero_points_mask(DNNL_ARG_DST, 0)
    attr.set_post_ops(_chain((1, N)))
    p = dnnq.MatMul(MD((M, K), "s8"), MD((K, N), "s8"), MD((M, N), "s8"), MD((1, N), "f32"),
                    attr=attr)
    w = _s8(rng, (K, N))
    args = {DNNL_ARG_SRC: _s8(rng, (M, K)), DNNL_ARG_WEIGHTS: p.prepare_weights(w),
            DNNL_ARG_BIAS: _f32(rng, (1, N)), DNNL_ARG_DST: _s8(rng, (M, N)),
            DNNL_ARG_SCALE | DNNL_ARG_SRC: _scales(rng, 1),
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: _scales(rng, N),
            DNNL_ARG_SCALE | DNNL_ARG_DST: np.float32([0.5]),
            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.int32([3]),
            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: np.int32([-2]),
            _po(1): _f32(rng, (1, N))}
    return p, args, {DNNL_ARG_WEIGHTS: w}


def inner_product():
    rng = _rng(2)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 0).set_scales_mask(DNNL_ARG_WEIGHTS, 1)
    attr.set_post_ops(_chain((5, 19)))
    p = dnnq.InnerProduct(MD((5, 6, 3, 2), "u8"), MD((19, 6, 3, 2), "s8"), MD((5, 19), "f32"),
                          MD((19,), "s32"), attr=attr)
    w = _s8(rng, (19, 6, 3, 2))
    args = {DNNL_ARG_SRC: _u8(rng, (5, 6, 3, 2)), DNNL_ARG_WEIGHTS: p.prepare_weights(w),
            DNNL_ARG_BIAS: rng.integers(-50, 50, 19, dtype=np.int32),
            DNNL_ARG_DST: _f32(rng, (5, 19)),
            DNNL_ARG_SCALE | DNNL_ARG_SRC: _scales(rng, 1),
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: _scales(rng, 19), _po(1): _f32(rng, (5, 19))}
    return p, args, {DNNL_ARG_WEIGHTS: w}


def _conv(cls, seed, src_dims, wdims, dst_dims, strides, pad, groups_tag=None):
    rng = _rng(seed)
    OC = dst_dims[1]
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 0).set_scales_mask(DNNL_ARG_WEIGHTS, 1)
    attr.set_scales_mask(DNNL_ARG_DST, 0)
    attr.set_zero_points_mask(DNNL_ARG_SRC, 0).set_zero_points_mask(DNNL_ARG_DST, 0)
    attr.set_post_ops(_chain((1, OC, 1, 1)))
    p = cls(MD(src_dims, "u8", "nhwc"), MD(wdims, "s8"), MD(dst_dims, "u8", "nhwc"),
            MD((OC,), "f32"), strides=strides, padding_l=pad, padding_r=pad, attr=attr)
    w = _s8(rng, wdims)
    args = {DNNL_ARG_SRC: _u8(rng, src_dims), DNNL_ARG_WEIGHTS: p.prepare_weights(w),
            DNNL_ARG_BIAS: _f32(rng, (OC,)), DNNL_ARG_DST: _u8(rng, dst_dims),
            DNNL_ARG_SCALE | DNNL_ARG_SRC: _scales(rng, 1),
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: _scales(rng, OC),
            DNNL_ARG_SCALE | DNNL_ARG_DST: np.float32([0.25]),
            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.int32([7]),
            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: np.int32([100]),
            _po(1): _f32(rng, (1, OC, 1, 1))}
    return p, args, {DNNL_ARG_WEIGHTS: w}


def convolution():
    return _conv(dnnq.Convolution, 3, (2, 12, 7, 6), (20, 12, 3, 3), (2, 20, 4, 3), (2, 2),
                 (1, 1))


def deconvolution():
    return _conv(dnnq.Deconvolution, 4, (1, 9, 4, 3), (17, 9, 3, 3), (1, 17, 7, 5), (2, 2),
                 (1, 1))


def _rnn(cls, seed, G, extra=()):
    rng = _rng(seed)
    T, N, C, H, L, D = 3, 2, 10, 10, 2, 2
    direction = "bidirectional_concat"
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    attr.set_zero_points_mask(DNNL_ARG_SRC_LAYER, 0)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS_LAYER, 24).set_scales_mask(DNNL_ARG_WEIGHTS_ITER, 24)
    nb = G + (cls is dnnq.LBRGRU)
    st = MD((L, D, N, H), "u8")
    descs = [MD((T, N, C), "u8"), st]
    if cls is dnnq.LSTM:
        descs.append(MD((L, D, N, H), "f32"))
    descs += [MD((L, D, C, G, H), "s8"), MD((L, D, H, G, H), "s8"), MD((L, D, nb, H), "f32"),
              MD((T, N, 2 * H), "u8"), st]
    if cls is dnnq.LSTM:
        descs.append(MD((L, D, N, H), "f32"))
    p = cls(*extra, direction, *descs, attr=attr)
    wl, wi = _s8(rng, (L, D, C, G, H)), _s8(rng, (L, D, H, G, H))
    ws = rng.uniform(20, 60, G * H).astype(np.float32)
    args = {DNNL_ARG_SRC_LAYER: _u8(rng, (T, N, C)), DNNL_ARG_SRC_ITER: _u8(rng, (L, D, N, H)),
            DNNL_ARG_BIAS: _f32(rng, (L, D, nb, H)),
            DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER: np.float32([1 / 64]),
            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC_LAYER: np.int32([128]),
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_LAYER: ws, DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_ITER: ws}
    args.update(p.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: wl, DNNL_ARG_WEIGHTS_ITER: wi}))
    if cls is dnnq.LSTM:
        args[DNNL_ARG_SRC_ITER_C] = _f32(rng, (L, D, N, H))
    return p, args, {DNNL_ARG_WEIGHTS_LAYER: wl, DNNL_ARG_WEIGHTS_ITER: wi}


def pooling():
    rng = _rng(5)
    ops = PostOps()
    ops.append_eltwise("relu").append_binary("mul", MD((1, 16, 1, 1), "f32"))
    attr = PrimitiveAttr().set_post_ops(ops)
    p = dnnq.Pooling("avg_exclude_padding", MD((2, 16, 5, 5), "u8", "nhwc"),
                     MD((2, 16, 3, 3), "u8"), strides=2, kernel=3, padding_l=1, attr=attr)
    return p, {DNNL_ARG_SRC: _u8(rng, (2, 16, 5, 5)), _po(1): _f32(rng, (1, 16, 1, 1))}, {}


def reorder():
    rng = _rng(6)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 2).set_zero_points_mask(DNNL_ARG_DST, 0)
    p = dnnq.Reorder(MD((3, 5, 4, 2), "f32"), MD((3, 5, 4, 2), "s8", "nhwc"), attr=attr)
    return p, {DNNL_ARG_SRC: _f32(rng, (3, 5, 4, 2)) * 9,
               DNNL_ARG_SCALE | DNNL_ARG_SRC: _scales(rng, 5) * 100,
               DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: np.int32([-3])}, {}


def eltwise():
    rng = _rng(7)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 0).set_zero_points_mask(DNNL_ARG_SRC, 0)
    attr.set_scales_mask(DNNL_ARG_DST, 0)
    attr.set_post_ops(_chain((1, 33)))
    p = dnnq.Eltwise("gelu_tanh", MD((4, 33), "u8"), MD((4, 33), "s8"), attr=attr)
    return p, {DNNL_ARG_SRC: _u8(rng, (4, 33)), DNNL_ARG_DST: _s8(rng, (4, 33)),
               DNNL_ARG_SCALE | DNNL_ARG_SRC: np.float32([0.05]),
               DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.int32([120]),
               DNNL_ARG_SCALE | DNNL_ARG_DST: np.float32([0.03]),
               _po(1): _f32(rng, (1, 33))}, {}


def binary():
    rng = _rng(8)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC_0, 0).set_scales_mask(DNNL_ARG_SRC_1, 0)
    attr.set_post_ops(_chain((2, 1, 9)))
    p = dnnq.Binary("mul", MD((2, 3, 9), "s8"), MD((1, 3, 1), "u8"), MD((2, 3, 9), "s8"),
                    attr=attr)
    return p, {DNNL_ARG_SRC_0: _s8(rng, (2, 3, 9)), DNNL_ARG_SRC_1: _u8(rng, (1, 3, 1)),
               DNNL_ARG_DST: _s8(rng, (2, 3, 9)),
               DNNL_ARG_SCALE | DNNL_ARG_SRC_0: np.float32([0.1]),
               DNNL_ARG_SCALE | DNNL_ARG_SRC_1: np.float32([0.02]),
               _po(1): _f32(rng, (2, 1, 9))}, {}


def sum_():
    rng = _rng(9)
    attr = PrimitiveAttr()
    for i in range(3):
        attr.set_scales_mask(DNNL_ARG_MULTIPLE_SRC + i, 0)
    p = dnnq.Sum(MD((5, 6), "u8"), [MD((5, 6), "u8"), MD((5, 6), "s8"), MD((5, 6), "f32")],
                 attr=attr)
    args = {DNNL_ARG_MULTIPLE_SRC: _u8(rng, (5, 6)), DNNL_ARG_MULTIPLE_SRC + 1: _s8(rng, (5, 6)),
            DNNL_ARG_MULTIPLE_SRC + 2: _f32(rng, (5, 6)) * 20}
    for i in range(3):
        args[DNNL_ARG_SCALE | (DNNL_ARG_MULTIPLE_SRC + i)] = _scales(rng, 1) * 10
    return p, args, {}


def concat():
    rng = _rng(10)
    attr = PrimitiveAttr().set_scales_mask(DNNL_ARG_MULTIPLE_SRC + 1, 0)
    p = dnnq.Concat(MD((4, 9), "s8"), 1, [MD((4, 4), "s8"), MD((4, 5), "f32")], attr=attr)
    return p, {DNNL_ARG_MULTIPLE_SRC: _s8(rng, (4, 4)),
               DNNL_ARG_MULTIPLE_SRC + 1: _f32(rng, (4, 5)),
               DNNL_ARG_SCALE | (DNNL_ARG_MULTIPLE_SRC + 1): np.float32([30.0])}, {}


def softmax():
    rng = _rng(11)
    attr = PrimitiveAttr().set_scales_mask(DNNL_ARG_DST, 0)
    p = dnnq.Softmax("logsoftmax", MD((3, 17), "f32"), MD((3, 17), "s8"), 1, attr=attr)
    return p, {DNNL_ARG_SRC: _f32(rng, (3, 17)), DNNL_ARG_SCALE | DNNL_ARG_DST: np.float32([0.05])}, {}


#: class name -> builder() returning (primitive, execution args, plain weights by argument)
CASES = {
    "MatMul": matmul, "InnerProduct": inner_product, "Convolution": convolution,
    "Deconvolution": deconvolution,
    "LSTM": lambda: _rnn(dnnq.LSTM, 12, 4), "GRU": lambda: _rnn(dnnq.GRU, 13, 3),
    "LBRGRU": lambda: _rnn(dnnq.LBRGRU, 14, 3),
    "VanillaRNN": lambda: _rnn(dnnq.VanillaRNN, 15, 1, ("tanh",)),
    "Pooling": pooling, "Reorder": reorder, "Eltwise": eltwise, "Binary": binary, "Sum": sum_,
    "Concat": concat, "Softmax": softmax,
}


def fresh(args):
    """A copy of an argument dict whose arrays are new (execute writes DNNL_ARG_DST)."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}


def outputs(result):
    """An execute result as a list of (dtype, shape, bytes) (RNNs return a dict)."""
    if isinstance(result, dict):
        return [(k,) + outputs(v)[0] for k, v in sorted(result.items())]
    r = np.asarray(result)
    return [(r.dtype.str, r.shape, np.ascontiguousarray(r).tobytes())]


def execute_pickled(blob):
    """Worker of the process-pool test: unpickle (primitive, args) and execute."""
    import pickle
    prim, args = pickle.loads(blob)
    return type(prim).__name__, prim.impl_info, outputs(prim.execute(args))
