"""Hostile estimator files (issue 33): the loader reads the header first, then only the arrays it
references, checks every declared size before decompressing anything, and rejects arrays whose
shapes contradict each other. The hostile archives are written byte by byte, and memory is measured,
by the helpers of tests/_zip_bombs.py: loading must stay far below the sizes the hostile entries
declare. Malformed headers that are valid JSON (nested thousands deep, counts of 1e400, wrong
types: also a fuzz test of random edits) are a ValueError "path: ..." as well, never another exception.
"""
import io
import json
import re
import warnings
import zipfile

import numpy as np
import pytest

pytest.importorskip("sklearn")

import fastcon  # noqa: E402
from fastcon import load_model  # noqa: E402
from fastcon.estimators import FairClassifier, MultiClassNeymanPearsonClassifier, NeymanPearsonClassifier  # noqa: E402
from fastcon.estimators._model_file import MAX_HEADER_DEPTH, header_depth  # noqa: E402
from _zip_bombs import fuzz_header_loads, load_traced, npy_bomb, npy_bytes, write_zip  # noqa: E402


def _entries(path):
    """The entries of a saved model (name -> bytes) and its decoded JSON header."""
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    return entries, json.loads(entries["header.json"])


def _with_header(entries, header, text=None):
    """``entries`` with the header replaced by ``header`` (or by the JSON ``text``, when given)."""
    out = dict(entries)
    text = json.dumps(header) if text is None else text
    out["header.json"] = text.encode()
    return out


def _ref(header, attribute):
    """The archive entry name of a fitted array attribute."""
    return "arrays/" + header["attributes"][attribute]["__array__"] + ".npy"


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
        binary = NeymanPearsonClassifier(bound=0.2, constrained_class="no").fit(X, y)
        Xm, ym = _data(classes=3)
        multi = MultiClassNeymanPearsonClassifier({"b": 0.4, "c": 0.4}, loss="logistic").fit(Xm, ym)
        # the deepest header save writes: an interval choice, a group encoding of label tuples
        rng = np.random.default_rng(2)
        groups = np.column_stack([rng.choice(["f", "m"], len(y)), rng.choice(["a", "b", "c"], len(y))])
        fair = FairClassifier("weak_partial_dp", 0.1, max_iter=3, max_calibration=1)
        fair.fit(X, y, sensitive_features=groups)
    binary.save(folder / "binary.zip")
    multi.save(folder / "multi.zip")
    fair.save(folder / "fair.zip")
    return {"binary": (folder / "binary.zip", binary, X), "multi": (folder / "multi.zip", multi, Xm),
            "fair": (folder / "fair.zip", fair, X), "bomb": npy_bomb()}


def test_the_bomb_is_small_on_disk_and_large_inside(saved, tmp_path):
    path, _, _ = saved["binary"]
    entries, _ = _entries(path)
    write_zip(tmp_path / "bomb.zip", [*entries.items(), ("arrays/junk.npy", saved["bomb"])])
    assert (tmp_path / "bomb.zip").stat().st_size < 4 << 20
    with zipfile.ZipFile(tmp_path / "bomb.zip") as archive:
        assert archive.getinfo("arrays/junk.npy").file_size > 3 * 10 ** 9


def test_unreferenced_entry_is_never_read(saved, tmp_path):
    path, clf, X = saved["binary"]
    entries, _ = _entries(path)
    write_zip(tmp_path / "m.zip", [*entries.items(), ("arrays/junk.npy", saved["bomb"])])
    back, error = load_traced(load_model, tmp_path / "m.zip")
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
    write_zip(tmp_path / "m.zip", [*_with_header(entries, header).items(), ("arrays/junk.npy", saved["bomb"])])
    back, error = load_traced(load_model, tmp_path / "m.zip")
    assert back is None
    assert str(error).startswith(f"path: {str(tmp_path / 'm.zip')!r}") and "junk.npy" in str(error)
    assert "bytes" in str(error) and "file" in str(error)


def test_header_bomb_is_rejected_before_decompressing(saved, tmp_path):
    path, _, _ = saved["binary"]
    entries, _ = _entries(path)
    del entries["header.json"]
    write_zip(tmp_path / "m.zip", [*entries.items(), ("header.json", saved["bomb"])])
    back, error = load_traced(load_model, tmp_path / "m.zip")
    assert back is None and str(error).startswith("path: ") and "header.json" in str(error)


