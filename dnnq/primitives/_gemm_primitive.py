"""The machinery every GEMM-shaped primitive shares (MatMul, InnerProduct; later convolution
and RNN cells): attribute checks against a support table, the post-op plan, and the
per-execution preparation of the small vectors the C epilogue reads.

The quantized formula (SPEC section 2, verified against oneDNN 3.2):

    acc = sum_k (src - zp_src[k]) * (wei - zp_wei[n])          exact s32 (wrapping)
    v   = f32(acc) * f32(scale_src * scale_wei[n])
    v   = v + f32(bias)
    v   = post_ops(v)
    dst = saturate(rne(v * f32(1 / scale_dst) + zp_dst[n]))   (f32 dst: no rounding)

The kernel computes raw = sum_k a_u8 * w where a_u8 = src (+128 for s8 sources); then

    acc = raw + col_comp[n] - zp_wei[n] * rowsum_src[m]
    col_comp[n] = -shift * colsum[n] - (zp_src @ W)[n] + zp_wei[n] * sum_k zp_src[k]

col_comp is precomputed when weights are packed if there is no source zero point.
"""
import numpy as np

from dnnq import args as A
from dnnq import masks as _masks
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.primitives import _plan
from dnnq._kernels import _gemm
from dnnq.primitives._common import arg_name
from dnnq import _dispatch

_ONE = np.ones(1, np.float32)
_KEY_SS = A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC
_KEY_WS = A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS
_KEY_DS = A.DNNL_ARG_SCALE | A.DNNL_ARG_DST
_KEY_ZS = A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC
_KEY_ZW = A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_WEIGHTS
_KEY_ZD = A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST
_ZERO_F = np.zeros(1, np.float32)
_I32 = np.iinfo(np.int32)


def wrap_s32(x):
    """int64 array -> int32 with two's-complement wrap (as the s32 accumulators)."""
    return np.asarray(x, dtype=np.int64).astype(np.uint64).astype(np.uint32).view(np.int32)


def broadcast_strides(shape, target, name):
    """Element strides of a C-contiguous `shape` array read as `target` (right-aligned numpy
    broadcasting; 0 on broadcast dims).  Raises if `shape` does not broadcast to `target`."""
    shape = tuple(shape)
    if len(shape) > len(target):
        raise InvalidArguments(f"{name}: got dims {shape}; expected at most {len(target)} dims "
                               f"broadcastable to {tuple(target)}")
    full = (1,) * (len(target) - len(shape)) + shape
    strides = []
    acc = 1
    for d, t in zip(reversed(full), reversed(target)):
        if d != t and d != 1:
            raise InvalidArguments(f"{name}: got dims {shape}; expected dims broadcastable "
                                   f"to {tuple(target)} (each 1 or equal)")
        strides.append(0 if d == 1 and t != 1 else acc)
        acc *= d
    return tuple(reversed(strides))


