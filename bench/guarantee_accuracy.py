"""What the certified fairness fit costs in accuracy, against the uncertified fit and fairlearn (issue 34).

Run from the repository root with the data folder set (FASTCON_DATA; not needed for synthetic):

    python bench/guarantee_accuracy.py [--data a9a,synthetic] [--splits 20] [--eg-splits 20]
                                       [--constraints dp,eo] [--bounds 0.05,0.1]

The splits of `bench/guarantee_splits.py`: ``a9a``'s two files pooled (48,842 rows, group = sex),
or a fresh 80,000-row draw of `bench/_groups_data.py` per seed; a stratified half to fit, the
other half to measure on; every method of a seed sees the same split. Per constraint
(demographic parity; equal opportunity = true-positive-rate parity) and bound ``t``:

* ``fastcon certified``: ``FairClassifier(constraint, t, confidence=0.95, random_state=seed)``
  (when the fit cannot certify ``t`` it warns and keeps the model with the smallest certified
  bound; ``certified`` counts the splits that certified ``t``);
* ``fastcon uncertified``: the same with ``confidence=None`` (the gap met on the training rows);
* ``fairlearn ThresholdOptimizer``: ``ThresholdOptimizer(estimator=LogisticRegression(max_iter=1000),
  constraints="demographic_parity" | "true_positive_rate_parity", predict_method="decision_function",
  prefit=False, tol=t)`` (``tol``: the range of the group rates on the training rows, the bound
  fastcon uses), randomized ``predict(X, sensitive_features=g, random_state=seed)``: it needs the
  group at prediction time;
* ``fairlearn ExponentiatedGradient``: ``ExponentiatedGradient(LogisticRegression(max_iter=1000),
  DemographicParity(difference_bound=t) | TruePositiveRateParity(difference_bound=t))``,
  randomized ``predict(X, random_state=seed)``, on the first ``--eg-splits`` seeds only. Its bound
  is each group's rate against the overall rate, so the pairwise gap it allows is up to
  t / (largest group's share) (about 1.5 t for DP on a9a);
* ``LogisticRegression``: ``LogisticRegression(max_iter=1000)``, unconstrained (the reference).

fairlearn and scikit-learn get a dense copy of a9a (123 columns; the copy is not timed), fastcon
its CSR matrix. Measured on the other half: accuracy and the hard gap of the 0/1 predictions
(`fastcon.estimators._report.fairness_gap`); "above t" is the share of splits whose test gap
exceeds ``t``; seconds are the wall-clock time of one fit (2 cores shared with other work).
Prints one JSON line per (data, constraint, t, method), then a markdown table.
"""
import argparse
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp

from guarantee_splits import load_a9a, stratified_half

CONSTRAINTS = {"dp": "demographic_parity", "eo": "equal_opportunity"}
METHODS = ("fastcon certified", "fastcon uncertified", "fairlearn ThresholdOptimizer",
           "fairlearn ExponentiatedGradient", "LogisticRegression")


def _logistic():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=1000)


def _timed(fit):
    start = time.perf_counter()
    model = fit()
    return model, time.perf_counter() - start


