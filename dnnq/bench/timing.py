"""Timing for the driver and the asv suite: best of several timed batches, same process."""
import time

#: the clock of best_time: wall (elapsed) or the calling thread's CPU time
_CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
_clock = time.perf_counter


def set_clock(name):
    """``"wall"`` (default) or ``"cpu"``: the calling thread's CPU time, for one-thread runs on
    a loaded machine (time spent descheduled is not counted)."""
    global _clock
    _clock = _CLOCKS[name]


def best_time(fn, min_time=0.3, repeats=5):
    """Seconds per call of ``fn()``: the batch size is calibrated to about
    ``min_time / repeats``, then the fastest of ``repeats`` batches is kept (the minimum
    is the figure least disturbed by other work on a shared machine)."""
    clock = _clock
    fn()  # warm-up: first-touch of buffers, lazy initialisation
    n = 1
    while True:
        t0 = clock()
        for _ in range(n):
            fn()
        t = clock() - t0
        if t > min_time / repeats:
            break
        n *= 2
    best = t / n
    for _ in range(repeats - 1):
        t0 = clock()
        for _ in range(n):
            fn()
        best = min(best, (clock() - t0) / n)
    return best
