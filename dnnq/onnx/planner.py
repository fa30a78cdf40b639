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
from dnnq.onnx.fusion import Fuser
from dnnq.onnx.graph import attrs_of, node_label
from dnnq.onnx.layers import ConvLayer, MatMulLayer
from dnnq.onnx.quant import RANGE, qparams_of
from dnnq.onnx.normalization import match_layernorm
from dnnq.onnx.int8_rows import QuantizedSoftmaxStep
from dnnq.onnx.shape_fold import fold_shape_steps, fold_view_steps
from dnnq.onnx.tables import match_table
from dnnq.onnx import f32_fusion_steps as FS, move_steps as MS, ort_arith, steps as S
from dnnq.onnx.f32_patterns import _F32_ELTWISE, F32Patterns
from dnnq.onnx.int8_patterns import Int8Patterns

F32 = np.float32
POOL_OPS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}
RNN_OPS = {"LSTM", "GRU", "RNN"}


class Planner(Int8Patterns, F32Patterns):
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
        #: id(node) -> emit(node, label): a pattern whose steps wait for its last node (an
        #: operand it reads is computed after its first node)
        self.deferred = {}
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
        if spec.kind == "layernorm" and self._emit_layernorm(
                spec.nodes, spec.src, spec.dst, -int(spec.attrs["axis"]),
                spec.attrs["epsilon"], spec.weights, spec.bias):
            return
        if spec.kind == "layernorm":
            one = spec.weights or self.const_name(np.float32(1))
            for x in (spec.src, spec.weights, spec.bias):
                self.ensure(x)
            step = MS.NumpyStep(self.label(spec.anchor), "LayerNormalization", spec.attrs, 17,
                               [spec.src, one] + ([spec.bias] if spec.bias else []),
                               [spec.dst], self.consts)
            step.nodes = [self.label(m) for m in spec.nodes]
            self._add(step)
            return
        if spec.kind == "lut":
            self.ensure_q(spec.src)
            self._add(MS.LutStep([self.label(m) for m in spec.nodes], spec))
            return
        layer = MatMulLayer(spec) if spec.kind == "matmul" else ConvLayer(spec)
        pool = spec.max_pool_after
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

    def _emit_node(self, n):
        op = n.op_type
        label = self.label(n)
        opset = self.graph.opset_of(n)
        if n.domain not in ("", "ai.onnx"):
            raise Unimplemented(f"node {label!r}: op type {op} of domain {n.domain!r} (opset "
                                f"{opset}) is not supported by dnnq.onnx")
        deferred = self.deferred.pop(id(n), None)
        if deferred is not None:  # the end of a pattern its first node left for here
            deferred(n, label)
            return
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
            self._add(MS.NumpyStep(label, op, self.attrs(n), opset, [q], list(n.output),
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
        if op == "LayerNormalization" and self._emit_layernorm_op(n):
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
            if self.round_every_quantize and sq is not None and qp.dt == sq[1].dt == "u8":
                self._add(ort_arith.SoftmaxStep([label, self.label(sq[0])], q,
                                                sq[0].output[0], axis, opset < 13, qp, sq[1]))
                self._claim(sq[0])
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
            self._add(FS.F32EltwiseStep(label, op, self.attrs(n), opset, n.input[0],
                                       n.output[0], *elt))
            return
        self._add(MS.NumpyStep(label, op, self.attrs(n), opset, list(n.input), list(n.output),
                              self.consts))

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
        # a model input (a normalised image: values at half steps of the grid) by ONNX's
        # formula, and every QuantizeLinear when rounding at each (ONNX Runtime's bytes);
        # otherwise an f32 op's result as the fused steps quantize theirs (oneDNN's order)
        self._add(S.ReorderStep([label], x, n.output[0], None, qp,
                                onnx_formula=self.round_every_quantize or
                                any(v.name == x for v in self.graph.inputs)))
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
                if isinstance(prod, MS.QuantizedMoveStep) and readers.get(src) == 1 and \
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
            if not isinstance(st, MS.ConcatStep):
                continue
            for i, name in enumerate(list(st.inputs[:len(st.qps)])):
                prod = producer.get(name)
                if isinstance(prod, MS.QuantizedMoveStep) and prod.op in ("Resize", "Upsample") \
                        and readers.get(name) == 1 and name not in outputs and \
                        prod.attrs.get("mode", "nearest") == "nearest" and id(prod) not in taken:
                    st.take_resize(i, prod)
                    taken.add(id(prod))
        for st in self.steps:  # the f32 concatenations quantized in one step
            if not isinstance(st, FS.F32ConcatQuantizeStep):
                continue
            for i, name in enumerate(list(st.inputs[:st.n_data])):
                prod = producer.get(name)
                if type(prod) is MS.NumpyStep and prod.op in ("Resize", "Upsample") and \
                        readers.get(name) == 1 and name not in outputs and \
                        prod.attrs.get("mode", "nearest") == "nearest" and \
                        id(prod) not in taken and st.inputs.count(name) == 1:
                    st.take_resize(i, prod)
                    taken.add(id(prod))
        self.steps[:] = [st for st in self.steps if id(st) not in taken]
        # an f32 x + x * s read only by the f32 Concat (or by a Resize it took): quantized
        # from x and s by the Concat itself (F32ConcatQuantizeStep.take_scale_residual)
        readers, producer, outputs = self._step_links()
        for st in self.steps:
            if not isinstance(st, FS.F32ConcatQuantizeStep):
                continue
            for i, name in enumerate(list(st.inputs[:st.n_data])):
                prod = producer.get(name)
                if type(prod) is FS.F32ScaleResidualStep and readers.get(name) == 1 and \
                        name not in outputs and st.inputs.count(name) == 1 and \
                        st.take_scale_residual(i, prod):
                    taken.add(id(prod))
        self.steps[:] = [st for st in self.steps if id(st) not in taken]
        # a lookup table read only by the Concat: its entries requantized to the Concat's
        # scale and zero point once (the same bytes as requantizing its output each run)
        for st in self.steps:
            if not isinstance(st, MS.ConcatStep):
                continue
            for i, name in enumerate(list(st.inputs[:len(st.qps)])):
                prod = producer.get(name)
                if i in st._resized or not isinstance(prod, MS.LutStep) or \
                        readers.get(name) != 1 or name in outputs or \
                        st.qps[i].same_as(st.qd) or st.qps[i].dt != st.qd.dt:
                    continue
                table = prod.table.view(prod.out_dtype)
                prod.table = np.ascontiguousarray(st._requant(i, table)[0].view(np.uint8))
                prod.impl_info += " (requantized for the concatenation)"
                st.qps = list(st.qps)
                st.qps[i] = st.qd

    def _alias(self, src, dst, label):
        step = MS.NumpyStep(label, "Identity", {}, 13, [src], [dst], self.consts)
        step.primitive = "alias"
        self._add(step)

    # int8 steps for single nodes on dequantized inputs
    def _sole_reader(self, name):
        """(index, node) of the one unclaimed node reading ``name`` (not a graph output), or
        None."""
        if name in self.graph.output_names:
            return None
        cons = self.graph.consumers.get(name, [])
        if len(cons) != 1 or cons[0] in self.claimed:
            return None
        return cons[0], self.graph.nodes[cons[0]]

    def _sole_q(self, name):
        """The QuantizeLinear node that alone reads ``name`` (per-tensor), or None."""
        got = self._sole_reader(name)
        if got is None:
            return None
        q = got[1]
        if q.op_type != "QuantizeLinear":
            return None
        qp = self.node_qparams(q)
        if qp is None or not qp.per_tensor or qp.dt not in ("u8", "s8"):
            return None
        return q, qp

    def _claim(self, node):
        self.claimed.add(self._index[id(node)])
