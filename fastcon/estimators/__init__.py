"""scikit-learn estimators: constrained linear classifiers with ``fit`` / ``predict`` (needs scikit-learn).

`FairClassifier` bounds a group-fairness gap, `NeymanPearsonClassifier` the error on one class;
both report whether the bound holds out of sample (``constraint_report``) and save without pickle
(``save`` / `load`).
"""
from ._fair import FairClassifier
from ._neyman_pearson import NeymanPearsonClassifier
from ._report import ConstraintReport

__all__ = ["FairClassifier", "NeymanPearsonClassifier", "ConstraintReport"]
