/* The depthwise kernel compiled with the portable flags (see conv_dw_impl.h). */
#define DNNQ_DW_ISA portable
#include "conv_dw_impl.h"
