"""Accuracy-fairness trade-off of `fastcon.FairClassifier` over `bound`, one PNG per constraint.

Run from the repository root with the data folder set (FASTCON_DATA):

    python docs/guide/tradeoff.py [--dataset adult] [--out docs/guide]

Fits on the dataset's training part, measures accuracy and the hard gap on its test part; writes
the figures, ``tradeoff_<dataset>.json`` and the tables of ``tradeoff_<dataset>.md``.
"""
import argparse
import json
import time

import numpy as np

import fastcon
from fastcon.estimators import FairClassifier

TOLERANCES = {"wasserstein": [0.02, 0.05, 0.1, 0.2]}
DEFAULT = [0.01, 0.02, 0.05, 0.1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--out", default="docs/guide")
    ap.add_argument("--constraints", nargs="*", default=["demographic_parity", "equal_opportunity",
                                                          "false_positive_parity", "equalized_odds", "roc",
                                                          "wasserstein"])
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = fastcon.load(args.dataset, subset="train")
    test = fastcon.load(args.dataset, subset="test")
    rows = []
    for constraint in args.constraints:
        points = []
        for tol in TOLERANCES.get(constraint, DEFAULT):
            clf = FairClassifier(constraint, tol)
            t0 = time.perf_counter()
            clf.fit(train.X, train.y, sensitive_features=train.groups)
            seconds = time.perf_counter() - t0
            report = clf.constraint_report(test.X, test.y, test.groups)
            points.append((tol, clf.score(test.X, test.y), report.value, clf.fit_gap_, seconds))
            rows.append({"constraint": constraint, "tolerance": tol, "test_accuracy": points[-1][1],
                         "test_gap": report.value, "train_gap": clf.fit_gap_, "fit_seconds": seconds})
            print(json.dumps(rows[-1]), flush=True)
        tol, acc, gap, fit_gap, _ = map(np.array, zip(*points))
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        ax.plot(gap, acc, "o-", label="gap on the test rows")
        ax.plot(fit_gap, acc, "s--", alpha=0.6, label="gap on the training rows")
        for t, g, a in zip(tol, gap, acc):
            ax.annotate(f"{t:g}", (g, a), textcoords="offset points", xytext=(4, -10), fontsize=7)
        ax.set_xlabel(f"{constraint.replace('_', ' ')} gap")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{args.dataset}: FairClassifier('{constraint}')", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(f"{args.out}/tradeoff_{constraint}.png", dpi=110)
        plt.close(fig)
    with open(f"{args.out}/tradeoff_{args.dataset}.json", "w") as fh:
        json.dump(rows, fh, indent=1)
    lines = [f"# FairClassifier trade-off on {args.dataset} (written by docs/guide/tradeoff.py)", "",
             "Fit on the train part with default settings, measured on the test part; group as the "
             "dataset defines it.", ""]
    for constraint in args.constraints:
        lines += [f"## {constraint}", "", "| tolerance | train gap | test gap | test accuracy | fit s |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['tolerance']:g} | {r['train_gap']:.4f} | {r['test_gap']:.4f} | {r['test_accuracy']:.4f} "
                  f"| {r['fit_seconds']:.2f} |" for r in rows if r["constraint"] == constraint]
        lines.append("")
    with open(f"{args.out}/tradeoff_{args.dataset}.md", "w") as fh:
        fh.write("\n".join(lines))


if __name__ == "__main__":
    main()
