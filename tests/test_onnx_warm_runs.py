"""Warm runs of dnnq.onnx sessions: outputs kept across runs on buffers shared by liveness,
and the repeat of the last run's kernel calls where a step's inputs are the same arrays --
always against sessions that cannot repeat (the first run of one-thread sessions) or what a
caller holds, so that a stale array or a skipped copy fails."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime.quantization")

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402
from dnnq.onnx.buffers import REUSE, KeptOutput  # noqa: E402
from _onnx_builder import RNG, Builder, weights as _w  # noqa: E402
from _onnx_models import quantize_qdq  # noqa: E402

def test_large_outputs_kept_across_runs(tmp_path):
    """Steps write into arrays kept from their previous run, shared by liveness, except
    where the array reaches the caller (here through a Reshape view of the last
    dequantization): arrays a caller holds never change, and threads sharing the session get
    the results they get alone."""
    import threading
    from dnnq.onnx.buffers import KEEP_MIN_BYTES
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("Sigmoid", [y])
    y = b.conv(y, 16, 16, k=1)
    y = b.op("Add", [y, b.conv(y, 16, 16, k=1)])
    y = b.op("Reshape", [y, b.const(np.int64([1, -1]))])
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    shape = (1, 8, 128, 128)
    assert 16 * 128 * 128 >= KEEP_MIN_BYTES  # the u8 activations are large enough to keep
    onnx.save(b.model(shape, y), f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal(shape).astype(np.float32)}])
    xs = [RNG.standard_normal(shape).astype(np.float32) for _ in range(4)]
    fresh = [donnx.InferenceSession(qdq).run(None, {"x": x})[0] for x in xs]
    sess = donnx.InferenceSession(qdq)
    kept = [st for st in sess._steps if st.keeps_output]
    assert len(kept) >= 3
    assert all(st.pool is not None for st in kept)
    assert len({st.pool_slot for st in kept}) < len(kept)  # some share a buffer
    assert not any(st.keeps_output for st in sess._steps if y in st.outputs or
                   any(o in st.outputs for o in ("t12_DequantizeLinear_Output",)))
    held = [sess.run(None, {"x": x})[0] for x in xs]
    for h, f in zip(held, fresh):
        np.testing.assert_array_equal(h, f)
    results = {}

    def worker(i):
        results[i] = [sess.run(None, {"x": xs[i % 4]})[0] for _ in range(6)]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, rs in results.items():
        for r in rs:
            np.testing.assert_array_equal(r, fresh[i % 4])


def test_kept_output_never_returned_through_a_view():
    """An int8 convolution with an f32 destination (no QuantizeLinear after it) whose output
    leaves the model through a Reshape (a view): the convolution writes a fresh array each
    run, so an output the caller holds stays as it was."""
    b = Builder()
    q = b.op("QuantizeLinear", ["x", b.const(np.float32(0.05)), b.const(np.uint8(128))])
    d = b.op("DequantizeLinear", [q, b.const(np.float32(0.05)), b.const(np.uint8(128))])
    w = RNG.integers(-127, 128, (16, 8, 1, 1)).astype(np.int8)
    wd = b.op("DequantizeLinear", [b.const(w), b.const(np.float32(0.01))])
    y = b.op("Conv", [d, wd], kernel_shape=[1, 1])
    y = b.op("Reshape", [y, b.const(np.int64([1, -1]))])
    sess = donnx.InferenceSession(b.model((1, 8, 64, 64), y))
    conv = [st for st in sess._steps if getattr(st, "primitive_name", "") == "Convolution"]
    assert conv and not any(st.keeps_output for st in conv)
    xs = [RNG.standard_normal((1, 8, 64, 64)).astype(np.float32) for _ in range(2)]
    first = sess.run(None, {"x": xs[0]})[0]
    ref = first.copy()
    sess.run(None, {"x": xs[1]})
    np.testing.assert_array_equal(first, ref)


def test_verbose_logs_every_layer_of_a_warm_session(tmp_path, capfd):
    """The layers of a warm session run their primitives without execute's Python frame
    (the same arguments as the last run): with DNNQ_VERBOSE on, each still prints its exec
    line, and the results are the same bits either way."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.conv(y, 16, 16, k=1)
    y = b.conv(y, 16, 8, k=1)
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    shape = (1, 8, 32, 32)
    onnx.save(b.model(shape, y), f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal(shape).astype(np.float32)}])
    x = RNG.standard_normal(shape).astype(np.float32)
    sess = donnx.InferenceSession(qdq)
    convs = [r for r in sess.plan() if r["primitive"] == "Convolution"]
    assert len(convs) == 3
    for _ in range(3):
        quiet = sess.run(None, {"x": x})[0]
    capfd.readouterr()
    old = dnnq.set_verbose(1)
    try:
        loud = sess.run(None, {"x": x})[0]
    finally:
        dnnq.set_verbose(old)
    lines = [ln for ln in capfd.readouterr().out.splitlines()
             if ln.startswith("dnnq_verbose,exec") and ",convolution," in ln]
    assert len(lines) == 3, lines
    np.testing.assert_array_equal(loud, quiet)


