"""dnnq under set_int8_numerics("avx2") against oneDNN run without VNNI (tests/test_int8_numerics.py).

A script, because oneDNN reads its ISA cap once per process: run it in a subprocess with
ONEDNN_MAX_CPU_ISA=AVX2 set,

    python tests/_avx2_numerics_cases.py --family matmul|ip|conv|gemm|rnn --cases 40 --seed 1
        [--dnnq-isa avx2|default]

It draws random problems whose data make the s16 pair sums saturate (u8 near 255 against
s8 near -128 / 127), runs each through oneDNN and through dnnq, and prints "ok <cases>
<elements> <saturated>" (saturated: outputs where the exact result differs from oneDNN's, so
the emulation is what made them equal) or the first mismatches and exits 1.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

import dnnq  # noqa: E402
from dnnq import MemoryDesc as MD, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS  # noqa: E402
from dnnq.testing import _primitives as onednn, _capi  # noqa: E402
from diff_fuzz import dnnq_attr  # noqa: E402

DSTS = ("s32", "f32", "u8", "s8")


def data(rng, dt, shape):
    """u8 / s8 data with many extreme values (saturating pairs) mixed with uniform ones."""
    if dt == "u8":
        x = rng.integers(0, 256, shape)
        hi = rng.random(shape) < 0.6
        x[hi] = rng.integers(200, 256, int(hi.sum()))
        return x.astype(np.uint8)
    x = rng.integers(-128, 128, shape)
    hi = rng.random(shape) < 0.6
    x[hi] = rng.choice([-128, -127, -120, 120, 126, 127], int(hi.sum()))
    return x.astype(np.int8)


def scales(rng, n):
    return rng.choice([0.5, 1.0, 0.25, 0.0625], n).astype(np.float32) * \
        rng.uniform(0.5, 2.0, n).astype(np.float32)


def exact_matmul(src, wei):
    return src.astype(np.int64) @ wei.astype(np.int64)


class Result:
    def __init__(self):
        self.cases = self.elements = self.saturated = 0
        self.failures = []

    def compare(self, name, got, want, exact_differs):
        got, want = np.asarray(got), np.asarray(want)
        self.cases += 1
        self.elements += want.size
        self.saturated += int(exact_differs)
        bad = np.flatnonzero(~((got == want) | (np.isnan(got.astype(np.float64)) &
                                                  np.isnan(want.astype(np.float64)))).ravel())
        if bad.size:
            i = bad[0]
            self.failures.append(f"{name}: {bad.size} of {want.size} differ; first at flat "
                                 f"{i}: dnnq {got.ravel()[i]} oneDNN {want.ravel()[i]}")


def _attr(q, dims):
    """(PrimitiveAttr, runtime args) from {"src_scales": (values, mask), ...} (no post-ops),
    through the differential fuzzer's builder (tools/diff_fuzz.py)."""
    return dnnq_attr(_onednn_q(q), ())


def _onednn_q(q):
    kw = {}
    for key, (values, mask) in q.items():
        base = key.replace("scales", "scale")
        kw[key] = values
        kw[base + "_mask"] = mask
    return kw


def _quant(rng, src_dt, dst_dt, n_out, per_out_mask):
    q = {}
    if dst_dt != "s32" or rng.random() < 0.5:
        if rng.random() < 0.7:
            q["src_scales"] = (scales(rng, 1), 0)
        if rng.random() < 0.8:
            per = rng.random() < 0.6
            q["wei_scales"] = (scales(rng, n_out if per else 1), per_out_mask if per else 0)
        if dst_dt in ("u8", "s8") and rng.random() < 0.7:
            q["dst_scales"] = (np.float32([rng.choice([64.0, 256.0, 1024.0, 4096.0])]), 0)
        if src_dt == "u8" and rng.random() < 0.4:
            q["src_zp"] = (np.int32([rng.integers(0, 30)]), 0)
        if dst_dt in ("u8", "s8") and rng.random() < 0.4:
            q["dst_zp"] = (np.int32([rng.integers(-5, 6)]), 0)
    return q


