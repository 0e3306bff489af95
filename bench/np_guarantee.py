"""NeymanPearsonClassifier's default guarantee on a wide sparse set, against scikit-learn (issue 34).

Run from the repository root:

    python bench/np_guarantee.py [--rows 100000] [--features 300000] [--per-row 20] [--zipf 1.1] [--repeats 1]

Makes ``2 * rows`` rows with `bench/synthetic_sparse.py` (binary features, Zipf-like frequencies),
fits on the first half and measures on the second: fastcon's default ``NeymanPearsonClassifier()``
(alpha = delta = 0.05), the same with ``delta=None`` (threshold on the training rows), and the
pipeline a scikit-learn user would write for the same guarantee: ``LogisticRegression()`` (default
settings) on the rows outside a calibration half of class 0, then the umbrella threshold
(`fastcon.metrics.np_umbrella_threshold`) on that half. Prints one JSON line per fit: fit seconds
(best of ``--repeats``), type-I and type-II errors on the held-out half.

``fastcon_dp`` (and ``fastcon_dp_certified``, with ``confidence=0.95``) fit
``FairClassifier("demographic_parity", bound=0.02)`` on the same rows, the group being whether
a row holds feature 1 (the second most frequent, informative: its rows are more often positive),
so the DP and NP fits can be compared on one data set; their lines add the test accuracy and the
test DP gap.
"""
import argparse
import json
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from synthetic_sparse import make_sparse_binary  # noqa: E402

ALPHA = DELTA = 0.05


def sklearn_umbrella(X, y, seed=0):
    """``LogisticRegression()`` plus the umbrella threshold on a held-out half of class 0: a decision function."""
    from sklearn.linear_model import LogisticRegression

    from fastcon.metrics import np_umbrella_threshold

    rows0 = np.flatnonzero(y == 0)
    calibration = np.sort(np.random.default_rng(seed).permutation(rows0)[:rows0.size // 2])
    keep = np.ones(y.size, dtype=bool)
    keep[calibration] = False
    model = LogisticRegression().fit(X[keep], y[keep])
    threshold = np_umbrella_threshold(model.decision_function(X[calibration]), ALPHA, DELTA)
    return lambda Z: model.decision_function(Z) - threshold


def fastcon_np(delta):
    from fastcon.estimators import NeymanPearsonClassifier

    def fit(X, y):
        return NeymanPearsonClassifier(bound=ALPHA, delta=delta, random_state=0).fit(X, y).decision_function
    return fit


def fastcon_dp(confidence):
    from fastcon.estimators import FairClassifier

    def fit(X, y, g):
        return FairClassifier("demographic_parity", bound=0.02, confidence=confidence, random_state=0).fit(
            X, y, sensitive_features=g).decision_function
    return fit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=300_000)
    ap.add_argument("--per-row", type=int, default=20)
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--fits", default="sklearn_umbrella,fastcon_default,fastcon_training_threshold")
    args = ap.parse_args()
    X, y = make_sparse_binary(2 * args.rows, args.features, per_row=args.per_row, zipf=args.zipf, seed=0)
    train, test = slice(0, args.rows), slice(args.rows, None)
    g = (X[:, 1].toarray().ravel() > 0).astype(np.int64)
    fits = {"sklearn_umbrella": sklearn_umbrella, "fastcon_default": fastcon_np(DELTA),
            "fastcon_training_threshold": fastcon_np(None), "fastcon_dp": fastcon_dp(None),
            "fastcon_dp_certified": fastcon_dp(0.95)}
    warnings.simplefilter("ignore")
    X_train, y_train, g_train = X[train], y[train], g[train]
    for name in args.fits.split(","):
        best, decision = np.inf, None
        extra = (g_train,) if name.startswith("fastcon_dp") else ()
        for _ in range(args.repeats):
            start = time.perf_counter()
            decision = fits[name](X_train, y_train, *extra)
            best = min(best, time.perf_counter() - start)
        s, y_test, g_test = decision(X[test]), y[test], g[test]
        line = {"fit": name, "rows": args.rows, "features": args.features, "nnz_train": int(X_train.nnz),
                "fit_s": round(best, 2), "test_type_one": round(float(np.mean(s[y_test == 0] > 0)), 4),
                "test_type_two": round(float(np.mean(s[y_test == 1] <= 0)), 4)}
        if extra:
            rates = [float(np.mean(s[g_test == k] > 0)) for k in (0, 1)]
            line.update(test_accuracy=round(float(np.mean((s > 0) == (y_test == 1))), 4),
                        test_dp_gap=round(abs(rates[1] - rates[0]), 4))
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
