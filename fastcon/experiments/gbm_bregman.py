r"""Lin & Deng [LD23] Tables 1–2 and Figures 1–3: constrained gradient boosting by Bregman proximal methods.

Lin & Deng, "GBM-based Bregman Proximal Algorithms for Constrained Learning" (2023), Section 6.

**Tasks.** Neyman–Pearson classification (NP, eq. (3.1)): minimise the cross-entropy of the
unconstrained classes subject to class loss sums :math:`\sum_{b_i = j}\ell_i \le \alpha_j`;
fairness (Section 4): minimise the total cross-entropy subject to
:math:`\beta(\xi_a - \xi_b - \alpha) \le 0` for every ordered pair of groups, :math:`\xi_a` the
mean loss of group :math:`a` (`fastcon.problems._score_problems`).

**Data.**

* a9a (LIBSVM, official train/test files), binary NP in place of the paper's Kaggle credit-card
  data (not obtainable here): bound on the error of the positive class (+1, income > 50K, the
  minority class like the paper's frauds) :math:`e = 0.05`; the objective is the loss of the
  other class only (the Credit set-up: weight 0 on the bounded class).
* Dry Bean (UCI, registry ``drybean``), 7-class NP: BOMBAY :math:`\le 1\%`, CALI
  :math:`\le 3\%`, DERMASON :math:`\le 2\%`, HOROZ :math:`\le 2\%` (the classes the authors'
  code bounds; the paper's index range is inconsistent), total cross-entropy as the objective;
  the first 15 features (as the authors' code), standardised on the training part of a seeded
  80/20 split.
* Adult (UCI, registry ``adult``: official train/test files, one-hot categoricals), groups sex.
* COMPAS (ProPublica ``compas-scores-two-years.csv`` from the registry, ProPublica's row filter:
  6,172 rows), the paper's 3-class label ``score_text`` (Low/Medium/High) and features
  c_charge_degree, age_cat, race, sex, priors_count, two_year_recid (`load_compas_score_text`);
  groups: race, all six values present (the paper's "[5]" races is a miscount); seeded 80/20 split.

**Methods**, per dataset and backend (LightGBM, XGBoost), on one hyper-parameter draw each:

* ours: ABPP (`fastcon.solvers.abpp`, Algorithm 1) for NP, CBPR (`fastcon.solvers.cbpr`,
  Algorithm 2, ABPP inside) for fairness, on `fastcon.boosting.LightGBMScoreModel` /
  `XGBoostScoreModel` (``rounds`` rounds per proximal step on one booster, the ensemble kept
  cumulatively, so test predictions sum the trees of every step);
* the paired vanilla LightGBM / XGBoost (log-loss or softmax objective) with the same tree
  hyper-parameters and as many boosting rounds as our ensemble has;
* FairGBM (Cruz et al., "FairGBM: Gradient Boosting with Fairness Constraints", PyPI
  ``fairgbm``, a LightGBM fork) on the LightGBM fairness tasks, ``constraint_type="FNR"`` and
  ``multiplier_learning_rate`` = the draw's dual step, as in the authors' code; it is run through
  ``fairgbm.train`` (its scikit-learn wrapper calls ``check_X_y(force_all_finite=...)``, removed
  from scikit-learn 1.8). FairGBM handles binary labels only: on COMPAS (3 classes) it is skipped
  (the authors' wrapper silently switches a 3-class fit to the plain ``multiclass`` objective,
  i.e. unconstrained LightGBM). When ``fairgbm`` is not installed it is skipped with one line.

**Hyper-parameter draws** (the paper's random search, distributions of the authors' code):
:math:`\tau_0 \sim U(0.001, 0.2)`; :math:`\sigma_0 \sim U(0.001, 0.2)` (NP, XGBoost fairness) or
:math:`U(0.1, 0.3)` (LightGBM fairness); ABPP iterations ``randint(30, 100)``; CBPR outer
``randint(20, 40)`` x inner ``randint(30, 50)``; outlier threshold ``randint(7, 30)``; fairness
:math:`\alpha_{\max} \sim U(0.001, 0.2)`, :math:`\beta \sim U(0.5, 10)` with probability 0.7 else
:math:`\min_a n_a`; learning rate :math:`U(0.001, 0.9)` (XGBoost fairness :math:`U(0.1, 0.3)`),
leaves ``randint(30, 100)``, depth ``randint(4, 30)``, min child weight :math:`U(0.01, 0.9)`,
column fraction :math:`U(0.001, 1)`, L1 and L2 :math:`U(0, 1)`, XGBoost's gamma :math:`U(0, 2)`.
One exception: boosting rounds per proximal step are drawn from ``randint(5, 20)``, not the
code's ``n_estimators`` ``randint(50, 200)``: a proximal point method needs only an inexact step,
and 200 rounds x 50 inner x 40 outer steps is 400,000 rounds per fairness run. Initial
multipliers as in the code: 0.1 (binary NP), 1 per class (multi-class NP), 1 per pair (fairness).
One task per (dataset, backend, draw); each draw has its own seed, so results do not depend on
the order the tasks run in.

**Heuristics used** (the paper relies on them): NP bounds :math:`\alpha_j = n_je_j\log J` at the
start and re-estimated as :math:`e_j\sum_{b_i = j}\ell_i` at :math:`\lceil K/2\rceil` (Section 6,
per class as the authors' code); outlier removal at the same iteration (Appendix G; rows dropped
from every later subproblem, unlike the code's defect C3; a run where it would empty a class or
group is re-run without it and says so); fairness: the bounds start at :math:`10^{-5}` (zero
scores strictly feasible) and follow :math:`\alpha \leftarrow \alpha + (\alpha_{\max} -
\alpha)/((l+1)(l+2))` before each CBPR outer step, with outlier removal at
:math:`\lceil T/2\rceil`. Not used: the code's early stops and dual-stagnation test (not in the
paper). Reference-code defects avoided: the ensemble is cumulative (C1), the ABPP anchor moves
(C2), the extrapolation uses the previous constraint values (C4), the CBPR prox weight is
:math:`L(1 + \sum y)` (C5), class weights are :math:`w_j + \lambda_j`, not cumulative (C6), CBPR's
inner ABPP takes the accelerated steps :math:`\mu = L` (C7).

**Metrics** (test set, [LD23] §6): accuracy; NP violation :math:`\sum_j[\text{err}_j - e_j]_+`
over the bounded classes; fairness: the per-group error rates :math:`r_a`, :math:`|r_0 - r_1|`
for two groups and their population standard deviation for more.

**Outputs.** ``results.json`` (one run per task: the common schema, the draw in ``params``, and
``metrics`` with test and training accuracy / violation / fairness of ours, the baseline and
FairGBM, and ``step_condition`` :math:`\tau_0\sigma_0L_g^2`, which ABPP's theory needs :math:`\le 1`
and the paper's draws ignore), ``runs.csv``, ``table1.csv`` and ``table2.csv`` (mean ± std over
draws, in %, beside the paper's), ``tables.txt`` (both tables and the draws split by the step
condition), ``figure1_np.png`` (violation vs accuracy, per dataset x backend), ``figure2_fairness.png``
(fairness vs accuracy), ``figure3_xgb_fair_adult.png`` (training mean loss and surrogate group gap
over CBPR outer iterations, XGBoost on Adult, three :math:`\alpha_{\max}`, from zero scores: the
paper's "baseline = initial iterate") with its history CSVs. Checkpointed (``--resume``).

**Quick mode** (``--quick``) changes exactly: 3 draws; training sets subsampled (seeded) to
10,000 rows and test sets to 5,000; ABPP iterations ``randint(20, 40)``; CBPR ``randint(5, 8)``
outer x ``randint(8, 12)`` inner; rounds per step ``randint(3, 6)``; Figure 3: 8 outer x 10 inner
steps of 3 rounds. Measured: about 1 minute on one core of a shared 2-core machine. These budgets
are far below the paper's: with 4 to 7 CBPR outer steps and the authors' initial multipliers (1 per
pair, 30 pairs on COMPAS, hence a Bregman weight :math:`c = L(1 + \sum y) = 31` toward the anchor)
the COMPAS scores barely leave zero and XGBoost's quick COMPAS runs predict the majority class.
"""
from __future__ import annotations

