"""The driver's problem kinds: how `--matmul`, `--ip`, `--conv`, ... plug into `dnnq-bench`.

Everything the command line accepts comes from the tables of this module and of
:mod:`dnnq.bench.cli` (the run options): the parser reads them to take an option and check its
value, and ``--help`` is printed from them, so the two cannot disagree (tests/test_bench_help.py
compares them).  A kind is registered once, at import of its module, with :func:`register`::

    from dnnq.bench.registry import Case, Setting, choice, register, register_set

    register("conv",                          # selected on the command line by --conv
             syntax="gXmbX_icXihXiwX_ocXohXowX_khXkwX_shXswX_phXpwX_dhXdwX",
             example="mb1ic64ih56oc64oh56kh3ph1",
             parse=parse_conv,                # descriptor str -> problem (any object)
             create=create_conv,              # (problem, settings, env) -> Case
             settings={"dt": "u8:s8:u8",      # a shared setting (SHARED below): its default
                       "tag": Setting("nhwc", "nhwc|nchw", "data layout",
                                      check=choice("nhwc", "nchw"))},   # the kind's own
             summary="u8 src, s8 weights, s8 dst, ...",   # printed in the header and --help
             run=None, check=None)            # optional; the defaults below fit most kinds
    register_set("conv", "resnet50", RESNET50, "ResNet-50 v1 layers")   # `--conv resnet50`

The driver imports every module listed in ``KIND_MODULES`` (a module that does not exist yet is
skipped), so a new kind is one new file, ``dnnq/bench/<kind>.py``, plus its name in that list.

* ``parse(desc)`` validates a benchdnn descriptor (``"mb2ic16ih7oc32kh3"``) and returns the
  problem; it raises ``ValueError`` / ``dnnq.DnnqError`` naming what is wrong.  Every descriptor
  of the command line is parsed before anything runs: a bad one is a usage error (exit 2).
* ``settings``: the kind's benchdnn settings (``--dt=...``, ``--attr-post-ops=...``, ...), name
  -> default value (a setting of :data:`SHARED`: its syntax, help and check come from there) or
  a :class:`Setting` (the kind's own).  ``--mode`` (:data:`COMMON`) applies to every kind.  A
  setting the current kind does not declare is a usage error, and so is a value its ``check``
  refuses.  ``create`` gets a dict of all of them (defaults overridden by the command line).
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

Timing rule (docs/engine.md): dnnq is timed through its public ``execute``; a oneDNN peer as a
C++ caller runs it (``dnnq.testing.MatmulHandle.runner()``: argument array built once, only
``dnnl_primitive_execute`` + ``dnnl_stream_wait`` in the loop).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

#: modules that register kinds, imported by the driver in this order (missing ones skipped)
KIND_MODULES = ("dnnq.bench.matmul", "dnnq.bench.conv", "dnnq.bench.rnn", "dnnq.bench.onnx")

#: peer columns, in table order ("numpy": its f32 matmul, OpenBLAS, for f32 layers)
PEERS = ("oneDNN", "torch", "numpy")


class Unchecked(Exception):
    """Raised by a check that has nothing to compare with (the message says why)."""


# ---- settings -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """One ``--NAME=VALUE`` option: its default, the syntax of its values as ``--help`` shows
    it (``None``: a flag that takes no value), one line of help, and ``check(value)``, which
    raises ``ValueError`` / ``dnnq.DnnqError`` naming what is wrong with a value (the parser
    calls it before anything runs; ``None``: any value)."""
    default: Any = None
    values: str | None = "VALUE"
    help: str = ""
    check: Callable[[str], Any] | None = None


def choice(*names, case=False):
    """A ``check`` accepting one of ``names`` (case-insensitive unless ``case``)."""
    def check(value):
        if (value if case else value.upper()) not in [n if case else n.upper() for n in names]:
            raise ValueError(f"got {value!r}; expected {', '.join(names[:-1])} or {names[-1]}"
                             if len(names) > 1 else f"got {value!r}; expected {names[0]}")
    check.names = names
    return check


def _check_dt(value):
    from dnnq.memory import DATA_TYPES
    parts = value.split(":")
    if len(parts) not in (1, 3) or any(p not in DATA_TYPES for p in parts):
        raise ValueError(f"got {value!r}; expected SRC:WEI:DST or one data type for all three, "
                         f"each one of {', '.join(DATA_TYPES)}")


def split_dt(value):
    """``"u8:s8:f32"`` -> ``("u8", "s8", "f32")``; one data type stands for all three."""
    parts = value.split(":")
    return tuple(parts * 3) if len(parts) == 1 else tuple(parts)


def _check_scales(value):
    from dnnq.bench.problems import parse_quant
    parse_quant(value, "scales")


def _check_zero_points(value):
    from dnnq.bench.problems import parse_quant
    parse_quant(value, "zero-points")


def _check_post_ops(value):
    from dnnq.bench.problems import parse_post_ops
    parse_post_ops(value)


#: the setting every kind takes
COMMON = {
    "mode": Setting("P", "P|C", "P: time dnnq and its peers; C: check dnnq bit for bit against "
                    "oneDNN (no timing)", choice("P", "C")),
}

#: settings several kinds share: a kind names them in ``register(settings={name: default})``
SHARED = {
    "dt": Setting(None, "SRC:WEI:DST", "data types of source, weights and destination (one "
                  "type: all three): u8 / s8 sources with s8 weights, or f32:f32:f32, "
                  "f32:f32:u8, f32:f32:s8 (an f32 layer)", _check_dt),
    "bia-dt": Setting(None, "f32|undef", "bias data type (undef: no bias)",
                      choice("f32", "undef", case=True)),
    "attr-scales": Setting(None, "ARG:MASK[:VALUE][+...]",
                           "ARG src|wei|dst, MASK common|per_oc|per_dim_N|INT; a non-common "
                           "mask gets random values; '' for none", _check_scales),
    "attr-zero-points": Setting(None, "ARG:MASK[:VALUE][+...]",
                                "as --attr-scales, integer values; '' for none",
                                _check_zero_points),
    "attr-post-ops": Setting(None, "OP[:ARGS][+...]",
                             "in execution order: sum[:SCALE[:ZP]], ELTWISE[:ALPHA[:BETA]] "
                             "(relu, linear, clip, tanh, ...), BINARY:DT[:MASK] (add, mul, max, "
                             "...; MASK common|per_oc|per_tensor); '' for none", _check_post_ops),
}


# ---- kinds and their built-in sets ------------------------------------------------------------

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
    destination a sum post-op reads, in dnnq's and the reference's buffers); ``notes``:
    printed at the end of the row (peer implementation names, ...); ``close``: releases peer
    resources."""
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
class ProblemSet:
    """A built-in set: a bare ``name`` on the command line stands for its descriptors;
    ``name:mbN`` for the same at batch N when they have a batch (``mb``)."""
    name: str
    descriptors: list
    help: str = ""

    @property
    def batched(self):
        return all(re.search(r"mb\d+", d) for d in self.descriptors)


