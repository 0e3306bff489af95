"""How often the held-out guarantees fail over random splits of a9a or a synthetic set (issue 34's evidence).

Run from the repository root with the data folder set (FASTCON_DATA; not needed for synthetic):

    python bench/guarantee_splits.py [--data a9a|synthetic] [--splits 200] [--fits np,dp,eo]
                                     [--bound 0.05] [--rows 80000]

``a9a``: its training and test files pooled (48,842 rows, group = sex). ``synthetic``: ``--rows``
rows of `bench/_groups_data.py` (a minority group of 25 %, base rates 0.35 and 0.2, six dense
features, the group among them), drawn afresh for each seed, whose population rates are known in
closed form. For each seed a stratified half to fit and the other half to measure on.

``np``: ``NeymanPearsonClassifier(random_state=seed)`` (bound = delta = 0.05), a violation is a
type-I error above the bound. ``dp`` / ``eo``: ``FairClassifier(constraint, bound,
confidence=0.95, random_state=seed)``, a violation is a hard gap above the bound among the
splits whose fit certified it (``certified_gap_ <= bound``), and separately a gap above
``certified_gap_`` (any split). On a9a the gap is measured on the other half, itself a sample (24,421
rows) whose noise adds to the model's: the rates are an upper estimate of the population's. On the
synthetic set both are given: the other half's (keys as for a9a) and the population's, exact
(``population_*`` keys). Prints one JSON line per fit kind.
"""
import argparse
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp


def load_a9a():
    from fastcon import load

    train, test = load("a9a", subset="train"), load("a9a", subset="test")
    d = max(train.n_features, test.n_features)
    X = sp.vstack([sp.csr_matrix(train.X, shape=(train.n_samples, d)),
                   sp.csr_matrix(test.X, shape=(test.n_samples, d))], format="csr")
    return X, (np.r_[train.y, test.y] > 0).astype(np.int64), np.r_[train.groups, test.groups]


def stratified_half(y, g, rng):
    """A boolean mask: half of every (group, label) cell."""
    half = np.zeros(y.size, dtype=bool)
    for cell in np.unique(2 * g + y):
        rows = np.flatnonzero(2 * g + y == cell)
        half[rng.permutation(rows)[:rows.size // 2]] = True
    return half


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=("a9a", "synthetic"), default="a9a")
    ap.add_argument("--splits", type=int, default=200)
    ap.add_argument("--fits", default="np,dp,eo")
    ap.add_argument("--bound", type=float, default=0.05)
    ap.add_argument("--rows", type=int, default=80_000, help="synthetic only: rows per draw (half fitted)")
    args = ap.parse_args()
    from fastcon.estimators import FairClassifier, NeymanPearsonClassifier
    from fastcon.estimators._report import fairness_gap

    import _groups_data as synthetic

    tol, np_bound = args.bound, 0.05
    fixed = load_a9a() if args.data == "a9a" else None
    warnings.simplefilter("ignore")
    for kind in args.fits.split(","):
        constraint = {"dp": "demographic_parity", "eo": "equal_opportunity"}.get(kind)
        count = dict.fromkeys(("violations", "certified", "above_certified_gap", "population_violations",
                               "population_above_certified_gap"), 0)
        values, population, start = [], [], time.perf_counter()
        for seed in range(args.splits):
            X, y, g = fixed if fixed is not None else synthetic.make_groups(args.rows, 10_000 + seed)
            half = stratified_half(y, g, np.random.default_rng(seed))
            fit, other = np.flatnonzero(half), np.flatnonzero(~half)
            if kind == "np":
                clf = NeymanPearsonClassifier(random_state=seed).fit(X[fit], y[fit])
                value = float(np.mean(clf.predict(X[other])[y[other] == 0] == 1))
                count["violations"] += value > np_bound
                if fixed is None:
                    population.append(synthetic.population_type1(synthetic.population_rates(clf.coef_,
                                                                                             clf.intercept_)))
                    count["population_violations"] += population[-1] > np_bound
            else:
                clf = FairClassifier(constraint, bound=tol, confidence=0.95, random_state=seed).fit(
                    X[fit], y[fit], sensitive_features=g[fit])
                value = fairness_gap(constraint, clf.decision_function(X[other]), y[other], g[other])
                ok = clf.certified_gap_ <= tol
                count["certified"] += ok
                count["violations"] += ok and value > tol
                count["above_certified_gap"] += value > clf.certified_gap_
                if fixed is None:
                    population.append(synthetic.population_gap(constraint, synthetic.population_rates(
                        clf.coef_, clf.intercept_)))
                    count["population_violations"] += ok and population[-1] > tol
                    count["population_above_certified_gap"] += population[-1] > clf.certified_gap_
            values.append(value)
        line = {"data": args.data, "fit": kind, "splits": args.splits, "bound": np_bound if kind == "np" else tol,
                "violations": int(count["violations"]),
                "certified": int(count["certified"]) if kind != "np" else None,
                "above_certified_gap": int(count["above_certified_gap"]) if kind != "np" else None,
                "mean_value": round(float(np.mean(values)), 4), "max_value": round(float(np.max(values)), 4)}
        if fixed is None:
            line.update({"rows": args.rows, "population_violations": int(count["population_violations"]),
                         "population_above_certified_gap": (int(count["population_above_certified_gap"])
                                                            if kind != "np" else None),
                         "population_mean": round(float(np.mean(population)), 4),
                         "population_max": round(float(np.max(population)), 4)})
        line["seconds"] = round(time.perf_counter() - start, 1)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
