"""dnnq.onnx.quantize on small generated models: the QDQ layout it writes (weights axis per
op type, bias, activations, exclusions), its calibration against ONNX Runtime's (the same
tensors computed by ORT's f32 session, ORT's own quantize_static scales), and the model run
by ONNX Runtime (and OpenVINO where installed) next to dnnq. The real models are in
test_onnx_quantize_models.py."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402

F = TensorProto.FLOAT


def _init(name, rng, *shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def small_cnn(seed=0, c=8):
    """x (1,3,H,W) -> Conv+BN+Relu -> Conv(stride 2)+Relu -> ConvTranspose(group 2) -> Add
    (residual) -> GlobalAveragePool -> Flatten -> Gemm(transB=1)+Relu -> MatMul -> y, and a
    second output from a MatMul of two activations (x-dependent Gram matrix)."""
    rng = np.random.default_rng(seed)
    inits = [
        _init("w1", rng, c, 3, 3, 3), _init("b1", rng, c, scale=0.1),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "bn_s"),
        _init("bn_b", rng, c, scale=0.1), _init("bn_m", rng, c, scale=0.1),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "bn_v"),
        _init("w2", rng, 2 * c, c, 3, 3, scale=0.2), _init("b2", rng, 2 * c, scale=0.1),
        _init("wt", rng, 2 * c, c // 2, 2, 2, scale=0.2), _init("bt", rng, c, scale=0.1),
        _init("wg", rng, 12, c, scale=0.4), _init("bg", rng, 12, scale=0.1),
        _init("wm", rng, 12, 5, scale=0.4),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["n1"],
                         name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("ConvTranspose", ["r2", "wt", "bt"], ["t1"], name="deconv",
                         strides=[2, 2], group=2),
        helper.make_node("Add", ["t1", "r1"], ["a1"], name="residual"),
        helper.make_node("GlobalAveragePool", ["a1"], ["p1"], name="gap"),
        helper.make_node("Flatten", ["p1"], ["f1"], name="flatten"),
        helper.make_node("Gemm", ["f1", "wg", "bg"], ["g1"], name="gemm", transB=1),
        helper.make_node("Relu", ["g1"], ["g2"]),  # unnamed: excluded by its output's name
        helper.make_node("MatMul", ["g2", "wm"], ["y"], name="matmul"),
        helper.make_node("Reshape", ["r2", "shape"], ["r2f"], name="reshape"),
        helper.make_node("Transpose", ["r2f"], ["r2t"], name="transpose", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["r2f", "r2t"], ["gram"], name="gram"),
    ]
    inits.append(numpy_helper.from_array(np.array([1, 2 * c, -1], np.int64), "shape"))
    g = helper.make_graph(nodes, "small_cnn",
                          [helper.make_tensor_value_info("x", F, [1, 3, 12, 16])],
                          [helper.make_tensor_value_info("y", F, [1, 5]),
                           helper.make_tensor_value_info("gram", F, [1, 2 * c, 2 * c])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def feeds(n, seed=1):
    rng = np.random.default_rng(seed)
    return [{"x": (rng.standard_normal((1, 3, 12, 16)) * (1 + k)).astype(np.float32)}
            for k in range(n)]


def _ort(model):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def _tensors(m, names, feed):
    """The f32 values of ``names`` computed by ONNX Runtime (outputs added to a copy)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(m)
    for t in names:
        probe.graph.output.append(helper.make_tensor_value_info(t, F, None))
    got = _ort(probe).run(names, feed)
    return dict(zip(names, got))


def _by_op(m, op):
    return [n for n in m.graph.node if n.op_type == op]


def _consts(m):
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def _producer(m):
    return {o: n for n in m.graph.node for o in n.output}


def _dq_input(m, node, k):
    """The DequantizeLinear that feeds input k of ``node`` (or None)."""
    return _producer(m).get(node.input[k]) if node.input[k] else None


def _axis(n):
    return next((a.i for a in n.attribute if a.name == "axis"), 1)


