"""The planner's int8 patterns (planner.py's Planner takes them in): an op on dequantized int8
values as an int8 step -- pooling, data movement, binary / eltwise / softmax / layer-norm rows
-- a residual squeeze-excitation block as one Binary pass, and the int8 layer norm."""
import numpy as np

from dnnq.onnx import move_steps as MS, steps as S
from dnnq.onnx.chains import UNARY, _eltwise_of
from dnnq.onnx.int8_rows import (F32LayerNormStep, Int8BinaryStep, QuantizedLayerNormStep,
                                 QuantizedSoftmaxStep)
from dnnq.onnx import ops_numpy
from dnnq.onnx.ort_arith import AveragePoolStep, ChannelTableStep, channel_table

F32 = np.float32
INT8_MOVE = ops_numpy.MOVE_OPS | {"Concat", "Split", "Resize", "Upsample", "MaxPool",
                                   "GlobalMaxPool", "Pad"}
# movement ops whose inputs after the first are parameters (shape, indices, axes, sizes)
PARAM_MOVE = {"Reshape", "Slice", "Squeeze", "Unsqueeze", "Expand", "Tile", "Gather", "Split",
              "Resize", "Upsample"}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Min": "min", "Max": "max"}


class Int8Patterns:
    """Planner methods emitting int8 steps for ops on dequantized values (a mixin of Planner:
    it reads the planner's graph, quantization records and step list)."""

    def _emit_int8_layernorm(self, nodes, src, dst, k, eps, weights, bias):
        """A layer norm over the last ``k`` dims of a quantized activation (constant scale
        ``weights`` / shift ``bias``, names or None): one int8-rows step, quantized by the
        QuantizeLinear that alone reads it (else f32)."""
        info = self.act_dq(src)
        consts = [None if v is None else self.consts.get(v) for v in (weights, bias)]
        if info is None or any(v is not None and c is None
                               for v, c in zip((weights, bias), consts)):
            return False
        q, qp = info
        self.ensure_q(q)
        sq = self._sole_q(dst)
        step = QuantizedLayerNormStep(
            [self.label(m) for m in nodes] + ([] if sq is None else [self.label(sq[0])]), q,
            dst if sq is None else sq[0].output[0], k, eps, consts[0], consts[1], qp,
            None if sq is None else sq[1])
        self._add(step)
        if sq is not None:
            self._claim(sq[0])
        return True

    def _emit_layernorm(self, *spec):
        """A layer norm (``_emit_int8_layernorm``'s arguments) as one rows step: int8 rows
        where its input is a quantized activation, else f32 rows; False where neither
        applies (its scale or shift is not a constant)."""
        return self._emit_int8_layernorm(*spec) or self._emit_f32_layernorm(*spec)

    def _emit_layernorm_op(self, n):
        """The LayerNormalization op (opset 17) normalizing the trailing dims (a negative
        axis), mean / inverse deviation outputs unused, as _emit_layernorm."""
        a = self.attrs(n)
        axis = int(a.get("axis", -1))
        if axis >= 0 or any(o for o in n.output[1:]) or len(n.input) < 2:
            return False
        bias = n.input[2] if len(n.input) > 2 and n.input[2] else None
        return self._emit_layernorm([n], n.input[0], n.output[0], -axis,
                                    float(a.get("epsilon", 1e-5)), n.input[1], bias)

    def _emit_f32_layernorm(self, nodes, src, dst, k, eps, weights, bias):
        """A layer norm over the last ``k`` dims of an f32 value with constant scale /
        shift: one f32-rows step (F32LayerNormStep), quantized by the QuantizeLinear that
        alone reads it; False where scale or shift is not a constant."""
        consts = [None if v is None else self.consts.get(v) for v in (weights, bias)]
        if any(v is not None and c is None for v, c in zip((weights, bias), consts)):
            return False
        self.ensure(src)
        sq = None if self.round_every_quantize else self._sole_q(dst)
        step = F32LayerNormStep(
            [self.label(m) for m in nodes] + ([] if sq is None else [self.label(sq[0])]), src,
            dst if sq is None else sq[0].output[0], k, eps, consts[0], consts[1],
            None if sq is None else sq[1])
        self._add(step)
        if sq is not None:
            self._claim(sq[0])
        return True

    def _dequantized_tail(self, q):
        """(the moves, every node after ``q``) when ``q``'s output reaches a graph output
        in f32 through moves (Reshape, Flatten, Squeeze, Unsqueeze) and pairs of
        DequantizeLinear / QuantizeLinear of q's parameters (ending dequantized), each
        value read by nothing else; None otherwise."""
        qq = self.node_qparams(q)
        moves, nodes, v, f32 = [], [], q.output[0], False
        while v not in self.graph.output_names:
            cons = self.graph.consumers.get(v, [])
            if len(cons) != 1 or cons[0] in self.claimed:
                return None
            u = self.graph.nodes[cons[0]]
            if u.op_type in ("DequantizeLinear", "QuantizeLinear"):
                up = self.node_qparams(u)
                if (u.op_type == "DequantizeLinear") == f32 or not up or \
                        not up.same_as(qq):
                    return None
                f32 = not f32
            elif u.op_type in ("Reshape", "Flatten", "Squeeze", "Unsqueeze") and \
                    u.input[0] == v:
                moves.append(u)
            else:
                return None
            nodes.append(u)
            v = u.output[0]
        return (moves, nodes) if f32 else None

    def _emit_f32_softmax_tail(self, n, label, q, qp, axis, opset, sq, moves, nodes):
        """An int8 Softmax whose QuantizeLinear goes back to f32 and out of the model (the
        recognizer's class probabilities): the int8-rows step writes f32 and the pairs are
        skipped, as inside a fused chain (the values stay f32 to the end, rounded nowhere);
        the moves run on the f32 values. Not when rounding at every QuantizeLinear."""
        final = nodes[-1].output[0]
        out = final if not moves else n.output[0]
        self._add(QuantizedSoftmaxStep([label, self.label(sq)] + [
            self.label(m) for m in nodes if m not in moves], q, out, axis, qp, None,
            coerce=opset < 13))
        for i, m in enumerate(moves):
            for x in m.input[1:]:
                self.ensure(x)
            dst = final if i == len(moves) - 1 else m.output[0]
            self._add(MS.NumpyStep(self.label(m), m.op_type, self.attrs(m),
                                  self.graph.opset_of(m), [out] + list(m.input[1:]), [dst],
                                  self.consts))
            out = dst
        for node in [sq] + nodes:
            self._claim(node)

    def _emit_scale_residual(self, mul, nodes, sq):
        """``Add(x, Mul(x, s))`` on int8 tensors (the residual squeeze-excitation blocks of
        PP-OCRv4's detector: s a per-channel gate) as one Binary pass, ``x * (1 + s)``,
        rounded once at the Add's QuantizeLinear: the product's own rounding pair is
        skipped as inside a fused chain (not when rounding at every QuantizeLinear)."""
        if self.round_every_quantize:
            return False
        x0, x1 = mul.input[:2]
        q0, q1 = self.act_dq(x0), self.act_dq(x1)
        if q0 is None or q1 is None or q0[0] == q1[0]:
            return False
        # the product's pair and the Add each read by one node alone, not by the model's
        # outputs (a rounding read out of the model must stay)
        dq = self._sole_reader(sq[0].output[0])
        if dq is None or dq[1].op_type != "DequantizeLinear" or \
                self.act_dq(dq[1].output[0]) is None:
            return False
        dq = dq[1]
        add = self._sole_reader(dq.output[0])
        if add is None or add[1].op_type != "Add" or len(add[1].input) != 2 or \
                dq.output[0] not in add[1].input:
            return False
        add = add[1]
        other = add.input[1] if add.input[0] == dq.output[0] else add.input[0]
        qx = self.act_dq(other)
        if qx is None or qx[0] not in (q0[0], q1[0]) or not qx[1].same_as(
                q0[1] if qx[0] == q0[0] else q1[1]):
            return False
        sq2 = self._sole_q(add.output[0])
        if sq2 is None:
            return False
        x, s = (q0, q1) if qx[0] == q0[0] else (q1, q0)
        self.ensure_q(x[0])
        self.ensure_q(s[0])
        step = Int8BinaryStep(nodes + [self.label(m) for m in (dq, add, sq2[0])], "mul", x[0],
                              s[0], sq2[0].output[0], x[1], None, sq2[1], one_plus=s[1])
        self._add(step)
        for m in (sq[0], dq, add, sq2[0]):
            self._claim(m)
        return True

    def _emit_channel_table(self, n, label, q, a):
        """A BatchNormalization between a DequantizeLinear and a QuantizeLinear (both per
        tensor, 8-bit, of 4-D maps): one 256-entry table per channel (ort_arith)."""
        sq = self._sole_q(n.output[0])
        consts = [np.asarray(self.consts[x]) for x in n.input[1:5]]
        if sq is None or any(c.ndim != 1 or c.size != consts[0].size for c in consts):
            return False
        table = channel_table("BatchNormalization", a, self.graph.opset_of(n), consts, q[1],
                              sq[1], consts[0].size)
        self.ensure_q(q[0])
        self._add(ChannelTableStep([label, self.label(sq[0])], q[0], sq[0].output[0], table,
                                   np.uint8 if sq[1].dt == "u8" else np.int8, n.op_type))
        self._claim(sq[0])
        return True

    def _emit_int8(self, n, label):
        op = n.op_type
        acts = [x for x in n.input if x and x not in self.consts]
        params = []
        if op in PARAM_MOVE and n.input and n.input[0] in acts:
            # a data-movement op: only its data input is int8; its shape / index / axes
            # inputs may be int64 values computed at run time (Shape -> Concat)
            params = [x for x in acts[1:] if x != n.input[0]]
            if any(self.act_dq(x) for x in params):
                return False
            acts = [n.input[0]]
        if not acts or not all(self.act_dq(x) for x in acts):
            return False
        qs = [self.act_dq(x) for x in acts]
        a = self.attrs(n)
        if op == "BatchNormalization" and acts == [n.input[0]] and len(n.input) == 5 and \
                len([o for o in n.output if o]) == 1:
            return self._emit_channel_table(n, label, qs[0], a)
        if op == "Concat" and all(x in acts for x in n.input if x):
            sq = self._sole_q(n.output[0])
            same = len({(q[1].dt, float(q[1].scale[0]), int(q[1].zp[0])) for q in qs}) == 1
            if sq is not None or same:
                qd = sq[1] if sq is not None else qs[0][1]
                out = sq[0].output[0] if sq is not None else f"{n.output[0]}::q"
                for q in qs:
                    self.ensure_q(q[0])
                nodes = [label] + ([self.label(sq[0])] if sq is not None else [])
                self._add(MS.ConcatStep(nodes, [q[0] for q in qs], out, a.get("axis", 1),
                                       [q[1] for q in qs], qd))
                if sq is not None:
                    self._claim(sq[0])
                else:
                    self.dq_info[n.output[0]] = (out, qd)
                return True
        if op in INT8_MOVE:
            if len({(q[1].dt, float(q[1].scale[0]), int(q[1].zp[0])) for q in qs}) != 1:
                return False
            if op in ("Resize", "Upsample") and a.get("mode", "nearest") != "nearest":
                return False
            if op == "Pad" and a.get("mode", "constant") == "constant":
                if self.graph.opset_of(n) < 11:
                    return False
                v = n.input[2] if len(n.input) > 2 else ""
                if (v and (v not in self.consts or np.any(np.asarray(self.consts[v]) != 0))) \
                        or a.get("value", 0.0) != 0.0:
                    return False  # padding with 0.0: the zero point (below)
            if op in ("Gather", "Concat", "Split", "Slice", "Expand", "Tile", "Reshape",
                      "Resize", "Upsample", "Squeeze", "Unsqueeze") and \
                    any(x and x not in self.consts and x not in acts and x not in params
                        for x in n.input):
                return False
            if op in ("MaxPool",) and len([o for o in n.output if o]) != 1:
                return False
            if op in ("Gather",) and n.input[0] not in acts:
                return False
            qp = qs[0][1]
            ins = [self.act_dq(x)[0] if x in acts else x for x in n.input]
            for x in ins:
                if x in params:
                    self.ensure(x)
                elif x and x not in self.consts:
                    self.ensure_q(x)
            outs = [f"{o}::q" if o else "" for o in n.output]
            if op in ("MaxPool", "GlobalMaxPool"):
                self._add(S.PoolStep([label], ins[0], outs[0], op, a, qp.dt))
            elif op == "Pad" and a.get("mode", "constant") == "constant":
                zp = self.const_name(np.asarray(qp.zp[0], np.uint8 if qp.dt == "u8"
                                                else np.int8))
                ins = (ins + ["", "", ""])[:4]
                ins[2] = zp
                self._add(MS.QuantizedMoveStep(label, op, a, self.graph.opset_of(n), ins, outs,
                                              self.consts))
            else:
                step = MS.QuantizedMoveStep(label, op, a, self.graph.opset_of(n), ins, outs,
                                           self.consts)
                self._add(step)
            for o, oq in zip(n.output, outs):
                if o:
                    self.dq_info[o] = (oq, qp)
            return True
        sq = self._sole_q(n.output[0]) if len(n.output) == 1 else None
        qd = sq[1] if sq else None
        out = sq[0].output[0] if sq else n.output[0]
        nodes = [label] + ([self.label(sq[0])] if sq else [])
        if op in ("AveragePool", "GlobalAveragePool") and sq:
            qin = qs[0]
            self.ensure_q(qin[0])
            if op == "AveragePool" and self.round_every_quantize and \
                    qin[1].dt == qd.dt and qin[0] not in self.graph.output_names:
                # ONNX Runtime's QLinearAveragePool rounds in its own order (ort_arith)
                self._add(AveragePoolStep(nodes, qin[0], out, a, qin[1], qd))
            elif qin[1].same_as(qd):
                self._add(S.PoolStep(nodes, qin[0], out, op, a, qin[1].dt))
            elif qin[1].scale.size == 1 and qd.scale.size == 1:
                # the requantization as the pooling's linear post-op: one primitive
                self._add(S.PoolStep(nodes, qin[0], out, op, a, qin[1].dt,
                                     requant_linear=(qin[1], qd)))
            else:
                self._add(S.PoolStep(nodes, qin[0], out, op, a, qin[1].dt,
                                     requant=_reorder_fn(qin[1], qd)))
            self._claim(sq[0])
            return True
        if op == "Mul" and sq and self._emit_scale_residual(n, nodes, sq):
            return True
        if op in BINARY and len(n.input) == 2:
            x0, x1 = n.input
            c = None
            if x1 in self.consts or x0 in self.consts:
                if x0 in self.consts:
                    if op in ("Sub", "Div"):
                        return False
                    x0, x1 = x1, x0
                c = np.asarray(self.consts[x1], F32)
                q0, q1 = self.act_dq(x0), None
            else:
                q0, q1 = self.act_dq(x0), self.act_dq(x1)
            self.ensure_q(q0[0])
            if q1 is not None:
                self.ensure_q(q1[0])
            cls = Int8BinaryStep if q1 is not None and qd is not None and \
                op in ("Add", "Sub", "Mul") else S.BinaryStep
            extra = {"ort_form": self.round_every_quantize} if cls is Int8BinaryStep else {}
            qc = _qlinear_constant_of(self, op, x1, q0[1], qd) if c is not None else None
            if qc is not None:  # ONNX Runtime's QLinearAdd / QLinearMul with a constant
                cls, extra = Int8BinaryStep, {"ort_form": True, "qconst": qc}
            step = cls(nodes, BINARY[op], q0[0], q1[0] if q1 else None, out, q0[1],
                       q1[1] if q1 else None, qd, const1=c, **extra)
            step.swappable = op in ("Add", "Mul", "Min", "Max")
            self._add(step)
            if sq:
                self._claim(sq[0])
            return True
        if op in UNARY:
            e = _eltwise_of(op, a, list(n.input), self.consts)
            if e is None:
                return False
            self.ensure_q(qs[0][0])
            self._add(S.EltwiseStep(nodes, qs[0][0], out, e[0], e[1], e[2], qs[0][1], qd))
            if sq:
                self._claim(sq[0])
            return True
        return False


