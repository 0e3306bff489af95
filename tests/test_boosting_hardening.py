"""fastcon.boosting hardening (issue 33): threads, damaged model files, small data, unknown params, degenerate fits.

Whatever can crash the interpreter (LightGBM segfaulted on ``n_threads=10**6`` and aborted on a
truncated model file) runs in a child process, so that a crash fails the test instead of pytest.
"""
import hashlib
import json
import re
import subprocess
import sys
import textwrap
import warnings
import zipfile

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

from fastcon import load_model  # noqa: E402
from fastcon.boosting import (  # noqa: E402
    BoostedEnsemble, FairGBMClassifier, LightGBMScoreModel, NeymanPearsonGBMClassifier, XGBoostScoreModel,
)
from fastcon.boosting._validate import check_lightgbm_text, thread_limit  # noqa: E402

MODELS = {"xgboost": XGBoostScoreModel, "lightgbm": LightGBMScoreModel}
PARAMS = {"xgboost": {"max_depth": 2}, "lightgbm": {"num_leaves": 4}}


def _data(n, seed=0, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.7 * rng.normal(size=n) > 0).astype(np.int64)
    y[:2] = [0, 1]   # two classes at any n
    return X, y


def _run(script, *args, timeout=600):
    """Run ``script`` in a child Python; its exit code and output (a crash is a non-zero code, not a dead pytest)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)], capture_output=True,
                          text=True, errors="replace", timeout=timeout)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small fitted NeymanPearsonGBMClassifier of each backend, saved."""
    X, y = _data(300)
    out = {}
    for name in ("lightgbm", "xgboost"):
        path = tmp_path_factory.mktemp(name) / "model.zip"
        clf = NeymanPearsonGBMClassifier(name, rounds=2, max_iter=3, max_calibration=1, params=PARAMS[name])
        clf.fit(X, y).save(path)
        out[name] = path
    return out


def _rewrite(src, dst, text=None, *, digest="keep", n_threads=None):
    """Copy the archive ``src`` to ``dst`` with the booster text replaced; ``digest``: "keep" the saved sha256,
    "match" the new text (a tamperer who rewrote it, or a file without one: only the structure check is left)."""
    with zipfile.ZipFile(src) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    header = json.loads(entries["header.json"])
    member = header["ensemble"]["files"][0]
    if text is not None:
        entries[member] = text
    if digest == "match":
        header["ensemble"]["sha256"] = [hashlib.sha256(entries[member]).hexdigest()]
    if n_threads is not None:
        header["ensemble"]["n_threads"] = n_threads
    entries["header.json"] = json.dumps(header).encode()
    with zipfile.ZipFile(dst, "w") as archive:
        for n, raw in entries.items():
            archive.writestr(n, raw)
    return dst


# ---------------------------------------------------------------------------- n_threads
def test_n_threads_is_bounded_by_the_machine(saved, tmp_path):
    limit = thread_limit()
    huge = _rewrite(saved["lightgbm"], tmp_path / "huge_lgb.zip", n_threads=10 ** 6)
    huge_x = _rewrite(saved["xgboost"], tmp_path / "huge_xgb.zip", n_threads=10 ** 6)
    out = _run("""
        import sys, numpy as np
        from fastcon import load_model
        from fastcon.boosting import NeymanPearsonGBMClassifier
        rng = np.random.default_rng(0); X = rng.normal(size=(200, 5)); y = (X[:, 0] > 0).astype(int)
        for name in ("lightgbm", "xgboost"):
            try:
                NeymanPearsonGBMClassifier(name, rounds=2, max_iter=2, max_calibration=1, n_threads=10**6).fit(X, y)
                print(name, "fitted")
            except ValueError as exc:
                print(name, "ValueError", exc)
        for path in sys.argv[1:]:
            m = load_model(path)
            m.decision_function(X)
            print("loaded", m.ensemble_.n_threads)
    """, huge, huge_x)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    for name, line in zip(("lightgbm", "xgboost"), lines):
        assert line == (f"{name} ValueError n_threads: at most {limit} (the CPUs this process may use, "
                        "os.sched_getaffinity), got 1000000")
    # a model saved on a larger machine loads, with this machine's threads
    assert lines[2:] == [f"loaded {limit}"] * 2
    X, y = _data(50)
    for name, model in MODELS.items():
        with pytest.raises(ValueError, match=rf"^n_threads: at most {limit} "):
            model(X, y, 2, n_threads=limit + 1)
    with pytest.raises(ValueError, match=rf"^n_threads: at most {limit} "):
        BoostedEnsemble("lightgbm", [], [], 1, n_threads=limit + 1)
    assert LightGBMScoreModel(X, y, 2, n_threads=limit).n_threads == limit


def test_thread_aliases_in_params_are_refused():
    X, y = _data(50)
    for alias in ("nthreads", "num_thread", "random_seed", "num_classes", "objective_type"):
        with pytest.raises(ValueError, match=rf"^params: \['{alias}'\] are set by the score model"):
            LightGBMScoreModel(X, y, 2, params={alias: 10 ** 6})


