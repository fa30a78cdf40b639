"""ONNX ops that run in numpy: shape arithmetic, data movement and cheap element-wise f32 math.

Each function takes ``(inputs, attrs, opset)`` (inputs: numpy arrays, None for an omitted
optional input) and returns a list of outputs. They serve both the constant folding at
creation and the f32 steps at run time. Nothing here is a convolution or a matrix product:
those run on dnnq's primitives (``layers.py``).
"""
import math

import numpy as np

from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import _inverse_order

F32 = np.float32

ONNX_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16,
               6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64,
               12: np.uint32, 13: np.uint64}


def _axis(a, ndim):
    return a + ndim if a < 0 else a


def _unary(fn):
    def op(x, attrs, opset):
        with np.errstate(all="ignore"):
            return [np.asarray(fn(x[0], attrs)).astype(x[0].dtype, copy=False)]
    return op


def _binary(fn):
    def op(x, attrs, opset):
        with np.errstate(all="ignore"):
            r = fn(x[0], x[1])
        return [np.asarray(r)]
    return op


def _toolkit_eltwise(alg, numpy_fn, alpha=0.0, beta=0.0):
    """A unary op on f32 tensors through dnnq.Eltwise: numpy's f32 exp / log / tanh take
    CPU-specific SIMD paths that differ in the last ulp (with NPY_DISABLE_CPU_FEATURES), dnnq's
    toolkit computes the same bits at every ISA level. Other dtypes (f64 / f16) and empty
    tensors go to ``numpy_fn(v, attrs)``."""
    def fn(v, attrs):
        if v.dtype != F32 or v.size == 0:
            return numpy_fn(v, attrs)
        import dnnq
        from dnnq.memory import MemoryDesc
        a = float(alpha(attrs)) if callable(alpha) else alpha
        d = MemoryDesc(v.shape if v.ndim else (1,), "f32")
        y = dnnq.Eltwise(alg, d, d, a, beta).execute({dnnq.DNNL_ARG_SRC: np.ascontiguousarray(
            v.reshape(d.dims))})
        return y.reshape(v.shape)
    return fn


def _sigmoid(x, a=None):
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype, copy=False)


def _erf(x):
    v = np.vectorize(math.erf, otypes=[np.float64])
    return v(x.astype(np.float64))


def _gelu(x, attrs):
    if attrs.get("approximate", "none") == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return np.trunc(a / b).astype(np.result_type(a, b))
    return a / b


def _clip(x, attrs, opset):
    lo = x[1] if len(x) > 1 and x[1] is not None else attrs.get("min")
    hi = x[2] if len(x) > 2 and x[2] is not None else attrs.get("max")
    r = x[0]
    if lo is not None:
        r = np.maximum(r, np.asarray(lo, r.dtype))
    if hi is not None:
        r = np.minimum(r, np.asarray(hi, r.dtype))
    return [np.asarray(r)]


def _reshape(x, attrs, opset):
    shape = [int(s) for s in x[1]]
    allowzero = attrs.get("allowzero", 0)
    for i, s in enumerate(shape):
        if s == 0 and not allowzero:
            shape[i] = x[0].shape[i]
    return [x[0].reshape(shape)]


def _flatten(x, attrs, opset):
    a = _axis(attrs.get("axis", 1), x[0].ndim)
    return [x[0].reshape(int(np.prod(x[0].shape[:a])), -1)]


def _axes_arg(x, attrs, opset, since):
    if opset >= since:
        return None if len(x) < 2 or x[1] is None else [int(v) for v in x[1]]
    a = attrs.get("axes")
    return None if a is None else list(a)


def _squeeze(x, attrs, opset):
    axes = _axes_arg(x, attrs, opset, 13)
    if axes is None:
        return [np.squeeze(x[0])]
    return [np.squeeze(x[0], axis=tuple(_axis(a, x[0].ndim) for a in axes))]


