r"""``fastcon demo``: the constrained estimators against an unconstrained scikit-learn model, end to end.

Two small problems on synthetic data made on the spot, each split 70/30 into training and held-out
rows: fairness (`make_fair_classification`; ``LogisticRegression()`` against `FairClassifier` with
demographic parity and equalized odds: held-out accuracy and hard gaps) and Neyman–Pearson
(`make_neyman_pearson`; against `NeymanPearsonClassifier` with and without the umbrella threshold:
held-out type-I and type-II errors). The figure (``demo.png``) sweeps the bounds. Every estimator
argument the demo relies on is passed explicitly. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

from .datasets import make_fair_classification, make_neyman_pearson
from .metrics import equalized_odds_gap, group_rates, type_one_error, type_two_error

__all__ = ["run_demo"]

#: The bounds of the sweep in the figure (the table's bound is added when it is not among them).
FAIR_BOUNDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)
NP_BOUNDS = (0.01, 0.02, 0.05, 0.1, 0.2)
#: The data: the group (or class) proportions and how unfair (or how separable) the data are.
GROUP_PROPORTIONS = (0.6, 0.4)
SHIFT = 1.5
POSITIVE_FRACTION = 0.3
CLASS_SEP = 2.0
N_FEATURES = 20
TEST_FRACTION = 0.3
#: The Neyman–Pearson class whose error is bounded (the labels of the synthetic data are -1/+1).
CONSTRAINED_CLASS = -1.0

_FIELDS = ["problem", "model", "constraint", "bound", "delta", "accuracy", "dp_gap", "eo_gap", "type_one_error",
           "type_two_error", "train_value", "fit_s"]


def _require_sklearn():
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ImportError("fastcon demo compares fastcon's estimators with scikit-learn, which is an optional "
                          "dependency: pip install 'fastcon[sklearn,plot]'") from None


def _fair(constraint, bound, seed):
    from .estimators import FairClassifier

    return FairClassifier(constraint, bound=bound, loss="logistic", ridge=None, fit_intercept=True,
                          solver="auto", random_state=seed)


def _neyman_pearson(bound, delta, seed):
    from .estimators import NeymanPearsonClassifier

    return NeymanPearsonClassifier(bound=bound, delta=delta, constrained_class=CONSTRAINED_CLASS, loss="logistic",
                                   ridge=None, fit_intercept=True, solver="auto", smoothing=0.1,
                                   calibration_fraction=0.5, random_state=seed)


def _baseline():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0, max_iter=1000)


def _timed_fit(model, X, y, **fit_args):
    t0 = time.perf_counter()
    model.fit(X, y, **fit_args)
    return model, time.perf_counter() - t0


def _fairness_row(name, model, constraint, bound, part, fit_s, train_value=None):
    y_pred = model.predict(part.X)
    return {"problem": "fairness", "model": name, "constraint": constraint, "bound": bound, "delta": None,
            "accuracy": float(np.mean(y_pred == part.y)),
            "dp_gap": group_rates(part.y, y_pred, sensitive_features=part.groups).gap("selection_rate"),
            "eo_gap": equalized_odds_gap(part.y, y_pred, sensitive_features=part.groups),
            "type_one_error": None, "type_two_error": None, "train_value": train_value, "fit_s": fit_s}


def _np_row(name, model, bound, delta, part, fit_s, train_value=None):
    y_pred = model.predict(part.X)
    return {"problem": "neyman_pearson", "model": name, "constraint": "type_one_error" if bound else None,
            "bound": bound, "delta": delta, "accuracy": float(np.mean(y_pred == part.y)), "dp_gap": None,
            "eo_gap": None, "type_one_error": type_one_error(part.y, y_pred, constrained_class=CONSTRAINED_CLASS),
            "type_two_error": type_two_error(part.y, y_pred, constrained_class=CONSTRAINED_CLASS),
            "train_value": train_value,
            "fit_s": fit_s}


def _counts(labels, names):
    return " / ".join(f"{n} {c:,}" for n, c in zip(names, np.bincount(labels).tolist()))


def run_demo(out_dir="fastcon-results/demo", seed=0, n_samples=20_000, fair_bound=0.05, np_bound=0.05, delta=0.05,
             fair_bounds=FAIR_BOUNDS, np_bounds=NP_BOUNDS, verbose=True) -> dict:
    """Run the demo; write ``table.csv``, ``results.json`` and ``demo.png`` into ``out_dir``.

    Parameters
    ----------
    out_dir : path
        Created if needed and checked writable first (ValueError naming ``out_dir`` if not), so
        nothing is computed for outputs that could not be saved.
    seed : int
        Seed of the synthetic data and the splits; the tables are the same for the same seed.
    n_samples : int
        Rows of each of the two synthetic data sets (30 % of them held out).
    fair_bound, np_bound, delta : float
        The bounds of the table: ``FairClassifier(..., bound=fair_bound)``,
        ``NeymanPearsonClassifier(bound=np_bound, delta=None)`` and
        ``NeymanPearsonClassifier(bound=np_bound, delta=delta)``.
    fair_bounds, np_bounds : sequence of float
        The sweeps of the figure.
    verbose : bool
        Print the tables (stdout; the wall time goes to stderr, so stdout depends on the seed only).

    Returns
    -------
    dict
        What ``results.json`` holds: the settings, the table's rows (held-out metrics), the sweeps.
    """
    from .experiments._writer import writable_folder

    t0 = time.perf_counter()
    _require_sklearn()
    out = Path(out_dir)
    try:
        writable_folder(out)
    except OSError as exc:
        raise ValueError(f"out_dir: cannot write to {out}: {exc.strerror or exc}") from exc
    say = print if verbose else (lambda *a, **k: None)
    split = (1 - TEST_FRACTION, TEST_FRACTION)

    # ---------------------------------------------------------------- 1. fairness
    data = make_fair_classification(n_samples=n_samples, n_features=N_FEATURES, group_proportions=GROUP_PROPORTIONS,
                                    shift=SHIFT, seed=seed)
    train, test = data.split(split, seed=seed, stratify=True)
    baseline, fit_s = _timed_fit(_baseline(), train.X, train.y)
    rows = [_fairness_row("LogisticRegression()", baseline, None, None, test, fit_s)]
    dp_sweep, eo_sweep = [], []
    fair_sweep = sorted(set(fair_bounds) | {fair_bound})
    for constraint, sweep in (("demographic_parity", dp_sweep), ("equalized_odds", eo_sweep)):
        for t in fair_sweep:
            model, fit_s = _timed_fit(_fair(constraint, t, seed), train.X, train.y, sensitive_features=train.groups)
            name = f'FairClassifier("{constraint}", bound={t:g})'
            row = _fairness_row(name, model, constraint, t, test, fit_s, train_value=float(model.fit_gap_))
            row["met_on_train"] = bool(model.calibration_["met"])
            sweep.append(row)
            if t == fair_bound:
                rows.append(row)

    # ---------------------------------------------------------------- 2. Neyman-Pearson
    np_data = make_neyman_pearson(n_samples=n_samples, n_features=N_FEATURES, positive_fraction=POSITIVE_FRACTION,
                                  class_sep=CLASS_SEP, seed=seed + 1)
    np_train, np_test = np_data.split(split, seed=seed, stratify=True)
    np_baseline, fit_s = _timed_fit(_baseline(), np_train.X, np_train.y)
    rows.append(_np_row("LogisticRegression()", np_baseline, None, None, np_test, fit_s))
    model, fit_s = _timed_fit(_neyman_pearson(np_bound, None, seed), np_train.X, np_train.y)
    rows.append(_np_row(f"NeymanPearsonClassifier(bound={np_bound:g}, delta=None)", model, np_bound, None, np_test, fit_s,
                        train_value=float(model.fit_type_one_error_)))
    np_sweep = []
    for a in sorted(set(np_bounds) | {np_bound}):
        model, fit_s = _timed_fit(_neyman_pearson(a, delta, seed), np_train.X, np_train.y)
        row = _np_row(f"NeymanPearsonClassifier(bound={a:g}, delta={delta:g})", model, a, delta, np_test, fit_s,
                      train_value=float(model.fit_type_one_error_))
        np_sweep.append(row)
        if a == np_bound:
            rows.append(row)

    # ---------------------------------------------------------------- outputs
    with open(out / "table.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: "" if r[k] is None else r[k] for k in _FIELDS})
    _print_tables(say, rows, data, train, test, np_data, np_train, np_test, seed, fair_bound, np_bound, delta)

    import sklearn

    from ._version import __version__

    summary = {"seed": seed, "n_samples": n_samples, "test_fraction": TEST_FRACTION,
               "fairness_data": {"generator": "make_fair_classification", "n_features": N_FEATURES,
                                 "group_proportions": list(GROUP_PROPORTIONS), "shift": SHIFT,
                                 "n_train": train.n_samples, "n_test": test.n_samples},
               "neyman_pearson_data": {"generator": "make_neyman_pearson", "n_features": N_FEATURES,
                                       "positive_fraction": POSITIVE_FRACTION, "class_sep": CLASS_SEP,
                                       "constrained_class": CONSTRAINED_CLASS,
                                       "n_train": np_train.n_samples, "n_test": np_test.n_samples},
               "fair_bound": fair_bound, "np_bound": np_bound, "delta": delta,
               "table": rows, "sweeps": {"demographic_parity": dp_sweep, "equalized_odds": eo_sweep,
                                         "neyman_pearson": np_sweep},
               "note": "every metric in 'table' and 'sweeps' is on the held-out rows, except train_value: the "
                       "bounded metric on the training rows, where the estimators enforce the bound",
               "versions": {"fastcon": __version__, "scikit-learn": sklearn.__version__}}
    written = [out / "table.csv", out / "results.json"]
    try:
        _plot(out / "demo.png", rows, dp_sweep, eo_sweep, np_sweep, fair_bound, delta)
        written.insert(0, out / "demo.png")
    except ImportError as exc:  # matplotlib is optional: the tables are still written
        say(f"(no figure: {exc})")
    summary["wall_time_s"] = time.perf_counter() - t0
    (out / "results.json").write_text(json.dumps(summary, indent=1, default=float))
    # names only: `fastcon demo` writes into a staging folder and then says where it moved it
    say("wrote " + ", ".join(p.name for p in written))
    if verbose:
        sys.stdout.flush()
        print(f"fastcon demo: done in {summary['wall_time_s']:.1f} s", file=sys.stderr)
    return summary


def _fmt(value, spec=".3f"):
    return "-" if value is None else format(value, spec)


def _print_tables(say, rows, data, train, test, np_data, np_train, np_test, seed, fair_bound, np_bound, delta):
    fair = [r for r in rows if r["problem"] == "fairness"]
    npc = [r for r in rows if r["problem"] == "neyman_pearson"]
    width = max(len(r["model"]) for r in rows)
    say(f"fastcon demo (seed {seed}): fastcon's constrained estimators against scikit-learn's unconstrained "
        "LogisticRegression.")
    say(f"Synthetic data made on the spot; every number below is measured on held-out rows "
        f"({TEST_FRACTION:.0%}, not seen in fit)")
    say("except 'train', the bounded metric on the training rows, where the estimator enforces the bound.")
    say("")
    say(f"1. Fairness: {data.n_samples:,} rows x {data.n_features} features (make_fair_classification, shift "
        f"{SHIFT:g}), groups {_counts(data.groups, data.group_names)};")
    say(f"   {train.n_samples:,} training rows, {test.n_samples:,} held-out. DP gap: largest minus smallest "
        "selection rate over")
    say("   the groups; EO gap: the larger of the true- and false-positive-rate gaps (hard, from predict).")
    say(f"   {'model':<{width}}  {'accuracy':>8}  {'DP gap':>7}  {'EO gap':>7}  {'bound':>6}  {'train':>6}  held-out")
    for r in fair:
        bounded = {"demographic_parity": "dp_gap", "equalized_odds": "eo_gap"}.get(r["constraint"])
        verdict = "-" if bounded is None else ("within bound" if r[bounded] <= r["bound"] else "ABOVE bound")
        say(f"   {r['model']:<{width}}  {r['accuracy']:8.3f}  {r['dp_gap']:7.3f}  {r['eo_gap']:7.3f}  "
            f"{_fmt(r['bound'], '6.2f'):>6}  {_fmt(r['train_value'], '6.3f'):>6}  {verdict}")
    base = fair[0]
    for r in fair[1:]:
        key, label = ("dp_gap", "DP") if r["constraint"] == "demographic_parity" else ("eo_gap", "EO")
        say(f"   {r['constraint']}: {label} gap {base[key]:.3f} -> {r[key]:.3f} at accuracy "
            f"{base['accuracy']:.3f} -> {r['accuracy']:.3f}")
    say("")
    n_constrained = int(np.sum(np_data.y == CONSTRAINED_CLASS))
    n_other = np_data.n_samples - n_constrained
    say(f"2. Neyman-Pearson: {np_data.n_samples:,} rows x {np_data.n_features} features (make_neyman_pearson, "
        f"class_sep {CLASS_SEP:g}), class {CONSTRAINED_CLASS:g} {n_constrained:,} / class +1 {n_other:,};")
    say(f"   {np_train.n_samples:,} training rows, {np_test.n_samples:,} held-out. Type-I error: class "
        f"{CONSTRAINED_CLASS:g} predicted +1 (at most bound);")
    say(f"   type-II error: class +1 predicted {CONSTRAINED_CLASS:g}. delta={delta:g}: the umbrella threshold, "
        f"P(type-I > bound) <= {delta:g}.")
    say(f"   {'model':<{width}}  {'accuracy':>8}  {'type-I':>7}  {'type-II':>7}  {'bound':>6}  {'train':>6}  held-out")
    for r in npc:
        verdict = "-" if r["bound"] is None else (
            "within bound" if r["type_one_error"] <= r["bound"] else "ABOVE bound")
        say(f"   {r['model']:<{width}}  {r['accuracy']:8.3f}  {r['type_one_error']:7.3f}  {r['type_two_error']:7.3f}  "
            f"{_fmt(r['bound'], '6.2f'):>6}  {_fmt(r['train_value'], '6.3f'):>6}  {verdict}")
    base = npc[0]
    for r in npc[1:]:
        say(f"   {r['model']}: type-I {base['type_one_error']:.3f} -> {r['type_one_error']:.3f}, type-II "
            f"{base['type_two_error']:.3f} -> {r['type_two_error']:.3f}")
    say("")


_LABEL_BOX = {"fc": "white", "ec": "none", "alpha": 0.8, "pad": 0.5}


def _finish_panel(ax, xlabel, ylabel, title, legend_loc):
    """Axis labels, title, legend and grid of one panel of the demo's figure (its limits are set by the caller)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc=legend_loc, fontsize=8)
    ax.grid(alpha=0.3)


