"""IDCA on weak pDP (model (17)) from the base-rate constant instead of the paper's w = 0.

The full reproduction starts IDCA at w = 0, as the paper does. On bank that start lies above the
band (every ramp rate is 1/2, the band is [0, 0.25]) and IDCA stays on that branch
(docs/design.md, "Partial fairness"). This script reruns IDCA with the paper's two-stage selection
and everything else unchanged, started from the constant model whose ramp rate is the training base
rate (`fastcon.experiments.partial_fairness.base_rate_start`), and prints the test means with 95 %
t-intervals next to the committed w = 0 records and the baselines'.

    FASTCON_DATA=... python results/partial-fairness/start_study.py --dataset bank --kappa 0.01 0.1

One JSON record per (dataset, kappa, split) goes to ``start_study/`` beside this file; existing
records are reused, so an interrupted study continues where it stopped.
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import stats

from fastcon.experiments import partial_fairness as pf

HERE = Path(__file__).resolve().parent


def mean_ci(values):
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return float(values.mean()), float("nan")
    half = stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)
    return float(values.mean()), float(half)


def committed(dataset):
    """The full run's weak-pDP records of ``dataset``: results.json when written, else the checkpoints."""
    results = HERE / "results.json"
    if results.exists():
        runs = json.loads(results.read_text())["runs"]
    else:
        runs = [json.loads(f.read_text()) for f in sorted((HERE / "checkpoints").glob("*.json"))]
    return [r for r in runs if r.get("dataset") == dataset and r.get("model") in ("weak_pdp", None)]


def point(records):
    fair = mean_ci([1.0 - r["metrics"]["test"]["weak_pdp"] for r in records])
    acc = mean_ci([r["metrics"]["test"]["accuracy"] for r in records])
    return f"{fair[0]:.3f} ± {fair[1]:.3f}, {acc[0]:.4f} ± {acc[1]:.4f} ({len(records)} splits)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bank", choices=sorted(pf.config()["interval"]))
    parser.add_argument("--kappa", type=float, nargs="+", default=[0.01, 0.1])
    parser.add_argument("--splits", type=int, default=5)
    args = parser.parse_args()
    cfg = pf.config()
    folder = HERE / "start_study"
    folder.mkdir(exist_ok=True)
    rows = []
    for kappa in args.kappa:
        records = []
        for split in range(args.splits):
            path = folder / f"{args.dataset}_{kappa:g}_{split}.json"
            if not path.exists():
                t0 = time.perf_counter()
                record, _ = pf.run_idca(pf.split_data(args.dataset, split, cfg), "weak_pdp", kappa, cfg,
                                        start="base_rate")
                record.update(dataset=args.dataset, split=split, kappa=kappa, start="base_rate",
                              seconds=time.perf_counter() - t0)
                path.write_text(json.dumps(record))
                print(f"{args.dataset} kappa={kappa:g} split {split}: {record['metrics']['test']} "
                      f"[{record['seconds']:.0f} s]", flush=True)
            records.append(json.loads(path.read_text()))
        zero = [r for r in committed(args.dataset) if r["method"] == "idca" and r["param"] == kappa]
        rows.append((kappa, point(zero) if zero else "not run yet", point(records)))
    print(f"\n{args.dataset}, weak pDP, IDCA: test fairness (1 - weak pDP) and accuracy, means ± 95 % t-interval")
    print("| κ | from w = 0 (the full run) | from the base-rate constant |\n|---|---|---|")
    for kappa, zero, base in rows:
        print(f"| {kappa:g} | {zero} | {base} |")
    print("\nbaselines (the full run):")
    others = committed(args.dataset)
    for method in ("group_auc", "inter_group", "intra_group", "penalty", "unconstrained"):
        for param in sorted({r["param"] for r in others if r["method"] == method}, key=lambda v: (v is None, v)):
            print(f"  {method} {param}: {point([r for r in others if r['method'] == method and r['param'] == param])}")


if __name__ == "__main__":
    main()
