"""int8 RNN primitives (LSTM, GRU, LBRGRU, VanillaRNN) against the real oneDNN 3.2 (LSTM, GRU:
bit-identical u8 and f32 outputs) and against the independent numpy model tests/_rnn_ref.py
(LBR-GRU and vanilla RNN, which oneDNN 3.2 has no int8 version of; the f32-data mode).
Every kernel test runs on every ISA level of the CPU (`isa` fixture).  Sizes cross the 64-channel
blocks (H = 15 .. 130, `SWEEP`), the micro-kernel row tiles (N = 1, 2, 5, 6, 7, 13, 32) and
K % 4 tails."""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD
from dnnq import (DNNL_ARG_SRC_LAYER, DNNL_ARG_SRC_ITER, DNNL_ARG_SRC_ITER_C,
                  DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_BIAS,
                  DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C, DNNL_ARG_SCALE,
                  DNNL_ARG_ATTR_ZERO_POINTS)
from dnnq.primitives._kernels import _rnn
import dnnq.primitives._rnn_base as rnn_mod  # (FORK_JOIN lives with the driver)
import dnnq.testing as ref
from dnnq.testing import requires_onednn
import _rnn_ref as model

DIRS = ("unidirectional_left2right", "unidirectional_right2left", "bidirectional_concat",
        "bidirectional_sum")
GATES = {"lstm": 4, "gru": 3, "lbr_gru": 3, "vanilla": 1}
ISA_CODE = {name: i for i, name in enumerate(dnnq.ISA_LEVELS)}


def make(cell, direction, T, N, C, H, L, *, init, per_oc, seed, dst_layer_dt="u8",
         scale=64.0, shift=128.0):
    rng = np.random.default_rng(seed)
    D = 2 if direction.startswith("bidirectional") else 1
    G = GATES[cell]
    nb = G + (cell == "lbr_gru")
    p = dict(cell=cell, direction=direction, T=T, N=N, C=C, H=H, L=L, D=D, G=G,
             scale=scale, shift=shift, dst_layer_dt=dst_layer_dt)
    p["x"] = rng.integers(0, 256, (T, N, C), dtype=np.uint8)
    p["wl"] = rng.integers(-127, 128, (L, D, C, G, H), dtype=np.int8)
    p["wi"] = rng.integers(-127, 128, (L, D, H, G, H), dtype=np.int8)
    p["b"] = rng.standard_normal((L, D, nb, H)).astype(np.float32)
    # weight scales so that the gates spread over the non-linearities' whole range
    base = np.float32(2.0 * np.sqrt(C + H) * 127.0 / 4.0)
    p["ws"] = (rng.uniform(0.5, 2.0, G * H) * base if per_oc else
               np.array([base])).astype(np.float32)
    p["mask"] = 24 if per_oc else 0
    p["h0"] = rng.integers(0, 256, (L, D, N, H), dtype=np.uint8) if init else None
    p["c0"] = (rng.standard_normal((L, D, N, H)).astype(np.float32)
               if init and cell == "lstm" else None)
    return p


def legacy_attr(p):
    attr = dnnq.PrimitiveAttr()
    attr.set_rnn_data_qparams(p["scale"], p["shift"])
    attr.set_rnn_weights_qparams(p["mask"], p["ws"])
    return attr


def primitive(p, attr, *, data_dt="u8", with_states=True):
    L, D, N, H, T = p["L"], p["D"], p["N"], p["H"], p["T"]
    dlc = H * (2 if p["direction"] == "bidirectional_concat" else 1)
    st = MD((L, D, N, H), data_dt) if with_states else None
    stc = MD((L, D, N, H), "f32") if with_states else None
    common = (MD(p["x"].shape, data_dt), st)
    w = (MD(p["wl"].shape, "s8"), MD(p["wi"].shape, "s8"), MD(p["b"].shape, "f32"),
         MD((T, N, dlc), p["dst_layer_dt"]), st)
    cell = p["cell"]
    if cell == "lstm":
        return dnnq.LSTM(p["direction"], *common, stc, *w[:4], st, stc, attr=attr)
    if cell == "gru":
        return dnnq.GRU(p["direction"], *common, *w, attr=attr)
    if cell == "lbr_gru":
        return dnnq.LBRGRU(p["direction"], *common, *w, attr=attr)
    return dnnq.VanillaRNN(p["act"], p["direction"], *common, *w, attr=attr)