import math

import numpy as np

from ._sampling import subsample

NAME = "gbm-bregman"
TITLE = "Lin & Deng [LD23], constrained gradient boosting (ABPP / CBPR)"
PAPER = ("Lin & Deng [LD23], GBM-based Bregman Proximal Algorithms for Constrained Learning (2023), "
         "Tables 1-2, Figures 1-3")
RESUMABLE = True
NP_DATASETS = ("a9a", "drybean")
FAIR_DATASETS = ("adult", "compas")
DATASETS = NP_DATASETS + FAIR_DATASETS
BACKENDS = ("lightgbm", "xgboost")
#: Bounded classes and target error rates (class ids after encoding; a9a: 1 = the +1 class).
NP_RATES = {"a9a": {1: 0.05}, "drybean": {1: 0.01, 2: 0.03, 3: 0.02, 4: 0.02}}
DRYBEAN_FEATURES = 15
COMPAS_CLASSES = ("Low", "Medium", "High")
#: (column, kind) of the paper's six COMPAS features, for `fastcon.datasets._tabular.TableEncoder`.
COMPAS_3CLASS_FEATURES = [("c_charge_degree", ("indicator", "F")), ("age_cat", "onehot"), ("race", "onehot"),
                          ("sex", ("indicator", "Female")), ("priors_count", "numeric"),
                          ("two_year_recid", "numeric")]
#: Bound schedule start of the fairness runs (the authors' code: keeps zero scores strictly feasible).
FAIR_ALPHA_START = 1e-5

CONFIG = {
    "datasets": DATASETS,
    "backends": BACKENDS,
    "n_draws": 100,
    "max_train_rows": None,
    "max_test_rows": None,
    "np_iter": (30, 100),
    "fair_outer": (20, 40),
    "fair_inner": (30, 50),
    "rounds": (5, 20),
    "fairgbm": True,
    "figure3": {"alpha_max": (0.01, 0.05, 0.1), "outer": 20, "inner": 30, "rounds": 10, "primal_step": 0.1,
                "dual_step": 0.1, "learning_rate": 0.1, "max_depth": 6},
}

#: [LD23] Table 1 (%, test): (accuracy, std, violation, std). a9a stands in for Credit.
PAPER_TABLE1 = {
    ("Credit", "LGBM(B)"): (99.92, 0.04, 22.94, 13.67), ("Credit", "LGBMNP(O)"): (96.77, 2.72, 6.63, 3.18),
    ("Credit", "XGB(B)"): (99.96, 0.01, 15.69, 4.56), ("Credit", "XGBNP(O)"): (99.86, 0.16, 10.01, 2.60),
    ("Drybean", "RandF+CX"): (52.01, 3.16, 2.66, 1.64), ("Drybean", "RandF+ER"): (49.12, 4.30, 1.27, 1.38),
    ("Drybean", "LGBM(B)"): (91.73, 0.51, 12.87, 2.22), ("Drybean", "LGBMNP(O)"): (86.39, 1.95, 3.23, 1.29),
    ("Drybean", "XGB(B)"): (91.79, 0.65, 12.14, 2.18), ("Drybean", "XGBNP(O)"): (90.74, 1.44, 9.32, 2.60),
}
#: [LD23] Table 2 (%, test): model -> {dataset: (accuracy, std, fairness, std)}.
PAPER_TABLE2 = {
    "FairGBM": {"compas": (62.67, 1.81, 14.74, 6.04), "adult": (77.79, 9.19, 17.20, 10.17)},
    "LGBM(B)": {"compas": (62.72, 1.84, 13.71, 5.39), "adult": (86.79, 0.57, 10.06, 0.39)},
    "LGBMFair(O)": {"compas": (62.96, 1.27, 10.09, 1.61), "adult": (87.22, 0.21, 9.76, 0.15)},
    "XGB(B)": {"compas": (63.05, 0.78, 26.54, 1.43), "adult": (86.96, 0.41, 9.89, 0.34)},
    "XGBFair(O)": {"compas": (63.46, 0.33, 26.69, 0.09), "adult": (84.54, 0.95, 10.90, 0.71)},
}
_SHORT = {"lightgbm": "LGBM", "xgboost": "XGB"}
_TITLE = {"a9a": "a9a", "drybean": "Dry Bean", "adult": "Adult", "compas": "COMPAS"}


def config(quick=False) -> dict:
    """The configuration of a full (the paper's protocol) or ``--quick`` run (module docstring)."""
    import copy

    cfg = copy.deepcopy(CONFIG)
    if not quick:
        return cfg
    cfg.update({"n_draws": 3, "max_train_rows": 10000, "max_test_rows": 5000, "np_iter": (20, 40),
                "fair_outer": (5, 8), "fair_inner": (8, 12), "rounds": (3, 6)})
    cfg["figure3"].update({"outer": 8, "inner": 10, "rounds": 3})
    return cfg


