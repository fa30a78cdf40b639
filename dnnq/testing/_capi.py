"""ctypes layer over oneDNN's C API: library, constants, errors, memory, execution.

Everything here is generic; the primitive wrappers live in ``_primitives.py``
and ``_rnn.py``.  Handles are plain ``c_void_p`` values.  Every object created
while building and running one primitive is registered in a :class:`Scope`,
which destroys them (in reverse order) when the ``with`` block ends and keeps
the numpy buffers wrapped by oneDNN memories alive until then.
"""

from __future__ import annotations

import ctypes
import os
import sys
from ctypes import POINTER, c_char, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_void_p

import numpy as np

from . import _enums

# ----------------------------------------------------------------------------- loading

_LIB_NAMES = ("libdnnl.so.3", "libdnnl.so")


def _candidate_prefixes():
    for p in (os.environ.get("ONEDNN_REF_PREFIX"), sys.prefix, sys.base_prefix, "/usr/local", "/usr"):
        if p:
            yield p


def _find_files():
    """Return ``(library_path, include_dir)``; raise ``OSError`` with a reason if absent."""
    lib = os.environ.get("ONEDNN_REF_LIBRARY")
    inc = os.environ.get("ONEDNN_REF_INCLUDE")
    for prefix in _candidate_prefixes():
        if lib is None:
            for name in _LIB_NAMES:
                cand = os.path.join(prefix, "lib", name)
                if os.path.exists(cand):
                    lib = cand
                    break
        if inc is None:
            cand = os.path.join(prefix, "include", "oneapi", "dnnl")
            if os.path.exists(os.path.join(cand, "dnnl_types.h")):
                inc = cand
    if lib is None:
        raise OSError("the oneDNN library libdnnl.so.3 was not found under "
                      f"{', '.join(_candidate_prefixes())}/lib")
    if inc is None:
        raise OSError("the oneDNN headers (include/oneapi/dnnl/dnnl_types.h) were not found "
                      f"under {', '.join(_candidate_prefixes())}")
    return lib, inc


class _DnnlVersion(ctypes.Structure):
    _fields_ = [("major", c_int), ("minor", c_int), ("patch", c_int), ("hash", c_char_p),
                ("cpu_runtime", ctypes.c_uint), ("gpu_runtime", ctypes.c_uint)]


class ExecArg(ctypes.Structure):
    """``dnnl_exec_arg_t``."""

    _fields_ = [("arg", c_int), ("memory", c_void_p)]


Dims = c_int64 * 12  # dnnl_dims_t (DNNL_MAX_NDIMS is checked against the headers)
_H, _PH = c_void_p, POINTER(c_void_p)
_D = POINTER(c_int64)  # const dnnl_dims_t

