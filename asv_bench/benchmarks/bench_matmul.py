"""asv: int8 MatMul on BERT-base shapes and an LSTM-gate shape (u8 x s8 -> s8, per-N weight
scales, f32 bias), 1 and 2 threads, with oneDNN 3.2 (dnnq.testing) in the same process.

* ``time_execute``: one dnnq ``execute`` (asv's own timing loop);
* ``track_gops``: dnnq's GOPS, best of 5 timed batches;
* ``track_ratio_vs_onednn``: dnnq time / oneDNN time, both measured here with the same
  method (best of 5 batches, batches interleaved so that a busy machine slows both); oneDNN
  is capped at dnnq's ISA level and timed as a C++ caller runs it (argument array built
  once: ``MatmulHandle.runner()``).  The figure docs/STATUS.md quotes;
* ``track_exact_vs_numpy`` / ``track_exact_vs_onednn``: correctness guards (1 = the output is
  bit-identical to an independent numpy model / to oneDNN); a 0 is a bug, whatever the speed.

The minimum over batches (not asv's median) is what makes the 2-thread figures usable on a
shared machine: a batch disturbed by other work only ever comes out slower.
"""
import os

import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                  DNNL_ARG_BIAS, DNNL_ARG_SCALE)
from dnnq.bench.timing import best_time

SHAPES = [(1, 768, 768), (1, 768, 3072), (128, 768, 768), (128, 768, 3072), (512, 768, 768),
          (512, 768, 3072), (512, 3072, 768), (32, 512, 2048)]
_ONEDNN_ISA = {"default": "SSE41", "avx2": "AVX2", "avx2_vnni": "AVX2_VNNI",
               "avx512_core_vnni": "AVX512_CORE_VNNI", "avx512_core_amx": "AVX512_CORE_AMX"}


def _bridge():
    """dnnq.testing with oneDNN capped at dnnq's level (set before oneDNN's first primitive)."""
    os.environ.setdefault("ONEDNN_MAX_CPU_ISA", _ONEDNN_ISA[dnnq.get_effective_cpu_isa()])
    from dnnq import testing
    testing.require()  # raises with the install command when oneDNN is absent
    return testing


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
    timeout = 180
    # more, shorter samples: asv's statistics then see through a busy neighbour
    repeat = (5, 20, 20.0)

    def setup(self, shape, threads):
        dnnq.set_num_threads(threads)
        self.p, self.args, self.w = _setup(*shape)

    def teardown(self, shape, threads):
        if getattr(self, "handle", None) is not None:
            self.handle.close()

    def _onednn(self):
        """oneDNN's handle on the same arrays (created on first use)."""
        if getattr(self, "handle", None) is None:
            a = self.args
            self.handle = _bridge().MatmulHandle(
                a[DNNL_ARG_SRC], self.w, a[DNNL_ARG_BIAS], "s8",
                src_scales=a[DNNL_ARG_SCALE | DNNL_ARG_SRC], src_scale_mask=0,
                wei_scales=a[DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS], wei_scale_mask=2,
                dst_scales=a[DNNL_ARG_SCALE | DNNL_ARG_DST], dst_scale_mask=0)
        return self.handle

    def time_execute(self, shape, threads):
        self.p.execute(self.args)

    def track_gops(self, shape, threads):
        M, K, N = shape
        return 2 * M * K * N / best_time(lambda: self.p.execute(self.args), 0.2) / 1e9

    track_gops.unit = "GOPS"

    def track_ratio_vs_onednn(self, shape, threads):
        """dnnq time / oneDNN time (< 1: dnnq faster), best of 3 interleaved rounds each."""
        run_ref = self._onednn().runner()
        run_dnnq = lambda: self.p.execute(self.args)  # noqa: E731
        t_dnnq, t_ref = [], []
        for _ in range(3):
            t_dnnq.append(best_time(run_dnnq, 0.1))
            t_ref.append(best_time(run_ref, 0.1))
        return min(t_dnnq) / min(t_ref)

    track_ratio_vs_onednn.unit = "dnnq time / oneDNN time"

    def track_exact_vs_numpy(self, shape, threads):
        """1 when the result equals the numpy model bit for bit."""
        a = self.args
        out = self.p.execute(a)
        acc = a[DNNL_ARG_SRC].astype(np.int64) @ self.w.astype(np.int64)
        s = np.float32(0.05) * a[DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS]
        v = acc.astype(np.float32) * s + a[DNNL_ARG_BIAS]
        ref = np.clip(np.rint(v * (np.float32(1) / np.float32(0.5))), -128, 127).astype(np.int8)
        return int(np.array_equal(out, ref))

    def track_exact_vs_onednn(self, shape, threads):
        """1 when the result equals oneDNN 3.2's bit for bit."""
        out = self.p.execute(self.args)
        return int(np.array_equal(out, self._onednn().execute()))


