"""Manual best-of-N timing for benchmarks that need a second measurement beside pytest-benchmark's
(e.g. a per-step-type breakdown), and the commit a measurement was made at."""
import subprocess
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


def git_state(repo):
    """``(short commit, dirty)`` of the checkout at ``repo``: what a results record names its code by
    (``dirty``: tracked files differ from the commit)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo, capture_output=True,
                           text=True)
    return head.stdout.strip() or "unknown", bool(dirty.stdout.strip())
