"""``dnnq.onnx.quantize``: an f32 ONNX model -> a standard QDQ model (post-training, static).

The layout written (docs/onnx_quantize.md):

* **weights** of every quantized ``Conv`` / ``ConvTranspose`` / ``MatMul`` / ``Gemm``: an int8
  initializer and a ``DequantizeLinear`` (symmetric: s8 with zero point 0, or u8 with zero
  point 128), per output channel (``axis`` 0 for Conv and Gemm with ``transB=1``, 1 for
  ConvTranspose and Gemm, the last axis for MatMul) or per tensor;
* **bias** (Conv / ConvTranspose ``B``, Gemm ``C`` of one value per column): int32 with the
  scale ``source scale x weight scale`` and zero point 0, as ONNX Runtime's quantizer writes
  it, so that every runtime fuses the layer; f32 where a value would not fit in int32;
* **activations**: a ``QuantizeLinear -> DequantizeLinear`` pair on every source of a quantized
  node (per tensor, u8 or s8, asymmetric), placed once on the tensor and read by all its
  consumers except the excluded nodes (which keep the f32 tensor) and the graph outputs.
  Outputs of quantized nodes get no pair of their own: the next quantized node's source pair
  rounds them, so the chain between two layers (bias, batch norm, activation, residual add)
  stays f32 in the model, and a runtime fuses it into the layer's epilogue.

Activation ranges come from running the f32 model through ``dnnq.onnx.InferenceSession`` on
the calibration inputs, with the calibrated tensors added as graph outputs of a copy of the
model; scales and zero points are ``dnnq.calibrate``'s.
"""
import math
from numbers import Integral

import numpy as np

from dnnq import calibrate
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.onnx.graph import ROUNDING_KEY, load_model

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("dnnq.onnx needs the onnx package: pip install 'dnnq[onnx]' "
                      f"(or pip install onnx) [{_exc}]") from None

__all__ = ["quantize"]

QUANTIZABLE = ("Conv", "ConvTranspose", "MatMul", "Gemm")
#: recurrent ops: a calibrated pair on their input X only (their weights stay f32 in the
#: model; dnnq's session quantizes them, and takes X's range from the pair)
RECURRENT = ("LSTM", "GRU", "RNN")
METHODS = ("minmax", "percentile")
#: percentile method: the range kept, [100 - PCT, PCT] percent of the values seen
PERCENTILE = 99.99
#: percentile method: at most this many values kept per tensor (a deterministic stride
#: through each run's values, halved when the pool is full)
SAMPLE_CAP = 1 << 17
# ops whose presence means the model is quantized already
_QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
              "ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "QGemm", "FakeQuantize",
              "QLinearAdd", "QLinearMul", "DynamicQuantizeLSTM"}
_NP_DT = {"u8": np.uint8, "s8": np.int8}


