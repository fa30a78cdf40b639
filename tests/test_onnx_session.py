"""dnnq.onnx.InferenceSession: the ONNX Runtime interface, bad models and bad inputs, the
onnx package's backend node tests for the quantized ops, QOperator and FakeQuantize models."""
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=13, domains=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                          [helper.make_opsetid(d, 1) for d in domains])
    m.ir_version = 8
    return m


def _vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def _simple():
    n = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Add", ["r", "b"], ["y"], name="add")]
    m = _model(n, [_vi("x", ["N", 4])], [_vi("y", ["N", 4])],
               [numpy_helper.from_array(np.float32([1, 2, 3, 4]), "b")])
    onnx.helper.set_model_props(m, {"character": "a\nb"})
    return m


def test_ort_interface_and_model_forms(tmp_path):
    m = _simple()
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    x = np.float32([[-1, 2, -3, 4], [5, -6, 7, -8]])
    want = np.maximum(x, 0) + np.float32([1, 2, 3, 4])
    for model in (m, m.SerializeToString(), str(path), path):
        s = donnx.InferenceSession(model)
        (inp,), (out,) = s.get_inputs(), s.get_outputs()
        assert (inp.name, inp.shape, inp.type) == ("x", ["N", 4], "tensor(float)")
        assert (out.name, out.type) == ("y", "tensor(float)")
        y, = s.run(None, {"x": x})
        np.testing.assert_array_equal(y, want)
        assert s.run(["y"], {"x": x})[0].flags.c_contiguous
    rows = s.plan()
    assert [r["primitive"] for r in rows] == ["numpy:Relu", "numpy:Add"]
    assert s.get_modelmeta().custom_metadata_map == {"character": "a\nb"}
    assert rows[0]["nodes"] == ["relu"] and rows[0]["dtypes_in"] == ["f32"]
    assert "numpy:Add" in s.plan_text()


def test_same_as_onnxruntime_interface():
    ort = pytest.importorskip("onnxruntime")
    m = _simple()
    a = donnx.InferenceSession(m.SerializeToString())
    b = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for ours, theirs in ((a.get_inputs(), b.get_inputs()), (a.get_outputs(), b.get_outputs())):
        assert [(v.name, v.shape, v.type) for v in ours] == \
            [(v.name, v.shape, v.type) for v in theirs]


def test_bad_inputs_raise_and_inputs_are_not_modified():
    s = donnx.InferenceSession(_simple())
    x = np.float32([[-1, 2, -3, 4]])
    keep = x.copy()
    cases = [({"z": x}, "'z'"), ({}, "'x'"), ({"x": x.astype(np.float64)}, "float64"),
             ({"x": np.zeros((1, 5), np.float32)}, "(1, 5)"), ({"x": [[1, 2, 3, 4]]}, "list"),
             ([x], "dict")]
    for feed, text in cases:
        with pytest.raises(dnnq.InvalidArguments, match=text.replace("(", r"\(")
                           .replace(")", r"\)")):
            s.run(None, feed)
    with pytest.raises(dnnq.InvalidArguments, match="'nope'"):
        s.run(["nope"], {"x": x})
    s.run(None, {"x": x})
    np.testing.assert_array_equal(x, keep)
    assert x.flags.writeable


def test_identity_output_is_a_copy():
    m = _model([helper.make_node("Identity", ["x"], ["y"])], [_vi("x", [3])], [_vi("y", [3])])
    x = np.float32([1, 2, 3])
    y, = donnx.InferenceSession(m).run(None, {"x": x})
    y[0] = 9
    assert x[0] == 1