def _unsqueeze(x, attrs, opset):
    axes = _axes_arg(x, attrs, opset, 13)
    nd = x[0].ndim + len(axes)
    r = x[0]
    for a in sorted(_axis(a, nd) for a in axes):
        r = np.expand_dims(r, a)
    return [r]


def _transpose(x, attrs, opset):
    perm = attrs.get("perm")
    return [np.transpose(x[0], perm)]


def memory_order(a):
    """a's axes from the largest stride to the smallest (its memory order: (0, 2, 3, 1) for a
    channels-last NCHW view)."""
    return tuple(sorted(range(a.ndim), key=lambda i: -a.strides[i]))


def inverse_order(order):
    """The axis permutation that undoes ``order``."""
    return _inverse_order(tuple(order))


def concat_order(xs):
    """The memory order of Concat's result: the inputs' own when they share one that is not
    plain (dnnq's channels-last tensors: joined in that order, so the copy streams and the
    result keeps the layout its consumers read), else C order."""
    nd = xs[0].ndim
    order = memory_order(xs[0])
    if nd >= 3 and order != tuple(range(nd)) and \
            all(v.ndim == nd and memory_order(v) == order for v in xs):
        return order
    return tuple(range(nd))


def _concat(x, attrs, opset):
    xs = [v for v in x if v is not None]
    nd = xs[0].ndim
    axis = attrs["axis"] % nd if nd else 0
    order = concat_order(xs)
    if order != tuple(range(nd)):
        out = np.concatenate([v.transpose(order) for v in xs], axis=order.index(axis))
        return [out.transpose(inverse_order(order))]
    return [np.concatenate(xs, axis=axis)]


def _slice(x, attrs, opset):
    data = x[0]
    if opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes = attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = [int(v) for v in x[1]], [int(v) for v in x[2]]
        axes = [int(v) for v in x[3]] if len(x) > 3 and x[3] is not None else \
            list(range(len(starts)))
        steps = [int(v) for v in x[4]] if len(x) > 4 and x[4] is not None else [1] * len(starts)
    sl = [slice(None)] * data.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _axis(a, data.ndim)
        n = data.shape[a]
        # clamp the int64 sentinels onnx exporters write (INT64_MAX / MIN)
        s = max(min(s, n), -n - 1)
        e = max(min(e, n), -n - 1)
        if st < 0 and e < -n:
            e = None
        sl[a] = slice(s, e, st)
    return [data[tuple(sl)]]


def _gather(x, attrs, opset):
    a = _axis(attrs.get("axis", 0), x[0].ndim)
    idx = x[1].astype(np.int64)
    idx = np.where(idx < 0, idx + x[0].shape[a], idx)
    return [np.take(x[0], idx, axis=a)]


def _shape(x, attrs, opset):
    s = np.array(x[0].shape, np.int64)
    start, end = attrs.get("start", 0), attrs.get("end")
    return [s[start:end]]


def _cast(x, attrs, opset):
    return [x[0].astype(ONNX_DTYPES[attrs["to"]])]


def _constant_of_shape(x, attrs, opset):
    v = attrs.get("value")
    v = np.zeros(1, F32) if v is None else np.asarray(v).reshape(-1)
    return [np.full([int(s) for s in x[0]], v[0], v.dtype)]


def _range(x, attrs, opset):
    return [np.arange(x[0], x[1], x[2]).astype(np.result_type(x[0], x[1], x[2]))]


def _expand(x, attrs, opset):
    shape = np.broadcast_shapes(x[0].shape, tuple(int(s) for s in x[1]))
    return [np.broadcast_to(x[0], shape)]


def _tile(x, attrs, opset):
    return [np.tile(x[0], [int(r) for r in x[1]])]


