"""Replays of warm runs (dnnq/onnx/replay.py): the steps that repeat their last call run as
that call alone once two warm runs handed out the same arrays; a step that hands out another
array than before makes the steps after it run as usual.  Results are compared with the
first run of one-thread sessions (no earlier run to repeat), so that a call that read a
stale array fails."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime.quantization")

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402
from dnnq.onnx.replay import Replay  # noqa: E402
from _onnx_builder import RNG, Builder, weights as _w  # noqa: E402
from _onnx_models import quantize_qdq  # noqa: E402
from test_onnx_warm_runs import _quantized_with_fresh_runs  # noqa: E402

SHAPE = (1, 8, 24, 24)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(QDQ file, inputs of different means, each one's output from a fresh session): a
    convolution chain with pooling, a residual sum, a gate and a graph output that is a
    view (Reshape) of the last dequantization."""
    tmp = tmp_path_factory.mktemp("replay")
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = b.conv(y, 16, 16, k=1)
    y = b.op("Add", [b.conv(y, 16, 16, k=1), y])
    g = b.conv(b.op("GlobalAveragePool", [y]), 16, 16, k=1)
    y = b.op("Mul", [y, b.op("Sigmoid", [g])])
    y = b.conv(y, 16, 8, k=1)
    y = b.op("Reshape", [y, b.const(np.int64([1, -1]))])
    f32, qdq = str(tmp / "f32.onnx"), str(tmp / "qdq.onnx")
    onnx.save(b.model(SHAPE, y), f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal(SHAPE).astype(np.float32)}
                            for _ in range(2)])
    xs = [(RNG.standard_normal(SHAPE) + 0.7 * i - 1).astype(np.float32) for i in range(4)]
    fresh = [donnx.InferenceSession(qdq, threads=1).run(None, {"x": x})[0] for x in xs]
    assert len({f.tobytes() for f in fresh}) == 4
    return qdq, xs, fresh


def _replays(sess):
    return [r for r in sess._replays.values() if isinstance(r, Replay)]


@pytest.mark.parametrize("threads", [1, 2])
def test_warm_runs_replay_the_calls(model, threads):
    """After two warm runs the session runs a replay in which every step that reads no
    graph input is its call alone; the results follow the input (new arrays, and one array
    changed in place), and the arrays a caller holds never change."""
    qdq, xs, fresh = model
    sess = donnx.InferenceSession(qdq, threads=threads)
    held = []
    buf = xs[0].copy()
    for _ in range(3):
        for i, x in enumerate(xs):
            got = sess.run(None, {"x": x})[0]
            np.testing.assert_array_equal(got, fresh[i])
            held.append((got, fresh[i]))
            buf[...] = x
            np.testing.assert_array_equal(sess.run(None, {"x": buf})[0], fresh[i])
    replays = _replays(sess)  # (two threads: one per plan where busy cores sent runs to one)
    inner = [st for st in sess._steps if "x" not in st.inputs and
             st.keeps_output and getattr(st, "_repeat", None) is not None]
    assert len(inner) >= 5 and replays
    assert all(r.calls >= len(inner) for r in replays), ([r.calls for r in replays], len(inner))
    for got, want in held:
        np.testing.assert_array_equal(got, want)
    # neither a replay nor the snapshot it is built from keeps a caller's array alive
    import gc
    import weakref
    sess._replays.clear()
    for _ in range(3):
        x = xs[1].copy()
        y = sess.run(None, {"x": x})[0]
        alive = weakref.ref(x), weakref.ref(y)
        del x, y
        gc.collect()
        assert alive[0]() is None and alive[1]() is None


def test_a_step_handing_out_another_array_ends_the_replay(model, monkeypatch):
    """A step run as usual in the replay (the input's quantize) that hands out a new array
    instead of its kept one: the calls after it must not read the kept array (it holds the
    last run's values); the replay runs the rest of the steps as usual and is built again."""
    qdq, xs, fresh = model
    sess = donnx.InferenceSession(qdq, threads=1)
    for x in xs[:3]:
        sess.run(None, {"x": x})
    (replay,) = _replays(sess)
    first = sess._steps[0]
    assert "x" in first.inputs and first.keeps_output
    out = first.outputs[0]
    real = type(first).run

    def copying(env):
        real(first, env)
        env[out] = env[out].copy()  # the same values in another array
    monkeypatch.setattr(first, "run", copying)
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
    assert not _replays(sess) or _replays(sess)[0] is not replay
    monkeypatch.undo()
    for _ in range(2):
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
    assert _replays(sess)


