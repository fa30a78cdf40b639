/* Toolkit kernels (pointwise engine, pooling, softmax) compiled with the avx2 flags. */
#define DNNQ_TK_ISA avx2
#include "toolkit_impl.h"
