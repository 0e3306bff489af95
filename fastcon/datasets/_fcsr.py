r"""The ``.fcsr`` file: a design matrix with its labels and groups, stored to be memory-mapped.

A `Dataset` written by :func:`write_fcsr` (or by ``fastcon convert``, `convert_libsvm`) is read back
by :func:`read_fcsr` as a `Dataset` whose ``X`` is a SciPy CSR matrix over read-only `numpy.memmap`
views of the file: nothing is parsed or copied, and a file larger than memory can be fitted. Format
version 1: a 512-byte header with a CRC-32, then seven 64-byte-aligned sections (``indptr``,
``indices``, ``data``, ``y``, ``groups``, ``sample_weight``, ``meta``) in the dtypes `Dataset` and
SciPy keep, each with its sha256 (checked with ``verify=True``). A damaged file raises ValueError.
Format table and design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import zlib
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._version import __version__
from ._dataset import Dataset

__all__ = ["read_fcsr", "write_fcsr", "is_fcsr", "read_fcsr_header", "FcsrHeader", "FcsrWriter", "index_dtype",
           "MAGIC", "VERSION", "HEADER_SIZE", "ALIGNMENT"]

MAGIC = b"\x89FCSR\r\n\x1a"
VERSION = 1
HEADER_SIZE = 512
ALIGNMENT = 64
SECTIONS = ("indptr", "indices", "data", "y", "groups", "sample_weight", "meta")
LAYOUTS = ("csr", "dense")
TASKS = {1: "binary", 2: "multiclass"}
FLAG_BINARY_VALUES = 1

_FIXED = struct.Struct("<8sIIQQQBBHI")   # magic .. alignment: 48 bytes
_ENTRY = struct.Struct("<4s4xQQ32s")     # one section: 56 bytes
_CRC = struct.Struct("<I")
_INT32_MAX = 2 ** 31 - 1
#: Largest header size a reader accepts before checking the header's checksum (future versions may
#: grow the header; a damaged size field must not make a read allocate gigabytes).
_MAX_HEADER = 1 << 20
#: Bytes per block when a section is written, hashed or verified.
BLOCK_BYTES = 16 << 20

_DTYPES = {"indptr": ("<i4", "<i8"), "indices": ("<i4", "<i8"), "data": ("<f8",), "y": ("<f8", "<i8"),
           "groups": ("<i8",), "sample_weight": ("<f8",), "meta": ("|u1",)}


#: Largest row, column or entry count a header may declare (int64 indexing with room to spare).
_MAX_COUNT = 2 ** 62


def index_dtype(n_rows, n_cols, nnz) -> np.dtype:
    """The dtype of ``indptr`` and ``indices``: int32 when all three sizes are below 2**31, else int64.

    This is the dtype `scipy.sparse.csr_matrix` picks for the arrays itself, so it keeps the
    memory-mapped arrays instead of converting them.
    """
    return np.dtype("<i4") if max(int(n_rows), int(n_cols), int(nnz)) <= _INT32_MAX else np.dtype("<i8")


def _blocks(array, block_bytes=BLOCK_BYTES):
    """Consecutive slices of the 1-D ``array`` of about ``block_bytes`` each (views, not copies)."""
    step = max(1, block_bytes // max(array.itemsize, 1))
    for start in range(0, array.shape[0], step):
        yield array[start:start + step]


# ------------------------------------------------------------------------------- header
@dataclass(frozen=True)
class FcsrHeader:
    """The decoded header of a ``.fcsr`` file (see the module docstring for the layout).

    Attributes
    ----------
    n_rows, n_cols, nnz : int
    layout : {"csr", "dense"}
    task : {"binary", "multiclass"}
    binary_values : bool
        Every stored value of X is exactly 1.0.
    sections : dict
        ``{name: (dtype str, offset, count, sha256 bytes)}`` of the sections present.
    file_size : int
        Size of the file the header was read from.
    """

    n_rows: int
    n_cols: int
    nnz: int
    layout: str
    task: str
    binary_values: bool
    sections: dict
    file_size: int

    @property
    def index_dtype(self):
        return self.sections["indptr"][0] if "indptr" in self.sections else None


def _pack_header(n_rows, n_cols, nnz, layout, task, flags, sections) -> bytes:
    buf = bytearray(HEADER_SIZE)
    task_code = next(code for code, name in TASKS.items() if name == task)
    _FIXED.pack_into(buf, 0, MAGIC, VERSION, HEADER_SIZE, n_rows, n_cols, nnz, LAYOUTS.index(layout), task_code,
                     flags, ALIGNMENT)
    for k, name in enumerate(SECTIONS):
        dtype, offset, count, digest = sections.get(name, ("", 0, 0, bytes(32)))
        _ENTRY.pack_into(buf, _FIXED.size + k * _ENTRY.size, dtype.encode("ascii"), offset, count, digest)
    _CRC.pack_into(buf, HEADER_SIZE - _CRC.size, zlib.crc32(bytes(buf[:HEADER_SIZE - _CRC.size])))
    return bytes(buf)


def _decode_header(head, file_size, where) -> FcsrHeader:
    """Check and decode the header bytes ``head`` of a file of ``file_size`` bytes; ValueError naming the field."""
    if head[:len(MAGIC)] != MAGIC:
        if len(head) < len(MAGIC) and MAGIC.startswith(head):
            raise ValueError(f"{where}: truncated: the file has {file_size} bytes, a .fcsr header has {HEADER_SIZE}")
        raise ValueError(f"{where}: not a .fcsr file (it starts with {bytes(head[:len(MAGIC)])!r}, a .fcsr file with "
                         f"{MAGIC!r})")
    if len(head) < 16:
        raise ValueError(f"{where}: truncated: the file has {file_size} bytes, a .fcsr header has {HEADER_SIZE}")
    version, header_size = struct.unpack_from("<II", head, 8)
    if not 48 + _CRC.size <= header_size <= _MAX_HEADER:
        raise ValueError(f"{where}: header size: {header_size} bytes is not a valid .fcsr header size (the header "
                         "is damaged)")
    if len(head) < header_size:
        raise ValueError(f"{where}: truncated: the file has {file_size} bytes, its header alone {header_size}")
    stored_crc = _CRC.unpack_from(head, header_size - _CRC.size)[0]
    if zlib.crc32(bytes(head[:header_size - _CRC.size])) != stored_crc:
        raise ValueError(f"{where}: header checksum mismatch (CRC-32 of the header bytes differs from the one "
                         "stored): the header is damaged")
    if version != VERSION:
        raise ValueError(f"{where}: format version {version} is not supported: this fastcon ({__version__}) reads "
                         f"version {VERSION} (written by a newer fastcon?)")
    if header_size != HEADER_SIZE:
        raise ValueError(f"{where}: header size: {header_size} bytes, version {VERSION} has {HEADER_SIZE}")
    _, _, _, n_rows, n_cols, nnz, layout, task, flags, alignment = _FIXED.unpack_from(head, 0)
    if layout >= len(LAYOUTS):
        raise ValueError(f"{where}: layout: unknown code {layout} (0 CSR, 1 dense)")
    if task not in TASKS:
        raise ValueError(f"{where}: task: unknown code {task} (1 binary, 2 multiclass)")
    if flags & ~FLAG_BINARY_VALUES:
        raise ValueError(f"{where}: flags: unknown bits {flags & ~FLAG_BINARY_VALUES:#x} (written by a newer "
                         "fastcon?)")
    if alignment != ALIGNMENT:
        raise ValueError(f"{where}: alignment: {alignment}, version {VERSION} aligns sections to {ALIGNMENT} bytes")
    for field, value in (("n_rows", n_rows), ("n_cols", n_cols), ("nnz", nnz)):
        if value > _MAX_COUNT:   # scipy and numpy index with int64; a fit allocates 8 bytes per column
            raise ValueError(f"{where}: {field}: {value} is beyond {_MAX_COUNT} (2**62)")
    layout, task = LAYOUTS[layout], TASKS[task]
    sections = {}
    for k, name in enumerate(SECTIONS):
        raw_dtype, offset, count, digest = _ENTRY.unpack_from(head, _FIXED.size + k * _ENTRY.size)
        if raw_dtype == bytes(4):
            if offset or count:
                raise ValueError(f"{where}: {name}: absent (no dtype) but has offset {offset} and {count} items")
            continue
        dtype = raw_dtype.rstrip(b"\0").decode("ascii", "replace")
        if dtype not in _DTYPES[name]:
            raise ValueError(f"{where}: {name}: dtype {dtype!r} is not allowed (expected "
                             f"{' or '.join(_DTYPES[name])})")
        end = offset + count * np.dtype(dtype).itemsize
        if offset % ALIGNMENT or offset < header_size:
            raise ValueError(f"{where}: {name}: offset {offset} is not a multiple of {ALIGNMENT} past the header")
        if end > file_size:
            raise ValueError(f"{where}: {name}: its {count} items end at byte {end}, beyond the end of the file "
                             f"({file_size} bytes): the file is truncated")
        sections[name] = (dtype, offset, count, digest)
    _check_counts(where, sections, n_rows, n_cols, nnz, layout, task)
    return FcsrHeader(n_rows, n_cols, nnz, layout, task, bool(flags & FLAG_BINARY_VALUES), sections, file_size)


def _check_counts(where, sections, n_rows, n_cols, nnz, layout, task):
    """Every section a layout needs is present with the number of items the shape implies."""
    expected = {"y": n_rows, "groups": n_rows, "sample_weight": n_rows}
    if layout == "csr":
        expected.update(indptr=n_rows + 1, indices=nnz, data=nnz)
        for name in ("indptr", "indices", "data"):
            if name not in sections:
                raise ValueError(f"{where}: {name}: missing (a CSR layout needs indptr, indices and data)")
        if sections["indptr"][0] != sections["indices"][0]:
            raise ValueError(f"{where}: indices: dtype {sections['indices'][0]} differs from indptr's "
                             f"{sections['indptr'][0]} (one index dtype, as SciPy stores them)")
        want = index_dtype(n_rows, n_cols, nnz).str
        if sections["indptr"][0] != want:
            raise ValueError(f"{where}: indptr: dtype {sections['indptr'][0]}, but a {n_rows} x {n_cols} matrix "
                             f"with {nnz} entries is stored with {want} indices")
    else:
        for name in ("indptr", "indices"):
            if name in sections:
                raise ValueError(f"{where}: {name}: present in a dense layout")
        if "data" not in sections:
            raise ValueError(f"{where}: data: missing")
        if nnz != n_rows * n_cols:
            raise ValueError(f"{where}: nnz: {nnz}, a dense {n_rows} x {n_cols} layout stores {n_rows * n_cols}")
        expected["data"] = nnz
    if "y" not in sections:
        raise ValueError(f"{where}: y: missing (every .fcsr file holds the labels)")
    if sections["y"][0] != ("<f8" if task == "binary" else "<i8"):
        raise ValueError(f"{where}: y: dtype {sections['y'][0]} does not fit the task {task!r} (binary labels are "
                         "float64, multi-class ids int64)")
    for name, count in expected.items():
        if name in sections and sections[name][2] != count:
            raise ValueError(f"{where}: {name}: has {sections[name][2]} items, expected {count} for a "
                             f"{n_rows} x {n_cols} {layout} layout with {nnz} entries")


def read_fcsr_header(path) -> FcsrHeader:
    """Read and check the header of the ``.fcsr`` file at ``path`` (not its sections).

    Raises
    ------
    ValueError
        A file that is not a ``.fcsr`` file, is truncated, or has a damaged or inconsistent header;
        the message starts with the path and names the field.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        return _decode_header(_head(lambda n: (fh.seek(0), fh.read(n))[1], size), size, os.fspath(path))


