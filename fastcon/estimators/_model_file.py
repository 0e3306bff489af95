r"""The one file format of fitted fastcon models, linear and boosted: a zip archive without pickle.

A pickle runs code when loaded, so `write` stores ``header.json`` (format, versions, class name,
``get_params()``, the non-array fitted attributes, with typed markers for what JSON lacks),
``arrays/aN.npy`` (read with ``allow_pickle=False``) and ``boosters/NNNN.*`` in the libraries'
formats. `read` constructs only the classes its caller lists, sets only ``name_``-style attributes,
and checks declared sizes (`MAX_RATIO`) and header depth (`MAX_HEADER_DEPTH`) before decoding;
earlier formats still load (`LEGACY_FORMATS`).
Format and security details: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import zipfile
import zlib

import numpy as np

from .._results import SolveResult
from .._version import __version__
from ..datasets import GroupEncoding
from ..metrics import IntervalChoice

__all__ = ["FORMAT", "FORMAT_VERSION", "read", "write"]

#: Value of the header's ``format`` field.
FORMAT = "fastcon-model"
#: Version of the layout `write` writes; `read` reads this and every earlier version.
FORMAT_VERSION = 1
#: Formats of earlier fastcon versions that `read` still reads: format name -> newest version.
LEGACY_FORMATS = {"fastcon.estimator": 1, "fastcon.boosting.estimator": 2}
#: Deepest nesting of lists and objects `read` accepts in a header (the top-level object is level 1).
#: The headers `write` writes nest at most 8 levels (a partial-fairness `FairClassifier`: its interval
#: choice's candidates); a deeper header is rejected before it is decoded.
MAX_HEADER_DEPTH = 64
#: Largest count (``n_iter``, ...) `read` accepts in a header: NumPy's int64.
MAX_HEADER_COUNT = 2 ** 63 - 1
#: Largest ratio of an entry's declared (uncompressed) size to its compressed size, and of the bytes
#: all entries `read` reads declare to the size of the file, that `read` accepts. Booster texts
#: deflate 2.5-4 times, a constant XGBoost model of 2,000 trees 64 times; deflate's own limit is
#: about 1,032 (a 3 MB file of 3 GB of zeros).
MAX_RATIO = 100

_ATTRIBUTE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*_$")
_MARKERS = ("__array__", "__object_array__", "__tuple__", "__dict__", "__float__", "__solve_result__",
            "__group_encoding__", "__interval_choice__")
#: The header entry of the linear estimators' ``.npz`` files (format ``fastcon.estimator``).
_NPZ_HEADER = "__header__.npy"
#: Entry timestamp: the same model gives the same bytes.
_DATE_TIME = (1980, 1, 1, 0, 0, 0)


class _Encoder:
    """JSON-ready values out of Python/NumPy ones; arrays are set aside for the ``arrays/`` entries."""

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


def read_header(raw, where):
    """The JSON header ``raw`` (bytes) of a model file, checked: its format and a version this fastcon reads.

    Raises ValueError naming ``path`` (``where``) for unreadable JSON, lists and objects nested more
    than `MAX_HEADER_DEPTH` levels (checked without recursion, so that decoding the header later cannot
    exhaust Python's recursion), another format, or a version newer than this fastcon reads.
    """
    deep = (f"path: {where!r} is inconsistent: its header nests lists and objects more than "
            f"MAX_HEADER_DEPTH = {MAX_HEADER_DEPTH} levels deep (the headers save writes nest at most 8)")
    try:
        header = json.loads(raw.decode("utf-8"))
    except RecursionError:   # thousands of nested brackets: json's own recursion gives up
        raise ValueError(deep) from None
    except ValueError as exc:   # UnicodeDecodeError, JSONDecodeError, an integer of more than 4,300 digits
        raise ValueError(f"path: {where!r} has an unreadable header ({str(exc):.200})") from None
    if header_depth(header, MAX_HEADER_DEPTH) > MAX_HEADER_DEPTH:
        raise ValueError(deep)
    known = {FORMAT: FORMAT_VERSION, **LEGACY_FORMATS}
    name = header.get("format") if isinstance(header, dict) else None
    if not isinstance(name, str) or name not in known:
        raise ValueError(f"path: {where!r} is not a fastcon model file (format {name!r:.80})")
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"path: {where!r} has an invalid format_version {version!r:.80}")
    if version > known[name]:
        raise ValueError(f"path: {where!r} was written in format version {version} (by fastcon "
                         f"{header.get('fastcon_version')!r:.40}); this fastcon ({__version__}) reads versions up to "
                         f"{known[name]}: upgrade fastcon")
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
            return refs
        for k, v in value.items():
            _array_refs(v, f"{where}[{k!r}]" if where else str(k), refs)
    return refs


def write(estimator, path, skip=(), extra=None, files=()):
    """Write ``estimator`` (fitted; the caller checks its class) to ``path``: header, arrays, then ``files``.

    ``skip`` names fitted attributes that ``extra`` (more header fields) and ``files`` (``(entry name,
    bytes)`` pairs) stand for. Raises TypeError naming a parameter or attribute that cannot be written
    without pickle.
    """
    encode = _Encoder()
    params = {k: encode(v, f"params[{k!r}]") for k, v in estimator.get_params(deep=False).items()}
    attributes = {k: encode(v, k) for k, v in sorted(vars(estimator).items()) if _ATTRIBUTE.match(k) and k not in skip}
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "fastcon_version": __version__,
              "class": type(estimator).__name__, "params": params, "attributes": attributes, **(extra or {})}
    text = json.dumps(header, allow_nan=False, ensure_ascii=False, indent=1)
    with zipfile.ZipFile(os.fspath(path), "w") as archive:
        _write(archive, "header.json", text.encode("utf-8"))
        for key, value in encode.arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, value, allow_pickle=False)
            _write(archive, f"arrays/{key}.npy", buffer.getvalue())
        for name, data in files:
            _write(archive, name, data)


def _write(archive, name, data):
    """Write entry ``name``: deflated, or stored when deflate would shrink it more than ``MAX_RATIO // 2`` times
    (so that `read`'s ratio check, `_Entries`, passes on every file `write` writes, with a margin)."""
    squeeze = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)   # what zipfile writes
    size = len(squeeze.compress(data)) + len(squeeze.flush())
    info = zipfile.ZipInfo(name, _DATE_TIME)
    info.compress_type = zipfile.ZIP_STORED if len(data) > (MAX_RATIO // 2) * size else zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


class _Entries:
    """The entries of one archive, read only after their declared sizes are checked (module docstring).

    Every check uses only the zip directory and, for ``.npy`` entries, the array header at the
    start of the entry: an entry whose declared size is too large for its compressed size
    (``MAX_RATIO``), for the whole file (all entries read together at most ``MAX_RATIO`` times
    the file's size, their compressed bytes at most the file's size: overlapping entries count
    twice), or, for an array, different from what its ``.npy`` header declares, is rejected before
    any of its data is decompressed. The messages start with ``path: '<file>'`` and name the entry.
    ``arrays`` is the folder of the ``.npy`` entries (empty in the linear estimators' ``.npz`` files).
    """

    def __init__(self, archive, where, file_size, arrays="arrays/"):
        self.archive, self.where, self.file_size, self.arrays = archive, where, file_size, arrays
        self.budget = MAX_RATIO * file_size   # uncompressed bytes the entries may still declare, in all
        self.packed = file_size               # compressed bytes they may still occupy, in all
        self.checked = {}                     # entry name -> ZipInfo
        self.declared = {}                    # array key -> (shape, dtype)

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

    def declare_array(self, key, what, name=None):
        """Check array ``key`` (`check`, then its ``.npy`` header against its size): ``(shape, dtype)``."""
        name = name or f"{self.arrays}{key}.npy"
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
        self.declared[key] = (tuple(shape), dtype)
        return self.declared[key]

    def read_array(self, key, what, name=None):
        """The array ``key``, already checked by `declare_array`."""
        name = name or f"{self.arrays}{key}.npy"
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


def read(path, readers):
    """The estimator in the model file ``path``, rebuilt by ``readers[class name](header, entries)``.

    ``entries`` is the archive's `_Entries`; a reader checks what it reads through it and may raise
    any of `DECODE_ERRORS`, which become the ValueError ``"path: '<file>' is inconsistent: ..."``.
    Raises ValueError ``"path: ..."`` when the file is not a fastcon model file (not a zip archive, no
    header, another format) or names a class that is not in ``readers``; FileNotFoundError as is.
    """
    where = os.fspath(path)
    try:
        fh = open(where, "rb")
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ValueError(f"path: {where!r} is not a fastcon model file ({exc})") from None
    with fh:
        file_size = os.fstat(fh.fileno()).st_size
        if fh.read(6) == b"\x93NUMPY":
            raise ValueError(f"path: {where!r} is not a fastcon model file (a single array, not an archive)")
        try:
            archive = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ValueError(f"path: {where!r} is not a fastcon model file ({exc})") from None
        with archive:
            try:
                return _read(archive, where, file_size, readers)
            except ImportError:
                raise
            except (OSError, *DECODE_ERRORS) as exc:   # a malformed header: never a bare TypeError, ...
                raise inconsistent(where, exc) from None


def _read(archive, where, file_size, readers):
    """`read` on an open archive: the header (either layout), then the reader of its class."""
    names = set(archive.namelist())
    if "header.json" in names:
        entries = _Entries(archive, where, file_size)
        raw = entries.read("header.json", "the header")
    elif _NPZ_HEADER in names:   # a linear estimator's .npz file (format fastcon.estimator 1)
        entries = _Entries(archive, where, file_size, arrays="")
        shape, dtype = entries.declare_array("__header__", "the header")
        if dtype != np.uint8 or len(shape) != 1:
            raise ValueError(f"path: {where!r} is not a fastcon model file (entry {_NPZ_HEADER} holds "
                             f"{dtype} of shape {shape}, not bytes)")
        raw = entries.read_array("__header__", "the header").tobytes()
    else:
        raise ValueError(f"path: {where!r} is not a fastcon model file (it has no header.json)")
    header = read_header(raw, where)
    name = header.get("class")
    if not isinstance(name, str) or name not in readers:
        raise ValueError(f"path: {where!r} holds an estimator of class {name!r:.80}, not one of {sorted(readers)}")
    return readers[name](header, entries)


def parts(header, cls, legacy=None, renamed=None):
    """The header's ``params`` (with ``legacy`` defaults for those it does not name) and ``attributes``, checked:
    JSON objects, parameters that ``cls`` has, attribute names like ``name_``.

    ``legacy``: parameters added after files were written whose default changed what ``fit`` does; a
    file that does not name one was fitted with the behaviour of the value given, so ``get_params`` and
    a refit of the loaded estimator say and do what the saved one did. ``renamed``: old name -> new
    name of parameters and attributes renamed since files were written (read under the new name).
    """
    params, attributes = header["params"], header["attributes"]
    if not isinstance(params, dict) or not isinstance(attributes, dict):
        raise ValueError("params and attributes must be JSON objects")
    params, attributes = _rename(params, renamed, "parameter"), _rename(attributes, renamed, "attribute")
    params = {**{k: v for k, v in (legacy or {}).items() if k not in params}, **params}
    unknown = sorted(set(params) - set(cls().get_params(deep=False)))
    if unknown:
        raise ValueError(f"parameter(s) {unknown} that {cls.__name__} does not have")
    for key in attributes:
        if not _ATTRIBUTE.match(key):
            raise ValueError(f"attribute {key!r:.80} is not a fitted attribute name (letters, digits, '_', "
                             "ending in '_')")
    return params, attributes


def _rename(mapping, renamed, kind):
    """``mapping`` with the old keys of ``renamed`` under their new names; a ValueError when both are present."""
    out = {}
    for key, value in mapping.items():
        new = (renamed or {}).get(key, key)
        if new in out or (new != key and new in mapping):
            raise ValueError(f"{kind} {new!r} given twice (also as its former name {key!r})")
        out[new] = value
    return out


def declare_arrays(entries, params, attributes):
    """Check every array the parameters and attributes refer to (`_Entries.declare_array`): key -> where used."""
    refs = _array_refs(attributes, "", _array_refs(params, "params", {}))
    for key, used in refs.items():
        entries.declare_array(key, used)
    return refs


def build(cls, params, attributes, entries, refs):
    """``cls(**params)`` with ``attributes`` set, the arrays ``refs`` read (after `declare_arrays`) and decoded."""
    arrays = {key: entries.read_array(key, used) for key, used in refs.items()}
    estimator = cls(**{k: _decode(v, arrays, f"params[{k!r}]") for k, v in params.items()})
    for key, value in attributes.items():
        setattr(estimator, key, _decode(value, arrays, key))
    return estimator
