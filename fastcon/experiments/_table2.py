r"""Table 2 of Liu & Xu [LX25] (copied from the paper), our table beside it, Figures 1-2.

``PAPER[(problem, dataset)][method]`` = ``(iteration, DP(f), DP(g), FV, CVio, SVio)``.
"""
from __future__ import annotations

import math
from pathlib import Path

from ._writer import pyplot, save_figure

__all__ = ["PAPER", "MEASURES", "METHOD_LABELS", "format_table2", "plot_figures"]

MEASURES = ("iteration", "DP(f)", "DP(g)", "FV", "CVio", "SVio")
METHOD_LABELS = {"ssg": "SSG", "ipp_ssg": "IPP-SSG", "ipp_conex": "IPP-ConEx", "spider_d": "3S-Econ-D",
                 "ssg_s": "SSG-S", "spider_s": "3S-Econ-S"}
_M = tuple(METHOD_LABELS)
_COLORS = {"ssg": "C0", "ipp_ssg": "C1", "ipp_conex": "C2", "spider_d": "C3", "ssg_s": "C4", "spider_s": "C5"}


def _cols(*rows):
    return {m: tuple(r[i] for r in rows) for i, m in enumerate(_M)}


PAPER = {
    ("p1", "a9a"): _cols((1.00e5, 1.00e5, 1.00e5, 1.50e4, 1.99e5, 8.24e4), (1.00e5, 1.00e5, 1.00e5, 1.50e4, 1.10e3, 455),
                         (2.00e5, 2.00e5, 2.00e5, 3.00e4, 2.00e5, 910), (9.26e-2, 1.03e-1, 9.70e-2, 8.47e-2, 8.08e-2, 8.48e-2),
                         (3.76e-5, 6.57e-6, 0, 1.41e-4, 6.34e-4, 0), (2.41e-3, 5.25e-3, 3.60e-3, 9.56e-4, 1.36e-2, 4.69e-3)),
    ("p1", "compas"): _cols((1.00e5, 1.00e5, 1.00e5, 3.70e4, 1.96e5, 6.00e4), (1.00e5, 1.00e5, 1.00e5, 3.70e4, 3.06e3, 938),
                            (2.00e5, 2.00e5, 2.00e5, 7.40e4, 2.00e5, 1.85e3), (6.91e-3, 6.79e-3, 6.85e-3, 6.31e-3, 6.49e-3, 6.41e-3),
                            (9.27e-6, 5.65e-6, 2.17e-6, 1.49e-5, 5.66e-4, 0), (1.65e-3, 1.52e-3, 1.60e-3, 9.99e-4, 1.43e-2, 4.77e-3)),
    ("p2", "a9a"): _cols((4.02e4, 3.60e5, 3.60e5, 2.10e4, 5.10e4, 9.90e3), (4.02e4, 3.60e5, 3.60e5, 2.10e4, 282, 55),
                         (8.04e4, 7.20e5, 7.20e5, 4.20e4, 5.13e4, 110), (5.11e-1, 5.07e-1, 5.14e-1, 5.05e-1, 5.07e-1, 5.10e-1),
                         (5.11e-5, 0, 0, 0, 0, 0), (9.58e-4, 2.72e-3, 1.15e-2, 8.58e-4, 1.99e-3, 2.19e-3)),
    ("p2", "compas"): _cols((2.89e5, 3.60e5, 3.10e5, 1.54e5, 1.15e5, 1.39e5), (2.89e5, 3.60e5, 3.10e5, 1.54e5, 1.80e3, 2.17e3),
                            (5.78e5, 7.20e5, 6.20e5, 3.07e5, 1.17e5, 4.35e3), (2.04e-1, 2.04e-1, 2.04e-1, 2.04e-1, 2.06e-1, 2.06e-1),
                            (0, 0, 0, 0, 1.24e-5, 0), (8.54e-4, 8.30e-4, 7.99e-4, 9.43e-4, 4.06e-3, 4.70e-3)),
}