def test_warm_runs_read_the_current_input_values(tmp_path):
    """Warm runs repeat the last run's kernel calls where the arrays are the same (the
    session's shared buffers): the input array changed in place between runs, or another
    array, gives what a fresh session gives, for the quantize, pooling, gating and
    convolution steps of a small model."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = b.conv(y, 16, 16, k=1)
    y = b.op("Add", [b.conv(y, 16, 16, k=1), y])  # a residual: the sum post-op
    y = b.op("AveragePool", [y], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    g = b.op("GlobalAveragePool", [y])
    g = b.conv(g, 16, 16, k=1)
    g = b.op("Sigmoid", [g])
    y = b.op("Mul", [y, g])
    y = b.conv(y, 16, 8, k=1)
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    shape = (1, 8, 24, 24)
    onnx.save(b.model(shape, y), f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal(shape).astype(np.float32)}
                            for _ in range(2)])
    # inputs of different means: the pooled averages (and so the gates) differ too
    xs = [(RNG.standard_normal(shape) + 0.7 * i - 1).astype(np.float32) for i in range(4)]
    # the reference: the first run of one-thread sessions (no earlier run to repeat)
    fresh = [donnx.InferenceSession(qdq, threads=1, rounding="chain").run(None, {"x": x})[0]
             for x in xs]
    assert len({f.tobytes() for f in fresh}) == 4
    sess = donnx.InferenceSession(qdq, rounding="chain")
    kinds = {r["primitive"] for r in sess.plan()}
    assert {"Reorder", "Pooling", "Convolution"} <= kinds, kinds
    buf = xs[0].copy()
    for _ in range(3):
        for i, x in enumerate(xs):
            buf[...] = x  # the same array object, new values
            np.testing.assert_array_equal(sess.run(None, {"x": buf})[0], fresh[i])
    for _ in range(2):
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(sess.run(None, {"x": x.copy()})[0], fresh[i])
    assert any(getattr(st, "_memo", None) is not None for st in sess._steps)
    assert any(getattr(st, "_memo", None) is not None and st.spec.sum_src
               for st in sess._steps if hasattr(st, "spec"))
    # the session keeps no caller's array alive
    import gc
    import weakref
    x = xs[0].copy()
    alive = weakref.ref(x)
    sess.run(None, {"x": x})
    del x
    gc.collect()
    assert alive() is None


def test_warm_runs_of_int8_softmax_and_layer_norm(tmp_path):
    """The int8 row steps (softmax, layer normalization) repeat their kernel calls on warm
    runs too: their results follow the input (against the first run of one-thread
    sessions)."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("Softmax", [y], axis=1)  # over the channels: dense rows of channels-last memory
    y = b.conv(y, 16, 16, k=1)
    y = b.op("Transpose", [y], perm=[0, 2, 3, 1])
    y = b.op("Reshape", [y, b.const(np.int64([1, 144, 16]))])
    y = b.op("LayerNormalization", [y, b.const(np.linspace(0.5, 1.5, 16).astype(np.float32)),
                                    b.const(np.linspace(-1, 1, 16).astype(np.float32))],
             axis=-1, epsilon=1e-5)
    # attention: products of two activations (run-time weights, packed every run)
    att = b.op("Softmax", [b.op("MatMul", [y, b.op("Transpose", [y], perm=[0, 2, 1])])],
               axis=-1)
    y = b.op("MatMul", [att, y])
    y = b.op("MatMul", [y, b.const(RNG.standard_normal((16, 8)).astype(np.float32))])
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    shape = (1, 8, 12, 12)
    onnx.save(b.model(shape, y, opset=17), f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal(shape).astype(np.float32)}
                            for _ in range(2)])
    xs = [(RNG.standard_normal(shape) * (1 + i)).astype(np.float32) for i in range(4)]
    fresh = [donnx.InferenceSession(qdq, threads=1, rounding="chain").run(None, {"x": x})[0]
             for x in xs]
    assert len({f.tobytes() for f in fresh}) == 4
    sess = donnx.InferenceSession(qdq, rounding="chain")
    kinds = {r["primitive"] for r in sess.plan()}
    assert {"Softmax (int8 rows)", "LayerNormalization (int8 rows)"} <= kinds, kinds
    for _ in range(3):
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
    assert any(r["primitive"] == "Reorder" for r in sess.plan()[1:])
    assert all(st._repeat is not None for st in sess._steps if "int8 rows" in st.primitive)
    assert any(st._memo is not None for st in sess._steps
               if getattr(st, "spec", None) is not None and st.spec.runtime_weights)


