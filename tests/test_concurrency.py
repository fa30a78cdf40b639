"""Eight Python threads executing ONE primitive at once, each with its own inputs, must give what
serial runs give (SPEC section 8: execute releases the GIL and may run from several threads).

The threads start together (a barrier) and each executes several times; every thread's
results are compared with a serial run of the same primitive.  A worker's exception reaches
the test through ``Future.result()``, so a failing worker fails the test
(test_a_raising_worker_fails_the_test shows it)."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD
from dnnq.args import (DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST,
                       DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS, DNNL_ARG_SRC_LAYER,
                       DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_SRC_ITER,
                       DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_ATTR_MULTIPLE_POST_OP,
                       DNNL_ARG_SRC_1)

THREADS = 8
REPEATS = 4


def run_concurrently(fn, inputs, repeats=REPEATS):
    """``fn(x)`` ``repeats`` times in one thread per input, all released together; returns the
    results per input.  ``Future.result()`` re-raises the first worker exception here."""
    barrier = threading.Barrier(len(inputs))

    def work(x):
        barrier.wait(timeout=60)
        return [fn(x) for _ in range(repeats)]

    with ThreadPoolExecutor(len(inputs)) as pool:
        futures = [pool.submit(work, x) for x in inputs]
        return [f.result(timeout=300) for f in futures]


def check_matches_serial(fn, inputs):
    serial = [fn(x) for x in inputs]
    for i, (want, got) in enumerate(zip(serial, run_concurrently(fn, inputs))):
        for r, out in enumerate(got):
            if isinstance(want, dict):
                assert want.keys() == out.keys()
                for k in want:
                    np.testing.assert_array_equal(out[k], want[k],
                                                  err_msg=f"thread {i} run {r} key {k}")
            else:
                np.testing.assert_array_equal(out, want, err_msg=f"thread {i} run {r}")
    # the inputs differ, so the threads' results must too (no thread saw another's data)
    assert not all(np.array_equal(_first(serial[0]), _first(s)) for s in serial[1:])


def _first(r):
    return next(iter(r.values())) if isinstance(r, dict) else r


def _rng(i):
    return np.random.default_rng(1000 + i)


def test_matmul():
    M, K, N = 33, 70, 40
    attr = dnnq.PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 2)
    attr.set_scales_mask(DNNL_ARG_DST, 0)
    ops = dnnq.PostOps()
    ops.append_binary("add", MD((M, N), "f32"))
    ops.append_eltwise("relu")
    attr.set_post_ops(ops)
    p = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), "s8"), MD((1, N), "f32"),
                    attr=attr)
    w = _rng(0).integers(-128, 128, (K, N), dtype=np.int8)
    pw = p.prepare_weights(w)
    bias = _rng(1).standard_normal((1, N)).astype(np.float32)
    ws = _rng(2).uniform(0.5, 2, N).astype(np.float32)

    def run(i):
        r = _rng(10 + i)
        return p.execute({DNNL_ARG_SRC: r.integers(0, 256, (M, K), dtype=np.uint8),
                          DNNL_ARG_WEIGHTS: pw, DNNL_ARG_BIAS: bias,
                          DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: ws,
                          DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([40.0 + i], np.float32),
                          DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1:
                              r.standard_normal((M, N)).astype(np.float32)})

    check_matches_serial(run, list(range(THREADS)))


def test_convolution():
    N, IC, OC, H, W = 2, 24, 40, 9, 7
    attr = dnnq.PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1)
    attr.set_zero_points_mask(DNNL_ARG_SRC, 0)
    attr.set_scales_mask(DNNL_ARG_DST, 0)
    p = dnnq.Convolution(MD((N, IC, H, W), "u8", "nhwc"), MD((OC, IC, 3, 3), "s8"),
                         MD((N, OC, H, W), "u8", "nhwc"), strides=1, padding_l=1, padding_r=1,
                         attr=attr)
    w = _rng(0).integers(-128, 128, (OC, IC, 3, 3), dtype=np.int8)
    pw = p.prepare_weights(w)
    ws = _rng(1).uniform(0.5, 2, OC).astype(np.float32)

    def run(i):
        r = _rng(10 + i)
        x = r.integers(0, 256, (N, H, W, IC), dtype=np.uint8).transpose(0, 3, 1, 2)
        return p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: pw,
                          DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: ws,
                          DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.array([100 + i], np.int32),
                          DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([900.0], np.float32)})

    check_matches_serial(run, list(range(THREADS)))


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_rnn(cell):
    T, N, C, H, L = 5, 3, 16, 16, 2
    G = 4 if cell == "lstm" else 3
    attr = dnnq.PrimitiveAttr()
    attr.set_rnn_data_qparams(64.0, 128.0)
    attr.set_rnn_weights_qparams(0, np.array([100.0], np.float32))
    st = MD((L, 1, N, H), "u8")
    common = (MD((T, N, C), "u8"), st)
    w = (MD((L, 1, C, G, H), "s8"), MD((L, 1, H, G, H), "s8"), MD((L, 1, G, H), "f32"),
         MD((T, N, H), "u8"), st)
    if cell == "lstm":
        stc = MD((L, 1, N, H), "f32")
        p = dnnq.LSTM("unidirectional_left2right", *common, stc, *w[:4], st, stc, attr=attr)
    else:
        p = dnnq.GRU("unidirectional_left2right", *common, *w, attr=attr)
    r = _rng(0)
    weights = p.prepare_weights({
        DNNL_ARG_WEIGHTS_LAYER: r.integers(-127, 128, (L, 1, C, G, H), dtype=np.int8),
        DNNL_ARG_WEIGHTS_ITER: r.integers(-127, 128, (L, 1, H, G, H), dtype=np.int8)})
    bias = r.standard_normal((L, 1, G, H)).astype(np.float32)

    def run(i):
        r = _rng(10 + i)
        out = p.execute({DNNL_ARG_SRC_LAYER: r.integers(0, 256, (T, N, C), dtype=np.uint8),
                         DNNL_ARG_SRC_ITER: r.integers(0, 256, (L, 1, N, H), dtype=np.uint8),
                         DNNL_ARG_BIAS: bias, **weights})
        return {k: v for k, v in out.items() if k in (DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER)}

    check_matches_serial(run, list(range(THREADS)))


def test_pooling():
    N, C, H, W = 2, 70, 11, 9
    p = dnnq.Pooling("avg_exclude_padding", MD((N, C, H, W), "s8", "nhwc"),
                     MD((N, C, 6, 5), "s8", "nhwc"), strides=2, kernel=3, padding_l=1,
                     padding_r=1)

    def run(i):
        x = _rng(10 + i).integers(-128, 128, (N, H, W, C), dtype=np.int8).transpose(0, 3, 1, 2)
        out = MD((N, C, 6, 5), "s8", "nhwc").empty()
        p.execute({DNNL_ARG_SRC: x, DNNL_ARG_DST: out})
        return out

    check_matches_serial(run, list(range(THREADS)))


def test_reorder_quantize():
    attr = dnnq.PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_DST, 2)
    attr.set_zero_points_mask(DNNL_ARG_DST, 0)
    dims = (3, 67, 5, 4)
    p = dnnq.Reorder(MD(dims, "f32"), MD(dims, "u8", "nhwc"), attr=attr)
    s = _rng(0).uniform(0.01, 0.1, 67).astype(np.float32)

    def run(i):
        x = _rng(10 + i).standard_normal(dims).astype(np.float32)
        return p.execute({DNNL_ARG_SRC: x, DNNL_ARG_SCALE | DNNL_ARG_DST: s,
                          DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: np.array([128], np.int32)})

    check_matches_serial(run, list(range(THREADS)))


def test_a_raising_worker_fails_the_test():
    p = dnnq.Eltwise("relu", MD((4, 4), "f32"), MD((4, 4), "f32"))

    def run(i):
        x = np.zeros((4, 4), np.float32 if i != 5 else np.float64)  # worker 5: wrong dtype
        return p.execute({DNNL_ARG_SRC: x})

    with pytest.raises(dnnq.InvalidArguments, match="float64"):
        run_concurrently(run, list(range(THREADS)))
    # and a wrong result in one worker fails the comparison with the serial run
    calls = []

    def flaky(i):
        calls.append(i)
        return np.array([i + (len(calls) > THREADS and i == 3)])

    with pytest.raises(AssertionError, match="thread 3"):
        check_matches_serial(flaky, list(range(THREADS)))
