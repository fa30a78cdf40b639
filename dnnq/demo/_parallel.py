"""Row-parallel numpy for the parts of the encoder that are not linear layers (LayerNorm,
attention, the GELU table): numpy runs one thread, dnnq's primitives and PyTorch's element-wise
ops run ``threads``; splitting those numpy steps over the same number of Python threads
(numpy releases the GIL inside its loops) keeps the comparison at equal threads."""
from concurrent.futures import ThreadPoolExecutor

import dnnq


class RowSplit:
    """``split(fn, n, grain)`` calls ``fn(lo, hi)`` on up to ``dnnq.get_num_threads()``
    contiguous parts of ``range(n)`` of at least ``grain`` items each (below that, handing a
    part to another thread costs more than it saves), one part in the calling thread, and
    returns when all are done."""

    def __init__(self):
        self._pool, self._workers = None, 0

    def __call__(self, fn, n, grain=1):
        parts = min(dnnq.get_num_threads(), n // max(grain, 1))
        if parts <= 1:
            if n > 0:
                fn(0, n)
            return
        if self._workers != parts - 1:
            if self._pool is not None:
                self._pool.shutdown()
            self._pool = ThreadPoolExecutor(parts - 1, thread_name_prefix="dnnq-demo")
            self._workers = parts - 1
        bounds = [n * i // parts for i in range(parts + 1)]
        futures = [self._pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, parts)]
        fn(bounds[0], bounds[1])
        for f in futures:
            f.result()


split_rows = RowSplit()
