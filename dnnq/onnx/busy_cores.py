"""Runs on one thread while another program keeps a core busy.

A parallel region ends when every one of its threads has reached its end; a thread that
shares its core with a busy thread of another program (another runtime's workers spinning
between its own runs, say) gets the core only when the scheduler hands it over, and each
region then waits for it: a model of 80 small layers ran 4 - 5 times slower on two threads
than on one (the PP-OCR classifier interleaved with ONNX Runtime's spinning workers in one
process: 2.0 against 0.5 ms).  The session's thread choice is made once, maybe on a quiet
machine; ``BusyCoreGuard`` watches each run's time against the one-thread runs the choice
measured, runs on one thread while the chosen plan is clearly slower than that, and tries
the chosen plan again now and then (after 8, 16, 32, ... up to 256 runs on one thread),
going back to it when it is faster than one thread's recent runs.
Which plan runs never changes the results (they do not depend on the thread count).
"""

#: a run of the chosen plan this much slower than one thread's (moving average) means a
#: busy core: the next runs go on one thread
SLOWER = 1.25
#: weight of the latest run in the moving average of the chosen plan's times
LATEST = 0.25
#: runs on one thread before the chosen plan is tried again: the first wait, the longest
FIRST_WAIT, LONGEST_WAIT = 8, 256


class BusyCoreGuard:
    """Which of two plans the next run takes: ``chosen`` (the session's thread choice) or
    ``one`` (every step on one thread), from the times of the runs so far (``record``).
    ``one_s``: the one-thread plan's run time measured with the choice."""

    __slots__ = ("chosen", "one", "one_s", "average", "on_one", "wait", "left", "switches")

    def __init__(self, chosen, one, one_s):
        self.chosen, self.one, self.one_s = chosen, one, one_s
        self.average = None  # the chosen plan's recent run time (seconds)
        self.on_one = False
        self.wait = FIRST_WAIT
        self.left = 0  # runs on one thread before the next try of the chosen plan
        self.switches = 0  # how often runs went to one thread (plan() / tests)

    def next_plan(self):
        """The plan of the next run."""
        if self.on_one and self.left > 0:
            return self.one
        return self.chosen

    def record(self, plan, seconds):
        """The run just made with ``plan`` took ``seconds``."""
        if plan is self.one:
            self.left -= 1
            # (what one thread takes now: the machine may be slower or faster than when
            # the choice was made)
            self.one_s = (1 - LATEST) * self.one_s + LATEST * seconds
            return
        if self.on_one:  # a try of the chosen plan after runs on one thread
            if seconds < self.one_s:
                self.on_one, self.wait, self.average = False, FIRST_WAIT, seconds
            else:
                self.wait = min(2 * self.wait, LONGEST_WAIT)
                self.left = self.wait
            return
        self.average = seconds if self.average is None else \
            (1 - LATEST) * self.average + LATEST * seconds
        if self.average > SLOWER * self.one_s:
            self.on_one, self.left, self.average = True, self.wait, None
            self.switches += 1
