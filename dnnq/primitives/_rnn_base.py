"""int8 RNN inference: LSTM, GRU, LBR-GRU and vanilla RNN (oneDNN 3.2's quantized RNN model).

``LSTM(direction, src_layer_desc, src_iter_desc, src_iter_c_desc, weights_layer_desc,
weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, dst_iter_c_desc, attr=None)``,
``GRU`` / ``LBRGRU(direction, src_layer_desc, src_iter_desc, weights_layer_desc,
weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, attr=None)``,
``VanillaRNN(activation, direction, ...as GRU...)`` with activation ``"relu"`` / ``"tanh"`` /
``"logistic"``.  LSTM extensions (keyword-only): ``weights_peephole_desc`` (f32 (L, D, 3, H),
gates i, f, o; execute key ``DNNL_ARG_WEIGHTS_PEEPHOLE``) and ``weights_projection_desc`` (s8
(L, D, H, P), an LSTMP; ``DNNL_ARG_WEIGHTS_PROJECTION``; src_iter / dst_iter / dst_layer then
have P channels; scales ``attr.set_rnn_weights_projection_qparams(mask 0 or 8, scales)`` or
``set_scales_mask(DNNL_ARG_WEIGHTS_PROJECTION, 0 or 8)``).  ``execute(args)`` returns ``{DNNL_ARG_DST_LAYER: ..., DNNL_ARG_DST_ITER: ...,
DNNL_ARG_DST_ITER_C: ...}`` (the outputs that have a descriptor).

Layouts (oneDNN's): src_layer / dst_layer ``tnc`` (T, N, C); states ``ldnc`` (L, D, N, H);
weights ``ldigo`` (L, D, I, G, H); bias ``ldgo`` (L, D, G, H).  Gate order: LSTM i, f, c~, o;
GRU / LBR-GRU u, r, o (LBR-GRU bias has a 4th row, the bias of U_o h); vanilla RNN 1 gate.
Directions ``unidirectional_left2right``, ``unidirectional_right2left``,
``bidirectional_concat``, ``bidirectional_sum``; as in oneDNN, each direction is its own stack
of layers (layer l reads layer l-1 of the same direction), so several layers need
``C == H``.  Optional states absent = zero.

Support table

| | u8 mode | f32 mode (dynamic-quantization users) |
|---|---|---|
| src_layer | u8 | f32 |
| src_iter / dst_iter | u8 | f32 |
| src_iter_c / dst_iter_c (LSTM) | f32 | f32 |
| weights_layer / weights_iter | s8 | s8 |
| bias | f32 | f32 |
| dst_layer | u8 or f32 (= the dequantized u8 value) | f32 |

Quantization, one of two forms (mixing them raises InvalidArguments):

* legacy (oneDNN): ``attr.set_rnn_data_qparams(scale, shift)`` (``u8 = scale * x + shift``, for
  every u8 tensor: src / dst layer and iter) and ``attr.set_rnn_weights_qparams(mask, scales)``
  (``s8 = scale * w``; mask 0 = one scale, or 24 = per gate and output channel, ``G * H``
  values gate-major, shared by both weights, every layer and direction; absent = 1);
* unified (``x_f32 = scale * (x_q - zp)``, values given at execution):
  ``set_scales_mask(DNNL_ARG_SRC_LAYER, 0)`` and ``set_zero_points_mask(DNNL_ARG_SRC_LAYER, 0)``
  (for every u8 tensor, as above), ``set_scales_mask(DNNL_ARG_WEIGHTS_LAYER | _ITER, 0 or 24)``.
  They are the legacy parameters ``scale = f32(1 / s)``, ``shift = zp``, ``wscale = f32(1 / s_w)``
  and give identical results.  The two weights scales must be equal (oneDNN dequantizes
  ``x W_layer + h W_iter`` with one scale per gate and channel).

u8 data needs the data parameters (either form).

Numerics (u8 mode), as oneDNN 3.2's ``brgemm`` RNN (LSTM and GRU bit-identical to it):
``gate = f32(x.W + h.U) / f32(wscale * scale) + (bias - (f32(ΣW) + f32(ΣU)) * shift /
f32(wscale * scale))``; sigmoid and tanh are oneDNN's jit approximations, evaluated operation by
operation; LSTM ``c = fma(i, c~, c_prev * f)``, ``h = tanh(c) * o``; GRU ``r * h_prev`` with
``h_prev = (h_u8 - shift) / scale`` is requantized to u8 before the U_o product, ``h = fma(1 - u,
o, u * h_prev)``; ``h_u8 = saturate(rne(h * scale + shift))``.  LBR-GRU and vanilla RNN (oneDNN
3.2 has no int8 version) use the same pieces: LBR ``o = tanh((W_o x / d + b_o') + r * (U_o h / d
+ b_extra'))`` with each product's own shift compensation; vanilla ``h = act(gate)``.
bidirectional_sum: u8 ``saturate(h_l2r + h_r2l)`` in u8 units as oneDNN (so the sum is in the
``2 * shift`` offset domain); f32 ``(saturate_u8(h_l2r + h_r2l) - 2 * shift) / scale``.
f32 mode: the f32 src_layer / src_iter are quantized (``saturate(rne(x * scale + shift))``),
the u8 engine runs, and dst_layer / dst_iter are the dequantized u8 values: the results are
exactly the u8 mode's on the quantized inputs.
Peepholes (oneDNN 3.2 refuses them in int8; its jit cell's operations): ``gate_i/f =
fma(c_prev, p, gate)``, ``gate_o = fma(c, p_o, gate_o)``.  Projection (bit-identical to oneDNN
3.2's int8 LSTMP): ``h' = q((f32(h_u8 . Wp) - f32(sum Wp) * shift) / f32(pscale * scale))``.
"""
import threading
import time

