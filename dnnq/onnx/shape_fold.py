"""Shape arithmetic and views computed once per input shape.

Exporters write the target shapes of Reshape / Expand / Slice as small graphs of Shape,
Gather, Slice, Cast, Concat, Unsqueeze, ... (PP-OCRv4's recognizer has three of seven steps
each). Their values depend only on the shapes of the tensors that the Shape / Size nodes read,
so a run of such steps in the plan becomes one step that looks its outputs up by those shapes
and runs the steps only for a shape it has not seen. Likewise a run of moves of one int8 or
f32 tensor (Reshape / Transpose / Slice / Squeeze: attention's head split) becomes one step
that makes its views from the recorded (shape, strides, offset) of each output.
"""
import numpy as np

from dnnq.onnx.buffers import REUSE, copies_then
from dnnq.onnx.move_steps import NumpyStep, QuantizedMoveStep
from dnnq.onnx.steps import Step

#: numpy ops that are pure functions of their inputs (no randomness, no data-dependent state)
_PURE = {"Shape", "Size", "Cast", "Slice", "Concat", "Gather", "Unsqueeze", "Squeeze",
         "Reshape", "Flatten", "Identity", "Mul", "Add", "Sub", "Div", "Neg", "Abs", "Floor",
         "Ceil", "Min", "Max", "Equal", "Less", "Greater", "Not", "And", "Or", "Where",
         "Range", "ConstantOfShape", "ReduceProd", "ReduceSum", "Expand", "Tile", "Sqrt",
         "Transpose"}
_MAX_SHAPES = 32  # cached shapes per step (a session fed many shapes keeps the latest ones)


class ShapeFoldStep(Step):
    """Consecutive steps computing shape values: their outputs cached per shape of ``roots``
    (the tensors read by the Shape / Size nodes they depend on)."""

    primitive = "shape values (cached)"

    def __init__(self, steps, roots, external):
        outputs = [o for st in steps for o in st.outputs if o]
        super().__init__([n for st in steps for n in st.nodes], list(roots) + list(external),
                         outputs)
        self.steps, self.roots = steps, tuple(roots)
        self.impl_info = "+".join(st.op for st in steps)
        self._cache = {}

    def outputs_follow_inputs(self):
        return True  # (cached per shape of the roots: the same objects for the same arrays)

    def run(self, env):
        key = tuple(env[r].shape for r in self.roots)
        got = self._cache.get(key)
        if got is None:
            for st in self.steps:
                st.run(env)
            got = []
            for o in self.outputs:
                v = np.asarray(env[o])
                if v.flags.writeable:
                    v = v.view()
                    v.flags.writeable = False  # shared by every run of this shape
                got.append(v)
            if len(self._cache) >= _MAX_SHAPES:
                self._cache.clear()
            self._cache[key] = got
        for o, v in zip(self.outputs, got):
            env[o] = v


def fold_shape_steps(steps, consts, graph_outputs):
    """``steps`` with every run of two or more consecutive shape steps as one ShapeFoldStep.
    A shape step: a numpy op of ``_PURE`` that is a Shape / Size, or reads only constants and
    other shape steps' outputs; never one that writes a graph output."""
    roots_of = {}  # shape value -> the tensors whose shapes determine it
    member = []
    for st in steps:
        ok = type(st) is NumpyStep and st.op in _PURE and \
            not any(o in graph_outputs for o in st.outputs)
        roots = set()
        if ok and st.op in ("Shape", "Size"):
            roots.add(st.inputs[0])
        elif ok:
            for x in st.inputs:
                if not x or x in consts:
                    continue
                if x not in roots_of:
                    ok = False
                    break
                roots |= roots_of[x]
        if ok and roots:  # (a step of constants alone is folded at planning already)
            for o in st.outputs:
                if o:
                    roots_of[o] = roots
        member.append(ok and bool(roots))
    steps, member = _hoist(steps, member)

    def extent(i):
        j = i
        while j < len(steps) and member[j]:
            j += 1
        return j

    def fold(run):
        made = {o for st in run for o in st.outputs}
        roots = sorted(set().union(*(roots_of[o] for st in run for o in st.outputs if o)))
        # (constants among the inputs: the session puts only the steps' inputs in a run)
        external = sorted({x for st in run for x in st.inputs
                           if x and x not in made and x not in roots})
        return ShapeFoldStep(run, roots, external)
    return _fold_runs(steps, extent, fold)


def _fold_runs(steps, extent, fold, least=2):
    """``steps`` with each run steps[i:extent(i)] of ``least`` or more steps replaced by
    ``fold(run)``."""
    out, i = [], 0
    while i < len(steps):
        j = extent(i)
        if j - i >= least:
            out.append(fold(steps[i:j]))
            i = j
        else:
            out.append(steps[i])
            i += 1
    return out


