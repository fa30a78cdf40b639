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
