r"""Saving and loading fitted estimators without pickle: one ``.npz`` file of arrays and a JSON header.

A pickle runs code when it is loaded, so a model file from an untrusted source is a security hole,
and it ties the file to the exact classes of the version that wrote it. `save` writes instead

- every NumPy array of the fitted model (``coef_``, ``intercept_``, ``classes_`` when numeric,
  boolean or string, the solve's ``x`` and multipliers, ...) as an entry of an ``.npz`` archive,
  read back with ``allow_pickle=False`` (bit for bit, NaN included);
- one JSON header (entry ``__header__``, UTF-8 bytes): the format and its version, the fastcon
  version that wrote it, the estimator's class name, ``get_params()``, and the fitted attributes
  that are not arrays.

JSON has no tuples, non-string keys or non-finite numbers, so those are written as one-key
objects that name their type (``{"__tuple__": [...]}``, ``{"__dict__": [[key, value], ...]}``,
``{"__float__": "nan"}``, ...); a dict whose keys are all strings not starting with ``__`` stays a
plain JSON object, so a marker is never confused with data. Two fitted objects get their own
markers: the solve's `fastcon.SolveResult` (status, message, iterations, multipliers, counters,
``info``; **not** the history, which can be long and is not needed to predict) and the group
encoder `fastcon.datasets.GroupEncoding` (group labels and column count; its ``codes`` come back
as ``0..K-1``, the training rows' codes are not saved). A third, `fastcon.metrics.IntervalChoice`
(the rank band a partial-fairness `FairClassifier` chose), is saved field by field. Anything else,
e.g. a group label that is an arbitrary Python object, makes `save` raise TypeError naming the
attribute rather than drop it.

`load` only constructs classes of `ESTIMATORS` by name and only sets attributes named like fitted
attributes (``name_``), so nothing in the file is ever executed. It reads the header first and then
only the entries the header refers to; before decompressing one it checks its declared size against
its ``.npy`` header and against the size of the whole file (`save` stores entries uncompressed, so
a small file cannot make `load` read gigabytes), and the fitted arrays' shapes against each other.
The header itself is checked before it is decoded: at most `MAX_HEADER_DEPTH` levels of nested lists
and objects (measured iteratively: a hostile header nested thousands deep cannot exhaust Python's
recursion), and every count or number that is converted (a group encoding's ``n_columns``, a solve's
``n_iter``, ``objective``, ...) an integer or real in range, named when it is not. Whatever else a
malformed header raises while it is decoded (TypeError, KeyError, OverflowError, RecursionError) is the
same ValueError ``"path: '<file>' is inconsistent: ..."``.
"""
from __future__ import annotations

import json
import math
import os
import re
import zipfile

import numpy as np

from .._results import SolveResult
from .._version import __version__
from ..datasets import GroupEncoding
from ..metrics import IntervalChoice

__all__ = ["FORMAT", "FORMAT_VERSION", "load", "save"]

#: Value of the header's ``format`` field.
FORMAT = "fastcon.estimator"
#: Version of the layout `save` writes; `load` reads this and every earlier version.
FORMAT_VERSION = 1

#: Deepest nesting of lists and objects `load` accepts in a header (the top-level object is level 1).
#: The headers `save` writes nest at most 8 levels (a partial-fairness `FairClassifier`: its interval
#: choice's candidates); a deeper header is rejected before it is decoded.
MAX_HEADER_DEPTH = 64
#: Largest count (``n_iter``, ...) `load` accepts in a header: NumPy's int64.
MAX_HEADER_COUNT = 2 ** 63 - 1

_HEADER = "__header__"
_ATTRIBUTE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*_$")
#: Parameters added after files were written whose default changed what ``fit`` does: a file that
#: does not name one was fitted with the behaviour of the value here, so ``get_params`` and a refit
#: of the loaded estimator say and do what the saved one did.
_LEGACY_DEFAULTS = {"MultiClassNeymanPearsonClassifier": {"delta": None}, "FairClassifier": {"straddle": 0.0}}
_MARKERS = ("__array__", "__object_array__", "__tuple__", "__dict__", "__float__", "__solve_result__",
            "__group_encoding__", "__interval_choice__")