def _g(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if v == 0:
        return "0"
    return f"{v:.2e}" if (abs(v) >= 1e4 or abs(v) < 1e-2) else f"{v:.4g}"


def format_table2(runs) -> str:
    """Table 2 in the paper's layout: per (problem, dataset) and measure, ``ours | paper`` for each method."""
    lines = []
    header = f"{'':18s}" + "".join(f"{METHOD_LABELS[m]:>22s}" for m in _M)
    for key in sorted({(r['problem_key'], r['dataset']) for r in runs}, key=lambda k: (k[0], k[1] != "a9a")):
        by_method = {r["method"]: r for r in runs if (r["problem_key"], r["dataset"]) == key}
        lines.append(f"Problem {key[0][1]} / {key[1]}   (each cell: ours | paper)")
        lines.append(header)
        paper = PAPER.get(key, {})
        for i, name in enumerate(MEASURES):
            cells = []
            for m in _M:
                r = by_method.get(m)
                ours = None if r is None else r["table"][i]
                theirs = paper.get(m, (None,) * 6)[i]
                cells.append(f"{_g(ours)} | {_g(theirs)}")
            lines.append(f"  {name:16s}" + "".join(f"{c:>22s}" for c in cells))
        lines.append("")
    return "\n".join(lines)


def plot_figures(runs, histories, out_dir):
    """Figure 1 (3S-Econ-D vs the deterministic baselines: FV, CVio, SVio vs DP(g)) and Figure 2
    (3S-Econ-D vs -S: FV and CVio vs DP(g)); returns the written paths (none without matplotlib)."""
    plt = pyplot(required=False)
    if plt is None:
        return []
    keys = sorted({(r["problem_key"], r["dataset"]) for r in runs}, key=lambda k: (k[0], k[1] != "a9a"))

    def panel(ax, key, column, label, methods):
        """One panel: ``column`` of each method's history against DP(g), log axes (symlog for 0s)."""
        for m in methods:
            h = histories.get((key[0], key[1], m))
            if h is None or column not in h:
                continue
            x, y = h["data_passes_g"], h[column]
            ok = [i for i, v in enumerate(y) if v == v and x[i] > 0]
            if ok:
                ax.plot([x[i] for i in ok], [y[i] for i in ok], label=METHOD_LABELS[m], lw=1.2, color=_COLORS[m])
        if column == "max_violation":
            ax.set_yscale("symlog", linthresh=1e-6)  # CVio is often exactly 0
        elif column == "svio":
            ax.set_yscale("log")
        ax.set_xscale("log")
        ax.set_title(f"P{key[0][1]} {key[1]}: {label}", fontsize=9)
        ax.set_xlabel("DP(g)", fontsize=8)

    def save(fig, axes, title, name):
        axes[0, 0].legend(fontsize=7)
        fig.suptitle(title, fontsize=11)
        fig.tight_layout()
        return save_figure(fig, Path(out_dir) / name, dpi=100)

    columns = (("objective", "FV"), ("max_violation", "CVio"), ("svio", "SVio"))
    fig, axes = plt.subplots(len(keys), 3, figsize=(13, 3.1 * len(keys)), squeeze=False)
    for row, key in enumerate(keys):
        for col, (column, label) in enumerate(columns):
            panel(axes[row, col], key, column, label, ("ssg", "ipp_ssg", "ipp_conex", "spider_d"))
    paths = [save(fig, axes, "Liu & Xu [LX25] Figure 1: 3S-Econ-D vs SSG, IPP-SSG, IPP-ConEx", "figure1_spider.png")]
    fig, axes = plt.subplots(2, len(keys), figsize=(3.4 * len(keys), 6), squeeze=False)
    for col, key in enumerate(keys):
        for row, (column, label) in enumerate(columns[:2]):
            panel(axes[row, col], key, column, label, ("spider_d", "spider_s"))
    paths.append(save(fig, axes, "Liu & Xu [LX25] Figure 2: 3S-Econ-D vs 3S-Econ-S (data passes)",
                      "figure2_spider.png"))
    return paths
