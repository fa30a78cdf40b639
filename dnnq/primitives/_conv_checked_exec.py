"""The checked execute path of Convolution / Deconvolution (convolution.py): every argument
validated in Python, plain data copied to channels-last, the driver run through the general
plan; the C-level path (_fast_plan) takes the common configurations without it."""
import copy
import functools
import time

import numpy as np

from dnnq import args as A
from dnnq import masks as _masks
from dnnq.primitives import _dispatch, _verbose
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.primitives._common import INT8_RANGE, arg_name, check_known_args, check_overlaps
from dnnq.primitives._conv_geometry import pack_depthwise, window_sums
from dnnq.primitives._gemm_primitive import wrap_s32
from dnnq.primitives._kernels import _conv

_ONE = np.ones(1, np.float32)


class CheckedExecute:
    """The checked execute path of _ConvolutionBase."""

    def _channels_last(self, desc, arr, name, scratch=None):
        """The execution array as a C-contiguous channels-last (N, [D, H,] W, C) array (a
        transposed copy for plain data, in a `scratch` buffer when given)."""
        x = desc.check_array(arr, name)
        if not desc.is_channels_last:
            shape = x.shape[:1] + x.shape[2:] + x.shape[1:2]
            cl = np.empty(shape, x.dtype) if scratch is None else scratch.take(shape, x.dtype)
            _conv.transpose_channels(x, cl, True, self._isa_code)
            x = cl
        return x

    def _post_inputs(self, args):
        """f32 channels-last inputs of binary / select post-ops with (image, pixel, channel)
        strides; a partly broadcast spatial shape is expanded."""
        out = [None] * len(self._post_specs)

        def prepare(key, desc):
            if key not in args:
                raise InvalidArguments(f"{self._name}.execute: missing {arg_name(key)} (post-op "
                                       f"input of dims {desc.dims})")
            x = desc.check_array(args[key], arg_name(key))
            x = desc.logical_view(x) if desc.is_channels_last else x
            x = np.moveaxis(x.astype(np.float32, copy=False), 1, -1)  # (N', *sp', C')
            sp = x.shape[1:-1]
            full_sp = tuple(self.dst_desc.dims[2:])
            if any(s == 1 for s in sp) and sp != full_sp and any(s != 1 for s in sp):
                x = np.broadcast_to(x, (x.shape[0],) + full_sp + (x.shape[-1],))
            x = np.ascontiguousarray(x)
            sp = x.shape[1:-1]
            c = x.shape[-1]
            s_img = int(np.prod(sp)) * c if x.shape[0] > 1 else 0
            s_pix = c if int(np.prod(sp)) > 1 else 0
            s_chan = 1 if c > 1 else 0
            return (x, s_img, s_pix, s_chan)

        for i, desc in self._binary:
            out[i] = prepare(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1, desc)
        for i, cdesc, vdesc in self._selects:
            out[i] = (prepare(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1, cdesc) +
                      prepare(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_2, vdesc))
        return out

    def _zero_point_rows(self, zs, vals):
        """The rows padded taps read (G rows of kpair bytes, a pixel row for depthwise) holding
        the zero point in the source type; cached per zero point (execute allocates nothing
        of the size of a row for repeated calls)."""
        key = zs.tobytes()
        rows = self._zrows.get(key)
        if rows is None:
            geo = self._geo
            if geo.depthwise:
                rows = np.broadcast_to(vals, (geo.IC,))
            elif geo.fold_kw:
                rows = np.tile(np.broadcast_to(vals, (geo.IC,)), geo.kernel[2])
            else:
                rows = np.broadcast_to(vals, (geo.IC,)).reshape(geo.G, geo.ICg)
            rows = np.ascontiguousarray(rows.astype(np.int8 if self.src_desc.dt == "s8"
                                                    else np.uint8)).view(np.uint8)
            if len(self._zrows) >= 16:
                self._zrows.clear()
            self._zrows[key] = rows
        return rows

    def _execute_general(self, args, scratch):
        launch, user_dst, out = self._prepare_general(args, scratch)
        t0 = time.perf_counter() if _verbose._level else 0.0
        launch(_dispatch.get_num_threads())
        if _verbose._level:
            self._verbose("exec", (time.perf_counter() - t0) * 1e3)
        return self._dst_back(user_dst, out)

    def _bound_call(self, args):
        """A call repeating this primitive's execution on ``args`` without the checked path's
        per-call work (checks, runtime scales, compensation: about 80 us, most of a small
        layer's time): for a caller that passes the same dict holding the same arrays every
        time, only the source's values new (dnnq.onnx's warm runs).  It checks that each
        value is still the object it bound and runs ``execute`` otherwise.  None where one
        execution's preparation cannot serve the next: values that depend on the source
        (a weights zero point's window sums), copies (plain src or dst, no dst given), a
        fused depthwise post-op, f32 layers, verbose logging."""
        if self._fused is not None or self._f32 or _verbose._level or \
                not (self.src_desc.is_channels_last and self.dst_desc.is_channels_last) or \
                A.DNNL_ARG_DST not in args or A.DNNL_ARG_WEIGHTS in self._zp_mask:
            return None
        check_known_args(self._name, args, self._known)
        launch, _, out = self._prepare_general(args, None)
        src, dst = args[A.DNNL_ARG_SRC], args[A.DNNL_ARG_DST]
        x = launch.args[0]
        if not (isinstance(src, np.ndarray) and isinstance(dst, np.ndarray)) or \
                x.ctypes.data != src.ctypes.data or out.ctypes.data != dst.ctypes.data:
            return None  # a copy of either: the next call's values would not reach it
        bound = tuple(args.items())

        def call():
            if len(args) != len(bound) or any(args.get(k) is not v for k, v in bound):
                return self.execute(args)
            launch(_dispatch.get_num_threads())
            return dst
        return call

    def _prepare_general(self, args, scratch):
        """(launch(nthreads): the kernel call with every argument prepared, the caller's dst
        or None, the channels-last array the kernels write)."""
        p, geo = self._name, self._geo
        src_dt = self.src_desc.dt
        x = self._channels_last(self.src_desc, args[A.DNNL_ARG_SRC], "src", scratch)
        pw = self._weights(args[A.DNNL_ARG_WEIGHTS])
        # runtime scales and zero points
        sm, zm = self._scale_mask, self._zp_mask
        src_scale = dst_scale = 1.0
        scale, scale_sn = _ONE, 0
        if A.DNNL_ARG_SRC in sm:
            src_scale = self._runtime(args, A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC, 1,
                                      _masks.check_scales).item(0)
        src_scale *= self._scale_adjust  # 2 for halved weights (exact: a power of two)
        if A.DNNL_ARG_WEIGHTS in sm:
            n = 1 if sm[A.DNNL_ARG_WEIGHTS] == 0 else geo.OC
            scale = self._runtime(args, A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS, n,
                                  _masks.check_scales)
            scale_sn = int(n > 1)
        if A.DNNL_ARG_DST in sm:
            dst_scale = self._runtime(args, A.DNNL_ARG_SCALE | A.DNNL_ARG_DST, 1,
                                      _masks.check_scales).item(0)
        zs = np.zeros(1, np.int32)
        if A.DNNL_ARG_SRC in zm:
            zs = self._runtime(args, A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC,
                               1 if zm[A.DNNL_ARG_SRC] == 0 else geo.IC, _masks.check_zero_points)
        zw = None
        if A.DNNL_ARG_WEIGHTS in zm:
            zw = self._runtime(args, A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_WEIGHTS,
                               1 if zm[A.DNNL_ARG_WEIGHTS] == 0 else geo.OC,
                               _masks.check_zero_points)
            if not np.any(zw) and not geo.depthwise:
                zw = None  # (depthwise: the plan's s16 weights take it folded in, even 0)
        dzp, dzp_sn = None, 0
        if A.DNNL_ARG_DST in zm:
            dzp = self._runtime(args, A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST,
                                1 if zm[A.DNNL_ARG_DST] == 0 else geo.OC, _masks.check_zero_points)
            dzp_sn = int(dzp.size > 1)
        # the zero-point rows the padded taps read, and what the compensation needs
        lo, hi = INT8_RANGE[src_dt]
        zs64 = zs.astype(np.int64)
        zrow_vals = np.clip(zs64, lo, hi)
        delta = zs64 - zrow_vals  # zero points the source type cannot hold
        per_ic = zs.size > 1
        zrow = self._zero_point_rows(zs, zrow_vals)
        dw_w = pw.dw
        plain = pw.plain  # (G, taps, ICg, OCg)
        if geo.depthwise and zw is not None:
            # depthwise: the weights zero point is folded into the s16 weights (exact)
            wz = plain[:, :, 0, 0].astype(np.int64) - zw.astype(np.int64).reshape(-1, 1)
            if wz.min() < -32768 or wz.max() > 32767:
                raise Unimplemented(f"{p}.execute: depthwise weights minus the weights zero "
                                    "point must fit s16; got values in "
                                    f"[{wz.min()}, {wz.max()}]")
            dw_w = pack_depthwise(geo, wz, self._dw_s16_layout)
            colsum = wz.sum(axis=1)
            tapw = wz[:, :, None]  # (C, taps, 1) as (G, taps, OCg)
            zw = None
        else:
            colsum = pw.colsum
            tapw = None
        shift = 128 if src_dt == "s8" and not geo.depthwise else 0
        if not per_ic and tapw is None:
            col_comp = pw.comp_for_shift(shift + int(zs[0]))
        else:
            if tapw is not None:
                comp = -(shift + zs64) * colsum if not per_ic else -(zs64 * colsum)
            elif per_ic:
                zg = zs64.reshape(geo.G, 1, geo.ICg, 1)
                comp = -shift * colsum - (zg * plain).sum(axis=(1, 2)).reshape(-1)
            else:
                comp = -(shift + zs64[0]) * colsum
            col_comp = wrap_s32(comp)
        padcorr = None
        if np.any(delta):
            if geo.depthwise:
                wt = tapw if tapw is not None else plain[:, :, 0, 0].astype(np.int64)[:, :, None]
                pc = (np.broadcast_to(delta, (geo.IC,))[:, None] * wt[:, :, 0]).T  # (taps, C)
            else:
                dg = np.broadcast_to(delta, (geo.IC,)).reshape(geo.G, 1, geo.ICg, 1)
                pc = (dg * plain.astype(np.int64)).sum(axis=2)  # (G, taps, OCg)
            padcorr = wrap_s32(np.ascontiguousarray(pc))
        rowsum = None
        wzp_sn = 0
        if zw is not None:
            rowsum = window_sums(self._geo, x, zs64)
            wzp_sn = int(zw.size > 1)
        bias = None
        if self.bias_desc is not None:
            if A.DNNL_ARG_BIAS not in args:
                raise InvalidArguments(f"{p}.execute: missing bias (DNNL_ARG_BIAS); the "
                                       f"primitive was created with bias dims {self.bias_desc.dims}")
            bias = np.ascontiguousarray(self.bias_desc.check_array(args[A.DNNL_ARG_BIAS], "bias"),
                                        dtype=np.float32)
        src1s = self._post_inputs(args)
        user_dst, out = self._dst_channels_last(args, scratch)
        if self._impl.kernel == "gemm":
            P = geo.out_pixels
            launch = functools.partial(
                self._plan.run, x.view(np.uint8), P * geo.IC, geo.IC, src_dt == "s8",
                pw.packed, 0, col_comp, 0, zw, wzp_sn, rowsum, P, self._raw_s32, src_scale,
                scale, scale_sn, bias, 0, 0, 1, src1s, dst_scale, dzp, dzp_sn, out,
                P * geo.OC, geo.OC)
        else:
            launch = functools.partial(
                self._plan.run, x.view(np.uint8), zrow, padcorr, pw.packed, dw_w, col_comp,
                zw, wzp_sn, rowsum, self._raw_s32, src_scale, scale, scale_sn, bias, src1s,
                dst_scale, dzp, dzp_sn, out)
        return launch, user_dst, out

    def _dst_channels_last(self, args, scratch):
        """(the caller's dst or None, the channels-last (N, *spatial, OC) array the kernels
        write): the caller's array itself when channels-last, else a scratch copy (holding the
        previous contents when a sum post-op reads them)."""
        p, geo, dd = self._name, self._geo, self.dst_desc
        user_dst = args.get(A.DNNL_ARG_DST)
        if user_dst is None:
            if self._has_sum:
                raise InvalidArguments(f"{p}.execute: a sum post-op reads the previous "
                                       "destination, but no DNNL_ARG_DST array was given")
            shape = (geo.N,) + tuple(dd.dims[2:]) + (geo.OC,)
            # returned as it is when channels-last; a temporary before the plain copy
            out = (np.empty(shape, dd.numpy_dtype) if dd.is_channels_last else
                   scratch.take(shape, dd.numpy_dtype))
        else:
            out = dd.check_output(user_dst, "dst")
            if not dd.is_channels_last:
                cl = scratch.take((geo.N,) + tuple(dd.dims[2:]) + (geo.OC,), dd.numpy_dtype)
                if self._has_sum:
                    _conv.transpose_channels(out, cl, True, self._isa_code)
                out = cl
            # no input may overlap dst (not in place, as oneDNN's convolution)
            check_overlaps(p, args)
        return user_dst, out

    def _dst_back(self, user_dst, out):
        """The result in the caller's layout (out: the kernels' channels-last dst)."""
        dd = self.dst_desc
        if dd.is_channels_last:
            if user_dst is None:
                return dd.logical_view(out)
            return dd.copy_back(user_dst, out)
        direct = user_dst is not None and user_dst.flags.c_contiguous and user_dst.flags.aligned
        plain = user_dst if direct else np.empty(tuple(dd.dims), dd.numpy_dtype)
        _conv.transpose_channels(out, plain, False, self._isa_code)
        if user_dst is None or direct:
            return plain
        np.copyto(user_dst, plain)
        return user_dst