# name: (restype, argtypes); restype None means dnnl_status_t (checked).
_PROTOTYPES = {
    "dnnl_engine_get_count": (c_size_t, [c_int]),
    "dnnl_engine_create": (None, [_PH, c_int, c_size_t]),
    "dnnl_stream_create": (None, [_PH, _H, ctypes.c_uint]),
    "dnnl_stream_wait": (None, [_H]),
    "dnnl_version": (POINTER(_DnnlVersion), []),
    "dnnl_get_effective_cpu_isa": (c_int, []),
    "dnnl_set_max_cpu_isa": (c_int, [c_int]),
    "dnnl_memory_desc_create_with_strides": (None, [_PH, c_int, _D, c_int, _D]),
    "dnnl_memory_desc_create_with_tag": (None, [_PH, c_int, _D, c_int, c_int]),
    "dnnl_memory_desc_destroy": (None, [_H]),
    "dnnl_memory_desc_equal": (c_int, [_H, _H]),
    "dnnl_memory_desc_get_size": (c_size_t, [_H]),
    "dnnl_memory_desc_query": (None, [_H, c_int, c_void_p]),
    "dnnl_memory_create": (None, [_PH, _H, _H, c_void_p]),
    "dnnl_memory_get_memory_desc": (None, [_H, _PH]),
    "dnnl_memory_destroy": (None, [_H]),
    "dnnl_primitive_attr_create": (None, [_PH]),
    "dnnl_primitive_attr_destroy": (None, [_H]),
    "dnnl_primitive_attr_set_scales_mask": (None, [_H, c_int, c_int]),
    "dnnl_primitive_attr_set_zero_points_mask": (None, [_H, c_int, c_int]),
    "dnnl_primitive_attr_set_post_ops": (None, [_H, _H]),
    "dnnl_primitive_attr_set_rnn_data_qparams": (None, [_H, c_float, c_float]),
    "dnnl_primitive_attr_set_rnn_weights_qparams": (None, [_H, c_int64, c_int, POINTER(c_float)]),
    "dnnl_post_ops_create": (None, [_PH]),
    "dnnl_post_ops_destroy": (None, [_H]),
    "dnnl_post_ops_append_sum": (None, [_H, c_float, c_int32, c_int]),
    "dnnl_post_ops_append_eltwise": (None, [_H, c_int, c_float, c_float]),
    "dnnl_post_ops_append_binary": (None, [_H, c_int, _H]),
    "dnnl_post_ops_append_dw": (None, [_H, c_int, c_int, c_int, c_int64, c_int64, c_int64]),
    "dnnl_primitive_desc_query": (None, [_H, c_int, c_int, c_void_p]),
    "dnnl_primitive_desc_query_md": (_H, [_H, c_int, c_int]),
    "dnnl_primitive_desc_destroy": (None, [_H]),
    "dnnl_primitive_create": (None, [_PH, _H]),
    "dnnl_primitive_execute": (None, [_H, _H, c_int, POINTER(ExecArg)]),
    "dnnl_primitive_destroy": (None, [_H]),
    "dnnl_reorder_primitive_desc_create": (None, [_PH, _H, _H, _H, _H, _H]),
    "dnnl_matmul_primitive_desc_create": (None, [_PH, _H, _H, _H, _H, _H, _H]),
    "dnnl_inner_product_forward_primitive_desc_create": (None, [_PH, _H, c_int, _H, _H, _H, _H, _H]),
    "dnnl_convolution_forward_primitive_desc_create":
        (None, [_PH, _H, c_int, c_int, _H, _H, _H, _H, _D, _D, _D, _D, _H]),
    "dnnl_deconvolution_forward_primitive_desc_create":
        (None, [_PH, _H, c_int, c_int, _H, _H, _H, _H, _D, _D, _D, _D, _H]),
    "dnnl_pooling_forward_primitive_desc_create":
        (None, [_PH, _H, c_int, c_int, _H, _H, _D, _D, _D, _D, _D, _H]),
    "dnnl_eltwise_forward_primitive_desc_create": (None, [_PH, _H, c_int, c_int, _H, _H, c_float, c_float, _H]),
    "dnnl_binary_primitive_desc_create": (None, [_PH, _H, c_int, _H, _H, _H, _H]),
    "dnnl_sum_primitive_desc_create": (None, [_PH, _H, _H, c_int, POINTER(c_float), _PH, _H]),
    "dnnl_concat_primitive_desc_create": (None, [_PH, _H, _H, c_int, c_int, _PH, _H]),
    "dnnl_softmax_forward_primitive_desc_create": (None, [_PH, _H, c_int, c_int, _H, _H, c_int, _H]),
    "dnnl_lstm_forward_primitive_desc_create":
        (None, [_PH, _H, c_int, c_int] + [_H] * 11 + [ctypes.c_uint, _H]),
    "dnnl_gru_forward_primitive_desc_create":
        (None, [_PH, _H, c_int, c_int] + [_H] * 7 + [ctypes.c_uint, _H]),
    "dnnl_gemm_u8s8s32": (None, [c_char, c_char, c_char, c_int64, c_int64, c_int64, c_float,
                                 c_void_p, c_int64, ctypes.c_uint8, c_void_p, c_int64, ctypes.c_int8,
                                 c_float, c_void_p, c_int64, c_void_p]),
    "dnnl_gemm_s8s8s32": (None, [c_char, c_char, c_char, c_int64, c_int64, c_int64, c_float,
                                 c_void_p, c_int64, ctypes.c_int8, c_void_p, c_int64, ctypes.c_int8,
                                 c_float, c_void_p, c_int64, c_void_p]),
}


