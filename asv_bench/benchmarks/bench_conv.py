"""asv: int8 convolution on every ResNet-50 layer and MobileNet's depthwise layers (the issue's
target configuration: u8 x s8 -> u8, per-OC weight scales, f32 bias, relu, channels-last),
batch 1 and 8, 1 and 2 threads; plain nchw data (ResNet-50, MobileNet depthwise) for the
layout-cost comparison.  `track_*` report GOPS.  The ratio to oneDNN in the same process is
printed by
`python -P -m dnnq.bench --conv --dt=u8:s8:u8 resnet50 mobilenet_dw` (its argument array
built once)."""
import time

import numpy as np

import dnnq
from dnnq.bench.conv import RESNET50, MOBILENET_DW, build, with_batch


def _layers(descs):
    return [d for d in descs]


class _ConvBench:
    descs = []
    params = ([], [1, 8], [1, 2])
    param_names = ["layer", "mb", "threads"]
    tag = "nhwc"

    def setup(self, desc, mb, threads):
        dnnq.set_num_threads(threads)
        d = with_batch([desc], mb)[0]
        self.b = build(d, {"dt": "u8:s8:u8", "tag": self.tag}, np.random.default_rng(0),
                       tag=self.tag == "nhwc")
        self.p, self.args = self.b["p"], self.b["args"]
        self.p.execute(self.args)

    def time_execute(self, desc, mb, threads):
        self.p.execute(self.args)

    def track_gops(self, desc, mb, threads):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 0.2:
            self.p.execute(self.args)
            n += 1
        return self.b["ops"] * n / (time.perf_counter() - t0) / 1e9

    track_gops.unit = "GOPS"


class ConvResNet50(_ConvBench):
    params = (_layers(RESNET50), [1, 8], [1, 2])


class ConvMobileNetDepthwise(_ConvBench):
    params = (_layers(MOBILENET_DW), [1, 8], [1, 2])


class ConvResNet50Plain(_ConvBench):
    """The same layers with plain nchw data (transposed around the kernels)."""
    params = (_layers(RESNET50), [1], [1])
    tag = "nchw"


class ConvMobileNetDepthwisePlain(_ConvBench):
    """MobileNet's depthwise layers with plain nchw data: the flat kernel (AVX512-VBMI), else
    the column kernel or the copies (issue 9: at most 1.3x the channels-last time)."""
    params = (_layers(MOBILENET_DW), [1, 8], [1])
    tag = "nchw"


class ConvDstOffCacheLine:
    """A destination 16 bytes past a cache line (where numpy puts large arrays) against one on
    a line, at 2 threads: the time ratio (threads split rows where dst rows share lines
    between panels, docs/matmul.md; with the panel split ResNet-50's 64 -> 256 1x1 ran
    1.8x).  About 1.0 is right."""
    params = (['mb1ic64ih56oc256oh56kh1ph0n"s2_expand"',
               'mb1ic256ih56oc128oh28kh1sh2ph0n"s3_reduce_s2"',
               'mb1ic128ih28oc128oh28kh3ph1n"s3_3x3"'],)
    param_names = ["layer"]

    def setup(self, desc):
        dnnq.set_num_threads(2)
        b = build(desc, {"dt": "u8:s8:u8"}, np.random.default_rng(0))
        self.p, args = b["p"], b["args"]
        d = np.asarray(args[dnnq.DNNL_ARG_DST])
        self.keep, self.args = [], {}
        for off in (0, 16):
            raw = np.empty(d.nbytes + 128, np.uint8)
            base = (-raw.ctypes.data) % 64 + off
            view = np.lib.stride_tricks.as_strided(raw[base:base + d.nbytes].view(d.dtype),
                                                   d.shape, d.strides)
            a = dict(args)
            a[dnnq.DNNL_ARG_DST] = view
            self.keep.append(raw)
            self.args[off] = a

    def _best(self, a, rounds=5):
        best = float("inf")
        for _ in range(rounds):
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < 0.04:
                self.p.execute(a)
                n += 1
            best = min(best, (time.perf_counter() - t0) / n)
        return best

    def track_ratio_off_line_vs_on_line(self, desc):
        on = off = float("inf")
        for _ in range(3):  # interleaved rounds, the best of each
            on = min(on, self._best(self.args[0]))
            off = min(off, self._best(self.args[16]))
        return off / on

    track_ratio_off_line_vs_on_line.unit = "ratio"
