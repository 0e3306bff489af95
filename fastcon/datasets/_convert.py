"""LIBSVM text to ``.fcsr`` in bounded memory: the file is parsed in chunks of lines.

`convert_libsvm` (and ``fastcon convert``) reads the text ``chunk_mb`` megabytes at a time, cut at
the last line end, and runs each chunk through the same Cython parser as `read_libsvm` (so the
same grammar, the same errors with the file's own line numbers, the same speed). The values go
straight into the output's ``data`` section (`FcsrWriter`); the other arrays are appended to spool
files beside the target (``indptr`` shifted by the entries before the chunk). Once the last line
is read, what only the whole file decides — zero- or one-based indices ("auto"), the number of
columns, the label encoding (binary or multi-class, as `load_libsvm` encodes it), the group ids of
``group_feature`` and the index dtype — is applied while the spools are copied into the output,
block by block, hashing each section.

Peak memory is set by the chunk, not the file: the text chunk (twice, while the next block is
joined to the carried partial line) and the parser's arrays for it (12 bytes per ``index:value``
pair, 16 per line), about 4 x ``chunk_mb`` for typical files; plus the distinct labels and group
values. On disk the spools take about a third of the output (4 bytes per entry, 16 per row) until
the output is complete. Timings: docs/measurements.md.
"""
from __future__ import annotations

import bz2
import errno
import gzip
import lzma
import os
import sys
import tempfile
import time
import zlib

import numpy as np

from ._fcsr import FcsrWriter, _meta_bytes, index_dtype
from ._libsvm import parse as _parse
from ._libsvm_io import (
    _MAGIC, _MODES, _error_message, _format_numbers, check_parse_options, encode_labels, label_encoding,
)

__all__ = ["convert_libsvm", "DEFAULT_CHUNK_MB"]

#: Default chunk of text parsed at once (megabytes): peak memory about four times this.
DEFAULT_CHUNK_MB = 64

_OPENERS = {"gzip": lambda f: gzip.GzipFile(fileobj=f), "bzip2": bz2.BZ2File, "xz": lzma.LZMAFile}
_STREAM_ERRORS = (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError)


class _Text:
    """The decompressed bytes of a LIBSVM file (plain, gzip, bzip2 or xz: sniffed from its first bytes)."""

    def __init__(self, path):
        self.name = os.fspath(path)
        self._raw = open(path, "rb")
        head = self._raw.read(6)
        self._raw.seek(0)
        self.kind = next((kind for magic, kind, _ in _MAGIC if head.startswith(magic)), None)
        self._stream = _OPENERS[self.kind](self._raw) if self.kind else self._raw
        self.size = os.fstat(self._raw.fileno()).st_size

    def read(self, n) -> bytes:
        try:
            return self._stream.read(n)
        except _STREAM_ERRORS as exc:
            raise ValueError(f"{self.name}: corrupt {self.kind or 'file'} data ({exc})") from None

    def position(self) -> int:
        """Bytes of the (possibly compressed) file consumed so far, for progress."""
        return self._raw.tell()

    def close(self):
        self._stream.close()
        self._raw.close()


def _line_chunks(text, chunk_bytes):
    """``(chunk, start)`` pieces of the text that end at a line end (the last one may not), and where
    each starts in the decompressed stream. A line longer than ``chunk_bytes`` makes its chunk longer.

    Chunks are memoryviews of the joined bytes (no copy); at most the carried partial line, one new
    block and their join are alive at once.
    """
    carry, start = b"", 0
    while True:
        block = text.read(chunk_bytes)
        if not block:
            if carry:
                yield memoryview(carry), start
            return
        buf = carry + block if carry else block
        del block, carry
        cut = buf.rfind(b"\n")
        if cut < 0:
            carry = buf
            continue
        yield memoryview(buf)[:cut + 1], start
        start += cut + 1
        carry = buf[cut + 1:]
        del buf


def _spool_blocks(path, dtype, block_items):
    """The array spooled to ``path``, in blocks of ``block_items``."""
    with open(path, "rb") as fh:
        while True:
            block = np.fromfile(fh, dtype=dtype, count=block_items)
            if block.size == 0:
                return
            yield block


