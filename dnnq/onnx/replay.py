"""A warm run as a list of kernel calls: the session's steps that repeat their last call
(``KeptOutput._repeated``) run as that call alone, without the step's own checks.

A step repeats its call when its inputs are the arrays of the last run.  Once two warm runs
in a row handed out the same arrays, that holds for the next run too, by induction over
the steps: each repeated call writes its kept array again, and the steps that are not calls
(views, shapes, the steps reading the caller's arrays) run as usual and are checked to hand
out the arrays they handed out before.  So ``Replay`` runs each such step's call directly,
sets the outputs of the steps that only hand out views or shape values of the same arrays
(``Step.outputs_follow_inputs``), runs the other steps as usual, and where one of those
hands out another array than before, runs the rest of the steps as usual (their own checks
then decide) and reports it: the session builds a new replay from its next runs.

What this saves is the Python work of each step around its kernel call (about a
microsecond a step: the step's ``run``, its input checks, the environment's look-ups),
which is a fifth of a small model's time (the PP-OCR classifier: 81 steps, 0.5 ms).
"""

import weakref

import numpy as np

#: entry kinds: a step's call alone, a step run as usual, a step's outputs set (views and
#: shape values that follow their inputs: Step.outputs_follow_inputs), a step's copies into
#: its own arrays (Step.follow_call) and its outputs set
_CALL, _STEP, _SET, _COPY_SET = 0, 1, 2, 3


def snapshot(env):
    """What ``Replay.build`` needs of a run's environment: which object each value was,
    without keeping any array alive (a caller's input or output among them)."""
    return {name: weakref.ref(v) if isinstance(v, np.ndarray) else v
            for name, v in env.items()}


def _stable_names(env, previous):
    """The values of ``env`` that are the same objects as in the run before (``previous``,
    a snapshot)."""
    stable = set()
    for name, v in env.items():
        p = previous.get(name, env)
        if (p() if isinstance(p, weakref.ref) else p) is v:
            stable.add(name)
    return stable


class Replay:
    """The steps of a warm run as entries ``(kind, what, name, value, threads)``: a call
    with the name and array it hands out (``_CALL``), a step with the arrays it must hand
    out again (``_STEP``: ``value`` a tuple of (name, array) pairs), or a step whose outputs,
    those pairs, are set without running it (``_SET``), after its copies (``_COPY_SET``:
    ``what`` the copies' call)."""

    __slots__ = ("entries", "per_step")

    def __init__(self, entries, per_step):
        self.entries, self.per_step = entries, per_step

    @classmethod
    def build(cls, steps, env, previous, per_step, feed_names):
        """The replay of the run that left ``env``, given the snapshot of the warm run
        before it (``previous``); ``per_step``: each step's threads, or None."""
        stable = _stable_names(env, previous)
        entries = []
        for i, st in enumerate(steps):
            threads = per_step[i] if per_step else 0
            rep = st._repeat
            if (rep is not None and st.memo_ok and len(st.outputs) == 1 and
                    st.outputs[0] in stable and env.get(st.outputs[0]) is rep[2] and
                    len(rep[0]) == len(st.inputs) and
                    all(n in stable and n not in feed_names and env.get(n) is v
                        for n, v in zip(st.inputs, rep[0]))):
                entries.append((_CALL, rep[1], st.outputs[0], rep[2], threads))
            elif (st.outputs_follow_inputs() and
                  all(n in stable and n not in feed_names for n in st.inputs) and
                  all(o in stable for o in st.outputs)):
                copy = st.follow_call()
                outs = tuple((o, env[o]) for o in st.outputs)
                entries.append((_SET, st, None, outs, threads) if copy is None else
                               (_COPY_SET, copy, None, outs, threads))
            else:
                kept = tuple((o, env[o]) for o in st.outputs if o in stable)
                entries.append((_STEP, st, None, kept, threads))
        return cls(entries, per_step)

    @property
    def calls(self):
        """How many steps run as their call alone."""
        return sum(1 for e in self.entries if e[0] == _CALL)

    def run(self, env, steps, set_threads, threads):
        """Run the model into ``env`` (REUSE set, DNNQ_VERBOSE off); ``threads`` the count
        set now.  True when every step went as recorded; False when a step handed out
        another array than before (the steps after it then ran as usual)."""
        for i, (kind, what, name, value, t) in enumerate(self.entries):
            if t and t != threads:
                set_threads(t)
                threads = t
            if kind == _CALL:
                what()
                env[name] = value
                continue
            if kind == _SET or kind == _COPY_SET:
                if kind == _COPY_SET:
                    what()
                for o, v in value:
                    env[o] = v
                continue
            what.run(env)
            for o, v in value:
                if env.get(o) is not v:
                    self._finish(env, steps, i + 1, set_threads, threads)
                    return False
        return True

    def _finish(self, env, steps, start, set_threads, threads):
        """Steps ``start`` on as usual (entries and steps are index-aligned)."""
        for st, entry in zip(steps[start:], self.entries[start:]):
            t = entry[4]
            if t and t != threads:
                set_threads(t)
                threads = t
            st.run(env)