# ------------------------------------------------------------------------------------------ metrics
def class_error_rates(y_true, y_pred, n_classes) -> np.ndarray:
    """Misclassification rate of every class (NaN for a class absent from ``y_true``)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_pred: expected shape {y_true.shape} (one per label), got {y_pred.shape}")
    counts = np.bincount(y_true, minlength=n_classes).astype(np.float64)
    wrong = np.bincount(y_true, weights=(y_true != y_pred).astype(np.float64), minlength=n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return wrong / counts


def np_violation(y_true, y_pred, rates, n_classes) -> float:
    r"""[LD23] §6: :math:`\sum_{j}[\text{err}_j - e_j]_+` over the bounded classes present in ``y_true``.

    Parameters
    ----------
    rates : dict
        Class id -> target error rate :math:`e_j`.
    """
    err = class_error_rates(y_true, y_pred, n_classes)
    total = 0.0
    for j, e in rates.items():
        if not math.isnan(err[j]):
            total += max(0.0, float(err[j]) - float(e))
    return total


def group_error_rates(y_true, y_pred, groups) -> np.ndarray:
    """Misclassification rate :math:`r_a` of every group present in ``groups`` (sorted group ids)."""
    y_true, y_pred, groups = np.asarray(y_true), np.asarray(y_pred), np.asarray(groups)
    if not (y_true.shape == y_pred.shape == groups.shape):
        raise ValueError(f"groups: y_true, y_pred and groups must have one shape, got {y_true.shape}, "
                         f"{y_pred.shape}, {groups.shape}")
    return np.array([float(np.mean(y_pred[groups == a] != y_true[groups == a])) for a in np.unique(groups)])


def error_rate_gap(y_true, y_pred, groups) -> float:
    r"""[LD23] §6: :math:`|r_0 - r_1|` for two groups, ``np.std`` (ddof 0) of the :math:`r_a` for more."""
    r = group_error_rates(y_true, y_pred, groups)
    if r.size < 2:
        raise ValueError(f"groups: need at least two groups, got {r.size}")
    return float(abs(r[0] - r[1])) if r.size == 2 else float(np.std(r))


def predicted_classes(F) -> np.ndarray:
    """Class ids from scores: ``F > 0`` (binary logits) or the arg-max (multi-class)."""
    F = np.asarray(F)
    return (F > 0).astype(np.int64) if F.ndim == 1 else np.argmax(F, axis=1)


def evaluate(dataset, F, labels, groups) -> dict:
    """Accuracy and the task's measure (``violation`` for NP, ``fairness`` otherwise) of scores ``F``."""
    pred = predicted_classes(F)
    out = {"accuracy": float(np.mean(pred == labels))}
    if dataset in NP_DATASETS:
        n_classes = 2 if np.ndim(F) == 1 else np.shape(F)[1]
        out["violation"] = np_violation(labels, pred, NP_RATES[dataset], n_classes)
        out["class_errors"] = [None if math.isnan(e) else float(e) for e in class_error_rates(labels, pred, n_classes)]
    else:
        out["fairness"] = error_rate_gap(labels, pred, groups)
        out["group_errors"] = group_error_rates(labels, pred, groups).tolist()
    return out


# --------------------------------------------------------------------------------------------- data
def load_compas_score_text(data_home=None, download=None):
    """COMPAS with [LD23]'s 3-class label ``score_text`` and six features, groups = race (all six values).

    Rows: ProPublica's filter, as `fastcon.datasets.load` ("compas") applies it to the same file
    (``-30 <= days_b_screening_arrest <= 30``, ``is_recid != -1``, ``c_charge_degree != "O"``,
    ``score_text != "N/A"``): 6,172 rows. Label: Low 0, Medium 1, High 2. Features:
    ``c_charge_degree=F`` indicator, ``age_cat`` one-hot (3), ``race`` one-hot (6),
    ``sex=Female`` indicator, ``priors_count`` min-max, ``two_year_recid`` (0/1): d = 13 (the
    authors label-encode the categoricals; trees split one-hot columns just as well). Groups: the
    six races, numbered by decreasing count (group 0 = the largest, African-American).

    Returns
    -------
    fastcon.datasets.Dataset
        Multi-class, with ``groups`` and ``group_names``.
    """
    from ..datasets import Dataset
    from ..datasets import data_home as resolve_home
    from ..datasets._registry import fetch_file, get_spec
    from ..datasets._tabular import TableEncoder, columns, read_rows

    spec = get_spec("compas")
    path = fetch_file(spec.files[0], resolve_home(data_home) / spec.folder, download, dataset=spec.name)
    rows = read_rows(path)
    table = columns(rows[0], rows[1:], path)
    days = table["days_b_screening_arrest"]
    has_days = days != ""
    days_f = np.where(has_days, days, "nan").astype(np.float64)
    keep = (has_days & (days_f >= -30) & (days_f <= 30) & (table["is_recid"] != "-1")
            & (table["c_charge_degree"] != "O") & (table["score_text"] != "N/A"))
    table = {c: v[keep] for c, v in table.items()}
    unknown = sorted(set(table["score_text"].tolist()) - set(COMPAS_CLASSES))
    if unknown:
        raise ValueError(f"{path}: score_text values {unknown} outside {list(COMPAS_CLASSES)}")
    index = {c: k for k, c in enumerate(COMPAS_CLASSES)}
    y = np.array([index[c] for c in table["score_text"]], dtype=np.int64)
    races, counts = np.unique(table["race"], return_counts=True)
    order = sorted(range(races.size), key=lambda k: (-counts[k], races[k]))
    code = {races[k]: i for i, k in enumerate(order)}
    groups = np.array([code[r] for r in table["race"]], dtype=np.int64)
    enc = TableEncoder(COMPAS_3CLASS_FEATURES).fit(table)
    return Dataset(enc.transform(table), y.astype(np.int64), groups=groups,
                   group_names=[str(races[k]) for k in order], name="compas[score_text]",
                   feature_names=enc.feature_names, task="multiclass")


class TaskData:
    """Training and test rows of one dataset: ``X``, class ids ``y`` (0..J-1), ``groups`` (fairness), ``J``."""

    def __init__(self, dataset, cfg, data_home=None, seed=0, download=None):
        from ..datasets import load

        self.dataset = dataset
        rng = np.random.default_rng([seed, DATASETS.index(dataset), 21])
        if dataset in ("a9a", "adult"):  # the official train / test files
            train = load(dataset, data_home=data_home, subset="train", download=download)
            test = load(dataset, data_home=data_home, subset="test", download=download)
            parts = [(train.X, (np.asarray(train.y) > 0).astype(np.int64), train.groups),
                     (test.X, (np.asarray(test.y) > 0).astype(np.int64), test.groups)]
            self.n_classes = 2
            self.group_names = None if train.group_names is None else list(train.group_names)
        else:
            full = (load("drybean", data_home=data_home, subset="all", download=download) if dataset == "drybean"
                    else load_compas_score_text(data_home, download))
            perm = np.random.default_rng([seed, DATASETS.index(dataset), 20]).permutation(full.n_samples)
            n_train = full.n_samples - math.floor(0.2 * full.n_samples)
            tr, te = np.sort(perm[:n_train]), np.sort(perm[n_train:])
            X = np.asarray(full.X)
            if dataset == "drybean":
                X = X[:, :DRYBEAN_FEATURES]
                # standardised on the training rows (an affine map of the registry's all-row scaling)
                mean, std = X[tr].mean(axis=0), X[tr].std(axis=0)
                X = (X - mean) / std
            y = np.asarray(full.y).astype(np.int64)
            g = None if full.groups is None else np.asarray(full.groups)
            parts = [(X[tr], y[tr], None if g is None else g[tr]), (X[te], y[te], None if g is None else g[te])]
            self.n_classes = int(full.classes.size)
            self.group_names = None if full.group_names is None else list(full.group_names)
        limits = (cfg["max_train_rows"], cfg["max_test_rows"])
        out = []
        for (X, y, g), limit in zip(parts, limits):
            rows = subsample(y.size, limit, rng)
            out.append((X[rows], y[rows], None if g is None else np.asarray(g)[rows]))
        (self.X_train, self.y_train, g_train), (self.X_test, self.y_test, self.g_test) = out
        if g_train is not None:
            # GroupLossGap wants the ids 0..G-1 of the groups present in the training rows
            present, self.g_train = np.unique(g_train, return_inverse=True)
            self.train_group_ids = present
        else:
            self.g_train = None


