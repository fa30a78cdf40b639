"""The low-precision transformations: QDQ patterns around Conv / ConvTranspose / MatMul /
Gemm become one dnnq primitive each.

For an anchor node whose source is ``DequantizeLinear(x_q)`` and whose weights are a
dequantized constant, the layer takes ``x_q`` with its scale and zero point as the
primitive's source quantization, packs the int8 weights with their per-output-channel scales,
folds a following BatchNormalization into those scales and the bias, and walks on along the
single-consumer chain after the node, absorbing:

* activations (Relu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu, Elu, Gelu, Mish,
  Softplus; ``x * Sigmoid(x)`` = swish, ``x * HardSigmoid(x)`` and PP-OCR's
  ``x * Clip(x + 3, 0, 6) / 6`` = hardswish) as eltwise post-ops;
* an Add / Sub / Mul / Div with a constant as a ``linear`` eltwise (one value) or a binary
  post-op (one value per channel);
* a residual ``Add(y, DequantizeLinear(r_q))`` as a sum post-op (r_q is copied into the
  destination first);
* the final ``QuantizeLinear`` as the destination's scale and zero point.

A ``QuantizeLinear -> DequantizeLinear`` pair inside such a chain (ORT writes one after every
op) is skipped when nothing else reads it: the chain is then computed in f32 and rounded once,
at its end, as oneDNN's Graph API and OpenVINO do (ONNX Runtime rounds at every pair, so the
results differ by a rounding step here and there; they are closer to the f32 model).  A
session made with ``rounding="every"`` keeps each pair's rounding as post-ops instead
(``_pair_ops``), and what follows an int8 tensor alone becomes a table (tables.py).
"""
import numpy as np

from dnnq.errors import Unimplemented
from dnnq.onnx.chains import (EXPENSIVE, UNARY, ChainRules, _eltwise_of,
                              requantize_per_channel)
from dnnq.onnx.ort_arith import qlinear_binary_group
from dnnq.onnx.quant import QParams

F32 = np.float32


class LayerSpec:
    """One fused layer (see layers.py for how it runs)."""

    def __init__(self, kind, anchor):
        self.kind = kind            # "conv" | "deconv" | "matmul"
        self.anchor = anchor        # the ONNX node the layer is built around
        self.nodes = [anchor]       # every ONNX node it covers
        self.src = anchor.input[0]
        self.src_q = None           # QParams of the int8 source, None: f32
        self.weights = None         # dnnq layout, s8 (int8 layer) or f32
        self.wscale = None
        self.wzp = None
        self.bias = None
        self.group = 1
        self.attrs = {}
        self.post_ops = []
        self.dst = anchor.output[0]
        self.dst_q = None
        self.sum_src = None
        self.runtime_weights = None
        # rounding="every": (int32 bias as f32 or None, the weights scales and bias as fusion
        # found them) for _requantize_as_qlinear, None where the form does not apply
        self.integer_bias = None
        # (source and weights scales, destination scale) computed by post-ops rather than
        # the primitive's scales (ONNX Runtime's order; layers._qargs leaves them out)
        self.scales_in_post_ops = (False, False)
        # (MaxPool node, its QuantizeLinear's output) run on the layer's result (_end)
        self.max_pool_after = None

    def label(self):
        n = self.anchor
        return f"node {n.name or n.output[0]!r} ({n.op_type})"

    @property
    def last(self):
        return self.nodes[-1]

