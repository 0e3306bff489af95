"""save / fastcon.load_model of the linear estimators without pickle: same bits after the round trip, clear
errors on bad files."""
import io
import json
import math
import pathlib
import warnings
import zipfile

import numpy as np
import pytest

pytest.importorskip("sklearn")
pd = pytest.importorskip("pandas")
from sklearn.exceptions import NotFittedError  # noqa: E402

from fastcon import load_model  # noqa: E402
from fastcon.estimators import FairClassifier, MultiClassNeymanPearsonClassifier, NeymanPearsonClassifier  # noqa: E402
from fastcon.estimators import _model_file, _persist  # noqa: E402

DATA = pathlib.Path(__file__).parent / "data" / "models"


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
        np_clf = NeymanPearsonClassifier(bound=0.1, delta=0.1, constrained_class="denied",
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
    back = load_model(path)
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
    back = load_model(tmp_path / "fair.npz")
    assert back.groups_ == clf.groups_ and all(isinstance(g, tuple) for g in back.groups_)
    assert np.array_equal(back.group_encoder_.transform(groups), clf.group_encoder_.transform(groups))
    assert back.group_encoder_.n_columns == 2
    header = _persist_header(tmp_path / "fair.npz")
    assert header["class"] == "FairClassifier" and header["format_version"] == _model_file.FORMAT_VERSION
    assert "history" not in json.dumps(header)


def test_numeric_and_bool_labels(tmp_path):
    X, y, groups = _frame(seed=4)
    y_num = (y == "approved").astype(np.int64) * 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = FairClassifier(bound=0.05).fit(X.to_numpy(), y_num, sensitive_features=groups["sex"] == "male")
    clf.save(tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert _same(back.classes_, clf.classes_) and back.groups_ == [False, True]
    assert _same(back.predict(X.to_numpy()), clf.predict(X.to_numpy()))


def _persist_header(path):
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("header.json").decode("utf-8"))


def _rewrite(src, dst, edit):
    """Copy a saved model with its header changed by ``edit(header)``."""
    with zipfile.ZipFile(src) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    header = json.loads(entries["header.json"])
    edit(header)
    entries["header.json"] = json.dumps(header).encode("utf-8")
    with zipfile.ZipFile(dst, "w") as archive:
        for n, raw in entries.items():
            archive.writestr(n, raw)


def _as_npz(src, dst, edit=lambda header: None):
    """A saved model rewritten as the ``.npz`` of format ``fastcon.estimator`` 1 (fastcon 0.1), header changed by
    ``edit``: the header an uint8 array ``__header__``, the arrays at the top of the archive."""
    with zipfile.ZipFile(src) as archive:
        header = json.loads(archive.read("header.json"))
        arrays = {n[len("arrays/"):-len(".npy")]: np.load(io.BytesIO(archive.read(n)), allow_pickle=False)
                  for n in archive.namelist() if n.startswith("arrays/")}
    header.update(format="fastcon.estimator", format_version=1)
    edit(header)
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize("edit, message", [
    (lambda h: h.update(format_version=_model_file.FORMAT_VERSION + 1), "newer|up to"),
    (lambda h: h.update({"class": "os.system"}), "of class 'os.system'"),
    (lambda h: h.update(format="something else"), "not a fastcon model file"),
    (lambda h: h["params"].update(no_such_param=1), "no_such_param"),
    (lambda h: h["attributes"].update({"__class__": "x"}), "not a fitted attribute name"),
    (lambda h: h["attributes"].update(coef_={"__array__": "a999"}), "does not hold"),
])
def test_rejects_bad_headers(fitted, tmp_path, edit, message):
    clf = fitted["np"][0]
    clf.save(tmp_path / "ok.npz")
    _rewrite(tmp_path / "ok.npz", tmp_path / "bad.npz", edit)
    with pytest.raises(ValueError, match=f"^path: .*({message})"):
        load_model(tmp_path / "bad.npz")


def test_rejects_pickles_and_other_files(tmp_path):
    np.savez(tmp_path / "objects.npz", __header__=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="^path: .*holds Python objects"):
        load_model(tmp_path / "objects.npz")   # reading the object array would need pickle: refused
    np.savez(tmp_path / "plain.npz", x=np.arange(3))
    with pytest.raises(ValueError, match="^path: .*not a fastcon model file .*no header.json"):
        load_model(tmp_path / "plain.npz")
    np.save(tmp_path / "single.npy", np.arange(3))
    with pytest.raises(ValueError, match="^path: .*single array"):
        load_model(tmp_path / "single.npy")
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(ValueError, match="^path: .*not a fastcon model file"):
        load_model(tmp_path / "text.npz")
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.npz")


def test_a_zip_that_is_not_a_model_is_refused_naming_the_path(tmp_path):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("README.txt", "hello")
    with pytest.raises(ValueError, match=rf"^path: {str(path)!r} is not a fastcon model file"):
        load_model(path)
    with zipfile.ZipFile(path, "w") as archive:   # a header.json of something else
        archive.writestr("header.json", json.dumps({"format": "other-tool", "version": 3}))
    with pytest.raises(ValueError, match=rf"^path: {str(path)!r} is not a fastcon model file \(format 'other-tool"):
        load_model(path)


def test_the_model_file_layout(fitted, tmp_path):
    clf = fitted["multi"][0]
    clf.save(tmp_path / "m.zip")
    with zipfile.ZipFile(tmp_path / "m.zip") as archive:
        names = archive.namelist()
    header = _persist_header(tmp_path / "m.zip")
    assert names[0] == "header.json" and all(n.startswith("arrays/a") and n.endswith(".npy") for n in names[1:])
    assert (header["format"], header["format_version"]) == ("fastcon-model", 1)
    assert header["class"] == "MultiClassNeymanPearsonClassifier" and header["fastcon_version"]


@pytest.mark.parametrize("name", ["neyman_pearson", "fair"])
def test_a_file_written_by_fastcon_0_1_loads(name):
    """``tests/data/models/*_v1.npz``: written by the ``.npz`` writer of fastcon 0.1 (format fastcon.estimator 1),
    with the decision values it gave on the rows stored beside it."""
    expected = np.load(DATA / "expected_v1.npz", allow_pickle=False)
    clf = load_model(DATA / f"{name}_v1.npz")
    assert type(clf).__name__ == {"neyman_pearson": "NeymanPearsonClassifier", "fair": "FairClassifier"}[name]
    assert np.array_equal(clf.decision_function(expected["X"]), expected[name])


def test_an_npz_rewritten_from_a_saved_model_loads(fitted, tmp_path):
    clf, data = fitted["fair"]
    clf.save(tmp_path / "new.zip")
    _as_npz(tmp_path / "new.zip", tmp_path / "old.npz")
    back = load_model(tmp_path / "old.npz")
    assert back.get_params() == clf.get_params()
    assert _same(back.decision_function(data[0]), clf.decision_function(data[0]))


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
    encode = _model_file._Encoder()
    value = {"__tricky": (1, "a", (2.5, None)), 3: [float("nan"), float("-inf"), True],
             "plain": {"k": np.float32(1.5), "m": np.int16(-2)}, "arr": np.arange(3, dtype=np.uint8),
             "names": np.array(["x", "y"], dtype=object)}
    text = json.dumps(encode(value, "value"), allow_nan=False)
    back = _model_file._decode(json.loads(text), encode.arrays, "value")
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
    _as_npz(tmp_path / "new.npz", tmp_path / "old.npz", as_old)
    old = load_model(tmp_path / "old.npz")
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
    _as_npz(tmp_path / "new.npz", tmp_path / "old.npz", as_old)
    old = load_model(tmp_path / "old.npz")
    assert old.get_params()["delta"] is None
    assert _same(old.predict(X), clf.predict(X))
    assert old.constraint_report(X, y).guarantee == ""      # unknown for a file that did not record it


@pytest.mark.parametrize("name, renamed", [("fair", {"bound": "tolerance"}), ("np", {"bound": "alpha"}),
                                           ("multi", {"bound": "class_bounds", "bound_": "class_bounds_"})])
def test_a_file_with_the_former_parameter_names_loads(fitted, tmp_path, name, renamed):
    # files written before the constraint level was named `bound` name it tolerance, alpha or class_bounds
    clf, data = fitted[name]
    clf.save(tmp_path / "new.zip")

    def as_old(header):
        for new, old in renamed.items():
            part = header["attributes"] if new.endswith("_") else header["params"]
            part[old] = part.pop(new)
    _as_npz(tmp_path / "new.zip", tmp_path / "old.npz", as_old)
    old = load_model(tmp_path / "old.npz")
    assert old.get_params() == clf.get_params()
    assert _same(old.decision_function(data[0]), clf.decision_function(data[0]))
    if name == "multi":
        assert old.bound_ == clf.bound_

    def both(header):
        as_old(header)
        header["params"]["bound"] = header["params"][renamed["bound"]]
    _rewrite(tmp_path / "new.zip", tmp_path / "both.zip", both)
    with pytest.raises(ValueError, match=f"^path: .*parameter 'bound' given twice .*'{renamed['bound']}'"):
        load_model(tmp_path / "both.zip")
