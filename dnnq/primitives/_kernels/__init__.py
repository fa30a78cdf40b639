"""Compiled kernels of dnnq (Cython + per-ISA C micro-kernels)."""