def test_referenced_entry_with_a_wrong_declared_size(saved, tmp_path):
    path, _, _ = saved["binary"]
    entries, header = _entries(path)
    name = _ref(header, "coef_")
    # the .npy header declares (1, 4) float64 (32 bytes) but the entry holds 8 bytes more
    entries[name] = entries[name] + bytes(8)
    write_zip(tmp_path / "longer.zip", list(entries.items()))
    with pytest.raises(ValueError, match=rf"^path: .*{name}.*declares"):
        load_model(tmp_path / "longer.zip")
    # ... or declares a million columns while holding 4
    entries, header = _entries(path)
    body = entries[name][128:]
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (1, 10 ** 6)})
    entries[name] = head.getvalue() + body
    write_zip(tmp_path / "shorter.zip", list(entries.items()))
    with pytest.raises(ValueError, match=rf"^path: .*{name}.*declares"):
        load_model(tmp_path / "shorter.zip")


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
    write_zip(tmp_path / "bad.zip", list(edit(entries, header).items()))
    with pytest.raises(ValueError, match=rf"^path: {str(tmp_path / 'bad.zip')!r} .*{field}"):
        load_model(tmp_path / "bad.zip")


def test_untampered_files_still_load(saved, tmp_path):
    for name in ("binary", "multi"):
        path, clf, X = saved[name]
        entries, _ = _entries(path)
        write_zip(tmp_path / f"{name}.zip", list(entries.items()))   # the same entries, rewritten by hand
        back = load_model(tmp_path / f"{name}.zip")
        assert np.array_equal(back.predict(X), clf.predict(X))


def test_fastcon_load_of_a_model_file_points_to_the_model_loader(saved, tmp_path):
    path, _, _ = saved["binary"]
    old = tmp_path / "old.npz"   # a linear model of fastcon 0.1
    np.savez(old, __header__=np.frombuffer(b"{}", dtype=np.uint8))
    for name in (path, str(path), old):
        with pytest.raises(ValueError, match=r"^name: .*fastcon\.load_model"):
            fastcon.load(name)
    with pytest.raises(ValueError, match="^name: unknown dataset"):   # other names: as before
        fastcon.load(tmp_path / "nothing-here.zip")


def test_a_header_bomb_in_a_file_of_fastcon_0_1_is_rejected_before_decompressing(saved, tmp_path):
    """The ``.npz`` layout of fastcon 0.1 (header in ``__header__.npy``) gets the same checks."""
    write_zip(tmp_path / "m.npz", [("a0.npy", npy_bytes(np.zeros(3))), ("__header__.npy", saved["bomb"])])
    back, error = load_traced(load_model, tmp_path / "m.npz")
    assert back is None and str(error).startswith("path: ") and "__header__.npy" in str(error)


# ----------------------------------------------------------------------------- malformed headers (valid JSON)
def _rejected(path, match=""):
    """Loading ``path`` raises a ValueError that starts with ``path: '<path>'`` and matches ``match``."""
    with pytest.raises(ValueError) as info:
        load_model(path)
    message = str(info.value)
    assert message.startswith(f"path: {str(path)!r}"), message
    assert re.search(match, message), message
    return message


def test_saved_headers_nest_far_below_the_limit(saved):
    """MAX_HEADER_DEPTH is well above the depth of the headers save writes (8: the partial-fairness model's)."""
    depths = {name: header_depth(_entries(saved[name][0])[1], 10 ** 6) for name in ("binary", "multi", "fair")}
    assert depths["fair"] == max(depths.values()) == 8, depths
    assert MAX_HEADER_DEPTH >= 8 * max(depths.values())


