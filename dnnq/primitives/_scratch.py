"""Per-primitive pools of scratch buffers reused between executions."""
import numpy as np

from dnnq.primitives._plan import aligned_empty


class Scratch:
    """The channels-last copies of one execution, taken from and given back to the
    primitive's pool: a fresh buffer of that size costs its page faults on every call
    (hundreds of microseconds for a MobileNet layer).  Concurrent executions each take their
    own (list pop / append are atomic under the GIL)."""

    __slots__ = ("pool", "taken")

    def __init__(self, pool):
        self.pool, self.taken = pool, []

    def take(self, shape, dtype):
        key = (tuple(shape), np.dtype(dtype).str)
        free = self.pool.setdefault(key, [])
        try:
            a = free.pop()
        except IndexError:
            a = aligned_empty(int(np.prod(shape)), dtype).reshape(shape)
        self.taken.append((key, a))
        return a

    def release(self):
        for key, a in self.taken:
            free = self.pool.get(key)
            if free is not None and len(free) < 2:
                free.append(a)
        self.taken = []
