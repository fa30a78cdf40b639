"""Which kernel oneDNN 3.2 runs for an int8 (de)convolution, decided at creation as oneDNN's
implementation list decides it, so that dnnq can follow that kernel's numerics
(docs/convolution.md "Numerics"; docs/numerics.md for the AVX2 ones).  Measured with the real
oneDNN (the implementation names it reports; tests/test_deconv_impl.py and
tests/test_conv_ref_order.py check the rules against it) and read from its v3.2 sources
(cpu_deconvolution_list.cpp, in order).

Deconvolutions on an AVX-512 VNNI CPU (onednn_deconv_kernel):

``"brgconv"``   brg_conv (a stride-1 deconvolution run as a convolution by the brgemm
                convolution; its 1x1 kernel for 1x1 kernels): dnnq's usual numerics.
``"brgconv_strided"``  brg_conv+brgconv_strided (a strided one run by the brgemm backward-data
                convolution): dnnq's usual numerics.
``"jit_1x1"``   jit_int8_1x1 (1x1 kernel, stride 1, no padding, no bias or an f32 one, the
                brgemm kernel declined): dnnq's usual numerics.
``"jit"``       jit_deconvolution (jit_avx512_core_x8s8s32x_deconvolution): dnnq's usual
                numerics but a NaN stores 255 in a u8 destination (its saturation runs
                ``vmaxps(0, x)``, which keeps the NaN, then ``vminps(x, 255)``).
``"avx2"``      jit_uni_int8:avx2, where jit_deconvolution refuses a sum post-op that is not
                the first post-op or has a zero point: s16 pair saturation, halved
                weights for s8 sources (docs/numerics.md).
``"gemm"``      conv:any+gemm_s8u8s32 / gemm_s8s8s32: ref_deconvolution around the GEMM
                backward-data convolution, its attributes applied afterwards by reference
                loops (the order of the reference convolution).
"""


def onednn_conv_runs_ref(geo, zp_masks, binary_descs, op_kinds, sum_zero_point):
    """Whether oneDNN 3.2 runs a forward convolution on its reference kernel (ref:any) on
    avx512_core_vnni: a binary post-op input that varies along the batch or the spatial dims
    (neither per channel nor one value), per-channel source or destination zero points, a 3-D
    depthwise convolution (run by its GEMM-based convolution, whose post-processing kernel
    takes a sum only first and without zero point) with any other sum."""
    if any(zp_masks[a] for a in ("src", "dst")):
        return True
    if (geo.depthwise and geo.nsp == 3 and "sum" in op_kinds and
            (op_kinds.index("sum") > 0 or sum_zero_point != 0)):
        return True
    return any(d.dims[0] > 1 or any(x > 1 for x in d.dims[2:]) for d in binary_descs)


def _binary_kind(desc, dst_dims):
    """oneDNN's broadcasting strategy of a binary post-op input: "scalar", "per_oc", "full"
    (no broadcast) or "other" (along the batch or spatial dims only in part)."""
    dims = tuple(desc.dims)
    if all(x == 1 for x in dims):
        return "scalar"
    if dims[0] == 1 and all(x == 1 for x in dims[2:]):
        return "per_oc"
    if dims == tuple(dst_dims):
        return "full"
    return "other"


def _brgemm_declines(geo, weights_grouped):
    """The brgemm convolution's refusals of a stride-1 deconvolution's problem
    (jit_brgemm_conv_utils.cpp init_jcp: its performance heuristics send these to the
    direct kernels): depthwise; grouped with at most 16 input channels per group, when the
    channels per group are multiples of 4; ungrouped weights with at most 4 input channels
    (a 3-D problem with depth counts as not small; not for 1x1 kernels)."""
    if geo.depthwise or _grouped_small(geo, 16):
        return True
    if _is_1x1(geo):
        return False  # its 1x1 kernel has no small-channel heuristic
    real_3d = geo.nsp == 3 and (geo.src[0] > 1 or geo.dst[0] > 1 or geo.kernel[0] > 1 or
                                geo.dilates[0] > 0)
    groups_ok = geo.G > 1 and geo.ICg % 4 == 0 and geo.OCg % 4 == 0
    return geo.ICg <= 4 and not real_3d and (not weights_grouped or groups_ok)


def _is_1x1(geo):
    return geo.kernel == (1, 1, 1) and not any(geo.pads) and not any(geo.pads_r)


def _odd_groups(geo):
    """Grouped (not depthwise) with input or output channels per group not a multiple of 4."""
    return geo.G > 1 and not geo.depthwise and bool(geo.ICg % 4 or geo.OCg % 4)


def _grouped_small(geo, limit):
    """Grouped, at most `limit` input channels per group, channels per group multiples of 4
    (oneDNN's brgemm kernels leave these to its direct kernels)."""
    return geo.G > 1 and geo.ICg <= limit and geo.ICg % 4 == 0 and geo.OCg % 4 == 0


