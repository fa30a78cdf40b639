"""Pooling: max, average including padding, average excluding padding; 1-D, 2-D and 3-D.

``Pooling(alg, src_desc, dst_desc, *, strides, kernel, dilation=None, padding_l=None,
padding_r=None, attr=None)``; execute with ``{DNNL_ARG_SRC: x[, DNNL_ARG_DST: out]}`` plus the
inputs of binary post-ops.  Per spatial dimension (an int applies to all of them):
``kernel`` >= 1, ``strides`` >= 1, ``dilation`` >= 0 (oneDNN's convention: 0 = dense, the taps
are ``dilation + 1`` apart; None = 0), ``padding_l`` >= 0 (None = 0), ``padding_r`` (None =
``padding_l``; may be negative down to ``-stride``, as oneDNN).  The destination size must be
oneDNN's ``(I - ((K - 1) * (D + 1) + 1) + PL + PR) // S + 1``; for avg_exclude_padding the
paddings must also be smaller than the dilated kernel extent and ``dilation < I`` (no window
may lie entirely in the padding).  Limits (InvalidArguments beyond them): kernel, strides and
``dilation + 1`` at most 2^61, and so is the padded source ``I + PL + PR``; the window
``KD*KH*KW`` itself may be larger (its average divides by f32 of the exact product), the work
and memory follow the taps inside the source, never the kernel size.

Support table (``ext`` = beyond oneDNN 3.2):

=================  ================================================================
algorithms         max, avg_include_padding, avg_exclude_padding (``pooling_`` prefix)
src data type      u8, s8, s32, f32
dst data type      the src's, or f32 (ext: the unrounded average / the max as f32); an f32
                   src also s8 / u8 (ext: an f32 layer's quantized output)
layouts            plain (ncw, nchw, ncdhw) or channels-last (nwc, nhwc, ndhwc) on either
                   side (the fast path is channels-last, as in oneDNN)
scales / zp        f32 src: dst scale and zero point, mask 0 (ext); integer src: none
post-ops           eltwise, binary; checkpoint, select (ext) (what FakeQuantize needs)
=================  ================================================================

Numerics (bit-identical to oneDNN): integer sources accumulate in s32 (exact), f32 sources in
f32 in (d, h, w) tap order; max = the largest tap (a window entirely in the padding gives the
lowest value of the data type, -FLT_MAX for f32); the average divides by the count --
``KD*KH*KW`` (include padding) or the number of taps inside the source (exclude padding).
The post-ops then act on that f32 value -- the average is *not* rounded before them -- and the
result is stored with ``saturate(rne(.))``; without post-ops this is oneDNN's
``rne(sum / count)``.  An f32 source with an s8 / u8 dst stores ``saturate(rne(v * f32(1 /
dst_scale) + dst_zp))`` of the f32 result ``v`` (after the post-ops; NaN -> 0 for u8, +127 for
s8), what oneDNN's f32 pooling followed by its quantizing reorder gives.  oneDNN computes these details differently per kernel, and dnnq follows
the kernel oneDNN would pick for the same descriptors:

=====================================  ============================  ==========================
case                                   average                       ``linear`` post-op
=====================================  ============================  ==========================
f32 (oneDNN: jit)                      ``f32(sum) / count``          one fused multiply-add
integer, channels-last, avg (jit_int)  ``f32(sum) * f32(1/count)``   one fused multiply-add
integer, plain, or max (ref:any)       ``f32(sum) / count``          ``alpha*x`` then ``+beta``
=====================================  ============================  ==========================

(The choices only show with post-ops: without them every variant rounds to the same integer.)
"""
import math
from numbers import Integral

import numpy as np

from dnnq import args as A
from dnnq.primitives import _impls
from dnnq.primitives._cache import CachedPrimitive
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.primitives import _pointwise as pw
from dnnq.primitives._kernels import _toolkit as _tk

_ALGS = {"max": _tk.POOL_MAX, "avg_include_padding": _tk.POOL_AVG_INC,
         "avg_exclude_padding": _tk.POOL_AVG_EXC}
_DTS = ("f32", "s32", "s8", "u8")
# Largest kernel, stride, dilation + 1 and padded source extent (I + PL + PR): the kernels'
# 64-bit index arithmetic adds up to three such values (tap index = o * S - PL + k * (D + 1)).
GEOMETRY_LIMIT = 2 ** 61
_INT32_MAX = 2 ** 31 - 1
_STREAM8_MIN_TAPS, _STREAM8_MIN_TAPS_TAIL = 25, 9  # (tk_pool_stream8.h: measured)
_F32_MAX = float(np.finfo(np.float32).max)


