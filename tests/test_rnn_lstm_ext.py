"""LSTM extensions: a projection (LSTMP) and peepholes.

oneDNN 3.2 creates an int8 LSTMP (`brgemm`), so dnnq's u8 LSTMP is compared bit for bit with
it through the bridge (every direction, 1-3 layers, projection scales mask 0 and 8, P below,
at and past H and the 64-channel blocks).  oneDNN 3.2 refuses int8 peepholes, so they are
tested against the independent numpy model tests/_rnn_ref.py (which follows oneDNN's jit cell:
fused multiply-adds c_prev * p into i, f and c * p into o), as is the f32-data mode.  Every
kernel test runs on every ISA level (`isa` fixture)."""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD
from dnnq import (DNNL_ARG_SRC_LAYER, DNNL_ARG_SRC_ITER, DNNL_ARG_SRC_ITER_C,
                  DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_BIAS,
                  DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C, DNNL_ARG_SCALE,
                  DNNL_ARG_ATTR_ZERO_POINTS, DNNL_ARG_WEIGHTS_PEEPHOLE,
                  DNNL_ARG_WEIGHTS_PROJECTION)
import dnnq.primitives._rnn_base as rnn_mod  # (FORK_JOIN lives with the driver)
import dnnq.testing as ref
from dnnq.testing import requires_onednn
import _rnn_ref as model
from test_rnn import assert_same  # noqa: E402 (bit-for-bit, f32 by its bits)

DIRS = ("unidirectional_left2right", "unidirectional_right2left", "bidirectional_concat",
        "bidirectional_sum")


def make(direction, T, N, C, H, P, L, *, init, per_oc, pmask, seed, peephole=False,
         projection=True, dst_layer_dt="u8", scale=64.0, shift=128.0):
    rng = np.random.default_rng(seed)
    D = 2 if direction.startswith("bidirectional") else 1
    P = P if projection else H
    C = C if L == 1 else P
    p = dict(direction=direction, T=T, N=N, C=C, H=H, P=P, L=L, D=D, scale=scale, shift=shift,
             dst_layer_dt=dst_layer_dt, pmask=pmask)
    p["x"] = rng.integers(0, 256, (T, N, C), dtype=np.uint8)
    p["wl"] = rng.integers(-127, 128, (L, D, C, 4, H), dtype=np.int8)
    p["wi"] = rng.integers(-127, 128, (L, D, P, 4, H), dtype=np.int8)
    p["b"] = rng.standard_normal((L, D, 4, H)).astype(np.float32)
    base = np.float32(2.0 * np.sqrt(C + P) * 127.0 / 4.0)
    p["ws"] = (rng.uniform(0.5, 2.0, 4 * H) * base if per_oc else
               np.array([base])).astype(np.float32)
    p["mask"] = 24 if per_oc else 0
    p["wp"] = rng.integers(-127, 128, (L, D, H, P), dtype=np.int8) if projection else None
    pbase = np.float32(np.sqrt(H) * 127.0 / 2.0)
    p["ps"] = (rng.uniform(0.5, 2.0, P) * pbase if pmask else np.array([pbase])).astype(
        np.float32)
    p["peep"] = rng.standard_normal((L, D, 3, H)).astype(np.float32) if peephole else None
    p["h0"] = rng.integers(0, 256, (L, D, N, P), dtype=np.uint8) if init else None
    p["c0"] = rng.standard_normal((L, D, N, H)).astype(np.float32) if init else None
    return p


def attr_of(p):
    attr = dnnq.PrimitiveAttr()
    attr.set_rnn_data_qparams(p["scale"], p["shift"])
    attr.set_rnn_weights_qparams(p["mask"], p["ws"])
    if p["wp"] is not None:
        attr.set_rnn_weights_projection_qparams(p["pmask"], p["ps"])
    return attr


