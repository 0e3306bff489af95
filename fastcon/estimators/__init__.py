"""scikit-learn estimators: constrained linear classifiers with ``fit`` / ``predict`` (needs scikit-learn).

`FairClassifier` bounds a group-fairness gap, `NeymanPearsonClassifier` the error on one class,
`MultiClassNeymanPearsonClassifier` the error rates of chosen classes; all report whether the bound
holds out of sample (``constraint_report``) and save without pickle (``save``; `fastcon.load_model` reads
the file back).
"""
from ._fair import FairClassifier
from ._multiclass import MultiClassNeymanPearsonClassifier
from ._neyman_pearson import NeymanPearsonClassifier
from ._report import ConstraintReport

__all__ = ["FairClassifier", "NeymanPearsonClassifier", "MultiClassNeymanPearsonClassifier", "ConstraintReport"]
