r"""Fair classification side by side: fastcon's ``FairClassifier`` against fairlearn and OxonFair.

One run per dataset and method on the same train/test split; every row reports the fit time (the
minimum wall-clock time of ``repeats`` complete fits, whatever the machine's cores give), the test
accuracy, the test demographic-parity gap and the test equalized-odds gap (hard metrics on the 0/1
predictions, groups as the dataset defines them):

.. math::

    \mathrm{DP} = \max_g P(\hat y = 1 \mid G = g) - \min_g P(\hat y = 1 \mid G = g), \qquad
    \mathrm{EO} = \max\Big(\max_g \mathrm{TPR}_g - \min_g \mathrm{TPR}_g,\;
                          \max_g \mathrm{FPR}_g - \min_g \mathrm{FPR}_g\Big).

Datasets: ``a9a`` (train file -> test file, CSR, group = sex), ``adult`` (its train/test files,
dense, group = sex) and ``compas`` (one file split 2:1 by `Dataset.split` with seed 0, dense,
group = race). Methods (each a `Method`; the bound, ``--bound``, is the same number for all):

* ``fastcon.FairClassifier(constraint=..., bound=...)`` with default settings, when the
  installed fastcon has it (else the row says "not available");
* fairlearn ``ExponentiatedGradient(LogisticRegression(), DemographicParity(difference_bound=eps))``
  (``EqualizedOdds`` for equalized odds), eps = bound and bound / 2, randomized ``predict``
  with a fixed ``random_state`` and, from the same fit, the deterministic rule
  :math:`\hat y = 1 \iff Q(h(x) = 1) \ge 1/2` on the fitted distribution :math:`Q` over classifiers
  (its ``_pmf_predict``); fairlearn needs dense input, so CSR data is densified before its fit (the
  densification is not timed);
* OxonFair ``FairPredictor`` (group-aware thresholds chosen on the training data to maximise
  accuracy subject to the bound) on a logistic-regression and on an XGBoost base model, and its
  inferred-group mode: the sensitive columns are removed from the features, a second logistic
  regression predicts the group, and the thresholds are applied to the predicted group, so the
  group is needed neither as a feature nor at prediction time. Fit time = the whole pipeline (base
  model, group model, scoring the training data, threshold search).

Bound semantics differ (docs/peers.md): fairlearn bounds each group's rate against the overall rate
(:math:`|P(\hat y=1 \mid G=g) - P(\hat y=1)| \le \varepsilon`, for equalized odds within each true
label), OxonFair's ``demographic_parity`` is the mean over pairs of groups of the rate difference
(the plain difference for two groups) and ``equalized_odds_max`` the larger of the TPR and TNR
max-min differences, which is the EO gap above.

Run ``python bench/_peers.py --dataset a9a`` (or ``adult``, ``compas``, ``all``) to print the table;
``bench/bench_peers.py`` runs the same rows under pytest-benchmark.
"""
import argparse
import dataclasses
import json
import os
import sys
import time
import warnings

if __name__ == "__main__":
    # Before any OpenMP runtime loads (scikit-learn's and XGBoost's libgomp): idle OpenMP threads
    # spin by default, and on a machine whose cores other jobs share that slowed the small fits
    # here by an order of magnitude (docs/design.md, Kernels). An explicit setting is kept.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
import scipy.sparse as sp

from fastcon.metrics import accuracy, demographic_parity_gap

DATASETS = ("a9a", "adult", "compas")
CONSTRAINTS = ("demographic_parity", "equalized_odds")
NOT_AVAILABLE = "not available"
# Thread count of every library's pool (BLAS, OpenMP, numba, XGBoost) during the runs; None leaves
# each library's default (all cores). Set through `thread_limit`.
_THREADS = None


# ------------------------------------------------------------------------------------ data
@dataclasses.dataclass
class Split:
    """One train/test split in the form every peer accepts.

    Attributes
    ----------
    name : str
    X_train, X_test : ndarray or scipy.sparse.csr_matrix
    y_train, y_test : ndarray of int
        Labels in {0, 1} (1 = the dataset's positive class).
    g_train, g_test : ndarray of int
        Group ids 0..G-1 (the dataset's ``groups``).
    group_names : list of str
    sensitive_columns : ndarray of int
        Feature columns that encode the group (removed for OxonFair's inferred-group mode).
    """

    name: str
    X_train: object
    y_train: np.ndarray
    g_train: np.ndarray
    X_test: object
    y_test: np.ndarray
    g_test: np.ndarray
    group_names: list
    sensitive_columns: np.ndarray

    @property
    def is_sparse(self):
        return sp.issparse(self.X_train)


