"""Reading and checking an ONNX model: nodes in topological order, constants, value types.

Everything here runs once, when a session is created. A malformed model (an edge nothing
produces, an initializer a node needs but the model lacks, a cycle, an opset this onnx
package does not know) raises ``InvalidArguments``; an op dnnq has no executor for is
reported later, by the planner, as ``Unimplemented``.
"""
import os


from dnnq.errors import InvalidArguments, Unimplemented

try:
    import onnx
    from onnx import numpy_helper
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("dnnq.onnx needs the onnx package: pip install 'dnnq[onnx]' "
                      f"(or pip install onnx) [{_exc}]") from None

# domains whose nodes dnnq can run; the version of the default domain is checked against
# what the installed onnx package defines
KNOWN_DOMAINS = ("", "ai.onnx", "com.microsoft", "org.openvinotoolkit")

ELEM_TYPE_NAMES = {
    1: "tensor(float)", 2: "tensor(uint8)", 3: "tensor(int8)", 5: "tensor(int16)",
    6: "tensor(int32)", 7: "tensor(int64)", 9: "tensor(bool)", 10: "tensor(float16)",
    11: "tensor(double)", 12: "tensor(uint32)", 13: "tensor(uint64)",
}


def load_model(model):
    """ModelProto from a path, bytes or a ModelProto (copied: the session owns its model)."""
    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        return m
    if isinstance(model, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_from_string(bytes(model))
        except Exception as exc:
            raise InvalidArguments(f"model: got {len(model)} bytes that do not parse as an ONNX "
                                   f"model ({exc}); expected a serialized ModelProto") from None
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise InvalidArguments(f"model: got the path {path!r}, which is not a file; "
                                   "expected a path to an .onnx file, bytes or a ModelProto")
        try:
            return onnx.load(path)
        except Exception as exc:
            raise InvalidArguments(f"model: {path!r} does not parse as an ONNX model ({exc})"
                                   ) from None
    raise InvalidArguments(f"model: got {type(model).__name__}; expected a path, bytes or an "
                           "onnx.ModelProto")


#: the model metadata property saying how dnnq's sessions round the file by default
ROUNDING_KEY = "dnnq.rounding"


def model_rounding(model):
    """The rounding a session of ``model`` uses by default: the ``dnnq.rounding`` metadata
    property ("chain" or "every"; dnnq.onnx.quantize writes "chain"), else "every"."""
    for p in model.metadata_props:
        if p.key == ROUNDING_KEY:
            if p.value not in ("chain", "every"):
                raise InvalidArguments(f"model: metadata property {ROUNDING_KEY!r} is "
                                       f"{p.value!r}; expected 'chain' or 'every'")
            return p.value
    return "every"


def attrs_of(node):
    """A node's attributes as a plain dict (tensors as numpy arrays)."""
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, onnx.TensorProto):
            v = numpy_helper.to_array(v)
        elif isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [x.decode() for x in v]
        out[a.name] = v
    return out


def node_label(node, index):
    return node.name or f"#{index} ({node.op_type} -> {', '.join(node.output)})"


class ValueInfo:
    """What get_inputs() / get_outputs() return: ONNX Runtime's NodeArg fields."""

    __slots__ = ("name", "shape", "type", "elem_type")

    def __init__(self, name, shape, type_, elem_type):
        self.name, self.shape, self.type, self.elem_type = name, shape, type_, elem_type

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _value_info(vi):
    t = vi.type.tensor_type
    shape = []
    if t.HasField("shape"):
        for d in t.shape.dim:
            if d.HasField("dim_value"):
                shape.append(int(d.dim_value))
            else:
                shape.append(d.dim_param or None)
    return ValueInfo(vi.name, shape, ELEM_TYPE_NAMES.get(t.elem_type, f"tensor({t.elem_type})"),
                     t.elem_type)


