"""ONNX LSTM / GRU / RNN on dnnq.LSTM / GRU / LBRGRU / VanillaRNN (f32 mode).

dnnq's recurrent primitives are oneDNN's int8 RNN: s8 weights with one scale per gate and
channel, and one u8 quantization shared by the layer input and the hidden state (it is fed
back). ONNX models give f32 weights (ORT's QDQ quantizer leaves the recurrent ops in f32), so:

* the layer input x is divided by ``k`` (the largest |x| it can hold: from the
  ``DequantizeLinear`` that produces it when there is one, else from the inputs seen so far,
  grown with 2x headroom and the weights packed again when an input exceeds it) and the
  layer weights multiplied by ``k``: ``x W = (x / k)(k W)``, so x / k and h share [-1, 1];
* the data quantization is ``u8 = 127.5 x + 127.5`` (the whole [-1, 1]);
* the weights are quantized symmetrically to s8 with one scale per gate and channel over
  both matrices (and both directions), as oneDNN's model requires.

Gate orders: ONNX LSTM i, o, f, c -> oneDNN i, f, c, o; GRU z, r, h -> u, r, o; weights
``(D, G*H, I)`` -> ``ldigo (1, D, I, G, H)``; the two ONNX biases are summed (LBR-GRU keeps
the recurrent one of the candidate gate as its 4th row).
"""
import math

import numpy as np

import dnnq
from dnnq import args as A
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc
from dnnq.onnx.steps import Step

F32 = np.float32
DIRECTIONS = {"forward": "unidirectional_left2right", "reverse": "unidirectional_right2left",
              "bidirectional": "bidirectional_concat"}
GATES = {"LSTM": [0, 2, 3, 1], "GRU": [0, 1, 2], "RNN": [0]}
DEFAULT_ACTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"],
                "RNN": ["Tanh"]}


