"""asv: the int8 toolkit on the issue's shapes -- quantize / dequantize / requantize of a
32x64x56x56 tensor, int8 pooling (channels-last, ResNet's 3x3 s2 max and a 2x2 s2 average),
int8 binary add with source scales, plus sum / concat / softmax / eltwise.  1 and 2 threads.

`time_*` are asv timings of one execute (destination preallocated); `track_gbps` reports the
bytes a kernel must move (inputs read once + output written once) per second, which is what
the bandwidth target of the issue is stated in; `track_bandwidth_fraction` divides it by the
machine's bandwidth measured in the same process (a copy of the same bytes, `copy_gbps`);
`track_exact` is a numpy guard (1 = bit-exact).
"""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr
from dnnq import args as A

F = np.float32
SHAPE = (32, 64, 56, 56)


def _gbps(fn, nbytes, seconds=0.2):
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    return nbytes * n / (time.perf_counter() - t0) / 1e9


_POOL = {}


def copy_gbps(nbytes, threads, seconds=0.2):
    """The machine's bandwidth for a working set of ``nbytes`` moved (half read, half written):
    numpy copies of nbytes / 2 bytes, split over ``threads`` threads of a pool started once
    (numpy's copy releases the GIL), counted like the kernels' figures (read once + written
    once)."""
    a = np.ones(nbytes // 2, np.uint8)
    b = np.empty_like(a)
    edges = np.linspace(0, a.size, threads + 1).astype(int)
    parts = [(b[lo:hi], a[lo:hi]) for lo, hi in zip(edges[:-1], edges[1:])]
    if threads > 1 and threads not in _POOL:
        _POOL[threads] = ThreadPoolExecutor(max_workers=threads)
    pool = _POOL.get(threads)

    def copy():
        if threads == 1:  # no pool round trip for one thread
            np.copyto(b, a)
            return
        for f in [pool.submit(np.copyto, d, s) for d, s in parts]:
            f.result()
    return _gbps(copy, 2 * a.nbytes, seconds)


def _to_cl(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _case(name):
    """(primitive, args, bytes moved, numpy check) for a named case."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(F)
    q = rng.integers(-128, 128, SHAPE, dtype=np.int8)
    q2 = rng.integers(-128, 128, SHAPE, dtype=np.int8)
    if name == "quantize_f32_s8":
        attr = PrimitiveAttr()
        attr.set_scales_mask(A.DNNL_ARG_DST, 0)
        attr.set_zero_points_mask(A.DNNL_ARG_DST, 0)
        p = dnnq.Reorder(MD(SHAPE, "f32"), MD(SHAPE, "s8"), attr)
        out = np.empty(SHAPE, np.int8)
        args = {A.DNNL_ARG_SRC: x, A.DNNL_ARG_DST: out,
                A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: F([0.02]),
                A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST: np.int32([3])}
        check = lambda o: np.clip(np.rint(x * (F(1) / F(0.02)) + F(3)), -128, 127)  # noqa: E731
        return p, args, x.nbytes + out.nbytes, check
    if name == "dequantize_s8_f32":
        attr = PrimitiveAttr()
        attr.set_scales_mask(A.DNNL_ARG_SRC, 0)
        attr.set_zero_points_mask(A.DNNL_ARG_SRC, 0)
        p = dnnq.Reorder(MD(SHAPE, "s8"), MD(SHAPE, "f32"), attr)
        out = np.empty(SHAPE, F)
        args = {A.DNNL_ARG_SRC: q, A.DNNL_ARG_DST: out,
                A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC: F([0.02]),
                A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC: np.int32([3])}
        check = lambda o: (q.astype(F) - F(3)) * F(0.02)  # noqa: E731
        return p, args, q.nbytes + out.nbytes, check
    if name == "requantize_s8_u8_per_channel":
        attr = PrimitiveAttr()
        attr.set_scales_mask(A.DNNL_ARG_SRC, 2)
        attr.set_scales_mask(A.DNNL_ARG_DST, 0)
        attr.set_zero_points_mask(A.DNNL_ARG_DST, 0)
        p = dnnq.Reorder(MD(SHAPE, "s8"), MD(SHAPE, "u8"), attr)
        out = np.empty(SHAPE, np.uint8)
        s = rng.uniform(0.01, 0.1, 64).astype(F)
        args = {A.DNNL_ARG_SRC: q, A.DNNL_ARG_DST: out, A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC: s,
                A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: F([0.05]),
                A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST: np.int32([128])}
        check = lambda o: np.clip(np.rint(q.astype(F) * s.reshape(1, 64, 1, 1)  # noqa: E731
                                          * (F(1) / F(0.05)) + F(128)), 0, 255)
        return p, args, q.nbytes + out.nbytes, check
    if name == "binary_add_s8":
        attr = PrimitiveAttr()
        attr.set_scales_mask(A.DNNL_ARG_SRC_0, 0)
        attr.set_scales_mask(A.DNNL_ARG_SRC_1, 0)
        p = dnnq.Binary("add", MD(SHAPE, "s8"), MD(SHAPE, "s8"), MD(SHAPE, "s8"), attr)
        out = np.empty(SHAPE, np.int8)
        args = {A.DNNL_ARG_SRC_0: q, A.DNNL_ARG_SRC_1: q2, A.DNNL_ARG_DST: out,
                A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_0: F([0.5]),
                A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_1: F([0.25])}
        check = lambda o: np.clip(np.rint(q.astype(F) * F(0.5) + q2.astype(F) * F(0.25)),  # noqa
                                  -128, 127)
        return p, args, 3 * q.nbytes, check
    if name in ("maxpool_3x3s2_nhwc_s8", "avgpool_2x2s2_nhwc_u8"):
        qc = _to_cl(q if name.startswith("max") else q.view(np.uint8))
        dt = "s8" if name.startswith("max") else "u8"
        k, s, pl = (3, 2, 1) if name.startswith("max") else (2, 2, 0)
        alg = "max" if name.startswith("max") else "avg_exclude_padding"
        p = dnnq.Pooling(alg, MD(SHAPE, dt, "nhwc"), MD((32, 64, 28, 28), dt, "nhwc"),
                         kernel=k, strides=s, padding_l=pl, padding_r=0)
        out = np.empty((32, 28, 28, 64), qc.dtype).transpose(0, 3, 1, 2)
        args = {A.DNNL_ARG_SRC: qc, A.DNNL_ARG_DST: out}
        if alg == "max":
            pad = np.full((32, 64, 57, 57), -128, np.int16)
            pad[:, :, 1:, 1:] = q
            win = np.stack([pad[:, :, i:i + 55:2, j:j + 55:2] for i in range(3)
                            for j in range(3)])
            check = lambda o: win.max(0)  # noqa: E731
        else:
            u = q.view(np.uint8).astype(F).reshape(32, 64, 28, 2, 28, 2)
            check = lambda o: np.rint(((u[:, :, :, 0, :, 0] + u[:, :, :, 0, :, 1])  # noqa: E731
                                       + u[:, :, :, 1, :, 0] + u[:, :, :, 1, :, 1]) / F(4))
        return p, args, q.nbytes + out.size, check
    raise KeyError(name)


CASES = ["quantize_f32_s8", "dequantize_s8_f32", "requantize_s8_u8_per_channel",
         "binary_add_s8", "maxpool_3x3s2_nhwc_s8", "avgpool_2x2s2_nhwc_u8"]


class Toolkit:
    params = (CASES, [1, 2])
    param_names = ["case", "threads"]
    timeout = 120

    def setup(self, case, threads):
        dnnq.set_num_threads(threads)
        self.p, self.args, self.nbytes, self.check = _case(case)

    def time_execute(self, case, threads):
        self.p.execute(self.args)

    def track_gbps(self, case, threads):
        return _gbps(lambda: self.p.execute(self.args), self.nbytes)

    track_gbps.unit = "GB/s"

    def track_bandwidth_fraction(self, case, threads):
        """The case's GB/s over a same-size copy's, measured alternately (best of 3 each)."""
        kern, copy = [], []
        for _ in range(3):
            kern.append(_gbps(lambda: self.p.execute(self.args), self.nbytes, 0.1))
            copy.append(copy_gbps(self.nbytes, threads, 0.1))
        return max(kern) / max(copy)

    track_bandwidth_fraction.unit = "fraction of copy bandwidth"

    def track_exact(self, case, threads):
        """1 when the output equals the numpy model bit for bit."""
        out = self.p.execute(self.args)
        return int(np.array_equal(out, self.check(out)))


class ToolkitSmall:
    """Sum / concat / softmax / eltwise on one ResNet-sized activation (1x256x56x56)."""

    params = (["sum3_u8", "concat_s8", "softmax_u8", "eltwise_gelu_u8"],)
    param_names = ["case"]

    def setup(self, case):
        dnnq.set_num_threads(1)
        rng = np.random.default_rng(0)
        shape = (1, 256, 56, 56)
        u = [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(3)]
        if case == "sum3_u8":
            attr = PrimitiveAttr()
            for i in range(3):
                attr.set_scales_mask(A.DNNL_ARG_MULTIPLE_SRC + i, 0)
            self.p = dnnq.Sum(MD(shape, "u8"), [MD(shape, "u8")] * 3, attr)
            self.args = {A.DNNL_ARG_MULTIPLE_SRC + i: u[i] for i in range(3)}
            self.args.update({A.DNNL_ARG_SCALE | (A.DNNL_ARG_MULTIPLE_SRC + i): F([0.3])
                              for i in range(3)})
        elif case == "concat_s8":
            s = [x.view(np.int8) for x in u[:2]]
            self.p = dnnq.Concat(MD((1, 512, 56, 56), "s8"), 1, [MD(shape, "s8")] * 2)
            self.args = {A.DNNL_ARG_MULTIPLE_SRC: s[0], A.DNNL_ARG_MULTIPLE_SRC + 1: s[1]}
        elif case == "softmax_u8":
            x = rng.standard_normal((256, 1000)).astype(F)
            attr = PrimitiveAttr()
            attr.set_scales_mask(A.DNNL_ARG_DST, 0)
            self.p = dnnq.Softmax("softmax", MD(x.shape, "f32"), MD(x.shape, "u8"), 1, attr)
            self.args = {A.DNNL_ARG_SRC: x, A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: F([1 / 255])}
        else:
            attr = PrimitiveAttr()
            for arg in (A.DNNL_ARG_SRC, A.DNNL_ARG_DST):
                attr.set_scales_mask(arg, 0)
                attr.set_zero_points_mask(arg, 0)
            self.p = dnnq.Eltwise("gelu_erf", MD(shape, "u8"), MD(shape, "u8"), attr=attr)
            self.args = {A.DNNL_ARG_SRC: u[0], A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC: F([0.05]),
                         A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC: np.int32([128]),
                         A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: F([0.05]),
                         A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST: np.int32([20])}

    def time_execute(self, case):
        self.p.execute(self.args)


class GlobalAvgPool:
    """PP-OCRv4's global average pools: u8 nhwc (1, C, H, W) -> (1, C, 1, 1) with the folded
    requantize as a linear post-op (the window rows summed as byte streams, split over the
    threads: one output)."""

    params = (["96x184x240", "24x184x240", "480x6x120"], [1, 2])
    param_names = ["chw", "threads"]

    def setup(self, chw, threads):
        dnnq.set_num_threads(threads)
        C, H, W = map(int, chw.split("x"))
        x = np.random.default_rng(0).integers(0, 256, (1, H, W, C), dtype=np.uint8)
        ops = dnnq.PostOps()
        ops.append_eltwise("linear", 13.0, -1800.0)
        attr = PrimitiveAttr()
        attr.set_post_ops(ops)
        self.p = dnnq.Pooling("avg_exclude_padding", MD((1, C, H, W), "u8", "nhwc"),
                              MD((1, C, 1, 1), "u8", "nhwc"), kernel=(H, W), strides=1,
                              attr=attr)
        self.args = {A.DNNL_ARG_SRC: x.transpose(0, 3, 1, 2),
                     A.DNNL_ARG_DST: np.empty((1, 1, 1, C), np.uint8).transpose(0, 3, 1, 2)}
        self.nbytes = x.nbytes

    def time_execute(self, chw, threads):
        self.p.execute(self.args)

    def track_gbps(self, chw, threads):
        return _gbps(lambda: self.p.execute(self.args), self.nbytes)

    track_gbps.unit = "GB/s"
