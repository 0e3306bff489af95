r"""The two gradient-boosting libraries behind one small interface: train from init scores, predict raw scores, text.

A backend trains one booster of ``rounds`` Newton-boosting rounds on a custom objective, starting
from given training scores (XGBoost's ``base_margin``, LightGBM's ``init_score``), and predicts the
*trees only* of a booster (``base_score = 0`` for XGBoost; LightGBM's ``predict`` never adds an
init score), so that an ensemble is the plain sum of its boosters (Lin & Deng [LD23] §5: the
released reference code read the newest booster's prediction as the whole model, and lost every
earlier booster's trees).

Neither library is imported with `fastcon.boosting`: `backend` imports the one asked for and
raises an ImportError that names it when it is missing.
"""
from __future__ import annotations

import importlib

import numpy as np

__all__ = ["BACKENDS", "backend"]

#: Names accepted by ``backend=``.
BACKENDS = ("lightgbm", "xgboost")


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"backend={name!r} needs the {name} package, which is not installed: "
                          f"pip install 'fastcon[boost]' (or pip install {name}) ({exc})") from exc


def _check_params(params, fixed, name="params"):
    """A copy of the user's tree parameters; keys the score model sets itself are a ValueError naming them."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError(f"{name}: expected a dict of the library's parameters, got {type(params).__name__}")
    clash = sorted(k for k in params if k in fixed)
    if clash:
        raise ValueError(f"{name}: {clash} are set by the score model ({fixed[clash[0]]}); remove them")
    return dict(params)


class XGBoostBackend:
    """XGBoost (``xgboost.train`` with ``obj=``; ``base_margin`` = the training scores; ``base_score = 0``)."""

    name = "xgboost"
    suffix = "json"
    #: parameters the score model owns, and why
    FIXED = {"objective": "the custom objective is the prox subproblem's", "obj": "idem",
             "base_score": "0, so that a booster predicts its trees only",
             "num_class": "from the labels", "num_target": "from the labels",
             "nthread": "use n_threads=", "n_jobs": "use n_threads=", "seed": "use seed=",
             "random_state": "use seed="}

    def __init__(self):
        self.lib = _import("xgboost")

    def params(self, user, n_outputs, seed, n_threads):
        params = {"base_score": 0.0, "nthread": int(n_threads), "seed": int(seed),
                  "disable_default_eval_metric": 1, "verbosity": 0}
        if n_outputs > 1:
            params["num_class"] = int(n_outputs)
        params.update(_check_params(user, self.FIXED))
        return params

    def dataset(self, X):
        # One DMatrix per score model: its quantile sketch is computed once, the margin changes per
        # step. XGBoost reads the entries a CSR matrix does not store as *missing*; reading zeros as
        # missing everywhere (missing=0) makes a dense X and its CSR form the same data, hence the
        # same trees (with missing=NaN a dense 0 is a value and the two models differ).
        return self.lib.DMatrix(X, missing=0.0, nthread=1)

    def train(self, params, data, init_scores, objective, rounds):
        data.set_base_margin(init_scores)
        return self.lib.train(params, data, num_boost_round=int(rounds), obj=objective, verbose_eval=False)

    def predict(self, booster, X, n_threads):
        # inplace_predict reads no base_margin: the booster's trees only (base_score is 0); its
        # thread count is the booster's nthread
        return np.asarray(booster.inplace_predict(X, predict_type="margin", missing=0.0), dtype=np.float64)

    def to_text(self, booster):
        return bytes(booster.save_raw("json")).decode("utf-8")

    def from_text(self, text, n_threads):
        booster = self.lib.Booster()
        booster.load_model(bytearray(text.encode("utf-8")))
        booster.set_param({"nthread": int(n_threads)})
        return booster


class LightGBMBackend:
    """LightGBM (``params["objective"] = callable``; ``init_score`` = the training scores)."""

    name = "lightgbm"
    suffix = "txt"
    FIXED = {"objective": "the custom objective is the prox subproblem's", "fobj": "idem",
             "init_score": "the training scores of the anchor", "num_class": "from the labels",
             "num_threads": "use n_threads=", "n_jobs": "use n_threads=", "nthread": "use n_threads=",
             "seed": "use seed=", "random_state": "use seed="}

    def __init__(self):
        self.lib = _import("lightgbm")

    def params(self, user, n_outputs, seed, n_threads):
        params = {"num_threads": int(n_threads), "seed": int(seed), "deterministic": True,
                  "force_row_wise": True, "verbose": -1}
        if n_outputs > 1:
            params["num_class"] = int(n_outputs)
        params.update(_check_params(user, self.FIXED))
        return params

    def dataset(self, X):
        return {"X": X, "data": None}

    def train(self, params, data, init_scores, objective, rounds):
        params = dict(params, objective=objective)
        if data["data"] is None:
            # binned once (free_raw_data=False keeps X for later set_init_score calls)
            data["data"] = self.lib.Dataset(data["X"], label=np.zeros(data["X"].shape[0]), init_score=init_scores,
                                            free_raw_data=False, params={k: v for k, v in params.items()
                                                                         if k != "objective"})
        else:
            data["data"].set_init_score(init_scores)
        return self.lib.train(params, data["data"], num_boost_round=int(rounds))

    def predict(self, booster, X, n_threads):
        # raw_score: the trees only (LightGBM never adds a Dataset's init_score to a prediction)
        return np.asarray(booster.predict(X, raw_score=True, num_threads=int(n_threads)), dtype=np.float64)

    def to_text(self, booster):
        return booster.model_to_string()

    def from_text(self, text, n_threads):
        return self.lib.Booster(model_str=text)


def backend(name):
    """The backend object of ``name`` (``"lightgbm"`` or ``"xgboost"``), importing its library now.

    Raises
    ------
    ValueError
        ``name`` is not one of `BACKENDS`.
    ImportError
        The library is not installed (the message names it and the ``boost`` extra).
    """
    if name == "xgboost":
        return XGBoostBackend()
    if name == "lightgbm":
        return LightGBMBackend()
    raise ValueError(f"backend: expected one of {BACKENDS}, got {name!r}")
