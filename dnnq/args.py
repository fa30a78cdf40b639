"""Execution-argument IDs (SPEC section 3): the ``DNNL_ARG_*`` constants and their algebra.

An argument ID is a plain ``int``; IDs compose with ``|``.  dnnq's numbering (the one of the
SPEC, as in the oneDNN 2.x headers) is laid out in bit fields::

    bits  0..8   the plain argument (1, 2, 3, 17, 18, 19, 33, 34, 35, 36, 41), or the input index n
                 (0 <= n < 512) of DNNL_ARG_MULTIPLE_SRC / DNNL_ARG_MULTIPLE_DST
    bit   9      DNNL_ARG_SCALE                 (512)    prefix: "the scales of ..."
    bit  10      DNNL_ARG_MULTIPLE_SRC          (1024)   + n: input n of sum / concat
    bit  11      DNNL_ARG_MULTIPLE_DST          (2048)   + n: output n
    bit  12      DNNL_ARG_ATTR_ZERO_POINTS      (4096)   prefix: "the zero points of ..."
    bit  13      DNNL_ARG_ATTR_POST_OP_DW       (8192)   prefix: "of the depthwise post-op"
    bits 14..18  DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) = 16384 * (idx + 1), 0 <= idx < 31

Valid combinations (anything else raises :class:`~dnnq.errors.InvalidArguments` naming the
value given):

* exactly one *base*: a plain argument, or ``DNNL_ARG_MULTIPLE_SRC + n``, or
  ``DNNL_ARG_MULTIPLE_DST + n`` (n < 512); never both MULTIPLE_SRC and MULTIPLE_DST;
* at most one of ``DNNL_ARG_SCALE`` and ``DNNL_ARG_ATTR_ZERO_POINTS`` (a scale *of* a zero
  point means nothing);
* neither scales nor zero points of ``DNNL_ARG_BIAS`` (the bias lives in the real domain);
* ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx)`` only on ``DNNL_ARG_SRC_1`` (the second input of a
  binary post-op, or the condition of a select post-op), optionally with ``DNNL_ARG_SCALE``
  (its scales), or on ``DNNL_ARG_SRC_2`` (the replacement value of dnnq's select post-op, see
  :meth:`dnnq.PostOps.append_select`; the third input of oneDNN's later ``binary_select``)
  without scales; no zero point;
* ``DNNL_ARG_ATTR_POST_OP_DW`` only on ``DNNL_ARG_WEIGHTS``, ``DNNL_ARG_BIAS`` or ``DNNL_ARG_DST``
  (the depthwise post-op's own tensors), optionally with ``DNNL_ARG_SCALE`` on weights / dst;
  no zero point, and never together with a post-op index;
* only the bits listed above; ``bool``, negative and non-integer values are rejected.

Whether a given primitive *uses* an argument is the primitive's business; this module only
says whether an ID is well formed.  :func:`all_valid_args` lists every well-formed ID.

oneDNN 3.x renumbered the prefixes (``DNNL_ARG_ATTR_SCALES`` = 4096, zero points 8192,
depthwise 16384, post-op base 32768); :func:`to_onednn_v3` / :func:`from_onednn_v3` translate.
"""

from dataclasses import dataclass
from numbers import Integral

from .errors import invalid

__all__ = [
    "DNNL_ARG_SRC", "DNNL_ARG_SRC_0", "DNNL_ARG_SRC_LAYER",
    "DNNL_ARG_SRC_1", "DNNL_ARG_SRC_ITER",
    "DNNL_ARG_SRC_2", "DNNL_ARG_SRC_ITER_C",
    "DNNL_ARG_DST", "DNNL_ARG_DST_0", "DNNL_ARG_DST_LAYER",
    "DNNL_ARG_DST_1", "DNNL_ARG_DST_ITER",
    "DNNL_ARG_DST_2", "DNNL_ARG_DST_ITER_C",
    "DNNL_ARG_WEIGHTS", "DNNL_ARG_WEIGHTS_0", "DNNL_ARG_WEIGHTS_LAYER",
    "DNNL_ARG_WEIGHTS_1", "DNNL_ARG_WEIGHTS_ITER",
    "DNNL_ARG_WEIGHTS_2", "DNNL_ARG_WEIGHTS_PEEPHOLE",
    "DNNL_ARG_WEIGHTS_3", "DNNL_ARG_WEIGHTS_PROJECTION",
    "DNNL_ARG_BIAS", "DNNL_ARG_SCALE", "DNNL_ARG_MULTIPLE_SRC", "DNNL_ARG_MULTIPLE_DST",
    "DNNL_ARG_ATTR_ZERO_POINTS", "DNNL_ARG_ATTR_POST_OP_DW",
    "DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE", "DNNL_ARG_ATTR_MULTIPLE_POST_OP",
    "MAX_MULTIPLE", "MAX_POST_OP_INDEX", "PLAIN_ARGS",
    "ArgParts", "decode", "encode", "name", "from_name", "to_onednn_v3", "from_onednn_v3",
    "all_valid_args",
]

