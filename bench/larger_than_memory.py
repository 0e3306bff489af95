"""A fit whose data file is larger than the memory the process may use (issue 35, part 2).

Run from the repository root, as root on Linux with the cgroup-v1 memory controller (the limit is
enforced by the kernel: a process above it is reclaimed, and killed if nothing can be reclaimed):

    python bench/larger_than_memory.py [--rows 3000000] [--features 1000000] [--per-row 100]
        [--limit-mb 1280] [--file /tmp/large.fcsr] [--passes 5] [--tol 1e-2]

1. Writes (once) a synthetic set from `bench/synthetic_sparse.py` as ``.fcsr`` (`write_fcsr`): at
   the defaults 300M entries, 3.1 GB (int32 indices, float64 values). The fit's own vectors take
   about 1 GB at 3M rows (about 260 bytes per row, anonymous memory), so the limit leaves a few
   hundred MB of page cache for a 3.1 GB file.
2. Times reading the whole file once (``cat FILE > /dev/null``) after dropping the page cache, the
   floor of a pass that has to come from disk.
3. In a child process placed in a memory cgroup limited to ``--limit-mb``: maps the file
   (`read_fcsr`), times ``--passes`` full passes (one ``Xw`` and one ``X^T v``, fastcon's kernels
   through `DesignMatrix`), then fits ``NeymanPearsonClassifier(ridge=1e-6, tol=1e-2)`` (one
   ridge: no selection path; a loose stationarity tolerance, since every pass comes from disk)
   and reports its time, passes and the cgroup's peak usage (page cache of the
   mapped file included: the kernel evicts it under the limit and reads it again).

Prints JSON lines.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
CGROUP = pathlib.Path("/sys/fs/cgroup/memory/fastcon_larger_than_memory")


def make_file(args):
    path = pathlib.Path(args.file)
    if path.exists():
        return path
    sys.path.insert(0, str(HERE))
    from synthetic_sparse import make_sparse_binary

    from fastcon.datasets import write_fcsr

    X, y = make_sparse_binary(args.rows, args.features, per_row=args.per_row, zipf=1.1, seed=0)
    X.sort_indices()
    write_fcsr(X, path, y=2 * y - 1, name="larger_than_memory")
    return path


def drop_caches():
    subprocess.run(["sync"], check=True)
    pathlib.Path("/proc/sys/vm/drop_caches").write_text("3\n")


def child(args):
    import warnings

    import numpy as np

    from fastcon.datasets import read_fcsr
    from fastcon.estimators import NeymanPearsonClassifier
    from fastcon.problems._design import DesignMatrix

    ds = read_fcsr(args.file, mmap=True)
    design = DesignMatrix(ds)
    n, d = ds.shape
    w, v = np.full(d, 1e-3), np.empty(n)
    g = np.empty(d)
    times = []
    for _ in range(args.passes):
        start = time.perf_counter()
        design.matvec(w, v)
        g[:] = 0.0
        design.rmatvec(v, g)
        times.append(time.perf_counter() - start)
    sys.path.insert(0, str(HERE))
    from large_fit import count_passes

    read = count_passes()
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    clf = NeymanPearsonClassifier(ridge=1e-6, tol=args.tol, random_state=0).fit(ds.X, ds.y)
    fit_s = time.perf_counter() - start
    return {"pass_pairs_s": [round(t, 2) for t in times], "fit_s": round(fit_s, 1),
            "fit_passes": round(read["rows"] / n, 1), "fit_type_one_error": clf.fit_type_one_error_,
            "status": clf.solve_result_.status}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--features", type=int, default=1_000_000)
    ap.add_argument("--per-row", type=int, default=100)
    ap.add_argument("--limit-mb", type=int, default=1280)
    ap.add_argument("--file", default="/tmp/large.fcsr")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--tol", type=float, default=1e-2, help="stationarity tolerance of the NP fit")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args)), flush=True)
        return
    path = make_file(args)
    size_mb = path.stat().st_size / 2 ** 20
    drop_caches()
    start = time.perf_counter()
    subprocess.run(f"cat {path} > /dev/null", shell=True, check=True)
    read_s = time.perf_counter() - start
    print(json.dumps({"file_mb": round(size_mb), "cold_read_s": round(read_s, 2),
                      "cold_read_gb_s": round(size_mb / 1024 / read_s, 2)}), flush=True)
    if CGROUP.exists():   # a fresh group: its peak and OOM counters then count this run only
        CGROUP.rmdir()
    CGROUP.mkdir()
    (CGROUP / "memory.limit_in_bytes").write_text(str(args.limit_mb * 2 ** 20))
    (CGROUP / "memory.max_usage_in_bytes").write_text("0")
    drop_caches()
    cmd = [sys.executable, __file__, "--child", "--file", str(path), "--passes", str(args.passes)]
    cmd += ["--tol", str(args.tol)]
    proc = subprocess.Popen(["sh", "-c", f'echo $$ > {CGROUP}/cgroup.procs && exec "$0" "$@"', *cmd],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    out, _ = proc.communicate()
    record = json.loads(out.strip().splitlines()[-1]) if proc.returncode == 0 else {"returncode": proc.returncode}
    record.update(limit_mb=args.limit_mb, file_mb=round(size_mb),
                  cgroup_peak_mb=round(int((CGROUP / "memory.max_usage_in_bytes").read_text()) / 2 ** 20),
                  oom_kills=(CGROUP / "memory.oom_control").read_text().split()[-1])
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
