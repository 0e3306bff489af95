"""Hostile model archives for the persistence tests (tests/test_persist_hardening.py for the linear
estimators, tests/test_boosting_persist_sensitive.py for the boosted ones).

The archives are written byte by byte (`write_zip`), so that a 3 MB file can declare an entry of
3 GB without a test ever holding 3 GB. Memory is measured with `tracemalloc` (NumPy reports its
buffers to it, and the bytes zipfile returns are Python objects); no wall-clock time is asserted.
`header_mutations` gives randomly damaged copies of a saved JSON header (huge, negative,
wrong-typed or deleted values, deep nesting) for the loaders' fuzz tests.
"""
import copy
import io
import random
import struct
import tracemalloc
import zlib

import numpy as np

#: Uncompressed size of the bomb entries: 3000 MiB of zeros after a short prefix.
BOMB_ZEROS = 3000 << 20
#: Peak traced memory allowed while loading (the legitimate entries are at most a few tens of kB).
PEAK_LIMIT = 64 << 20


def bomb(prefix, zeros=BOMB_ZEROS):
    """(raw deflate stream, CRC-32, uncompressed size) of ``prefix`` followed by ``zeros`` zero bytes (MiB multiple).

    One compressed MiB of zeros ended by a full flush (byte-aligned, independent of what precedes
    it), repeated: about 1 kB per MiB, so 3 MB for 3000 MiB.
    """
    mib = bytes(1 << 20)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = squeeze.compress(prefix) + squeeze.flush(zlib.Z_FULL_FLUSH)
    segment = squeeze.compress(mib) + squeeze.flush(zlib.Z_FULL_FLUSH)
    end = squeeze.flush()
    crc = zlib.crc32(prefix)
    for _ in range(zeros >> 20):
        crc = zlib.crc32(mib, crc)
    return first + segment * (zeros >> 20) + end, crc, len(prefix) + zeros


def npy_bomb():
    """A uint8 .npy array of `BOMB_ZEROS` zeros, its header and size consistent (only its size is hostile)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False, "shape": (BOMB_ZEROS,)})
    return bomb(header.getvalue())


def npy_bytes(array, allow_pickle=False) -> bytes:
    """``array`` as the bytes of a .npy file."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def write_zip(path, entries):
    """Write a zip archive by hand. ``entries``: (name, data) stored as is, or (name, (deflated, crc, size))."""
    central, offset = [], 0
    with open(path, "wb") as fh:
        for name, data in entries:
            raw_name = name.encode()
            if isinstance(data, bytes):
                method, payload, crc, size = 0, data, zlib.crc32(data), len(data)
            else:
                method, (payload, crc, size) = 8, data
            fields = (20, 0, method, 0, 0x21, crc, len(payload), size, len(raw_name), 0)
            fh.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + raw_name)
            fh.write(payload)
            central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *fields, 0, 0, 0, 0, offset) + raw_name)
            offset += 30 + len(raw_name) + len(payload)
        directory = b"".join(central)
        fh.write(directory)
        fh.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), len(directory), offset, 0))


def load_traced(load, path):
    """``load(path)`` and the ValueError it raised (or None), asserting the peak memory traced while it ran."""
    tracemalloc.start()
    try:
        return load(path), None
    except ValueError as exc:
        return None, exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < PEAK_LIMIT, f"loading traced {peak:,} bytes"


#: The replacements `header_mutations` draws from (``"delete"`` removes the key or list item).
MUTATIONS = {
    "huge integer": lambda rng: 10 ** 400,
    "infinity": lambda rng: float("inf"),            # json.dumps writes Infinity, json.loads reads it back
    "negative": lambda rng: rng.choice([-1, -(10 ** 30), -1.5]),
    "string": lambda rng: rng.choice(["", "x", "__array__", "a0"]),
    "nested list": lambda rng: [[[[1]]]],
    "deep nesting": lambda rng: _nested(rng.choice([100, 600])),   # 600: Python's recursion gave out
    "null": lambda rng: None,
    "bool": lambda rng: True,
    "delete": None,
}


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def _slots(value, path=()):
    """Every (path, container key) of a decoded JSON ``value``, depth first."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield path + (key,)
        yield from _slots(child, path + (key,))


def header_mutations(header, n, seed=0):
    """``n`` copies of the decoded JSON ``header``, each with one value replaced or deleted: (description, header)."""
    rng = random.Random(seed)
    slots = list(_slots(header))
    for _ in range(n):
        path = rng.choice(slots)
        kind = rng.choice(sorted(MUTATIONS))
        mutated = copy.deepcopy(header)
        parent = mutated
        for key in path[:-1]:
            parent = parent[key]
        if kind == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = MUTATIONS[kind](rng)
        yield f"{kind} at {'/'.join(map(str, path))}", mutated


def fuzz_header_loads(load, entries, header, target, with_header, n=200, seed=0):
    """Write ``n`` archives, each ``entries`` with one random edit of ``header``, and load each.

    ``with_header(entries, header)`` gives the archive's entries with that header. Returns
    ``(escaped, outcomes)``: the edits whose load raised anything but a ValueError starting with
    ``path: '<target>'``, and how many loaded and how many were rejected.
    """
    escaped, outcomes = [], {"loaded": 0, "rejected": 0}
    for description, mutated in header_mutations(header, n, seed=seed):
        write_zip(target, list(with_header(entries, mutated).items()))
        try:
            load(target)
            outcomes["loaded"] += 1
        except ValueError as exc:
            if not str(exc).startswith(f"path: {str(target)!r}"):
                escaped.append((description, f"ValueError without the path: {exc!s:.200}"))
            outcomes["rejected"] += 1
        except Exception as exc:   # noqa: BLE001 -- the point: nothing else escapes
            escaped.append((description, f"{type(exc).__name__}: {exc!s:.200}"))
    return escaped, outcomes
