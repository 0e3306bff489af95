r"""The two gradient-boosting libraries behind one small interface: grow a booster, read its scores, predict ranges.

A score model keeps *one* library booster for its whole life. A backend builds it on the training
rows, adds Newton-boosting rounds with a custom objective (``Booster.update`` with ``fobj``, the
public custom-objective API of both libraries), reads the library's own training scores (the sum of
every tree so far: XGBoost's cached margin, LightGBM's training scores) and predicts the trees of a
range of rounds on any rows (``iteration_range`` / ``start_iteration``), so that a proximal step
is a range of rounds and an ensemble a weighted sum of ranges. ``base_score`` is 0 and no init
score is used: the trees are the whole model (Lin & Deng [LD23] §5; the released reference code
read the newest booster's prediction as the whole model, and lost every earlier booster's trees).

Neither library is imported with `fastcon.boosting`: `backend` imports the one asked for and
raises an ImportError that names it when it is missing.
"""
from __future__ import annotations

import importlib
import re
import warnings

import numpy as np

from ._validate import check_lightgbm_text, check_threads, check_xgboost_text

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


def _warn_unknown(unknown, library, how, stacklevel, name="params"):
    """A UserWarning naming the parameters the library does not know (it would ignore them silently)."""
    if unknown:
        warnings.warn(f"{name}: unknown {library} parameter(s) {sorted(unknown)} ({how}); {library} ignores "
                      "them", UserWarning, stacklevel=stacklevel + 1)


class _Backend:
    """Pickled without its library module (``lib``), which is imported again on unpickling: a fitted
    estimator holds its backend through `fastcon.boosting.BoostedEnsemble`."""

    name = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "lib"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lib = _import(self.name)


