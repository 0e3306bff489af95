"""Saving and loading the boosted estimators (the model file of `fastcon.estimators._model_file`), and
`load_model`, which reads either kind of model.

A boosted model's header adds ``ensemble``: its backend, terms (booster file, first and last round
+ 1, weight; `fastcon.boosting.BoostedEnsemble`), number of outputs, thread count, booster files
(``boosters/NNNN.json``: XGBoost's JSON model, ``boosters/NNNN.txt``: LightGBM's model text, each
loadable by the library itself) and the sha256 of each (optional: files written before it load).
Format ``fastcon.boosting.estimator`` version 1 (one booster per proximal step, ``coefficients``
instead of ``terms``) is still read.

The booster files are handed to the libraries' own parsers only after they match their sha256
(damage, truncation, edits) and their text passes `fastcon.boosting._validate` (LightGBM's parser
aborted the interpreter on a truncated file; XGBoost's on an empty one); the saved ``n_threads`` is
clipped to this machine's CPUs; ``n_outputs`` must be an integer from 1 to `MAX_OUTPUTS` that
agrees with ``classes_``, the terms' booster indices and rounds non-negative integers and their
weights finite numbers, each named when it is not.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..estimators import _model_file
from ..estimators._model_file import _describe, header_count, header_real
from ..estimators._persist import readers as linear_readers
from ..solvers._validation import check_count
from ._validate import thread_limit

__all__ = ["load_model", "save"]

#: Largest ``n_outputs`` (number of classes, 1 for two) `load_model` accepts: LightGBM's ``num_class`` limit in
#: `fastcon.boosting._validate`.
MAX_OUTPUTS = 2 ** 20
#: Parameters added after files were written whose default changed what ``fit`` does
#: (`fastcon.estimators._model_file.parts`): ``FairGBMClassifier`` files from before the rate
#: constraints bounded the mean-loss gap.
_LEGACY_DEFAULTS = {"FairGBMClassifier": {"constraint": "mean_loss_gap"}}
#: Parameters renamed since files were written: old name -> new name (`fastcon.estimators._model_file.parts`).
_RENAMED = {"FairGBMClassifier": {"tolerance": "bound", "prox": "prox_weight"},
            "NeymanPearsonGBMClassifier": {"alpha": "bound", "class_bounds_": "bound_"}}


def _estimators():
    from ._estimators import FairGBMClassifier, NeymanPearsonGBMClassifier

    return {cls.__name__: cls for cls in (NeymanPearsonGBMClassifier, FairGBMClassifier)}


def save(estimator, path):
    """Write a fitted `NeymanPearsonGBMClassifier` or `FairGBMClassifier` to ``path`` (module docstring).

    Raises
    ------
    TypeError
        ``estimator`` is not one of these classes, or a fitted attribute cannot be written without
        pickle (the message names it).
    sklearn.exceptions.NotFittedError
        ``estimator`` is not fitted.
    """
    from sklearn.utils.validation import check_is_fitted

    name = type(estimator).__name__
    if _estimators().get(name) is not type(estimator):
        raise TypeError(f"estimator: {name} is not a fastcon.boosting estimator (known: {sorted(_estimators())})")
    check_is_fitted(estimator, "ensemble_")
    ensemble = estimator.ensemble_
    texts, terms = ensemble.export()
    files = [f"boosters/{k:04d}.{ensemble.backend.suffix}" for k in range(len(texts))]
    spec = {"backend": ensemble.backend_name, "terms": [[int(k), int(a), int(b), float(w)] for k, a, b, w in terms],
            "n_outputs": ensemble.n_outputs, "n_threads": ensemble.n_threads, "files": files,
            "sha256": [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]}
    _model_file.write(estimator, path, skip=("ensemble_",), extra={"ensemble": spec},
                      files=[(f, t.encode("utf-8")) for f, t in zip(files, texts)])


def load_model(path):
    """Load a model written by an estimator's ``save``: linear or boosted, whichever the file holds.

    Parameters
    ----------
    path : str or os.PathLike
        A fastcon model file (a zip archive: ``header.json``, arrays, booster files), or a file of an
        earlier fastcon: a linear estimator's ``.npz``, a boosted estimator's zip of format 1 or 2.

    Returns
    -------
    FairClassifier, NeymanPearsonClassifier, MultiClassNeymanPearsonClassifier, NeymanPearsonGBMClassifier or \