def _head(read, size) -> bytes:
    """The header bytes: ``read(n)`` gives the first n bytes of a file of ``size`` bytes; the header's own
    size field (bytes 12-15) says how many, within limits (a damaged field is caught by the checksum)."""
    head = read(min(HEADER_SIZE, size))
    if len(head) >= 16:
        wanted = struct.unpack_from("<I", head, 12)[0]
        if HEADER_SIZE < wanted <= min(_MAX_HEADER, size):
            head = read(wanted)
    return bytes(head)


def is_fcsr(path) -> bool:
    """True when ``path`` is a file that starts with the ``.fcsr`` magic bytes."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except (OSError, TypeError, ValueError):
        return False


# ------------------------------------------------------------------------------- writing
class FcsrWriter:
    """Write a ``.fcsr`` file section by section, then its header; the file appears complete or not at all.

    The sections go to a temporary file in the target's folder; :meth:`finish` writes the header,
    syncs the file to disk and renames it over ``path``. Leaving the ``with`` block without
    :meth:`finish` (an error, Ctrl-C) deletes the temporary file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (replaced if it exists).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, self._tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(self.path)}.", suffix=".part")
        self._fh = os.fdopen(fd, "wb")
        self._fh.write(bytes(HEADER_SIZE))
        self._pos = HEADER_SIZE
        self._open = None
        self.sections = {}

    def add(self, name, blocks, dtype):
        """Append section ``name`` from an iterable of 1-D arrays, each cast to ``dtype`` (little-endian).

        The bytes are hashed as they are written; returns the number of items.
        """
        self.begin(name, dtype)
        for block in blocks:
            self.write(block)
        return self.end()

    def begin(self, name, dtype):
        """Start section ``name`` (on the next multiple of `ALIGNMENT`): `write` appends to it, `end` closes it.

        One section is open at a time; the streaming converter keeps ``data`` open while it parses.
        """
        if name not in SECTIONS or name in self.sections or self._open is not None:
            raise ValueError(f"section: {name!r} is not a section name, was written already, or another "
                             "section is open")
        dtype = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).itemsize > 1 else np.dtype(dtype)
        pad = -self._pos % ALIGNMENT
        self._fh.write(bytes(pad))
        self._pos += pad
        self._open = (name, dtype, self._pos, [0], hashlib.sha256())

    def write(self, block):
        """Append the 1-D ``block`` (cast to the open section's dtype) to the open section, hashing it."""
        _, dtype, _, count, digest = self._open
        block = np.ascontiguousarray(block, dtype=dtype).reshape(-1)
        view = memoryview(block).cast("B")
        digest.update(view)
        self._fh.write(view)
        count[0] += block.shape[0]
        self._pos += block.nbytes

    def end(self):
        """Close the open section; returns its number of items."""
        name, dtype, offset, count, digest = self._open
        self.sections[name] = (dtype.str, offset, count[0], digest.digest())
        self._open = None
        return count[0]

    def finish(self, n_rows, n_cols, nnz, layout, task, binary_values=False):
        """Write the header, sync, and move the file to ``path``; returns its size in bytes."""
        if self._open is not None:
            raise ValueError(f"section: {self._open[0]!r} is still open")
        header = _pack_header(int(n_rows), int(n_cols), int(nnz), layout, task,
                              FLAG_BINARY_VALUES if binary_values else 0, self.sections)
        _decode_header(header, self._pos, self.path)   # what a reader will check, before the rename
        self._fh.seek(0)
        self._fh.write(header)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.chmod(self._tmp, 0o644)   # mkstemp makes it private; a data file is meant to be shared
        os.replace(self._tmp, self.path)
        self._tmp = None
        return self._pos

    def abort(self):
        """Close and delete the temporary file (nothing is written at ``path``)."""
        if not self._fh.closed:
            self._fh.close()
        if self._tmp is not None and os.path.exists(self._tmp):
            os.unlink(self._tmp)
        self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.abort()


