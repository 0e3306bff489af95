r"""The boosted estimators on a Dask cluster: ABPP / CBPR over ``xgboost.dask`` / ``lightgbm.dask`` training segments.

`NeymanPearsonGBMClassifier` and `FairGBMClassifier` fit on a `dask.array` X held by the workers of
a `distributed.Client`; ``y`` and ``sensitive_features`` stay in memory. The solvers are the
in-memory `fastcon.solvers.abpp` and `fastcon.solvers.cbpr` (Lin & Deng [LD23], Algorithm 1, line 6;
CBPR's subproblem (4.2)); this module gives them a score model whose training scores live on the
workers (one prox step = one library training call continuing the same booster with fastcon's
objective) and score problems whose class and group sums are reduced there. X is never gathered.
Design notes: docs/design.md, 'Module notes'; measurements: docs/measurements.md.
"""
from __future__ import annotations

import threading
import uuid
import warnings
import weakref

import numpy as np
import scipy.sparse as sp

from .._kernels._boosting import logistic_losses, segment_sums, softmax_losses
from ..problems._score_models import loss_curvature
from ..problems._score_problems import GroupLossGap, NeymanPearsonScores
from ..solvers._validation import check_count, check_real
from ._backends import backend as _backend
from ._models import _average_weights, _check_own_state, _state_ensemble
from ._objective import ProxObjective
from ._validate import check_threads

__all__ = ["CodeWeights", "DaskBoostingState", "DaskBoostingScoreModel", "DaskNeymanPearsonScores",
           "DaskGroupLossGap", "fit_neyman_pearson", "fit_fair", "dask_features", "dask_ensemble_scores"]

#: Block indices travel as float32 labels: exact integers below 2**24.
MAX_BLOCKS = 2 ** 24


# =========================================================================== worker side
# Module-level names: worker processes import them by name. A store is keyed by (fit token, worker
# address) so that workers sharing one process (LocalCluster(processes=False)) keep their own.

_STORES = {}
_STORES_LOCK = threading.Lock()


class _Block:
    """One row block on its worker: its class ids and group codes, and the scores of every live state."""

    __slots__ = ("rows", "codes", "states")

    def __init__(self, rows, codes):
        self.rows = rows
        self.codes = codes          # kind ("labels", "groups") -> int64 array of the block's rows
        self.states = {}            # state id -> float64 scores, (rows,) or (rows, J)


class _Store:
    """A fit's blocks on one worker and its training segments under way."""

    def __init__(self, n_classes):
        self.n_classes = n_classes
        self.blocks = {}
        self.segments = {}
        self.lock = threading.Lock()

    @property
    def shape_tail(self):
        return () if self.n_classes == 2 else (self.n_classes,)


def _worker_address():
    from distributed import get_worker

    return get_worker().address


def _store(token, address=None, n_classes=None):
    """The store of fit ``token`` on this worker (created with ``n_classes``); a clear error when it is gone."""
    address = _worker_address() if address is None else address
    with _STORES_LOCK:
        store = _STORES.get((token, address))
        if store is None and n_classes is not None:
            store = _STORES[(token, address)] = _Store(n_classes)
    if store is None:
        raise RuntimeError(f"the boosting fit {token} has no rows on worker {address}: the worker was restarted "
                           "or dask moved the fit's row blocks; refit")
    return store


def _release_store(token, dask_worker=None):
    """``client.run`` target: forget fit ``token`` on this worker (its blocks' labels and scores)."""
    with _STORES_LOCK:
        _STORES.pop((token, dask_worker.address), None)


def _setup_block(token, index, start, block, codes, n_classes):
    """On the block's worker: check the block and register its rows; returns the library label (the index)."""
    if sp.issparse(block):
        values = block.data
    else:
        block = np.asarray(block)
        values = block
    where = f"X: block {index} (rows {start}..{start + block.shape[0] - 1})"
    if block.ndim != 2:
        raise ValueError(f"{where}: expected a 2-D block, got shape {block.shape}")
    if np.dtype(values.dtype).kind not in "biuf":
        raise ValueError(f"{where}: values must be real numbers, got dtype {values.dtype}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{where}: has non-finite values (NaN or inf); the boosted estimators need finite features")
    rows = int(block.shape[0])
    for kind, c in codes.items():
        if c.shape != (rows,):
            raise ValueError(f"{where}: {rows} rows but {c.shape[0]} {kind}")
    store = _store(token, n_classes=n_classes)
    with store.lock:
        store.blocks[int(index)] = _Block(rows, {k: np.ascontiguousarray(v, dtype=np.int64) for k, v in codes.items()})
    return np.full(rows, index, dtype=np.float32)


def _take_block(token, index, dask_worker=None):
    """``client.run`` target: remove block ``index`` of fit ``token`` from this worker's store and return it."""
    with _STORES_LOCK:
        store = _STORES.get((token, dask_worker.address))
    if store is None:
        return None
    with store.lock:
        return store.blocks.pop(int(index), None)


def _put_block(token, index, block, n_classes, dask_worker=None):
    """``client.run`` target (and `_fetch_blocks`): register ``block`` as block ``index`` of fit ``token`` here."""
    address = _worker_address() if dask_worker is None else dask_worker.address
    store = _store(token, address, n_classes=n_classes)
    with store.lock:
        store.blocks[int(index)] = block


