"""asv: int8 LSTM and GRU on the issue's target problems (u8 data, per-gate-per-OC weight
scales), 1 and 2 threads: time, GOPS, the batch-1 step time as a fraction of reading the packed
recurrent weights at the measured L2 read bandwidth, and the fork/join-per-phase variant of
the time loop (one region with barriers is the default).  The oneDNN ratio in the same process
is printed by ``python -P -m dnnq.bench --rnn ...`` (asv times each library on its own)."""
import time

import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, DNNL_ARG_SRC_LAYER, DNNL_ARG_SRC_ITER,
                  DNNL_ARG_SRC_ITER_C, DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER,
                  DNNL_ARG_BIAS, DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C)
import dnnq.primitives.rnn as rnn_mod
from dnnq.primitives._kernels import _rnn

# (T, N, C = H)
PROBLEMS = [(50, 32, 512), (20, 8, 1024), (50, 1, 512)]


def _setup(cell, T, N, H):
    rng = np.random.default_rng(0)
    G = 4 if cell == "lstm" else 3
    attr = PrimitiveAttr()
    attr.set_rnn_data_qparams(63.75, 128.0)
    attr.set_rnn_weights_qparams(24, rng.uniform(400, 1200, G * H).astype(np.float32))
    st, stc = MemoryDesc((1, 1, N, H), "u8"), MemoryDesc((1, 1, N, H), "f32")
    descs = (MemoryDesc((T, N, H), "u8"), MemoryDesc((1, 1, H, G, H), "s8"),
             MemoryDesc((1, 1, H, G, H), "s8"), MemoryDesc((1, 1, G, H), "f32"),
             MemoryDesc((T, N, H), "u8"))
    d = "unidirectional_left2right"
    if cell == "lstm":
        p = dnnq.LSTM(d, descs[0], st, stc, *descs[1:], st, stc, attr=attr)
    else:
        p = dnnq.GRU(d, descs[0], st, *descs[1:], st, attr=attr)
    wl = rng.integers(-127, 128, (1, 1, H, G, H), dtype=np.int8)
    wi = rng.integers(-127, 128, (1, 1, H, G, H), dtype=np.int8)
    args = {DNNL_ARG_SRC_LAYER: rng.integers(0, 256, (T, N, H), dtype=np.uint8),
            DNNL_ARG_SRC_ITER: rng.integers(0, 256, (1, 1, N, H), dtype=np.uint8),
            DNNL_ARG_BIAS: rng.standard_normal((1, 1, G, H)).astype(np.float32),
            DNNL_ARG_DST_LAYER: np.empty((T, N, H), np.uint8),
            DNNL_ARG_DST_ITER: np.empty((1, 1, N, H), np.uint8)}
    if cell == "lstm":
        args[DNNL_ARG_SRC_ITER_C] = rng.standard_normal((1, 1, N, H)).astype(np.float32)
        args[DNNL_ARG_DST_ITER_C] = np.empty((1, 1, N, H), np.float32)
    args.update(p.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: wl, DNNL_ARG_WEIGHTS_ITER: wi}))
    return p, args


def _rate(fn, seconds=0.3):
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    return (time.perf_counter() - t0) / n


class RnnInt8:
    params = (["lstm", "gru"], PROBLEMS, [1, 2])
    param_names = ["cell", "T_N_H", "threads"]

    def setup(self, cell, problem, threads):
        dnnq.set_num_threads(threads)
        self.p, self.args = _setup(cell, *problem)

    def time_execute(self, cell, problem, threads):
        self.p.execute(self.args)

    def track_gops(self, cell, problem, threads):
        T, N, H = problem
        G = 4 if cell == "lstm" else 3
        return 2.0 * T * N * G * H * 2 * H / _rate(lambda: self.p.execute(self.args)) / 1e9

    track_gops.unit = "GOPS"

    def track_fork_join_over_barrier(self, cell, problem, threads):
        """time with a parallel region per step phase / time with one region and barriers"""
        saved = rnn_mod.FORK_JOIN
        try:
            rnn_mod.FORK_JOIN = 0
            t_barrier = _rate(lambda: self.p.execute(self.args))
            rnn_mod.FORK_JOIN = 1
            t_fork = _rate(lambda: self.p.execute(self.args))
        finally:
            rnn_mod.FORK_JOIN = saved
        return t_fork / t_barrier

    track_fork_join_over_barrier.unit = "ratio"


class RnnBatch1Step:
    """Per-step time of the batch-1 LSTM (the slope between T = 25 and T = 100) over the time
    the packed recurrent weights (H x 4H bytes) take to read at the L2 read bandwidth of one
    core (a 512 KiB buffer streamed with the widest loads): 1.0 = bandwidth-bound."""
    params = ([512], [1, 2])
    param_names = ["H", "threads"]

    def setup(self, H, threads):
        dnnq.set_num_threads(threads)
        self.prims = {T: _setup("lstm", T, 1, H) for T in (25, 100)}

    def track_step_over_l2_read(self, H, threads):
        t = {T: min(_rate(lambda: p.execute(a), 0.2) for _ in range(3))
             for T, (p, a) in self.prims.items()}
        step = (t[100] - t[25]) / 75
        isa = dnnq.ISA_LEVELS.index(dnnq.get_effective_cpu_isa())
        bw = _rnn.read_bandwidth(isa, 512 * 1024)
        # each of the `threads` cores reads its share of the weights from its own L2
        return step / (H * 4 * H / threads / bw)

    track_step_over_l2_read.unit = "ratio"
