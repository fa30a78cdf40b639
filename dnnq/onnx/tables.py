"""Element-wise sub-graphs of one int8 input as one 256-entry table.

When a session rounds at every ``QuantizeLinear`` (``rounding="every"``), what follows an
int8 tensor ``x_q`` up to the next rounding is often a small graph of element-wise ops with
``QuantizeLinear -> DequantizeLinear`` pairs inside, every one a function of ``x_q`` alone:
PP-OCR's hard swish ``x * Clip(x + 3, 0, 6) / 6`` with a pair after each op, the learnable
affine blocks ``x * a + b`` (scalar ``a``, ``b``) around it.  Such a graph maps each of the
256 values of ``x_q`` to one value of its final ``QuantizeLinear``: the table is made by
running the graph's own nodes (ops_numpy, the f32 semantics of ONNX) on the 256 values, so it
rounds wherever the model does, and the graph runs as one lookup pass.  A session rounding
once per chain (the default) makes such tables too, its inner pairs only clamping (as in a
fused chain): x * Sigmoid(1.702 x) in PP-OCRv4's recognizer, for one.
"""
import heapq

import numpy as np

from dnnq.eltwise_math import _erf_table, _power_table, eltwise_table
from dnnq.onnx import ops_numpy, ort_arith
from dnnq.onnx.fusion import LayerSpec
from dnnq.onnx.quant import RANGE, dequantize_np

#: ops that act on each element alone (with scalar constants)
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sqrt", "Exp", "Log", "Abs",
               "Neg", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Erf", "Relu",
               "LeakyRelu", "Elu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Softplus",
               "Mish", "Gelu", "Clip", "Identity", "QuantizeLinear", "DequantizeLinear"}

#: ONNX ops whose library functions (exp, tanh, ...) numpy computes with CPU-specific SIMD
#: code, as the eltwise algorithm that eltwise_table computes the same on every CPU:
#: op -> (attrs -> (alg, alpha, beta))
_TRANSCENDENTAL = {
    "Sigmoid": lambda a: ("logistic", 0.0, 0.0),
    "Tanh": lambda a: ("tanh", 0.0, 0.0),
    "Exp": lambda a: ("exp", 0.0, 0.0),
    "Log": lambda a: ("log", 0.0, 0.0),
    "Softplus": lambda a: ("soft_relu", 1.0, 0.0),
    "Elu": lambda a: ("elu", float(a.get("alpha", 1.0)), 0.0),
    "Mish": lambda a: ("mish", 0.0, 0.0),
    "Gelu": lambda a: ("gelu_tanh" if a.get("approximate", "none") == "tanh" else "gelu_erf",
                       0.0, 0.0),
}

#: the graphs searched are short (PP-OCR's longest is 17 nodes); a bound keeps creation linear
MAX_NODES = 64


def match_table(fuser, dq, round_inner=True):
    """A LayerSpec of kind "lut" (with ``table``) for the largest element-wise graph from
    ``dq``'s output (a per-tensor u8 / s8 activation dequantized) to a per-tensor u8 / s8
    ``QuantizeLinear`` whose inner values nothing else reads, or None.  ``round_inner``:
    the inner ``QuantizeLinear -> DequantizeLinear`` pairs round (else they only clamp)."""
    p, g = fuser.p, fuser.g
    src = p.act_dq(dq.output[0])
    if src is None:
        return None
    start = dq.output[0]
    values = {start}
    nodes = []
    heap = list(g.consumers.get(start, []))  # node indices: graph order is topological
    heapq.heapify(heap)
    seen = set(heap)
    while heap and len(nodes) < MAX_NODES:
        i = heapq.heappop(heap)
        n = g.nodes[i]
        if i in p.claimed or i in p.folded or not _tabulable(fuser, n, values):
            continue
        nodes.append(n)
        values.add(n.output[0])
        for j in g.consumers.get(n.output[0], []):
            if j not in seen:
                seen.add(j)
                heapq.heappush(heap, j)
    best = None
    for q in reversed(nodes):
        if q.op_type != "QuantizeLinear":
            continue
        qp = p.node_qparams(q)
        if qp is None or not qp.per_tensor or qp.dt not in ("u8", "s8"):
            continue
        sub = _closed_ancestors(fuser, q, nodes, start)
        if sub is not None and len(sub) > 1:
            best = (sub, q, qp)
            break
    if best is None:
        return None
    sub, q, qp = best
    table = _evaluate(fuser, sub, start, src[1], qp, round_inner)
    if table is None:
        return None
    spec = LayerSpec("lut", sub[0])
    spec.nodes = sub
    spec.src, spec.src_q = src
    spec.dst, spec.dst_q = q.output[0], qp
    spec.table = table
    return spec


def _tabulable(fuser, n, values):
    if n.domain not in ("", "ai.onnx") or n.op_type not in ELEMENTWISE:
        return False
    if len([o for o in n.output if o]) != 1:
        return False
    live = False
    for x in n.input:
        if not x:
            continue
        if x in values:
            live = True
            continue
        c = fuser.const(x)
        if c is None or np.asarray(c).size != 1:
            return False
    return live


