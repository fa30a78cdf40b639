"""The planner's f32 patterns (planner.py's Planner takes them in): f32 ops between layers that
become one dnnq primitive each, with the bits of the numpy steps they replace (the steps are
f32_fusion_steps.py's; docs/onnx.md lists the patterns), and the MatMul of two f32
activations."""
import numpy as np

from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.onnx import f32_fusion_steps as FS, steps as S
from dnnq.onnx.layers import MatMulLayer

F32 = np.float32
#: f32 unary ops ops_numpy runs on dnnq.Eltwise (its _toolkit_eltwise): (algorithm, alpha,
#: beta) for f32_fusion_steps.F32EltwiseStep
_F32_ELTWISE = {"Sigmoid": ("logistic", 0.0, 0.0), "Tanh": ("tanh", 0.0, 0.0),
                "Exp": ("exp", 0.0, 0.0), "Log": ("log", 0.0, 0.0),
                "Softplus": ("soft_relu", 1.0, 0.0), "Mish": ("mish", 0.0, 0.0)}


class F32Patterns:
    """Planner methods emitting the f32 patterns (a mixin of Planner)."""

    def _emit_f32_swish(self, n, label):
        """``QuantizeLinear(Mul(x, Sigmoid(Mul(x, c))))`` (c an f32 scalar constant) or
        ``QuantizeLinear(Mul(x, Sigmoid(x)))`` of an f32 x, each value read by the next node
        alone, as one Eltwise swish (alpha c) writing the QuantizeLinear's int8: dnnq's swish
        is x * logistic(alpha * x) with the logistic the Sigmoid step runs, so the same bits
        (PP-OCRv4 rec's SVTR neck in a conv-only QDQ file: three steps and an f32 map each).
        Without the QuantizeLinear, one F32SwishStep writing the f32 result (the only form
        when rounding at every QuantizeLinear: that one divides, as ONNX Runtime's does)."""
        first, alpha = [], 1.0
        if n.op_type == "Mul":
            if len(n.input) != 2:
                return False
            c = [v for v in n.input if v in self.consts]
            xs = [v for v in n.input if v and v not in self.consts]
            if len(c) != 1 or len(xs) != 1:
                return False
            cv = np.asarray(self.consts[c[0]])
            if cv.size != 1 or cv.dtype != np.float32:
                return False
            alpha, x = float(cv.reshape(-1)[0]), xs[0]
            got = self._sole_reader(n.output[0])
            if got is None or got[1].op_type != "Sigmoid":
                return False
            sig = got[1]
            first = [sig]
        else:
            x, sig = n.input[0], n
        if not x or x in self.consts or self.act_dq(x) is not None:
            return False
        got = self._sole_reader(sig.output[0])
        if got is None or got[1].op_type != "Mul" or \
                sorted(got[1].input) != sorted([x, sig.output[0]]):
            return False
        mul = got[1]
        sq = self._sole_q(mul.output[0])
        if sq is not None and self.round_every_quantize:
            return False
        self.ensure(x)
        if sq is None:  # an f32 result (a layer norm reads it in PP-OCRv4 rec's neck)
            taken = first + [mul]
            self._add(FS.F32SwishStep([label] + [self.label(k) for k in taken], x,
                                      mul.output[0], alpha))
            for k in taken:
                self._claim(k)
            return True
        taken = first + [mul, sq[0]]
        self._add(S.EltwiseStep([label] + [self.label(k) for k in taken], x, sq[0].output[0],
                                "swish", alpha, 0.0, None, sq[1]))
        for k in taken:
            self._claim(k)
        return True

    def _emit_f32_binary_quantized(self, n, label):
        """``QuantizeLinear(Add / Mul(a, b))``, a and b f32 values or dequantized int8 ones,
        the result read by the QuantizeLinear alone, as one FusedBinaryStep: int8 operands
        read as int8 with their scales and zero points, the QuantizeLinear's int8 written,
        no f32 operand or result in memory.  PP-OCRv4 det's neck in a conv-only QDQ file
        (an upsampled int8 map added to an f32 map) and its squeeze-excitation gates
        (``x * s`` before a QuantizeLinear); the same bits as the dequantize / numpy /
        quantize steps it replaces."""
        if len(n.input) != 2 or n.input[0] == n.input[1] or self.round_every_quantize or \
                any(v in self.consts or not v for v in n.input):
            return False
        sq = self._sole_q(n.output[0])
        if sq is None:
            return False
        q = [self.act_dq(v) for v in n.input]
        ins = []
        for v, qv in zip(n.input, q):
            if qv is None:
                self.ensure(v)
                ins.append(v)
            else:
                self.ensure_q(qv[0])
                ins.append(qv[0])
        self._add(FS.FusedBinaryStep([label, self.label(sq[0])], n.op_type.lower(), n.op_type,
                                    ins[0], ins[1], sq[0].output[0],
                                    None if q[0] is None else q[0][1],
                                    None if q[1] is None else q[1][1], sq[1]))
        self._claim(sq[0])
        return True

    def _emit_f32_concat_quantized(self, n, label):
        """``QuantizeLinear(Concat(...))`` along axis 1 of f32 values, the result read by the
        QuantizeLinear alone, as one F32ConcatQuantizeStep (nearest Resizes that only it
        reads are taken in later: _resize_into_concat)."""
        if self.round_every_quantize or len(n.input) < 2 or self.attrs(n).get("axis") != 1 or \
                any(not v or v in self.consts or self.act_dq(v) is not None for v in n.input):
            return False
        sq = self._sole_q(n.output[0])
        if sq is None:
            return False
        for v in n.input:
            self.ensure(v)
        self._add(FS.F32ConcatQuantizeStep([label, self.label(sq[0])], list(n.input),
                                          sq[0].output[0], sq[1]))
        self._claim(sq[0])
        return True

    def _emit_f32_scale_residual(self, mul, label):
        """``Add(x, Mul(x, s))`` of f32 activations, the product read by the Add alone, as
        one F32ScaleResidualStep (x the operand both read); with an Add of another map and
        a QuantizeLinear after it, as one F32ScaleResidualQuantizeStep at that Add
        (_scale_residual_quantized)."""
        got = self._sole_reader(mul.output[0]) if len(mul.input) == 2 else None
        add = got[1] if got is not None else None
        if add is None or add.op_type != "Add" or len(add.input) != 2 or \
                add.input[0] == add.input[1]:
            return False
        other = add.input[1] if add.input[0] == mul.output[0] else add.input[0]
        if other not in mul.input or mul.input[0] == mul.input[1] or \
                any(v in self.consts for v in mul.input):
            return False
        s = mul.input[1] if mul.input[0] == other else mul.input[0]
        self._claim(add)
        end = self._scale_residual_quantized(add)
        if end is not None:
            outer, y, sq = end
            labels = [label, self.label(add)]

            def emit(node, outer_label):
                qy = self.act_dq(y)
                if qy is None:
                    self.ensure(y)
                else:
                    self.ensure_q(qy[0])
                self._add(FS.F32ScaleResidualQuantizeStep(
                    labels + [outer_label, self.label(sq[0])], other, s,
                    y if qy is None else qy[0], add.output[0], sq[0].output[0],
                    None if qy is None else qy[1], sq[1]))
            self.deferred[id(outer)] = emit
            self._claim(sq[0])
            return True
        self._add(FS.F32ScaleResidualStep([label, self.label(add)], other, s, add.output[0]))
        return True

    def _scale_residual_quantized(self, add):
        """(outer Add, its other operand y, (QuantizeLinear, QParams)) when ``add`` (x + x * s)
        is read alone by an Add whose result a per-tensor QuantizeLinear alone reads, y an
        activation (f32, or dequantized 8-bit per tensor): the four nodes then run as one
        F32ScaleResidualQuantizeStep, made at the outer Add (y may be computed after the
        Mul).  Not when rounding at every QuantizeLinear (a different pattern there)."""
        if self.round_every_quantize:
            return None
        got = self._sole_reader(add.output[0])
        outer = got[1] if got is not None else None
        if outer is None or outer.op_type != "Add" or len(outer.input) != 2 or \
                outer.input[0] == outer.input[1] or outer.domain not in ("", "ai.onnx"):
            return None
        y = outer.input[1] if outer.input[0] == add.output[0] else outer.input[0]
        if not y or y in self.consts:
            return None
        qy = self.dq_info.get(y)
        if qy is not None and self.act_dq(y) is None:  # (a per-channel DequantizeLinear)
            return None
        sq = self._sole_q(outer.output[0])
        return None if sq is None else (outer, y, sq)

    def _emit_f32_product(self, n, label):
        """MatMul of two f32 activations (the Conv / MatMul layers with constant weights
        are built by the fuser, f32 ones included)."""
        if n.op_type != "MatMul":
            raise Unimplemented(f"node {label!r}: op type {n.op_type} with inputs "
                                f"{list(n.input)} that dnnq.onnx cannot map on a primitive "
                                "(constant weights expected)")
        from dnnq.onnx.fusion import LayerSpec
        spec = LayerSpec("matmul", n)
        spec.runtime_weights = n.input[1]
        self.ensure(n.input[0])
        self.ensure(n.input[1])
        layer = F32MatMulLayer(spec)
        layer.nodes = [label]
        layer.primitive = "MatMul"
        self._add(layer)


