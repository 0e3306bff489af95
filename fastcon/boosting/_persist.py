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

`load` reads ``header.json`` first and then only the entries it refers to (the arrays its
``{"__array__": key}`` values name, the booster files of ``ensemble.files``); an entry nothing refers
to is never decompressed. Before any entry's data is decompressed its declared sizes are checked
(`_Entries`): at most `MAX_RATIO` times its compressed size, all read entries together at most
`MAX_RATIO` times the size of the whole file and their compressed bytes within the file, and an
array's size that of the shape and dtype of its ``.npy`` header (no object dtypes). `save` stores an
entry uncompressed when deflate would shrink it more than ``MAX_RATIO // 2`` times (a model of
thousands of identical trees), so every file it writes passes these checks; a file of 3 MB can thus
not make `load` decompress 3 GB.

What this still allows, by design: an entry may inflate to `MAX_RATIO` times its compressed size and
the entries `load` reads to `MAX_RATIO` times the file's size in all, so a file of 30 MB may make
`load` decompress up to about 3 GB (and hold about twice that while the boosters are parsed). Check
the size of an untrusted file before loading it (docs/guide/boosting.md).

The header is checked as the linear estimators' (`fastcon.estimators._persist.read_header`): at most
``MAX_HEADER_DEPTH`` levels of nesting, checked without recursion; ``n_outputs`` an integer from 1 to
`MAX_OUTPUTS` that agrees with ``classes_``, the terms' booster indices and rounds non-negative
integers and their weights (format 1: the coefficients) finite numbers, each named when it is not.
Whatever else a malformed header raises while it is decoded is the ValueError
``"path: '<file>' is inconsistent: ..."``.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import zipfile
import zlib

import numpy as np

from .._version import __version__
from ..estimators._persist import (
    _ATTRIBUTE, DECODE_ERRORS, _array_refs, _decode, _describe, _Encoder, header_count, header_real, inconsistent,
    read_header,
)
from ..solvers._validation import check_count
from ._validate import thread_limit

__all__ = ["FORMAT", "FORMAT_VERSION", "save", "load"]

#: Value of the header's ``format`` field.
FORMAT = "fastcon.boosting.estimator"
#: Version of the layout `save` writes; `load` reads this and every earlier version.
FORMAT_VERSION = 2
#: Largest ratio of an entry's declared (uncompressed) size to its compressed size, and of the bytes
#: all entries `load` reads declare to the size of the file, that `load` accepts. Booster texts
#: deflate 2.5-4 times, a constant XGBoost model of 2,000 trees 64 times; deflate's own limit is
#: about 1,032 (a 3 MB file of 3 GB of zeros).
MAX_RATIO = 100
#: Largest ``n_outputs`` (number of classes, 1 for two) `load` accepts: LightGBM's ``num_class`` limit in
#: `fastcon.boosting._validate`.
MAX_OUTPUTS = 2 ** 20


#: Parameters added after files were written whose default changed what ``fit`` does (the rule of
#: `fastcon.estimators._persist`): a file that does not name one was fitted with the value here.
#: ``FairGBMClassifier`` files from before the rate constraints bounded the mean-loss gap.
_LEGACY_DEFAULTS = {"FairGBMClassifier": {"constraint": "mean_loss_gap"}}


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
        _write(archive, "header.json", text.encode("utf-8"))
        for key, value in encode.arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, value, allow_pickle=False)
            _write(archive, f"arrays/{key}.npy", buffer.getvalue())
        for file, booster_text in zip(files, texts):
            _write(archive, file, booster_text.encode("utf-8"))


