/* Toolkit kernels (pointwise engine, pooling, softmax) compiled with the portable flags. */
#define DNNQ_TK_ISA portable
#include "toolkit_impl.h"