class Graph:
    """A checked model: ``nodes`` in topological order, ``consts`` (initializers and
    Constant nodes as numpy arrays), ``inputs`` / ``outputs`` (ValueInfo), producer and
    consumer maps, ``opsets`` {domain: version}."""

    def __init__(self, model):
        self.model = model
        g = model.graph
        self.opsets = {}
        for o in model.opset_import:
            dom = "" if o.domain == "ai.onnx" else o.domain
            self.opsets[dom] = int(o.version)
        self._check_opsets()
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for n in g.node for a in n.attribute):
            sub = next(n for n in g.node for a in n.attribute
                       if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS))
            raise Unimplemented(f"node {sub.name or sub.op_type!r}: op type {sub.op_type} "
                                f"(opset {self.opsets.get(sub.domain, 0)}) holds a subgraph; "
                                "dnnq.onnx runs graphs without control flow (If, Loop, Scan)")
        self.consts = {}
        for t in g.initializer:
            self.consts[t.name] = numpy_helper.to_array(t)
        init_names = set(self.consts)
        self.inputs = [_value_info(v) for v in g.input if v.name not in init_names]
        self.outputs = [_value_info(v) for v in g.output]
        for v in self.inputs:
            if v.elem_type not in (1, 2, 3, 6, 7, 9):
                raise Unimplemented(f"input {v.name!r}: type {v.type}; dnnq.onnx takes float, "
                                    "uint8, int8, int32, int64 and bool inputs")
        nodes = list(g.node)
        self.nodes = self._toposort(nodes, init_names | {v.name for v in self.inputs})
        self.producer = {}
        self.consumers = {}
        for i, n in enumerate(self.nodes):
            for o in n.output:
                if o:
                    self.producer[o] = i
            for x in n.input:
                if x:
                    self.consumers.setdefault(x, []).append(i)
        for v in self.outputs:
            if v.name not in self.producer and v.name not in init_names and \
                    v.name not in {i.name for i in self.inputs}:
                raise InvalidArguments(f"model: graph output {v.name!r} is produced by no node, "
                                       "input or initializer")
        self.output_names = {v.name for v in self.outputs}

    def _check_opsets(self):
        if "" not in self.opsets:
            raise InvalidArguments("model: no opset import for the default ONNX domain; "
                                   "expected one (e.g. opset 13)")
        latest = onnx.defs.onnx_opset_version()
        v = self.opsets[""]
        if not 1 <= v <= latest:
            raise InvalidArguments(f"model: opset {v} of the default ONNX domain; expected "
                                   f"1 ... {latest} (what the installed onnx package defines)")
        for dom, ver in self.opsets.items():
            if dom not in KNOWN_DOMAINS:
                continue  # a node of an unknown domain is reported by the planner
            if ver < 1:
                raise InvalidArguments(f"model: opset {ver} for domain {dom!r}; expected >= 1")

    def _toposort(self, nodes, available):
        """Kahn's algorithm, stable in the file's order; names a dangling edge or a cycle."""
        produced = {}
        for i, n in enumerate(nodes):
            if n.domain not in ("", "ai.onnx") and n.domain not in self.opsets:
                raise InvalidArguments(f"node {node_label(n, i)!r}: domain {n.domain!r} has no "
                                       "opset import in the model")
            for o in n.output:
                if not o:
                    continue
                if o in produced or o in available:
                    raise InvalidArguments(f"node {node_label(n, i)!r}: output {o!r} is already "
                                           "produced by another node, input or initializer")
                produced[o] = i
        waiting = [0] * len(nodes)
        users = {}
        for i, n in enumerate(nodes):
            for x in n.input:
                if not x or x in available:
                    continue
                if x not in produced:
                    raise InvalidArguments(
                        f"node {node_label(n, i)!r} ({n.op_type}): input {x!r} is produced by "
                        "no node, graph input or initializer (a dangling edge or a missing "
                        "initializer)")
                waiting[i] += 1
                users.setdefault(produced[x], []).append(i)
        import heapq
        ready = [i for i in range(len(nodes)) if waiting[i] == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for u in users.get(i, ()):
                waiting[u] -= 1
                if waiting[u] == 0:
                    heapq.heappush(ready, u)
        if len(order) != len(nodes):
            stuck = [node_label(nodes[i], i) for i in range(len(nodes)) if waiting[i] > 0]
            raise InvalidArguments(f"model: the graph has a cycle through the nodes "
                                   f"{stuck[:5]}{' ...' if len(stuck) > 5 else ''}; "
                                   "expected a directed acyclic graph")
        return [nodes[i] for i in order]

    def opset_of(self, node):
        return self.opsets.get("" if node.domain == "ai.onnx" else node.domain, 0)
