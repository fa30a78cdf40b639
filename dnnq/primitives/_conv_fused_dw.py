"""The fused depthwise post-op (``PostOps.append_dw``): a 1x1 convolution followed by a KxK
depthwise convolution, executed as oneDNN 3.2 does (``ref_fused_convolution``; every rule
below verified bit-exact against it):

* the descriptors given to ``Convolution`` are those of the 1x1 convolution: its dst_desc
  describes the intermediate (its data type is the one the 1x1's result is rounded and
  saturated to); ``execute`` returns the depthwise output ``(N, C, OH', OW')`` of the post-op's
  ``dst_dt``, ``OH' = (OH + 2 * padding_l_size - kernel_size) // stride_size + 1``, laid out
  like dst_desc;
* the 1x1 runs with the src / weights scales, bias and the post-ops *before* the depthwise
  one, and the DNNL_ARG_DST scale;
* the depthwise convolution reads the intermediate with that DNNL_ARG_DST scale as its source
  scale (no zero point), its weights ``(C, 1, 1, K, K)`` s8 as
  ``DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS``, bias ``DNNL_ARG_ATTR_POST_OP_DW |
  DNNL_ARG_BIAS``, weights scales ``DNNL_ARG_SCALE | DNNL_ARG_ATTR_POST_OP_DW |
  DNNL_ARG_WEIGHTS`` (mask 0 or 3), destination scale ``DNNL_ARG_SCALE |
  DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_DST`` (mask 0), then the post-ops after it.

The intermediate is computed in bands of rows (the 1x1 for the rows one band of depthwise
outputs needs, then that band), so only a band of it exists at a time.
"""
import numpy as np

from dnnq import args as A
from dnnq.attr import PrimitiveAttr
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc
from dnnq.post_ops import PostOps
from dnnq.primitives._common import arg_name, check_known_args, check_overlaps
from dnnq.primitives._conv_geometry import packed_sizes

DW = A.DNNL_ARG_ATTR_POST_OP_DW
_DW_WEI, _DW_BIAS = DW | A.DNNL_ARG_WEIGHTS, DW | A.DNNL_ARG_BIAS
_DW_WS, _DW_DS = A.DNNL_ARG_SCALE | _DW_WEI, A.DNNL_ARG_SCALE | DW | A.DNNL_ARG_DST
_BAND_ROWS = 8  # depthwise output rows per band


def _copy_ops(ops, indices):
    """A PostOps with the ops at `indices` of `ops` (in order)."""
    out = PostOps()
    for i in indices:
        kind, op = ops.kind(i), ops[i]
        if kind == "eltwise":
            out.append_eltwise(op.alg, op.alpha, op.beta)
        elif kind == "binary":
            out.append_binary(op.alg, op.src1_desc)
        elif kind == "sum":
            out.append_sum(op.scale, op.zero_point, op.dt)
        elif kind == "checkpoint":
            out.append_checkpoint()
        elif kind == "select":
            out.append_select(op.alg, op.cond_desc, op.value_desc)
    return out


