r"""Boosting score models: the prox subproblems of ABPP / CBPR solved by XGBoost or LightGBM in function space.

Lin & Deng [LD23] §5 take the parameters :math:`x` of a boosted ensemble :math:`F(a; x) =
\sum_b x_b f_b(a)`, so that the Bregman distance is :math:`D_W(x, x') = \frac12\|F(A; x) - F(A; x')\|^2`
on the training rows, and a proximal step is a few rounds of Newton boosting on
`fastcon.boosting.ProxObjective` from the anchor's training scores. A score model grows one library
booster for its whole life; a state (`BoostingState`) is its training scores and its coefficients
per step, and its scores on any rows are the sum of range predictions (`BoostedEnsemble`).
Design notes: docs/design.md, 'Module notes'; measurements: docs/benchmarks.md.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from .._kernels._boosting import logistic_losses, softmax_losses
from ..problems._score_models import loss_curvature
from ..solvers._validation import check_count
from ._backends import backend as _backend
from ._objective import ProxObjective
from ._validate import check_threads

__all__ = ["BoostingState", "BoostedEnsemble", "XGBoostScoreModel", "LightGBMScoreModel"]

#: Boosting rounds per prox step (Lin & Deng leave it open; their code uses ``n_estimators`` = 100).
DEFAULT_ROUNDS = 10


class BoostingState:
    """A point of a boosting score model: ``coefficients`` (prox-step index -> weight) and training ``scores``.

    The scores are read-only: states share them with the solver's bookkeeping.

    Parameters
    ----------
    owner : score model
        The model the state belongs to (`XGBoostScoreModel` or `LightGBMScoreModel`).
    coefficients : dict of int to float
        Prox-step index -> weight (stored sorted by step).
    scores : ndarray
        Training scores of the state; made read-only.
    """

    __slots__ = ("owner", "coefficients", "scores")

    def __init__(self, owner, coefficients, scores):
        self.owner = owner
        self.coefficients = dict(sorted(coefficients.items()))
        scores.flags.writeable = False
        self.scores = scores

    @property
    def n_steps(self):
        """Prox steps with a non-zero coefficient."""
        return sum(1 for w in self.coefficients.values() if w != 0.0)

    def __repr__(self):
        return f"BoostingState(n_steps={self.n_steps})"


def _check_term(k, term, rounds):
    """One ``(booster, start, stop, weight)`` term, checked against the boosters' round counts."""
    try:
        index, start, stop, weight = term
    except (TypeError, ValueError):
        raise ValueError(f"terms[{k}]: expected (booster, start, stop, weight), got {term!r}") from None
    for name, value in (("booster", index), ("start", start), ("stop", stop)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
            raise ValueError(f"terms[{k}]: {name} must be an integer, got {value!r}")
    if not 0 <= index < len(rounds):
        raise ValueError(f"terms[{k}]: booster {index} out of range [0, {len(rounds)})")
    if not 0 <= start <= stop <= rounds[index]:
        raise ValueError(f"terms[{k}]: rounds [{start}, {stop}) outside booster {index}'s [0, {rounds[index]}]")
    weight = float(weight)
    if not np.isfinite(weight):
        raise ValueError(f"terms[{k}]: weight must be finite, got {weight!r}")
    return int(index), int(start), int(stop), weight


class BoostedEnsemble:
    r"""A fitted ensemble :math:`F(X) = \sum_t w_t \sum_{r=a_t}^{b_t - 1} \text{tree}_r(X)`: ranges of rounds of boosters.

    Parameters
    ----------
    backend_name : {"xgboost", "lightgbm"}
    boosters : list
        The library's booster objects (a score model's fit has one).
    terms : sequence of (booster, start, stop, weight)
        Booster index, the range ``[start, stop)`` of its rounds and the weight :math:`w_t`.
        Terms of one booster with adjacent ranges and equal weights are merged (one prediction
        call each); zero weights are dropped.
    n_outputs : int
        1 (scores of shape (n,)) or J (shape (n, J)).
    n_threads : int
        Threads of prediction, at most the CPUs this process may use
        (`fastcon.boosting._validate.thread_limit`; more is a ValueError naming the limit).
    """

    def __init__(self, backend_name, boosters, terms, n_outputs, n_threads=1):
        self.backend = _backend(backend_name)
        self.boosters = list(boosters)
        rounds = [self.backend.n_rounds(b) for b in self.boosters]
        checked = sorted(_check_term(k, t, rounds) for k, t in enumerate(terms))
        merged = []
        for index, start, stop, weight in checked:
            if weight == 0.0 or stop == start:
                continue
            if merged and merged[-1][0] == index and merged[-1][2] == start and merged[-1][3] == weight:
                merged[-1] = (index, merged[-1][1], stop, weight)
            else:
                merged.append((index, start, stop, weight))
        self.terms = tuple(merged)
        self.n_outputs = int(n_outputs)
        self.n_threads = check_threads(n_threads)

    @property
    def backend_name(self):
        return self.backend.name

    @property
    def n_rounds(self):
        """Boosting rounds the prediction evaluates (the sum of the terms' range lengths)."""
        return sum(stop - start for _, start, stop, _ in self.terms)

    def predict_scores(self, X):
        """Scores of the rows of X: the weighted sum of the terms' range predictions.

        Parameters
        ----------
        X : {ndarray, CSR matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, J)
        """
        n = X.shape[0]
        out = np.zeros((n,) if self.n_outputs == 1 else (n, self.n_outputs))
        for index, start, stop, w in self.terms:
            part = self.backend.predict(self.boosters[index], X, start, stop, self.n_threads).reshape(out.shape)
            if w == 1.0:
                out += part
            else:
                out += w * part
        return out

    def export(self):
        """``(texts, terms)``: each booster in the library's own format (XGBoost JSON, LightGBM model text)
        cut to the rounds the terms use, and the terms re-based on the cut boosters (`from_texts`
        reads them back)."""
        first = [None] * len(self.boosters)
        last = [0] * len(self.boosters)
        for index, start, stop, _ in self.terms:
            first[index] = start if first[index] is None else min(first[index], start)
            last[index] = max(last[index], stop)
        kept = [k for k in range(len(self.boosters)) if first[k] is not None]
        position = {k: i for i, k in enumerate(kept)}
        texts = [self.backend.to_text(self.boosters[k], first[k], last[k]) for k in kept]
        terms = [(position[k], start - first[k], stop - first[k], w) for k, start, stop, w in self.terms]
        return texts, terms

    def standalone(self):
        """The same ensemble on boosters rebuilt from `export`: no reference to the training data, no unused trees."""
        texts, terms = self.export()
        return type(self).from_texts(self.backend_name, texts, terms, self.n_outputs, self.n_threads, check=False)

    @classmethod
    def from_texts(cls, backend_name, texts, terms, n_outputs, n_threads=1, check=True):
        """The inverse of `export` (``terms`` as in the constructor).

        ``check``: validate each text before the library parses it (`fastcon.boosting._validate`; a
        ValueError says what is wrong). Off only for text the library itself just wrote (`standalone`).
        """
        lib = _backend(backend_name)
        return cls(backend_name, [lib.from_text(t, n_threads, int(n_outputs), check=check) for t in texts], terms,
                   n_outputs, n_threads)


def _check_features(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not np.all(np.isfinite(X.data)):
            raise ValueError("X: must be finite")
        return X
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-D array, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X: must be finite")
    return X


def _check_own_state(model, name, state, state_class):
    """``state`` itself when it is a ``state_class`` of ``model``, else a TypeError or ValueError naming ``name``.

    Parameters
    ----------
    model : score model
        The model the state must belong to (``state.owner``).
    name : str
        The argument's name, for the error message.
    state : object
        The state to check.
    state_class : type
        The model's state type (`BoostingState`, or the Dask model's `DaskBoostingState`).

    Returns
    -------
    state
    """
    if not isinstance(state, state_class):
        raise TypeError(f"{name}: expected a {state_class.__name__}, got {type(state).__name__}")
    if state.owner is not model:
        raise ValueError(f"{name}: a state of another score model")
    return state


def _average_weights(weights, n_states):
    r"""The weights :math:`w_k / \sum_k w_k` of a score model's ``average`` of ``n_states`` states, checked.

    Parameters
    ----------
    weights : array-like of shape (n_states,)
        One weight per state: finite, non-negative and not all zero.
    n_states : int
        The number of states averaged (at least one).

    Returns
    -------
    ndarray of shape (n_states,)
        The weights divided by their sum (float64).

    Raises
    ------
    ValueError
        When there is not one weight per state, or none at all, or a weight is negative or not
        finite, or all are zero.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_states,) or not n_states:
        raise ValueError(f"weights: expected one weight per state ({n_states}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError("weights: must be finite, non-negative and not all zero")
    return w / w.sum()


def _state_ensemble(model, state=None):
    """The `BoostedEnsemble` of a boosting score model's ``state``: one term per prox step with a non-zero coefficient.

    Parameters
    ----------
    model : _BoostingScoreModel or fastcon.boosting._dask.DaskBoostingScoreModel
        The score model; its ``steps`` give each prox step's range of rounds of its one booster.
    state : state of ``model``, optional
        Default: the last state the model's ``prox_step``/``average`` returned (the initial state
        before any).

    Returns
    -------
    BoostedEnsemble
        On the model's own booster (none before the first step).
    """
    state = model._last if state is None else model._check_state("state", state)
    if state is None:
        state = model.initial_state()
    boosters = [] if model._booster is None else [model._booster]
    terms = [(0, *model.steps[s], w) for s, w in state.coefficients.items() if w != 0.0]
    return BoostedEnsemble(model.backend_name, boosters, terms, model.n_outputs, model.n_threads)


class _BoostingScoreModel:
    backend_name = None

    def __init__(self, X, labels, n_classes, *, rounds=DEFAULT_ROUNDS, params=None, seed=0, n_threads=1):
        self._backend = _backend(self.backend_name)
        self.X = _check_features(X)
        self.labels = np.asarray(labels)
        if self.labels.shape != (self.X.shape[0],):
            raise ValueError(f"labels: expected shape ({self.X.shape[0]},) (one per row of X), got {self.labels.shape}")
        if (isinstance(n_classes, (bool, np.bool_)) or not isinstance(n_classes, (numbers.Integral, np.integer))
                or n_classes < 2):
            raise ValueError(f"n_classes: expected an integer >= 2, got {n_classes!r}")
        self.n_classes = int(n_classes)
        # validated once here; ProxObjective re-reads them per step at the cost of one int conversion
        self.labels = ProxObjective(self.labels, n_classes=self.n_classes).labels
        self.rounds = check_count("rounds", rounds)
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (numbers.Integral, np.integer)) or seed < 0:
            raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
        self.seed = int(seed)
        self.n_threads = check_threads(n_threads)
        self.params = self._backend.params(params, self.n_outputs, self.seed, self.n_threads, self.n_samples)
        self._data = None             # the library's training data and booster, built on the first step
        self._booster = None
        self._library_scores = None   # the booster's training scores after the last step
        self.steps = []               # (start, stop): the booster's rounds of each prox step
        self._last = None

    # -- the score-model protocol ------------------------------------------------------------------
    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_outputs(self):
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def _shape(self):
        return (self.n_samples,) if self.n_outputs == 1 else (self.n_samples, self.n_outputs)

    def initial_state(self):
        """The empty ensemble: all training scores 0."""
        return BoostingState(self, {}, np.zeros(self._shape))

    def _check_state(self, name, state):
        return _check_own_state(self, name, state, BoostingState)

    def as_state(self, x):
        """``x`` itself when it is a state of this model (scores alone define no trees to predict with)."""
        if isinstance(x, BoostingState):
            return self._check_state("x0", x)
        raise TypeError(f"x0: a boosting score model starts from one of its own states (initial_state() or a "
                        f"state a solver returned as result.state), not from {type(x).__name__}: training "
                        "scores alone define no trees to predict new rows with")

    def losses(self, state, out=None):
        """Per-sample cross-entropy :math:`\\ell_i` at ``state``'s training scores."""
        F = self.scores(state)
        out = np.empty(self.n_samples) if out is None else out
        (logistic_losses if self.n_outputs == 1 else softmax_losses)(F, self.labels, out)
        return out

    def curvature_bound(self, problem):
        r""":math:`\rho` of CBPR for ``problem`` in function space.

        The geometry is the identity on the training scores, so a concave part
        :math:`h = \kappa\sum_{i\in S}\ell_i` (``problem.concave_parts()``, ``(S, κ)`` pairs) has
        curvature at most :math:`\kappa c_\ell` (:math:`c_\ell` = 1/4 for two classes, 1/2 for
        :math:`J`, `fastcon.problems._score_models.loss_curvature`): each row's Hessian is its own
        block.
        """
        c = loss_curvature(self.n_outputs)
        return max((float(kappa) * c for rows, kappa in problem.concave_parts() if len(rows)), default=0.0)

    def scores(self, state):
        """Training scores of ``state``, shape (n,) or (n, J) (stored with the state, read-only)."""
        return self._check_state("state", state).scores

    def parameters(self, state):
        """What `fastcon.SolveResult.x` holds for a boosting model: the training scores (a copy)."""
        return np.array(self.scores(state))

    def divergence(self, state, anchor):
        r""":math:`D_W = \frac12\|F(\text{state}) - F(\text{anchor})\|^2` over the training rows."""
        d = self.scores(state) - self.scores(anchor)
        return 0.5 * float(np.vdot(d, d))

    def prox_step(self, anchor_k, inv_tau, weights, *, anchor_t=None, c=0.0, accuracy=None):
        r"""``rounds`` Newton-boosting rounds on the prox subproblem from the scores of ``anchor_k``.

        Approximately minimises
        :math:`\sum_i W_i\ell_i(F_i) + c\,D_W(F, F^t) + \text{inv\_tau}\,D_W(F, F^k)` over the
        scores :math:`F = F^k + f(X)` of the trees :math:`f` of ``rounds`` new rounds of the model's
        booster (Lin & Deng [LD23] Algorithm 1, line 6). LightGBM may stop early: a round whose trees
        cannot split ends the step.

        Parameters
        ----------
        anchor_k : BoostingState
            :math:`F^k`, the start and the prox centre.
        inv_tau : float
            :math:`1/\tau_k \ge 0`.
        weights : array-like of shape (n,)
            Lagrangian weights :math:`W_i`, any sign.
        anchor_t : BoostingState, optional
            :math:`F^t` (CBPR's anchor); with ``c``.
        c : float
            :math:`c \ge 0`.
        accuracy : float, optional
            Ignored: a boosting step runs its ``rounds`` whatever the requested accuracy (Definition 4's
            :math:`\nu` has no stopping test in boosting).

        Returns
        -------
        BoostingState
            The anchor's coefficients plus weight 1 on the new step (none when no tree was added);
            its training scores are :math:`F^k` + what the library's training scores gained in the
            step.
        """
        self._check_state("anchor_k", anchor_k)
        F_t = None if anchor_t is None else self._check_state("anchor_t", anchor_t).scores
        F_k = anchor_k.scores
        prox = ProxObjective(self.labels, weights, n_classes=self.n_classes, anchor=F_k, inv_tau=inv_tau,
                             anchor_t=F_t, c=c)
        booster = self._training_booster()
        base = self._library_scores
        shape = self._shape

        def objective(preds, data):
            # the library's scores are the sum of every tree so far; this step's trees are what
            # they gained since it began, added to the anchor's scores
            return prox(F_k + (np.asarray(preds, dtype=np.float64).reshape(shape) - base))

        start = self._backend.n_rounds(booster)
        self._backend.boost(booster, self._data, objective, self.rounds)
        stop = self._backend.n_rounds(booster)
        end = self._backend.training_scores(booster, self._data).reshape(shape)
        self._library_scores = end
        index = len(self.steps)
        self.steps.append((start, stop))
        coefficients = dict(anchor_k.coefficients)
        if stop > start:
            coefficients[index] = 1.0
        self._last = BoostingState(self, coefficients, F_k + (end - base))
        return self._last

    def _training_booster(self):
        if self._booster is None:
            self._data = self._backend.dataset(self.X, self.params)
            self._booster = self._backend.booster(self.params, self._data)
            self._library_scores = np.zeros(self._shape)
        return self._booster

    def average(self, states, weights):
        r"""The state :math:`\sum_k w_k x_k / \sum_k w_k` (coefficients and training scores alike)."""
        states = [self._check_state(f"states[{k}]", s) for k, s in enumerate(states)]
        w = _average_weights(weights, len(states))
        coefficients, scores = {}, np.zeros(self._shape)
        for wk, state in zip(w, states):
            if wk == 0.0:
                continue
            scores += wk * state.scores
            for b, v in state.coefficients.items():
                coefficients[b] = coefficients.get(b, 0.0) + wk * v
        self._last = BoostingState(self, coefficients, scores)
        return self._last

    # -- prediction --------------------------------------------------------------------------------
    def ensemble(self, state=None):
        """The `BoostedEnsemble` of ``state`` (default: the last state `prox_step`/`average` returned).

        One term per prox step with a non-zero coefficient, on the model's live booster (later
        steps do not change it; `BoostedEnsemble.standalone` drops the training data).
        """
        return _state_ensemble(self, state)

    def predict_scores(self, X, state=None):
        """Scores of new rows under ``state`` (default: the last state returned): its steps' trees, weighted.

        On the training rows this equals ``scores(state)`` to the library's score precision
        (module docstring).
        """
        return self.ensemble(state).predict_scores(_check_features(X))


class XGBoostScoreModel(_BoostingScoreModel):
    """Boosting score model on XGBoost (`xgboost.train` with a custom objective; needs XGBoost >= 2.0).

    Parameters
    ----------
    X : {ndarray, CSR matrix} of shape (n, d)
        Training rows (CSR stays sparse).
    labels : array-like of int, shape (n,)
        Class ids 0..J-1 (0/1 for two classes).
    n_classes : int
        J >= 2. Two classes have scores of shape (n,) (logits), J >= 3 of shape (n, J)
        (softmax logits, XGBoost's ``multi:softprob`` margins).
    rounds : int
        Boosting rounds per prox step, default 10. Lin & Deng's code runs ``n_estimators`` = 100
        rounds per step, nearly solving each subproblem; a proximal point method only needs an
        inexact step, and more, cheaper steps let the multipliers react sooner (a 50-step run makes
        500 trees per output instead of 5,000).
    params : dict, optional
        Tree parameters passed through to XGBoost (``max_depth``, ``eta``, ``lambda``,
        ``subsample``, ...). The score model sets ``base_score`` (0), the objective, ``num_class``,
        ``nthread`` and ``seed``; passing them is a ValueError.
    seed : int
        XGBoost's ``seed``: same seed, same bits.
    n_threads : int
        XGBoost's ``nthread`` (default 1: reproducible and polite on shared machines), at most the
        CPUs this process may use (``os.sched_getaffinity``): more is a ValueError naming the limit
        (LightGBM segfaulted on ``n_threads=10**6``).

    Attributes
    ----------
    steps : list of (int, int)
        The range ``[start, stop)`` of the booster's rounds each prox step added, in step order
        (the keys of `BoostingState.coefficients`).
    """

    backend_name = "xgboost"


class LightGBMScoreModel(_BoostingScoreModel):
    """Boosting score model on LightGBM (``params["objective"] = callable``; needs LightGBM >= 4.0).

    Parameters as in `XGBoostScoreModel`; ``params`` go to LightGBM (``num_leaves``,
    ``learning_rate``, ``min_data_in_leaf``, ``lambda_l2``, ...), and the model sets the
    objective, ``num_class``, ``num_threads``, ``seed`` and ``deterministic=True`` (under any of
    LightGBM's aliases). A name that is not in LightGBM's own list of parameters and aliases is a
    UserWarning naming it. Without ``min_data_in_leaf`` (or an alias) in ``params``, it is
    ``min(20, max(1, n // 4))`` for n training rows: LightGBM's default 20 cannot split fewer than
    40 rows and stopped with an internal check; from 80 rows on it is LightGBM's 20. A
    ``min_data_in_leaf`` of more than n/2 is a ValueError naming the rows it needs.

    Parameters
    ----------
    X : {ndarray, CSR matrix} of shape (n, d)
        Training rows, as in `XGBoostScoreModel`.
    labels : array-like of int, shape (n,)
        Class ids 0..J-1 (0/1 for two classes).
    n_classes : int
        J >= 2.
    rounds : int
        Boosting rounds per prox step, default 10.
    params : dict, optional
        Tree parameters passed through to LightGBM (see below).
    seed : int
        LightGBM's ``seed``.
    n_threads : int
        LightGBM's ``num_threads`` (default 1), at most the CPUs this process may use.
    """

    backend_name = "lightgbm"