def primitive(p, attr, data_dt="u8"):
    L, D, N, H, P, T = p["L"], p["D"], p["N"], p["H"], p["P"], p["T"]
    dlc = P * (2 if p["direction"] == "bidirectional_concat" else 1)
    st, stc = MD((L, D, N, P), data_dt), MD((L, D, N, H), "f32")
    return dnnq.LSTM(p["direction"], MD(p["x"].shape, data_dt), st, stc, MD(p["wl"].shape, "s8"),
                     MD(p["wi"].shape, "s8"), MD(p["b"].shape, "f32"),
                     MD((T, N, dlc), p["dst_layer_dt"]), st, stc, attr,
                     weights_peephole_desc=None if p["peep"] is None else MD(p["peep"].shape,
                                                                             "f32"),
                     weights_projection_desc=None if p["wp"] is None else MD(p["wp"].shape,
                                                                             "s8"))


def run(prim, p, extra=None, x=None, h0=None, prepared=False):
    """prepared: weights packed by prepare_weights (the C-level execute path)."""
    a = {DNNL_ARG_SRC_LAYER: p["x"] if x is None else x, DNNL_ARG_WEIGHTS_LAYER: p["wl"],
         DNNL_ARG_WEIGHTS_ITER: p["wi"], DNNL_ARG_BIAS: p["b"]}
    if p["wp"] is not None:
        a[DNNL_ARG_WEIGHTS_PROJECTION] = p["wp"]
    if prepared:
        a.update(prim.prepare_weights({k: a[k] for k in (DNNL_ARG_WEIGHTS_LAYER,
                                                        DNNL_ARG_WEIGHTS_ITER,
                                                        DNNL_ARG_WEIGHTS_PROJECTION) if k in a}))
    if p["peep"] is not None:
        a[DNNL_ARG_WEIGHTS_PEEPHOLE] = p["peep"]
    h0 = p["h0"] if h0 is None else h0
    if h0 is not None:
        a[DNNL_ARG_SRC_ITER] = h0
    if p["c0"] is not None:
        a[DNNL_ARG_SRC_ITER_C] = p["c0"]
    a.update(extra or {})
    o = prim.execute(a)
    return [o[k] for k in (DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C)]


_CACHE = {}


def onednn(p, key):
    if key not in _CACHE:
        _CACHE[key] = list(ref.lstm(
            p["x"], p["h0"], p["c0"], p["wl"], p["wi"], p["b"], data_scale=p["scale"],
            data_shift=p["shift"], wei_scales=p["ws"], wei_scale_mask=p["mask"],
            dst_layer_dt=p["dst_layer_dt"], direction=p["direction"], absent_states=True,
            wei_projection=p["wp"], wei_proj_scales=p["ps"], wei_proj_mask=p["pmask"]))
    return _CACHE[key]


def numpy_model(p, x=None, h0=None):
    return list(model.rnn_model(
        "lstm", p["direction"], p["x"] if x is None else x, p["wl"], p["wi"], p["b"],
        scale=p["scale"], shift=p["shift"], wscales=p["ws"], h0=p["h0"] if h0 is None else h0,
        c0=p["c0"], dst_layer_dt=p["dst_layer_dt"], peephole=p["peep"], projection=p["wp"],
        pscales=p["ps"]))


# (T, N, C, H, P, L, init, per_oc, pmask, dst_layer_dt): P below, at and past H and the
# 64-channel blocks, N across the row tiles, K % 4 tails
CONFIGS = [
    (3, 2, 16, 16, 8, 1, False, False, 0, "u8"),
    (4, 7, 70, 70, 40, 1, True, True, 8, "u8"),
    (3, 3, 20, 130, 70, 2, True, True, 8, "f32"),
    (4, 6, 33, 65, 64, 1, True, False, 0, "u8"),
    (3, 13, 33, 65, 90, 3, False, True, 8, "f32"),
    (5, 1, 64, 64, 129, 1, True, True, 8, "u8"),
]


