/* The toolkit kernels (see dnnq_toolkit.h), compiled once per ISA: toolkit_<isa>.c defines
 * DNNQ_TK_ISA (portable, avx2, avx512) and includes this file, which gathers the pieces:
 *
 *   tk_vec.h          the one vector-width abstraction (512-bit, 256-bit or scalar lanes)
 *   tk_convert.h      loads, saturating stores, raw copies, the affine load
 *   postop_chain.h    the post-op chain (eltwise / binary / sum / checkpoint / select), shared
 *                     with the GEMM epilogue
 *   tk_pointwise.h    the pointwise engine (program stages, row offsets, dnnq_pw_run)
 *   tk_pw_fast.h      its fast paths (fused affine / binary, 8-bit binary, requantization LUT)
 *   tk_pool_common.h  tap ranges, accumulators and the epilogue of pooling
 *   tk_pool.h         the generic pooling kernels and dnnq_pool_run
 *   tk_pool8.h        the direct int8 pooling kernels (separable)
 *   tk_pool8_fused.h  the int8 average of small windows in registers
 *   tk_pool_stream8.h the int8 average of large windows (rows summed as byte streams,
 *                     dnnq_pool_split)
 *   tk_softmax.h      softmax / log-softmax
 *   tk_table.h        a 256-entry byte table applied element by element
 *   tk_rows8.h        softmax / layer normalization of quantized 8-bit rows
 *   tk_scale_residual.h  Q(x + x * s + y) of channels-last rows
 *   tk_quantize_planes.h ONNX QuantizeLinear of 2 - 4 planes into channels-last bytes
 *
 * Plain C written so that gcc -O3 vectorises the remaining loops (contiguous, no aliasing
 * between buffers, no function calls on the exact paths).  -ffp-contract=off (project-wide)
 * keeps every product and sum separately rounded unless fmaf() is written, which is what makes
 * the results identical on every ISA.  A failed scratch allocation makes a run function return
 * DNNQ_TK_ENOMEM (the driver raises MemoryError). */
#define DNNQ_TK_CAT2(a, b) a##_##b
#define DNNQ_TK_CAT(a, b) DNNQ_TK_CAT2(a, b)
#define DNNQ_TK_FN(name) DNNQ_TK_CAT(name, DNNQ_TK_ISA)

#include "tk_pool.h"
#include "tk_softmax.h"
#include "tk_table.h"
#include "tk_rows8.h"
#include "tk_scale_residual.h"
#include "tk_quantize_planes.h"