def _estimators():
    """Class name -> class of every estimator `load` may rebuild (imported here: the modules import this one)."""
    from ._fair import FairClassifier
    from ._multiclass import MultiClassNeymanPearsonClassifier
    from ._neyman_pearson import NeymanPearsonClassifier

    return {cls.__name__: cls for cls in (FairClassifier, NeymanPearsonClassifier,
                                          MultiClassNeymanPearsonClassifier)}


class _Encoder:
    """JSON-ready values out of Python/NumPy ones; arrays are set aside for the ``.npz`` entries."""

    def __init__(self):
        self.arrays = {}

    def __call__(self, value, where):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
            return int(value)
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, (float, np.floating)):
            value = float(value)
            return value if math.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, np.ndarray):
            return self._array(value, where)
        if isinstance(value, tuple):
            return {"__tuple__": [self(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in value):
                return {k: self(v, f"{where}[{k!r}]") for k, v in value.items()}
            return {"__dict__": [[self(k, f"{where} key {k!r}"), self(v, f"{where}[{k!r}]")]
                                 for k, v in value.items()]}
        if isinstance(value, SolveResult):
            return {"__solve_result__": {
                "x": self(value.x, f"{where}.x"), "status": value.status, "message": value.message,
                "n_iter": value.n_iter, "objective": self(value.objective, f"{where}.objective"),
                "max_violation": self(value.max_violation, f"{where}.max_violation"),
                "multipliers": self(value.multipliers, f"{where}.multipliers"),
                "counters": self(value.counters, f"{where}.counters"), "info": self(value.info, f"{where}.info"),
                "solver": value.solver}}
        if isinstance(value, IntervalChoice):
            return {"__interval_choice__": {
                "interval": self(value.interval, f"{where}.interval"), "rate": self(value.rate, f"{where}.rate"),
                "candidates": self(value.candidates, f"{where}.candidates"),
                "partial_dp_values": self(value.partial_dp_values, f"{where}.partial_dp_values")}}
        if isinstance(value, GroupEncoding):
            return {"__group_encoding__": {"labels": self(list(value.labels), f"{where}.labels"),
                                           "n_columns": int(value.n_columns)}}
        raise TypeError(f"{where}: a value of type {type(value).__name__} ({value!r:.80}) cannot be saved "
                        "without pickle (supported: numbers, strings, bools, None, tuples, lists, dicts, "
                        "NumPy arrays of numbers, bools or strings)")

    def _array(self, value, where):
        if value.dtype.kind in "biufcUS":
            key = f"a{len(self.arrays)}"
            self.arrays[key] = value
            return {"__array__": key}
        if value.dtype.kind == "O" and value.ndim == 1:
            # e.g. feature_names_in_ (strings in an object array): its items as JSON, dtype kept
            return {"__object_array__": [self(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        raise TypeError(f"{where}: an array of dtype {value.dtype} and shape {value.shape} cannot be saved "
                        "without pickle")


def _decode(value, arrays, where):
    """The inverse of `_Encoder`; ``where`` names the value in error messages."""
    if isinstance(value, list):
        return [_decode(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    marker = next(iter(value)) if len(value) == 1 else None
    if marker not in _MARKERS:
        return {k: _decode(v, arrays, f"{where}[{k!r}]") for k, v in value.items()}
    body = value[marker]
    if marker == "__array__":
        if not isinstance(body, str) or body not in arrays:
            raise ValueError(f"{where}: refers to array {body!r}, which the file does not hold")
        return arrays[body]
    if marker == "__object_array__":
        items = _decode(body, arrays, where)
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    if marker == "__tuple__":
        return tuple(_decode(body, arrays, where))
    if marker == "__dict__":
        pairs = [(_decode(k, arrays, where), _decode(v, arrays, where)) for k, v in body]
        return {_hashable(k): v for k, v in pairs}
    if marker == "__float__":
        if body not in ("nan", "inf", "-inf"):
            raise ValueError(f"{where}: {body!r} is not a non-finite float")
        return float(body)
    if marker == "__solve_result__":
        fields = _fields(_decode(body, arrays, where), where)
        multipliers = fields["multipliers"]
        if multipliers is not None and not _numeric_array(multipliers):
            raise ValueError(f"{where}.multipliers: expected null or an array of numbers, got "
                             f"{_describe(multipliers)}")
        return SolveResult(fields["x"], fields["status"], fields["message"],
                           n_iter=header_count(f"{where}.n_iter", fields["n_iter"]),
                           objective=header_real(f"{where}.objective", fields["objective"], finite=False),
                           max_violation=header_real(f"{where}.max_violation", fields["max_violation"], finite=False),
                           multipliers=multipliers, counters=fields["counters"], info=fields["info"],
                           solver=fields["solver"])
    if marker == "__interval_choice__":
        fields = _fields(_decode(body, arrays, where), where)
        values = fields["partial_dp_values"]
        if isinstance(values, list):
            values = [header_real(f"{where}.partial_dp_values[{i}]", v, finite=False) for i, v in enumerate(values)]
        elif not (_numeric_array(values) and values.ndim == 1):
            raise ValueError(f"{where}.partial_dp_values: expected a 1-D array of numbers, got {_describe(values)}")
        values = np.array(values, dtype=np.float64)
        values.flags.writeable = False   # read-only, as choose_interval returns it
        return IntervalChoice(interval=fields["interval"], rate=fields["rate"], candidates=fields["candidates"],
                              partial_dp_values=values)
    fields = _fields(_decode(body, arrays, where), where)   # __group_encoding__
    if not isinstance(fields["labels"], list):
        raise ValueError(f"{where}.labels: expected a list of group labels, got {_describe(fields['labels'])}")
    labels = [_hashable(g) for g in fields["labels"]]
    n_columns = header_count(f"{where}.n_columns", fields["n_columns"], minimum=1)
    if n_columns > 1 and not all(isinstance(g, tuple) and len(g) == n_columns for g in labels):
        raise ValueError(f"{where}.n_columns: {n_columns} sensitive columns, but the labels are not all "
                         f"tuples of {n_columns} values")
    return GroupEncoding(codes=np.arange(len(labels), dtype=np.int64), labels=labels, n_groups=len(labels),
                         n_columns=n_columns)


def _hashable(key):
    # a dict key or group label that JSON gave back as a list (never written so: tuples are marked)
    return tuple(key) if isinstance(key, list) else key


def _fields(value, where):
    """The decoded body of a marker that holds named fields: a dict (a ValueError naming ``where`` otherwise)."""
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object of named fields, got {_describe(value)}")
    return value


def _describe(value):
    """``value`` for an error message: its type and a short repr (a huge integer is not spelled out)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 40:
        return f"an integer of {len(str(abs(value)))} digits"
    return f"{type(value).__name__} {value!r:.60}"


def _numeric_array(value):
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


def header_count(name, value, minimum=0, maximum=MAX_HEADER_COUNT):
    """A count from a header: an int (not bool, not float) in ``[minimum, maximum]``; ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValueError(f"{name}: expected an integer in [{minimum}, {maximum}], got {_describe(value)}")
    return value


def header_real(name, value, finite=True):
    """A real number from a header as a float: int or float (not bool), finite if ``finite``; ValueError naming ``name``
    otherwise.

    Non-finite values are written as ``{"__float__": ...}`` markers and arrive decoded; an integer
    too large for a float (JSON has no limit) is rejected rather than overflow.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name}: expected a number, got {_describe(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"{name}: {_describe(value)} is too large for a float") from None
    if finite and not math.isfinite(number):
        raise ValueError(f"{name}: expected a finite number, got {number!r}")
    return number


def header_depth(value, limit):
    """Nesting depth of lists and dicts in the decoded JSON ``value`` (1 for a flat list or dict), computed
    without recursion; stops at the first level deeper than ``limit`` and returns it."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                return depth
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def inconsistent(where, exc):
    """The ValueError ``"path: '<where>' is inconsistent: ..."`` for an exception raised while a header was decoded.

    A ValueError that already starts with ``path: '<where>'`` is returned as is; a KeyError names the
    missing field; an ArithmeticError or RecursionError also names its type.
    """
    if isinstance(exc, ValueError) and str(exc).startswith(f"path: {where!r}"):
        return exc
    if isinstance(exc, KeyError):
        detail = f"field {exc.args[0]!r:.80} is missing" if exc.args else "a field is missing"
    elif isinstance(exc, (ArithmeticError, RecursionError)):
        detail = f"{type(exc).__name__}: {exc}"
    else:
        detail = str(exc)
    return ValueError(f"path: {where!r} is inconsistent: {detail}")


#: What a malformed header that is valid JSON may raise while it is decoded (`inconsistent` turns each
#: into the ValueError ``"path: ..."``); MemoryError and KeyboardInterrupt are not among them.
DECODE_ERRORS = (ValueError, TypeError, LookupError, ArithmeticError, RecursionError)


def save(estimator, path):
    """Write a fitted estimator to ``path`` (an ``.npz`` archive: arrays and a JSON header; no pickle).

    Parameters
    ----------
    estimator : FairClassifier, NeymanPearsonClassifier or MultiClassNeymanPearsonClassifier
        Fitted.
    path : str or os.PathLike
        Written as given (no suffix is added); ``.npz`` is the conventional suffix.

    Raises
    ------
    TypeError
        ``estimator`` is not one of the estimators `load` knows, or a fitted attribute holds a
        value that cannot be written without pickle (the message names it).
    sklearn.exceptions.NotFittedError
        ``estimator`` is not fitted.
    """
    from sklearn.utils.validation import check_is_fitted

    name = type(estimator).__name__
    if _estimators().get(name) is not type(estimator):
        raise TypeError(f"estimator: {name} is not a fastcon estimator that load() can rebuild "
                        f"(known: {sorted(_estimators())})")
    check_is_fitted(estimator)
    encode = _Encoder()
    params = {k: encode(v, f"params[{k!r}]") for k, v in estimator.get_params(deep=False).items()}
    attributes = {k: encode(v, k) for k, v in sorted(vars(estimator).items()) if _ATTRIBUTE.match(k)}
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "fastcon_version": __version__,
              "class": name, "params": params, "attributes": attributes}
    text = json.dumps(header, allow_nan=False, ensure_ascii=False)
    arrays = dict(encode.arrays)
    arrays[_HEADER] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    with open(os.fspath(path), "wb") as fh:
        np.savez(fh, **arrays)


def read_header(raw, where, format_name, format_version, what):
    """The JSON header ``raw`` (bytes) of a saved model, checked: its format and a version this fastcon reads.

    Raises ValueError naming ``path`` (``where``) for unreadable JSON, lists and objects nested more
    than `MAX_HEADER_DEPTH` levels (checked without recursion, so that decoding the header later cannot
    exhaust Python's recursion), another format (``what`` describes the expected one) or a version
    newer than ``format_version``.
    """
    try:
        header = json.loads(raw.decode("utf-8"))
    except RecursionError:   # thousands of nested brackets: json's own recursion gives up
        raise ValueError(f"path: {where!r} is inconsistent: its header nests lists and objects more than "
                         f"MAX_HEADER_DEPTH = {MAX_HEADER_DEPTH} levels deep (the headers save writes nest at most 8)"
                         ) from None
    except ValueError as exc:   # UnicodeDecodeError, JSONDecodeError, an integer of more than 4,300 digits
        raise ValueError(f"path: {where!r} has an unreadable header ({str(exc):.200})") from None
    depth = header_depth(header, MAX_HEADER_DEPTH)
    if depth > MAX_HEADER_DEPTH:
        raise ValueError(f"path: {where!r} is inconsistent: its header nests lists and objects more than "
                         f"MAX_HEADER_DEPTH = {MAX_HEADER_DEPTH} levels deep (the headers save writes nest at most 8)")
    if not isinstance(header, dict) or header.get("format") != format_name:
        raise ValueError(f"path: {where!r} is not a {what} (format "
                         f"{header.get('format') if isinstance(header, dict) else None!r})")
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"path: {where!r} has an invalid format_version {version!r}")
    if version > format_version:
        raise ValueError(f"path: {where!r} was written in format version {version} (by fastcon "
                         f"{header.get('fastcon_version')}); this fastcon ({__version__}) reads versions up to "
                         f"{format_version}: upgrade fastcon")
    return header


def _array_refs(value, where, refs):
    """Collect ``key -> where`` for every ``{"__array__": key}`` in a decoded-JSON ``value``."""
    if isinstance(value, list):
        for i, v in enumerate(value):
            _array_refs(v, f"{where}[{i}]", refs)
    elif isinstance(value, dict):
        if len(value) == 1 and "__array__" in value:
            key = value["__array__"]
            if isinstance(key, str):
                refs.setdefault(key, where)
            return
        for k, v in value.items():
            _array_refs(v, f"{where}[{k!r}]" if where else str(k), refs)
    return refs


class _Entries:
    """The entries of one archive, read only after their declared sizes are checked.

    The limit is the archive itself: `save` stores every entry uncompressed (``np.savez``), so an
    entry it wrote is never larger than the file that holds it. An entry that declares more bytes
    than the whole file (a zip bomb: a few MB inflating to GB), or whose size disagrees with the
    shape and dtype of its ``.npy`` header, is rejected before any of its data is decompressed.
    """

    def __init__(self, archive, where, file_size):
        self.archive, self.where, self.file_size = archive, where, file_size
        self.declared = {}   # entry name -> (shape, dtype)
        self.budget = file_size   # bytes the referenced entries may still declare, in all

    def _fail(self, message):
        raise ValueError(f"path: {self.where!r} {message}")

    def declare(self, name, what):
        """Check entry ``name`` (``what`` names its use) without reading its data: returns (shape, dtype)."""
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            self._fail(f"is inconsistent: {what} refers to entry {name!r}, which the file does not hold")
        if info.file_size > self.budget:
            self._fail(f"is inconsistent: entry {name!r} ({what}) declares {info.file_size:,} bytes uncompressed, "
                       f"more than the {self.file_size:,} bytes of the whole file (less the entries before it); "
                       "save stores entries uncompressed, so no entry it wrote is larger than its file")
        try:
            with self.archive.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, fortran, dtype = read(fh)
                offset = fh.tell()
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
            self._fail(f"is not a fastcon estimator file: entry {name!r} ({what}) is not a .npy array ({exc})")
        if dtype.hasobject:
            self._fail(f"is not a fastcon estimator file: entry {name!r} ({what}) holds Python objects, "
                       "which only pickle could read")
        expected = offset + math.prod(shape) * dtype.itemsize
        if info.file_size != expected:
            self._fail(f"is inconsistent: entry {name!r} ({what}) declares {info.file_size:,} bytes, but its "
                       f".npy header declares shape {shape} of {dtype} ({expected:,} bytes with the header)")
        self.budget -= info.file_size
        self.declared[name] = (tuple(shape), dtype)
        return self.declared[name]

    def read(self, name, what):
        """The array of entry ``name``, already checked by `declare`."""
        try:
            with self.archive.open(name) as fh:
                array = np.lib.format.read_array(fh, allow_pickle=False)
                if fh.read(1):   # nothing after the data; reading to the end checks the CRC-32
                    raise ValueError("data beyond the declared array")
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            self._fail(f"is not a fastcon estimator file: entry {name!r} ({what}) cannot be read ({exc})")
        return array


def _shape_of(value, declared):
    """Shape of an encoded attribute: an ``__array__`` (its declared shape) or ``__object_array__``; else None."""
    if isinstance(value, dict) and len(value) == 1:
        if "__array__" in value:
            return declared.get(f"{value['__array__']}.npy", (None, None))[0]
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
        dtype = declared.get(f"{attributes[key].get('__array__')}.npy", (None, None))[1]
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


def load(path):
    """Rebuild an estimator written by `save`: same parameters, same fitted arrays (bit for bit).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    FairClassifier, NeymanPearsonClassifier or MultiClassNeymanPearsonClassifier
        Fitted: ``predict``, ``decision_function``, ``predict_proba`` and ``constraint_report``
        give what the saved estimator gave. ``solve_result_.history`` is empty (not saved).

    Raises
    ------
    ValueError
        ``"path: ..."`` when the file is not an estimator file of this format, was written by a
        newer format version, names an unknown estimator class or parameter, or is inconsistent:
        an entry larger than the whole file or than its ``.npy`` header declares, or fitted arrays
        whose shapes disagree, a header nested more than `MAX_HEADER_DEPTH` levels, a count or number
        out of range (the message names the field), or any other malformed header. Nothing in the file
        is executed: arrays are read with ``allow_pickle=False``, classes are looked up in a fixed table.

    Notes
    -----
    The JSON header is read and checked first, then only the entries it refers to; every entry's
    declared size is checked (against the file's size and its ``.npy`` header, see `_Entries`)
    and the fitted arrays' shapes against each other before any array data is decompressed.
    Entries nothing refers to are never read.
    """
    where = os.fspath(path)
    with open(where, "rb") as fh:   # FileNotFoundError as is
        magic = fh.read(6)
        file_size = os.fstat(fh.fileno()).st_size
    if magic == b"\x93NUMPY":
        raise ValueError(f"path: {where!r} is not a fastcon estimator file (a single array, not an archive)")
    try:
        archive = zipfile.ZipFile(where)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ValueError(f"path: {where!r} is not a fastcon estimator file ({exc})") from None
    with archive:
        try:
            return _read(archive, where, file_size)
        except DECODE_ERRORS as exc:   # a malformed header that is valid JSON: never a bare TypeError, ...
            raise inconsistent(where, exc) from None


def _read(archive, where, file_size):
    """`load` on an open archive: the header, then only the entries it refers to (`_Entries`), then the estimator."""
    entries = _Entries(archive, where, file_size)
    if f"{_HEADER}.npy" not in archive.namelist():
        raise ValueError(f"path: {where!r} has no fastcon estimator header")
    shape, dtype = entries.declare(f"{_HEADER}.npy", "the header")
    if dtype != np.uint8 or len(shape) != 1:
        raise ValueError(f"path: {where!r} has no fastcon estimator header (entry {_HEADER}.npy holds "
                         f"{dtype} of shape {shape}, not bytes)")
    raw = entries.read(f"{_HEADER}.npy", "the header")
    header = read_header(raw.tobytes(), where, FORMAT, FORMAT_VERSION, "fastcon estimator file")
    name = header.get("class")
    known = _estimators()
    if not isinstance(name, str) or name not in known:
        raise ValueError(f"path: {where!r} holds an estimator of class {name!r:.80}, not one of {sorted(known)}")
    cls = known[name]
    params, attributes = header.get("params"), header.get("attributes")
    if not isinstance(params, dict) or not isinstance(attributes, dict):
        raise ValueError(f"path: {where!r} has no params/attributes tables")
    accepted = cls().get_params(deep=False)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"path: {where!r} sets parameter(s) {unknown} that {name} does not have")
    # Only the entries the header refers to, each checked before any data is read.
    refs = _array_refs(attributes, "", _array_refs(params, "params", {}))
    for key, used in refs.items():
        if key == _HEADER:
            raise ValueError(f"path: {where!r} is inconsistent: {used} refers to the header entry")
        if f"{key}.npy" not in archive.namelist():
            raise ValueError(f"path: {where!r} is inconsistent: {used}: refers to array {key!r}, which the "
                             "file does not hold")
        entries.declare(f"{key}.npy", used)
    _check_shapes(where, name, attributes, entries.declared)
    arrays = {key: entries.read(f"{key}.npy", used) for key, used in refs.items()}
    legacy = {k: v for k, v in _LEGACY_DEFAULTS.get(name, {}).items() if k not in params}
    estimator = cls(**legacy, **{k: _decode(v, arrays, f"params[{k!r}]") for k, v in params.items()})
    for key, value in attributes.items():
        if not isinstance(key, str) or not _ATTRIBUTE.match(key):
            raise ValueError(f"attribute {key!r} is not a fitted attribute name (letters, digits, '_', "
                             "ending in '_')")
        setattr(estimator, key, _decode(value, arrays, key))
    return estimator