@requires_onednn
@pytest.mark.parametrize("direction", DIRS)
def test_lstmp_matches_onednn(isa, direction):
    for i, (T, N, C, H, P, L, init, per_oc, pmask, dt) in enumerate(CONFIGS):
        p = make(direction, T, N, C, H, P, L, init=init, per_oc=per_oc, pmask=pmask, seed=i,
                 dst_layer_dt=dt)
        prim = primitive(p, attr_of(p))
        got = run(prim, p)
        assert_same(got, onednn(p, (direction, i)))
        assert_same(run(prim, p, prepared=True), got)     # the C-level execute path
        if i == 1:
            assert_same(got, numpy_model(p))     # the model agrees with oneDNN too


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("projection", [False, True])
def test_peephole_matches_model(isa, direction, projection):
    for i, (T, N, C, H, P, L) in enumerate(((3, 2, 16, 16, 8, 1), (4, 7, 70, 70, 40, 2),
                                            (3, 6, 33, 130, 65, 1))):
        p = make(direction, T, N, C, H, P, L, init=i != 0, per_oc=True, pmask=8, seed=20 + i,
                 peephole=True, projection=projection, dst_layer_dt="f32" if i == 2 else "u8")
        prim = primitive(p, attr_of(p))
        want = numpy_model(p)
        assert_same(run(prim, p), want)
        assert_same(run(prim, p, prepared=True), want)


def test_peephole_changes_the_result():
    """The peephole terms are not silently dropped (zero peepholes = the plain LSTM)."""
    p = make("unidirectional_left2right", 4, 3, 20, 20, 20, 1, init=True, per_oc=True, pmask=0,
             seed=30, peephole=True, projection=False)
    with_peep = run(primitive(p, attr_of(p)), p)
    zero = dict(p, peep=np.zeros_like(p["peep"]))
    plain = dict(p, peep=None)
    assert_same(run(primitive(zero, attr_of(zero)), zero), run(primitive(plain, attr_of(plain)),
                                                                plain))
    assert not np.array_equal(with_peep[2], run(primitive(plain, attr_of(plain)), plain)[2])


@pytest.mark.parametrize("peephole", [False, True])
def test_f32_mode_with_extensions(isa, peephole):
    """f32 data: the f32 src_layer / src_iter are quantized, the u8 engine runs, dst_layer /
    dst_iter are the dequantized u8 values (the numpy model on the quantized inputs)."""
    p = make("bidirectional_concat", 4, 5, 40, 72, 40, 2, init=True, per_oc=True, pmask=8,
             seed=31, peephole=peephole, dst_layer_dt="f32", scale=60.0, shift=127.0)
    rng = np.random.default_rng(5)
    xf = rng.uniform(-2.5, 2.5, p["x"].shape).astype(np.float32)
    hf = rng.uniform(-1.2, 1.2, p["h0"].shape).astype(np.float32)
    xq, hq = model.quantize(xf, 60.0, 127.0), model.quantize(hf, 60.0, 127.0)
    prim = primitive(p, attr_of(p), data_dt="f32")
    got = run(prim, p, x=xf, h0=hf)
    want = numpy_model(p, x=xq, h0=hq)
    want[1] = model.dequantize(want[1], 60.0, 127.0)
    assert_same(got, want)
    assert_same(run(prim, p, x=xf, h0=hf, prepared=True), want)


@requires_onednn
def test_projection_unified_scales_identical():
    """set_scales_mask(DNNL_ARG_WEIGHTS_PROJECTION, 8) with s = 1 / pscale at execution gives
    the legacy set_rnn_weights_projection_qparams result (and oneDNN's)."""
    p = make("unidirectional_left2right", 4, 5, 24, 24, 16, 2, init=True, per_oc=True, pmask=8,
             seed=11, shift=120.0)
    two = np.float32(2.0)
    rng = np.random.default_rng(3)
    p["ws"] = (two ** rng.integers(7, 11, p["ws"].size)).astype(np.float32)
    p["ps"] = (two ** rng.integers(5, 9, p["ps"].size)).astype(np.float32)
    want = run(primitive(p, attr_of(p)), p)
    assert_same(want, onednn(p, ("unified",)))
    attr = dnnq.PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    attr.set_zero_points_mask(DNNL_ARG_SRC_LAYER, 0)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS_LAYER, 24)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS_ITER, 24)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS_PROJECTION, 8)
    sw = (np.float32(1) / p["ws"]).astype(np.float32)
    extra = {DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER: np.array([1 / 64.0], np.float32),
             DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC_LAYER: np.array([120], np.int32),
             DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_LAYER: sw,
             DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_ITER: sw,
             DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_PROJECTION:
                 (np.float32(1) / p["ps"]).astype(np.float32)}
    assert_same(run(primitive(p, attr), p, extra), want)
    # a missing projection scale is an error, not a default
    del extra[DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_PROJECTION]
    with pytest.raises(dnnq.InvalidArguments, match="weights_projection"):
        run(primitive(p, attr), p, extra)