import numpy as np

from dnnq import args as A
from dnnq.primitives import _verbose
from dnnq.primitives._cache import CachedPrimitive
from dnnq.primitives import _impls
from dnnq.primitives._dispatch import get_int8_numerics, get_num_threads
from dnnq.primitives._kernels import _codes, _gemm, _rnn, _rnn_exec
from dnnq.attr import PrimitiveAttr
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.masks import check_scales, check_zero_points
from dnnq.primitives._attr_plan import AttrPlan
from dnnq.primitives._common import check_known_args, check_overlaps
from dnnq.primitives._plan import aligned_empty
from dnnq.primitives._rnn_descs import check_desc as _desc, dims_must as _dims_must
from dnnq.primitives._rnn_weights import PackedRnnWeights, _pack


DIRECTIONS = ("unidirectional_left2right", "unidirectional_right2left",
              "bidirectional_concat", "bidirectional_sum")
ACTIVATIONS = _rnn.ACTIVATIONS
_GATES = {"lstm": 4, "gru": 3, "lbr_gru": 3, "vanilla": 1}
_CELL_CODE = {"lstm": _rnn.CELL_LSTM, "gru": _rnn.CELL_GRU, "lbr_gru": _rnn.CELL_LBR_GRU,
              "vanilla": _rnn.CELL_VANILLA}
_PER_GATE_OC = (1 << 3) | (1 << 4)   # the g and o dims of ldigo
_OUT_NAMES = {A.DNNL_ARG_DST_LAYER: "dst_layer", A.DNNL_ARG_DST_ITER: "dst_iter",
              A.DNNL_ARG_DST_ITER_C: "dst_iter_c"}
_ARG_NAMES = {A.DNNL_ARG_SRC_LAYER: "src_layer", A.DNNL_ARG_WEIGHTS_LAYER: "weights_layer",
              A.DNNL_ARG_WEIGHTS_ITER: "weights_iter",
              A.DNNL_ARG_WEIGHTS_PROJECTION: "weights_projection"}
_ALL_NAMES = {**_OUT_NAMES, **_ARG_NAMES, A.DNNL_ARG_SRC_ITER: "src_iter",
              A.DNNL_ARG_SRC_ITER_C: "src_iter_c", A.DNNL_ARG_BIAS: "bias",
              A.DNNL_ARG_WEIGHTS_PEEPHOLE: "weights_peephole"}
_F32 = np.float32
_UNIFIED_ARGS = (A.DNNL_ARG_SRC_LAYER, A.DNNL_ARG_WEIGHTS_LAYER, A.DNNL_ARG_WEIGHTS_ITER,
                 A.DNNL_ARG_WEIGHTS_PROJECTION)
_PER_OC_PROJ = 1 << 3   # the o dim of ldio
# one parallel region with a barrier per step phase (0) or a region per phase (1); see
# docs/rnn.md for the measurement that chose it
FORK_JOIN = 0


