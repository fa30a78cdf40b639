"""The kernels' codes (ukernels/dnnq_codes.h, declared once) as Python tables.

Each table maps dnnq's lower-case name to the C code, derived from the enumerator names, so a
code added to the C header reaches Cython (_codes.pxd) and Python with no second list:

    ISA (dnnq.primitives._dispatch.ISA_LEVELS order), NUMERICS (OR-ed into an ISA code), DT,
    POST_OP, ELTWISE, BINARY, CONV_KERNEL (the convolution work-item kernels)
"""


def _table(enum_type, prefix):
    return {m.name[len(prefix):].lower(): int(m.value)
            for m in sorted(enum_type, key=lambda m: int(m.value))}


ISA = _table(dnnq_isa_t, "DNNQ_ISA_")
NUMERICS = _table(dnnq_numerics_t, "DNNQ_NUMERICS_")
DT = _table(dnnq_dt_t, "DNNQ_DT_")
POST_OP = _table(dnnq_po_kind_t, "DNNQ_PO_")
ELTWISE = _table(dnnq_eltwise_alg_t, "DNNQ_ELT_")
BINARY = _table(dnnq_binary_alg_t, "DNNQ_BIN_")
CONV_KERNEL = _table(dnnq_conv_kernel_t, "DNNQ_CONV_K_")
