"""dnnq's default numerics against oneDNN 3.2 capped at one ISA level: what another CPU's
oneDNN computes, reproduced on this one (docs/numerics.md "Across machines").

Run in a process of its own with the cap set (oneDNN reads it once per process):

    ONEDNN_MAX_CPU_ISA=AVX2 python -P tools/onednn_capped.py --cases 60 --seed 1

Random MatMul / InnerProduct / (de)convolution problems (tools/diff_fuzz.py's, every kernel
kind) and, where the cap has VNNI, LSTM / GRU problems.  dnnq runs each at one of its levels
and at 1 or 2 threads in turn: its result must not depend on either.  The int8 data cannot
saturate a vpmaddubsw pair, so the sums of oneDNN's kernels without VNNI (at the AVX2 and
AVX512_CORE caps, and its AVX2 fallbacks at every cap) are exact too.  Each result must equal oneDNN's bit for bit, except where exactly one of the two
runs a reference order of the f32 steps (oneDNN's ref:any / GEMM-based deconvolution, dnnq's
+ref_order / +gemm_order, chosen from the problem as oneDNN chooses on an AVX512-VNNI CPU):
there 8-bit results may differ by 1 on a few elements and f32 by a few ulp of the largest
value.  No post-op makes
NaN here (which value a NaN stores as is a per-kernel rule: tools/diff_fuzz.py checks dnnq's
on this CPU).  Where oneDNN 3.2 has a known defect (ONEDNN_DEFECTS) dnnq must equal the numpy
model instead.  Prints "ok <compared> <exact> <near> <defects> <refused>" or the differences,
and exits 1 on any.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import dnnq  # noqa: E402
from dnnq.testing import _capi, _rnn_amx_probe  # noqa: E402
import diff_fuzz  # noqa: E402

_REF_ONEDNN = ("ref", "conv:any+gemm", "gemm:")


def onednn_defect(family, impl, desc):
    """A known oneDNN 3.2 defect behind a difference (docs/numerics.md, "Across machines"), or
    None: its AVX2 depthwise kernel (jit_uni_int8:avx2, also its fallback on AVX-512 CPUs)
    applies per-channel binary post-ops wrongly in the channel tail (channels not a multiple
    of 8)."""
    if family == "conv" and impl.startswith("jit_uni_int8:avx2") and " dw" in desc and \
            "'binary'" in desc:
        return "avx2 depthwise per-channel binary"
    return None


def reference_order(onednn_impl, dnnq_impl):
    """(oneDNN runs a reference order, dnnq does)."""
    return (onednn_impl.startswith(_REF_ONEDNN) or "ref:" in onednn_impl,
            "+ref_order" in dnnq_impl or "+gemm_order" in dnnq_impl)


def near(got, want):
    """Within one f32 rounding of the steps' order: f32 a few ulp (NaN where NaN), integers
    within 1 on at most 5 % of the elements."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype == np.float32:
        nan = np.isnan(want)
        if not np.array_equal(np.isnan(got), nan):
            return False
        # (absolute: an ulp of the largest intermediate, which a later subtraction keeps)
        scale = float(np.abs(want[~nan]).max(initial=1.0))
        return bool(np.allclose(got[~nan], want[~nan], rtol=4e-6, atol=4e-6 * scale))
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    return diff.max(initial=0) <= 1 and (diff > 0).mean() <= 0.05


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=60, help="problems per family")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--families", default="matmul,ip,conv,rnn")
    o = ap.parse_args(argv)
    onednn_isa = _capi.cpu_isa()
    vnni = _capi.has_vnni()
    diff_fuzz.PAIR_SAFE = True
    diff_fuzz.ELTWISE[:] = [e for e in diff_fuzz.ELTWISE if e[0] != "sqrt"]
    levels = list(dnnq.available_isa_levels())
    rng = np.random.default_rng(o.seed)
    cases = {"matmul": diff_fuzz.matmul_case, "ip": diff_fuzz.ip_case,
             "conv": diff_fuzz.conv_case, "rnn": diff_fuzz.rnn_case}
    compared = exact = close = defects = refused = 0
    skipped = []
    bad = []
    for family in o.families.split(","):
        if family == "rnn" and not vnni:
            continue  # its u8 states come from quantized f32 data: no pair-safe draw
        if family == "rnn" and "amx" in onednn_isa and _rnn_amx_probe.faults():
            skipped.append("rnn (oneDNN's AMX LSTM dies with SIGILL on this host)")
            continue
        for i in range(o.cases):
            level, threads = levels[i % len(levels)], 1 + (i // len(levels)) % 2
            dnnq.set_max_cpu_isa(level)
            before = dnnq.get_num_threads()
            dnnq.set_num_threads(threads)
            diff_fuzz.LAST_IMPLS = (None, None)
            try:
                desc, got, want = cases[family](rng)
            finally:
                dnnq.set_num_threads(before)
                dnnq.set_max_cpu_isa("all")
            if want is None:
                refused += 1
                continue
            compared += 1
            ok = diff_fuzz.same(got, want)
            if ok.all():
                exact += 1
                continue
            impls = diff_fuzz.LAST_IMPLS
            one_ref = impls[0] is not None and len(set(reference_order(*impls))) == 2
            if one_ref and near(got, want):
                close += 1
                continue
            if impls[0] is not None and onednn_defect(family, impls[0], desc):
                model = diff_fuzz.LAST_CASE.run_numpy()
                # (by value: the model's relu keeps -0.0 where the kernels store +0.0)
                ok = (got == model) | (np.isnan(got) & np.isnan(model)) \
                    if got.dtype == np.float32 else got == model
                if ok.all():
                    defects += 1
                    continue
                desc += " (a known oneDNN defect: against the numpy model)"
                want = model
            bad.append(f"{family} case {i} (dnnq {level}, {threads} threads): {desc}: "
                       f"{diff_fuzz.differences(got, want, ok)}")
    if bad:
        print("\n".join(bad[:20]))
        print(f"{len(bad)} of {compared} differ (oneDNN at {onednn_isa})")
        return 1
    print(f"ok {compared} {exact} {close} {defects} {refused} (oneDNN at {onednn_isa}, dnnq levels "
          f"{', '.join(levels)})" + "".join(f"; skipped {f}" for f in skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