def _hoist(steps, member):
    """Each shape step other than Shape / Size moved up to just after the last step whose
    output it reads (its inputs are constants and shape values), so that the shape steps an
    exporter interleaved with other ops form runs."""
    order, flags = [], []
    for st, m in zip(steps, member):
        at = len(order)
        if m and st.op not in ("Shape", "Size"):
            want = set(x for x in st.inputs if x)
            at = 0
            for k in range(len(order) - 1, -1, -1):
                if want.intersection(order[k].outputs):
                    at = k + 1
                    break
            # (past the step that made the input, keep behind the shape steps there)
            while at < len(order) and flags[at]:
                at += 1
        order.insert(at, st)
        flags.insert(at, m)
    return order, flags


#: moves that return a view of their data input when the layout allows it (numpy's
#: reshape copies when it cannot: then the run is not folded for that input layout)
_VIEW_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Slice"}


_RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class ViewFoldStep(Step):
    """Consecutive moves (Reshape / Transpose / Slice / Squeeze / ...) of one tensor:
    the first run of each input layout and parameters runs them and records each output as
    (shape, strides, offset) into the input's memory; later runs make those views directly
    (one step instead of several; attention's head split is nine)."""

    primitive = "int8 views (cached)"

    def __init__(self, steps, root, params):
        outputs = [o for st in steps for o in st.outputs if o]
        super().__init__([n for st in steps for n in st.nodes], [root] + list(params), outputs)
        if any(type(st) is NumpyStep and st.op not in ("Shape", "Size") for st in steps):
            self.primitive = "views (cached)"  # (moves of f32 values)
        self.steps, self.root, self.params = steps, root, tuple(params)
        self.impl_info = "+".join(st.op for st in steps)
        #: the outputs that are Shape / Size values (functions of the shapes: cached, read-only)
        self._shape_values = {o for st in steps if st.op in ("Shape", "Size")
                              for o in st.outputs}
        self._copy_arrays = {}  # output -> the array its copy goes into (a copy no caller holds)
        self._views = {}
        self._last = None  # (input layout, parameter arrays, key) of the last run
        # (input array, parameter arrays, the views made, (view, array) copies) of the last run
        self._made = None

    def outputs_follow_inputs(self):
        # the last run's views and copy arrays again for the same arrays
        return self._made is not None

    def follow_call(self):
        copies = self._made[3] if self._made is not None else ()
        return copies_then([(dst, src) for src, dst in copies]) if copies else None

    def run(self, env):
        x = env[self.root]
        ps = tuple(env[p] for p in self.params)
        made = self._made
        if made is not None and made[0] is x and all(a is b for a, b in zip(ps, made[1])) \
                and (not made[3] or env.get(REUSE)):
            # the same array and read-only parameter arrays as the last run: its views (and
            # its copies again, into the arrays it handed out)
            for src, dst in made[3]:
                np.copyto(dst, src)
            for o, v in zip(self.outputs, made[2]):
                env[o] = v
            return
        head = (x.shape, x.strides, x.dtype.char, x.flags.c_contiguous)
        last = self._last
        if last is not None and last[0] == head and \
                all(a is b for a, b in zip(ps, last[1])):
            key = last[2]  # the same read-only parameter arrays as the last run
        else:
            key = head + tuple(np.asarray(p).tobytes() for p in ps)
            # parameters that cannot change (the cached shape values are read-only, private
            # views) are recognised by identity next time: the bytes of attention's sixteen
            # slice bounds were half the step
            self._last = (head, ps, key) if all(
                isinstance(p, np.ndarray) and not p.flags.writeable for p in ps) else None
        got = self._views.get(key)
        if got is None:
            for st in self.steps:
                st.run(env)
            got = self._views[key] = self._record(env, x)
            if len(self._views) > 32:
                self._views.clear()
            return
        if got is False:  # not recordable (a copy in the chain, or x not contiguous)
            roots, copies = self._run_stable(env, x)
            # the moves' outputs again for the same array when all of them are views of it
            # or of the step's own copies (a channels-last x: its moves are views, not
            # recordable from x's buffer; a transposed tensor's reshape, then moves of it)
            outs = [env[o] for o in self.outputs]
            self._made = (x, ps, outs, copies) if self.memo_ok and self._last is not None \
                and all(isinstance(v, np.ndarray) and
                        (not v.flags.writeable or any(np.may_share_memory(v, r)
                                                      for r in roots)) for v in outs) \
                else None
            return
        views = [np.ndarray(shape, x.dtype, x, off, strides) if strides is not None
                 else shape  # (a Shape / Size value, read-only)
                 for shape, strides, off, _ in got]
        copies, stable = [], True
        for k, (_, _, _, copy_shape) in enumerate(got):
            if copy_shape is not None:  # a reshape that copies: the view into its array
                src = views[k]
                views[k], dst, kept = self._copy_out(env, k, src, copy_shape)
                copies.append((src, dst))
                stable = stable and kept
        # kept for the next run of the same array and parameters (read-only ones, so that
        # identity means the same values): the same view objects then, so the steps reading
        # them may repeat their last calls (Step._repeated); copies are made again each run,
        # into the same arrays where they are the step's own
        self._made = (x, ps, views, copies) if self.memo_ok and self._last is not None and \
            stable else None
        for o, v in zip(self.outputs, views):
            env[o] = v

    def _copy_out(self, env, k, view, shape):
        """The C-order copy of ``view`` as an array of ``shape`` (what Reshape of a
        non-contiguous view gives): (the array, its view of ``view``'s shape, whether it is
        the step's own).  Into the array handed out last run when no caller can hold it
        (``outputs_private``), so that the steps reading it see the same array every run,
        else into a new one."""
        own = bool(self.outputs_private and env.get(REUSE))
        out = self._own_array(self.outputs[k], shape, view.dtype) if own else \
            np.empty(shape, view.dtype)
        dst = out.reshape(view.shape)
        np.copyto(dst, view)
        return out, dst, own

    def _own_array(self, o, shape, dtype):
        """The C-contiguous array output ``o``'s copy goes into, the same every run (made
        anew when the shape or dtype changes)."""
        a = self._copy_arrays.get(o)
        if a is None or a.shape != shape or a.dtype != dtype:
            a = self._copy_arrays[o] = np.empty(shape, dtype)
        return a

    def aliased_inputs(self, output):
        if output in self._shape_values:  # a shape, read-only and cached
            return ()
        return [self.root]  # the moves' views (the parameters are shapes and bounds)

    def _run_stable(self, env, x):
        """The moves one by one, each output that is a copy (a reshape of a transposed
        tensor) copied into the array handed out last run before the moves after it read it,
        where no caller can hold it (``outputs_private``): the steps reading the outputs see
        the same arrays every run and may repeat their calls (Step._repeated; attention's
        head merge before its output projection).  Returns (x and those arrays, the (source,
        array) copies in order)."""
        own = bool(self.outputs_private and env.get(REUSE))
        roots, copies = [x], []
        for st in self.steps:
            st.run(env)
            if not own or st.op not in _RESHAPES:
                continue
            src, o = env.get(st.inputs[0]), st.outputs[0]
            v = env.get(o)
            if not isinstance(v, np.ndarray) or not isinstance(src, np.ndarray) or \
                    not v.flags.writeable or not v.flags.c_contiguous or v.size == 0 or \
                    any(np.may_share_memory(v, r) for r in roots) or \
                    not any(np.may_share_memory(src, r) for r in roots):
                continue
            k = self._own_array(o, v.shape, v.dtype)
            np.copyto(k, v)
            env[o] = k
            copies.append((src, k.reshape(src.shape)))
            roots.append(k)
        return roots, tuple(copies)

    def _record(self, env, x):
        """(shape, strides, byte offset from x's start, None) per output -- or, for the
        output of a Reshape / Flatten / Squeeze / Unsqueeze that copied a view of x (a
        transposed tensor's reshape: attention's head merge), that view's (shape, strides,
        offset) and the output's shape -- or False."""
        if not x.flags.c_contiguous or x.size == 0:
            return False
        base = x.__array_interface__["data"][0]
        end = base + x.nbytes
        r = _root(x)

        def of_x(v):  # (shape, strides, offset) of a view of x, or None
            if not isinstance(v, np.ndarray) or v.dtype != x.dtype or _root(v) is not r:
                return None
            p = v.__array_interface__["data"][0]
            if v.size and not base <= p < end:
                return None
            return v.shape, v.strides, p - base
        made_by = {o: st for st in self.steps for o in st.outputs if o}
        out = []
        for o in self.outputs:
            v = env[o]
            if o in self._shape_values:  # a function of the shapes, which the key holds
                v = np.array(v)
                v.flags.writeable = False
                out.append((v, None, None, None))
                continue
            got = of_x(v)
            if got is not None:
                out.append(got + (None,))
                continue
            st = made_by[o]
            src = of_x(env.get(st.inputs[0])) if st.op in _RESHAPES else None
            if src is None or not isinstance(v, np.ndarray) or v.size != int(np.prod(src[0])):
                return False
            out.append(src + (v.shape,))
        return out