# ---------------------------------------------------------------------------- damaged model files
_LOAD_ALL = """
    import sys
    import numpy as np
    from fastcon import load_model
    X = np.zeros((3, 5))
    for path in sys.argv[1:]:
        print(path, file=sys.stderr, flush=True)     # the case a crash happened in
        try:
            load_model(path).decision_function(X)
            verdict = "LOADED"
        except ValueError as exc:
            verdict = ("ValueError " if str(exc).startswith(f"path: {path!r} ") else "BADMESSAGE ") + str(exc)
        except Exception as exc:
            verdict = f"OTHER {type(exc).__name__} {exc}"
        print(path, verdict[:300].replace("\\n", " "), flush=True)
"""


def _damaged(text, rng, n_flips):
    """Truncations at many offsets (every line start, some offsets inside lines) and byte flips of ``text``."""
    starts = [i + 1 for i, c in enumerate(text) if c == ord("\n")]
    offsets = sorted(set([0, 1, 7, len(text) - 1] + starts[:-1:2] + list(rng.integers(0, len(text), 40))))
    cases = [(f"t{o}", text[:o]) for o in offsets]
    for k in range(n_flips):
        t = bytearray(text)
        i = int(rng.integers(len(t)))
        t[i] = int(rng.choice(list(b"0123456789-.=e \n[]:x")))
        if bytes(t) != text:
            cases.append((f"f{k}_{i}", bytes(t)))
    return cases


@pytest.mark.parametrize("name", ["lightgbm", "xgboost"])
def test_damaged_booster_file_is_a_path_value_error_and_never_kills_the_process(name, saved, tmp_path):
    with zipfile.ZipFile(saved[name]) as archive:
        text = archive.read(json.loads(archive.read("header.json"))["ensemble"]["files"][0])
    rng = np.random.default_rng(33)
    paths, structural = [], []
    for label, damaged in _damaged(text, rng, 40):
        # with the saved digest (what a damaged file has): rejected before the library reads it
        paths.append(_rewrite(saved[name], tmp_path / f"{label}_keep.zip", damaged))
        # digest recomputed (a tamperer, or a file from before digests): the structure check alone
        structural.append(_rewrite(saved[name], tmp_path / f"{label}_match.zip", damaged, digest="match"))
    garbage = _rewrite(saved[name], tmp_path / "garbage.zip", b"garbage\ntext=1\n", digest="match")
    out = _run(_LOAD_ALL, *paths, *structural, garbage)
    assert out.returncode == 0, f"the loading process died ({out.returncode}) at: {out.stderr[-300:]}"
    # LightGBM prints its own warnings to stdout: only the lines of the loop
    results = {line.split(" ", 1)[0]: line.split(" ", 2)[1] for line in out.stdout.splitlines()
               if line.startswith(str(tmp_path))}
    assert len(results) == len(paths) + len(structural) + 1
    for path in paths:   # every damage breaks the digest
        assert results[str(path)] == "ValueError", out.stdout
    assert "does not match its sha256" in out.stdout
    assert results[str(garbage)] == "ValueError"
    # without the digest a file either loads (the damage kept the shape: a changed digit, a cut trailer)
    # or is the documented ValueError; never a crash and never the library's own exception
    assert {results[str(p)] for p in structural} <= {"ValueError", "LOADED"}, out.stdout
    assert sum(results[str(p)] == "ValueError" for p in structural) > len(structural) // 2


def test_lightgbm_text_check_rejects_every_truncation_inside_the_trees(saved):
    with zipfile.ZipFile(saved["lightgbm"]) as archive:
        text = archive.read("boosters/0000.txt").decode()
    assert check_lightgbm_text(text, 1) == 5
    end = text.index("end of trees\n") + len("end of trees\n")
    for offset in range(0, end):          # every offset: pure Python, no library call
        with pytest.raises(ValueError, match=r"^LightGBM model text"):
            check_lightgbm_text(text[:offset], 1)
    with pytest.raises(ValueError, match="num_class=1, but the ensemble has 3 output"):
        check_lightgbm_text(text, 3)
    # a child index that makes no tree (followed out of bounds at prediction otherwise)
    with pytest.raises(ValueError, match="Tree=0: node 0 is reached twice"):
        check_lightgbm_text(re.sub(r"left_child=-?\d+", "left_child=0", text, count=1), 1)
    with pytest.raises(ValueError, match=r"Tree=0: split_feature has '5', expected an integer in \[0, 4\]"):
        check_lightgbm_text(re.sub(r"split_feature=\d+", "split_feature=5", text, count=1), 1)


