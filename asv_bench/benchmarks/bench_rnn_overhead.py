"""asv: the per-call cost of an RNN primitive's execute from Python, on a problem small enough
that the kernel itself takes a few microseconds (LSTM and GRU, T = 2, N = 1, C = H = 16, u8
data, prepared weights, every state given).  `track_us_per_call` times a loop of 1,000 calls
and reports the best of 5 in microseconds, with oneDNN's own execute on the same problem (its
memories bound once, as a C++ caller) in `track_onednn_us_per_call` for the same run.  The
difference is what dnnq's execute path costs on top of the kernel.  Standalone:
`python -P asv_bench/benchmarks/bench_rnn_overhead.py`."""
import time

import numpy as np

import dnnq
from dnnq import MemoryDesc as MD
from dnnq import args as A


def _problem(cell, T=2, N=1, C=16, H=16):
    rng = np.random.default_rng(0)
    G = 4 if cell == "lstm" else 3
    x = rng.integers(0, 256, (T, N, C), dtype=np.uint8)
    wl = rng.integers(-127, 128, (1, 1, C, G, H), dtype=np.int8)
    wi = rng.integers(-127, 128, (1, 1, H, G, H), dtype=np.int8)
    b = rng.standard_normal((1, 1, G, H)).astype(np.float32)
    h0 = rng.integers(0, 256, (1, 1, N, H), dtype=np.uint8)
    c0 = rng.standard_normal((1, 1, N, H)).astype(np.float32)
    ws = np.full(G * H, 400.0, np.float32)
    attr = dnnq.PrimitiveAttr()
    attr.set_rnn_data_qparams(64.0, 128.0)
    attr.set_rnn_weights_qparams(24, ws)
    st, stc = MD((1, 1, N, H), "u8"), MD((1, 1, N, H), "f32")
    common = (MD(x.shape, "u8"), st)
    if cell == "lstm":
        p = dnnq.LSTM("unidirectional_left2right", *common, stc, MD(wl.shape, "s8"),
                      MD(wi.shape, "s8"), MD(b.shape, "f32"), MD((T, N, H), "u8"), st, stc,
                      attr=attr)
    else:
        p = dnnq.GRU("unidirectional_left2right", *common, MD(wl.shape, "s8"),
                     MD(wi.shape, "s8"), MD(b.shape, "f32"), MD((T, N, H), "u8"), st,
                     attr=attr)
    args = {A.DNNL_ARG_SRC_LAYER: x, A.DNNL_ARG_SRC_ITER: h0, A.DNNL_ARG_BIAS: b,
            **p.prepare_weights({A.DNNL_ARG_WEIGHTS_LAYER: wl, A.DNNL_ARG_WEIGHTS_ITER: wi})}
    if cell == "lstm":
        args[A.DNNL_ARG_SRC_ITER_C] = c0
    handle = None
    try:
        from dnnq.testing import RnnHandle
        handle = RnnHandle(cell, x, h0, c0 if cell == "lstm" else None, wl, wi, b,
                           data_scale=64.0, data_shift=128.0, wei_scales=ws, wei_scale_mask=24)
    except Exception:       # no oneDNN here: dnnq's figure alone
        pass
    return p, args, handle


def _best_us(fn, n=1000):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


class RnnExecuteOverhead:
    params = ["lstm", "gru"]
    param_names = ["cell"]

    def setup(self, cell):
        dnnq.set_num_threads(1)
        self.p, self.args, self.handle = _problem(cell)
        self.p.execute(self.args)

    def time_execute(self, cell):
        self.p.execute(self.args)

    def track_us_per_call(self, cell):
        run, args = self.p.execute, self.args
        return _best_us(lambda: run(args))

    track_us_per_call.unit = "us"

    def track_onednn_us_per_call(self, cell):
        if self.handle is None:
            return float("nan")
        return _best_us(self.handle.execute)

    track_onednn_us_per_call.unit = "us"


if __name__ == "__main__":
    b = RnnExecuteOverhead()
    for cell in b.params:
        b.setup(cell)
        print(f"{cell}: dnnq {b.track_us_per_call(cell):.2f} us/call, oneDNN "
              f"{b.track_onednn_us_per_call(cell):.2f} us/call")