# Feature-name prefixes of the columns that encode each dataset's group.
_SENSITIVE_PREFIX = {"adult": "sex=", "compas": "race="}


def _sensitive_columns(ds, prefix):
    """Columns that encode the group: by feature-name prefix, else (a9a, whose features are unnamed)
    the 0/1 columns equal to a group's indicator."""
    names = ds.feature_names or []
    if prefix is not None and any(str(f).startswith(prefix) for f in names):
        return np.array([j for j, f in enumerate(names) if str(f).startswith(prefix)], dtype=np.int64)
    X = ds.X.tocsc() if sp.issparse(ds.X) else ds.X
    cols = []
    for g in range(ds.n_groups):
        indicator = (ds.groups == g).astype(np.float64)
        for j in range(ds.n_features):
            col = X[:, j].toarray().ravel() if sp.issparse(X) else X[:, j]
            if np.array_equal(col, indicator):
                cols.append(j)
    return np.array(sorted(set(cols)), dtype=np.int64)


def load_split(dataset, data_home=None):
    """The benchmark's split of ``dataset`` (one of `DATASETS`).

    a9a and Adult: their published train and test files. COMPAS (one file): a 2:1 split by
    ``Dataset.split([2/3, 1/3], seed=0)``, 4,115 / 2,057 rows.
    """
    from fastcon.datasets import load

    if dataset not in DATASETS:
        raise ValueError(f"dataset: expected one of {list(DATASETS)}, got {dataset!r}")
    if dataset == "compas":
        train, test = load("compas", data_home=data_home, subset="train").split([2 / 3, 1 / 3], seed=0)
    else:
        train = load(dataset, data_home=data_home, subset="train")
        test = load(dataset, data_home=data_home, subset="test")
    if train.group_names != test.group_names:
        raise ValueError(f"dataset: train groups {train.group_names} differ from test groups {test.group_names}")
    return Split(name=dataset, X_train=train.X, y_train=(train.y > 0).astype(np.int64), g_train=train.groups,
                 X_test=test.X, y_test=(test.y > 0).astype(np.int64), g_test=test.groups,
                 group_names=list(train.group_names),
                 sensitive_columns=_sensitive_columns(train, _SENSITIVE_PREFIX.get(dataset)))


# --------------------------------------------------------------------------------- metrics
def _check_predictions(pred, n):
    pred = np.asarray(pred)
    if pred.shape != (n,):
        raise ValueError(f"pred: expected shape ({n},), got {pred.shape}")
    if not np.all(np.isin(pred, (0, 1))):
        raise ValueError(f"pred: expected 0/1 predictions, found {np.unique(pred)[:5].tolist()}")
    return pred.astype(np.float64)


def dp_gap(pred, groups):
    r"""Demographic-parity gap of 0/1 predictions: :math:`\max_g P_g(\hat y=1) - \min_g P_g(\hat y=1)`."""
    pred = _check_predictions(pred, np.shape(groups)[0])
    return demographic_parity_gap(None, pred, sensitive_features=groups)


def eo_gap(pred, y, groups):
    r"""Equalized-odds gap of 0/1 predictions: the larger of the max-min differences over groups of
    the true-positive rate :math:`P_g(\hat y=1 \mid y=1)` and the false-positive rate
    :math:`P_g(\hat y=1 \mid y=0)`."""
    groups = np.asarray(groups)
    pred = _check_predictions(pred, groups.shape[0])
    y = np.asarray(y)
    if y.shape != pred.shape:
        raise ValueError(f"y: expected shape {pred.shape}, got {y.shape}")
    gaps = []
    for label in (1, 0):
        rows = y == label
        if np.unique(groups[rows]).size < 2:
            raise ValueError(f"groups: label {label} occurs in fewer than two groups; the EO gap is undefined")
        gaps.append(demographic_parity_gap(None, pred[rows], sensitive_features=groups[rows]))
    return float(max(gaps))


# ---------------------------------------------------------------------------------- methods
def _logistic():
    from sklearn.linear_model import LogisticRegression

    # max_iter above sklearn's 100 so that no fit stops on the iteration cap (the plain fits on
    # a9a and Adult converge in ~60 iterations; fairlearn's reweighted ones may need more).
    return LogisticRegression(max_iter=1000)


