"""Timing for the driver and the asv suite: best of several timed batches, same process."""
import time


def best_time(fn, min_time=0.3, repeats=5):
    """Seconds per call of ``fn()``: the batch size is calibrated to about
    ``min_time / repeats``, then the fastest of ``repeats`` batches is kept (the minimum
    is the figure least disturbed by other work on a shared machine)."""
    fn()  # warm-up: first-touch of buffers, lazy initialisation
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t > min_time / repeats:
            break
        n *= 2
    best = t / n
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best