class _Progress:
    """A tqdm bar over the input bytes when asked for and tqdm is installed (the ``progress`` extra); else silent."""

    def __init__(self, enabled, total, desc):
        self._bar = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, unit="B", unit_scale=True, desc=desc, file=sys.stderr, leave=False)

    def to(self, position):
        if self._bar is not None:
            self._bar.update(position - self._bar.n)

    def close(self):
        if self._bar is not None:
            self._bar.close()


def _column_values(indptr, indices, data, n_rows, nnz, column):
    """Value of ``column`` in each row of a parsed chunk (0 where the row does not store it)."""
    values = np.zeros(n_rows)
    at = np.flatnonzero(indices[:nnz] == column)
    if at.size:
        values[np.searchsorted(indptr[:n_rows + 1], at, side="right") - 1] = data[at]
    return values


def convert_libsvm(source, target, *, n_features=None, zero_based="auto", chunk_mb=DEFAULT_CHUNK_MB,
                   group_feature=None, name=None, progress=False) -> dict:
    """Convert a LIBSVM/svmlight file to a ``.fcsr`` file in memory bounded by ``chunk_mb``.

    Parameters
    ----------
    source : str or os.PathLike
        The LIBSVM file: plain, gzip, bzip2 or xz (detected from its first bytes).
    target : str or os.PathLike
        The ``.fcsr`` file to write (replaced atomically; spool files go to its folder meanwhile).
    n_features, zero_based
        As in `read_libsvm`: the number of columns (default: the largest index seen) and whether
        indices start at 0 (``"auto"``: when the smallest index in the file is 0).
    chunk_mb : float
        Megabytes of text parsed at once; peak memory is about four times this.
    group_feature : int, optional
        Column of X (0-based after a one-based file's shift) whose values are the sensitive
        groups, numbered in increasing order of the value and named by it, as
        ``load_libsvm(group_feature=...)`` does; the column stays a feature.
    name : str, optional
        Dataset name stored in the file; default the source's base name.
    progress : bool
        Show a progress bar on stderr (needs tqdm, the ``progress`` extra; silent without it).

    Returns
    -------
    dict
        ``n_rows``, ``n_cols``, ``nnz``, ``task``, ``n_classes``, ``index_dtype``,
        ``binary_values``, ``bytes`` (of the output), ``chunks``, ``seconds``.

    Raises
    ------
    ValueError
        Malformed input, as ``"<file> line <n>: <what>"`` with the line number in the whole file;
        non-integer labels; a ``group_feature`` that is not a column.

    Notes
    -----
    ``read_fcsr(target)`` equals ``load_libsvm(source, n_features=..., zero_based=...,
    group_feature=...)`` array for array, whatever ``chunk_mb``.
    """
    t0 = time.perf_counter()
    if (isinstance(source, (str, os.PathLike)) and os.path.exists(source) and os.path.exists(target)
            and os.path.samefile(source, target)):
        raise ValueError(f"target: {os.fspath(target)!r} is the source file; converting would replace it")
    n_features = check_parse_options(zero_based, n_features)
    if not (isinstance(chunk_mb, (int, float, np.integer, np.floating)) and not isinstance(chunk_mb, bool)
            and 0 < chunk_mb < 2 ** 20):
        raise ValueError(f"chunk_mb: expected a positive number of megabytes, got {chunk_mb!r}")
    if group_feature is not None and (isinstance(group_feature, (bool, np.bool_))
                                      or not isinstance(group_feature, (int, np.integer)) or group_feature < 0):
        raise ValueError(f"group_feature: expected a non-negative column index, got {group_feature!r}")
    chunk_bytes = max(1, int(chunk_mb * 2 ** 20))
    mode = _MODES[zero_based if isinstance(zero_based, str) else bool(zero_based)]
    source_name = os.fspath(source)
    if name is None:
        name = os.path.basename(source_name)
    folder = os.path.dirname(os.path.abspath(os.fspath(target)))
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, "the target's folder does not exist", folder)
    text = _Text(source)
    try:
        with tempfile.TemporaryDirectory(dir=folder, prefix=f".{os.path.basename(os.fspath(target))}.spool-") as tmp, \
                FcsrWriter(target) as out:
            parsed = _parse_chunks(text, tmp, out, chunk_bytes, mode, n_features, group_feature, progress)
            summary = _assemble(text, tmp, out, parsed, mode, n_features, group_feature, name, chunk_bytes)
    finally:
        text.close()
    summary["seconds"] = time.perf_counter() - t0
    return summary


