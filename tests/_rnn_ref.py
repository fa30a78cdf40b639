"""Independent numpy model of oneDNN 3.2's quantized RNN cells (tests only).

Written from the formulas of docs/rnn.md and oneDNN's jit RNN post-GEMM code, in numpy f32
operations step by step, with nothing from dnnq: the s32 products with int64 matmuls, the
shift compensation folded into the bias as oneDNN's ``bias_finalize`` does, and the jit
sigmoid / tanh approximations re-evaluated in numpy.  numpy has no f32 fused multiply-add: it
is emulated as ``f32(f64(a) * f64(b) + f64(c))`` (the product is exact in f64; only a double
rounding of the sum could differ from a true fma, at a tie of the f64 sum -- never observed).

``rnn_model`` runs every layer / direction / step and returns dst_layer, dst_iter and (LSTM)
dst_iter_c exactly as dnnq documents them; LSTM and GRU agree with the real oneDNN too (tested).
"""
import numpy as np

F32 = np.float32

_EXP_POL = [0x3f7ffffb, 0x3efffee3, 0x3e2aad40, 0x3d2b9d0d, 0x3c07cfce]


def _f(bits):
    return np.array(bits, np.uint32).view(F32)


def fma(a, b, c):
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64)
            + np.asarray(c, np.float64)).astype(F32)


def _tanh_table():
    """The 7 x 32 coefficients of oneDNN's jit tanh (hex copy at the end of this module)."""
    return _TANH_POL


def exp_jit(x):
    x = np.asarray(x, F32)
    lo, hi = _f(0xc2aeac50), _f(0x42b17218)
    under = x < lo
    x = np.minimum(x, hi)
    x = np.maximum(x, lo)
    fx = (x * _f(0x3fb8aa3b)).astype(F32)
    fx = (fx + F32(0.5)).astype(F32)
    n = np.floor(fx).astype(F32)
    r = fma(-n, _f(0x3f317218), x)
    e = (n - F32(1)).astype(np.int64) + 127
    p2 = np.where(under, 0, np.left_shift(e, 23)).astype(np.uint32).view(F32)
    p = np.full_like(x, _f(_EXP_POL[4]))
    for c in (_EXP_POL[3], _EXP_POL[2], _EXP_POL[1], _EXP_POL[0]):
        p = fma(p, r, _f(c))
    p = fma(p, r, F32(1))
    return ((p * p2).astype(F32) * F32(2)).astype(F32)


def logistic_jit(x):
    x = np.asarray(x, F32)
    neg = np.signbit(x)
    e = exp_jit(-np.abs(x))
    y = (e / (e + F32(1)).astype(F32)).astype(F32)
    return np.where(neg, y, (F32(1) - y).astype(F32)).astype(F32)


def tanh_jit(x):
    x = np.asarray(x, F32)
    b = x.view(np.uint32)
    sign = b & np.uint32(0x80000000)
    ab = b & np.uint32(0x7fffffff)
    s = ab.view(F32)
    idx = ((ab.astype(np.int64) - 0x39800000) >> 22) & 31
    r = (s - (ab & np.uint32(0xffc00000)).view(F32)).astype(F32)
    tab = _tanh_table()
    p = tab[6][idx]
    for d in range(5, -1, -1):
        p = fma(p, r, tab[d][idx])
    out = np.where(_f(0x41102cb3) > s, p, F32(1)).astype(F32)
    out = np.where(_f(0x39ddb3d7) > s, s, out).astype(F32)
    return (out.view(np.uint32) ^ sign).view(F32)


def quantize(v, scale, shift):
    v = (np.asarray(v, F32) * F32(scale)).astype(F32)
    v = (v + F32(shift)).astype(F32)
    v = np.where(v > 0, v, F32(0))
    v = np.minimum(v, F32(255))
    return np.rint(v).astype(np.uint8)


def dequantize(q, scale, shift):
    return ((q.astype(F32) - F32(shift)) / F32(scale)).astype(F32)


def _act(name, v):
    if name == "tanh":
        return tanh_jit(v)
    if name == "logistic":
        return logistic_jit(v)
    return np.where(v > 0, v, (v * F32(0)).astype(F32)).astype(F32)