class FusedDepthwise:
    """The two convolutions of a 1x1 + depthwise chain (see the module docstring)."""

    def __init__(self, prim, conv_cls, src_desc, weights_desc, dst_desc, bias_desc, geo, attr,
                 dw_index):
        p = prim
        ops = attr.post_ops
        dw = ops[dw_index]
        if geo.deconv or geo.nsp != 2 or geo.kernel != (1, 1, 1) or geo.strides != (1, 1, 1) \
                or geo.pads != (0, 0, 0) or geo.pads_r != (0, 0, 0) or geo.G != 1:
            raise InvalidArguments(
                f"{p}: post_op[{dw_index}] depthwise (append_dw) follows only a 2-D 1x1 "
                f"convolution with stride 1, no padding and no groups; got kernel "
                f"{geo.kernel[1:]}, strides {geo.strides[1:]}, padding {geo.pads[1:]} / "
                f"{geo.pads_r[1:]}, groups {geo.G}")
        if dw.weights_dt != "s8":
            raise Unimplemented(f"{p}: depthwise post-op weights_dt {dw.weights_dt}; supported: s8")
        if dst_desc.dt not in ("u8", "s8"):
            raise Unimplemented(f"{p}: with a depthwise post-op the dst (intermediate) data type "
                                f"must be u8 or s8 (the depthwise source); got {dst_desc.dt}")
        for i in range(len(ops)):
            if ops.kind(i) == "sum":
                raise Unimplemented(f"{p}: post_op[{i}] sum together with a depthwise post-op is "
                                    "not supported")
        zps = attr.zero_points_args()
        if A.DNNL_ARG_DST in zps:
            raise Unimplemented(f"{p}: a dst zero point with a depthwise post-op is not supported")
        scales = attr.scales_args()
        for arg in scales:
            if arg not in (A.DNNL_ARG_SRC, A.DNNL_ARG_WEIGHTS, A.DNNL_ARG_DST, _DW_WEI,
                           DW | A.DNNL_ARG_DST):
                raise Unimplemented(f"{p}: scales of {arg_name(arg)} are not supported with a "
                                    "depthwise post-op")
        if scales.get(_DW_WEI, 0) not in (0, 3):
            raise Unimplemented(f"{p}: scales mask {scales[_DW_WEI]} of dw.weights is not "
                                "supported; supported masks: 0, 3")
        if scales.get(DW | A.DNNL_ARG_DST, 0) != 0:
            raise Unimplemented(f"{p}: scales mask {scales[DW | A.DNNL_ARG_DST]} of dw.dst is not "
                                "supported; supported masks: 0")
        N, C = geo.N, geo.OC
        H, W = geo.dst[1], geo.dst[2]
        k, s, pad = dw.kernel_size, dw.stride_size, dw.padding_l_size
        OH2, OW2 = (H + 2 * pad - k) // s + 1, (W + 2 * pad - k) // s + 1
        if OH2 < 1 or OW2 < 1:
            raise InvalidArguments(f"{p}: the depthwise post-op (kernel {k}, stride {s}, padding "
                                   f"{pad}) leaves no output for a {H}x{W} intermediate")
        self.k, self.s, self.pad = k, s, pad
        self.H, self.W, self.OH2, self.OW2 = H, W, OH2, OW2
        self.N, self.C = N, C
        # the 1x1 part
        a1 = PrimitiveAttr()
        for arg in (A.DNNL_ARG_SRC, A.DNNL_ARG_WEIGHTS, A.DNNL_ARG_DST):
            if arg in scales:
                a1.set_scales_mask(arg, scales[arg])
        for arg, m in zps.items():
            a1.set_zero_points_mask(arg, m)
        a1.set_post_ops(_copy_ops(ops, range(dw_index)))
        self.mid_dt = dst_desc.dt
        self._first_kw = dict(src_desc=src_desc, weights_desc=weights_desc, bias_desc=bias_desc,
                              attr=a1, conv_cls=conv_cls)
        # the depthwise part, attributes shared by every band
        a2 = PrimitiveAttr()
        self.src_scale = A.DNNL_ARG_DST in scales
        if self.src_scale:
            a2.set_scales_mask(A.DNNL_ARG_SRC, 0)
        if _DW_WEI in scales:
            a2.set_scales_mask(A.DNNL_ARG_WEIGHTS, scales[_DW_WEI])
        if DW | A.DNNL_ARG_DST in scales:
            a2.set_scales_mask(A.DNNL_ARG_DST, 0)
        after = list(range(dw_index + 1, len(ops)))
        a2.set_post_ops(_copy_ops(ops, after))
        self.after = after
        self.dw_desc = dw
        self.dw_weights_desc = MemoryDesc((C, 1, 1, k, k), "s8")
        self.dw_bias_desc = None if dw.bias_dt is None else MemoryDesc((C,), dw.bias_dt)
        self._a2 = a2
        cl = dst_desc.is_channels_last
        self.out_desc = MemoryDesc((N, C, OH2, OW2), dw.dst_dt, "nhwc" if cl else None)
        self.pad_r = (OW2 - 1) * s + k - W - pad
        if self.pad_r < 0:
            raise Unimplemented(f"{p}: depthwise post-op with stride {s} > padding {pad} + 1 "
                                "(a negative right padding) is not supported")
        for i in range(len(ops)):
            if ops.kind(i) in ("binary", "select"):
                descs = [ops[i].src1_desc] if ops.kind(i) == "binary" else \
                    [ops[i].cond_desc, ops[i].value_desc]
                for d in descs:
                    if d.ndims != 4 or d.dims[0] != 1 or d.dims[2:] != (1, 1) or \
                            d.dims[1] not in (1, C):
                        raise Unimplemented(f"{p}: post_op[{i}] input dims {d.dims} with a "
                                            "depthwise post-op; supported: (1, 1, 1, 1) or "
                                            f"(1, {C}, 1, 1)")
        self._bands = {}

    # ---- band primitives ---------------------------------------------------------------------
    def _band(self, o0, o1):
        """The 1x1 over the intermediate rows [r0, r1) that depthwise output rows [o0, o1)
        read, and the depthwise convolution producing those output rows from them (padding
        rows above / below only where the band meets the border)."""
        k, s, pad = self.k, self.s, self.pad
        lo, hi = o0 * s - pad, (o1 - 1) * s - pad + k  # rows read, before clipping
        r0, r1 = max(0, lo), min(self.H, hi)
        key = (r1 - r0, o1 - o0, r0 - lo, hi - r1)
        if key not in self._bands:
            fk = self._first_kw
            N, C, rows = self.N, self.C, r1 - r0
            sd = fk["src_desc"]
            first = fk["conv_cls"](
                MemoryDesc((N, sd.dims[1], rows, self.W), sd.dt, "nhwc"), fk["weights_desc"],
                MemoryDesc((N, C, rows, self.W), self.mid_dt, "nhwc"), fk["bias_desc"],
                strides=(1, 1), padding_l=(0, 0), padding_r=(0, 0), attr=fk["attr"])
            second = fk["conv_cls"](
                MemoryDesc((N, C, rows, self.W), self.mid_dt, "nhwc"), self.dw_weights_desc,
                MemoryDesc((N, C, o1 - o0, self.OW2), self.dw_desc.dst_dt, "nhwc"),
                self.dw_bias_desc, strides=(s, s), padding_l=(r0 - lo, pad),
                padding_r=(hi - r1, self.pad_r), attr=self._a2)
            self._bands[key] = (first, second)
        return (r0, r1) + self._bands[key]

    def execute(self, src_cl, first_args, dw_args, first_w, dw_w):
        """src_cl: channels-last (N, H, W, IC) source, the packed weights of both parts;
        returns the (N, OH', OW', C) output."""
        out = np.empty((self.N, self.OH2, self.OW2, self.C), self.out_desc.numpy_dtype)
        for o0 in range(0, self.OH2, _BAND_ROWS):
            o1 = min(self.OH2, o0 + _BAND_ROWS)
            r0, r1, first, second = self._band(o0, o1)
            a1 = dict(first_args)
            a1[A.DNNL_ARG_WEIGHTS] = first_w.for_owner(first._key)
            a1[A.DNNL_ARG_SRC] = src_cl[:, r0:r1].transpose(0, 3, 1, 2)  # a view, no copy
            a2 = dict(dw_args)
            a2[A.DNNL_ARG_WEIGHTS] = dw_w.for_owner(second._key)
            a2[A.DNNL_ARG_SRC] = first.execute(a1)
            a2[A.DNNL_ARG_DST] = out[:, o0:o1].transpose(0, 3, 1, 2)
            band = second.execute(a2)
            if not np.may_share_memory(band, out):
                out[:, o0:o1] = np.moveaxis(band, 1, -1)
        return out


