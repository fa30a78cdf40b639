"""Convolution / deconvolution problems for the driver (``--conv``, ``--deconv``): benchdnn's
descriptor grammar with its defaults, the built-in layer sets (``resnet50``, ``mobilenet``,
``mobilenet_dw``), benchdnn's attribute settings (--attr-scales, --attr-zero-points,
--attr-post-ops) given alike to dnnq and oneDNN, and the timing of dnnq against oneDNN 3.2 (its
argument array built once) and PyTorch's quantized Conv2d where installed.

Default configuration (issue 9's target): u8 x s8 -> u8, per-OC weight scales, f32 bias, relu,
channels-last data."""
import re

import numpy as np

import dnnq
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.bench.problems import mask_of, parse_post_ops, parse_quant, strip_name
from dnnq.bench.registry import Setting, choice, register, register_set, split_dt

# ---- descriptors --------------------------------------------------------------------------

_KEYS = ("g", "mb", "ic", "id", "ih", "iw", "oc", "od", "oh", "ow", "kd", "kh", "kw", "sd", "sh",
         "sw", "pd", "ph", "pw", "dd", "dh", "dw")


def parse_conv(desc, deconv=False):
    """benchdnn's `gXmbX_icXidXihXiwX_ocXodXohXowX_kdXkhXkwX_sdXshXswX_pdXphXpwX_ddXdhXdwX`
    -> dict of the full geometry (keys above plus `nsp`, `pr` per spatial dim, `name`).

    Defaults as benchdnn: g1, mb2, stride 1, dilation 0, padding 0; missing W values copy H
    (and H copies D); an omitted output size is deduced from the others, an omitted padding
    from the output size (the right padding always is)."""
    body, name = strip_name(desc.strip())
    vals = {}
    if not re.fullmatch(r"([a-z]+\d+)+", body.replace("_", "")):
        raise InvalidArguments(f"conv descriptor {desc!r}: expected entries NAME<integer> "
                               f"({', '.join(_KEYS)}), e.g. mb1ic64ih56oc64oh56kh3ph1")
    for k, v in re.findall(r"([a-z]+)(\d+)", body.replace("_", "")):
        if k not in _KEYS:
            raise InvalidArguments(f"conv descriptor {desc!r}: unknown entry {k!r}; expected "
                                   f"{', '.join(_KEYS)}")
        vals[k] = int(v)
    if "ic" not in vals or "oc" not in vals:
        raise InvalidArguments(f"conv descriptor {desc!r}: ic and oc are required")
    if not ("iw" in vals or "ih" in vals or "id" in vals):
        raise InvalidArguments(f"conv descriptor {desc!r}: give at least one of id, ih, iw")
    nsp = 3 if "id" in vals or "od" in vals or "kd" in vals else \
        2 if "ih" in vals or "oh" in vals or "kh" in vals else 1
    dims = "dhw"[3 - nsp:]
    g = {"g": vals.get("g", 1), "mb": vals.get("mb", 2), "ic": vals["ic"], "oc": vals["oc"],
         "nsp": nsp, "name": name}
    # W <- H <- D promotion, per entry kind
    for pre in ("i", "o", "k", "s", "p", "d"):
        prev = None
        for d in dims:
            key = pre + d
            if key in vals:
                prev = vals[key]
            elif prev is not None:
                vals[key] = prev
    for d in dims:
        k, s, dl = vals.get("k" + d, 1), vals.get("s" + d, 1), vals.get("d" + d, 0)
        ext = (k - 1) * (dl + 1) + 1
        i = vals.get("i" + d)
        o = vals.get("o" + d)
        p = vals.get("p" + d)
        if i is None:
            raise InvalidArguments(f"conv descriptor {desc!r}: i{d} missing")
        if deconv:
            if o is None:
                o = (i - 1) * s - 2 * (p or 0) + ext
            if p is None:
                p = max(0, ((i - 1) * s + ext - o) // 2)
            pr = (i - 1) * s + ext - o - p
        else:
            if o is None:
                o = (i + 2 * (p or 0) - ext) // s + 1
            if p is None:
                p = max(0, ((o - 1) * s + ext - i) // 2)
            pr = (o - 1) * s + ext - i - p
            if pr < 0 and (i + p - ext) // s + 1 == o:
                pr = 0  # benchdnn's deduced negative right padding: the same output size
        g.update({"i" + d: i, "o" + d: o, "k" + d: k, "s" + d: s, "p" + d: p, "d" + d: dl,
                  "pr" + d: pr})
    return g


def conv_descs(geo, src_dt, dst_dt, tag=True, deconv=False, wei_dt="s8"):
    """(src, weights, dst, bias) MemoryDescs and the keyword geometry of a parsed problem."""
    nsp = geo["nsp"]
    dims = "dhw"[3 - nsp:]
    isp = tuple(geo["i" + d] for d in dims)
    osp = tuple(geo["o" + d] for d in dims)
    ks = tuple(geo["k" + d] for d in dims)
    G, IC, OC = geo["g"], geo["ic"], geo["oc"]
    cl = {1: "nwc", 2: "nhwc", 3: "ndhwc"}[nsp] if tag else None
    wdims = ((G, OC // G, IC // G) if G > 1 else (OC, IC)) + ks
    M = dnnq.MemoryDesc
    kw = dict(strides=tuple(geo["s" + d] for d in dims),
              padding_l=tuple(geo["p" + d] for d in dims),
              padding_r=tuple(geo["pr" + d] for d in dims),
              dilates=tuple(geo["d" + d] for d in dims))
    return (M((geo["mb"], IC) + isp, src_dt, cl), M(wdims, wei_dt),
            M((geo["mb"], OC) + osp, dst_dt, cl), M((OC,), "f32"), kw)


def conv_ops(geo):
    nsp = geo["nsp"]
    dims = "dhw"[3 - nsp:]
    return 2 * geo["mb"] * geo["oc"] * (geo["ic"] // geo["g"]) * int(np.prod(
        [geo["o" + d] * geo["k" + d] for d in dims]))


# ---- the built-in sets (unique layer geometries; `*n` = how often the layer repeats) -------

#: ResNet-50 v1 at batch 1: the 7x7 stem, then per stage the 1x1 reduce / 3x3 / 1x1 expand and
#: the strided projections (stride on the 1x1, as in v1).
RESNET50 = [
    'mb1ic3ih224oc64oh112kh7sh2ph3n"stem_7x7s2"',
    'mb1ic64ih56oc64oh56kh1ph0n"s2_reduce_first"',
    'mb1ic64ih56oc64oh56kh3ph1n"s2_3x3*3"',
    'mb1ic64ih56oc256oh56kh1ph0n"s2_expand*4"',
    'mb1ic256ih56oc64oh56kh1ph0n"s2_reduce*2"',
    'mb1ic256ih56oc128oh28kh1sh2ph0n"s3_reduce_s2"',
    'mb1ic256ih56oc512oh28kh1sh2ph0n"s3_project_s2"',
    'mb1ic128ih28oc128oh28kh3ph1n"s3_3x3*4"',
    'mb1ic128ih28oc512oh28kh1ph0n"s3_expand*4"',
    'mb1ic512ih28oc128oh28kh1ph0n"s3_reduce*3"',
    'mb1ic512ih28oc256oh14kh1sh2ph0n"s4_reduce_s2"',
    'mb1ic512ih28oc1024oh14kh1sh2ph0n"s4_project_s2"',
    'mb1ic256ih14oc256oh14kh3ph1n"s4_3x3*6"',
    'mb1ic256ih14oc1024oh14kh1ph0n"s4_expand*6"',
    'mb1ic1024ih14oc256oh14kh1ph0n"s4_reduce*5"',
    'mb1ic1024ih14oc512oh7kh1sh2ph0n"s5_reduce_s2"',
    'mb1ic1024ih14oc2048oh7kh1sh2ph0n"s5_project_s2"',
    'mb1ic512ih7oc512oh7kh3ph1n"s5_3x3*3"',
    'mb1ic512ih7oc2048oh7kh1ph0n"s5_expand*3"',
    'mb1ic2048ih7oc512oh7kh1ph0n"s5_reduce*2"',
]

#: MobileNet v1 (224x224) at batch 1: the 3x3 stride-2 stem, every depthwise 3x3 (stride 1
#: and 2, 32 - 1024 channels) and every pointwise 1x1.
MOBILENET_DW = [
    'g32mb1ic32ih112oc32oh112kh3ph1n"dw1_s1"',
    'g64mb1ic64ih112oc64oh56kh3sh2ph1n"dw2_s2"',
    'g128mb1ic128ih56oc128oh56kh3ph1n"dw3_s1"',
    'g128mb1ic128ih56oc128oh28kh3sh2ph1n"dw4_s2"',
    'g256mb1ic256ih28oc256oh28kh3ph1n"dw5_s1"',
    'g256mb1ic256ih28oc256oh14kh3sh2ph1n"dw6_s2"',
    'g512mb1ic512ih14oc512oh14kh3ph1n"dw7_s1*5"',
    'g512mb1ic512ih14oc512oh7kh3sh2ph1n"dw8_s2"',
    'g1024mb1ic1024ih7oc1024oh7kh3ph1n"dw9_s1"',
]
MOBILENET = ['mb1ic3ih224oc32oh112kh3sh2ph1n"stem_3x3s2"'] + MOBILENET_DW + [
    'mb1ic32ih112oc64oh112kh1ph0n"pw1"',
    'mb1ic64ih56oc128oh56kh1ph0n"pw2"',
    'mb1ic128ih56oc128oh56kh1ph0n"pw3"',
    'mb1ic128ih28oc256oh28kh1ph0n"pw4"',
    'mb1ic256ih28oc256oh28kh1ph0n"pw5"',
    'mb1ic256ih14oc512oh14kh1ph0n"pw6"',
    'mb1ic512ih14oc512oh14kh1ph0n"pw7*5"',
    'mb1ic512ih7oc1024oh7kh1ph0n"pw8"',
    'mb1ic1024ih7oc1024oh7kh1ph0n"pw9"',
]
SETS = {"resnet50": (RESNET50, "ResNet-50 v1 at batch 1: its 20 distinct layer geometries"),
        "mobilenet": (MOBILENET, "MobileNet v1 (224x224) at batch 1: stem, depthwise and "
                      "pointwise layers"),
        "mobilenet_dw": (MOBILENET_DW, "MobileNet v1's 9 depthwise 3x3 layers at batch 1")}


def with_batch(descs, mb):
    return [re.sub(r"mb\d+", f"mb{mb}", d, count=1) for d in descs]


# ---- the problem: dnnq's primitive and the same attributes for oneDNN -------------------------

#: the default configuration (issue 9's target): u8 x s8 -> u8, common src / dst scales,
#: per-OC weight scales, f32 bias, relu, channels-last data
DEFAULTS = {"dt": "u8:s8:u8", "bia-dt": "f32", "tag": "nhwc",
            "attr-scales": "src:common:0.02+wei:per_oc+dst:common:0.5",
            "attr-zero-points": "", "attr-post-ops": "relu"}
_ARG = {"src": dnnq.DNNL_ARG_SRC, "wei": dnnq.DNNL_ARG_WEIGHTS, "dst": dnnq.DNNL_ARG_DST}


def _conv_mask(mname, arg, dims, grouped):
    """benchdnn's mask names on a (de)convolution: per_oc is per_dim_1 for data and the output
    channels of the weights (per_dim_0, or per_dim_01 grouped); per_tensor every dim."""
    per_oc = (3 if grouped else 1) if arg == "wei" else 2
    mask = mask_of(mname, per_oc)
    return (1 << len(dims)) - 1 if mask is None else mask


def _count(mask, dims):
    return int(np.prod([d for i, d in enumerate(dims) if mask >> i & 1]))


def _binary_src1(rng, dt, mname, dst_dims):
    """A binary post-op's second input: dims 1 or the dst's, as the mask says."""
    mask = _conv_mask(mname, "dst", dst_dims, False)
    shape = tuple(d if mask >> i & 1 else 1 for i, d in enumerate(dst_dims))
    if dt == "f32":
        return rng.normal(0, 1, shape).astype(np.float32)
    lo, hi = (0, 10) if dt == "u8" else (-5, 6)
    return rng.integers(lo, hi, shape).astype(dnnq.MemoryDesc(shape, dt).numpy_dtype)


def build(desc, knobs, rng, deconv=False, tag=True):
    """dnnq primitive + execution args for a descriptor string or a parsed geometry, with the
    settings of ``knobs`` (--dt, --bia-dt, --attr-scales, --attr-zero-points,
    --attr-post-ops; the others from DEFAULTS), and ``ref_kw``: the same attributes as
    keywords of :func:`dnnq.testing.convolution` / ``ConvHandle`` (``prev``: the
    destination's prior content a sum post-op reads, else None)."""
    knobs = dict(DEFAULTS, **knobs)
    geo = parse_conv(desc, deconv) if isinstance(desc, str) else desc
    sdt, wdt, ddt = split_dt(knobs["dt"])
    if sdt == "f32" or wdt == "f32":
        given = [f"--{k}={knobs[k]}" for k in ("attr-scales", "attr-zero-points",
                                                "attr-post-ops", "bia-dt")
                 if knobs[k] != DEFAULTS[k]]
        if given:  # (build_f32 sets its own: a setting would be left out without a word)
            raise Unimplemented(f"--dt={knobs['dt']}: the driver's f32 layers take their own "
                                f"attributes (relu, an int8 dst's scale 0.05); got "
                                f"{' '.join(given)}")
        return build_f32(geo, sdt, wdt, ddt, rng, deconv, tag)
    sd, wd, dd, bd, kw = conv_descs(geo, sdt, ddt, tag, deconv)
    if knobs["bia-dt"].lower() == "undef":
        bd = None
    OC, G = geo["oc"], geo["g"]
    info = np.iinfo(np.uint8 if sdt == "u8" else np.int8)
    src = sd.logical_view(rng.integers(info.min, info.max + 1, sd.physical_shape,
                                       dtype=info.dtype))
    wei = rng.integers(-128, 128, wd.dims, dtype=np.int8)
    bias = rng.normal(0, 1, OC).astype(np.float32) if bd is not None else None
    dims = {"src": sd.dims, "wei": wd.dims, "dst": dd.dims}
    attr = dnnq.PrimitiveAttr()
    args, ref_kw = {}, dict(kw)
    for arg, (mname, value) in parse_quant(knobs["attr-scales"], "scales").items():
        mask = _conv_mask(mname, arg, dims[arg], G > 1)
        attr.set_scales_mask(_ARG[arg], mask)
        vals = (np.float32([value]) if mask == 0 else
                rng.uniform(1e-3, 1e-2, _count(mask, dims[arg])).astype(np.float32))
        args[dnnq.DNNL_ARG_SCALE | _ARG[arg]] = vals
        ref_kw[f"{arg}_scales"], ref_kw[f"{arg}_scale_mask"] = vals, mask
    for arg, (mname, value) in parse_quant(knobs["attr-zero-points"], "zero-points").items():
        mask = _conv_mask(mname, arg, dims[arg], G > 1)
        attr.set_zero_points_mask(_ARG[arg], mask)
        vals = (np.int32([value]) if mask == 0 else
                rng.integers(-4, 5, _count(mask, dims[arg])).astype(np.int32))
        args[dnnq.DNNL_ARG_ATTR_ZERO_POINTS | _ARG[arg]] = vals
        ref_kw[f"{arg}_zp"], ref_kw[f"{arg}_zp_mask"] = vals, mask
    ops, ref_ops, has_sum = dnnq.PostOps(), [], False
    for i, op in enumerate(parse_post_ops(knobs["attr-post-ops"])):
        if op[0] == "eltwise":
            ops.append_eltwise(*op[1:])
            ref_ops.append(op)
        elif op[0] == "sum":
            ops.append_sum(*op[1:])
            ref_ops.append(op)
            has_sum = True
        else:
            s1 = _binary_src1(rng, op[2], op[3], dd.dims)
            ops.append_binary(op[1], dnnq.MemoryDesc(s1.shape, op[2]))
            args[dnnq.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | dnnq.DNNL_ARG_SRC_1] = s1
            ref_ops.append(("binary", op[1], s1))
    attr.set_post_ops(ops)
    ref_kw["post_ops"] = ref_ops
    cls = dnnq.Deconvolution if deconv else dnnq.Convolution
    p = cls(sd, wd, dd, bd, attr=attr, **kw)
    dst = dd.empty()
    prev = None
    if has_sum:  # the destination's prior content, in its own layout
        prev = rng.integers(0, 50, dd.dims).astype(dd.numpy_dtype)
        dst[...] = prev
    args.update({dnnq.DNNL_ARG_SRC: src, dnnq.DNNL_ARG_WEIGHTS: p.prepare_weights(wei),
                 dnnq.DNNL_ARG_DST: dst})
    if bias is not None:
        args[dnnq.DNNL_ARG_BIAS] = bias
    return dict(p=p, args=args, src=np.asarray(src), wei=wei, bias=bias, ddt=ddt, geo=geo,
                ref_kw=ref_kw, prev=prev, ops=conv_ops(geo) if not deconv else conv_ops(
                    dict(geo, **{"o" + d: geo["i" + d] for d in "dhw" if "i" + d in geo})))


def build_f32(geo, sdt, wdt, ddt, rng, deconv, tag):
    """An f32 layer (--dt=f32:f32:f32 / f32:f32:u8 / f32:f32:s8): f32 src and weights, f32
    bias, relu, and for an int8 dst a dst scale of 0.05 (oneDNN's reference: its f32
    primitive, then its quantizing reorder for the check)."""
    sd, wd, dd, bd, kw = conv_descs(geo, sdt, ddt, tag, deconv, wei_dt=wdt)
    attr = dnnq.PrimitiveAttr()
    ds = np.float32([0.05])
    if ddt != "f32":
        attr.set_scales_mask(dnnq.DNNL_ARG_DST, 0)
    ops = dnnq.PostOps()
    ops.append_eltwise("relu")
    attr.set_post_ops(ops)
    cls = dnnq.Deconvolution if deconv else dnnq.Convolution
    p = cls(sd, wd, dd, bd, attr=attr, **kw)
    src = sd.logical_view(rng.standard_normal(sd.physical_shape).astype(np.float32))
    wei = (rng.standard_normal(wd.dims) / np.sqrt(np.prod(wd.dims[-geo["nsp"] - 1:]))).astype(
        np.float32)
    bias = rng.normal(0, 1, geo["oc"]).astype(np.float32)
    args = {dnnq.DNNL_ARG_SRC: src, dnnq.DNNL_ARG_WEIGHTS: p.prepare_weights(wei),
            dnnq.DNNL_ARG_BIAS: bias, dnnq.DNNL_ARG_DST: dd.empty()}
    if ddt != "f32":
        args[dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_DST] = ds
    ref_kw = dict(strides=kw["strides"], padding_l=kw["padding_l"], padding_r=kw["padding_r"],
                  dilates=kw["dilates"], post_ops=[("eltwise", "relu", 0.0, 0.0)])
    ops_n = conv_ops(geo) if not deconv else conv_ops(
        dict(geo, **{"o" + d: geo["i" + d] for d in "dhw" if "i" + d in geo}))
    return dict(p=p, args=args, src=np.asarray(src), wei=wei, bias=bias, ddt=ddt, geo=geo,
                ref_kw=ref_kw, ops=ops_n, f32=True, dst_scale=ds, tag=sd.tag)


def best_time(fn, min_time):
    from dnnq.bench.timing import best_time as bt
    return bt(fn, min_time)


def torch_conv(b):
    """PyTorch's quantized Conv2d / ConvReLU2d (x86 / fbgemm engine, channels-last) on the same
    problem, or why there is none (str).  Returns (callable, engine name)."""
    geo, kw = b["geo"], b["ref_kw"]
    if geo["nsp"] != 2:
        return "n/a: PyTorch's quantized Conv2d is 2-D"
    ops = kw["post_ops"]
    relu = ops == [("eltwise", "relu", 0.0, 0.0)]
    if ops and not relu:
        return "n/a: post-ops other than relu"
    if any(kw.get(f"{a}_scale_mask", 0) for a in ("src", "dst")) or "wei_zp" in kw or any(
            kw.get(f"{a}_zp_mask", 0) for a in ("src", "dst")):
        return "n/a: per-channel src / dst attributes or weights zero points"
    try:
        import warnings
        import torch
    except ImportError:
        return "not installed"
    warnings.filterwarnings("ignore")
    torch.set_num_threads(dnnq.get_num_threads())
    engine = "x86" if "x86" in torch.backends.quantized.supported_engines else "fbgemm"
    torch.backends.quantized.engine = engine
    x = torch.from_numpy(np.ascontiguousarray(b["src"])).contiguous(
        memory_format=torch.channels_last)
    scale = {a: kw[f"{a}_scales"] if f"{a}_scales" in kw else np.float32([1])
             for a in ("src", "wei", "dst")}
    szp = int(kw["src_zp"][0]) if "src_zp" in kw else 0
    xq = torch._make_per_tensor_quantized_tensor(x, float(scale["src"][0]), szp)
    w = b["wei"].reshape((geo["oc"], geo["ic"] // geo["g"], geo["kh"], geo["kw"]))
    ws = np.broadcast_to(scale["wei"], (geo["oc"],)).astype(np.float64)
    wq = torch._make_per_channel_quantized_tensor(
        torch.from_numpy(w.copy()), torch.from_numpy(ws),
        torch.zeros(geo["oc"], dtype=torch.long), 0)
    cls = (torch.ao.nn.intrinsic.quantized.ConvReLU2d if relu else
           torch.ao.nn.quantized.Conv2d)
    conv = cls(geo["ic"], geo["oc"], (geo["kh"], geo["kw"]), stride=(geo["sh"], geo["sw"]),
               padding=(geo["ph"], geo["pw"]), dilation=(geo["dh"] + 1, geo["dw"] + 1),
               groups=geo["g"])
    conv.set_weight_bias(wq, None if b["bias"] is None else torch.from_numpy(b["bias"]))
    conv.scale = float(scale["dst"][0])
    conv.zero_point = int(kw["dst_zp"][0]) if "dst_zp" in kw else 0
    return (lambda: conv(xq)), f"torch:{engine}"


SETTINGS = dict(DEFAULTS, tag=Setting(
    "nhwc", "nhwc|nchw", "data layout: channels-last (nwc / nhwc / ndhwc) or plain",
    choice("nhwc", "nchw")))
SUMMARY = ("u8 src, s8 weights, u8 dst (--dt), f32 bias (--bia-dt), scales src common 0.02, "
           "weights per output channel (random in [1e-3, 1e-2)), dst common 0.5 "
           "(--attr-scales), relu (--attr-post-ops), channels-last data (--tag)")
SYNTAX = "gXmbX_icXidXihXiwX_ocXodXohXowX_kdXkhXkwX_sdXshXswX_pdXphXpwX_ddXdhXdwX[_n\"NAME\"]"


def create(driver, geo, settings, env):
    """The registry's Case for one (de)convolution problem: dnnq, oneDNN's ConvHandle
    (argument array built once), PyTorch's quantized Conv2d where installed."""
    from dnnq.bench.registry import Case
    deconv = driver == "deconv"
    b = build(geo, settings, env.rng, deconv, tag=settings["tag"].lower() != "nchw")
    p, args, prev = b["p"], b["args"], b.get("prev")
    case = Case(kernel=p.impl_info, ops=b["ops"], dnnq=lambda: p.execute(args))
    if env.onednn is None:
        case.peers["oneDNN"] = case.reference = env.onednn_absent
    elif b.get("f32"):
        _onednn_f32_peer(case, b, env, deconv)
    else:
        try:
            h = env.onednn.ConvHandle(b["src"], b["wei"], b["bias"], b["ddt"], deconv=deconv,
                                      **b["ref_kw"])
        except env.onednn.OnednnError as exc:
            case.peers["oneDNN"] = "refused"
            case.reference = f"oneDNN refused: {exc}"
        else:
            case.peers["oneDNN"] = h.runner()
            case.reference = h.result
            case.notes.append(h.impl)
            case.close = h.close
            if prev is not None:  # the handle has no prior destination: one call that has
                fn = env.onednn.deconvolution if deconv else env.onednn.convolution
                case.reference = lambda: fn(b["src"], b["wei"], b["bias"], b["ddt"],
                                            dst_prev=prev, **b["ref_kw"])
            if not env.onednn.has_vnni():
                case.reference = "oneDNN without VNNI is not exact (s16 saturation)"
    if prev is not None:  # a sum post-op reads the destination: refill it before a check
        def before_check():
            args[dnnq.DNNL_ARG_DST][...] = prev
        case.before_check = before_check
    if not env.use_torch:
        case.peers["torch"] = "--no-peers"
    elif b.get("f32"):
        case.peers["torch"] = "n/a (f32)"
    elif deconv:
        case.peers["torch"] = "n/a: deconvolution not compared"
    elif b["ddt"] != "u8" or b["src"].dtype != np.uint8:
        # PyTorch's quantized convolutions take quint8 activations only
        case.peers["torch"] = "n/a: PyTorch's quantized Conv2d takes u8 -> u8 only"
    else:
        tc = torch_conv(b)
        if isinstance(tc, str):
            case.peers["torch"] = tc
        else:
            case.peers["torch"] = tc[0]
            case.notes.append(tc[1])
    return case


def _onednn_f32_peer(case, b, env, deconv):
    """oneDNN's f32 (de)convolution with the same layout as dnnq's data (its argument array
    built once) is the timed peer; the check compares with its f32 result, or for an int8 dst
    with that result through oneDNN's quantizing reorder (oneDNN 3.2 has no f32 -> int8
    convolution)."""
    tag = b["tag"] or {3: "ncw", 4: "nchw", 5: "ncdhw"}[b["src"].ndim]
    try:
        h = env.onednn.ConvHandle(b["src"], b["wei"], b["bias"], "f32", deconv=deconv,
                                  data_tag=tag, **b["ref_kw"])
    except env.onednn.OnednnError as exc:
        case.peers["oneDNN"] = "refused"
        case.reference = f"oneDNN refused: {exc}"
        return
    case.peers["oneDNN"] = h.runner()
    case.notes.append(h.impl + " f32")
    case.close = h.close
    geo = b["geo"]
    K = geo["ic"] // geo["g"] * int(np.prod([geo["k" + d] for d in "dhw"[3 - geo["nsp"]:]]))

    def tolerance():  # 2 (K + 1) u sum |products| (+ |bias|): oneDNN's own f32 sum
        fn = env.onednn.deconvolution if deconv else env.onednn.convolution
        mag = fn(np.abs(b["src"]), np.abs(b["wei"]), np.abs(b["bias"]), "f32",
                 **{k: v for k, v in b["ref_kw"].items() if k != "post_ops"})
        return 2 * (K + 1) * 2.0 ** -24 * mag.astype(np.float64)
    case.tolerance = tolerance
    if b["ddt"] == "f32":
        case.reference = h.result
    else:
        def reference():
            return env.onednn.reorder(h.result(), b["ddt"], dst_scales=b["dst_scale"])
        case.reference = reference


def _register():
    register("conv", parse=parse_conv, create=lambda *a: create("conv", *a),
             settings=SETTINGS, summary=SUMMARY, syntax=SYNTAX,
             example="mb1ic64ih56oc64oh56kh3ph1 (3x3, pad 1, 56x56, 64 -> 64 channels)")
    register("deconv", parse=lambda d: parse_conv(d, deconv=True),
             create=lambda *a: create("deconv", *a), settings=SETTINGS, summary=SUMMARY,
             syntax=SYNTAX + " (o* deduced from i*)",
             example="mb1ic8ih5oc8oh10kh2sh2ph0 (2x2 stride 2: 5x5 -> 10x10)")
    for name, (descs, text) in SETS.items():
        register_set("conv", name, descs, text)


_register()

__all__ = ["parse_conv", "RESNET50", "MOBILENET", "MOBILENET_DW", "SETS", "build", "create"]
