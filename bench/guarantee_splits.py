"""How often the held-out guarantees fail over random splits of a9a (issue 34's evidence).

Run from the repository root with the data folder set (FASTCON_DATA):

    python bench/guarantee_splits.py [--splits 200] [--fits np,dp,eo]

a9a's training and test files pooled (48,842 rows, group = sex), then for each seed a stratified
half to fit and the other half to measure on. ``np``: ``NeymanPearsonClassifier()`` (alpha =
delta = 0.05), a violation is a type-I error above alpha on the other half. ``dp`` / ``eo``:
``FairClassifier(constraint, tolerance=0.05, confidence=0.95)``, a violation is a hard gap above
the tolerance on the other half among the splits whose fit certified it (and, separately, above
``certified_gap_``). The other half is itself a sample (24,421 rows), so its error carries noise
of its own: the rates are an upper estimate of the population's. Prints one JSON line per fit kind.
"""
import argparse
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=200)
    ap.add_argument("--fits", default="np,dp,eo")
    args = ap.parse_args()
    from fastcon import load
    from fastcon.estimators import FairClassifier, NeymanPearsonClassifier
    from fastcon.estimators._report import fairness_gap

    train, test = load("a9a", subset="train"), load("a9a", subset="test")
    d = max(train.n_features, test.n_features)
    X = sp.vstack([sp.csr_matrix(train.X, shape=(train.n_samples, d)),
                   sp.csr_matrix(test.X, shape=(test.n_samples, d))], format="csr")
    y = (np.r_[train.y, test.y] > 0).astype(np.int64)
    g = np.r_[train.groups, test.groups]
    warnings.simplefilter("ignore")
    for kind in args.fits.split(","):
        violations, certified, above_certificate, values, start = 0, 0, 0, [], time.perf_counter()
        for seed in range(args.splits):
            rng = np.random.default_rng(seed)
            half = np.zeros(y.size, dtype=bool)
            for cell in np.unique(2 * g + y):
                rows = np.flatnonzero(2 * g + y == cell)
                half[rng.permutation(rows)[:rows.size // 2]] = True
            fit, other = np.flatnonzero(half), np.flatnonzero(~half)
            if kind == "np":
                clf = NeymanPearsonClassifier(random_state=seed).fit(X[fit], y[fit])
                value = float(np.mean(clf.predict(X[other])[y[other] == 0] == 1))
                violations += value > 0.05
            else:
                constraint = "demographic_parity" if kind == "dp" else "equal_opportunity"
                clf = FairClassifier(constraint, tolerance=0.05, confidence=0.95, random_state=seed).fit(
                    X[fit], y[fit], sensitive_features=g[fit])
                value = fairness_gap(constraint, clf.decision_function(X[other]), y[other], g[other])
                ok = clf.certified_gap_ <= 0.05
                certified += ok
                violations += ok and value > 0.05
                above_certificate += value > clf.certified_gap_
            values.append(value)
        print(json.dumps({"fit": kind, "splits": args.splits, "violations": int(violations),
                          "certified": int(certified) if kind != "np" else None,
                          "above_certified_gap": int(above_certificate) if kind != "np" else None,
                          "mean_value": round(float(np.mean(values)), 4), "max_value": round(float(np.max(values)), 4),
                          "seconds": round(time.perf_counter() - start, 1)}), flush=True)


if __name__ == "__main__":
    main()
