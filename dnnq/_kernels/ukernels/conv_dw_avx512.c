/* The depthwise kernel compiled with the avx512 flags (see conv_dw_impl.h). */
#define DNNQ_DW_ISA avx512
#include "conv_dw_impl.h"
