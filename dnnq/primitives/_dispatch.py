"""Run-time CPU dispatch: detected ISA level, the DNNQ_MAX_CPU_ISA cap, OpenMP threads.

Levels, lowest to highest: ``default`` (portable C), ``avx2`` (exact vpmaddwd path),
``avx2_vnni`` (VEX vpdpbusd on ymm), ``avx512_core_vnni`` (vpdpbusd on zmm),
``avx512_core_amx`` (AMX-INT8 tiles for the GEMM family, AVX-512 elsewhere; Linux only, where the
process is granted the tile state).  A primitive picks
its kernel once, at creation, from the effective level = min(detected, cap).
"""
import os
import warnings

from dnnq.primitives._kernels import _cpu, _codes
from dnnq.errors import InvalidArguments

ISA_LEVELS = tuple(_codes.ISA)  # ("default", "avx2", "avx2_vnni", "avx512_core_vnni", "avx512_core_amx")
_TOP = len(ISA_LEVELS) - 1

# oneDNN's DNNL_MAX_CPU_ISA names mapped to the dnnq level that does not exceed them.
_ALIASES = {
    "default": 0, "sse41": 0, "avx": 0,
    "avx2": 1, "avx512_core": 1,
    "avx2_vnni": 2, "avx_vnni": 2,
    "avx512_core_vnni": 3, "avx512_core_bf16": 3, "avx512_core_fp16": 3, "avx10_1_512": 3,
    "avx512_core_amx": 4, "avx512_core_amx_fp16": 4, "avx10_1_512_amx": 4,
    "avx10_1_512_amx_fp16": 4, "all": 4,
}

_detected_level = _cpu.best_isa_level()


def _runnable_levels(feat):
    """Which levels this CPU can execute.  The levels are not nested on every CPU: AMD Zen 4
    has AVX512-VNNI but not AVX-VNNI (the VEX form of vpdpbusd), so avx2_vnni is not runnable
    there although a higher level is; capping at it must fall back to avx2, not fault."""
    avx2 = feat["avx2"] and feat["fma"]
    avx512 = all(feat[k] for k in ("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"))
    return (True, avx2, avx2 and feat["avx_vnni"], avx512,
            avx512 and feat["amx_tile"] and feat["amx_int8"])


_features = _cpu.cpu_features()  # cpuid once: the features do not change while running
_runnable = _runnable_levels(_features)


def cpu_has(feature):
    """Whether the CPU has `feature` (a key of cpu_features(), e.g. "avx512_vbmi"): for
    kernels that use an extension beyond their ISA level."""
    return bool(_features.get(feature, False))


def _parse_isa(value, name):
    key = str(value).strip().lower()
    if key not in _ALIASES:
        raise InvalidArguments(
            f"{name}: got {value!r}; expected one of {', '.join(ISA_LEVELS)} "
            "(oneDNN names such as AVX512_CORE_VNNI or ALL are accepted too)")
    return _ALIASES[key]


def _cap_from_env():
    value = os.environ.get("DNNQ_MAX_CPU_ISA")
    if value is None or value.strip() == "":
        return _TOP
    try:
        return _parse_isa(value, "DNNQ_MAX_CPU_ISA")
    except InvalidArguments as e:
        warnings.warn(f"{e}; ignoring the cap", RuntimeWarning, stacklevel=2)
        return _TOP


_cap_level = _cap_from_env()


def cpu_info():
    """The CPU features dnnq detected, and the ISA levels it derived from them.

    Returns
    -------
    dict
        One bool per feature (``"avx2"``, ``"avx512_vnni"``, ``"avx_vnni"``, ``"amx_int8"``,
        ``"avx512_vbmi"``, ``"os_grants_amx"``, ...), plus three level names:
        ``"detected_isa"`` (the best level this CPU runs), ``"max_cpu_isa"`` (the cap,
        ``DNNQ_MAX_CPU_ISA`` or :func:`set_max_cpu_isa`) and ``"effective_isa"`` (what new
        primitives use, :func:`get_effective_cpu_isa`).

    Raises
    ------
    None
        It only reports what was detected at import.

    See Also
    --------
    get_effective_cpu_isa, available_isa_levels

    Examples
    --------
    >>> import dnnq
    >>> info = dnnq.cpu_info()
    >>> info["effective_isa"] in dnnq.ISA_LEVELS
    True
    >>> isinstance(info["avx2"], bool)
    True
    """
    info = dict(_cpu.cpu_features())
    info["detected_isa"] = ISA_LEVELS[_detected_level]
    info["max_cpu_isa"] = ISA_LEVELS[_cap_level]
    info["effective_isa"] = get_effective_cpu_isa()
    return info


