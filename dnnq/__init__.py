"""dnnq: oneDNN's int8 inference primitives and quantization model for Python.

Quick reference: dnnq.MemoryDesc, dnnq.PrimitiveAttr, dnnq.PostOps, the DNNL_ARG_* ids
(also in dnnq.args), masks (dnnq.scale_count, DNNL_MASK_*), primitives (dnnq.MatMul,
dnnq.InnerProduct, ...), dispatch (dnnq.get_effective_cpu_isa, dnnq.cpu_info).
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
        f"dnnq's compiled kernels (dnnq._kernels._cpu) do not import from {here}: {exc}.  "
        "Reinstall dnnq (pip install --force-reinstall dnnq) for this Python and CPU.")


try:  # the compiled part first: without it nothing below can work
    from dnnq._kernels import _cpu as _compiled
except ImportError as _exc:
    raise _compiled_kernels_missing(_exc) from None
del _compiled

from dnnq.errors import DnnqError, InvalidArguments, Unimplemented
from dnnq._dispatch import (
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
from dnnq._verbose import set_verbose, get_verbose
from dnnq._cache import (set_primitive_cache_capacity, get_primitive_cache_capacity,
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

__all__ = [
    "__version__",
    # errors
    "DnnqError", "InvalidArguments", "Unimplemented",
    # dispatch, threads, verbose, primitive cache
    "cpu_info", "get_effective_cpu_isa", "set_max_cpu_isa", "set_num_threads",
    "get_num_threads", "MAX_NUM_THREADS", "available_isa_levels", "ISA_LEVELS", "set_verbose",
    "get_verbose", "set_int8_numerics", "get_int8_numerics",
    "set_primitive_cache_capacity", "get_primitive_cache_capacity", "primitive_cache_size",
    # argument ids (every DNNL_ARG_* and helper of dnnq.args) and masks
    *args.__all__,
    "scale_count", "resolve_mask", "DNNL_MASK_COMMON", "DNNL_MASK_PER_DIM_0",
    "DNNL_MASK_PER_DIM_1", "DNNL_MASK_PER_DIM_2", "DNNL_MASK_PER_DIM_3", "DNNL_MASK_PER_DIM_4",
    "DNNL_MASK_PER_DIM_5", "DNNL_MASK_PER_CHANNEL_NCHW", "DNNL_MASK_PER_CHANNEL_TNC",
    "DNNL_MASK_PER_CHANNEL_OIHW",
    # descriptors and attributes
    "MemoryDesc", "u8", "s8", "s32", "f32", "as_dt", "PrimitiveAttr", "PostOps",
    # primitives and functions
    "MatMul", "InnerProduct", "Convolution", "Deconvolution", "gemm_u8s8s32", "gemm_s8s8s32",
    "Reorder", "quantize",
    "dequantize", "Eltwise", "Binary", "Sum", "Concat", "Pooling", "Softmax",
    "append_fake_quantize", "fake_quantize", "LSTM", "GRU",
    "LBRGRU", "VanillaRNN",
    # submodules of the documented API (dnnq.testing is imported on demand: it loads oneDNN)
    "args", "masks", "memory", "attr", "post_ops", "errors", "calibrate", "eltwise_math",
    "primitives",
]
