"""From a checked graph to the list of executed steps.

1. Constant folding: Constant nodes, and every node whose inputs are all constants (the
   ``QuantizeLinear`` ORT writes on f32 weights, shape arithmetic on constants), is computed
   once. A ``DequantizeLinear`` of a constant keeps its int8 form (``qconst``) for packing.
2. Fusion (fusion.py): the quantized layers and the chains they absorb.
3. Emission in topological order. A ``DequantizeLinear`` of an activation is not a step of
   its own: the int8 value travels on (through the layers, int8 pooling / binary / eltwise
   steps and data movement) and is dequantized only where an f32 op reads it.
"""
import numpy as np

from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.onnx import ops_numpy
from dnnq.onnx.chains import UNARY, _eltwise_of
from dnnq.onnx.fusion import Fuser
from dnnq.onnx.graph import attrs_of, node_label
from dnnq.onnx.layers import ConvLayer, MatMulLayer
from dnnq.onnx.quant import RANGE, qparams_of
from dnnq.onnx.normalization import match_layernorm
from dnnq.onnx.int8_rows import Int8BinaryStep, QuantizedLayerNormStep, QuantizedSoftmaxStep
from dnnq.onnx.shape_fold import fold_shape_steps, fold_view_steps
from dnnq.onnx.tables import match_table
from dnnq.onnx import steps as S

F32 = np.float32
POOL_OPS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}
#: f32 unary ops ops_numpy runs on dnnq.Eltwise (its _toolkit_eltwise): (algorithm, alpha,
#: beta) for steps.F32EltwiseStep
_F32_ELTWISE = {"Sigmoid": ("logistic", 0.0, 0.0), "Tanh": ("tanh", 0.0, 0.0),
                "Exp": ("exp", 0.0, 0.0), "Log": ("log", 0.0, 0.0),
                "Softplus": ("soft_relu", 1.0, 0.0), "Mish": ("mish", 0.0, 0.0)}
INT8_MOVE = ops_numpy.MOVE_OPS | {"Concat", "Split", "Resize", "Upsample", "MaxPool",
                                   "GlobalMaxPool", "Pad"}
# movement ops whose inputs after the first are parameters (shape, indices, axes, sizes)
PARAM_MOVE = {"Reshape", "Slice", "Squeeze", "Unsqueeze", "Expand", "Tile", "Gather", "Split",
              "Resize", "Upsample"}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Min": "min", "Max": "max"}
RNN_OPS = {"LSTM", "GRU", "RNN"}