def run(prim, p, extra=None, x=None, h0=None, prepared=False):
    """prepared: weights packed by prepare_weights, which the C-level execute path takes
    (plain weights take the Python path)."""
    a = {DNNL_ARG_SRC_LAYER: p["x"] if x is None else x, DNNL_ARG_WEIGHTS_LAYER: p["wl"],
         DNNL_ARG_WEIGHTS_ITER: p["wi"], DNNL_ARG_BIAS: p["b"]}
    if prepared:
        a.update(prim.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: p["wl"],
                                       DNNL_ARG_WEIGHTS_ITER: p["wi"]}))
    h0 = p["h0"] if h0 is None else h0
    if h0 is not None:
        a[DNNL_ARG_SRC_ITER] = h0
    if p["c0"] is not None:
        a[DNNL_ARG_SRC_ITER_C] = p["c0"]
    a.update(extra or {})
    o = prim.execute(a)
    return [o[k] for k in (DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C) if k in o]


_REF_CACHE = {}


def cached(fn, p, key):
    """The reference result of one configuration, computed once for all ISA levels."""
    k = (fn.__name__,) + key
    if k not in _REF_CACHE:
        _REF_CACHE[k] = fn(p)
    return _REF_CACHE[k]


def onednn(p):
    kw = dict(data_scale=p["scale"], data_shift=p["shift"], wei_scales=p["ws"],
              wei_scale_mask=p["mask"], dst_layer_dt=p["dst_layer_dt"],
              direction=p["direction"], absent_states=True)
    if p["cell"] == "lstm":
        return ref.lstm(p["x"], p["h0"], p["c0"], p["wl"], p["wi"], p["b"], **kw)
    return ref.gru(p["x"], p["h0"], p["wl"], p["wi"], p["b"], **kw)


def numpy_model(p):
    out = model.rnn_model(p["cell"], p["direction"], p["x"], p["wl"], p["wi"], p["b"],
                          scale=p["scale"], shift=p["shift"], wscales=p["ws"], h0=p["h0"],
                          c0=p["c0"], activation=p.get("act"), dst_layer_dt=p["dst_layer_dt"])
    return [o for o in out if o is not None]


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype == np.float32:
            bad = np.flatnonzero(g.view(np.int32) != w.view(np.int32))
        else:
            bad = np.flatnonzero(g != w)
        assert bad.size == 0, f"{bad.size} of {g.size} differ, first at {bad[:5]}"


# ---- the jit sigmoid / tanh -------------------------------------------------------------------

@requires_onednn
@pytest.mark.parametrize("alg", ["tanh", "logistic"])
def test_eltwise_matches_onednn_jit(isa, alg):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(20000) * 4, rng.uniform(-12, 12, 20000),
                        rng.standard_normal(4000) * 1e-3,
                        [0.0, -0.0, 1e-9, -1e-9, 88, -88, -87.5, 100, -100, 9.0, 9.02, -9.02,
                         2 ** -12, float.fromhex("0x1.bb67aep-12"), float.fromhex("0x1.205966p3")]]).astype(np.float32)
    want = ref.eltwise(x.reshape(1, -1), alg).ravel()
    got = _rnn.eltwise(ISA_CODE[isa], 1 if alg == "tanh" else 2, x.copy())
    assert_same([got], [want])
    assert_same([model.tanh_jit(x) if alg == "tanh" else model.logistic_jit(x)], [want])


# ---- LSTM / GRU against oneDNN ----------------------------------------------------------------