@pytest.mark.parametrize("kind", ["dangling", "cycle", "opset", "output", "bytes"])
def test_malformed_models_raise_invalid_arguments(kind):
    if kind == "bytes":
        with pytest.raises(dnnq.InvalidArguments, match="ONNX model"):
            donnx.InferenceSession(b"not a model")
        return
    if kind == "dangling":  # also what a missing initializer looks like
        m = _model([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [_vi("x", [2])],
                   [_vi("y", [2])])
        match = "'w'"
    elif kind == "cycle":
        m = _model([helper.make_node("Add", ["x", "t2"], ["t1"], name="a"),
                    helper.make_node("Relu", ["t1"], ["t2"], name="b")],
                   [_vi("x", [2])], [_vi("t2", [2])])
        match = "cycle"
    elif kind == "opset":
        m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])],
                   [_vi("y", [2])], opset=999)
        match = "opset 999"
    else:
        m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])],
                   [_vi("zz", [2])])
        match = "'zz'"
    with pytest.raises(dnnq.InvalidArguments, match=match):
        donnx.InferenceSession(m)


def test_unsupported_op_raises_unimplemented_at_creation():
    m = _model([helper.make_node("Einsum", ["x", "x"], ["y"], name="ein", equation="i,i->")],
               [_vi("x", [2])], [_vi("y", [])], opset=13)
    with pytest.raises(dnnq.Unimplemented, match=r"'ein'.*Einsum.*opset 13"):
        donnx.InferenceSession(m)
    m = _model([helper.make_node("Foo", ["x"], ["y"], name="foo", domain="my.domain")],
               [_vi("x", [2])], [_vi("y", [2])], domains=["my.domain"])
    with pytest.raises(dnnq.Unimplemented, match=r"'foo'.*Foo"):
        donnx.InferenceSession(m)


def test_threads_argument():
    with pytest.raises(dnnq.InvalidArguments, match="threads"):
        donnx.InferenceSession(_simple(), threads=0)
    before = dnnq.get_num_threads()
    s = donnx.InferenceSession(_simple(), threads=1)
    s.run(None, {"x": np.zeros((1, 4), np.float32)})
    assert dnnq.get_num_threads() == before


def test_dnnq_imports_without_onnx():
    code = ("import sys; sys.modules['onnx'] = None\n"
            "import dnnq\n"
            "try:\n    import dnnq.onnx\nexcept ImportError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ERR" in out.stdout and "pip install" in out.stdout


# --- the onnx package's backend node tests for the quantized ops ------------------------------
BACKEND = ["test_quantizelinear", "test_quantizelinear_axis", "test_dequantizelinear",
           "test_dequantizelinear_axis", "test_dynamicquantizelinear",
           "test_dynamicquantizelinear_max_adjusted", "test_dynamicquantizelinear_min_adjusted",
           "test_qlinearconv", "test_qlinearmatmul_2D_uint8_float32",
           "test_qlinearmatmul_3D_uint8_float32", "test_qlinearmatmul_2D_int8_float32",
           "test_qlinearmatmul_3D_int8_float32", "test_convinteger_without_padding",
           "test_convinteger_with_padding", "test_matmulinteger"]


@pytest.fixture(scope="module")
def backend_cases():
    import warnings
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases("") if c.name in BACKEND}


@pytest.mark.parametrize("name", BACKEND)
def test_backend_node(backend_cases, name):
    case = backend_cases[name]
    for inputs, outputs in case.data_sets:
        # scales, zero points and weights as initializers (as in real models): dnnq packs
        # weights and fixes quantization parameters at creation; the first input stays one
        m = onnx.ModelProto()
        m.CopyFrom(case.model)
        frozen = list(m.graph.input)[1:]
        for vi, v in zip(frozen, inputs[1:]):
            m.graph.initializer.append(numpy_helper.from_array(np.asarray(v), vi.name))
            m.graph.input.remove(vi)
        s = donnx.InferenceSession(m)
        got = s.run(None, {m.graph.input[0].name: np.asarray(inputs[0])})
        for g, want in zip(got, outputs):
            assert g.dtype == want.dtype and g.shape == want.shape
            if np.issubdtype(want.dtype, np.integer):
                # QuantizeLinear rounds x * f32(1 / scale) (oneDNN's reorder) where ONNX
                # divides: a half-way value may round the other way
                tol = 0 if "integer" in name else 1
                assert np.abs(g.astype(np.int64) - want.astype(np.int64)).max() <= tol
            else:
                np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


