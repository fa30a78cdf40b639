"""Independent numpy models of int8 convolution and deconvolution (SPEC section 2 and
ONEDNN_FACTS section 1), written from the formulas, not from dnnq's code: direct sums over
taps in int64 with the padded area holding the source zero point, then the f32 epilogue of
tests/_quant_ref.py.  Arrays are logical (N, C, *spatial) / ([G,] OC, IC, *k)."""
import numpy as np

from _quant_ref import epilogue

F32 = np.float32


def _grouped(wei, src_ndim):
    w = wei.astype(np.int64)
    return w if w.ndim == src_ndim + 1 else w[None]


def _per(v, n):
    """scalar / (n,) zero point -> int64 (n,)"""
    return np.broadcast_to(np.asarray(0 if v is None else v, np.int64).reshape(-1), (n,))


def conv_acc(src, wei, strides, padding_l, padding_r, dilates=None, src_zp=None, wei_zp=None):
    """sum over valid taps of (src - zp_src[ic]) * (wei - zp_wei[oc]) as int64 (N, OC, *out)."""
    nsp = src.ndim - 2
    w = _grouped(wei, src.ndim)
    G, OCg, ICg = w.shape[:3]
    ks = w.shape[3:]
    dl = dilates if dilates is not None else (0,) * nsp
    N, C = src.shape[:2]
    s = src.astype(np.int64) - _per(src_zp, C).reshape((1, C) + (1,) * nsp)
    w = w - _per(wei_zp, G * OCg).reshape((G, OCg) + (1,) * (nsp + 1))
    s = np.pad(s, [(0, 0), (0, 0)] + [(padding_l[i], padding_r[i]) for i in range(nsp)])
    out = [(s.shape[2 + i] - (ks[i] - 1) * (dl[i] + 1) - 1) // strides[i] + 1 for i in range(nsp)]
    acc = np.zeros((N, G, OCg) + tuple(out), np.int64)
    s = s.reshape((N, G, ICg) + s.shape[2:])
    for tap in np.ndindex(*ks):
        sl = tuple(slice(tap[i] * (dl[i] + 1), tap[i] * (dl[i] + 1) + (out[i] - 1) * strides[i] + 1,
                         strides[i]) for i in range(nsp))
        x = s[(slice(None),) * 3 + sl]                       # (N, G, ICg, *out)
        wt = w[(slice(None),) * 3 + tuple(tap)]             # (G, OCg, ICg)
        acc += np.einsum("ngi...,goi->ngo...", x, wt)
    return acc.reshape((N, G * OCg) + tuple(out))


def deconv_acc(src, wei, strides, padding_l, padding_r, dilates=None, src_zp=None, wei_zp=None):
    """dst[oc, i*S - PL + k*(D+1)] += (src[ic, i] - zp) * (w[oc, ic, k] - zp_w), int64."""
    nsp = src.ndim - 2
    w = _grouped(wei, src.ndim)
    G, OCg, ICg = w.shape[:3]
    ks = w.shape[3:]
    dl = dilates if dilates is not None else (0,) * nsp
    N, C = src.shape[:2]
    isp = src.shape[2:]
    s = src.astype(np.int64) - _per(src_zp, C).reshape((1, C) + (1,) * nsp)
    w = w - _per(wei_zp, G * OCg).reshape((G, OCg) + (1,) * (nsp + 1))
    out = [(isp[i] - 1) * strides[i] - padding_l[i] - padding_r[i] + (ks[i] - 1) * (dl[i] + 1) + 1
           for i in range(nsp)]
    # accumulate on an extended grid that holds every position, then crop the padding
    ext = [(isp[i] - 1) * strides[i] + (ks[i] - 1) * (dl[i] + 1) + 1 for i in range(nsp)]
    big = np.zeros((N, G, OCg) + tuple(ext), np.int64)
    s = s.reshape((N, G, ICg) + isp)
    for tap in np.ndindex(*ks):
        wt = w[(slice(None),) * 3 + tuple(tap)]
        contrib = np.einsum("ngi...,goi->ngo...", s, wt)
        sl = tuple(slice(tap[i] * (dl[i] + 1), tap[i] * (dl[i] + 1) + (isp[i] - 1) * strides[i] + 1,
                         strides[i]) for i in range(nsp))
        big[(slice(None),) * 3 + sl] += contrib
    crop = tuple(slice(padding_l[i], padding_l[i] + out[i]) for i in range(nsp))
    # a negative start cannot happen (padding >= 0); positions past ext do not exist
    return big[(slice(None),) * 3 + crop].reshape((N, G * OCg) + tuple(out))


def quantized(acc, dst_dt, *, src_scale=None, wei_scales=None, bias=None, post_ops=(),
              dst_prev=None, dst_scale=None, dst_zp=None):
    """The epilogue over (N, OC, *sp) accumulators; per-channel values along OC; binary
    post-op inputs as logical (N|1, OC|1, *sp|1) arrays."""
    a = np.moveaxis(acc, 1, -1)
    scale = None
    if src_scale is not None or wei_scales is not None:
        ss = F32(1.0 if src_scale is None else np.asarray(src_scale, F32).reshape(-1)[0])
        ws = np.ones(1, F32) if wei_scales is None else np.asarray(wei_scales, F32).reshape(-1)
        scale = (ss * ws).astype(F32)
    ops = []
    for op in post_ops:
        if op[0] == "binary":
            ops.append(("binary", op[1], np.moveaxis(np.asarray(op[2], F32), 1, -1)))
        else:
            ops.append(op)
    prev = None if dst_prev is None else np.moveaxis(dst_prev, 1, -1)
    zp = None if dst_zp is None else np.asarray(dst_zp).reshape(-1)
    out = epilogue(a, dst_dt, scale=scale, bias=bias, post_ops=ops, dst_prev=prev,
                   dst_scale=dst_scale, dst_zp=zp)
    return np.moveaxis(out, -1, 1)
