"""dnnq: oneDNN's int8 inference primitives and quantization model for Python."""
__version__ = "0.1.0"

from dnnq.errors import DnnqError, InvalidArguments, Unimplemented
from dnnq._dispatch import (
    cpu_info, get_effective_cpu_isa, set_max_cpu_isa, set_num_threads, get_num_threads,
)
