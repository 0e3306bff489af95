r"""Fair boosted classifiers side by side: fastcon's boosted ``FairGBMClassifier``, FairGBM, OxonFair (issue 36).

One run per dataset and method on the same train/test split (the splits of ``bench/_peers.py``,
plus bank); every row reports the fit time (the minimum wall-clock time of ``--repeats`` complete
fits), the test accuracy and three hard test gaps of the 0/1 predictions, each the worst pair of
groups (:math:`\max_g r_g - \min_g r_g`, fairlearn's ``between_groups`` difference):

.. math::

    \text{DP gap}: r_g = P(\hat y = 1 \mid G = g), \qquad
    \text{TPR gap}: r_g = P(\hat y = 1 \mid y = 1, G = g), \qquad
    \text{FPR gap}: r_g = P(\hat y = 1 \mid y = 0, G = g).

The TPR gap is the equal-opportunity gap (and FairGBM's FNR gap), the larger of the TPR and FPR
gaps the equalized-odds gap. Constrained rows also report ``train gap``: the hard gap of the
quantity they bound, on the training rows the bound was imposed on (the selection rates for
demographic parity, the TPRs for equal opportunity, the FPRs for FPR parity, the larger of both for
equalized odds), all of them, OxonFair's held-out rows included; fastcon's rows also report the
estimator's own ``fit_gap_``. The JSON lines hold every row's training accuracy and three training
gaps too (``train_dp_gap``, ...): how far a gap met on the training rows moves on the test rows is
part of what this benchmark shows (100 boosting rounds fit a few thousand rows' rates closely).

Datasets (``fastcon.datasets``; groups as the registry defines them, group 0 privileged):

* ``adult``: its train and test files (32,561 / 16,281 rows, 108 one-hot and min-max features),
  group = sex; group columns ``sex=*``.
* ``compas``: one file split 2:1 by ``Dataset.split([2/3, 1/3], seed=0)`` as ``_peers.py`` does
  (4,115 / 2,057 rows, 16 features), group = race, Caucasian vs non-Caucasian; group columns
  ``race=*``.
* ``bank`` (UCI bank-additional-full, the largest tabular set of the registry): the same 2:1 split
  (27,459 / 13,729 rows, 63 features), group = the registry's age bucket, 25-60 (39,210 rows) vs
  below 25 or above 60 (1,978 rows; their positive rate is 3.4 times the others'). MANIFEST names
  age and marital as the sensitive attributes used in papers; age is the one the registry encodes
  as ``groups``, so it is the one used here. Group column ``age`` (the min-max-scaled age itself:
  it determines the group exactly). ``duration`` stays a feature as the registry keeps it,
  although UCI notes it is known only after the call, so bank's accuracies are optimistic for
  every method alike.

Which features each method sees (the ``features`` column of the output):

* ``all``: every column of the dataset, the group columns included;
* ``group-blind``: the group columns removed, so the fitted model needs neither the group nor a
  proxy column equal to it at prediction time (the group may still be learnt from correlated
  columns).

Methods (each a `Method`; the bound, ``--bound`` = 0.02 by default, is the same number for all):

1. LightGBM ``LGBMClassifier(n_estimators=100)`` and XGBoost ``XGBClassifier(n_estimators=100)``,
   unconstrained, library defaults otherwise (LightGBM's log silenced with ``verbose=-1``, which
   changes no result), each on ``all`` and on ``group-blind`` features.
2. FairGBM (feedzai's LightGBM 3 fork, PyPI ``fairgbm`` 0.9.14) ``FairGBMClassifier(
   constraint_type=..., n_estimators=200, multiplier_learning_rate=0.1 (its default),
   constraint_fnr_tolerance=bound, constraint_fpr_tolerance=bound)`` fitted with
   ``fit(X, y, constraint_group=g)``, constraint types ``FNR`` (equal opportunity), ``FPR`` (FPR
   parity) and ``FNR,FPR`` (equalized odds); group-blind features, the group passed only as
   ``constraint_group``. FairGBM bounds :math:`\max_h r_h - r_g \le` bound for every group
   :math:`g` on the training rows, the same max-min gap (the multipliers follow the hard rates at
   score 0.5; the trees the cross-entropy proxy of the rates). FairGBM needs scikit-learn < 1.6, so
   it runs in its own virtualenv, in a child process (``--fairgbm-python``, else the environment
   variable ``FASTCON_FAIRGBM_PYTHON``; without either the rows say "not available"). Make that
   virtualenv with::

       python3 -m venv /tmp/fairgbm-venv
       /tmp/fairgbm-venv/bin/pip install fairgbm "scikit-learn<1.6" pandas numpy

   The child reads the arrays from a temporary ``.npz``, fits ``--repeats`` times and writes the
   minimum fit time and the predictions on the training and test rows as JSON; its start-up, the
   import of fairgbm and the data transfer are not timed.
3. OxonFair ``FairPredictor`` on an XGBoost base model (``_peers._xgboost``, XGBoost's defaults),
   demographic parity (``group_metrics.demographic_parity``) and equal opportunity
   (``group_metrics.equal_opportunity``, the TPR difference) at the bound, accuracy maximised:
   *group-aware* (``all`` features, thresholds per true group: the group is needed at prediction)
   and *inferred groups* (``group-blind`` features; a second XGBoost model predicts the group and
   the thresholds are applied to its prediction, OxonFair's route when the group is unknown at
   prediction). Two threshold variants: chosen on the training rows, as ``_peers.py`` does, and
   chosen on a held-out ``--oxonfair-validation`` fraction of them (default 0.25, stratified by
   group and label; the base and group models fit on the rest), OxonFair's documented use
   (``FairPredictor(predictor, validation_data)``). The second is the fairer setting for a boosted
   base: XGBoost's scores and group predictions on its own training rows are overfit, so
   thresholds chosen there miss the bound on test rows (COMPAS, inferred groups: training DP gap
   0.019, test 0.169). The trade-off uses the held-out variant. Fit time = the whole pipeline
   (base model, group model, scoring, threshold search). ``_peers._oxonfair_fit`` is not called
   because it knows only demographic parity and equalized odds and a logistic group model.
4. fastcon's boosted ``fastcon.boosting.FairGBMClassifier(constraint, bound, backend=...,
   n_estimators=100, n_threads=threads, random_state=0)``, demographic parity and equal
   opportunity, on both backends, group-blind (the group passed only as ``sensitive_features``).
   An installed fastcon whose ``FairGBMClassifier`` has no ``constraint`` parameter (the
   mean-loss-gap estimator that preceded issue 36) makes these rows "not available".
5. fastcon's linear ``FairClassifier(constraint, bound)`` with default settings, the same two
   constraints, group-blind: the linear point of the trade-off.

Threads: every library runs on ``--threads`` threads (default 1: LightGBM's and XGBoost's
``n_jobs``, FairGBM's ``n_jobs`` and ``OMP_NUM_THREADS`` in its child, fastcon's ``n_threads``,
BLAS/OpenMP pools and numba through ``_peers.thread_limit``). One thread is the robust setting on
the 2-core machine the issue's anchors come from, where other jobs share the cores. With
``--repeats 1`` a fastcon fit may include numba's compilation when its cache is cold; the minimum
over two or more repeats does not.

Output: one JSON line per row appended to ``--out`` (default
``results/boosting-fairness/<commit>.jsonl``). A row already recorded there with status "ok", for
the same dataset, method, bound, rounds and threads and at least as many repeats, is skipped,
so an interrupted run resumes where it stopped (a "not available" or "failed" row is tried again).
The markdown table of the rows asked for goes to stdout.

``--tradeoff`` sweeps the bound (``--bounds``, default 0.005,0.01,0.02,0.04,0.08) for
fastcon's boosted estimator (LightGBM), fastcon's linear ``FairClassifier``, OxonFair on XGBoost with
inferred groups (held-out thresholds) and FairGBM (for the DP panel ``FNR,FPR`` with both of its tolerances set, FairGBM having
no demographic parity; for the equal-opportunity panel ``FNR``), and plots test accuracy against the
test DP gap (top row) and the test TPR gap (bottom row), one column per dataset, the unconstrained
group-blind LightGBM as a reference point, to ``--figure`` (default
``docs/guide/boosting_tradeoff.png``). The sweep's rows go to ``--out`` like the table's (a table
row at the same bound is reused).

Run from the repository root::

    python bench/boosting_fairness.py --dataset all --repeats 3 --fairgbm-python /tmp/fairgbm-venv/bin/python
    python bench/boosting_fairness.py --dataset all --tradeoff --repeats 1 \
        --fairgbm-python /tmp/fairgbm-venv/bin/python --figure docs/guide/boosting_tradeoff.png
"""
import argparse
import dataclasses
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time

