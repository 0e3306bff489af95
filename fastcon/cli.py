"""The ``fastcon`` command line.

Each sub-command is a small function ``_cmd_<name>(args) -> int`` registered in `_build_parser`;
experiments and demos add theirs the same way.

The command line never throws work away: numeric options are checked by their argparse ``type``
(exit 2 with "argument --jobs: ..."), the data files and the output folder are checked before
anything is computed (a missing file exits 1 saying how to get it; an output folder that cannot be
written, or that holds files no fastcon run wrote, exits 2), data is never downloaded except by
``fastcon datasets --download``, and Ctrl-C prints one line saying what was saved (exit 130) instead
of a traceback.

Output folders (``--out``): a run writes into a new folder beside ``--out`` and moves it into place
only when complete (`fastcon.experiments._writer.staged_output`). An earlier run's outputs in
``--out`` are replaced then, as a whole; an interrupted run deletes its new folder and leaves
``--out`` as it was (with the ``checkpoints`` that ``--resume`` reads). Only files fastcon wrote are
ever deleted: a symbolic link as ``--out`` is refused (exit 2), and files added to ``--out`` during
the run stop the move (exit 1; the outputs stay in the new folder, ``--out`` as it was).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ._version import __version__

__all__ = ["main"]

#: Exit status of a run stopped by Ctrl-C (128 + SIGINT, what shells report).
EXIT_INTERRUPTED = 130
_GET_DATA = "set FASTCON_DATA (or pass --data-home) to a folder that holds them"
#: The experiments whose modules set ``RESUMABLE`` (tests/test_cli.py checks it against the modules,
#: which the parser does not import).
_RESUMABLE = "ssg-roc, ssg-wasserstein, partial-fairness and gbm-bregman"


# ------------------------------------------------------------------------------- argument types
def _integer_at_least(minimum, kind):
    """argparse ``type`` for an integer >= ``minimum`` (``--jobs`` >= 1; ``--seed`` >= 0, what
    NumPy's seed sequences accept); the message names the rule, argparse adds the option."""

    def parse(text) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a {kind} integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be a {kind} integer, got {value}")
        return value

    return parse


_positive_int = _integer_at_least(1, "positive")
_seed = _integer_at_least(0, "non-negative")


def _folder(text) -> str:
    """argparse ``type`` of ``--out``: a non-empty path (``--out ""`` would otherwise mean the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must be a folder path, got {text!r}")
    return text


def _check_out(prog, out, checkpoints=False) -> bool:
    """Check that the run may write to ``--out`` (`check_output_target`); else print the error line, return False.

    ``checkpoints``: the run checkpoints its runs (an interrupted run's ``checkpoints`` in ``--out`` are its own).
    """
    from .experiments._writer import OutputFolderError, check_output_target

    try:
        check_output_target(out, checkpoints)
    except OutputFolderError as exc:
        print(f"{prog}: error: argument --out: {out} {exc.strerror}", file=sys.stderr)
        return False
    except OSError as exc:
        print(f"{prog}: error: argument --out: cannot write to {out}: {exc.strerror or exc}", file=sys.stderr)
        return False
    return True


# ------------------------------------------------------------------------------- sub-commands
def _cmd_datasets(args) -> int:
    from .datasets import dataset_info, list_datasets, load

    names = args.names or list_datasets()
    unknown = [n for n in names if n not in list_datasets()]
    if unknown:
        print(f"fastcon datasets: unknown dataset(s) {unknown}; known: {', '.join(list_datasets())}",
              file=sys.stderr)
        return 2
    rows, failed_downloads = [], []
    for name in names:
        info = dataset_info(name, data_home=args.data_home)
        if args.download and not info["available"]:
            try:
                load(name, data_home=args.data_home, subset="all", download=True)
            except Exception as exc:  # keep listing; the row below says what is still missing
                print(f"fastcon datasets: could not download {name}: {exc}", file=sys.stderr)
                failed_downloads.append(name)
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
    # Listing everything is an inventory (exit 0 with missing rows); naming a dataset asks for it.
    missing = [r["name"] for r in rows if not r["found"]] if args.names else []
    if missing and not args.download:
        print(f"fastcon datasets: missing: {' '.join(missing)}; get them with `fastcon datasets --download "
              f"{' '.join(missing)}`, or {_GET_DATA}", file=sys.stderr)
    return 1 if missing or failed_downloads or any(r["error"] for r in rows) else 0


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


def _data_error(prog, name, quick, data_home, exc) -> int:
    """Print a missing/damaged-data error of experiment ``name`` (no traceback) and return exit code 1."""
    from .datasets import DatasetFileError, dataset_info
    from .experiments import data_needed

    print(f"{prog}: error: {exc}", file=sys.stderr)
    if isinstance(exc, DatasetFileError):
        needed = dict.fromkeys(d for d, _ in data_needed(name, quick))
        missing = [d for d in needed if not dataset_info(d, data_home=data_home)["available"]] or list(needed)
        print(f"{prog}: get the data with `fastcon datasets --download {' '.join(missing)}`, or {_GET_DATA}",
              file=sys.stderr)
    return 1


def _cmd_reproduce(args) -> int:
    from .datasets import ChecksumError, DatasetFileError
    from .experiments import EXPERIMENTS, check_data, is_resumable, run_experiment
    from .experiments._writer import OutputFolderError

    prog = "fastcon reproduce"
    if args.name not in EXPERIMENTS:
        print(f"{prog}: unknown experiment {args.name!r}; known: {', '.join(sorted(EXPERIMENTS))}", file=sys.stderr)
        return 2
    if args.resume and not is_resumable(args.name):
        print(f"{prog}: --resume: {args.name} does not checkpoint its runs", file=sys.stderr)
        return 2
    # Everything that can fail for want of data or of a place to write fails here, before computing.
    try:
        check_data(args.name, quick=args.quick, data_home=args.data_home, download=False)
    except (DatasetFileError, ChecksumError) as exc:
        return _data_error(prog, args.name, args.quick, args.data_home, exc)
    out = Path(args.out if args.out is not None else f"fastcon-results/{args.name}{'-quick' if args.quick else ''}")
    if not _check_out(prog, out, checkpoints=is_resumable(args.name)):
        return 2
    try:
        run_experiment(args.name, quick=args.quick, out_dir=out, data_home=args.data_home, seed=args.seed,
                       jobs=args.jobs, verbose=not args.quiet, resume=args.resume, download=False)
    except (DatasetFileError, ChecksumError) as exc:  # a file removed or changed since the check
        return _data_error(prog, args.name, args.quick, args.data_home, exc)
    except OutputFolderError as exc:   # --out changed during the run: the outputs are left beside it
        print(f"{prog}: error: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


def _cmd_demo(args) -> int:
    from .demo import run_demo
    from .experiments._writer import OutputFolderError, staged_output

    out = Path(args.out)
    if not _check_out("fastcon demo", out):
        return 2
    try:
        with staged_output(out) as stage:   # moved to ``out`` once complete; deleted on Ctrl-C
            run_demo(out_dir=stage, seed=args.seed, verbose=not args.quiet)
    except OutputFolderError as exc:   # --out changed during the run: the outputs are left beside it
        print(f"fastcon demo: error: {exc.strerror}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"moved the outputs to {out}")
    return 0


def _positive_megabytes(text) -> float:
    """argparse ``type`` of ``--chunk-mb``: a positive number of megabytes."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number of megabytes, got {text!r}") from None
    if not 0 < value < 2 ** 20:
        raise argparse.ArgumentTypeError(f"must be a positive number of megabytes, got {text}")
    return value


def _cmd_convert(args) -> int:
    import os

    from .datasets import convert_libsvm

    prog = "fastcon convert"
    if not args.target.endswith(".fcsr"):
        print(f"{prog}: error: argument TARGET: must end in .fcsr (got {args.target!r}), so that a LIBSVM file "
              "given in the wrong order is never overwritten", file=sys.stderr)
        return 2
    if os.path.exists(args.target) and os.path.exists(args.source) and os.path.samefile(args.source, args.target):
        print(f"{prog}: error: TARGET is the SOURCE file", file=sys.stderr)
        return 2
    try:
        summary = convert_libsvm(args.source, args.target, n_features=args.n_features, zero_based=args.zero_based,
                                 chunk_mb=args.chunk_mb, group_feature=args.group_feature, name=args.name,
                                 progress=not args.quiet and sys.stderr.isatty())
    except OSError as exc:   # a missing or unreadable SOURCE, a target folder that is missing or not writable
        print(f"{prog}: error: {exc.filename}: {exc.strerror}" if exc.filename and exc.strerror
              else f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        kind = ("binary" if summary["task"] == "binary" else f"{summary['n_classes']} classes")
        print(f"{args.target}: {summary['n_rows']:,} x {summary['n_cols']:,}, {summary['nnz']:,} entries "
              f"({summary['index_dtype']} indices{', every value 1' if summary['binary_values'] else ''}), "
              f"labels {kind}; {summary['bytes'] / 2 ** 20:,.1f} MB written in {summary['seconds']:.2f} s "
              f"({summary['chunks']} chunk{'s' if summary['chunks'] != 1 else ''})")
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastcon", description="Fast solvers for constrained learning (fairness, Neyman-Pearson).")
    parser.add_argument("--version", action="version", version=f"fastcon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "datasets", help="list the named datasets, where they are and their shapes",
        description="List the named datasets, where they are and their shapes; with --download, fetch the "
                    "missing ones.",
        epilog="Exit status: 0 when every dataset asked for is present; listing them all (no NAME) exits 0 "
               "even when some are missing. 1 when a dataset named on the command line is missing, a download "
               "fails or a file cannot be read; 2 for an unknown name.")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="only these datasets (default: all); exit status 1 if one of them is missing")
    p.add_argument("--data-home", default=None, help="data folder (default: $FASTCON_DATA, then ~/.cache/fastcon)")
    p.add_argument("--no-load", action="store_true", help="only check the files, do not parse them")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--download", action="store_true",
                   help="download missing files from their official sources (the only command that downloads)")
    p.set_defaults(func=_cmd_datasets, interrupted="interrupted (files downloaded so far are kept)")

    p = sub.add_parser(
        "reproduce", help="re-run a paper experiment: figures (PNG), tables (CSV/JSON)",
        description="Re-run a paper experiment. The data files and the output folder are checked before "
                    "anything is computed; data is never downloaded here (use `fastcon datasets --download`).",
        epilog="Exit status: 0 done; 1 data missing or damaged; 2 bad arguments or unwritable --out; "
               f"130 interrupted (Ctrl-C; {_RESUMABLE} keep the finished runs for --resume).")
    p.add_argument("name", help="experiment name, e.g. ssg-roc, ssg-wasserstein")
    p.add_argument("--quick", action="store_true", help="reduced run (fewer iterations, one grid point)")
    p.add_argument("--out", type=_folder, default=None,
                   help="output folder (default fastcon-results/NAME); an earlier run's outputs there are replaced "
                        "when the run completes")
    p.add_argument("--data-home", default=None, help="data folder (default: $FASTCON_DATA, then ~/.cache/fastcon)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of splits and stochastic oracles (integer >= 0)")
    p.add_argument("--jobs", type=_positive_int, default=1, help="parallel processes for the tuning grid (>= 1)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--resume", action="store_true",
                   help=f"reuse the runs an interrupted invocation saved in OUT/checkpoints ({_RESUMABLE})")
    p.set_defaults(func=_cmd_reproduce, interrupted="interrupted: nothing saved")

    p = sub.add_parser("demo", help="FairClassifier and NeymanPearsonClassifier against scikit-learn's "
                                    "LogisticRegression on held-out synthetic rows")
    p.add_argument("--out", type=_folder, default="fastcon-results/demo",
                   help="output folder for the plot and table; an earlier run's outputs there are replaced when "
                        "the demo completes")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the synthetic data and of the splits (integer >= 0)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=_cmd_demo, interrupted="interrupted: nothing saved")

    p = sub.add_parser(
        "convert", help="convert a LIBSVM file to a .fcsr file that fastcon memory-maps",
        description="Convert a LIBSVM/svmlight file (plain, gzip, bzip2 or xz) to the binary .fcsr format that "
                    "fastcon.datasets.read_fcsr (and load) memory-maps: no parse and no copy when fitting, files "
                    "larger than memory included. The text is parsed in chunks, so memory stays near 4 x "
                    "--chunk-mb whatever the file size; labels are encoded as load_libsvm encodes them.",
        epilog="Exit status: 0 done; 1 unreadable or malformed input (the message names file and line); 2 bad "
               "arguments; 130 interrupted (nothing written).")
    p.add_argument("source", metavar="SOURCE", help="the LIBSVM file")
    p.add_argument("target", metavar="TARGET", help="the .fcsr file to write (replaced if it exists)")
    p.add_argument("--n-features", type=_integer_at_least(0, "non-negative"), default=None,
                   help="number of columns (default: the largest index in the file); a larger index is an error")
    base = p.add_mutually_exclusive_group()
    base.add_argument("--zero-based", dest="zero_based", action="store_const", const=True, default="auto",
                      help="indices start at 0 (default: zero-based if the smallest index in the file is 0)")
    base.add_argument("--one-based", dest="zero_based", action="store_const", const=False,
                      help="indices start at 1 (LIBSVM's convention)")
    p.add_argument("--chunk-mb", type=_positive_megabytes, default=64,
                   help="megabytes of text parsed at once; peak memory is about 4x this (default 64)")
    p.add_argument("--group-feature", type=_integer_at_least(0, "non-negative"), default=None, metavar="J",
                   help="0-based column of X whose values are the sensitive groups (stays a feature), "
                        "as load_libsvm(group_feature=J)")
    p.add_argument("--name", default=None, help="dataset name stored in the file (default: SOURCE's file name)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (tqdm) and no summary line")
    p.set_defaults(func=_cmd_convert, interrupted="interrupted: nothing written")
    return parser


def main(argv=None) -> int:
    """Run the ``fastcon`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except KeyboardInterrupt as exc:
        # One line instead of a traceback: what was saved (checkpointed experiments say how many
        # runs, `fastcon.experiments.ExperimentInterrupted`) and how to go on.
        message = getattr(exc, "message", None) or args.interrupted
        print(f"fastcon {args.command}: {message}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