def run_split(data, seed, constraints, bounds, with_eg, X_all=None, y_all=None, g_all=None, rows=80_000):
    """One split: {(constraint, t, method): (accuracy, gap, seconds, certified or None)}."""
    from fairlearn.postprocessing import ThresholdOptimizer
    from fairlearn.reductions import DemographicParity, ExponentiatedGradient, TruePositiveRateParity

    from fastcon.estimators import FairClassifier
    from fastcon.estimators._report import fairness_gap

    import _groups_data as synthetic

    if data == "synthetic":
        X_all, y_all, g_all = synthetic.make_groups(rows, 10_000 + seed)
    half = stratified_half(y_all, g_all, np.random.default_rng(seed))
    fit, test = np.flatnonzero(half), np.flatnonzero(~half)
    X, y, g, Xt, yt, gt = X_all[fit], y_all[fit], g_all[fit], X_all[test], y_all[test], g_all[test]
    Xd, Xtd = (X.toarray(), Xt.toarray()) if sp.issparse(X) else (X, Xt)
    out = {}

    def measure(key, predicted, seconds, certified=None):
        predicted = np.asarray(predicted).astype(np.int64)
        out[key] = (float(np.mean(predicted == yt)), fairness_gap(key[0], 2.0 * predicted - 1.0, yt, gt),
                    seconds, certified)

    free, free_seconds = _timed(lambda: _logistic().fit(Xd, y))
    for constraint in constraints:
        for t in bounds:
            measure((constraint, t, "LogisticRegression"), free.predict(Xtd), free_seconds)
            for method, confidence in (("fastcon certified", 0.95), ("fastcon uncertified", None)):
                clf, seconds = _timed(lambda: FairClassifier(constraint, t, confidence=confidence,
                                                             random_state=seed).fit(X, y, sensitive_features=g))
                measure((constraint, t, method), clf.predict(Xt), seconds,
                        None if confidence is None else bool(clf.certified_gap_ <= t))
            kind = "demographic_parity" if constraint == "demographic_parity" else "true_positive_rate_parity"
            to, seconds = _timed(lambda: ThresholdOptimizer(
                estimator=_logistic(), constraints=kind, predict_method="decision_function", prefit=False,
                tol=t).fit(Xd, y, sensitive_features=g))
            measure((constraint, t, "fairlearn ThresholdOptimizer"),
                    to.predict(Xtd, sensitive_features=gt, random_state=seed), seconds)
            if with_eg:
                moment = DemographicParity if constraint == "demographic_parity" else TruePositiveRateParity
                eg, seconds = _timed(lambda: ExponentiatedGradient(_logistic(), moment(difference_bound=t)).fit(
                    Xd, y, sensitive_features=g))
                measure((constraint, t, "fairlearn ExponentiatedGradient"), eg.predict(Xtd, random_state=seed),
                        seconds)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="a9a,synthetic")
    ap.add_argument("--splits", type=int, default=20)
    ap.add_argument("--eg-splits", type=int, default=None, help="ExponentiatedGradient on the first seeds only")
    ap.add_argument("--constraints", default="dp,eo")
    ap.add_argument("--bounds", default="0.05,0.1")
    ap.add_argument("--rows", type=int, default=80_000, help="synthetic only: rows per draw (half fitted)")
    args = ap.parse_args()
    constraints = [CONSTRAINTS[c] for c in args.constraints.split(",")]
    bounds = [float(t) for t in args.bounds.split(",")]
    eg_splits = args.splits if args.eg_splits is None else args.eg_splits
    warnings.simplefilter("ignore")
    table = []
    for data in args.data.split(","):
        fixed = load_a9a() if data == "a9a" else (None, None, None)
        results = {}
        for seed in range(args.splits):
            for key, value in run_split(data, seed, constraints, bounds, seed < eg_splits, *fixed,
                                        rows=args.rows).items():
                results.setdefault(key, []).append(value)
        for constraint in constraints:
            for t in bounds:
                for method in METHODS:
                    runs = results.get((constraint, t, method))
                    if not runs:
                        continue
                    acc, gap, seconds = (np.array([r[i] for r in runs], dtype=float) for i in range(3))
                    certified = [r[3] for r in runs]
                    line = {"data": data, "constraint": constraint, "bound": t, "method": method,
                            "splits": len(runs), "accuracy": round(float(acc.mean()), 4),
                            "accuracy_sd": round(float(acc.std(ddof=1)) if acc.size > 1 else 0.0, 4),
                            "gap_mean": round(float(gap.mean()), 4), "gap_max": round(float(gap.max()), 4),
                            "above_t": int(np.sum(gap > t)),
                            "certified": None if certified[0] is None else int(sum(certified)),
                            "seconds": round(float(np.median(seconds)), 3)}
                    print(json.dumps(line), flush=True)
                    table.append(line)
    print("\n| data | constraint | t | method | splits | test accuracy | test gap: mean (max) | test gap > t "
          "| certified | fit s (median) |\n|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        name = "DP" if r["constraint"] == "demographic_parity" else "EO"
        certified = "" if r["certified"] is None else f"{r['certified']} of {r['splits']}"
        print(f"| {r['data']} | {name} | {r['bound']:g} | {r['method']} | {r['splits']} "
              f"| {r['accuracy']:.4f} ± {r['accuracy_sd']:.4f} | {r['gap_mean']:.4f} ({r['gap_max']:.4f}) "
              f"| {r['above_t']} of {r['splits']} | {certified} | {r['seconds']:.2f} |")


if __name__ == "__main__":
    main()
