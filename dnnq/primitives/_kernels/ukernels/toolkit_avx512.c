/* Toolkit kernels (pointwise engine, pooling, softmax) compiled with the avx512 flags. */
#define DNNQ_TK_ISA avx512
#include "toolkit_impl.h"