def _xgboost():
    from xgboost import XGBClassifier

    return XGBClassifier(random_state=0, n_jobs=_THREADS)


def _dense(X):
    return X.toarray() if sp.issparse(X) else X


@dataclasses.dataclass
class Method:
    """One row family of the table.

    Attributes
    ----------
    name : str
        Row label.
    constraint : {"demographic_parity", "equalized_odds"}
    requires : tuple of str
        Modules that must import for the method to run.
    fit : callable
        ``fit(split, bound) -> {variant: predict}``, where ``predict(X, groups)`` returns 0/1
        predictions on the test data; ``variant`` is appended to the row name ("" for the main one).
        Everything inside ``fit`` is timed.
    prepare : callable or None
        ``prepare(split) -> split`` run once, untimed, before the fits (e.g. densify for fairlearn).
    notes : str
    """

    name: str
    constraint: str
    requires: tuple
    fit: object
    prepare: object = None
    notes: str = ""

    def missing(self):
        """Names of the required modules that do not import (empty when the method can run)."""
        import importlib

        out = []
        for module in self.requires:
            if module == "fastcon.FairClassifier":
                # through the submodule: the estimators are re-exported at top level lazily
                try:
                    estimators = importlib.import_module("fastcon.estimators")
                except ImportError:
                    estimators = None
                if not hasattr(estimators, "FairClassifier"):
                    out.append(module)
                continue
            try:
                importlib.import_module(module)
            except ImportError:
                out.append(module)
        return out


def _fastcon_fit(constraint):
    def fit(split, bound):
        from fastcon.estimators import FairClassifier

        model = FairClassifier(constraint=constraint, bound=bound)
        model.fit(split.X_train, split.y_train, sensitive_features=split.g_train)
        return {"": lambda X, g: np.asarray(model.predict(X)).astype(np.int64)}
    return fit


def _fairlearn_fit(constraint, factor):
    def fit(split, bound):
        from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient

        moment = DemographicParity if constraint == "demographic_parity" else EqualizedOdds
        model = ExponentiatedGradient(_logistic(), moment(difference_bound=bound * factor))
        with warnings.catch_warnings():
            # fairlearn 0.15 triggers pandas deprecation warnings (Pandas4Warning, a
            # DeprecationWarning) dozens of times per fit; they do not change its results
            warnings.filterwarnings("ignore", category=DeprecationWarning, module="fairlearn")
            warnings.filterwarnings("ignore", category=FutureWarning, module="fairlearn")
            model.fit(split.X_train, split.y_train, sensitive_features=split.g_train)
        return {
            "randomized predict": lambda X, g: np.asarray(model.predict(X, random_state=0)).astype(np.int64),
            # Deterministic alternative: the majority vote of the fitted distribution over classifiers.
            "deterministic Q >= 1/2": lambda X, g: (model._pmf_predict(X)[:, 1] >= 0.5).astype(np.int64),
        }
    return fit


def _densify(split):
    return dataclasses.replace(split, X_train=_dense(split.X_train), X_test=_dense(split.X_test))


def _oxonfair_metric(constraint):
    from oxonfair import group_metrics as gm

    return gm.demographic_parity if constraint == "demographic_parity" else gm.equalized_odds_max


def _oxonfair_fit(constraint, base, inferred):
    def fit(split, bound):
        from oxonfair import DataDict, FairPredictor
        from oxonfair import group_metrics as gm

        X_train, X_test_cols = split.X_train, None
        if inferred:
            keep = np.setdiff1d(np.arange(split.X_train.shape[1]), split.sensitive_columns)
            X_train = split.X_train[:, keep]
            X_test_cols = keep
        model = base().fit(X_train, split.y_train)
        group_model = _logistic().fit(X_train, split.g_train) if inferred else False
        # Groups travel inside the data dicts (not as the `groups=` argument, which FairPredictor
        # would keep and reuse for the test rows).
        fair = FairPredictor(model, DataDict(split.y_train, X_train, split.g_train), inferred_groups=group_model)
        fair.fit(gm.accuracy, _oxonfair_metric(constraint), bound)

        def predict(X, g):
            if inferred:
                return np.asarray(fair.predict(X[:, X_test_cols])).astype(np.int64)
            # labels are not read at prediction time; FairPredictor's dict format requires a target
            return np.asarray(fair.predict(DataDict(np.zeros(X.shape[0]), X, g))).astype(np.int64)
        return {"": predict}
    return fit