def test_replay_follows_each_steps_threads(model):
    """A per-step thread plan (here alternating one and two threads) is replayed with each
    step on its threads, and the thread count set before the run is set again after it."""
    qdq, xs, fresh = model
    sess = donnx.InferenceSession(qdq, threads=2)
    key = next(iter(sess._thread_plans))
    plan = [1 + i % 2 for i in range(len(sess._steps))]
    sess._thread_plans[key] = plan
    sess._guards[key] = None  # (this plan whatever the run times)
    sess._replays.clear()
    for x in xs[:3]:
        sess.run(None, {"x": x})
    (replay,) = _replays(sess)
    assert replay.per_step is plan
    assert [e[4] for e in replay.entries] == plan
    seen = []
    real = dnnq.set_num_threads

    def spy(n):
        seen.append(n)
        return real(n)
    before = dnnq.get_num_threads()
    try:
        dnnq.set_num_threads = spy
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
    finally:
        dnnq.set_num_threads = real
    assert _replays(sess) == [replay]
    # every switch to one thread, in each of the four replayed runs
    assert seen.count(1) >= 4 * (len(plan) // 2), seen
    assert dnnq.get_num_threads() == before


def test_no_replay_when_profiling_or_logging(model, monkeypatch, capfd):
    """profile=True times every step and DNNQ_VERBOSE logs every primitive: both run the
    steps as usual."""
    qdq, xs, fresh = model
    sess = donnx.InferenceSession(qdq, threads=1, profile=True)
    for _ in range(3):
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
    assert not _replays(sess)
    assert all(r["runs"] == 12 for r in sess.plan())
    sess = donnx.InferenceSession(qdq, threads=1)
    for x in xs[:3]:
        sess.run(None, {"x": x})
    assert _replays(sess)
    dnnq.set_verbose(1)
    try:
        capfd.readouterr()
        np.testing.assert_array_equal(sess.run(None, {"x": xs[3]})[0], fresh[3])
        logged = capfd.readouterr().out
    finally:
        dnnq.set_verbose(0)
    assert logged.count("exec,cpu,convolution") >= 4, logged


def test_views_and_shape_values_are_set_without_running_their_steps(tmp_path):
    """The steps that only hand out views or shape values of the same arrays (cached int8
    views, cached shape values) are replay entries that set their outputs, and the results
    follow the input."""
    from _onnx_builder import weights as _w
    from dnnq.onnx import replay as replay_mod
    b = Builder()
    y = b.conv("x", 4, 16, k=1)
    shp = b.op("Shape", [y])
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 3, 1]),
                         b.const(np.int64([1, 36, 16]))])
    y = b.op("MatMul", [y, b.const(_w(16, 24))])
    y = b.op("MatMul", [y, b.const(_w(24, 16))])
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 1]),
                         b.op("Concat", [b.op("Slice", [shp, b.const(np.int64([0])),
                                                        b.const(np.int64([2])),
                                                        b.const(np.int64([0]))]),
                                         b.const(np.int64([6, 6]))], axis=0)])
    y = b.conv(y, 16, 8, k=1)
    qdq, xs, fresh = _quantized_with_fresh_runs(tmp_path, b, y, (1, 4, 6, 6), 13, 4)
    assert len({f.tobytes() for f in fresh}) == 4

    def check(sess):
        for _ in range(3):
            for i, x in enumerate(xs):
                np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
        (replay,) = _replays(sess)
        return [e[1] for e in replay.entries if e[0] == replay_mod._SET]

    sess = donnx.InferenceSession(qdq, threads=1)
    set_steps = check(sess)
    assert {st.primitive for st in set_steps} >= {"int8 views (cached)"}, \
        [st.primitive for st in set_steps]
    # only steps with no call of their own (a chain of moves that copies, such as the head
    # merge here, repeats its copy as a call)
    assert all(st.outputs_follow_inputs() and st._repeat is None for st in set_steps)