class Planner:
    def __init__(self, graph, round_every_quantize=False):
        self.graph = graph
        self.round_every_quantize = round_every_quantize
        self.consts = dict(graph.consts)
        self.qconst = {}
        self.dq_info = {}
        self.claimed = set()
        self.folded = set()
        self.steps = []
        self._attrs = {}
        self._index = {id(n): i for i, n in enumerate(graph.nodes)}
        self.avail = {v.name for v in graph.inputs}
        self.qnames = {}   # f32 value name -> its int8 twin produced by an int8 step
        self._fold_constants()
        self._index_dq()
        self.layer_at = {}
        fuser = Fuser(self)
        for i, n in enumerate(graph.nodes):
            if i in self.folded or i in self.claimed:
                continue
            spec = fuser.match(n)
            if spec is None and n.op_type == "ReduceMean":
                spec = match_layernorm(fuser, n)
            if spec is None and n.op_type == "DequantizeLinear":
                if self.round_every_quantize:
                    spec = match_table(fuser, n)
                if spec is None:
                    spec = fuser.match_lut(n)
                if spec is None:
                    spec = match_table(fuser, n, round_inner=False)
            if spec is None:
                continue
            idx = [self._index[id(m)] for m in spec.nodes]
            self.claimed.update(idx)
            self.layer_at[max(idx)] = spec
        self._emit()
        self._drop_aliases()
        self._resize_into_concat()
        self._channels_last_quantize()
        self.steps = fold_shape_steps(self.steps, self.consts, set(self.graph.output_names))
        self.steps = fold_view_steps(self.steps)

    # --- queries used by the fuser -------------------------------------------------------
    def attrs(self, node):
        key = id(node)
        if key not in self._attrs:
            self._attrs[key] = attrs_of(node)
        return self._attrs[key]

    def label(self, node):
        return node_label(node, self._index.get(id(node), -1))

    def node_qparams(self, node):
        """QParams of a Q / DQ node with constant scale and zero point, else None."""
        if node is None or len(node.input) < 2:
            return None
        key = ("q", id(node))
        if key not in self._attrs:
            self._attrs[key] = self._node_qparams(node)
        return self._attrs[key]

    def _node_qparams(self, node):
        s = self.consts.get(node.input[1])
        zname = node.input[2] if len(node.input) > 2 else ""
        z = self.consts.get(zname) if zname else None
        if s is None or (zname and z is None):
            return None
        x = node.input[0]
        nd = None
        if x in self.consts:
            nd = np.asarray(self.consts[x]).ndim
        a = self.attrs(node)
        return qparams_of(self.label(node), node.op_type, s, z, a.get("axis", 1), nd)

    def act_dq(self, name):
        """(int8 name, QParams) when ``name`` is the dequantized form of a per-tensor u8 / s8
        activation, else None."""
        info = self.dq_info.get(name)
        if info is None or not info[1].per_tensor or info[1].dt not in ("u8", "s8"):
            return None
        return info

    def const_name(self, value):
        """A new constant (for steps that need a value the model does not hold)."""
        name = f"::const{len(self.consts)}"
        self.consts[name] = value
        return name

    def dequant_const(self, name):
        return np.asarray(self.consts[name], F32)

    # --- 1. constant folding -------------------------------------------------------------
    def _fold_constants(self):
        g = self.graph
        for i, n in enumerate(g.nodes):
            op = n.op_type
            if n.domain not in ("", "ai.onnx"):
                continue
            if op == "Constant":
                self.consts[n.output[0]] = self._constant_value(n)
                self.folded.add(i)
                continue
            ins = [x for x in n.input if x]
            if not ins or not all(x in self.consts for x in ins) or not ops_numpy.has_op(op):
                continue
            xs = [self.consts[x] if x else None for x in n.input]
            outs = ops_numpy.run_op(op, xs, self.attrs(n), g.opset_of(n), len(n.output))
            for name, v in zip(n.output, outs):
                if name:
                    self.consts[name] = np.asarray(v)
            if op == "DequantizeLinear":
                qp = self.node_qparams(n)
                if qp is not None:
                    self.qconst[n.output[0]] = (np.asarray(self.consts[n.input[0]]), qp,
                                                n.input[0])
            self.folded.add(i)

    def _constant_value(self, n):
        a = self.attrs(n)
        for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
            if key in a:
                v = a[key]
                if key.endswith("float") or key.endswith("floats"):
                    return np.asarray(v, F32)
                if key.startswith("value_int"):
                    return np.asarray(v, np.int64)
                return np.asarray(v)
        raise Unimplemented(f"node {self.label(n)!r}: Constant with attributes {sorted(a)}; "
                            "dnnq.onnx takes value, value_float(s) and value_int(s)")

    def _index_dq(self):
        for i, n in enumerate(self.graph.nodes):
            if i in self.folded or n.op_type != "DequantizeLinear":
                continue
            qp = self.node_qparams(n)
            if qp is not None:
                self.dq_info[n.output[0]] = (n.input[0], qp)

    def _channels_last_quantize(self):
        """A quantize step whose every consumer is a convolution writes channels-last (the
        layout dnnq's convolutions take and give), so that a model's plain f32 input is
        quantized and transposed in one pass rather than the convolution converting it."""
        readers = {}
        for st in self.steps:
            for x in st.inputs:
                readers.setdefault(x, []).append(st)
        outputs = {v.name for v in self.graph.outputs}
        for st in self.steps:
            if not isinstance(st, S.ReorderStep) or st.dst_q is None or \
                    st.outputs[0] in outputs:
                continue
            users = readers.get(st.outputs[0], [])
            if users and all(isinstance(u, ConvLayer) and u.spec.src == st.outputs[0]
                             for u in users):
                st.channels_last_out = True

    # --- 3. emission ---------------------------------------------------------------------
    def _add(self, step):
        self.steps.append(step)
        for o in step.outputs:
            if o:
                self.avail.add(o)

    def ensure(self, name):
        """Make ``name`` (an f32 / int64 / bool value) available to a step, dequantizing an
        int8 value where needed."""
        if not name or name in self.avail or name in self.consts:
            return
        info = self.dq_info.get(name)
        if info is None:
            raise InvalidArguments(f"model: value {name!r} is read before anything computes it")
        q, qp = info
        self.ensure_q(q)
        self._add(S.ReorderStep([f"{name} (dequantize)"], q, name, qp, None))

    def ensure_q(self, name):
        if name in self.avail or name in self.consts:
            return
        raise InvalidArguments(f"model: int8 value {name!r} is read before anything "
                               "computes it")

    def _emit(self):
        g = self.graph
        for i, n in enumerate(g.nodes):
            if i in self.folded:
                continue
            spec = self.layer_at.get(i)
            if spec is not None:
                self._emit_layer(spec)
                continue
            if i in self.claimed:
                continue
            self._emit_node(n)
        for v in g.outputs:
            self.ensure(v.name)

    def _emit_layer(self, spec):
        if spec.kind == "layernorm" and self._emit_int8_layernorm(
                spec.nodes, spec.src, spec.dst, -int(spec.attrs["axis"]),
                spec.attrs["epsilon"], spec.weights, spec.bias):
            return
        if spec.kind == "layernorm":
            one = spec.weights or self.const_name(np.float32(1))
            for x in (spec.src, spec.weights, spec.bias):
                self.ensure(x)
            step = S.NumpyStep(self.label(spec.anchor), "LayerNormalization", spec.attrs, 17,
                               [spec.src, one] + ([spec.bias] if spec.bias else []),
                               [spec.dst], self.consts)
            step.nodes = [self.label(m) for m in spec.nodes]
            self._add(step)
            return
        if spec.kind == "lut":
            self.ensure_q(spec.src)
            self._add(S.LutStep([self.label(m) for m in spec.nodes], spec))
            return
        layer = MatMulLayer(spec) if spec.kind == "matmul" else ConvLayer(spec)
        pool = getattr(spec, "max_pool_after", None)
        layer.nodes = [self.label(m) for m in spec.nodes if pool is None or m is not pool[0]]
        for name in layer.inputs:
            if spec.src_q is None and name == spec.src:
                self.ensure(name)
            else:
                self.ensure_q(name)
        layer.primitive = layer.primitive_name
        self._add(layer)
        if pool is not None:  # fusion.Fuser._end: the quantization moved before the pooling
            node, out = pool
            self._add(S.PoolStep([self.label(node)], spec.dst, out, node.op_type,
                                 self.attrs(node), spec.dst_q.dt))

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

    def _emit_int8_layernorm_op(self, n, label):
        """The LayerNormalization op (opset 17) on a quantized activation, normalizing the
        trailing dims (a negative axis), mean / inverse deviation outputs unused."""
        a = self.attrs(n)
        axis = int(a.get("axis", -1))
        if axis >= 0 or any(o for o in n.output[1:]) or len(n.input) < 2:
            return False
        bias = n.input[2] if len(n.input) > 2 and n.input[2] else None
        return self._emit_int8_layernorm([n], n.input[0], n.output[0], -axis,
                                         float(a.get("epsilon", 1e-5)), n.input[1], bias)

    def _emit_node(self, n):
        op = n.op_type
        label = self.label(n)
        opset = self.graph.opset_of(n)
        if n.domain not in ("", "ai.onnx"):
            raise Unimplemented(f"node {label!r}: op type {op} of domain {n.domain!r} (opset "
                                f"{opset}) is not supported by dnnq.onnx")
        if op == "DequantizeLinear":
            if n.output[0] in self.dq_info:
                return  # dequantized where an f32 op reads it (ensure)
        if op == "QuantizeLinear":
            if self._emit_quantize(n, label):
                return
        if op in RNN_OPS:
            from dnnq.onnx.rnn import RnnStep
            for x in n.input:
                self.ensure(x)
            xr = None
            info = self.act_dq(n.input[0])
            if info is not None:  # the input's quantization bounds it
                qp = info[1]
                lo, hi = RANGE[qp.dt]
                xr = float(qp.scale[0]) * max(abs(lo - int(qp.zp[0])), abs(hi - int(qp.zp[0])))
            step = RnnStep(label, n, self.attrs(n), self.consts, x_range=xr)
            step._fixed_range = xr is not None
            self._add(step)
            return
        if op in ("Shape", "Size") and self.act_dq(n.input[0]) is not None:
            # the int8 twin has the same (logical) shape: nothing to dequantize
            q = self.act_dq(n.input[0])[0]
            self.ensure_q(q)
            self._add(S.NumpyStep(label, op, self.attrs(n), opset, [q], list(n.output),
                                  self.consts))
            return
        if self._emit_int8(n, label):
            return
        if op in POOL_OPS and len([o for o in n.output if o]) == 1:
            self.ensure(n.input[0])
            self._add(S.PoolStep([label], n.input[0], n.output[0], op, self.attrs(n), "f32"))
            return
        if op in ("Conv", "ConvTranspose", "MatMul", "Gemm"):
            self._emit_f32_product(n, label)
            return
        if op == "LayerNormalization" and self._emit_int8_layernorm_op(n, label):
            return
        if op == "Softmax" and self.act_dq(n.input[0]) is not None:
            q, qp = self.act_dq(n.input[0])
            self.ensure_q(q)
            sq = self._sole_q(n.output[0])
            axis = int(self.attrs(n).get("axis", -1 if opset >= 13 else 1))
            tail = None if sq is None or self.round_every_quantize else \
                self._dequantized_tail(sq[0])
            if tail is not None:
                self._emit_f32_softmax_tail(n, label, q, qp, axis, opset, sq[0], *tail)
                return
            self._add(QuantizedSoftmaxStep(
                [label] + ([] if sq is None else [self.label(sq[0])]), q,
                n.output[0] if sq is None else sq[0].output[0], axis, qp,
                None if sq is None else sq[1], coerce=opset < 13))
            if sq is not None:
                self._claim(sq[0])
            return
        if op == "Softmax" and opset >= 13:
            self.ensure(n.input[0])
            sq = self._sole_q(n.output[0])
            if sq is not None and np.all(sq[1].zp == 0):
                # the QuantizeLinear after it as the primitive's destination scale (dnnq's
                # Softmax takes no destination zero point)
                self._add(S.SoftmaxStep([label, self.label(sq[0])], n.input[0],
                                        sq[0].output[0], self.attrs(n).get("axis", -1), sq[1]))
                self._claim(sq[0])
                return
            self._add(S.SoftmaxStep([label], n.input[0], n.output[0],
                                    self.attrs(n).get("axis", -1), None))
            return
        if not ops_numpy.has_op(op):
            raise Unimplemented(f"node {label!r}: op type {op} (opset {opset}) is not supported "
                                "by dnnq.onnx")
        if op in ("Mul", "Sigmoid") and self._emit_f32_swish(n, label):
            return
        if op in ("Add", "Mul") and self._emit_f32_binary_quantized(n, label):
            return
        if op == "Concat" and self._emit_f32_concat_quantized(n, label):
            return
        for x in n.input:
            self.ensure(x)
        if op == "Mul" and self._emit_f32_scale_residual(n, label):
            return
        elt = _F32_ELTWISE.get(op)
        if elt is not None and n.input and n.input[0] not in self.consts:
            self._add(S.F32EltwiseStep(label, op, self.attrs(n), opset, n.input[0],
                                       n.output[0], *elt))
            return
        self._add(S.NumpyStep(label, op, self.attrs(n), opset, list(n.input), list(n.output),
                              self.consts))

    def _sole_reader(self, name):
        """(index, node) of the one unclaimed node reading ``name`` (not a graph output), or
        None."""
        if name in self.graph.output_names:
            return None
        cons = self.graph.consumers.get(name, [])
        if len(cons) != 1 or cons[0] in self.claimed:
            return None
        return cons[0], self.graph.nodes[cons[0]]

    def _emit_f32_swish(self, n, label):
        """``QuantizeLinear(Mul(x, Sigmoid(Mul(x, c))))`` (c an f32 scalar constant) or
        ``QuantizeLinear(Mul(x, Sigmoid(x)))`` of an f32 x, each value read by the next node
        alone, as one Eltwise swish (alpha c) writing the QuantizeLinear's int8: dnnq's swish
        is x * logistic(alpha * x) with the logistic the Sigmoid step runs, so the same bits
        (PP-OCRv4 rec's SVTR neck in a conv-only QDQ file: three steps and an f32 map each)."""
        if self.round_every_quantize:
            return False
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
        if sq is None:
            return False
        self.ensure(x)
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
        self._add(S.FusedBinaryStep([label, self.label(sq[0])], n.op_type.lower(), n.op_type,
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
        self._add(S.F32ConcatQuantizeStep([label, self.label(sq[0])], list(n.input),
                                          sq[0].output[0], sq[1]))
        self._claim(sq[0])
        return True

    def _emit_f32_scale_residual(self, mul, label):
        """``Add(x, Mul(x, s))`` of f32 activations, the product read by the Add alone, as
        one F32ScaleResidualStep (x the operand both read)."""
        if len(mul.input) != 2 or mul.output[0] in self.graph.output_names:
            return False
        cons = self.graph.consumers.get(mul.output[0], [])
        add = self.graph.nodes[cons[0]] if len(cons) == 1 else None
        if add is None or add.op_type != "Add" or cons[0] in self.claimed or \
                len(add.input) != 2 or add.input[0] == add.input[1]:
            return False
        other = add.input[1] if add.input[0] == mul.output[0] else add.input[0]
        if other not in mul.input or mul.input[0] == mul.input[1] or \
                any(v in self.consts for v in mul.input):
            return False
        s = mul.input[1] if mul.input[0] == other else mul.input[0]
        self._add(S.F32ScaleResidualStep([label, self.label(add)], other, s, add.output[0]))
        self._claim(add)
        return True

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

    def _emit_quantize(self, n, label):
        qp = self.node_qparams(n)
        if qp is None:
            return False
        x = n.input[0]
        src = self.dq_info.get(x)
        if src is not None:  # Q(DQ(q)): the same int8 tensor, or a requantization
            self.ensure_q(src[0])
            if src[1].same_as(qp):
                self._alias(src[0], n.output[0], label)
            else:
                self._add(S.ReorderStep([label], src[0], n.output[0], src[1], qp))
            return True
        self.ensure(x)
        self._add(S.ReorderStep([label], x, n.output[0], None, qp))
        return True

    def _step_links(self):
        """({value: number of steps reading it}, {value: the step writing it}, graph
        outputs) of the emitted steps, for the passes that merge steps."""
        readers = {}
        for st in self.steps:
            for x in st.inputs:
                readers[x] = readers.get(x, 0) + 1
        producer = {o: st for st in self.steps for o in st.outputs}
        return readers, producer, set(self.graph.output_names)

    def _drop_aliases(self):
        """An int8 data-movement step followed by the QuantizeLinear that names its result
        (an alias step): the movement writes that name itself, when nothing else reads its
        own output."""
        readers, producer, outputs = self._step_links()
        keep = []
        for st in self.steps:
            if st.primitive == "alias":
                src, dst = st.inputs[0], st.outputs[0]
                prod = producer.get(src)
                if isinstance(prod, S.QuantizedMoveStep) and readers.get(src) == 1 and \
                        src not in outputs:
                    prod.outputs = [dst if o == src else o for o in prod.outputs]
                    prod.nodes = prod.nodes + st.nodes
                    producer[dst] = prod
                    continue
            keep.append(st)
        self.steps[:] = keep

    def _resize_into_concat(self):
        """An int8 nearest Resize read only by an int8 Concat resizes into the Concat's
        output (ConcatStep.take_resize): PP-OCRv4 det's neck upsamples three maps x2 - x8
        into one."""
        readers, producer, outputs = self._step_links()
        taken = set()
        for st in self.steps:
            if not isinstance(st, S.ConcatStep):
                continue
            for i, name in enumerate(list(st.inputs[:len(st.qps)])):
                prod = producer.get(name)
                if isinstance(prod, S.QuantizedMoveStep) and prod.op in ("Resize", "Upsample") \
                        and readers.get(name) == 1 and name not in outputs and \
                        prod.attrs.get("mode", "nearest") == "nearest" and id(prod) not in taken:
                    st.take_resize(i, prod)
                    taken.add(id(prod))
        for st in self.steps:  # the f32 concatenations quantized in one step
            if not isinstance(st, S.F32ConcatQuantizeStep):
                continue
            for i, name in enumerate(list(st.inputs[:st.n_data])):
                prod = producer.get(name)
                if type(prod) is S.NumpyStep and prod.op in ("Resize", "Upsample") and \
                        readers.get(name) == 1 and name not in outputs and \
                        prod.attrs.get("mode", "nearest") == "nearest" and \
                        id(prod) not in taken and st.inputs.count(name) == 1:
                    st.take_resize(i, prod)
                    taken.add(id(prod))
        self.steps[:] = [st for st in self.steps if id(st) not in taken]
        # a lookup table read only by the Concat: its entries requantized to the Concat's
        # scale and zero point once (the same bytes as requantizing its output each run)
        for st in self.steps:
            if not isinstance(st, S.ConcatStep):
                continue
            for i, name in enumerate(list(st.inputs[:len(st.qps)])):
                prod = producer.get(name)
                if i in st._resized or not isinstance(prod, S.LutStep) or \
                        readers.get(name) != 1 or name in outputs or \
                        st.qps[i].same_as(st.qd) or st.qps[i].dt != st.qd.dt:
                    continue
                table = prod.table.view(prod.out_dtype)
                prod.table = np.ascontiguousarray(st._requant(i, table)[0].view(np.uint8))
                prod.impl_info += " (requantized for the concatenation)"
                st.qps = list(st.qps)
                st.qps[i] = st.qd

    def _alias(self, src, dst, label):
        step = S.NumpyStep(label, "Identity", {}, 13, [src], [dst], self.consts)
        step.primitive = "alias"
        self._add(step)

    # int8 steps for single nodes on dequantized inputs
    def _sole_q(self, name):
        """The QuantizeLinear node that alone reads ``name`` (per-tensor), or None."""
        if name in self.graph.output_names:
            return None
        cons = self.graph.consumers.get(name, [])
        if len(cons) != 1 or cons[0] in self.claimed:
            return None
        q = self.graph.nodes[cons[0]]
        if q.op_type != "QuantizeLinear":
            return None
        qp = self.node_qparams(q)
        if qp is None or not qp.per_tensor or qp.dt not in ("u8", "s8"):
            return None
        return q, qp

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
            self._add(S.NumpyStep(self.label(m), m.op_type, self.attrs(m),
                                  self.graph.opset_of(m), [out] + list(m.input[1:]), [dst],
                                  self.consts))
            out = dst
        for node in [sq] + nodes:
            self._claim(node)

    def _claim(self, node):
        self.claimed.add(self._index[id(node)])

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
        cons = self.graph.consumers.get(sq[0].output[0], [])
        dq = self.graph.nodes[cons[0]] if len(cons) == 1 else None
        if dq is None or dq.op_type != "DequantizeLinear" or \
                dq.output[0] in self.graph.output_names or \
                self.act_dq(dq.output[0]) is None:
            return False
        cons = self.graph.consumers.get(dq.output[0], [])
        add = self.graph.nodes[cons[0]] if len(cons) == 1 else None
        if add is None or add.op_type != "Add" or cons[0] in self.claimed or \
                len(add.input) != 2 or dq.output[0] not in add.input:
            return False
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
        if op == "Concat" and all(x in acts for x in n.input if x):
            sq = self._sole_q(n.output[0])
            same = len({(q[1].dt, float(q[1].scale[0]), int(q[1].zp[0])) for q in qs}) == 1
            if sq is not None or same:
                qd = sq[1] if sq is not None else qs[0][1]
                out = sq[0].output[0] if sq is not None else f"{n.output[0]}::q"
                for q in qs:
                    self.ensure_q(q[0])
                nodes = [label] + ([self.label(sq[0])] if sq is not None else [])
                self._add(S.ConcatStep(nodes, [q[0] for q in qs], out, a.get("axis", 1),
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
                self._add(S.QuantizedMoveStep(label, op, a, self.graph.opset_of(n), ins, outs,
                                              self.consts))
            else:
                step = S.QuantizedMoveStep(label, op, a, self.graph.opset_of(n), ins, outs,
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
            if qin[1].same_as(qd):
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
            step = cls(nodes, BINARY[op], q0[0], q1[0] if q1 else None, out, q0[1],
                       q1[1] if q1 else None, qd, const1=c)
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


class F32MatMulLayer(MatMulLayer):
    """MatMul of two f32 activations (dnnq's f32 MatMul)."""

    def _runtime_weights(self, b):
        return np.ascontiguousarray(b, F32).reshape(self._wdims)

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
        self._wdims = wmd.dims
        dst_md = MemoryDesc((B, M, N), "f32")
        prim = self._create(lambda: dnnq.MatMul(src_md, wmd, dst_md), "f32 matmul")
        out_shape = tuple(batch) + (M, N)
        return prim, {}, dst_md, (lambda v: np.ascontiguousarray(v, F32).reshape(src_md.dims)), \
            (lambda v: v.reshape(out_shape))
