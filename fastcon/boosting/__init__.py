"""Gradient-boosted constrained classifiers: Lin & Deng's Bregman proximal methods on stock XGBoost / LightGBM.

Lin & Deng [LD23], "GBM-based Bregman Proximal Algorithms for Constrained Learning", solve
constrained learning problems by proximal steps whose subproblems are weighted cross-entropy plus
a squared distance of the training scores; a gradient-boosting library solves them through a
custom objective. This package provides

- the score models `XGBoostScoreModel` and `LightGBMScoreModel` that `fastcon.solvers.abpp` and
  `fastcon.solvers.cbpr` drive (one booster grown by `rounds` rounds per prox step, the ensemble
  kept cumulatively);
- the objective callables `xgboost_objective` and `lightgbm_objective` for a training loop of
  one's own;
- the scikit-learn estimators `NeymanPearsonGBMClassifier` and `FairGBMClassifier` (need
  scikit-learn), with ``save`` (`fastcon.load_model` reads the file back; the boosters in the libraries'
  own model formats).

Neither XGBoost nor LightGBM is imported here: the backend a call names is imported then, and a
missing one is an ImportError naming it (``pip install 'fastcon[boost]'``).
"""
from ._backends import BACKENDS
from ._models import BoostedEnsemble, BoostingState, LightGBMScoreModel, XGBoostScoreModel
from ._objective import ProxObjective, lightgbm_objective, xgboost_objective

__all__ = ["BACKENDS", "BoostedEnsemble", "BoostingState", "LightGBMScoreModel", "XGBoostScoreModel",
           "ProxObjective", "lightgbm_objective", "xgboost_objective", "NeymanPearsonGBMClassifier",
           "FairGBMClassifier"]

#: Names that need scikit-learn, imported on first access (as `fastcon` does for its estimators).
_ESTIMATORS = {"NeymanPearsonGBMClassifier": "._estimators", "FairGBMClassifier": "._estimators"}


def __getattr__(name):
    if name in _ESTIMATORS:
        import importlib

        try:
            module = importlib.import_module(_ESTIMATORS[name], __name__)
        except ImportError as exc:
            raise ImportError(f"fastcon.boosting.{name} needs scikit-learn: pip install 'fastcon[sklearn]' "
                              f"({exc})") from exc
        return getattr(module, name)
    raise AttributeError(f"module 'fastcon.boosting' has no attribute {name!r}")
