/* The int8 RNN driver compiled with the avx512 flags. */
#define DNNQ_RNN_ISA avx512
#include "rnn_impl.h"
