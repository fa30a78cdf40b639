"""Run a function in several Python threads and re-raise, in the calling (test) thread, the
first exception any worker raised: an assertion or error inside a worker fails the test
instead of being printed and lost.  (pyproject's filterwarnings also turns pytest's
unhandled-thread-exception warning into an error, for threads started elsewhere.)
``dnnq_threads(n)``: dnnq's thread count set to n for a block."""
import contextlib
import threading

import dnnq


@contextlib.contextmanager
def dnnq_threads(n):
    """dnnq.set_num_threads(n) for the block, the previous count restored after it."""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(n)
    try:
        yield
    finally:
        dnnq.set_num_threads(old)


def run_in_threads(target, arg_tuples):
    """``target(*args)`` in one thread per tuple; returns their results in order."""
    results = [None] * len(arg_tuples)
    errors = []

    def work(i, args):
        try:
            results[i] = target(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append((i, exc))

    threads = [threading.Thread(target=work, args=(i, a)) for i, a in enumerate(arg_tuples)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        i, exc = errors[0]
        raise AssertionError(f"worker thread {i} raised {type(exc).__name__} "
                             f"({len(errors)} of {len(threads)} workers failed)") from exc
    return results