def _fetch_blocks(token, store, indices):
    """Move the blocks ``indices`` here, with every live state's scores, from the workers that hold them.

    The library decides where each block trains (its own tasks put a block's data and label
    together on a worker); dask places those tasks where the data are, so a block normally trains
    where fastcon placed it, but the scheduler may move a small task elsewhere (work stealing). The
    block's rows and states then follow it here, once: reductions visit every worker's store, so
    each block still counts once. ``client.run`` executes on the other workers' event loops, which
    answer while their threads train.
    """
    from distributed import get_client

    client = get_client()
    here = _worker_address()
    others = [a for a in client.nthreads() if a != here]
    for index in indices:
        found = [b for b in client.run(_take_block, token, index, workers=others).values() if b is not None]
        if len(found) != 1:
            raise RuntimeError(f"row block {index} of the boosting fit {token} is on {len(found)} workers, not one "
                               "(a worker restarted?); refit")
        _put_block(token, index, found[0], store.n_classes)


def _layout(token, store, ids):
    """``[(block, lo, hi)]``: where each block lies in the library's local rows on this worker.

    The library concatenates a worker's blocks in an order of its own; the labels (block indices)
    say which. A block the library put here but fastcon holds elsewhere is moved here first
    (`_fetch_blocks`); this worker's store may keep blocks the library trains elsewhere (another
    worker takes them).
    """
    ids = np.asarray(ids)
    ids = ids.astype(np.int64) if ids.size else np.zeros(0, dtype=np.int64)
    cuts = np.flatnonzero(np.diff(ids)) + 1
    bounds = list(zip([0] + list(cuts), list(cuts) + [ids.size])) if ids.size else []
    runs = [(int(ids[lo]), lo, hi) for lo, hi in bounds]
    if len({b for b, _, _ in runs}) != len(runs):
        raise RuntimeError(f"the library's rows on worker {_worker_address()} hold a row block in two pieces")
    missing = [b for b, _, _ in runs if b not in store.blocks]
    if missing:
        _fetch_blocks(token, store, missing)
    for b, lo, hi in runs:
        if store.blocks[b].rows != hi - lo:
            raise RuntimeError(f"the library's rows on worker {_worker_address()} hold {hi - lo} rows of block {b}, "
                               f"which has {store.blocks[b].rows}")
    return runs


def _scores(store, block, sid):
    """A block's scores at state ``sid`` (0: the empty ensemble, all zeros)."""
    if sid == 0:
        return np.zeros((block.rows,) + store.shape_tail)
    try:
        return block.states[sid]
    except KeyError:
        raise RuntimeError(f"state {sid} is not on worker {_worker_address()}: it was released, or the worker "
                           "restarted; refit") from None


def _gather(store, layout, sid):
    """The scores of state ``sid`` on the library's local rows, in its order."""
    parts = [_scores(store, store.blocks[b], sid) for b, _, _ in layout]
    return np.concatenate(parts) if parts else np.zeros((0,) + store.shape_tail)


class _Segment:
    """A training segment under way on one worker: the objective at the step's anchors, :math:`L_0`, the layout."""

    __slots__ = ("layout", "F_k", "base", "prox", "shape", "data")

    def __init__(self, store, spec, preds, labels):
        self.layout = _layout(spec["token"], store, labels)
        n = sum(hi - lo for _, lo, hi in self.layout)
        self.shape = (n,) + store.shape_tail
        self.data = None
        with store.lock:
            codes = [store.blocks[b].codes for b, _, _ in self.layout]
            y = np.concatenate([c["labels"] for c in codes]) if codes else np.zeros(0, dtype=np.int64)
            kind = spec["kind"]
            group = np.concatenate([c[kind] for c in codes]) if codes else np.zeros(0, dtype=np.int64)
            self.F_k = _gather(store, self.layout, spec["anchor_k"])
            F_t = None if spec["anchor_t"] is None else _gather(store, self.layout, spec["anchor_t"])
        # L_0: the library's scores of every earlier tree (its prediction of the continued booster)
        self.base = np.array(preds, dtype=np.float64).reshape(self.shape)
        self.prox = None
        if n:
            self.prox = ProxObjective(y, spec["table"][group], n_classes=store.n_classes, anchor=self.F_k,
                                      inv_tau=spec["inv_tau"], anchor_t=F_t, c=spec["c"])

    def gradients(self, preds):
        preds = np.asarray(preds, dtype=np.float64)
        if self.prox is None:
            return np.zeros(preds.shape), np.zeros(preds.shape)
        # the library's scores are the sum of every tree so far: this step's trees are what they
        # gained since it began, added to the anchor's scores (fastcon.boosting._models)
        return self.prox(self.F_k + (preds.reshape(self.shape) - self.base))

    def finish(self, store, new_sid, end):
        """Store the new state :math:`F^k + (L - L_0)` block by block."""
        F = self.F_k + (np.asarray(end, dtype=np.float64).reshape(self.shape) - self.base)
        with store.lock:
            for b, lo, hi in self.layout:
                store.blocks[b].states[new_sid] = F[lo:hi]


class _Objective:
    """The prox subproblem's gradients for one training segment, evaluated by each worker on its own rows.

    ``spec``: the fit's token, the segment's nonce, the weight table and the codes it indexes
    (``"labels"`` or ``"groups"``), the anchors' state ids, ``inv_tau``, ``c`` and the new state's id.
    The first call on a worker builds the `_Segment` (it reads :math:`L_0` from the scores it is
    given); later calls reuse it.
    """

    def __init__(self, spec):
        self.spec = spec

    def _segment(self, preds, labels):
        # a worker the library gave rows but fastcon none has no store yet: its blocks are fetched
        store = _store(self.spec["token"], n_classes=self.spec["n_classes"])
        segment = store.segments.get(self.spec["nonce"])
        if segment is None:      # the first call of this training call on this worker (one thread calls)
            segment = store.segments[self.spec["nonce"]] = _Segment(store, self.spec, preds, labels)
        return segment


