"""dnnq.onnx against OpenVINO's int8 variants on the real models (issue 27's comparison).

    python -P tools/openvino_bench.py [--models ppocr_cls,silero] [--threads 1] [--rounds 7]
                                      [--only dnnq|openvino]

Per model (inputs of tools/onnx_bench.py, batch 1), the variants timed:

- ``dnnq int8``      dnnq on ORT's all-ops QDQ file (quantize_static, u8 / s8 per channel;
                     the session's default rounding for it: ONNX Runtime's arithmetic)
- ``dnnq int8 conv`` dnnq on the conv-only QDQ file (Conv / ConvTranspose / MatMul / Gemm)
- ``dnnq int8 own``  dnnq on its own int8 model: ``dnnq.onnx.quantize`` of the f32 model
                     (default op types, LSTM / GRU / RNN too; calibrated on the same input;
                     its default rounding: once per fused chain)
- ``dnnq f32``       dnnq on the f32 file
- ``OV f32``         OpenVINO's CPU plugin on the f32 file (f32 inference precision)
- ``OV int8``        OpenVINO on the all-ops QDQ file
- ``OV int8 conv``   OpenVINO on the conv-only QDQ file
- ``OV NNCF``        OpenVINO on its own int8 model: ``nncf.quantize`` of the f32 model
                     (OpenVINO backend, calibrated on the same input)

Rounds are interleaved in one process (``--only`` keeps one runtime per process: at two
threads each runtime's spinning workers slow the other's).  The table gives the best time per
run of the rounds, dnnq's all-ops int8 time and dnnq's best int8 variant's time over OpenVINO's
best int8 variant's (each runtime's own quantizer's model among them).  Needs the test
extra, openvino and nncf (pip), and the model packages (README).  Not a test.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import onnx_bench as B  # noqa: E402
import _onnx_models as M  # noqa: E402

CONV_OPS = ["Conv", "ConvTranspose", "MatMul", "Gemm"]


def files(name, root):
    """(f32, all-ops QDQ, conv-only QDQ) paths, made once in ``root``."""
    qdq = B.quantized(name, root)
    f32 = os.path.join(root, f"{name}.f32.onnx")
    conv = os.path.join(root, f"{name}.qdq_conv.onnx")
    if not os.path.exists(conv):
        M.quantize_qdq(f32, conv, [B.inputs(name)], op_types=CONV_OPS)
    return f32, qdq, conv


def own_model(f32, feed, root, name):
    """dnnq.onnx.quantize's model of the f32 file (its recurrent ops too), made once."""
    import onnx
    import dnnq.onnx as donnx
    path = os.path.join(root, f"{name}.dnnq_own.onnx")
    if not os.path.exists(path):
        ops = CONV_OPS + ["LSTM", "GRU", "RNN"]
        onnx.save(donnx.quantize(f32, [feed], op_types=ops), path)
    return path


def ov_runner(model, threads, feed):
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", {
        "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    return lambda: req.infer(feed)


def nncf_model(f32, feed, root, name):
    import nncf
    import openvino as ov
    path = os.path.join(root, f"{name}.nncf.xml")
    if os.path.exists(path):
        return ov.Core().read_model(path)
    model = ov.convert_model(f32)
    q = nncf.quantize(model, nncf.Dataset([feed]), subset_size=1)
    ov.save_model(q, path)
    return q


def variants(name, root, threads, only):
    feed = B.inputs(name)
    f32, qdq, conv = files(name, root)
    out = {}
    if only in (None, "dnnq"):
        import dnnq.onnx as donnx
        own = own_model(f32, feed, root, name)
        for label, path in (("dnnq int8", qdq), ("dnnq int8 conv", conv),
                            ("dnnq int8 own", own), ("dnnq f32", f32)):
            s = donnx.InferenceSession(path, threads=threads)
            out[label] = (lambda s=s: s.run(None, feed))
    if only in (None, "openvino"):
        try:
            import openvino  # noqa: F401
        except ImportError:
            return out
        for label, path in (("OV f32", f32), ("OV int8", qdq), ("OV int8 conv", conv)):
            try:
                out[label] = ov_runner(path, threads, feed)
            except Exception as exc:  # noqa: BLE001 - a model OpenVINO refuses
                print(f"{name}: {label} refused: {str(exc).splitlines()[0][:80]}")
        try:
            out["OV NNCF"] = ov_runner(nncf_model(f32, feed, root, name), threads, feed)
        except ImportError:
            pass
        except Exception as exc:  # noqa: BLE001
            print(f"{name}: OV NNCF failed: {str(exc).splitlines()[0][:80]}")
    return out


def best_times(runs, rounds):
    for fn in runs.values():  # warm-up: first-run planning, page faults
        for _ in range(3):
            fn()
    calls = {}
    for label, fn in runs.items():
        t0 = time.perf_counter()
        fn()
        calls[label] = max(3, int(0.3 / max(time.perf_counter() - t0, 1e-5)))
    best = {label: float("inf") for label in runs}
    for _ in range(rounds):
        for label, fn in runs.items():
            t0 = time.perf_counter()
            for _ in range(calls[label]):
                fn()
            best[label] = min(best[label], (time.perf_counter() - t0) / calls[label])
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="ppocr_det,ppocr_rec,ppocr_cls,ddddocr,silero")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", choices=("dnnq", "openvino"))
    ap.add_argument("--dir", default=os.path.join(os.path.expanduser("~"), ".cache",
                                                  "dnnq-onnx-bench"))
    a = ap.parse_args(argv)
    os.makedirs(a.dir, exist_ok=True)
    import logging
    logging.getLogger().setLevel(logging.ERROR)
    for threads in [int(t) for t in a.threads.split(",")]:
        for name in a.models.split(","):
            best = best_times(variants(name, a.dir, threads, a.only), a.rounds)
            cells = "  ".join(f"{k} {v * 1e3:.3f}" for k, v in best.items())
            print(f"{name} {threads}t (ms): {cells}", flush=True)
            ov = [v for k, v in best.items() if k.startswith("OV ") and "f32" not in k]
            ours = {k: v for k, v in best.items() if k.startswith("dnnq int8")}
            if ov and ours:
                top = min(ours, key=ours.get)
                print(f"  dnnq int8 / OpenVINO's best int8: {best['dnnq int8'] / min(ov):.2f}; "
                      f"dnnq's best int8 ({top}) / OpenVINO's best int8: "
                      f"{ours[top] / min(ov):.2f}; dnnq int8 / dnnq f32: "
                      f"{best['dnnq int8'] / best['dnnq f32']:.2f}", flush=True)


if __name__ == "__main__":
    main()
