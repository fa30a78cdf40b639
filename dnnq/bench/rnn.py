"""RNN problems for the driver (``--rnn``): benchdnn's descriptors and knobs, timed for dnnq and,
for int8 LSTM / GRU, for the real oneDNN in the same process (its memories bound once).

    python -P -m dnnq.bench --rnn --alg=VANILLA_LSTM l1t50mb32sic512 l1t20mb8sic1024
    python -P -m dnnq.bench --rnn --alg=VANILLA_GRU --direction=concat --mode=C l2t5mb3sic64
    python -P -m dnnq.bench --rnn --alg=VANILLA_RNN --activation=TANH l1t10mb4sic128

Descriptor ``lXtXmbX_sicX_slcX_dhcX_dicX_n"NAME"`` (defaults l1, t1, mb2; slc = sic, dhc = sic,
dic = dhc).  Knobs: ``--alg=VANILLA_LSTM|VANILLA_GRU|LBR_GRU|VANILLA_RNN``,
``--direction=left2right|right2left|concat|sum``, ``--activation=RELU|TANH|LOGISTIC`` (vanilla
RNN), ``--cfg=u8u8u8u8|u8u8u8f32|f32u8f32u8|f32u8f32f32`` (benchdnn's names: the last part is
dst_layer, a leading f32 the f32 states of the f32 mode), ``--scaling=common|per_oc`` (weights
scales).  Data quantization as benchdnn: scale 63.75 (u8 range / the f32 range [-2, 2]), shift
128.  The output line gives the time, GOPS (2 * multiply-adds of both GEMMs), oneDNN's time and
the ratio (the two timed in alternation), and PyTorch's dynamically quantized LSTM / GRU
(``quantize_dynamic``, f32 data) where installed; ``--mode=C`` compares the outputs with oneDNN instead (LSTM and GRU only: oneDNN
3.2 has no int8 LBR-GRU or vanilla RNN).
"""
import re
import time

import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, DNNL_ARG_SRC_LAYER, DNNL_ARG_SRC_ITER,
                  DNNL_ARG_SRC_ITER_C, DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER,
                  DNNL_ARG_BIAS, DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C)
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.bench.problems import strip_name

ALGS = {"VANILLA_LSTM": "lstm", "VANILLA_GRU": "gru", "LBR_GRU": "lbr_gru",
        "VANILLA_RNN": "vanilla"}
DIRECTIONS = {"left2right": "unidirectional_left2right",
              "right2left": "unidirectional_right2left", "concat": "bidirectional_concat",
              "sum": "bidirectional_sum"}
KNOBS = {"alg": "VANILLA_LSTM", "direction": "left2right", "activation": "TANH",
         "cfg": "u8u8u8u8", "scaling": "per_oc"}
DATA_SCALE, DATA_SHIFT = 63.75, 128.0


def parse_rnn(desc):
    """'l1t50mb32sic512' -> dict(l, t, mb, sic, slc, dhc, dic, name)."""
    body, name = strip_name(desc.strip())
    vals = dict((k, int(v)) for k, v in re.findall(r"(mb|sic|slc|dhc|dic|l|t)(\d+)", body))
    if "sic" not in vals:
        raise InvalidArguments(f"rnn descriptor: got {desc!r}; expected lXtXmbXsicX[slcX]"
                               "[dhcX][dicX]")
    p = {"l": vals.get("l", 1), "t": vals.get("t", 1), "mb": vals.get("mb", 2),
         "sic": vals["sic"]}
    p["slc"] = vals.get("slc", p["sic"])
    p["dhc"] = vals.get("dhc", p["sic"])
    p["dic"] = vals.get("dic", p["dhc"])
    p["name"] = name
    return p