def matmul_case(rng, res, ip=False):
    M = int(rng.choice([1, 2, 5, 8, 13]))
    K = int(rng.choice([1, 2, 3, 4, 5, 7, 16, 31, 64, 65, 130, 515]))
    N = int(rng.choice([1, 15, 16, 17, 64, 70]))
    src_dt = str(rng.choice(["u8", "s8"]))
    dst_dt = str(rng.choice(DSTS))
    src, wei = data(rng, src_dt, (M, K)), data(rng, "s8", (K, N))
    bias = rng.normal(0, 50, N).astype(np.float32) if rng.random() < 0.5 else None
    q = _quant(rng, src_dt, dst_dt, N, 1 if ip else 2)
    if ip:
        q.pop("src_zp", None), q.pop("dst_zp", None)  # oneDNN's inner product has none
        want = onednn.inner_product(src, np.ascontiguousarray(wei.T), bias, dst_dt,
                                    **_onednn_q(q))
        p = dnnq.InnerProduct(MD((M, K), src_dt), MD((N, K), "s8"), MD((M, N), dst_dt),
                              None if bias is None else MD((N,), "f32"), attr=_attr(q, None)[0])
        w = np.ascontiguousarray(wei.T)
    else:
        want = onednn.matmul(src, wei, bias, dst_dt, **_onednn_q(q))
        p = dnnq.MatMul(MD((M, K), src_dt), MD((K, N), "s8"), MD((M, N), dst_dt),
                        None if bias is None else MD((1, N), "f32"), attr=_attr(q, None)[0])
        w = wei
        bias = None if bias is None else bias.reshape(1, N)
    args = _attr(q, None)[1]
    args.update({DNNL_ARG_SRC: src, DNNL_ARG_WEIGHTS: p.prepare_weights(w)})
    if bias is not None:
        args[DNNL_ARG_BIAS] = bias
    got = p.execute(args)
    with dnnq.set_int8_numerics("exact"):  # the same problem with exact numerics
        cls = dnnq.InnerProduct if ip else dnnq.MatMul
        pe = cls(p.src_desc, p.weights_desc, p.dst_desc, p.bias_desc, attr=_attr(q, None)[0])
    args[DNNL_ARG_WEIGHTS] = pe.prepare_weights(w)
    exact_differs = not np.array_equal(pe.execute(args), want, equal_nan=dst_dt == "f32")
    name = f"{'ip' if ip else 'matmul'} {src_dt}->{dst_dt} M{M} K{K} N{N} q={sorted(q)}"
    res.compare(name + f" [{p.impl_info}]", got, want, exact_differs)