def test_f32_steps_between_int8_layers_are_replayed(tmp_path, monkeypatch):
    """A conv-only QDQ model's f32 attention between its int8 layers (PP-OCRv4 rec's neck
    in the file dnnq.onnx.quantize writes): f32 views and shape values, a layer norm over
    strided rows, quantizes of strided heads, a reshape of a transposed tensor (a copy), a
    softmax, a concatenation in numpy and one of two layouts into a quantize, a MatMul
    reading a transposed source (staged copies).  On warm runs every step that reads no
    graph input and hands out no graph output is a replay entry of its call or of its
    outputs -- none runs as a step -- and the results follow the input (against the first
    run of one-thread sessions: a call that skipped its staging copy would read the last
    run's values)."""
    from _onnx_builder import weights as _w
    from dnnq.onnx import replay as replay_mod
    b = Builder()
    y = b.conv("x", 8, 16, k=1)                                  # (1, 16, 6, 10)
    t = b.op("Reshape", [y, b.const(np.int64([1, 16, 60]))])     # rows 16 elements apart
    t = b.op("LayerNormalization", [t, b.const(1 + _w(60)), b.const(_w(60))], axis=-1)
    qkv = b.op("MatMul", [t, b.const(_w(60, 48))])
    h = b.op("Transpose", [b.op("Reshape", [qkv, b.const(np.int64([1, 16, 3, 2, 8]))])],
             perm=[2, 0, 3, 1, 4])                               # (3, 1, 2, 16, 8)
    q, k, v = (b.op("Squeeze", [b.op("Slice", [h, b.const(np.int64([i])),
                                               b.const(np.int64([i + 1])),
                                               b.const(np.int64([0]))]),
                                b.const(np.int64([0]))]) for i in range(3))
    q = b.op("Mul", [q, b.const(np.float32(0.35))])
    a = b.op("Softmax", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])],
             axis=-1)
    o = b.op("MatMul", [a, v])                                   # (1, 2, 16, 8)
    o = b.op("Reshape", [b.op("Transpose", [o], perm=[0, 2, 1, 3]),
                         b.const(np.int64([1, 16, 16]))])        # the head merge: a copy
    o = b.op("Concat", [o, b.op("Sigmoid", [o])], axis=2)        # (1, 16, 32)
    o = b.op("MatMul", [b.op("Transpose", [o], perm=[0, 2, 1]), b.const(_w(16, 30))])
    o = b.op("Reshape", [o, b.const(np.int64([1, 16, 6, 10]))])
    y = b.op("Concat", [b.op("Sigmoid", [y]), o], axis=1)        # channels-last + plain
    y = b.conv(y, 32, 8, k=1)
    shape = (1, 8, 6, 10)
    m = b.model(shape, y, opset=17)
    m.graph.output[0].type.tensor_type.shape.dim.extend(
        onnx.TensorShapeProto.Dimension(dim_value=d) for d in shape)
    qdq = donnx.quantize(m, [{"x": RNG.standard_normal(shape).astype(np.float32)}
                             for _ in range(2)]).SerializeToString()
    xs = [(RNG.standard_normal(shape) * (1 + 0.5 * i)).astype(np.float32) for i in range(4)]
    fresh = [donnx.InferenceSession(qdq, threads=1, rounding="chain").run(None, {"x": x})[0]
             for x in xs]
    assert len({f.tobytes() for f in fresh}) == 4
    sess = donnx.InferenceSession(qdq, threads=1, rounding="chain")
    kinds = {r["primitive"] for r in sess.plan()}
    assert {"Softmax", "LayerNormalization (f32 rows)", "views (cached)", "numpy:Concat",
            "Concat"} <= kinds, kinds
    buf = xs[0].copy()
    for _ in range(3):
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
            buf[...] = x
            np.testing.assert_array_equal(sess.run(None, {"x": buf})[0], fresh[i])
    (replay,) = _replays(sess)
    out = sess.get_outputs()[0].name
    ran = [sess._steps[i] for i, e in enumerate(replay.entries) if e[0] == replay_mod._STEP]
    assert all("x" in st.inputs or out in st.outputs for st in ran), \
        [(st.primitive, st.nodes) for st in ran]
    assert any(e[0] == replay_mod._COPY_SET for e in replay.entries)
    # the steps' own runs (no repeat of the last call, no replay) copy into their staging
    # arrays again (KeptOutput.staged_copy)
    from dnnq.onnx.buffers import KeptOutput
    monkeypatch.setattr(KeptOutput, "_repeated", lambda self, env: False)
    own = donnx.InferenceSession(qdq, threads=1, profile=True, rounding="chain")
    for _ in range(2):
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(own.run(None, {"x": x})[0], fresh[i])