@pytest.mark.parametrize("depth", [600, 5000])
def test_a_deeply_nested_header_is_rejected(saved, tmp_path, depth):
    """600 levels passed json.loads and exhausted the recursion of the decoder; 5000 that of json.loads itself."""
    path, _, _ = saved["binary"]
    entries, header = _entries(path)
    header["params"]["verbose"] = "@"
    text = json.dumps(header).replace('"@"', "[" * depth + "]" * depth)
    write_zip(tmp_path / "deep.zip", list(_with_header(entries, None, text).items()))
    _rejected(tmp_path / "deep.zip", rf"is inconsistent: .*more than MAX_HEADER_DEPTH = {MAX_HEADER_DEPTH} levels")
    # nesting up to the limit is the decoder's business, not the depth check's
    header["params"]["verbose"] = "@"
    text = json.dumps(header).replace('"@"', "[" * (MAX_HEADER_DEPTH - 3) + "]" * (MAX_HEADER_DEPTH - 3))
    write_zip(tmp_path / "ok.zip", list(_with_header(entries, None, text).items()))
    assert load_model(tmp_path / "ok.zip").verbose == _nested(MAX_HEADER_DEPTH - 4)


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def _group_encoding(header):
    return header["attributes"]["group_encoder_"]["__group_encoding__"]


def _solve_result(header):
    return header["attributes"]["solve_result_"]["__solve_result__"]


@pytest.mark.parametrize("where, literal, field", [
    (_group_encoding, "1e400", "n_columns"),                # float('inf'): int() raised OverflowError
    (_group_encoding, "-1e400", "n_columns"),
    (_group_encoding, "1" + "0" * 400, "n_columns"),
    (_group_encoding, "NaN", "n_columns"),                  # int() raised ValueError without the path
    (_group_encoding, "2.0", "n_columns"),
    (_group_encoding, "-2", "n_columns"),
    (_group_encoding, "0", "n_columns"),
    (_group_encoding, "3", "n_columns"),                    # the labels are pairs
    (_group_encoding, '"2"', "n_columns"),
    (_group_encoding, "true", "n_columns"),
    (_solve_result, "1e400", "n_iter"),
    (_solve_result, "-3", "n_iter"),
    (_solve_result, "1" + "0" * 400, "objective"),          # float() raised OverflowError
    (_solve_result, "-1" + "0" * 400, "max_violation"),
    (_solve_result, '"0.5"', "objective"),
    (_solve_result, '[1, 2]', "multipliers"),
])
def test_counts_and_numbers_out_of_range_are_named(saved, tmp_path, where, literal, field):
    path, _, _ = saved["fair"]
    entries, header = _entries(path)
    where(header)[field] = "@"
    text = json.dumps(header).replace('"@"', literal)
    write_zip(tmp_path / "bad.zip", list(_with_header(entries, None, text).items()))
    _rejected(tmp_path / "bad.zip", rf"is inconsistent: .*{field}")


@pytest.mark.parametrize("edit, match", [
    (lambda h: h.update({"class": ["FairClassifier"]}), "class"),   # unhashable: TypeError
    (lambda h: h.update({"class": {"a": 1}}), "class"),
    (lambda h: _group_encoding(h).update(n_columns="@"), "unreadable header"),  # json: more than 4300 digits
    (lambda h: _solve_result(h).pop("n_iter"), "'n_iter' is missing"),
    (lambda h: h["attributes"].update(solve_result_={"__solve_result__": [1, 2]}), "solve_result_"),
    (lambda h: h["attributes"].update(groups_={"__dict__": [[[[1]], 2]]}), "unhashable"),
    (lambda h: h["attributes"].update(interval_choice_={"__interval_choice__": {
        "interval": 1, "rate": 1, "candidates": 1, "partial_dp_values": [10 ** 400]}}), "partial_dp_values"),
])
def test_malformed_headers_are_inconsistent_files(saved, tmp_path, edit, match):
    path, _, _ = saved["fair"]
    entries, header = _entries(path)
    edit(header)
    text = json.dumps(header).replace('"@"', "9" * 5000)
    write_zip(tmp_path / "bad.zip", list(_with_header(entries, None, text).items()))
    _rejected(tmp_path / "bad.zip", match)


@pytest.mark.parametrize("model", ["fair", "binary"])
def test_fuzzed_headers_load_or_raise_value_error(saved, tmp_path, model):
    """200 random edits of a real header: each file loads or is a ValueError "path: ...", never another exception."""
    path, _, _ = saved[model]
    entries, header = _entries(path)
    escaped, outcomes = fuzz_header_loads(load_model, entries, header, tmp_path / "fuzz.zip", _with_header, seed=len(model))
    assert not escaped, escaped
    assert outcomes["loaded"] and outcomes["rejected"], outcomes
