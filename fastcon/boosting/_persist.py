r"""Saving and loading the boosted estimators without pickle: a zip of the libraries' own model files and JSON.

`save` writes one zip archive:

- ``header.json``: the format and its version, the fastcon version, the estimator's class,
  ``get_params()``, the fitted attributes that are not the ensemble (encoded as
  `fastcon.estimators._persist` encodes them: tuples, non-string keys, non-finite numbers and the
  solve's `fastcon.SolveResult` as marked JSON objects), and the ensemble's backend, terms
  (booster file, first and last round + 1, weight; `fastcon.boosting.BoostedEnsemble`), number of
  outputs and the sha256 of each booster file (``sha256``, optional: files written before it load);
- ``arrays/aN.npy``: the NumPy arrays the header refers to (read with ``allow_pickle=False``);
- ``boosters/NNNN.json`` (XGBoost's JSON model) or ``boosters/NNNN.txt`` (LightGBM's model text):
  one file per booster (a fit has one), loadable by the library itself
  (``xgboost.Booster(model_file=...)``, ``lightgbm.Booster(model_file=...)``).

Format version 1 (one booster per proximal step, ``coefficients`` instead of ``terms``: each
booster whole, with its coefficient) is still read.

`load` rebuilds only the two estimator classes of this package, sets only ``name_``-style
attributes and hands the booster files to the libraries' own parsers: nothing in the file runs.
Before a parser sees a booster file, the file must match its sha256 (damage, truncation, edits),
and its text must pass `fastcon.boosting._validate` (LightGBM's parser aborted the interpreter on a
truncated file; XGBoost's on an empty one); the saved ``n_threads`` is clipped to this machine's
CPUs. Every failure is a ValueError ``"path: ..."``.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile

import numpy as np

from .._version import __version__
from ..estimators._persist import _ATTRIBUTE, _decode, _Encoder, read_header
from ..solvers._validation import check_count
from ._validate import thread_limit

__all__ = ["FORMAT", "FORMAT_VERSION", "save", "load"]

#: Value of the header's ``format`` field.
FORMAT = "fastcon.boosting.estimator"
#: Version of the layout `save` writes; `load` reads this and every earlier version.
FORMAT_VERSION = 2


def _estimators():
    from ._estimators import FairGBMClassifier, NeymanPearsonGBMClassifier

    return {cls.__name__: cls for cls in (NeymanPearsonGBMClassifier, FairGBMClassifier)}


def save(estimator, path):
    """Write a fitted `NeymanPearsonGBMClassifier` or `FairGBMClassifier` to ``path`` (a zip archive, module docstring).

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
    encode = _Encoder()
    params = {k: encode(v, f"params[{k!r}]") for k, v in estimator.get_params(deep=False).items()}
    attributes = {k: encode(v, k) for k, v in sorted(vars(estimator).items())
                  if _ATTRIBUTE.match(k) and k != "ensemble_"}
    ensemble = estimator.ensemble_
    texts, terms = ensemble.export()
    files = [f"boosters/{k:04d}.{ensemble.backend.suffix}" for k in range(len(texts))]
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "fastcon_version": __version__, "class": name,
              "params": params, "attributes": attributes,
              "ensemble": {"backend": ensemble.backend_name,
                           "terms": [[int(k), int(a), int(b), float(w)] for k, a, b, w in terms],
                           "n_outputs": ensemble.n_outputs, "n_threads": ensemble.n_threads, "files": files,
                           "sha256": [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]}}
    text = json.dumps(header, allow_nan=False, ensure_ascii=False, indent=1)
    with zipfile.ZipFile(os.fspath(path), "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", text)
        for key, value in encode.arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, value, allow_pickle=False)
            archive.writestr(f"arrays/{key}.npy", buffer.getvalue())
        for file, booster_text in zip(files, texts):
            archive.writestr(file, booster_text)