# (T, N, C, H, L, init, per-OC scales, dst_layer dt, data scale, shift)
CONFIGS = [
    (5, 3, 16, 16, 1, True, True, "u8", 64.0, 128.0),
    (4, 7, 70, 70, 2, False, False, "f32", 127.0, 128.0),
    (3, 13, 33, 33, 3, True, True, "u8", 50.0, 100.5),
    (3, 1, 130, 130, 1, False, True, "f32", 40.0, 90.0),
    (2, 6, 37, 64, 1, True, False, "u8", 64.0, 128.0),
]


@requires_onednn
@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_matches_onednn(isa, cell, direction):
    for i, (T, N, C, H, L, init, per_oc, dt, sc, sh) in enumerate(CONFIGS):
        if C != H and L > 1:
            continue
        p = make(cell, direction, T, N, C, H, L, init=init, per_oc=per_oc, seed=i,
                 dst_layer_dt=dt, scale=sc, shift=sh)
        prim = primitive(p, legacy_attr(p))
        got = run(prim, p)
        assert_same(got, cached(onednn, p, (cell, direction, i)))
        assert_same(run(prim, p, prepared=True), got)     # the C-level execute path
        if i == 0:
            # the model agrees with oneDNN too
            assert_same(got, cached(numpy_model, p, (cell, direction, i)))


# (T, N, C, H): H below, at and past 16 / 32 / 64 channels (blocks and masked vector tails), N = 1
# (the one-row kernel), 2, 5, 7 (row tiles of 6 with tails) and 32 (tiles 5,5,6,5,5,6), K % 4
# tails on both GEMMs, and several layer-GEMM chunks (T * N rows past one chunk at N = 32; at
# N = 13, H = 320 chunks of 3 steps, 7 = 3 + 3 + 1, so the ring of layer products is entered at
# an offset right to left, and layer-GEMM tiles span two time steps)
SWEEP = [(3, 1, 16, 15), (3, 2, 32, 16), (2, 5, 20, 17), (3, 7, 64, 32), (2, 32, 40, 33),
         (2, 2, 66, 63), (9, 32, 8, 64), (2, 5, 48, 65), (2, 1, 130, 129), (7, 13, 8, 320)]


@requires_onednn
@pytest.mark.parametrize("direction", DIRS[:2])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_shape_sweep_matches_onednn(isa, cell, direction):
    """The accumulate-onto-layer-products step and the per-tile epilogues on every tile shape,
    with 1 and 2 threads (shares that split a channel block's row tiles)."""
    before = dnnq.get_num_threads()
    try:
        for i, (T, N, C, H) in enumerate(SWEEP):
            p = make(cell, direction, T, N, C, H, 1, init=i % 2 == 0, per_oc=True, seed=60 + i)
            prim = primitive(p, legacy_attr(p))
            want = cached(onednn, p, ("sweep", cell, direction, i))
            for nt in (1, 2):
                dnnq.set_num_threads(nt)
                assert_same(run(prim, p, prepared=True), want)
    finally:
        dnnq.set_num_threads(before)


@pytest.mark.parametrize("direction", DIRS[:2])
def test_shape_sweep_lbr_gru_matches_model(isa, direction):
    """LBR-GRU keeps U_o h apart from W_o x (its own tile), unlike the other cells."""
    for i, (T, N, C, H) in enumerate(SWEEP[:6]):
        p = make("lbr_gru", direction, T, N, C, H, 1, init=i % 2 == 1, per_oc=True, seed=80 + i)
        assert_same(run(primitive(p, legacy_attr(p)), p, prepared=True),
                    cached(numpy_model, p, ("sweep", "lbr_gru", direction, i)))


