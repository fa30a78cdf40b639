"""QOperator models and OpenVINO FakeQuantize, rewritten into the QDQ form the fuser reads.

``QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)`` is ``QuantizeLinear(Conv(DequantizeLinear(x),
DequantizeLinear(w), B * xs * ws), ys, yz)`` — so every QOperator node becomes its QDQ
equivalent before planning, and the same transformations then put it on one dnnq primitive.
``ConvInteger`` / ``MatMulInteger`` become a convolution / matrix product of dequantized
operands with scale 1 (their f32 result is exact below 2^24) cast to int32;
``DynamicQuantizeLSTM`` an LSTM whose int8 weights are dequantized at creation.
OpenVINO ``FakeQuantize`` with 256 levels (or 255, symmetric) is a QuantizeLinear +
DequantizeLinear pair; other level counts run as an element-wise f32 op.
"""
import numpy as np
from onnx import helper, numpy_helper

from dnnq.errors import Unimplemented

F32 = np.float32
QOPS = {"QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger", "QGemm",
        "QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
        "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearConcat",
        "QLinearSoftmax", "DynamicQuantizeLSTM", "FakeQuantize"}


class _Rewriter:
    def __init__(self, model):
        self.m = model
        self.g = model.graph
        self.inits = {t.name: t for t in self.g.initializer}
        self.n = 0
        self.opset = next((o.version for o in model.opset_import
                           if o.domain in ("", "ai.onnx")), 13)

    def name(self, base):
        self.n += 1
        return f"{base}::qop{self.n}"

    def const(self, arr, base):
        name = self.name(base)
        self.g.initializer.append(numpy_helper.from_array(np.asarray(arr), name))
        self.inits[name] = self.g.initializer[-1]
        return name

    def value(self, name):
        t = self.inits.get(name)
        return None if t is None else numpy_helper.to_array(t)

    def node(self, op, ins, outs, label, **attrs):
        return helper.make_node(op, ins, outs, name=f"{label}/{op}", **attrs)

    def dq(self, out, x, s, z, label, axis=None):
        kw = {} if axis is None else {"axis": axis}
        ins = [x, s] + ([z] if z else [])
        return self.node("DequantizeLinear", ins, [out], label, **kw)

    def q(self, out, x, s, z, label):
        return self.node("QuantizeLinear", [x, s] + ([z] if z else []), [out], label)

    def bias_f32(self, b, scales, label):
        """Cast(B) * scale_a * scale_b: folded at creation when the three are constants.  An
        int32 constant B (opset 13 on) becomes ``DequantizeLinear(B, scale_a * scale_b,
        axis=0)`` instead, as ``quantize_static``'s QDQ files write it, so that a session
        rounding at every QuantizeLinear adds it to the int32 sum as QLinearConv does."""
        bf = self.name(label + "/bias")
        prod = self.name(label + "/bias_scale")
        bv = self.value(b)
        sv = [self.value(x) for x in scales]
        if self.opset >= 13 and bv is not None and bv.dtype == np.int32 and bv.ndim == 1 and \
                all(v is not None and v.size in (1, bv.size) for v in sv):
            shape = (bv.size,) if max(v.size for v in sv) > 1 else ()
            zero = self.const(np.zeros(shape, np.int32), label + "/bias_zero")
            return bf, [self.node("Mul", scales, [prod], label + "/s"),
                        self.node("DequantizeLinear", [b, prod, zero], [bf], label + "/b",
                                  axis=0)]
        return bf, [self.node("Mul", scales, [prod], label + "/s"),
                    self.node("Cast", [b], [bf + "c"], label, to=1),
                    self.node("Mul", [bf + "c", prod], [bf], label + "/b")]

    def rewrite(self, n, idx):
        label = n.name or f"#{idx} ({n.op_type})"
        op = n.op_type
        i = list(n.input) + [""] * 10
        a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
        out = n.output[0]
        if op == "QLinearConv":
            xf, wf, yf = (self.name(label + s) for s in ("/x", "/w", "/y"))
            nodes = [self.dq(xf, i[0], i[1], i[2], label),
                     self.dq(wf, i[3], i[4], i[5], label + "/w", axis=0)]
            ins = [xf, wf]
            if i[8]:
                bf, extra = self.bias_f32(i[8], [i[1], i[4]], label)
                nodes += extra
                ins.append(bf)
            conv = helper.make_node("Conv", ins, [yf], name=label)
            conv.attribute.extend(n.attribute)
            return nodes + [conv, self.q(out, yf, i[6], i[7], label)]
        if op in ("QLinearMatMul", "MatMulInteger", "ConvInteger"):
            integer = op != "QLinearMatMul"
            if integer:
                one = self.const(F32(1.0), label + "/one")
                xs, xz, ws, wz = one, i[2], one, i[3]
                x, w = i[0], i[1]
            else:
                x, xs, xz, w, ws, wz = i[:6]
            xf, wf, yf = (self.name(label + s) for s in ("/x", "/w", "/y"))
            axis = 0 if op == "ConvInteger" else -1  # the output channel of the weights
            nodes = [self.dq(xf, x, xs, xz, label), self.dq(wf, w, ws, wz, label + "/w", axis)]
            kind = "Conv" if op == "ConvInteger" else "MatMul"
            core = helper.make_node(kind, [xf, wf], [yf], name=label)
            core.attribute.extend(n.attribute)
            nodes.append(core)
            if integer:
                nodes.append(self.node("Cast", [yf], [out], label, to=6))
            else:
                nodes.append(self.q(out, yf, i[6], i[7], label))
            return nodes
        if op == "QGemm":
            af, bf, yf = (self.name(label + s) for s in ("/a", "/b", "/y"))
            bval = self.value(i[4])
            axis = (0 if a.get("transB", 0) else 1) if bval is not None and bval.size > 1 \
                else None
            nodes = [self.dq(af, i[0], i[1], i[2], label),
                     self.dq(bf, i[3], i[4], i[5], label + "/b", axis)]
            ins = [af, bf]
            if i[6]:
                cf, extra = self.bias_f32(i[6], [i[1], i[4]], label)
                nodes += extra
                ins.append(cf)
            gemm_out = yf if i[7] else out
            nodes.append(helper.make_node("Gemm", ins, [gemm_out], name=label,
                                          alpha=float(a.get("alpha", 1.0)), beta=1.0,
                                          transA=int(a.get("transA", 0)),
                                          transB=int(a.get("transB", 0))))
            if a.get("transA", 0):
                raise Unimplemented(f"node {label!r}: QGemm with transA=1 is not supported")
            if i[7]:
                nodes.append(self.q(out, yf, i[7], i[8], label))
            return nodes
        if op in ("QLinearAdd", "QLinearMul"):
            af, bf, yf = (self.name(label + s) for s in ("/a", "/b", "/y"))
            return [self.dq(af, i[0], i[1], i[2], label), self.dq(bf, i[3], i[4], i[5],
                                                                 label + "/b"),
                    self.node(op[7:], [af, bf], [yf], label),
                    self.q(out, yf, i[6], i[7], label)]
        if op in ("QLinearSigmoid", "QLinearLeakyRelu", "QLinearGlobalAveragePool",
                  "QLinearAveragePool"):
            if a.get("channels_last", 0):
                raise Unimplemented(f"node {label!r}: {op} with channels_last=1; dnnq.onnx "
                                    "takes the NCHW form")
            xf, yf = self.name(label + "/x"), self.name(label + "/y")
            base = op[7:]
            attrs = {k: v for k, v in a.items() if k != "channels_last"}
            return [self.dq(xf, i[0], i[1], i[2], label),
                    self.node(base, [xf], [yf], label, **attrs),
                    self.q(out, yf, i[3], i[4], label)]
        if op == "QLinearSoftmax":
            xf, yf = self.name(label + "/x"), self.name(label + "/y")
            if int(a.get("opset", 13)) < 13 and self.opset >= 13:
                raise Unimplemented(f"node {label!r}: QLinearSoftmax with opset-{a['opset']} "
                                    "semantics in an opset >= 13 model")
            return [self.dq(xf, i[0], i[1], i[2], label),
                    self.node("Softmax", [xf], [yf], label, axis=int(a.get("axis", -1))),
                    self.q(out, yf, i[3], i[4], label)]
        if op == "QLinearConcat":
            yf = self.name(label + "/y")
            nodes, ins = [], []
            rest = list(n.input)[2:]
            for k in range(0, len(rest), 3):
                xf = self.name(label + f"/x{k // 3}")
                nodes.append(self.dq(xf, rest[k], rest[k + 1], rest[k + 2], label + f"/{k}"))
                ins.append(xf)
            nodes.append(self.node("Concat", ins, [yf], label, axis=int(a["axis"])))
            nodes.append(self.q(out, yf, i[0], i[1], label))
            return nodes
        if op == "DynamicQuantizeLSTM":
            return self._dq_lstm(n, i, a, label)
        if op == "FakeQuantize":
            return self._fake_quantize(n, i, a, label)
        raise AssertionError(op)

    def _dq_lstm(self, n, i, a, label):
        """DynamicQuantizeLSTM: W (D, I, 4H) / R (D, H, 4H) int8 with per-(D, 4H) scales ->
        the f32 ONNX LSTM layout (D, 4H, I)."""
        mats = []
        for w, s, z in ((i[1], i[8], i[9]), (i[2], i[10], i[11])):
            wv, sv, zv = self.value(w), self.value(s), self.value(z)
            if wv is None or sv is None:
                raise Unimplemented(f"node {label!r}: DynamicQuantizeLSTM weights computed at "
                                    "run time")
            zv = np.zeros_like(sv, np.int32) if zv is None else zv.astype(np.int32)
            D, _, G = wv.shape
            f = (wv.astype(np.int32) - zv.reshape(D, 1, -1)) * sv.reshape(D, 1, -1)
            mats.append(self.const(np.ascontiguousarray(f.transpose(0, 2, 1), F32), label))
        attrs = {k: v for k, v in a.items()}
        ins = [i[0], mats[0], mats[1]] + list(n.input)[3:8]
        return [helper.make_node("LSTM", ins, list(n.output), name=label, **attrs)]

    def _fake_quantize(self, n, i, a, label):
        levels = int(a.get("levels", 256))
        lims = [self.value(x) for x in i[1:5]]
        out = n.output[0]
        if any(v is None for v in lims):
            return [self.node("FakeQuantizeF32", list(n.input[:5]), [out], label, levels=levels)]
        il, ih, ol, oh = (np.asarray(v, np.float64) for v in lims)
        plan = None
        if levels == 256 and np.all(ih > il) and np.all(oh > ol):
            si, so = (ih - il) / 255, (oh - ol) / 255
            zi, zo = -il / si, -ol / so
            if np.allclose(zi, np.rint(zi), atol=1e-3) and np.allclose(zo, np.rint(zo), atol=1e-3) \
                    and np.all((zi >= 0) & (zi <= 255)) and np.all((zo >= 0) & (zo <= 255)):
                plan = ("u8", si, np.rint(zi).astype(np.uint8), so, np.rint(zo).astype(np.uint8))
        elif levels == 255 and np.allclose(il, -ih) and np.allclose(ol, -oh) and np.all(ih > 0):
            plan = ("s8", ih / 127, np.zeros(np.shape(ih), np.int8), oh / 127,
                    np.zeros(np.shape(oh), np.int8))
        if plan is None or any(np.size(v) > 1 and np.squeeze(v).ndim > 1 for v in lims):
            return [self.node("FakeQuantizeF32", list(n.input[:5]), [out], label, levels=levels)]
        _, si, zi, so, zo = plan
        per = max(np.size(v) for v in lims) > 1
        axis = 1 if per else None
        flat = lambda v: np.asarray(v).reshape(-1) if per else np.asarray(v).reshape(())
        qn = self.name(label + "/q")
        kw = {} if axis is None else {"axis": axis}
        q = self.node("QuantizeLinear", [i[0], self.const(flat(si).astype(F32), label),
                                         self.const(flat(zi), label)], [qn], label, **kw)
        dq = self.node("DequantizeLinear", [qn, self.const(flat(so).astype(F32), label),
                                            self.const(flat(zo), label)], [out], label, **kw)
        return [q, dq]


def rewrite_qoperators(model):
    """Replace QOperator / FakeQuantize nodes in place (the model is the session's copy)."""
    g = model.graph
    if not any(n.op_type in QOPS for n in g.node):
        return model
    r = _Rewriter(model)
    new = []
    for idx, n in enumerate(g.node):
        if n.op_type in QOPS and (n.op_type != "FakeQuantize" or
                                  n.domain == "org.openvinotoolkit"):
            new.extend(r.rewrite(n, idx))
        else:
            new.append(n)
    del g.node[:]
    g.node.extend(new)
    return model
