r"""Figure 1 of Huang & Lin [HL23], laid out as in the paper: 3 rows x (up to) 5 columns.

Rows: objective value, infeasibility (the raw constraint :math:`g(x_t)`, symmetric-log axis;
the paper does not say whether it plots :math:`g` or :math:`[g]_+`) and near stationarity
:math:`\|\hat x_{\hat\rho}(x_t) - x_t\|` (log axis, ~100 points). Columns: ROC fairness on a9a, bank, COMPAS; Wasserstein fairness on german, COMPAS; one
column per (problem, dataset) found in the given result folders, in that canonical order. Five
curves per panel (SSG static, SSG diminishing, ConEx, IPP-SSG, IPP-ConEx) against the iteration
count (IPP: total inner iterations).

Everything is read back from result folders (``results.json`` + the history CSVs), so each
experiment draws its own figure (ROC: 3x3, Wasserstein: 3x2) and `combine_figure` draws the full
3x5 figure when both folders exist.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ._tuning import METHODS
from ._writer import pyplot, read_history_csv, save_figure

__all__ = ["plot_figure", "combine_figure", "COLUMN_ORDER"]

#: Canonical column order of the paper's Figure 1.
COLUMN_ORDER = [("roc_fairness", "a9a"), ("roc_fairness", "bank"), ("roc_fairness", "compas"),
                ("wasserstein_fairness", "german"), ("wasserstein_fairness", "compas")]
LABELS = {"ssg_static": "SSG (static)", "ssg_diminishing": "SSG (diminishing)", "conex": "ConEx",
          "ipp_ssg": "IPP-SSG", "ipp_conex": "IPP-ConEx"}
STYLES = {"ssg_static": ("tab:blue", "-"), "ssg_diminishing": ("tab:orange", "-"), "conex": ("tab:green", "--"),
          "ipp_ssg": ("tab:red", "-."), "ipp_conex": ("tab:purple", ":")}
PROBLEM_TITLES = {"roc_fairness": "ROC", "wasserstein_fairness": "Wasserstein"}


def _load(dirs):
    """``{(problem, dataset): [(run, history), ...]}`` from result folders."""
    panels = {}
    for d in dirs:
        d = Path(d)
        doc = json.loads((d / "results.json").read_text())
        for run in doc["runs"]:
            path = d / run["history_csv"]
            hist = read_history_csv(path) if path.exists() else {}
            panels.setdefault((run["problem"], run["dataset"]), []).append((run, hist))
    return panels


def _column_order(keys):
    known = [k for k in COLUMN_ORDER if k in keys]
    return known + sorted(k for k in keys if k not in COLUMN_ORDER)


def plot_figure(dirs, out_png, columns=None, title=None, dpi=110):
    """Draw the 3 x n figure from the result folders ``dirs`` into ``out_png``; returns the path.

    ``columns`` restricts/reorders the (problem, dataset) columns (default: all found, canonical
    order). Works without a display (Agg backend).
    """
    plt = pyplot()
    panels = _load(dirs)
    cols = _column_order(panels) if columns is None else [tuple(c) for c in columns if tuple(c) in panels]
    if not cols:
        raise ValueError(f"dirs: no runs found in {list(map(str, dirs))}")
    fig, axes = plt.subplots(3, len(cols), figsize=(max(6.4, 3.6 * len(cols) + 0.6), 8.4), squeeze=False, sharex="col")
    for j, key in enumerate(cols):
        problem, dataset = key
        runs = sorted(panels[key], key=lambda rh: METHODS.index(rh[0]["method"]) if rh[0]["method"] in METHODS else 99)
        ax_f, ax_g, ax_s = axes[0, j], axes[1, j], axes[2, j]
        kappa = None
        for run, hist in runs:
            m = run["method"]
            color, ls = STYLES.get(m, (None, "-"))
            kw = dict(color=color, ls=ls, lw=1.2, label=LABELS.get(m, m))
            kappa = run.get("kappa", kappa)
            if "iteration" in hist and "objective" in hist:
                it, f = hist["iteration"], hist["objective"]
                ok = np.isfinite(f)
                ax_f.plot(it[ok], f[ok], **kw)
            gcol = "constraint" if "constraint" in hist else "max_violation"
            if "iteration" in hist and gcol in hist:
                it, g = hist["iteration"], hist[gcol]
                ok = np.isfinite(g)
                ax_g.plot(it[ok], g[ok], **kw)
            curve = run.get("stationarity_curve")
            if curve and curve.get("value"):
                s = np.asarray(curve["value"], dtype=float)
                it = np.asarray(curve["iteration"], dtype=float)
                ok = np.isfinite(s) & (s > 0)
                ax_s.plot(it[ok], s[ok], marker=".", ms=3, **kw)
        init = runs[0][0].get("initial_objective")
        if init is not None:
            ax_f.axhline(init, color="0.6", lw=0.8, ls=":", zorder=0)
        ax_f.set_title(f"{PROBLEM_TITLES.get(problem, problem)}: {dataset}")
        ax_g.axhline(0.0, color="0.3", lw=0.8)
        lin = max(1e-8, 1e-3 * kappa) if kappa else 1e-6
        ax_g.set_yscale("symlog", linthresh=lin)
        if any(line.get_ydata().size and np.all(np.asarray(line.get_ydata()) > 0) for line in ax_s.lines):
            ax_s.set_yscale("log")
        ax_s.set_xlabel("iteration")
        for ax in (ax_f, ax_g, ax_s):
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=8)
    axes[0, 0].set_ylabel("objective value")
    axes[1, 0].set_ylabel("infeasibility g(x)")
    axes[2, 0].set_ylabel("near stationarity")
    handles, labels = [], []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97 if title else 1))
    return save_figure(fig, out_png, dpi)


def combine_figure(dirs, out_png):
    """The paper's full 3 x 5 Figure 1 from the ROC and Wasserstein result folders (any that exist)."""
    dirs = [Path(d) for d in dirs if (Path(d) / "results.json").exists()]
    if not dirs:
        raise FileNotFoundError("dirs: none of the folders holds a results.json")
    return plot_figure(dirs, out_png,
                       title="Huang & Lin [HL23], Figure 1: performances on fairness-aware classification")
