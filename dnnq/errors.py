"""Error classes of dnnq (SPEC section 7).

Every error raised for bad user input is one of these, and its message names the argument,
what was given and what is accepted.
"""


class DnnqError(Exception):
    """Base class of every error dnnq raises on purpose.

    Catch it to handle any refusal of dnnq at once; :class:`InvalidArguments` and
    :class:`Unimplemented` say which kind.  Every message names the argument, what was given
    and what is accepted.

    Parameters
    ----------
    message : str
        What was wrong: the argument, the value given and what is accepted.

    Raises
    ------
    DnnqError
        Never by itself: dnnq raises one of the two subclasses.

    See Also
    --------
    InvalidArguments, Unimplemented

    Examples
    --------
    >>> import dnnq
    >>> try:
    ...     dnnq.MemoryDesc((2, 3), "f16")
    ... except dnnq.DnnqError as e:
    ...     print(type(e).__name__)
    InvalidArguments
    """


class InvalidArguments(DnnqError, ValueError):
    """An argument is malformed: a wrong dtype, shape, mask, scale count or value.

    Also a :class:`ValueError`, so code that catches ``ValueError`` catches it.

    Parameters
    ----------
    message : str
        The argument, the value given and what is accepted.

    Raises
    ------
    InvalidArguments
        From any dnnq call given a malformed argument (at creation or at execution).

    See Also
    --------
    Unimplemented : a well-formed request dnnq does not compute.

    Examples
    --------
    >>> import dnnq
    >>> dnnq.scale_count((2, 3), 1 << 2)
    Traceback (most recent call last):
    ...
    dnnq.errors.InvalidArguments: mask: got 4 for a 2-D tensor; expected bits below 2 only ...
    """


class Unimplemented(DnnqError, NotImplementedError):
    """A well-formed combination that dnnq does not compute (e.g. an unsupported mask).

    Also a :class:`NotImplementedError`.  The message lists what is supported instead; each
    primitive's support table (its docstring and the user guide) says the same.

    Parameters
    ----------
    message : str
        The argument, the value given and what is supported.

    Raises
    ------
    Unimplemented
        From a primitive's creation (a mask, data type or post-op outside its support table)
        or, rarely, at execution (values that make the request unsupported).

    See Also
    --------
    InvalidArguments : a malformed argument.

    Examples
    --------
    >>> import dnnq
    >>> attr = dnnq.PrimitiveAttr()
    >>> _ = attr.set_scales_mask(dnnq.DNNL_ARG_SRC, 1 << 1)   # per-K source scales
    >>> dnnq.MatMul(dnnq.MemoryDesc((4, 8), "u8"), dnnq.MemoryDesc((8, 2), "s8"),
    ...             dnnq.MemoryDesc((4, 2), "s32"), attr=attr)
    Traceback (most recent call last):
    ...
    dnnq.errors.Unimplemented: ...
    """


def invalid(name, given, accepted):
    """Build an InvalidArguments with the standard 'name: given ..., accepted ...' message."""
    return InvalidArguments(f"{name}: got {given}; expected {accepted}")


def unimplemented(name, given, supported):
    return Unimplemented(f"{name}: {given} is not supported; supported: {supported}")


def real_to_float(value):
    """float(value) for a real number, +-inf when it is beyond the float range (Python ints
    such as 10**400 raise OverflowError in float()): callers then reject it as not finite."""
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")
