"""asv: int8 MatMul on BERT-base shapes and an LSTM-gate shape (u8 x s8 -> s8, per-N weight
scales, f32 bias), 1 and 2 threads.  `track_*` report GOPS and a bit-exactness guard against
numpy so speed and numerics are watched together.  The oneDNN ratio in the same process is
printed by `python -m dnnq.bench` (asv runs each library in its own timing loop)."""
import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                  DNNL_ARG_BIAS, DNNL_ARG_SCALE)

SHAPES = [(1, 768, 768), (1, 768, 3072), (128, 768, 768), (128, 768, 3072), (512, 768, 768),
          (512, 768, 3072), (512, 3072, 768), (32, 512, 2048)]


def _setup(M, K, N):
    rng = np.random.default_rng(0)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 0)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 2)
    attr.set_scales_mask(DNNL_ARG_DST, 0)
    p = dnnq.MatMul(MemoryDesc((M, K), "u8"), MemoryDesc((K, N), "s8"), MemoryDesc((M, N), "s8"),
                    MemoryDesc((1, N), "f32"), attr=attr)
    w = rng.integers(-128, 128, (K, N), dtype=np.int8)
    x = rng.integers(0, 256, (M, K), dtype=np.uint8)
    args = {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: p.prepare_weights(w),
            DNNL_ARG_BIAS: rng.normal(0, 1, (1, N)).astype(np.float32),
            DNNL_ARG_SCALE | DNNL_ARG_SRC: np.array([0.05], np.float32),
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: rng.uniform(1e-3, 1e-2, N).astype(np.float32),
            DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([0.5], np.float32),
            DNNL_ARG_DST: np.empty((M, N), np.int8)}
    return p, args, w


class MatMulInt8:
    params = (SHAPES, [1, 2])
    param_names = ["M_K_N", "threads"]

    def setup(self, shape, threads):
        dnnq.set_num_threads(threads)
        self.p, self.args, self.w = _setup(*shape)

    def time_execute(self, shape, threads):
        self.p.execute(self.args)

    def track_gops(self, shape, threads):
        import time
        M, K, N = shape
        self.p.execute(self.args)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 0.2:
            self.p.execute(self.args)
            n += 1
        return 2 * M * K * N * n / (time.perf_counter() - t0) / 1e9

    track_gops.unit = "GOPS"

    def track_exact_vs_numpy(self, shape, threads):
        """1 when the result equals the numpy model bit for bit."""
        a = self.args
        out = self.p.execute(a)
        acc = a[DNNL_ARG_SRC].astype(np.int64) @ self.w.astype(np.int64)
        s = np.float32(0.05) * a[DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS]
        v = acc.astype(np.float32) * s + a[DNNL_ARG_BIAS]
        ref = np.clip(np.rint(v * (np.float32(1) / np.float32(0.5))), -128, 127).astype(np.int8)
        return int(np.array_equal(out, ref))