FairGBMClassifier
        Fitted, with the saved parameters: its predictions are those of the saved estimator, bit
        for bit. ``solve_result_.history`` is empty (not saved).

    Raises
    ------
    ValueError
        ``"path: ..."`` when the file is not a fastcon model file, was written in a newer format
        version, names an unknown estimator class or parameter, or is inconsistent (an entry larger
        than the checks of `fastcon.estimators._model_file` allow, fitted arrays whose shapes
        disagree, a booster file that does not match its sha256 or is not a well-formed model of its
        library, a malformed header: the message names the field or entry). Nothing in the file is
        executed: arrays are read with ``allow_pickle=False``, classes are looked up in a fixed table.
    FileNotFoundError
        ``path`` does not exist.
    ImportError
        The backend library a boosted model was trained with is not installed.
    """
    readers = linear_readers()
    readers.update({name: _reader(cls) for name, cls in _estimators().items()})
    estimator = _model_file.read(path, readers)
    if not hasattr(estimator, "n_rounds_") and hasattr(estimator, "ensemble_"):   # format 1 kept n_boosters_
        estimator.n_rounds_ = estimator.ensemble_.n_rounds
    return estimator


def _reader(cls):
    def read(header, entries):
        return _read(cls, header, entries)
    return read


def _read(cls, header, entries):
    """A boosted estimator from its checked ``header``: every entry it reads is checked before any is decompressed."""
    from ._models import BoostedEnsemble

    params, attributes = _model_file.parts(header, cls, _LEGACY_DEFAULTS.get(cls.__name__), _RENAMED.get(cls.__name__))
    spec = header["ensemble"]
    if not isinstance(spec, dict):
        raise ValueError("ensemble must be a JSON object")
    files = spec["files"]
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError(f"ensemble files: expected a list of entry names, got {files!r:.80}")
    # the counts and numbers of the ensemble, before anything is read or converted
    n_outputs = header_count("ensemble n_outputs", spec["n_outputs"], minimum=1, maximum=MAX_OUTPUTS)
    version1 = header["format"] == "fastcon.boosting.estimator" and header["format_version"] == 1
    if version1:
        weights = spec["coefficients"]
        if not isinstance(weights, list):
            raise ValueError(f"ensemble coefficients: expected a list of numbers, got {_describe(weights)}")
        weights = [header_real(f"ensemble coefficients[{k}]", w) for k, w in enumerate(weights)]
    else:
        terms = _terms(spec["terms"])
    refs = _model_file.declare_arrays(entries, params, attributes)
    for k, f in enumerate(files):
        entries.check(f, f"ensemble files[{k}]")
    estimator = _model_file.build(cls, params, attributes, entries, refs)
    raw = [entries.read(f, f"ensemble files[{k}]") for k, f in enumerate(files)]
    digests = spec.get("sha256")   # format 2 files without it still load
    if digests is not None:
        if not isinstance(digests, list) or len(digests) != len(files):
            raise ValueError(f"sha256: {len(digests) if isinstance(digests, list) else digests!r:.80} "
                             f"digests for {len(files)} booster files")
        for f, data, digest in zip(files, raw, digests):
            if hashlib.sha256(data).hexdigest() != digest:
                raise ValueError(f"booster file {f} does not match its sha256 in header.json (damaged, "
                                 "truncated or edited since it was saved)")
    texts = [data.decode("utf-8") for data in raw]
    # the saved thread count is the training machine's: at most this machine's CPUs
    n_threads = min(check_count("n_threads", spec["n_threads"]), thread_limit())
    classes = getattr(estimator, "classes_", None)
    if isinstance(classes, np.ndarray) and classes.ndim == 1 and classes.size >= 2:
        expected = 1 if classes.size == 2 else classes.size
        if n_outputs != expected:
            raise ValueError(f"ensemble n_outputs: {n_outputs} output(s), but classes_ has {classes.size} "
                             f"classes (expected {expected})")
    if version1:
        estimator.ensemble_ = _version1_ensemble(spec, texts, n_outputs, weights, n_threads)
    else:
        estimator.ensemble_ = BoostedEnsemble.from_texts(spec["backend"], texts, terms, n_outputs, n_threads)
    return estimator


def _terms(terms):
    """The ensemble's terms from the header: ``(booster, start, stop, weight)`` with non-negative integers and a
    finite weight (`BoostedEnsemble` checks them against the boosters); a ValueError naming the term."""
    if not isinstance(terms, list):
        raise ValueError(f"ensemble terms: expected a list of [booster, start, stop, weight], got {_describe(terms)}")
    out = []
    for k, term in enumerate(terms):
        if not isinstance(term, list) or len(term) != 4:
            raise ValueError(f"ensemble terms[{k}]: expected [booster, start, stop, weight], got {_describe(term)}")
        index, start, stop = (header_count(f"ensemble terms[{k}] {field}", value)
                              for field, value in zip(("booster", "start", "stop"), term))
        out.append((index, start, stop, header_real(f"ensemble terms[{k}] weight", term[3])))
    return out


def _version1_ensemble(spec, texts, n_outputs, coefficients, n_threads):
    """A format-1 ensemble (one booster per step, each whole with its coefficient) as terms."""
    from ._backends import backend
    from ._models import BoostedEnsemble

    lib = backend(spec["backend"])
    boosters = [lib.from_text(t, n_threads, n_outputs) for t in texts]
    if len(coefficients) != len(boosters):
        raise ValueError(f"{len(coefficients)} coefficients for {len(boosters)} boosters")
    terms = [(k, 0, lib.n_rounds(b), w) for k, (b, w) in enumerate(zip(boosters, coefficients))]
    return BoostedEnsemble(spec["backend"], boosters, terms, n_outputs, n_threads)
