"""f32 Convolution / Deconvolution (an f32 layer: f32 source and weights, f32 bias, dst f32, s8
or u8; primitives/_f32.py): the creation and the checked execute path, mixed into
_ConvolutionBase (convolution.py).  The plan is the int8 driver's -- tiles, work items, the
1x1 GEMM -- with the f32 kernels (ukernels/dnnq_f32.h, conv_f32.c); the C-level execute path
is the same ConvExec."""
import numpy as np

from dnnq import args as A
from dnnq.primitives import _dispatch, _impls
from dnnq import masks as _masks
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.post_ops import PostOps
from dnnq.primitives import _plan
from dnnq.primitives._conv_geometry import packed_sizes
from dnnq.primitives._conv_kernel_choice import deconv_ks_rows
from dnnq.primitives._kernels import _codes, _conv, _gemm

_ONE = np.ones(1, np.float32)


class F32Convolution:
    """The f32 layer's pieces of _ConvolutionBase."""

    def _init_f32(self, attr):
        p, geo = self._name, self._geo
        ops = attr.post_ops if attr is not None else PostOps()
        if any(ops.kind(i) == "convolution" for i in range(len(ops))):
            raise Unimplemented(f"{p}: a depthwise post-op (append_dw) after an f32 layer is not "
                                "supported; supported: eltwise, binary, sum, checkpoint, select "
                                "(FakeQuantize chains)")
        self._analyse_attr(attr)
        self._numerics = "exact"
        self._onednn_kernel = None
        self._pair_sat = self._halve = self._onednn_avx2 = False
        self._scale_adjust = 1.0
        self._ref_order = False
        self._ref_flags = 0
        self._u8_nan_top = False
        impl = _impls.choose(self._kind, _impls.F32)
        self._isa = impl.isa
        self._dw_layout = self._dw_s16_layout = "f32"
        self._impl = self._choose_kernel()
        self._dw_plain = 0
        self._packed_sizes = packed_sizes(geo, "f32")
        kernel = ("dw" if geo.depthwise else "brgconv_1x1" if geo.is_gemm else
                  "brgconv_fold" if geo.fold_kw else "brgconv")
        self.impl_info = f"{impl.name.split(':')[0]}:{kernel}_f32"
        self._plan = self._make_plan_f32()
        self._zrows = {}
        self._scratch = {}
        self._key = (type(self).__name__, self.src_desc, self.weights_desc, self.dst_desc,
                     self.bias_desc, attr.key() if attr is not None else None, geo.key(),
                     self._isa, "f32")
        self._known = self._known_args()
        self._fast_plan()

    def _make_plan_f32(self):
        geo = self._geo
        isa_code = _plan.ISA_CODE[self._isa]
        dt = _plan.DT_CODE[self.dst_desc.dt]
        if self._impl.kernel == "gemm":  # the GEMM driver over (image, pixels, OC)
            return _gemm.GemmPlan(isa_code, geo.N, geo.out_pixels, geo.OC, geo.IC, dt,
                                  self._post_specs, False, False, 0, True)
        mr = _conv.F32_ROWS
        npix = geo.out_pixels
        cols = geo.OC if geo.depthwise else geo.OCg
        panels = (cols + 63) // 64
        groups = 1 if geo.depthwise else geo.G
        mc = mr * (32 if geo.fold_kw or geo.deconv else 8)
        threads = max(1, _dispatch.get_num_threads())
        while mc > mr and geo.N * groups * panels * -(-npix // mc) < 4 * threads:
            mc -= mr
        if self._impl.kernel == "f32_deconv_ks":  # whole source rows: their output rows
            mc = deconv_ks_rows(geo, threads) * geo.kernel[0] * geo.kernel[1] * geo.dst[2]
        stride = geo.ntaps * 64
        g = dict(N=geo.N, G=geo.G, ICg=geo.ICg, OCg=geo.OCg, src=geo.src, dst=geo.dst,
                 kernel=geo.kernel, strides=geo.strides, steps=geo.steps, pads=geo.pads,
                 deconv=int(geo.deconv), depthwise=int(geo.depthwise), fold_kw=int(geo.fold_kw),
                 kpair=geo.kpair, npairs=geo.npairs, mc=mc, mr=mr, dw_strides=(stride, stride))
        self._dw_kind = _conv.DW_S16
        return _conv.ConvPlan(isa_code, g, dt, self._post_specs, False, 0, False, True,
                              kernel=_codes.CONV_KERNEL[self._impl.kernel])

    def _zero_row_f32(self):
        """The row of zeros a tap outside the source multiplies (ConvPlan: at least kpair f32;
        a pixel's channels for depthwise), as bytes."""
        rows = self._zrows.get("f32")
        if rows is None:
            geo = self._geo
            n = max(geo.kpair, geo.IC, 1)
            rows = self._zrows["f32"] = np.zeros(n, np.float32).view(np.uint8)
        return rows

    def _bias_f32(self, args):
        if self.bias_desc is None:
            return None
        if A.DNNL_ARG_BIAS not in args:
            raise InvalidArguments(f"{self._name}.execute: missing bias (DNNL_ARG_BIAS); the "
                                   f"primitive was created with bias dims {self.bias_desc.dims}")
        return np.ascontiguousarray(self.bias_desc.check_array(args[A.DNNL_ARG_BIAS], "bias"),
                                    dtype=np.float32)

    def _execute_general_f32(self, args, scratch):
        """The checked path of an f32 layer (convolution.py's execute falls back to it)."""
        geo = self._geo
        x = self._channels_last(self.src_desc, args[A.DNNL_ARG_SRC], "src", scratch)
        pw = self._weights(args[A.DNNL_ARG_WEIGHTS])
        sm, zm = self._scale_mask, self._zp_mask
        dst_scale = 1.0
        if A.DNNL_ARG_DST in sm:
            dst_scale = self._runtime(args, A.DNNL_ARG_SCALE | A.DNNL_ARG_DST, 1,
                                      _masks.check_scales).item(0)
        dzp, dzp_sn = None, 0
        if A.DNNL_ARG_DST in zm:
            dzp = self._runtime(args, A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST,
                                1 if zm[A.DNNL_ARG_DST] == 0 else geo.OC,
                                _masks.check_zero_points)
            dzp_sn = int(dzp.size > 1)
        bias = self._bias_f32(args)
        src1s = self._post_inputs(args)
        user_dst, out = self._dst_channels_last(args, scratch)
        comp = np.zeros(geo.OC, np.int32)  # (read by no f32 kernel; a valid pointer)
        threads = _dispatch.get_num_threads()
        if geo.is_gemm:
            P = geo.out_pixels
            self._plan.run(x, P * geo.IC, geo.IC, False, pw.packed, 0, comp, 0, None, 0, None,
                           0, False, 1.0, _ONE, 0, bias, 0, 0, 1, src1s, dst_scale, dzp, dzp_sn,
                           out, P * geo.OC, geo.OC, threads)
        else:
            self._plan.run(x, self._zero_row_f32(), None, pw.packed, pw.dw, comp, None, 0,
                           None, False, 1.0, _ONE, 0, bias, src1s, dst_scale, dzp, dzp_sn, out,
                           threads)
        return self._dst_back(user_dst, out)