class _XGBoostObjective(_Objective):
    """``obj(predt, dtrain)`` of ``xgboost.dask.train``."""

    def __call__(self, predt, dtrain):
        segment = self._segment(predt, dtrain.get_label())
        segment.data = dtrain        # read by the end-of-training callback (the same worker and call)
        return segment.gradients(predt)


class _LightGBMObjective(_Objective):
    """``objective(y_true, y_pred)`` of LightGBM's scikit-learn interface (``lightgbm.dask``)."""

    def __call__(self, y_true, y_pred):
        return self._segment(y_pred, y_true).gradients(y_pred)


def _end_segment(token, nonce, new_sid, read_scores):
    """At the end of a training call on a worker: the new state from the library's final training scores."""
    store = _store(token)
    segment = store.segments.pop(nonce, None)
    if segment is None:
        raise RuntimeError(f"worker {_worker_address()} trained without calling fastcon's objective")
    try:
        segment.finish(store, new_sid, read_scores(segment))
    finally:
        segment.data = None


class _LightGBMEnd:
    """LightGBM callback: after the segment's last round, the training scores (``eval_train``, as in memory)."""

    order = 100

    def __init__(self, token, nonce, new_sid):
        self.token, self.nonce, self.new_sid = token, nonce, new_sid

    def __call__(self, env):
        if env.iteration != env.end_iteration - 1:
            return

        def read(segment):
            captured = []

            def capture(preds, train_data):
                captured.append(np.array(preds, dtype=np.float64))
                return "training_scores", 0.0, False

            env.model.eval_train(feval=capture)
            return captured[0]

        _end_segment(self.token, self.nonce, self.new_sid, read)


def _xgboost_end_class():
    """`xgboost.callback.TrainingCallback` subclass reading the cached margin after training (made on first use,
    so that importing this module does not import XGBoost; pickled by name through the module's ``__getattr__``)."""
    cls = globals().get("_XGBoostEnd")
    if cls is not None:
        return cls
    from xgboost.callback import TrainingCallback

    class _XGBoostEnd(TrainingCallback):
        def __init__(self, token, nonce, new_sid):
            super().__init__()
            self.token, self.nonce, self.new_sid = token, nonce, new_sid

        def after_training(self, model):
            # the booster's cached margin of the training rows, as the in-memory backend reads it
            _end_segment(self.token, self.nonce, self.new_sid,
                         lambda segment: model.predict(segment.data, output_margin=True, training=True))
            return model

    _XGBoostEnd.__module__ = __name__
    _XGBoostEnd.__qualname__ = "_XGBoostEnd"
    globals()["_XGBoostEnd"] = _XGBoostEnd
    return _XGBoostEnd


def __getattr__(name):
    if name == "_XGBoostEnd":
        return _xgboost_end_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _losses(store, block, sid):
    F = _scores(store, block, sid)
    out = np.empty(block.rows)
    if block.rows:
        (logistic_losses if F.ndim == 1 else softmax_losses)(np.ascontiguousarray(F), block.codes["labels"], out)
    return out


def _worker_reduce(token, requests, drops):
    r"""On a worker: the quantities over its blocks that ``requests`` ask for (after releasing the states ``drops``).

    ``sums`` and ``div`` come back as one value per block (in block order), so that the client adds
    them in one order whatever worker holds a block; ``errors`` and ``stats`` as one per worker.

    Requests, each a tuple:

    * ``("sums", sid, kind, n)``: :math:`\sum_{\text{code}_i = k}\ell_i` for k < n, codes ``kind``;
    * ``("errors", sid, shift)``: misclassified rows per class (two classes: predicted positive iff
      :math:`F - \text{shift} > 0`; J classes: the largest score);
    * ``("stats", sid)``: whether every score is finite, the smallest and largest score per column;
    * ``("div", sid, other)``: :math:`\sum_i\|F_i - F'_i\|^2`;
    * ``("average", new_sid, ((sid, w), ...))``: store :math:`\sum_k w_k F_k` (returns None).
    """
    with _STORES_LOCK:
        store = _STORES.get((token, _worker_address()))
    if store is None:             # a worker that holds no block of this fit
        return [], [None] * len(requests)
    with store.lock:
        for sid in drops:
            for block in store.blocks.values():
                block.states.pop(sid, None)
        blocks = [store.blocks[b] for b in sorted(store.blocks)]
        out = []
        for request in requests:
            what = request[0]
            if what == "sums":
                _, sid, kind, n = request
                # per block: the client adds them in block order, whichever worker holds a block
                out.append([segment_sums(_losses(store, block, sid), block.codes[kind], n) for block in blocks])
            elif what == "errors":
                _, sid, shift = request
                wrong = np.zeros(store.n_classes, dtype=np.int64)
                for block in blocks:
                    F = _scores(store, block, sid)
                    labels = block.codes["labels"]
                    predicted = ((F - shift) > 0).astype(np.int64) if F.ndim == 1 else np.argmax(F, axis=1)
                    wrong += np.bincount(labels[predicted != labels], minlength=store.n_classes)
                out.append(wrong)
            elif what == "stats":
                sid = request[1]
                finite, low, high = True, None, None
                for block in blocks:
                    if not block.rows:
                        continue
                    F = _scores(store, block, sid).reshape(block.rows, -1)
                    finite = finite and bool(np.all(np.isfinite(F)))
                    lo, hi = F.min(axis=0), F.max(axis=0)
                    low = lo if low is None else np.minimum(low, lo)
                    high = hi if high is None else np.maximum(high, hi)
                out.append((finite, low, high))
            elif what == "div":
                _, sid, other = request
                parts = []
                for block in blocks:
                    d = _scores(store, block, sid) - _scores(store, block, other)
                    parts.append(float(np.vdot(d, d)))
                out.append(parts)
            elif what == "average":
                _, new_sid, pairs = request
                for block in blocks:
                    scores = np.zeros((block.rows,) + store.shape_tail)
                    for sid, w in pairs:
                        scores += w * _scores(store, block, sid)
                    block.states[new_sid] = scores
                out.append(None)
            else:  # pragma: no cover - the client sends only the kinds above
                raise ValueError(f"unknown reduction {what!r}")
        return sorted(store.blocks), out


