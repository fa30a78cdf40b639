"""asv: the per-call cost of a primitive's execute from Python (issue target: a 1x64:64x64
u8 x s8 -> s8 MatMul with per-N scales and bias <= 2 us per call).  `track_us_per_call` times a
loop of 2,000 calls and reports the best of 5 in microseconds, so the figure does not depend on
asv's own per-sample overhead; `time_execute` is asv's view of one call."""
import time

import dnnq

from .bench_matmul import _setup


class ExecuteOverhead:
    params = [1, 2]
    param_names = ["threads"]

    def setup(self, threads):
        dnnq.set_num_threads(threads)
        self.p, self.args, _ = _setup(1, 64, 64)
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


class ConvExecuteOverhead:
    """The per-call cost of Convolution.execute on problems whose kernel time is small: a 1x1
    convolution (the GEMM driver), a 3x3 one (folded taps) and a depthwise 3x3, 8 channels on
    a 4x4 image, the benchmark configuration (u8 x s8 -> u8, per-OC weight scales, f32 bias,
    relu) in channels-last and plain layouts.  Everything above the kernel runs in the C-level
    execute path (dnnq/primitives/_kernels/_conv_exec.pyx)."""
    params = (["mb1ic8ih4oc8oh4kh1ph0", "mb1ic8ih4oc8oh4kh3ph1", "g8mb1ic8ih4oc8oh4kh3ph1"],
              ["nhwc", "nchw"])
    param_names = ["problem", "tag"]

    def setup(self, problem, tag):
        import numpy as np
        from dnnq.bench.conv import build
        dnnq.set_num_threads(1)
        b = build(problem, {"dt": "u8:s8:u8", "tag": tag}, np.random.default_rng(0),
                  tag=tag == "nhwc")
        self.p, self.args = b["p"], b["args"]
        self.p.execute(self.args)

    def time_execute(self, problem, tag):
        self.p.execute(self.args)

    def track_us_per_call(self, problem, tag):
        run, args = self.p.execute, self.args
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(2000):
                run(args)
            best = min(best, (time.perf_counter() - t0) / 2000)
        return best * 1e6

    track_us_per_call.unit = "us"