def quantize(model, calibration, *, per_channel=True, activations="u8", weights="s8",
             method="minmax", op_types=QUANTIZABLE, exclude=()):
    """Quantize an f32 ONNX model into a QDQ model (post-training, static).

    The weights of the quantized Conv / ConvTranspose / MatMul / Gemm nodes become int8
    initializers with a ``DequantizeLinear`` (per output channel or per tensor), their bias
    int32, and their sources get a ``QuantizeLinear -> DequantizeLinear`` pair with the scale
    and zero point calibrated by running the f32 model on dnnq over ``calibration``
    (docs/onnx_quantize.md).

    Parameters
    ----------
    model : str, os.PathLike, bytes or onnx.ModelProto
        An f32 model (not modified); one holding quantized nodes already is refused.
    calibration : iterable of dict
        Input dicts ``{input name: numpy array}`` as ``InferenceSession.run`` takes them; at
        least one.
    per_channel : bool, default True
        One weight scale per output channel (True) or per tensor.
    activations : {"u8", "s8"}
        The activations' data type (asymmetric, per tensor).
    weights : {"s8", "u8"}
        The weights' data type (symmetric: zero point 0, or 128 for u8).
    method : {"minmax", "percentile"}
        ``"minmax"``: the range seen; ``"percentile"``: from the 0.01th to the 99.99th
        percentile of the values seen.
    op_types : sequence of str
        Which of ``"Conv"``, ``"ConvTranspose"``, ``"MatMul"``, ``"Gemm"`` to quantize; with
        ``"LSTM"``, ``"GRU"`` or ``"RNN"`` their input gets a calibrated pair too.
    exclude : sequence of str
        Names of nodes left f32 (an unnamed node: its first output's name).

    Returns
    -------
    onnx.ModelProto
        The QDQ model (opset 13 or later), checked by ``onnx.checker``.

    Raises
    ------
    InvalidArguments
        An argument outside the accepted values (the message names it), a calibration item
        that does not fit the model's inputs, NaN or infinity in a calibrated tensor, a
        quantized or malformed model.
    Unimplemented
        A model whose opset cannot be brought to 13, or an op dnnq cannot run (calibration
        runs the model on dnnq).

    Examples
    --------
    >>> import numpy as np, onnx
    >>> from onnx import helper, numpy_helper, TensorProto
    >>> import dnnq.onnx
    >>> w = numpy_helper.from_array(np.random.default_rng(0).standard_normal(
    ...     (4, 8)).astype(np.float32), "w")
    >>> g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [w])
    >>> m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    >>> x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    >>> q = dnnq.onnx.quantize(m, [{"x": x}])
    >>> sorted({n.op_type for n in q.graph.node})
    ['DequantizeLinear', 'MatMul', 'QuantizeLinear']
    >>> y = dnnq.onnx.InferenceSession(q).run(None, {"x": x})[0]
    >>> bool(np.allclose(y, x @ numpy_helper.to_array(w), atol=0.1))
    True
    """
    opts = _check_options(per_channel, activations, weights, method, op_types, exclude)
    m = load_model(model)
    _check_f32(m)
    m = _prepare(m)
    plan = _select(m, opts)
    feeds = _check_calibration(calibration)
    ranges = _calibrate(m, [t for t in plan.tensors], feeds, opts)
    return _rewrite(m, plan, ranges, opts)


# --- arguments -----------------------------------------------------------------------------
class _Options:
    __slots__ = ("per_channel", "act", "wt", "method", "op_types", "exclude")


def _check_options(per_channel, activations, weights, method, op_types, exclude):
    o = _Options()
    if not isinstance(per_channel, (bool, np.bool_)):
        raise InvalidArguments(f"per_channel: got {per_channel!r}; expected True or False")
    o.per_channel = bool(per_channel)
    for name, v in (("activations", activations), ("weights", weights)):
        if not isinstance(v, str) or v not in _NP_DT:
            raise InvalidArguments(f"{name}: got {v!r}; expected 'u8' or 's8'")
    o.act, o.wt = activations, weights
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidArguments(f"method: got {method!r}; expected 'minmax' or 'percentile'")
    o.method = method
    o.op_types = _names("op_types", op_types)
    for t in o.op_types:
        if t not in QUANTIZABLE + RECURRENT:
            raise InvalidArguments(f"op_types: got {t!r} in {tuple(op_types)!r}; expected op "
                                   f"types among {QUANTIZABLE + RECURRENT}")
    o.exclude = _names("exclude", exclude)
    return o


def _names(arg, v):
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
        raise InvalidArguments(f"{arg}: got {v!r}; expected a tuple or list of strings")
    out = list(v)
    bad = [x for x in out if not isinstance(x, str)]
    if bad:
        raise InvalidArguments(f"{arg}: got {bad[0]!r} of type {type(bad[0]).__name__} in it; "
                               "expected a tuple or list of strings")
    return set(out)


def _check_f32(m):
    for n in m.graph.node:
        if n.op_type in _QUANT_OPS:
            raise InvalidArguments(f"model: node {n.name or n.output[0]!r} is a {n.op_type}: the "
                                   "model is quantized already; expected an f32 model")


def _check_calibration(calibration):
    if isinstance(calibration, dict) or isinstance(calibration, (str, bytes)) or \
            not hasattr(calibration, "__iter__"):
        raise InvalidArguments(f"calibration: got {type(calibration).__name__}; expected an "
                               "iterable of input dicts {input name: numpy array}")
    return calibration


