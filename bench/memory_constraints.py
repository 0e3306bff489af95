"""Memory of a fit with many constraints: 160 demographic-parity groups, a ROC grid of 10^7 thresholds (issue 33).

Run from the repository root (each case in its own process, peak resident set above the data):

    python bench/memory_constraints.py dp_groups [--groups 160]
    python bench/memory_constraints.py roc_thresholds [--thresholds 1e7]

``dp_groups``: ``FairClassifier("demographic_parity", bound=0.1)`` on 4,000 x 5 Gaussian rows
with ``--groups`` groups (every ordered pair of groups is a constraint: 25,440 for 160).
``roc_thresholds``: ``FairClassifier("roc", bound=0.1, n_thresholds=...)`` on 200 x 5 rows, two
groups. Prints the fit's seconds and the peak resident set (``ru_maxrss``) before and after the fit.
"""
import argparse
import resource
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", choices=["dp_groups", "roc_thresholds"])
    ap.add_argument("--groups", type=int, default=160)
    ap.add_argument("--thresholds", type=float, default=1e7)
    args = ap.parse_args()
    from fastcon import FairClassifier

    rng = np.random.default_rng(0)
    if args.case == "dp_groups":
        n, estimator = 4000, FairClassifier("demographic_parity", bound=0.1)
        groups = np.arange(n) % args.groups
    else:
        n, estimator = 200, FairClassifier("roc", bound=0.1, n_thresholds=int(args.thresholds))
        groups = np.arange(n) % 2
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    estimator.fit(X, y, sensitive_features=groups)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{args.case}: fit {seconds:.1f} s, peak resident set {before / 1024:.0f} MB before the fit, "
          f"{after / 1024:.0f} MB after (+{(after - before) / 1024:.0f} MB)")


if __name__ == "__main__":
    main()
