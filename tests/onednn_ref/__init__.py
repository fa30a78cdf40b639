"""Test bridge to the real oneDNN (3.x C API, driven through ctypes).

dnnq must be bit-identical to oneDNN's int8 primitives; this package runs the
real library on plain numpy arrays so tests can compare the two.  It needs the
``onednn-cpu-gomp==2023.2.0`` wheel (``<prefix>/lib/libdnnl.so.3``) and
``onednn-devel-cpu-gomp==2023.2.0`` (``<prefix>/include/oneapi/dnnl/*.h``);
``ONEDNN_REF_PREFIX``, ``ONEDNN_REF_LIBRARY`` and ``ONEDNN_REF_INCLUDE``
override the search.  When they are missing (e.g. not x86-64), ``available()``
is False, ``SKIP_REASON`` says why and ``requires_onednn`` skips tests.

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

Threads follow ``OMP_NUM_THREADS`` (GNU OpenMP build).
"""

from __future__ import annotations

try:  # pytest only for the skip markers: the benchmark driver imports this without it
    import pytest
except ImportError:  # pragma: no cover
    pytest = None

from ._capi import (LIB, SKIP_REASON, OnednnError, arg_multiple_post_op, available, const, cpu_isa,
                    has_vnni)
from ._primitives import (binary, concat, convolution, deconvolution, eltwise, gemm_s8s8s32,
                          gemm_u8s8s32, inner_product, matmul, pooling, reorder, softmax, sum)
from ._rnn import RnnHandle, gru, int8_support as rnn_int8_support, lstm

if pytest is not None:
    #: ``@requires_onednn`` / ``pytestmark = requires_onednn``: skip when oneDNN is absent.
    requires_onednn = pytest.mark.skipif(not available(),
                                         reason=SKIP_REASON or "oneDNN available")

    #: For tests comparing int8 conv / matmul / ip / gemm results with the exact model:
    #: oneDNN's kernels are exact only with VNNI (``DNNL_MAX_CPU_ISA=AVX2`` or an older CPU
    #: saturates).
    requires_vnni = pytest.mark.skipif(not (available() and has_vnni()),
                                       reason="oneDNN int8 kernels without VNNI saturate in s16")


def version() -> tuple:
    """``(major, minor, patch)`` of the loaded library."""
    return LIB.version if LIB is not None else ()


def header_values() -> dict:
    """All enum / macro values parsed from the headers (name -> int)."""
    return dict(LIB.values) if LIB is not None else {}


__all__ = ["available", "SKIP_REASON", "requires_onednn", "requires_vnni", "cpu_isa", "has_vnni",
           "OnednnError", "const",
           "arg_multiple_post_op", "version", "header_values", "matmul", "reorder",
           "gemm_u8s8s32", "gemm_s8s8s32", "inner_product", "convolution", "deconvolution",
           "pooling", "eltwise", "binary", "sum", "concat", "softmax", "lstm", "gru"]

from ._primitives import MatmulHandle  # noqa: E402