def _write(archive, name, data):
    """Write entry ``name``: deflated, or stored when deflate would shrink it more than ``MAX_RATIO // 2`` times
    (so that `load`'s ratio check, `_Entries`, passes on every file `save` writes, with a margin)."""
    squeeze = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)   # what zipfile writes
    size = len(squeeze.compress(data)) + len(squeeze.flush())
    method = zipfile.ZIP_STORED if len(data) > (MAX_RATIO // 2) * size else zipfile.ZIP_DEFLATED
    archive.writestr(name, data, compress_type=method)


class _Entries:
    """The entries of one archive, read only after their declared sizes are checked (module docstring).

    Every check uses only the zip directory and, for ``.npy`` entries, the array header at the
    start of the entry: an entry whose declared size is too large for its compressed size
    (``MAX_RATIO``), for the whole file (all entries read together at most ``MAX_RATIO`` times
    the file's size, their compressed bytes at most the file's size: overlapping entries count
    twice), or, for an array, different from what its ``.npy`` header declares, is rejected before
    any of its data is decompressed. The messages start with ``path: '<file>'`` and name the entry.
    """

    def __init__(self, archive, where, file_size):
        self.archive, self.where, self.file_size = archive, where, file_size
        self.budget = MAX_RATIO * file_size   # uncompressed bytes the entries may still declare, in all
        self.packed = file_size               # compressed bytes they may still occupy, in all
        self.checked = {}                     # entry name -> ZipInfo

    def _fail(self, message):
        raise ValueError(f"path: {self.where!r} is inconsistent: {message}")

    def check(self, name, what):
        """The ZipInfo of entry ``name`` (``what`` names its use) after its size checks; nothing is decompressed."""
        if name in self.checked:
            return self.checked[name]
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            self._fail(f"{what} refers to entry {name!r}, which the file does not hold")
        declared, packed = info.file_size, info.compress_size
        if declared > self.budget:
            self._fail(f"entry {name!r} ({what}) declares {declared:,} bytes uncompressed, more than {MAX_RATIO} "
                       f"times the {self.file_size:,} bytes of the whole file (less the entries read before it)")
        if packed > self.packed:
            self._fail(f"entry {name!r} ({what}) declares {packed:,} compressed bytes, more than the "
                       f"{self.file_size:,} bytes of the whole file hold (less the entries read before it)")
        if info.compress_type == zipfile.ZIP_STORED and declared != packed:
            self._fail(f"entry {name!r} ({what}) is stored uncompressed but declares {declared:,} bytes "
                       f"uncompressed and {packed:,} stored")
        if declared > MAX_RATIO * max(packed, 1):
            self._fail(f"entry {name!r} ({what}) declares {declared:,} bytes uncompressed from {packed:,} "
                       f"compressed bytes, a ratio above {MAX_RATIO} (save stores such entries uncompressed)")
        self.budget -= declared
        self.packed -= packed
        self.checked[name] = info
        return info

    def declare_array(self, name, what):
        """Check ``.npy`` entry ``name`` (`check`, then its array header against its size): ``(shape, dtype)``."""
        info = self.check(name, what)
        try:
            with self.archive.open(info) as fh:   # decompresses the first few kB at most
                version = np.lib.format.read_magic(fh)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read(fh)
                offset = fh.tell()
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError,
                zlib.error) as exc:
            self._fail(f"entry {name!r} ({what}) is not a .npy array ({exc})")
        if dtype.hasobject:
            self._fail(f"entry {name!r} ({what}) holds Python objects, which only pickle could read")
        expected = offset + math.prod(shape) * dtype.itemsize
        if info.file_size != expected:
            self._fail(f"entry {name!r} ({what}) declares {info.file_size:,} bytes, but its .npy header declares "
                       f"shape {shape} of {dtype} ({expected:,} bytes with the header)")
        return tuple(shape), dtype

    def read_array(self, name, what):
        """The array of entry ``name``, already checked by `declare_array`."""
        try:
            with self.archive.open(self.checked[name]) as fh:
                array = np.lib.format.read_array(fh, allow_pickle=False)
                if fh.read(1):   # nothing after the data; reading to the end checks the CRC-32
                    raise ValueError("data beyond the declared array")
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            self._fail(f"entry {name!r} ({what}) cannot be read ({exc})")
        return array

    def read(self, name, what):
        """The bytes of entry ``name`` (`check` first), exactly as many as it declares."""
        info = self.check(name, what)
        try:
            with self.archive.open(info) as fh:
                data = fh.read(info.file_size + 1)   # never more than declared (zipfile stops there), then the CRC
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            self._fail(f"entry {name!r} ({what}) cannot be read ({exc})")
        if len(data) != info.file_size:
            self._fail(f"entry {name!r} ({what}) holds {len(data):,} bytes, not the {info.file_size:,} it declares")
        return data


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
        well-formed model of its library included; an entry it refers to that is missing, declares
        more bytes than `_Entries` allows or than its ``.npy`` header declares, or holds Python
        objects: the message names the entry, before any of its data is decompressed).
    ImportError
        The backend library the model was trained with is not installed.
    """
    where = os.fspath(path)
    try:
        fh = open(where, "rb")
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ValueError(f"path: {where!r} is not a fastcon.boosting model file ({exc})") from None
    with fh:
        file_size = os.fstat(fh.fileno()).st_size
        try:
            archive = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ValueError(f"path: {where!r} is not a fastcon.boosting model file ({exc})") from None
        with archive:
            estimator, ensemble = _read(archive, where, file_size)
    estimator.ensemble_ = ensemble
    if not hasattr(estimator, "n_rounds_"):   # format 1 kept n_boosters_
        estimator.n_rounds_ = ensemble.n_rounds
    return estimator


def _read(archive, where, file_size):
    """`load` on an open archive: the header, then only the entries it refers to, each checked first (`_Entries`)."""
    from ._models import BoostedEnsemble

    entries = _Entries(archive, where, file_size)
    if "header.json" not in archive.namelist():
        raise ValueError(f"path: {where!r} has no header.json (not a fastcon.boosting model file)")
    header = read_header(entries.read("header.json", "the header"), where, FORMAT, FORMAT_VERSION,
                         "fastcon.boosting model file")
    known = _estimators()
    name = header.get("class")
    if not isinstance(name, str) or name not in known:
        raise ValueError(f"path: {where!r} holds an estimator of class {name!r:.80}, not one of {sorted(known)}")
    try:
        cls = known[name]
        params, attributes, spec = header["params"], header["attributes"], header["ensemble"]
        if not isinstance(params, dict) or not isinstance(attributes, dict) or not isinstance(spec, dict):
            raise ValueError("params, attributes and ensemble must be JSON objects")
        params = {**{k: v for k, v in _LEGACY_DEFAULTS.get(name, {}).items() if k not in params}, **params}
        unknown = sorted(set(params) - set(cls().get_params(deep=False)))
        if unknown:
            raise ValueError(f"parameter(s) {unknown} that {name} does not have")
        files = spec["files"]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ValueError(f"ensemble files: expected a list of entry names, got {files!r:.80}")
        # the counts and numbers of the ensemble, before anything is read or converted
        n_outputs = header_count("ensemble n_outputs", spec["n_outputs"], minimum=1, maximum=MAX_OUTPUTS)
        if header["format_version"] == 1:
            weights = spec["coefficients"]
            if not isinstance(weights, list):
                raise ValueError(f"ensemble coefficients: expected a list of numbers, got {_describe(weights)}")
            weights = [header_real(f"ensemble coefficients[{k}]", w) for k, w in enumerate(weights)]
        else:
            terms = _terms(spec["terms"])
        # every entry read is checked before any is decompressed: arrays, then booster files
        refs = _array_refs(attributes, "", _array_refs(params, "params", {}))
        for key, used in refs.items():
            entries.declare_array(f"arrays/{key}.npy", used)
        for k, f in enumerate(files):
            entries.check(f, f"ensemble files[{k}]")
        arrays = {key: entries.read_array(f"arrays/{key}.npy", used) for key, used in refs.items()}
        raw = [entries.read(f, f"ensemble files[{k}]") for k, f in enumerate(files)]
        digests = spec.get("sha256")   # written since fastcon 0.x (format 2 without it still loads)
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
        estimator = cls(**{k: _decode(v, arrays, f"params[{k!r}]") for k, v in params.items()})
        for key, value in attributes.items():
            if not isinstance(key, str) or not _ATTRIBUTE.match(key):
                raise ValueError(f"attribute {key!r} is not a fitted attribute name")
            setattr(estimator, key, _decode(value, arrays, key))
        classes = getattr(estimator, "classes_", None)
        if isinstance(classes, np.ndarray) and classes.ndim == 1 and classes.size >= 2:
            expected = 1 if classes.size == 2 else classes.size
            if n_outputs != expected:
                raise ValueError(f"ensemble n_outputs: {n_outputs} output(s), but classes_ has {classes.size} "
                                 f"classes (expected {expected})")
        if header["format_version"] == 1:
            ensemble = _version1_ensemble(spec, texts, n_outputs, weights, n_threads)
        else:
            ensemble = BoostedEnsemble.from_texts(spec["backend"], texts, terms, n_outputs, n_threads)
    except ImportError:
        raise
    except (OSError, *DECODE_ERRORS) as exc:   # UnicodeDecodeError is a ValueError
        raise inconsistent(where, exc) from None
    return estimator, ensemble


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