def methods(constraint="demographic_parity"):
    """The table's methods for one constraint (see the module docstring)."""
    if constraint not in CONSTRAINTS:
        raise ValueError(f"constraint: expected one of {list(CONSTRAINTS)}, got {constraint!r}")
    short = "DP" if constraint == "demographic_parity" else "EO"
    moment = "DemographicParity" if constraint == "demographic_parity" else "EqualizedOdds"
    metric = "demographic_parity" if constraint == "demographic_parity" else "equalized_odds_max"
    out = [Method(f"fastcon FairClassifier, {short} (defaults)", constraint, ("fastcon.FairClassifier",),
                  _fastcon_fit(constraint), notes="group needed at fit only")]
    for factor, label in ((1.0, "eps = tol"), (0.5, "eps = tol/2")):
        out.append(Method(f"fairlearn EG + LogisticRegression, {moment}, {label}", constraint, ("fairlearn",),
                          _fairlearn_fit(constraint, factor), prepare=_densify,
                          notes="dense input only (CSR densified, untimed); group needed at fit only"))
    for base, base_name in ((_logistic, "LogisticRegression"), (_xgboost, "XGBoost")):
        out.append(Method(f"OxonFair on {base_name}, group thresholds, {metric}", constraint,
                          ("oxonfair", "xgboost") if base is _xgboost else ("oxonfair",),
                          _oxonfair_fit(constraint, base, inferred=False),
                          notes="group needed at prediction"))
        out.append(Method(f"OxonFair on {base_name}, inferred groups, {metric}", constraint,
                          ("oxonfair", "xgboost") if base is _xgboost else ("oxonfair",),
                          _oxonfair_fit(constraint, base, inferred=True),
                          notes="sensitive columns dropped; group predicted by a logistic model"))
    return out


# ------------------------------------------------------------------------------------- runs
def _row(dataset, method, variant, **fields):
    name = method.name if not variant else f"{method.name} [{variant}]"
    row = dict(dataset=dataset, method=name, constraint=method.constraint, fit_s=np.nan, test_accuracy=np.nan,
               test_dp_gap=np.nan, test_eo_gap=np.nan, train_gap=np.nan, load1=np.nan, status="ok", notes=method.notes)
    row.update(fields)
    return row


def run_method(method, split, bound=0.02, repeats=3):
    """Fit ``method`` ``repeats`` times on ``split``'s training data and score the last fit on its
    test data.

    Returns
    -------
    list of dict
        One row per prediction variant: ``fit_s`` (minimum wall-clock seconds over the repeats),
        ``test_accuracy``, ``test_dp_gap``, ``test_eo_gap``, ``train_gap`` (the constrained gap on
        the training data), ``load1`` (the 1-minute load average after the fits), ``status`` ("ok"
        or "not available (<missing modules>)"), ``notes``.
    """
    if repeats < 1:
        raise ValueError(f"repeats: must be >= 1, got {repeats}")
    missing = method.missing()
    if missing:
        return [_row(split.name, method, "", status=f"{NOT_AVAILABLE} ({', '.join(missing)})")]
    data = prepare(method, split)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        predictors = method.fit(data, bound)
        best = min(best, time.perf_counter() - t0)
    rows = score(method, data, predictors, best)
    for row in rows:
        # other jobs on the machine slow the fits down: keep the load next to the time
        row["load1"] = os.getloadavg()[0]
    return rows


def prepare(method, split):
    """The split as ``method`` takes it (its untimed ``prepare`` step, e.g. densified for fairlearn)."""
    return method.prepare(split) if method.prepare is not None else split


def score(method, data, predictors, fit_s):
    """Rows of `run_method` for fitted ``predictors`` (the output of ``method.fit(data, ...)``)."""
    rows = []
    for variant, predict in predictors.items():
        pred_test = predict(data.X_test, data.g_test)
        pred_train = predict(data.X_train, data.g_train)
        train_gap = (dp_gap(pred_train, data.g_train) if method.constraint == "demographic_parity"
                     else eo_gap(pred_train, data.y_train, data.g_train))
        rows.append(_row(data.name, method, variant, fit_s=fit_s,
                         test_accuracy=accuracy(data.y_test, pred_test, threshold=0.5),
                         test_dp_gap=dp_gap(pred_test, data.g_test),
                         test_eo_gap=eo_gap(pred_test, data.y_test, data.g_test), train_gap=train_gap))
    return rows