# --- layout --------------------------------------------------------------------------------
def test_layout_weights_bias_activations():
    m = small_cnn()
    q = donnx.quantize(m, feeds(3))
    onnx.checker.check_model(q)
    assert q.opset_import[0].version >= 13
    c = _consts(q)
    nodes = {n.name: n for n in q.graph.node}
    want_axis = {"conv1": 0, "conv2": 0, "deconv": 1, "gemm": 0, "matmul": 1}
    for name, axis in want_axis.items():
        n = nodes[name]
        dqw = _dq_input(q, n, 1)
        assert dqw.op_type == "DequantizeLinear" and _axis(dqw) == axis, name
        w = c[dqw.input[0]]
        s, z = c[dqw.input[1]], c[dqw.input[2]]
        assert w.dtype == np.int8 and z.dtype == np.int8 and np.all(z == 0)
        assert s.shape == (w.shape[axis],)
        # symmetric s8: the largest magnitude of each channel is 127
        red = tuple(i for i in range(w.ndim) if i != axis)
        assert np.all(np.abs(w.astype(int)).max(axis=red) == 127)
        dqx = _dq_input(q, n, 0)
        assert dqx.op_type == "DequantizeLinear"
        assert c[dqx.input[2]].dtype == np.uint8 and c[dqx.input[1]].shape == ()
    # the bias: int32, scale = source scale x weight scale (per channel), zero point 0
    for name in ("conv1", "conv2", "deconv", "gemm"):
        n = nodes[name]
        dqb = _dq_input(q, n, 2)
        b = c[dqb.input[0]]
        assert b.dtype == np.int32
        sx = c[_dq_input(q, n, 0).input[1]]
        sw = c[_dq_input(q, n, 1).input[1]]
        if name == "deconv":  # per axis 1 of (C, M/group, k): repeated over the groups
            sw = np.tile(sw, 2)
        np.testing.assert_array_equal(c[dqb.input[1]], np.float32(sx) * sw)
        bf = numpy_helper.to_array(next(t for t in m.graph.initializer
                                        if t.name == n.input[2].split("_dequantized")[0]))
        np.testing.assert_array_equal(b, np.rint(bf.astype(np.float64) /
                                                 c[dqb.input[1]].astype(np.float64)))
    # both activations of the Gram MatMul quantized; the f32 weights gone
    gram = nodes["gram"]
    assert _dq_input(q, gram, 0).op_type == _dq_input(q, gram, 1).op_type == "DequantizeLinear"
    assert not {"w1", "w2", "wt", "wg", "wm"} & set(c)
    # no pair on the outputs of quantized nodes: the model's outputs are f32 values
    assert {n.output[0] for n in _by_op(q, "QuantizeLinear")} and \
        not any(o.name.endswith("quantized") for o in q.graph.output)


def test_weights_match_onnxruntime_quantizer(tmp_path):
    """Per-channel s8 weights and u8 activation ranges as ONNX Runtime's quantize_static
    (MinMax, symmetric weights) computes them from the same calibration inputs."""
    pytest.importorskip("onnxruntime.quantization")
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    m = small_cnn()
    f = feeds(3)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(f)

        def get_next(self):
            return next(self.it, None)

    src, dst = str(tmp_path / "f32.onnx"), str(tmp_path / "ort.onnx")
    onnx.save(m, src)
    quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=True, op_types_to_quantize=["Conv", "Gemm"])  # its grouped
    # ConvTranspose with a bias fails in ORT 1.32 (per-axis-1 weight scales against the bias)
    theirs = onnx.load(dst)
    ours = donnx.quantize(m, f)
    co, ct = _consts(ours), _consts(theirs)
    for name in ("conv1", "conv2", "gemm"):
        no = next(n for n in ours.graph.node if n.name == name)
        nt = next(n for n in theirs.graph.node if n.op_type in ("Conv", "Gemm") and
                  _dq_input(theirs, n, 1) is not None and
                  _dq_input(theirs, n, 1).input[0].startswith(dict(conv1="w1", conv2="w2",
                                                                   gemm="wg")[name]))
        for k in (0, 1):
            do, dt = _dq_input(ours, no, k), _dq_input(theirs, nt, k)
            np.testing.assert_allclose(co[do.input[1]], ct[dt.input[1]], rtol=1e-6)
            assert np.all(np.abs(co[do.input[2]].astype(int) - ct[dt.input[2]].astype(int))
                          <= 1)
            if k == 1:
                assert np.mean(co[do.input[0]] == ct[dt.input[0]]) > 0.99


