"""Timing for the benchmarks: medians of repeated calls, single-pose and batch rates, timed calls."""
import statistics
import time


def median_seconds(call, repeats):
    """Median wall-clock seconds of call(i) for i in range(repeats)."""
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def timed(call, repeats=1):
    """(call()'s result of the last run, the median wall-clock seconds of `repeats` runs)."""
    out = []
    seconds = median_seconds(lambda _i: out.append(call()), repeats)
    return out[-1], seconds


def single_and_batch(fn, single_inputs, batch_inputs, repeats=100):
    """{"ms_single": median ms of fn on one item (item i % N of each array in single_inputs, a
    leading axis of 1 added), "per_s_batch": items a second of fn(*batch_inputs), median of 5}."""
    singles = [[x[i % len(x)][None] for x in single_inputs] for i in range(repeats)]
    return {"ms_single": median_seconds(lambda i: fn(*singles[i]), repeats) * 1000,
            "per_s_batch": len(batch_inputs[0]) / median_seconds(lambda i: fn(*batch_inputs), 5)}


class CallTimer:
    """While the block runs, `owner.name` (a function looked up through its module or object at
    each call) is wrapped to record each call's wall-clock milliseconds in `self.ms`."""

    def __init__(self, owner, name):
        self.owner, self.name, self.original, self.ms = owner, name, getattr(owner, name), []

    def __enter__(self):
        def timing_call(*args, **kwargs):
            t = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.ms.append((time.perf_counter() - t) * 1e3)
        setattr(self.owner, self.name, timing_call)
        return self

    def __exit__(self, *_exc):
        setattr(self.owner, self.name, self.original)