class _EnsembleSpec:
    """A fitted ensemble as texts, rebuilt once per worker that scores blocks with it."""

    def __init__(self, ensemble):
        self.backend_name = ensemble.backend_name
        self.texts, self.terms = ensemble.export()
        self.n_outputs = ensemble.n_outputs
        self.n_threads = ensemble.n_threads
        self._ensemble = None
        self._lock = threading.Lock()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_ensemble", "_lock")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._ensemble, self._lock = None, threading.Lock()

    @property
    def ensemble(self):
        with self._lock:
            if self._ensemble is None:
                from ._models import BoostedEnsemble

                self._ensemble = BoostedEnsemble.from_texts(self.backend_name, self.texts, self.terms, self.n_outputs,
                                                            min(self.n_threads, _thread_limit()), check=False)
            return self._ensemble


def _thread_limit():
    from ._validate import thread_limit

    return thread_limit()


def _predict_block(block, spec):
    """On a worker: the ensemble's scores of one block, after the checks of an in-memory predict."""
    from sklearn.utils import check_array

    if block.shape[0] == 0:          # an empty chunk: no scores (check_array refuses 0 rows)
        return np.zeros((0,) if spec.n_outputs == 1 else (0, spec.n_outputs))
    block = check_array(block, accept_sparse="csr", dtype=np.float64)
    return spec.ensemble.predict_scores(block)


# =========================================================================== client side
class CodeWeights:
    """Lagrangian weights that depend on a row's class (``kind="labels"``) or group (``"groups"``) only.

    :math:`W_i = \\text{table}[\\text{code}_i]`: what the Dask score problems' ``lagrangian`` returns
    in place of a per-row vector, so that a step sends one number per class or group.
    """

    __slots__ = ("kind", "table")

    def __init__(self, kind, table):
        if kind not in ("labels", "groups"):
            raise ValueError(f"kind: expected 'labels' or 'groups', got {kind!r}")
        table = np.array(table, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(table)):
            raise ValueError(f"weights: the {kind} weights must be finite, got {table.tolist()}")
        self.kind, self.table = kind, table


class DaskBoostingState:
    """A point of `DaskBoostingScoreModel`: ``coefficients`` (prox-step index -> weight) and the id ``sid`` of its
    training scores, which live on the workers. ``cache`` holds the reductions already computed for it."""

    __slots__ = ("owner", "coefficients", "sid", "cache", "__weakref__")

    def __init__(self, owner, coefficients, sid):
        self.owner = owner
        self.coefficients = dict(sorted(coefficients.items()))
        self.sid = sid
        self.cache = {}

    @property
    def n_steps(self):
        return sum(1 for w in self.coefficients.values() if w != 0.0)

    def __repr__(self):
        return f"DaskBoostingState(n_steps={self.n_steps})"


def _import_xgboost_dask():
    """``xgboost.dask``, or an ImportError saying what it needs (it imports dask.dataframe, hence pyarrow)."""
    try:
        import xgboost.dask as dxgb
    except ImportError as exc:
        raise ImportError(f"backend='xgboost' on a dask X trains through xgboost.dask, which needs dask.dataframe "
                          f"(pip install 'dask[dataframe]', which brings pyarrow); backend='lightgbm' needs neither "
                          f"({exc})") from exc
    return dxgb


def current_client():
    """The running `distributed.Client`, or the ValueError the linear estimators raise (it names X)."""
    try:
        from distributed import get_client
    except ImportError as exc:  # pragma: no cover - a dask.array without distributed
        raise ImportError("a dask X needs dask.distributed (pip install 'fastcon[dask]') and a distributed.Client") \
            from exc
    try:
        return get_client()
    except ValueError:
        raise ValueError("X: a dask X needs a running distributed.Client (Client(LocalCluster()) or "
                         "Client('scheduler-address')); the boosting rounds run as tasks on its workers") from None