@pytest.mark.parametrize("peephole", [False, True])
def test_threads_identical(peephole, monkeypatch):
    p = make("unidirectional_left2right", 5, 13, 70, 130, 70, 1, init=True, per_oc=True,
             pmask=8, seed=41, peephole=peephole)
    prim = primitive(p, attr_of(p))
    before = dnnq.get_num_threads()
    try:
        dnnq.set_num_threads(1)
        one = run(prim, p)
        dnnq.set_num_threads(2)
        for fj in (0, 1):
            monkeypatch.setattr(rnn_mod, "FORK_JOIN", fj)
            assert_same(run(prim, p), one)
            assert_same(run(prim, p, prepared=True), one)
        dnnq.set_num_threads(3)
        assert_same(run(prim, p), one)
    finally:
        dnnq.set_num_threads(before)
    assert_same(one, numpy_model(p))


def test_prepared_weights_with_projection():
    p = make("bidirectional_sum", 3, 2, 16, 16, 12, 2, init=False, per_oc=False, pmask=0,
             seed=51)
    prim = primitive(p, attr_of(p))
    w = {DNNL_ARG_WEIGHTS_LAYER: p["wl"], DNNL_ARG_WEIGHTS_ITER: p["wi"],
         DNNL_ARG_WEIGHTS_PROJECTION: p["wp"]}
    packed = prim.prepare_weights(w)
    assert set(packed) == set(w)
    a = {DNNL_ARG_SRC_LAYER: p["x"], DNNL_ARG_BIAS: p["b"], **packed}
    o = prim.execute(a)
    want = numpy_model(p)
    assert_same([o[DNNL_ARG_DST_LAYER], o[DNNL_ARG_DST_ITER], o[DNNL_ARG_DST_ITER_C]], want)
    with pytest.raises(dnnq.InvalidArguments, match="weights_projection missing"):
        prim.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: p["wl"], DNNL_ARG_WEIGHTS_ITER: p["wi"]})
    # the packed projection cannot stand in for another tensor
    bad = dict(a)
    bad[DNNL_ARG_WEIGHTS_ITER] = packed[DNNL_ARG_WEIGHTS_PROJECTION]
    with pytest.raises(dnnq.InvalidArguments, match="another argument"):
        prim.execute(bad)


@requires_onednn
def test_onednn_int8_lstm_extensions_as_documented():
    """docs/rnn.md: oneDNN 3.2 creates an int8 LSTMP, refuses int8 peepholes."""
    assert ref.rnn_int8_support("lstm", projection=True) is not None
    assert ref.rnn_int8_support("lstm", peephole=True) is None
    assert ref.rnn_int8_support("lstm", peephole=True, projection=True) is None


# ---- bad input -------------------------------------------------------------------------------

def _descs(p, **over):
    L, D, N, H, P, T = p["L"], p["D"], p["N"], p["H"], p["P"], p["T"]
    d = dict(src_layer=MD(p["x"].shape, "u8"), src_iter=MD((L, D, N, P), "u8"),
             src_iter_c=MD((L, D, N, H), "f32"), wl=MD(p["wl"].shape, "s8"),
             wi=MD(p["wi"].shape, "s8"), b=MD(p["b"].shape, "f32"),
             dl=MD((T, N, P), "u8"), di=MD((L, D, N, P), "u8"),
             dic=MD((L, D, N, H), "f32"), wpe=None, wpr=MD((L, D, H, P), "s8"))
    d.update(over)
    return d


