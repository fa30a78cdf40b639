"""Shape arithmetic (Shape -> Gather / Slice / Cast / Unsqueeze / Concat -> Reshape) computed
once per input shape (dnnq/onnx/shape_fold.py): one plan step, the right values when the input
shape changes between runs and back, the shape steps an exporter interleaved with other ops
moved together; against ONNX Runtime on the same model."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq.onnx as donnx  # noqa: E402


def _model():
    i64 = lambda name, v: numpy_helper.from_array(np.asarray(v, np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zs"], ["n"], axis=0),
        helper.make_node("Relu", ["x"], ["r"]),          # between the shape steps
        helper.make_node("Slice", ["s", "one", "three"], ["cw"]),
        helper.make_node("ReduceProd", ["cw"], ["prod"], keepdims=1),
        helper.make_node("Unsqueeze", ["n", "zero"], ["n1"]),
        helper.make_node("Concat", ["n1", "prod"], ["shape2"], axis=0),
        helper.make_node("Reshape", ["r", "shape2"], ["flat"]),
        helper.make_node("Mul", ["flat", "two"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [i64("zero", [0]), i64("zs", 0), i64("one", [1]), i64("three", [3]),
         numpy_helper.from_array(np.float32(2.0), "two")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _ort(m):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def test_shape_steps_cached_per_input_shape():
    m = _model()
    sess = donnx.InferenceSession(m)
    rows = [r for r in sess.plan() if r["primitive"] == "shape values (cached)"]
    assert len(rows) == 1 and len(rows[0]["nodes"]) >= 5, sess.plan()
    ref = _ort(m)
    rng = np.random.default_rng(1)
    for shape in [(2, 3, 4), (1, 3, 7), (2, 3, 4), (5, 3, 1), (1, 3, 7)]:
        x = rng.standard_normal(shape).astype(np.float32)
        got = sess.run(None, {"x": x})[0]
        want = ref.run(None, {"x": x})[0]
        assert got.shape == want.shape == (shape[0], 3 * shape[2])
        np.testing.assert_array_equal(got, want)


def _i64(name, v):
    return numpy_helper.from_array(np.asarray(v, np.int64), name)


def _int8_moves_model(moves, inits, width):
    """x (N, width) -> Q -> DQ (xd) -> the nodes ``moves`` (ending in y), with the
    initializers ``inits``: int8 moves of one quantized tensor."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"])] + moves
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.float32(0.05), "s"),
         numpy_helper.from_array(np.uint8(128), "z")] + inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _views_model():
    """x -> Q -> DQ -> Reshape -> Transpose -> Slice x 2 -> Squeeze, Shape -> Reshape: int8
    moves of one tensor (attention's head split), the shape of one of them read back."""
    return _int8_moves_model([
        helper.make_node("Reshape", ["xd", "shp"], ["r"]),              # (N, 6, 2, 4)
        helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 1, 3]),  # (2, N, 6, 4)
        helper.make_node("Slice", ["t", "s0", "e0", "ax0"], ["a"]),
        helper.make_node("Slice", ["t", "s1", "e1", "ax0"], ["b"]),
        helper.make_node("Squeeze", ["a", "ax0"], ["a2"]),
        helper.make_node("Squeeze", ["b", "ax0"], ["b2"]),
        helper.make_node("Shape", ["a2"], ["sa"]),
        helper.make_node("Reshape", ["b2", "sa"], ["b3"]),
        helper.make_node("Mul", ["a2", "b3"], ["y"]),
    ], [_i64("shp", [0, 6, 2, 4]), _i64("s0", [0]), _i64("e0", [1]), _i64("s1", [1]),
        _i64("e1", [2]), _i64("ax0", [0])], 48)


def test_int8_view_moves_cached_per_layout():
    """The chain of int8 moves is one step; its views are right for every input shape, and
    when the source arrives in another layout."""
    m = _views_model()
    sess = donnx.InferenceSession(m)
    rows = [r for r in sess.plan() if r["primitive"] == "int8 views (cached)"]
    assert len(rows) == 1 and len(rows[0]["nodes"]) >= 6, sess.plan()
    ref = _ort(m)
    rng = np.random.default_rng(2)
    for n in [3, 1, 3, 5, 1]:
        x = rng.standard_normal((n, 48)).astype(np.float32) * 3
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], ref.run(None, {"x": x})[0])


def _merge_model():
    """x -> Q -> DQ -> Reshape -> Transpose -> Reshape (a copy: attention's head merge) ->
    Mul: a chain of int8 moves whose reshape of a transposed view copies."""
    return _int8_moves_model([
        helper.make_node("Reshape", ["xd", "shp"], ["r"]),              # (N, 3, 5, 4)
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),  # (N, 5, 3, 4)
        helper.make_node("Reshape", ["t", "merged"], ["m"]),            # (N, 5, 12): a copy
        helper.make_node("Mul", ["m", "two"], ["y"]),
    ], [_i64("shp", [0, 3, 5, 4]), _i64("merged", [0, 5, 12]),
        numpy_helper.from_array(np.float32(2.0), "two")], 60)


def test_int8_view_chain_with_a_copy_is_recorded():
    """A reshape of a transposed view (a copy) is recorded as that view plus the copy: the
    chain runs as one strided copy per run, not its moves, and a copy no caller holds goes
    into the same array every run; the values follow the input, for every input shape."""
    m = _merge_model()
    sess = donnx.InferenceSession(m)
    steps = [st for st in sess._steps if st.primitive == "int8 views (cached)"]
    assert len(steps) == 1, sess.plan()
    st = steps[0]
    ref = _ort(m)
    rng = np.random.default_rng(5)
    merged = []
    for n in [2, 1, 2, 2, 3, 2]:
        x = rng.standard_normal((n, 60)).astype(np.float32) * 3
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], ref.run(None, {"x": x})[0])
        if n == 2:
            recorded = [r for r in st._views.values() if r]
            assert recorded and all(any(c is not None for *_, c in r) for r in recorded), \
                st._views
            k = next(i for i, (*_, c) in enumerate(recorded[0]) if c is not None)
            merged.append(st._copy_arrays.get(st.outputs[k]))
    # a session keeps its intermediate arrays: from the second run of a shape on, the
    # merge's copy is the same array every run
    assert st.outputs_private
    assert merged[-1] is not None and all(a is merged[-1] for a in merged[1:]), merged
