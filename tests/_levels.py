"""Run a computation at every ISA level dnnq has on this CPU and at 1 and 2 threads: the
tests that a result is a function of the problem alone (docs/numerics.md "Across machines")
compare what these runs return."""
import numpy as np

import dnnq


def at_every_level(draw):
    """[((level, threads), draw()), ...]: ``draw`` called with each level set as the ISA cap
    and each thread count; the cap and the count restored after."""
    results = []
    before = dnnq.get_num_threads()
    try:
        for level in dnnq.available_isa_levels():
            dnnq.set_max_cpu_isa(level)
            for threads in (1, 2):
                dnnq.set_num_threads(threads)
                results.append(((level, threads), draw()))
    finally:
        dnnq.set_max_cpu_isa("all")
        dnnq.set_num_threads(before)
    return results


def assert_same_bits(results, what=None):
    """Every result of ``at_every_level`` has the first one's dtype, shape and bytes."""
    (k0, r0) = results[0]
    for k, r in results[1:]:
        assert r.dtype == r0.dtype and r.shape == r0.shape, (what, k0, k)
        assert np.array_equal(np.ascontiguousarray(r).view(np.uint8),
                              np.ascontiguousarray(r0).view(np.uint8)), (what, k0, k)