class OnednnError(RuntimeError):
    """A oneDNN call returned a status other than ``dnnl_success``.

    ``status`` is the status name without its ``dnnl_`` prefix (``"unimplemented"``,
    ``"invalid_arguments"``, ...), ``code`` its value and ``call`` the C function;
    ``message`` replaces the default "<call> returned dnnl_<status>".
    """

    def __init__(self, status: str, call: str, code: int | None = None,
                 message: str | None = None):
        super().__init__(message or f"{call} returned dnnl_{status}")
        self.status, self.call, self.code = status, call, code


class _Library:
    """The loaded library, its prototypes and the constants parsed from the headers."""

    def __init__(self):
        self.lib_path, self.include_dir = _find_files()
        self.values, self.enum_types = _enums.parse_headers(self.include_dir)
        if self.values.get("DNNL_MAX_NDIMS") != 12:
            raise OSError("unexpected DNNL_MAX_NDIMS in the headers")
        self.dll = ctypes.CDLL(self.lib_path)
        self.status_names = {self.values[n]: n[len("dnnl_"):]
                             for n in self.enum_types["dnnl_status_t"]}
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(self.dll, name)
            fn.restype = c_int if restype is None else restype
            fn.argtypes = argtypes
        ver = self.dll.dnnl_version().contents
        self.version = (ver.major, ver.minor, ver.patch)
        header_ver = tuple(self.values[f"DNNL_VERSION_{k}"] for k in ("MAJOR", "MINOR", "PATCH"))
        if self.version[:2] != header_ver[:2]:
            raise OSError(f"library oneDNN {self.version} does not match headers {header_ver}")
        if self.version[0] != 3:
            raise OSError(f"the bridge drives the oneDNN v3 API; found {self.version}")
        if self.dll.dnnl_engine_get_count(self.values["dnnl_cpu"]) < 1:
            raise OSError("oneDNN reports no CPU engine")
        self._engine = self._stream = None

    def call(self, name: str, *args):
        """Call a status-returning function; raise :class:`OnednnError` on failure."""
        status = getattr(self.dll, name)(*args)
        if status != self.values["dnnl_success"]:
            raise OnednnError(self.status_names.get(status, str(status)), name, status)

    @property
    def engine(self):
        if self._engine is None:
            eng = c_void_p()
            self.call("dnnl_engine_create", ctypes.byref(eng), self.values["dnnl_cpu"], 0)
            self._engine = eng
        return self._engine

    @property
    def stream(self):
        if self._stream is None:
            st = c_void_p()
            self.call("dnnl_stream_create", ctypes.byref(st), self.engine,
                      self.values["dnnl_stream_default_flags"])
            self._stream = st
        return self._stream


INSTALL_HINT = ("install the oneDNN 3.2 wheels: pip install 'dnnq[test]' (or 'dnnq[bench]'), i.e. "
                "onednn-cpu-gomp==2023.2.0 and onednn-devel-cpu-gomp==2023.2.0 (x86-64 Linux); "
                "ONEDNN_REF_PREFIX / ONEDNN_REF_LIBRARY / ONEDNN_REF_INCLUDE point elsewhere")


class OnednnUnavailable(RuntimeError):
    """The oneDNN library or its headers are absent or unusable (the message says why and
    how to install them)."""


try:
    LIB: _Library | None = _Library()
    SKIP_REASON = ""
except (OSError, KeyError, AttributeError) as exc:  # absent, unloadable, wrong version
    LIB = None
    SKIP_REASON = f"oneDNN 3.2 is not usable: {exc}; {INSTALL_HINT}"


def available() -> bool:
    """True when the oneDNN library and its headers were found and loaded."""
    return LIB is not None


def lib() -> _Library:
    if LIB is None:
        raise OnednnUnavailable(SKIP_REASON)
    return LIB