def build(desc, knobs, rng):
    """The dnnq primitive, its execution args (packed weights) and the raw arrays."""
    d = parse_rnn(desc)
    alg = knobs.get("alg", KNOBS["alg"]).upper()
    if alg not in ALGS:
        raise Unimplemented(f"--alg={alg}: supported {', '.join(ALGS)}")
    cell = ALGS[alg]
    direction = DIRECTIONS.get(knobs.get("direction", KNOBS["direction"]).lower())
    if direction is None:
        raise InvalidArguments(f"--direction={knobs['direction']}: expected one of "
                               f"{', '.join(DIRECTIONS)}")
    cfg = knobs.get("cfg", KNOBS["cfg"]).lower()
    if cfg not in ("u8u8u8u8", "u8u8u8f32", "f32u8f32u8", "f32u8f32f32"):
        raise Unimplemented(f"--cfg={cfg}: supported u8u8u8u8, u8u8u8f32, f32u8f32u8, "
                            "f32u8f32f32")
    L, T, N, C, H = d["l"], d["t"], d["mb"], d["slc"], d["dhc"]
    if d["dic"] != H:
        raise Unimplemented(f"{desc}: dic different from dhc (projection) is not supported")
    SIC = d["sic"]
    D = 2 if direction.startswith("bidirectional") else 1
    G = {"lstm": 4, "gru": 3, "lbr_gru": 3, "vanilla": 1}[cell]
    nb = G + (cell == "lbr_gru")
    f32_states = cfg.startswith("f32")
    data_dt = "f32" if f32_states else "u8"
    dl_dt = "f32" if cfg.endswith("f32") or f32_states else "u8"
    per_oc = knobs.get("scaling", KNOBS["scaling"]).lower() == "per_oc"
    b = {"cell": cell, "direction": direction, "L": L, "T": T, "N": N, "C": C, "H": H,
         "G": G, "dl_dt": dl_dt}
    if f32_states:
        x = rng.uniform(-2, 2, (T, N, C)).astype(np.float32)
        h0 = rng.uniform(-1, 1, (L, D, N, SIC)).astype(np.float32)
    else:
        x = rng.integers(0, 256, (T, N, C), dtype=np.uint8)
        h0 = rng.integers(0, 256, (L, D, N, SIC), dtype=np.uint8)
    wl = rng.integers(-127, 128, (L, D, C, G, H), dtype=np.int8)
    wi = rng.integers(-127, 128, (L, D, SIC, G, H), dtype=np.int8)
    bias = rng.standard_normal((L, D, nb, H)).astype(np.float32)
    base = np.float32(2.0 * np.sqrt(C + H) * 127.0 / 4.0)
    ws = (rng.uniform(0.5, 2.0, G * H) * base if per_oc else np.array([base])).astype(np.float32)
    c0 = rng.standard_normal((L, D, N, H)).astype(np.float32) if cell == "lstm" else None
    attr = PrimitiveAttr()
    attr.set_rnn_data_qparams(DATA_SCALE, DATA_SHIFT)
    attr.set_rnn_weights_qparams(24 if per_oc else 0, ws)
    st = MemoryDesc((L, D, N, SIC), data_dt)
    dst_st = MemoryDesc((L, D, N, H), data_dt)
    stc = MemoryDesc((L, D, N, H), "f32")
    dlc = H * (2 if direction == "bidirectional_concat" else 1)
    descs = (MemoryDesc((T, N, C), data_dt), st, MemoryDesc(wl.shape, "s8"),
             MemoryDesc(wi.shape, "s8"), MemoryDesc(bias.shape, "f32"),
             MemoryDesc((T, N, dlc), dl_dt), dst_st)
    if cell == "lstm":
        p = dnnq.LSTM(direction, descs[0], st, stc, *descs[2:6], dst_st, stc, attr=attr)
    elif cell == "gru":
        p = dnnq.GRU(direction, *descs, attr=attr)
    elif cell == "lbr_gru":
        p = dnnq.LBRGRU(direction, *descs, attr=attr)
    else:
        act = knobs.get("activation", KNOBS["activation"]).lower()
        p = dnnq.VanillaRNN(act, direction, *descs, attr=attr)
    args = {DNNL_ARG_SRC_LAYER: x, DNNL_ARG_SRC_ITER: h0, DNNL_ARG_BIAS: bias}
    if c0 is not None:
        args[DNNL_ARG_SRC_ITER_C] = c0
    args.update(p.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: wl, DNNL_ARG_WEIGHTS_ITER: wi}))
    for arg, desc_ in ((DNNL_ARG_DST_LAYER, p.dst_layer_desc), (DNNL_ARG_DST_ITER,
                       p.dst_iter_desc), (DNNL_ARG_DST_ITER_C, p.dst_iter_c_desc)):
        if desc_ is not None:
            args[arg] = desc_.empty()
    b.update(p=p, args=args, x=x, h0=h0, c0=c0, wl=wl, wi=wi, bias=bias, ws=ws,
             mask=24 if per_oc else 0, f32_states=f32_states)
    # multiply-adds: the layer GEMM and the recurrent GEMM of every step, layer and direction
    b["ops"] = 2.0 * L * D * T * N * G * H * (C + SIC)
    return b