class GemmCore:
    """A GEMM-shaped primitive after creation: (batch, M, N, K) view, the attribute analysed
    against a support table, the kernel plan, and the execution of validated arrays.

    scale_support / zp_support: dict arg -> allowed plain masks (after `resolve`).
    mask_meaning: dict (kind, arg, mask) -> 'common' | 'n' | 'k' — which GEMM axis a mask
    indexes (kind 'scale' or 'zp').
    view_strides(dims, name): element strides over (batch, M, N) of a C-contiguous tensor of
    logical `dims` broadcast to dst (binary post-op src1, bias), or raise.
    """

    def __init__(self, prim, attr, *, batch, M, N, K, src_dt, dst_dt, has_bias, scale_support,
                 zp_support, mask_meaning, resolve, view_strides):
        self.prim = prim
        self.batch, self.M, self.N, self.K = batch, M, N, K
        self.src_dt, self.dst_dt = src_dt, dst_dt
        self.scale_axis = {}
        self.zp_axis = {}
        attr_scales = attr.scales_args() if attr is not None else {}
        attr_zps = attr.zero_points_args() if attr is not None else {}
        for kind, given, support, out in (("scale", attr_scales, scale_support, self.scale_axis),
                                          ("zp", attr_zps, zp_support, self.zp_axis)):
            what = "scales" if kind == "scale" else "zero points"
            for arg, mask in given.items():
                if arg not in support:
                    raise Unimplemented(
                        f"{prim}: {what} of {arg_name(arg)} are not supported; supported: "
                        f"{what} of {', '.join(arg_name(a) for a in support) or 'nothing'}")
                plain = resolve(arg, mask)
                if plain not in support[arg]:
                    raise Unimplemented(
                        f"{prim}: {what} mask {mask} of {arg_name(arg)} is not supported; "
                        f"supported masks: {', '.join(map(str, support[arg]))}")
                out[arg] = mask_meaning[(kind, arg, plain)]
        self.view_strides = view_strides
        post_specs = []
        self.binary = []  # (post-op index, src1 desc, (sb, sm, sn))
        self.selects = []  # (post-op index, cond desc, strides, value desc, strides)
        self.has_sum = False
        ops = attr.post_ops if attr is not None else None
        for i in range(len(ops) if ops is not None else 0):
            kind = ops.kind(i)
            op = ops[i]
            if kind == "eltwise":
                post_specs.append((_plan.PO_ELTWISE, _plan.ELTWISE_CODE[op.alg],
                                   float(op.alpha), float(op.beta)))
            elif kind == "binary":
                post_specs.append((_plan.PO_BINARY, _plan.BINARY_CODE[op.alg], 0.0, 0.0))
                name = f"post_op[{i}].src_1"
                self.binary.append((i, op.src1_desc, view_strides(op.src1_desc.dims, name)))
            elif kind == "sum":
                if op.dt is not None and op.dt != dst_dt:
                    raise Unimplemented(f"{prim}: post_op[{i}] sum with data type {op.dt} differs "
                                        f"from the destination data type {dst_dt}; supported: "
                                        "None or the destination data type")
                self.has_sum = True
                post_specs.append((_plan.PO_SUM, 0, float(op.scale), float(op.zero_point)))
            elif kind == "checkpoint":
                post_specs.append((_plan.PO_CHECKPOINT, 0, 0.0, 0.0))
            elif kind == "select":
                post_specs.append((_plan.PO_SELECT, _plan.BINARY_CODE[op.alg], 0.0, 0.0))
                self.selects.append(
                    (i, op.cond_desc, view_strides(op.cond_desc.dims, f"post_op[{i}].src_1"),
                     op.value_desc, view_strides(op.value_desc.dims, f"post_op[{i}].src_2")))
            else:
                raise Unimplemented(f"{prim}: post_op[{i}] of kind {kind} is not supported; "
                                    "supported: eltwise, binary, sum, checkpoint, select")
        self.n_post = len(post_specs)
        # an s32 dst with nothing to apply receives the accumulator as is (a bias, even s32,
        # goes through f32 as in oneDNN)
        self.raw_s32 = (dst_dt == "s32" and not self.scale_axis and not has_bias and
                        A.DNNL_ARG_DST not in self.zp_axis and not post_specs)
        self.isa = _plan.kernel_isa(_dispatch.get_effective_cpu_isa(), M)
        # s8 sources with VNNI: the source is the signed operand of vpdpbusd and the weights
        # are packed as u8 = w + 128; the kernel folds the 128 * rowsum back.  Elsewhere the
        # source is XOR-ed to u8 (+128) and -128 * colsum is compensated here.
        # With AMX the s8 source is multiplied as it is (tdpbssd): no shift at all.
        self.swap_s8 = src_dt == "s8" and self.isa in ("avx512_core_vnni", "avx2_vnni")
        self.plan = _gemm.GemmPlan(_plan.ISA_CODE[self.isa], batch, M, N, K,
                                   _plan.DT_CODE[dst_dt], post_specs, self.swap_s8)
        self.impl_info = f"{_plan.ISA_IMPL_NAME[self.isa]}:blocked"
        self.shift = 128 if src_dt == "s8" and not (self.swap_s8 or self.plan.signed_s8) else 0
        self._specs = self._runtime_specs()

    # ---- execution-time pieces ----------------------------------------------------------------
    def _runtime_specs(self):
        """(key, count, name, checker, axis) of every runtime scale / zero point, fixed at
        creation so that execute only looks them up."""
        specs = {}
        for table, prefix, check in ((self.scale_axis, A.DNNL_ARG_SCALE, _masks.check_scales),
                                     (self.zp_axis, A.DNNL_ARG_ATTR_ZERO_POINTS,
                                      _masks.check_zero_points)):
            for arg, axis in table.items():
                count = 1 if axis == "common" else (self.N if axis == "n" else self.K)
                key = prefix | arg
                specs[key] = (count, arg_name(key), check, axis)
        return specs

    def runtime_values(self, args):
        """Validated runtime scales / zero points: dict key -> (array, axis)."""
        out = {}
        for key, (count, name, check, axis) in self._specs.items():
            value = args.get(key)
            if value is None:
                raise InvalidArguments(f"{self.prim}.execute: missing {name} (the attribute sets "
                                       "a mask for it)")
            out[key] = (check(value, count, name), axis)
        return out

    def run(self, args, a, a_batch, pw, bias, dst):
        """a: C-contiguous (a_batch, M, K) u8/s8; pw: PackedGemmWeights; bias: None or
        (f32 array, strides); dst: C-contiguous (batch, M, N) array of the dst type."""
        N, K = self.N, self.K
        rt = self.runtime_values(args) if self._specs else {}
        # scales: the kernel multiplies f32(src_scale * wei_scale[n]) (oneDNN's order)
        ss = rt.get(_KEY_SS)
        ws = rt.get(_KEY_WS)
        ds = rt.get(_KEY_DS)
        src_scale = ss[0].item(0) if ss is not None else 1.0
        scale, scale_sn = (ws[0], int(ws[0].size > 1)) if ws is not None else (_ONE, 0)
        dst_scale = ds[0].item(0) if ds is not None else 1.0
        zs = rt.get(_KEY_ZS)
        zw = rt.get(_KEY_ZW)
        zd = rt.get(_KEY_ZD)
        # compensation
        colsum = pw.colsum  # (wb, N) int32
        if zw is None and (zs is None or zs[1] == "common"):
            col_comp = pw.comp_for_shift(self.shift + (int(zs[0][0]) if zs is not None else 0))
        else:
            comp = -self.shift * colsum.astype(np.int64)
            zsum = 0
            if zs is not None:
                z, axis = zs
                if axis == "common":
                    comp -= int(z[0]) * colsum.astype(np.int64)
                    zsum = int(z[0]) * K
                else:
                    comp -= np.einsum("k,bkn->bn", z.astype(np.int64), pw.plain.astype(np.int64))
                    zsum = int(z.astype(np.int64).sum())
            if zw is not None and zsum:
                comp += zw[0].astype(np.int64) * zsum
            col_comp = wrap_s32(comp)
        wzp = rowsum = None
        wzp_sn = r_sb = 0
        if zw is not None and np.any(zw[0]):
            wzp = zw[0]
            wzp_sn = 1 if wzp.size > 1 else 0
            rowsum = wrap_s32(a.sum(axis=-1, dtype=np.int64))
            r_sb = self.M if a_batch > 1 else 0
        dzp, dzp_sn = (zd[0], int(zd[0].size > 1)) if zd is not None else (None, 0)
        # binary post-op inputs, converted to f32 (the epilogue computes in f32)
        src1s = [None] * self.n_post
        for i, desc, strides in self.binary:
            key = A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1
            if key not in args:
                raise InvalidArguments(f"{self.prim}.execute: missing {arg_name(key)} "
                                       f"(binary post-op {i}, dims {desc.dims})")
            x = desc.check_array(args[key], arg_name(key))
            src1s[i] = (np.ascontiguousarray(x, dtype=np.float32),) + tuple(strides)
        for i, cdesc, cst, vdesc, vst in self.selects:
            entry = ()
            for arg, desc, strides in ((A.DNNL_ARG_SRC_1, cdesc, cst),
                                       (A.DNNL_ARG_SRC_2, vdesc, vst)):
                key = A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | arg
                if key not in args:
                    raise InvalidArguments(f"{self.prim}.execute: missing {arg_name(key)} (select "
                                           f"post-op {i}, dims {desc.dims})")
                x = desc.check_array(args[key], arg_name(key))
                entry += (np.ascontiguousarray(x, dtype=np.float32),) + tuple(strides)
            src1s[i] = entry
        bias_arr, (bsb, bsm, bsn) = bias if bias is not None else (None, (0, 0, 0))
        self.plan.run(a.view(np.uint8), self.M * K if a_batch > 1 else 0, K, self.src_dt == "s8",
                      pw.packed, pw.batch_stride if pw.batch > 1 else 0,
                      col_comp, N if col_comp.shape[0] > 1 else 0,
                      wzp, wzp_sn, rowsum, r_sb,
                      self.raw_s32, src_scale, scale, scale_sn,
                      bias_arr, bsb, bsm, bsn, src1s,
                      dst_scale, dzp, dzp_sn,
                      dst, self.M * N, N, _dispatch.get_num_threads())
        return dst
