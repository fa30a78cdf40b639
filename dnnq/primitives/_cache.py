"""The primitive cache (SPEC section 8): creating a primitive with a description already seen
returns the primitive created then — validation, kernel choice and plans are not redone.

The key is the class, every constructor argument (memory descriptors and attributes by value)
and the effective ISA level (a primitive keeps the kernel it chose).  LRU, capacity from
DNNQ_PRIMITIVE_CACHE_CAPACITY (default 1024; 0 disables), or set_primitive_cache_capacity().
"""
import copy
import inspect
import os
import sys
import threading
from collections import OrderedDict

from dnnq.primitives import _dispatch, _impls  # noqa: F401

_lock = threading.Lock()
_entries = OrderedDict()
try:
    _capacity = max(0, int(os.environ.get("DNNQ_PRIMITIVE_CACHE_CAPACITY", "1024")))
except ValueError:
    _capacity = 1024


def set_primitive_cache_capacity(n):
    """Set how many primitives the primitive cache keeps (0 turns it off).

    Creating a primitive with a description already seen (the class, every constructor
    argument by value, and the ISA level) returns the cached primitive: validation, kernel
    choice and planning are not redone.  The least recently used entries go first.  The
    default is ``DNNQ_PRIMITIVE_CACHE_CAPACITY``, else 1024.

    Parameters
    ----------
    n : int
        The capacity, >= 0.

    Returns
    -------
    int
        The previous capacity.

    Raises
    ------
    InvalidArguments
        For a value that is not an int >= 0.

    See Also
    --------
    get_primitive_cache_capacity, primitive_cache_size

    Examples
    --------
    >>> import dnnq
    >>> old = dnnq.set_primitive_cache_capacity(0)       # cache off
    >>> d = dnnq.MemoryDesc((2, 2), "f32")
    >>> dnnq.Reorder(d, d) is dnnq.Reorder(d, d)
    False
    >>> _ = dnnq.set_primitive_cache_capacity(old)
    >>> dnnq.Reorder(d, d) is dnnq.Reorder(d, d)
    True
    """
    global _capacity
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        from dnnq.errors import InvalidArguments
        raise InvalidArguments(f"capacity: got {n!r}; expected an int >= 0")
    with _lock:
        old, _capacity = _capacity, n
        while len(_entries) > _capacity:
            _entries.popitem(last=False)
    return old


def get_primitive_cache_capacity():
    """How many primitives the primitive cache keeps.

    Returns
    -------
    int
        The capacity (0: the cache is off).

    Raises
    ------
    None

    See Also
    --------
    set_primitive_cache_capacity, primitive_cache_size

    Examples
    --------
    >>> import dnnq
    >>> dnnq.get_primitive_cache_capacity() >= 0
    True
    """
    return _capacity


def primitive_cache_size():
    """How many primitives the primitive cache holds now.

    Returns
    -------
    int
        At most :func:`get_primitive_cache_capacity`.

    Raises
    ------
    None

    See Also
    --------
    set_primitive_cache_capacity

    Examples
    --------
    >>> import dnnq
    >>> dnnq.primitive_cache_size() <= dnnq.get_primitive_cache_capacity()
    True
    """
    return len(_entries)


def _freeze(v):
    if hasattr(v, "key") and callable(v.key):  # PrimitiveAttr, PostOps
        return (type(v).__name__, v.key())
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


#: added to the Notes section of every primitive's docstring (help(dnnq.MatMul), the API
#: reference)
EXECUTE_KEYS = """\
Execute keys every primitive takes besides its data keys (``prim.execute(args)``, ``args`` a
dict of numpy arrays keyed by ``dnnq.DNNL_ARG_*``):

- ``DNNL_ARG_DST``: optional; when given, the output is written into it and returned, else
  a new array is returned.
- ``DNNL_ARG_SCALE | <arg>`` (e.g. ``DNNL_ARG_SCALE | DNNL_ARG_SRC``): f32 scales of
  ``<arg>``, required when ``attr.set_scales_mask(<arg>, mask)`` was set;
  ``dnnq.scale_count(dims, mask)`` values (1 for mask 0).
- ``DNNL_ARG_ATTR_ZERO_POINTS | <arg>``: s32 zero points of ``<arg>``, required when
  ``attr.set_zero_points_mask(<arg>, mask)`` was set.
- ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1``: the input of the binary post-op at
  position ``i`` of the chain (the ``src1_desc`` given to ``append_binary``); for a select
  post-op its condition, with ``... | DNNL_ARG_SRC_2`` its value.

A key the primitive does not take, a missing required key, or an array of the wrong dtype
or shape raises ``dnnq.InvalidArguments`` naming the key.
"""

_SECTIONS_AFTER_NOTES = ("References", "Examples")