def _quantized_with_fresh_runs(tmp_path, b, out, shape, opset, n, rounding="every"):
    """(the QDQ file of the Builder's model, n inputs of growing range, each one's output
    from the first run of a one-thread session rounding so: what no repeat has touched)."""
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(b.model(shape, out, opset=opset), f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal(shape).astype(np.float32)}
                            for _ in range(2)])
    xs = [(RNG.standard_normal(shape) * (1 + 0.5 * i)).astype(np.float32) for i in range(n)]
    fresh = [donnx.InferenceSession(qdq, threads=1, rounding=rounding).run(None, {"x": x})[0]
             for x in xs]
    return qdq, xs, fresh


def test_warm_runs_repeat_every_step_after_copies_and_views(tmp_path, monkeypatch):
    """On warm runs every int8 step that reads no graph input repeats its last call, also
    after a step that hands out a new view each run (a channels-last concatenation, a 3-D
    MatMul's reshaped output, the input's quantize) or a copy (attention's head merge, a
    reshape of a transposed tensor; the table lookup of a strided slice); the results follow
    the input (against the first run of one-thread sessions, so that a repeated call that
    read the last run's copy would fail)."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("Concat", [y, b.conv(y, 16, 8, k=1)], axis=1)  # channels-last, 24 channels
    y = b.conv(y, 24, 16, k=1)
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 3, 1]),
                         b.const(np.int64([1, 36, 16]))])
    qkv = b.op("MatMul", [y, b.const(_w(16, 48))])
    # heads: (1, 36, 3, 2, 8) -> (3, 1, 2, 36, 8); q, k, v strided slices of it
    h = b.op("Transpose", [b.op("Reshape", [qkv, b.const(np.int64([1, 36, 3, 2, 8]))])],
             perm=[2, 0, 3, 1, 4])
    part = [b.op("Squeeze", [b.op("Slice", [h, b.const(np.int64([i])),
                                             b.const(np.int64([i + 1])),
                                             b.const(np.int64([0]))]),
                             b.const(np.int64([0]))]) for i in range(3)]
    q = b.op("Mul", [part[0], b.const(np.float32(0.35))])  # a table lookup of a slice
    att = b.op("Softmax", [b.op("MatMul", [q, b.op("Transpose", [part[1]],
                                                   perm=[0, 1, 3, 2])])], axis=-1)
    o = b.op("MatMul", [att, part[2]])  # (1, 2, 36, 8)
    o = b.op("Reshape", [b.op("Transpose", [o], perm=[0, 2, 1, 3]),
                         b.const(np.int64([1, 36, 16]))])  # the head merge: a copy
    o = b.op("MatMul", [o, b.const(_w(16, 16))])
    y = b.op("LayerNormalization", [b.op("Add", [o, y]),
                                    b.const(np.linspace(0.5, 1.5, 16).astype(np.float32)),
                                    b.const(np.linspace(-1, 1, 16).astype(np.float32))],
             axis=-1, epsilon=1e-5)
    y = b.op("MatMul", [y, b.const(_w(16, 8))])
    qdq, xs, fresh = _quantized_with_fresh_runs(tmp_path, b, y, (1, 8, 6, 6), 17, 4, "chain")
    assert len({f.tobytes() for f in fresh}) == 4
    sess = donnx.InferenceSession(qdq, rounding="chain")
    kinds = {r["primitive"] for r in sess.plan()}
    assert {"Concat", "lookup table", "MatMul", "LayerNormalization (int8 rows)",
            "int8 views (cached)"} <= kinds, kinds
    repeated = {}  # step -> whether its last run repeated the call before it
    real = KeptOutput._repeated

    def spy(step, env):
        repeated[id(step)] = hit = real(step, env)
        return hit
    monkeypatch.setattr(KeptOutput, "_repeated", spy)
    for _ in range(3):
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
    assert any(r["primitive"] == "Reorder" for r in sess.plan()[1:])
    graph_out = sess.get_outputs()[0].name
    int8 = ("Convolution", "MatMul", "lookup table", "int8 rows", "Concat")
    missed = [(i, st.primitive or st.primitive_name) for i, st in enumerate(sess._steps)
              if "x" not in st.inputs and graph_out not in st.outputs and
              any(k in (st.primitive or "") for k in int8) and not repeated.get(id(st))]
    assert not missed, missed
    # a step that cannot repeat (an input a new array) still hands out the same output
    # object, so that the steps after it repeat theirs
    env = sess._check_feed({"x": xs[0]})
    env[REUSE] = True
    for st in sess._steps:
        st.run(env)
    for st in sess._steps:
        if not st.keeps_output:
            continue
        before, saved = env[st.outputs[0]], {n: env[n] for n in st.inputs}
        for n in st.inputs:
            if isinstance(env[n], np.ndarray) and env[n].ndim:
                env[n] = env[n].view()  # another array object, the same memory
        st.run(env)
        assert env[st.outputs[0]] is before, (st.primitive, st.nodes)
        env.update(saved)


def test_warm_runs_of_inputs_in_another_layout(tmp_path):
    """Inputs whose layout is not the one a step's runner was bound with (a Fortran-ordered
    array after C-ordered ones) take the checked path, which writes a new array: warm runs
    still give each input's own results (a step handing out the array of an earlier run
    would repeat that run's values)."""
    b = Builder()
    y = b.op("Mul", ["x", b.const(np.float32(1.5))])  # f32 (numpy): x's layout
    y = b.op("MatMul", [y, b.const(_w(16, 8))])  # its quantize: a bound Reorder
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    shape = (1, 8, 10, 16)
    onnx.save(b.model(shape, y, opset=13), f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal(shape).astype(np.float32)}],
                 op_types=["MatMul"])
    xs = [RNG.standard_normal(shape).astype(np.float32) for _ in range(4)]
    fresh = [donnx.InferenceSession(qdq, threads=1).run(None, {"x": x})[0] for x in xs]
    sess = donnx.InferenceSession(qdq, threads=1)
    sess.run(None, {"x": xs[0]})
    for _ in range(2):
        for i, x in enumerate(xs):
            fortran = np.asfortranarray(x)
            np.testing.assert_array_equal(sess.run(None, {"x": fortran})[0], fresh[i])
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], fresh[i])
    assert any(r["primitive"] == "Reorder" for r in sess.plan()[1:])