class XGBoostBackend(_Backend):
    """XGBoost: one ``xgboost.Booster`` per score model, grown by ``Booster.update(dtrain, i, fobj)``; ``base_score = 0``."""

    name = "xgboost"
    suffix = "json"
    #: parameters the score model owns, and why
    FIXED = {"objective": "the custom objective is the prox subproblem's", "obj": "idem",
             "base_score": "0, so that the trees are the whole model",
             "num_class": "from the labels", "num_target": "from the labels",
             "nthread": "use n_threads=", "n_jobs": "use n_threads=", "seed": "use seed=",
             "random_state": "use seed="}

    def __init__(self):
        self.lib = _import("xgboost")

    def params(self, user, n_outputs, seed, n_threads, n_rows=None):
        params = {"base_score": 0.0, "nthread": check_threads(n_threads), "seed": int(seed),
                  "disable_default_eval_metric": 1, "verbosity": 0}
        if n_outputs > 1:
            params["num_class"] = int(n_outputs)
        user = _check_params(user, self.FIXED)
        params.update(user)
        if user:
            self._warn_unused(params, user)
        return params

    def _warn_unused(self, params, user):
        # XGBoost's own judgement: a booster on two rows configured with the parameters (its learner
        # lists the parameters no component read), its warning caught and re-issued naming them
        data = self.lib.DMatrix(np.zeros((2, 1)), nthread=1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self.lib.Booster(dict(params, verbosity=1, nthread=1), [data]).save_config()
            except self.lib.core.XGBoostError:
                return   # a bad value: the real booster raises it
        unused = set()
        for w in caught:
            match = re.search(r"Parameters: \{(.*?)\} are not used", str(w.message), re.S)
            if match:
                unused |= set(re.findall(r'"([^"]+)"', match.group(1)))
        _warn_unknown(unused & set(user), "XGBoost", f"XGBoost {self.lib.__version__} reports them unused", 4)

    def dataset(self, X, params):
        # One DMatrix per score model: its quantile sketch is computed once. XGBoost reads the
        # entries a CSR matrix does not store as *missing*; reading zeros as missing everywhere
        # (missing=0) makes a dense X and its CSR form the same data, hence the same trees (with
        # missing=NaN a dense 0 is a value and the two models differ).
        return self.lib.DMatrix(X, missing=0.0, nthread=1)

    def booster(self, params, data):
        # the DMatrix is in the booster's cache: its margin is kept up to date round by round
        return self.lib.Booster(params, [data])

    def n_rounds(self, booster):
        return int(booster.num_boosted_rounds())

    def boost(self, booster, data, objective, rounds):
        start = self.n_rounds(booster)
        for i in range(int(rounds)):
            booster.update(data, start + i, fobj=objective)

    def training_scores(self, booster, data):
        # the cached margin of the training rows (float32, as XGBoost hands it to the objective)
        return np.asarray(booster.predict(data, output_margin=True, training=True), dtype=np.float64)

    def predict(self, booster, X, start, stop, n_threads):
        # inplace_predict reads no base_margin: the trees of rounds [start, stop) only (base_score
        # is 0); its thread count is the booster's nthread
        return np.asarray(booster.inplace_predict(X, predict_type="margin", missing=0.0,
                                                  iteration_range=(int(start), int(stop))), dtype=np.float64)

    def to_text(self, booster, start, stop):
        if (start, stop) != (0, self.n_rounds(booster)):
            booster = booster[int(start):int(stop)]
        return bytes(booster.save_raw("json")).decode("utf-8")

    def from_text(self, text, n_threads, n_outputs=None, check=True):
        if check:
            check_xgboost_text(text)     # XGBoost's reader aborts on an empty buffer
        booster = self.lib.Booster()
        booster.load_model(bytearray(text.encode("utf-8")))   # XGBoostError is a ValueError
        booster.set_param({"nthread": check_threads(n_threads)})
        return booster


class LightGBMBackend(_Backend):
    """LightGBM: one ``lightgbm.Booster`` per score model, grown by ``Booster.update(fobj=...)``."""

    name = "lightgbm"
    suffix = "txt"
    FIXED = {"objective": "the custom objective is the prox subproblem's", "fobj": "idem",
             "init_score": "the trees are the whole model", "num_class": "from the labels",
             "num_threads": "use n_threads=", "n_jobs": "use n_threads=", "nthread": "use n_threads=",
             "seed": "use seed=", "random_state": "use seed="}

    def __init__(self):
        self.lib = _import("lightgbm")

    #: LightGBM's default ``min_data_in_leaf``
    MIN_DATA_IN_LEAF = 20

    def _aliases(self):
        """LightGBM's parameter name -> its aliases (its own table), or None when it is not readable."""
        try:
            table = self.lib.basic._ConfigAliases._get_all_param_aliases()
            return {k: set(v) | {k} for k, v in table.items()}
        except Exception:   # a private helper of lightgbm.basic: absent in some version
            return None

    def params(self, user, n_outputs, seed, n_threads, n_rows=None):
        params = {"num_threads": check_threads(n_threads), "seed": int(seed), "deterministic": True,
                  "force_row_wise": True, "verbose": -1, "metric": "None"}
        if n_outputs > 1:
            params["num_class"] = int(n_outputs)
        aliases = self._aliases()
        fixed = dict(self.FIXED)
        if aliases is not None:
            for key, why in self.FIXED.items():
                for alias in aliases.get(key, ()):
                    fixed.setdefault(alias, why)
        user = _check_params(user, fixed)
        if aliases is not None:
            known = set().union(*aliases.values())
            _warn_unknown(set(user) - known, "LightGBM",
                          f"not in LightGBM {self.lib.__version__}'s list of parameters and aliases", 3)
        leaf_names = (aliases or {}).get("min_data_in_leaf", {"min_data_in_leaf", "min_data_per_leaf", "min_data",
                                                               "min_child_samples", "min_samples_leaf"})
        given = [k for k in user if k in leaf_names]
        if given:
            m = user[given[0]]
            if n_rows is not None and isinstance(m, (int, np.integer)) and 2 * m > n_rows:
                raise ValueError(f"params: {given[0]}={m} needs at least {2 * m} rows (2 x {given[0]}: a split "
                                 f"leaves {m} rows on each side), X has {n_rows}; lower {given[0]}")
            self.min_data_in_leaf = m
        elif n_rows is not None:
            # LightGBM's default 20 cannot split fewer than 40 rows (it stops with an internal check):
            # at most a quarter of the rows, so that small data get trees; 80 rows and more keep 20
            self.min_data_in_leaf = params["min_data_in_leaf"] = min(self.MIN_DATA_IN_LEAF, max(1, n_rows // 4))
        params.update(user)
        return params

    def dataset(self, X, params):
        # binned once, when the booster is built
        return self.lib.Dataset(X, label=np.zeros(X.shape[0]), free_raw_data=True,
                                params=dict(params, objective="none"))

    def booster(self, params, data):
        return self.lib.Booster(params=dict(params, objective="none"), train_set=data)

    def n_rounds(self, booster):
        return int(booster.current_iteration())

    def boost(self, booster, data, objective, rounds):
        for _ in range(int(rounds)):
            try:
                finished = booster.update(fobj=objective)
            except self.lib.basic.LightGBMError as exc:
                if "num_features()" not in str(exc):
                    raise
                m = getattr(self, "min_data_in_leaf", self.MIN_DATA_IN_LEAF)
                raise ValueError(f"X: LightGBM kept no feature it can split on ({data.num_data()} rows, "
                                 f"min_data_in_leaf={m}): every column is constant, or no threshold leaves "
                                 f"min_data_in_leaf rows on each side (at least {2 * m} rows, and enough "
                                 "distinct values); lower params['min_data_in_leaf']") from None
            if finished:
                # no tree could split (LightGBM drops the empty trees and keeps the round count):
                # the same gradients would give the same empty trees
                break

    def training_scores(self, booster, data):
        # LightGBM's float64 training scores, read through the public evaluation hook
        captured = []

        def capture(preds, train_data):
            captured.append(np.array(preds, dtype=np.float64))
            return "training_scores", 0.0, False

        booster.eval_train(feval=capture)
        return captured[0]

    def predict(self, booster, X, start, stop, n_threads):
        # raw_score: the trees of rounds [start, stop) only
        return np.asarray(booster.predict(X, raw_score=True, start_iteration=int(start),
                                          num_iteration=int(stop) - int(start), num_threads=int(n_threads)),
                          dtype=np.float64)

    def to_text(self, booster, start, stop):
        return booster.model_to_string(num_iteration=int(stop) - int(start), start_iteration=int(start))

    def from_text(self, text, n_threads, n_outputs=None, check=True):
        if check:
            check_lightgbm_text(text, n_outputs)   # LightGBM's parser can abort the process on damaged text
        try:
            return self.lib.Booster(model_str=text)
        except self.lib.basic.LightGBMError as exc:
            raise ValueError(f"LightGBM model text: {exc}") from None


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
