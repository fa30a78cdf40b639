"""Small pieces every primitive module uses: readable argument names for messages, the
execution-time check of the argument dict and the creation-time check of a memory
descriptor."""
import functools
import numbers

import numpy as np

from dnnq import args as A
from dnnq.primitives._kernels._gemm_exec import extents_meet
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc


#: the 8-bit data types' value ranges
INT8_RANGE = {"u8": (0, 255), "s8": (-128, 127)}


@functools.lru_cache(maxsize=4096)
def arg_name(key):
    """dnnq.args.name(key), or repr(key) for something that is not an argument id."""
    try:
        return A.name(key)
    except InvalidArguments:
        return repr(key)


def check_known_args(prim, args, known):
    """execute's args must be a dict whose every key this primitive uses (`known`)."""
    if not isinstance(args, dict):
        raise InvalidArguments(f"{prim}.execute: got {type(args).__name__}; expected a dict "
                               "mapping DNNL_ARG_* ids to numpy arrays")
    for key in args:
        # True == 1 and 1.0 == 1 would find DNNL_ARG_SRC: an id is an int, nothing else
        if isinstance(key, bool) or not isinstance(key, numbers.Integral):
            raise InvalidArguments(f"{prim}.execute: argument key {key!r} of type "
                                   f"{type(key).__name__}; expected an int DNNL_ARG_* id")
        if key not in known:
            hint = ""
            if isinstance(key, int) and key & (A.DNNL_ARG_SCALE | A.DNNL_ARG_ATTR_ZERO_POINTS):
                hint = " (the attribute sets no scales / zero-points mask for it)"
            raise InvalidArguments(f"{prim}.execute: argument {arg_name(key)} is not used by "
                                   f"this primitive{hint}; accepted: "
                                   f"{', '.join(sorted(arg_name(k) for k in known))}")


def check_md(prim, desc, name, dts=("f32", "s32", "s8", "u8"), ndims=None, optional=False,
             plain_only=False):
    """Validate a creation-time descriptor: a MemoryDesc of an accepted data type (and number
    of dims, and a plain layout where asked).  None passes when `optional`."""
    if desc is None and optional:
        return None
    if not isinstance(desc, MemoryDesc):
        raise InvalidArguments(f"{prim}: {name} got {desc!r} of type {type(desc).__name__}; "
                               "expected a dnnq.MemoryDesc")
    if desc.dt not in dts:
        raise Unimplemented(f"{prim}: {name} data type {desc.dt} is not supported; supported: "
                            f"{', '.join(dts)}")
    if ndims is not None and desc.ndims not in ndims:
        raise InvalidArguments(f"{prim}: {name} dims {desc.dims} are {desc.ndims}-D; expected "
                               f"{' or '.join(map(str, ndims))}-D")
    if plain_only and desc.is_channels_last:
        raise Unimplemented(f"{prim}: {name} tag {desc.tag} is not supported; supported: plain")
    return desc


# ---- aliasing ------------------------------------------------------------------------------
_MAX_WORK = 100_000  # np.shares_memory's search budget; beyond it an overlap is assumed


def overlaps(a, b):
    """True when ndarrays ``a`` and ``b`` share an element.  The bounds test answers at once
    when the extents are apart or both arrays are contiguous (then overlapping extents share
    bytes); strided views whose extents interleave are solved exactly within a small budget,
    and past it counted as overlapping."""
    if not np.may_share_memory(a, b):
        return False
    if (a.flags.c_contiguous or a.flags.f_contiguous) and \
            (b.flags.c_contiguous or b.flags.f_contiguous):
        return True
    try:
        return bool(np.shares_memory(a, b, max_work=_MAX_WORK))
    except np.exceptions.TooHardError:
        return True


def same_memory(a, b):
    """``a`` and ``b`` are the same elements in the same layout: the in-place case."""
    return (a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides and
            a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def check_overlaps(prim, args, outputs=(A.DNNL_ARG_DST,), in_place=None, names=None):
    """Refuse execution arrays that overlap an output: raise InvalidArguments naming both.

    ``outputs``: the argument ids written; ``in_place``: {output id: input id} of the one input
    each output may *be* (the same memory with the same dtype, shape and strides, as oneDNN's
    in-place execution).  Returns the set of output ids executed in place.  Every other pair
    sharing memory raises -- inputs of any kind (data, weights, bias, scales, zero points,
    post-op inputs, states) and two outputs.  Cheap: with one output, a single C-level pass
    over the byte extents (``extents_meet``) is all that runs unless some extents meet.
    ``names``: {id: name} for messages where dnnq.args.name is not the primitive's word."""
    if len(outputs) == 1:  # one output: one C-level pass over the extents, usually all
        out_key = outputs[0]
        if not extents_meet(args.get(out_key), args, out_key):
            return set()
    in_place = in_place or {}
    names = names or {}

    def label(key):
        return names.get(key) or arg_name(key)

    done = set()
    items = [(k, v) for k, v in args.items() if isinstance(v, np.ndarray)]
    for i, (out_key, out) in enumerate(items):
        if out_key not in outputs:
            continue
        for j, (key, v) in enumerate(items):
            if j == i or (key in outputs and j < i) or not overlaps(out, v):
                continue
            if in_place.get(out_key) == key and same_memory(out, v):
                done.add(out_key)
                continue
            allowed = in_place.get(out_key)
            how = (f"{prim} executes in place only with {label(allowed)} being exactly "
                   f"the {label(out_key)} array's memory (same dtype, shape and strides)"
                   if allowed is not None and key == allowed else
                   f"{prim} reads {label(key)} while it writes {label(out_key)}; pass "
                   "separate arrays" + (f" (in place: {label(allowed)} may be exactly "
                                        f"{label(out_key)})" if allowed is not None else ""))
            raise InvalidArguments(f"{prim}.execute: {label(key)} overlaps "
                                   f"{label(out_key)} (they share memory); {how}")
    return done
