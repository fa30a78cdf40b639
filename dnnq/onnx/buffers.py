"""Output buffers of a session's steps, shared by liveness.

A step that writes a fresh array (``Step.fresh_output``) and whose output reaches no graph
output keeps that array across runs (``keeps_output``): no allocation, no page faults. With a
:class:`BufferPool` the arrays of steps whose outputs are never alive at the same time share
one buffer, and each output takes the buffer freed most recently (OpenVINO's and ORT's memory
planners share by liveness too): the large activations of a model then cycle through a few
buffers still in cache from the layer before, instead of each step writing memory last
touched an inference ago.
"""
import numpy as np

#: the env key a run sets when its steps may write into the arrays of the session's previous
#: run (session.py: not in a run overlapping another run of the same session)
REUSE = "::reuse buffers"
#: without a pool, outputs below this size are left to the allocator: its free lists hand
#: back memory still in cache, where one array per step spreads a small model over more cache
#: lines; above it, a fresh array is mapped anew and every page faults on first write
KEEP_MIN_BYTES = 1 << 18
_LINE = 64


def _nbytes(shape, dtype):
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= d
    return n


class BufferPool:
    """Buffers by slot; a slot's buffer grows to the largest array asked of it (the arrays
    handed out before stay valid: they keep the old buffer alive)."""

    def __init__(self, nslots):
        self._bufs = [None] * nslots

    def array(self, slot, shape, dtype):
        """An uninitialised C-contiguous array of ``shape`` on slot ``slot``'s buffer (its
        data on a 64-byte boundary)."""
        n = _nbytes(shape, dtype)
        buf = self._bufs[slot]
        if buf is None or buf.size < n:
            buf = self._bufs[slot] = _line_aligned_bytes(max(n, 1))
        return buf[:n].view(dtype).reshape(shape)

    @property
    def nbytes(self):
        return sum(b.size for b in self._bufs if b is not None)


def plan_slots(steps, sizes):
    """Slots for the outputs of the steps in ``sizes`` ({step index: bytes of its output at
    the first run}): each output takes the most recently freed slot large enough for it (the
    most recently freed one if none is, growing it), or a new slot; an output is freed after
    the last step reading it or any view of it (the outputs of steps that may pass an input
    on as a view count as reads of that input). Returns ({step index: slot}, slot count)."""
    alias = {}   # value -> the pooled outputs whose memory it may be
    last = {}    # pooled step index -> last step index reading its memory
    for i, st in enumerate(steps):
        for x in st.inputs:
            for j in alias.get(x, ()):
                last[j] = i
        if i in sizes:
            alias[st.outputs[0]] = (i,)
            last[i] = i
        else:
            roots = tuple({j for x in st.inputs for j in alias.get(x, ())})
            for o in st.outputs:
                if roots:
                    alias[o] = roots
    ends = {}
    for j, i in last.items():
        ends.setdefault(i, []).append(j)
    free, cap, slot_of = [], [], {}  # free: slots, most recently freed last
    for i in range(len(steps)):
        if i in sizes:
            need = sizes[i]
            pick = next((k for k in range(len(free) - 1, -1, -1) if cap[free[k]] >= need),
                        len(free) - 1 if free else None)
            if pick is None:
                s = len(cap)
                cap.append(need)
            else:
                s = free.pop(pick)
                cap[s] = max(cap[s], need)
            slot_of[i] = s
        for j in sorted(ends.get(i, ())):
            free.append(slot_of[j])
    return slot_of, len(cap)


class KeptOutput:
    """The kept output arrays of a fresh-output step (steps.Step, layers.WeightedLayer): one
    per output shape, from the session's pool when it gave the step a slot."""

    keeps_output = False
    pool = None       # the session's BufferPool, when the output has a slot in it
    pool_slot = None
    #: a warm run may repeat the last run's call when its inputs are the same arrays
    #: (cleared by the session for steps reading a graph input: a new view every run, which
    #: the repeat would only keep alive)
    memo_ok = True

    def kept_array(self, env, shape, dtype):
        """The C-contiguous array of ``shape`` to write this run's output into, or None for
        a new one (the output is not kept, or too small to keep without a pool)."""
        if not (self.keeps_output and env.get(REUSE)):
            return None
        kept = self.__dict__.setdefault("_kept_arrays", {})
        key = (shape, dtype)
        y = kept.get(key)
        if y is None:
            y = kept[key] = self._new_kept(shape, dtype)
        return y if y is not False else None

    def kept_transposed(self, y, order):
        """``y.transpose(order)`` for a kept array ``y``, the same view object every run: a
        step reading it then sees the last run's array again and may repeat its call."""
        if order is None:
            return y
        views = self.__dict__.setdefault("_kept_views", {})
        got = views.get((id(y), order))
        if got is None or got[0] is not y:  # (y held: its id is not another array's)
            got = views[(id(y), order)] = (y, y.transpose(order))
        return got[1]

    def kept_desc(self, env, desc):
        """As kept_array, for a memory descriptor (its logical view)."""
        phys = self.kept_array(env, tuple(desc.physical_shape), desc.numpy_dtype)
        return None if phys is None else desc.logical_view(phys)

    def _new_kept(self, shape, dtype):
        if self.pool is not None:
            return self.pool.array(self.pool_slot, shape, dtype)
        if _nbytes(shape, dtype) < KEEP_MIN_BYTES:
            return False
        n = _nbytes(shape, dtype)
        return _line_aligned_bytes(n)[:n].view(dtype).reshape(shape)


def _line_aligned_bytes(n):
    """n uninitialised bytes starting on a 64-byte boundary (the kernels store whole lines)."""
    raw = np.empty(n + _LINE, np.uint8)
    off = (-raw.ctypes.data) % _LINE
    return raw[off:off + n]
