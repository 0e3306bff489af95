"""The ``fastcon`` command line.

Each sub-command is a small function ``_cmd_<name>(args) -> int`` registered in `_build_parser`;
experiments and demos add theirs the same way.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ._version import __version__

__all__ = ["main"]


def _cmd_datasets(args) -> int:
    from .datasets import dataset_info, list_datasets, load

    names = args.names or list_datasets()
    unknown = [n for n in names if n not in list_datasets()]
    if unknown:
        print(f"fastcon datasets: unknown dataset(s) {unknown}; known: {', '.join(list_datasets())}",
              file=sys.stderr)
        return 2
    rows = []
    for name in names:
        info = dataset_info(name, data_home=args.data_home)
        if args.download and not info["available"]:
            try:
                load(name, data_home=args.data_home, subset="all", download=True)
            except Exception as exc:  # keep listing; the row below says what is still missing
                print(f"fastcon datasets: could not download {name}: {exc}", file=sys.stderr)
            info = dataset_info(name, data_home=args.data_home)
        row = {"name": name, "description": info["description"], "found": info["available"],
               "location": info["folder"], "subsets": {}, "groups": info.get("groups"), "error": None}
        if row["found"] and not args.no_load:
            try:
                # "all" is train + test stacked: listing it again would only repeat the shapes.
                for subset in [s for s in info["subsets"] if s != "all"] or ["all"]:
                    t0 = time.perf_counter()
                    ds = load(name, data_home=args.data_home, subset=subset, download=False)
                    entry = {"shape": list(ds.shape), "sparse": ds.is_sparse, "task": ds.task,
                             "load_s": round(time.perf_counter() - t0, 3)}
                    if ds.groups is not None:
                        import numpy as np

                        entry["groups"] = dict(zip(ds.group_names, np.bincount(ds.groups).tolist()))
                    elif ds.task == "multiclass":
                        entry["classes"] = int(ds.classes.size)
                    row["subsets"][subset] = entry
            except Exception as exc:  # report every dataset, even when one recipe fails
                row["error"] = f"{type(exc).__name__}: {exc}"
        elif not row["found"]:
            missing = [f for f in info["files"] if not f["present"]]
            row["how_to_get"] = "; ".join(
                f"put {f['path']}" + (f" (from {f['urls'][0]})" if f["urls"] else "") for f in missing)
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        _print_dataset_table(rows, args.no_load)
    return 1 if any(r["error"] for r in rows) else 0


def _print_dataset_table(rows, no_load):
    header = f"{'name':<11} {'status':<9} {'subset':<6} {'rows x cols':>14}  {'kind':<12} groups / classes"
    print(header)
    print("-" * len(header))
    for row in rows:
        if row["error"]:
            print(f"{row['name']:<11} {'ERROR':<9} {row['error']}")
            continue
        if not row["found"]:
            print(f"{row['name']:<11} {'missing':<9} {row['how_to_get']}")
            continue
        if no_load:
            print(f"{row['name']:<11} {'found':<9} {row['location']}")
            continue
        for k, (subset, e) in enumerate(row["subsets"].items()):
            shape = f"{e['shape'][0]:,} x {e['shape'][1]}"
            kind = ("CSR" if e["sparse"] else "dense") + (" binary" if e["task"] == "binary" else " multi")
            extra = ", ".join(f"{g}: {c:,}" for g, c in e["groups"].items()) if "groups" in e else (
                f"{e['classes']} classes" if "classes" in e else "")
            print(f"{row['name'] if k == 0 else '':<11} {'found' if k == 0 else '':<9} {subset:<6} {shape:>14}  {kind:<12} {extra}")
    print()
    where = {r["location"] for r in rows if r["found"]}
    if where:
        print("data home: " + ", ".join(sorted({str(Path(w).parent) for w in where})))


def _cmd_reproduce(args) -> int:
    from .experiments import EXPERIMENTS, is_resumable, run_experiment

    if args.name not in EXPERIMENTS:
        print(f"fastcon reproduce: unknown experiment {args.name!r}; known: {', '.join(sorted(EXPERIMENTS))}",
              file=sys.stderr)
        return 2
    if args.resume and not is_resumable(args.name):
        print(f"fastcon reproduce: --resume: {args.name} does not checkpoint its runs", file=sys.stderr)
        return 2
    out = Path(args.out or f"fastcon-results/{args.name}{'-quick' if args.quick else ''}")
    run_experiment(args.name, quick=args.quick, out_dir=out, data_home=args.data_home, seed=args.seed,
                   jobs=args.jobs, verbose=not args.quiet, resume=args.resume)
    return 0


def _cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(out_dir=Path(args.out), seed=args.seed, verbose=not args.quiet)
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastcon", description="Fast solvers for constrained learning (fairness, Neyman-Pearson).")
    parser.add_argument("--version", action="version", version=f"fastcon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("datasets", help="list the named datasets, where they are and their shapes")
    p.add_argument("names", nargs="*", help="only these datasets (default: all)")
    p.add_argument("--data-home", default=None, help="data folder (default: $FASTCON_DATA, then ~/.cache/fastcon)")
    p.add_argument("--no-load", action="store_true", help="only check the files, do not parse them")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--download", action="store_true", help="download missing files from their official sources")
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("reproduce", help="re-run a paper experiment: figures (PNG), tables (CSV/JSON)")
    p.add_argument("name", help="experiment name, e.g. ssg-roc, ssg-wasserstein")
    p.add_argument("--quick", action="store_true", help="reduced run (fewer iterations, one grid point)")
    p.add_argument("--out", default=None, help="output folder (default fastcon-results/NAME)")
    p.add_argument("--data-home", default=None, help="data folder (default: $FASTCON_DATA, then ~/.cache/fastcon)")
    p.add_argument("--seed", type=int, default=0, help="seed of splits and stochastic oracles")
    p.add_argument("--jobs", type=int, default=1, help="parallel processes for the tuning grid")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--resume", action="store_true",
                   help="reuse the runs an interrupted invocation saved in OUT/checkpoints (ssg-roc, ssg-wasserstein)")
    p.set_defaults(func=_cmd_reproduce)

    p = sub.add_parser("demo", help="fairness-constrained classifier on synthetic data, end to end")
    p.add_argument("--out", default="fastcon-results/demo", help="output folder for the plot and table")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.func(args)