@dataclass
class Kind:
    name: str
    parse: Callable
    create: Callable
    settings: dict               # name -> Setting (default filled in)
    summary: str = ""
    run: Callable | None = None
    check: Callable | None = None
    syntax: str = ""
    example: str = ""
    sets: dict = field(default_factory=dict)   # name -> ProblemSet

    @property
    def defaults(self):
        """Every setting of the kind (``--mode`` too) -> its default."""
        return {n: s.default for n, s in dict(COMMON, **self.settings).items()}

    def setting(self, name):
        """The kind's :class:`Setting` of ``name`` (``COMMON`` included), or None."""
        return self.settings.get(name) or COMMON.get(name)


_KINDS: dict[str, Kind] = {}


def _as_setting(name, spec):
    if isinstance(spec, Setting):
        return spec
    return replace(SHARED.get(name, Setting()), default=spec)


def register(name, *, parse, create, settings, summary="", run=None, check=None, syntax="",
             example=""):
    """Register (or replace) the problem kind ``--<name>``; see the module docstring."""
    old = _KINDS.get(name)
    _KINDS[name] = Kind(name, parse, create,
                        {n: _as_setting(n, s) for n, s in settings.items()}, summary,
                        run or default_run, check or default_check, syntax, example,
                        old.sets if old is not None else {})
    return _KINDS[name]


def register_set(kind, name, descriptors, help=""):
    """``--<kind> name`` (and ``name:mbN``, the same with batch N) expands to
    ``descriptors``.  Register the kind first."""
    _KINDS[kind].sets[name] = ProblemSet(name, list(descriptors), help)


def expand_set(kind, token):
    """The descriptors the built-in set ``token`` (``name`` or ``name:mbN``) of ``kind``
    stands for, or None when ``token`` names no set of ``kind``.  Raises ValueError for a
    set name with a bad suffix."""
    name, colon, suffix = token.partition(":")
    s = _KINDS[kind].sets.get(name)
    if s is None:
        return None
    if not colon:
        return list(s.descriptors)
    if not s.batched:
        raise ValueError(f"set {name!r} of --{kind} has no batch (mbN) to change; "
                         f"got {token!r}; expected {name}")
    if not re.fullmatch(r"mb[1-9]\d*", suffix):
        raise ValueError(f"got {token!r}; expected {name} or {name}:mbN (N >= 1, the batch)")
    return [re.sub(r"mb\d+", suffix, d, count=1) for d in s.descriptors]


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


# ---- running and checking ---------------------------------------------------------------------

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
