"""The attribute planner shared by every primitive (the GEMM family and the toolkit):
scales, zero points and post-ops of a PrimitiveAttr checked against the primitive's support
table at creation, and their runtime values (scales, zero points, post-op inputs) fetched and
validated at execution."""
import copy

import numpy as np

from dnnq import args as A
from dnnq import masks as _masks
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.primitives._common import arg_name

F32 = np.float32


def resolve_data_mask(prim, mask, dims, name):
    """A scale / zero-point mask of a data tensor: plain bits, or a semantic mask (NCHW -> dim
    1, TNC -> dim 2, OIHW -> dim 0)."""
    m = _masks.check_mask(mask, name)
    kind = {_masks.DNNL_MASK_PER_CHANNEL_NCHW: "data_nchw",
            _masks.DNNL_MASK_PER_CHANNEL_TNC: "data_tnc",
            _masks.DNNL_MASK_PER_CHANNEL_OIHW: "weights_oihw"}.get(m)
    try:
        return _masks.resolve_mask(m, dims, kind, name=name)
    except InvalidArguments as e:
        raise InvalidArguments(f"{prim}: {e}") from None


def check_attr_object(prim, attr, rnn_qparams=False):
    """attr is None or a PrimitiveAttr, without the RNN-only legacy qparams (unless
    `rnn_qparams`): an attribute a primitive does not use is refused at creation (as oneDNN
    does), never ignored."""
    from dnnq.attr import PrimitiveAttr
    if attr is None:
        return
    if not isinstance(attr, PrimitiveAttr):
        raise InvalidArguments(f"{prim}: attr got {type(attr).__name__}; expected a "
                               "dnnq.PrimitiveAttr or None")
    if rnn_qparams:
        return
    if attr.rnn_data_qparams is not None or attr.rnn_weights_qparams is not None:
        raise Unimplemented(
            f"{prim}: RNN data / weights qparams (set_rnn_data_qparams, "
            "set_rnn_weights_qparams) are not supported; they apply to LSTM / GRU / "
            "LBRGRU / VanillaRNN only: use set_scales_mask and set_zero_points_mask")


