"""dnnq.testing: the real oneDNN 3.2, driven through its C API with ctypes, on numpy arrays.

dnnq must be bit-identical to oneDNN's int8 primitives; this module runs the real library
so that tests, the benchmark driver (``dnnq-bench``) and the asv suite can compare the two,
as ``numpy.testing`` does for numpy.  ``import dnnq.testing`` works everywhere; oneDNN is
loaded only when its wheels are installed (``pip install 'dnnq[test]'`` or ``'dnnq[bench]'``:
``onednn-cpu-gomp==2023.2.0`` gives ``<prefix>/lib/libdnnl.so.3``,
``onednn-devel-cpu-gomp==2023.2.0`` ``<prefix>/include/oneapi/dnnl/*.h``; x86-64 Linux).
``ONEDNN_REF_PREFIX``, ``ONEDNN_REF_LIBRARY`` and ``ONEDNN_REF_INCLUDE`` override the search.

Where they are missing, ``available()`` is False, ``SKIP_REASON`` says why, and every
function raises :class:`OnednnUnavailable` with that reason and the install command.
The test markers ``requires_onednn`` / ``requires_vnni`` skip only where no oneDNN wheel
exists (``onednn_expected()`` False: not x86-64 Linux); on x86-64 Linux a missing or
unloadable library fails the tests (tests/conftest.py stops the run before it starts).

Design
------
* ``_enums``: every enum / macro value (data types, format tags, algorithms,
  argument ids such as ``DNNL_ARG_ATTR_SCALES``, status codes) is parsed from
  the installed headers; nothing is guessed.  ``_enums.compile_check`` prints
  the same names from a compiled C program to cross-check the parser.
* ``_capi``: library loading, ctypes prototypes, :class:`OnednnError` (raised
  for every status other than success, with the status name and the C call),
  the lazily created CPU engine and stream, and :class:`Scope`, which owns the
  oneDNN objects and numpy buffers of one operation.
* ``_attr``: runtime scales / zero points (set by mask at creation, passed as
  f32 / s32 memories at execution), post-op chains, and :func:`run`, which
  reorders user arrays into and out of the layouts a primitive picked for
  ``format_tag_any`` descriptors (the sum post-op's ``dst_prev`` included).
* ``_primitives`` / ``_rnn``: one function per primitive, numpy in, numpy out.
  :class:`MatmulHandle` / :class:`InnerProductHandle` keep a primitive with its memories bound;
  ``MatmulHandle.runner()`` returns the call a benchmark times: the execution-argument
  array built once and the C functions resolved once, as a C++ caller runs oneDNN.

Threads follow ``OMP_NUM_THREADS`` (GNU OpenMP build); the ISA cap ``ONEDNN_MAX_CPU_ISA``
must be set before the first primitive is created (oneDNN reads it once).
"""

from __future__ import annotations

try:  # pytest only for the skip markers: the benchmark driver imports this without it
    import pytest
except ImportError:  # pragma: no cover
    pytest = None

import platform
import sys

from ._capi import (INSTALL_HINT, LIB, SKIP_REASON, OnednnError, OnednnUnavailable,
                    arg_multiple_post_op, available, const, cpu_isa, has_vnni)
from ._primitives import (ConvHandle, InnerProductHandle, MatmulHandle, binary, concat,
                          convolution, convolution_dw, deconvolution, eltwise, gemm_s8s8s32,
                          gemm_u8s8s32, inner_product, matmul, pooling, reorder, softmax, sum)
from ._rnn import RnnHandle, gru, int8_support as rnn_int8_support, lstm
from ._rnn_amx_probe import cap_below_faulting_amx



def onednn_expected() -> bool:
    """True where the oneDNN 3.2 wheels exist (x86-64 Linux): there the bridge must load,
    and a test needing it fails (never skips) when it does not."""
    return sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64")


def require() -> None:
    """Raise :class:`OnednnUnavailable` (reason and install command) unless oneDNN loaded."""
    if not available():
        raise OnednnUnavailable(SKIP_REASON)


if pytest is not None:
    #: ``@requires_onednn`` / ``pytestmark = requires_onednn``: skips only where no oneDNN
    #: wheel exists (not x86-64 Linux); on x86-64 Linux the test runs and fails without it.
    requires_onednn = pytest.mark.skipif(not available() and not onednn_expected(),
                                         reason=SKIP_REASON or "oneDNN available")


def __getattr__(name):
    # ``requires_vnni`` is built on first use: asking oneDNN its ISA fixes the ISA for the
    # process, and a test suite may still cap it after importing this module
    # (``cap_below_faulting_amx``).
    if name == "requires_vnni" and pytest is not None:
        #: For tests comparing int8 conv / matmul / ip / gemm results with the exact model:
        #: oneDNN's kernels are exact only with VNNI (``DNNL_MAX_CPU_ISA=AVX2`` or an older
        #: CPU saturates).  A CPU without VNNI skips; a missing oneDNN behaves as
        #: ``requires_onednn``.
        marker = pytest.mark.skipif(
            (not available() and not onednn_expected()) or (available() and not has_vnni()),
            reason=SKIP_REASON or "oneDNN int8 kernels without VNNI saturate in s16")
        globals()["requires_vnni"] = marker
        return marker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def version() -> tuple:
    """``(major, minor, patch)`` of the loaded library."""
    return LIB.version if LIB is not None else ()


def header_values() -> dict:
    """All enum / macro values parsed from the headers (name -> int)."""
    return dict(LIB.values) if LIB is not None else {}


__all__ = ["available", "onednn_expected", "require", "SKIP_REASON", "INSTALL_HINT",
           "OnednnUnavailable", "MatmulHandle", "InnerProductHandle", "ConvHandle", "cpu_isa",
           "has_vnni", "convolution_dw",
           "OnednnError", "const",
           "arg_multiple_post_op", "version", "header_values", "matmul", "reorder",
           "gemm_u8s8s32", "gemm_s8s8s32", "inner_product", "convolution", "deconvolution",
           "pooling", "eltwise", "binary", "sum", "concat", "softmax", "lstm", "gru",
           "RnnHandle", "rnn_int8_support", "cap_below_faulting_amx"]
if pytest is not None:
    __all__ += ["requires_onednn", "requires_vnni"]