# --- plain arguments --------------------------------------------------------------------------
DNNL_ARG_SRC = DNNL_ARG_SRC_0 = DNNL_ARG_SRC_LAYER = 1
DNNL_ARG_SRC_1 = DNNL_ARG_SRC_ITER = 2
DNNL_ARG_SRC_2 = DNNL_ARG_SRC_ITER_C = 3
DNNL_ARG_DST = DNNL_ARG_DST_0 = DNNL_ARG_DST_LAYER = 17
DNNL_ARG_DST_1 = DNNL_ARG_DST_ITER = 18
DNNL_ARG_DST_2 = DNNL_ARG_DST_ITER_C = 19
DNNL_ARG_WEIGHTS = DNNL_ARG_WEIGHTS_0 = DNNL_ARG_WEIGHTS_LAYER = 33
DNNL_ARG_WEIGHTS_1 = DNNL_ARG_WEIGHTS_ITER = 34
DNNL_ARG_WEIGHTS_2 = DNNL_ARG_WEIGHTS_PEEPHOLE = 35      # LSTM peephole weights
DNNL_ARG_WEIGHTS_3 = DNNL_ARG_WEIGHTS_PROJECTION = 36    # LSTMP projection weights
DNNL_ARG_BIAS = 41

# --- prefixes ---------------------------------------------------------------------------------
DNNL_ARG_SCALE = 512
DNNL_ARG_MULTIPLE_SRC = 1024
DNNL_ARG_MULTIPLE_DST = 2048
DNNL_ARG_ATTR_ZERO_POINTS = 4096
DNNL_ARG_ATTR_POST_OP_DW = 8192
DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE = 16384

MAX_MULTIPLE = 512
"""Inputs / outputs of MULTIPLE_SRC / MULTIPLE_DST are numbered 0 <= n < MAX_MULTIPLE."""
MAX_POST_OP_INDEX = 31
"""Post-op positions addressable by DNNL_ARG_ATTR_MULTIPLE_POST_OP: 0 <= idx < 31."""

#: Plain argument value -> canonical readable name (used by :func:`name`).
PLAIN_ARGS = {
    DNNL_ARG_SRC: "src", DNNL_ARG_SRC_1: "src_1", DNNL_ARG_SRC_2: "src_2",
    DNNL_ARG_DST: "dst", DNNL_ARG_DST_1: "dst_1", DNNL_ARG_DST_2: "dst_2",
    DNNL_ARG_WEIGHTS: "weights", DNNL_ARG_WEIGHTS_1: "weights_1",
    DNNL_ARG_WEIGHTS_2: "weights_2", DNNL_ARG_WEIGHTS_3: "weights_3", DNNL_ARG_BIAS: "bias",
}
_PLAIN_BY_NAME = {v: k for k, v in PLAIN_ARGS.items()}
_DW_BASES = (DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST)