def _section_start(lines, title):
    """Index of the numpydoc section header ``title`` (title line + dashes), or None."""
    for i in range(len(lines) - 1):
        if lines[i].strip() == title and set(lines[i + 1].strip()) == {"-"}:
            return i
    return None


def with_execute_keys(doc, notes=()):
    """``doc`` (cleaned) with the lines ``notes`` and :data:`EXECUTE_KEYS` at the end of its
    numpydoc Notes section: before References / Examples, a Notes section created where
    there is none."""
    lines = inspect.cleandoc(doc).splitlines()
    ends = [i for i in (_section_start(lines, t) for t in _SECTIONS_AFTER_NOTES) if i is not None]
    at = min(ends) if ends else len(lines)
    block = list(notes) + ([""] if notes else []) + EXECUTE_KEYS.splitlines()
    if _section_start(lines, "Notes") is None:
        block = ["Notes", "-----"] + block
    while at > 0 and not lines[at - 1].strip():
        at -= 1
    return "\n".join(lines[:at] + [""] + block + lines[at:]).rstrip() + "\n"


def _snapshot(args, kwargs):
    """The constructor arguments as they are now (the caller may change their attribute
    later), for pickling; None when they cannot be copied (the constructor judged them)."""
    try:
        return copy.deepcopy((args, kwargs))
    except Exception:  # noqa: BLE001 - anything the constructor accepted but copy cannot
        return None


def rebuild_primitive(cls, args, kwargs, numerics="exact"):
    """Unpickling: create the primitive again from its description (validated, dispatched
    for this machine and ISA cap, planned, through the primitive cache), with the int8
    numerics it was created with (they decide its results, unlike the kernel choice)."""
    if not isinstance(cls, CachedPrimitive):
        from dnnq.errors import InvalidArguments
        raise InvalidArguments(f"unpickling: {cls!r} is not a dnnq primitive class")
    with _dispatch.set_int8_numerics(numerics):
        return cls(*args, **kwargs)


def reduce_primitive(self):
    """``__reduce__`` of every primitive: its class and constructor arguments, so that
    ``pickle.loads`` recreates it (nothing of the plans, packed data or chosen kernel is
    pickled)."""
    ctor = self.__dict__.get("_ctor_args")
    if ctor is None:
        raise TypeError(f"{type(self).__name__}: its constructor arguments could not be "
                        "recorded, so it cannot be pickled; pickle its description instead")
    return (rebuild_primitive, (type(self), ctor[0], ctor[1],
                                self.__dict__.get("_int8_numerics", "exact")))


def _create(cls, args, kwargs):
    prim = type.__call__(cls, *args, **kwargs)
    prim.__dict__["_ctor_args"] = _snapshot(args, kwargs)
    prim.__dict__["_int8_numerics"] = _dispatch.get_int8_numerics()
    return prim


class CachedPrimitive(type):
    """Metaclass: `Cls(*args, **kw)` looks the description up before creating.

    Every primitive created through it records a copy of its constructor arguments and pickles
    as them (``reduce_primitive``): the unpickled primitive is created anew, validated and
    dispatched where it is loaded.  A class defining its own ``__reduce__`` keeps it.

    It also gives each class the signature of its ``__init__`` (without it, ``help()`` and
    ``inspect.signature`` would show this metaclass's ``(*args, **kwargs)``), and adds to the
    Notes section of its (numpydoc) docstring the execute keys every primitive takes and, for
    a class whose docstring defers to its module's ("see the module docstring"), that module
    docstring (support table, numerics), so that ``help(dnnq.Pooling)`` shows them."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        init = namespace.get("__init__")
        if init is not None:
            sig = inspect.signature(init)
            cls.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])
        doc = namespace.get("__doc__") or ""
        module_doc = getattr(sys.modules.get(cls.__module__), "__doc__", None)
        notes = ()
        if "see the module docstring" in doc and module_doc:
            notes = inspect.cleandoc(module_doc).splitlines()
        if doc and not name.startswith("_"):
            cls.__doc__ = with_execute_keys(doc, notes)
        if "__reduce__" not in namespace and cls.__reduce__ is object.__reduce__:
            cls.__reduce__ = reduce_primitive

    def __call__(cls, *args, **kwargs):
        if _capacity == 0:
            return _create(cls, args, kwargs)
        try:
            key = (cls, _freeze(args), _freeze(kwargs), _impls.dispatch_key())
            hash(key)
        except TypeError:  # something unhashable: let the constructor judge it
            return _create(cls, args, kwargs)
        with _lock:
            prim = _entries.get(key)
            if prim is not None:
                _entries.move_to_end(key)
                return prim
        prim = _create(cls, args, kwargs)
        with _lock:
            _entries[key] = prim
            while len(_entries) > _capacity:
                _entries.popitem(last=False)
        return prim
