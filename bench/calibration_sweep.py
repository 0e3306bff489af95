"""How often `FairClassifier`'s calibration meets the bound, and at what cost (docs/design.md, Estimators).

Run from the repository root with the data folder set (FASTCON_DATA):

    python bench/calibration_sweep.py [--smoothing 0.5,0.1] [--constraints demographic_parity,...]

Fits at bound 0.02 on a9a, Adult (train → test), COMPAS (2:1 split, seed 0) and ten 500-row
synthetic samples (the generator of tests/test_estimators.py, next 500 rows as test), and prints
one JSON line per fit: fit seconds, whether the bound was met on the training rows, number of
solves, train and test gaps, test accuracy; then the misses per smoothing.
"""
import argparse
import json
import pathlib
import sys
import time
import warnings

import fastcon
from fastcon.estimators import FairClassifier

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from test_estimators import make_groups_data  # noqa: E402


def datasets():
    for name in ("a9a", "adult"):
        train, test = fastcon.load(name, subset="train"), fastcon.load(name, subset="test")
        yield name, train.X, train.y, train.groups, test.X, test.y, test.groups
    a, b = fastcon.load("compas").split([2 / 3, 1 / 3], seed=0)
    yield "compas", a.X, a.y, a.groups, b.X, b.y, b.groups
    for seed in range(10):
        X, y, g = make_groups_data(1000, seed)
        yield f"synthetic{seed}", X[:500], y[:500], g[:500], X[500:], y[500:], g[500:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoothing", default="0.5")
    ap.add_argument("--constraints", default="demographic_parity,equal_opportunity,false_positive_parity,"
                                              "equalized_odds")
    args = ap.parse_args()
    smoothings = [float(t) for t in args.smoothing.split(",")]
    misses = dict.fromkeys(smoothings, 0)
    warnings.simplefilter("ignore")
    for name, X, y, g, X_test, y_test, g_test in datasets():
        for constraint in args.constraints.split(","):
            for smoothing in smoothings:
                clf = FairClassifier(constraint, 0.02, smoothing=smoothing)
                t0 = time.perf_counter()
                clf.fit(X, y, sensitive_features=g)
                seconds = time.perf_counter() - t0
                report = clf.constraint_report(X_test, y_test, g_test)
                misses[smoothing] += not clf.calibration_["met"]
                print(json.dumps({"data": name, "constraint": constraint, "smoothing": smoothing,
                                  "fit_s": round(seconds, 3), "met": clf.calibration_["met"],
                                  "solves": len(clf.calibration_["bounds"]), "train_gap": round(clf.fit_gap_, 4),
                                  "test_gap": round(report.value, 4),
                                  "test_accuracy": round(clf.score(X_test, y_test), 4)}),
                      flush=True)
    print(json.dumps({"misses": misses}))


if __name__ == "__main__":
    main()
