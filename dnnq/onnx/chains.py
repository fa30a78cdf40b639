"""The rules of the chain after a fused layer: which ONNX ops are eltwise post-ops, the
gated activations (swish, hardswish), constant binary ops, and folding an affine op
(BatchNormalization, a constant Add / Mul ...) into the layer's bias and weights scales."""
import numpy as np

from dnnq.errors import InvalidArguments

F32 = np.float32


# unary ONNX op -> (dnnq eltwise alg, alpha, beta) from the node's attributes
def _eltwise_of(op, attrs, inputs, consts):
    if op == "Relu":
        return ("relu", 0.0, 0.0)
    if op == "LeakyRelu":
        return ("relu", float(attrs.get("alpha", 0.01)), 0.0)
    if op == "Sigmoid":
        return ("logistic", 0.0, 0.0)
    if op == "Tanh":
        return ("tanh", 0.0, 0.0)
    if op == "Elu":
        return ("elu", float(attrs.get("alpha", 1.0)), 0.0)
    if op == "HardSigmoid":
        return ("hardsigmoid", float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5)))
    if op == "HardSwish":
        return ("hardswish", 1.0 / 6.0, 0.5)
    if op == "Mish":
        return ("mish", 0.0, 0.0)
    if op == "Softplus":
        return ("soft_relu", 1.0, 0.0)
    if op == "Gelu":
        return ("gelu_tanh" if attrs.get("approximate", "none") == "tanh" else "gelu_erf",
                0.0, 0.0)
    if op in ("Sqrt", "Exp", "Log", "Abs"):
        return (op.lower(), 0.0, 0.0)
    if op == "Neg":
        return ("linear", -1.0, 0.0)
    if op == "Pow":
        if len(inputs) < 2 or inputs[1] not in consts or np.asarray(consts[inputs[1]]).size != 1:
            return None
        return ("pow", 1.0, float(np.asarray(consts[inputs[1]]).reshape(-1)[0]))
    if op == "Clip":
        lo, hi = attrs.get("min"), attrs.get("max")
        for i, name in ((1, "lo"), (2, "hi")):
            if len(inputs) > i and inputs[i]:
                if inputs[i] not in consts:
                    return None
                v = float(np.asarray(consts[inputs[i]]).reshape(-1)[0])
                lo, hi = (v, hi) if name == "lo" else (lo, v)
        if lo is None and hi is None:
            return ("linear", 1.0, 0.0)
        if hi is None:
            return ("relu", 0.0, 0.0) if lo == 0 else None
        lo = -3.4e38 if lo is None else lo
        return ("clip", float(lo), float(hi)) if hi >= lo else None
    return None


# transcendental post-ops cost dnnq's epilogue a libm call per element; after an int8
# rounding they run as a 256-entry table instead
EXPENSIVE = {"logistic", "swish", "tanh", "gelu_erf", "gelu_tanh", "mish", "elu", "soft_relu",
             "exp", "log", "pow", "sqrt"}

UNARY = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "HardSigmoid", "HardSwish", "Mish",
         "Softplus", "Gelu", "Clip", "Sqrt", "Exp", "Log", "Abs", "Neg", "Pow"}


def requantize_per_channel(w, axis):
    """Symmetric s8 per-channel quantization of f32 weights (when the model's own
    quantization axis is not the output channel)."""
    axes = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.max(np.abs(w), axis=axes) if w.size else np.zeros(w.shape[axis])
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(F32)
    shp = [1] * w.ndim
    shp[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shp)), -127, 127).astype(np.int8)
    return q, scale