def cpu_isa() -> str:
    """oneDNN's effective ISA (``dnnl_get_effective_cpu_isa``, honours ``DNNL_MAX_CPU_ISA``),
    e.g. ``"avx512_core_vnni"``."""
    value = lib().dll.dnnl_get_effective_cpu_isa()
    names = [n for n in lib().enum_types["dnnl_cpu_isa_t"] if lib().values[n] == value]
    return names[0][len("dnnl_cpu_isa_"):] if names else str(value)


def has_vnni() -> bool:
    """True when oneDNN's int8 kernels use VNNI (exact s32 dot products); without it
    (AVX2 / AVX512 core) u8*s8 pairs go through vpmaddubsw and saturate in s16."""
    value = lib().dll.dnnl_get_effective_cpu_isa()
    return any((value & const(f"dnnl_cpu_isa_{isa}")) == const(f"dnnl_cpu_isa_{isa}")
               for isa in ("avx2_vnni", "avx512_core_vnni"))


def const(name: str) -> int:
    """Value of an enumerator or macro, with or without the ``dnnl_`` prefix."""
    values = lib().values
    return values[name] if name in values else values["dnnl_" + name]


def arg_multiple_post_op(idx: int) -> int:
    """``DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx)`` (function-like macro, defined in dnnl_types.h)."""
    return const("DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE") * (idx + 1)


# ----------------------------------------------------------------------------- data types

_NP_TO_DT = {np.dtype(np.float32): "f32", np.dtype(np.int32): "s32",
             np.dtype(np.int8): "s8", np.dtype(np.uint8): "u8"}
_DT_TO_NP = {v: k for k, v in _NP_TO_DT.items()}


def dt_name(dt) -> str:
    """Normalize ``"s8"`` / ``np.int8`` / ``"int8"`` to one of f32, s32, s8, u8."""
    if isinstance(dt, str) and dt in _DT_TO_NP:
        return dt
    try:
        return _NP_TO_DT[np.dtype(dt)]
    except (TypeError, KeyError):
        raise ValueError(f"unsupported data type {dt!r}; use f32, s32, s8 or u8") from None


def np_dtype(dt) -> np.dtype:
    return _DT_TO_NP[dt_name(dt)]


def dnnl_dt(dt) -> int:
    return const("dnnl_" + dt_name(dt))


def dims_of(seq) -> Dims:
    d = Dims()
    for i, v in enumerate(seq):
        d[i] = int(v)
    return d


def as_operand(a, dtype=None) -> np.ndarray:
    """An array oneDNN can describe with strides: positive, element-aligned strides."""
    a = np.asarray(a, dtype=dtype)
    if a.dtype not in _NP_TO_DT:
        raise ValueError(f"unsupported array dtype {a.dtype}")
    if a.ndim == 0:
        a = a.reshape(1)
    if any(s <= 0 or s % a.itemsize for s, n in zip(a.strides, a.shape) if n > 1):
        a = np.ascontiguousarray(a)
    return a


# ----------------------------------------------------------------------------- scope

