"""Smallest tolerance `FairClassifier(confidence=...)` can certify, against the rows per group, as a PNG.

Run from the repository root (no data needed):

    python docs/guide/certifiable_tolerance.py [--out docs/guide]

A classifier whose true rates are equal in two groups, certified on ``n`` held-out rows per group
(the certifying part: a fifth of the rows at the default ``validation_fraction``): the bound of
`fastcon.estimators._certify.certified_gap` at the expected counts, i.e. when the observed rates are
equal too, is the smallest tolerance a fit can certify with ``n`` rows. Demographic parity counts
every row of a group (selection rate ``--rate``); equal opportunity only its positive rows (a
``--base-rate`` share, true-positive rate ``--tpr``). Dotted: the median bound over ``--draws`` draws
of the counts at confidence 0.95 (the observed gap of a draw adds to it). Writes
``certifiable_tolerance.png`` and prints the page's tables (docs/guide/guarantees.md), with the
umbrella threshold's expected type-I error next to them.
"""
import argparse

import numpy as np

from fastcon.estimators._certify import certified_gap, clopper_pearson
from fastcon.metrics._neyman_pearson import np_umbrella_min_samples, np_umbrella_rank

SIZES = [50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000]
CONFIDENCES = [0.9, 0.95, 0.99]
#: The certifying part's share of the rows with ``confidence`` and the default ``validation_fraction``
#: (0.4 held out, half of it certifies).
DEFAULT_CERTIFYING_SHARE = 0.2
CALIBRATION_ROWS = [59, 86, 100, 200, 500, 1000, 2000, 5000, 10000, 100000]


def at_expected_counts(constraint, rows_per_group, rate, confidence):
    """``certified_gap`` of two groups of ``rows_per_group`` counted rows, ``round(rate * rows)`` positive in each."""
    n, s = int(rows_per_group), int(round(rate * rows_per_group))
    predicted = np.zeros(2 * n, dtype=bool)
    predicted[:s] = predicted[n:n + s] = True
    y01 = np.ones(2 * n, dtype=np.int64)      # the counted rows: all of them (DP) or the positives (EO)
    codes = np.repeat(np.arange(2), n)
    return certified_gap(constraint, predicted, y01, codes, 2, 1.0 - confidence)


def median_over_draws(rows_per_group, rate, confidence, draws, rng):
    """The median certified bound when each group's count is Binomial(rows, rate): the same bounds, drawn counts."""
    n = int(rows_per_group)
    s = rng.binomial(n, rate, size=(draws, 2))
    lower, upper = clopper_pearson(s, np.full(s.shape, n), (1.0 - confidence) / 4)   # 2 groups x 2 bounds
    gap = np.maximum(upper[:, 0] - lower[:, 1], upper[:, 1] - lower[:, 0])
    return float(np.median(np.minimum(gap, 1.0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/guide")
    ap.add_argument("--rate", type=float, default=0.3, help="both groups' selection rate (demographic parity)")
    ap.add_argument("--base-rate", type=float, default=0.25, help="share of positive rows in each group")
    ap.add_argument("--tpr", type=float, default=0.6, help="both groups' true-positive rate (equal opportunity)")
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    rng = np.random.default_rng(0)
    grid = np.unique(np.round(np.logspace(np.log10(50), 5, 41)).astype(int))
    panels = [("demographic_parity", "demographic parity", lambda n: n, args.rate,
               f"selection rate {args.rate:g} in both groups"),
              ("equal_opportunity", "equal opportunity", lambda n: max(1, round(args.base_rate * n)), args.tpr,
               f"base rate {args.base_rate:g}, TPR {args.tpr:g} in both groups")]
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.8), sharey=True)
    for ax, (constraint, title, counted, rate, note) in zip(axes, panels):
        for confidence, style in zip(CONFIDENCES, ["-", "--", "-."]):
            t = [at_expected_counts(constraint, counted(n), rate, confidence) for n in grid]
            ax.plot(grid, t, style, label=f"confidence {confidence:g}")
        typical = [median_over_draws(counted(n), rate, 0.95, args.draws, rng) for n in grid]
        ax.plot(grid, typical, ":", color="0.3", marker="o", markersize=2.5, markevery=4,
                label="0.95, median over draws")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_major_formatter(FixedFormatter([f"{v:g}" for v in ticks]))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("rows per group in the certifying part")
        top = ax.secondary_xaxis("top", functions=(lambda x: x / DEFAULT_CERTIFYING_SHARE,
                                                   lambda x: x * DEFAULT_CERTIFYING_SHARE))
        top.set_xlabel("rows per group in X (default split)", fontsize=7)
        top.tick_params(labelsize=7)
        ax.set_title(f"{title}: {note}", fontsize=8)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("smallest certifiable tolerance")
    axes[0].legend(fontsize=7)
    fig.suptitle("FairClassifier(confidence=...): two groups whose true rates are equal", fontsize=9)
    fig.tight_layout()
    fig.savefig(f"{args.out}/certifiable_tolerance.png", dpi=110)
    plt.close(fig)

    head = ["rows per group (certifying part)"]
    for name in ("DP", "EO"):
        head += [f"{name} {c:g}" for c in CONFIDENCES] + [f"{name} 0.95, median of draws"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in SIZES:
        cells = [f"{n:,}"]
        for constraint, _, counted, rate, _ in panels:
            cells += [f"{at_expected_counts(constraint, counted(n), rate, c):.3f}" for c in CONFIDENCES]
            cells.append(f"{median_over_draws(counted(n), rate, 0.95, args.draws, rng):.3f}")
        print("| " + " | ".join(cells) + " |")
    print()
    alpha = 0.05
    print("| calibration rows | rank k, level 0.05 | expected type-I | rank k, level 0.0125 | expected type-I |")
    print("|---|---|---|---|---|")
    for n in CALIBRATION_ROWS:
        cells = [f"{n:,}"]
        for level in (0.05, 0.0125):
            if n < np_umbrella_min_samples(alpha, level):
                cells += ["(too few)", ""]
                continue
            k = np_umbrella_rank(n, alpha, level)
            # continuous scores: the type-I error of the k-th smallest score is Beta(n - k + 1, k)
            cells += [f"{k:,}", f"{(n - k + 1) / (n + 1):.4f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
