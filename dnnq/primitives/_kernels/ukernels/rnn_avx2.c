/* The int8 RNN driver compiled with the avx2 flags. */
#define DNNQ_RNN_ISA avx2
#include "rnn_impl.h"
