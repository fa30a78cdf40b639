"""``dnnq-bench --onnx MODEL.onnx``: a whole ONNX model through ``dnnq.onnx.InferenceSession``
against ONNX Runtime and OpenVINO (when installed), same process, same threads.

Each session is created once (dnnq plans and packs at creation; ORT and OpenVINO compile);
then interleaved rounds (dnnq, ORT, OpenVINO, ...) of :func:`dnnq.bench.timing.best_time` on
the same input, the fastest batch of each kept. Inputs: random normal float32 data of the
model's input shapes (``--shape`` for symbolic dims); integer inputs zeros. The peers' times
and their output's cosine to dnnq's go in the row's notes (the driver's peer columns are
oneDNN's and PyTorch's, which do not run models).

Settings:
  --shape=1x3x48x320[,...]   input shapes, one per model input in order (for symbolic dims)
  --quantize=no|dnnq          dnnq: quantize the (f32) model with dnnq.onnx.quantize first
                              (calibrated on the benchmark's own random input), then time
                              that QDQ model in every runtime
"""
import os
import re
import time

import numpy as np

from dnnq.bench.registry import PEERS, SETTLE_S, Case, Setting, choice, register
from dnnq.errors import InvalidArguments

RUNTIMES = ("ORT", "OpenVINO")


class OnnxProblem:
    def __init__(self, path):
        self.path = path

    def __repr__(self):
        return self.path


def parse(desc):
    """A model path: its existence is checked when the problem is created (a row error)."""
    if not desc.lower().endswith(".onnx") and not os.path.isfile(os.path.expanduser(desc)):
        raise ValueError(f"got {desc!r}; expected the path of an .onnx model file")
    return OnnxProblem(os.path.expanduser(desc))


def _check_shape(text):
    if text and not re.fullmatch(r"\d+(x\d+)*(,\d+(x\d+)*)*", text):
        raise ValueError(f"got {text!r}; expected shapes like 1x3x48x320, one per model input, "
                         "comma-separated")


def _shapes(text, n):
    if not text:
        return [None] * n
    parts = text.split(",")
    if len(parts) != n:
        raise InvalidArguments(f"--shape={text}: {len(parts)} shapes for {n} model inputs")
    try:
        return [tuple(int(d) for d in p.split("x")) for p in parts]
    except ValueError:
        raise InvalidArguments(f"--shape={text}: expected shapes like 1x3x48x320, one per input, "
                         "comma-separated") from None


def _inputs(sess, shapes, rng):
    from dnnq.onnx.session import _NP_OF_ELEM
    feed = {}
    for v, shp in zip(sess.get_inputs(), shapes):
        if shp is None:
            if not all(isinstance(d, int) and d >= 0 for d in v.shape):
                raise InvalidArguments(f"input {v.name!r} has the symbolic shape {v.shape}: give "
                                 "--shape=AxBx... for every input")
            shp = tuple(v.shape)
        dt = _NP_OF_ELEM.get(v.elem_type, np.float32)
        feed[v.name] = rng.standard_normal(shp).astype(np.float32) if dt == np.float32 \
            else np.zeros(shp, dt)
    return feed


def _ort(model_bytes, threads):
    try:
        import onnxruntime as ort
    except ImportError:
        return "not installed"
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    try:
        s = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    except Exception as exc:
        return f"refused: {str(exc).splitlines()[0][:60]}"
    return lambda feed: s.run(None, feed)


