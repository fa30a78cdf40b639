"""dnnq: oneDNN's int8 inference primitives and quantization model for Python.

Quick reference: dnnq.MemoryDesc, dnnq.PrimitiveAttr, dnnq.PostOps, the DNNL_ARG_* ids
(also in dnnq.args), masks (dnnq.scale_count, DNNL_MASK_*), primitives (dnnq.MatMul,
dnnq.InnerProduct, ...), dispatch (dnnq.get_effective_cpu_isa, dnnq.cpu_info).
"""
__version__ = "0.1.0"

from dnnq.errors import DnnqError, InvalidArguments, Unimplemented
from dnnq._dispatch import (
    cpu_info, get_effective_cpu_isa, set_max_cpu_isa, set_num_threads, get_num_threads,
    available_isa_levels, ISA_LEVELS, MAX_NUM_THREADS,
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
from dnnq.primitives.gemm import gemm_u8s8s32, gemm_s8s8s32
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