def rnn_model(cell, direction, x, wl, wi, bias, *, scale, shift, wscales, h0=None, c0=None,
              activation=None, dst_layer_dt="u8", peephole=None, projection=None,
              pscales=None):
    """cell: lstm / gru / lbr_gru / vanilla.  x u8 (T, N, C); wl (L, D, C, G, H) s8; wi
    (L, D, P, G, H) s8; bias f32 (L, D, nb, H) or None; wscales (G*H,) or one value; h0 u8
    (L, D, N, P) / c0 f32 (L, D, N, H) or None.  LSTM only: peephole f32 (L, D, 3, H) (gates
    i, f, o, added with fused multiply-adds as oneDNN's jit cell: i, f += c_prev * p, o +=
    c * p); projection s8 (L, D, H, P) with pscales (P,) or one value: the u8 h is projected,
    ``(f32(acc) - f32(sum Wp) * shift) / f32(pscale * scale)``, and requantized (P = H
    without).  Returns (dst_layer, dst_iter, dst_iter_c or None)."""
    T, N, C = x.shape
    L, D, _, G, H = wl.shape
    P = H if projection is None else projection.shape[3]
    if projection is not None:
        pdiv = (np.broadcast_to(np.asarray(pscales, F32).reshape(-1), (P,))
                * F32(scale)).astype(F32)
    nb = G + (1 if cell == "lbr_gru" else 0)
    scale, shift = F32(scale), F32(shift)
    ws = np.broadcast_to(np.asarray(wscales, F32).reshape(-1), (G * H,)).reshape(G, H)
    div = (ws * scale).astype(F32)
    bias = np.zeros((L, D, nb, H), F32) if bias is None else np.asarray(bias, F32)
    dir_ids = [0, 1] if D == 2 else [1 if direction == "unidirectional_right2left" else 0]
    outs = np.zeros((L, D, T, N, P), np.uint8)
    dst_iter = np.zeros((L, D, N, P), np.uint8)
    dst_iter_c = np.zeros((L, D, N, H), F32)
    for l in range(L):
        for d, dir_id in enumerate(dir_ids):
            xin = x if l == 0 else outs[l - 1, d]
            Wl = wl[l, d].astype(np.int64).reshape(-1, G * H)
            Wi = wi[l, d].astype(np.int64).reshape(P, G * H)
            cl = wl[l, d].astype(np.int64).sum(axis=0).astype(F32)      # (G, H)
            ci = wi[l, d].astype(np.int64).sum(axis=0).astype(F32)
            b = bias[l, d]
            if cell == "lbr_gru":
                bc = np.empty((4, H), F32)
                bc[:2] = b[:2] - (((ci[:2] + cl[:2]) * shift).astype(F32) / div[:2]).astype(F32)
                bc[2] = b[2] - ((cl[2] * shift).astype(F32) / div[2]).astype(F32)
                bc[3] = b[3] - ((ci[2] * shift).astype(F32) / div[2]).astype(F32)
            else:
                bc = (b - (((ci + cl) * shift).astype(F32) / div).astype(F32)).astype(F32)
            if h0 is None:
                h = np.full((N, P), quantize(F32(0), scale, shift), np.uint8)
            else:
                h = h0[l, d].copy()
            c = np.zeros((N, H), F32) if c0 is None else c0[l, d].astype(F32).copy()
            times = range(T - 1, -1, -1) if dir_id == 1 else range(T)
            for t in times:
                al = (xin[t].astype(np.int64) @ Wl).reshape(N, G, H)
                ai = (h.astype(np.int64) @ Wi).reshape(N, G, H)

                def gate(g, acc):
                    return ((acc[:, g].astype(F32) / div[g]).astype(F32) + bc[g]).astype(F32)

                hp = dequantize(h, scale, shift)
                if cell == "lstm":
                    a = al + ai
                    pi, pf, po = gate(0, a), gate(1, a), gate(3, a)
                    if peephole is not None:
                        pi = fma(c, peephole[l, d, 0], pi)
                        pf = fma(c, peephole[l, d, 1], pf)
                    gi, gf, gc = logistic_jit(pi), logistic_jit(pf), tanh_jit(gate(2, a))
                    c = fma(gi, gc, (c * gf).astype(F32))
                    if peephole is not None:
                        po = fma(c, peephole[l, d, 2], po)
                    hn = (tanh_jit(c) * logistic_jit(po)).astype(F32)
                elif cell == "gru":
                    a = al + ai
                    gu, gr = logistic_jit(gate(0, a)), logistic_jit(gate(1, a))
                    rh = quantize((gr * hp).astype(F32), scale, shift)
                    a_o = al[:, 2] + rh.astype(np.int64) @ Wi[:, 2 * H:3 * H]
                    go = tanh_jit(((a_o.astype(F32) / div[2]).astype(F32) + bc[2]).astype(F32))
                    hn = fma((F32(1) - gu).astype(F32), go, (gu * hp).astype(F32))
                elif cell == "lbr_gru":
                    a = al + ai
                    gu, gr = logistic_jit(gate(0, a)), logistic_jit(gate(1, a))
                    wx = ((al[:, 2].astype(F32) / div[2]).astype(F32) + bc[2]).astype(F32)
                    uh = ((ai[:, 2].astype(F32) / div[2]).astype(F32) + bc[3]).astype(F32)
                    go = tanh_jit((wx + (gr * uh).astype(F32)).astype(F32))
                    hn = fma((F32(1) - gu).astype(F32), go, (gu * hp).astype(F32))
                else:
                    hn = _act(activation, gate(0, al + ai))
                h = quantize(hn, scale, shift)
                if projection is not None:
                    Wp = projection[l, d].astype(np.int64)
                    pcomp = (Wp.sum(axis=0).astype(F32) * shift).astype(F32)
                    acc = (h.astype(np.int64) @ Wp).astype(F32)
                    h = quantize(((acc - pcomp).astype(F32) / pdiv).astype(F32), scale, shift)
                outs[l, d, t] = h
            dst_iter[l, d] = h
            dst_iter_c[l, d] = c
    last = outs[L - 1]
    if direction == "bidirectional_concat":
        dl = np.concatenate([last[0], last[1]], axis=2)
    elif direction == "bidirectional_sum":
        s = np.minimum(last[0].astype(np.int32) + last[1].astype(np.int32), 255)
        if dst_layer_dt == "f32":
            return ((s.astype(F32) - (F32(2) * shift).astype(F32)) / scale).astype(F32), \
                dst_iter, (dst_iter_c if cell == "lstm" else None)
        dl = s.astype(np.uint8)
    else:
        dl = last[0]
    if dst_layer_dt == "f32":
        dl = dequantize(dl, scale, shift)
    return dl, dst_iter, (dst_iter_c if cell == "lstm" else None)