def _meta_bytes(name, group_names, feature_names, label_values) -> np.ndarray:
    labels = None
    if label_values is not None:
        label_values = np.asarray(label_values)
        labels = {"dtype": label_values.dtype.str, "values": label_values.tolist()}
    meta = {"name": name, "group_names": group_names, "feature_names": feature_names, "label_values": labels,
            "written_by": f"fastcon {__version__}"}
    return np.frombuffer(json.dumps(meta, allow_nan=False).encode("utf-8"), dtype=np.uint8)


def write_fcsr(dataset_or_X, path, y=None, *, groups=None, group_names=None, sample_weight=None, name=None,
               feature_names=None, task=None):
    """Write a dataset to a ``.fcsr`` file that :func:`read_fcsr` memory-maps.

    Parameters
    ----------
    dataset_or_X : Dataset, scipy.sparse matrix or 2-D array
        A `Dataset` is written as it is (then ``y`` and the other fields must be None). A matrix is
        first validated into one (`Dataset` with ``copy=False``: sparse input is stored as
        canonical CSR, dense input as dense).
    path : str or os.PathLike
        The output file, replaced atomically (written beside it, then renamed).
    y, groups, group_names, sample_weight, name, feature_names, task
        With a matrix: the `Dataset` fields (``y`` required).

    Returns
    -------
    int
        Size of the file in bytes.

    Notes
    -----
    Index dtype: int32 unless a size reaches 2**31 (`index_dtype`); values float64. The flag
    "every value is 1.0" is set when it holds. See the module docstring for the layout.
    """
    fields = {"groups": groups, "group_names": group_names, "sample_weight": sample_weight, "name": name,
              "feature_names": feature_names, "task": task}
    if isinstance(dataset_or_X, Dataset):
        given = [k for k, v in {"y": y, **fields}.items() if v is not None]
        if given:
            raise ValueError(f"{given[0]}: must be None when a Dataset is given (its own fields are written)")
        ds = dataset_or_X
    else:
        if y is None:
            raise ValueError("y: labels are required when writing a matrix")
        if isinstance(y, (str, os.PathLike)):
            raise TypeError("write_fcsr(X, path, y): the path comes before the labels")
        fields["name"] = "" if name is None else name
        ds = Dataset(dataset_or_X, y, copy=False, **fields)
    n_rows, n_cols = ds.shape
    with FcsrWriter(path) as out:
        if ds.is_sparse:
            X = ds.X
            nnz = int(X.indptr[-1])
            idx = index_dtype(n_rows, n_cols, nnz)
            out.add("indptr", _blocks(X.indptr), idx)
            out.add("indices", _blocks(X.indices[:nnz]), idx)
            out.add("data", _blocks(X.data[:nnz]), np.float64)
        else:
            nnz = n_rows * n_cols
            out.add("data", _blocks(ds.X.reshape(-1)), np.float64)
        out.add("y", _blocks(ds.y), np.float64 if ds.task == "binary" else np.int64)
        if ds.groups is not None:
            out.add("groups", _blocks(ds.groups), np.int64)
        if ds.sample_weight is not None:
            out.add("sample_weight", _blocks(ds.sample_weight), np.float64)
        out.add("meta", [_meta_bytes(ds.name, ds.group_names, ds.feature_names, ds.label_values)], np.uint8)
        return out.finish(n_rows, n_cols, nnz, "csr" if ds.is_sparse else "dense", ds.task,
                          binary_values=ds.is_sparse and ds.is_binary_features)


