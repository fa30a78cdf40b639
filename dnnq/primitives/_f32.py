"""f32 layers (SPEC section 6, "f32 layers"): the data-type rules Convolution, Deconvolution,
MatMul and InnerProduct share.  An f32 layer takes an f32 source and f32 weights (f32 bias)
and writes an f32, s8 or u8 destination: the f32 accumulator goes through the bias, the post-ops
and the dst scale / zero point as an int8 layer's does (docs/f32_layers.md).  The source and
the weights carry no quantization, so their scales and zero points are refused (as oneDNN
does for f32 inputs); mixes oneDNN does not define raise Unimplemented."""
from dnnq import args as A
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.primitives._common import arg_name

F32_DST_DTS = ("f32", "s8", "u8")
ACCEPTED = ("src u8 or s8 with weights s8 (an int8 layer), or src f32 with weights f32 and "
            "dst f32, s8 or u8 (an f32 layer)")


def layer_dtypes(prim, src_dt, wei_dt, dst_dt, bias_dt):
    """True for an f32 layer (f32 source and weights), False for an int8 one (checked
    elsewhere); raise Unimplemented for a mix of the two, naming the accepted combinations."""
    if src_dt != "f32" and wei_dt != "f32":
        return False
    if src_dt != "f32" or wei_dt != "f32":
        raise Unimplemented(f"{prim}: src data type {src_dt} with weights data type {wei_dt} "
                            f"is not supported; supported: {ACCEPTED}")
    if dst_dt not in F32_DST_DTS:
        raise Unimplemented(f"{prim}: dst data type {dst_dt} with f32 src and weights is not "
                            f"supported; supported: {', '.join(F32_DST_DTS)} (oneDNN defines "
                            "no s32 result of f32 inputs)")
    if bias_dt not in (None, "f32"):
        raise Unimplemented(f"{prim}: bias data type {bias_dt} with f32 src and weights is not "
                            "supported; supported: f32")
    return True


def refuse_input_quantization(prim, attr):
    """Raise InvalidArguments if `attr` sets scales or zero points of the source or the
    weights: f32 inputs are not quantized (the dst scale and zero point remain)."""
    if attr is None:
        return
    for what, given in (("scales", attr.scales_args()),
                        ("zero points", attr.zero_points_args())):
        for arg in (A.DNNL_ARG_SRC, A.DNNL_ARG_WEIGHTS):
            if arg in given:
                raise InvalidArguments(
                    f"{prim}: {what} of {arg_name(arg)} (mask {given[arg]}) are not accepted "
                    "with f32 src and weights (f32 inputs are not quantized); accepted: the "
                    "dst scale and zero point")