def _qlinear_constant_of(planner, op, name, q0, qd):
    """(8-bit values, QParams) of the constant operand ``name`` of an Add / Mul that ONNX
    Runtime runs as QLinearAdd / QLinearMul (the constant a per-tensor DequantizeLinear of
    the activation's 8-bit type, the result quantized to it too), when the session rounds
    at every QuantizeLinear; else None."""
    if not planner.round_every_quantize or op not in ("Add", "Mul") or qd is None:
        return None
    entry = planner.qconst.get(name)
    if entry is None or not entry[1].per_tensor or not q0.dt == qd.dt == entry[1].dt:
        return None
    return np.asarray(entry[0]), entry[1]


def _reorder_fn(src_q, dst_q):
    """f32 average of int8 values -> requantized int8 (one Reorder)."""
    import dnnq
    from dnnq import args as A
    cache = {}

    def fn(y):
        run = cache.get(y.shape)
        if run is None:
            attr = dnnq.PrimitiveAttr()
            attr.set_scales_mask(A.DNNL_ARG_SRC, 0)
            attr.set_zero_points_mask(A.DNNL_ARG_SRC, 0)
            attr.set_scales_mask(A.DNNL_ARG_DST, 0)
            attr.set_zero_points_mask(A.DNNL_ARG_DST, 0)
            tag = S.layout_tag(y.ndim) if S._is_channels_last(y) else None
            prim = dnnq.Reorder(dnnq.MemoryDesc(y.shape, "f32", tag),
                                dnnq.MemoryDesc(y.shape, dst_q.dt, tag), attr)
            # the scales and zero points checked once (Reorder.bind)
            run = cache[y.shape] = prim.bind({
                A.DNNL_ARG_SRC: y,
                A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC: src_q.scale,
                A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC: src_q.zp,
                A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: dst_q.scale,
                A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST: dst_q.zp})
        return run(y)
    return fn