def _create(p, attr, d):
    return dnnq.LSTM(p["direction"], d["src_layer"], d["src_iter"], d["src_iter_c"], d["wl"],
                     d["wi"], d["b"], d["dl"], d["di"], d["dic"], attr,
                     weights_peephole_desc=d["wpe"], weights_projection_desc=d["wpr"])


@pytest.mark.parametrize("over,exc,match", [
    (dict(wpr=MD((1, 1, 16, 8), "u8")), dnnq.Unimplemented, "weights_projection_desc data type"),
    (dict(wpr=MD((1, 1, 15, 8), "s8")), dnnq.InvalidArguments, "weights_projection_desc dims"),
    (dict(wpr=MD((1, 1, 16, 9), "s8")), dnnq.InvalidArguments, "projection size P = 9"),
    (dict(wpr=MD((1, 1, 16), "s8")), dnnq.InvalidArguments, "weights_projection_desc dims"),
    (dict(dl=MD((3, 2, 16), "u8")), dnnq.InvalidArguments, "dst_layer_desc dims"),
    (dict(di=MD((1, 1, 2, 16), "u8")), dnnq.InvalidArguments, "dst_iter_desc dims"),
    (dict(src_iter=MD((1, 1, 2, 16), "u8")), dnnq.InvalidArguments, "src_iter_desc dims"),
    (dict(wpe=MD((1, 1, 4, 16), "f32")), dnnq.InvalidArguments, "weights_peephole_desc dims"),
    (dict(wpe=MD((1, 1, 3, 16), "s8")), dnnq.Unimplemented, "weights_peephole_desc data type"),
    (dict(wpe="peep"), dnnq.InvalidArguments, "weights_peephole_desc got 'peep'"),
])
def test_bad_descriptors(over, exc, match):
    p = make("unidirectional_left2right", 3, 2, 16, 16, 8, 1, init=False, per_oc=False,
             pmask=0, seed=1)
    with pytest.raises(exc, match=match):
        _create(p, attr_of(p), _descs(p, **over))


def test_bad_projection_qparams():
    p = make("unidirectional_left2right", 3, 2, 16, 16, 8, 1, init=False, per_oc=False,
             pmask=0, seed=1)
    d = _descs(p)
    attr = attr_of(p)
    attr.set_rnn_weights_projection_qparams(8, np.ones(7, np.float32))
    with pytest.raises(dnnq.InvalidArguments, match="got 7 values for mask 8; expected 8"):
        _create(p, attr, d)
    attr.set_rnn_weights_projection_qparams(24, np.ones(8, np.float32))
    with pytest.raises(dnnq.Unimplemented, match="projection qparams mask 24"):
        _create(p, attr, d)
    with pytest.raises(dnnq.InvalidArguments, match="rnn projection weights scales"):
        attr.set_rnn_weights_projection_qparams(0, [-1.0])
    # projection qparams without a projection
    plain = make("unidirectional_left2right", 3, 2, 16, 16, 8, 1, init=False, per_oc=False,
                 pmask=0, seed=1, projection=False)
    attr = attr_of(plain)
    attr.set_rnn_weights_projection_qparams(0, [2.0])
    with pytest.raises(dnnq.InvalidArguments, match="no weights_projection_desc"):
        _create(plain, attr, _descs(plain, wpr=None))
    # unified scales of the projection without a projection / with a wrong mask; mixed forms
    ua = dnnq.PrimitiveAttr()
    ua.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    ua.set_scales_mask(DNNL_ARG_WEIGHTS_PROJECTION, 0)
    with pytest.raises(dnnq.Unimplemented, match="weights_projection"):
        _create(plain, ua, _descs(plain, wpr=None))
    ua.set_scales_mask(DNNL_ARG_WEIGHTS_PROJECTION, 24)
    with pytest.raises(dnnq.Unimplemented, match="scales mask 24 of weights_projection"):
        _create(p, ua, d)
    mixed = dnnq.PrimitiveAttr()
    mixed.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    mixed.set_rnn_weights_projection_qparams(0, [2.0])
    with pytest.raises(dnnq.InvalidArguments, match="one form only"):
        _create(p, mixed, d)


