"""Manual best-of-N timing for benchmarks that need a second measurement beside pytest-benchmark's
(e.g. a per-step-type breakdown)."""
import time

import numpy as np


def best_time(fn, repeat):
    """Minimum wall time of ``fn()`` over ``repeat`` calls, after one warm-up call."""
    fn()
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