class F32MatMulLayer(MatMulLayer):
    """MatMul of two f32 activations (dnnq's f32 MatMul)."""

    def _runtime_weights(self, b, prim):
        return np.ascontiguousarray(b, F32).reshape(prim.weights_desc.dims)

    def _plan(self, env):
        import dnnq
        from dnnq.memory import MemoryDesc
        s = self.spec
        x, w = env[s.src], env[s.runtime_weights]
        if x.ndim < 2 or w.ndim < 2 or x.shape[-1] != w.shape[-2]:
            raise InvalidArguments(f"{s.label()}: inputs of shapes {x.shape} and {w.shape}; "
                                   "expected (..., M, K) and (..., K, N)")
        batch = np.broadcast_shapes(x.shape[:-2], w.shape[:-2])
        B = int(np.prod(batch)) if batch else 1
        xb = int(np.prod(x.shape[:-2])) if x.ndim > 2 else 1
        wb = int(np.prod(w.shape[:-2])) if w.ndim > 2 else 1
        if xb not in (1, B) or wb not in (1, B):
            raise Unimplemented(f"{s.label()}: batch dims {x.shape[:-2]} x {w.shape[:-2]}; "
                                "dnnq.onnx broadcasts a batch of 1 only")
        M, K, N = x.shape[-2], x.shape[-1], w.shape[-1]
        src_md = MemoryDesc((xb, M, K), "f32")
        wmd = MemoryDesc((wb, K, N), "f32")
        dst_md = MemoryDesc((B, M, N), "f32")
        prim = self._create(lambda: dnnq.MatMul(src_md, wmd, dst_md), "f32 matmul")
        out_shape = tuple(batch) + (M, N)
        return prim, {}, dst_md, (lambda v: np.ascontiguousarray(v, F32).reshape(src_md.dims)), \
            (lambda v: v.reshape(out_shape))