def effective_isa_level():
    """Highest level this CPU runs that does not exceed the cap (and, under
    set_int8_numerics("avx2"), not above avx2)."""
    level = min(_detected_level, _cap_level)
    if _int8_numerics != "exact":
        level = min(level, ISA_LEVELS.index("avx2"))
    while not _runnable[level]:
        level -= 1
    return level


def get_effective_cpu_isa():
    """The ISA level new primitives dispatch to.

    It is the highest level this CPU runs that does not exceed the cap (``DNNQ_MAX_CPU_ISA``
    or :func:`set_max_cpu_isa`), and at most ``"avx2"`` while
    ``set_int8_numerics("avx2")`` is in force.  The level changes speed only: default
    results are the same at every level.

    Returns
    -------
    str
        One of :data:`ISA_LEVELS`: ``"default"`` (portable C), ``"avx2"``, ``"avx2_vnni"``,
        ``"avx512_core_vnni"`` or ``"avx512_core_amx"``.

    Raises
    ------
    None

    See Also
    --------
    set_max_cpu_isa, cpu_info

    Examples
    --------
    >>> import dnnq
    >>> dnnq.get_effective_cpu_isa() in dnnq.available_isa_levels()
    True
    """
    return ISA_LEVELS[effective_isa_level()]


def set_max_cpu_isa(isa):
    """Cap the ISA level of primitives created from now on, as ``DNNQ_MAX_CPU_ISA`` does.

    Existing primitives keep the kernel they chose at creation.  The cap changes which
    kernels run, never the default results (they depend on the problem only).

    Parameters
    ----------
    isa : str
        A level of :data:`ISA_LEVELS` (``"default"``, ``"avx2"``, ``"avx2_vnni"``,
        ``"avx512_core_vnni"``, ``"avx512_core_amx"``), or a oneDNN spelling such as
        ``"AVX512_CORE_VNNI"`` or ``"ALL"`` (mapped to the highest dnnq level not above it).

    Returns
    -------
    str
        The previous cap, to restore it later.

    Raises
    ------
    InvalidArguments
        For a name that is neither a dnnq level nor a oneDNN ISA name.

    See Also
    --------
    get_effective_cpu_isa, available_isa_levels

    Examples
    --------
    >>> import dnnq
    >>> previous = dnnq.set_max_cpu_isa("default")      # the portable C kernels
    >>> dnnq.get_effective_cpu_isa()
    'default'
    >>> _ = dnnq.set_max_cpu_isa(previous)
    """
    global _cap_level
    previous = ISA_LEVELS[_cap_level]
    _cap_level = _parse_isa(isa, "isa")
    return previous


# ---- int8 numerics emulation (SPEC section 9) -------------------------------------------------
INT8_NUMERICS = tuple(_codes.NUMERICS)  # ("exact", "avx2")
_int8_numerics = "exact"


class _Int8Numerics:
    """What set_int8_numerics returns: the mode is already set; used as a context manager,
    leaving the block restores the mode that was in force before the call."""

    def __init__(self, mode, previous):
        self.mode, self.previous = mode, previous

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global _int8_numerics
        _int8_numerics = self.previous
        return False

    def __repr__(self):
        return f"set_int8_numerics({self.mode!r})"


def set_int8_numerics(mode):
    """Choose the int8 numerics of primitives created from now on.

    ``"exact"`` (the default): every u8 / s8 product is summed exactly in s32, as oneDNN does
    on a CPU with VNNI or AMX, and the results are the same on every machine.  ``"avx2"``:
    reproduce oneDNN on a CPU without VNNI (``ONEDNN_MAX_CPU_ISA=AVX2``): u8 x s8 products
    are summed in pairs saturated to s16 (``vpmaddubsw``), s8-source convolutions use
    weights halved at packing (``rne(w / 2)``) with the results scaled by 2, and
    ``gemm_s8s8s32`` runs unguarded.  The kernels then run at the avx2 level (or the
    portable one on a CPU without AVX2).  The user guide's numerics page has the details.

    Existing primitives keep the numerics they were created with (and pickle with them).

    Parameters
    ----------
    mode : {"exact", "avx2"}
        The numerics of the primitives created next.

    Returns
    -------
    context manager
        The mode is set at once; used in a ``with`` statement, leaving the block restores
        the mode that was in force before the call.

    Raises
    ------
    InvalidArguments
        For any other mode.

    See Also
    --------
    get_int8_numerics

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> with dnnq.set_int8_numerics("avx2"):      # oneDNN-without-VNNI results
    ...     mm = dnnq.MatMul(dnnq.MemoryDesc((1, 2), "u8"), dnnq.MemoryDesc((2, 1), "s8"),
    ...                      dnnq.MemoryDesc((1, 1), "s32"))
    >>> dnnq.get_int8_numerics()
    'exact'
    >>> x = np.array([[255, 255]], np.uint8); w = np.array([[127], [127]], np.int8)
    >>> mm.execute({dnnq.DNNL_ARG_SRC: x, dnnq.DNNL_ARG_WEIGHTS: w})   # s16 saturation
    array([[32767]], dtype=int32)
    """
    global _int8_numerics
    if not isinstance(mode, str) or mode not in INT8_NUMERICS:
        raise InvalidArguments(f"set_int8_numerics: mode {mode!r}; expected one of "
                               f"{', '.join(map(repr, INT8_NUMERICS))}")
    previous, _int8_numerics = _int8_numerics, mode
    return _Int8Numerics(mode, previous)