# --- calibration -----------------------------------------------------------------------------
def _act_qparams(q, tensor):
    c = _consts(q)
    n = next(n for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == tensor)
    return float(c[n.input[1]]), int(c[n.input[2]]), c[n.input[2]].dtype


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("method", ["minmax", "percentile"])
def test_activation_ranges_from_the_f32_values(act, method):
    """Scale and zero point of every calibrated tensor from its values over all the
    calibration inputs, computed here by ONNX Runtime's f32 session and numpy."""
    m = small_cnn()
    f = feeds(4)
    q = donnx.quantize(m, f, activations=act, method=method)
    names = ["x", "r1", "r2", "f1", "g2", "r2f", "r2t"]
    vals = [_tensors(m, names, x) for x in f]
    qmin, qmax = (0, 255) if act == "u8" else (-128, 127)
    for t in names:
        v = np.concatenate([d[t].ravel() for d in vals]).astype(np.float64)
        if method == "minmax":
            lo, hi = v.min(), v.max()
        else:
            assert v.size < 1 << 17  # every value kept: numpy's percentile is exact
            lo, hi = np.percentile(v, 100 - 99.99), np.percentile(v, 99.99)
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        scale = (hi - lo) / (qmax - qmin)
        zp = int(np.clip(np.rint(qmin - lo / scale), qmin, qmax))
        s, z, dt = _act_qparams(q, t)
        assert dt == (np.uint8 if act == "u8" else np.int8)
        np.testing.assert_allclose(s, scale, rtol=1e-6, err_msg=t)
        assert z == zp, t


def test_per_tensor_weights():
    q = donnx.quantize(small_cnn(), feeds(2), per_channel=False)
    c = _consts(q)
    for n in q.graph.node:
        if n.op_type in ("Conv", "ConvTranspose", "Gemm") or n.name == "matmul":
            dqw = _dq_input(q, n, 1)
            assert c[dqw.input[1]].shape == () and not any(a.name == "axis"
                                                          for a in dqw.attribute)
            w = c[dqw.input[0]]
            assert np.abs(w.astype(int)).max() == 127


def test_u8_weights_symmetric():
    q = donnx.quantize(small_cnn(), feeds(2), weights="u8")
    c = _consts(q)
    n = next(n for n in q.graph.node if n.name == "conv2")
    dqw = _dq_input(q, n, 1)
    assert c[dqw.input[0]].dtype == np.uint8 and np.all(c[dqw.input[2]] == 128)


def test_op_types_and_exclude_leave_nodes_f32():
    m = small_cnn()
    q = donnx.quantize(m, feeds(2), op_types=("Conv",), exclude=("conv2", "g2"))
    nodes = {n.name: n for n in q.graph.node}
    prod = _producer(q)
    assert prod[nodes["conv1"].input[0]].op_type == "DequantizeLinear"
    for name in ("conv2", "deconv", "gemm", "matmul", "gram"):
        n = nodes[name]
        assert all(x not in prod or prod[x].op_type != "DequantizeLinear" for x in n.input), name
    # the excluded conv2 reads f32 weights and the f32 relu output
    assert nodes["conv2"].input[:2] == ["r1", "w2"]
    with pytest.raises(dnnq.InvalidArguments, match="exclude.*nope"):
        donnx.quantize(m, feeds(1), exclude=("nope",))


# --- the QDQ model in the runtimes ---------------------------------------------------------
def _cos(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))


@pytest.mark.parametrize("kw", [{}, {"per_channel": False}, {"activations": "s8"},
                                {"weights": "u8"}, {"method": "percentile"},
                                {"op_types": ("Conv", "Gemm"), "exclude": ("deconv",)}],
                         ids=["default", "per-tensor", "s8-acts", "u8-weights", "percentile",
                              "exclude"])
def test_runs_in_onnxruntime_and_dnnq(kw):
    m = small_cnn()
    q = donnx.quantize(m, feeds(4), **kw)
    x = feeds(2, seed=7)  # evaluation inputs, not the calibration ones
    ref = _ort(m)
    theirs = _ort(q)
    ours = donnx.InferenceSession(q)
    for feed in x:
        r = ref.run(None, feed)
        t = theirs.run(None, feed)
        o = ours.run(None, feed)
        for a, b, c in zip(o, t, r):
            # the same QDQ arithmetic: dnnq and ORT agree to f32 rounding (dnnq keeps the
            # chain between layers in f32 as the model says; ORT's does too)
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * np.abs(b).max())
            assert _cos(a, c) > 0.99
    plan = ours.plan()
    if "exclude" not in kw:
        assert sum(r["primitive"] in ("Convolution", "Deconvolution") and
                   r["dtypes_in"][0] in ("u8", "s8") for r in plan) == 3


def test_runs_in_openvino():
    ov = pytest.importorskip("openvino", reason="OpenVINO is not installed "
                             "(pip install openvino): its check of the QDQ model is skipped")
    m = small_cnn()
    q = donnx.quantize(m, feeds(4))
    core = ov.Core()
    compiled = core.compile_model(core.read_model(q.SerializeToString(), b""), "CPU",
                                  {"INFERENCE_NUM_THREADS": 1})
    ours = donnx.InferenceSession(q)
    for feed in feeds(2, seed=7):
        res = compiled(feed)
        for out, o in zip(compiled.outputs, ours.run(None, feed)):
            v = np.asarray(res[out])
            np.testing.assert_allclose(o, v, rtol=2e-2, atol=2e-2 * np.abs(v).max())