# --- 1. the model as the quantizer needs it ------------------------------------------------
def _prepare(m):
    """Opset >= 13 (per-axis DequantizeLinear) and Constant-node tensors as initializers
    (so that weights written as Constant nodes are quantized as weights)."""
    from onnx import version_converter
    ver = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
    if ver is None:
        raise InvalidArguments("model: no import of the default ONNX domain; expected an "
                               "opset_import entry for ''")
    if ver < 13:
        try:
            m = version_converter.convert_version(m, 13)
        except Exception as exc:
            raise Unimplemented(f"model: opset {ver}, and onnx's version converter cannot "
                                f"bring it to 13 (needed for per-axis DequantizeLinear): "
                                f"{exc}") from None
    g = m.graph
    keep = []
    for n in g.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and \
                len(n.attribute) == 1 and n.attribute[0].name == "value":
            t = TensorProto()
            t.CopyFrom(n.attribute[0].t)
            t.name = n.output[0]
            g.initializer.append(t)
        else:
            keep.append(n)
    del g.node[:]
    g.node.extend(keep)
    return m


# --- 2. what to quantize -------------------------------------------------------------------
class _Plan:
    def __init__(self):
        self.tensors = []      # activation tensors to calibrate (ordered, unique)
        self.nodes = []        # (node index, kind, weight axis or None, weights input)
        self.excluded = set()  # node indices that keep f32 inputs


def _node_name(n):
    return n.name or (n.output[0] if n.output else "")


def _select(m, o):
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    names = {_node_name(n) for n in g.node}
    unknown = sorted(o.exclude - names)
    if unknown:
        raise InvalidArguments(f"exclude: {unknown[0]!r} is not the name of a node of the "
                               "model (nor the first output of an unnamed node)")
    plan = _Plan()
    seen = set()

    def act(name):
        if name not in seen:
            seen.add(name)
            plan.tensors.append(name)

    def is_f32_init(name, ndims):
        t = inits.get(name)
        return t is not None and t.data_type == TensorProto.FLOAT and len(t.dims) in ndims

    for i, n in enumerate(g.node):
        if _node_name(n) in o.exclude:
            plan.excluded.add(i)
            continue
        op = n.op_type
        if op not in o.op_types or n.domain not in ("", "ai.onnx"):
            continue
        if len(n.input) < 2 or n.input[0] in inits:
            continue
        x, w = n.input[0], n.input[1]
        if op in RECURRENT:
            act(x)
            continue
        if op in ("Conv", "ConvTranspose"):
            if not is_f32_init(w, (3, 4, 5)):
                continue
            plan.nodes.append((i, op, 1 if op == "ConvTranspose" else 0, w))
            act(x)
        elif op == "Gemm":
            a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
            if a.get("transA", 0) or not is_f32_init(w, (2,)):
                continue
            plan.nodes.append((i, op, 0 if a.get("transB", 0) else 1, w))
            act(x)
        elif op == "MatMul":
            if w in inits:
                t = inits[w]
                if not is_f32_init(w, tuple(range(2, 7))):
                    continue
                # batched (3-D+) weights: one scale per tensor (dnnq's batched MatMul takes
                # a common weights scale); 2-D: per column
                plan.nodes.append((i, op, 1 if len(t.dims) == 2 else None, w))
            else:  # two activations (attention): both quantized per tensor
                plan.nodes.append((i, op, None, None))
                act(w)
            act(x)
    return plan


