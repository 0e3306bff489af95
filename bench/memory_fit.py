"""Peak memory of an estimator's fit above its input, on a wide sparse set (docs/benchmarks.md, Memory).

Run from the repository root:

    python bench/memory_fit.py [--rows 100000] [--features 1000000] [--per-row 10] [--fits fair,np,...]

Each fit runs in a fresh process: the data is made there (CSR float64, ``--per-row`` features per row,
Zipf-like feature frequencies, two groups), then the process's peak resident set (Linux's VmHWM) is
reset through ``/proc/self/clear_refs`` and read again after the fit. Printed per fit: the input's
bytes (``X.data + X.indices + X.indptr``), the peak above the resident set before the fit, their
ratio, and what is left above three times the input counted in float64 vectors of ``n_features``
(issue 33 allows three times the input plus a fixed number of such vectors; L-BFGS's workspace is
``2 * lbfgs_memory + 5`` of them, `fastcon.estimators._solve.lbfgs_memory`).
"""
import argparse
import json
import os
import subprocess
import sys
import time

FITS = {
    "fair_dp": "FairClassifier('demographic_parity', bound=0.05)",
    "fair_dp_validation": "FairClassifier('demographic_parity', bound=0.05, validation_fraction=0.3)",
    "np": "NeymanPearsonClassifier(bound=0.05, delta=None)",
    "np_umbrella": "NeymanPearsonClassifier(bound=0.05, delta=0.1)",
    "np_default": "NeymanPearsonClassifier()",
    "multiclass_np": "MultiClassNeymanPearsonClassifier({0: 0.1, 2: 0.2})",
}


def _status_kib(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def make_wide_csr(n_rows, n_features, per_row, seed=0):
    """CSR float64 with ``per_row`` distinct features per row drawn with Zipf-like frequencies."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    cols = (rng.zipf(1.3, size=n_rows * per_row) - 1) % n_features
    rows = np.repeat(np.arange(n_rows), per_row)
    X = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(n_rows, n_features))
    X.sum_duplicates()
    X.sort_indices()
    w = rng.normal(size=n_features)
    groups = rng.integers(0, 2, n_rows)
    margin = np.asarray(X @ w).ravel() + 0.5 * groups + rng.normal(size=n_rows)
    y = (margin > np.median(margin)).astype(np.int64)
    return X, y, groups


def measure(fit, n_rows, n_features, per_row):
    """Run in the child: make the data, reset the peak, fit, report."""
    import gc

    import numpy as np

    from fastcon.estimators import (  # noqa: F401  (names used by the FITS expressions)
        FairClassifier, MultiClassNeymanPearsonClassifier, NeymanPearsonClassifier,
    )

    X, y, groups = make_wide_csr(n_rows, n_features, per_row)
    if fit == "multiclass_np":
        y = y + (groups * (y == 1))                  # three classes
    estimator = eval(FITS[fit])
    kwargs = {"sensitive_features": groups} if fit.startswith("fair") else {}
    gc.collect()
    input_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before = _status_kib("VmRSS") * 1024
    start = time.perf_counter()
    estimator.fit(X, y, **kwargs)
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM") * 1024
    vectors = (peak - before - 3 * input_bytes) / (8 * n_features)
    print(json.dumps({"fit": fit, "rows": n_rows, "features": n_features, "nnz": int(X.nnz),
                      "input_mb": round(input_bytes / 2**20, 1), "peak_above_mb": round((peak - before) / 2**20, 1),
                      "ratio": round((peak - before) / input_bytes, 2),
                      "feature_vectors_beyond_3x_input": round(vectors, 1),
                      "fit_s": round(seconds, 2), "n_iter": int(np.max(getattr(estimator, "n_iter_", 0)))}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=1_000_000)
    ap.add_argument("--per-row", type=int, default=10)
    ap.add_argument("--fits", default=",".join(FITS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure(args.child, args.rows, args.features, args.per_row)
        return
    for fit in args.fits.split(","):
        if fit not in FITS:
            raise SystemExit(f"--fits: unknown fit {fit!r}; expected some of {', '.join(FITS)}")
        cmd = [sys.executable, __file__, "--child", fit, "--rows", str(args.rows), "--features",
               str(args.features), "--per-row", str(args.per_row)]
        out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))
        print(out.stdout.strip() or f"{fit}: failed\n{out.stderr[-2000:]}", flush=True)


if __name__ == "__main__":
    main()