if __name__ == "__main__":
    # Before any OpenMP runtime loads (LightGBM's, XGBoost's, scikit-learn's libgomp): idle OpenMP
    # threads spin by default, which slowed small fits by an order of magnitude on a machine whose
    # cores other jobs share (docs/design.md, Kernels; as bench/_peers.py). The FairGBM child
    # inherits it. An explicit setting is kept.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np


# ------------------------------------------------------------------------------ FairGBM child
def fairgbm_child(data_path, out_path):
    """Fit FairGBM in *this* interpreter (its own virtualenv) and write the results as JSON.

    Runs in the FairGBM virtualenv, which has neither fastcon nor scipy: only numpy, json and the
    ``fairgbm`` package are imported, so this function must stay above the module's other imports.

    Parameters
    ----------
    data_path : str
        ``.npz`` with ``X_train``, ``y_train`` (0/1), ``g_train`` (ints 0..G-1: FairGBM indexes its
        multipliers by the group value), ``X_test`` and ``config``, a JSON string with
        ``constraint_type``, ``bound``, ``n_estimators``, ``threads``, ``repeats`` and
        ``random_state``.
    out_path : str
        JSON written: ``fit_s`` (minimum over the repeats of the ``fit`` call alone),
        ``pred_train``, ``pred_test`` (0/1 lists, FairGBM's ``predict``: probability >= 0.5),
        ``versions``.
    """
    import fairgbm
    import sklearn

    with np.load(data_path) as data:
        arrays = {k: data[k] for k in ("X_train", "y_train", "g_train", "X_test")}
        config = json.loads(str(data["config"]))
    best, model = math.inf, None
    for _ in range(int(config["repeats"])):
        model = fairgbm.FairGBMClassifier(
            constraint_type=config["constraint_type"], n_estimators=int(config["n_estimators"]),
            constraint_fnr_tolerance=float(config["bound"]), constraint_fpr_tolerance=float(config["bound"]),
            n_jobs=int(config["threads"]), random_state=int(config["random_state"]))
        t0 = time.perf_counter()
        model.fit(arrays["X_train"], arrays["y_train"], constraint_group=arrays["g_train"])
        best = min(best, time.perf_counter() - t0)
    result = {"fit_s": best,
              "pred_train": np.asarray(model.predict(arrays["X_train"])).astype(int).tolist(),
              "pred_test": np.asarray(model.predict(arrays["X_test"])).astype(int).tolist(),
              "versions": {"fairgbm": getattr(fairgbm, "__version__", "?"), "scikit-learn": sklearn.__version__,
                           "numpy": np.__version__, "python": sys.version.split()[0]}}
    with open(out_path, "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--fairgbm-child":
    # Dispatched before the imports below, which the FairGBM virtualenv cannot satisfy.
    fairgbm_child(sys.argv[2], sys.argv[3])
    sys.exit(0)

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import _peers  # noqa: E402  (the linear peers' benchmark: splits, thread limits, XGBoost base model)
from _timing import git_state  # noqa: E402
from fastcon.metrics import group_rates  # noqa: E402

DATASETS = ("adult", "compas", "bank")
#: Feature-name prefixes of the columns that encode each dataset's group (bank: the age column).
SENSITIVE_PREFIX = {"adult": "sex=", "compas": "race=", "bank": "age"}
CONSTRAINTS = ("demographic_parity", "equal_opportunity")
#: FairGBM's constraint types and the fastcon constraint each bounds.
FAIRGBM_TYPES = {"FNR": "equal_opportunity", "FPR": "false_positive_parity", "FNR,FPR": "equalized_odds"}
SHORT = {None: "—", "demographic_parity": "DP", "equal_opportunity": "EO (TPR)", "false_positive_parity": "FPR",
         "equalized_odds": "EOdds"}
BOUNDS = (0.005, 0.01, 0.02, 0.04, 0.08)
NOT_AVAILABLE = "not available"
FEATURES = ("all", "group-blind")


# ------------------------------------------------------------------------------------ data
def load_split(dataset, data_home=None):
    """The benchmark's split of ``dataset`` (one of `DATASETS`) as a ``_peers.Split``.

    Adult and COMPAS: ``_peers.load_split`` (Adult's train/test files; COMPAS 2:1 with seed 0).
    bank: the same 2:1 split as COMPAS, ``Dataset.split([2/3, 1/3], seed=0)``. ``sensitive_columns``
    are the columns named by `SENSITIVE_PREFIX`.
    """
    from fastcon.datasets import load

    if dataset not in DATASETS:
        raise ValueError(f"dataset: expected one of {list(DATASETS)}, got {dataset!r}")
    if dataset in _peers.DATASETS:
        split = _peers.load_split(dataset, data_home=data_home)
    else:
        train, test = load(dataset, data_home=data_home, subset="train").split([2 / 3, 1 / 3], seed=0)
        split = _peers.Split(name=dataset, X_train=train.X, y_train=(train.y > 0).astype(np.int64),
                             g_train=train.groups, X_test=test.X, y_test=(test.y > 0).astype(np.int64),
                             g_test=test.groups, group_names=list(train.group_names),
                             sensitive_columns=_peers._sensitive_columns(train, SENSITIVE_PREFIX[dataset]))
    if split.sensitive_columns.size == 0:
        raise ValueError(f"{dataset}: no feature column encodes the group ({SENSITIVE_PREFIX[dataset]!r})")
    return split


@dataclasses.dataclass
class Views:
    """The split's features in the two forms the methods see (`FEATURES`), dense."""

    split: object
    train: dict
    test: dict

    @classmethod
    def of(cls, split):
        Xtr, Xte = _peers._dense(split.X_train), _peers._dense(split.X_test)
        keep = np.setdiff1d(np.arange(Xtr.shape[1]), split.sensitive_columns)
        return cls(split, {"all": Xtr, "group-blind": np.ascontiguousarray(Xtr[:, keep])},
                   {"all": Xte, "group-blind": np.ascontiguousarray(Xte[:, keep])})


# --------------------------------------------------------------------------------- metrics
def rate_gaps(pred, y, groups):
    """Hard test gaps of 0/1 predictions: ``{"dp": ..., "tpr": ..., "fpr": ...}`` (module docstring).

    A gap undefined on these rows (a group without positives or negatives) is NaN.
    """
    pred = np.asarray(pred)
    if pred.ndim != 1 or not np.all(np.isin(pred, (0, 1))):
        raise ValueError("pred: expected a 1-D array of 0/1 predictions")
    rates = group_rates(y, pred, sensitive_features=groups)
    out = {}
    for key, rate in (("dp", "selection_rate"), ("tpr", "true_positive_rate"), ("fpr", "false_positive_rate")):
        try:
            out[key] = rates.gap(rate)
        except ValueError:
            out[key] = math.nan
    return out


def constrained_gap(constraint, pred, y, groups):
    """The hard gap of the quantity ``constraint`` bounds (None: NaN, nothing is bounded)."""
    if constraint is None:
        return math.nan
    gaps = rate_gaps(pred, y, groups)
    return {"demographic_parity": gaps["dp"], "equal_opportunity": gaps["tpr"],
            "false_positive_parity": gaps["fpr"], "equalized_odds": max(gaps["tpr"], gaps["fpr"])}[constraint]


def accuracy(pred, y):
    return float(np.mean(np.asarray(pred) == np.asarray(y)))


# ---------------------------------------------------------------------------------- methods
@dataclasses.dataclass
class Outcome:
    """What one method's fits give: the minimum fit time and the last fit's 0/1 predictions."""

    fit_s: float
    pred_train: np.ndarray
    pred_test: np.ndarray
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Method:
    """One row of the table.

    Attributes
    ----------
    name : str
        Row label (without the bound, which is a column).
    family : str
        The trade-off figure's series the row belongs to.
    constraint : str or None
        fastcon's name of the bounded quantity (None: unconstrained).
    features : {"all", "group-blind"}
        Which columns the method's models see (`Views`).
    group_at_predict : bool
        Whether prediction needs the true group.
    rounds : int or None
        Boosting rounds (None: not a booster of its own, or the base model's default).
    run : callable
        ``run(views, bound, repeats, threads) -> Outcome``.
    unavailable : callable
        ``unavailable() -> str or None``: why the method cannot run here (None: it can).
    notes : str
    """

    name: str
    family: str
    constraint: object
    features: str
    group_at_predict: bool
    rounds: object
    run: object
    unavailable: object
    notes: str = ""


def _missing_modules(*modules):
    import importlib

    missing = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return f"{NOT_AVAILABLE} ({', '.join(missing)} missing)" if missing else None


def _timed(fit, features):
    """A `Method.run` from ``fit(X_train, y, g, bound, threads) -> predict(X)``: ``fit`` timed."""
    def run(views, bound, repeats, threads):
        split = views.split
        Xtr, Xte = views.train[features], views.test[features]
        best = math.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            predict = fit(Xtr, split.y_train, split.g_train, bound, threads)
            best = min(best, time.perf_counter() - t0)
        extra = getattr(predict, "extra", {})
        return Outcome(best, _labels(predict(Xtr, split.g_train)), _labels(predict(Xte, split.g_test)), extra)
    return run


def _labels(pred):
    return np.asarray(pred).astype(np.int64).ravel()


def _unconstrained(backend, rounds, features):
    def fit(X, y, g, bound, threads):
        if backend == "lightgbm":
            from lightgbm import LGBMClassifier

            model = LGBMClassifier(n_estimators=rounds, n_jobs=threads, verbose=-1)
        else:
            from xgboost import XGBClassifier

            model = XGBClassifier(n_estimators=rounds, n_jobs=threads, random_state=0)
        model.fit(X, y)
        return lambda X, g: model.predict(X)
    label = "LightGBM" if backend == "lightgbm" else "XGBoost"
    return Method(f"{label}, unconstrained, {features}", f"{label} unconstrained ({features})", None, features, False,
                  rounds,
                  _timed(fit, features), lambda: _missing_modules(backend))


def boosted_unavailable(cls=None):
    """Why fastcon's boosted estimator cannot run the rate constraints (None: it can).

    ``cls`` defaults to the installed ``fastcon.boosting.FairGBMClassifier``; the estimator of issue 36
    has a ``constraint`` parameter, the mean-loss-gap one before it has not.
    """
    import inspect

    if cls is None:
        missing = _missing_modules("sklearn")
        if missing:
            return missing
        try:
            from fastcon.boosting import FairGBMClassifier as cls
        except ImportError as exc:
            return f"{NOT_AVAILABLE} (fastcon.boosting.FairGBMClassifier: {exc})"
    if "constraint" not in inspect.signature(cls).parameters:
        return (f"{NOT_AVAILABLE} (the installed fastcon.boosting.FairGBMClassifier has no `constraint` parameter: "
                "it bounds the mean-loss gap only)")
    return None


def _fastcon_boosted(constraint, backend, rounds, validation=None):
    def fit(X, y, g, bound, threads):
        from fastcon.boosting import FairGBMClassifier

        model = FairGBMClassifier(constraint=constraint, bound=bound, backend=backend, n_estimators=rounds,
                                  validation_fraction=validation, n_threads=threads, random_state=0)
        model.fit(X, y, sensitive_features=g)
        predict = _Predict(lambda X, g: model.predict(X))
        predict.extra["fit_gap"] = float(getattr(model, "fit_gap_", math.nan))
        return predict
    held = "" if validation is None else f", held-out {validation:g}"
    return Method(f"fastcon FairGBMClassifier ({backend}{held}), {SHORT[constraint]}",
                  f"fastcon boosted ({backend}{held})",
                  constraint, "group-blind", False, rounds, _timed(fit, "group-blind"),
                  lambda: boosted_unavailable() or _missing_modules(backend), notes="group needed at fit only")


class _Predict:
    """A predict function carrying extra fields for the row (the estimator's ``fit_gap_``)."""

    def __init__(self, predict):
        self.predict = predict
        self.extra = {}

    def __call__(self, X, g):
        return self.predict(X, g)


def linear_unavailable():
    """Why fastcon's linear ``FairClassifier`` cannot run (None: it can)."""
    missing = _missing_modules("sklearn")
    if missing:
        return missing
    try:
        from fastcon.estimators import FairClassifier  # noqa: F401
    except ImportError as exc:
        return f"{NOT_AVAILABLE} (fastcon.estimators.FairClassifier: {exc})"
    return None


def _fastcon_linear(constraint):
    def fit(X, y, g, bound, threads):
        from fastcon.estimators import FairClassifier

        model = FairClassifier(constraint=constraint, bound=bound)
        model.fit(X, y, sensitive_features=g)
        predict = _Predict(lambda X, g: model.predict(X))
        predict.extra["fit_gap"] = float(getattr(model, "fit_gap_", math.nan))
        return predict
    return Method(f"fastcon FairClassifier (linear), {SHORT[constraint]}", "fastcon linear", constraint, "group-blind",
                  False, None, _timed(fit, "group-blind"), linear_unavailable, notes="group needed at fit only")


def _validation_rows(y, g, fraction, seed=0):
    """Row indices held out for OxonFair's thresholds: ``fraction`` of every (group, label) cell."""
    rng = np.random.default_rng(seed)
    held = []
    for cell in np.unique(g * 2 + y):
        rows = np.flatnonzero(g * 2 + y == cell)
        held.append(rng.choice(rows, size=int(round(fraction * rows.size)), replace=False))
    held = np.sort(np.concatenate(held))
    return np.setdiff1d(np.arange(y.shape[0]), held), held


def _oxonfair(constraint, inferred, validation=0.0):
    metric = {"demographic_parity": "demographic_parity", "equal_opportunity": "equal_opportunity"}[constraint]
    features = "group-blind" if inferred else "all"

    def fit(X, y, g, bound, threads):
        from oxonfair import DataDict, FairPredictor
        from oxonfair import group_metrics as gm

        fit_rows, threshold_rows = (_validation_rows(y, g, validation) if validation > 0
                                    else (slice(None), slice(None)))
        # _peers._xgboost reads the thread count _peers.thread_limit set (run_rows enters it).
        model = _peers._xgboost().fit(X[fit_rows], y[fit_rows])
        # The group model is of the base model's kind (XGBoost), not _peers.py's logistic
        # regression: the stronger inference a user of a boosted base would choose.
        group_model = _peers._xgboost().fit(X[fit_rows], g[fit_rows]) if inferred else False
        # Groups travel inside the data dicts (not the `groups=` argument, which FairPredictor would
        # keep and reuse for the test rows), as in _peers._oxonfair_fit.
        fair = FairPredictor(model, DataDict(y[threshold_rows], X[threshold_rows], g[threshold_rows]),
                             inferred_groups=group_model)
        fair.fit(gm.accuracy, getattr(gm, metric), bound)

        def predict(X, g):
            if inferred:
                return fair.predict(X)
            # labels are not read at prediction time; FairPredictor's dict format requires a target
            return fair.predict(DataDict(np.zeros(X.shape[0]), X, g))
        return predict
    where = f"thresholds on a held-out {validation:g} of the training rows" if validation > 0 else \
        "thresholds on the training rows"
    if inferred:
        name = "OxonFair on XGBoost, inferred groups"
        notes = f"group columns dropped; group predicted by XGBoost; {where}"
    else:
        name, notes = "OxonFair on XGBoost, group thresholds", f"group needed at prediction; {where}"
    if validation > 0:
        name += f", validation {validation:g}"
    return Method(f"{name}, {metric}", f"OxonFair XGBoost {'inferred' if inferred else 'group-aware'}", constraint,
                  features, not inferred, None, _timed(fit, features), lambda: _missing_modules("oxonfair", "xgboost"),
                  notes=notes)


def fairgbm_unavailable(python):
    """Why FairGBM cannot run with the interpreter ``python`` (None: it can)."""
    if not python:
        return (f"{NOT_AVAILABLE} (no FairGBM interpreter: pass --fairgbm-python or set FASTCON_FAIRGBM_PYTHON; "
                "see the module docstring for its virtualenv)")
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return f"{NOT_AVAILABLE} (--fairgbm-python {python}: no such executable)"
    probe = subprocess.run([python, "-c", "import fairgbm, sklearn, numpy"], capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"{NOT_AVAILABLE} (fairgbm does not import in {python}: {last})"
    return None


def _fairgbm(constraint_type, python, rounds, timeout=None):
    def run(views, bound, repeats, threads):
        split = views.split
        config = {"constraint_type": constraint_type, "bound": bound, "n_estimators": rounds,
                  "threads": threads, "repeats": repeats, "random_state": 0}
        with tempfile.TemporaryDirectory(prefix="fastcon-fairgbm-") as tmp:
            data, out = os.path.join(tmp, "data.npz"), os.path.join(tmp, "out.json")
            np.savez(data, X_train=views.train["group-blind"], y_train=split.y_train.astype(np.int64),
                     g_train=split.g_train.astype(np.int64), X_test=views.test["group-blind"],
                     config=json.dumps(config))
            env = dict(os.environ, OMP_NUM_THREADS=str(threads))
            proc = subprocess.run([python, str(pathlib.Path(__file__).resolve()), "--fairgbm-child", data, out],
                                  capture_output=True, text=True, env=env, timeout=timeout)
            if proc.returncode != 0:
                raise RuntimeError(f"FairGBM child failed: {proc.stderr.strip()[-1500:]}")
            with open(out) as fh:
                result = json.load(fh)
        return Outcome(result["fit_s"], _labels(result["pred_train"]), _labels(result["pred_test"]),
                       {"versions": result["versions"]})
    constraint = FAIRGBM_TYPES[constraint_type]
    return Method(f"FairGBM, {constraint_type}", f"FairGBM {constraint_type}", constraint, "group-blind", False, rounds,
                  run, lambda: fairgbm_unavailable(python),
                  notes="own virtualenv (scikit-learn < 1.6), child process; group needed at fit only")


@dataclasses.dataclass
class Settings:
    """What the methods are built with (the command line's options)."""

    rounds: int = 100
    fairgbm_rounds: int = 200
    fairgbm_python: object = None
    fairgbm_timeout: object = None
    oxonfair_validation: float = 0.25


def table_methods(settings):
    """The table's rows for one dataset, in print order (module docstring)."""
    out = []
    for backend in ("lightgbm", "xgboost"):
        for features in FEATURES:
            out.append(_unconstrained(backend, settings.rounds, features))
    for constraint_type in FAIRGBM_TYPES:
        out.append(_fairgbm(constraint_type, settings.fairgbm_python, settings.fairgbm_rounds,
                            settings.fairgbm_timeout))
    for constraint in CONSTRAINTS:
        for validation in (0.0, settings.oxonfair_validation) if settings.oxonfair_validation > 0 else (0.0,):
            for inferred in (False, True):
                out.append(_oxonfair(constraint, inferred, validation))
    for constraint in CONSTRAINTS:
        for backend in ("lightgbm", "xgboost"):
            out.append(_fastcon_boosted(constraint, backend, settings.rounds))
        # the gap measured on held-out rows, as OxonFair's held-out thresholds
        if settings.oxonfair_validation > 0:
            out.append(_fastcon_boosted(constraint, "lightgbm", settings.rounds, settings.oxonfair_validation))
    for constraint in CONSTRAINTS:
        out.append(_fastcon_linear(constraint))
    return out


def tradeoff_methods(settings, constraint):
    """The trade-off figure's series for one panel (``constraint``): ``[(method, swept?)]``."""
    fairgbm_type = "FNR,FPR" if constraint == "demographic_parity" else "FNR"
    return [(_fastcon_boosted(constraint, "lightgbm", settings.rounds), True),
            (_fastcon_boosted(constraint, "lightgbm", settings.rounds, settings.oxonfair_validation), True),
            (_fastcon_linear(constraint), True),
            # the held-out thresholds: OxonFair's documented use, and the variant whose bound survives on test rows
            (_oxonfair(constraint, True, settings.oxonfair_validation), True),
            (_fairgbm(fairgbm_type, settings.fairgbm_python, settings.fairgbm_rounds, settings.fairgbm_timeout), True),
            (_unconstrained("lightgbm", settings.rounds, "group-blind"), False)]


# ------------------------------------------------------------------------------------- rows
def row_key(dataset, method, bound, threads):
    """What makes two records the same row (repeats aside: more repeats serve fewer)."""
    return (dataset, method.name, method.features, None if method.constraint is None else float(bound),
            method.rounds, threads)


def record_bound(record):
    """A record's bound: its ``"bound"``, or ``"tolerance"`` in the records written before issue 37."""
    return record["bound"] if "bound" in record else record.get("tolerance")


def _record_key(record):
    bound = record_bound(record)
    return (record["dataset"], record["method"], record.get("features"), None if bound is None else float(bound),
            record.get("rounds"), record.get("threads"))


def read_records(out):
    """The records of the JSON-lines file ``out`` (none when it does not exist)."""
    out = pathlib.Path(out)
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def recorded(records, key, repeats):
    """The last "ok" record of ``key`` with at least ``repeats`` repeats, else None."""
    found = None
    for record in records:
        if record.get("status") == "ok" and _record_key(record) == key and record.get("repeats", 0) >= repeats:
            found = record
    return found


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.floating, np.integer)):
        return _clean(value.item())
    return value