class Fuser(ChainRules):
    """Finds the layers of a model. ``planner`` gives the graph, the folded constants and
    the maps of dequantized values."""

    def __init__(self, planner):
        self.p = planner
        self.g = planner.graph

    # --- helpers -------------------------------------------------------------------------
    def users(self, name):
        if name in self.g.output_names:
            return None
        return [self.g.nodes[i] for i in self.g.consumers.get(name, [])
                if i not in self.p.claimed]

    def sole_user(self, name, op=None):
        u = self.users(name)
        if not u or len(u) != 1 or (op is not None and u[0].op_type != op):
            return None
        if len(self.g.consumers.get(name, [])) != 1:
            return None
        return u[0]

    def through_qdq(self, name, rounded=False):
        """(name after a Q -> DQ pair read by nothing else, [Q, DQ]) or (name, []).  When the
        session rounds at every QuantizeLinear a pair is passed only by a caller that
        emulates it (``rounded``: ``_pair_ops``'s post-ops)."""
        if self.p.round_every_quantize and not rounded:
            return name, []
        q = self.sole_user(name, "QuantizeLinear")
        if q is None or self.p.node_qparams(q) is None:
            return name, []
        dq = self.sole_user(q.output[0], "DequantizeLinear")
        if dq is None or not self.p.node_qparams(dq) or \
                not self.p.node_qparams(dq).same_as(self.p.node_qparams(q)):
            return name, []
        return dq.output[0], [q, dq]

    def const(self, name):
        return self.p.consts.get(name) if name else None

    # --- anchors -------------------------------------------------------------------------
    def match(self, node):
        op = node.op_type
        if op in ("Conv", "ConvTranspose"):
            return self._conv(node)
        if op in ("MatMul", "Gemm"):
            return self._matmul(node)
        return None

    def _weights_q(self, name):
        """(s8 weights, QParams) of a dequantized constant, or (f32 weights, None)."""
        if name in self.p.qconst:
            q, qp, _ = self.p.qconst[name]
            if qp.dt == "s8" or qp.dt == "u8":
                return q, qp
        w = self.const(name)
        if w is None:
            return None, None
        return np.asarray(w, F32), None

    def _conv(self, node):
        spec = LayerSpec("deconv" if node.op_type == "ConvTranspose" else "conv", node)
        a = self.p.attrs(node)
        spec.attrs = a
        G = int(a.get("group", 1))
        spec.group = G
        w, wq = self._weights_q(node.input[1])
        if w is None:
            raise Unimplemented(f"{spec.label()}: weights {node.input[1]!r} computed at run "
                                "time; dnnq.onnx takes constant convolution weights")
        if w.ndim not in (3, 4, 5):
            raise Unimplemented(f"{spec.label()}: weights of shape {w.shape}; dnnq.onnx runs "
                                "1-D, 2-D and 3-D convolutions")
        src_dq = self.p.act_dq(node.input[0])
        int8 = src_dq is not None and wq is not None
        k = w.shape[2:]
        if spec.kind == "deconv":
            ic, ocg = w.shape[0], w.shape[1]
            oc = ocg * G
            oc_axis = 1
        else:
            oc, ocg = w.shape[0], w.shape[0] // G
            oc_axis = 0
        if int8:
            if wq.dt == "u8":  # u8 weights (a weight treated as an activation): shift to s8
                w = (w.view(np.int8) ^ np.int8(-128))
                wq = QParams(wq.scale, wq.zp - 128, "s8", wq.axis)
            requantized = not wq.per_tensor and wq.axis != oc_axis
            if requantized:
                w, scale = requantize_per_channel(self.p.dequant_const(node.input[1]),
                                                  oc_axis)
                wq = QParams(scale, 0, "s8", oc_axis)
            scale, zp = wq.scale, wq.zp
            if not wq.per_tensor and spec.kind == "deconv" and G > 1:
                scale, zp = np.tile(scale, G), np.tile(zp, G)
            spec.src_q = src_dq[1]
            spec.src = src_dq[0]
            spec.wscale = scale.astype(F32)
            spec.wzp = zp if np.any(zp != 0) else None
            w = w.astype(np.int8)
        else:
            if wq is not None:
                w = self.p.dequant_const(node.input[1])
            w = w.astype(F32)
        if spec.kind == "deconv":  # (IC, OC/G, k) -> (G, OC/G, IC/G, k)
            w = w.reshape((G, ic // G, ocg) + k).swapaxes(1, 2)
        else:
            w = w.reshape((G, ocg, w.shape[1]) + k)
        spec.weights = np.ascontiguousarray(w if G > 1 else w[0])
        if len(node.input) > 2 and node.input[2]:
            b = self.const(node.input[2])
            if b is None:
                raise Unimplemented(f"{spec.label()}: bias {node.input[2]!r} computed at run "
                                    "time; dnnq.onnx takes a constant bias")
            spec.bias = np.ascontiguousarray(b, F32).reshape(-1)
        if int8 and spec.kind == "conv" and not requantized:
            self._note_integer_bias(spec, node.input[2] if len(node.input) > 2 else "")
        self._follow(spec, oc, matmul=False)
        return spec

    def _matmul(self, node):
        spec = LayerSpec("matmul", node)
        a = self.p.attrs(node)
        spec.attrs = a
        gemm = node.op_type == "Gemm"
        if gemm and a.get("transA", 0):
            return None  # runs as the f32 / numpy fallback's Unimplemented
        src_dq = self.p.act_dq(node.input[0])
        wname = node.input[1]
        w, wq = self._weights_q(wname)
        if w is None:
            bq = self.p.act_dq(wname)
            if gemm or src_dq is None or bq is None:
                return None  # two f32 activations: not a layer (planner decides)
            spec.src, spec.src_q = src_dq
            spec.runtime_weights = bq[0]
            qp = bq[1]
            spec.wscale = qp.scale
            zp = qp.zp - 128 if qp.dt == "u8" else qp.zp
            spec.wzp = zp if np.any(zp != 0) else None
            self._note_integer_bias(spec, "")
            self._follow(spec, None, matmul=True)
            return spec
        if w.ndim > 2 and not gemm and wq is not None and wq.per_tensor and src_dq is not None:
            # batched constant weights: the activation-weights path with the int8 constant
            spec.src, spec.src_q = src_dq
            spec.runtime_weights = self.p.qconst[wname][2]
            spec.wscale = wq.scale
            zp = wq.zp - 128 if wq.dt == "u8" else wq.zp
            spec.wzp = zp if np.any(zp != 0) else None
            self._follow(spec, None, matmul=True)
            return spec
        if w.ndim != 2:
            return None
        trans = gemm and a.get("transB", 0)
        n_axis = 0 if trans else 1
        int8 = src_dq is not None and wq is not None
        if int8:
            if wq.dt == "u8":
                w = (w.view(np.int8) ^ np.int8(-128))
                wq = QParams(wq.scale, wq.zp - 128, "s8", wq.axis)
            requantized = not wq.per_tensor and wq.axis != n_axis
            if requantized:
                w, s = requantize_per_channel(self.p.dequant_const(wname), n_axis)
                wq = QParams(s, 0, "s8", n_axis)
            spec.src, spec.src_q = src_dq
            spec.wscale = wq.scale.astype(F32)
            spec.wzp = wq.zp if np.any(wq.zp != 0) else None
        elif wq is not None:
            w = self.p.dequant_const(wname)
        if trans:
            w = w.T
        spec.weights = np.ascontiguousarray(w)
        alpha = float(a.get("alpha", 1.0)) if gemm else 1.0
        if alpha != 1.0:
            if int8:
                spec.wscale = (spec.wscale * F32(alpha)).astype(F32)
            else:
                spec.weights = (spec.weights * F32(alpha)).astype(F32)
        if gemm and len(node.input) > 2 and node.input[2]:
            b = self.const(node.input[2])
            if b is None or np.asarray(b).size not in (1, spec.weights.shape[1]):
                return None
            b = np.asarray(b, F32).reshape(-1) * F32(a.get("beta", 1.0))
            spec.bias = np.ascontiguousarray(np.broadcast_to(b, (spec.weights.shape[1],)),
                                             F32)
        if int8 and alpha == 1.0 and float(a.get("beta", 1.0)) == 1.0 and not requantized:
            self._note_integer_bias(spec, node.input[2] if gemm and len(node.input) > 2
                                    else "")
        self._follow(spec, spec.weights.shape[1], matmul=True)
        return spec

    # --- the chain after the anchor ------------------------------------------------------
    def _follow(self, spec, channels, matmul):
        v = spec.anchor.output[0]
        snapshot = first_pair = None
        while True:
            state = (len(spec.post_ops), len(spec.nodes), v)
            step = self._next(v, spec, channels, matmul)
            if step is not None and self._expensive(step) and self._q_after(v):
                step = None  # rounded here; the activation runs as a lookup table (match_lut)
            if step is None:
                nxt, skipped = self.through_qdq(v, rounded=True)
                if skipped and first_pair is None:
                    first_pair = (len(spec.post_ops), len(spec.nodes), v, skipped[1])
                if skipped:
                    step = self._next(nxt, spec, channels, matmul)
                    if step is not None and self._expensive(step):
                        step = None
                    every = self.p.round_every_quantize
                    if step is not None and every and step[2] is not None and \
                            step[2][0] == "fold":
                        # a fold would move across the rounding: post-ops instead
                        step = step[:2] + (("ops", self._unfolded(*step[2][1:3])),) + step[3:]
                    if step is not None:
                        spec.nodes += skipped
                        ops = self._pair_ops(skipped[0], divide=True)
                        if every or ops[0][2] == 0.0:
                            # the range starts at 0: ORT's quantizer dropped a Relu / Clip
                            # here, the clamp stays (and nothing folds across it)
                            spec.post_ops += ops
                            step = self._next(nxt, spec, channels, matmul)
                            if step is None or self._expensive(step):
                                # nothing fuses after the clamp: end at the quantization
                                step = None
                                del spec.post_ops[-len(ops):]
                                del spec.nodes[-len(skipped):]
                        elif step[2] is None or step[2][0] != "fold":
                            spec.post_ops += ops
                if step is None:
                    self._end(spec, v)
                    break
            new_v, nodes, post, is_sum = step
            if is_sum:
                snapshot = state
                spec.sum_src = post[1]
            spec.nodes += nodes
            if post is not None:
                if post[0] == "fold" and spec.post_ops:  # after post-ops: not a fold
                    spec.post_ops += self._unfolded(post[1], post[2])
                elif post[0] == "fold":
                    self._fold_affine(spec, post[1], post[2], post[3])
                elif post[0] == "ops":
                    spec.post_ops += post[1]
                else:
                    spec.post_ops.append(post)
            v = new_v
        if spec.sum_src is not None and (spec.dst_q is None or
                                         spec.dst_q.dt != self._sum_q(spec).dt):
            # a sum needs an int8 destination of the residual's size: stop before the Add
            n_ops, n_nodes, v = snapshot
            del spec.post_ops[n_ops:]
            del spec.nodes[n_nodes:]
            spec.sum_src = None
            spec.dst_q = None
            self._end(spec, v)
        # (a chain cut short keeps its first pair's division, as its destination's below)
        cut = first_pair is not None and self.p.round_every_quantize and \
            self._end_where_a_table_follows(spec, *first_pair)
        if spec.integer_bias is not None:
            self._requantize_as_qlinear(spec)
        src_scaled, dst_scaled = spec.scales_in_post_ops
        if self.p.round_every_quantize and (spec.post_ops or cut) and \
                spec.dst_q is not None and not dst_scaled:
            # the destination's QuantizeLinear divides: x / s rounded, then the zero point
            spec.post_ops = spec.post_ops + [
                ("binary", "div", np.array([spec.dst_q.scale[0]], F32)),
                ("eltwise", "round", 0.0, 0.0)]
            spec.scales_in_post_ops = (src_scaled, True)

    # --- rounding="every": ONNX Runtime's requantization ---------------------------------
    def _note_integer_bias(self, spec, bias_name):
        """Rounding at every QuantizeLinear, an int8 layer is computed as ONNX Runtime's
        QLinearConv / QLinearMatMul compute it (``_requantize_as_qlinear``); this notes what
        that needs: the bias in int32 with the scale source scale x weights scale (as
        quantize_static writes it), and the scales and bias as fusion found them (a fold
        into them later rules the form out)."""
        if not self.p.round_every_quantize:
            return
        bias = None
        if bias_name:
            entry = self.p.qconst.get(bias_name)
            if entry is None or entry[1].dt != "s32" or np.any(entry[1].zp != 0):
                return
            q, qp = np.asarray(entry[0]).reshape(-1), entry[1]
            want = np.broadcast_to(spec.src_q.scale[0] * spec.wscale.astype(np.float64),
                                   q.shape)
            have = np.broadcast_to(qp.scale.astype(np.float64), q.shape)
            if not np.allclose(have, want, rtol=1e-6, atol=0):
                return  # not ORT's bias
            bias = q.astype(np.int64)
        spec.integer_bias = (bias, spec.wscale, spec.bias)

    def _requantize_as_qlinear(self, spec):
        """ONNX Runtime runs ``DequantizeLinear -> Conv / MatMul -> QuantizeLinear`` as
        QLinearConv / QLinearMatMul: the int32 sum plus the int32 bias, converted to f32,
        times one scale per channel ``x_scale * w_scale / y_scale`` (f32, in that order),
        rounded half to even, plus the zero point, saturated (MLAS's requantization).
        oneDNN's order (sum times the source and weights scales, plus the f32 bias, times
        1 / y_scale, plus the zero point, rounded) differs from it by an f32 rounding now
        and then: one step in a few values per layer, which grows through a deep model.
        With post-ops that say the same: no source, weights or destination scale, the
        integer bias as f32 (exact below 2^24), a per-channel ``mul`` by the combined
        scale and ``round``; the destination's zero point is then added to an integer.
        The first quantization after the layer is its destination or the pair that opens
        its post-ops; anything else before it (an activation ONNX Runtime would run in
        f32) keeps oneDNN's order."""
        bias, wscale, fused_bias = spec.integer_bias
        spec.integer_bias = None
        if spec.wscale is not wscale or spec.bias is not fused_bias or \
                spec.max_pool_after is not None:
            return
        ops = spec.post_ops
        if not ops:
            if spec.dst_q is None:
                return
            y_scale = spec.dst_q.scale[0]
            rest = []
        elif len(ops) >= 4 and [o[:2] for o in ops[:4]] == [
                ("binary", "div"), ("eltwise", "round"), ("eltwise", "clip"),
                ("eltwise", "linear")] and ops[3][3] == 0.0:
            y_scale = F32(ops[3][2])
            rest = ops[2:]
        else:
            return
        combined = (F32(spec.src_q.scale[0]) * wscale.astype(F32)) / F32(y_scale)
        spec.post_ops = [("binary", "mul", combined.astype(F32)),
                         ("eltwise", "round", 0.0, 0.0)] + rest
        if bias is not None:
            bias, high = _split_integer_bias(bias)
            if high is not None:
                spec.post_ops.insert(0, ("binary", "add", high))
        spec.bias = bias
        # (source and weights scales in the post-ops, destination scale in them too): the
        # destination's is in the combined scale when the destination is the quantization
        spec.scales_in_post_ops = (True, not ops)


    @staticmethod
    def _unfolded(a, b):
        """A fold (v * a + b per channel) as post-ops on the layer's value: one linear when
        a and b are the same on every channel, else binary mul / add."""
        a, b = np.asarray(a, np.float64).reshape(-1), np.asarray(b, np.float64).reshape(-1)
        if np.all(a == a[0]) and np.all(b == b[0]):
            return [("eltwise", "linear", float(a[0]), float(b[0]))]
        ops = []
        if np.any(a != 1):
            ops.append(("binary", "mul", a.astype(F32)))
        if np.any(b != 0):
            ops.append(("binary", "add", b.astype(F32)))
        return ops

    def _end(self, spec, v):
        """The layer's destination after ``v``: the QuantizeLinear that alone reads it, or v
        in f32. A max pooling between them (``v -> MaxPool -> QuantizeLinear``, as after a
        hard swish the quantizer left in f32) swaps with the quantization, which is monotone
        (the same values): the layer writes int8 and the pooling runs on it
        (``spec.max_pool_after``)."""
        spec.max_pool_after = None
        q = self.sole_user(v, "QuantizeLinear")
        qp = self.p.node_qparams(q) if q is not None else None
        if qp is not None and qp.per_tensor and qp.dt in ("u8", "s8"):
            spec.nodes.append(q)
            spec.dst, spec.dst_q = q.output[0], qp
            return
        spec.dst, spec.dst_q = v, None
        pool = None if v in self.g.output_names else self.sole_user(v)
        if pool is None or pool.op_type not in ("MaxPool", "GlobalMaxPool") or \
                len([o for o in pool.output if o]) != 1 or \
                self.p.attrs(pool).get("storage_order", 0):
            return
        q = self.sole_user(pool.output[0], "QuantizeLinear")
        qp = self.p.node_qparams(q) if q is not None else None
        if qp is None or not qp.per_tensor or qp.dt not in ("u8", "s8"):
            return
        spec.nodes += [pool, q]
        spec.dst, spec.dst_q = f"{v}::before {pool.op_type}", qp
        spec.max_pool_after = (pool, q.output[0])

    def _pair_ops(self, q, divide=False):
        """The post-ops standing for a skipped ``QuantizeLinear -> DequantizeLinear`` pair.
        Rounding once per chain: the clamp its saturation applied (ORT's quantizer drops a
        Relu / Clip whose range the QuantizeLinear's saturation reproduces, so the clamp
        must stay when the rounding goes).  Rounding at every QuantizeLinear: the pair
        itself, ``x / s`` rounded half to even and saturated, times ``s`` (the zero point
        cancels: it is an integer added before the rounding and taken off after)."""
        from dnnq.onnx.quant import RANGE
        qp = self.p.node_qparams(q)
        lo, hi = RANGE[qp.dt]
        s, z = float(qp.scale[0]), int(qp.zp[0])
        if not self.p.round_every_quantize:
            return [("eltwise", "clip", s * (lo - z), s * (hi - z))]
        if divide:  # QuantizeLinear's division (x * (1 / s) rounds differently now and then)
            return [("binary", "div", np.array([qp.scale[0]], F32)),
                    ("eltwise", "round", 0.0, 0.0),
                    ("eltwise", "clip", float(lo - z), float(hi - z)),
                    ("eltwise", "linear", s, 0.0)]
        return [("eltwise", "linear", 1.0 / s, 0.0), ("eltwise", "round", 0.0, 0.0),
                ("eltwise", "clip", float(lo - z), float(hi - z)),
                ("eltwise", "linear", s, 0.0)]

    def _end_where_a_table_follows(self, spec, n_ops, n_nodes, v, dq):
        """Rounding at every QuantizeLinear: when all the chain takes after its first
        ``QuantizeLinear -> DequantizeLinear`` pair depends on that int8 tensor alone (scalar
        element-wise ops and pairs, up to a QuantizeLinear), end the layer at that pair's
        rounding; the planner runs the rest as one 256-entry table (tables.match_table), a
        lookup per element instead of a dozen f32 post-ops (the same values: both compute the
        model's own ops between its roundings)."""
        if spec.sum_src is not None or spec.max_pool_after is not None or spec.dst_q is None:
            return False
        from dnnq.onnx.tables import match_table
        table = match_table(self, dq)
        if table is None:
            return False
        covered = {id(n) for n in table.nodes}
        if not all(id(n) in covered for n in spec.nodes[n_nodes + 2:]):
            return False
        del spec.post_ops[n_ops:]
        del spec.nodes[n_nodes:]
        spec.dst = spec.dst_q = None
        self._end(spec, v)
        return True

    @staticmethod
    def _expensive(step):
        post = step[2]
        return post is not None and post[0] == "eltwise" and post[1] in EXPENSIVE

    def _q_after(self, v):
        q = self.sole_user(v, "QuantizeLinear")
        qp = self.p.node_qparams(q) if q is not None else None
        return qp is not None and qp.per_tensor and qp.dt in ("u8", "s8")

    def match_lut(self, dq):
        """A chain of element-wise ops from DequantizeLinear(x_q) to a QuantizeLinear: one
        256-entry table x_q -> y_q (exact on the grid, as ONNX Runtime's QLinearSigmoid)."""
        src = self.p.act_dq(dq.output[0])
        if src is None:
            return None
        spec = LayerSpec("lut", dq)
        spec.nodes = []
        spec.src, spec.src_q = src
        v = dq.output[0]
        while True:
            step = self._next(v, spec, None, matmul=True)
            if step is None:
                nxt, skipped = self.through_qdq(v, rounded=True)
                if skipped:
                    step = self._next(nxt, spec, None, matmul=True)
                    if step is not None and step[2] is not None and step[2][0] == "eltwise":
                        spec.nodes += skipped
                        spec.post_ops += self._pair_ops(skipped[0])
            if step is None or step[2] is None or step[2][0] != "eltwise":
                break
            spec.nodes += step[1]
            spec.post_ops.append(step[2])
            v = step[0]
        if not spec.post_ops:
            return None
        q = self.sole_user(v, "QuantizeLinear")
        qp = self.p.node_qparams(q) if q is not None else None
        if qp is None or not qp.per_tensor or qp.dt not in ("u8", "s8"):
            return None
        spec.nodes.append(q)
        spec.dst, spec.dst_q = q.output[0], qp
        spec.anchor = spec.nodes[0]
        return spec

    @staticmethod
    def _sum_q(spec):
        return next(p[2] for p in spec.post_ops if p[0] == "sum")

    def _next(self, v, spec, channels, matmul):
        """(new value, nodes covered, post-op or None, is_sum) for one fusable step after
        ``v``, or None."""
        users = self.users(v)
        if not users:
            return None
        n_cons = len(self.g.consumers.get(v, []))
        if len(users) == 1 and n_cons == 1:
            u = users[0]
            op = u.op_type
            if op in UNARY and u.input[0] == v:
                e = _eltwise_of(op, self.p.attrs(u), list(u.input), self.p.consts)
                if e is None:
                    return None
                return u.output[0], [u], ("eltwise",) + e, False
            if op == "BatchNormalization" and not matmul and \
                    (not spec.post_ops or self.p.round_every_quantize) and \
                    u.input[0] == v and all(self.const(x) is not None for x in u.input[1:5]) \
                    and len([o for o in u.output if o]) == 1:
                eps = self.p.attrs(u).get("epsilon", 1e-5)
                if self.p.round_every_quantize:
                    # ONNX Runtime's BatchNormalization in f32: x * a + b with
                    # a = (1 / sqrt(var + eps)) * gamma, b = beta - mean * a
                    gamma, beta, mean, var = (np.asarray(self.const(x), F32)
                                              for x in u.input[1:5])
                    a = (F32(1) / np.sqrt(var + F32(eps))) * gamma
                    return u.output[0], [u], ("fold", a, beta - mean * a, u), False
                gamma, beta, mean, var = (np.asarray(self.const(x), np.float64)
                                          for x in u.input[1:5])
                a = gamma / np.sqrt(var + float(eps))
                return u.output[0], [u], ("fold", a, beta - mean * a, u), False
            if op in ("Add", "Sub", "Mul", "Div") and v in u.input[:2]:
                other = u.input[1] if u.input[0] == v else u.input[0]
                if other == v or (self.p.round_every_quantize and
                                  qlinear_binary_group(self.p, self.g, u) is not None):
                    # ONNX Runtime's QLinearAdd / QLinearMul, whose arithmetic is not the
                    # post-ops': the chain ends at the pair before it
                    return None
                c = self.const(other)
                fold = None if spec.post_ops or c is None else \
                    self._affine_of(op, np.asarray(c, np.float64), u.input[0] == v, spec,
                                    channels, matmul)
                if fold is not None:
                    return u.output[0], [u], ("fold",) + fold + (u,), False
                if c is not None:
                    post = self._const_binary(op, np.asarray(c, F32), u.input[0] == v,
                                              spec, channels, matmul)
                    return None if post is None else (u.output[0], [u], post, False)
                if op == "Add" and spec.sum_src is None:
                    od = self.p.act_dq(other)
                    if od is not None and od[1].dt in ("u8", "s8"):
                        return u.output[0], [u], ("sum", od[0], od[1]), True
            return None
        if len(users) == 2 and n_cons == 2:
            return self._gated(v, users)
        return None


def _split_integer_bias(bias):
    """An int32 bias as (low, high), f32 arrays with ``low + high == bias`` exactly, ``low``
    within +-127 where ``bias`` does not fit in 24 bits (else all of it; high None), and
    ``high`` exact in f32.  ONNX Runtime adds the bias to the int32 sum and converts once:
    the layer's f32 sum plus ``low`` is exact (below 2^24), and adding ``high`` to it then
    rounds once, to the f32 of the int32 total."""
    b = np.asarray(bias, np.int64)
    mag = np.abs(b)
    if mag.max(initial=0) < 2 ** 24:
        return b.astype(F32), None
    shift = np.maximum(0, np.frexp(mag.astype(np.float64))[1] - 24)  # bit length - 24
    high = np.sign(b) * ((mag >> shift) << shift)
    return (b - high).astype(F32), high.astype(F32)