# --- 3. calibration ------------------------------------------------------------------------
def _calibrate(m, tensors, feeds, o):
    """{tensor: (scale, zero point)} from the f32 model run on the calibration inputs."""
    from dnnq.onnx.session import InferenceSession
    if not tensors:
        return {}
    probe = onnx.ModelProto()
    probe.CopyFrom(m)
    outs = {v.name for v in probe.graph.output}
    ins = {v.name for v in probe.graph.input}
    for t in tensors:
        if t not in outs and t not in ins:
            probe.graph.output.append(helper.make_tensor_value_info(t, TensorProto.FLOAT, None))
    # (the ranges measured as before the default rounding became ONNX Runtime's: f64 folds
    # of BatchNormalization into its convolution)
    sess = InferenceSession(probe, rounding="chain")
    stats = {t: None for t in tensors}
    n_runs = 0
    for k, feed in enumerate(feeds):
        if not isinstance(feed, dict):
            raise InvalidArguments(f"calibration[{k}]: got {type(feed).__name__}; expected a "
                                   "dict {input name: numpy array}")
        try:
            got = sess.run(None, feed)
        except InvalidArguments as exc:
            raise InvalidArguments(f"calibration[{k}]: {exc}") from None
        values = dict(zip([v.name for v in sess.get_outputs()], got))
        for t in tensors:
            v = np.asarray(feed[t] if t in ins else values[t])
            if v.dtype.kind != "f" or v.size == 0:
                raise InvalidArguments(f"calibration[{k}]: tensor {t!r} (an input of a "
                                       f"quantized node) is {v.dtype} of shape {v.shape}; "
                                       "expected float values")
            if not np.all(np.isfinite(v)):
                raise InvalidArguments(f"calibration[{k}]: tensor {t!r} holds NaN or infinity "
                                       "on this input; expected finite activations")
            stats[t] = _accumulate(stats[t], v, o.method)
        n_runs += 1
    if n_runs == 0:
        raise InvalidArguments("calibration: got no input dict; expected at least one")
    out = {}
    for t in tensors:
        s = stats[t]
        if o.method == "minmax":
            out[t] = calibrate.minmax(np.asarray(s, np.float64), o.act)
        else:
            out[t] = calibrate.percentile(s, o.act, pct=PERCENTILE)
    return out


def _accumulate(state, v, method):
    if method == "minmax":
        lo, hi = float(v.min()), float(v.max())
        return (lo, hi) if state is None else (min(state[0], lo), max(state[1], hi))
    flat = v.reshape(-1)
    step = max(1, math.ceil(flat.size / SAMPLE_CAP))
    sample = np.array(flat[::step], np.float32)
    pool = sample if state is None else np.concatenate([state, sample])
    while pool.size > SAMPLE_CAP:
        pool = pool[::2]
    return pool


# --- 4. the QDQ model ----------------------------------------------------------------------
class _Names:
    """Fresh value / node names (never one the model uses)."""

    def __init__(self, g):
        self.used = {t.name for t in g.initializer} | {v.name for v in g.input} | \
            {v.name for v in g.output} | {x for n in g.node for x in list(n.input) +
                                          list(n.output)} | {n.name for n in g.node}

    def __call__(self, base):
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name


def _weights_q(w, axis, o):
    """(int8 / uint8 array, f32 scale, zero point) of symmetric weights; per tensor when
    ``axis`` is None."""
    scale, zp = calibrate.minmax(w, o.wt, axis=axis, symmetric=True)
    shp = [1] * w.ndim
    if axis is not None:
        shp[axis] = -1
    z = zp.astype(np.int64).reshape(shp)
    q = np.rint(w.astype(np.float64) / scale.astype(np.float64).reshape(shp)) + z
    lo, hi = (-127, 127) if o.wt == "s8" else (1, 255)
    q = np.clip(q, lo, hi).astype(_NP_DT[o.wt])
    return q, scale.astype(np.float32), zp.astype(_NP_DT[o.wt])


