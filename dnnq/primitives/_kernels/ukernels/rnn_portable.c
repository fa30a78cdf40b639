/* The int8 RNN driver compiled with the portable flags. */
#define DNNQ_RNN_ISA portable
#include "rnn_impl.h"