class AttrPlan:
    """An attribute checked against a primitive's support table, at creation; the runtime
    scales, zero points and post-op inputs fetched and validated at execution.

    ``scale_support`` / ``zp_support``: dict arg -> (dims, allowed plain masks or None = any).
    ``post_op_kinds``: the post-op kinds accepted.  ``resolve(arg, mask, name)``: turns a given
    mask into a plain one (default: plain bits or a semantic per-channel mask over ``dims``).
    ``names``: how messages name an argument (default dnnq.args.name: the RNN cells say
    ``weights_iter`` where the id is ``weights_1``).  ``rnn_qparams``: the legacy RNN
    quantization (PrimitiveAttr.set_rnn_*_qparams) is the primitive's to read, not refused.
    After creation: ``scale_mask[arg]`` / ``zp_mask[arg]`` (plain masks), ``post_ops`` (list).
    """

    def __init__(self, prim, attr, scale_support, zp_support, post_op_kinds=(), resolve=None,
                 names=None, rnn_qparams=False):
        check_attr_object(prim, attr, rnn_qparams)
        names = names or {}

        def arg_name_of(arg):
            return names.get(arg) or arg_name(arg)

        self.prim = prim
        self.attr = copy.deepcopy(attr)
        self.scale_mask, self.zp_mask, self.dims = {}, {}, {}
        self._counts, self._names = {}, {}  # per-execution lookups, computed once
        given_s = attr.scales_args() if attr is not None else {}
        given_z = attr.zero_points_args() if attr is not None else {}
        for what, given, support, out in (("scales", given_s, scale_support, self.scale_mask),
                                          ("zero points", given_z, zp_support, self.zp_mask)):
            for arg, mask in given.items():
                if arg not in support:
                    raise Unimplemented(
                        f"{prim}: {what} of {arg_name_of(arg)} are not supported; supported: "
                        + (f"{what} of " + ", ".join(arg_name_of(a) for a in support)
                           if support else f"no {what}"))
                dims, allowed = support[arg]
                name = f"{what} mask of {arg_name_of(arg)}"
                plain = (resolve(arg, mask, name) if resolve is not None else
                         resolve_data_mask(prim, mask, dims, name))
                if allowed is not None and plain not in allowed:
                    raise Unimplemented(
                        f"{prim}: {what} mask {mask} of {arg_name_of(arg)} is not supported; "
                        f"supported masks: {', '.join(map(str, allowed))}")
                out[arg] = plain
                self.dims[arg] = tuple(dims) if dims is not None else None
        self.post_ops = []
        if attr is not None:
            ops = attr.post_ops
            for i in range(len(ops)):
                kind = ops.kind(i)
                if kind not in post_op_kinds:
                    raise Unimplemented(
                        f"{prim}: post_op[{i}] of kind {kind} is not supported; supported: "
                        f"{', '.join(post_op_kinds) if post_op_kinds else 'no post-ops'}")
                self.post_ops.append(ops[i])

    def known_args(self):
        out = {A.DNNL_ARG_SCALE | a for a in self.scale_mask}
        out |= {A.DNNL_ARG_ATTR_ZERO_POINTS | a for a in self.zp_mask}
        out |= {A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1
                for i, op in enumerate(self.post_ops) if op.kind in ("binary", "select")}
        out |= {A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_2
                for i, op in enumerate(self.post_ops) if op.kind == "select"}
        return out

    def count(self, arg, kind):
        key = (kind, arg)
        c = self._counts.get(key)
        if c is None:
            mask = (self.scale_mask if kind == "scale" else self.zp_mask)[arg]
            c = self._counts[key] = _masks.scale_count(self.dims[arg], mask)
        return c

    def _arg_name(self, key):
        n = self._names.get(key)
        if n is None:
            n = self._names[key] = arg_name(key)
        return n

    def strides(self, arg, kind, dims):
        """Logical strides over ``dims`` of the compact parameter vector of ``arg``."""
        mask = (self.scale_mask if kind == "scale" else self.zp_mask)[arg]
        return _masks.broadcast_index_strides(dims, mask)

    def _runtime(self, args, arg, kind):
        """The validated runtime values of ``arg`` (kind "scale" or "zp"), None when the
        attribute sets no mask for them."""
        scale = kind == "scale"
        if arg not in (self.scale_mask if scale else self.zp_mask):
            return None
        key = (A.DNNL_ARG_SCALE if scale else A.DNNL_ARG_ATTR_ZERO_POINTS) | arg
        if key not in args:
            raise InvalidArguments(f"{self.prim}.execute: missing {arg_name(key)} (the attribute "
                                   f"sets a {'scales' if scale else 'zero-points'} mask for "
                                   f"{arg_name(arg)})")
        check = _masks.check_scales if scale else _masks.check_zero_points
        return check(args[key], self.count(arg, kind), self._arg_name(key))

    def scales(self, args, arg):
        """The validated f32 scales of ``arg`` (None when the attribute sets none)."""
        return self._runtime(args, arg, "scale")

    def zero_points_f32(self, args, arg):
        """The validated zero points of ``arg`` converted to f32 (as oneDNN converts them)."""
        z = self._runtime(args, arg, "zp")
        return None if z is None else z.astype(F32)


def fetch_post_op_inputs(prim, qa, args, arrays):
    """Validate the binary post-op inputs of ``args`` into ``arrays[("post_op", i)]``, and a
    select post-op's condition and value into ``("post_op", i)`` / ``("post_op_value", i)``."""
    for i, op in enumerate(qa.post_ops):
        if op.kind == "binary":
            inputs = ((A.DNNL_ARG_SRC_1, ("post_op", i), op.src1_desc),)
        elif op.kind == "select":
            inputs = ((A.DNNL_ARG_SRC_1, ("post_op", i), op.cond_desc),
                      (A.DNNL_ARG_SRC_2, ("post_op_value", i), op.value_desc))
        else:
            continue
        for arg, name, desc in inputs:
            key = A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | arg
            if key not in args:
                raise InvalidArguments(f"{prim}.execute: missing {arg_name(key)} ({op.kind} "
                                       f"post-op {i}, dims {desc.dims})")
            arrays[name] = desc.check_array(args[key], arg_name(key))