def run_method(method, views, bound, repeats, threads):
    """One row: ``method`` fitted ``repeats`` times on ``views``' training rows, scored on both parts."""
    split = views.split
    row = dict(dataset=split.name, method=method.name, family=method.family, constraint=method.constraint,
               bound=None if method.constraint is None else float(bound), rounds=method.rounds,
               features=method.features, group_at_predict=method.group_at_predict, threads=threads, repeats=repeats,
               n_train=int(split.y_train.shape[0]), n_test=int(split.y_test.shape[0]), fit_s=math.nan,
               test_accuracy=math.nan, test_dp_gap=math.nan, test_tpr_gap=math.nan, test_fpr_gap=math.nan,
               train_gap=math.nan, fit_gap=math.nan, train_dp_gap=math.nan, train_tpr_gap=math.nan,
               train_fpr_gap=math.nan, status="ok", notes=method.notes)
    reason = method.unavailable()
    if reason:
        row["status"] = reason
        return row
    try:
        outcome = method.run(views, bound, repeats, threads)
    except Exception as exc:  # a peer's failure is a row of the table, not the end of the run
        row["status"] = f"failed: {type(exc).__name__}: {str(exc)[-500:]}"
        return row
    gaps = rate_gaps(outcome.pred_test, split.y_test, split.g_test)
    # every row's training gaps too: the distance between them and the test gaps shows how much of
    # a bound met on the training rows survives on new rows (boosters can fit the training rows' rates)
    train = rate_gaps(outcome.pred_train, split.y_train, split.g_train)
    row.update(fit_s=outcome.fit_s, test_accuracy=accuracy(outcome.pred_test, split.y_test),
               train_accuracy=accuracy(outcome.pred_train, split.y_train),
               test_dp_gap=gaps["dp"], test_tpr_gap=gaps["tpr"], test_fpr_gap=gaps["fpr"],
               train_gap=constrained_gap(method.constraint, outcome.pred_train, split.y_train, split.g_train),
               train_dp_gap=train["dp"], train_tpr_gap=train["tpr"], train_fpr_gap=train["fpr"],
               load1=os.getloadavg()[0])
    row.update(outcome.extra)
    return row