@requires_onednn
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_unified_quantization_identical(cell):
    """x_f32 = s * (x_q - zp), w_f32 = s_w * w_s8 with s = 1 / scale, zp = shift, s_w = 1 / ws
    gives the legacy form's results (and oneDNN's)."""
    p = make(cell, "bidirectional_concat", 4, 5, 24, 24, 2, init=True, per_oc=True, seed=11,
             scale=64.0, shift=120.0)
    p["ws"] = np.float32(2.0) ** np.random.default_rng(3).integers(7, 11, p["ws"].size)
    p["ws"] = p["ws"].astype(np.float32)
    want = run(primitive(p, legacy_attr(p)), p)
    assert_same(want, onednn(p))
    attr = dnnq.PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    attr.set_zero_points_mask(DNNL_ARG_SRC_LAYER, 0)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS_LAYER, 24)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS_ITER, 24)
    prim = primitive(p, attr)
    sw = (np.float32(1) / p["ws"]).astype(np.float32)
    extra = {DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER: np.array([1 / 64.0], np.float32),
             DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC_LAYER: np.array([120], np.int32),
             DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_LAYER: sw,
             DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_ITER: sw}
    assert_same(run(prim, p, extra), want)
    # runtime values: another scale on the same primitive changes the result like legacy does
    p2 = dict(p, scale=32.0)
    extra[DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER] = np.array([1 / 32.0], np.float32)
    assert_same(run(prim, p, extra), run(primitive(p2, legacy_attr(p2)), p2))
    # mask 0 on the weights
    p3 = dict(p, ws=np.array([256.0], np.float32), mask=0)
    attr0 = dnnq.PrimitiveAttr()
    attr0.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    attr0.set_zero_points_mask(DNNL_ARG_SRC_LAYER, 0)
    attr0.set_scales_mask(DNNL_ARG_WEIGHTS_LAYER, 0)
    attr0.set_scales_mask(DNNL_ARG_WEIGHTS_ITER, 0)
    extra0 = {DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER: np.array([1 / 64.0], np.float32),
              DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC_LAYER: np.array([120], np.int32),
              DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_LAYER: np.array([1 / 256.0], np.float32),
              DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_ITER: np.array([1 / 256.0], np.float32)}
    assert_same(run(primitive(p3, attr0), p3, extra0), run(primitive(p3, legacy_attr(p3)), p3))


# ---- LBR-GRU and vanilla RNN against the numpy model -----------------------------------------

@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("cell,act", [("lbr_gru", None), ("vanilla", "relu"),
                                      ("vanilla", "tanh"), ("vanilla", "logistic")])
def test_lbr_gru_and_vanilla_match_model(isa, cell, act, direction):
    for i, (T, N, C, H, L, init, per_oc, dt, sc, sh) in enumerate(CONFIGS[:4]):
        if C != H and L > 1:
            continue
        p = make(cell, direction, T, N, C, H, L, init=init, per_oc=per_oc, seed=20 + i,
                 dst_layer_dt=dt, scale=sc, shift=sh)
        p["act"] = act
        assert_same(run(primitive(p, legacy_attr(p)), p, prepared=i % 2 == 1),
                    cached(numpy_model, p, (cell, act, direction, i)))


@requires_onednn
def test_onednn_int8_rnn_support_as_documented():
    """What docs/rnn.md states about oneDNN 3.2's int8 RNN: LSTM and GRU only; LSTM with
    peepholes refused, with a projection (LSTMP) accepted."""
    assert ref.rnn_int8_support("lstm") and ref.rnn_int8_support("gru")
    assert ref.rnn_int8_support("lbr_gru") is None
    assert ref.rnn_int8_support("vanilla_rnn") is None
    assert ref.rnn_int8_support("lstm", peephole=True) is None
    assert ref.rnn_int8_support("lstm", projection=True) is not None


# ---- the f32-data mode -----------------------------------------------------------------------

