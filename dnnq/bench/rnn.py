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
the ratio (timed in interleaved rounds by dnnq.bench.registry), and PyTorch's dynamically quantized LSTM / GRU
(``quantize_dynamic``, f32 data) where installed; ``--mode=C`` compares the outputs with oneDNN instead (LSTM and GRU only: oneDNN
3.2 has no int8 LBR-GRU or vanilla RNN).
"""
import re

import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, DNNL_ARG_SRC_LAYER, DNNL_ARG_SRC_ITER,
                  DNNL_ARG_SRC_ITER_C, DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER,
                  DNNL_ARG_BIAS, DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C)
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.bench.problems import strip_name
from dnnq.bench.registry import Setting, choice

ALGS = {"VANILLA_LSTM": "lstm", "VANILLA_GRU": "gru", "LBR_GRU": "lbr_gru",
        "VANILLA_RNN": "vanilla"}
DIRECTIONS = {"left2right": "unidirectional_left2right",
              "right2left": "unidirectional_right2left", "concat": "bidirectional_concat",
              "sum": "bidirectional_sum"}
CFGS = ("u8u8u8u8", "u8u8u8f32", "f32u8f32u8", "f32u8f32f32")
KNOBS = {"alg": "VANILLA_LSTM", "direction": "left2right", "activation": "TANH",
         "cfg": "u8u8u8u8", "scaling": "per_oc"}
DATA_SCALE, DATA_SHIFT = 63.75, 128.0


def parse_rnn(desc):
    """'l1t50mb32sic512' -> dict(l, t, mb, sic, slc, dhc, dic, name)."""
    body, name = strip_name(desc.strip())
    vals = dict((k, int(v)) for k, v in re.findall(r"(mb|sic|slc|dhc|dic|l|t)(\d+)", body))
    if "sic" not in vals or not re.fullmatch(r"((mb|sic|slc|dhc|dic|l|t)\d+_?)+", body):
        raise InvalidArguments(f"rnn descriptor: got {desc!r}; expected lXtXmbXsicX[slcX]"
                               "[dhcX][dicX]")
    p = {"l": vals.get("l", 1), "t": vals.get("t", 1), "mb": vals.get("mb", 2),
         "sic": vals["sic"]}
    p["slc"] = vals.get("slc", p["sic"])
    p["dhc"] = vals.get("dhc", p["sic"])
    p["dic"] = vals.get("dic", p["dhc"])
    p["name"] = name
    p["desc"] = desc
    return p


def build(desc, knobs, rng):
    """The dnnq primitive, its execution args (packed weights) and the raw arrays."""
    d = desc if isinstance(desc, dict) else parse_rnn(desc)
    desc = d.get("desc", desc)
    alg = knobs.get("alg", KNOBS["alg"]).upper()
    if alg not in ALGS:
        raise Unimplemented(f"--alg={alg}: supported {', '.join(ALGS)}")
    cell = ALGS[alg]
    direction = DIRECTIONS.get(knobs.get("direction", KNOBS["direction"]).lower())
    if direction is None:
        raise InvalidArguments(f"--direction={knobs['direction']}: expected one of "
                               f"{', '.join(DIRECTIONS)}")
    cfg = knobs.get("cfg", KNOBS["cfg"]).lower()
    if cfg not in CFGS:
        raise Unimplemented(f"--cfg={cfg}: supported {', '.join(CFGS)}")
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
    import warnings
    with warnings.catch_warnings():   # torch.ao.quantization's deprecation notice
        warnings.simplefilter("ignore", DeprecationWarning)
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


def create_case(problem, settings, env):
    """The registry's ``create``: dnnq's primitive, the oneDNN peer (memories bound once) and
    PyTorch's dynamically quantized LSTM / GRU where installed."""
    from dnnq.bench.registry import Case
    b = build(problem, settings, env.rng)
    p, args = b["p"], b["args"]
    outs = (DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C)

    def run():
        o = p.execute(args)
        return [o[k] for k in outs if k in o]
    case = Case(kernel=p.impl_info, ops=b["ops"], dnnq=run)
    h = onednn_handle(env.onednn, b)
    if h is not None:
        case.peers["oneDNN"] = h.execute
        case.reference = lambda: list(h.execute())
        case.close = h.close
    else:
        why = env.onednn_absent if env.onednn is None else \
            f"oneDNN 3.2 has no int8 {b['cell']}" + (" with f32 states" if b["f32_states"]
                                                      else "")
        case.peers["oneDNN"] = why
        case.reference = why
    if not env.use_torch:
        case.peers["torch"] = "--no-peers"
    else:
        tq = torch_rnn(b, env.threads)
        case.peers["torch"] = tq if tq is not None else "no PyTorch / no such cell"
        if tq is not None:
            case.notes.append("torch: quantize_dynamic, f32 data")
    return case


def check_case(case):
    """Every output (dst_layer, dst_iter, dst_iter_c) bit for bit against oneDNN."""
    from dnnq.bench.registry import Unchecked
    ref = case.reference
    if ref is None or isinstance(ref, str):
        raise Unchecked(ref or "no reference")
    got, want = case.dnnq(), ref()
    equal = sum(g.size - _same(g, w) for g, w in zip(got, want))
    return equal, sum(g.size for g in got), ""


SETTINGS = {
    "alg": Setting("VANILLA_LSTM", "|".join(ALGS), "the cell", choice(*ALGS)),
    "direction": Setting("left2right", "|".join(DIRECTIONS), "the direction(s) of the layers",
                         choice(*DIRECTIONS)),
    "activation": Setting("TANH", "TANH|RELU|LOGISTIC", "the activation of VANILLA_RNN",
                          choice("TANH", "RELU", "LOGISTIC")),
    "cfg": Setting("u8u8u8u8", "|".join(CFGS), "benchdnn's data-type configuration: the last "
                   "part is dst_layer, a leading f32 the f32 states of the f32 mode",
                   choice(*CFGS)),
    "scaling": Setting("per_oc", "common|per_oc", "weights scales: one, or one per gate and "
                       "output channel", choice("common", "per_oc")),
}


def _register():
    from dnnq.bench.registry import register
    register("rnn", parse=parse_rnn, create=create_case, check=check_case,
             settings=SETTINGS, syntax='lXtXmbX_sicX_slcX_dhcX_dicX[_n"NAME"] (defaults l1, '
             't1, mb2; slc = sic, dhc = sic, dic = dhc)',
             example="l1t50mb32sic512 (one layer, 50 steps, batch 32, 512 channels)",
             summary=f"u8 data (scale {DATA_SCALE}, shift {DATA_SHIFT}), s8 weights with "
                     "per-gate-per-OC scales (--scaling), f32 bias; --cfg picks f32 states / "
                     "dst_layer")


_register()
