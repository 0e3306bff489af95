r"""`DaskDesign`: the `DesignMatrix` interface over a row-partitioned `dask.array` held by `dask.distributed` workers.

A full pass is a map over row blocks and a reduction (ARCHITECTURE.md §10): each chunk of the dask
array is validated and made a `DesignMatrix` on its worker once, and every product runs fastcon's
kernels there. ``matvec`` scatters ``w`` and gathers the scores; ``rmatvec`` scatters the row
coefficients and sums the workers' d-vectors pairwise. X stays on the workers; the scores and
coefficients (:math:`O(n)`) live on the client, so every term above the products runs unchanged.
``rmatvec`` agrees with `DesignMatrix` to round-off, ``matvec`` exactly.
Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import asyncio
from collections import OrderedDict

import numpy as np
import scipy.sparse as sp

from ._design import DesignMatrix

__all__ = ["DaskDesign", "DistributedDataset", "is_dask_collection", "check_dask_features"]

#: Row-subset layouts kept per design (a fit uses a few: training, validation, calibration rows).
_LAYOUT_CACHE = 8


def is_dask_collection(X) -> bool:
    """Whether ``X`` is a dask collection (array, DataFrame, ..., or a subclass), without importing dask
    when no class of ``X`` comes from it."""
    if not any((getattr(c, "__module__", None) or "").split(".")[0] in ("dask", "dask_expr")
               for c in type(X).__mro__):
        return False
    from dask import is_dask_collection as is_collection

    return bool(is_collection(X))


def check_dask_features(X, field="X"):
    """``X`` checked to be a 2-D `dask.array` with known row chunks and a single column chunk."""
    import dask.array as da

    if not isinstance(X, da.Array):
        raise ValueError(f"{field}: a {type(X).__name__} (dask collection); fastcon takes a dask.array with "
                         "one column chunk (a dask DataFrame: X.to_dask_array(lengths=True))")
    if X.ndim != 2:
        raise ValueError(f"{field}: expected a 2-D dask array, got {X.ndim} dimension(s)")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(f"{field}: the dask array's row chunk sizes are unknown; call X.compute_chunk_sizes() "
                         "(or to_dask_array(lengths=True)) first")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"{field}: the dask array has {len(X.chunks[1])} column chunks; fastcon's passes need "
                         "whole rows in each block: X.rechunk({1: -1}) (one column chunk, rows split as you like)")
    if np.dtype(X.dtype).kind not in "biuf":
        raise ValueError(f"{field}: values must be real numbers, got dtype {X.dtype}")
    return X


# --------------------------------------------------------------------------- worker side
# Module-level functions: workers in other processes import them by name.

def _prepare_block(block, index, start):
    """On a worker: block ``index`` of X validated and stored as an in-memory fit stores X, as a `DesignMatrix`.

    The same `fastcon.Dataset` checks (float64, finite, canonical CSR with sorted indices, or
    C-contiguous dense) and `fast_storage` (a mostly-zero dense block is kept as CSR). The labels
    of this Dataset are placeholders: a design reads only X.
    """
    from ..datasets import Dataset
    from ..datasets._storage import fast_storage

    if sp.issparse(block) and block.format != "csr":
        block = block.tocsr()
    try:
        X = Dataset(block, np.ones(block.shape[0]), copy=False, task="binary").X
        dataset = Dataset(fast_storage(X), np.ones(X.shape[0]), copy=False, task="binary")
    except ValueError as exc:
        raise ValueError(f"X: block {index} (rows {start}..{start + block.shape[0] - 1}): {exc}") from None
    return DesignMatrix(dataset)


def _block_info(design):
    """``(rows, stored entries, max |entry|)`` of a prepared block."""
    if design.is_sparse:
        data = design._csr[2]
        if data is None:
            largest = 1.0 if design.nnz else 0.0
        else:
            largest = max(abs(float(data.max())), abs(float(data.min()))) if data.size else 0.0
    else:
        X = design._X
        largest = max(abs(float(X.max())), abs(float(X.min()))) if X.size else 0.0
    return int(design.n_rows), int(design.nnz), largest


def _worker_matvec(designs, rows, w):
    """Scores of a worker's blocks (rows of each, or all), concatenated in block order."""
    sizes = [d.n_rows if r is None else r.shape[0] for d, r in zip(designs, rows)]
    out = np.empty(int(sum(sizes)))
    at = 0
    for design, r, m in zip(designs, rows, sizes):
        design.matvec(w, out[at:at + m], r)
        at += m
    return out