_DATA = {}


def task_data(dataset, cfg, data_home=None, seed=0, download=None) -> TaskData:
    """`TaskData`, cached per process (a worker runs many draws of one dataset)."""
    key = (dataset, seed, cfg["max_train_rows"], cfg["max_test_rows"], str(data_home))
    if key not in _DATA:
        if len(_DATA) >= 2:
            _DATA.clear()
        _DATA[key] = TaskData(dataset, cfg, data_home, seed, download)
    return _DATA[key]


# ------------------------------------------------------------------------------------------ draws
def draw_params(dataset, backend, draw, seed, cfg) -> dict:
    """One hyper-parameter draw of the paper's random search (module docstring), seeded per task."""
    rng = np.random.default_rng([seed, DATASETS.index(dataset), BACKENDS.index(backend), draw, 6])
    fair = dataset in FAIR_DATASETS

    def randint(bounds):
        return int(rng.integers(bounds[0], bounds[1]))

    p = {"primal_step": float(rng.uniform(0.001, 0.2)),
         "dual_step": float(rng.uniform(0.1, 0.3) if fair and backend == "lightgbm" else rng.uniform(0.001, 0.2)),
         "rounds": randint(cfg["rounds"]),
         "outlier_threshold": randint((7, 30))}
    if fair:
        p["outer_iter"] = randint(cfg["fair_outer"])
        p["inner_iter"] = randint(cfg["fair_inner"])
        p["alpha_max"] = float(rng.uniform(0.001, 0.2))
        p["scale"] = float(rng.uniform(0.5, 10)) if rng.uniform() < 0.7 else None
    else:
        p["max_iter"] = randint(cfg["np_iter"])
    tree = {"learning_rate": float(rng.uniform(0.1, 0.3) if fair and backend == "xgboost"
                                   else rng.uniform(0.001, 0.9)),
            "num_leaves": randint((30, 100)), "max_depth": randint((4, 30)),
            "min_child_weight": float(rng.uniform(0.01, 0.9)), "colsample_bytree": float(rng.uniform(0.001, 1.0)),
            "reg_alpha": float(rng.uniform(0.0, 1.0)), "reg_lambda": float(rng.uniform(0.0, 1.0))}
    if backend == "xgboost":
        tree["gamma"] = float(rng.uniform(0.0, 2.0))
    p["tree"] = tree
    return p


def library_params(backend, tree) -> dict:
    """The draw's tree parameters in the library's own names."""
    if backend == "lightgbm":
        return {"learning_rate": tree["learning_rate"], "num_leaves": tree["num_leaves"],
                "max_depth": tree["max_depth"], "min_sum_hessian_in_leaf": tree["min_child_weight"],
                "feature_fraction": tree["colsample_bytree"], "lambda_l1": tree["reg_alpha"],
                "lambda_l2": tree["reg_lambda"]}
    return {"eta": tree["learning_rate"], "max_leaves": tree["num_leaves"], "max_depth": tree["max_depth"],
            "min_child_weight": tree["min_child_weight"], "colsample_bytree": tree["colsample_bytree"],
            "alpha": tree["reg_alpha"], "lambda": tree["reg_lambda"], "gamma": tree.get("gamma", 0.0),
            "tree_method": "hist"}


# ---------------------------------------------------------------------------------------- methods
def _score_model(backend, data, params, seed):
    from ..boosting import LightGBMScoreModel, XGBoostScoreModel

    cls = LightGBMScoreModel if backend == "lightgbm" else XGBoostScoreModel
    return cls(data.X_train, data.y_train, data.n_classes, rounds=params["rounds"],
               params=library_params(backend, params["tree"]), seed=seed, n_threads=1)


def _with_outlier_fallback(solve, threshold):
    """``solve(threshold)``; when dropping outliers would empty a class or group, ``solve(None)`` and a note."""
    try:
        return solve(threshold), "used"
    except ValueError as exc:
        if not str(exc).startswith("outlier_threshold"):
            raise
        return solve(None), f"skipped: {exc}"


def build_problem(data, params):
    """The score problem of a draw: NP class sums (a9a, Dry Bean) or group-loss gaps (Adult, COMPAS)."""
    from ..problems._score_problems import GroupLossGap, NeymanPearsonScores

    if data.dataset in NP_DATASETS:
        rates = NP_RATES[data.dataset]
        weights = {next(iter(rates)): 0.0} if data.n_classes == 2 else None
        return NeymanPearsonScores.from_error_rates(data.y_train, data.n_classes, rates, objective_weights=weights)
    return GroupLossGap(data.y_train, data.n_classes, data.g_train, FAIR_ALPHA_START, scale=params["scale"])


def step_condition(data, params) -> float:
    r""":math:`\tau_0\sigma_0L_g^2` of a draw on its training rows (ABPP's step condition asks for
    :math:`\le 1`; `fastcon.solvers.abpp.abpp_lipschitz_constant` in function space, before any
    outlier removal). The paper's random search draws :math:`\tau_0, \sigma_0` without it."""
    from ..solvers import abpp_lipschitz_constant

    Lg = abpp_lipschitz_constant(build_problem(data, params), None)
    return float(params["primal_step"] * params["dual_step"] * Lg * Lg)


def run_ours(data, backend, params, seed, callback=None):
    """ABPP (NP) or CBPR (fairness) on a boosting score model; ``(result, model, outlier_note)``."""
    from ..solvers import abpp, cbpr

    models = []

    def solve(threshold):
        model = _score_model(backend, data, params, seed)
        models.append(model)
        problem = build_problem(data, params)
        if data.dataset in NP_DATASETS:
            y0 = np.full(problem.n_constraints, 0.1 if data.n_classes == 2 else 1.0)
            return abpp(problem, model, max_iter=params["max_iter"], primal_step=params["primal_step"],
                        dual_step=params["dual_step"], multipliers0=y0, bound_reset=True,
                        outlier_threshold=threshold, callback=callback)
        return cbpr(problem, model, outer_iter=params["outer_iter"], inner_iter=params["inner_iter"],
                    primal_step=params["primal_step"], dual_step=params["dual_step"],
                    multipliers0=np.ones(problem.n_constraints), bound_schedule=params["alpha_max"],
                    outlier_threshold=threshold, record_every=1, callback=callback)

    result, note = _with_outlier_fallback(solve, params["outlier_threshold"])
    return result, models[-1], note


