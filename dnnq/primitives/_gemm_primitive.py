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
from dnnq.errors import InvalidArguments
from dnnq.primitives import _plan, _post_op_spec
from dnnq.primitives._kernels import _gemm, _gemm_exec
from dnnq.primitives._common import arg_name
from dnnq.primitives._attr_plan import AttrPlan
from dnnq.primitives import _impls, _dispatch

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
                 zp_support, mask_meaning, resolve, view_strides, bias_dims=None,
                 onednn_ref_rules=False):
        self.prim = prim
        self.batch, self.M, self.N, self.K = batch, M, N, K
        self.src_dt, self.dst_dt = src_dt, dst_dt
        # an f32 layer (f32 source and weights; primitives/_f32.py): the f32 kernels, no
        # compensation, no oneDNN reference-kernel order (f32 has one order, dnnq_f32.h)
        self.f32 = src_dt == "f32"
        plan = AttrPlan(prim, attr, {a: (None, m) for a, m in scale_support.items()},
                        {a: (None, m) for a, m in zp_support.items()}, _post_op_spec.KINDS,
                        resolve=lambda arg, mask, name: resolve(arg, mask))
        # which GEMM axis each runtime vector runs along
        self.scale_axis = {a: mask_meaning[("scale", a, m)] for a, m in plan.scale_mask.items()}
        self.zp_axis = {a: mask_meaning[("zp", a, m)] for a, m in plan.zp_mask.items()}
        self.view_strides = view_strides
        post_specs = []
        self.binary = []  # (post-op index, src1 desc, (sb, sm, sn))
        self.selects = []  # (post-op index, cond desc, strides, value desc, strides)
        self.has_sum = False
        for i, op in enumerate(plan.post_ops):
            post_specs.append(_post_op_spec.post_op_spec(prim, i, op, dst_dt))
            if op.kind == "binary":
                name = f"post_op[{i}].src_1"
                self.binary.append((i, op.src1_desc, view_strides(op.src1_desc.dims, name)))
            elif op.kind == "sum":
                self.has_sum = True
            elif op.kind == "select":
                self.selects.append(
                    (i, op.cond_desc, view_strides(op.cond_desc.dims, f"post_op[{i}].src_1"),
                     op.value_desc, view_strides(op.value_desc.dims, f"post_op[{i}].src_2")))
        # oneDNN's MatMul runs its reference kernel (ref:any) for these; its order of
        # operations is reproduced (dnnq_gemm_args_t.ref_numerics, docs/matmul.md)
        self.ref_impl = (onednn_ref_rules and not self.f32 and
                         self._onednn_runs_ref(bias_dims, N))
        if self.ref_impl:
            post_specs = [(k, _plan.REF_ELTWISE_CODE.get(alg, alg) if k == _plan.PO_ELTWISE
                           else alg, a, b) for k, alg, a, b in post_specs]
        self.n_post = len(post_specs)
        # an s32 dst with nothing to apply receives the accumulator as is (a bias, even s32,
        # goes through f32 as in oneDNN)
        self.raw_s32 = (dst_dt == "s32" and not self.scale_axis and not has_bias and
                        A.DNNL_ARG_DST not in self.zp_axis and not post_specs)
        impl = _impls.choose(prim.lower(), _impls.F32 if self.f32 else _impls.GEMM, M=M)
        # set_int8_numerics("avx2") caps the level at avx2 (the choice above) and gives the
        # kernels oneDNN's pair saturation; the mode is part of the key (packed weights).
        # f32 layers have one numerics at every level.
        self.numerics = "exact" if self.f32 else _dispatch.get_int8_numerics()
        self.isa = impl.isa if self.numerics == "exact" else f"{impl.isa}+{self.numerics}_numerics"
        # s8 sources with VNNI: the source is the signed operand of vpdpbusd and the weights
        # are packed as u8 = w + 128; the kernel folds the 128 * rowsum back.  Elsewhere the
        # source is XOR-ed to u8 (+128) and -128 * colsum is compensated here.
        # With AMX the s8 source is multiplied as it is (tdpbssd): no shift at all.
        self.swap_s8 = src_dt == "s8" and impl.s8_src == "swap"
        self.plan = _gemm.GemmPlan(_dispatch.kernel_isa_code(impl.isa), batch, M, N, K,
                                   _plan.DT_CODE[dst_dt], post_specs, self.swap_s8,
                                   impl.s8_src == "signed", self._ref_flags(post_specs),
                                   self.f32)
        self.impl_info = impl.name if self.numerics == "exact" else \
            f"{impl.name}+{self.numerics}_numerics"
        if self.ref_impl:
            self.impl_info += "+ref_order"
        self.shift = 128 if src_dt == "s8" and not (self.swap_s8 or self.plan.signed_s8) else 0
        self._specs = self._runtime_specs()

    def _ref_flags(self, post_specs):
        """dnnq_gemm_args_t.ref_numerics of MatMul's ref:any: scales one after the other, and
        its + 0 zero point when an attribute is set (ukernels/dnnq_kernels.h)."""
        if not self.ref_impl:
            return 0
        attrs = bool(self.scale_axis or self.zp_axis or post_specs)
        return _gemm.REF_ORDER | _gemm.REF_SPLIT_SCALES | (_gemm.REF_ZP if attrs else 0)

    def _onednn_runs_ref(self, bias_dims, N):
        """Whether oneDNN 3.2's MatMul picks its reference kernel (ref:any) over brgemm,
        measured on avx512_core_vnni: a bias that varies along M or is one value for N > 1
        columns, a per-K source or per-N destination zero point, a binary post-op input that
        varies along M only."""
        if bias_dims is not None and (any(d != 1 for d in bias_dims[:-1]) or
                                      bias_dims[-1] != N):
            return True
        if self.zp_axis.get(A.DNNL_ARG_SRC) == "k" or self.zp_axis.get(A.DNNL_ARG_DST) == "n":
            return True
        return self.M > 1 and N > 1 and any(st[1] != 0 and st[2] == 0
                                             for _, _, st in self.binary)

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

    def runtime_keys(self):
        return list(self._specs)

    def post_input_specs(self):
        """(key, post-op index, which input (1 src1 / cond, 2 select value), dims, strides over
        (batch, M, N), is-f32) of every post-op input array."""
        specs = []
        for i, desc, strides in self.binary:
            specs.append((A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1, i, 1,
                          tuple(desc.dims), tuple(strides), desc.dt == "f32"))
        for i, cdesc, cst, vdesc, vst in self.selects:
            for which, arg, desc, st in ((1, A.DNNL_ARG_SRC_1, cdesc, cst),
                                         (2, A.DNNL_ARG_SRC_2, vdesc, vst)):
                specs.append((A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | arg, i, which,
                              tuple(desc.dims), tuple(st), desc.dt == "f32"))
        return specs

    def executor(self, owner, src_dims, src_dtype, a_batch, bias_dims, bias_strides, dst_dims,
                 dst_dtype, n_known, strict):
        """The C-level execute path (dnnq.primitives._kernels._gemm_exec.GemmExec) of this
        primitive."""
        kinds = {_KEY_SS: _gemm_exec.SS, _KEY_WS: _gemm_exec.WS, _KEY_DS: _gemm_exec.DS,
                 _KEY_ZS: _gemm_exec.ZS, _KEY_ZW: _gemm_exec.ZW, _KEY_ZD: _gemm_exec.ZD}
        axes = {"common": _gemm_exec.COMMON, "n": _gemm_exec.PER_N, "k": _gemm_exec.PER_K}
        runtime = [(key, kinds[key], axes[axis], count)
                   for key, (count, _, _, axis) in self._specs.items()]
        post_inputs = [spec[:5] for spec in self.post_input_specs()]
        return _gemm_exec.GemmExec(
            self.plan, owner, tuple(src_dims), src_dtype, a_batch, self.shift,
            tuple(bias_dims) if bias_dims is not None else None, np.float32,
            tuple(bias_strides) if bias_strides is not None else (0, 0, 0),
            tuple(dst_dims), dst_dtype, self.has_sum, runtime, post_inputs, n_known,
            (A.DNNL_ARG_SRC, A.DNNL_ARG_WEIGHTS, A.DNNL_ARG_BIAS, A.DNNL_ARG_DST), strict,
            self.f32)

    def canonical_args(self, args, a, pw, bias, dst):
        """The argument dict of the C path after validation and conversion: a C-contiguous
        src (GEMM view), packed weights, f32 bias, f32 scales and s32 zero points of their
        counts, f32 post-op inputs, dst."""
        canon = {A.DNNL_ARG_SRC: a, A.DNNL_ARG_WEIGHTS: pw, A.DNNL_ARG_DST: dst}
        if bias is not None:
            canon[A.DNNL_ARG_BIAS] = bias
        if self._specs:
            for key, (value, _) in self.runtime_values(args).items():
                canon[key] = value
        for key, i, which, dims, _, _ in self.post_input_specs():
            if key not in args:
                kind = "binary" if which == 1 and any(b[0] == i for b in self.binary) else "select"
                raise InvalidArguments(f"{self.prim}.execute: missing {arg_name(key)} ({kind} "
                                       f"post-op {i}, dims {dims})")
            desc = next((d for j, d, _ in self.binary if j == i), None) if which == 1 else None
            if desc is None:
                sel = next(x for x in self.selects if x[0] == i)
                desc = sel[1] if which == 1 else sel[3]
            x = desc.check_array(args[key], arg_name(key))
            canon[key] = np.ascontiguousarray(x, dtype=np.float32)
        return canon