def _plot(path, rows, dp_sweep, eo_sweep, np_sweep, fair_bound, delta):
    from ._results import _pyplot

    plt = _pyplot()
    fair_base = next(r for r in rows if r["problem"] == "fairness")
    np_base = next(r for r in rows if r["problem"] == "neyman_pearson")
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))

    # (a) the accuracy-fairness trade-off
    ax = axes[0]
    gaps, accs = [r["dp_gap"] for r in dp_sweep], [r["accuracy"] for r in dp_sweep]
    ax.plot(gaps, accs, "o-", color="C0", label="FairClassifier(\"demographic_parity\")")
    for r in dp_sweep:
        ax.annotate(f"bound {r['bound']:g}", (r["dp_gap"], r["accuracy"]), textcoords="offset points", xytext=(6, -12),
                    fontsize=8, color="C0", bbox=_LABEL_BOX)
    ax.plot(fair_base["dp_gap"], fair_base["accuracy"], "*", ms=14, color="C3",
            label="LogisticRegression (unconstrained)")
    ax.axvline(fair_bound, color="0.4", ls=":", lw=1, label=f"bound {fair_bound:g} (the table's)")
    ax.set_xlim(left=0)
    ax.margins(y=0.08)
    _finish_panel(ax, "demographic-parity gap, held-out rows", "accuracy, held-out rows",
                  "accuracy-fairness trade-off", "lower right")

    # (b) does the bound hold out of sample?
    ax = axes[1]
    right = max(r["bound"] for r in dp_sweep + eo_sweep) * 1.1
    top = max([fair_base["dp_gap"], fair_base["eo_gap"], right] + [r["dp_gap"] for r in dp_sweep]
              + [r["eo_gap"] for r in eo_sweep]) * 1.1
    ax.plot([0, right], [0, right], "k--", lw=0.9, label="gap = bound")
    for sweep, key, colour, label in ((dp_sweep, "dp_gap", "C0", "demographic_parity"),
                                      (eo_sweep, "eo_gap", "C1", "equalized_odds")):
        ax.plot([r["bound"] for r in sweep], [r[key] for r in sweep], "o-", color=colour,
                label=f"FairClassifier(\"{label}\")")
        ax.axhline(fair_base[key], color=colour, ls=":", lw=1.2)
        ax.annotate("LogisticRegression (unconstrained)", (0.01 * right, fair_base[key]),
                    textcoords="offset points", xytext=(0, 3), fontsize=8, color=colour, bbox=_LABEL_BOX)
    ax.set_xlim(0, right)
    ax.set_ylim(0, top)
    _finish_panel(ax, "bound", "gap of the bounded metric, held-out rows", "held-out gap against the bound",
                  "lower right")

    # (c) Neyman-Pearson: the type-I bound
    ax = axes[2]
    np_levels = [r["bound"] for r in np_sweep]
    top = max(np_levels + [np_base["type_one_error"]]) * 1.1
    ax.plot([0, top], [0, top], "k--", lw=0.9, label="type-I = bound")
    ax.plot(np_levels, [r["type_one_error"] for r in np_sweep], "o-", color="C2",
            label=f"NeymanPearsonClassifier(bound, delta={delta:g})")
    for r in np_sweep:
        ax.annotate(f"type-II {r['type_two_error']:.2f}", (r["bound"], r["type_one_error"]),
                    textcoords="offset points", xytext=(6, -12), fontsize=8, color="C2", bbox=_LABEL_BOX)
    ax.axhline(np_base["type_one_error"], color="C3", ls=":", lw=1.2,
               label=f"LogisticRegression (type-II {np_base['type_two_error']:.2f})")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    _finish_panel(ax, "bound", "type-I error, held-out rows", "Neyman-Pearson: held-out type-I error against the bound",
                  "upper left")

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