def onednn_handle(ref, b):
    """oneDNN's int8 LSTM / GRU on the same problem (u8 states), or None where it has none."""
    if ref is None or b["cell"] not in ("lstm", "gru") or b["f32_states"]:
        return None
    return ref.RnnHandle(b["cell"], b["x"], b["h0"], b["c0"], b["wl"], b["wi"], b["bias"],
                         data_scale=DATA_SCALE, data_shift=DATA_SHIFT, wei_scales=b["ws"],
                         wei_scale_mask=b["mask"], dst_layer_dt=b["dl_dt"],
                         direction=b["direction"])


def paired_best_time(f, g, min_time, rounds=8):
    """Best times of f and of g, timed in alternation (a batch of f, then a batch of g, for
    `rounds` rounds): on a shared machine the load changes during a run, and alternating
    exposes both to the same conditions."""
    f(), g()
    t0 = time.perf_counter()
    f()
    once = time.perf_counter() - t0
    n = max(1, int(min_time / rounds / max(once, 1e-6)))
    bf = bg = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        bf = min(bf, (time.perf_counter() - t0) / n)
        t0 = time.perf_counter()
        for _ in range(n):
            g()
        bg = min(bg, (time.perf_counter() - t0) / n)
    return bf, bg


def torch_rnn(b, threads):
    """PyTorch's dynamically quantized LSTM / GRU (``quantize_dynamic``, qint8 weights, f32
    data quantized per call) on the same shapes, or None without PyTorch / for other cells."""
    if b["cell"] not in ("lstm", "gru") or b["direction"] == "bidirectional_sum":
        return None
    try:
        import torch
    except ImportError:
        return None
    if threads:
        torch.set_num_threads(threads)
    cls = torch.nn.LSTM if b["cell"] == "lstm" else torch.nn.GRU
    bidir = b["direction"] == "bidirectional_concat"
    model = cls(b["C"], b["H"], num_layers=b["L"], bidirectional=bidir)
    q = torch.ao.quantization.quantize_dynamic(model, {cls}, dtype=torch.qint8)
    x = torch.from_numpy(np.random.default_rng(1).uniform(-2, 2, (b["T"], b["N"], b["C"]))
                         .astype(np.float32))

    def run():
        with torch.no_grad():
            return q(x)
    return run


def _same(a, b):
    if a.dtype == np.float32:
        return int(np.count_nonzero(a.view(np.int32) != b.view(np.int32)))
    return int(np.count_nonzero(a != b))


def run_problems(problems, min_time, ref, best_time, use_torch=True, threads=None):
    """problems: (desc, knobs) pairs; best_time(fn, min_time) -> seconds.  Returns the number
    of failures (errors, or outputs that differ from oneDNN)."""
    rng = np.random.default_rng(0)
    print(f"{'rnn problem':30s} {'kernel':28s} {'dnnq us':>9s} {'GOPS':>7s} "
          f"{'oneDNN us':>10s} {'ratio':>6s} {'torch us':>9s} {'ratio':>6s}")
    failures = 0
    for desc, knobs in problems:
        label = f"{knobs.get('alg', KNOBS['alg'])[:12]}:{desc}"[:30]
        try:
            b = build(desc, knobs, rng)
        except dnnq.DnnqError as e:
            print(f"{label:30s} {type(e).__name__}: {e}")
            failures += 1
            continue
        p, args = b["p"], b["args"]
        h = onednn_handle(ref, b)
        if knobs.get("mode", "P").upper() == "C":
            if h is None:
                print(f"{label:30s} {p.impl_info:28s} no oneDNN int8 {b['cell']} to compare with")
                continue
            out = p.execute(args)
            want = h.execute()
            got = [out[k] for k in (DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C)
                   if k in out]
            bad = sum(_same(g, w) for g, w in zip(got, want))
            total = sum(g.size for g in got)
            failures += bad > 0
            print(f"{label:30s} {p.impl_info:28s} {'PASSED' if not bad else 'FAILED'}: "
                  f"{total - bad} of {total} elements bit-identical to oneDNN")
            h.close()
            continue
        run = lambda: p.execute(args)  # noqa: E731
        if h is None:
            t = best_time(run, min_time)
        else:
            t, t_ref = paired_best_time(run, h.execute, min_time)
        line = f"{label:30s} {p.impl_info:28s} {t * 1e6:9.1f} {b['ops'] / t / 1e9:7.0f}"
        if h is not None:
            line += f" {t_ref * 1e6:10.1f} {t / t_ref:6.2f}"
            h.close()
        else:
            line += f" {'-':>10s} {'-':>6s}"
        tq = torch_rnn(b, threads) if use_torch else None
        if tq is not None:
            t_torch = paired_best_time(run, tq, min_time)[1]
            line += f" {t_torch * 1e6:9.1f} {t / t_torch:6.2f}"
        print(line)
    return failures
