"""Plain f32 models through dnnq.onnx: convolutions and matrix products on dnnq's f32 layers
(SPEC section 6, "f32 layers"), the rest in numpy; compared with ONNX Runtime. Where this dnnq
has no f32 layers the session must refuse the model at creation, naming the node."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402

RNG = np.random.default_rng(11)


def _has_f32_layers():
    md = dnnq.MemoryDesc
    try:
        dnnq.Convolution(md((1, 2, 3, 3), "f32", "nhwc"), md((2, 2, 1, 1), "f32"),
                         md((1, 2, 3, 3), "f32", "nhwc"), strides=1, padding_l=0,
                         padding_r=0)
        dnnq.MatMul(md((2, 3), "f32"), md((3, 4), "f32"), md((2, 4), "f32"))
    except (dnnq.Unimplemented, dnnq.InvalidArguments):
        return False
    return True


def _c(arr, name, inits):
    inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
    return name


def _model():
    inits = []
    w = lambda *s: (RNG.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    n = [helper.make_node("Conv", ["x", _c(w(16, 3, 3, 3), "w1", inits),
                                   _c(w(16), "b1", inits)], ["c1"], name="conv1",
                          pads=[1, 1, 1, 1], strides=[2, 2]),
         helper.make_node("BatchNormalization", ["c1", _c(np.abs(w(16)) + 0.5, "g", inits),
                                                 _c(w(16), "be", inits), _c(w(16), "m", inits),
                                                 _c(np.abs(w(16)) + 0.5, "v", inits)],
                          ["bn"], name="bn"),
         helper.make_node("Relu", ["bn"], ["r"], name="relu"),
         helper.make_node("Conv", ["r", _c(w(16, 1, 3, 3), "w2", inits)], ["dw"], name="dw",
                          pads=[1, 1, 1, 1], group=16),
         helper.make_node("Sigmoid", ["dw"], ["sg"]),
         helper.make_node("Mul", ["dw", "sg"], ["sw"], name="swish"),
         helper.make_node("MaxPool", ["sw"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["g1"]),
         helper.make_node("Flatten", ["g1"], ["f"]),
         helper.make_node("Gemm", ["f", _c(w(10, 16), "w3", inits), _c(w(10), "b3", inits)],
                          ["fc"], name="fc", transB=1),
         helper.make_node("Softmax", ["fc"], ["y"], axis=-1)]
    g = helper.make_graph(n, "f32", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                   [1, 3, 20, 24])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_f32_model_matches_onnxruntime_or_is_refused():
    m = _model()
    if not _has_f32_layers():
        with pytest.raises(dnnq.Unimplemented, match=r"conv1.*f32"):
            donnx.InferenceSession(m)
        return
    s = donnx.InferenceSession(m)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for _ in range(2):
        x = RNG.standard_normal((1, 3, 20, 24)).astype(np.float32)
        np.testing.assert_allclose(s.run(None, {"x": x})[0], ref.run(None, {"x": x})[0],
                                   rtol=1e-4, atol=1e-6)
    rows = s.plan()
    convs = [r for r in rows if r["primitive"] == "Convolution"]
    assert len(convs) == 2 and all(r["dtypes_in"][0] == "f32" for r in convs)
    assert "bn" in convs[0]["nodes"] and "relu" in convs[0]["nodes"]  # folded, fused
    assert "swish" in convs[1]["nodes"]
    assert "MatMul" in [r["primitive"] for r in rows]
