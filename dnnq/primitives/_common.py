"""Small pieces every primitive module uses: readable argument names for messages, the
execution-time check of the argument dict and the creation-time check of a memory
descriptor."""
import functools
import numbers

from dnnq import args as A
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc


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