def test_output_whose_shape_feeds_the_graph_output_is_kept(tmp_path):
    """A layer whose output only gives its *shape* to the graph output's Reshape (the
    recognizer's head: MatMul -> Shape + Flatten -> Softmax -> Reshape(softmax, shape)) keeps
    its array and repeats its call on warm runs: a shape is a new array, not a view of the
    layer's output.  A graph output that is a view of a step's array is still never that
    step's kept array."""
    b = Builder()
    y = b.conv("x", 4, 16, k=1)
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 3, 1]),
                         b.const(np.int64([1, 36, 16]))])
    h = b.op("MatMul", [y, b.const(_w(16, 40))])              # the head: (1, 36, 40)
    shp = b.op("Shape", [h])
    p = b.op("Softmax", [b.op("Flatten", [h], axis=2)], axis=-1)
    out = b.op("Reshape", [p, shp])
    qdq, xs, fresh = _quantized_with_fresh_runs(tmp_path, b, out, (1, 4, 6, 6), 13, 3)
    sess = donnx.InferenceSession(qdq)
    heads = [st for st in sess._steps if getattr(st, "primitive_name", "") == "MatMul"]
    assert len(heads) == 1 and heads[0].keeps_output, sess.plan()
    held = []
    for _ in range(3):
        for i, x in enumerate(xs):
            got = sess.run(None, {"x": x})[0]
            np.testing.assert_array_equal(got, fresh[i])
            held.append((got, fresh[i]))
    assert heads[0]._repeat is not None  # the head repeats its call
    for got, want in held:  # what the caller holds never changes
        np.testing.assert_array_equal(got, want)