def _openvino(model_bytes, threads):
    try:
        import openvino as ov
    except ImportError:
        return "not installed"
    try:
        core = ov.Core()
        compiled = core.compile_model(core.read_model(model_bytes, b""), "CPU", {
            "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "f32"})
        req = compiled.create_infer_request()
    except Exception as exc:
        return f"refused: {str(exc).splitlines()[0][:60]}"

    def run(feed):
        req.infer(feed)
        return [req.get_output_tensor(i).data for i in range(len(compiled.outputs))]
    return run


def _ops(model, feed):
    """2 x multiply-adds of the Conv / ConvTranspose / MatMul / Gemm nodes (shapes inferred
    from the input's); 0 when the shapes cannot be inferred."""
    import onnx
    from onnx import shape_inference
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.value_info[:]  # the exporter's (paddle2onnx writes -1 for dynamic dims)
    for v in m.graph.input:
        if v.name in feed:
            dims = v.type.tensor_type.shape.dim
            for d, s in zip(dims, feed[v.name].shape):
                d.Clear()
                d.dim_value = int(s)
    try:
        m = shape_inference.infer_shapes(m)
    except Exception:
        return 0.0
    shape = {}
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if dims and all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
            shape[v.name] = [d.dim_value for d in dims]
    for t in m.graph.initializer:
        shape[t.name] = list(t.dims)
    prod = {o: n for n in m.graph.node for o in n.output}
    ops = 0.0
    for n in m.graph.node:
        if n.op_type not in ("Conv", "ConvTranspose", "MatMul", "Gemm"):
            continue
        w = n.input[1]
        while w not in shape and w in prod and prod[w].op_type == "DequantizeLinear":
            w = prod[w].input[0]
        x, y = shape.get(n.input[0]), shape.get(n.output[0])
        if x is None or y is None or w not in shape:
            continue
        ws = shape[w]
        if n.op_type == "Conv":
            ops += 2.0 * np.prod(y, dtype=float) * np.prod(ws[1:], dtype=float)
        elif n.op_type == "ConvTranspose":
            ops += 2.0 * np.prod(x, dtype=float) * np.prod(ws[1:], dtype=float)
        else:
            ops += 2.0 * np.prod(y, dtype=float) * x[-1]
    return ops


def create(problem, settings, env):
    import dnnq
    try:
        import onnx
    except ImportError:
        raise dnnq.Unimplemented("--onnx needs the onnx package: pip install 'dnnq[onnx]'"
                                 ) from None
    import dnnq.onnx as donnx
    if not os.path.isfile(problem.path):
        raise InvalidArguments(f"{problem.path!r} is not a file; expected the path of an .onnx "
                               "model")
    model = onnx.load(problem.path)
    sess0 = donnx.InferenceSession(model, threads=env.threads)
    feed = _inputs(sess0, _shapes(settings["shape"], len(sess0.get_inputs())), env.rng)
    notes = []
    if settings["quantize"].lower() == "dnnq":
        t0 = time.perf_counter()
        model = donnx.quantize(model, [feed])
        notes.append(f"quantized by dnnq.onnx.quantize in {time.perf_counter() - t0:.1f} s")
        sess = donnx.InferenceSession(model, threads=env.threads)
    else:
        sess = sess0
    ours = sess.run(None, feed)  # plans this shape (a model with symbolic dims)
    data = model.SerializeToString()
    peers = {}
    if env.use_torch:  # i.e. not --no-peers
        peers = {"ORT": _ort(data, env.threads), "OpenVINO": _openvino(data, env.threads)}
    else:
        peers = {name: "--no-peers" for name in RUNTIMES}
    for name, fn in peers.items():
        if callable(fn):
            try:
                theirs = fn(feed)
            except Exception as exc:
                peers[name] = f"failed: {str(exc).splitlines()[0][:60]}"
                continue
            cos = _cosine(ours[0], theirs[0])
            notes.append(f"{name} output cosine to dnnq's {cos:.4f}")
    n_int8 = sum(r["dtypes_in"][:1] in (["u8"], ["s8"]) for r in sess.plan())
    kernel = f"{len(sess.plan())} steps, {n_int8} int8"
    case = Case(kernel=kernel, ops=_ops(model, feed), dnnq=lambda: sess.run(None, feed),
                notes=notes)
    case.onnx_peers = {name: (lambda fn=fn: fn(feed)) if callable(fn) else fn
                       for name, fn in peers.items()}
    return case


def _cosine(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        return float("nan")
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300))


def run(case, min_time, rounds=3):
    """dnnq and the runtimes in interleaved rounds; the runtimes' times go to the notes."""
    from dnnq.bench.timing import best_time
    timed = {"dnnq": case.dnnq}
    reasons = {}
    for name, fn in case.onnx_peers.items():
        if isinstance(fn, str):
            reasons[name] = fn
        else:
            timed[name] = fn
    best = {name: float("inf") for name in timed}
    for _ in range(rounds):
        for name, fn in timed.items():
            time.sleep(SETTLE_S)
            best[name] = min(best[name], best_time(fn, min_time / rounds))
    t = best["dnnq"]
    for name in RUNTIMES:
        if name in best:
            case.notes.append(f"{name} {best[name] * 1e6:.1f} us (dnnq/{name} "
                              f"{t / best[name]:.2f})")
        else:
            case.notes.append(f"{name}: {reasons[name]}")
    out = {p: "see notes" for p in PEERS}
    out["dnnq"] = t
    return out


def check(case):
    from dnnq.bench.registry import Unchecked
    raise Unchecked("a model has no oneDNN reference; the notes give the runtimes' cosine")


register("onnx", parse=parse, create=create, run=run, check=check,
         syntax="MODEL.onnx", example="model.onnx",
         settings={"shape": Setting("", "AxBx..[,AxBx..]", "input shapes, one per model input "
                                    "in order (needed for symbolic dims)", check=_check_shape),
                   "quantize": Setting("no", "no|dnnq", "dnnq: quantize the (f32) model with "
                                       "dnnq.onnx.quantize first, calibrated on the benchmark's "
                                       "input, and time that QDQ model everywhere",
                                       check=choice("no", "dnnq"))},
         summary="a whole ONNX model through dnnq.onnx.InferenceSession against ONNX Runtime "
                 "and OpenVINO (when installed), same threads; their times and output cosine "
                 "to dnnq's in the notes")