class RnnStep(Step):
    def __init__(self, label, node, attrs, consts, x_range=None):
        op = node.op_type
        ins = list(node.input) + [""] * (8 - len(node.input))
        super().__init__([label], [x for x in ins if x and x not in consts],
                         list(node.output))
        self.op, self.label = op, label
        self.names = ins
        self.primitive = {"LSTM": "LSTM", "GRU": "GRU", "RNN": "VanillaRNN"}[op]
        direction = attrs.get("direction", "forward")
        if direction not in DIRECTIONS:
            raise InvalidArguments(f"node {label!r}: direction {direction!r}; expected forward, "
                                   "reverse or bidirectional")
        self.direction = DIRECTIONS[direction]
        if attrs.get("clip") is not None:
            raise Unimplemented(f"node {label!r}: {op} with clip; dnnq's RNN cells do not clip")
        if attrs.get("input_forget", 0):
            raise Unimplemented(f"node {label!r}: LSTM with input_forget=1; not supported")
        acts = attrs.get("activations")
        D = 2 if direction == "bidirectional" else 1
        self.act = "tanh"
        if acts is not None:
            n = len(DEFAULT_ACTS[op])
            for d in range(D):
                got = list(acts[d * n:(d + 1) * n])
                if op == "RNN" and got[0] in ("Relu", "Tanh", "Sigmoid"):
                    self.act = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "logistic"}[got[0]]
                elif got != DEFAULT_ACTS[op]:
                    raise Unimplemented(f"node {label!r}: {op} activations {acts}; dnnq runs "
                                        f"the defaults {DEFAULT_ACTS[op]}")
        self.layout = int(attrs.get("layout", 0))
        self.lbr = op == "GRU" and int(attrs.get("linear_before_reset", 0)) == 1
        if op == "GRU" and self.lbr:
            self.primitive = "LBRGRU"
        W, R = consts.get(ins[1]), consts.get(ins[2])
        if W is None or R is None:
            raise Unimplemented(f"node {label!r}: {op} weights computed at run time; dnnq.onnx "
                                "takes constant W and R")
        W, R = np.asarray(W, F32), np.asarray(R, F32)
        H = int(attrs.get("hidden_size", R.shape[-1]))
        G = len(GATES[op])
        if W.shape[:2] != (D, G * H) or R.shape != (D, G * H, H):
            raise InvalidArguments(f"node {label!r}: W {W.shape} / R {R.shape}; expected "
                                   f"({D}, {G * H}, I) / ({D}, {G * H}, {H})")
        self.D, self.H, self.G, self.I = D, H, G, W.shape[2]
        B = consts.get(ins[3]) if ins[3] else None
        B = np.zeros((D, 2 * G * H), F32) if B is None else np.asarray(B, F32)
        order = GATES[op]
        wb, rb = B[:, :G * H].reshape(D, G, H), B[:, G * H:].reshape(D, G, H)
        if self.lbr:
            bias = np.concatenate([(wb + rb)[:, order[:2]], wb[:, 2:3], rb[:, 2:3]], axis=1)
        else:
            bias = (wb + rb)[:, order]
        self.bias = np.ascontiguousarray(bias[None], F32)          # (1, D, G', H)
        # ldigo: (D, G*H, X) -> (1, D, X, G, H) in oneDNN's gate order
        self.w_f32 = W.reshape(D, G, H, -1)[:, order].transpose(0, 3, 1, 2)[None]
        self.r_f32 = R.reshape(D, G, H, H)[:, order].transpose(0, 3, 1, 2)[None]
        self.peep = None
        if op == "LSTM" and ins[7]:
            P = consts.get(ins[7])
            if P is None:
                raise Unimplemented(f"node {label!r}: peepholes computed at run time")
            self.peep = np.ascontiguousarray(
                np.asarray(P, F32).reshape(D, 3, H)[:, [0, 2, 1]][None])
        self.k = None if x_range is None else max(float(x_range), 1e-6)
        self._plans = {}

    def _quantize_weights(self, k):
        wl = self.w_f32 * F32(k)
        amax = np.maximum(np.abs(wl).max(axis=(0, 1, 2)), np.abs(self.r_f32).max(axis=(0, 1, 2)))
        scale = np.where(amax > 0, amax / 127.0, 1.0).astype(F32)          # (G, H)
        q = lambda w: np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        return q(wl), q(self.r_f32), (1.0 / scale).astype(F32).reshape(-1)

    def _make(self, T, N, k):
        D, H, G, I = self.D, self.H, self.G, self.I
        wl, wi, wscales = self._quantize_weights(k)
        attr = dnnq.PrimitiveAttr()
        attr.set_rnn_data_qparams(127.5, 127.5)
        attr.set_rnn_weights_qparams(24, wscales)
        f = "f32"
        src = MemoryDesc((T, N, I), f)
        it = MemoryDesc((1, D, N, H), f)
        dst = MemoryDesc((T, N, H * (2 if D == 2 else 1)), f)
        wld = MemoryDesc((1, D, I, G, H), "s8")
        wid = MemoryDesc((1, D, H, G, H), "s8")
        bd = MemoryDesc(self.bias.shape, "f32")
        if self.op == "LSTM":
            kw = {}
            if self.peep is not None:
                kw["weights_peephole_desc"] = MemoryDesc(self.peep.shape, "f32")
            prim = dnnq.LSTM(self.direction, src, it, it, wld, wid, bd, dst, it, it, attr, **kw)
        elif self.op == "GRU":
            cls = dnnq.LBRGRU if self.lbr else dnnq.GRU
            prim = cls(self.direction, src, it, wld, wid, bd, dst, it, attr)
        else:
            prim = dnnq.VanillaRNN(self.act, self.direction, src, it, wld, wid, bd, dst, it, attr)
        packed = prim.prepare_weights({A.DNNL_ARG_WEIGHTS_LAYER: wl,
                                       A.DNNL_ARG_WEIGHTS_ITER: wi})
        self.impl_info = prim.impl_info
        return prim, packed

    def run(self, env):
        n = self.names
        x = np.asarray(env[n[0]], F32)
        if x.ndim != 3 or x.shape[2] != self.I:
            raise InvalidArguments(f"node {self.label!r}: X of shape {x.shape}; expected "
                                   f"(T, N, {self.I})")
        if self.layout == 1:
            x = x.transpose(1, 0, 2)
        T, N = x.shape[:2]
        if n[4] and n[4] in env:
            lens = np.asarray(env[n[4]]).reshape(-1)
            if np.any(lens != T):
                raise Unimplemented(f"node {self.label!r}: sequence_lens {lens[:4]} shorter "
                                    f"than the {T} steps; dnnq runs whole sequences")
        k = self.k if self._fixed_range else _input_scale(x)
        plan = self._plans.get((T, N, k))
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            plan = self._plans[(T, N, k)] = self._make(T, N, k)
        prim, packed = plan
        a = dict(packed)
        a[A.DNNL_ARG_SRC_LAYER] = np.ascontiguousarray(x * F32(1.0 / k), F32)
        a[A.DNNL_ARG_BIAS] = self.bias
        for idx, arg in ((5, A.DNNL_ARG_SRC_ITER), (6, A.DNNL_ARG_SRC_ITER_C)):
            if idx == 6 and self.op != "LSTM":
                continue
            if n[idx] and n[idx] in env:
                v = np.asarray(env[n[idx]], F32)
                if self.layout == 1:
                    v = v.transpose(1, 0, 2)
                if v.shape != (self.D, N, self.H):
                    raise InvalidArguments(f"node {self.label!r}: initial state {n[idx]!r} of "
                                           f"shape {v.shape}; expected ({self.D}, {N}, "
                                           f"{self.H})")
                a[arg] = np.ascontiguousarray(v[None])
        if self.peep is not None:
            a[A.DNNL_ARG_WEIGHTS_PEEPHOLE] = self.peep
        out = prim.execute(a)
        y = out[A.DNNL_ARG_DST_LAYER].reshape(T, N, self.D, self.H).transpose(0, 2, 1, 3)
        yh = out[A.DNNL_ARG_DST_ITER][0]
        yc = out.get(A.DNNL_ARG_DST_ITER_C)
        if self.layout == 1:
            y = y.transpose(2, 0, 1, 3)
            yh = yh.transpose(1, 0, 2)
            yc = None if yc is None else yc[0].transpose(1, 0, 2)
        elif yc is not None:
            yc = yc[0]
        outs = [y, yh, yc]
        for name, v in zip(self.outputs, outs):
            if name:
                env[name] = v

    _fixed_range = False


#: plans (packed weights) kept per step: one per (sequence length, batch, input scale)
_MAX_PLANS = 16


def _input_scale(x):
    """k for an f32 input x without a DequantizeLinear: the smallest power of two at least
    its largest magnitude (2^-10 at least), so that x / k lies in [-1, 1] -- a function of
    this input alone (the result does not depend on the inputs run before it), exact to
    divide by, with at most 2x headroom; inputs of one scale share a plan."""
    xmax = float(np.abs(x).max()) if x.size else 0.0
    if not xmax <= 3.0e38:  # inf / NaN: the largest scale (NaN stays NaN)
        return 2.0 ** 127
    m, e = math.frexp(max(xmax, 2.0 ** -10))  # xmax = m 2^e, 0.5 <= m < 1
    return math.ldexp(1.0, e - 1 if m == 0.5 else e)
