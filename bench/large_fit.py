"""Large sparse fits side by side: fastcon's constrained fits against Snap ML and scikit-learn (issue 35).

Run from the repository root (a few minutes per fit at the default size; results are appended to
``--out`` as JSON lines and a fit already recorded there for the same data is skipped, so an
interrupted run resumes where it stopped):

    python bench/large_fit.py [--rows 1000000] [--features 1000000] [--per-row 40] [--zipf 1.1]
        [--fits snapml,fastcon_dp,fastcon_np,sklearn] [--out bench_large.jsonl] [--cache DIR]

The data: `bench/synthetic_sparse.py` (binary features with Zipf-like frequencies, labels from the
1,000 most frequent ones plus logistic noise) with ``rows`` training rows and ``rows / 5`` test rows
from the same draw. The sensitive group is the presence of one frequent feature, chosen by a rule
on the data alone: among the features present in 20-50 % of the training rows, the one whose
presence moves the positive rate most. Each fit runs in a child process (its own peak RSS, no
cache of the previous fit's); the data are generated once and cached as ``.npy`` files.

Per fit: wall time of ``fit`` (data already in memory), test accuracy, test DP gap (hard, 0/1
predictions), for the NP fit the test type-I and type-II errors, peak RSS of the child and its RSS
once the data were loaded, and for fastcon the passes over the data (rows read by every
:math:`Xw` / :math:`X^\\top v` product of every solve, divided by the training rows).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

FITS = ("snapml", "fastcon_dp", "fastcon_dp_straddle", "fastcon_np", "sklearn")


def _spec(args):
    return {"rows": args.rows, "features": args.features, "per_row": args.per_row, "zipf": args.zipf, "seed": 0}


def _cache_dir(args):
    spec = _spec(args)
    name = "large_{rows}x{features}_{per_row}_{zipf}_{seed}".format(**spec)
    return pathlib.Path(args.cache) / name


def make_data(args):
    """Generate (or read from the cache) the training and test sets and the group column."""
    from synthetic_sparse import make_sparse_binary

    folder = _cache_dir(args)
    if not (folder / "done").exists():
        folder.mkdir(parents=True, exist_ok=True)
        n_test = args.rows // 5
        X, y = make_sparse_binary(args.rows + n_test, args.features, per_row=args.per_row, zipf=args.zipf, seed=0)
        X.sort_indices()
        train = np.arange(args.rows)
        present = np.asarray((X[train] > 0).mean(axis=0)).ravel()
        candidates = np.flatnonzero((present >= 0.2) & (present <= 0.5))
        if candidates.size == 0:
            raise SystemExit("no feature is present in 20-50 % of the rows: choose other --per-row/--zipf")
        Xc = X[:args.rows][:, candidates].tocsc()
        rate_with = np.asarray(Xc.T @ y[:args.rows]).ravel() / np.maximum(Xc.getnnz(axis=0), 1)
        rate_without = (y[:args.rows].sum() - rate_with * Xc.getnnz(axis=0)) / np.maximum(
            args.rows - Xc.getnnz(axis=0), 1)
        group_feature = int(candidates[np.argmax(np.abs(rate_with - rate_without))])
        g = (X[:, group_feature] > 0).toarray().ravel().astype(np.int64)
        for name, array in (("indptr", X.indptr.astype(np.int64)), ("indices", X.indices.astype(np.int32)),
                            ("y", y), ("g", g)):
            np.save(folder / f"{name}.npy", array)
        (folder / "meta.json").write_text(json.dumps({"n_rows": int(X.shape[0]), "n_train": args.rows,
                                                      "n_features": args.features, "group_feature": group_feature}))
        (folder / "done").write_text("")
    return folder


def load_data(folder):
    meta = json.loads((folder / "meta.json").read_text())
    indptr, indices = np.load(folder / "indptr.npy"), np.load(folder / "indices.npy")
    X = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(meta["n_rows"], meta["n_features"]))
    X.has_sorted_indices = True
    y, g = np.load(folder / "y.npy"), np.load(folder / "g.npy")
    n = meta["n_train"]
    return X[:n], y[:n], g[:n], X[n:], y[n:], g[n:], meta


def count_passes():
    """Count the rows every product of `DesignMatrix` reads (all of a fit's solves, held-out scores too)."""
    from fastcon.problems import _design

    read = {"rows": 0}
    cls = _design.DesignMatrix
    for method in ("matvec", "matvec2", "rmatvec"):
        original = getattr(cls, method)

        def counted(self, *args, _original=original, **kwargs):
            rows = kwargs.get("rows", args[-1] if len(args) in (3, 5) else None)
            read["rows"] += self.n_rows if rows is None else len(rows)
            return _original(self, *args, **kwargs)
        setattr(cls, method, counted)
    return read


def _warm_up(name, X, y, g):
    """Compile (or load from numba's cache) every kernel the fit uses, on 2,000 rows, before the timed fit."""
    rows = slice(0, 2000)
    if name.startswith("fastcon_dp"):
        from fastcon.estimators import FairClassifier
        FairClassifier("demographic_parity", bound=0.02, max_calibration=1).fit(
            X[rows], y[rows], sensitive_features=g[rows])
    elif name == "fastcon_np":
        from fastcon.estimators import NeymanPearsonClassifier
        NeymanPearsonClassifier(bound=0.05, delta=0.5, random_state=0).fit(X[rows], y[rows])


def run_fit(name, folder):
    """One fit in this process: a JSON-able dict of its measurements."""
    X, y, g, Xt, yt, gt, meta = load_data(folder)
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    warnings.simplefilter("ignore")
    _warm_up(name, X, y, g)
    read = count_passes() if name.startswith("fastcon") else None
    start = time.perf_counter()
    if name == "snapml":
        from snapml import LogisticRegression
        model = LogisticRegression(n_jobs=os.cpu_count()).fit(X, y)

        def decision(Z):
            return model.predict_proba(Z)[:, 1] - 0.5
    elif name == "sklearn":
        from sklearn.linear_model import LogisticRegression
        decision = LogisticRegression().fit(X, y).decision_function
    elif name == "fastcon_dp":
        from fastcon.estimators import FairClassifier
        model = FairClassifier("demographic_parity", bound=0.02, random_state=0).fit(X, y, sensitive_features=g)
        decision = model.decision_function
    elif name == "fastcon_dp_straddle":   # the rates of a pair read on either side of the threshold
        from fastcon.estimators import FairClassifier
        model = FairClassifier("demographic_parity", bound=0.02, straddle=1.0, random_state=0).fit(
            X, y, sensitive_features=g)
        decision = model.decision_function
    elif name == "fastcon_np":
        from fastcon.estimators import NeymanPearsonClassifier
        decision = NeymanPearsonClassifier(bound=0.05, random_state=0).fit(X, y).decision_function
    else:
        raise SystemExit(f"--fits: unknown fit {name!r} (one of {FITS})")
    seconds = time.perf_counter() - start
    s = np.asarray(decision(Xt)).ravel()
    pred = s > 0
    rates = [float(np.mean(pred[gt == k])) for k in (0, 1)]
    out = {"fit": name, "fit_s": round(seconds, 2), "test_accuracy": round(float(np.mean(pred == (yt == 1))), 4),
           "test_dp_gap": round(abs(rates[1] - rates[0]), 4),
           "test_type_one": round(float(np.mean(pred[yt == 0])), 4),
           "test_type_two": round(float(np.mean(~pred[yt == 1])), 4),
           "rss_loaded_mb": round(rss_loaded), "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                                                                    / 1024),
           "x_mb": round((X.indptr.nbytes + X.indices.nbytes + X.data.nbytes) / 2 ** 20)}
    if read is not None:
        out["passes"] = round(read["rows"] / X.shape[0], 1)
    if name.startswith("fastcon_dp"):   # the calibration's solves: where the passes went
        out["training_gaps"] = [round(h, 4) for h in model.calibration_["hard_values"]]
        out["bounds"] = [round(b, 5) for b in model.calibration_["bounds"]]
        out["smoothings"] = model.calibration_["smoothings"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=1_000_000)
    ap.add_argument("--per-row", type=int, default=40)
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--fits", default=",".join(FITS))
    ap.add_argument("--out", default="bench_large.jsonl")
    ap.add_argument("--cache", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    folder = make_data(args)
    if args.child:
        print(json.dumps(run_fit(args.child, folder)), flush=True)
        return
    spec = _spec(args)
    done = set()
    out = pathlib.Path(args.out)
    if out.exists():
        for line in out.read_text().splitlines():
            record = json.loads(line)
            if record.get("data") == spec:
                done.add(record["fit"])
    for name in args.fits.split(","):
        if name in done:
            print(f"{name}: already in {out}, skipped", file=sys.stderr)
            continue
        cmd = [sys.executable, __file__, "--rows", str(args.rows), "--features", str(args.features),
               "--per-row", str(args.per_row), "--zipf", str(args.zipf), "--cache", args.cache, "--child", name]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{name}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        record = json.loads(proc.stdout.strip().splitlines()[-1])
        record["data"] = spec
        record["group_feature"] = json.loads((folder / "meta.json").read_text())["group_feature"]
        with out.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
