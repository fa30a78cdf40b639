"""The numpy ops of ONNX sessions (dnnq.onnx.ops_numpy) against ONNX Runtime running the same
one-node model: the data-movement ops whose fast paths are written by hand (Pad by slices)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from dnnq.onnx import ops_numpy  # noqa: E402


def _ort_pad(x, pads, mode, value=None):
    inputs = ["x", "p"] + (["v"] if value is not None else [])
    inits = [helper.make_tensor("p", TensorProto.INT64, [len(pads)], pads)]
    if value is not None:
        inits.append(helper.make_tensor("v", TensorProto.FLOAT, [], [value]))
    g = helper.make_graph([helper.make_node("Pad", inputs, ["y"], mode=mode)], "pad",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("mode", ["reflect", "constant", "edge"])
@pytest.mark.parametrize("shape,pads", [((3, 1, 10), [0, 0, 3, 0, 0, 9]),
                                        ((2, 5), [1, 4, 1, 0]),
                                        ((4, 3, 7), [0, 2, 6, 0, 2, 6]),
                                        ((2, 1, 576), [0, 0, 64, 0, 0, 64]),
                                        ((2, 2), [1, 1, 1, 1])])
def test_pad_matches_onnxruntime(mode, shape, pads):
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    value = 1.5 if mode == "constant" else None
    inputs = [x, np.array(pads, np.int64)] + ([np.float32(value)] if value is not None else [])
    got = ops_numpy.run_op("Pad", inputs, {"mode": mode}, 13)[0]
    np.testing.assert_array_equal(got, _ort_pad(x, pads, mode, value))


def _ort_resize(x, scales, attrs):
    inits = [helper.make_tensor("roi", TensorProto.FLOAT, [0], []),
             helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales)]
    g = helper.make_graph([helper.make_node("Resize", ["x", "roi", "scales"], ["y"], **attrs)],
                          "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                   x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("ct,nm", [("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"),
                                   ("align_corners", "round_prefer_ceil"),
                                   ("pytorch_half_pixel", "ceil")])
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 4, 4], [1, 1, 2, 3], [1, 1, 1.5, 2],
                                    [1, 1, 0.5, 2]])
@pytest.mark.parametrize("layout", ["plain", "channels_last"])
def test_resize_nearest_matches_onnxruntime(ct, nm, scales, layout):
    """Nearest Resize: integer upscales take the repeating copy (in the source's memory
    order), the others the per-axis gather; both as ONNX Runtime."""
    x = np.random.default_rng(3).standard_normal((2, 5, 6, 4)).astype(np.float32)
    if layout == "channels_last":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": ct, "nearest_mode": nm}
    got = ops_numpy.run_op("Resize", [x, np.zeros(0, np.float32), np.float32(scales)], attrs,
                           13)[0]
    np.testing.assert_array_equal(got, _ort_resize(np.ascontiguousarray(x), scales, attrs))
    if layout == "channels_last" and all(float(s).is_integer() for s in scales) and \
            (ct, nm) in (("asymmetric", "floor"), ("half_pixel", "round_prefer_floor")):
        assert got.strides[1] == x.itemsize  # repeated in place order: still channels-last


@pytest.mark.parametrize("axis", [1, 2, -1, 0])
def test_concat_keeps_a_shared_memory_order(axis):
    """Concat of channels-last inputs: the values of np.concatenate, joined in the inputs'
    memory order (the result channels-last too); mixed layouts give the plain result."""
    rng = np.random.default_rng(axis + 5)
    plain = [rng.standard_normal((2, c, 3, 4)).astype(np.float32) for c in (3, 5)]
    if axis in (2, -1, 0):
        plain = [rng.standard_normal((2, 3, 3, 4)).astype(np.float32) for _ in range(2)]
    cl = [np.ascontiguousarray(p.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) for p in plain]
    want = np.concatenate(plain, axis=axis)
    got = ops_numpy.run_op("Concat", cl, {"axis": axis}, 13)[0]
    np.testing.assert_array_equal(got, want)
    assert got.strides[1] == 4  # channels-last
    mixed = ops_numpy.run_op("Concat", [plain[0], cl[1]], {"axis": axis}, 13)[0]
    np.testing.assert_array_equal(mixed, want)