def conv_case(rng, res):
    from test_convolution import Case
    src_dt = str(rng.choice(["u8", "s8"]))
    dst_dt = str(rng.choice(DSTS))
    kind = rng.choice(["1x1", "3x3", "3x3s2", "stem", "grouped", "depthwise", "deconv",
                       "deconv_gemm"])
    G, ICg, OCg, k, s, pl = 1, int(rng.choice([1, 3, 5, 13, 16, 64, 70])), \
        int(rng.choice([8, 16, 70])), (3, 3), (1, 1), (1, 1)
    isp, deconv = (7, 7), False
    if kind == "1x1":
        k, pl = (1, 1), (0, 0)
    elif kind == "3x3s2":
        s, isp = (2, 2), (9, 9)
    elif kind == "stem":
        ICg, OCg, k, s, pl, isp = 3, 16, (7, 7), (2, 2), (3, 3), (15, 15)
    elif kind == "grouped":
        G, ICg, OCg = int(rng.choice([2, 4])), int(rng.choice([4, 6, 8])), 8
    elif kind == "depthwise":
        G, ICg, OCg = int(rng.choice([8, 16, 40])), 1, 1
        s = (1, 1) if rng.random() < 0.5 else (2, 2)
    elif kind == "deconv":
        deconv, k, s, pl = True, (3, 3), (2, 2), (1, 1)
        ICg, isp = int(rng.choice([5, 16, 64])), (5, 5)
    elif kind == "deconv_gemm":  # oneDNN's GEMM-based deconvolution: depthwise s8, or below
        deconv, k, s, pl, isp = True, (3, 3), (2, 2), (1, 1), (5, 5)  # a full binary input
        if src_dt == "s8" and rng.random() < 0.5:
            G, ICg, OCg = int(rng.choice([8, 16, 40])), 1, 1
        else:
            ICg = int(rng.choice([5, 16, 64]))
    n_out = G * OCg
    q = _quant(rng, src_dt, dst_dt, n_out, 3 if G > 1 else 1)
    q = {kk: (v[0], v[1]) for kk, v in q.items()}
    bias_dt = "f32" if rng.random() < 0.5 else None
    tag = "nhwc" if rng.random() < 0.5 else None
    c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, s=s, pl=pl, src_dt=src_dt,
             dst_dt=dst_dt, deconv=deconv, grouped=G > 1, bias_dt=bias_dt, src_tag=tag,
             dst_tag=tag, q={kk: v[0] for kk, v in q.items()} |
             {kk.replace("scales", "scale") + "_mask": v[1] for kk, v in q.items()})
    c.src = data(rng, src_dt, c.src.shape)
    c.wei = data(rng, "s8", c.wei.shape)
    if kind == "deconv_gemm" and G == 1:
        c.post_ops = [("binary", "add", rng.standard_normal(c.dst_shape).astype(np.float32))]
    want = c._run_onednn(raw=True)
    got, p = c.run_dnnq()
    with dnnq.set_int8_numerics("exact"):  # the same problem with exact numerics
        exact_differs = not np.array_equal(c.run_dnnq()[0], want, equal_nan=dst_dt == "f32")
    res.compare(f"conv {kind} {src_dt}->{dst_dt} G{G} ICg{ICg} OCg{OCg} q={sorted(q)} "
                f"tag={tag} [{p.impl_info}]", got, want, exact_differs)


def gemm_case(rng, res):
    M, N = int(rng.choice([1, 3, 8, 17])), int(rng.choice([1, 5, 16, 33]))
    K = int(rng.choice([1, 2, 3, 5, 8, 64, 129, 600]))
    s8 = rng.random() < 0.5
    transa, transb = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    # gemm_s8s8s32: alpha 1, integer beta, no ao / bo (the rest is refused, docs/numerics.md)
    beta = float(rng.choice([0.0, 1.0, 2.0, -1.0] + ([] if s8 else [0.5, 1.5])))
    alpha = 1.0 if s8 else float(rng.choice([1.0, 0.5, 2.0, -1.0, 1.0 / 3.0]))
    ao = 0 if s8 else int(rng.choice([0, 3, 200]))
    bo = 0 if s8 else int(rng.choice([0, 2, -5]))
    offsetc = str(rng.choice(["F", "C", "R"]))
    co = rng.integers(-100, 100, {"F": 1, "C": M, "R": N}[offsetc]).astype(np.int32) \
        if rng.random() < 0.5 else None
    A = data(rng, "s8" if s8 else "u8", (K, M) if transa else (M, K))
    B = data(rng, "s8", (N, K) if transb else (K, N))
    C = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
    fn_o = onednn.gemm_s8s8s32 if s8 else onednn.gemm_u8s8s32
    fn_d = dnnq.gemm_s8s8s32 if s8 else dnnq.gemm_u8s8s32
    kw = dict(transa=transa, transb=transb, alpha=alpha, beta=beta, ao=ao, bo=bo, co=co,
              offsetc=offsetc)
    want = fn_o(A, B, C.copy(), **kw)
    got = fn_d(A, B, C.copy(), **kw)
    with dnnq.set_int8_numerics("exact"):
        exact = fn_d(A, B, C.copy(), **kw)
    res.compare(f"gemm {'s8' if s8 else 'u8'} M{M} N{N} K{K} {kw}", got, want,
                not np.array_equal(exact, want))


