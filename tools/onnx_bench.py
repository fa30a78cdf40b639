"""dnnq.onnx against ONNX Runtime on the real models of tests/test_onnx_models.py.

    python -P tools/onnx_bench.py [--models ppocr_rec,ddddocr] [--threads 1,2] [--rounds 15]

Each model is quantized once by ONNX Runtime's quantize_static (QDQ, u8 activations, s8
per-channel weights; cached in --dir) and both runtimes run the same QDQ file on the same
input, batch 1, in one process, rounds interleaved (dnnq, ORT, dnnq, ...); the table gives the
median and the best time per run, and dnnq's session creation time. Needs the packages of
the test extra and the model packages (README). Not a test: timings depend on the machine
and its load.  The inputs have the sizes of issue 26's table: PP-OCRv4 det 1x3x736x960, rec
1x3x48x480, cls 1x3x48x192, ddddocr 1x1x64x192, silero 335 frames of 576 samples.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import _onnx_models as M  # noqa: E402


def inputs(name):
    if name == "ppocr_rec":
        return {"x": M.ppocr_input(M.render_text("Hello World 2026", 48, width=480))}
    if name == "ppocr_cls":
        return {"x": M.ppocr_input(M.render_text("Hello World 2026", 48, width=192))}
    if name == "ppocr_det":
        return {"x": M.ppocr_input(M.page(["Hello World 2026", "quantized ONNX models"],
                                          size=(960, 736)))}
    if name == "ddddocr":
        return {"input1": (M.render_text("a3Bx9", 64, gray=True, width=192)
                           .astype(np.float32) / 255)[None, None]}
    if name == "silero":
        sig = M.speech_like(seconds=12.1)  # 335 frames of 576 samples (36 ms)
        frames = np.ascontiguousarray(sig[:335 * 576].reshape(335, 576))
        z = np.zeros((1, 1, 128), np.float32)
        return {"input": frames, "h": z, "c": z}
    raise SystemExit(f"unknown model {name}")


def quantized(name, root):
    import onnx
    path = os.path.join(root, f"{name}.qdq.onnx")
    if not os.path.exists(path):
        src = M.model_path(name)
        if src is None:
            raise SystemExit(f"{name}: its package is not installed (README)")
        f32 = os.path.join(root, f"{name}.f32.onnx")
        onnx.save(M.prepare_f32(src), f32)
        M.quantize_qdq(f32, path, [inputs(name)])
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="ppocr_det,ppocr_rec,ppocr_cls,ddddocr,silero")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--no-spin", action="store_true",
                    help="ONNX Runtime's idle threads sleep instead of spinning (in one process "
                         "at 2 threads, each runtime's spinning workers slow the other's run)")
    ap.add_argument("--dir", default=os.path.join(os.path.expanduser("~"), ".cache",
                                                  "dnnq-onnx-bench"))
    a = ap.parse_args(argv)
    os.makedirs(a.dir, exist_ok=True)
    import logging
    logging.getLogger().setLevel(logging.ERROR)
    import onnxruntime as ort
    import dnnq.onnx as donnx
    print(f"{'model':10s} {'thr':>3s} {'dnnq ms':>9s} {'ORT ms':>9s} {'ratio':>6s} "
          f"{'best dnnq':>9s} {'best ORT':>9s} {'create s':>8s}")
    for name in a.models.split(","):
        path = quantized(name, a.dir)
        feed = inputs(name)
        for th in [int(t) for t in a.threads.split(",")]:
            t0 = time.perf_counter()
            ours = donnx.InferenceSession(path, threads=th)
            create = time.perf_counter() - t0
            so = ort.SessionOptions()
            so.intra_op_num_threads = th
            so.inter_op_num_threads = 1
            so.log_severity_level = 3
            if a.no_spin:  # ORT's idle workers sleep between runs (default: they spin)
                so.add_session_config_entry("session.intra_op.allow_spinning", "0")
            theirs = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            for s in (ours, theirs):  # warm-up (dnnq: plans dynamic shapes here)
                s.run(None, feed)
            td, to = [], []
            for _ in range(a.rounds):
                t = time.perf_counter()
                ours.run(None, feed)
                td.append(time.perf_counter() - t)
                t = time.perf_counter()
                theirs.run(None, feed)
                to.append(time.perf_counter() - t)
            md, mo = statistics.median(td) * 1e3, statistics.median(to) * 1e3
            print(f"{name:10s} {th:3d} {md:9.2f} {mo:9.2f} {md / mo:6.2f} {min(td) * 1e3:9.2f} "
                  f"{min(to) * 1e3:9.2f} {create:8.3f}", flush=True)


if __name__ == "__main__":
    main()