def init_fused(self, attr, dw_index):
    """Convolution.__init__ for a chain with a depthwise post-op (`self` the primitive)."""
    geo = self._geo
    f = FusedDepthwise(self._name, type(self), self.src_desc, self.weights_desc,
                       self.dst_desc, self.bias_desc, geo, attr, dw_index)
    self._fused = f
    self._dw_index = dw_index
    r0, r1, first, second = f._band(0, min(f.OH2, 8))
    self._isa = first._isa
    self._dw_layout, self._dw_s16_layout = first._dw_layout, first._dw_s16_layout
    self._halve = first._halve  # set_int8_numerics("avx2"): as the 1x1 packs its weights
    self._packed_sizes = packed_sizes(geo, self._dw_layout)
    self.impl_info = f"{first.impl_info}+{second.impl_info}"
    self._key = (type(self).__name__, self.src_desc, self.weights_desc, self.dst_desc,
                 self.bias_desc, attr.key(), geo.key(), self._isa, self._numerics)
    ops = attr.post_ops
    known = {A.DNNL_ARG_SRC, A.DNNL_ARG_WEIGHTS, A.DNNL_ARG_DST, DW | A.DNNL_ARG_WEIGHTS}
    if self.bias_desc is not None:
        known.add(A.DNNL_ARG_BIAS)
    if f.dw_bias_desc is not None:
        known.add(DW | A.DNNL_ARG_BIAS)
    known |= {A.DNNL_ARG_SCALE | a for a in attr.scales_args()}
    known |= {A.DNNL_ARG_ATTR_ZERO_POINTS | a for a in attr.zero_points_args()}
    self._remap = {}  # outer post-op input key -> (band part 0 / 1, inner key)
    for i in range(len(ops)):
        kind = ops.kind(i)
        j, part = (i, 0) if i < dw_index else (i - dw_index - 1, 1)
        for arg in ((A.DNNL_ARG_SRC_1,) if kind == "binary" else
                    (A.DNNL_ARG_SRC_1, A.DNNL_ARG_SRC_2) if kind == "select" else ()):
            key = A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | arg
            known.add(key)
            self._remap[key] = (part, A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(j) | arg)
    self._known = frozenset(known)