@pytest.mark.parametrize("cell", ["lstm", "gru", "lbr_gru"])
def test_f32_mode_is_the_u8_mode_on_quantized_inputs(isa, cell):
    p = make(cell, "bidirectional_concat", 4, 5, 40, 40, 2, init=True, per_oc=True, seed=31,
             dst_layer_dt="f32", scale=60.0, shift=127.0)
    rng = np.random.default_rng(5)
    xf = rng.uniform(-2.5, 2.5, p["x"].shape).astype(np.float32)
    hf = rng.uniform(-1.2, 1.2, p["h0"].shape).astype(np.float32)
    xq = model.quantize(xf, 60.0, 127.0)
    hq = model.quantize(hf, 60.0, 127.0)
    prim = primitive(p, legacy_attr(p), data_dt="f32")
    got = run(prim, p, x=xf, h0=hf)
    want = list(cached(numpy_model, dict(p, x=xq, h0=hq), ("f32", cell)))
    want[1] = model.dequantize(want[1], 60.0, 127.0)   # f32 dst_iter: the dequantized u8
    assert_same(got, want)
    assert_same(run(prim, p, x=xf, h0=hf, prepared=True), want)


# ---- threads, execution forms ----------------------------------------------------------------

@pytest.mark.parametrize("cell", ["lstm", "gru", "lbr_gru"])
def test_threads_and_fork_join_identical(cell, monkeypatch):
    p = make(cell, "unidirectional_left2right", 6, 13, 70, 130, 1, init=True, per_oc=True,
             seed=41)
    prim = primitive(p, legacy_attr(p))
    before = dnnq.get_num_threads()
    try:
        dnnq.set_num_threads(1)
        one = run(prim, p)
        dnnq.set_num_threads(2)
        for fj in (0, 1):
            monkeypatch.setattr(rnn_mod, "FORK_JOIN", fj)
            assert_same(run(prim, p), one)
        dnnq.set_num_threads(3)   # more threads than row tiles x blocks of some phases
        assert_same(run(prim, p), one)
    finally:
        dnnq.set_num_threads(before)
    assert_same(one, numpy_model(p))


def test_prepared_weights_inplace_outputs_and_absent_states():
    p = make("lstm", "bidirectional_sum", 3, 2, 16, 16, 2, init=False, per_oc=False, seed=51)
    prim = primitive(p, legacy_attr(p))
    packed = prim.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: p["wl"], DNNL_ARG_WEIGHTS_ITER: p["wi"]})
    dl = np.full((3, 2, 16), 7, np.uint8)
    di = np.zeros((2, 2, 2, 16), np.uint8)
    dic = np.zeros((2, 2, 2, 16), np.float32)
    a = {DNNL_ARG_SRC_LAYER: p["x"], DNNL_ARG_BIAS: p["b"], DNNL_ARG_DST_LAYER: dl,
         DNNL_ARG_DST_ITER: di, DNNL_ARG_DST_ITER_C: dic, **packed}
    o = prim.execute(a)
    assert o[DNNL_ARG_DST_LAYER] is dl and o[DNNL_ARG_DST_ITER] is di
    want = numpy_model(p)
    assert_same([dl, di, dic], want)
    o2 = prim.execute(a)   # again, same packed weights
    assert_same([o2[DNNL_ARG_DST_LAYER]], [want[0]])
    # a primitive without state descriptors: states are zero, outputs dst_layer only
    prim2 = primitive(p, legacy_attr(p), with_states=False)
    o3 = prim2.execute({DNNL_ARG_SRC_LAYER: p["x"], DNNL_ARG_WEIGHTS_LAYER: p["wl"],
                        DNNL_ARG_WEIGHTS_ITER: p["wi"], DNNL_ARG_BIAS: p["b"]})
    assert list(o3) == [DNNL_ARG_DST_LAYER]
    assert_same([o3[DNNL_ARG_DST_LAYER]], [want[0]])
    # packed weights of another primitive are refused
    other = primitive(p, legacy_attr(dict(p, scale=32.0)))
    with pytest.raises(dnnq.InvalidArguments, match="packed by another"):
        other.execute(a)


