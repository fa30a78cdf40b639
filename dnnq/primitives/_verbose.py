"""DNNQ_VERBOSE: one line per primitive execution (and creation, at level 2), in the style of
oneDNN's ONEDNN_VERBOSE:

    dnnq_verbose,exec,cpu,matmul,avx512_core_vnni:blocked,src:u8:ab:128x768 wei:s8:ab:768x3072 dst:s8:ab:128x3072,attr-scales:src:0+wei:2+dst:0 attr-post-ops:eltwise_relu,128x768:768x3072,0.512

Fields: marker, event (create / exec), engine, primitive kind, implementation, memory
descriptors, attributes, problem, milliseconds.  Enable with DNNQ_VERBOSE=1 (executions) or 2
(creations too), or dnnq.set_verbose(level) at run time; lines go to stdout.
"""
import numbers
import os
import sys

import numpy as np

from dnnq import args as A

_level = 0
try:
    _level = int(os.environ.get("DNNQ_VERBOSE", "0") or 0)
except ValueError:
    _level = 0


def set_verbose(level):
    """Print one line per primitive execution (and creation), as ``DNNQ_VERBOSE`` does.

    The lines follow oneDNN's ``ONEDNN_VERBOSE`` style and go to stdout::

        dnnq_verbose,exec,cpu,matmul,avx512_core_vnni:blocked,src:u8:ab:128x768 ...,0.512

    (marker, event, engine, primitive kind, implementation, memory descriptors, attributes,
    problem, milliseconds).  Level 2 also prints why each better implementation was passed
    over at creation.

    Parameters
    ----------
    level : int
        0 silent, 1 one line per execution, 2 also one line per creation.

    Returns
    -------
    int
        The previous level.

    Raises
    ------
    InvalidArguments
        For a level that is not an int in [0, 2].

    See Also
    --------
    get_verbose

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> mm = dnnq.MatMul(dnnq.MemoryDesc((1, 4), "u8"), dnnq.MemoryDesc((4, 2), "s8"),
    ...                  dnnq.MemoryDesc((1, 2), "s32"))
    >>> old = dnnq.set_verbose(1)
    >>> y = mm.execute({dnnq.DNNL_ARG_SRC: np.ones((1, 4), np.uint8),
    ...                 dnnq.DNNL_ARG_WEIGHTS: np.ones((4, 2), np.int8)})
    dnnq_verbose,exec,cpu,matmul,...,1x4:4x2,...
    >>> _ = dnnq.set_verbose(old)
    """
    global _level
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, numbers.Integral) or \
            not 0 <= int(level) <= 2:
        from dnnq.errors import InvalidArguments
        raise InvalidArguments(f"set_verbose: level got {level!r}; expected an int in [0, 2] "
                               "(0 silent, 1 executions, 2 creations too)")
    old, _level = _level, int(level)
    return old


def get_verbose():
    """The verbose level in force.

    Returns
    -------
    int
        0 silent, 1 executions, 2 creations too (:func:`set_verbose`).

    Raises
    ------
    None

    See Also
    --------
    set_verbose

    Examples
    --------
    >>> import dnnq
    >>> dnnq.get_verbose() in (0, 1, 2)
    True
    """
    return _level


def enabled(level=1):
    return _level >= level


def attr_str(attr):
    if attr is None:
        return ""
    parts = []
    sc = attr.scales_args()
    if sc:
        parts.append("attr-scales:" + "+".join(f"{A.name(a)}:{m}" for a, m in sorted(sc.items())))
    zp = attr.zero_points_args()
    if zp:
        parts.append("attr-zero-points:" + "+".join(f"{A.name(a)}:{m}"
                                                     for a, m in sorted(zp.items())))
    ops = attr.post_ops
    if len(ops):
        names = []
        for i in range(len(ops)):
            op, kind = ops[i], ops.kind(i)
            if kind == "eltwise":
                names.append(f"eltwise_{op.alg}:{op.alpha:g}:{op.beta:g}")
            elif kind == "binary":
                names.append(f"binary_{op.alg}:{op.src1_desc.dims_str()}")
            elif kind == "sum":
                names.append(f"sum:{op.scale:g}:{op.zero_point}")
            elif kind == "select":
                names.append(f"select_{op.alg}:{op.cond_desc.dims_str()}:"
                             f"{op.value_desc.dims_str()}")
            else:
                names.append(kind)
        parts.append("attr-post-ops:" + "+".join(names))
    return " ".join(parts)


def dispatch_line(kind, chosen, skipped):
    """DNNQ_VERBOSE=2: the implementation chosen at creation and why each one before it was
    passed over."""
    why = "; ".join(f"skipped {name} ({reason})" for name, reason in skipped)
    sys.stdout.write(f"dnnq_verbose,dispatch,cpu,{kind},{chosen},{why}\n")
    sys.stdout.flush()


def line(event, kind, impl, descs, attr, problem, ms=None):
    md = " ".join(f"{name}:{d.dims_str()}" for name, d in descs if d is not None)
    t = "" if ms is None else f"{ms:.4f}"
    sys.stdout.write(f"dnnq_verbose,{event},cpu,{kind},{impl},{md},{attr_str(attr)},{problem},{t}\n")
    sys.stdout.flush()
