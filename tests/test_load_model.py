"""`fastcon.load_model` reads every model `save` writes, linear or boosted: one container, one loader."""
import json
import warnings
import zipfile

import numpy as np
import pytest

pytest.importorskip("sklearn")

import fastcon  # noqa: E402
from fastcon.estimators import NeymanPearsonClassifier  # noqa: E402


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, "pos", "neg")


def _boosted(X, y):
    for backend in ("lightgbm", "xgboost"):
        try:
            __import__(backend)
        except ImportError:
            continue
        from fastcon.boosting import NeymanPearsonGBMClassifier

        return NeymanPearsonGBMClassifier(backend, bound=0.2, rounds=2, max_iter=2, max_calibration=1).fit(X, y)
    pytest.skip("neither LightGBM nor XGBoost is installed")


def test_linear_and_boosted_models_round_trip_through_one_loader(tmp_path):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = {"linear": NeymanPearsonClassifier(bound=0.2, max_iter=50).fit(X, y), "boosted": _boosted(X, y)}
    for kind, model in models.items():
        path = tmp_path / f"{kind}.zip"
        model.save(path)
        with zipfile.ZipFile(path) as archive:
            header = json.loads(archive.read("header.json"))
            names = archive.namelist()
        assert (header["format"], header["class"]) == ("fastcon-model", type(model).__name__), kind
        assert any(n.startswith("boosters/") for n in names) == (kind == "boosted")
        back = fastcon.load_model(path)
        assert type(back) is type(model) and back.get_params() == model.get_params()
        np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
        np.testing.assert_array_equal(back.predict(X), model.predict(X))
        # a model file is not a dataset: the dataset loader says which loader to use
        with pytest.raises(ValueError, match=r"^name: .*fastcon\.load_model"):
            fastcon.load(path)


def test_a_boosted_file_with_the_former_parameter_names_loads(tmp_path):
    # boosted files written before the rename name the level alpha and its fitted dict class_bounds_
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _boosted(X, y)
    model.save(tmp_path / "new.zip")
    with zipfile.ZipFile(tmp_path / "new.zip") as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    header = json.loads(entries["header.json"])
    header["params"]["alpha"] = header["params"].pop("bound")
    header["attributes"]["class_bounds_"] = header["attributes"].pop("bound_")
    entries["header.json"] = json.dumps(header).encode("utf-8")
    with zipfile.ZipFile(tmp_path / "old.zip", "w") as archive:
        for name, raw in entries.items():
            archive.writestr(name, raw)
    back = fastcon.load_model(tmp_path / "old.zip")
    assert back.get_params() == model.get_params() and back.bound_ == model.bound_
    np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