@requires_onednn
def test_single_step_lstm_with_another_src_iter_width(isa):
    """T = 1: oneDNN lets src_iter be narrower / wider than H (benchdnn's slc_neq_sic shapes)."""
    rng = np.random.default_rng(61)
    for N, C, SIC, H in ((7, 17, 17, 34), (4, 34, 17, 68), (3, 32, 80, 16)):
        x = rng.integers(0, 256, (1, N, C), dtype=np.uint8)
        wl = rng.integers(-127, 128, (1, 1, C, 4, H), dtype=np.int8)
        wi = rng.integers(-127, 128, (1, 1, SIC, 4, H), dtype=np.int8)
        b = rng.standard_normal((1, 1, 4, H)).astype(np.float32)
        h0 = rng.integers(0, 256, (1, 1, N, SIC), dtype=np.uint8)
        c0 = rng.standard_normal((1, 1, N, H)).astype(np.float32)
        ws = rng.uniform(300, 900, 4 * H).astype(np.float32)
        attr = dnnq.PrimitiveAttr()
        attr.set_rnn_data_qparams(64.0, 128.0)
        attr.set_rnn_weights_qparams(24, ws)
        st, st_h, stc = MD((1, 1, N, SIC), "u8"), MD((1, 1, N, H), "u8"), MD((1, 1, N, H), "f32")
        p = dnnq.LSTM("unidirectional_left2right", MD(x.shape, "u8"), st, stc, MD(wl.shape, "s8"),
                      MD(wi.shape, "s8"), MD(b.shape, "f32"), MD((1, N, H), "u8"), st_h, stc,
                      attr=attr)
        o = p.execute({DNNL_ARG_SRC_LAYER: x, DNNL_ARG_SRC_ITER: h0, DNNL_ARG_SRC_ITER_C: c0,
                       DNNL_ARG_WEIGHTS_LAYER: wl, DNNL_ARG_WEIGHTS_ITER: wi, DNNL_ARG_BIAS: b})
        want = ref.lstm(x, h0, c0, wl, wi, b, data_scale=64.0, data_shift=128.0, wei_scales=ws,
                        wei_scale_mask=24)
        assert_same([o[DNNL_ARG_DST_LAYER], o[DNNL_ARG_DST_ITER], o[DNNL_ARG_DST_ITER_C]],
                    list(want))


@requires_onednn
def test_bench_driver_rnn_correctness_mode(capsys):
    from dnnq.bench.__main__ import main
    rc = main(["--rnn", "--mode=C", "--alg=VANILLA_LSTM", "--direction=concat", "l2t3mb3sic20",
               "--alg=VANILLA_GRU", "--direction=sum", "--cfg=u8u8u8f32", "l1t4mb2sic70",
               "--alg=LBR_GRU", "l1t2mb2sic16", "--min-time=0.01"])
    out = capsys.readouterr().out
    assert rc == 0 and out.count("PASSED") == 2 and "has no int8 lbr_gru" in out


def test_plain_weights_repacked_every_call():
    """Different plain weights on consecutive calls of one primitive each give their own
    result (the compensation cache is keyed on the packed weights themselves)."""
    p1 = make("gru", "unidirectional_left2right", 3, 2, 16, 16, 1, init=True, per_oc=True,
              seed=71, shift=100.0)
    p2 = dict(p1, wl=np.ascontiguousarray(p1["wl"][..., ::-1]),
              wi=np.ascontiguousarray(-p1["wi"]))
    prim = primitive(p1, legacy_attr(p1))
    for p in (p1, p2, p1, p2):
        assert_same(run(prim, p), cached(numpy_model, p, ("repack", p is p1)))


# ---- the C-level execute path ----------------------------------------------------------------