class OnednnMarshalling:
    """What the old way of timing oneDNN added per call (microseconds), on the small shapes
    where it shows (on big ones it drowns in the noise): the bridge handle's ``execute()``,
    which rebuilds the ctypes argument array and looks its C functions up on every call,
    minus ``runner()``, which corresponds to a C++ caller's loop.  1 thread."""

    params = ([(1, 64, 64), (1, 768, 768)],)
    param_names = ["M_K_N"]
    timeout = 120

    def setup(self, shape):
        dnnq.set_num_threads(1)
        case = MatMulInt8()
        case.setup(shape, 1)
        self.handle = case._onednn()

    def teardown(self, shape):
        self.handle.close()

    def track_onednn_marshalling_us(self, shape):
        run_ref = self.handle.runner()
        old, new = [], []
        for _ in range(3):
            old.append(best_time(self.handle.execute, 0.1))
            new.append(best_time(run_ref, 0.1))
        return (min(old) - min(new)) * 1e6

    track_onednn_marshalling_us.unit = "us per call"


class MatMulGeluPostOp:
    """What a GELU post-op costs on a transformer feed-forward input layer (576 x 384 x 1536,
    u8 dst, 1 thread): ``track_added_ms`` is best time with the post-op minus best time
    without, batches interleaved (docs/matmul.md quotes it).  ``isa`` "avx2" shows the
    generic (libm) epilogue next to the vectorised AVX-512 one."""
    params = (["gelu_erf", "gelu_tanh"], ["best", "avx2"])
    param_names = ["alg", "isa"]
    timeout = 120

    def setup(self, alg, isa):
        from dnnq import PostOps
        dnnq.set_num_threads(1)
        previous = dnnq.set_max_cpu_isa(isa) if isa != "best" else None
        try:
            self.plain = _setup(576, 384, 1536)[:2]
            p, args, _ = _setup(576, 384, 1536)
            attr = PrimitiveAttr()
            attr.set_scales_mask(DNNL_ARG_SRC, 0)
            attr.set_scales_mask(DNNL_ARG_WEIGHTS, 2)
            attr.set_scales_mask(DNNL_ARG_DST, 0)
            ops = PostOps()
            ops.append_eltwise(alg)
            attr.set_post_ops(ops)
            w = np.random.default_rng(0).integers(-128, 128, (384, 1536), dtype=np.int8)
            g = dnnq.MatMul(MemoryDesc((576, 384), "u8"), MemoryDesc((384, 1536), "s8"),
                            MemoryDesc((576, 1536), "s8"), MemoryDesc((1, 1536), "f32"), attr=attr)
            self.gelu = g, {**args, DNNL_ARG_WEIGHTS: g.prepare_weights(w)}
        finally:
            if previous is not None:
                dnnq.set_max_cpu_isa(previous)

    def track_added_ms(self, alg, isa):
        t_plain, t_gelu = [], []
        for _ in range(3):
            t_plain.append(best_time(lambda: self.plain[0].execute(self.plain[1]), 0.1))
            t_gelu.append(best_time(lambda: self.gelu[0].execute(self.gelu[1]), 0.1))
        return 1e3 * (min(t_gelu) - min(t_plain))

    track_added_ms.unit = "ms"