@pytest.mark.parametrize("quantized", [True, False], ids=["qdq", "f32"])
def test_attention_over_inputs_of_several_shapes(tmp_path, quantized):
    """A session fed inputs of alternating widths (a text recognizer's lines) keeps one plan
    per shape: the products of two activations (attention's q k^T, a v) reshape their
    run-time weights by the plan of the shape at hand -- the layer kept the last planned
    shape's dims, and the first width's second run failed.  Results equal fresh sessions'
    run after run, at one and two threads."""
    from _onnx_builder import weights as _w
    b = Builder()
    y = b.conv("x", 8, 16, k=1)
    t = b.op("Transpose", [b.op("Reshape", [y, b.const(np.int64([1, 16, -1]))])],
             perm=[0, 2, 1])                                          # (1, 6 W, 16)
    q = b.op("MatMul", [t, b.const(_w(16, 16))])
    k = b.op("MatMul", [t, b.const(_w(16, 16))])
    a = b.op("Softmax", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 2, 1])])],
             axis=-1)
    o = b.op("Transpose", [b.op("MatMul", [a, t])], perm=[0, 2, 1])   # (1, 16, 6 W)
    y = b.conv(b.op("Reshape", [o, b.op("Shape", [y])]), 16, 8, k=1)
    m = b.model((1, 8, 6, 10), y)
    m.graph.input[0].type.tensor_type.shape.dim[3].dim_param = "W"
    f32 = str(tmp_path / "f32.onnx")
    onnx.save(m, f32)
    path = f32
    if quantized:
        path = str(tmp_path / "qdq.onnx")
        quantize_qdq(f32, path, [{"x": RNG.standard_normal((1, 8, 6, w)).astype(np.float32)}
                                 for w in (10, 14)])
    xs = [RNG.standard_normal((1, 8, 6, w)).astype(np.float32) for w in (10, 14, 7, 14, 10)]
    fresh = [donnx.InferenceSession(path, threads=1).run(None, {"x": x})[0] for x in xs]
    for threads in (1, 2):
        sess = donnx.InferenceSession(path, threads=threads)
        for _ in range(3):
            for x, want in zip(xs, fresh):
                np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want)


@pytest.mark.parametrize("threads", [1, 2])
def test_layers_with_binary_post_ops_repeat_their_call(tmp_path, threads):
    """rounding="every" keeps a BatchNormalization after a rounding pair as per-channel
    binary post-ops, which the fused epilogues and the C-level execute take: the layer's
    warm runs repeat that call, a residual sum's copy first.  Results equal fresh sessions'
    for inputs of different ranges, a buffer rewritten in place among them; every such
    layer is a replayed call."""
    b = Builder()
    c = 16
    a = b.conv("x", 8, c)
    a = b.op("BatchNormalization", [a, b.const(_w(c, scale=1.0)), b.const(_w(c)),
                                    b.const(_w(c)), b.const(np.abs(_w(c)) + 0.5)])
    a = b.op("Relu", [a])
    y = b.conv(a, c, c, k=1)
    y = b.op("BatchNormalization", [y, b.const(_w(c, scale=1.0)), b.const(_w(c)),
                                    b.const(_w(c)), b.const(np.abs(_w(c)) + 0.5)])
    y = b.op("Relu", [b.op("Add", [y, a])])
    y = b.conv(y, c, 8, k=1)
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(b.model(SHAPE, y), f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal(SHAPE).astype(np.float32)}
                            for _ in range(2)])
    xs = [(RNG.standard_normal(SHAPE) * (0.5 + i) + 0.3 * i).astype(np.float32)
          for i in range(4)]
    fresh = [donnx.InferenceSession(qdq, threads=1, rounding="every").run(None, {"x": x})[0]
             for x in xs]
    sess = donnx.InferenceSession(qdq, threads=threads, rounding="every")
    buf = xs[0].copy()
    sess.run(None, {"x": buf})
    binary = [st for st in sess._steps if any(
        getattr(plan[0], "_binary", None) for plan in getattr(st, "_plans", {}).values())]
    assert len(binary) >= 2
    assert all(plan[0]._exec is not None for st in binary for plan in st._plans.values())
    for _ in range(3):
        for x, want in zip(xs, fresh):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want)
            buf[...] = x
            np.testing.assert_array_equal(sess.run(None, {"x": buf})[0], want)
    assert all(st._repeat is not None for st in binary)
    replays = _replays(sess)
    assert replays and all(r.calls >= len(binary) for r in replays)