def get_int8_numerics():
    """The int8 numerics new primitives get.

    Returns
    -------
    str
        ``"exact"`` (the default) or ``"avx2"`` (see :func:`set_int8_numerics`).

    Raises
    ------
    None

    See Also
    --------
    set_int8_numerics

    Examples
    --------
    >>> import dnnq
    >>> dnnq.get_int8_numerics()
    'exact'
    """
    return _int8_numerics


def kernel_isa_code(isa):
    """The code of ISA level `isa` for the GEMM kernel tables, with the int8 numerics in force
    OR-ed in (dnnq_codes.h, dnnq_numerics_t)."""
    return _codes.ISA[isa] | _codes.NUMERICS[_int8_numerics]


def available_isa_levels():
    """Every ISA level this CPU can run, lowest first.

    The cap (:func:`set_max_cpu_isa`) does not change this list: it is what the CPU and the
    operating system allow.  Levels are not nested on every CPU (AMD Zen 4 runs
    ``avx512_core_vnni`` but not ``avx2_vnni``).

    Returns
    -------
    tuple of str
        Names from :data:`ISA_LEVELS`, always starting with ``"default"``.

    Raises
    ------
    None

    See Also
    --------
    cpu_info, get_effective_cpu_isa

    Examples
    --------
    >>> import dnnq
    >>> dnnq.available_isa_levels()[0]
    'default'
    """
    return tuple(name for i, name in enumerate(ISA_LEVELS)
                 if i <= _detected_level and _runnable[i])


# The thread count is dnnq's own process-wide setting, passed to every parallel region
# explicitly: omp_set_num_threads alone would only affect the calling Python thread.
#: The most threads dnnq will run.  libgomp cannot report a failed thread creation: it ends
#: the process (or crashes) instead, so a team far beyond any CPU (100000 threads) is refused
#: here rather than discovered by the next execute.  The kernels split work statically, so
#: threads beyond the cores only add overhead.
MAX_NUM_THREADS = 1024
# OMP_NUM_THREADS, or the number of cores (clamped: the environment cannot ask for more)
_num_threads = max(1, min(_cpu.get_num_threads(), MAX_NUM_THREADS))


def set_num_threads(n):
    """Set the number of OpenMP threads dnnq's kernels use, for every Python thread.

    The default is ``OMP_NUM_THREADS``, else the number of cores.  Results do not depend on
    the thread count.

    Parameters
    ----------
    n : int
        In [1, :data:`MAX_NUM_THREADS`] (1024).

    Returns
    -------
    None

    Raises
    ------
    InvalidArguments
        For a value that is not an int in that range (bools included).

    See Also
    --------
    get_num_threads

    Examples
    --------
    >>> import dnnq
    >>> before = dnnq.get_num_threads()
    >>> dnnq.set_num_threads(1)
    >>> dnnq.get_num_threads()
    1
    >>> dnnq.set_num_threads(before)
    """
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_NUM_THREADS:
        raise InvalidArguments(f"set_num_threads: got {n!r}; expected an int in [1, "
                               f"{MAX_NUM_THREADS}]")
    _cpu.set_num_threads(n)
    _num_threads = n


def get_num_threads():
    """The number of OpenMP threads dnnq's kernels use.

    Returns
    -------
    int
        In [1, :data:`MAX_NUM_THREADS`].

    Raises
    ------
    None

    See Also
    --------
    set_num_threads

    Examples
    --------
    >>> import dnnq
    >>> dnnq.get_num_threads() >= 1
    True
    """
    return _num_threads