class Scope:
    """Owns the oneDNN objects (and numpy buffers) created for one operation."""

    def __init__(self):
        self.lib = lib()
        self._destroy: list = []
        self._keep: list = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for fn, handle in reversed(self._destroy):
            getattr(self.lib.dll, fn)(handle)
        self._destroy.clear()
        self._keep.clear()

    def keep(self, obj):
        """Keep ``obj`` (e.g. a buffer oneDNN points into) alive until the scope ends."""
        self._keep.append(obj)
        return obj

    def _own(self, destroy_fn: str, handle: c_void_p) -> c_void_p:
        self._destroy.append((destroy_fn, handle))
        return handle

    def call(self, name, *args):
        self.lib.call(name, *args)

    def create(self, fn: str, destroy_fn: str, *args) -> c_void_p:
        """``fn(&handle, *args)``, registering ``destroy_fn(handle)``."""
        h = c_void_p()
        self.call(fn, ctypes.byref(h), *args)
        return self._own(destroy_fn, h)

    # ---- memory descriptors and memories
    def md(self, shape, dt, strides=None, tag=None) -> c_void_p:
        """Memory descriptor: explicit element ``strides``, a format ``tag`` name, or plain."""
        shape = tuple(int(s) for s in shape)
        if tag is not None:
            return self.create("dnnl_memory_desc_create_with_tag", "dnnl_memory_desc_destroy",
                               len(shape), dims_of(shape), dnnl_dt(dt), const("dnnl_" + tag))
        if strides is None:
            strides = np.empty(shape, dtype=np.uint8).strides
        return self.create("dnnl_memory_desc_create_with_strides", "dnnl_memory_desc_destroy",
                           len(shape), dims_of(shape), dnnl_dt(dt), dims_of(strides))

    def md_of(self, a: np.ndarray) -> c_void_p:
        """Descriptor of a numpy array (from :func:`as_operand`) with its own strides."""
        return self.md(a.shape, a.dtype, strides=[s // a.itemsize for s in a.strides])

    def md_any(self, shape, dt) -> c_void_p:
        return self.md(shape, dt, tag="format_tag_any")

    def memory(self, md, buffer: np.ndarray | None = None) -> c_void_p:
        """Memory over ``buffer`` (kept alive) or allocated by oneDNN when ``None``."""
        if buffer is None:
            handle = c_void_p(ctypes.c_size_t(-1).value)  # DNNL_MEMORY_ALLOCATE
        else:
            self.keep(buffer)
            handle = c_void_p(buffer.ctypes.data)
        return self.create("dnnl_memory_create", "dnnl_memory_destroy", md, self.lib.engine, handle)

    def wrap(self, a: np.ndarray) -> c_void_p:
        """Memory over a numpy array (as laid out)."""
        return self.memory(self.md_of(a), a)

    def values(self, values, dtype) -> c_void_p:
        """1-D memory holding scales (f32) or zero points (s32)."""
        a = np.ascontiguousarray(np.asarray(values, dtype=dtype).reshape(-1))
        return self.wrap(a)

    # ---- primitives
    def primitive(self, pd) -> c_void_p:
        return self.create("dnnl_primitive_create", "dnnl_primitive_destroy", pd)

    def pd(self, fn: str, *args) -> c_void_p:
        """Create a primitive descriptor with ``fn`` (engine etc. included in ``args``)."""
        return self.create(fn, "dnnl_primitive_desc_destroy", *args)

    def execute(self, prim, args: dict) -> None:
        arr = (ExecArg * len(args))(*[ExecArg(k, m) for k, m in args.items()])
        self.call("dnnl_primitive_execute", prim, self.lib.stream, len(args), arr)
        self.call("dnnl_stream_wait", self.lib.stream)

    def reorder(self, src_mem, dst_mem, attr=None, args=None) -> str:
        """Reorder ``src_mem`` into ``dst_mem``; returns the implementation name."""
        eng = self.lib.engine
        pd = self.pd("dnnl_reorder_primitive_desc_create", self.mem_md(src_mem), eng,
                     self.mem_md(dst_mem), eng, attr)
        execute_args = {const("DNNL_ARG_FROM"): src_mem, const("DNNL_ARG_TO"): dst_mem}
        execute_args.update(args or {})
        self.execute(self.primitive(pd), execute_args)
        return impl_name(pd)

    def mem_md(self, mem) -> c_void_p:
        md = c_void_p()
        self.call("dnnl_memory_get_memory_desc", mem, ctypes.byref(md))
        return md


def impl_name(pd) -> str:
    """Implementation name of a primitive descriptor (``dnnl_query_impl_info_str``)."""
    s = c_char_p()
    lib().call("dnnl_primitive_desc_query", pd, const("dnnl_query_impl_info_str"), 0,
               ctypes.byref(s))
    return s.value.decode()


def query_md(pd, arg: int) -> c_void_p:
    """The descriptor a primitive expects for execution argument ``arg`` (owned by ``pd``)."""
    return c_void_p(lib().dll.dnnl_primitive_desc_query_md(pd, const("dnnl_query_exec_arg_md"), arg))


def md_equal(a, b) -> bool:
    return bool(lib().dll.dnnl_memory_desc_equal(a, b))