class _RNN(metaclass=CachedPrimitive):
    _cell = None
    _name = None

    # --- creation ------------------------------------------------------------------------------
    def _setup(self, direction, activation, src_layer_desc, src_iter_desc, src_iter_c_desc,
               weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc,
               dst_iter_c_desc, attr, weights_peephole_desc=None, weights_projection_desc=None):
        p = self._name
        if direction not in DIRECTIONS:
            raise InvalidArguments(f"{p}: direction got {direction!r}; expected one of "
                                   f"{', '.join(DIRECTIONS)}")
        self.direction = direction
        self.activation = activation
        D = 2 if direction.startswith("bidirectional") else 1
        sl = _desc(p, src_layer_desc, "src_layer_desc", ("u8", "f32"), 3)
        self.f32_mode = sl.dt == "f32"
        state_dt = ("f32",) if self.f32_mode else ("u8",)
        wl = _desc(p, weights_layer_desc, "weights_layer_desc", ("s8",), 5)
        wi = _desc(p, weights_iter_desc, "weights_iter_desc", ("s8",), 5)
        L, Dw, C, G, H = wl.dims
        T, N, C_src = sl.dims
        want_g = _GATES[self._cell]
        if G != want_g:
            raise InvalidArguments(f"{p}: weights_layer_desc has {G} gates (dims {wl.dims}, "
                                   f"ldigo); {p} has {want_g}")
        if Dw != D:
            raise InvalidArguments(f"{p}: weights_layer_desc dims {wl.dims} have {Dw} "
                                   f"direction(s); {direction} needs {D}")
        if C != C_src:
            raise InvalidArguments(f"{p}: weights_layer_desc input channels {C} (dims "
                                   f"{wl.dims}) differ from src_layer_desc's {C_src}")
        SIC = wi.dims[2]
        # LSTM extensions: peepholes (ldgo, gates i, f, o, f32) and a projection (ldio, s8)
        # whose P outputs are the h that dst_layer, dst_iter and the next step see
        wpe = _desc(p, weights_peephole_desc, "weights_peephole_desc", ("f32",), 4,
                    optional=True)
        _dims_must(p, wpe, "weights_peephole_desc", (L, D, 3, H), "(L, D, 3, H) (ldgo, gates "
                   "i, f, o)")
        wpr = _desc(p, weights_projection_desc, "weights_projection_desc", ("s8",), 4,
                    optional=True)
        P = H
        if wpr is not None:
            P = wpr.dims[3]
            _dims_must(p, wpr, "weights_projection_desc", (L, D, H, P), "(L, D, H, P) (ldio)")
            if SIC != P:
                raise InvalidArguments(f"{p}: weights_iter_desc input channels {SIC} differ "
                                       f"from the projection size P = {P} (weights_projection"
                                       f"_desc dims {wpr.dims}); with a projection the "
                                       "recurrent input is the projected h")
        # the src_iter width may differ from H only for a single step (oneDNN's rule; GRUs
        # never: r*h is an H-vector)
        if wpr is None and SIC != H and (T > 1 or self._cell in ("gru", "lbr_gru")):
            raise InvalidArguments(f"{p}: weights_iter_desc input channels {SIC} differ from "
                                   f"H = {H}; only a single-step LSTM / vanilla RNN may have "
                                   "another src_iter width (no projection)")
        _dims_must(p, wi, "weights_iter_desc", (L, D, SIC, G, H),
                   "(L, D, SIC, G, H) with L, D, G, H of weights_layer_desc")
        if L > 1 and C != P:
            raise InvalidArguments(f"{p}: {L} layers need src_layer channels == "
                                   f"{'P' if wpr is not None else 'H'} (each layer reads the "
                                   f"previous one's h); got C = {C}, "
                                   f"{'P' if wpr is not None else 'H'} = {P}")
        n_bias = G + (1 if self._cell == "lbr_gru" else 0)
        b = _desc(p, bias_desc, "bias_desc", ("f32",), 4, optional=True)
        _dims_must(p, b, "bias_desc", (L, D, n_bias, H), "(L, D, gates, H) (ldgo)")
        dl_dts = ("f32",) if self.f32_mode else ("u8", "f32")
        dl = _desc(p, dst_layer_desc, "dst_layer_desc", dl_dts, 3)
        dlc = P * (2 if direction == "bidirectional_concat" else 1)
        _dims_must(p, dl, "dst_layer_desc", (T, N, dlc), f"(T, N, {dlc}) for {direction}")
        si = _desc(p, src_iter_desc, "src_iter_desc", state_dt, 4, optional=True)
        di = _desc(p, dst_iter_desc, "dst_iter_desc", state_dt, 4, optional=True)
        _dims_must(p, si, "src_iter_desc", (L, D, N, SIC), "(L, D, N, SIC) (ldnc)")
        _dims_must(p, di, "dst_iter_desc", (L, D, N, P),
                   "(L, D, N, P) (ldnc; P = the projection size)" if wpr is not None else
                   "(L, D, N, H) (ldnc)")
        sic = dic = None
        if self._cell == "lstm":
            sic = _desc(p, src_iter_c_desc, "src_iter_c_desc", ("f32",), 4, optional=True)
            dic = _desc(p, dst_iter_c_desc, "dst_iter_c_desc", ("f32",), 4, optional=True)
            _dims_must(p, sic, "src_iter_c_desc", (L, D, N, H), "(L, D, N, H) (ldnc)")
            _dims_must(p, dic, "dst_iter_c_desc", (L, D, N, H), "(L, D, N, H) (ldnc)")
        if min(T, N, C, H) < 1 or L < 1:
            raise InvalidArguments(f"{p}: empty problem (T={T}, N={N}, C={C}, H={H}, L={L}); "
                                   "every dimension must be >= 1")
        self.src_layer_desc, self.src_iter_desc, self.src_iter_c_desc = sl, si, sic
        self.weights_layer_desc, self.weights_iter_desc, self.bias_desc = wl, wi, b
        self.dst_layer_desc, self.dst_iter_desc, self.dst_iter_c_desc = dl, di, dic
        self.L, self.D, self.T, self.N, self.C, self.G, self.H = L, D, T, N, C, G, H
        self.SIC = SIC
        self.P = P
        self.weights_peephole_desc, self.weights_projection_desc = wpe, wpr
        self.n_bias = n_bias
        self._quant_setup(attr)
        self.attr = attr
        impl = _impls.choose(f"rnn:{self._cell}", _impls.RNN)
        self._isa = _codes.ISA[impl.isa]
        self.impl_info = impl.name
        # set_int8_numerics("avx2"): the level is at most avx2 and the GEMM kernels saturate
        # s16 pairs, as oneDNN's gemm_s8u8s32 without VNNI (the code carries the flag)
        if get_int8_numerics() != "exact":
            self._isa |= _codes.NUMERICS[get_int8_numerics()]
            self.impl_info += f"+{get_int8_numerics()}_numerics"
        known = {A.DNNL_ARG_SRC_LAYER, A.DNNL_ARG_WEIGHTS_LAYER, A.DNNL_ARG_WEIGHTS_ITER,
                 A.DNNL_ARG_DST_LAYER}
        for d, arg in ((si, A.DNNL_ARG_SRC_ITER), (sic, A.DNNL_ARG_SRC_ITER_C),
                       (b, A.DNNL_ARG_BIAS), (di, A.DNNL_ARG_DST_ITER),
                       (dic, A.DNNL_ARG_DST_ITER_C), (wpe, A.DNNL_ARG_WEIGHTS_PEEPHOLE),
                       (wpr, A.DNNL_ARG_WEIGHTS_PROJECTION)):
            if d is not None:
                known.add(arg)
        for arg in self._uscale:
            known.add(A.DNNL_ARG_SCALE | arg)
        if self._uzp:
            known.add(A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC_LAYER)
        self._known = frozenset(known)
        # packed weights are accepted by any primitive of the same description (which packs
        # them alike: the kernel level is part of it)
        self._key = (type(self).__name__, direction, activation, sl, si, sic, wl, wi, b, dl,
                     di, dic, attr.key() if attr is not None else None, self._isa, wpe, wpr)
        self._scratch = []
        self._lock = threading.Lock()
        self._comp_cache = None
        self._exec = self._make_exec()
        if _verbose.enabled(2):
            self._verbose("create", None)

    def _make_exec(self):
        """The one execute path (_kernels/_rnn_exec.pyx); its fast entry runs with the legacy
        quantization only (the unified form's values come with each execution)."""
        scale, shift = self._data if not self.unified else (_F32(1.0), _F32(0.0))
        dirmode = {"unidirectional_left2right": _rnn_exec.L2R,
                   "unidirectional_right2left": _rnn_exec.R2L,
                   "bidirectional_concat": _rnn_exec.CONCAT,
                   "bidirectional_sum": _rnn_exec.BISUM}[self.direction]
        keys = (A.DNNL_ARG_SRC_LAYER, A.DNNL_ARG_SRC_ITER, A.DNNL_ARG_SRC_ITER_C,
                A.DNNL_ARG_WEIGHTS_LAYER, A.DNNL_ARG_WEIGHTS_ITER, A.DNNL_ARG_WEIGHTS_PROJECTION,
                A.DNNL_ARG_BIAS, A.DNNL_ARG_WEIGHTS_PEEPHOLE, A.DNNL_ARG_DST_LAYER,
                A.DNNL_ARG_DST_ITER, A.DNNL_ARG_DST_ITER_C)
        return _rnn_exec.RnnExec(
            self, PackedRnnWeights, self._known, keys, isa=self._isa,
            cell=_CELL_CODE[self._cell],
            act=ACTIVATIONS.get(self.activation, ACTIVATIONS["relu"]),   # gated cells: unread
            dirmode=dirmode, f32_mode=self.f32_mode,
            dl_f32=self.dst_layer_desc.dt == "f32", L=self.L, D=self.D, T=self.T, N=self.N,
            C=self.C, H=self.H, G=self.G, P=self.P, SIC=self.SIC, nb=self.n_bias,
            fast=not self.unified, scale=scale, shift=shift,
            pdiv=(self._pscales * _F32(scale)).astype(_F32),
            has_si=self.src_iter_desc is not None, has_sic=self.src_iter_c_desc is not None,
            has_bias=self.bias_desc is not None,
            has_peep=self.weights_peephole_desc is not None,
            has_proj=self.weights_projection_desc is not None,
            has_di=self.dst_iter_desc is not None, has_dic=self.dst_iter_c_desc is not None)

    def _verbose(self, event, ms):
        descs = [(n, d) for n, d in (
            ("src_layer", self.src_layer_desc), ("src_iter", self.src_iter_desc),
            ("src_iter_c", self.src_iter_c_desc), ("weights_layer", self.weights_layer_desc),
            ("weights_iter", self.weights_iter_desc), ("bias", self.bias_desc),
            ("dst_layer", self.dst_layer_desc), ("dst_iter", self.dst_iter_desc),
            ("dst_iter_c", self.dst_iter_c_desc),
            ("weights_peephole", self.weights_peephole_desc),
            ("weights_projection", self.weights_projection_desc)) if d is not None]
        act = f",activation:{self.activation}" if self.activation else ""
        _verbose.line(event, f"rnn:{self._cell}", self.impl_info, descs, self.attr,
                      f"direction:{self.direction}{act}", ms)

    def _quant_setup(self, attr):
        """The attribute through the shared planner (AttrPlan: the unified form's scales and
        zero points against the support table, no post-ops), then the legacy qparams, which
        only the RNN cells read."""
        p = self._name
        scale_support = {A.DNNL_ARG_SRC_LAYER: (None, (0,)),
                         A.DNNL_ARG_WEIGHTS_LAYER: (None, (0, _PER_GATE_OC)),
                         A.DNNL_ARG_WEIGHTS_ITER: (None, (0, _PER_GATE_OC))}
        if self.weights_projection_desc is not None:
            scale_support[A.DNNL_ARG_WEIGHTS_PROJECTION] = (None, (0, _PER_OC_PROJ))
        zp_support = {A.DNNL_ARG_SRC_LAYER: (None, (0,))}
        if attr is not None and isinstance(attr, PrimitiveAttr):
            # the arguments outside the table, named with what the RNN cells take
            for arg in attr.scales_args():
                if arg not in scale_support:
                    raise Unimplemented(
                        f"{p}: scales on {A.name(arg)} are not supported; supported: "
                        "src_layer (mask 0, for every u8 tensor), weights_layer / weights_iter "
                        "(mask 0 or 24), weights_projection (mask 0 or 8, with a projection)")
            for arg, mask in attr.zero_points_args().items():
                if arg not in zp_support:
                    raise Unimplemented(
                        f"{p}: zero points on {A.name(arg)} with mask {mask} are not "
                        "supported; supported: src_layer with mask 0 (for every u8 tensor; "
                        "weights are symmetric)")
        plan = AttrPlan(p, attr, scale_support, zp_support, post_op_kinds=(),
                        resolve=lambda arg, mask, name: mask, names=_ARG_NAMES,
                        rnn_qparams=True)
        if attr is None:
            attr = PrimitiveAttr()
        scales, zps = plan.scale_mask, plan.zp_mask
        legacy_d, legacy_w = attr.rnn_data_qparams, attr.rnn_weights_qparams
        legacy_p = attr.rnn_weights_projection_qparams
        if legacy_p is not None and self.weights_projection_desc is None:
            raise InvalidArguments(f"{p}: attr sets rnn weights projection qparams but there "
                                   "is no weights_projection_desc; expected them only with a "
                                   "projection")
        self._pscales = np.ones(self.P, _F32)
        if legacy_p is not None:
            pmask, pvals = legacy_p
            if pmask not in (0, _PER_OC_PROJ):
                raise Unimplemented(f"{p}: rnn weights projection qparams mask {pmask} is not "
                                    f"supported; supported: 0, {_PER_OC_PROJ} (per output "
                                    "channel)")
            want = 1 if pmask == 0 else self.P
            if pvals.size != want:
                raise InvalidArguments(f"{p}: rnn weights projection scales: got {pvals.size} "
                                       f"values for mask {pmask}; expected {want} (P = "
                                       f"{self.P} for mask {_PER_OC_PROJ})")
            self._pscales = np.broadcast_to(pvals.astype(_F32), (self.P,)).copy()
        unified = bool(scales or zps)
        if unified and (legacy_d is not None or legacy_w is not None or
                        legacy_p is not None):
            raise InvalidArguments(f"{p}: attr sets both the legacy rnn qparams and "
                                   "scales / zero points; expected one form only")
        self._uscale = dict(scales)
        self._uzp = bool(zps)
        self.unified = unified
        if unified:
            if A.DNNL_ARG_SRC_LAYER not in scales and not zps:
                raise InvalidArguments(f"{p}: u8 data needs its quantization; got weights "
                                       "scales only, expected set_scales_mask / "
                                       "set_zero_points_mask(DNNL_ARG_SRC_LAYER, 0) too")
            self._data = None
            self._wscales = None
            return
        if legacy_d is None:
            raise InvalidArguments(f"{p}: u8 data needs its quantization; got no rnn data "
                                   "qparams; expected attr.set_rnn_data_qparams(scale, shift) "
                                   "or scales / zero points on DNNL_ARG_SRC_LAYER")
        self._data = (_F32(legacy_d[0]), _F32(legacy_d[1]))
        if legacy_w is None:
            ws = np.ones(self.G * self.H, _F32)
        else:
            mask, vals = legacy_w
            if mask not in (0, _PER_GATE_OC):
                raise Unimplemented(f"{p}: rnn weights qparams mask {mask} is not supported; "
                                    f"supported: 0, {_PER_GATE_OC} (per gate and channel)")
            want = 1 if mask == 0 else self.G * self.H
            if vals.size != want:
                raise InvalidArguments(f"{p}: rnn weights scales: got {vals.size} values for "
                                       f"mask {mask}; expected {want} (G * H = {self.G} * "
                                       f"{self.H} for mask {_PER_GATE_OC})")
            ws = np.broadcast_to(vals.astype(_F32), (self.G * self.H,)).copy()
        self._wscales = ws

    # --- weights -------------------------------------------------------------------------------
    def prepare_weights(self, w):
        """Pack the weights once, for repeated execution.

        Parameters
        ----------
        w : dict
            ``{DNNL_ARG_WEIGHTS_LAYER: wl, DNNL_ARG_WEIGHTS_ITER: wi}`` (and
            ``DNNL_ARG_WEIGHTS_PROJECTION`` for an LSTMP): s8 arrays of their descriptors'
            shapes.

        Returns
        -------
        dict
            The same keys with packed weights, to merge into ``execute``'s arguments in place
            of the plain arrays.  Packed weights are read-only, accepted only by a primitive
            of the same description for the same argument, and pickle as their plain values.

        Raises
        ------
        InvalidArguments
            For a missing or extra key, an array of another dtype or shape.

        Examples
        --------
        >>> import numpy as np, dnnq
        >>> md = dnnq.MemoryDesc
        >>> attr = dnnq.PrimitiveAttr().set_rnn_data_qparams(64.0, 128.0)
        >>> gru = dnnq.GRU("unidirectional_left2right", md((3, 1, 4), "u8"), None,
        ...                md((1, 1, 4, 3, 4), "s8"), md((1, 1, 4, 3, 4), "s8"),
        ...                md((1, 1, 3, 4), "f32"), md((3, 1, 4), "u8"), None, attr=attr)
        >>> packed = gru.prepare_weights({
        ...     dnnq.DNNL_ARG_WEIGHTS_LAYER: np.ones((1, 1, 4, 3, 4), np.int8),
        ...     dnnq.DNNL_ARG_WEIGHTS_ITER: np.ones((1, 1, 4, 3, 4), np.int8)})
        >>> sorted(dnnq.name(k) for k in packed)
        ['weights', 'weights_1']
        """
        if not isinstance(w, dict):
            raise InvalidArguments(f"{self._name}.prepare_weights: got {type(w).__name__}; "
                                   "expected a dict {DNNL_ARG_WEIGHTS_LAYER: wl, "
                                   "DNNL_ARG_WEIGHTS_ITER: wi}")
        out = {}
        for arg, desc, name in self._weights_list():
            if arg not in w:
                raise InvalidArguments(f"{self._name}.prepare_weights: {name} missing; "
                                       "expected every weights tensor")
            out[arg] = self._pack_one(w[arg], desc, name, arg)
        for arg in w:
            if arg not in out:
                raise InvalidArguments(f"{self._name}.prepare_weights: argument "
                                       f"{A.name(arg) if isinstance(arg, int) else arg!r} is "
                                       "not a packed weights tensor of this primitive")
        return out

    def _weights_list(self):
        ws = [(A.DNNL_ARG_WEIGHTS_LAYER, self.weights_layer_desc, "weights_layer"),
              (A.DNNL_ARG_WEIGHTS_ITER, self.weights_iter_desc, "weights_iter")]
        if self.weights_projection_desc is not None:
            ws.append((A.DNNL_ARG_WEIGHTS_PROJECTION, self.weights_projection_desc,
                       "weights_projection"))
        return ws

    def _weights_desc_of(self, arg):
        for a, desc, _ in self._weights_list():
            if a == arg:
                return desc
        raise InvalidArguments(f"{self._name}: {arg!r} is not a weights argument; expected "
                               "DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER or (LSTMP) "
                               "DNNL_ARG_WEIGHTS_PROJECTION")

    def _repack(self, which, w):
        """Pack plain weights of argument `which` again (unpickling of PackedRnnWeights)."""
        return self._pack_one(w, self._weights_desc_of(which), _ARG_NAMES[which], which)

    def _pack_one(self, w, desc, name, arg):
        if isinstance(w, PackedRnnWeights):
            if (w.owner is not self._key and w.owner != self._key) or w.which != arg:
                raise InvalidArguments(f"{self._name}: {name} was packed by another primitive "
                                       "or for another argument")
            self._check_packed_sizes(w, desc, name)
            return w
        w = desc.check_array(w, name)
        if arg == A.DNNL_ARG_WEIGHTS_PROJECTION:    # ldio as one gate of P channels
            packed, comp = _pack(w.reshape(w.shape[:3] + (1, w.shape[3])), self.P)
            return PackedRnnWeights(packed, np.ascontiguousarray(comp[:, :, 0]), self._key, arg,
                                    origin=self)
        packed, comp = _pack(w, self.H)
        return PackedRnnWeights(packed, comp, self._key, arg, origin=self)

    def _check_packed_sizes(self, w, desc, name):
        """Packed weights of this description have L x D buffers of packed_size(K, n) bytes
        and (L, D, G, H) sums ((L, D, P) for projection weights); anything else would be read
        out of bounds."""
        if desc.ndims == 4:
            L, D, K, H = desc.dims
            G, comp_shape = 1, (L, D, H)
        else:
            L, D, K, G, H = desc.dims
            comp_shape = (L, D, G, H)
        want = _gemm.packed_size(K, ((H + 63) // 64) * G * 64)
        ok = (type(w.packed) is tuple and len(w.packed) == L and
              type(w.comp) is np.ndarray and w.comp.dtype == _F32 and
              w.comp.shape == comp_shape)
        if ok:
            for row in w.packed:
                if type(row) is not tuple or len(row) != D:
                    ok = False
                    break
                for packed_ld in row:
                    if type(packed_ld) is not np.ndarray or packed_ld.dtype != np.int8 or \
                            packed_ld.size != want or not packed_ld.flags.c_contiguous:
                        ok = False
        if not ok:
            raise InvalidArguments(f"{self._name}: packed {name} do not have the sizes of this "
                                   f"primitive's {name} {desc.dims} (L x D buffers of {want} "
                                   f"bytes, sums ({L}, {D}, {G}, {H}))")

    # --- quantization parameters of one execution -----------------------------------------------
    def _qparams(self, args):
        """(scale, shift, wscales (G*H,) f32, projection wscales (P,) f32) of this
        execution."""
        if not self.unified:
            return self._data[0], self._data[1], self._wscales, self._pscales
        p = self._name
        s = args.get(A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_LAYER) if \
            A.DNNL_ARG_SRC_LAYER in self._uscale else None
        scale = _F32(1.0)
        if A.DNNL_ARG_SRC_LAYER in self._uscale:
            if s is None:
                raise InvalidArguments(f"{p}.execute: scales of src_layer missing; expected "
                                       "one f32 value as DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER")
            sv = check_scales(s, 1, f"{p}.execute: scales of src_layer")[0]
            scale = _F32(1.0) / _F32(sv)
            if not np.isfinite(scale):
                raise InvalidArguments(f"{p}.execute: scales of src_layer: got {sv!r}; its f32 "
                                       "reciprocal overflows")
        shift = _F32(0.0)
        if self._uzp:
            z = args.get(A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC_LAYER)
            if z is None:
                raise InvalidArguments(f"{p}.execute: zero point of src_layer missing; "
                                       "expected one s32 value")
            shift = _F32(check_zero_points(z, 1, f"{p}.execute: zero points of src_layer")[0])
        ws = []
        for arg, wname in ((A.DNNL_ARG_WEIGHTS_LAYER, "weights_layer"),
                           (A.DNNL_ARG_WEIGHTS_ITER, "weights_iter")):
            if arg not in self._uscale:
                ws.append(np.ones(self.G * self.H, _F32))
                continue
            cnt = 1 if self._uscale[arg] == 0 else self.G * self.H
            ws.append(np.broadcast_to(self._inverse_scales(args, arg, cnt, wname),
                                      (self.G * self.H,)))
        if not np.array_equal(ws[0], ws[1]):
            raise Unimplemented(f"{p}.execute: scales of weights_layer and weights_iter "
                                "differ; supported: equal scales (oneDNN's int8 RNN "
                                "dequantizes x W_layer + h W_iter with one scale per gate "
                                "and channel)")
        pws = self._pscales
        if A.DNNL_ARG_WEIGHTS_PROJECTION in self._uscale:
            cnt = 1 if self._uscale[A.DNNL_ARG_WEIGHTS_PROJECTION] == 0 else self.P
            inv = self._inverse_scales(args, A.DNNL_ARG_WEIGHTS_PROJECTION, cnt,
                                       "weights_projection")
            pws = np.ascontiguousarray(np.broadcast_to(inv, (self.P,)))
        return scale, shift, np.ascontiguousarray(ws[0]), pws

    def _inverse_scales(self, args, arg, cnt, wname):
        """f32 reciprocals of the runtime weights scales of `arg` (cnt values, checked)."""
        p = self._name
        v = args.get(A.DNNL_ARG_SCALE | arg)
        if v is None:
            raise InvalidArguments(f"{p}.execute: scales of {wname} missing; "
                                   f"expected {cnt} f32 values")
        v = check_scales(v, cnt, f"{p}.execute: scales of {wname}")
        with np.errstate(over="ignore"):
            inv = (_F32(1.0) / v).astype(_F32)
        if not np.isfinite(inv).all():
            raise InvalidArguments(f"{p}.execute: scales of {wname} too small: their f32 "
                                   "reciprocals overflow")
        return inv

    def _compensation(self, wl, wi, scale, shift, ws):
        """div (G, H) and the (L, D, n_bias, H) term subtracted from the bias."""
        # the packed weights are compared by identity (the cache holds them, so an id cannot
        # be reused by other weights while the entry lives)
        key = (float(scale), float(shift), ws.tobytes())
        cache = self._comp_cache
        if cache is not None and cache[0] == key and cache[3] is wl and cache[4] is wi:
            return cache[1], cache[2]
        G, H = self.G, self.H
        div = (ws.reshape(G, H) * _F32(scale)).astype(_F32)          # f32(ws * scale)
        sh = _F32(shift)
        cl, ci = wl.comp, wi.comp                                     # (L, D, G, H) f32
        term = np.zeros((self.L, self.D, self.n_bias, H), _F32)
        if self._cell == "lbr_gru":
            term[:, :, :2] = ((ci[:, :, :2] + cl[:, :, :2]) * sh) / div[:2]
            term[:, :, 2] = (cl[:, :, 2] * sh) / div[2]
            term[:, :, 3] = (ci[:, :, 2] * sh) / div[2]
        else:
            term[:] = ((ci + cl) * sh) / div
        self._comp_cache = (key, div, term, wl, wi)
        return div, term

    # --- execution -----------------------------------------------------------------------------
    def _get_scratch(self):
        with self._lock:
            if self._scratch:
                return self._scratch.pop()
        T, N, H, G = self.T, self.N, self.H, self.G
        nblk = (H + 63) // 64
        s = {"lacc": aligned_empty(_rnn.lacc_rows(T, N, nblk, G) * nblk * G * 64, np.int32),
             "ws": [[np.empty((T, N, self.P), np.uint8) for _ in range(self.D)]
                    for _ in range(min(self.L, 2))],
             "hproj": np.empty((N, H), np.uint8),
             "rh": np.empty((N, H), np.uint8), "u": np.empty((N, H), _F32),
             "c": np.empty((N, H), _F32), "h0": np.empty((N, self.SIC), np.uint8)}
        return s

    def _put_scratch(self, s):
        with self._lock:
            self._scratch.append(s)

    def execute(self, args):
        """Run the primitive once over all time steps, layers and directions.

        Releases the GIL; the time loop runs in C.  Arrays of the described dtype and shape,
        C-contiguous, with packed weights and the legacy quantization take the C-level path;
        anything else is validated and converted first.

        Parameters
        ----------
        args : dict
            ``{DNNL_ARG_*: numpy.ndarray}``: ``DNNL_ARG_SRC_LAYER``, ``DNNL_ARG_SRC_ITER``,
            ``DNNL_ARG_SRC_ITER_C`` (LSTM; the optional states may be left out, as their
            descriptors), ``DNNL_ARG_WEIGHTS_LAYER``, ``DNNL_ARG_WEIGHTS_ITER`` (plain or
            from :meth:`prepare_weights`), ``DNNL_ARG_WEIGHTS_PEEPHOLE`` /
            ``DNNL_ARG_WEIGHTS_PROJECTION`` (LSTM extensions), ``DNNL_ARG_BIAS``, the
            unified form's scales / zero points, and optionally the output arrays
            ``DNNL_ARG_DST_LAYER``, ``DNNL_ARG_DST_ITER``, ``DNNL_ARG_DST_ITER_C``.

        Returns
        -------
        dict
            ``{DNNL_ARG_DST_LAYER: ..., DNNL_ARG_DST_ITER: ..., DNNL_ARG_DST_ITER_C: ...}``:
            the outputs that have a descriptor (an output array given in ``args`` is written
            in place and returned).

        Raises
        ------
        InvalidArguments
            A missing, unknown or mistyped key, an array of the wrong dtype or shape,
            quantization parameters missing for u8 data, packed weights of another
            primitive, outputs that overlap an input or each other.
        Unimplemented
            Unified weights scales that differ between the layer and iteration weights.

        Examples
        --------
        See :class:`LSTM`.
        """
        if type(args) is dict and not _verbose.enabled(1):
            out = self._exec.run(args, get_num_threads(), FORK_JOIN)
            if out is not None:
                return out
        return self._execute_py(args)

    def _execute_py(self, args):
        """The Python path: any argument form, every check with its message."""
        p = self._name
        check_known_args(p, args, self._known)

        def need(arg, desc, name):
            if arg not in args:
                raise InvalidArguments(f"{p}.execute: {name} missing")
            return desc.check_array(args[arg], name)

        x = need(A.DNNL_ARG_SRC_LAYER, self.src_layer_desc, "src_layer")
        for arg, name in ((A.DNNL_ARG_WEIGHTS_LAYER, "weights_layer"),
                          (A.DNNL_ARG_WEIGHTS_ITER, "weights_iter")):
            if arg not in args:
                raise InvalidArguments(f"{p}.execute: {name} missing")
        wl = self._pack_one(args[A.DNNL_ARG_WEIGHTS_LAYER], self.weights_layer_desc,
                            "weights_layer", A.DNNL_ARG_WEIGHTS_LAYER)
        wi = self._pack_one(args[A.DNNL_ARG_WEIGHTS_ITER], self.weights_iter_desc,
                            "weights_iter", A.DNNL_ARG_WEIGHTS_ITER)
        wpr = wpe = None
        if self.weights_projection_desc is not None:
            if A.DNNL_ARG_WEIGHTS_PROJECTION not in args:
                raise InvalidArguments(f"{p}.execute: weights_projection missing")
            wpr = self._pack_one(args[A.DNNL_ARG_WEIGHTS_PROJECTION],
                                 self.weights_projection_desc, "weights_projection",
                                 A.DNNL_ARG_WEIGHTS_PROJECTION)
        if self.weights_peephole_desc is not None:
            wpe = need(A.DNNL_ARG_WEIGHTS_PEEPHOLE, self.weights_peephole_desc,
                       "weights_peephole")
        si = sic = bias = None
        if self.src_iter_desc is not None and A.DNNL_ARG_SRC_ITER in args:
            si = self.src_iter_desc.check_array(args[A.DNNL_ARG_SRC_ITER], "src_iter")
        if self.src_iter_c_desc is not None and A.DNNL_ARG_SRC_ITER_C in args:
            sic = self.src_iter_c_desc.check_array(args[A.DNNL_ARG_SRC_ITER_C], "src_iter_c")
        if self.bias_desc is not None and A.DNNL_ARG_BIAS in args:
            bias = self.bias_desc.check_array(args[A.DNNL_ARG_BIAS], "bias")
        outs, given = {}, []
        for arg, desc, name in ((A.DNNL_ARG_DST_LAYER, self.dst_layer_desc, "dst_layer"),
                                (A.DNNL_ARG_DST_ITER, self.dst_iter_desc, "dst_iter"),
                                (A.DNNL_ARG_DST_ITER_C, self.dst_iter_c_desc, "dst_iter_c")):
            if desc is None:
                continue
            if arg in args:
                user = args[arg]
                buf = desc.check_output(user, name)
                outs[arg] = (user, buf, desc)
                given.append(arg)
            else:
                a = desc.empty()
                outs[arg] = (a, a, desc)
        scale, shift, ws, pws = self._qparams(args)
        div, term = self._compensation(wl, wi, scale, shift, ws)
        pdiv = pcomp = None
        if wpr is not None:
            # oneDNN's u8 projection: (f32(acc) - f32(sum Wp) * shift) / f32(pscale * scale)
            pdiv = (pws * _F32(scale)).astype(_F32)
            pcomp = np.ascontiguousarray((wpr.comp * _F32(shift)).astype(_F32))
        if given:  # outputs overlap no input and no other output (oneDNN: not in place)
            check_overlaps(p, args, outputs=_OUT_NAMES, names=_ALL_NAMES)
        t0 = time.perf_counter() if _verbose.enabled(1) else None
        scratch = self._get_scratch()
        try:
            self._exec.run_checked(
                x, si, sic, bias, wpe, wl, wi, wpr, outs[A.DNNL_ARG_DST_LAYER][1],
                outs[A.DNNL_ARG_DST_ITER][1] if A.DNNL_ARG_DST_ITER in outs else None,
                outs[A.DNNL_ARG_DST_ITER_C][1] if A.DNNL_ARG_DST_ITER_C in outs else None,
                scale, shift, div, term, pdiv, pcomp, scratch, get_num_threads(), FORK_JOIN)
        finally:
            self._put_scratch(scratch)
        if t0 is not None:
            self._verbose("exec", (time.perf_counter() - t0) * 1e3)
        result = {}
        for arg, (user, buf, desc) in outs.items():
            desc.copy_back(user, buf)
            result[arg] = user
        return result
