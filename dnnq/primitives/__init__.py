"""dnnq primitives: one module per family."""