def _pad(x, attrs, opset):
    mode = attrs.get("mode", "constant")
    if opset < 11:
        pads, value = attrs["pads"], attrs.get("value", 0.0)
        axes = None
    else:
        pads = [int(p) for p in x[1]]
        value = x[2].reshape(-1)[0] if len(x) > 2 and x[2] is not None and x[2].size else 0
        axes = [int(a) for a in x[3]] if len(x) > 3 and x[3] is not None else None
    nd = x[0].ndim
    axes = list(range(nd)) if axes is None else [_axis(a, nd) for a in axes]
    k = len(axes)
    width = [(0, 0)] * nd
    for i, a in enumerate(axes):
        width[a] = (pads[i], pads[i + k])
    if any(p < 0 for w in width for p in w):
        raise Unimplemented("Pad: negative pads; dnnq.onnx pads with pads >= 0")
    if mode == "constant":
        return [np.pad(x[0], width, constant_values=value)]
    if mode == "reflect":  # by slices: np.pad's reflect costs a millisecond on small arrays
        r = x[0]
        for a, (lo, hi) in enumerate(width):
            if lo == 0 and hi == 0:
                continue
            n = r.shape[a]
            if lo >= n or hi >= n:
                raise InvalidArguments(f"Pad: reflect pads {lo}, {hi} along an axis of "
                                       f"{n}; expected pads < {n}")
            shape = list(r.shape)
            shape[a] = lo + n + hi
            out = np.empty(shape, r.dtype)
            at = [slice(None)] * r.ndim

            def along(sl):
                at[a] = sl
                return tuple(at)
            out[along(slice(lo, lo + n))] = r
            # mirrored without the edge element: source lo .. 1, then n - 2 .. n - 1 - hi
            out[along(slice(0, lo))] = r[along(slice(lo, 0, -1))]
            out[along(slice(lo + n, None))] = r[along(slice(n - 2, n - 2 - hi if hi < n - 1
                                                            else None, -1))]
            r = out
        return [r]
    return [np.pad(x[0], width, mode={"edge": "edge", "wrap": "wrap"}[mode])]


