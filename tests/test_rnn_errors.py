"""Bad input to the RNN primitives: InvalidArguments / Unimplemented naming the argument, at
creation when the description is wrong, at execution when an array or a runtime value is."""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD
from dnnq import (DNNL_ARG_SRC_LAYER, DNNL_ARG_SRC_ITER, DNNL_ARG_WEIGHTS_LAYER,
                  DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_BIAS, DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER,
                  DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS, DNNL_ARG_SRC, DNNL_ARG_DST)

L2R = "unidirectional_left2right"
T, N, C, H = 3, 2, 8, 8


def attr(mask=0, scales=(100.0,)):
    a = dnnq.PrimitiveAttr()
    a.set_rnn_data_qparams(64.0, 128.0)
    a.set_rnn_weights_qparams(mask, list(scales))
    return a


def gru_descs(L=1, D=1, G=3, dl_c=H, src_dt="u8", state_dt="u8", dst_iter_dt=None,
              bias_g=None, state_L=None, state_D=None, C_=C, dl_dt="u8"):
    sl, sd = state_L or L, state_D or D
    return [MD((T, N, C_), src_dt), MD((sl, sd, N, H), state_dt),
            MD((L, D, C_, G, H), "s8"), MD((L, D, H, G, H), "s8"),
            MD((L, D, bias_g or G, H), "f32"), MD((T, N, dl_c), dl_dt),
            MD((sl, sd, N, H), dst_iter_dt or state_dt)]


def lstm(direction=L2R, **kw):
    d = gru_descs(G=4, **kw)
    st_c = MD(tuple(d[1].dims), "f32")
    return dnnq.LSTM(direction, d[0], d[1], st_c, d[2], d[3], d[4], d[5], d[6], st_c,
                     attr=kw.pop("attr", attr()))


@pytest.mark.parametrize("bad,exc,match", [
    ("direction", dnnq.InvalidArguments, "direction"),
    ("gates", dnnq.InvalidArguments, "gates"),
    ("state_layers", dnnq.InvalidArguments, "src_iter_desc"),
    ("state_dirs", dnnq.InvalidArguments, "src_iter_desc"),
    ("concat_dst", dnnq.InvalidArguments, "dst_layer_desc"),
    ("layers_c", dnnq.InvalidArguments, "layers need src_layer channels"),
    ("f32_dst_iter", dnnq.Unimplemented, "dst_iter_desc data type f32"),
    ("mixed_modes", dnnq.Unimplemented, "src_iter_desc data type u8"),
    ("bias_gates", dnnq.InvalidArguments, "bias_desc"),
    ("weights_dt", dnnq.Unimplemented, "weights_layer_desc data type"),
    ("not_desc", dnnq.InvalidArguments, "src_layer_desc"),
    ("ndims", dnnq.InvalidArguments, "weights_iter_desc dims"),
    ("no_qparams", dnnq.InvalidArguments, "rnn data qparams"),
    ("w_mask", dnnq.Unimplemented, "rnn weights qparams mask 8"),
    ("w_count", dnnq.InvalidArguments, "rnn weights scales: got 5 values"),
    ("post_ops", dnnq.Unimplemented, "post-ops"),
    ("scale_arg", dnnq.Unimplemented, "scales on dst"),
    ("zp_arg", dnnq.Unimplemented, "zero points on weights"),
    ("both_forms", dnnq.InvalidArguments, "one form"),
    ("activation", dnnq.InvalidArguments, "activation"),
])
def test_creation_errors(bad, exc, match):
    d = gru_descs()
    a = attr()
    if bad == "direction":
        call = lambda: dnnq.GRU("left2right_typo", *d, attr=a)  # noqa: E731
    elif bad == "gates":
        call = lambda: dnnq.GRU(L2R, *gru_descs(G=4), attr=a)  # noqa: E731
    elif bad == "state_layers":
        call = lambda: dnnq.GRU(L2R, *gru_descs(state_L=2), attr=a)  # noqa: E731
    elif bad == "state_dirs":
        call = lambda: dnnq.GRU(L2R, *gru_descs(state_D=2), attr=a)  # noqa: E731
    elif bad == "concat_dst":
        call = lambda: dnnq.GRU("bidirectional_concat", *gru_descs(D=2), attr=a)  # noqa: E731
    elif bad == "layers_c":
        call = lambda: dnnq.GRU(L2R, *gru_descs(L=2, C_=12), attr=a)  # noqa: E731
    elif bad == "f32_dst_iter":
        call = lambda: dnnq.GRU(L2R, *gru_descs(dst_iter_dt="f32"), attr=a)  # noqa: E731
    elif bad == "mixed_modes":
        call = lambda: dnnq.GRU(L2R, *gru_descs(src_dt="f32", dl_dt="f32"), attr=a)  # noqa: E731
    elif bad == "bias_gates":
        call = lambda: dnnq.LBRGRU(L2R, *gru_descs(bias_g=3), attr=a)  # noqa: E731
    elif bad == "weights_dt":
        d[2] = MD(d[2].dims, "u8")
        call = lambda: dnnq.GRU(L2R, *d, attr=a)  # noqa: E731
    elif bad == "not_desc":
        d[0] = (T, N, C)
        call = lambda: dnnq.GRU(L2R, *d, attr=a)  # noqa: E731
    elif bad == "ndims":
        d[3] = MD((1, H, 3, H), "s8")
        call = lambda: dnnq.GRU(L2R, *d, attr=a)  # noqa: E731
    elif bad == "no_qparams":
        call = lambda: dnnq.GRU(L2R, *d, attr=dnnq.PrimitiveAttr())  # noqa: E731
    elif bad == "w_mask":
        call = lambda: dnnq.GRU(L2R, *d, attr=attr(8, [1.0] * H))  # noqa: E731
    elif bad == "w_count":
        call = lambda: dnnq.GRU(L2R, *d, attr=attr(24, [1.0] * 5))  # noqa: E731
    elif bad == "post_ops":
        ops = dnnq.PostOps()
        ops.append_eltwise("relu")
        a.set_post_ops(ops)
        call = lambda: dnnq.GRU(L2R, *d, attr=a)  # noqa: E731
    elif bad == "scale_arg":
        a = dnnq.PrimitiveAttr()
        a.set_scales_mask(DNNL_ARG_DST, 0)
        call = lambda: dnnq.GRU(L2R, *d, attr=a)  # noqa: E731
    elif bad == "zp_arg":
        a = dnnq.PrimitiveAttr()
        a.set_zero_points_mask(DNNL_ARG_WEIGHTS_LAYER, 0)
        call = lambda: dnnq.GRU(L2R, *d, attr=a)  # noqa: E731
    elif bad == "both_forms":
        a.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
        call = lambda: dnnq.GRU(L2R, *d, attr=a)  # noqa: E731
    else:
        call = lambda: dnnq.VanillaRNN("gelu", L2R, *d, attr=a)  # noqa: E731
    with pytest.raises(exc, match=match):
        call()


