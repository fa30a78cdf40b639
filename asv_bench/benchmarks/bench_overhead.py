"""asv: the per-call cost of a primitive's execute from Python (issue target: a 1x64:64x64
u8 x s8 -> s8 MatMul with per-N scales and bias <= 2 us per call).  `track_us_per_call` times a
loop of 2,000 calls and reports the best of 5 in microseconds, so the figure does not depend on
asv's own per-sample overhead; `time_execute` is asv's view of one call."""
import time

import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                  DNNL_ARG_BIAS, DNNL_ARG_SCALE)


def _small_matmul(M=1, K=64, N=64):
    rng = np.random.default_rng(0)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 0)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 2)
    attr.set_scales_mask(DNNL_ARG_DST, 0)
    p = dnnq.MatMul(MemoryDesc((M, K), "u8"), MemoryDesc((K, N), "s8"), MemoryDesc((M, N), "s8"),
                    MemoryDesc((1, N), "f32"), attr=attr)
    args = {DNNL_ARG_SRC: rng.integers(0, 256, (M, K), dtype=np.uint8),
            DNNL_ARG_WEIGHTS: p.prepare_weights(rng.integers(-128, 128, (K, N), dtype=np.int8)),
            DNNL_ARG_BIAS: rng.normal(0, 1, (1, N)).astype(np.float32),
            DNNL_ARG_SCALE | DNNL_ARG_SRC: np.array([0.05], np.float32),
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: rng.uniform(1e-3, 1e-2, N).astype(np.float32),
            DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([0.5], np.float32),
            DNNL_ARG_DST: np.empty((M, N), np.int8)}
    return p, args


class ExecuteOverhead:
    params = [1, 2]
    param_names = ["threads"]

    def setup(self, threads):
        dnnq.set_num_threads(threads)
        self.p, self.args = _small_matmul()
        self.p.execute(self.args)

    def time_execute(self, threads):
        self.p.execute(self.args)

    def track_us_per_call(self, threads):
        run, args = self.p.execute, self.args
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(2000):
                run(args)
            best = min(best, (time.perf_counter() - t0) / 2000)
        return best * 1e6

    track_us_per_call.unit = "us"
