"""Row-parallel numpy for the parts of the encoder that are not linear layers (LayerNorm,
attention, the GELU table): numpy runs one thread, dnnq's primitives and PyTorch's element-wise
ops run ``threads``; splitting those numpy steps over the same number of Python threads
(numpy releases the GIL inside its loops) keeps the comparison at equal threads."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

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


class BatchSplit:
    """``split(encode, ids, mask)``: a batch of sentences (ids, mask: (B, S)) encoded in up to
    ``dnnq.get_num_threads()`` parts of at least ``min_part`` sentences, each part in its own
    Python thread with single-threaded dnnq primitives, the results concatenated in order.

    Splitting the sentences (inter-op parallelism) instead of every operation's rows
    (intra-op) leaves one fork/join per batch instead of about ten per layer: no thread ever
    waits at a barrier for another that is descheduled, and every step runs at its
    one-thread efficiency.  dnnq's primitives may be executed from several Python threads at
    once, and release the GIL while they run, as numpy's large operations do.  Each part is
    trimmed to its own longest sentence.  ``dnnq.set_num_threads`` is process-wide: it is 1
    while the parts run and restored afterwards (the demo runs one encoder at a time)."""

    def __init__(self, min_part=4):
        self.min_part = min_part
        self._pool, self._workers = None, 0

    def __call__(self, encode, ids, mask):
        threads = dnnq.get_num_threads()
        parts = min(threads, ids.shape[0] // self.min_part)
        if parts <= 1:
            return encode(ids, mask)
        if self._workers != parts - 1:
            if self._pool is not None:
                self._pool.shutdown()
            self._pool = ThreadPoolExecutor(parts - 1, thread_name_prefix="dnnq-demo-batch")
            self._workers = parts - 1
        bounds = [ids.shape[0] * i // parts for i in range(parts + 1)]

        def part(i):
            m = mask[bounds[i]:bounds[i + 1]]
            length = max(int(np.max(np.count_nonzero(m, axis=1))), 1)
            return encode(ids[bounds[i]:bounds[i + 1], :length], m[:, :length])
        dnnq.set_num_threads(1)
        try:
            futures = [self._pool.submit(part, i) for i in range(1, parts)]
            first = part(0)
            return np.concatenate([first] + [f.result() for f in futures])
        finally:
            dnnq.set_num_threads(threads)


split_batch = BatchSplit()
