"""dnnq: oneDNN's int8 inference primitives and quantization model for Python.

A primitive is created once from memory descriptors and attributes (validated, kernel chosen,
weights packed) and executed many times on numpy arrays keyed by ``DNNL_ARG_*`` ids.  Integer
results are bit-identical to oneDNN 3.2, on every CPU and thread count.

Primitives
    MatMul, InnerProduct, Convolution, Deconvolution, LSTM, GRU, LBRGRU, VanillaRNN,
    Reorder, Eltwise, Binary, Sum, Concat, Pooling, Softmax
Functions
    gemm_u8s8s32, gemm_s8s8s32, quantize, dequantize, fake_quantize
Describing a problem
    MemoryDesc (with the data types u8, s8, s32, f32 and as_dt), PrimitiveAttr, PostOps,
    append_fake_quantize; masks: scale_count, resolve_mask, DNNL_MASK_*
Argument ids
    DNNL_ARG_* and their algebra (decode, encode, name, from_name, to_onednn_v3, ...)
Errors
    DnnqError, InvalidArguments (a ValueError), Unimplemented (a NotImplementedError)
Execution controls
    set_num_threads, set_max_cpu_isa, set_int8_numerics, set_verbose,
    set_primitive_cache_capacity and their getters; cpu_info, get_effective_cpu_isa
Submodules
    calibrate (scales and zero points from data), eltwise_math (reference formulas),
    args, masks, memory, attr, post_ops, errors, primitives; dnnq.testing (the bridge to the
    real oneDNN, imported on demand)

Examples
--------
>>> import numpy as np, dnnq
>>> mm = dnnq.MatMul(dnnq.MemoryDesc((2, 4), "u8"), dnnq.MemoryDesc((4, 3), "s8"),
...                  dnnq.MemoryDesc((2, 3), "s32"))
>>> mm.execute({dnnq.DNNL_ARG_SRC: np.ones((2, 4), np.uint8),
...             dnnq.DNNL_ARG_WEIGHTS: np.ones((4, 3), np.int8)})
array([[4, 4, 4],
       [4, 4, 4]], dtype=int32)

The documentation (getting started, user guide, examples, API reference) is built from
``docs/`` with ``pip install '.[docs]'`` and ``python -P -m sphinx -W -b html docs
docs/_build/html``.
"""
__version__ = "0.1.0"


def _compiled_kernels_missing(exc):
    """ImportError explaining a dnnq without its compiled kernels (see the caller)."""
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    if all(os.path.exists(os.path.join(root, f)) for f in ("pyproject.toml", "meson.build")):
        return ImportError(
            f"'import dnnq' found the uncompiled sources of a dnnq checkout ({here}) instead "
            "of the installed package: Python puts the current directory (or the script's) "
            "first on sys.path, and the sources have no compiled kernels.  Run from another "
            "directory, or use 'python -P' (Python >= 3.11: no current directory on sys.path), "
            "e.g. 'python -P -m dnnq.bench'; the console script 'dnnq-bench' and 'pytest' work "
            "from the checkout as they are.  Install first if you have not: "
            "pip install '.[test]' (or pip install --no-build-isolation -e . for development)."
            f"  [{type(exc).__name__}: {exc}]")
    return ImportError(
        f"dnnq's compiled kernels (dnnq.primitives._kernels._cpu) do not import from {here}: "
        f"{exc}.  Reinstall dnnq (pip install --force-reinstall dnnq) for this Python and CPU.")


try:  # the compiled part first: without it nothing below can work
    from dnnq.primitives._kernels import _cpu as _compiled
except ImportError as _exc:
    raise _compiled_kernels_missing(_exc) from None
del _compiled

