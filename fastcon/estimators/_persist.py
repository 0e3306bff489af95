"""Saving and loading the linear estimators: the model file of `fastcon.estimators._model_file`.

`save` writes a fitted `FairClassifier`, `NeymanPearsonClassifier` or
`MultiClassNeymanPearsonClassifier`; `readers` rebuild them for `fastcon.load_model`, checking the
fitted arrays' shapes against each other (from their ``.npy`` headers) before any array data is read.
"""
from __future__ import annotations

from . import _model_file

__all__ = ["readers", "save"]

#: Parameters added after files were written whose default changed what ``fit`` does (`_model_file.parts`).
_LEGACY_DEFAULTS = {"MultiClassNeymanPearsonClassifier": {"delta": None}, "FairClassifier": {"straddle": 0.0}}
#: Parameters and attributes renamed since files were written: old name -> new name (`_model_file.parts`).
RENAMED = {"FairClassifier": {"tolerance": "bound"}, "NeymanPearsonClassifier": {"alpha": "bound"},
           "MultiClassNeymanPearsonClassifier": {"class_bounds": "bound", "class_bounds_": "bound_"}}


def _estimators():
    """Class name -> class of every linear estimator (imported here: the modules import this one)."""
    from ._fair import FairClassifier
    from ._multiclass import MultiClassNeymanPearsonClassifier
    from ._neyman_pearson import NeymanPearsonClassifier

    return {cls.__name__: cls for cls in (FairClassifier, NeymanPearsonClassifier,
                                          MultiClassNeymanPearsonClassifier)}


def save(estimator, path):
    """Write a fitted linear estimator to ``path`` (a fastcon model file, `fastcon.load_model` reads it).

    Parameters
    ----------
    estimator : FairClassifier, NeymanPearsonClassifier or MultiClassNeymanPearsonClassifier
        Fitted.
    path : str or os.PathLike
        Written as given (no suffix is added).

    Raises
    ------
    TypeError
        ``estimator`` is not one of these classes, or a fitted attribute holds a value that cannot
        be written without pickle (the message names it).
    sklearn.exceptions.NotFittedError
        ``estimator`` is not fitted.
    """
    from sklearn.utils.validation import check_is_fitted

    name = type(estimator).__name__
    if _estimators().get(name) is not type(estimator):
        raise TypeError(f"estimator: {name} is not a fastcon linear estimator (known: {sorted(_estimators())})")
    check_is_fitted(estimator)
    _model_file.write(estimator, path)


def _reader(cls):
    def read(header, entries):
        params, attributes = _model_file.parts(header, cls, _LEGACY_DEFAULTS.get(cls.__name__), RENAMED.get(cls.__name__))
        refs = _model_file.declare_arrays(entries, params, attributes)
        _check_shapes(entries.where, cls.__name__, attributes, entries.declared)
        return _model_file.build(cls, params, attributes, entries, refs)
    return read


def readers():
    """Class name -> reader (`fastcon.estimators._model_file.read`) of every linear estimator."""
    return {name: _reader(cls) for name, cls in _estimators().items()}


def _shape_of(value, declared):
    """Shape of an encoded attribute: an ``__array__`` (its declared shape) or ``__object_array__``; else None."""
    if isinstance(value, dict) and len(value) == 1:
        if "__array__" in value:
            return declared.get(value["__array__"], (None, None))[0]
        if "__object_array__" in value and isinstance(value["__object_array__"], list):
            return (len(value["__object_array__"]),)
    return None


def _check_shapes(where, name, attributes, declared):
    """The fitted arrays agree with each other (before any data is read); ValueError naming the field.

    ``coef_`` is (n_rows, n_features_in_) of floats, ``intercept_`` (n_rows,) of floats, ``classes_``
    one-dimensional with n_rows = len(classes_) (multi-class) or 1 and two classes (binary), and
    ``feature_names_in_`` has n_features_in_ entries.
    """
    def fail(message):
        raise ValueError(f"path: {where!r} is inconsistent: {message}")

    n_features = attributes.get("n_features_in_")
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        fail(f"n_features_in_ is {n_features!r}, not a positive integer")
    shapes = {}
    for key in ("coef_", "intercept_", "classes_"):
        shape = _shape_of(attributes.get(key), declared)
        if shape is None:
            fail(f"{key} is missing or not an array")
        shapes[key] = shape
    for key in ("coef_", "intercept_"):
        dtype = declared.get(attributes[key].get("__array__"), (None, None))[1]
        if dtype is None or dtype.kind != "f":
            fail(f"{key} has dtype {dtype}, not floating point")
    coef, intercept, classes = shapes["coef_"], shapes["intercept_"], shapes["classes_"]
    if len(coef) != 2 or coef[1] != n_features:
        fail(f"coef_ has shape {coef}, but n_features_in_ is {n_features} (expected (n_rows, {n_features}))")
    if len(classes) != 1:
        fail(f"classes_ has shape {classes}, not one-dimensional")
    multiclass = name == "MultiClassNeymanPearsonClassifier"
    rows = classes[0] if multiclass else 1
    if (multiclass and classes[0] < 2) or (not multiclass and classes[0] != 2):
        fail(f"classes_ has {classes[0]} classes; {name} has {'at least 2' if multiclass else 'exactly 2'}")
    if coef[0] != rows:
        fail(f"coef_ has {coef[0]} rows for the {classes[0]} entries of classes_ (expected {rows})")
    if intercept != (rows,):
        fail(f"intercept_ has shape {intercept}, but coef_ has {rows} rows (expected ({rows},))")
    names = attributes.get("feature_names_in_")
    if names is not None:
        shape = _shape_of(names, declared)
        if shape != (n_features,):
            fail(f"feature_names_in_ has shape {shape}, but n_features_in_ is {n_features}")