def _split(x, attrs, opset, n_out):
    a = _axis(attrs.get("axis", 0), x[0].ndim)
    split = x[1] if opset >= 13 and len(x) > 1 and x[1] is not None else attrs.get("split")
    if split is None:
        n = x[0].shape[a]
        k = -(-n // n_out)
        split = [k] * (n // k) + ([n % k] if n % k else [])
    idx = np.cumsum([int(s) for s in split])[:-1]
    return list(np.split(x[0], idx, axis=a))


def _reduce(fn):
    def op(x, attrs, opset):
        axes = attrs.get("axes")
        if axes is None and len(x) > 1 and x[1] is not None:
            axes = [int(a) for a in x[1]]
        keep = bool(attrs.get("keepdims", 1))
        if axes is None or len(axes) == 0:
            if attrs.get("noop_with_empty_axes", 0):
                return [x[0]]
            axes = None
        else:
            axes = tuple(_axis(a, x[0].ndim) for a in axes)
        return [np.asarray(fn(x[0], axis=axes, keepdims=keep)).astype(x[0].dtype, copy=False)]
    return op


def _softmax_np(x, attrs, opset):
    """Softmax over one axis (opset 13) or the dims from ``axis`` on (opsets 1 - 12); f32 on
    dnnq.Softmax (the same bits on every CPU), other dtypes in numpy."""
    a = attrs.get("axis", -1 if opset >= 13 else 1)
    v = x[0]
    shp = v.shape
    a = _axis(a, v.ndim) if v.ndim else 0
    if opset < 13:
        v = v.reshape(int(np.prod(shp[:a])), -1)
        a = 1
    if v.dtype == F32 and v.size:
        import dnnq
        from dnnq.memory import MemoryDesc
        d = MemoryDesc(v.shape if v.ndim else (1,), "f32")
        y = dnnq.Softmax("softmax", d, d, a).execute(
            {dnnq.DNNL_ARG_SRC: np.ascontiguousarray(v.reshape(d.dims))})
        return [y.reshape(shp)]
    e = np.exp(v - v.max(axis=a, keepdims=True))
    return [(e / e.sum(axis=a, keepdims=True)).reshape(shp).astype(F32)]


def _batchnorm(x, attrs, opset):
    """ONNX Runtime's order: a = (1 / sqrt(var + eps)) * scale, b = B - mean * a (f32),
    y = x * a + b."""
    eps = attrs.get("epsilon", 1e-5)
    shp = (1, -1) + (1,) * (x[0].ndim - 2)
    inv = ((F32(1) / np.sqrt(np.asarray(x[4], F32) + F32(eps))).astype(F32) *
           np.asarray(x[1], F32)).astype(F32)
    b = (np.asarray(x[2], F32) - (np.asarray(x[3], F32) * inv).astype(F32)).astype(F32)
    return [(x[0] * inv.reshape(shp) + b.reshape(shp)).astype(F32)]


def _layernorm(x, attrs, opset):
    a = _axis(attrs.get("axis", -1), x[0].ndim)
    axes = tuple(range(a, x[0].ndim))
    eps = F32(attrs.get("epsilon", 1e-5))
    mean = x[0].mean(axis=axes, keepdims=True)
    d = x[0] - mean
    var = (d * d).mean(axis=axes, keepdims=True)
    r = d / np.sqrt(var + eps) * x[1]
    if len(x) > 2 and x[2] is not None:
        r = r + x[2]
    return [r.astype(F32)]


def _where(x, attrs, opset):
    return [np.where(x[0], x[1], x[2])]


def _argmax(fn):
    def op(x, attrs, opset):
        a = _axis(attrs.get("axis", 0), x[0].ndim)
        r = fn(x[0], axis=a)
        if attrs.get("keepdims", 1):
            r = np.expand_dims(r, a)
        return [r.astype(np.int64)]
    return op


def _resize_nearest_index(n_in, n_out, scale, mode, nearest_mode):
    o = np.arange(n_out, dtype=np.float64)
    if mode == "asymmetric":
        src = o / scale
    elif mode == "align_corners":
        src = o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros_like(o)
    else:  # half_pixel and pytorch_half_pixel
        src = (o + 0.5) / scale - 0.5
        if mode == "pytorch_half_pixel" and n_out == 1:
            src = np.zeros_like(o)
    if nearest_mode == "floor":
        i = np.floor(src)
    elif nearest_mode == "ceil":
        i = np.ceil(src)
    elif nearest_mode == "round_prefer_ceil":
        i = np.floor(src + 0.5)
    else:  # round_prefer_floor
        i = np.ceil(src - 0.5)
    return np.clip(i, 0, n_in - 1).astype(np.int64)


def _repeat_factor(idx, n_in):
    """k when the nearest indices ``idx`` repeat each of the n_in inputs k times in order
    (an integer upscale: 0, 0, 1, 1, ...), 1 for an untouched axis, else None."""
    if idx is None:
        return 1
    k, rem = divmod(idx.size, n_in)
    if rem or not k or not np.array_equal(idx, np.arange(idx.size) // k):
        return None
    return k


def _repeat_each(x, reps):
    """Every element of x repeated reps[a] times along each axis a, laid out in x's memory
    order (a channels-last tensor stays channels-last)."""
    order = memory_order(x)
    big = np.empty([x.shape[i] * reps[i] for i in order], x.dtype)
    out = big.transpose(inverse_order(order))
    repeat_into(x, reps, out)
    return out


def repeat_into(x, reps, out):
    """Write x with every element repeated reps[a] times along each axis a into ``out`` (of
    shape x.shape[a] * reps[a], any strides: a slice of a larger tensor too): one
    broadcasting copy through a view that splits each axis of out into (element, repeat)."""
    shape, strides = [], []
    for n, k, st in zip(x.shape, reps, out.strides):
        shape += [n, k]
        strides += [st * k, st]
    v = np.lib.stride_tricks.as_strided(out, shape, strides, writeable=True)
    v[...] = x.reshape([d for n in x.shape for d in (n, 1)])


def nearest_repeats(data_shape, inputs, attrs, opset):
    """(output sizes, per-axis repeat factors, per-axis nearest indices) of a nearest Resize /
    Upsample; the factors are None unless every element repeats a whole number of times
    along each axis."""
    sizes, scales = resize_geometry(data_shape, inputs, attrs, opset)
    ct = attrs.get("coordinate_transformation_mode", "half_pixel" if opset >= 11 else
                   "asymmetric")
    nm = attrs.get("nearest_mode", "round_prefer_floor" if opset >= 11 else "floor")
    if opset < 11:
        nm = "floor"
    idxs = [None if sizes[a] == data_shape[a] and scales[a] == 1 else
            _resize_nearest_index(data_shape[a], sizes[a], scales[a], ct, nm)
            for a in range(len(data_shape))]
    reps = [_repeat_factor(i, n) for i, n in zip(idxs, data_shape)]
    return sizes, (reps if all(k is not None for k in reps) else None), idxs


def resize_geometry(x_shape, inputs, attrs, opset):
    """Output shape and per-axis scales of a Resize / Upsample node."""
    nd = len(x_shape)
    if opset < 10 or (opset == 10 and len(inputs) == 2):  # Upsample / Resize-10: scales
        scales = [float(s) for s in inputs[1]]
        sizes = [int(math.floor(n * s)) for n, s in zip(x_shape, scales)]
        return sizes, scales
    roi_scales = inputs[2] if len(inputs) > 2 else None
    sizes = inputs[3] if len(inputs) > 3 else None
    if sizes is not None and sizes.size:
        sizes = [int(s) for s in sizes]
        return sizes, [s / n for s, n in zip(sizes, x_shape)]
    scales = [float(s) for s in roi_scales]
    return [int(math.floor(n * s)) for n, s in zip(x_shape, scales)][:nd], scales


def _resize(x, attrs, opset):
    mode = attrs.get("mode", "nearest")
    data = x[0]
    if mode == "nearest":
        _, reps, idxs = nearest_repeats(data.shape, x, attrs, opset)
        if reps is not None:
            return [_repeat_each(data, reps)]
        r = data
        for a, idx in enumerate(idxs):
            if idx is not None:
                r = np.take(r, idx, axis=a)
        return [r]
    if mode == "linear":
        sizes, scales = resize_geometry(data.shape, x, attrs, opset)
        ct = attrs.get("coordinate_transformation_mode", "half_pixel" if opset >= 11 else
                       "asymmetric")
        r = data.astype(F32)
        for a in range(data.ndim):
            n_in, n_out = data.shape[a], sizes[a]
            if n_out == n_in and scales[a] == 1:
                continue
            o = np.arange(n_out, dtype=np.float64)
            if ct == "asymmetric":
                src = o / scales[a]
            elif ct == "align_corners":
                src = o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros_like(o)
            else:
                src = (o + 0.5) / scales[a] - 0.5
                if ct == "pytorch_half_pixel" and n_out == 1:
                    src = np.zeros_like(o)
            src = np.clip(src, 0, n_in - 1)
            i0 = np.floor(src).astype(np.int64)
            i1 = np.minimum(i0 + 1, n_in - 1)
            w = (src - i0).astype(F32)
            shp = [1] * data.ndim
            shp[a] = n_out
            w = w.reshape(shp)
            r = np.take(r, i0, axis=a) * (1 - w) + np.take(r, i1, axis=a) * w
        return [r.astype(F32)]
    raise Unimplemented(f"Resize: mode {mode!r}; dnnq.onnx resizes with 'nearest' and 'linear'")


def _quantize_linear(x, attrs, opset):
    from dnnq.onnx.quant import quantize_np
    zp = x[2] if len(x) > 2 else None
    return [quantize_np(x[0], x[1], zp, attrs.get("axis", 1))]


def _dequantize_linear(x, attrs, opset):
    from dnnq.onnx.quant import dequantize_np
    zp = x[2] if len(x) > 2 else None
    return [dequantize_np(x[0], x[1], zp, attrs.get("axis", 1))]


def _dynamic_quantize_linear(x, attrs, opset):
    v = x[0].astype(F32)
    lo = min(F32(0), F32(v.min()) if v.size else F32(0))
    hi = max(F32(0), F32(v.max()) if v.size else F32(0))
    scale = F32((hi - lo) / F32(255)) if hi > lo else F32(0)
    zp = np.uint8(np.clip(np.rint(F32(0) - lo / scale), 0, 255)) if scale else np.uint8(0)
    q = np.clip(np.rint(v / scale) + F32(zp), 0, 255).astype(np.uint8) if scale else \
        np.full(v.shape, zp, np.uint8)
    return [q, np.asarray(scale, F32), np.asarray(zp, np.uint8)]


def _hardsigmoid(v, a):
    return np.clip(F32(a.get("alpha", 0.2)) * v + F32(a.get("beta", 0.5)), 0, 1)


def _hardswish(v, a):
    return v * np.clip(v * F32(1 / 6) + F32(0.5), 0, 1)


def _softplus(v):
    return np.where(v > 20, v, np.log1p(np.exp(np.minimum(v, 20))))


def _fake_quantize(x, attrs, opset):
    """OpenVINO's FakeQuantize (levels other than 256 / 255, or bounds computed at run time)."""
    v, il, ih, ol, oh = (np.asarray(t, F32) for t in x[:5])
    L = F32(attrs.get("levels", 256) - 1)
    with np.errstate(all="ignore"):
        q = np.rint((v - il) / (ih - il) * L) / L * (oh - ol) + ol
    r = np.where(v <= np.minimum(il, ih), ol, np.where(v > np.maximum(il, ih), oh, q))
    return [r.astype(F32)]


OPS = {
    "FakeQuantizeF32": _fake_quantize,
    "Identity": lambda x, a, o: [x[0]],
    "Dropout": lambda x, a, o: [x[0]],
    "Add": _binary(np.add), "Sub": _binary(np.subtract), "Mul": _binary(np.multiply),
    "Div": _binary(_div), "Pow": _binary(lambda a, b: np.power(a, b).astype(a.dtype)),
    "Max": lambda x, a, o: [np.maximum.reduce(x) if len(x) > 1 else x[0]],
    "Min": lambda x, a, o: [np.minimum.reduce(x) if len(x) > 1 else x[0]],
    "Equal": _binary(np.equal), "Less": _binary(np.less), "Greater": _binary(np.greater),
    "LessOrEqual": _binary(np.less_equal), "GreaterOrEqual": _binary(np.greater_equal),
    "And": _binary(np.logical_and), "Or": _binary(np.logical_or),
    "Not": lambda x, a, o: [np.logical_not(x[0])],
    "Mod": _binary(np.fmod),
    "Sqrt": _unary(lambda v, a: np.sqrt(v)), "Exp": _unary(_toolkit_eltwise("exp", lambda v, a: np.exp(v))),
    "Log": _unary(_toolkit_eltwise("log", lambda v, a: np.log(v))), "Abs": _unary(lambda v, a: np.abs(v)),
    "Neg": _unary(lambda v, a: -v), "Reciprocal": _unary(lambda v, a: 1 / v),
    "Floor": _unary(lambda v, a: np.floor(v)), "Ceil": _unary(lambda v, a: np.ceil(v)),
    "Round": _unary(lambda v, a: np.rint(v)), "Sign": _unary(lambda v, a: np.sign(v)),
    "Erf": _unary(lambda v, a: _erf(v)),
    "Relu": _unary(lambda v, a: np.maximum(v, 0)),
    "LeakyRelu": _unary(lambda v, a: np.where(v >= 0, v, F32(a.get("alpha", 0.01)) * v)),
    "Elu": _unary(_toolkit_eltwise(
        "elu", lambda v, a: np.where(v > 0, v, F32(a.get("alpha", 1.0)) * np.expm1(v)),
        alpha=lambda a: a.get("alpha", 1.0))),
    "Sigmoid": _unary(_toolkit_eltwise("logistic", lambda v, a: _sigmoid(v))),
    "Tanh": _unary(_toolkit_eltwise("tanh", lambda v, a: np.tanh(v))),
    "HardSigmoid": _unary(_hardsigmoid),
    "HardSwish": _unary(_hardswish),
    "Softplus": _unary(_toolkit_eltwise("soft_relu", lambda v, a: _softplus(v), alpha=1.0)),
    "Mish": _unary(_toolkit_eltwise("mish", lambda v, a: v * np.tanh(_softplus(v)))),
    "Gelu": _unary(lambda v, a: _toolkit_eltwise(
        "gelu_tanh" if a.get("approximate", "none") == "tanh" else "gelu_erf", _gelu)(v, a)),
    "Clip": _clip,
    "Reshape": _reshape, "Flatten": _flatten, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze,
    "Transpose": _transpose, "Concat": _concat, "Slice": _slice, "Gather": _gather,
    "Shape": _shape, "Size": lambda x, a, o: [np.asarray(x[0].size, np.int64)],
    "Cast": _cast, "ConstantOfShape": _constant_of_shape, "Range": _range,
    "Expand": _expand, "Tile": _tile, "Pad": _pad, "Where": _where,
    "ReduceMean": _reduce(np.mean), "ReduceSum": _reduce(np.sum),
    "ReduceMax": _reduce(np.max), "ReduceMin": _reduce(np.min),
    "ReduceProd": _reduce(np.prod),
    "ReduceL2": _reduce(lambda v, axis, keepdims: np.sqrt(np.sum(v * v, axis=axis,
                                                                  keepdims=keepdims))),
    "ArgMax": _argmax(np.argmax), "ArgMin": _argmax(np.argmin),
    "Softmax": _softmax_np,
    "BatchNormalization": _batchnorm, "LayerNormalization": _layernorm,
    "Resize": _resize, "Upsample": _resize,
    "QuantizeLinear": _quantize_linear, "DequantizeLinear": _dequantize_linear,
    "DynamicQuantizeLinear": _dynamic_quantize_linear,
}

# ops whose numpy form has more outputs than the function returns by default
MULTI_OUTPUT = {"Split": _split}

# reductions over a whole tensor's elements that are not element-wise; ops whose result
# only moves data (exact on a quantized grid: they commute with dequantization)
MOVE_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Slice",
            "Gather", "Expand", "Tile", "Dropout"}


def run_op(op_type, inputs, attrs, opset, n_out=1):
    """Run one op in numpy; InvalidArguments for inputs numpy refuses."""
    try:
        if op_type in MULTI_OUTPUT:
            return MULTI_OUTPUT[op_type](inputs, attrs, opset, n_out)
        return OPS[op_type](inputs, attrs, opset)
    except (Unimplemented, InvalidArguments):
        raise
    except KeyError as exc:
        raise Unimplemented(f"{op_type}: {exc} is not supported (e.g. a data type dnnq.onnx "
                            "does not convert)") from None
    except (ValueError, IndexError, TypeError) as exc:
        shapes = [None if v is None else tuple(v.shape) for v in inputs]
        raise InvalidArguments(f"{op_type}: inputs of shapes {shapes} are not valid for the op "
                               f"({exc})") from None


def has_op(op_type):
    return op_type in OPS or op_type in MULTI_OUTPUT
