"""What a fit on a dask X costs against the same fit in memory, on this machine (issue 35, part 3).

Two measurements on one synthetic LIBSVM-like set (`synthetic_sparse.make_sparse_binary`: binary
CSR, ``--per-row`` Zipf-like features per row; default 200,000 x 100,000, 40 per row):

1. *A pass*: one ``matvec`` + one ``rmatvec`` (the products of one gradient evaluation) over all
   rows, in memory (`DesignMatrix`, numba on every core) and on a 2-worker `LocalCluster`
   (`DaskDesign`: worker processes with one thread each and ``NUMBA_NUM_THREADS=1``, so both
   cores work in both cases), median of ``--repeat`` pairs. Beside it: the scheduler's round trip
   (a no-op task) and the time of the products' kernels on the blocks alone, which together
   explain the difference.
2. *A fit*: ``FairClassifier("demographic_parity", bound=0.02)`` both ways (the group is the
   presence of a frequent feature that moves the label rate, as in bench/large_fit.py), with the
   passes counted and the time per pass compared; the two models are compared (largest relative
   coefficient difference) and the hard gaps of their calibration printed, beside a control: the
   in-memory fit on the same rows permuted (the same sums in another order). The calibration accepts
   or rejects a solve by its hard gap, a step function of the model: when a gap lands within
   round-off of the bound the two fits can take different paths (different pass counts), as an
   in-memory fit on the same rows in another order can; ``--max-calibration 1`` fits one solve.

Usage: ``python bench/dask_overhead.py [--rows 200000] [--features 100000] [--per-row 40] [--blocks 8]
[--repeat 20] [--no-fit] [--bound 0.02] [--max-calibration N] [--json out.json]``. It prints one line per
measurement and a JSON record.
The machine has 2 cores shared with other work: run it when it is quiet, and read the load average
printed with the results.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_sparse import make_sparse_binary  # noqa: E402


def _median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _group_of(X, y, candidates=50):
    """The presence of the frequent feature, in 5-50 % of the rows, whose presence moves the positive rate most
    (a sensitive group)."""
    Xc = X.tocsc()[:, :candidates]
    present = (Xc != 0).toarray()
    rate_with = np.array([y[present[:, j]].mean() if present[:, j].any() else 0.5 for j in range(candidates)])
    rate_without = np.array([y[~present[:, j]].mean() if (~present[:, j]).any() else 0.5 for j in range(candidates)])
    share = present.mean(axis=0)
    gap = np.where((share >= 0.05) & (share <= 0.5), np.abs(rate_with - rate_without), -1.0)   # a minority group
    j = int(np.argmax(gap))
    return present[:, j].astype(np.int64), j


class _PassCounter:
    """Counts the matvec / rmatvec calls of a design class while active."""

    def __init__(self, cls):
        self.cls, self.counts = cls, {"matvec": 0, "rmatvec": 0}

    def __enter__(self):
        self.saved = {name: getattr(self.cls, name) for name in self.counts}
        for name, original in self.saved.items():
            def counted(obj, *args, _name=name, _original=original, **kwargs):
                self.counts[_name] += 1
                return _original(obj, *args, **kwargs)
            setattr(self.cls, name, counted)
        return self

    def __exit__(self, *exc):
        for name, original in self.saved.items():
            setattr(self.cls, name, original)


def _noop():
    return 0


def _kernels_only(designs, w, c, d):
    """On a worker: its blocks' products alone (no scheduling, no transfer), best of 5."""
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        for design, ci in zip(designs, c):
            design.matvec(w, np.empty(design.n_rows))
            design.rmatvec(ci, np.zeros(d))
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=100_000)
    parser.add_argument("--per-row", type=int, default=40)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-fit", action="store_true")
    parser.add_argument("--bound", type=float, default=0.02)
    parser.add_argument("--max-calibration", type=int, default=None,
                        help="solves of the bound calibration (1: one solve, no accept/reject decision)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    import dask.array as da
    import distributed

    from fastcon import __version__
    from fastcon.datasets import Dataset
    from fastcon.estimators import FairClassifier
    from fastcon.problems._dask_design import DaskDesign
    from fastcon.problems._design import DesignMatrix

    record = {"rows": args.rows, "features": args.features, "per_row": args.per_row, "blocks": args.blocks,
              "fastcon": __version__, "dask": distributed.__version__, "load_before": os.getloadavg()}
    t0 = time.perf_counter()
    X, y = make_sparse_binary(args.rows, args.features, per_row=args.per_row, seed=0)
    g, feature = _group_of(X, y)
    n, d = X.shape
    print(f"data: {n:,} x {d:,} CSR, nnz {X.nnz:,} ({(X.data.nbytes + X.indices.nbytes) / 1e6:.0f} MB), group = "
          f"feature {feature} ({g.mean():.3f} of rows), made in {time.perf_counter() - t0:.1f} s", flush=True)
    record["nnz"] = int(X.nnz)

    rng = np.random.default_rng(1)
    w, c = rng.normal(size=d) * 0.01, rng.normal(size=n)
    z, grad = np.empty(n), np.zeros(d)

    memory = DesignMatrix(Dataset(X, np.where(y > 0, 1.0, -1.0), copy=False))

    def memory_pair():
        memory.matvec(w, z)
        grad[:] = 0.0
        memory.rmatvec(c, grad)

    record["memory_pair_s"] = _median_time(memory_pair, args.repeat)
    print(f"in memory:  matvec + rmatvec {record['memory_pair_s'] * 1e3:8.1f} ms", flush=True)

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40, env={"NUMBA_NUM_THREADS": "1"})
    client = distributed.Client(cluster)
    try:
        # the blocks scattered to the workers once and wrapped as a dask array (from_array would put X in the
        # graph and ship it again for every DaskDesign); a real cluster would read them there (da.from_delayed)
        step = -(-n // args.blocks)
        starts = range(0, n, step)
        futures = client.scatter([X[a:a + step] for a in starts])
        Xd = da.concatenate([da.from_delayed(f, shape=(min(step, n - a), d), dtype=np.float64, meta=X[:0])
                             for a, f in zip(starts, futures)])
        t0 = time.perf_counter()
        design = DaskDesign(Xd, client)
        record["dask_setup_s"] = time.perf_counter() - t0
        print(f"dask: {design!r}, set up (upload, validate, place) in {record['dask_setup_s']:.1f} s", flush=True)

        def dask_pair():
            design.matvec(w, z)
            grad[:] = 0.0
            design.rmatvec(c, grad)

        record["dask_pair_s"] = _median_time(dask_pair, args.repeat)
        record["round_trip_s"] = _median_time(lambda: client.submit(_noop, pure=False).result(), args.repeat)
        parts = design._all_rows
        futures = [client.submit(_kernels_only, p.designs, w, [c[pl] for pl in p.places], d, workers=[p.address],
                                 pure=False) for p in parts]
        record["worker_kernels_s"] = max(client.gather(futures))
        check = np.empty(n)
        memory.matvec(w, check)
        design.matvec(w, z)
        assert np.array_equal(z, check)
        print(f"dask (2 workers): matvec + rmatvec {record['dask_pair_s'] * 1e3:8.1f} ms "
              f"(overhead {(record['dask_pair_s'] - record['memory_pair_s']) * 1e3:.1f} ms; the slower worker's "
              f"kernels alone {record['worker_kernels_s'] * 1e3:.1f} ms; a no-op task round trip "
              f"{record['round_trip_s'] * 1e3:.1f} ms; 16n = {16 * n / 1e6:.1f} MB and "
              f"{len(parts)} x 8d = {len(parts) * 8 * d / 1e6:.1f} MB moved per pair)", flush=True)
        del design

        if not args.no_fit:
            fits = {}
            for where, Xfit, cls in (("memory", X, DesignMatrix), ("dask", Xd, DaskDesign)):
                with _PassCounter(cls) as counter:
                    t0 = time.perf_counter()
                    model = FairClassifier("demographic_parity", bound=args.bound,
                                           max_calibration=args.max_calibration).fit(Xfit, y, sensitive_features=g)
                    seconds = time.perf_counter() - t0
                fits[where] = model
                passes = max(counter.counts.values())
                record[f"fit_{where}_s"] = seconds
                record[f"fit_{where}_passes"] = dict(counter.counts)
                record[f"fit_{where}_s_per_pass"] = seconds / max(passes, 1)
                record[f"fit_{where}_hard_values"] = [float(v) for v in model.calibration_["hard_values"]]
                print(f"FairClassifier DP {args.bound} fit, {where:6s}: {seconds:7.1f} s, "
                      f"{counter.counts['matvec']} matvec + {counter.counts['rmatvec']} rmatvec "
                      f"({seconds / max(passes, 1) * 1e3:.1f} ms per pass), "
                      f"{len(model.calibration_['bounds'])} solves, hard gaps "
                      f"{[round(v, 5) for v in model.calibration_['hard_values']]}", flush=True)
            a, b = fits["dask"].coef_, fits["memory"].coef_
            record["fit_coef_rel_diff"] = float(np.abs(a - b).max() / np.abs(b).max())
            # the control: the same in-memory fit on the rows in another order (its sums in another order)
            order = np.random.default_rng(2).permutation(n)
            control = FairClassifier("demographic_parity", bound=args.bound,
                                     max_calibration=args.max_calibration).fit(X[order], y[order],
                                                                               sensitive_features=g[order])
            record["control_coef_rel_diff"] = float(np.abs(control.coef_ - b).max() / np.abs(b).max())
            record["control_hard_values"] = [float(v) for v in control.calibration_["hard_values"]]
            print(f"control: the in-memory fit on the rows permuted differs from it by "
                  f"{record['control_coef_rel_diff']:.2e} (hard gaps "
                  f"{[round(v, 5) for v in record['control_hard_values']]})", flush=True)
            record["fit_overhead_per_pass_s"] = record["fit_dask_s_per_pass"] - record["fit_memory_s_per_pass"]
            print(f"coef relative difference {record['fit_coef_rel_diff']:.2e}; overhead per pass (time per pass, dask "
                  f"- memory) {record['fit_overhead_per_pass_s'] * 1e3:.1f} ms", flush=True)
    finally:
        client.close()
        cluster.close()
    record["load_after"] = os.getloadavg()
    print(json.dumps(record))
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
