# Array helpers shared by the C-level execute paths (_gemm_exec, _conv_exec).
cimport numpy as cnp
from libc.stdint cimport uintptr_t


cdef inline void _extent(cnp.ndarray a, uintptr_t* lo, uintptr_t* hi) noexcept:
    """[lo, hi): the bytes the elements of a lie in (any strides, negative ones too)."""
    cdef uintptr_t base = <uintptr_t>cnp.PyArray_DATA(a)
    cdef int i
    cdef cnp.npy_intp* d = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp* st = cnp.PyArray_STRIDES(a)
    cdef Py_ssize_t low = 0, high = 0
    if cnp.PyArray_SIZE(a) == 0:
        lo[0] = hi[0] = base
        return
    for i in range(cnp.PyArray_NDIM(a)):
        if st[i] < 0:
            low += (d[i] - 1) * st[i]
        else:
            high += (d[i] - 1) * st[i]
    lo[0] = base + low
    hi[0] = base + high + <uintptr_t>cnp.PyArray_ITEMSIZE(a)
