"""Independent float64 models of the f32 layers (docs/f32_layers.md), written from the
definitions: convolution and deconvolution as direct sums over taps (the padding adds
nothing), with the sum of |products| that bounds any f32 summation order; OpenVINO's
FakeQuantize in f32 numpy; the quantizing store (dst scale, zero point, round half to even,
saturation, NaN -> 0 for u8 and 127 for s8)."""
import numpy as np

F32 = np.float32
U = 2.0 ** -24  # unit roundoff of f32


def _grouped(wei, src_ndim):
    w = wei.astype(np.float64)
    return w if w.ndim == src_ndim + 1 else w[None]


def conv_f64(src, wei, strides, padding_l, padding_r, dilates=None):
    """(sum over taps inside the source of src * wei, the same sum of |src * wei|), float64
    (N, OC, *out)."""
    nsp = src.ndim - 2
    w = _grouped(wei, src.ndim)
    G, OCg, ICg = w.shape[:3]
    ks = w.shape[3:]
    dl = dilates if dilates is not None else (0,) * nsp
    N = src.shape[0]
    s = np.pad(src.astype(np.float64), [(0, 0), (0, 0)] +
               [(padding_l[i], padding_r[i]) for i in range(nsp)])
    out = [(s.shape[2 + i] - (ks[i] - 1) * (dl[i] + 1) - 1) // strides[i] + 1 for i in range(nsp)]
    acc = np.zeros((N, G, OCg) + tuple(out))
    mag = np.zeros_like(acc)
    s = s.reshape((N, G, ICg) + s.shape[2:])
    for tap in np.ndindex(*ks):
        sl = tuple(slice(tap[i] * (dl[i] + 1), tap[i] * (dl[i] + 1) + (out[i] - 1) * strides[i] + 1,
                         strides[i]) for i in range(nsp))
        x = s[(slice(None),) * 3 + sl]
        wt = w[(slice(None),) * 3 + tuple(tap)]
        acc += np.einsum("ngi...,goi->ngo...", x, wt)
        mag += np.einsum("ngi...,goi->ngo...", np.abs(x), np.abs(wt))
    shape = (N, G * OCg) + tuple(out)
    return acc.reshape(shape), mag.reshape(shape)


def deconv_f64(src, wei, strides, padding_l, padding_r, dilates=None):
    """dst[oc, i*S - PL + k*(D+1)] += src[ic, i] * w[oc, ic, k]: (sum, sum of |.|), float64."""
    nsp = src.ndim - 2
    w = _grouped(wei, src.ndim)
    G, OCg, ICg = w.shape[:3]
    ks = w.shape[3:]
    dl = dilates if dilates is not None else (0,) * nsp
    N = src.shape[0]
    isp = src.shape[2:]
    s = src.astype(np.float64).reshape((N, G, ICg) + isp)
    out = [(isp[i] - 1) * strides[i] - padding_l[i] - padding_r[i] + (ks[i] - 1) * (dl[i] + 1) + 1
           for i in range(nsp)]
    ext = [(isp[i] - 1) * strides[i] + (ks[i] - 1) * (dl[i] + 1) + 1 for i in range(nsp)]
    big = np.zeros((N, G, OCg) + tuple(ext))
    mag = np.zeros_like(big)
    for tap in np.ndindex(*ks):
        sl = tuple(slice(tap[i] * (dl[i] + 1), tap[i] * (dl[i] + 1) + (isp[i] - 1) * strides[i] + 1,
                         strides[i]) for i in range(nsp))
        wt = w[(slice(None),) * 3 + tuple(tap)]
        big[(slice(None),) * 3 + sl] += np.einsum("ngi...,goi->ngo...", s, wt)
        mag[(slice(None),) * 3 + sl] += np.einsum("ngi...,goi->ngo...", np.abs(s), np.abs(wt))
    crop = (slice(None),) * 3 + tuple(slice(padding_l[i], padding_l[i] + out[i])
                                      for i in range(nsp))
    shape = (N, G * OCg) + tuple(out)
    return big[crop].reshape(shape), mag[crop].reshape(shape)


def sum_bound(mag, K):
    """|f32 result of any summation order of K products - exact| <= (K + 1) u sum |p| (each
    of the at most K roundings of a running sum, plus the products' own in an unfused
    order), as float64."""
    return (K + 1) * U * mag


def fake_quantize(x, il, ih, ol, oh, levels):
    """OpenVINO FakeQuantize-1 in f32 (ordered bounds), round half to even."""
    x = np.asarray(x, F32)
    il, ih, ol, oh = (np.asarray(v, F32) for v in (il, ih, ol, oh))
    n = F32(levels - 1)
    q = np.rint((x - il) / (ih - il) * n) / n * (oh - ol) + ol
    return np.where(x <= il, ol, np.where(x > ih, oh, q)).astype(F32)


def quantize(v, dt, scale=1.0, zp=0):
    """The store of an int8 destination: saturate(rne(v * f32(1/scale) + zp)), NaN -> 0 (u8)
    or 127 (s8), as oneDNN's reorder."""
    d = np.asarray(v, F32) * (F32(1) / F32(scale))
    if zp:
        d = d + F32(zp)
    lo, hi = (0, 255) if dt == "u8" else (-128, 127)
    d = np.where(np.isnan(d), F32(0 if dt == "u8" else 127), d)
    return np.clip(np.rint(d), lo, hi).astype(np.uint8 if dt == "u8" else np.int8)