def _worker_matvec2(designs, rows, x, x_prev):
    sizes = [d.n_rows if r is None else r.shape[0] for d, r in zip(designs, rows)]
    total = int(sum(sizes))
    out, out_prev = np.empty(total), np.empty(total)
    at = 0
    for design, r, m in zip(designs, rows, sizes):
        design.matvec2(x, x_prev, out[at:at + m], out_prev[at:at + m], r)
        at += m
    return out, out_prev


def _worker_column_sums(designs, rows, cs, n_features, product):
    r""":math:`\sum_b` of each block's ``product`` (``"rmatvec"``: :math:`X_b^\top c_b`;
    ``"weighted_column_squares"``: :math:`(X_b \circ X_b)^\top c_b`), one d-vector (the kernels accumulate)."""
    out = np.zeros(n_features)
    for design, r, c in zip(designs, rows, cs):
        getattr(design, product)(c, out, r)
    return out


def _worker_row_norms(designs):
    return np.concatenate([d.row_norms() for d in designs]) if designs else np.empty(0)


def _add(a, b):
    return a + b


# --------------------------------------------------------------------------- client side
class _Part:
    """One worker's share of a pass: its blocks, their local rows, and where their scores go in ``out``."""

    __slots__ = ("address", "designs", "rows", "places", "sizes")

    def __init__(self, address):
        self.address = address
        self.designs, self.rows, self.places, self.sizes = [], [], [], []