class ChainRules:
    """Methods of the Fuser (fusion.py) that decide single steps of a chain."""

    def _gated(self, v, users):
        """x * Sigmoid(x) (swish), x * HardSigmoid(x), x * Clip(x + 3, 0, 6) / 6 (hardswish)."""
        ops = {u.op_type: u for u in users}
        mul = ops.get("Mul")
        if mul is None or len(ops) != 2 or v not in mul.input[:2]:
            return None
        gate = next(u for u in users if u is not mul)
        gate_in = mul.input[1] if mul.input[0] == v else mul.input[0]
        if gate.op_type in ("Sigmoid", "HardSigmoid", "HardSwish") and gate.input[0] == v:
            out, skipped = self.through_qdq(gate.output[0])
            if out != gate_in:
                return None
            if gate.op_type == "Sigmoid":
                post = ("eltwise", "swish", 1.0, 0.0)
            elif gate.op_type == "HardSigmoid":
                a = self.p.attrs(gate)
                post = ("eltwise", "hardswish", float(a.get("alpha", 0.2)),
                        float(a.get("beta", 0.5)))
            else:
                return None
            return mul.output[0], [gate] + skipped + [mul], post, False
        if gate.op_type == "Add" and gate.input[0] == v:
            c = self.const(gate.input[1])
            if c is None or np.asarray(c).size != 1 or float(np.asarray(c).reshape(-1)[0]) != 3:
                return None
            t, nodes = self.through_qdq(gate.output[0])
            clip = self.sole_user(t, "Clip")
            if clip is not None:
                e = _eltwise_of("Clip", self.p.attrs(clip), list(clip.input), self.p.consts)
                if e is None or e[0] != "clip" or (e[1], e[2]) != (0.0, 6.0):
                    return None
                t2, more = self.through_qdq(clip.output[0])
                nodes = nodes + [clip] + more
                t = t2
            if t != gate_in:
                return None
            out, more = self.through_qdq(mul.output[0])
            div = self.sole_user(out, "Div")
            if div is None or div.input[0] != out:
                return None
            c = self.const(div.input[1])
            if c is None or np.asarray(c).size != 1 or float(np.asarray(c).reshape(-1)[0]) != 6:
                return None
            return div.output[0], [gate] + nodes + [mul] + more + [div], \
                ("eltwise", "hardswish", 1.0 / 6.0, 0.5), False
        return None

    def _const_binary(self, op, c, v_first, spec, channels, matmul):
        if op in ("Sub", "Div") and not v_first:
            return None
        if c.size == 1:
            x = float(c.reshape(-1)[0])
            if op == "Add":
                return ("eltwise", "linear", 1.0, x)
            if op == "Sub":
                return ("eltwise", "linear", 1.0, -x)
            if op == "Mul":
                return ("eltwise", "linear", x, 0.0)
            if x == 0:
                return None
            return ("eltwise", "linear", 1.0 / x, 0.0)
        if channels is None or c.size != channels:
            return None
        shp = c.shape
        if matmul:
            if shp[-1] != channels:
                return None
        else:
            nsp = spec.weights.ndim - (3 if spec.group > 1 else 2)
            # right-aligned against (N, C, spatial...): C at dim -(nsp + 1), every other dim 1
            if len(shp) < nsp + 1 or shp[-(nsp + 1)] != channels:
                return None
        alg = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}[op]
        return ("binary", alg, c.reshape(-1))

    def _affine_of(self, op, c, v_first, spec, channels, matmul):
        """(a, b) with op(v, c) = v * a + b per output channel, when it folds into the
        layer's weights scales and bias (a scaling only in a convolution)."""
        if channels is None:
            return None
        if c.size == 1:
            vec = np.full(channels, float(c.reshape(-1)[0]))
        else:
            post = self._const_binary(op, c.astype(F32), v_first, spec, channels, matmul)
            if post is None or post[0] != "binary":
                return None
            vec = c.reshape(-1).astype(np.float64)
        one, zero = np.ones(channels), np.zeros(channels)
        if op == "Add":
            return one, vec
        if op == "Sub" and v_first:
            return one, -vec
        if matmul or spec.kind == "lut":
            return None
        if op == "Mul":
            return vec, zero
        if op == "Div" and v_first and np.all(vec != 0):
            return 1.0 / vec, zero
        return None

    def _fold_affine(self, spec, a, b, node):
        """v * a + b after the layer (a BatchNormalization: a = gamma / sqrt(var + eps),
        b = beta - mean * a; a constant Add / Sub / Mul / Div): the weights' scales (or f32
        weights) times a, the bias bias * a + b."""
        bn = node
        a = np.asarray(a, np.float64)
        oc = a.size
        bias = np.zeros(oc) if spec.bias is None else spec.bias.astype(np.float64)
        spec.bias = (bias * a + b).astype(F32)
        if np.all(a == 1):
            return
        if spec.kind == "matmul":
            raise AssertionError("a scale folds only into a convolution")
        w = spec.weights
        G = spec.group
        if spec.src_q is None:
            shape = (G, oc // G) + (1,) * (w.ndim - 2) if G > 1 else (oc,) + (1,) * (w.ndim - 1)
            spec.weights = (w * a.reshape(shape)).astype(F32)
            return
        neg = a < 0
        zero = a == 0
        scale = np.broadcast_to(spec.wscale, (oc,)).astype(np.float64) * np.abs(a)
        if np.any(zero):  # the channel is its bias alone: weights 0, any positive scale
            flat = spec.weights.reshape(oc, -1).copy()
            flat[zero] = 0
            spec.weights = np.ascontiguousarray(flat.reshape(w.shape))
            w = spec.weights
            scale = np.where(zero, 1.0, scale)
        if np.any(neg):
            flat = w.reshape(oc, -1) if G == 1 else w.reshape(oc, -1)
            if np.any(flat[neg] == -128) or spec.wzp is not None:
                # -(-128) does not fit s8: requantize those weights from their real values
                wf = flat.astype(np.float64) * np.broadcast_to(spec.wscale, (oc,))[:, None] \
                    * a[:, None]
                amax = np.abs(wf).max(axis=1)
                scale = np.where(amax > 0, amax / 127.0, 1.0)
                flat = np.clip(np.rint(wf / scale[:, None]), -127, 127).astype(np.int8)
                spec.wzp = None
            else:
                flat = flat.copy()
                flat[neg] = -flat[neg]
            spec.weights = np.ascontiguousarray(flat.reshape(w.shape))
        spec.wscale = scale.astype(F32)
        if np.any(spec.wscale <= 0) or not np.all(np.isfinite(spec.wscale)):
            raise InvalidArguments(f"{spec.label()}: folding {bn.op_type} "
                                   f"{bn.name or bn.output[0]!r} gives a weights scale of 0 or "
                                   "inf (gamma = 0?)")
