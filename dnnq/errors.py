"""Error classes of dnnq (SPEC section 7).

Every error raised for bad user input is one of these, and its message names the argument,
what was given and what is accepted.
"""


class DnnqError(Exception):
    """Base class of every error dnnq raises on purpose."""


class InvalidArguments(DnnqError, ValueError):
    """An argument is malformed: wrong dtype, shape, mask, scale count or value."""


class Unimplemented(DnnqError, NotImplementedError):
    """A well-formed combination that dnnq does not compute (e.g. an unsupported mask)."""


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