def execute_fused(self, args):
    """Convolution.execute for a chain with a depthwise post-op."""
    p, f = self._name, self._fused
    check_known_args(p, args, self._known)
    for need, what in ((A.DNNL_ARG_SRC, "src"), (A.DNNL_ARG_WEIGHTS, "weights"),
                       (DW | A.DNNL_ARG_WEIGHTS, "depthwise weights")):
        if need not in args:
            raise InvalidArguments(f"{p}.execute: missing {what} ({arg_name(need)})")
    if A.DNNL_ARG_DST in args:  # no input may overlap dst (not in place)
        check_overlaps(p, args)
    x = self._channels_last(self.src_desc, args[A.DNNL_ARG_SRC], "src")
    pw = self._weights(args[A.DNNL_ARG_WEIGHTS])
    _, _, _, second0 = f._band(0, min(f.OH2, 8))
    dw_w = second0.prepare_weights(args[DW | A.DNNL_ARG_WEIGHTS])  # small: per execution
    first_args, dw_args = {}, {}
    for key, v in args.items():
        if key in (A.DNNL_ARG_SRC, A.DNNL_ARG_WEIGHTS, A.DNNL_ARG_DST, DW | A.DNNL_ARG_WEIGHTS):
            continue
        if key == DW | A.DNNL_ARG_BIAS:
            dw_args[A.DNNL_ARG_BIAS] = v
        elif key == A.DNNL_ARG_SCALE | DW | A.DNNL_ARG_WEIGHTS:
            dw_args[A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS] = v
        elif key == A.DNNL_ARG_SCALE | DW | A.DNNL_ARG_DST:
            dw_args[A.DNNL_ARG_SCALE | A.DNNL_ARG_DST] = v
        elif key in self._remap:
            part, inner = self._remap[key]
            (dw_args if part else first_args)[inner] = v
        else:
            first_args[key] = v
            if key == A.DNNL_ARG_SCALE | A.DNNL_ARG_DST:  # the depthwise source scale
                dw_args[A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC] = v
    out = f.execute(x, first_args, dw_args, pw, dw_w)
    od = f.out_desc
    user = args.get(A.DNNL_ARG_DST)
    logical = np.moveaxis(out, -1, 1)
    if user is None:
        return logical if od.is_channels_last else np.ascontiguousarray(logical)
    od.check_output(user, "dst")
    np.copyto(user, logical)
    return user