# ------------------------------------------------------------------------------- reading
def _verify(buf, header, where):
    """Every section against its sha256, and every other byte: the padding is zeros and the file ends
    with its last section (the header is under its own checksum), so no byte goes unchecked."""
    end = HEADER_SIZE
    for name, (dtype, offset, count, _) in sorted(header.sections.items(), key=lambda item: item[1][1]):
        if offset < end:
            raise ValueError(f"{where}: {name}: starts at byte {offset}, inside the previous section or the header")
        if np.any(buf[end:offset]):
            raise ValueError(f"{where}: {name}: the padding before it (bytes {end}-{offset}) is not zero: the file "
                             "is damaged")
        end = offset + count * np.dtype(dtype).itemsize
    if buf.shape[0] != end:
        raise ValueError(f"{where}: {buf.shape[0] - end} bytes after the last section: the file is damaged")
    for name, (dtype, offset, count, digest) in header.sections.items():
        h = hashlib.sha256()
        end = offset + count * np.dtype(dtype).itemsize
        for start in range(offset, end, BLOCK_BYTES):
            h.update(buf[start:min(start + BLOCK_BYTES, end)])
        if h.digest() != digest:
            raise ValueError(f"{where}: {name}: checksum mismatch (sha256 of its {end - offset} bytes at offset "
                             f"{offset} is {h.hexdigest()[:16]}..., the header says {digest.hex()[:16]}...): the "
                             "file is damaged")