def _parse_chunks(text, tmp, out, chunk_bytes, mode, n_features, group_feature, progress):
    """Parse every chunk: the values go straight into the output's ``data`` section (they need nothing
    the rest of the file decides), the other arrays to spool files in ``tmp``. Returns what the file told.

    Line numbers are not counted on the way (a chunk's first line number is counted by re-reading
    the text before it, only to name the line of an error).
    """
    spools = {k: open(os.path.join(tmp, k), "wb") for k in ("indptr", "indices", "labels")}
    # The group column's raw file index: j (zero-based, or shifted by the parser in mode 1), and in
    # "auto" mode also j + 1 (if the file turns out one-based); one spool each, one kept at the end.
    group_columns = [] if group_feature is None else ([group_feature, group_feature + 1] if mode == 2
                                                      else [group_feature])
    for column in group_columns:
        spools[f"group{column}"] = open(os.path.join(tmp, f"group{column}"), "wb")
    state = {"n_rows": 0, "nnz": 0, "chunks": 0, "min_index": None, "max_index": -1, "labels": np.empty(0),
             "group_values": {c: np.empty(0) for c in group_columns}, "binary_values": True, "ambiguous": None}
    bar = _Progress(progress, text.size, f"parsing {os.path.basename(text.name)}")
    out.begin("data", np.float64)
    try:
        for buf, start in _line_chunks(text, chunk_bytes):
            error, labels, indptr, indices, data, n_rows, nnz, min_index, max_index = _parse(
                buf, mode, -1 if n_features is None or mode == 2 else n_features)
            if error is not None:
                line_base = _lines_before(text.name, start)
                raise ValueError(_error_message(buf, text.name, (error[0], error[1] + line_base, *error[2:])))
            if nnz and mode == 2 and n_features is not None and max_index >= n_features:
                _check_auto_range(text, buf, state, n_features, start, min_index, max_index)
            for column in group_columns:
                values = _column_values(indptr, indices, data, n_rows, nnz, column)
                values.tofile(spools[f"group{column}"])
                state["group_values"][column] = np.union1d(state["group_values"][column], values)
            indptr[1:n_rows + 1] += state["nnz"]
            indptr[1:n_rows + 1].tofile(spools["indptr"])
            indices[:nnz].tofile(spools["indices"])
            out.write(data[:nnz])
            labels[:n_rows].tofile(spools["labels"])
            state["labels"] = np.union1d(state["labels"], labels[:n_rows])
            if state["binary_values"] and nnz:
                state["binary_values"] = bool(np.all(data[:nnz] == 1.0))
            if nnz:
                state["min_index"] = min_index if state["min_index"] is None else min(state["min_index"], min_index)
                state["max_index"] = max(state["max_index"], max_index)
            state["n_rows"] += n_rows
            state["nnz"] += nnz
            state["chunks"] += 1
            del labels, indptr, indices, data, buf
            bar.to(text.position())
    finally:
        bar.close()
        for fh in spools.values():
            fh.close()
    out.end()
    return state


def _lines_before(name, start) -> int:
    """Line ends in the first ``start`` bytes of the (decompressed) text: the line number a chunk starts after."""
    again, lines = _Text(name), 0
    try:
        while start > 0:
            block = again.read(min(start, 1 << 24))
            if not block:   # pragma: no cover - the file shrank meanwhile
                break
            lines += block.count(b"\n")
            start -= len(block)
    finally:
        again.close()
    return lines