def fold_view_steps(steps):
    """``steps`` with each run of consecutive view moves (int8 or f32) that all descend from
    one tensor, and Shape / Size steps of them, as one ViewFoldStep -- a run of one too: its
    outputs are then the same objects every run for the same input array, so a warm run's
    replay sets them without running the step, and the steps reading them repeat their
    calls (replay.py; PP-OCRv4 rec's f32 attention in a conv-only QDQ file: 40 view and
    shape steps)."""
    def extent(i):
        j, made, root = i, set(), None
        while j < len(steps):
            st = steps[j]
            shape_of = type(st) is NumpyStep and st.op in ("Shape", "Size") and \
                (root is None or st.inputs[0] in made or st.inputs[0] == root)
            if not shape_of and (type(st) not in (QuantizedMoveStep, NumpyStep) or
                                 st.op not in _VIEW_OPS):
                break
            src = st.inputs[0]
            if src not in made:
                if root is not None and src != root:
                    break
                root = src
            made.update(o for o in st.outputs if o)
            j += 1
        return j

    def fold(run):
        root = run[0].inputs[0]  # (the first step reads the root: extent's first source)
        made = {o for st in run for o in st.outputs if o}
        params = sorted({x for st in run for x in st.inputs[1:]
                         if x and x not in made and x != root})
        return ViewFoldStep(run, root, params)
    return _fold_runs(steps, extent, fold, least=1)
