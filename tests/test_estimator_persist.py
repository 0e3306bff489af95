"""save/load of the estimators without pickle: same bits after the round trip, clear errors on bad files."""
import json
import math
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
pd = pytest.importorskip("pandas")
from sklearn.exceptions import NotFittedError  # noqa: E402

from fastcon.estimators import (  # noqa: E402
    FairClassifier, MultiClassNeymanPearsonClassifier, NeymanPearsonClassifier, load,
)
from fastcon.estimators import _persist  # noqa: E402


def _frame(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    sex = rng.choice(["female", "male"], n)
    race = rng.choice(["a", "b", "c"], n)
    shift = (sex == "male") * 0.8 + (race == "b") * 0.4
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + shift + 0.5 * rng.normal(size=n) > 0.5, "approved", "denied")
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    return frame, y, pd.DataFrame({"sex": sex, "race": race})


def _same(a, b):
    """Equal, NaN equal to NaN, arrays bit for bit (dtype included)."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and (
            a.tobytes() == b.tobytes() if a.dtype.kind != "O" else a.tolist() == b.tolist())
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    return type(a) is type(b) and a == b


def _same_report(a, b):
    return all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)


def _fitted():
    X, y, groups = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fair = FairClassifier("demographic_parity", 0.1).fit(X, y, sensitive_features=groups)
        np_clf = NeymanPearsonClassifier(alpha=0.1, delta=0.1, constrained_class="denied",
                                         random_state=3).fit(X, y)
        rng = np.random.default_rng(1)
        labels = np.array(["low", "mid", "high"])[rng.integers(0, 3, len(y))]
        Xm = X.copy()
        Xm["x0"] += (labels == "mid") * 1.5
        Xm["x1"] += (labels == "high") * 1.5
        multi = MultiClassNeymanPearsonClassifier({"mid": 0.4, "high": 0.4}, loss="logistic").fit(Xm, labels)
    return {"fair": (fair, (X, y, groups)), "np": (np_clf, (X, y)), "multi": (multi, (Xm, labels))}


@pytest.fixture(scope="module")
def fitted():
    return _fitted()


@pytest.mark.parametrize("name", ["fair", "np", "multi"])
def test_round_trip_same_bits(fitted, name, tmp_path):
    clf, data = fitted[name]
    path = tmp_path / "model.npz"
    clf.save(path)
    back = load(path)
    assert type(back) is type(clf)
    assert back.get_params() == clf.get_params()
    X = data[0]
    for method in ("predict", "decision_function", "predict_proba", "predict_log_proba"):
        if hasattr(clf, method):
            assert _same(getattr(clf, method)(X), getattr(back, method)(X)), method
    assert _same(clf.classes_, back.classes_) and clf.classes_.dtype.kind == "U"
    assert _same(clf.feature_names_in_, back.feature_names_in_)
    assert _same_report(clf.constraint_report(*data), back.constraint_report(*data))
    # every fitted attribute except the solve's history comes back
    for key, value in vars(clf).items():
        if key.endswith("_") and key not in ("solve_result_", "group_encoder_"):
            assert _same(value, getattr(back, key)), key
    result, loaded = clf.solve_result_, back.solve_result_
    assert loaded.history == {}
    for key in ("status", "message", "n_iter", "objective", "max_violation", "solver", "counters"):
        assert _same(getattr(result, key), getattr(loaded, key)), key
    assert _same(result.x, loaded.x) and _same(result.multipliers, loaded.multipliers)
    assert json.dumps(result.info, sort_keys=True, default=str) == json.dumps(loaded.info, sort_keys=True, default=str)
    # a second save writes the same bytes
    back.save(tmp_path / "again.npz")
    assert (tmp_path / "again.npz").read_bytes() == path.read_bytes()


def test_tuple_groups_and_encoder(fitted, tmp_path):
    clf, (_, _, groups) = fitted["fair"]
    assert all(isinstance(g, tuple) for g in clf.groups_)
    clf.save(tmp_path / "fair.npz")
    back = load(tmp_path / "fair.npz")
    assert back.groups_ == clf.groups_ and all(isinstance(g, tuple) for g in back.groups_)
    assert np.array_equal(back.group_encoder_.transform(groups), clf.group_encoder_.transform(groups))
    assert back.group_encoder_.n_columns == 2
    header = _persist_header(tmp_path / "fair.npz")
    assert header["class"] == "FairClassifier" and header["format_version"] == _persist.FORMAT_VERSION
    assert "history" not in json.dumps(header)


def test_numeric_and_bool_labels(tmp_path):
    X, y, groups = _frame(seed=4)
    y_num = (y == "approved").astype(np.int64) * 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = FairClassifier(tolerance=0.05).fit(X.to_numpy(), y_num, sensitive_features=groups["sex"] == "male")
    clf.save(tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    assert _same(back.classes_, clf.classes_) and back.groups_ == [False, True]
    assert _same(back.predict(X.to_numpy()), clf.predict(X.to_numpy()))


def _persist_header(path):
    with np.load(path, allow_pickle=False) as archive:
        return json.loads(archive["__header__"].tobytes().decode("utf-8"))


def _rewrite(src, dst, edit):
    """Copy a saved model with its header changed by ``edit(header)``."""
    with np.load(src, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    header = json.loads(arrays["__header__"].tobytes().decode("utf-8"))
    edit(header)
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize("edit, message", [
    (lambda h: h.update(format_version=_persist.FORMAT_VERSION + 1), "newer|up to"),
    (lambda h: h.update({"class": "os.system"}), "of class 'os.system'"),
    (lambda h: h.update(format="something else"), "not a fastcon estimator file"),
    (lambda h: h["params"].update(no_such_param=1), "no_such_param"),
    (lambda h: h["attributes"].update({"__class__": "x"}), "not a fitted attribute name"),
    (lambda h: h["attributes"].update(coef_={"__array__": "a999"}), "does not hold"),
])
def test_rejects_bad_headers(fitted, tmp_path, edit, message):
    clf = fitted["np"][0]
    clf.save(tmp_path / "ok.npz")
    _rewrite(tmp_path / "ok.npz", tmp_path / "bad.npz", edit)
    with pytest.raises(ValueError, match=f"^path: .*({message})"):
        load(tmp_path / "bad.npz")


def test_rejects_pickles_and_other_files(tmp_path):
    np.savez(tmp_path / "objects.npz", __header__=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="^path: .*not a fastcon estimator file"):
        load(tmp_path / "objects.npz")   # reading the object array would need pickle: refused
    np.savez(tmp_path / "plain.npz", x=np.arange(3))
    with pytest.raises(ValueError, match="^path: .*no fastcon estimator header"):
        load(tmp_path / "plain.npz")
    np.save(tmp_path / "single.npy", np.arange(3))
    with pytest.raises(ValueError, match="^path: .*single array"):
        load(tmp_path / "single.npy")
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(ValueError, match="^path: "):
        load(tmp_path / "text.npz")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.npz")


def test_save_refuses_unfitted_and_unsupported_values(fitted, tmp_path):
    with pytest.raises(NotFittedError):
        NeymanPearsonClassifier().save(tmp_path / "x.npz")
    clf = fitted["np"][0]
    clf.extra_ = object()
    try:
        with pytest.raises(TypeError, match="^extra_: a value of type object"):
            clf.save(tmp_path / "x.npz")
    finally:
        del clf.extra_
    with pytest.raises(TypeError, match="^estimator: "):
        _persist.save(object(), tmp_path / "x.npz")


def test_markers_round_trip_exotic_values():
    encode = _persist._Encoder()
    value = {"__tricky": (1, "a", (2.5, None)), 3: [float("nan"), float("-inf"), True],
             "plain": {"k": np.float32(1.5), "m": np.int16(-2)}, "arr": np.arange(3, dtype=np.uint8),
             "names": np.array(["x", "y"], dtype=object)}
    text = json.dumps(encode(value, "value"), allow_nan=False)
    back = _persist._decode(json.loads(text), encode.arrays, "value")
    assert back["__tricky"] == (1, "a", (2.5, None)) and isinstance(back["__tricky"][2], tuple)
    assert math.isnan(back[3][0]) and back[3][1] == -math.inf and back[3][2] is True
    assert back["plain"] == {"k": 1.5, "m": -2}
    assert back["arr"].dtype == np.uint8 and back["names"].dtype == object and back["names"].tolist() == ["x", "y"]


def test_a_fair_file_from_before_the_straddle_loads_with_straddle_0(tmp_path):
    # FairClassifier gained straddle (default None: 0, then 1 when the calibration sees piling);
    # a file written before was fitted with both rates at the threshold, as straddle=0 does
    rng = np.random.default_rng(1)
    X, y, g = rng.normal(size=(300, 3)), np.arange(300) % 2, rng.integers(0, 2, 300)
    clf = FairClassifier("demographic_parity", 0.1, straddle=0.0).fit(X, y, sensitive_features=g)
    clf.save(tmp_path / "new.npz")

    def as_old(header):
        del header["params"]["straddle"]
    _rewrite(tmp_path / "new.npz", tmp_path / "old.npz", as_old)
    old = load(tmp_path / "old.npz")
    assert old.get_params()["straddle"] == 0.0
    assert _same(old.predict(X), clf.predict(X))
    assert FairClassifier().get_params()["straddle"] is None


def test_a_file_from_before_a_behaviour_changing_parameter_loads_with_the_old_behaviour(tmp_path):
    # MultiClassNeymanPearsonClassifier gained delta (default 0.05: a held-out certificate); a file
    # written before has no delta and was fitted on all rows, as delta=None does
    X, y = np.random.default_rng(0).normal(size=(300, 3)), np.arange(300) % 3
    clf = MultiClassNeymanPearsonClassifier({1: 0.4, 2: 0.4}, delta=None).fit(X, y)
    clf.save(tmp_path / "new.npz")

    def as_old(header):
        del header["params"]["delta"], header["params"]["calibration_fraction"], header["params"]["random_state"]
        for name in ("shift_", "certification_", "guarantee_"):
            header["attributes"].pop(name)
    _rewrite(tmp_path / "new.npz", tmp_path / "old.npz", as_old)
    old = load(tmp_path / "old.npz")
    assert old.get_params()["delta"] is None
    assert _same(old.predict(X), clf.predict(X))
    assert old.constraint_report(X, y).guarantee == ""      # unknown for a file that did not record it
