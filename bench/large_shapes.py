"""LIBSVM's large shapes (url, kdd2010) from the synthetic generator: parse, convert, fit, predict (issue 35).

Run from the repository root (the machine otherwise idle; results are appended to ``--out`` as JSON
lines, and a step already recorded there for the same data is skipped, so an interrupted run
resumes where it stopped; the data are cached under ``--cache`` and reused):

    python bench/large_shapes.py [--shapes url,kdd2010] [--scale 1] [--steps generate,parse,...]
        [--cache DIR] [--out results/large-shapes/<commit>.jsonl] [--timeout SECONDS]
        [--max-iter N] [--max-calibration N]

``--scale 0.01`` shrinks the rows and the features of both shapes by that factor (the entries per
row stay), to check the whole script in two minutes.

The shapes (LIBSVM's own files: https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html):

* ``url``: 2,396,130 training rows x 3,231,961 features, about 116 stored entries per row (url's
  277M entries / 2.40M rows); columns 0-199 real-valued (each stored in 5-35 % of the rows, drawn
  per column, six-decimal values in (0, 1): about 40 per row), the other 3,231,761 binary with
  Zipf-like frequencies (82 draws per row, 74.8 stored after duplicates at this width: 115.3 in all);
* ``kdd2010`` (algebra): 8,407,752 training rows x 20,216,830 binary features, 38 Zipf draws per row
  (36.3 stored, as kdd2010's 305.6M entries / 8.41M rows).

The data: ``iter_sparse_chunks`` of `bench/synthetic_sparse.py` (`make_sparse_binary`'s set,
generated chunk by chunk, with real-valued columns first for url), labels from the real columns
and the 1,000 most frequent binary ones plus logistic noise, half positive; ``rows`` training rows
and ``rows / 5`` test rows from the same draw (the rows that follow). Written as one-based LIBSVM
text chunk by chunk (`libsvm_text`: the text of a chunk, never of the set, is in memory). The
sensitive group is the presence of one frequent feature, chosen by `bench/large_fit.py`'s rule on
the training rows (among the features present in 20-50 % of them, the one whose presence moves
the positive rate most), restricted to the binary columns (``fastcon convert --group-feature``
makes one group per distinct value of the column).

Steps, each in its own child process (its peak RSS from ``getrusage``; ``child_s`` the child's
whole wall time, imports included):

``generate``   write ``train.svm`` and ``test.svm`` (wall time, bytes, entries, the group column);
``parse``      ``fastcon.datasets.load_libsvm`` on ``train.svm`` (the public LIBSVM reader;
               ``fastcon.datasets.load`` reads named sets and ``.fcsr`` files), and
``parse_sklearn`` scikit-learn's ``load_svmlight_file`` on the same file, each skipped with the
               reason recorded when its estimated peak memory exceeds the memory available;
``convert``    ``fastcon convert`` (the command, in a grandchild) of both files to ``.fcsr`` with
               the group column (wall time, bytes, the command's peak RSS);
``mmap_load``  ``read_fcsr(mmap=True)`` of ``train.fcsr`` (structure checks, no copy) and
               ``load(path)`` (the same plus the sha256 of every section);
``fit_np``     ``NeymanPearsonClassifier(bound=0.05)`` and
``fit_dp``     ``FairClassifier("demographic_parity", 0.02)`` on the mapped file, after a warm-up fit
               on 2,000 mapped rows (`large_fit._warm_up`): fit wall time, passes over the data
               (`large_fit.count_passes`), peak RSS (the mapped file's resident pages included);
               the model is saved for the next steps;
``predict_np``, ``predict_dp``  the saved model on the mapped ``test.fcsr``: ``decision_function`` wall
               time, test accuracy, type-I and type-II errors (NP), DP gap (DP).

The estimators have no time budget, only ``max_iter`` (outer iterations of the augmented
Lagrangian) and, for the DP fit, ``max_calibration`` (solves): ``--max-iter`` and
``--max-calibration`` pass them on; ``--timeout`` kills a step's child after that many seconds and
records ``status: "timeout"`` (not retried on resume; delete the line to retry). The free space of
``--cache`` is checked before anything is written: the script refuses, naming the bytes, when the
files still to be written do not fit.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _timing import git_state  # noqa: E402

#: LIBSVM's shapes: training rows, features, Zipf draws per row (binary columns), real-valued columns.
SHAPES = {
    "url": {"rows": 2_396_130, "features": 3_231_961, "per_row": 82, "real_columns": 200},
    "kdd2010": {"rows": 8_407_752, "features": 20_216_830, "per_row": 38, "real_columns": 0},
}
STEPS = ("generate", "parse", "parse_sklearn", "convert", "mmap_load", "fit_np", "fit_dp", "predict_np",
         "predict_dp")
ZIPF, CHUNK_ROWS, SEED = 1.1, 50_000, 0
#: Steps whose files the later steps read: a recorded step whose files are gone is run again.
NEEDS = {"parse": "generate", "parse_sklearn": "generate", "convert": "generate", "mmap_load": "convert",
         "fit_np": "convert", "fit_dp": "convert", "predict_np": "fit_np", "predict_dp": "fit_dp"}


def spec_of(shape, scale):
    """The data of one shape at ``scale`` (the key under which its steps are recorded)."""
    base = SHAPES[shape]
    rows = max(1000, round(base["rows"] * scale))
    features = max(10 * base["real_columns"] + 1000, round(base["features"] * scale))
    return {"shape": shape, "scale": scale, "rows": rows, "test_rows": rows // 5, "features": features,
            "per_row": base["per_row"], "real_columns": base["real_columns"], "zipf": ZIPF,
            "chunk_rows": CHUNK_ROWS, "seed": SEED}


def folder_of(spec, cache):
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]
    return pathlib.Path(cache) / f"large_shapes_{spec['shape']}_{spec['scale']:g}_{key}"


def chunks(spec, n_rows=None, chunk_rows=CHUNK_ROWS):
    from synthetic_sparse import iter_sparse_chunks

    n = spec["rows"] + spec["test_rows"] if n_rows is None else n_rows
    return iter_sparse_chunks(n, spec["features"], per_row=spec["per_row"], zipf=spec["zipf"],
                              real_columns=spec["real_columns"], chunk_rows=chunk_rows, seed=spec["seed"])


# ------------------------------------------------------------------------------------------- text
_POW10 = 10 ** np.arange(19, dtype=np.int64)


def libsvm_text(X, y) -> bytes:
    """One-based LIBSVM lines of the CSR ``X`` (sorted indices) and labels ``y`` in {0, 1} (written 1 / -1).

    The values must be 1 (written ``1``) or six-decimal numbers ``k / 10**6`` in (0, 1) (written
    ``0.`` and up to six digits): what `iter_sparse_chunks` makes; `load_libsvm` reads the text
    back to the same arrays. Vectorised (a few array passes per entry), so a chunk of millions of
    entries formats in about a second.
    """
    n = X.shape[0]
    indptr = X.indptr.astype(np.int64)
    nnz = int(indptr[-1])
    idx = X.indices[:nnz].astype(np.int64) + 1
    values = X.data[:nnz]
    binary = values == 1.0
    k = np.rint(values * 1e6).astype(np.int64)
    if not np.all(binary | ((k >= 1) & (k < 10 ** 6) & (k / 1e6 == values))):
        raise ValueError("X: values must be 1 or six-decimal numbers in (0, 1)")
    ndig = np.searchsorted(_POW10, idx, side="right")   # decimal digits of each index
    trailing = np.zeros(nnz, dtype=np.int64)
    for t in range(1, 6):
        trailing += (k % _POW10[t] == 0) & ~binary
    vlen = np.where(binary, 1, 8 - trailing)              # "1", or "0." and 6 - trailing digits
    entry = 2 + ndig + vlen                               # " " index ":" value
    ends = np.zeros(nnz + 1, dtype=np.int64)
    np.cumsum(entry, out=ends[1:])
    positive = np.asarray(y).ravel() == 1
    label = np.where(positive, 1, 2)
    row_len = label + ends[indptr[1:]] - ends[indptr[:-1]] + 1
    row_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=row_start[1:])
    buf = np.empty(int(row_start[-1]), dtype=np.uint8)
    buf[row_start[:-1][~positive]] = ord("-")
    buf[row_start[:-1] + label - 1] = ord("1")
    buf[row_start[1:] - 1] = ord("\n")
    row_of = np.repeat(np.arange(n), np.diff(indptr))
    start = row_start[row_of] + label[row_of] + ends[:-1] - ends[indptr[row_of]]
    del row_of
    buf[start] = ord(" ")
    q = idx
    for d in range(int(ndig.max()) if nnz else 0):
        has = ndig > d
        buf[(start + ndig - d)[has]] = 48 + (q[has] % 10)
        q = q // 10
    colon = start + 1 + ndig
    buf[colon] = ord(":")
    buf[colon[binary] + 1] = ord("1")
    real = ~binary
    colon, k, vlen = colon[real], k[real], vlen[real]
    buf[colon + 1] = ord("0")
    buf[colon + 2] = ord(".")
    for t in range(6):
        has = vlen - 2 > t
        buf[(colon + 3 + t)[has]] = 48 + (k[has] // _POW10[5 - t]) % 10
    return buf.tobytes()


# ------------------------------------------------------------------------------------ estimates
def estimate(spec, pilot_rows=2000):
    """Bytes of the files and entries, from the first ``pilot_rows`` rows of the same kind (at the full width)."""
    X, y = next(chunks(spec, n_rows=pilot_rows, chunk_rows=pilot_rows))
    per_row = X.nnz / X.shape[0]
    text_per_row = len(libsvm_text(X, y)) / X.shape[0]
    out = {}
    for part, n in (("train", spec["rows"]), ("test", spec["test_rows"])):
        nnz = per_row * n
        wide = max(n, spec["features"], nnz) >= 2 ** 31
        out[f"{part}_nnz"] = nnz
        out[f"{part}_text"] = text_per_row * n
        # .fcsr: indptr, indices (int32 unless a size reaches 2**31), data, y, groups
        out[f"{part}_fcsr"] = (n + 1 + nnz) * (8 if wide else 4) + 8 * nnz + 16 * n + 4096
    out["spool"] = 4 * out["train_nnz"] + 24 * spec["rows"]   # the converter's spools, until it finishes
    out["models"] = 2 * 2 * 8 * spec["features"]                # per model: coef_ and the solve's x
    return out


def memory_needed(step, est, spec):
    """Estimated peak bytes of a parse step: 10-15 % above the peaks measured at ``--scale 0.05``."""
    n, nnz = spec["rows"], est["train_nnz"]
    if step == "parse":   # the whole text, the parser's arrays (12 bytes per entry, 16 per row), checks
        return est["train_text"] + 12 * nnz + 28 * n + 200e6
    # scikit-learn (1.9): array.array of float64 values and int64 indices, grown by appending (up to
    # an eighth over), kept as the CSR's arrays; 15.5 bytes per entry measured, 21 leaves room
    return 21 * nnz + 40 * n + 200e6


def memory_available():
    with open("/proc/meminfo") as fh:
        info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in fh}
    return info.get("MemAvailable", info["MemFree"])


# --------------------------------------------------------------------------------------- children
def _peak_mb(who=resource.RUSAGE_SELF):
    return round(resource.getrusage(who).ru_maxrss / 1024)


def step_generate(spec, folder):
    """Write train.svm / test.svm chunk by chunk and meta.json (the group column by large_fit.py's rule)."""
    d, n_train = spec["features"], spec["rows"]
    counts = np.zeros(d, dtype=np.int64)       # training rows holding each column
    positives = np.zeros(d)                    # ... and positive among them
    stats = {"train": [0, 0, 0, 0], "test": [0, 0, 0, 0]}   # rows, entries, bytes, positives
    start = time.perf_counter()
    files = {part: open(folder / f"{part}.svm.part", "wb") for part in ("train", "test")}
    try:
        row = 0
        for X, y in chunks(spec):
            cut = min(max(n_train - row, 0), X.shape[0])
            for part, rows in (("train", slice(0, cut)), ("test", slice(cut, X.shape[0]))):
                if rows.stop <= rows.start:
                    continue
                Xp, yp = X[rows], y[rows]
                text = libsvm_text(Xp, yp)
                files[part].write(text)
                s = stats[part]
                s[0] += Xp.shape[0]
                s[1] += Xp.nnz
                s[2] += len(text)
                s[3] += int(yp.sum())
                if part == "train":
                    counts += np.bincount(Xp.indices, minlength=d)
                    positives += np.bincount(Xp.indices, weights=np.repeat(yp, np.diff(Xp.indptr)), minlength=d)
                del text
            row += X.shape[0]
    finally:
        for fh in files.values():
            fh.close()
    seconds = time.perf_counter() - start
    # large_fit.py's rule, on the binary columns
    present = counts / n_train
    candidates = np.flatnonzero((present >= 0.2) & (present <= 0.5))
    candidates = candidates[candidates >= spec["real_columns"]]
    if candidates.size == 0:
        raise SystemExit("no binary feature is present in 20-50 % of the training rows")
    with_ = positives[candidates] / counts[candidates]
    without = (stats["train"][3] - positives[candidates]) / (n_train - counts[candidates])
    group = int(candidates[np.argmax(np.abs(with_ - without))])
    for part in ("train", "test"):
        os.replace(folder / f"{part}.svm.part", folder / f"{part}.svm")
    meta = {"group_feature": group, "group_presence": round(float(present[group]), 4),
            "columns_present": int(np.count_nonzero(counts))}
    for part, (rows, nnz, size, pos) in stats.items():
        meta.update({f"{part}_rows": rows, f"{part}_nnz": nnz, f"{part}_text_bytes": size,
                     f"{part}_positive_rate": round(pos / rows, 4)})
    (folder / "meta.json").write_text(json.dumps(meta))
    return {"generate_s": round(seconds, 2), **meta, "nnz_per_row": round(stats["train"][1] / n_train, 2),
            "text_mb": round(stats["train"][2] / 2 ** 20), "test_text_mb": round(stats["test"][2] / 2 ** 20),
            "peak_rss_mb": _peak_mb()}


def step_parse(spec, folder):
    from fastcon.datasets import load_libsvm

    base = _peak_mb()
    start = time.perf_counter()
    ds = load_libsvm(folder / "train.svm", n_features=spec["features"])
    seconds = time.perf_counter() - start
    return {"parse_s": round(seconds, 2), "nnz": int(ds.X.nnz), "index_dtype": ds.X.indices.dtype.name,
            "rss_before_mb": base, "peak_rss_mb": _peak_mb()}


def step_parse_sklearn(spec, folder):
    from sklearn.datasets import load_svmlight_file

    base = _peak_mb()
    start = time.perf_counter()
    X, _ = load_svmlight_file(str(folder / "train.svm"), n_features=spec["features"])
    seconds = time.perf_counter() - start
    return {"parse_s": round(seconds, 2), "nnz": int(X.nnz), "index_dtype": X.indices.dtype.name,
            "rss_before_mb": base, "peak_rss_mb": _peak_mb()}


def step_convert(spec, folder):
    group = json.loads((folder / "meta.json").read_text())["group_feature"]
    out = {}
    for part in ("train", "test"):
        cmd = [sys.executable, "-m", "fastcon", "convert", str(folder / f"{part}.svm"), str(folder / f"{part}.fcsr"),
               "--n-features", str(spec["features"]), "--one-based", "--group-feature", str(group), "--quiet"]
        start = time.perf_counter()
        subprocess.run(cmd, check=True)
        seconds = time.perf_counter() - start
        prefix = "" if part == "train" else "test_"
        out.update({f"{prefix}convert_s": round(seconds, 2),
                    f"{prefix}fcsr_mb": round((folder / f"{part}.fcsr").stat().st_size / 2 ** 20)})
        if part == "train":   # the largest peak of the commands so far: the training file's
            out["peak_rss_mb"] = _peak_mb(resource.RUSAGE_CHILDREN)
    out["command"] = "fastcon convert SOURCE TARGET --n-features D --one-based --group-feature J --quiet"
    return out


def step_mmap_load(spec, folder):
    from fastcon.datasets import load, read_fcsr

    path = folder / "train.fcsr"
    start = time.perf_counter()
    ds = read_fcsr(path, mmap=True)
    read_s = time.perf_counter() - start
    rss = _peak_mb()
    start = time.perf_counter()
    load(path)
    verify_s = time.perf_counter() - start
    return {"read_fcsr_s": round(read_s, 2), "load_verify_s": round(verify_s, 2), "shape": list(ds.shape),
            "nnz": int(ds.X.nnz), "index_dtype": ds.X.indices.dtype.name, "binary_values": ds.is_binary_features,
            "groups": ds.group_names, "rss_after_read_mb": rss, "peak_rss_mb": _peak_mb()}


def _estimator(kind, args):
    from fastcon.estimators import FairClassifier, NeymanPearsonClassifier

    if kind == "np":
        return NeymanPearsonClassifier(bound=0.05, random_state=0, max_iter=args.max_iter)
    return FairClassifier("demographic_parity", bound=0.02, random_state=0, max_iter=args.max_iter,
                          max_calibration=args.max_calibration)


def step_fit(spec, folder, kind, args):
    from large_fit import _warm_up, count_passes

    from fastcon.datasets import read_fcsr, write_fcsr

    warnings.simplefilter("ignore")
    ds = read_fcsr(folder / "train.fcsr", mmap=True)
    rss_loaded = _peak_mb()
    # warm-up on 2,000 rows read back from a .fcsr file: mapped (read-only) arrays, as in the timed fit
    small = folder / f"warmup_{kind}.fcsr"
    write_fcsr(ds.X[:2000], small, y=ds.y[:2000], groups=ds.groups[:2000])
    warm = read_fcsr(small, mmap=True)
    _warm_up(f"fastcon_{kind}", warm.X, warm.y, warm.groups)
    del warm
    small.unlink()
    read = count_passes()
    model = _estimator(kind, args)
    start = time.perf_counter()
    if kind == "np":
        model.fit(ds.X, ds.y)
    else:
        model.fit(ds.X, ds.y, sensitive_features=ds.groups)
    seconds = time.perf_counter() - start
    model.save(folder / f"{kind}.model.part")
    os.replace(folder / f"{kind}.model.part", folder / f"{kind}.model")
    out = {"fit_s": round(seconds, 2), "passes": round(read["rows"] / ds.shape[0], 1),
           "status": model.solve_result_.status, "rss_loaded_mb": rss_loaded, "peak_rss_mb": _peak_mb(),
           "max_iter": args.max_iter}
    if kind == "np":
        out["fit_type_one_error"] = round(float(model.fit_type_one_error_), 4)
        out["chosen_ridge"] = model.ridge_
    else:
        out["max_calibration"] = args.max_calibration
        out["training_gaps"] = [round(h, 4) for h in model.calibration_["hard_values"]]
        out["met"] = bool(model.calibration_["met"])
    return out


def step_predict(spec, folder, kind):
    from fastcon.datasets import read_fcsr
    from fastcon import load_model

    model = load_model(folder / f"{kind}.model")
    ds = read_fcsr(folder / "test.fcsr", mmap=True)
    start = time.perf_counter()
    pred = np.asarray(model.decision_function(ds.X)).ravel() > 0
    seconds = time.perf_counter() - start
    y = ds.y == 1
    out = {"predict_s": round(seconds, 3), "test_rows": int(ds.shape[0]),
           "test_accuracy": round(float(np.mean(pred == y)), 4), "peak_rss_mb": _peak_mb()}
    if kind == "np":
        out["test_type_one"] = round(float(np.mean(pred[~y])), 4)
        out["test_type_two"] = round(float(np.mean(~pred[y])), 4)
    else:
        rates = [float(np.mean(pred[ds.groups == k])) for k in (0, 1)]
        out["test_dp_gap"] = round(abs(rates[1] - rates[0]), 4)
    return out


def run_child(step, spec, folder, args):
    if step == "generate":
        return step_generate(spec, folder)
    if step == "parse":
        return step_parse(spec, folder)
    if step == "parse_sklearn":
        return step_parse_sklearn(spec, folder)
    if step == "convert":
        return step_convert(spec, folder)
    if step == "mmap_load":
        return step_mmap_load(spec, folder)
    kind = step.split("_")[1]
    return step_fit(spec, folder, kind, args) if step.startswith("fit") else step_predict(spec, folder, kind)


# ----------------------------------------------------------------------------------------- parent
def artifacts(step, folder):
    """The files a step leaves for the later ones (none for the measuring-only steps)."""
    return {"generate": ["train.svm", "test.svm", "meta.json"], "convert": ["train.fcsr", "test.fcsr"],
            "fit_np": ["np.model"], "fit_dp": ["dp.model"]}.get(step, [])


def _has(step, folder):
    return all((folder / name).exists() for name in artifacts(step, folder))


def _commit():
    return git_state(REPO)


def check_disk(plans, cache):
    """Refuse (SystemExit) when the files still to be written do not fit in ``cache``'s free space."""
    need, lines = 0, []
    for spec, folder, steps in plans:
        est = estimate(spec)
        parts = []
        if not _has("generate", folder):
            parts.append(("text", est["train_text"] + est["test_text"]))
        if "convert" in steps and not _has("convert", folder):
            parts.append(("fcsr + spools", est["train_fcsr"] + est["test_fcsr"] + est["spool"]))
        if any(s.startswith(("fit", "predict")) and not _has(f"fit_{s[-2:]}", folder) for s in steps):
            parts.append(("models", est["models"]))
        total = sum(b for _, b in parts)
        need += total
        lines.append(f"  {spec['shape']} (scale {spec['scale']:g}): {total / 1e9:,.2f} GB "
                     + ", ".join(f"{name} {b / 1e9:,.2f} GB" for name, b in parts))
    need *= 1.05
    free = shutil.disk_usage(cache).free
    report = "\n".join(lines)
    if need > free:
        raise SystemExit(f"--cache {cache}: {need:,.0f} bytes ({need / 1e9:,.1f} GB) needed, {free:,.0f} bytes "
                         f"({free / 1e9:,.1f} GB) free; choose another --cache or fewer --shapes:\n{report}")
    print(f"disk: {need / 1e9:,.2f} GB to write under {cache} ({free / 1e9:,.1f} GB free)\n{report}", file=sys.stderr)


def run_step(step, spec, folder, args):
    """Run ``step`` in a child process: its record (with ``status``), or a failure/timeout record."""
    cmd = [sys.executable, __file__, "--child", step, "--shapes", spec["shape"], "--scale", repr(spec["scale"]),
           "--cache", str(args.cache)]
    for flag, value in (("--max-iter", args.max_iter), ("--max-calibration", args.max_calibration)):
        if value is not None:
            cmd += [flag, str(value)]
    load = round(os.getloadavg()[0], 2)   # other work on the machine, for the reader of the record
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)   # the child and the command it runs (convert)
        proc.communicate()
        return {"status": "timeout", "timeout_s": args.timeout, "load_before": load}
    child_s = round(time.perf_counter() - start, 2)
    if proc.returncode != 0:
        return {"status": "failed", "returncode": proc.returncode, "error": err.strip()[-2000:], "child_s": child_s,
                "load_before": load}
    record = json.loads(out.strip().splitlines()[-1])
    record.update(status="ok", child_s=child_s, load_before=load)
    return record


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="url,kdd2010")
    ap.add_argument("--scale", type=float, default=1.0, help="rows and features times this (entries per row kept)")
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--cache", default=os.environ.get("TMPDIR") or "/tmp")
    ap.add_argument("--out", default=None, help="default results/large-shapes/<commit>.jsonl")
    ap.add_argument("--timeout", type=float, default=None, help="seconds a step's child may run")
    ap.add_argument("--max-iter", type=int, default=None, help="the estimators' max_iter (default theirs)")
    ap.add_argument("--max-calibration", type=int, default=None, help="FairClassifier's max_calibration")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not 0 < args.scale <= 1:
        ap.error("--scale: in (0, 1]")
    shapes = args.shapes.split(",")
    steps = args.steps.split(",")
    for name, known in ((shapes, SHAPES), (steps, STEPS)):
        unknown = [s for s in name if s not in known]
        if unknown:
            ap.error(f"unknown {unknown} (known: {', '.join(known)})")
    if args.child:
        spec = spec_of(shapes[0], args.scale)
        print(json.dumps(run_child(args.child, spec, folder_of(spec, args.cache), args)), flush=True)
        return
    commit, dirty = _commit()
    out = pathlib.Path(args.out or REPO / "results" / "large-shapes" / f"{commit}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    plans = []
    for shape in shapes:
        spec = spec_of(shape, args.scale)
        folder = folder_of(spec, args.cache)
        plans.append((spec, folder, steps))
    pathlib.Path(args.cache).mkdir(parents=True, exist_ok=True)   # a new --cache folder: its disk is asked about
    check_disk(plans, args.cache)
    for spec, folder, steps in plans:
        folder.mkdir(parents=True, exist_ok=True)
        done = {r["step"] for r in records if r.get("data") == spec and r.get("status") in ("ok", "skipped",
                                                                                            "timeout")}

        def run(step):
            record = run_step(step, spec, folder, args)
            _record(out, step, spec, record, commit, dirty, rerun=step in done)
            if record["status"] == "ok":
                done.add(step)

        def ensure(step):
            """Make the files ``step`` writes exist (running it, and what it needs, again if they are gone)."""
            if _has(step, folder):
                return True
            need = NEEDS.get(step)
            if need is not None and not ensure(need):
                return False
            run(step)
            return _has(step, folder)

        est = None
        for step in (s for s in STEPS if s in steps):
            if step in done and _has(step, folder):
                print(f"{spec['shape']} {step}: already in {out}, skipped", file=sys.stderr)
                continue
            need = NEEDS.get(step)
            if need is not None and not ensure(need):
                _record(out, step, spec, {"status": "failed", "error": f"{need} failed"}, commit, dirty)
                continue
            if step in ("parse", "parse_sklearn"):
                est = est or estimate(spec)
                needed, available = memory_needed(step, est, spec), memory_available()
                if needed > 0.9 * available:
                    _record(out, step, spec, {"status": "skipped", "reason": (
                        f"estimated peak {needed / 2 ** 30:.1f} GiB > 90 % of the {available / 2 ** 30:.1f} GiB "
                        "available")}, commit, dirty)
                    done.add(step)
                    continue
            run(step)


def _record(out, step, spec, record, commit, dirty, rerun=False):
    record = {"step": step, **record, "data": spec, "commit": commit, "dirty_tree": dirty,
              "date": time.strftime("%Y-%m-%d %H:%M")}
    if rerun:
        record["rerun"] = True
    with out.open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