def run_rows(split, jobs, out, repeats=3, threads=1, log=None, context=None):
    """Run the rows ``jobs`` (``[(method, bound)]``) on ``split`` that ``out`` does not hold yet.

    Parameters
    ----------
    split : _peers.Split
        Any split (tests inject small synthetic ones).
    out : path
        JSON-lines file; each new row is appended as soon as it is done.
    context : dict, optional
        Fields added to every new record (commit, date).

    Returns
    -------
    list of dict
        The rows asked for, in ``jobs``' order: the recorded one when skipped, else the new one.
    """
    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    records = read_records(out)
    views = None
    rows = []
    with _peers.thread_limit(threads):
        for method, bound in jobs:
            key = row_key(split.name, method, bound, threads)
            old = recorded(records, key, repeats)
            if old is not None:
                if log is not None:
                    log(old, skipped=True)
                rows.append(old)
                continue
            if views is None:
                views = Views.of(split)
            row = {k: _clean(v) for k, v in run_method(method, views, bound, repeats, threads).items()}
            row.update(context or {})
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            records.append(row)
            rows.append(row)
            if log is not None:
                log(row, skipped=False)
    return rows


# ----------------------------------------------------------------------------------- output
def _fmt(value, digits):
    return "—" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def format_table(rows):
    """Markdown table of `run_rows` rows."""
    lines = ["| dataset | method | tol | features | fit s | test acc | test DP gap | test TPR gap | test FPR gap "
             "| train gap | fit_gap_ | notes |", "|---" * 12 + "|"]
    for r in rows:
        notes = r["notes"] if r["status"] == "ok" else r["status"]
        bound = record_bound(r)
        tol = "—" if bound is None else f"{bound:g}"
        lines.append(f"| {r['dataset']} | {r['method']} | {tol} | {r['features']} | {_fmt(r['fit_s'], 3)} "
                     f"| {_fmt(r['test_accuracy'], 4)} | {_fmt(r['test_dp_gap'], 4)} | {_fmt(r['test_tpr_gap'], 4)} "
                     f"| {_fmt(r['test_fpr_gap'], 4)} | {_fmt(r['train_gap'], 4)} | {_fmt(r.get('fit_gap'), 4)} "
                     f"| {notes} |")
    return "\n".join(lines)