# --- bad arguments -------------------------------------------------------------------------
@pytest.mark.parametrize("kw,arg", [
    ({"per_channel": 1}, "per_channel"), ({"activations": "u16"}, "activations"),
    ({"activations": np.uint8}, "activations"), ({"weights": "f32"}, "weights"),
    ({"method": "entropy"}, "method"), ({"op_types": "Conv"}, "op_types"),
    ({"op_types": ("Conv", "Relu")}, "op_types"), ({"exclude": "conv1"}, "exclude"),
    ({"exclude": (1,)}, "exclude")])
def test_bad_options(kw, arg):
    with pytest.raises(dnnq.InvalidArguments, match=f"^{arg}: "):
        donnx.quantize(small_cnn(), feeds(1), **kw)


def test_bad_calibration():
    m = small_cnn()
    with pytest.raises(dnnq.InvalidArguments, match="^calibration: got no input"):
        donnx.quantize(m, [])
    with pytest.raises(dnnq.InvalidArguments, match="^calibration: got dict"):
        donnx.quantize(m, feeds(1)[0])
    with pytest.raises(dnnq.InvalidArguments, match=r"^calibration\[1\]: got list"):
        donnx.quantize(m, [feeds(1)[0], [1, 2]])
    with pytest.raises(dnnq.InvalidArguments, match=r"^calibration\[0\]: .*'y'.*not an input"):
        donnx.quantize(m, [{"x": feeds(1)[0]["x"], "y": np.zeros(1, np.float32)}])
    with pytest.raises(dnnq.InvalidArguments, match=r"^calibration\[0\]: input 'x'.*shape"):
        donnx.quantize(m, [{"x": np.zeros((1, 3, 12), np.float32)}])
    bad = feeds(1)[0]["x"].copy()
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(dnnq.InvalidArguments, match=r"^calibration\[0\]: tensor 'x'.*NaN"):
        donnx.quantize(m, [{"x": bad}])


def test_bad_model():
    with pytest.raises(dnnq.InvalidArguments, match="^model: "):
        donnx.quantize(b"not a model", feeds(1))
    with pytest.raises(dnnq.InvalidArguments, match="^model: "):
        donnx.quantize("/nonexistent.onnx", feeds(1))
    q = donnx.quantize(small_cnn(), feeds(1))
    with pytest.raises(dnnq.InvalidArguments, match="^model: .*quantized already"):
        donnx.quantize(q, feeds(1))


def test_input_model_untouched():
    m = small_cnn()
    before = m.SerializeToString()
    donnx.quantize(m, feeds(1))
    assert m.SerializeToString() == before


def test_batched_matmul_weights_per_tensor():
    """3-D constant weights get one scale (dnnq's batched MatMul takes a common weights
    scale); the result matches ONNX Runtime on the same QDQ model."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((2, 8, 4)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="bmm")], "bmm",
                          [helper.make_tensor_value_info("x", F, [2, 5, 8])],
                          [helper.make_tensor_value_info("y", F, [2, 5, 4])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    f = [{"x": rng.standard_normal((2, 5, 8)).astype(np.float32)} for _ in range(2)]
    q = donnx.quantize(m, f)
    dqw = _dq_input(q, q.graph.node[-1], 1)
    assert not any(a.name == "axis" for a in dqw.attribute) and _consts(q)[dqw.input[1]].shape == ()
    sess = donnx.InferenceSession(q)
    assert sess.plan()[-1]["primitive"] == "MatMul" and sess.plan()[-1]["dtypes_in"][0] == "u8"
    ours, theirs = sess.run(None, f[0])[0], _ort(q).run(None, f[0])[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * np.abs(theirs).max())


def test_quantized_file_says_how_dnnq_rounds_it():
    """dnnq's QDQ file carries the metadata property dnnq.rounding = "chain": dnnq's sessions
    round it once per fused chain by default (ONNX Runtime's files: at every QuantizeLinear)."""
    q = donnx.quantize(small_cnn(), feeds(2))
    assert {p.key: p.value for p in q.metadata_props}["dnnq.rounding"] == "chain"
    assert donnx.InferenceSession(q).rounding == "chain"
    assert donnx.InferenceSession(q, rounding="every").rounding == "every"