def run_vanilla(data, backend, tree, n_rounds, seed):
    """Unconstrained LightGBM / XGBoost (log-loss or softmax), same tree parameters; ``(train, test)`` scores."""
    lib_params = library_params(backend, tree)
    multi = data.n_classes > 2
    if backend == "lightgbm":
        import lightgbm

        params = dict(lib_params, objective="multiclass" if multi else "binary", num_threads=1, seed=seed,
                      deterministic=True, force_row_wise=True, verbose=-1)
        if multi:
            params["num_class"] = data.n_classes
        booster = lightgbm.train(params, lightgbm.Dataset(data.X_train, label=data.y_train), num_boost_round=n_rounds)

        def scores(X):
            return np.asarray(booster.predict(X, raw_score=True), dtype=np.float64)
    else:
        import xgboost

        params = dict(lib_params, objective="multi:softprob" if multi else "binary:logistic", nthread=1, seed=seed,
                      verbosity=0)
        if multi:
            params["num_class"] = data.n_classes
        booster = xgboost.train(params, xgboost.DMatrix(data.X_train, label=data.y_train, missing=0.0, nthread=1),
                                num_boost_round=n_rounds)

        def scores(X):
            return np.asarray(booster.inplace_predict(X, predict_type="margin", missing=0.0), dtype=np.float64)
    return scores(data.X_train), scores(data.X_test)


def fairgbm_available() -> bool:
    try:
        import fairgbm  # noqa: F401
    except ImportError:
        return False
    return True


def run_fairgbm(data, params, n_rounds, seed):
    """FairGBM (``fairgbm.train``, constrained cross-entropy, FNR parity), same tree parameters; scores."""
    import fairgbm

    lib = dict(library_params("lightgbm", params["tree"]), objective="constrained_cross_entropy",
               constraint_type="FNR", multiplier_learning_rate=params["dual_step"], num_threads=1, seed=seed,
               deterministic=True, force_row_wise=True, verbose=-1)
    train = fairgbm.Dataset(data.X_train, label=data.y_train.astype(np.float64),
                            constraint_group=data.g_train.astype(np.int32))
    booster = fairgbm.train(lib, train, num_boost_round=n_rounds)
    return (np.asarray(booster.predict(data.X_train, raw_score=True), dtype=np.float64),
            np.asarray(booster.predict(data.X_test, raw_score=True), dtype=np.float64))


def _initial_objective(data):
    if data.dataset in NP_DATASETS and data.n_classes == 2:
        bounded = next(iter(NP_RATES[data.dataset]))
        return float(np.sum(data.y_train != bounded) * math.log(2.0))
    return float(data.y_train.size * math.log(data.n_classes))


def execute_draw(task, cfg, data_home=None, seed=0, download=None) -> dict:
    """One (dataset, backend, draw) task: ours, the paired baseline and (fairness, LightGBM) FairGBM."""
    import time

    t0 = time.perf_counter()
    dataset, backend, draw = task["dataset"], task["backend"], task["draw"]
    data = task_data(dataset, cfg, data_home, seed, download)
    params = draw_params(dataset, backend, draw, seed, cfg)
    run_seed = int(np.random.default_rng([seed, DATASETS.index(dataset), BACKENDS.index(backend), draw, 7])
                   .integers(0, 2**31 - 1))
    result, model, outlier_note = run_ours(data, backend, params, run_seed)
    state = result.state
    n_steps = int(state.n_steps)
    n_rounds = max(1, model.ensemble(state).n_rounds)
    t_ours = time.perf_counter() - t0
    F_train, F_test = model.scores(state), model.predict_scores(data.X_test, state)
    metrics = {"ours": {"test": evaluate(dataset, F_test, data.y_test, data.g_test),
                        "train": evaluate(dataset, F_train, data.y_train, data.g_train)}}
    t1 = time.perf_counter()
    B_train, B_test = run_vanilla(data, backend, params["tree"], n_rounds, run_seed)
    metrics["baseline"] = {"test": evaluate(dataset, B_test, data.y_test, data.g_test),
                           "train": evaluate(dataset, B_train, data.y_train, data.g_train)}
    t_base = time.perf_counter() - t1
    fairgbm_note = None
    if dataset in FAIR_DATASETS and backend == "lightgbm" and cfg["fairgbm"]:
        if data.n_classes != 2:
            fairgbm_note = "skipped: FairGBM handles binary labels only"
        elif not fairgbm_available():
            fairgbm_note = "skipped: fairgbm is not installed (pip install fairgbm)"
        else:
            G_train, G_test = run_fairgbm(data, params, n_rounds, run_seed)
            metrics["fairgbm"] = {"test": evaluate(dataset, G_test, data.y_test, data.g_test),
                                  "train": evaluate(dataset, G_train, data.y_train, data.g_train)}
            fairgbm_note = "run"
    problem = result.problem
    return {"kind": "draw", "dataset": dataset, "backend": backend, "draw": draw, "params": params,
            "status": result.status, "n_iter": int(result.n_iter), "n_steps": n_steps, "n_rounds": n_rounds,
            "initial_objective": _initial_objective(data), "objective": float(result.objective),
            "max_violation": float(result.max_violation),
            "surrogate_bounds": np.asarray(getattr(problem, "bounds", getattr(problem, "bound", []))).tolist(),
            "outlier_removal": outlier_note, "fairgbm": fairgbm_note, "metrics": metrics,
            "n_train": int(data.y_train.size), "n_test": int(data.y_test.size),
            "seconds": time.perf_counter() - t0, "seconds_ours": t_ours, "seconds_baseline": t_base}