# ---------------------------------------------------------------------------- small data
@pytest.mark.parametrize("n", [4, 10, 30, 39, 40, 41, 79, 80])
def test_lightgbm_fits_small_data(n):
    X, y = _data(n, seed=n)
    model = LightGBMScoreModel(X, y, 2, rounds=3)
    assert model.params["min_data_in_leaf"] == min(20, max(1, n // 4))
    state = model.prox_step(model.initial_state(), 10.0, np.ones(n))
    assert model.steps[0][1] > 0                 # trees were grown
    assert np.all(np.isfinite(model.predict_scores(X, state)))


@pytest.mark.parametrize("name", ["lightgbm", "xgboost"])
def test_estimators_fit_30_rows(name):
    X, y = _data(30, seed=1)
    g = np.arange(30) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # delta=None: 15 rows of class 0 are too few to hold out for the umbrella threshold
        npc = NeymanPearsonGBMClassifier(name, bound=0.2, delta=None, rounds=3, max_iter=5,
                                         max_calibration=2).fit(X, y)
        fair = FairGBMClassifier("mean_loss_gap", backend=name, rounds=3, max_iter=2, inner_iter=3).fit(X, y, sensitive_features=g)
    assert npc.n_rounds_ > 0 and fair.n_rounds_ > 0
    assert npc.predict(X).shape == (30,)


def test_lightgbm_small_data_errors_name_the_rows_needed():
    X, y = _data(30)
    for alias in ("min_data_in_leaf", "min_child_samples"):
        with pytest.raises(ValueError, match=rf"^params: {alias}=20 needs at least 40 rows .* X has 30"):
            LightGBMScoreModel(X, y, 2, params={alias: 20})
    LightGBMScoreModel(X, y, 2, params={"min_data_in_leaf": 15})   # 30 rows are enough
    model = LightGBMScoreModel(np.ones((200, 3)), np.arange(200) % 2, 2)
    with pytest.raises(ValueError, match=r"^X: LightGBM kept no feature it can split on \(200 rows, "
                                         r"min_data_in_leaf=20\).*at least 40 rows"):
        model.prox_step(model.initial_state(), 10.0, np.ones(200))


# ---------------------------------------------------------------------------- unknown parameters
@pytest.mark.parametrize("name, known, unknown", [
    ("lightgbm", {"num_leaves": 7, "min_child_samples": 5, "lambda_l2": 1.0}, "numleaves"),
    ("xgboost", {"max_depth": 3, "eta": 0.3, "lambda": 1.0, "subsample": 0.9}, "maxdepth"),
])
def test_unknown_params_are_warned_by_name(name, known, unknown):
    X, y = _data(100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MODELS[name](X, y, 2, params=known)
    with pytest.warns(UserWarning, match=rf"^params: unknown {'LightGBM' if name == 'lightgbm' else 'XGBoost'} "
                                         rf"parameter\(s\) \['{unknown}'\]") as record:
        MODELS[name](X, y, 2, params=dict(known, **{unknown: 3}))
    assert len(record) == 1 and record[0].filename == __file__


# ---------------------------------------------------------------------------- degenerate models
@pytest.mark.parametrize("name, params", [("lightgbm", {"min_gain_to_split": 1e9}), ("xgboost", {"gamma": 1e9})])
def test_a_constant_model_is_warned(name, params):
    X, y = _data(200)
    with pytest.warns(ConvergenceWarning, match=r"the model is constant \(no tree split the training rows"):
        clf = NeymanPearsonGBMClassifier(name, delta=None, rounds=2, max_iter=2, max_calibration=1,
                                         params=params).fit(X, y)
    assert np.unique(clf.predict(X)).size == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        FairGBMClassifier("mean_loss_gap", backend="lightgbm", rounds=2, max_iter=1, inner_iter=2, bound=1.0).fit(
            X, y, sensitive_features=np.arange(200) % 2)


@pytest.mark.filterwarnings("ignore:categorical_feature keyword has been found:UserWarning")
@pytest.mark.parametrize("params", [{"linear_tree": True, "num_leaves": 3},
                                    {"categorical_feature": [3], "num_leaves": 5},
                                    {"min_gain_to_split": 1e9}], ids=["linear", "categorical", "one-leaf"])
def test_lightgbm_models_of_every_tree_kind_pass_the_check(params, tmp_path):
    """The structure check accepts what LightGBM writes: linear trees, categorical splits, one-leaf trees."""
    X, y = _data(400)
    X[:, 3] = np.arange(400) % 5
    y = np.where(X[:, 3] % 2 == 1, 1 - (X[:, 0] > 1.5), X[:, 0] > 1.0).astype(np.int64)   # odd categories
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = NeymanPearsonGBMClassifier("lightgbm", rounds=2, max_iter=3, max_calibration=1, params=params).fit(X, y)
    text = clf.ensemble_.backend.to_text(clf.ensemble_.boosters[0], 0, clf.n_rounds_)
    if "categorical_feature" in params:
        assert re.search(r"num_cat=[1-9]", text)
    check_lightgbm_text(text, 1)
    clf.save(tmp_path / "m.zip")
    np.testing.assert_array_equal(load_model(tmp_path / "m.zip").decision_function(X), clf.decision_function(X))