def _args(rng, G=3):
    return {DNNL_ARG_SRC_LAYER: rng.integers(0, 256, (T, N, C), dtype=np.uint8),
            DNNL_ARG_WEIGHTS_LAYER: rng.integers(-127, 128, (1, 1, C, G, H), dtype=np.int8),
            DNNL_ARG_WEIGHTS_ITER: rng.integers(-127, 128, (1, 1, H, G, H), dtype=np.int8),
            DNNL_ARG_BIAS: np.zeros((1, 1, G, H), np.float32)}


def test_execution_errors():
    rng = np.random.default_rng(0)
    p = dnnq.GRU(L2R, *gru_descs(), attr=attr())
    good = _args(rng)
    p.execute(good)
    bad = {**good, DNNL_ARG_SRC_LAYER: good[DNNL_ARG_SRC_LAYER].astype(np.int8)}
    with pytest.raises(dnnq.InvalidArguments, match="src_layer"):
        p.execute(bad)
    bad = {**good, DNNL_ARG_SRC_ITER: np.zeros((1, 1, N, H + 1), np.uint8)}
    with pytest.raises(dnnq.InvalidArguments, match="src_iter"):
        p.execute(bad)
    bad = {k: v for k, v in good.items() if k != DNNL_ARG_WEIGHTS_ITER}
    with pytest.raises(dnnq.InvalidArguments, match="weights_iter missing"):
        p.execute(bad)
    with pytest.raises(dnnq.InvalidArguments, match="not used"):
        p.execute({**good, DNNL_ARG_SCALE | DNNL_ARG_SRC: np.ones(1, np.float32)})
    with pytest.raises(dnnq.InvalidArguments, match="dst_iter"):
        p.execute({**good, DNNL_ARG_DST_ITER: np.zeros((1, 1, N, H), np.float32)})
    with pytest.raises(dnnq.InvalidArguments, match="dst_layer"):
        p.execute({**good, DNNL_ARG_DST_LAYER: np.zeros((T, N, H), np.uint8)[::-1]
                                .copy().view(np.uint8)[:, :, :H - 1]})
    with pytest.raises(dnnq.InvalidArguments, match="expected a dict"):
        p.prepare_weights([good[DNNL_ARG_WEIGHTS_LAYER]])
    with pytest.raises(dnnq.InvalidArguments, match="expected a dict"):
        p.execute([])


