"""Post-ops -> the kernel spec the C epilogue reads (postop_chain.h), declared once for every
family that runs the GEMM epilogue (MatMul / InnerProduct through _gemm_primitive.py,
Convolution / Deconvolution through convolution.py), and which epilogue variant a spec list
takes, decided once at creation."""
from dnnq.errors import Unimplemented
from dnnq.primitives import _plan
# re-exported: the families' one source of the flags
from dnnq.primitives._kernels._gemm import fused_epilogue_flags  # noqa: F401

#: the post-op kinds the GEMM epilogue runs
KINDS = ("eltwise", "binary", "sum", "checkpoint", "select")


def post_op_spec(prim, i, op, dst_dt):
    """(kind, alg, alpha, beta) of post-op `op` (index i, of a PostOps) for the C epilogue."""
    kind = op.kind
    if kind == "eltwise":
        return (_plan.PO_ELTWISE, _plan.ELTWISE_CODE[op.alg], float(op.alpha), float(op.beta))
    if kind == "binary":
        return (_plan.PO_BINARY, _plan.BINARY_CODE[op.alg], 0.0, 0.0)
    if kind == "sum":
        if op.dt is not None and op.dt != dst_dt:
            raise Unimplemented(f"{prim}: post_op[{i}] sum with data type {op.dt} differs "
                                f"from the destination data type {dst_dt}; supported: "
                                "None or the destination data type")
        return (_plan.PO_SUM, 0, float(op.scale), float(op.zero_point))
    if kind == "checkpoint":
        return (_plan.PO_CHECKPOINT, 0, 0.0, 0.0)
    if kind == "select":
        return (_plan.PO_SELECT, _plan.BINARY_CODE[op.alg], 0.0, 0.0)
    raise Unimplemented(f"{prim}: post_op[{i}] of kind {kind} is not supported; supported: "
                        f"{', '.join(KINDS)}")


def fast_epilogue(post_specs):
    """The fast (register) epilogue of every level takes the post-ops: relu / linear chains
    only (or none).  (_gemm.fused_epilogue_flags: this and the AVX-512 epilogue's wider set.)"""
    return fused_epilogue_flags(post_specs)[0]


#: the post-ops of the fused depthwise epilogue's chains (ukernels/depthwise/dw_avx512.h
#: dw9_epi_block, the operations of epilogue_avx512.h's chain) that the depthwise kernels leave
#: to the tile epilogue (a chain per pixel cost the 3x3 column kernel 1.4 - 2.3x) and the
#: fold_lanes kernel, which applies them to blocks of vectors, fuses: the clips and the hard
#: sigmoid / swish of MobileNetV3
CHAIN_ELTWISE = frozenset(_plan.ELTWISE_CODE[a] for a in (
    "clip", "clip_v2", "hardswish", "hardsigmoid", "round"))


def dw_fused_epilogue(dst_dt, post_specs, raw_s32, ref_flags, chains=False):
    """The depthwise kernels fuse the epilogue (dnnq_conv_t.dw_fused): an 8-bit dst, the
    fast epilogue's post-ops (relu / linear; with `chains`, for the fold_lanes kernel, those
    of CHAIN_ELTWISE too), oneDNN's fused-kernel order (no reference flags)."""
    return (dst_dt in ("u8", "s8") and not raw_s32 and not ref_flags and
            (fast_epilogue(post_specs) or
             (chains and all(k == _plan.PO_ELTWISE and
                             (alg in CHAIN_ELTWISE or fast_epilogue([(k, alg, a, b)]))
                             for k, alg, a, b in post_specs))))