def execute_figure3(task, cfg, data_home=None, seed=0, download=None) -> dict:
    """CBPR + XGBoost on Adult at one :math:`\\alpha_{\\max}`: training mean loss and group-loss gap per outer step."""
    import time

    from .._kernels._boosting import logistic_losses

    t0 = time.perf_counter()
    data = task_data("adult", cfg, data_home, seed, download)
    f3 = cfg["figure3"]
    params = {"primal_step": f3["primal_step"], "dual_step": f3["dual_step"], "rounds": f3["rounds"],
              "outlier_threshold": None, "outer_iter": f3["outer"], "inner_iter": f3["inner"],
              "alpha_max": float(task["alpha"]), "scale": None,
              "tree": {"learning_rate": f3["learning_rate"], "num_leaves": 0, "max_depth": f3["max_depth"],
                       "min_child_weight": 1.0, "colsample_bytree": 1.0, "reg_alpha": 0.0, "reg_lambda": 1.0,
                       "gamma": 0.0}}
    G = int(data.g_train.max()) + 1
    sizes = np.bincount(data.g_train, minlength=G).astype(np.float64)
    losses = np.empty(data.y_train.size)
    curve = {"iteration": [], "mean_loss": [], "group_gap": []}

    def measure(t, F):
        logistic_losses(np.ascontiguousarray(F, dtype=np.float64), data.y_train, losses)
        xi = np.bincount(data.g_train, weights=losses, minlength=G) / sizes
        curve["iteration"].append(t)
        curve["mean_loss"].append(float(losses.mean()))
        curve["group_gap"].append(float(xi.max() - xi.min()))
        return False

    measure(0, np.zeros(data.y_train.size))
    result, model, _ = run_ours(data, "xgboost", params, seed, callback=lambda t, x, info: measure(t + 1, x))
    F_test = model.predict_scores(data.X_test, result.state)
    return {"kind": "figure3", "dataset": "adult", "backend": "xgboost", "draw": None, "alpha": float(task["alpha"]),
            "params": params, "status": result.status, "n_iter": int(result.n_iter),
            "n_steps": int(result.state.n_steps), "n_rounds": int(model.ensemble(result.state).n_rounds),
            "initial_objective": _initial_objective(data), "objective": float(result.objective),
            "max_violation": float(result.max_violation), "curve": curve,
            "metrics": {"ours": {"test": evaluate("adult", F_test, data.y_test, data.g_test)}},
            "n_train": int(data.y_train.size), "n_test": int(data.y_test.size), "seconds": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------------ tables
def _mean_std(values):
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    if v.size == 0:
        return None, None
    return float(100 * v.mean()), float(100 * v.std())


def _draw_cells(records):
    """``(dataset, backend, measure, draws)`` per dataset x backend with draws, in table order."""
    for dataset in DATASETS:
        measure = "violation" if dataset in NP_DATASETS else "fairness"
        for backend in BACKENDS:
            runs = [r for r in records if r["kind"] == "draw" and r["dataset"] == dataset and r["backend"] == backend]
            if runs:
                yield dataset, backend, measure, runs


def summary_rows(records) -> list:
    """Mean and std over draws (in %) of test accuracy and the task's measure, per dataset x model."""
    rows = []
    for dataset, backend, measure, runs in _draw_cells(records):
        suffix = "NP" if dataset in NP_DATASETS else "Fair"
        methods = [("fairgbm", "FairGBM")] if backend == "lightgbm" and dataset in FAIR_DATASETS else []
        methods += [("baseline", f"{_SHORT[backend]}(B)"), ("ours", f"{_SHORT[backend]}{suffix}(O)")]
        for method, label in methods:
            have = [r["metrics"][method]["test"] for r in runs if method in r["metrics"]]
            if not have:
                continue
            acc, acc_sd = _mean_std([m["accuracy"] for m in have])
            val, val_sd = _mean_std([m[measure] for m in have])
            rows.append({"dataset": dataset, "backend": backend, "method": method, "model": label,
                         "n_draws": len(have), "accuracy": acc, "accuracy_std": acc_sd,
                         measure: val, f"{measure}_std": val_sd})
    return rows


def _cell(mean, std, width=14):
    return f"{'-':>{width}}" if mean is None else f"{mean:6.2f} ± {std:5.2f}".rjust(width)


def table1_lines(rows):
    """Table 1 layout: dataset, model, accuracy and violation (ours), then the paper's."""
    lines = []
    for dataset, paper_name in (("a9a", "Credit"), ("drybean", "Drybean")):
        ours = {r["model"]: r for r in rows if r["dataset"] == dataset}
        models = [m for (d, m) in PAPER_TABLE1 if d == paper_name]
        for model in models:
            r = ours.get(model)
            p = PAPER_TABLE1[(paper_name, model)]
            lines.append(f"{_TITLE[dataset]:<9} {model:<11} "
                         f"{_cell(*(None, None) if r is None else (r['accuracy'], r['accuracy_std']))} "
                         f"{_cell(*(None, None) if r is None else (r['violation'], r['violation_std']))}   "
                         f"{paper_name:<8} {p[0]:6.2f} ± {p[1]:5.2f} {p[2]:6.2f} ± {p[3]:5.2f}")
    return lines


def table2_lines(rows):
    """Table 2 layout: model, then COMPAS and Adult accuracy and fairness (ours), then the paper's."""
    lines = []
    for model, paper in PAPER_TABLE2.items():
        cells, ref = [], []
        for dataset in ("compas", "adult"):
            r = next((x for x in rows if x["dataset"] == dataset and x["model"] == model), None)
            cells.append(_cell(*(None, None) if r is None else (r["accuracy"], r["accuracy_std"])))
            cells.append(_cell(*(None, None) if r is None else (r["fairness"], r["fairness_std"])))
            p = paper[dataset]
            ref.append(f"{p[0]:6.2f} ± {p[1]:5.2f} {p[2]:6.2f} ± {p[3]:5.2f}")
        lines.append(f"{model:<12} {' '.join(cells)}   {' | '.join(ref)}")
    return lines


def step_conditions(session, records) -> dict:
    """``(dataset, backend, draw)`` -> `step_condition` of every draw record (data loaded once per dataset)."""
    out = {}
    for r in records:
        if r["kind"] == "draw":
            data = task_data(r["dataset"], session.cfg, session.data_home, session.seed, session.download)
            out[(r["dataset"], r["backend"], r["draw"])] = step_condition(data, r["params"])
    return out


def step_condition_lines(records, conditions):
    """Per dataset x backend: draws whose steps meet ABPP's condition (<= 1) against the others: their number,
    the mean test accuracy and measure (%) of ours and of the paired baseline, and in how many draws ours has
    the lower measure."""
    lines = []
    for dataset, backend, measure, runs in _draw_cells(records):
        cells = []
        for meets in (True, False):
            part = [r for r in runs if (conditions[(dataset, backend, r["draw"])] <= 1.0) == meets]
            if not part:
                cells.append(f"{0:>4}" + f" {'-':>6}" * 5)
                continue
            ours = [r["metrics"]["ours"]["test"] for r in part]
            base = [r["metrics"]["baseline"]["test"] for r in part]
            lower = sum(o[measure] < b[measure] for o, b in zip(ours, base))
            cells.append(f"{len(part):>4} {100 * np.mean([m['accuracy'] for m in ours]):6.2f} "
                         f"{100 * np.mean([m['accuracy'] for m in base]):6.2f} "
                         f"{100 * np.mean([m[measure] for m in ours]):6.2f} "
                         f"{100 * np.mean([m[measure] for m in base]):6.2f} {lower:>6}")
        lines.append(f"{_TITLE[dataset]:<9} {_SHORT[backend]:<5} {measure:<9} {cells[0]}  | {cells[1]}")
    return lines


STEP_CONDITION_HEADER = (f"{'dataset':<9} {'model':<5} {'measure':<9} "
                         + "  | ".join(f"{'n':>4} {'acc O':>6} {'acc B':>6} {'meas O':>6} {'meas B':>6} {'O < B':>6}"
                                       for _ in range(2)))


# ----------------------------------------------------------------------------------------- figures
def alpha_schedule(alpha_max, n_outer) -> list:
    r"""The bounds of CBPR outer steps :math:`l = 0..T-1` under the authors' schedule from :math:`10^{-5}`:
    :math:`\alpha \leftarrow \alpha + (\alpha_{\max} - \alpha)/((l+1)(l+2))` (as `fastcon.solvers.cbpr` applies it)."""
    alpha, out = FAIR_ALPHA_START, []
    for t in range(n_outer):
        alpha = alpha + (alpha_max - alpha) / ((t + 1) * (t + 2))
        out.append(alpha)
    return out


def plot_scatter(records, datasets, measure, pyplot, title):
    """Figures 1-2: one panel per dataset x backend, one point per draw and method (x: measure, y: accuracy)."""
    fig, axes = pyplot.subplots(len(datasets), 2, figsize=(10, 3.8 * len(datasets)), squeeze=False)
    style = {"baseline": ("tab:blue", "o", "baseline (B)"), "ours": ("tab:red", "^", "ours (O)"),
             "fairgbm": ("tab:green", "s", "FairGBM")}
    for i, dataset in enumerate(datasets):
        for j, backend in enumerate(BACKENDS):
            ax = axes[i][j]
            runs = [r for r in records if r["kind"] == "draw" and r["dataset"] == dataset and r["backend"] == backend]
            for method, (color, marker, label) in style.items():
                pts = [r["metrics"][method]["test"] for r in runs if method in r["metrics"]]
                if pts:
                    ax.scatter([100 * p[measure] for p in pts], [100 * p["accuracy"] for p in pts], s=18, c=color,
                               marker=marker, alpha=0.75, label=label)
            ax.set_title(f"{_TITLE[dataset]}, {backend}", fontsize=10)
            ax.set_xlabel({"violation": "constraint violation (%)", "fairness": "fairness gap (%)"}[measure])
            ax.set_ylabel("test accuracy (%)")
            ax.grid(alpha=0.3)
            if runs:
                ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return fig


def plot_figure3(records, pyplot):
    """Figure 3: training mean loss (left) and surrogate group gap (right) over CBPR outer iterations."""
    fig, (left, right) = pyplot.subplots(1, 2, figsize=(10, 3.8))
    for r in sorted((r for r in records if r["kind"] == "figure3"), key=lambda r: r["alpha"]):
        c = r["curve"]
        label = f"$\\alpha_{{max}}$ = {r['alpha']:g}"
        left.plot(c["iteration"], c["mean_loss"], marker=".", label=label)
        line, = right.plot(c["iteration"], c["group_gap"], marker=".", label=label)
        right.plot(c["iteration"], [FAIR_ALPHA_START] + alpha_schedule(r["alpha"], len(c["iteration"]) - 1), ls="--",
                   lw=0.8, color=line.get_color())
    left.set_ylabel("training loss (mean cross-entropy)")
    right.set_ylabel("group loss gap $\\max_a\\xi_a - \\min_a\\xi_a$ (dashed: bound)")
    for ax in (left, right):
        ax.set_xlabel("CBPR outer iteration (0: zero scores)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Lin & Deng [LD23] Figure 3: XGBoost + CBPR on Adult (training set)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


# ------------------------------------------------------------------------------------ driver hooks
#: Task fields that determine a record (the data folder and ``download`` change no number).
CHECKPOINT_FIELDS = ("kind", "dataset", "backend", "draw", "alpha", "seed", "cfg")


def check_config(cfg):
    unknown = sorted(set(cfg["datasets"]) - set(DATASETS))
    if unknown:
        raise ValueError(f"datasets: unknown {unknown}; known: {list(DATASETS)}")
    bad = sorted(set(cfg["backends"]) - set(BACKENDS))
    if bad:
        raise ValueError(f"backends: unknown {bad}; known: {list(BACKENDS)}")
    if isinstance(cfg["n_draws"], bool) or not isinstance(cfg["n_draws"], int) or cfg["n_draws"] < 1:
        raise ValueError(f"n_draws: must be a positive integer, got {cfg['n_draws']!r}")
    for key in ("np_iter", "fair_outer", "fair_inner", "rounds"):
        lo, hi = cfg[key]
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo < hi):
            raise ValueError(f"{key}: expected (low, high) integers with 1 <= low < high (numpy's randint), "
                             f"got {cfg[key]!r}")


def data_needed(cfg) -> list:
    check_config(cfg)  # an unknown dataset is named as such, not as a missing registry entry
    out = []
    for ds in cfg["datasets"]:
        out += [(ds, "train"), (ds, "test")] if ds in ("a9a", "adult") else [(ds, "all")]
    if cfg["figure3"]["alpha_max"] and "xgboost" in cfg["backends"] and ("adult", "train") not in out:
        out += [("adult", "train"), ("adult", "test")]
    return out


def make_tasks(cfg) -> list:
    """One task per (dataset, backend, draw), plus one per Figure 3 α.

    Draw by draw (Figure 3 first), the most expensive dataset first within a draw: a run cut off
    and resumed later has, at any time, the same number of finished draws in every table cell
    give or take one.
    """
    out = [{"kind": "draw", "dataset": ds, "backend": be, "draw": k, "alpha": None}
           for ds in cfg["datasets"] for be in cfg["backends"] for k in range(cfg["n_draws"])]
    if "xgboost" in cfg["backends"]:
        out += [{"kind": "figure3", "dataset": "adult", "backend": "xgboost", "draw": None, "alpha": float(a)}
                for a in cfg["figure3"]["alpha_max"]]
    cost = {"adult": 4, "compas": 3, "a9a": 2, "drybean": 2}
    out.sort(key=lambda t: (-1 if t["draw"] is None else t["draw"], -cost[t["dataset"]]))  # stable
    return out


def task_name(task) -> str:
    if task["kind"] == "figure3":
        return f"figure3/adult/xgboost/alpha_max={task['alpha']:g}"
    return f"{task['dataset']}/{task['backend']}/draw{task['draw']}"


def tasks(session) -> list:
    cfg = session.cfg
    out = [{**t, "seed": session.seed, "cfg": cfg, "data_home": session.data_home, "download": session.download}
           for t in make_tasks(cfg)]
    if session.checkpoints is not None:
        session.checkpoints.total = len(out)
    session.log(f"{len(out)} runs: {cfg['n_draws']} draw(s) x {', '.join(cfg['datasets'])} x "
                f"{', '.join(cfg['backends'])}, plus Figure 3")
    if cfg["fairgbm"] and "lightgbm" in cfg["backends"] and any(d in FAIR_DATASETS for d in cfg["datasets"]):
        if not fairgbm_available():
            session.log("FairGBM: skipped, the fairgbm package is not installed (pip install fairgbm)")
        elif "compas" in cfg["datasets"]:
            session.log("FairGBM: skipped on COMPAS (3 classes; FairGBM handles binary labels only)")
    return out


def execute(task) -> dict:
    run = execute_figure3 if task["kind"] == "figure3" else execute_draw
    return run(task, task["cfg"], task["data_home"], task["seed"], task["download"])


def on_done(session, task, record):
    m = record["metrics"]["ours"]["test"]
    if record["kind"] == "figure3":
        session.log(f"{task_name(task)}: final gap {record['curve']['group_gap'][-1]:.4f} [{record['seconds']:.1f}s]")
        return
    measure = "violation" if record["dataset"] in NP_DATASETS else "fairness"
    b = record["metrics"]["baseline"]["test"]
    session.log(f"{task_name(task)}: ours acc {m['accuracy']:.4f} {measure} {m[measure]:.4f} | baseline acc "
                f"{b['accuracy']:.4f} {measure} {b[measure]:.4f} [{record['seconds']:.1f}s]")


def _run_entry(record):
    """A results.json run entry: the common schema plus this experiment's fields."""
    entry = {k: v for k, v in record.items() if k not in ("seconds", "seconds_ours", "seconds_baseline", "curve")}
    fair = record["dataset"] in FAIR_DATASETS
    suffix = "Fair" if fair else "NP"
    entry.update({"problem": "group_loss_gap" if fair else "neyman_pearson",
                  "method": f"{_SHORT[record['backend']]}{suffix}", "wall_time_s": record["seconds"],
                  "stationarity": None,
                  # every prox step boosts on the training rows: one pass over f and g each
                  "data_passes_f": float(record["n_steps"]), "data_passes_g": float(record["n_steps"]),
                  "history_csv": _history_name(record) if record["kind"] == "figure3" else ""})
    if record["kind"] == "draw":
        entry["method_time_s"] = {"ours": record["seconds_ours"], "baseline": record["seconds_baseline"]}
    return entry


def _history_name(record):
    return f"figure3_adult_xgboost_alpha{record['alpha']:g}.csv"


def write(session, all_tasks, records) -> dict:
    import datetime as _dt

    from .._version import __version__
    from ._writer import (
        pyplot,
        ruled_table,
        save_figure,
        write_csv,
        write_history_csv,
        write_results_json,
    )

    cfg, out = session.cfg, session.out
    records = sorted(records, key=lambda r: (r["kind"], DATASETS.index(r["dataset"]), r["backend"],
                                             -1 if r["draw"] is None else r["draw"], r.get("alpha") or 0.0))
    conditions = step_conditions(session, records)
    entries = [_run_entry(r) for r in records]
    for e in entries:
        if e["kind"] == "draw":
            e["step_condition"] = conditions[(e["dataset"], e["backend"], e["draw"])]
    for r in records:
        if r["kind"] == "figure3":
            c = r["curve"]
            write_history_csv(out / _history_name(r), {"iteration": np.asarray(c["iteration"]),
                                                       "objective": np.asarray(c["mean_loss"]),
                                                       "group_gap": np.asarray(c["group_gap"])})
    columns = ["dataset", "backend", "draw", "status", "n_iter", "n_rounds", "wall_time_s", "step_condition"]
    run_rows = []
    for e in entries:
        if e["kind"] != "draw":
            continue
        measure = "violation" if e["dataset"] in NP_DATASETS else "fairness"
        row = {k: e.get(k) for k in columns}
        for method in ("ours", "baseline", "fairgbm"):
            m = e["metrics"].get(method, {}).get("test")
            row[f"{method}_accuracy"] = None if m is None else m["accuracy"]
            row[f"{method}_{measure}"] = None if m is None else m[measure]
        run_rows.append(row)
    extra = [f"{m}_{k}" for m in ("ours", "baseline", "fairgbm") for k in ("accuracy", "violation", "fairness")]
    write_csv(out / "runs.csv", columns + extra, run_rows)
    rows = summary_rows(records)
    write_csv(out / "table1.csv", ["dataset", "model", "n_draws", "accuracy", "accuracy_std", "violation",
                                   "violation_std"], [r for r in rows if r["dataset"] in NP_DATASETS])
    write_csv(out / "table2.csv", ["dataset", "model", "n_draws", "accuracy", "accuracy_std", "fairness",
                                   "fairness_std"], [r for r in rows if r["dataset"] in FAIR_DATASETS])
    figures = []
    plt = pyplot(required=False)
    if plt is not None:
        np_sets = [d for d in cfg["datasets"] if d in NP_DATASETS]
        fair_sets = [d for d in ("compas", "adult") if d in cfg["datasets"]]
        if np_sets:
            figures.append(save_figure(plot_scatter(records, np_sets, "violation", plt,
                                                    "Lin & Deng [LD23] Figure 1: NP, test violation vs accuracy "
                                                    "(one point per draw; a9a stands in for Credit)"),
                                       out / "figure1_np.png", 100).name)
        if fair_sets:
            figures.append(save_figure(plot_scatter(records, fair_sets, "fairness", plt,
                                                    "Lin & Deng [LD23] Figure 2: fairness, test gap vs accuracy "
                                                    "(one point per draw)"),
                                       out / "figure2_fairness.png", 100).name)
        if any(r["kind"] == "figure3" for r in records):
            figures.append(save_figure(plot_figure3(records, plt), out / "figure3_xgb_fair_adult.png", 100).name)
    notes = sorted({f"FairGBM on {r['dataset']}: {r['fairgbm']}" for r in records
                    if r.get("fairgbm") and r["fairgbm"] != "run"})
    doc = {"experiment": NAME, "paper": PAPER, "quick": session.quick, "fastcon_version": __version__,
           "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "seed": session.seed,
           "jobs": session.jobs, "config": cfg, "runs": entries, "summary": rows, "notes": notes,
           "paper_table1": {f"{d}/{m}": list(v) for (d, m), v in PAPER_TABLE1.items()},
           "paper_table2": {m: {d: list(v) for d, v in per.items()} for m, per in PAPER_TABLE2.items()},
           "figures": figures,
           "timing": {"runs_wall_time_s": session.runs_wall_time_s, "total_wall_time_s": session.elapsed(),
                      "cpu_time_s": float(sum(r["seconds"] for r in records))}}
    write_results_json(doc, out)
    t1 = ruled_table(f"{TITLE}, Table 1 (NP, test, mean ± std over draws, %); paper's Credit rows beside our a9a",
                     f"{'dataset':<9} {'model':<11} {'accuracy':>14} {'violation':>14}   {'paper':<8} "
                     f"{'accuracy':>14} {'violation':>14}", table1_lines(rows))
    t2 = ruled_table(f"{TITLE}, Table 2 (fairness, test, mean ± std over draws, %): ours, then the paper's",
                     f"{'model':<12} {'COMPAS acc':>14} {'COMPAS fair':>14} {'Adult acc':>14} {'Adult fair':>14}   "
                     f"paper: COMPAS acc, fair | Adult acc, fair", table2_lines(rows),
                     footer=notes + [f"outputs in {out}: results.json, runs.csv, table1.csv, table2.csv, "
                                     f"{', '.join(figures)}"])
    t3 = ruled_table(f"{TITLE}: draws meeting ABPP's step condition tau0 sigma0 L_g^2 <= 1 (left) or not (right); "
                     "test means, %", STEP_CONDITION_HEADER, step_condition_lines(records, conditions),
                     footer=["O: ours, B: the paired baseline; O < B: draws where ours has the lower violation or gap. "
                             "L_g: fastcon.solvers.abpp_lipschitz_constant on the training rows (function space); "
                             "the paper draws tau0, sigma0 without the condition"])
    text = t1 + "\n\n" + t2 + "\n\n" + t3
    (out / "tables.txt").write_text(text + "\n")
    if session.verbose:
        print(text)
    return doc


def run(quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True, download=None, resume=False,
        **overrides):
    """Run the reproduction (see the module docstring); returns the results.json dict."""
    import sys

    from ._runner import drive

    return drive(sys.modules[__name__], quick=quick, out_dir=out_dir, data_home=data_home, seed=seed, jobs=jobs,
                 verbose=verbose, resume=resume, download=download, **overrides)