# --- QOperator models (ORT's quantize_static, QOperator format) and FakeQuantize ---------------
def test_qoperator_model_matches_onnxruntime(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from onnxruntime.quantization import QuantFormat
    from _onnx_models import cosine, ort_arithmetic
    from onnxruntime.quantization import (CalibrationDataReader, QuantType, quantize_static)
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array((rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32),
                                "w")
    b = numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b")
    w2 = numpy_helper.from_array((rng.standard_normal((8, 5)) * 0.3).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Add", ["r", "r"], ["a"]),
             helper.make_node("GlobalAveragePool", ["a"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "w2"], ["mm"]),
             helper.make_node("Softmax", ["mm"], ["y"], axis=-1)]
    m = _model(nodes, [_vi("x", [1, 4, 8, 8])], [_vi("y", [1, 5])], [w, b, w2])
    f32, qop = str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx")
    onnx.save(m, f32)
    xs = [rng.standard_normal((1, 4, 8, 8)).astype(np.float32) for _ in range(3)]

    class R(CalibrationDataReader):
        it = iter([{"x": x} for x in xs])

        def get_next(self):
            return next(self.it, None)
    quantize_static(f32, qop, R(), quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=True)
    ops = {n.op_type for n in onnx.load(qop).graph.node}
    assert "QLinearConv" in ops and "QLinearSoftmax" in ops
    ours = donnx.InferenceSession(qop)
    theirs = ort.InferenceSession(qop, providers=["CPUExecutionProvider"])
    ref = ort.InferenceSession(f32, providers=["CPUExecutionProvider"])
    for x in xs:
        a, b_, c = (s.run(None, {"x": x})[0] for s in (ours, theirs, ref))
        assert cosine(a, c) >= cosine(b_, c) - 1e-3
        assert np.abs(a - b_).max() <= 4 * np.abs(c).max() / 127
        if ort_arithmetic():  # ORT's int8 kernels' arithmetic:
            np.testing.assert_array_equal(a, b_)  # its bytes (QLinearConv's int32 bias too)
    assert "Convolution" in [r["primitive"] for r in ours.plan()]
    # QLinearConv's int32 bias stays an integer bias (added to the int32 sum, then one
    # conversion: the requantization post-ops of ORT's form, no f32 bias in oneDNN's order)
    conv = next(st.spec for st in ours._steps if getattr(st, "spec", None) is not None)
    assert conv.post_ops[0][:2] == ("binary", "mul"), conv.post_ops


@pytest.mark.parametrize("levels", [256, 16])
def test_openvino_fake_quantize(levels):
    rng = np.random.default_rng(5)
    lo, hi = np.float32(-1.0), np.float32(4.0)  # 256 levels: zero point 51 exactly
    consts = [numpy_helper.from_array(np.float32(v), n)
              for v, n in ((lo, "il"), (hi, "ih"), (lo, "ol"), (hi, "oh"))]
    fq = helper.make_node("FakeQuantize", ["x", "il", "ih", "ol", "oh"], ["y"], name="fq",
                          domain="org.openvinotoolkit", levels=levels)
    m = _model([fq], [_vi("x", [2, 50])], [_vi("y", [2, 50])], consts,
               domains=["org.openvinotoolkit"])
    x = (rng.standard_normal((2, 50)) * 2).astype(np.float32)
    y, = donnx.InferenceSession(m).run(None, {"x": x})
    step = (hi - lo) / (levels - 1)
    want = np.rint((np.clip(x, lo, hi) - lo) / step) * step + lo
    np.testing.assert_allclose(y, want, atol=1e-5)
    if levels == 256:
        assert [r["primitive"] for r in donnx.InferenceSession(m).plan()] == \
            ["Reorder", "Reorder"]