def _table_from_hex():
    rows = [r.split() for r in _TANH_HEX.strip().split("\n")]
    return [np.array([int(v, 16) for v in r], np.uint32).view(F32) for r in rows]


# oneDNN 3.2 jit_uni_eltwise_injector.cpp, tanh_pol_table: coefficient d (row) of the
# polynomial of interval i (column)
_TANH_HEX = """
00000000 39bfffff 39ffffff 3a3ffffe 3a7ffffb 3abffff7 3affffeb 3b3fffdc 3b7fffab 3bbfff70 3bfffeab 3c3ffdc0 3c7ffaab 3cbff701 3cffeaad 3d3fdc08 3d7faacd 3dbf7081 3dfeacc9 3e3dc7fd 3e7acbf5 3eb77a9f 3eec9a9f 3f22991f 3f42f7d6 3f67b7cc 3f76ca83 3f7ebbe9 3f7fd40c 3f7fff32 3f7ffffc 3f800000
3f800000 3f800018 3f7fffe8 3f7fffda 3f7fffdc 3f7fffdc 3f7fffac 3f7fff70 3f7ffeec 3f7ffdc0 3f7ffbed 3f7ff704 3f7feff5 3f7fdbca 3f7fbfff 3f7f7041 3f7f009b 3f7dc36c 3f7c0aa8 3f7734b8 3f70a4de 3f5f1fd8 3f495493 3f18b9ec 3ed706cb 3e390b06 3d90b11f 3c21a053 3aaf7fdb 37ccc1a3 355c6733 00000000
00000000 be4e0ff1 3d25b1b1 3d6b6dab 3c9fb1d5 babff06f 3c07b3f6 bb3fc1bc 3a9f5921 bbbf06f2 bbb0f402 bc47db9e bc73d5e7 bca25bda bcfca780 bd40e07c bd7dab03 bdbe4a0f bdfb14a5 be36cc8d be6bd102 be9fe7c5 beba0f10 bec206a8 bea3c388 be277d62 bd8b7960 bc209f49 baad44ca b7c6eeac b663aa41 00000000
00000000 45b3ae96 c414eb20 c450e02e c3152b4e bead2f56 c2162e02 beb4bd5a c11a59a4 bed2f507 c020d32c 3dd0f506 bf2a75e2 bff950e3 bed47334 be809b8c beb64532 be961a5b be9b63ac bea0d4b2 be828a77 be378612 bdc20908 3d2d3957 3dd46e89 3db3f629 3d2c5e7b 3bd20403 3a59dfae 3770af45 372cc014 00000000
00000000 cc981a1b 4a7edd3d 4ab1007c 48fedd9c 41a557b5 477ee32a 422557f5 45ff3ce4 42a55641 446e0867 c33dc19a 42915214 43af4fad 4110fe88 c1099b75 3fc8a8dc bfbeaef5 be365aad 3f4d9652 3ddfa08f 3e34e9b8 3e2d07a6 3dc63567 3cdaeb78 bcd17537 bc92829c bb43ab99 b9b471dd b6baad5a b78bafc7 00000000
00000000 52f688d5 d0505c72 d08f98e3 ce505cc9 c7162b8a cc5061d6 c7162bdf ca50b37f c7162a3a c8422086 471a714e c5ece1f1 c70e3d90 c3eba94a 43e0c424 c21f4552 42217cc8 405e7dc4 c10dd401 3e96b602 bd1a6d2f bd393883 bd674682 bd310016 b961e269 3ba32495 3a7680d5 38b3173c 35a9deea 375c3f2a 00000000
00000000 d8995ed1 558285ea 55b2cd69 53028625 4bc9991f 5082898a 4b4999b3 4e02c07c 4ac99764 4b72c822 ca40c0e1 489413e4 49b12224 46134c4e c60c2d57 43c83910 c3c872d1 c186bc9e 42325bc3 bf2ffa4a 3d9a203c bc545a43 bae08fee 3c80225d 3b1fd1df ba36b9d1 b91de544 b71f100f b408e2ed b685fec8 00000000
"""


_TANH_POL = _table_from_hex()
