"""asv: f32 layers (f32 source and weights; docs/f32_layers.md) on every ResNet-50 layer
(channels-last, batch 1 and 8) and the BERT-base MatMuls, 1 and 2 threads, against oneDNN
3.2's f32 primitive in the same process (the same data layout, its argument array built once)
and, for MatMul, numpy's f32 matmul (OpenBLAS).

* ``time_execute``: one dnnq ``execute``;
* ``track_ratio_vs_onednn``: dnnq time / oneDNN f32 time, best of 3 interleaved rounds (the
  issue's target: <= 1.1 geomean, no layer above 1.3);
* ``track_ratio_vs_numpy`` (MatMul): dnnq time / numpy time, measured alike;
* ``track_within_bound_vs_onednn``: 1 when every f32 output is within the bound of two f32
  sums of the same products (2 (K + 1) u sum |products|) of oneDNN's; a 0 is a bug.

Destinations: f32, and u8 through a dst scale (``dt`` u8: timed against the same f32 oneDNN
primitive, whose int8 output would need a reorder more).
"""
import numpy as np

import dnnq
from dnnq.bench.conv import RESNET50, build, with_batch
from dnnq.bench.timing import best_time
from dnnq import MemoryDesc, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS

BERT = [(128, 768, 768), (128, 768, 3072), (128, 3072, 768), (512, 768, 768),
        (512, 768, 3072), (512, 3072, 768)]


_ONEDNN_ISA = {"default": "SSE41", "avx2": "AVX2", "avx2_vnni": "AVX2_VNNI",
               "avx512_core_vnni": "AVX512_CORE_VNNI", "avx512_core_amx": "AVX512_CORE_AMX"}


def _bridge():
    """dnnq.testing with oneDNN capped at dnnq's level (set before oneDNN's first primitive)."""
    import os
    os.environ.setdefault("ONEDNN_MAX_CPU_ISA", _ONEDNN_ISA[dnnq.get_effective_cpu_isa()])
    from dnnq import testing
    testing.require()
    return testing


def _ratio(fa, fb, rounds=3, budget=0.1):
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(best_time(fa, budget))
        tb.append(best_time(fb, budget))
    return min(ta) / min(tb)


class ConvF32ResNet50:
    params = (RESNET50, [1, 8], [1, 2], ["f32"])
    param_names = ["layer", "mb", "threads", "dt"]
    timeout = 300

    def setup(self, desc, mb, threads, dt):
        dnnq.set_num_threads(threads)
        d = with_batch([desc], mb)[0]
        self.b = build(d, {"dt": f"f32:f32:{dt}", "tag": "nhwc"}, np.random.default_rng(0))
        self.p, self.args = self.b["p"], self.b["args"]
        self.p.execute(self.args)
        self.handle = None

    def teardown(self, desc, mb, threads, dt):
        if self.handle is not None:
            self.handle.close()

    def _onednn(self):
        if self.handle is None:
            b = self.b
            self.handle = _bridge().ConvHandle(b["src"], b["wei"], b["bias"], "f32",
                                               data_tag="nhwc", **b["ref_kw"])
        return self.handle

    def time_execute(self, desc, mb, threads, dt):
        self.p.execute(self.args)

    def track_ratio_vs_onednn(self, desc, mb, threads, dt):
        return _ratio(lambda: self.p.execute(self.args), self._onednn().runner())

    track_ratio_vs_onednn.unit = "dnnq time / oneDNN f32 time"

    def track_within_bound_vs_onednn(self, desc, mb, threads, dt):
        if dt != "f32":
            return 1
        b, geo = self.b, self.b["geo"]
        K = geo["ic"] * geo["kh"] * geo["kw"]
        out = np.asarray(self.p.execute(self.args), np.float64)
        ref = self._onednn().result()
        kw = {k: v for k, v in b["ref_kw"].items() if k != "post_ops"}
        mag = _bridge().convolution(np.abs(b["src"]), np.abs(b["wei"]), np.abs(b["bias"]),
                                    "f32", **kw)
        return int(np.all(np.abs(out - ref) <= 2 * (K + 1) * 2.0 ** -24 * mag))


class ConvF32ToU8ResNet50(ConvF32ResNet50):
    """A few ResNet-50 layers with a u8 dst (dst scale): the quantizing epilogue's cost."""
    params = (RESNET50[:4], [1], [1, 2], ["u8"])


class MatMulF32Bert:
    params = (BERT, [1, 2], ["f32", "u8"])
    param_names = ["M_K_N", "threads", "dt"]
    timeout = 300

    def setup(self, shape, threads, dt):
        dnnq.set_num_threads(threads)
        M, K, N = shape
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((M, K)).astype(np.float32)
        self.w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
        self.bias = rng.standard_normal((1, N)).astype(np.float32)
        attr = dnnq.PrimitiveAttr()
        self.args = {DNNL_ARG_SRC: self.x, DNNL_ARG_BIAS: self.bias}
        if dt != "f32":
            attr.set_scales_mask(dnnq.DNNL_ARG_DST, 0)
            self.args[dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_DST] = np.float32([0.05])
        self.p = dnnq.MatMul(MemoryDesc((M, K), "f32"), MemoryDesc((K, N), "f32"),
                             MemoryDesc((M, N), dt), MemoryDesc((1, N), "f32"), attr=attr)
        self.args[DNNL_ARG_WEIGHTS] = self.p.prepare_weights(self.w)
        self.out = np.empty((M, N), np.float32)
        self.handle = None
        try:  # numpy's BLAS at the same thread count
            from threadpoolctl import threadpool_limits
            threadpool_limits(threads, user_api="blas")
        except ImportError:
            pass

    def teardown(self, shape, threads, dt):
        if self.handle is not None:
            self.handle.close()

    def _onednn(self):
        if self.handle is None:
            self.handle = _bridge().MatmulHandle(self.x, self.w, self.bias, "f32")
        return self.handle

    def _numpy(self):
        np.matmul(self.x, self.w, out=self.out)
        np.add(self.out, self.bias, out=self.out)

    def time_execute(self, shape, threads, dt):
        self.p.execute(self.args)

    def track_ratio_vs_onednn(self, shape, threads, dt):
        return _ratio(lambda: self.p.execute(self.args), self._onednn().runner())

    track_ratio_vs_onednn.unit = "dnnq time / oneDNN f32 time"

    def track_ratio_vs_numpy(self, shape, threads, dt):
        return _ratio(lambda: self.p.execute(self.args), self._numpy)

    track_ratio_vs_numpy.unit = "dnnq time / numpy f32 matmul time"

    def track_within_bound_vs_onednn(self, shape, threads, dt):
        if dt != "f32":
            return 1
        K = shape[1]
        out = np.asarray(self.p.execute(self.args), np.float64)
        ref = self._onednn().execute()
        mag = np.abs(self.x).astype(np.float64) @ np.abs(self.w) + np.abs(self.bias)
        return int(np.all(np.abs(out - ref) <= 2 * (K + 1) * 2.0 ** -24 * mag))