class DaskBoostingScoreModel:
    r"""The boosting score model of `fastcon.boosting._models` with its training scores on Dask workers.

    The score-model protocol of `fastcon.solvers.abpp` / `fastcon.solvers.cbpr` (``initial_state``,
    ``prox_step``, ``divergence``, ``average``, ``parameters``, ``curvature_bound``, ``ensemble``),
    and the reductions the Dask problems and estimators ask for (`loss_sums`, `class_error_rates`,
    `score_checks`). ``scores`` and ``losses`` are not available: the per-row values stay on the
    workers (module docstring).

    Parameters
    ----------
    client : distributed.Client
    X : dask.array.Array of shape (n, d)
        One column chunk, known row chunks (checked by the caller); blocks of numpy or scipy CSR.
    codes : dict
        ``"labels"``: class ids 0..J-1 of the n rows (in memory), and ``"groups"``: group codes (fairness).
    n_classes : int
    backend : {"xgboost", "lightgbm"}
    rounds, params, seed, n_threads
        As in `XGBoostScoreModel`. The library trains with each worker's own thread count (the
        libraries' Dask rule); ``n_threads`` is the prediction threads of the fitted ensemble.
    """

    def __init__(self, client, X, codes, n_classes, *, backend, rounds, params=None, seed=0, n_threads=1):
        self.client = client
        self.backend_name = backend
        self._backend = _backend(backend)
        self.labels = np.ascontiguousarray(codes["labels"], dtype=np.int64)
        self.n_classes = int(n_classes)
        self.n_codes = {"labels": self.n_classes}
        if "groups" in codes:
            self.n_codes["groups"] = int(np.max(codes["groups"])) + 1
        self.kind = "groups" if "groups" in codes else "labels"
        if backend == "xgboost":
            _import_xgboost_dask()        # before any block is placed
        self.rounds = check_count("rounds", rounds)
        self.seed = int(seed)
        self.n_threads = check_threads(n_threads)
        self.params = self._backend.params(params, self.n_outputs, self.seed, self.n_threads, self.labels.size)
        self.steps = []
        self._booster = None
        self._dtrain = None
        self._last = None
        self._next_sid = 1
        self._dropped = []
        self._closed = False
        self.token = f"fastcon-gbm-{uuid.uuid4().hex}"
        self._place(X, codes)

    # -- placement -------------------------------------------------------------------------------
    def _place(self, X, codes):
        """Persist X's non-empty blocks on the workers and register their rows there (`_setup_block`)."""
        import dask
        import dask.array as da
        from distributed import wait

        sizes = np.asarray(X.chunks[0], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        kept = [b for b in range(sizes.size) if sizes[b] > 0]
        if len(kept) >= MAX_BLOCKS:
            raise ValueError(f"X: {len(kept)} row blocks; the Dask boosting fit takes fewer than {MAX_BLOCKS} "
                             "(X.rechunk with larger row chunks)")
        if len(kept) < sizes.size:           # the libraries' empty workers are a special case best avoided
            X = da.concatenate([X.blocks[b] for b in kept], axis=0)
        X = self.client.persist(X)
        keys = [k for k in (key for row in X.__dask_keys__() for key in row)]
        futures = {f.key: f for f in self.client.futures_of(X)}
        blocks = [futures[k] for k in keys]
        wait(blocks)
        who = self.client.who_has(blocks)
        homes = [who[f.key][0] for f in blocks]
        setup = []
        for i, (b, home) in enumerate(zip(kept, homes)):
            lo, hi = int(starts[b]), int(starts[b + 1])
            part = {k: np.ascontiguousarray(v[lo:hi], dtype=np.int64) for k, v in codes.items()}
            setup.append(self.client.submit(_setup_block, self.token, i, lo, blocks[i], part, self.n_classes,
                                            workers=[home], allow_other_workers=False, pure=False))
        wait(setup)
        failed = [f for f in setup if f.status == "error"]
        if failed:
            # a fresh error, the placed rows released: the future's own exception would keep its
            # traceback, whose frames hold every future
            error = failed[0].exception()
            message, kind = str(error), type(error) if isinstance(error, ValueError) else RuntimeError
            del failed, error, setup, blocks, futures, X
            self.close()
            raise kind(message) from None
        self.addresses = sorted(set(homes))
        self.n_blocks = len(kept)
        self.X = X
        self.label_array = da.concatenate(
            [da.from_delayed(dask.delayed(f), shape=(int(sizes[b]),), dtype=np.float32)
             for f, b in zip(setup, kept)])

    def close(self):
        """Forget the fit on the workers (every state's scores, the blocks' codes) and drop the references to X."""
        if self._closed:
            return
        self._closed = True
        self.X = self.label_array = self._dtrain = None
        try:
            self.client.run(_release_store, self.token)
        except Exception:  # pragma: no cover - a cluster already closed has nothing to release
            pass

    # -- the score-model protocol ---------------------------------------------------------------
    @property
    def n_samples(self):
        return int(self.labels.size)

    @property
    def n_outputs(self):
        return 1 if self.n_classes == 2 else self.n_classes

    def _state(self, coefficients, sid):
        state = DaskBoostingState(self, coefficients, sid)
        if sid != 0:
            weakref.finalize(state, self._dropped.append, sid)
        return state

    def _check_state(self, name, state):
        return _check_own_state(self, name, state, DaskBoostingState)

    def initial_state(self):
        """The empty ensemble: all training scores 0."""
        return self._state({}, 0)

    def as_state(self, x):
        if isinstance(x, DaskBoostingState):
            return self._check_state("x0", x)
        raise TypeError(f"x0: a Dask boosting score model starts from one of its own states, not from "
                        f"{type(x).__name__}")

    def scores(self, state):
        raise ValueError("state: the training scores of a Dask boosting fit stay on the workers; ask the model for "
                         "their reductions (loss_sums, class_error_rates, score_checks)")

    def losses(self, state, out=None):
        raise ValueError("state: the per-row losses of a Dask boosting fit stay on the workers; the Dask problems "
                         "use their class or group sums (loss_sums); the outlier and bound-reset heuristics, which "
                         "need every row's loss, are not available on Dask")

    def parameters(self, state):
        r"""The ensemble's parameters :math:`x_s` (Lin & Deng §5: :math:`F = \sum_s x_s f_s`), one per prox step.

        What `fastcon.SolveResult.x` holds for a Dask fit (the in-memory model gives the training
        scores, which here stay on the workers).
        """
        state = self._check_state("state", state)
        return np.array([state.coefficients.get(s, 0.0) for s in range(len(self.steps))])

    def curvature_bound(self, problem):
        r""":math:`\rho` of CBPR in function space (`fastcon.boosting._models`: :math:`\max\kappa c_\ell`)."""
        c = loss_curvature(self.n_outputs)
        return max((float(kappa) * c for rows, kappa in problem.concave_parts() if len(rows)), default=0.0)

    def divergence(self, state, anchor):
        r""":math:`D_W = \frac12\|F(\text{state}) - F(\text{anchor})\|^2` over the training rows, reduced on the
        workers."""
        self._check_state("state", state)
        self._check_state("anchor", anchor)
        if state.sid == anchor.sid:
            return 0.0
        key = ("div", anchor.sid)
        if key not in state.cache:
            state.cache[key] = self._reduce([("div", state.sid, anchor.sid)])[0]
        return 0.5 * state.cache[key]

    def loss_sums(self, state, kind):
        r""":math:`S_k = \sum_{\text{code}_i = k}\ell_i` at ``state``, codes ``kind`` (``"labels"`` or ``"groups"``)."""
        self._check_state("state", state)
        key = ("sums", kind)
        if key not in state.cache:
            state.cache[key] = self._reduce([("sums", state.sid, kind, self.n_codes[kind])])[0]
        return state.cache[key]

    def class_error_rates(self, state, shift=0.0):
        """Training misclassification rate of every class at ``state`` (two classes: positive iff score - shift > 0)."""
        self._check_state("state", state)
        wrong = self._reduce([("errors", state.sid, float(shift))])[0]
        counts = np.bincount(self.labels, minlength=self.n_classes)
        with np.errstate(invalid="ignore", divide="ignore"):
            return wrong / counts

    def score_checks(self, state):
        """``(finite, constant)``: every training score finite; every row with the same scores."""
        finite, low, high = self._reduce([("stats", self._check_state("state", state).sid)])[0]
        return finite, low is None or bool(np.all(high == low))

    def prox_step(self, anchor_k, inv_tau, weights, *, anchor_t=None, c=0.0, accuracy=None):
        r"""``rounds`` Newton-boosting rounds on the prox subproblem from ``anchor_k``: one library training segment.

        As `XGBoostScoreModel.prox_step`, with ``weights`` a `CodeWeights` (one weight per class or
        group) instead of a per-row vector. The new state's loss sums and its divergences to the
        anchors are reduced right after the segment (one round trip; ABPP and CBPR ask for them).
        """
        self._check_state("anchor_k", anchor_k)
        if anchor_t is not None:
            self._check_state("anchor_t", anchor_t)
        if not isinstance(weights, CodeWeights):
            raise TypeError(f"weights: a Dask score model takes one weight per class or group (CodeWeights, from a "
                            f"Dask score problem's lagrangian), not {type(weights).__name__}: the rows are on the "
                            "workers")
        if weights.kind not in self.n_codes or weights.table.size != self.n_codes[weights.kind]:
            raise ValueError(f"weights: expected {self.n_codes.get(weights.kind)} {weights.kind} weights, got "
                             f"{weights.table.size}")
        inv_tau = check_real("inv_tau", inv_tau)
        c = check_real("c", c)
        sid = self._next_sid
        self._next_sid += 1
        spec = {"token": self.token, "nonce": uuid.uuid4().hex, "kind": weights.kind, "table": weights.table,
                "anchor_k": anchor_k.sid, "inv_tau": inv_tau, "anchor_t": None if anchor_t is None else anchor_t.sid,
                "c": c if anchor_t is not None else 0.0, "new_sid": sid, "n_classes": self.n_classes}
        start = self._n_rounds()
        self._train(spec, len(self.steps))
        stop = self._n_rounds()
        index = len(self.steps)
        self.steps.append((start, stop))
        coefficients = dict(anchor_k.coefficients)
        if stop > start:
            coefficients[index] = 1.0
        state = self._state(coefficients, sid)
        # what the solvers ask of every new state, in one round trip
        requests = [("sums", sid, kind, n) for kind, n in sorted(self.n_codes.items())]
        anchors = [a for a in (anchor_k, anchor_t) if a is not None]
        requests += [("div", sid, a.sid) for a in anchors]
        values = self._reduce(requests)
        for (kind, _), v in zip(sorted(self.n_codes.items()), values):
            state.cache[("sums", kind)] = v
        for a, v in zip(anchors, values[len(self.n_codes):]):
            state.cache[("div", a.sid)] = v
        self._last = state
        return state

    def average(self, states, weights):
        r"""The state :math:`\sum_k w_k x_k / \sum_k w_k` (coefficients on the client, scores on the workers)."""
        states = [self._check_state(f"states[{k}]", s) for k, s in enumerate(states)]
        w = _average_weights(weights, len(states))
        coefficients, pairs = {}, []
        for wk, state in zip(w, states):
            if wk == 0.0:
                continue
            pairs.append((state.sid, float(wk)))
            for b, v in state.coefficients.items():
                coefficients[b] = coefficients.get(b, 0.0) + wk * v
        sid = self._next_sid
        self._next_sid += 1
        self._reduce([("average", sid, tuple(pairs))])
        self._last = self._state(coefficients, sid)
        return self._last

    def ensemble(self, state=None):
        """The `BoostedEnsemble` of ``state`` (default: the last state returned) on the client's copy of the booster."""
        return _state_ensemble(self, state)

    # -- the cluster ------------------------------------------------------------------------------
    def _reduce(self, requests):
        """One task per worker (`_worker_reduce`); float sums come back per row block and are added on the
        client in block order, counts and extremes per worker."""
        drops = []
        while self._dropped:          # list.pop is atomic: a finalizer may append meanwhile
            drops.append(self._dropped.pop())
        for attempt in range(2):
            futures = [self.client.submit(_worker_reduce, self.token, requests, drops, workers=[a],
                                          allow_other_workers=False, pure=False) for a in self.addresses]
            answers = self.client.gather(futures)
            seen = sorted(b for blocks, _ in answers for b in blocks)
            if seen == list(range(self.n_blocks)):
                break
            # a block followed the library to a worker not asked (_fetch_blocks): ask every worker
            # (the requests are idempotent: drops, sums, a stored average)
            self.addresses = sorted(self.client.nthreads())
        else:
            raise RuntimeError(f"the row blocks of the boosting fit are not all on the workers (found {len(seen)} of "
                               f"{self.n_blocks}, some twice or none): a worker restarted? refit")
        held = [(blocks, out) for blocks, out in answers if blocks]      # the workers that hold rows
        results = [out for _, out in held]
        out = []
        for k, request in enumerate(requests):
            parts = [r[k] for r in results]
            if request[0] == "stats":
                known = [p for p in parts if p[1] is not None]
                out.append((all(p[0] for p in parts),
                            None if not known else np.min([p[1] for p in known], axis=0),
                            None if not known else np.max([p[2] for p in known], axis=0)))
            elif request[0] == "average":
                out.append(None)
            elif request[0] == "errors":        # integer counts: any order gives the same total
                total = parts[0]
                for p in parts[1:]:
                    total = total + p
                out.append(total)
            else:   # float sums, one per block: added in block order, so the bits do not depend on
                # which worker the library or the scheduler put a block on
                by_block = sorted(((b, v) for (blocks, _), r in zip(held, results) for b, v in zip(blocks, r[k])),
                                  key=lambda pair: pair[0])
                total = by_block[0][1]
                for _, v in by_block[1:]:
                    total = total + v
                out.append(total)
        return out

    def _n_rounds(self):
        return 0 if self._booster is None else self._backend.n_rounds(self._booster)

    def _train(self, spec, step):
        if self.backend_name == "xgboost":
            self._train_xgboost(spec, step)
        else:
            self._train_lightgbm(spec, step)

    def _train_xgboost(self, spec, step):
        import xgboost

        dxgb = _import_xgboost_dask()

        if self._dtrain is None:
            # zeros are missing, as in memory (XGBoostBackend.dataset): dense and CSR give the same trees
            self._dtrain = dxgb.DaskDMatrix(self.client, self.X, label=self.label_array, missing=0.0)
        params = dict(self.params)
        params.pop("nthread", None)          # each worker trains with its own threads (xgboost.dask's rule)
        # a continued booster restarts its random state: another seed per step keeps subsampling
        # from drawing the same rows in every step (no effect without subsampling)
        params["seed"] = self.seed + step
        with xgboost.config_context(verbosity=0):
            out = dxgb.train(self.client, params, self._dtrain, num_boost_round=self.rounds,
                             obj=_XGBoostObjective(spec), xgb_model=self._booster, verbose_eval=False,
                             callbacks=[_xgboost_end_class()(spec["token"], spec["nonce"], spec["new_sid"])])
        self._booster = out["booster"]

    def _train_lightgbm(self, spec, step):
        import lightgbm
        import lightgbm.dask as dlgb

        params = {k: v for k, v in self.params.items() if k != "num_threads"}   # the workers' threads
        # see _train_xgboost: the sampling seeds vary by step, the binning seed (data_random_seed) does not
        for key in ("bagging_seed", "feature_fraction_seed", "extra_seed"):
            params.setdefault(key, self.seed * 1000 + step + 1)
        estimator = dlgb.DaskLGBMRegressor(client=self.client, objective=_LightGBMObjective(spec),
                                           n_estimators=self.rounds, **params)
        with warnings.catch_warnings():
            # lightgbm.dask says it ignores the scikit-learn n_jobs; the workers' threads are meant
            warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
            try:
                estimator.fit(self.X, self.label_array, init_model=self._booster,
                              callbacks=[_LightGBMEnd(spec["token"], spec["nonce"], spec["new_sid"])])
            except lightgbm.basic.LightGBMError as exc:
                if "num_features()" not in str(exc):
                    raise
                m = getattr(self._backend, "min_data_in_leaf", self._backend.MIN_DATA_IN_LEAF)
                raise ValueError(f"X: LightGBM kept no feature it can split on ({self.n_samples} rows, "
                                 f"min_data_in_leaf={m}): every column is constant, or no threshold leaves "
                                 "min_data_in_leaf rows on each side; lower params['min_data_in_leaf']") from None
        self._booster = estimator.booster_


# --------------------------------------------------------------------------- the problems
class DaskNeymanPearsonScores(NeymanPearsonScores):
    r"""`NeymanPearsonScores` whose class loss sums are reduced on the workers (`DaskBoostingScoreModel.loss_sums`).

    Same problem, same Lagrangian: :math:`W_i = w_{b_i} + \lambda_{b_i}` returned as one weight
    per class (`CodeWeights`); the objective weights must be one per class (the estimators' are).
    """

    def __init__(self, labels, n_classes, bounds, objective_weights=None, target_rates=None):
        super().__init__(labels, n_classes, bounds, objective_weights=objective_weights, target_rates=target_rates)
        self._per_class = self._class_weights()

    def _class_weights(self):
        """:math:`w_j`, the objective weight of class j's rows (one per class, else a ValueError)."""
        w = np.ones(self.n_classes)
        for j in range(self.n_classes):
            values = self._objective_weights[self.labels == j]
            if values.size and np.any(values != values[0]):
                raise ValueError("objective_weights: a Dask fit takes one objective weight per class")
            if values.size:
                w[j] = values[0]
        return w

    def constraint_values(self, model, state):
        sums = model.loss_sums(state, "labels")
        return sums[self.classes] - self.bounds

    def objective_value(self, model, state):
        return float(self._per_class @ model.loss_sums(state, "labels"))

    def lagrangian(self, y):
        lam = np.zeros(self.n_classes)
        lam[self.classes] = np.asarray(y, dtype=np.float64)
        if np.any(self.keep != 1.0):
            raise ValueError("problem: dropped rows (outliers) are not available on Dask")
        return CodeWeights("labels", self._per_class + lam), 0.0, None


class DaskGroupLossGap(GroupLossGap):
    r"""`GroupLossGap` whose group loss sums are reduced on the workers; the Lagrangian as one weight per group."""

    def group_means(self, model, state):
        return model.loss_sums(state, "groups") / self.group_sizes

    def objective_value(self, model, state):
        return float(np.sum(model.loss_sums(state, "groups")))

    def lagrangian(self, y):
        if np.any(self.keep != 1.0):
            raise ValueError("problem: dropped rows (outliers) are not available on Dask")
        return CodeWeights("groups", self.group_weights(np.asarray(y, dtype=np.float64))), 0.0, None


# --------------------------------------------------------------------------- the estimators' fits
def _dask_target(estimator, X, y):
    """``(X, class ids, classes_)`` for a dask X: its layout and ``y`` (in memory) checked as the linear
    estimators check them, ``n_features_in_`` set."""
    from ..estimators._input import _dask_target as dask_target
    from ._estimators import _encode_classes

    X, y = dask_target(estimator, X, y)
    return (X, *_encode_classes(y))


def _model(estimator, client, X, codes, n_classes):
    from ._estimators import _check_seed

    return DaskBoostingScoreModel(client, X, codes, n_classes, backend=estimator.backend, rounds=estimator.rounds,
                                  params=estimator.params, seed=_check_seed(estimator.random_state),
                                  n_threads=estimator.n_threads)


def fit_neyman_pearson(estimator, X, y):
    """`NeymanPearsonGBMClassifier.fit` on a dask X: the in-memory fit's steps with the Dask model and problem."""
    client = current_client()
    X, labels, estimator.classes_ = _dask_target(estimator, X, y)
    J = estimator.classes_.size
    bounds = estimator._class_bounds()
    X_held, X, labels = estimator._fit_rows(X, labels, bounds)   # held-out rows never reach ABPP
    base = DaskNeymanPearsonScores.from_error_rates(labels, J, bounds,
                                                    objective_weights=estimator._objective_weights(bounds))
    rounds = check_count("max_calibration", estimator.max_calibration)
    model = _model(estimator, client, X, {"labels": labels}, J)
    try:
        err, record, hard_value = estimator._solve_calibrated(model, base, bounds, model.class_error_rates, rounds,
                                                              X_held, labels.size)
    finally:
        model.close()
    estimator._finish_np(err, record, bounds, hard_value, stacklevel=4)
    return estimator


def fit_fair(estimator, X, y, sensitive):
    """`FairGBMClassifier.fit` on a dask X (``sensitive``: the groups in memory, already resolved)."""
    client = current_client()
    X, labels, estimator.classes_ = _dask_target(estimator, X, y)
    groups = estimator._fit_groups(sensitive, X.shape[0])
    problem = estimator._gap_problem(DaskGroupLossGap, labels, groups)
    model = _model(estimator, client, X, {"labels": labels, "groups": np.asarray(groups.codes)},
                   estimator.classes_.size)
    try:
        n_iter, xi = estimator._solve_cbpr(problem, model)
    finally:
        model.close()
    estimator._finish_gap(xi, n_iter, stacklevel=4)
    return estimator


# --------------------------------------------------------------------------- prediction
def dask_features(estimator, X):
    """A dask X for prediction: the sensitive columns fit dropped dropped (lazily), the layout and width checked."""
    from ..estimators._input import _check_dask_features, drop_columns

    columns = list(getattr(estimator, "sensitive_columns_", None) or [])
    if columns:
        if any(isinstance(k, (int, np.integer)) and k < 0 for k in columns) and X.ndim == 2:
            columns = sorted({int(k) % X.shape[1] for k in columns})
        X = drop_columns(X, columns)
    return _check_dask_features(estimator, X, reset=False)


def dask_ensemble_scores(ensemble, X):
    """The scores of a `BoostedEnsemble` on a dask X, shape (n,) or (n, J), as a numpy array.

    Each block is checked and scored on the worker that holds it (`_predict_block`); the ensemble
    travels once per worker as its model texts (`_EnsembleSpec`), and only the scores come back
    (8 bytes per row and output), as `fastcon.estimators._input.dask_linear_scores` does for the
    linear models.
    """
    import dask
    import dask.array as da

    spec = dask.delayed(_EnsembleSpec(ensemble), name=f"fastcon-ensemble-{uuid.uuid4().hex}")
    if ensemble.n_outputs == 1:
        scores = da.map_blocks(_predict_block, X, spec, dtype=np.float64, chunks=(X.chunks[0],), drop_axis=1,
                               meta=np.empty((0,)))
    else:
        scores = da.map_blocks(_predict_block, X, spec, dtype=np.float64,
                               chunks=(X.chunks[0], (ensemble.n_outputs,)), meta=np.empty((0, 0)))
    return np.asarray(dask.compute(scores)[0], dtype=np.float64)
