"""The primitive cache (SPEC section 8): creating a primitive with a description already seen
returns the primitive created then — validation, kernel choice and plans are not redone.

The key is the class, every constructor argument (memory descriptors and attributes by value)
and the effective ISA level (a primitive keeps the kernel it chose).  LRU, capacity from
DNNQ_PRIMITIVE_CACHE_CAPACITY (default 1024; 0 disables), or set_primitive_cache_capacity().
"""
import os
import threading
from collections import OrderedDict

from dnnq import _dispatch, _impls  # noqa: F401

_lock = threading.Lock()
_entries = OrderedDict()
try:
    _capacity = max(0, int(os.environ.get("DNNQ_PRIMITIVE_CACHE_CAPACITY", "1024")))
except ValueError:
    _capacity = 1024


def set_primitive_cache_capacity(n):
    """Entries kept (0 disables the cache); returns the previous capacity."""
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
    return _capacity


def primitive_cache_size():
    return len(_entries)


def _freeze(v):
    if hasattr(v, "key") and callable(v.key):  # PrimitiveAttr, PostOps
        return (type(v).__name__, v.key())
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


class CachedPrimitive(type):
    """Metaclass: `Cls(*args, **kw)` looks the description up before creating."""

    def __call__(cls, *args, **kwargs):
        if _capacity == 0:
            return super().__call__(*args, **kwargs)
        try:
            key = (cls, _freeze(args), _freeze(kwargs), _impls.dispatch_key())
            hash(key)
        except TypeError:  # something unhashable: let the constructor judge it
            return super().__call__(*args, **kwargs)
        with _lock:
            prim = _entries.get(key)
            if prim is not None:
                _entries.move_to_end(key)
                return prim
        prim = super().__call__(*args, **kwargs)
        with _lock:
            _entries[key] = prim
            while len(_entries) > _capacity:
                _entries.popitem(last=False)
        return prim