from dnnq.errors import DnnqError, InvalidArguments, Unimplemented
from dnnq.primitives._dispatch import (
    cpu_info, get_effective_cpu_isa, set_max_cpu_isa, set_num_threads, get_num_threads,
    available_isa_levels, ISA_LEVELS, MAX_NUM_THREADS, set_int8_numerics, get_int8_numerics,
)
from dnnq import args
from dnnq.args import *  # noqa: F401,F403  (the DNNL_ARG_* constants)
from dnnq.masks import (
    scale_count, resolve_mask, DNNL_MASK_COMMON, DNNL_MASK_PER_DIM_0, DNNL_MASK_PER_DIM_1,
    DNNL_MASK_PER_DIM_2, DNNL_MASK_PER_DIM_3, DNNL_MASK_PER_DIM_4, DNNL_MASK_PER_DIM_5,
    DNNL_MASK_PER_CHANNEL_NCHW, DNNL_MASK_PER_CHANNEL_TNC, DNNL_MASK_PER_CHANNEL_OIHW,
)
from dnnq.memory import MemoryDesc, u8, s8, s32, f32, as_dt
from dnnq.attr import PrimitiveAttr
from dnnq.post_ops import PostOps
from dnnq.primitives._verbose import set_verbose, get_verbose
from dnnq.primitives._cache import (set_primitive_cache_capacity, get_primitive_cache_capacity,
                         primitive_cache_size)
from dnnq.primitives.matmul import MatMul, InnerProduct
from dnnq.primitives.rnn import LSTM, GRU, LBRGRU, VanillaRNN
from dnnq.primitives.gemm import gemm_u8s8s32, gemm_s8s8s32
from dnnq.primitives.convolution import Convolution, Deconvolution
# --- the int8 toolkit (issue 4): reorder / quantize, element-wise, pooling, softmax, FakeQuantize
from dnnq.primitives.reorder import Reorder, quantize, dequantize
from dnnq.primitives.eltwise import Eltwise
from dnnq.primitives.binary import Binary
from dnnq.primitives.sum import Sum
from dnnq.primitives.concat import Concat
from dnnq.primitives.pooling import Pooling
from dnnq.primitives.softmax import Softmax
from dnnq.primitives.fake_quantize import append_fake_quantize, fake_quantize
from dnnq import calibrate
from dnnq import eltwise_math

# The public API, by role (help(dnnq) and the API reference list these names only).
__all__ = [
    "__version__",
    # --- primitives: created once (validated, kernel chosen, weights packed), executed many times
    "MatMul", "InnerProduct",                              # GEMM-shaped
    "Convolution", "Deconvolution",                        # 1-D / 2-D / 3-D, groups, depthwise
    "LSTM", "GRU", "LBRGRU", "VanillaRNN",                 # recurrent cells
    "Reorder", "Eltwise", "Binary", "Sum", "Concat", "Pooling", "Softmax",   # the toolkit
    # --- functions: one call each
    "gemm_u8s8s32", "gemm_s8s8s32",                        # oneDNN's int8 GEMM API
    "quantize", "dequantize", "fake_quantize",
    # --- describing a problem: memory descriptors and data types, attributes, post-ops
    "MemoryDesc", "as_dt", "u8", "s8", "s32", "f32",
    "PrimitiveAttr", "PostOps", "append_fake_quantize",
    # --- scale / zero-point masks
    "scale_count", "resolve_mask", "DNNL_MASK_COMMON", "DNNL_MASK_PER_DIM_0",
    "DNNL_MASK_PER_DIM_1", "DNNL_MASK_PER_DIM_2", "DNNL_MASK_PER_DIM_3", "DNNL_MASK_PER_DIM_4",
    "DNNL_MASK_PER_DIM_5", "DNNL_MASK_PER_CHANNEL_NCHW", "DNNL_MASK_PER_CHANNEL_TNC",
    "DNNL_MASK_PER_CHANNEL_OIHW",
    # --- execution argument ids: every DNNL_ARG_* of dnnq.args and their algebra
    *args.__all__,
    # --- errors
    "DnnqError", "InvalidArguments", "Unimplemented",
    # --- execution controls: threads, ISA level, int8 numerics mode, verbose, primitive cache
    "set_num_threads", "get_num_threads", "MAX_NUM_THREADS",
    "set_max_cpu_isa", "get_effective_cpu_isa", "available_isa_levels", "ISA_LEVELS",
    "cpu_info", "set_int8_numerics", "get_int8_numerics", "set_verbose", "get_verbose",
    "set_primitive_cache_capacity", "get_primitive_cache_capacity", "primitive_cache_size",
    # --- submodules of the documented API (dnnq.testing is imported on demand: it loads oneDNN)
    "calibrate", "eltwise_math", "args", "masks", "memory", "attr", "post_ops", "errors",
    "primitives",
]