def test_unified_runtime_errors():
    rng = np.random.default_rng(1)
    a = dnnq.PrimitiveAttr()
    a.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    a.set_zero_points_mask(DNNL_ARG_SRC_LAYER, 0)
    a.set_scales_mask(DNNL_ARG_WEIGHTS_LAYER, 24)
    a.set_scales_mask(DNNL_ARG_WEIGHTS_ITER, 0)
    p = dnnq.GRU(L2R, *gru_descs(), attr=a)
    rt = {DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER: np.array([1 / 64], np.float32),
          DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC_LAYER: np.array([128], np.int32),
          DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_LAYER: np.full(3 * H, 0.01, np.float32),
          DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_ITER: np.array([0.01], np.float32)}
    good = {**_args(rng), **rt}
    p.execute(good)    # equal values through different masks are fine
    with pytest.raises(dnnq.Unimplemented, match="weights_layer and weights_iter differ"):
        p.execute({**good, DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_ITER:
                                np.array([0.02], np.float32)})
    with pytest.raises(dnnq.InvalidArguments, match="scales of src_layer"):
        p.execute({k: v for k, v in good.items() if k != DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER})
    with pytest.raises(dnnq.InvalidArguments, match="scales of weights_layer"):
        p.execute({**good, DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS_LAYER:
                                np.full(3 * H - 1, 0.01, np.float32)})
    for v in (0.0, np.nan, -1.0, np.inf):
        with pytest.raises(dnnq.InvalidArguments, match="src_layer"):
            p.execute({**good, DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER:
                                    np.array([v], np.float32)})
    with pytest.raises(dnnq.InvalidArguments, match="zero points of src_layer"):
        p.execute({**good, DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC_LAYER:
                                np.array([0.5])})
    # weights scales only: the data has no quantization
    a2 = dnnq.PrimitiveAttr()
    a2.set_scales_mask(DNNL_ARG_WEIGHTS_LAYER, 0)
    with pytest.raises(dnnq.InvalidArguments, match="u8 data needs its quantization"):
        dnnq.GRU(L2R, *gru_descs(), attr=a2)
    # the mask of weights scales
    a3 = dnnq.PrimitiveAttr()
    a3.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    a3.set_scales_mask(DNNL_ARG_WEIGHTS_ITER, 16)
    with pytest.raises(dnnq.Unimplemented, match="mask 16 of weights_iter"):
        dnnq.GRU(L2R, *gru_descs(), attr=a3)


def test_lstm_states_must_pair_shapes():
    with pytest.raises(dnnq.InvalidArguments, match="src_iter_c_desc"):
        d = gru_descs(G=4)
        dnnq.LSTM(L2R, d[0], d[1], MD((1, 1, N, H + 1), "f32"), d[2], d[3], d[4], d[5], d[6],
                  None, attr=attr())
    assert lstm() is not None


def test_output_overlapping_an_input_refused():
    rng = np.random.default_rng(2)
    p = dnnq.GRU("bidirectional_sum", *gru_descs(D=2, C_=H), attr=attr())
    args = {DNNL_ARG_SRC_LAYER: rng.integers(0, 256, (T, N, H), dtype=np.uint8),
            DNNL_ARG_WEIGHTS_LAYER: rng.integers(-127, 128, (1, 2, H, 3, H), dtype=np.int8),
            DNNL_ARG_WEIGHTS_ITER: rng.integers(-127, 128, (1, 2, H, 3, H), dtype=np.int8)}
    args[DNNL_ARG_DST_LAYER] = args[DNNL_ARG_SRC_LAYER]
    with pytest.raises(dnnq.InvalidArguments, match="src_layer overlaps dst_layer"):
        p.execute(args)


def test_verbose_line(capsys):
    rng = np.random.default_rng(3)
    p = dnnq.GRU(L2R, *gru_descs(), attr=attr())
    before = dnnq.get_verbose()
    try:
        dnnq.set_verbose(1)
        p.execute(_args(rng))
    finally:
        dnnq.set_verbose(before)
    out = capsys.readouterr().out
    assert "dnnq_verbose,exec,cpu,rnn:gru," in out and "direction:unidirectional_left2right" in out