def _label_values(meta, where):
    labels = meta.get("label_values")
    if labels is None:
        return None
    try:
        dtype = np.dtype(labels["dtype"])
        values = labels["values"]
        # numbers only, at most two per class: a string dtype from the file could ask for any size
        if dtype.kind not in "biuf" or not isinstance(values, list) or len(values) > 2 ** 20:
            raise ValueError(f"expected a list of numeric labels, got dtype {dtype.str!r}")
        return np.array(values, dtype=dtype)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: meta.label_values: cannot be read ({exc})") from None


def read_fcsr(path, mmap=True, verify=False) -> Dataset:
    """Read a ``.fcsr`` file as a `Dataset`, its arrays memory-mapped (no copy, no parse).

    Parameters
    ----------
    path : str or os.PathLike
    mmap : bool, default True
        Map the file read-only: ``X``'s arrays (and ``y``, ``groups``, ``sample_weight``) are views
        of one `numpy.memmap` of the file (``np.shares_memory(ds.X.data, memmap)``), and writing
        to them raises. With False the file is read into memory once (writable arrays).
    verify : bool, default False
        Check every section against its sha256 (one read of the whole file, ~1.8 GB/s). Without
        it the header's checksum and the structure (`Dataset`'s checks of ``indptr`` and every
        column index, finite values, label set) are still checked.

    Returns
    -------
    Dataset
        ``X`` a `scipy.sparse.csr_matrix` (int32 indices unless a size reaches 2**31, float64 values),
        or a C-ordered dense float64 array; ``y``, ``groups``, ``group_names``, ``sample_weight``,
        ``name``, ``feature_names``, ``task`` and ``label_values`` as written.

    Raises
    ------
    ValueError
        The message starts with the path and names what is wrong: not a ``.fcsr`` file (bad magic),
        an unsupported version, a damaged header (checksum), a section beyond the end of the file
        (truncated), counts or dtypes that do not fit the shape, a checksum mismatch (with
        ``verify``), a column index out of range or an unsorted row.
    FileNotFoundError
        No file at ``path``.

    Notes
    -----
    Building the `Dataset` reads the index arrays once (structure checks) and sums the values once
    (finite check), without allocating anything the size of X: pages come from the file as the
    passes need them. An estimator's ``fit(ds.X, ds.y, ...)`` reads them through the same views.
    """
    where = os.fspath(path)
    size = os.path.getsize(path)
    if size == 0:
        raise ValueError(f"{where}: empty file (a .fcsr file starts with a {HEADER_SIZE}-byte header)")
    buf = np.memmap(path, dtype=np.uint8, mode="r") if mmap else np.fromfile(path, dtype=np.uint8)
    header = _decode_header(_head(lambda n: buf[:n], buf.shape[0]), buf.shape[0], where)
    if verify:
        _verify(buf, header, where)
    arrays = {}
    for name, (dtype, offset, count, _) in header.sections.items():
        arrays[name] = buf[offset:offset + count * np.dtype(dtype).itemsize].view(dtype)
    try:
        meta = json.loads(bytes(arrays["meta"]).decode("utf-8")) if "meta" in arrays else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{where}: meta: not valid UTF-8 JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: meta: expected a JSON object, got {type(meta).__name__}")
    n_rows, n_cols = header.n_rows, header.n_cols
    if header.layout == "csr":
        indptr, indices, data = arrays["indptr"], arrays["indices"], arrays["data"]
        if indptr[0] != 0 or indptr[-1] != header.nnz:
            raise ValueError(f"{where}: indptr: runs from {indptr[0]} to {indptr[-1]}, expected 0 to nnz = "
                             f"{header.nnz}")
        X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols), copy=False)
    else:
        X = arrays["data"].reshape(n_rows, n_cols)
    name = meta.get("name")
    try:
        if header.layout == "csr":
            from ._dataset import check_sparse_structure

            check_sparse_structure(X)   # before SciPy's canonical-format scan reads through indices
            if not X.has_canonical_format:
                raise ValueError("X.indices: not sorted and distinct within every row (a .fcsr file stores a "
                                 "canonical CSR): the file is damaged")
        ds = Dataset(X, arrays["y"], groups=arrays.get("groups"), group_names=meta.get("group_names"),
                     sample_weight=arrays.get("sample_weight"),
                     name=os.path.splitext(os.path.basename(where))[0] if name is None else name,
                     feature_names=meta.get("feature_names"), task=header.task, copy=False)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    label_values = _label_values(meta, where)
    if label_values is not None:
        ds.label_values = label_values
    # The header's "every value is 1" flag is not trusted: a CRC-32 only catches accidents, and a
    # wrong flag would make every product skip the values. Dataset scans data for it (stopping at
    # the first value that is not 1).
    return ds