def _check_auto_range(text, buf, state, n_features, start, min_index, max_index):
    """In "auto" mode the parser cannot check ``n_features`` (the base is not known yet). A raw index
    above ``n_features`` is out of range either way, one equal to it only in a zero-based file: raise
    naming the first line that is out of range for sure, else remember the first chunk that has one
    (`_assemble` names its line if the file turns out zero-based)."""
    zero_based = min_index == 0 or state["min_index"] == 0
    if state["ambiguous"] is None:
        if max_index > n_features or zero_based:
            _raise_parse_error(buf, text.name, 0 if zero_based else 1, n_features, start)
        state["ambiguous"] = (start, buf.nbytes)
    elif zero_based:
        _locate_out_of_range(text, state, n_features)
    elif max_index > n_features:
        _raise_parse_error(buf, text.name, 1, n_features, start)


def _raise_parse_error(buf, name, mode, n_features, start):
    """Parse the chunk ``buf`` (at byte ``start`` of the text) knowing the base, and raise the parser's
    error with its line numbered in the whole file."""
    error = _parse(buf, mode, n_features)[0]
    if error is None:   # pragma: no cover - the raw indices said there is one
        raise ValueError(f"{name}: a feature index is out of range for n_features={n_features}")
    line = error[1] + _lines_before(name, start)
    raise ValueError(_error_message(buf, name, (error[0], line, *error[2:])))


def _locate_out_of_range(text, state, n_features):
    """The file is zero-based and an earlier chunk has a raw index equal to ``n_features``: re-read
    that chunk (the text is not kept) and raise naming the line."""
    start, length = state["ambiguous"]
    again = _Text(text.name)
    try:
        skip = start
        while skip:
            skipped = len(again.read(min(skip, 1 << 24)))
            if not skipped:   # pragma: no cover - the file shrank meanwhile
                break
            skip -= skipped
        buf = memoryview(again.read(length))
    finally:
        again.close()
    _raise_parse_error(buf, text.name, 0, n_features, start)


def _assemble(text, tmp, out, state, mode, n_features, group_feature, name, chunk_bytes):
    """Decide what needed the whole file, then copy the spools into the output and finish it."""
    nnz, n_rows = state["nnz"], state["n_rows"]
    shift = 0
    max_column = state["max_index"]
    if mode == 2 and nnz:
        shift = int(state["min_index"] > 0)
        max_column -= shift
        if n_features is not None and max_column >= n_features:
            _locate_out_of_range(text, state, n_features)
    elif mode == 1:
        max_column -= 1
    n_cols = n_features if n_features is not None else (max_column + 1 if nnz else 0)
    task, label_values = label_encoding(state["labels"], name)
    group_column = None
    if group_feature is not None:
        if not group_feature < n_cols:
            raise ValueError(f"group_feature: column {group_feature} out of range [0, {n_cols}) (0-based column of X)")
        group_column = group_feature + shift if mode == 2 else group_feature
        group_values = state["group_values"][group_column]
    idx = index_dtype(n_rows, n_cols, nnz)
    block = max(1, chunk_bytes // 8)

    def spool(key, dtype):
        return _spool_blocks(os.path.join(tmp, key), dtype, block)

    out.add("indptr", _with_zero(spool("indptr", np.int64)), idx)
    out.add("indices", (b - shift if shift else b for b in spool("indices", np.int32)), idx)
    out.add("y", (encode_labels(b, task, label_values) for b in spool("labels", np.float64)),
            np.float64 if task == "binary" else np.int64)
    group_names = None
    if group_column is not None:
        out.add("groups", (np.searchsorted(group_values, b) for b in spool(f"group{group_column}", np.float64)),
                np.int64)
        group_names = _format_numbers(group_values)
    out.add("meta", [_meta_bytes(name, group_names, None, label_values)], np.uint8)
    size = out.finish(n_rows, n_cols, nnz, "csr", task, binary_values=state["binary_values"])
    return {"n_rows": n_rows, "n_cols": n_cols, "nnz": nnz, "task": task,
            "n_classes": int(label_values.size) if task == "multiclass" else 2, "index_dtype": idx.name,
            "binary_values": state["binary_values"], "bytes": size, "chunks": state["chunks"]}


def _with_zero(blocks):
    """``indptr``'s leading 0, then the spooled row ends."""
    yield np.zeros(1, dtype=np.int64)
    yield from blocks