def load(path):
    """Rebuild an estimator written by `save`: same parameters, same predictions (bit for bit).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    NeymanPearsonGBMClassifier or FairGBMClassifier
        Fitted; ``solve_result_.history`` is empty (not saved).

    Raises
    ------
    ValueError
        ``"path: ..."`` when the file is not such an archive, was written by a newer format
        version, or is inconsistent (a booster file that does not match its sha256 or is not a
        well-formed model of its library included).
    ImportError
        The backend library the model was trained with is not installed.
    """
    from ._models import BoostedEnsemble

    where = os.fspath(path)
    try:
        archive = zipfile.ZipFile(where)
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"path: {where!r} is not a fastcon.boosting model file ({exc})") from None
    with archive:
        names = set(archive.namelist())
        if "header.json" not in names:
            raise ValueError(f"path: {where!r} has no header.json (not a fastcon.boosting model file)")
        header = read_header(archive.read("header.json"), where, FORMAT, FORMAT_VERSION,
                             "fastcon.boosting model file")
        known = _estimators()
        name = header.get("class")
        if name not in known:
            raise ValueError(f"path: {where!r} holds an estimator of class {name!r}, not one of {sorted(known)}")
        try:
            arrays = {}
            for entry in names:
                if entry.startswith("arrays/") and entry.endswith(".npy"):
                    arrays[entry[len("arrays/"):-len(".npy")]] = np.load(io.BytesIO(archive.read(entry)),
                                                                         allow_pickle=False)
            spec = header["ensemble"]
            files = spec["files"]
            missing = [f for f in files if f not in names]
            if missing:
                raise ValueError(f"booster file(s) {missing[:3]} missing")
            raw = [archive.read(f) for f in files]
            digests = spec.get("sha256")   # written since fastcon 0.x (format 2 without it still loads)
            if digests is not None:
                if not isinstance(digests, list) or len(digests) != len(files):
                    raise ValueError(f"sha256: {len(digests) if isinstance(digests, list) else digests!r} "
                                     f"digests for {len(files)} booster files")
                for f, data, digest in zip(files, raw, digests):
                    if hashlib.sha256(data).hexdigest() != digest:
                        raise ValueError(f"booster file {f} does not match its sha256 in header.json (damaged, "
                                         "truncated or edited since it was saved)")
            texts = [data.decode("utf-8") for data in raw]
            # the saved thread count is the training machine's: at most this machine's CPUs
            n_threads = min(check_count("n_threads", spec["n_threads"]), thread_limit())
            cls = known[name]
            params, attributes = header["params"], header["attributes"]
            unknown = sorted(set(params) - set(cls().get_params(deep=False)))
            if unknown:
                raise ValueError(f"parameter(s) {unknown} that {name} does not have")
            estimator = cls(**{k: _decode(v, arrays, f"params[{k!r}]") for k, v in params.items()})
            for key, value in attributes.items():
                if not isinstance(key, str) or not _ATTRIBUTE.match(key):
                    raise ValueError(f"attribute {key!r} is not a fitted attribute name")
                setattr(estimator, key, _decode(value, arrays, key))
            if header["format_version"] == 1:
                ensemble = _version1_ensemble(spec, texts, n_threads)
            else:
                ensemble = BoostedEnsemble.from_texts(spec["backend"], texts, [tuple(t) for t in spec["terms"]],
                                                      spec["n_outputs"], n_threads)
        except ImportError:
            raise
        except (ValueError, TypeError, KeyError, OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"path: {where!r} is inconsistent: {exc}") from None
    estimator.ensemble_ = ensemble
    if not hasattr(estimator, "n_rounds_"):   # format 1 kept n_boosters_
        estimator.n_rounds_ = ensemble.n_rounds
    return estimator


def _version1_ensemble(spec, texts, n_threads):
    """A format-1 ensemble (one booster per step, each whole with its coefficient) as terms."""
    from ._backends import backend
    from ._models import BoostedEnsemble

    lib = backend(spec["backend"])
    boosters = [lib.from_text(t, n_threads, int(spec["n_outputs"])) for t in texts]
    coefficients = spec["coefficients"]
    if len(coefficients) != len(boosters):
        raise ValueError(f"{len(coefficients)} coefficients for {len(boosters)} boosters")
    terms = [(k, 0, lib.n_rounds(b), w) for k, (b, w) in enumerate(zip(boosters, coefficients))]
    return BoostedEnsemble(spec["backend"], boosters, terms, spec["n_outputs"], n_threads)