def _kernel_outside(geo):
    """A dilated kernel that fits in a padding (ext <= padding on one side): jit_deconvolution
    and the stride-1 conversion decline it."""
    return any((k - 1) * (d + 1) + 1 <= max(pl, pr) for k, d, pl, pr in
               zip(geo.kernel, geo.dilates, geo.pads, geo.pads_r))


def _brgemm_strided_takes(geo, binaries):
    """The brgemm backward-data convolution (brgconv_strided) takes a strided deconvolution
    (jit_brgemm_conv_bwd_utils.cpp init_jcp): every dst dim a multiple of its stride, no
    dilation, not grouped-small, binary inputs per tensor or per channel (measured: it
    declines full ones although its checks list them).  Its blocking search declines some
    tiny problems too (e.g. an output height of 1 under a 3-tall kernel with a width stride
    of 3, a 1-D source of 2 pixels with a kernel inside the padding), not modelled here."""
    return (all(o % s == 0 for o, s in zip(geo.dst, geo.strides)) and
            not any(geo.dilates) and not _grouped_small(geo, 16) and
            all(b in ("scalar", "per_oc") for b in binaries))


def onednn_deconv_kernel(geo, src_dt, weights_grouped, zp_masks, binary_descs, op_kinds,
                         dst_dims, sum_zero_point=0, bias_dt=None):
    """One of "gemm", "avx2", "jit", "jit_1x1", "brgconv", "brgconv_strided" (module
    docstring).

    zp_masks: {"src": mask, "dst": mask} of the zero points given (absent: 0);
    binary_descs: the src1 descriptors of the binary post-ops; op_kinds: the post-op kinds in
    order; dst_dims: the logical dst dims; sum_zero_point: that of the sum post-op;
    bias_dt: the bias data type (None: no bias)."""
    binaries = [_binary_kind(d, dst_dims) for d in binary_descs]
    if any(zp_masks.values()):
        return "gemm"  # every other kernel takes common zero points only
    strided = any(s > 1 for s in geo.strides)
    if strided and _brgemm_strided_takes(geo, binaries):
        return "brgconv_strided"
    odd_groups = _odd_groups(geo)
    dilated_stride = any(d > 0 and s > 1 for d, s in zip(geo.dilates, geo.strides))
    if (any(b in ("other", "full") for b in binaries) or
            (geo.depthwise and (src_dt == "s8" or geo.nsp == 3)) or _kernel_outside(geo) or
            (strided and (odd_groups or dilated_stride))):
        return "gemm"
    if not strided:
        if not _brgemm_declines(geo, weights_grouped):
            return "brgconv"
        if _is_1x1(geo) and not geo.depthwise and bias_dt in (None, "f32"):
            return "jit_1x1"  # its 1x1 deconvolution takes an f32 bias only (measured)
    if "sum" in op_kinds and (op_kinds.index("sum") > 0 or sum_zero_point != 0):
        return "avx2"  # jit_deconvolution takes a sum only first and without zero point
    return "jit"


def avx2_numerics(numerics, geo, src_dt, src_zp_mask, gemm_deconv=False):
    """(pair saturation, halved weights) of a (de)convolution under `numerics`, following
    the implementation oneDNN 3.2 picks without VNNI (measured with ONEDNN_MAX_CPU_ISA=AVX2,
    docs/numerics.md):
    - deconvolutions on gemm_s8u8s32 / gemm_s8s8s32 (`gemm_deconv`: avx2_deconv_gemm): pair
      saturation, an s8 source shifted by +128 (no halving);
    - per-input-channel source zero points, and grouped convolutions whose group has input or
      output channels not a multiple of 4, run oneDNN's reference kernel: exact;
    - everything else runs jit_uni_int8: pair saturation of u8 sources, and s8 sources meet
      weights halved at packing (the products then cannot saturate) with the scale doubled."""
    if numerics == "exact":
        return False, False
    if gemm_deconv:
        return True, False
    odd_groups = _odd_groups(geo)
    if src_zp_mask != 0 or odd_groups:
        return False, False
    return True, src_dt == "s8"


def avx2_deconv_gemm(kernel, geo, src_dt):
    """Whether oneDNN 3.2 without VNNI runs a deconvolution on its GEMM-based kernel: where
    it does with AVX-512 (`kernel`: onednn_deconv_kernel), and where its AVX2 jit_uni_int8 declines
    what the brgemm kernels take with AVX-512: groups whose channels per group are not
    multiples of 4, depthwise s8 (measured)."""
    odd_groups = _odd_groups(geo)
    return kernel == "gemm" or odd_groups or (geo.depthwise and src_dt == "s8")