def _closed_ancestors(fuser, q, nodes, start):
    """The nodes of ``nodes`` that ``q`` depends on, in graph order, when every value they
    make (but q's output) is read by them alone and is not a graph output; else None."""
    by_out = {n.output[0]: n for n in nodes}
    keep, todo = set(), [q]
    while todo:
        n = todo.pop()
        if id(n) in keep:
            continue
        keep.add(id(n))
        todo += [by_out[x] for x in n.input if x in by_out]
    sub = [n for n in nodes if id(n) in keep]
    inside = {id(n) for n in sub}
    for n in sub:
        if n is q:
            continue
        v = n.output[0]
        if v in fuser.g.output_names:
            return None
        if any(id(fuser.g.nodes[j]) not in inside for j in fuser.g.consumers.get(v, [])):
            return None
    return sub


def _evaluate(fuser, sub, start, qs, qd, round_inner=True):
    """The graph on the 256 values of the source, indexed by the source's byte (an s8
    value's two's complement), or None if it does not end in one byte per value."""
    grid = np.arange(256, dtype=np.int64) - (128 if qs.dt == "s8" else 0)
    env = {start: dequantize_np(grid, qs.scale[0], qs.zp[0])}
    p = fuser.p
    src = fuser.g.producer.get(start)
    if src is not None:  # the source's 8-bit values (ONNX Runtime's QLinear ops read them)
        env[fuser.g.nodes[src].input[0]] = grid.astype(np.uint8 if qs.dt == "u8" else np.int8)
    last = sub[-1]
    done = set()  # QuantizeLinear nodes a QLinear op below computed
    for n in sub:
        if id(n) in done:
            continue
        if round_inner and n.op_type in ("Add", "Mul"):
            got = _qlinear_binary(fuser, n, env, sub)
            if got is not None:
                env[got[0].output[0]] = got[1]
                done.add(id(got[0]))
                continue
        xs = [None if not x else env[x] if x in env else np.asarray(fuser.const(x))
              for x in n.input]
        if not round_inner and n is not last and n.op_type in ("QuantizeLinear",
                                                               "DequantizeLinear"):
            if n.op_type == "QuantizeLinear":  # the pair's clamp, in the real domain
                qp = p.node_qparams(n)
                if qp is None or not qp.per_tensor:
                    return None
                lo, hi = RANGE[qp.dt]
                s, z = float(qp.scale[0]), int(qp.zp[0])
                xs[0] = np.clip(xs[0], np.float32(s * (lo - z)), np.float32(s * (hi - z)))
            env[n.output[0]] = xs[0]
            continue
        env[n.output[0]] = np.asarray(_run(n.op_type, xs, p.attrs(n),
                                           fuser.g.opset_of(n))).reshape(-1)
    table = env[sub[-1].output[0]]
    dt = np.uint8 if qd.dt == "u8" else np.int8
    if table.dtype != dt or table.size != 256:
        return None
    return np.roll(table, -128) if qs.dt == "s8" else table


def _qlinear_binary(fuser, n, env, sub):
    """(the QuantizeLinear after ``n``, its values) where ONNX Runtime runs the Add / Mul
    ``n`` as QLinearAdd / QLinearMul (both operands per-tensor DequantizeLinear outputs of
    one 8-bit type, the result's one QuantizeLinear, in the graph, of that type too): its
    arithmetic, not the f32 op's (ort_arith); else None."""
    g, p = fuser.g, fuser.p
    group = ort_arith.qlinear_binary_group(p, g, n)
    if group is None or all(m is not group[0] for m in sub):
        return None
    q, qq, qps = group
    ops = []
    for x, qp in zip(n.input, qps):
        src = g.nodes[g.producer[x]].input[0]  # the DequantizeLinear's 8-bit source
        if x in p.qconst:
            vals = np.asarray(p.qconst[x][0])
        elif src in env:
            vals = np.asarray(env[src])
        else:
            return None
        ops.append((vals, qp))
    if ops[0][0].size == 1 and ops[1][0].size > 1:  # ONNX Runtime: the full operand first
        ops.reverse()
    (a, aq), (b, bq) = ops
    fn = ort_arith.qlinear_add if n.op_type == "Add" else ort_arith.qlinear_mul
    return q, fn(a, aq, b.reshape(-1) if b.size > 1 else b.reshape(()), bq, qq)


def _run(op, xs, attrs, opset):
    """One node on the table's values: the transcendental ops (and Pow, Erf) the same on
    every CPU (eltwise_table), the others numpy's (exact IEEE arithmetic)."""
    if op in _TRANSCENDENTAL:
        alg, alpha, beta = _TRANSCENDENTAL[op](attrs)
        return eltwise_table(alg, xs[0], alpha, beta)
    if op == "Pow":
        return _power_table(xs[0], xs[1])
    if op == "Erf":
        return _erf_table(xs[0])
    return ops_numpy.run_op(op, xs, attrs, opset)[0]
