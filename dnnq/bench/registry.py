"""The driver's problem kinds: how `--matmul`, `--ip`, `--conv`, ... plug into `dnnq-bench`.

A kind is registered once, at import of its module, with :func:`register`::

    from dnnq.bench.registry import Case, register

    register("conv",                          # selected on the command line by --conv
             parse=parse_conv,                # descriptor str -> problem (any object)
             create=create_conv,              # (problem, settings, env) -> Case
             settings={"dt": "u8:s8:s8", "attr-scales": "...", "alg": "direct"},
             summary="u8 src, s8 weights, s8 dst, ...",   # printed in the header
             run=None, check=None)            # optional; the defaults below fit most kinds

The driver imports every module listed in ``KIND_MODULES`` (a module that does not exist yet is
skipped), so a new kind is one new file, ``dnnq/bench/<kind>.py``, plus its name in that list.

* ``parse(desc)`` validates a benchdnn descriptor (``"mb2ic16ih7oc32kh3"``) and returns the
  problem; it raises ``ValueError`` / ``dnnq.DnnqError`` naming what is wrong.  Every descriptor
  of the command line is parsed before anything runs: a bad one is a usage error (exit 2).
* ``settings``: the kind's benchdnn settings (``--dt=...``, ``--attr-post-ops=...``, ...)
  with their defaults.  ``--mode`` is common to every kind.  The driver passes ``create`` a
  dict of all of them (defaults overridden by the command line) and rejects, as a usage
  error, a setting the current kind does not declare.
* ``create(problem, settings, env)`` builds everything once (dnnq primitive, packed weights,
  arrays, the peers' handles) and returns a :class:`Case`.  ``env`` is an :class:`Env`:
  ``env.rng`` (numpy Generator), ``env.onednn`` (the :mod:`dnnq.testing` module, or ``None``
  with ``env.onednn_absent`` saying why), ``env.threads``, ``env.use_torch``.
* ``run(case, min_time)`` -> ``{column: seconds or reason str}`` for ``"dnnq"`` and every
  peer; the default times ``case.dnnq`` and each callable of ``case.peers`` in interleaved
  rounds of :func:`dnnq.bench.timing.best_time` (a ``str`` in ``case.peers`` is passed
  through: it is why that peer has no time, e.g. ``"not installed"``, ``"refused"``).
* ``check(case)`` -> ``(n_equal, n_total, note)``: compares ``case.dnnq()`` with
  ``case.reference()`` bit for bit (floats by their bits), or for an f32 layer within
  ``case.tolerance()`` (an int8 dst within 1); raises :class:`Unchecked` with the reason
  when there is no reference.  Used by ``--mode=C``; in ``--mode=P`` it runs once
  after timing when ``case.reference`` is given.

Timing rule (docs/STATUS.md): dnnq is timed through its public ``execute``; a oneDNN peer as a
C++ caller runs it (``dnnq.testing.MatmulHandle.runner()``: argument array built once, only
``dnnl_primitive_execute`` + ``dnnl_stream_wait`` in the loop).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

#: modules that register kinds, imported by the driver in this order (missing ones skipped)
KIND_MODULES = ("dnnq.bench.matmul", "dnnq.bench.conv", "dnnq.bench.rnn")

#: peer columns, in table order ("numpy": its f32 matmul, OpenBLAS, for f32 layers)
PEERS = ("oneDNN", "torch", "numpy")


class Unchecked(Exception):
    """Raised by a check that has nothing to compare with (the message says why)."""


@dataclass
class Env:
    """What ``create`` gets besides the problem and its settings."""
    rng: np.random.Generator
    onednn: Any = None           # dnnq.testing when oneDNN loaded, else None
    onednn_absent: str = ""      # why not ("not installed", "--no-peers", ...)
    threads: int = 1
    use_torch: bool = True


@dataclass
class Case:
    """One problem, built and ready to run.

    ``dnnq``: no-argument callable running dnnq once through its public ``execute`` and
    returning the output; ``ops``: operations per execution (GOPS = ops / time);
    ``kernel``: dnnq's implementation (``impl_info``); ``peers``: column name (``"oneDNN"``,
    ``"torch"``, ``"numpy"``) -> timed callable, or a short reason why that peer has no time
    (a peer the kind does not name shows a blank column);
    ``reference``: callable returning oneDNN's output for the check (``None`` or a reason
    str when there is none); ``before_check``: called before a check (e.g. refills the
    destination a sum post-op reads, in dnnq's and the reference's buffers); ``notes``: printed at the end of the row (peer implementation
    names, ...); ``close``: releases peer resources."""
    kernel: str
    ops: float
    dnnq: Callable[[], Any]
    peers: dict = field(default_factory=dict)
    reference: Callable[[], Any] | str | None = None
    before_check: Callable[[], None] | None = None
    notes: list = field(default_factory=list)
    close: Callable[[], None] | None = None
    #: f32 layers: a no-argument callable giving the largest |difference| from the reference
    #: allowed per element (oneDNN sums the products in its own order: docs/f32_layers.md);
    #: an int8 dst is then allowed 1 (a rounding tie moved by an ulp)
    tolerance: Callable[[], Any] | None = None


@dataclass
class Kind:
    name: str
    parse: Callable
    create: Callable
    settings: dict
    summary: str = ""
    run: Callable | None = None
    check: Callable | None = None


_KINDS: dict[str, Kind] = {}

#: built-in problem sets: a bare name on the command line stands for its descriptors
#: (e.g. ``--conv resnet50``; registered by the kind modules with :func:`register_set`)
SETS: dict[str, list] = {}


def register_set(name, descriptors):
    """``name`` (and ``name:mbN``, the same with batch N) expands to ``descriptors``."""
    SETS[name] = list(descriptors)


def expand_set(token):
    """The descriptors a built-in set name stands for, or None."""
    import re
    name, _, mb = token.partition(":")
    if name not in SETS or (mb and not re.fullmatch(r"mb\d+", mb)):
        return None
    descs = SETS[name]
    return [re.sub(r"mb\d+", mb, d, count=1) for d in descs] if mb else list(descs)


def register(name, *, parse, create, settings, summary="", run=None, check=None):
    """Register (or replace) the problem kind ``--<name>``; see the module docstring."""
    _KINDS[name] = Kind(name, parse, create, dict(settings), summary, run or default_run,
                        check or default_check)
    return _KINDS[name]


def kinds() -> dict:
    """Registered kinds by name (after the driver imported ``KIND_MODULES``)."""
    return dict(_KINDS)


def load_kinds() -> dict:
    """Import every module of ``KIND_MODULES`` that exists; return :func:`kinds`."""
    import importlib
    for mod in KIND_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:  # the module exists but something it imports does not
                raise
    return kinds()


#: Seconds to wait before each implementation's batches: the OpenMP runtimes in the process
#: (dnnq's, PyTorch's own libgomp, ...) keep their worker threads spinning for some
#: milliseconds after a parallel region, and at 2 threads on 2 cores those threads took the
#: cores from the next implementation (MobileNet dw8 / dw9 at 2 threads: dnnq 7.8 / 12.5 us
#: and oneDNN 11.3 / 18.1 us with PyTorch's threads spinning, 5.3 / 8.7 and 8.1 / 13.5
#: without them).
SETTLE_S = 0.02


def default_run(case: Case, min_time: float, rounds: int = 3) -> dict:
    """Seconds per execution of dnnq and of each peer: ``rounds`` interleaved rounds (dnnq,
    then each peer), each :func:`best_time` over ``min_time / rounds`` after a pause of
    SETTLE_S (the previous one's threads go idle); the minimum per column.  Interleaving
    lets a busy machine slow every column alike."""
    import time
    from dnnq.bench.timing import best_time
    timed = {"dnnq": case.dnnq}
    out = {}
    for peer in PEERS:
        fn = case.peers.get(peer, "")  # "": the kind has no such peer (a blank column)
        if isinstance(fn, str):
            out[peer] = fn
        else:
            timed[peer] = fn
    best = {name: float("inf") for name in timed}
    for _ in range(rounds):
        for name, fn in timed.items():
            if len(timed) > 1:
                time.sleep(SETTLE_S)
            best[name] = min(best[name], best_time(fn, min_time / rounds))
    out.update(best)
    return out


def _bits(a):
    a = np.asarray(a)
    return a.view(np.int32) if a.dtype == np.float32 else a


def default_check(case: Case):
    ref = case.reference
    if ref is None or isinstance(ref, str):
        raise Unchecked(ref or "no reference")
    if case.before_check is not None:
        case.before_check()
    out = np.asarray(case.dnnq())
    try:
        want = np.asarray(ref())
    except Exception as exc:  # oneDNN refuses the configuration
        raise Unchecked(f"oneDNN refused: {exc}") from None
    if out.shape != want.shape or out.dtype != want.dtype:
        return 0, out.size, f"oneDNN gives {want.dtype}{want.shape}, dnnq {out.dtype}{out.shape}"
    same = _bits(out) == _bits(want)
    equal = int(np.count_nonzero(same))
    if case.tolerance is None or equal == out.size:
        return equal, out.size, ""
    if out.dtype == np.float32:
        ok = same | (np.abs(out.astype(np.float64) - want) <= np.asarray(case.tolerance())) | \
            (np.isnan(out) & np.isnan(want))
        within = "the bound of two f32 sums of the products"
    else:
        ok = np.abs(out.astype(np.int64) - want.astype(np.int64)) <= 1
        within = "1"
    return int(np.count_nonzero(ok)), out.size, \
        f"f32 layer: {equal} bit-identical, the others within {within}"