def test_missing_or_bad_extension_arrays_at_execute():
    p = make("unidirectional_left2right", 3, 2, 16, 16, 8, 1, init=False, per_oc=False,
             pmask=0, seed=1, peephole=True)
    prim = primitive(p, attr_of(p))
    for arg, name in ((DNNL_ARG_WEIGHTS_PROJECTION, "weights_projection"),
                      (DNNL_ARG_WEIGHTS_PEEPHOLE, "weights_peephole")):
        a = {DNNL_ARG_SRC_LAYER: p["x"], DNNL_ARG_WEIGHTS_LAYER: p["wl"],
             DNNL_ARG_WEIGHTS_ITER: p["wi"], DNNL_ARG_WEIGHTS_PROJECTION: p["wp"],
             DNNL_ARG_WEIGHTS_PEEPHOLE: p["peep"]}
        del a[arg]
        with pytest.raises(dnnq.InvalidArguments, match=f"{name} missing"):
            prim.execute(a)
    a = {DNNL_ARG_SRC_LAYER: p["x"], DNNL_ARG_WEIGHTS_LAYER: p["wl"],
         DNNL_ARG_WEIGHTS_ITER: p["wi"], DNNL_ARG_WEIGHTS_PROJECTION: p["wp"][..., :4],
         DNNL_ARG_WEIGHTS_PEEPHOLE: p["peep"]}
    with pytest.raises(dnnq.InvalidArguments, match="weights_projection"):
        prim.execute(a)
    a[DNNL_ARG_WEIGHTS_PROJECTION] = p["wp"]
    a[DNNL_ARG_WEIGHTS_PEEPHOLE] = p["peep"].astype(np.float64)
    with pytest.raises(dnnq.InvalidArguments, match="weights_peephole"):
        prim.execute(a)
    # a plain LSTM does not take the extension arguments
    plain = make("unidirectional_left2right", 3, 2, 16, 16, 8, 1, init=False, per_oc=False,
                 pmask=0, seed=1, projection=False)
    prim = primitive(plain, attr_of(plain))
    with pytest.raises(dnnq.InvalidArguments):
        prim.execute({DNNL_ARG_SRC_LAYER: plain["x"], DNNL_ARG_WEIGHTS_LAYER: plain["wl"],
                      DNNL_ARG_WEIGHTS_ITER: plain["wi"], DNNL_ARG_WEIGHTS_PEEPHOLE: p["peep"]})


def test_pickled_lstmp_and_packed_projection():
    """An LSTMP with peepholes pickles as its constructor arguments (keywords included), its
    packed projection weights as plain weights re-packed on load; the results are unchanged."""
    import pickle
    p = make("bidirectional_concat", 3, 4, 20, 70, 40, 1, init=True, per_oc=True, pmask=8,
             seed=61, peephole=True)
    prim = primitive(p, attr_of(p))
    packed = prim.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: p["wl"], DNNL_ARG_WEIGHTS_ITER: p["wi"],
                                   DNNL_ARG_WEIGHTS_PROJECTION: p["wp"]})
    prim2, packed2 = pickle.loads(pickle.dumps((prim, packed)))
    assert prim2.weights_projection_desc == prim.weights_projection_desc
    assert prim2.attr.rnn_weights_projection_qparams[0] == 8
    np.testing.assert_array_equal(
        packed2[DNNL_ARG_WEIGHTS_PROJECTION].unpack(prim.weights_projection_desc), p["wp"])
    a = {DNNL_ARG_SRC_LAYER: p["x"], DNNL_ARG_SRC_ITER: p["h0"], DNNL_ARG_SRC_ITER_C: p["c0"],
         DNNL_ARG_BIAS: p["b"], DNNL_ARG_WEIGHTS_PEEPHOLE: p["peep"]}
    want = numpy_model(p)
    for pr, pk in ((prim, packed), (prim2, packed2)):
        o = pr.execute({**a, **pk})
        assert_same([o[DNNL_ARG_DST_LAYER], o[DNNL_ARG_DST_ITER], o[DNNL_ARG_DST_ITER_C]], want)
