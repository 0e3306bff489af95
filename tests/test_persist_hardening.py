"""Hostile estimator files (issue 33): the loader reads the header first, then only the arrays it
references, checks every declared size before decompressing anything, and rejects arrays whose
shapes contradict each other. The hostile archives are written byte by byte, and memory is measured,
by the helpers of tests/_zip_bombs.py: loading must stay far below the sizes the hostile entries
declare.
"""
import io
import json
import warnings
import zipfile

import numpy as np
import pytest

pytest.importorskip("sklearn")

import fastcon  # noqa: E402
from fastcon.estimators import MultiClassNeymanPearsonClassifier, NeymanPearsonClassifier, load  # noqa: E402
from _zip_bombs import load_traced, npy_bomb, npy_bytes, write_zip  # noqa: E402


def _entries(path):
    """The entries of a saved model (name -> bytes) and its decoded JSON header."""
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    header = json.loads(np.load(io.BytesIO(entries["__header__.npy"]), allow_pickle=False).tobytes())
    return entries, header


def _with_header(entries, header):
    out = dict(entries)
    out["__header__.npy"] = npy_bytes(np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
    return out


def _ref(header, attribute):
    """The archive entry name of a fitted array attribute."""
    return header["attributes"][attribute]["__array__"] + ".npy"


def _data(n=300, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    if classes == 2:
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, "yes", "no")
    else:
        y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + 0.3 * rng.normal(size=(n, 3)), axis=1)]
    return X, y


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Paths of a saved binary and multi-class model, their data, and one bomb stream."""
    folder = tmp_path_factory.mktemp("models")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = _data()
        binary = NeymanPearsonClassifier(alpha=0.2, constrained_class="no").fit(X, y)
        Xm, ym = _data(classes=3)
        multi = MultiClassNeymanPearsonClassifier({"b": 0.4, "c": 0.4}, loss="logistic").fit(Xm, ym)
    binary.save(folder / "binary.npz")
    multi.save(folder / "multi.npz")
    return {"binary": (folder / "binary.npz", binary, X), "multi": (folder / "multi.npz", multi, Xm),
            "bomb": npy_bomb()}


def test_the_bomb_is_small_on_disk_and_large_inside(saved, tmp_path):
    path, _, _ = saved["binary"]
    entries, _ = _entries(path)
    write_zip(tmp_path / "bomb.npz", [*entries.items(), ("junk.npy", saved["bomb"])])
    assert (tmp_path / "bomb.npz").stat().st_size < 4 << 20
    with zipfile.ZipFile(tmp_path / "bomb.npz") as archive:
        assert archive.getinfo("junk.npy").file_size > 3 * 10 ** 9


def test_unreferenced_entry_is_never_read(saved, tmp_path):
    path, clf, X = saved["binary"]
    entries, _ = _entries(path)
    write_zip(tmp_path / "m.npz", [*entries.items(), ("junk.npy", saved["bomb"])])
    back, error = load_traced(load, tmp_path / "m.npz")
    assert error is None, error
    assert np.array_equal(back.decision_function(X), clf.decision_function(X))


@pytest.mark.parametrize("attribute", ["coef_", "solve_result_"])
def test_referenced_bomb_is_rejected_before_decompressing(saved, tmp_path, attribute):
    path, _, _ = saved["binary"]
    entries, header = _entries(path)
    if attribute == "coef_":
        header["attributes"]["coef_"] = {"__array__": "junk"}
    else:
        header["attributes"]["solve_result_"]["__solve_result__"]["multipliers"] = {"__array__": "junk"}
    write_zip(tmp_path / "m.npz", [*_with_header(entries, header).items(), ("junk.npy", saved["bomb"])])
    back, error = load_traced(load, tmp_path / "m.npz")
    assert back is None
    assert str(error).startswith(f"path: {str(tmp_path / 'm.npz')!r}") and "junk.npy" in str(error)
    assert "bytes" in str(error) and "file" in str(error)


def test_header_bomb_is_rejected_before_decompressing(saved, tmp_path):
    path, _, _ = saved["binary"]
    entries, _ = _entries(path)
    del entries["__header__.npy"]
    write_zip(tmp_path / "m.npz", [*entries.items(), ("__header__.npy", saved["bomb"])])
    back, error = load_traced(load, tmp_path / "m.npz")
    assert back is None and str(error).startswith("path: ") and "__header__.npy" in str(error)


def test_referenced_entry_with_a_wrong_declared_size(saved, tmp_path):
    path, _, _ = saved["binary"]
    entries, header = _entries(path)
    name = _ref(header, "coef_")
    # the .npy header declares (1, 4) float64 (32 bytes) but the entry holds 8 bytes more
    entries[name] = entries[name] + bytes(8)
    write_zip(tmp_path / "longer.npz", list(entries.items()))
    with pytest.raises(ValueError, match=rf"^path: .*{name}.*declares"):
        load(tmp_path / "longer.npz")
    # ... or declares a million columns while holding 4
    entries, header = _entries(path)
    body = entries[name][128:]
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (1, 10 ** 6)})
    entries[name] = head.getvalue() + body
    write_zip(tmp_path / "shorter.npz", list(entries.items()))
    with pytest.raises(ValueError, match=rf"^path: .*{name}.*declares"):
        load(tmp_path / "shorter.npz")


def _replace_array(entries, header, attribute, value):
    out = dict(entries)
    out[_ref(header, attribute)] = npy_bytes(value)
    return out


@pytest.mark.parametrize("model, edit, field", [
    ("binary", lambda e, h: _replace_array(e, h, "coef_", np.zeros((1, 5))), "coef_"),
    ("binary", lambda e, h: _replace_array(e, h, "coef_", np.zeros(4)), "coef_"),
    ("binary", lambda e, h: _replace_array(e, h, "intercept_", np.zeros(2)), "intercept_"),
    ("binary", lambda e, h: _replace_array(e, h, "classes_", np.array(["no", "yes", "maybe"])), "classes_"),
    ("binary", lambda e, h: (h["attributes"].update(n_features_in_=5), _with_header(e, h))[1], "n_features_in_"),
    ("binary", lambda e, h: (h["attributes"].update(n_features_in_="4"), _with_header(e, h))[1], "n_features_in_"),
    ("multi", lambda e, h: _replace_array(e, h, "coef_", np.zeros((2, 4))), "coef_"),
    ("multi", lambda e, h: _replace_array(e, h, "intercept_", np.zeros(2)), "intercept_"),
    ("multi", lambda e, h: _replace_array(e, h, "coef_", np.zeros((3, 4), dtype="U3")), "coef_"),
    ("binary", lambda e, h: (h["attributes"].update(feature_names_in_={"__object_array__": ["a"]}),
                             _with_header(e, h))[1], "feature_names_in_"),
])
def test_inconsistent_shapes_are_rejected_at_load(saved, tmp_path, model, edit, field):
    path, _, _ = saved[model]
    entries, header = _entries(path)
    write_zip(tmp_path / "bad.npz", list(edit(entries, header).items()))
    with pytest.raises(ValueError, match=rf"^path: {str(tmp_path / 'bad.npz')!r} .*{field}"):
        load(tmp_path / "bad.npz")


def test_untampered_files_still_load(saved, tmp_path):
    for name in ("binary", "multi"):
        path, clf, X = saved[name]
        entries, _ = _entries(path)
        write_zip(tmp_path / f"{name}.npz", list(entries.items()))   # the same entries, rewritten by hand
        back = load(tmp_path / f"{name}.npz")
        assert np.array_equal(back.predict(X), clf.predict(X))


def test_fastcon_load_of_a_model_file_points_to_the_model_loader(saved, tmp_path):
    path, _, _ = saved["binary"]
    for name in (path, str(path)):
        with pytest.raises(ValueError, match=r"^name: .*fastcon\.estimators\.load"):
            fastcon.load(name)
    boosted = tmp_path / "gbm.zip"
    with zipfile.ZipFile(boosted, "w") as archive:
        archive.writestr("header.json", json.dumps({"format": "fastcon.boosting.estimator", "format_version": 2}))
    with pytest.raises(ValueError, match=r"^name: .*fastcon\.boosting\.load"):
        fastcon.load(boosted)
    with pytest.raises(ValueError, match="^name: unknown dataset"):   # other names: as before
        fastcon.load(tmp_path / "nothing-here.npz")