def plot_tradeoff(panels, path):
    """Test accuracy against the test gap, one panel per (constraint, dataset).

    Parameters
    ----------
    panels : dict
        ``{(constraint, dataset): {family: [row, ...]}}`` (rows with status "ok" are drawn).
    path : path
        PNG written (matplotlib's Agg backend).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    constraints = sorted({c for c, _ in panels}, key=CONSTRAINTS.index)
    datasets = [d for d in DATASETS if any(d == ds for _, ds in panels)] or sorted({d for _, d in panels})
    fig, axes = plt.subplots(len(constraints), len(datasets), figsize=(4.2 * len(datasets), 3.6 * len(constraints)),
                             squeeze=False)
    x_of = {"demographic_parity": ("test_dp_gap", "test DP gap"), "equal_opportunity": ("test_tpr_gap",
                                                                                        "test TPR gap")}
    for i, constraint in enumerate(constraints):
        field, label = x_of[constraint]
        for j, dataset in enumerate(datasets):
            ax = axes[i][j]
            for family, rows in panels.get((constraint, dataset), {}).items():
                rows = sorted((r for r in rows if r.get("status") == "ok"), key=lambda r: record_bound(r) or 0)
                if not rows:
                    continue
                xs = [r[field] for r in rows]
                ys = [r["test_accuracy"] for r in rows]
                if rows[0]["constraint"] is None:
                    ax.plot(xs, ys, "k*", markersize=10, label=family)
                else:
                    line, = ax.plot(xs, ys, "o-", markersize=4, label=family)
                    for x, y, r in zip(xs, ys, rows):   # each point's bound, to read the sweep
                        ax.annotate(f"{record_bound(r):g}", (x, y), fontsize=5, color=line.get_color(),
                                    xytext=(2, 2), textcoords="offset points")
            ax.set_title(f"{dataset}: {SHORT[constraint]}")
            ax.set_xlabel(label)
            ax.set_ylabel("test accuracy")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6)
    fig.tight_layout()
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _commit():
    return git_state(REPO)


def _log(row, skipped):
    what = "already recorded, skipped" if skipped else row["status"]
    fit = row.get("fit_s")
    fit = f", fit {fit:.3f} s" if isinstance(fit, float) and math.isfinite(fit) else ""
    bound = record_bound(row)
    bound = "" if bound is None else f" (bound {bound:g})"
    print(f"{row['dataset']}: {row['method']}{bound}: {what}{fit}", file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="all", choices=DATASETS + ("all",))
    parser.add_argument("--bound", type=float, default=0.02)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="threads of every library (default 1)")
    parser.add_argument("--rounds", type=int, default=100, help="rounds of LightGBM, XGBoost and fastcon's boosting")
    parser.add_argument("--fairgbm-rounds", type=int, default=200)
    parser.add_argument("--fairgbm-python", default=os.environ.get("FASTCON_FAIRGBM_PYTHON"),
                        help="python of FairGBM's virtualenv (default: $FASTCON_FAIRGBM_PYTHON)")
    parser.add_argument("--fairgbm-timeout", type=float, default=1800, help="seconds a FairGBM child may run")
    parser.add_argument("--oxonfair-validation", type=float, default=0.25,
                        help="fraction of the training rows held out for OxonFair's thresholds in its second "
                             "variant and the trade-off (default 0.25; 0: thresholds on the training rows only)")
    parser.add_argument("--methods", default=None, help="case-insensitive substring of the method names to run")
    parser.add_argument("--out", default=None, help="JSON lines (default results/boosting-fairness/<commit>.jsonl)")
    parser.add_argument("--tradeoff", action="store_true", help="sweep the bounds and draw the figure")
    parser.add_argument("--bounds", default=",".join(f"{t:g}" for t in BOUNDS))
    parser.add_argument("--figure", default=str(REPO / "docs" / "guide" / "boosting_tradeoff.png"))
    parser.add_argument("--data-home", default=None, help="data folder (default: $FASTCON_DATA)")
    args = parser.parse_args(argv)
    if not args.bound > 0:
        parser.error(f"--bound: must be > 0, got {args.bound}")
    for flag in ("repeats", "threads", "rounds", "fairgbm_rounds"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')}: must be >= 1, got {getattr(args, flag)}")
    if not 0 <= args.oxonfair_validation < 1:
        parser.error(f"--oxonfair-validation: in [0, 1), got {args.oxonfair_validation}")
    try:
        bounds = [float(t) for t in args.bounds.split(",")]
    except ValueError:
        parser.error(f"--bounds: comma-separated numbers, got {args.bounds!r}")
    if not all(t > 0 for t in bounds):
        parser.error("--bounds: every bound must be > 0")
    commit, dirty = _commit()
    out = pathlib.Path(args.out or REPO / "results" / "boosting-fairness" / f"{commit}.jsonl")
    settings = Settings(rounds=args.rounds, fairgbm_rounds=args.fairgbm_rounds, fairgbm_python=args.fairgbm_python,
                        fairgbm_timeout=args.fairgbm_timeout, oxonfair_validation=args.oxonfair_validation)

    def chosen(method):
        return args.methods is None or args.methods.lower() in method.name.lower()

    context = {"commit": commit, "dirty_tree": dirty, "date": time.strftime("%Y-%m-%d %H:%M")}
    rows, panels = [], {}
    for dataset in DATASETS if args.dataset == "all" else (args.dataset,):
        split = load_split(dataset, data_home=args.data_home)
        if args.tradeoff:
            for constraint in CONSTRAINTS:
                series = [(m, swept) for m, swept in tradeoff_methods(settings, constraint) if chosen(m)]
                jobs = [(m, t) for m, swept in series for t in (bounds if swept else bounds[:1])]
                done = run_rows(split, jobs, out, repeats=args.repeats, threads=args.threads, log=_log,
                                context=context)
                rows += done
                families = panels.setdefault((constraint, dataset), {})
                for (method, _), row in zip(jobs, done):
                    families.setdefault(method.family, []).append(row)
        else:
            jobs = [(m, args.bound) for m in table_methods(settings) if chosen(m)]
            rows += run_rows(split, jobs, out, repeats=args.repeats, threads=args.threads, log=_log, context=context)
    print(format_table(rows))
    loads = [r["load1"] for r in rows if isinstance(r.get("load1"), float)]
    if loads:
        print(f"\n1-minute load average after the fits: {min(loads):.1f} to {max(loads):.1f} "
              f"({os.cpu_count()} logical CPUs); every library on {args.threads} thread(s)")
    print(f"rows in {out}")
    if args.tradeoff:
        print(f"figure: {plot_tradeoff(panels, args.figure)}")


if __name__ == "__main__":
    main()