class DaskDesign:
    r"""`DesignMatrix`'s interface (``matvec``, ``matvec2``, ``rmatvec``, ``row_norms``) over a dask array on a cluster.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Row-partitioned (one column chunk, known row chunk sizes); chunks are numpy arrays or
        scipy sparse matrices (CSR, or converted to CSR on the worker). Each block is computed,
        validated and converted on a worker (`_prepare_block`) and kept there: X is never
        gathered to the client.
    client : distributed.Client, optional
        Default: the current client (`distributed.get_client`).

    Attributes
    ----------
    n_rows, n_features, nnz : int
    is_sparse : bool
        Whether X's chunks are sparse (dask's ``_meta``).
    largest_abs_entry : float
        :math:`\max |x_{ij}|` over X (computed on the workers once; used by convergence warnings).
    offsets : ndarray of int64
        First row of each block, then ``n_rows``.

    Notes
    -----
    The scores live on the client: every ``matvec`` gathers :math:`8m` bytes and every
    ``rmatvec`` scatters :math:`8m` bytes (``m`` rows visited), and both move :math:`8d` bytes
    per worker (module notes). Blocks are placed where dask computed them and looked up once;
    a task still runs if dask moves a block (it fetches it), only slower.
    """

    is_distributed = True
    #: Vectors up to this size (per worker) travel inside the tasks (through the scheduler, no extra
    #: round trip); larger ones are scattered first (one round trip, then worker-local).
    inline_bytes = 1 << 20

    def __init__(self, X, client=None):
        try:
            import dask
            from distributed import get_client, wait
        except ImportError as exc:  # pragma: no cover - dask.array given without distributed
            raise ImportError("a dask X needs dask.distributed (pip install 'dask[distributed]') and a "
                              "distributed.Client") from exc
        X = check_dask_features(X)
        if client is None:
            try:
                client = get_client()
            except ValueError:
                raise ValueError("X: a dask X needs a running distributed.Client (Client(LocalCluster()) or "
                                 "Client('scheduler-address')); fastcon's passes run as tasks on its workers") from None
        self.client = client
        self.n_rows, self.n_features = (int(s) for s in X.shape)
        self.is_sparse = sp.issparse(getattr(X, "_meta", None))
        sizes = np.asarray(X.chunks[0], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])
        blocks = X.to_delayed().ravel()
        prepare = dask.delayed(_prepare_block, pure=False)
        kept = [b for b in range(len(blocks)) if sizes[b] > 0]
        futures = client.compute([prepare(blocks[b], b, int(self.offsets[b])) for b in kept])
        wait(futures)
        failed = [f for f in futures if f.status == "error"]
        if failed:
            # a fresh error, and the prepared blocks released: re-raising the future's own exception
            # would keep its traceback, whose frames hold every future, and so the blocks on the workers
            error = failed[0].exception()
            message, kind = str(error), type(error) if isinstance(error, ValueError) else RuntimeError
            client.cancel(futures)
            del futures, failed, error
            raise kind(message) from None
        self._blocks = dict(zip(kept, futures))
        info = client.gather(client.map(_block_info, futures, pure=False))
        self.nnz = int(sum(i[1] for i in info))
        self.largest_abs_entry = max((i[2] for i in info), default=0.0)
        for b, (rows, _, _) in zip(kept, info):
            if rows != sizes[b]:
                raise ValueError(f"X: block {b} has {rows} rows, its chunk size says {sizes[b]}")
        who = client.who_has(futures)
        self._home = {b: who[f.key][0] for b, f in zip(kept, futures)}
        self.addresses = sorted(set(self._home.values()))
        self._layouts = OrderedDict()
        self._all_rows = self._layout(None)

    # ------------------------------------------------------------------ layout of a pass
    def _layout(self, rows):
        """The `_Part` of every worker for ``rows`` (None: all rows), cached by the identity of ``rows``.

        A row subset is cut by block once; each block's local row indices are scattered to its
        worker once and reused by every later pass over the same ``rows`` object (arrays passed
        as ``rows`` must not be modified afterwards, as for a `LinearScores`).
        """
        key = None if rows is None else id(rows)
        hit = self._layouts.get(key)
        if hit is not None and hit[0] is rows:
            self._layouts.move_to_end(key)
            return hit[1]
        parts = {a: _Part(a) for a in self.addresses}
        if rows is None:
            for b in sorted(self._blocks):
                part = parts[self._home[b]]
                lo, hi = int(self.offsets[b]), int(self.offsets[b + 1])
                part.designs.append(self._blocks[b])
                part.rows.append(None)
                part.places.append(slice(lo, hi))
                part.sizes.append(hi - lo)
        else:
            rows = np.asarray(rows)
            block_of = np.searchsorted(self.offsets, rows, side="right") - 1
            order = np.argsort(block_of, kind="stable")
            starts = np.searchsorted(block_of[order], np.arange(len(self.offsets)))
            for b in sorted(self._blocks):
                where = order[starts[b]:starts[b + 1]]
                if where.size == 0:
                    continue
                part = parts[self._home[b]]
                part.designs.append(self._blocks[b])
                part.rows.append((rows[where] - self.offsets[b]).astype(np.int64))
                part.places.append(where)
                part.sizes.append(where.size)
            for part in parts.values():
                if part.rows:
                    part.rows = self.client.scatter(part.rows, workers=[part.address], hash=False)
        layout = [p for p in parts.values() if p.designs]
        if rows is not None:
            self._layouts[key] = (rows, layout)
            while len(self._layouts) > _LAYOUT_CACHE:
                self._layouts.popitem(last=False)
        return layout

    def _submit(self, fn, part, *args):
        return self.client.submit(fn, part.designs, part.rows, *args, workers=[part.address],
                                  allow_other_workers=True, pure=False)

    def _broadcast(self, v):
        """``v`` for every worker's task: inline in the tasks when small, else scattered to all workers once.

        Always a private copy: the caller's vector (a view of the solver's iterate) may change
        after the call, and in-process workers would see the change.
        """
        v = np.array(v, dtype=np.float64)
        if v.nbytes <= self.inline_bytes:
            return v
        return self.client.scatter(v, broadcast=True, hash=False)

    def _send(self, layout, pieces):
        """Each part's list of arrays placed on its worker: inline when small, else one scatter per
        worker, all of them concurrent (one round trip, not one per worker)."""
        if sum(a.nbytes for p in pieces for a in p) <= self.inline_bytes * max(len(pieces), 1):
            return pieces
        client = self.client
        scatter = getattr(client, "_scatter", None)
        if scatter is None:             # pragma: no cover - another distributed: one public call per worker
            return [client.scatter(p, workers=[part.address], hash=False) for part, p in zip(layout, pieces)]

        async def all_parts():
            return await asyncio.gather(*[scatter(p, workers=[part.address], hash=False)
                                          for part, p in zip(layout, pieces)])

        return client.sync(all_parts)

    # ------------------------------------------------------------------ DesignMatrix interface
    def matvec(self, w, out, rows=None):
        """``out[j] = a_{rows[j]}^T w`` (all rows when ``rows`` is None), computed on the workers."""
        layout = self._all_rows if rows is None else self._layout(rows)
        wf = self._broadcast(w)
        futures = [self._submit(_worker_matvec, part, wf) for part in layout]
        for part, z in zip(layout, self.client.gather(futures)):
            at = 0
            for place, m in zip(part.places, part.sizes):
                out[place] = z[at:at + m]
                at += m
        return out

    def matvec2(self, x, x_prev, out, out_prev, rows=None):
        """Scores at two points in one read of each row, on the workers."""
        layout = self._all_rows if rows is None else self._layout(rows)
        xf, pf = self._broadcast(x), self._broadcast(x_prev)
        futures = [self._submit(_worker_matvec2, part, xf, pf) for part in layout]
        for part, (z, zp) in zip(layout, self.client.gather(futures)):
            at = 0
            for place, m in zip(part.places, part.sizes):
                out[place] = z[at:at + m]
                out_prev[place] = zp[at:at + m]
                at += m

    def rmatvec(self, c, out, rows=None):
        """``out += sum_j c[j] a_{rows[j]}``: per-worker sums on the workers, a pairwise tree, one d-vector back."""
        return self._column_reduce("rmatvec", c, out, rows)

    def weighted_column_squares(self, c, out, rows=None):
        """``out += sum_j c[j] a_{rows[j]}**2`` entrywise, reduced as :meth:`rmatvec` is (so its last bits,
        like :meth:`rmatvec`'s, depend on which worker holds which block: module notes)."""
        return self._column_reduce("weighted_column_squares", c, out, rows)

    def _column_reduce(self, product, c, out, rows):
        """``out +=`` the sum over workers of their blocks' ``product`` (`_worker_column_sums`), in a pairwise tree."""
        layout = self._all_rows if rows is None else self._layout(rows)
        c = np.asarray(c, dtype=np.float64)
        # copies: c may change after the call
        pieces = self._send(layout, [[np.array(c[place]) for place in part.places] for part in layout])
        partials = [(part.address, self._submit(_worker_column_sums, part, cf, self.n_features, product))
                    for part, cf in zip(layout, pieces)]
        while len(partials) > 1:
            paired = []
            for k in range(0, len(partials) - 1, 2):
                (home, a), (_, b) = partials[k], partials[k + 1]
                paired.append((home, self.client.submit(_add, a, b, workers=[home], allow_other_workers=True,
                                                        pure=False)))
            if len(partials) % 2:
                paired.append(partials[-1])
            partials = paired
        if partials:
            out += partials[0][1].result()
        return out

    def row_norms(self) -> np.ndarray:
        """Euclidean norm of every row, computed on the workers (n floats to the client)."""
        out = np.empty(self.n_rows)
        futures = [self.client.submit(_worker_row_norms, p.designs, workers=[p.address], pure=False)
                   for p in self._all_rows]
        for part, norms in zip(self._all_rows, self.client.gather(futures)):
            at = 0
            for place, m in zip(part.places, part.sizes):
                out[place] = norms[at:at + m]
                at += m
        return out

    @property
    def shape(self):
        return (self.n_rows, self.n_features)

    def dataset(self, y):
        """A `DistributedDataset` over this design with labels ``y`` (±1), for `LinearScores`."""
        return DistributedDataset(self, y)

    def __repr__(self):
        kind = f"CSR nnz={self.nnz}" if self.is_sparse else "dense"
        return (f"DaskDesign({self.n_rows} x {self.n_features} {kind}, {len(self._blocks)} blocks on "
                f"{len(self.addresses)} workers)")


class DistributedDataset:
    """What `LinearScores` and the estimators read of a `fastcon.Dataset`, for an X held by a `DaskDesign`.

    ``design`` is the pass object (`fastcon.problems._design.design_of` returns it instead of a
    `DesignMatrix`); the labels live on the client. There is no ``csr_arrays``: the arrays are on
    the workers.
    """

    def __init__(self, design, y):
        self.design = design
        self.X = design
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        if self.y.shape != (design.n_rows,):
            raise ValueError(f"y: has {self.y.shape[0]} labels but X has {design.n_rows} rows")
        self.groups = self.sample_weight = None
        self.task = "binary"

    shape = property(lambda self: self.design.shape)
    n_samples = property(lambda self: self.design.n_rows)
    n_features = property(lambda self: self.design.n_features)
    is_sparse = property(lambda self: self.design.is_sparse)

    @property
    def csr_arrays(self):
        raise ValueError("csr_arrays: X is held by dask workers (DaskDesign); its arrays are not on the client")

    def __len__(self):
        return self.n_samples
