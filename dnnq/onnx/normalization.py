"""Layer normalization written out in element-wise ops, as exporters of older opsets write it
(paddle2onnx for PP-OCRv4's recognizer, PyTorch before opset 17):

    mean = ReduceMean(x, axes);  d = x - mean
    y = d / Sqrt(ReduceMean(Pow(d, 2), axes) + eps) * gamma + beta

becomes one LayerNormalization step (ops_numpy's, in f32) instead of about twelve numpy and
int8 steps.  A quantized model has a ``QuantizeLinear -> DequantizeLinear`` pair after most of
these ops; they are skipped as inside a fused chain (rounding="chain"); a session rounding at
every QuantizeLinear takes the pattern only without pairs.
"""
import numpy as np

from dnnq.onnx.fusion import LayerSpec


def match_layernorm(fuser, mean1):
    """A LayerSpec of kind "layernorm" for the pattern starting at ReduceMean ``mean1``, or
    None.  ``spec.attrs``: the LayerNormalization attributes; ``spec.weights`` /
    ``spec.bias``: the names of the constant scale and shift (None: absent)."""
    p = fuser.p
    axes = _trailing_axes(p, mean1)
    if axes is None:
        return None
    x = mean1.input[0]
    nodes, skipped = [mean1], []

    def step(v, op):
        """The sole reader of v (past a skipped pair) when its op type is ``op``."""
        nxt, pair = fuser.through_qdq(v)
        u = fuser.sole_user(nxt, op)
        if u is None:
            return None
        skipped.extend(pair)
        return u

    sub = step(mean1.output[0], "Sub")
    if sub is None or list(sub.input) != [x, fuser.through_qdq(mean1.output[0])[0]]:
        return None
    d, pair = fuser.through_qdq(sub.output[0])
    readers = fuser.users(d)
    if not readers or len(readers) != 2 or len(p.graph.consumers.get(d, [])) != 2:
        return None
    ops = {u.op_type: u for u in readers}
    pow_, div = ops.get("Pow"), ops.get("Div")
    if pow_ is None or div is None or list(pow_.input[:1]) != [d] or div.input[0] != d or \
            not _scalar(fuser, pow_.input[1], 2.0):
        return None
    skipped += pair
    mean2 = step(pow_.output[0], "ReduceMean")
    if mean2 is None or _trailing_axes(p, mean2) != axes:
        return None
    add_eps = step(mean2.output[0], "Add")
    if add_eps is None:
        return None
    eps = fuser.const(add_eps.input[1])
    if eps is None or np.asarray(eps).size != 1:
        return None
    root = step(add_eps.output[0], "Sqrt")
    if root is None:
        return None
    nxt, pair = fuser.through_qdq(root.output[0])
    if div.input[1] != nxt or fuser.sole_user(nxt, "Div") is not div:
        return None
    skipped += pair
    nodes += [sub, pow_, mean2, add_eps, root, div]
    out, gamma, beta = div.output[0], None, None
    for op in ("Mul", "Add"):  # gamma, then beta
        if op == "Add" and gamma is None:
            break
        kept = len(skipped)
        u = step(out, op)
        if u is None or not _vector(fuser, u):
            del skipped[kept:]  # step() took the pair before an op that is not ours
            break
        c = _other(u, fuser.through_qdq(out)[0])
        if op == "Mul":
            gamma = c
        else:
            beta = c
        nodes.append(u)
        out = u.output[0]
    if skipped and p.round_every_quantize:
        return None
    spec = LayerSpec("layernorm", mean1)
    spec.nodes = nodes + skipped
    spec.src, spec.dst = x, out
    spec.attrs = {"axis": -axes, "epsilon": float(np.asarray(eps).reshape(-1)[0])}
    spec.weights, spec.bias = gamma, beta
    return spec


def _trailing_axes(p, node):
    """k when the ReduceMean averages the last k dims (negative axes, keepdims), else None."""
    a = p.attrs(node)
    axes = a.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1]:
        c = p.consts.get(node.input[1])
        axes = None if c is None else [int(v) for v in np.asarray(c).reshape(-1)]
    if not axes or not int(a.get("keepdims", 1)):
        return None
    k = len(axes)
    return k if sorted(axes) == list(range(-k, 0)) else None


def _scalar(fuser, name, value):
    c = fuser.const(name)
    return c is not None and np.asarray(c).size == 1 and float(np.asarray(c).reshape(-1)[0]) == \
        value


def _vector(fuser, node):
    """A Mul / Add of the running value with a constant (gamma / beta)."""
    return len(node.input) == 2 and any(fuser.const(x) is not None for x in node.input)


def _other(node, v):
    return node.input[1] if node.input[0] == v else node.input[0]