def _f32_of_int(n):
    """f32(n) rounded once, half to even, for any int n >= 0 (float(n) would round twice
    above 2^53); inf above the f32 range."""
    if n < 2 ** 24:
        return float(n)
    shift = n.bit_length() - 24
    q, r = divmod(n, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    v = math.ldexp(float(q), shift) if shift < 1000 else math.inf  # q * 2^shift, exact
    return v if v <= _F32_MAX else math.inf


def _alg(alg):
    if isinstance(alg, str):
        name = alg[len("pooling_"):] if alg.startswith("pooling_") else alg
        if name in _ALGS:
            return name
    raise InvalidArguments(f"Pooling: alg got {alg!r}; expected one of {', '.join(_ALGS)} (a "
                           "'pooling_' prefix is accepted)")


def _spatial(name, value, n, default, lo):
    if value is None:
        if default is None:
            raise InvalidArguments(f"Pooling: {name} is required (one int or {n} ints)")
        return [default] * n
    if isinstance(value, Integral) and not isinstance(value, bool):
        vals = [int(value)] * n
    else:
        try:
            vals = list(value)
        except TypeError:
            raise InvalidArguments(f"Pooling: {name} got {value!r}; expected an int or {n} "
                                   "ints") from None
        if len(vals) != n or any(isinstance(v, bool) or not isinstance(v, Integral)
                                 for v in vals):
            raise InvalidArguments(f"Pooling: {name} got {value!r}; expected an int or {n} ints "
                                   f"(one per spatial dimension)")
        vals = [int(v) for v in vals]
    for v in vals:
        if lo is not None and v < lo:
            raise InvalidArguments(f"Pooling: {name} got {value!r}; expected values >= {lo}")
    return vals


class Pooling(pw.ToolkitPrimitive, metaclass=CachedPrimitive):
    """Max and average pooling, 1-D, 2-D and 3-D.

    Parameters
    ----------
    alg : {"max", "avg_include_padding", "avg_exclude_padding"}
        A ``pooling_`` prefix is accepted.
    src_desc : MemoryDesc
        u8, s8, s32 or f32, ``(N, C, [D,] [H,] W)``, plain or channels-last.
    dst_desc : MemoryDesc
        The source's data type, or f32; ``(N, C, [OD,] [OH,] OW)``.
    strides, kernel : int or sequence of int
        Keyword-only; >= 1, one value or one per spatial dim.
    dilation : int or sequence of int, optional
        Keyword-only; oneDNN's convention (0 = dense).
    padding_l, padding_r : int or sequence of int, optional
        Keyword-only; ``padding_l >= 0`` (None: 0), ``padding_r`` None means ``padding_l``.
    attr : PrimitiveAttr, optional
        Keyword-only.  Post-ops (eltwise, binary, checkpoint, select); no scales.

    Attributes
    ----------
    impl_info : str
        The kernel, e.g. ``"avx512:pooling_nspc"``.

    Raises
    ------
    InvalidArguments
        A destination size that is not oneDNN's ``(I - ((K - 1) * (D + 1) + 1) + PL + PR)
        // S + 1``, strides or kernels < 1, paddings out of range.
    Unimplemented
        Scales, zero points, a sum post-op.

    See Also
    --------
    Convolution

    Notes
    -----
    Support table and numerics (see the module docstring):

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> pool = dnnq.Pooling("avg_include_padding", dnnq.MemoryDesc((1, 1, 2, 4), "u8"),
    ...                     dnnq.MemoryDesc((1, 1, 1, 2), "u8"), strides=2, kernel=2)
    >>> pool.execute({dnnq.DNNL_ARG_SRC: np.array([[[[1, 2, 5, 5], [3, 4, 5, 6]]]], np.uint8)})
    array([[[[2, 5]]]], dtype=uint8)
    """

    _kind = "pooling"

    def __init__(self, alg, src_desc, dst_desc, *, strides, kernel, dilation=None,
                 padding_l=None, padding_r=None, attr=None):
        p = "Pooling"
        self.alg = _alg(alg)
        pw.check_md(p, src_desc, "src_desc", _DTS, (3, 4, 5))
        pw.check_md(p, dst_desc, "dst_desc", _DTS, (3, 4, 5))
        if dst_desc.ndims != src_desc.ndims:
            raise InvalidArguments(f"{p}: dst_desc dims {dst_desc.dims} and src_desc dims "
                                   f"{src_desc.dims} have different ranks")
        # f32 src: an s8 / u8 dst too (an f32 layer's quantized output, with a dst scale and
        # zero point: ext, oneDNN 3.2 has no f32 -> int8 pooling)
        allowed = ("f32", "s8", "u8") if src_desc.dt == "f32" else (src_desc.dt, "f32")
        if dst_desc.dt not in allowed:
            raise Unimplemented(f"{p}: dst data type {dst_desc.dt} with src data type "
                                f"{src_desc.dt} is not supported; supported: "
                                f"{' or '.join(allowed)}")
        N, C, *isp = src_desc.dims
        N2, C2, *osp = dst_desc.dims
        if (N, C) != (N2, C2):
            raise InvalidArguments(f"{p}: dst_desc dims {dst_desc.dims} must keep N={N} and C={C} "
                                   f"of src_desc dims {src_desc.dims}")
        ns = len(isp)
        k = _spatial("kernel", kernel, ns, None, 1)
        s = _spatial("strides", strides, ns, None, 1)
        d = _spatial("dilation", dilation, ns, 0, 0)
        pl = _spatial("padding_l", padding_l, ns, 0, 0)
        pr = list(pl) if padding_r is None else _spatial("padding_r", padding_r, ns, 0, None)
        for name, vals in (("kernel", k), ("strides", s)):
            for v in vals:
                if v > GEOMETRY_LIMIT:
                    raise InvalidArguments(f"{p}: {name} got {vals}; expected values <= 2^61 "
                                           f"({GEOMETRY_LIMIT})")
        for v in d:
            if v + 1 > GEOMETRY_LIMIT:
                raise InvalidArguments(f"{p}: dilation got {d}; expected values < 2^61 "
                                       f"({GEOMETRY_LIMIT})")
        for i in range(ns):
            if isp[i] + pl[i] + max(pr[i], 0) > GEOMETRY_LIMIT:
                raise InvalidArguments(
                    f"{p}: padding_l {pl} and padding_r {pr} with source dims {tuple(isp)}: the "
                    f"padded source in spatial dimension {i} ({isp[i]} + {pl[i]} + {pr[i]}) "
                    f"exceeds 2^61 ({GEOMETRY_LIMIT}); expected I + padding_l + padding_r <= "
                    "2^61")
            ext = (k[i] - 1) * (d[i] + 1) + 1
            if pr[i] + s[i] < 0:
                raise InvalidArguments(f"{p}: padding_r {pr} is below -strides {s} in spatial "
                                       f"dimension {i}; expected padding_r >= -stride")
            num = isp[i] - ext + pl[i] + pr[i]
            if num < 0:
                raise InvalidArguments(
                    f"{p}: the dilated kernel ({ext}) does not fit the padded source ({isp[i]} + "
                    f"{pl[i]} + {pr[i]}) in spatial dimension {i}")
            want = num // s[i] + 1
            if osp[i] != want:
                raise InvalidArguments(
                    f"{p}: dst_desc spatial dims {tuple(osp)}; dimension {i} must be "
                    f"(I - ((K-1)*(D+1)+1) + PL + PR) // S + 1 = ({isp[i]} - {ext} + {pl[i]} + "
                    f"{pr[i]}) // {s[i]} + 1 = {want}")
            if self.alg == "avg_exclude_padding" and not (pl[i] < ext and pr[i] < ext
                                                          and d[i] < isp[i]):
                raise InvalidArguments(
                    f"{p}: avg_exclude_padding needs padding_l and padding_r below the dilated "
                    f"kernel extent {ext} and dilation below the source size {isp[i]} (spatial "
                    f"dimension {i}: padding {pl[i]}/{pr[i]}, dilation {d[i]}); a window entirely "
                    "in the padding has no average")
        # a dst scale and zero point after an f32 source (the quantizing store of SPEC section
        # 2); integer sources take none (the average and max keep their values)
        dst_q = ({A.DNNL_ARG_DST: (dst_desc.dims, (0,))} if src_desc.dt == "f32" else {})
        qa = pw.QuantAttr(p, attr, dst_q, dst_q, ("eltwise", "binary", "checkpoint", "select"))
        self.src_desc, self.dst_desc, self.attr, self._qa = src_desc, dst_desc, qa.attr, qa
        self.kernel, self.strides, self.dilation = tuple(k), tuple(s), tuple(d)
        self.padding_l, self.padding_r = tuple(pl), tuple(pr)
        self._isa = _impls.choose("pooling", _impls.TOOLKIT).isa
        cl = src_desc.is_channels_last
        # epilogue: post-ops and the store, over dst dims in the order of the kernel's rows
        prog = pw.Program(dst_desc.dims, src_desc.physical_order)
        dst_k = prog.operand("dst", dst_desc.dt, dst_desc.strides, writable=True)
        # oneDNN's kernels: f32 -> JIT (sum / count, fused linear); integer channels-last
        # average -> jit_int (sum * f32(1 / count), fused linear); other integer cases -> its
        # reference kernel (sum / count, linear rounded twice).  dnnq reproduces each.
        # oneDNN takes jit_int for channels-last tensors; otherwise ref:any, which reads every
        # tap as f32 and accumulates (max / sum) in f32 in tap order -- for s32 data beyond
        # 2^24 that is not the exact integer, and dnnq reproduces it.  (Shapes whose plain and
        # channels-last strides coincide -- C == 1 or one spatial point -- get either kernel
        # in oneDNN depending on which descriptor its primitive cache saw first.)
        nspc = src_desc.is_channels_last and dst_desc.is_channels_last
        self._s32_via_f32 = src_desc.dt == "s32" and dst_desc.dt == "s32" and not nspc
        # (oneDNN's jit_int declines dilated windows: its reference kernel runs them)
        jit_int = (src_desc.dt != "f32" and nspc and self.alg != "max" and
                   not any(d))
        fused = src_desc.dt == "f32" or jit_int
        pw.add_post_ops(prog, qa, dst_desc.dims, dst_k, dst_desc.dt, fused_linear=fused)
        zero = (0,) * dst_desc.ndims
        if A.DNNL_ARG_DST in qa.scale_mask:  # d = v * f32(1 / scale) + zp, then the store
            prog.bin_opnd(0, "mul", prog.operand("inv_dst_scale", "f32", zero))
        if A.DNNL_ARG_DST in qa.zp_mask:
            prog.bin_opnd(0, "add", prog.operand("dst_zp", "f32", zero))
        prog.store(0, dst_k)
        epi = prog.build(self._isa, collapse="rows")
        if epi.plan.n_operands and epi.keys[0] != "dst":  # pragma: no cover - dst registered first
            raise AssertionError("pooling epilogue: operand 0 must be dst")
        self._epi = epi
        pad3 = lambda v, fill: [fill] * (3 - ns) + list(v)  # noqa: E731
        kk, ss, dd, pp = pad3(k, 1), pad3(s, 1), pad3([x + 1 for x in d], 1), pad3(pl, 0)
        ii, oo = pad3(isp, 1), pad3(osp, 1)
        # a stride is irrelevant where the output has one position; elsewhere it is at most
        # the padded source (the direct int8 kernels below also want it <= the source size)
        ss = [1 if o_ == 1 else s_ for s_, o_ in zip(ss, oo)]
        # window sizes in exact integers: KD*KH*KW can pass 2^64 (r03, r05); the kernels get
        # the window capped (only compared with small bounds), the include-padding count as
        # its f32 value, and the most taps a window can have inside the source (the size of
        # their tap lists: never proportional to the kernel)
        window = kk[0] * kk[1] * kk[2]
        max_taps = 1
        for K_, I_, D_ in zip(kk, ii, dd):
            max_taps *= min(K_, -(-I_ // D_))
        if max_taps > _INT32_MAX:
            raise Unimplemented(f"{p}: a window can hold {max_taps} taps inside source dims "
                                f"{src_desc.dims} (kernel {tuple(k)}, dilation {tuple(d)}); "
                                f"supported: at most 2^31 - 1")
        geom = dict(N=N, C=C, ID=ii[0], IH=ii[1], IW=ii[2], OD=oo[0], OH=oo[1], OW=oo[2],
                    KD=kk[0], KH=kk[1], KW=kk[2], SD=ss[0], SH=ss[1], SW=ss[2],
                    DD=dd[0], DH=dd[1], DW=dd[2], PD=pp[0], PH=pp[1], PW=pp[2],
                    window=min(window, _INT32_MAX), max_taps=max_taps,
                    count_inc=_f32_of_int(window))
        raw = (self.alg == "max" and not qa.post_ops and dst_desc.dt == src_desc.dt
               and dst_desc.physical_order == src_desc.physical_order
               and not self._s32_via_f32)
        # direct int8 kernels (max in int8, average in s16 / s32 then one f32 step)
        fast8 = (cl and src_desc.dt in ("s8", "u8") and dst_desc.dt == src_desc.dt
                 and not qa.post_ops and dst_desc.physical_order == src_desc.physical_order
                 and window <= 256 and all(s_ <= i_ for s_, i_ in zip(ss, ii)))
        # the other channels-last 8-bit averages with adjacent taps along w: the window rows
        # summed as byte streams (tk_pool_stream8.h) when the windows are large enough to
        # repay its fixed cost per output (measured), smaller ones when the tap loop would
        # leave channels to scalar code (its vectors hold 16 channels)
        stream8 = (cl and src_desc.dt in ("s8", "u8") and self.alg != "max" and not fast8
                   and d[-1] == 0 and (C < 16 or max_taps >= (_STREAM8_MIN_TAPS if C % 16 == 0
                                                              else _STREAM8_MIN_TAPS_TAIL)))
        self._plan = _tk.PoolPlan(pw.ISA_CODE[self._isa], _ALGS[self.alg],
                                  pw.DT_CODE["f32" if self._s32_via_f32 else src_desc.dt],
                                  cl, raw, geom, epi.plan, jit_int, fast8, stream8)
        self._known = frozenset({A.DNNL_ARG_SRC, A.DNNL_ARG_DST} | qa.known_args())
        self.impl_info = f"{pw.kernel_name(self._isa)}:pooling_{'nspc' if cl else 'ncsp'}"
        self._created()

    def _descs(self):
        return (("src", self.src_desc), ("dst", self.dst_desc))

    def _problem(self):
        return (f"alg:pooling_{self.alg} " + "x".join(map(str, self.src_desc.dims)) +
                f" k{'x'.join(map(str, self.kernel))} s{'x'.join(map(str, self.strides))} "
                f"d{'x'.join(map(str, self.dilation))} pl{'x'.join(map(str, self.padding_l))} "
                f"pr{'x'.join(map(str, self.padding_r))}")

    def execute(self, args):
        """Run the primitive once.

        Releases the GIL; several Python threads may execute one primitive at once.

        Parameters
        ----------
        args : dict
            ``{DNNL_ARG_*: numpy.ndarray}``: ``DNNL_ARG_SRC``, the scales / zero points the attribute
            declared, the post-op inputs, and optionally ``DNNL_ARG_DST``.

        Returns
        -------
        numpy.ndarray
            The destination: the ``DNNL_ARG_DST`` array, written in place, when given; else
            a new array.

        Raises
        ------
        InvalidArguments
            A missing, unknown or mistyped key, an array of the wrong dtype or shape,
            scales that are not finite and > 0, a destination that overlaps an input.
        MemoryError
            When the scratch memory cannot be allocated.
        """
        return self._timed(self._execute, args)

    _dynamic = {A.DNNL_ARG_SRC: ("src", "src_desc")}

    def _execute(self, args):
        arrays = self._arrays(args)
        user, phys = pw.output("Pooling", self.dst_desc, args)
        if user is not None:  # no input may overlap dst (oneDNN's pooling is not in place)
            pw.check_overlaps("Pooling", args)
        self._run(arrays, phys)
        return pw.finish(self.dst_desc, user, phys)

    def _arrays(self, args):
        """The source (physical order) and the epilogue's arrays but dst, every argument
        validated."""
        p, qa = "Pooling", self._qa
        pw.check_known_args(p, args, self._known)
        arrays = {"src": self.src_desc.check_array(pw.require(p, args, A.DNNL_ARG_SRC, "src"),
                                                   "src")}
        pw.fetch_post_op_inputs(p, qa, args, arrays)
        ds = qa.scales(args, A.DNNL_ARG_DST)
        if ds is not None:
            arrays["inv_dst_scale"] = pw.reciprocal(ds)
        zd = qa.zero_points_f32(args, A.DNNL_ARG_DST)
        if zd is not None:
            arrays["dst_zp"] = zd
        return arrays

    def _run(self, arrays, phys):
        arrays["dst"] = phys
        src, epi = arrays["src"], self._epi
        if self._s32_via_f32:  # ref:any's f32 taps (same layout, K order)
            src = src.astype(np.float32)
        self._plan.run(src, [arrays[k] for k in epi.keys], epi.writable, phys,
                       pw.threads_for(src.size))


class _PoolingBoundRun(pw.BoundRun):
    """Pooling.bind's runner: the pooling plan instead of a pointwise one."""

    __slots__ = ()

    def _run(self, arrays, phys):
        self.prim._run(arrays, phys)
        return self.desc.logical_view(phys)


Pooling._bound_run = _PoolingBoundRun
