/* The depthwise kernel compiled with the avx2 flags (see conv_dw_impl.h). */
#define DNNQ_DW_ISA avx2
#include "conv_dw_impl.h"
