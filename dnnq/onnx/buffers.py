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

from dnnq.primitives import _verbose
from dnnq.primitives._plan import aligned_empty

#: the env key a run sets when its steps may write into the arrays of the session's previous
#: run (session.py: not in a run overlapping another run of the same session)
REUSE = "::reuse buffers"
#: without a pool, outputs below this size are left to the allocator: its free lists hand
#: back memory still in cache, where one array per step spreads a small model over more cache
#: lines; above it, a fresh array is mapped anew and every page faults on first write
KEEP_MIN_BYTES = 1 << 18


def _nbytes(shape, dtype):
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= d
    return n


def copies_then(pairs, then=None):
    """A call that copies each ``(dst, src)`` of ``pairs`` in order, then calls ``then``: the
    repeat of a step whose call reads staged or own copies of its sources."""
    copyto = np.copyto

    def call():
        for dst, src in pairs:
            copyto(dst, src)
        if then is not None:
            then()
    return call


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
            buf = self._bufs[slot] = aligned_empty(max(n, 1), np.uint8)
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
    per output shape, from the session's pool when it gave the step a slot; and the repeat
    of the last run's call on warm runs (``_repeated`` / ``_remember``)."""

    keeps_output = False
    pool = None       # the session's BufferPool, when the output has a slot in it
    pool_slot = None
    #: a warm run may repeat the last run's call when its inputs are the same arrays
    #: (cleared by the session for steps reading a graph input: a new view every run, which
    #: the repeat would only keep alive)
    memo_ok = True
    _repeat = None  # (input arrays, the kernel call, output) of the last run: _remember

    def outputs_follow_inputs(self):
        """True when a run whose inputs are the last run's objects only hands out the last
        run's output objects again, doing nothing else (no kernel, no copy): a replay then
        sets those outputs without running the step (replay.py)."""
        return False

    def follow_call(self):
        """With ``outputs_follow_inputs``: the copies such a run makes into the step's own
        output arrays (a reshape of a transposed view), as a call; None when it makes none."""
        return None

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

    def out_array(self, env, shape, dtype):
        """(the array to write this run's output into, whether it is the kept one): the
        kept array, or a new one."""
        y = self.kept_array(env, shape, dtype)
        return (y, True) if y is not None else (np.empty(shape, dtype), False)

    def transposed(self, y, order, kept):
        """``y.transpose(order)`` (``y`` itself for None); for a kept ``y`` the same view
        object every run: a step reading it then sees the last run's array again and may
        repeat its call."""
        if order is None:
            return y
        if not kept:
            return y.transpose(order)
        return self.kept_view(y, order, lambda a: a.transpose(order))

    def kept_view(self, y, how, make):
        """``make(y)``, a view of the kept array ``y`` described by the hashable ``how``: the
        same view object every run, so that the steps reading it see the last run's array
        again and may repeat their calls (a new view each run made every step after it take
        its checked path)."""
        views = self.__dict__.setdefault("_kept_views", {})
        got = views.get((id(y), how))
        if got is None or got[0] is not y:  # (y held: its id is not another array's)
            got = views[(id(y), how)] = (y, make(y))
        return got[1]

    def kept_desc(self, env, desc):
        """As kept_array, for a memory descriptor (its logical view: the same object every
        run)."""
        phys = self.kept_array(env, tuple(desc.physical_shape), desc.numpy_dtype)
        return None if phys is None else self.kept_view(phys, desc, desc.logical_view)

    def _new_kept(self, shape, dtype):
        if self.pool is not None:
            return self.pool.array(self.pool_slot, shape, dtype)
        if _nbytes(shape, dtype) < KEEP_MIN_BYTES:
            return False
        return aligned_empty(int(np.prod(shape)), dtype).reshape(shape)

    def staged_copy(self, env, key, x, shape, make):
        """``make()``, a C-order copy of ``x``'s values as an array of ``shape`` (a transposed
        source folded into rows), and None -- or, in a run that may reuse arrays, that copy
        in this ``key``'s staging array, the same array every run, and the (array, view of
        ``x``) pair whose copy a repeat of the call makes first.  (``make()``'s result
        itself where it is a view of ``x``: nothing to stage.)"""
        reuse = self.keeps_output and env.get(REUSE)
        staging = self.__dict__.setdefault("_staging", {})
        buf = staging.get(key) if reuse else None
        if buf is not None and buf.shape == shape:
            view = x.reshape(shape)
            np.copyto(buf, view)  # (x.reshape made a view when buf was made: same layout)
            return buf, (buf, view)
        y = make()
        if not reuse or y.size == 0 or np.may_share_memory(y, x):
            return y, None
        view = x.reshape(shape)
        if not np.may_share_memory(view, x):
            return y, None
        staging[key] = y
        return y, (y, view)

    def _repeated(self, env):
        """Whether this run was the last run's kernel call again: its inputs are the same
        arrays (the session's shared buffers are the same every run), so the views and
        arguments prepared then read this run's values; only their checks are skipped.
        Not with DNNQ_VERBOSE on (primitives log in their execute and runners)."""
        rep = self._repeat
        if rep is None or not env.get(REUSE) or _verbose._level:
            return False
        for n, v in zip(self.inputs, rep[0]):
            if env.get(n) is not v:
                return False
        rep[1]()
        env[self.outputs[0]] = rep[2]
        return True

    def _remember(self, env, call, kept, views=()):
        """Let the next run repeat ``call`` (this run's kernel call, with its prepared
        arguments; None: nothing to repeat) when the output is the kept array (``kept``)
        and every prepared view reads its array in place (``views``: (view, array) pairs;
        a copy would hold this run's values)."""
        ok = call is not None and kept and self.memo_ok and \
            all(np.may_share_memory(v, a) for v, a in views)
        self._repeat = (tuple(env.get(n) for n in self.inputs), call,
                        env[self.outputs[0]]) if ok else None
