"""Differential fuzzing of Deconvolution against the real oneDNN 3.2: random geometries
(groups, depthwise, 1-D / 2-D / 3-D, strides, dilation, paddings up to the kernel), data
types, bias types, scales, common and per-channel zero points and post-op chains; compares
the results bit for bit and dnnq's model of oneDNN's kernel choice (dnnq/primitives/
_conv_impl.py) with the implementation oneDNN reports.

    python -P tools/deconv_fuzz.py --cases 500 --seed 1

Prints each problem whose kernel or values differ and a summary; exits 1 when values differ.
Known: oneDNN's tap-less rows bug (docs/convolution.md "Not reproduced") differs in values;
some tiny problems are picked differently (the brgemm kernels' blocking search).  It stops
at the first problem oneDNN refuses: after a failed creation oneDNN picks other kernels.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)

from diff_fuzz import draw_post_ops, data, differences, same  # noqa: E402
from test_convolution import Case  # noqa: E402
from test_deconv_impl import onednn_kind  # noqa: E402
from dnnq.testing import _primitives as onednn, _capi  # noqa: E402


def pick(rng, values):
    return int(rng.choice(values))


def draw_groups(rng, kind):
    """(G, ICg, OCg): ungrouped; grouped with multiples of 4; depthwise; channels per group
    not multiples of 4; few input channels."""
    if kind == "plain":
        return 1, pick(rng, [5, 8, 17]), pick(rng, [3, 16, 19])
    if kind == "grouped":
        return pick(rng, [2, 3]), pick(rng, [4, 8, 16, 20]), pick(rng, [4, 8])
    if kind == "dw":
        return pick(rng, [8, 16, 19]), 1, 1
    if kind == "oddg":
        return pick(rng, [2, 3]), pick(rng, [1, 3, 5, 8]), pick(rng, [1, 2, 3, 6])
    return 1, pick(rng, [1, 3, 4]), pick(rng, [5, 16])


def draw_quant(rng, dst_dt, G, ICg, OCg, grouped):
    q = {}
    if rng.random() < 0.7:
        q["src_scales"], q["src_scale_mask"] = np.float32([rng.uniform(0.001, 0.1)]), 0
    if rng.random() < 0.8:
        per = rng.random() < 0.6
        q["wei_scales"] = rng.uniform(0.001, 0.05, G * OCg if per else 1).astype(np.float32)
        q["wei_scale_mask"] = (3 if grouped else 1) if per else 0
    if rng.random() < 0.5:
        q["dst_scales"], q["dst_scale_mask"] = np.float32([rng.uniform(0.05, 4.0)]), 0
    r = rng.random()
    if r < 0.25:
        q["src_zp"], q["src_zp_mask"] = np.int32([rng.integers(-5, 20)]), 0
    elif r < 0.4:
        q["src_zp"], q["src_zp_mask"] = rng.integers(-5, 20, G * ICg).astype(np.int32), 2
    if dst_dt in ("s8", "u8"):
        r = rng.random()
        if r < 0.25:
            q["dst_zp"], q["dst_zp_mask"] = np.int32([rng.integers(-10, 10)]), 0
        elif r < 0.4:
            q["dst_zp"], q["dst_zp_mask"] = rng.integers(-10, 10, G * OCg).astype(np.int32), 2
    return q


def draw(rng):
    nsp = pick(rng, [1, 2, 2, 2, 3])
    kind = str(rng.choice(["plain", "grouped", "dw", "oddg", "smallic"]))
    G, ICg, OCg = draw_groups(rng, kind)
    grouped = G > 1 or (kind == "smallic" and rng.random() < 0.3)
    k = tuple(pick(rng, [1, 2, 3]) for _ in range(nsp))
    s = tuple(pick(rng, [1, 1, 2, 3]) for _ in range(nsp))
    d = tuple(pick(rng, [0, 0, 0, 1]) for _ in range(nsp))
    if rng.random() < 0.3:  # kernel = stride: one tap per pixel (the one-tap driver)
        s, d = k, (0,) * nsp
    pl = [int(rng.integers(0, kk + 1)) for kk in k]
    pr = [int(rng.integers(0, kk + 1)) for kk in k]
    isp = tuple(int(rng.integers(2, 6)) for _ in range(nsp))
    for i in range(nsp):  # no padding where the output would be empty
        if (isp[i] - 1) * s[i] - pl[i] - pr[i] + (k[i] - 1) * (d[i] + 1) + 1 < 1:
            pl[i] = pr[i] = 0
    src_dt = str(rng.choice(["u8", "s8"]))
    dst_dt = str(rng.choice(["f32", "s32", "s8", "u8"]))
    bias_dt = rng.choice([None, "f32", "s32", "s8", "u8"])
    q = draw_quant(rng, dst_dt, G, ICg, OCg, grouped)
    tag = "nhwc" if nsp == 2 and rng.random() < 0.5 else None
    c = Case(rng, mb=pick(rng, [1, 2]), G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, s=s, pl=tuple(pl),
             pr=tuple(pr), d=d, src_dt=src_dt, dst_dt=dst_dt, deconv=True, grouped=grouped,
             bias_dt=None if bias_dt is None else str(bias_dt), q=q, src_tag=tag, dst_tag=tag)
    sh = c.dst_shape
    ones = (1,) * nsp
    shapes = [(1, sh[1]) + ones, (1, 1) + ones]
    if rng.random() < 0.5:  # inputs along the batch or spatial dims, or full ones
        shapes += [sh, (sh[0], 1) + ones, (1, 1) + tuple(sh[2:])]
    c.post_ops = ops = draw_post_ops(rng, dst_dt, shapes)
    c.dst_prev = data(rng, dst_dt, sh, 30.0) if any(o[0] == "sum" for o in ops) else None
    op_desc = [(o[0], o[1], o[2].shape if o[0] == "binary" else o[2]) for o in ops]
    desc = (f"G{G} ICg{ICg} OCg{OCg} grouped {grouped} k{k} s{s} d{d} pl{tuple(pl)} "
            f"pr{tuple(pr)} isp{isp} {src_dt}->{dst_dt} tag {tag} bias {bias_dt} "
            f"q {sorted(x for x in q if not x.endswith('mask'))} "
            f"zp masks {q.get('src_zp_mask')},{q.get('dst_zp_mask')} ops {op_desc}")
    return c, desc


def main(n, seed):
    rng = np.random.default_rng(seed)
    bad = kmis = 0
    for i in range(n):
        c, desc = draw(rng)
        kw = {k: v for k, v in c.q.items() if v is not None}
        try:
            want, impl = onednn.deconvolution(c.src, c.wei, c.bias, c.dst_dt,
                                              post_ops=c.post_ops, dst_prev=c.dst_prev,
                                              return_impl=True, **c.geom, **kw)
        except _capi.OnednnError as e:
            print(f"case {i}: oneDNN refused ({e}); stopping (later picks unreliable): {desc}")
            return 2
        got, p = c.run_dnnq()
        ok = same(got, want)
        k = onednn_kind(impl)
        mine = p._onednn_kernel
        if k != mine:
            kmis += 1
            print(f"case {i}: kernel: oneDNN {impl} dnnq {mine} ({p.impl_info}): {desc}")
        if not ok.all():
            bad += 1
            print(f"case {i}: [{impl} / {p.impl_info}] {desc}: {differences(got, want, ok)}")
    print(f"deconv: {n} cases, {bad} differ, {kmis} kernel choices differ")
    return 1 if bad else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    o = ap.parse_args()
    sys.exit(main(o.cases, o.seed))