@pytest.mark.parametrize("cell,direction,dt,data_dt,with_states", [
    ("lstm", "bidirectional_sum", "f32", "u8", True),
    ("gru", "bidirectional_concat", "u8", "u8", False),
    ("lbr_gru", "unidirectional_right2left", "f32", "u8", True),
    ("vanilla", "bidirectional_sum", "u8", "u8", True),
    ("lstm", "bidirectional_concat", "f32", "f32", True),
])
def test_c_execute_path_is_taken_and_exact(isa, cell, direction, dt, data_dt, with_states,
                                           monkeypatch):
    """Prepared weights and C-contiguous ndarrays run without the Python path (which is made
    to fail here), with the numpy model's results, also into given output arrays."""
    p = make(cell, direction, 4, 7, 70, 70, 2, init=with_states, per_oc=True, seed=81,
             dst_layer_dt=dt)
    p["act"] = "tanh"
    prim = primitive(p, legacy_attr(p), data_dt=data_dt, with_states=with_states)
    x, h0 = p["x"], p["h0"]
    want = numpy_model(p)
    if data_dt == "f32":
        x = model.dequantize(p["x"], p["scale"], p["shift"])
        h0 = model.dequantize(p["h0"], p["scale"], p["shift"])
        want[1] = model.dequantize(want[1], p["scale"], p["shift"])
    if not with_states:
        want = want[:1]

    def no_python_path(args):
        raise AssertionError("the Python path ran")

    monkeypatch.setattr(prim, "_execute_py", no_python_path)
    got = run(prim, p, x=x, h0=h0, prepared=True)
    assert_same(got, want)
    outs = {DNNL_ARG_DST_LAYER: np.empty_like(want[0])}
    if with_states:
        outs[DNNL_ARG_DST_ITER] = np.empty_like(want[1])
        if cell == "lstm":
            outs[DNNL_ARG_DST_ITER_C] = np.empty_like(want[2])
    got = run(prim, p, extra=outs, x=x, h0=h0, prepared=True)
    assert all(g is o for g, o in zip(got, outs.values()))
    assert_same(got, want)


def test_c_execute_path_falls_back_with_messages():
    """What the C path does not take goes to the Python path: the same results for strided
    inputs, and the Python path's errors for bad ones."""
    p = make("lstm", "unidirectional_left2right", 3, 2, 16, 16, 1, init=True, per_oc=False,
             seed=91)
    prim = primitive(p, legacy_attr(p))
    want = numpy_model(p)
    packed = prim.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: p["wl"], DNNL_ARG_WEIGHTS_ITER: p["wi"]})
    base = {DNNL_ARG_SRC_LAYER: p["x"], DNNL_ARG_SRC_ITER: p["h0"], DNNL_ARG_SRC_ITER_C: p["c0"],
            DNNL_ARG_BIAS: p["b"], **packed}
    strided = np.zeros((3, 2, 32), np.uint8)[:, :, ::2]
    strided[...] = p["x"]
    o = prim.execute({**base, DNNL_ARG_SRC_LAYER: strided})
    assert_same([o[DNNL_ARG_DST_LAYER], o[DNNL_ARG_DST_ITER], o[DNNL_ARG_DST_ITER_C]], want)
    with pytest.raises(dnnq.InvalidArguments, match="src_layer"):
        prim.execute({**base, DNNL_ARG_SRC_LAYER: p["x"].astype(np.int8)})
    with pytest.raises(dnnq.InvalidArguments, match="src_iter"):
        prim.execute({**base, DNNL_ARG_SRC_ITER: p["h0"][..., :8]})
    dl = np.empty((3, 2, 16), np.uint8)
    dl.flags.writeable = False
    with pytest.raises(dnnq.InvalidArguments):
        prim.execute({**base, DNNL_ARG_DST_LAYER: dl})
    # an output overlapping an input
    buf = np.zeros(2 * 2 * 16 * 4, np.float32)
    c0 = buf[:32].reshape(1, 1, 2, 16)
    c0[...] = p["c0"]
    with pytest.raises(dnnq.InvalidArguments, match="overlaps"):
        prim.execute({**base, DNNL_ARG_SRC_ITER_C: c0, DNNL_ARG_DST_ITER_C: c0})
    with pytest.raises(dnnq.InvalidArguments):
        prim.execute({**base, DNNL_ARG_DST_ITER + 1000: p["h0"]})
    # and it still runs correctly after the refusals
    o = prim.execute(base)
    assert_same([o[DNNL_ARG_DST_LAYER], o[DNNL_ARG_DST_ITER], o[DNNL_ARG_DST_ITER_C]], want)