def rnn_case(rng, res):
    import test_rnn as R
    cell = str(rng.choice(["lstm", "gru"]))
    direction = str(rng.choice(R.DIRS))
    T, N = int(rng.choice([1, 3, 5])), int(rng.choice([1, 2, 7]))
    C, H = int(rng.choice([5, 16, 70])), int(rng.choice([16, 33, 64]))
    p = R.make(cell, direction, T, N, C, H, int(rng.choice([1, 2])) if C == H else 1,
               init=bool(rng.random() < 0.5), per_oc=bool(rng.random() < 0.5),
               seed=int(rng.integers(1 << 30)), dst_layer_dt=str(rng.choice(["u8", "f32"])))
    p["x"] = data(rng, "u8", p["x"].shape)
    p["wl"] = data(rng, "s8", p["wl"].shape)
    p["wi"] = data(rng, "s8", p["wi"].shape)
    want = R.onednn(p)
    prim = R.primitive(p, R.legacy_attr(p))
    got = R.run(prim, p, prepared=bool(rng.random() < 0.5))
    with dnnq.set_int8_numerics("exact"):
        exact = R.run(R.primitive(p, R.legacy_attr(p)), p)
    name = (f"rnn {cell} {direction} T{T} N{N} C{C} H{H} L{p['L']} dst {p['dst_layer_dt']} "
            f"[{prim.impl_info}]")
    exact_differs = any(not np.array_equal(e, w) for e, w in zip(exact, want))
    for i, (g, w) in enumerate(zip(got, want)):
        res.compare(f"{name} output {i}", g.view(np.int32) if g.dtype == np.float32 else g,
                    w.view(np.int32) if w.dtype == np.float32 else w, exact_differs and i == 0)


def fused_case(rng, res):
    """1x1 convolution + the fused depthwise post-op (oneDNN's ref_fused_convolution)."""
    import test_convolution_fused_dw as F
    kw = dict(rng.choice([dict(), dict(src_dt="s8", mid_dt="s8", fin_dt="f32", tag="nhwc", N=2),
                          dict(fin_dt="s32", dst_scale=None, dw_dst_scale=None, bias=False,
                               dw_bias=False, ws_mask=0, dws_mask=0),
                          dict(C=70, IC=3, fin_dt="s8"), dict(IC=64, mid_dt="s8")]))
    H, W = (int(v) for v in rng.choice([(8, 9), (17, 16), (1, 1), (30, 7)]))
    stride = int(rng.choice([1, 2]))
    again = np.random.default_rng()
    again.bit_generator.state = rng.bit_generator.state  # the same data for the exact run
    got, want, p = F.run(rng, H=H, W=W, stride=stride, **kw)
    with dnnq.set_int8_numerics("exact"):
        exact = F.run(again, H=H, W=W, stride=stride, **kw)[0]
    res.compare(f"fused dw {kw} {H}x{W} s{stride} [{p.impl_info}]", got, want,
                not np.array_equal(exact, want, equal_nan=True))


FAMILIES = {"matmul": matmul_case, "ip": lambda rng, res: matmul_case(rng, res, ip=True),
            "conv": conv_case, "gemm": gemm_case, "rnn": rnn_case,
            "fused": fused_case}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=sorted(FAMILIES), required=True)
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dnnq-isa", default="avx2")
    o = ap.parse_args(argv)
    if _capi.cpu_isa() != "avx2":
        print(f"oneDNN runs at {_capi.cpu_isa()}; run with ONEDNN_MAX_CPU_ISA=AVX2")
        return 2
    dnnq.set_max_cpu_isa(o.dnnq_isa)
    rng = np.random.default_rng(o.seed)
    res = Result()
    with dnnq.set_int8_numerics("avx2"):
        for _ in range(o.cases):
            FAMILIES[o.family](rng, res)
    if res.failures:
        print("\n".join(res.failures[:10]))
        print(f"FAILED {len(res.failures)} of {res.cases}")
        return 1
    print(f"ok {res.cases} {res.elements} {res.saturated}")  # saturated: exact numerics differ
    return 0


if __name__ == "__main__":
    sys.exit(main())