def _as_int(value, what):
    """Return ``value`` as a Python int; reject bools, floats and other non-integers."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise invalid(what, f"{value!r} of type {type(value).__name__}", "an int")
    return int(value)


def DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx):
    """The prefix of the execution arguments of post-op number ``idx``.

    The second input of binary post-op 0 is ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) |
    DNNL_ARG_SRC_1``, its scales ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SCALE |
    DNNL_ARG_SRC_1``.

    Parameters
    ----------
    idx : int
        The post-op's position in its :class:`PostOps` chain, 0 <= idx < 31.

    Returns
    -------
    int
        ``16384 * (idx + 1)``.

    Raises
    ------
    InvalidArguments
        For an index that is not an int in [0, 31).

    Examples
    --------
    >>> import dnnq
    >>> dnnq.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_SRC_1
    16898
    """
    i = _as_int(idx, "DNNL_ARG_ATTR_MULTIPLE_POST_OP idx")
    if not 0 <= i < MAX_POST_OP_INDEX:
        raise invalid("DNNL_ARG_ATTR_MULTIPLE_POST_OP idx", i, f"0 <= idx < {MAX_POST_OP_INDEX}")
    return DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE * (i + 1)


@dataclass(frozen=True)
class ArgParts:
    """The parts of an argument id, as returned by :func:`decode` and taken by :func:`encode`.

    Parameters
    ----------
    base : int or None
        The plain argument (1, 2, 3, 17, 18, 19, 33, 34, 35, 36 or 41), or None when
        ``multiple_src`` / ``multiple_dst`` names the tensor instead.
    scale, zero_point : bool
        The id names the scales / zero points of that tensor.
    post_op : int or None
        Index of the post-op the tensor belongs to (None: the primitive's own).
    dw : bool
        The tensor belongs to the depthwise (``append_dw``) post-op.
    multiple_src, multiple_dst : int or None
        Input / output index n of ``DNNL_ARG_MULTIPLE_SRC + n`` / ``DNNL_ARG_MULTIPLE_DST + n``.

    Raises
    ------
    InvalidArguments
        Not at construction (any values are held); :func:`encode` validates them.

    Examples
    --------
    >>> import dnnq
    >>> dnnq.encode(dnnq.ArgParts(base=dnnq.DNNL_ARG_DST, zero_point=True))
    4113
    """

    base: object = None
    scale: bool = False
    zero_point: bool = False
    post_op: object = None
    dw: bool = False
    multiple_src: object = None
    multiple_dst: object = None


# A numbering: where each field sits.  dnnq's (SPEC) and oneDNN 3.x's.
@dataclass(frozen=True)
class _Layout:
    label: str
    scale: int
    zero_point: int
    dw: int
    post_op_shift: int
    low_mask: int          # bits usable by the plain argument / multiple index


_DNNQ = _Layout("argument", DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS,
                DNNL_ARG_ATTR_POST_OP_DW, 14, 511)
_V3 = _Layout("oneDNN 3.x argument", 4096, 8192, 16384, 15, 1023)


def _known_bits(lay):
    return (lay.low_mask | lay.scale | lay.zero_point | lay.dw | DNNL_ARG_MULTIPLE_SRC
            | DNNL_ARG_MULTIPLE_DST | (31 << lay.post_op_shift))


def _why_invalid(p):
    """Return None when the parts form a valid ID, else a sentence saying why not."""
    for field in ("scale", "zero_point", "dw"):
        if not isinstance(getattr(p, field), bool):
            return f"{field} to be a bool"
    nbases = (p.base is not None) + (p.multiple_src is not None) + (p.multiple_dst is not None)
    if nbases != 1:
        return (f"exactly one of base, multiple_src and multiple_dst (got {nbases} of "
                "them)")
    if p.base is not None and (isinstance(p.base, bool) or p.base not in PLAIN_ARGS):
        return f"base among the plain arguments {sorted(PLAIN_ARGS)}"
    for field in ("multiple_src", "multiple_dst"):
        n = getattr(p, field)
        if n is not None and (isinstance(n, bool) or not isinstance(n, Integral)
                              or not 0 <= n < MAX_MULTIPLE):
            return f"a {field} index that is an int in [0, {MAX_MULTIPLE})"
    if p.post_op is not None and (isinstance(p.post_op, bool)
                                  or not isinstance(p.post_op, Integral)
                                  or not 0 <= p.post_op < MAX_POST_OP_INDEX):
        return f"a post_op index that is an int in [0, {MAX_POST_OP_INDEX})"
    if p.scale and p.zero_point:
        return "scales or zero points, not both (a scale of a zero point means nothing)"
    if p.base == DNNL_ARG_BIAS and (p.scale or p.zero_point):
        return "no scales or zero points of the bias (it is in the real domain)"
    if p.post_op is not None:
        if p.dw:
            return "a post-op index or the depthwise prefix, not both"
        if p.base not in (DNNL_ARG_SRC_1, DNNL_ARG_SRC_2):
            return ("post-op arguments only on src_1 (a binary post-op's input) or its scales, "
                    "or src_2 (a select post-op's value)")
        if p.zero_point:
            return "no zero points of a post-op's input"
        if p.base == DNNL_ARG_SRC_2 and p.scale:
            return "no scales of a select post-op's src_2"
    if p.dw:
        if p.base not in _DW_BASES:
            return "the depthwise prefix only on weights, bias or dst"
        if p.zero_point:
            return "no zero points in the depthwise post-op"
    return None


def _describe(a, lay):
    """Best-effort spelling of the fields of ``a`` for error messages."""
    words = []
    po_field = (a >> lay.post_op_shift) & 31
    if po_field:
        words.append(f"post_op[{po_field - 1}]")
    for bit, word in ((lay.dw, "dw"), (lay.scale, "scale"), (lay.zero_point, "zero_point"),
                      (DNNL_ARG_MULTIPLE_SRC, "multiple_src"),
                      (DNNL_ARG_MULTIPLE_DST, "multiple_dst")):
        if a & bit:
            words.append(word)
    low = a & lay.low_mask
    words.append(PLAIN_ARGS.get(low, str(low)))
    return " | ".join(words)


def _decode(arg, lay):
    if isinstance(arg, bool) or not isinstance(arg, Integral):
        raise invalid(lay.label, f"{arg!r} of type {type(arg).__name__}",
                      "a non-negative int argument ID")
    a = int(arg)
    if a < 0:
        raise invalid(lay.label, a, "a non-negative argument ID")
    extra = a & ~_known_bits(lay)
    if extra:
        raise invalid(lay.label, f"{a} (unknown bits {extra:#x})",
                      "an ID built from DNNL_ARG_* values")
    msrc = bool(a & DNNL_ARG_MULTIPLE_SRC)
    mdst = bool(a & DNNL_ARG_MULTIPLE_DST)
    low = a & lay.low_mask
    if msrc and mdst:
        raise invalid(lay.label, f"{a} (both MULTIPLE_SRC and MULTIPLE_DST)",
                      "at most one of them")
    if not (msrc or mdst) and low not in PLAIN_ARGS:
        raise invalid(lay.label, f"{a} (plain part {low})",
                      f"a plain argument among {sorted(PLAIN_ARGS)} or MULTIPLE_SRC/DST + n")
    po_field = (a >> lay.post_op_shift) & 31
    parts = ArgParts(
        base=None if (msrc or mdst) else low,
        scale=bool(a & lay.scale),
        zero_point=bool(a & lay.zero_point),
        post_op=po_field - 1 if po_field else None,
        dw=bool(a & lay.dw),
        multiple_src=low if msrc else None,
        multiple_dst=low if mdst else None,
    )
    why = _why_invalid(parts)
    if why is not None:
        raise invalid(lay.label, f"{a} ({_describe(a, lay)})", why)
    return parts


def _encode(parts, lay):
    if not isinstance(parts, ArgParts):
        raise invalid("parts", f"{parts!r}", "an ArgParts")
    why = _why_invalid(parts)
    if why is not None:
        raise invalid("parts", repr(parts), why)
    if parts.base is not None:
        a = int(parts.base)
    elif parts.multiple_src is not None:
        a = DNNL_ARG_MULTIPLE_SRC + int(parts.multiple_src)
    else:
        a = DNNL_ARG_MULTIPLE_DST + int(parts.multiple_dst)
    if parts.scale:
        a |= lay.scale
    if parts.zero_point:
        a |= lay.zero_point
    if parts.dw:
        a |= lay.dw
    if parts.post_op is not None:
        a |= (int(parts.post_op) + 1) << lay.post_op_shift
    return a


def decode(arg):
    """Split an argument id into its parts.

    Parameters
    ----------
    arg : int
        An argument id (``DNNL_ARG_*`` values combined with ``|``).

    Returns
    -------
    ArgParts

    Raises
    ------
    InvalidArguments
        For an id that is not well formed: unknown bits, two bases, scales of the bias, a
        post-op index on something else than ``src_1`` / ``src_2``, ...; the message says
        which rule it breaks.

    See Also
    --------
    encode, name

    Examples
    --------
    >>> import dnnq
    >>> dnnq.decode(dnnq.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | dnnq.DNNL_ARG_SCALE
    ...             | dnnq.DNNL_ARG_SRC_1)       # doctest: +NORMALIZE_WHITESPACE
    ArgParts(base=2, scale=True, zero_point=False, post_op=0, dw=False, multiple_src=None,
             multiple_dst=None)
    """
    return _decode(arg, _DNNQ)


def encode(parts):
    """Build the argument id of an :class:`ArgParts` (the inverse of :func:`decode`).

    Parameters
    ----------
    parts : ArgParts

    Returns
    -------
    int
        The argument id.

    Raises
    ------
    InvalidArguments
        For parts that do not form a valid id.

    See Also
    --------
    decode

    Examples
    --------
    >>> import dnnq
    >>> dnnq.encode(dnnq.ArgParts(multiple_src=3, scale=True)) == (
    ...     dnnq.DNNL_ARG_SCALE | (dnnq.DNNL_ARG_MULTIPLE_SRC + 3))
    True
    """
    return _encode(parts, _DNNQ)


def name(arg):
    """A readable name of an argument id, as dnnq's error messages print it.

    Aliases print under their canonical name (``DNNL_ARG_SRC_LAYER`` is ``"src"``).

    Parameters
    ----------
    arg : int
        An argument id.

    Returns
    -------
    str
        E.g. ``"src"``, ``"scale.src"``, ``"zero_point.dst"``, ``"post_op[0].scale.src_1"``,
        ``"scale.multiple_src[3]"``, ``"dw.scale.weights"``.

    Raises
    ------
    InvalidArguments
        For an id that is not well formed.

    See Also
    --------
    from_name

    Examples
    --------
    >>> import dnnq
    >>> dnnq.name(dnnq.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_SRC_1)
    'post_op[0].scale.src_1'
    """
    p = decode(arg)
    out = []
    if p.post_op is not None:
        out.append(f"post_op[{p.post_op}]")
    if p.dw:
        out.append("dw")
    if p.scale:
        out.append("scale")
    if p.zero_point:
        out.append("zero_point")
    if p.base is not None:
        out.append(PLAIN_ARGS[p.base])
    elif p.multiple_src is not None:
        out.append(f"multiple_src[{p.multiple_src}]")
    else:
        out.append(f"multiple_dst[{p.multiple_dst}]")
    return ".".join(out)


def from_name(text):
    """Parse a name produced by :func:`name` back into the argument id.

    Parameters
    ----------
    text : str
        ``[post_op[i].][dw.][scale.|zero_point.]<src|dst|weights|...|multiple_src[n]>``.

    Returns
    -------
    int
        The argument id.

    Raises
    ------
    InvalidArguments
        For text that is not such a name, or names an id that is not well formed.

    See Also
    --------
    name

    Examples
    --------
    >>> import dnnq
    >>> dnnq.from_name("scale.src") == dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_SRC
    True
    """
    if not isinstance(text, str):
        raise invalid("argument name", repr(text), "a str such as 'scale.src'")
    fields = {"base": None, "scale": False, "zero_point": False, "post_op": None,
              "dw": False, "multiple_src": None, "multiple_dst": None}
    tokens = text.split(".")
    try:
        *prefixes, last = tokens
        for tok in prefixes:
            if tok in ("dw", "scale", "zero_point") and not fields[tok]:
                fields[tok] = True
            elif tok.startswith("post_op[") and tok.endswith("]") and fields["post_op"] is None:
                fields["post_op"] = int(tok[len("post_op["):-1])
            else:
                raise ValueError(tok)
        if last in _PLAIN_BY_NAME:
            fields["base"] = _PLAIN_BY_NAME[last]
        else:
            for kind in ("multiple_src", "multiple_dst"):
                if last.startswith(kind + "[") and last.endswith("]"):
                    fields[kind] = int(last[len(kind) + 1:-1])
                    break
            else:
                raise ValueError(last)
    except ValueError:
        raise invalid("argument name", repr(text),
                      "[post_op[i].][dw.][scale.|zero_point.]<src|dst|weights|...|"
                      "multiple_src[n]|multiple_dst[n]>") from None
    parts = ArgParts(**fields)
    why = _why_invalid(parts)
    if why is not None:
        raise invalid("argument name", repr(text), why)
    return encode(parts)


def to_onednn_v3(arg):
    """Translate a dnnq argument id to the numbering of the oneDNN 3.x headers.

    Scales become ``DNNL_ARG_ATTR_SCALES`` (4096), zero points 8192, the depthwise prefix
    16384 and ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx)`` 32768 * (idx + 1); the plain arguments
    and ``MULTIPLE_SRC`` / ``MULTIPLE_DST + n`` are unchanged.

    Parameters
    ----------
    arg : int
        A dnnq argument id.

    Returns
    -------
    int
        The oneDNN 3.x id.

    Raises
    ------
    InvalidArguments
        For an id that is not well formed.

    See Also
    --------
    from_onednn_v3

    Examples
    --------
    >>> import dnnq
    >>> dnnq.to_onednn_v3(dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_SRC)
    4097
    """
    return _encode(decode(arg), _V3)


def from_onednn_v3(arg):
    """Translate a oneDNN 3.x argument id to dnnq's numbering (inverse of :func:`to_onednn_v3`).

    Parameters
    ----------
    arg : int
        An id in the numbering of the oneDNN 3.x headers.

    Returns
    -------
    int
        The dnnq id.

    Raises
    ------
    InvalidArguments
        For an id dnnq cannot express (``MULTIPLE_SRC + n`` with n >= 512, a combination
        dnnq considers invalid).

    See Also
    --------
    to_onednn_v3

    Examples
    --------
    >>> import dnnq
    >>> dnnq.from_onednn_v3(4097) == dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_SRC
    True
    """
    return encode(_decode(arg, _V3))


def all_valid_args():
    """Every well-formed argument id, in increasing order.

    That is: the plain arguments, the scales and zero points of each except the bias, the
    ``MULTIPLE_SRC`` / ``MULTIPLE_DST`` inputs n < 512 with or without scales / zero points,
    each binary post-op's ``src_1`` and its scales and each select post-op's ``src_2`` (31
    indices), and the depthwise post-op's weights, bias, dst and the scales of its weights and
    dst.

    Returns
    -------
    list of int

    Raises
    ------
    None

    See Also
    --------
    decode

    Examples
    --------
    >>> import dnnq
    >>> ids = dnnq.all_valid_args()
    >>> ids[:3], all(dnnq.decode(a) for a in ids)
    ([1, 2, 3], True)
    """
    out = []
    for base in PLAIN_ARGS:
        out.append(encode(ArgParts(base=base)))
        if base != DNNL_ARG_BIAS:
            out.append(encode(ArgParts(base=base, scale=True)))
            out.append(encode(ArgParts(base=base, zero_point=True)))
    for n in range(MAX_MULTIPLE):
        for field in ("multiple_src", "multiple_dst"):
            out.append(encode(ArgParts(**{field: n})))
            out.append(encode(ArgParts(**{field: n}, scale=True)))
            out.append(encode(ArgParts(**{field: n}, zero_point=True)))
    for idx in range(MAX_POST_OP_INDEX):
        out.append(encode(ArgParts(base=DNNL_ARG_SRC_1, post_op=idx)))
        out.append(encode(ArgParts(base=DNNL_ARG_SRC_1, post_op=idx, scale=True)))
        out.append(encode(ArgParts(base=DNNL_ARG_SRC_2, post_op=idx)))
    for base in _DW_BASES:
        out.append(encode(ArgParts(base=base, dw=True)))
        if base != DNNL_ARG_BIAS:
            out.append(encode(ArgParts(base=base, dw=True, scale=True)))
    return sorted(out)
