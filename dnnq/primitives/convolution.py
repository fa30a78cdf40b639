"""Convolution and Deconvolution (forward inference, int8; f32 layers too), implicit GEMM on
the batch-reduce micro-kernel, plus a dedicated channels-last depthwise kernel.

``Convolution(src_desc, weights_desc, dst_desc, bias_desc=None, *, strides, padding_l,
padding_r, dilates=None, attr=None)`` (``Deconvolution`` the same); ``strides`` / paddings /
``dilates`` are one int or one int per spatial dimension (oneDNN's dilation: 0 = dense).

Support table (masks over the tensor's own logical dims; "ext" = beyond oneDNN 3.2):

==================  =====================================================================
f32 layer           src f32 + weights f32 (+ bias f32) -> dst f32, s8, u8: dst scale and
                    zero point, every post-op below but the depthwise one; no src /
                    weights scales or zero points (InvalidArguments); one FMA order, the
                    same bits at every ISA level (docs/f32_layers.md)
src                 u8, s8; ``ncw`` / ``nchw`` / ``ncdhw`` or ``nwc`` / ``nhwc`` / ``ndhwc``
weights             s8; ``oiw`` / ``oihw`` / ``oidhw``, ``wio`` / ``hwio`` / ``dhwio``, grouped
                    ``goiw`` / ``goihw`` / ``goidhw`` (G, OC/G, IC/G, k...); deconvolution:
                    the same (OC, IC, k...) order, no kernel flip (oneDNN's convention)
bias                f32, s32, s8, u8; dims (OC,); added in f32, unscaled
dst                 f32, s32, s8, u8; plain or channels-last
src scale           0
weights scale       0, 1 (per OC); grouped: 0, 3 (per G and OC/G)
dst scale           0
src zero point      0, 2 (per IC; oneDNN: ref:any)
weights zero point  0, 1 (per OC); grouped: 0, 3 (ext, as ONNX QLinearConv / OpenVINO)
dst zero point      0, 2 (per OC; oneDNN: ref:any)
post-ops            eltwise (all), binary (src1 dims each 1 or the dst's: per-tensor,
                    per-channel (1, OC, 1, 1), per-image, full), sum (scale, zero point),
                    checkpoint / select (ext), FakeQuantize chains
==================  =====================================================================

Semantic masks (DNNL_MASK_PER_CHANNEL_NCHW / _OIHW) resolve to the channel bits above.
The padded area holds the source zero point (padded taps add nothing), exact at every border.

Kernels (``impl_info``): ``<isa>:brgconv`` (batch-reduce over taps, indirect source rows),
``<isa>:brgconv_fold`` (few input channels: the KW taps of a kernel row folded into one
reduction of KW*IC, e.g. ResNet's 7x7 first layer), ``<isa>:dw`` (depthwise, G = IC = OC,
vectorised over channels); f32 layers: the same names ending in ``_f32``.  Plain (nchw) data
is transposed to channels-last around the kernels (a copy of src and dst), except where the plain depthwise 3x3 kernels read and write
the planes (the fused epilogue's cases); channels-last data runs without any copy.

Here: descriptors, attributes, the plan and the C-level execute path.  The kernel choice per
family is in _conv_kernel_choice.py, the checked execute path in _conv_checked_exec.py.
"""
import copy
import functools
import time

import numpy as np

from dnnq import args as A
from dnnq import masks as _masks
from dnnq.primitives import _dispatch, _impls, _verbose
from dnnq.primitives._cache import CachedPrimitive
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc
from dnnq.primitives import _plan
from dnnq.primitives._attr_plan import AttrPlan, check_attr_object
from dnnq.primitives import _post_op_spec
from dnnq.primitives._common import (INT8_RANGE, arg_name, check_md, check_known_args,
                                     check_overlaps)
from dnnq.post_ops import PostOps
from dnnq.primitives._conv_geometry import (ConvGeometry, PackedConvWeights, pack_depthwise,
                                            depthwise_panel_stride, packed_sizes,
                                            window_sums)
from dnnq.primitives._conv_fused_dw import init_fused, execute_fused
from dnnq.primitives._conv_impl import (avx2_deconv_gemm, avx2_numerics,
                                        onednn_conv_runs_ref, onednn_deconv_kernel)
from dnnq.primitives._gemm_primitive import wrap_s32
from dnnq.primitives._kernels import _codes, _conv, _conv_exec, _gemm
from dnnq.primitives._scratch import Scratch as _Scratch
from dnnq.primitives._conv_checked_exec import CheckedExecute
from dnnq.primitives._conv_kernel_choice import (KernelChoice, _balanced_block,
                                                  deconv_ks_rows, depthwise_item_pixels,
                                                  image_rows_per_item)
from dnnq.primitives._conv_f32 import F32Convolution
from dnnq.primitives._f32 import layer_dtypes, refuse_input_quantization

_SRC_DTS = ("u8", "s8", "f32")   # f32: an f32 layer (f32 weights too; primitives/_f32.py)
_WEI_DTS = ("s8", "f32")
_DST_DTS = ("f32", "s32", "s8", "u8")
_ISA_NAME = {"default": "portable"}  # impl_info prefix per ISA level (else the level's name)