def peer_table(dataset, bound=0.02, repeats=3, constraints=None, select=None, data_home=None, log=None):
    """Rows of the side-by-side table for one dataset.

    Parameters
    ----------
    dataset : {"a9a", "adult", "compas"}
    bound : float
        The bound given to every method.
    repeats : int
        Fits per method; the fit time is the minimum.
    constraints : sequence of str, optional
        Default: demographic parity, plus equalized odds on COMPAS.
    select : str, optional
        Case-insensitive substring of the method names to run (all when None).
    log : callable, optional
        Called with each finished row (progress printing).
    """
    if constraints is None:
        constraints = CONSTRAINTS if dataset == "compas" else ("demographic_parity",)
    split = load_split(dataset, data_home=data_home)
    rows = []
    for constraint in constraints:
        for method in methods(constraint):
            if select is not None and select.lower() not in method.name.lower():
                continue
            for row in run_method(method, split, bound=bound, repeats=repeats):
                rows.append(row)
                if log is not None:
                    log(row)
    return rows


class thread_limit:
    """Context manager: run every library on ``threads`` threads (None: their defaults).

    BLAS and OpenMP pools through threadpoolctl, numba's through ``numba.set_num_threads``,
    XGBoost through its ``n_jobs``. One thread is the robust setting when other jobs share the
    cores: OpenBLAS's idle threads spin, and two of them on an oversubscribed 2-core machine made
    a logistic-regression fit on COMPAS 5 to 10 times slower than one thread.
    """

    def __init__(self, threads):
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads: expected a positive int or None, got {threads!r}")
        self.threads = threads

    def __enter__(self):
        global _THREADS
        import numba
        from threadpoolctl import threadpool_limits

        self._saved = (_THREADS, numba.get_num_threads())
        self._limits = threadpool_limits(limits=self.threads)
        if self.threads is not None:
            numba.set_num_threads(min(self.threads, numba.config.NUMBA_NUM_THREADS))
        _THREADS = self.threads
        return self

    def __exit__(self, *exc):
        global _THREADS
        import numba

        _THREADS, numba_threads = self._saved
        numba.set_num_threads(numba_threads)
        self._limits.restore_original_limits()
        return False


def _fmt(value, digits):
    return "—" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def format_table(rows):
    """Markdown table of ``peer_table`` rows ("train gap": the constrained gap, DP or EO, on the
    training data the bound was imposed on)."""
    lines = ["| dataset | method | fit s | test acc | test DP gap | test EO gap | train gap | notes |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        notes = r["notes"] if r["status"] == "ok" else r["status"]
        lines.append(f"| {r['dataset']} | {r['method']} | {_fmt(r['fit_s'], 3)} | {_fmt(r['test_accuracy'], 4)} | "
                     f"{_fmt(r['test_dp_gap'], 4)} | {_fmt(r['test_eo_gap'], 4)} | {_fmt(r['train_gap'], 4)} "
                     f"| {notes} |")
    return "\n".join(lines)


def _log(row):
    print(f"{row['dataset']}: {row['method']}: {row['status']}, fit {row['fit_s']:.3f} s", file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description="fastcon FairClassifier against fairlearn and OxonFair.")
    parser.add_argument("--dataset", default="a9a", choices=DATASETS + ("all",))
    parser.add_argument("--bound", type=float, default=0.02)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--constraint", choices=CONSTRAINTS, action="append",
                        help="repeatable; default demographic parity (and equalized odds on compas)")
    parser.add_argument("--methods", default=None, help="substring of the method names to run")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for every library (default: their own, all cores)")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    if not args.bound > 0:
        parser.error(f"--bound: must be > 0, got {args.bound}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads: must be >= 1, got {args.threads}")
    rows = []
    for dataset in DATASETS if args.dataset == "all" else (args.dataset,):
        with thread_limit(args.threads):
            rows += peer_table(dataset, bound=args.bound, repeats=args.repeats,
                               constraints=args.constraint, select=args.methods, log=_log)
    print(format_table(rows))
    loads = [r["load1"] for r in rows if np.isfinite(r["load1"])]
    if loads:
        print(f"\n1-minute load average after the fits: {min(loads):.1f} to {max(loads):.1f} "
              f"({os.cpu_count()} logical CPUs)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()}
                       for r in rows], fh, indent=1)


if __name__ == "__main__":
    main()
