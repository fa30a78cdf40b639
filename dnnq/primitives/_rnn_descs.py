"""Descriptor checks of the RNN primitives (dnnq.primitives.rnn): each descriptor's kind,
rank, data type and layout, and the dims one descriptor implies for another."""
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc


def check_desc(prim, d, name, dts, ndims, optional=False):
    if d is None:
        if optional:
            return None
        raise InvalidArguments(f"{prim}: {name} is required; got None")
    if not isinstance(d, MemoryDesc):
        raise InvalidArguments(f"{prim}: {name} got {d!r} of type {type(d).__name__}; "
                               "expected a dnnq.MemoryDesc")
    if d.ndims != ndims:
        raise InvalidArguments(f"{prim}: {name} dims {d.dims} are {d.ndims}-D; expected "
                               f"{ndims}-D")
    if d.dt not in dts:
        raise Unimplemented(f"{prim}: {name} data type {d.dt} is not supported here; "
                            f"supported: {', '.join(dts)}")
    if d.is_channels_last:
        raise Unimplemented(f"{prim}: {name} tag {d.tag} is not supported; supported: the "
                            "plain tnc / ldnc / ldigo / ldgo layouts")
    return d


def dims_must(prim, d, name, want, what):
    if d is not None and tuple(d.dims) != tuple(want):
        raise InvalidArguments(f"{prim}: {name} dims {d.dims} do not match {what}; "
                               f"expected {tuple(want)}")