class _ConvolutionBase(KernelChoice, CheckedExecute, F32Convolution, metaclass=CachedPrimitive):
    _name = "Convolution"
    _kind = "convolution"
    _deconv = False
    _isa_code = 0  # the transposes' level (set by _fast_plan; fused chains: the portable one)

    def __init__(self, src_desc, weights_desc, dst_desc, bias_desc=None, *, strides, padding_l,
                 padding_r, dilates=None, attr=None):
        p = self._name
        check_attr_object(p, attr)
        check_md(p, src_desc, "src", _SRC_DTS, (3, 4, 5))
        nd = src_desc.ndims
        check_md(p, weights_desc, "weights", _WEI_DTS, (nd, nd + 1))
        check_md(p, dst_desc, "dst", _DST_DTS, (nd,))
        check_md(p, bias_desc, "bias", _DST_DTS, (1,), optional=True, plain_only=True)
        self._f32 = layer_dtypes(p, src_desc.dt, weights_desc.dt, dst_desc.dt,
                                 bias_desc.dt if bias_desc is not None else None)
        if self._f32:
            refuse_input_quantization(p, attr)
        if weights_desc.is_channels_last and weights_desc.ndims != nd:
            raise Unimplemented(f"{p}: weights tag {weights_desc.tag} for grouped weights dims "
                                f"{weights_desc.dims}; supported: plain (goihw) for groups")
        # set_int8_numerics (SPEC section 9), fixed at creation; "avx2" caps the level (f32
        # layers have one numerics)
        self._numerics = "exact" if self._f32 else _dispatch.get_int8_numerics()
        geo = ConvGeometry(p, self._deconv, src_desc.dims, weights_desc.dims, dst_desc.dims,
                           strides, padding_l, padding_r, dilates,
                           fold=self._numerics == "exact",
                           fold_wide=(not self._f32 and
                                      _dispatch.get_effective_cpu_isa() == "avx512_core_amx"))
        if bias_desc is not None and tuple(bias_desc.dims) != (geo.OC,):
            raise InvalidArguments(f"{p}: bias dims {bias_desc.dims}; expected ({geo.OC},)")
        self.src_desc, self.weights_desc, self.dst_desc = src_desc, weights_desc, dst_desc
        self.bias_desc = bias_desc
        self.attr = copy.deepcopy(attr)
        self._geo = geo
        self._fused = None
        if self._f32:
            self._init_f32(attr)
            if _verbose.enabled(2):
                self._verbose("create", None)
            return
        ops = attr.post_ops if attr is not None else PostOps()
        dw_at = [i for i in range(len(ops)) if ops.kind(i) == "convolution"]
        if dw_at:  # 1x1 + fused depthwise: two convolutions (see _conv_fused_dw)
            init_fused(self, attr, dw_at[0])
            return
        self._analyse_attr(attr)
        if self._numerics != "exact" and self._zp_mask.get(A.DNNL_ARG_WEIGHTS) is not None:
            raise Unimplemented(f"{p}: weights zero points under set_int8_numerics("
                                f"{self._numerics!r}) (oneDNN has none to reproduce); "
                                "supported: set_int8_numerics('exact')")
        numerics = self._numerics
        # the deconvolution kernel oneDNN runs (its numerics followed; _conv_impl.py)
        self._onednn_kernel = self._onednn_deconv_kernel() if self._deconv else None
        if (self._deconv and numerics != "exact" and
                avx2_deconv_gemm(self._onednn_kernel, geo, src_desc.dt)):
            self._onednn_kernel = "gemm"  # what oneDNN runs without VNNI
        # (kernel "avx2": where oneDNN 3.2 falls back to its AVX2 kernel on an AVX-512 CPU
        # without AVX-VNNI, it saturates s16 pairs; with AVX-VNNI it runs an exact brgemm
        # kernel.  The default numerics depend on the problem only, so they stay exact here
        # on every CPU: docs/numerics.md "Across machines")
        self._pair_sat, self._halve = avx2_numerics(numerics, geo, src_desc.dt,
                                                    self._zp_mask.get(A.DNNL_ARG_SRC, 0),
                                                    self._onednn_kernel == "gemm")
        self._scale_adjust = 2.0 if self._halve else 1.0
        # oneDNN scales by 2 in f32; its GEMM-based deconvolution converts to f32 and back
        self._raw_s32 = (self._raw_s32 and not self._halve and
                         self._onednn_kernel != "gemm")
        isa = _dispatch.get_effective_cpu_isa()
        # the batch-reduce kernel of the AMX level is the AVX-512 VNNI one (tiles need
        # strided rows)
        self._isa = "avx512_core_vnni" if isa == "avx512_core_amx" else isa
        # the AVX-512 depthwise kernels take s8 weights four taps at a time (vnni4), and the
        # s16 weights of a weights zero point in tap pairs
        avx512 = self._isa == "avx512_core_vnni"
        self._dw_layout = "vnni4" if avx512 else "natural"
        self._dw_s16_layout = "pairs" if avx512 else "natural"
        self._packed_sizes = packed_sizes(geo, self._dw_layout)
        kernel = ("dw" if geo.depthwise else "brgconv_1x1" if geo.is_gemm else
                  "brgconv_fold" if geo.fold_kw else "brgconv")
        self._plan = self._make_plan()
        # (the kernels' level, or AMX where the list chose its tiles)
        isa = self._impl.isa if self._impl.isa == "avx512_core_amx" else self._isa
        self.impl_info = f"{_ISA_NAME.get(isa, isa)}:{kernel}"
        if self._numerics != "exact":
            self.impl_info += "+avx2_numerics"
        if self._ref_order:
            self.impl_info += "+gemm_order" if self._deconv else "+ref_order"
        if self._u8_nan_top:
            self.impl_info += "+jit_deconv_nan"
        self._zrows = {}
        self._scratch = {}  # (shape, dtype) -> free channels-last copies (_Scratch)
        self._key = (type(self).__name__, src_desc, weights_desc, dst_desc, bias_desc,
                     attr.key() if attr is not None else None, geo.key(), self._isa,
                     self._numerics)
        self._known = self._known_args()
        self._fast_plan()
        if _verbose.enabled(2):
            self._verbose("create", None)

    # ---- creation ----------------------------------------------------------------------------
    def _analyse_attr(self, attr):
        p, geo = self._name, self._geo
        per_oc = 3 if geo.grouped else 1
        dims = {A.DNNL_ARG_SRC: self.src_desc.dims, A.DNNL_ARG_WEIGHTS: self.weights_desc.dims,
                A.DNNL_ARG_DST: self.dst_desc.dims}
        scale_support = {A.DNNL_ARG_SRC: (dims[A.DNNL_ARG_SRC], (0,)),
                         A.DNNL_ARG_WEIGHTS: (dims[A.DNNL_ARG_WEIGHTS], (0, per_oc)),
                         A.DNNL_ARG_DST: (dims[A.DNNL_ARG_DST], (0,))}
        zp_support = {A.DNNL_ARG_SRC: (dims[A.DNNL_ARG_SRC], (0, 2)),
                      A.DNNL_ARG_WEIGHTS: (dims[A.DNNL_ARG_WEIGHTS], (0, per_oc)),
                      A.DNNL_ARG_DST: (dims[A.DNNL_ARG_DST], (0, 2))}

        def resolve(arg, mask, name):
            kind = "weights_oihw" if arg == A.DNNL_ARG_WEIGHTS else "data_nchw"
            return _masks.resolve_mask(mask, dims[arg], kind, groups=geo.grouped, name=name)

        plan = AttrPlan(p, attr, scale_support, zp_support, _post_op_spec.KINDS,
                        resolve=resolve)
        self._scale_mask, self._zp_mask = plan.scale_mask, plan.zp_mask
        # post-ops
        self._post_specs, self._binary, self._selects = [], [], []
        self._has_sum = False
        dst_dims = tuple(self.dst_desc.dims)
        for i, op in enumerate(plan.post_ops):
            if op.kind == "binary":
                self._check_broadcast(op.src1_desc, f"post_op[{i}].src_1", dst_dims)
                self._binary.append((i, op.src1_desc))
            elif op.kind == "sum":
                self._has_sum = True
            elif op.kind == "select":
                self._check_broadcast(op.cond_desc, f"post_op[{i}].src_1", dst_dims)
                self._check_broadcast(op.value_desc, f"post_op[{i}].src_2", dst_dims)
                self._selects.append((i, op.cond_desc, op.value_desc))
            self._post_specs.append(_post_op_spec.post_op_spec(p, i, op, self.dst_desc.dt))
        self._raw_s32 = (self.dst_desc.dt == "s32" and not self._scale_mask and
                         self.bias_desc is None and A.DNNL_ARG_DST not in self._zp_mask and
                         not self._post_specs)

    def _check_broadcast(self, desc, name, dst_dims):
        if not isinstance(desc, MemoryDesc) or desc.ndims != len(dst_dims) or any(
                d not in (1, t) for d, t in zip(desc.dims, dst_dims)):
            got = desc.dims if isinstance(desc, MemoryDesc) else desc
            raise InvalidArguments(f"{self._name}: {name} dims {got}; expected {len(dst_dims)} "
                                   f"dims, each 1 or the dst's {dst_dims}")

    def _onednn_deconv_kernel(self):
        """The kernel oneDNN 3.2 runs for this deconvolution on an AVX-512 VNNI CPU
        (_conv_impl.py).  dnnq follows its numerics at every ISA level (they do not depend
        on the level)."""
        kinds, zps = self._onednn_attr_summary()
        return onednn_deconv_kernel(self._geo, self.src_desc.dt, self._geo.grouped,
                                    {"src": zps["src"], "dst": zps["dst"]},
                                    [d for _, d in self._binary], kinds, self.dst_desc.dims,
                                    zps["sum"],
                                    self.bias_desc.dt if self.bias_desc is not None else None)

    def _onednn_runs_ref(self):
        """Whether oneDNN 3.2 applies the attributes in its reference order for this problem,
        measured on avx512_core_vnni: its reference convolution (ref:any) for a binary
        post-op input that varies along the batch or the spatial dims (neither per channel
        nor one value), for per-channel source or destination zero points, and for a 3-D
        depthwise convolution (run by its GEMM-based convolution, whose post-processing
        kernel takes a sum only first and without zero point) with any other sum; its
        GEMM-based deconvolution (_conv_impl.py), whose reference loops apply scales, bias,
        post-ops and zero points in the same order."""
        if self._deconv:
            return self._onednn_kernel == "gemm"
        kinds, zps = self._onednn_attr_summary()
        return onednn_conv_runs_ref(self._geo, zps, [d for _, d in self._binary], kinds,
                                    zps["sum"])

    def _onednn_attr_summary(self):
        """(post-op kinds, {"src", "dst": zero-point masks, "sum": the sum's zero point}): what
        oneDNN's implementation choice looks at (_conv_impl.py)."""
        ops = self.attr.post_ops if self.attr is not None else PostOps()
        kinds = [ops.kind(i) for i in range(len(ops))]
        return kinds, {"src": self._zp_mask.get(A.DNNL_ARG_SRC, 0),
                       "dst": self._zp_mask.get(A.DNNL_ARG_DST, 0),
                       "sum": ops[kinds.index("sum")].zero_point if "sum" in kinds else 0}

    def _make_plan(self):
        geo = self._geo
        isa_code = self._kernel_code()
        # oneDNN's reference convolution: its order of operations (docs/convolution.md)
        ref = self._ref_order = self._onednn_runs_ref()
        # no post-ops but relu: the reference order computes what the fused epilogues do
        # (no NaN, -0.0 or rounding of its own can arise), which then stay in use
        same = all(k == _plan.PO_ELTWISE and alg == _plan.ELTWISE_CODE["relu"]
                   for k, alg, _, _ in self._post_specs)
        self._ref_flags = _gemm.REF_ORDER | _gemm.REF_ZP if ref and not same else 0
        # oneDNN's AVX-512 jit_deconvolution stores a NaN as 255 in u8 (its AVX2 kernel, the
        # level set_int8_numerics("avx2") follows, stores 0)
        self._u8_nan_top = (self._onednn_kernel == "jit" and self.dst_desc.dt == "u8" and
                            self._numerics == "exact")
        post_specs = [(k, _plan.REF_ELTWISE_CODE.get(alg, alg) if ref and k == _plan.PO_ELTWISE
                       else alg, a, b) for k, alg, a, b in self._post_specs]
        impl = self._impl = self._choose_kernel()
        self._dw_plain = impl.plain if impl.kernel == "dw3x3_plain" else 0
        if impl.kernel == "gemm":
            # the GEMM driver over (image, pixels, OC); an s8 source XOR-ed to u8 (the
            # compensation is this module's); AMX tiles where the list chose them
            if impl.isa == "avx512_core_amx":
                isa_code = _plan.ISA_CODE[impl.isa]
            return _gemm.GemmPlan(isa_code, geo.N, geo.out_pixels, geo.OC, geo.IC,
                                  _plan.DT_CODE[self.dst_desc.dt], post_specs, False,
                                  False, self._ref_flags)
        # AMX tiles hold up to 32 pixels (tiles_amx, deconv_ks_amx: micro-tiles on them)
        amx = impl.isa == "avx512_core_amx"
        mr = (32 if geo.depthwise else _gemm.AMX_BR_ROWS if amx else
              _conv.brgemm_rows(isa_code))
        npix = geo.out_pixels
        cols = geo.OC if geo.depthwise else geo.OCg
        panels = (cols + 63) // 64
        groups = 1 if geo.depthwise else geo.G
        # pixel blocks of a few micro-tiles; smaller when that leaves threads without work
        # (the folded stem: 32 micro-tiles, the per-item setup -- pairs built afresh, border
        # rows gathered -- cost it 3 % at 8)
        mc = mr * (32 if geo.fold_kw or geo.deconv else 8)
        threads = max(1, _dispatch.get_num_threads())
        while mc > mr and geo.N * groups * panels * -(-npix // mc) < 4 * threads:
            mc -= mr
        if geo.deconv and not geo.depthwise and threads > 1:
            mc = _balanced_block(npix, mc, mr, geo.N * groups * panels, threads)
        if impl.kernel in ("fold_lanes", "stem"):
            mc = image_rows_per_item(geo, panels, threads) * geo.dst[2]
        if impl.kernel == "deconv_ks":  # whole source rows: their output rows' pixels
            mc = deconv_ks_rows(geo, threads) * geo.kernel[0] * geo.kernel[1] * geo.dst[2]
        item_pixels = None
        if geo.depthwise:
            # the depthwise items are sized for each thread count the plan runs on
            item_pixels = functools.partial(depthwise_item_pixels, geo, impl.kernel,
                                            dst_esz=np.dtype(self.dst_desc.numpy_dtype).itemsize)
            mc = item_pixels(threads)
        fast, fast_sum = _post_op_spec.fused_epilogue_flags(self._post_specs)
        g = dict(N=geo.N, G=geo.G, ICg=geo.ICg, OCg=geo.OCg, src=geo.src, dst=geo.dst,
                 kernel=geo.kernel, strides=geo.strides, steps=geo.steps, pads=geo.pads,
                 deconv=int(geo.deconv), depthwise=int(geo.depthwise), fold_kw=int(geo.fold_kw),
                 kpair=geo.kpair, npairs=geo.npairs, mc=mc, mr=mr,
                 dw_strides=(depthwise_panel_stride(geo, self._dw_s16_layout),
                             depthwise_panel_stride(geo, "vnni4")))
        problem_vnni4 = geo.depthwise and self._dw_layout == "vnni4" and \
            A.DNNL_ARG_WEIGHTS not in self._zp_mask
        self._dw_kind = _conv.DW_VNNI4 if problem_vnni4 else _conv.DW_S16
        dw_fused = _post_op_spec.dw_fused_epilogue(self.dst_desc.dt, self._post_specs,
                                                   self._raw_s32, self._ref_flags,
                                                   chains=(impl.kernel == "fold_lanes" or
                                                           self._dw3x3_px16(impl)))
        return _conv.ConvPlan(isa_code, g, _plan.DT_CODE[self.dst_desc.dt], post_specs,
                              fast, self._ref_flags, self._u8_nan_top,
                              kernel=_codes.CONV_KERNEL[impl.kernel],
                              s8_src=self.src_desc.dt == "s8", raw_s32=self._raw_s32,
                              dw_kind=self._dw_kind, dw_fused=dw_fused, plain=impl.plain,
                              fast_epi_sum=fast_sum, item_pixels=item_pixels, amx=amx)

    def _kernel_code(self):
        """The kernels' ISA code, with oneDNN's s16 pair saturation where it applies."""
        return _plan.ISA_CODE[self._isa] | (_codes.NUMERICS["avx2"] if self._pair_sat else 0)

    def _fast_binaries(self):
        """The binary post-ops as the C-level execute path takes them, [(post-op index, src_1
        desc)], or None: f32 inputs of one value per output channel or one for all (every
        other dim 1), the same for every pixel -- what the fused epilogues apply
        (_gemm.fused_epilogue_flags), a BatchNormalization's scale and shift after a
        rounding pair in dnnq.onnx's rounding="every"."""
        for _, desc in self._binary:
            if desc.dt != "f32" or any(d != 1 for k, d in enumerate(desc.dims) if k != 1):
                return None
        return list(self._binary)

    def _fast_path_possible(self):
        """The C-level execute path takes this configuration (_fast_plan)."""
        zm = self._zp_mask
        return not ((self._binary and self._fast_binaries() is None) or self._selects or
                    A.DNNL_ARG_WEIGHTS in zm or
                    zm.get(A.DNNL_ARG_SRC, 0) != 0 or zm.get(A.DNNL_ARG_DST, 0) != 0 or
                    (self.bias_desc is not None and self.bias_desc.dt != "f32"))

    def _known_args(self):
        known = {A.DNNL_ARG_SRC, A.DNNL_ARG_WEIGHTS, A.DNNL_ARG_DST}
        if self.bias_desc is not None:
            known.add(A.DNNL_ARG_BIAS)
        known |= {A.DNNL_ARG_SCALE | a for a in self._scale_mask}
        known |= {A.DNNL_ARG_ATTR_ZERO_POINTS | a for a in self._zp_mask}
        for i, _ in self._binary:
            known.add(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1)
        for i, _, _ in self._selects:
            known.add(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1)
            known.add(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_2)
        return frozenset(known)

    # ---- weights -----------------------------------------------------------------------------
    def prepare_weights(self, w):
        """Pack the weights once, for repeated execution.

        Packing lays the weights out for the kernel chosen (blocked panels per kernel tap, or
        the depthwise layout) with the column sums of the compensation; ``execute`` accepts
        the result in place of the plain array (plain weights are packed on every call).

        Parameters
        ----------
        w : numpy.ndarray
            s8 weights of ``weights_desc``'s dims, in its layout (any strides).

        Returns
        -------
        PackedConvWeights
            Read-only; accepted only by a primitive of the same description; pickles as its
            plain values.

        Raises
        ------
        InvalidArguments
            For an array of another dtype or shape.

        Examples
        --------
        >>> import numpy as np, dnnq
        >>> conv = dnnq.Convolution(dnnq.MemoryDesc((1, 4, 5, 5), "u8"),
        ...                         dnnq.MemoryDesc((8, 4, 3, 3), "s8"),
        ...                         dnnq.MemoryDesc((1, 8, 5, 5), "s32"),
        ...                         strides=1, padding_l=1, padding_r=1)
        >>> w = conv.prepare_weights(np.ones((8, 4, 3, 3), np.int8))
        >>> y = conv.execute({dnnq.DNNL_ARG_SRC: np.ones((1, 4, 5, 5), np.uint8),
        ...                   dnnq.DNNL_ARG_WEIGHTS: w})
        >>> y[0, 0].tolist()[:2]              # 4 channels x the taps inside the image
        [[16, 24, 24, 24, 16], [24, 36, 36, 36, 24]]
        """
        d = self.weights_desc
        d.check_array(w, "weights")  # dtype / shape checks; packing reads any strides
        return PackedConvWeights(self._geo, w, self._key, self._dw_layout, origin=self,
                                 halve=self._halve)

    def _weights_from_plain(self, plain):
        """The logical weights of PackedConvWeights.plain (G, taps, ICg, OCg) (pickling)."""
        return np.ascontiguousarray(plain.transpose(0, 3, 2, 1)).reshape(self.weights_desc.dims)

    def _weights(self, w):
        if isinstance(w, PackedConvWeights):
            if w.owner is not self._key and w.owner != self._key:
                raise InvalidArguments(f"{self._name}.execute: weights were packed by "
                                       "prepare_weights of a primitive with another description")
            w.check_sizes(self._packed_sizes, self._name)
            return w
        return self.prepare_weights(w)

    # ---- execution ---------------------------------------------------------------------------
    def _runtime(self, args, key, count, check):
        v = args.get(key)
        if v is None:
            raise InvalidArguments(f"{self._name}.execute: missing {arg_name(key)} (the "
                                   "attribute sets a mask for it)")
        return check(v, count, arg_name(key))

    def _fast_plan(self):
        """The C-level execute path (dnnq.primitives._kernels._conv_exec.ConvExec) of the common
        case: packed weights, f32 or no bias, common scales and zero points, binary post-ops
        of per-channel or common f32 inputs only (_fast_binaries), no select post-op, no
        weights zero point.  Plain (nchw) src / dst take it too, through
        channels-last copies in pooled buffers.  None when the configuration needs the
        checked path's generality."""
        geo, sd, dd = self._geo, self.src_desc, self.dst_desc
        zm, sm = self._zp_mask, self._scale_mask
        # the plain <-> channels-last transposes (the numerics bits are ignored there)
        self._isa_code = self._kernel_code()
        self._exec = None
        if not self._fast_path_possible():
            return
        ws_count = 0 if A.DNNL_ARG_WEIGHTS not in sm else (
            1 if sm[A.DNNL_ARG_WEIGHTS] == 0 else geo.OC)
        layout = dict(src_dims=tuple(sd.dims), src_order=tuple(sd.physical_order),
                      src_dtype=sd.numpy_dtype, dst_dims=tuple(dd.dims),
                      dst_order=tuple(dd.physical_order), dst_dtype=dd.numpy_dtype,
                      N=geo.N, IC=geo.IC, OC=geo.OC, P_src=int(np.prod(sd.dims[2:])),
                      P_dst=int(np.prod(dd.dims[2:])), isa_code=self._isa_code)
        attrs = dict(has_bias=self.bias_desc is not None, has_ss=A.DNNL_ARG_SRC in sm,
                     has_ds=A.DNNL_ARG_DST in sm, ws_count=ws_count,
                     has_zs=A.DNNL_ARG_SRC in zm, has_zd=A.DNNL_ARG_DST in zm,
                     zs_range=INT8_RANGE.get(sd.dt, (0, 0)), has_sum=self._has_sum,
                     shift=128 if sd.dt == "s8" and not geo.depthwise else 0,
                     raw_s32=self._raw_s32, depthwise=geo.depthwise,
                     scale_adjust=self._scale_adjust, dw_plain=self._dw_plain,
                     dw_column=self._impl.kernel in ("dw3x3", "dw3x3_plain"),
                     binaries=[(i, A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1,
                                tuple(d.dims), tuple(d.physical_order))
                               for i, d in self._fast_binaries()])
        keys = dict(src=A.DNNL_ARG_SRC, wei=A.DNNL_ARG_WEIGHTS, bias=A.DNNL_ARG_BIAS,
                    dst=A.DNNL_ARG_DST, ss=A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC,
                    ws=A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS,
                    ds=A.DNNL_ARG_SCALE | A.DNNL_ARG_DST,
                    zs=A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC,
                    zd=A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST, n_known=len(self._known))
        zrow_for = None if self._impl.kernel == "gemm" else (
            (lambda zs: self._zero_row_f32()) if self._f32 else
            (lambda zs: self._zero_point_rows(np.int32([zs]), np.int64([zs]))))
        self._exec = _conv_exec.ConvExec(self._plan, self._key, PackedConvWeights,
                                         self._packed_sizes, zrow_for, layout, attrs, keys)

    def execute(self, args):
        """Run the primitive once.

        Releases the GIL: several Python threads may execute one primitive at once.  Arrays
        of the described dtype and shape, dense in their descriptor's layout, with packed
        weights, take the C-level path; anything else is validated and converted first.

        Parameters
        ----------
        args : dict
            ``{DNNL_ARG_*: numpy.ndarray}``: ``DNNL_ARG_SRC`` (logical shape, plain or
            channels-last strides as its descriptor says), ``DNNL_ARG_WEIGHTS`` (plain or
            from :meth:`prepare_weights`), ``DNNL_ARG_BIAS``, the declared scales / zero
            points, the post-op inputs, the fused depthwise post-op's tensors
            (``DNNL_ARG_ATTR_POST_OP_DW | ...``), and optionally ``DNNL_ARG_DST``.

        Returns
        -------
        numpy.ndarray
            The destination (the ``DNNL_ARG_DST`` array, written in place, when given).
            With a fused depthwise post-op, the depthwise convolution's output.

        Raises
        ------
        InvalidArguments
            A missing, unknown or mistyped key, an array of the wrong dtype or shape,
            scales that are not finite and > 0, zero points beyond s32, packed weights of
            another primitive, a destination that overlaps an input.
        MemoryError
            When the scratch memory cannot be allocated.

        Examples
        --------
        >>> import numpy as np, dnnq
        >>> conv = dnnq.Convolution(dnnq.MemoryDesc((1, 1, 3, 3), "u8"),
        ...                         dnnq.MemoryDesc((1, 1, 2, 2), "s8"),
        ...                         dnnq.MemoryDesc((1, 1, 2, 2), "s32"),
        ...                         strides=1, padding_l=0, padding_r=0)
        >>> conv.execute({dnnq.DNNL_ARG_SRC: np.arange(9, dtype=np.uint8).reshape(1, 1, 3, 3),
        ...               dnnq.DNNL_ARG_WEIGHTS: np.ones((1, 1, 2, 2), np.int8)})
        array([[[[ 8, 12],
                 [20, 24]]]], dtype=int32)
        """
        if self._fused is not None:
            return execute_fused(self, args)
        if self._exec is not None:
            if _verbose._level:
                t0 = time.perf_counter()
                out = self._exec.run(args)
                if out is not None:
                    self._verbose("exec", (time.perf_counter() - t0) * 1e3)
                    return out
            else:
                out = self._exec.run(args)
                if out is not None:
                    return out
        p = self._name
        check_known_args(p, args, self._known)
        for need, what in ((A.DNNL_ARG_SRC, "src"), (A.DNNL_ARG_WEIGHTS, "weights")):
            if need not in args:
                raise InvalidArguments(f"{p}.execute: missing {what} (DNNL_ARG_{what.upper()})")
        scratch = _Scratch(self._scratch)
        try:
            if self._f32:
                return self._execute_general_f32(args, scratch)
            return self._execute_general(args, scratch)
        finally:
            scratch.release()

    def _verbose(self, event, ms):
        g = self._geo
        problem = (f"mb{g.N}_g{g.G}ic{g.IC}oc{g.OC}_"
                   f"id{g.src[0]}ih{g.src[1]}iw{g.src[2]}_od{g.dst[0]}oh{g.dst[1]}ow{g.dst[2]}_"
                   f"kd{g.kernel[0]}kh{g.kernel[1]}kw{g.kernel[2]}_"
                   f"sd{g.strides[0]}sh{g.strides[1]}sw{g.strides[2]}")
        _verbose.line(event, self._kind, self.impl_info,
                      (("src", self.src_desc), ("wei", self.weights_desc),
                       ("bia", self.bias_desc), ("dst", self.dst_desc)),
                      self.attr, problem, ms)


class Convolution(_ConvolutionBase):
    """int8 forward convolution (and f32 layers): 1-D, 2-D, 3-D, groups, depthwise, dilation.

    Created once (descriptors checked, kernel chosen, tiles planned), executed many times.
    Results are bit-identical to oneDNN 3.2's convolution (the user guide's convolution page
    has the numerics and the cases where dnnq follows one of oneDNN's other kernels).

    Parameters
    ----------
    src_desc : MemoryDesc
        u8 or s8 (f32 for an f32 layer, with f32 weights), logical dims ``(N, IC, [D,] [H,]
        W)``, plain or channels-last (``nwc``, ``nhwc``, ``ndhwc``).
    weights_desc : MemoryDesc
        s8 (f32 for an f32 layer), ``(OC, IC, [KD,] [KH,] KW)``, or grouped ``(G, OC/G,
        IC/G, [KD,] [KH,] KW)`` (depthwise: ``(C, 1, 1, KH, KW)``); plain or ``wio`` /
        ``hwio`` / ``dhwio``.
    dst_desc : MemoryDesc
        f32, s32, s8 or u8, ``(N, OC, [OD,] [OH,] OW)``, plain or channels-last.
    bias_desc : MemoryDesc, optional
        f32, s32, s8 or u8, dims ``(OC,)``; added in f32 after the scales, unscaled.
    strides, padding_l, padding_r : int or sequence of int
        Keyword-only.  One value, or one per spatial dim: strides >= 1, paddings >= 0.
    dilates : int or sequence of int, optional
        Keyword-only.  oneDNN's convention: 0 = dense (a dilation of d skips d pixels).
    attr : PrimitiveAttr, optional
        Keyword-only.  Scales and zero points (masks below), post-ops (including the fused
        depthwise post-op :meth:`PostOps.append_dw` after a 1x1 convolution).

    Attributes
    ----------
    impl_info : str
        The kernel chosen: ``<isa>:brgconv`` (implicit GEMM), ``<isa>:brgconv_1x1``,
        ``<isa>:brgconv_fold`` (few input channels), ``<isa>:dw`` (depthwise); a suffix
        (``+ref_order``, ...) names the oneDNN kernel whose numerics dnnq follows.
    src_desc, weights_desc, dst_desc, bias_desc : MemoryDesc
        The descriptors.

    Raises
    ------
    InvalidArguments
        Dims that do not fit together (the output size must be ``(I + PL + PR - (K - 1)(D +
        1) - 1) // S + 1``), a stride of 0, a negative padding or dilation, groups that do
        not divide the channels, masks with bits beyond the tensor's dims.
    Unimplemented
        A data type, mask or post-op outside the support table.

    See Also
    --------
    Deconvolution

    Notes
    -----
    Execute keys: ``DNNL_ARG_SRC``, ``DNNL_ARG_WEIGHTS``, ``DNNL_ARG_BIAS``, ``DNNL_ARG_DST``;
    with a fused depthwise post-op also ``DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS``,
    ``| DNNL_ARG_BIAS``, and the scales ``DNNL_ARG_SCALE | DNNL_ARG_ATTR_POST_OP_DW |
    DNNL_ARG_WEIGHTS`` / ``| DNNL_ARG_DST``.

    Support table (masks over the tensor's own logical dims; ext = beyond oneDNN 3.2):

    ==================  ==============================================================
    src                 u8, s8; plain or channels-last
    weights             s8; plain, ``wio`` / ``hwio`` / ``dhwio``, grouped
    bias                f32, s32, s8, u8; dims (OC,)
    dst                 f32, s32, s8, u8; plain or channels-last
    src scale           0
    weights scale       0, 1 (per OC); grouped: 0, 3 (per G and OC/G)
    dst scale           0
    src zero point      0, 2 (per IC)
    weights zero point  0, 1 (per OC); grouped: 0, 3 (ext, as ONNX QLinearConv)
    dst zero point      0, 2 (per OC)
    post-ops            eltwise (all), binary (src1 dims each 1 or the dst's), sum,
                        checkpoint / select (ext), FakeQuantize chains, depthwise
    f32 layer           src f32 + weights f32 (+ bias f32) -> dst f32, s8, u8: the
                        dst scale and zero point, the post-ops but depthwise; src /
                        weights scales or zero points: InvalidArguments
    ==================  ==============================================================

    ``DNNL_MASK_PER_CHANNEL_NCHW`` / ``_OIHW`` resolve to the channel bits above.  The padded
    area holds the source zero point: padded taps add nothing, exactly, at every border.

    Examples
    --------
    A 3x3 convolution, u8 channels-last source, per-channel weight scales, to u8:

    >>> import numpy as np, dnnq
    >>> from dnnq import DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_SCALE
    >>> attr = dnnq.PrimitiveAttr()
    >>> _ = attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1 << 0)       # per output channel
    >>> _ = attr.set_scales_mask(DNNL_ARG_DST, 0)
    >>> conv = dnnq.Convolution(dnnq.MemoryDesc((1, 8, 6, 6), "u8", tag="nhwc"),
    ...                         dnnq.MemoryDesc((4, 8, 3, 3), "s8"),
    ...                         dnnq.MemoryDesc((1, 4, 6, 6), "u8", tag="nhwc"),
    ...                         strides=1, padding_l=1, padding_r=1, attr=attr)
    >>> x = np.ones((1, 6, 6, 8), np.uint8).transpose(0, 3, 1, 2)   # nhwc memory
    >>> y = conv.execute({DNNL_ARG_SRC: x,
    ...                   DNNL_ARG_WEIGHTS: conv.prepare_weights(np.ones((4, 8, 3, 3), np.int8)),
    ...                   DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.array([1, 2, 3, 4], np.float32),
    ...                   DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([4.0], np.float32)})
    >>> y[0, :, 2, 2].tolist(), y[0, :, 0, 0].tolist()          # inside / at a corner
    ([18, 36, 54, 72], [8, 16, 24, 32])
    """

    _name = "Convolution"
    _kind = "convolution"
    _deconv = False


class Deconvolution(_ConvolutionBase):
    """int8 forward deconvolution (and f32 layers), in oneDNN's convention.

    ``dst[oc, i*S - PL + k*(D+1)] += src[ic, i] * w[oc, ic, k]``: weights ``(OC, IC, k...)``
    or ``(G, OC/G, IC/G, k...)``, no kernel flip; the output size is ``(I - 1) * S - PL - PR
    + (K - 1) * (D + 1) + 1``.  The same data types, layouts, masks and post-ops as
    :class:`Convolution` (no fused depthwise post-op).  Results are bit-identical to
    oneDNN 3.2, whose kernel choice dnnq models (``impl_info`` suffixes ``+gemm_order``,
    ``+jit_deconv_nan``).

    Parameters
    ----------
    src_desc : MemoryDesc
        u8 or s8 (f32 for an f32 layer), ``(N, IC, [D,] [H,] W)``, plain or channels-last.
    weights_desc : MemoryDesc
        s8 (f32 for an f32 layer), ``(OC, IC, [KD,] [KH,] KW)`` or grouped ``(G, OC/G,
        IC/G, ...)``.
    dst_desc : MemoryDesc
        f32, s32, s8 or u8, ``(N, OC, [OD,] [OH,] OW)``.
    bias_desc : MemoryDesc, optional
        f32, s32, s8 or u8, ``(OC,)``.
    strides, padding_l, padding_r : int or sequence of int
        Keyword-only, as for :class:`Convolution`.
    dilates : int or sequence of int, optional
        Keyword-only; 0 = dense.
    attr : PrimitiveAttr, optional
        Keyword-only.  Scales, zero points and post-ops as for :class:`Convolution`.

    Attributes
    ----------
    impl_info : str
        The kernel chosen and the oneDNN numerics followed.
    src_desc, weights_desc, dst_desc, bias_desc : MemoryDesc
        The descriptors.

    Raises
    ------
    InvalidArguments
        Dims that do not fit together, a stride of 0, negative paddings or dilations,
        groups that do not divide the channels.
    Unimplemented
        A data type, mask or post-op outside the support table (:class:`Convolution`).

    See Also
    --------
    Convolution

    Notes
    -----
    Support table: as :class:`Convolution`'s, without ``append_dw``.  Execute keys:
    ``DNNL_ARG_SRC``, ``DNNL_ARG_WEIGHTS``, ``DNNL_ARG_BIAS``, ``DNNL_ARG_DST``.

    Examples
    --------
    A 1-D deconvolution, kernel 2, stride 2: each input pixel writes two output pixels.

    >>> import numpy as np, dnnq
    >>> deconv = dnnq.Deconvolution(dnnq.MemoryDesc((1, 1, 3), "u8"),
    ...                             dnnq.MemoryDesc((1, 1, 2), "s8"),
    ...                             dnnq.MemoryDesc((1, 1, 6), "s32"),
    ...                             strides=2, padding_l=0, padding_r=0)
    >>> deconv.execute({dnnq.DNNL_ARG_SRC: np.array([[[1, 2, 3]]], np.uint8),
    ...                 dnnq.DNNL_ARG_WEIGHTS: np.array([[[1, 10]]], np.int8)})
    array([[[ 1, 10,  2, 20,  3, 30]]], dtype=int32)
    """

    _name = "Deconvolution"
    _kind = "deconvolution"
    _deconv = True