def _rewrite(m, plan, ranges, o):
    g = m.graph
    name = _Names(g)
    inits = {t.name: t for t in g.initializer}
    consumers = {}
    for i, n in enumerate(g.node):
        for x in n.input:
            consumers.setdefault(x, []).append(i)
    head, after = [], {}   # new nodes before the graph / after the node producing a value
    new_inits = []
    graph_outs = {v.name for v in g.output}
    producer = {x: i for i, n in enumerate(g.node) for x in n.output}

    def const(base, arr):
        nm = name(base)
        new_inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    # activations: Q -> DQ once per tensor, read by every consumer but the excluded nodes
    dq_of = {}
    for t in plan.tensors:
        scale, zp = ranges[t]
        s = const(f"{t}_scale", np.asarray(scale, np.float32).reshape(()))
        z = const(f"{t}_zero_point", np.asarray(zp).astype(_NP_DT[o.act]).reshape(()))
        tq, tdq = name(f"{t}_quantized"), name(f"{t}_dequantized")
        pair = [helper.make_node("QuantizeLinear", [t, s, z], [tq],
                                 name=name(f"{t}_QuantizeLinear")),
                helper.make_node("DequantizeLinear", [tq, s, z], [tdq],
                                 name=name(f"{t}_DequantizeLinear"))]
        if t in producer:
            after.setdefault(producer[t], []).extend(pair)
        else:
            head.extend(pair)
        dq_of[t] = tdq
        for i in consumers.get(t, []):
            if i in plan.excluded:
                continue
            n = g.node[i]
            for k, x in enumerate(n.input):
                if x == t:
                    n.input[k] = tdq

    # weights and biases
    wq_done = {}
    for i, op, axis, w in plan.nodes:
        n = g.node[i]
        if w is None:
            continue
        if not o.per_channel:
            axis = None
        key = (w, axis)
        if key not in wq_done:
            warr = numpy_helper.to_array(inits[w]).astype(np.float32)
            q, ws, wz = _weights_q(warr, axis, o)
            qn = const(f"{w}_quantized", q)
            sn = const(f"{w}_scale", ws)
            zn = const(f"{w}_zero_point", wz)
            wdq = name(f"{w}_dequantized")
            attrs = {} if axis is None else {"axis": int(axis)}
            head.append(helper.make_node("DequantizeLinear", [qn, sn, zn], [wdq],
                                         name=name(f"{w}_DequantizeLinear"), **attrs))
            wq_done[key] = (wdq, ws)
        wdq, ws = wq_done[key]
        n.input[1] = wdq
        _quantize_bias(n, op, ws, ranges, dq_of, inits, const, name, head, o)

    # drop the f32 weights nothing reads any more
    still = {x for n in g.node for x in n.input} | graph_outs
    kept = [t for t in g.initializer if t.name in still]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)

    nodes = list(head)
    for i, n in enumerate(g.node):
        nodes.append(n)
        nodes.extend(after.get(i, []))
    del g.node[:]
    g.node.extend(nodes)
    md = m.metadata_props.add()
    md.key = "dnnq.quantize"
    md.value = (f"per_channel={o.per_channel} activations={o.act} weights={o.wt} "
                f"method={o.method} op_types={','.join(sorted(o.op_types))}")
    # dnnq's sessions run this file rounding once per fused chain (what its accuracy was
    # measured with, docs/onnx_quantize.md); other runtimes ignore the entry
    md = m.metadata_props.add()
    md.key, md.value = ROUNDING_KEY, "chain"
    onnx.checker.check_model(m)
    return m


def _quantize_bias(n, op, ws, ranges, dq_of, inits, const, name, head, o):
    """Conv / ConvTranspose B and Gemm C (one value per column) as int32 with the scale
    source scale x weight scale; left f32 if a value would not fit."""
    if op not in ("Conv", "ConvTranspose", "Gemm") or len(n.input) < 3 or not n.input[2]:
        return
    b = n.input[2]
    t = inits.get(b)
    if t is None or t.data_type != TensorProto.FLOAT or len(t.dims) != 1:
        return
    barr = numpy_helper.to_array(t).astype(np.float64)
    src = next((k for k, v in dq_of.items() if v == n.input[0]), None)
    if src is None:
        return
    sx = float(np.asarray(ranges[src][0]))
    a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
    sw = np.asarray(ws, np.float64).reshape(-1)
    if op == "Gemm":
        if float(a.get("beta", 1.0)) != 1.0:
            return
    if op == "ConvTranspose" and sw.size > 1 and sw.size != barr.size:
        sw = np.tile(sw, barr.size // sw.size)  # per-axis-1 scales repeat over the groups
    if sw.size not in (1, barr.size):
        return
    bs = (np.float32(sx) * sw.astype(np.float32)).astype(np.float32)
    bs = bs.reshape(()) if sw.size == 1 else np.broadcast_to(bs, barr.shape).copy()
    if np.any(bs == 0):
        return
    q = np.rint(barr / bs.astype(np.float64))
    if np.any(np.abs(q) > 2 ** 31 - 1):
        return
    qn = const(f"{b}_quantized", q.astype(np.int32))
    sn = const(f"{b}_scale", bs)
    zn = const(f"{b}_zero_point", np.zeros(bs.shape, np.int32))
    bdq = name(f"{b}_dequantized")
    attrs = {"axis": 0} if bs.ndim == 1 else {}
    head.append(helper.make_node("DequantizeLinear", [qn, sn, zn], [bdq],
                                 name=name(f"{b}_DequantizeLinear"), **attrs))
    n.input[2] = bdq
