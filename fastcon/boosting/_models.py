r"""Boosting score models: the prox subproblems of ABPP / CBPR solved by XGBoost or LightGBM in function space.

Lin & Deng [LD23] §5 take the parameters :math:`x` of a boosted ensemble :math:`F(a; x) =
\sum_b x_b f_b(a)` and the score matrix of its trees on the training rows as :math:`W`, so that the
Bregman distance is half the squared distance of the *training scores*,
:math:`D_W(x, x') = \frac12\|F(A; x) - F(A; x')\|^2`. A proximal step then is a few rounds of
Newton boosting on the subproblem's objective (`fastcon.boosting.ProxObjective`) started from the
anchor's training scores.

A state of these models is a `BoostingState`: the training scores and the coefficients of the
boosters that make them. Every prox step appends one booster to the model's list and returns
the anchor's coefficients plus 1 on it; `ScoreModel.average` combines coefficients. The boosters
are trained with a zero base score and predicted without the init scores, so the scores of a
state on *any* rows are :math:`\sum_b x_b\,\text{booster}_b(X)`: on the training rows exactly the
scores the solver tracked (the check of the reference code's defect, [LD23] digest C1: its
predictions kept only the newest booster).
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from .._kernels._boosting import logistic_losses, softmax_losses
from ..solvers._bregman_models import loss_curvature
from ..solvers._validation import check_count
from ._backends import backend as _backend
from ._objective import ProxObjective

__all__ = ["BoostingState", "BoostedEnsemble", "XGBoostScoreModel", "LightGBMScoreModel"]

#: Boosting rounds per prox step (Lin & Deng leave it open; their code uses ``n_estimators`` = 100).
DEFAULT_ROUNDS = 10

#: Largest share of non-zero entries of a dense X at which the training-row prediction of every
#: prox step reads a CSR copy of X instead (bench/bench_boosting_fit.py: 32,000 x 100, 10 trees,
#: one thread, dense / CSR at densities 0.1, 0.25, 0.5: XGBoost 25 / 12, 40 / 18, 42 / 19 ms,
#: LightGBM 24 / 7, 28 / 13, 40 / 15 ms; the copy costs 12 bytes per non-zero, 75 % of X at 0.5).
PREDICT_CSR_DENSITY = 0.5


class BoostingState:
    """A point of a boosting score model: ``coefficients`` (booster index -> weight) and training ``scores``.

    The scores are read-only: states share them with the solver's bookkeeping.
    """

    __slots__ = ("owner", "coefficients", "scores")

    def __init__(self, owner, coefficients, scores):
        self.owner = owner
        self.coefficients = dict(sorted(coefficients.items()))
        scores.flags.writeable = False
        self.scores = scores

    @property
    def n_boosters(self):
        return sum(1 for w in self.coefficients.values() if w != 0.0)

    def __repr__(self):
        return f"BoostingState(n_boosters={self.n_boosters})"


class BoostedEnsemble:
    r"""A fitted ensemble :math:`F(X) = \sum_b w_b\,\text{booster}_b(X)`: prediction and text form, no training data.

    Parameters
    ----------
    backend_name : {"xgboost", "lightgbm"}
    boosters : list
        The library's booster objects.
    coefficients : array-like
        :math:`w_b`, one per booster.
    n_outputs : int
        1 (scores of shape (n,)) or J (shape (n, J)).
    n_threads : int
        Threads of prediction.
    """

    def __init__(self, backend_name, boosters, coefficients, n_outputs, n_threads=1):
        self.backend = _backend(backend_name)
        self.boosters = list(boosters)
        self.coefficients = np.asarray(coefficients, dtype=np.float64)
        if self.coefficients.shape != (len(self.boosters),):
            raise ValueError(f"coefficients: expected shape ({len(self.boosters)},), got {self.coefficients.shape}")
        self.n_outputs = int(n_outputs)
        self.n_threads = check_count("n_threads", n_threads)

    @property
    def backend_name(self):
        return self.backend.name

    def predict_scores(self, X):
        """Scores of the rows of X: the weighted sum of every booster's raw prediction, in booster order.

        Parameters
        ----------
        X : {ndarray, CSR matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, J)
        """
        n = X.shape[0]
        out = np.zeros((n,) if self.n_outputs == 1 else (n, self.n_outputs))
        for booster, w in zip(self.boosters, self.coefficients):
            part = self.backend.predict(booster, X, self.n_threads).reshape(out.shape)
            if w == 1.0:
                out += part
            else:
                out += w * part
        return out

    def to_texts(self):
        """Every booster in the library's own format (XGBoost JSON, LightGBM model text)."""
        return [self.backend.to_text(b) for b in self.boosters]

    @classmethod
    def from_texts(cls, backend_name, texts, coefficients, n_outputs, n_threads=1):
        """The inverse of `to_texts`."""
        lib = _backend(backend_name)
        return cls(backend_name, [lib.from_text(t, n_threads) for t in texts], coefficients, n_outputs, n_threads)


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
        self.n_threads = check_count("n_threads", n_threads)
        self.params = self._backend.params(params, self.n_outputs, self.seed, self.n_threads)
        self._data = self._backend.dataset(self.X)
        self._prediction_rows = None
        self.boosters = []
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
        if not isinstance(state, BoostingState):
            raise TypeError(f"{name}: expected a BoostingState, got {type(state).__name__}")
        if state.owner is not self:
            raise ValueError(f"{name}: a state of another score model")
        return state

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
        :math:`J`, `fastcon.solvers._bregman_models.loss_curvature`): each row's Hessian is its own
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
        scores :math:`F = F^k + \text{booster}(X)` of a new booster (Lin & Deng [LD23] Algorithm 1,
        line 6; XGBoost ``base_margin`` / LightGBM ``init_score`` = :math:`F^k`).

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
            The anchor's coefficients plus weight 1 on the new booster; its training scores are
            :math:`F^k` + the new booster's raw prediction on X.
        """
        self._check_state("anchor_k", anchor_k)
        F_t = None if anchor_t is None else self._check_state("anchor_t", anchor_t).scores
        F_k = anchor_k.scores
        objective = ProxObjective(self.labels, weights, n_classes=self.n_classes, anchor=F_k, inv_tau=inv_tau,
                                  anchor_t=F_t, c=c)
        booster = self._backend.train(self.params, self._data, F_k, self._library_objective(objective),
                                      self.rounds)
        index = len(self.boosters)
        self.boosters.append(booster)
        # F_{k+1} = F_k + booster_k(X): exactly what predict_scores sums on these rows
        scores = F_k + self._backend.predict(booster, self._training_rows(), self.n_threads).reshape(self._shape)
        coefficients = dict(anchor_k.coefficients)
        coefficients[index] = 1.0
        self._last = BoostingState(self, coefficients, scores)
        return self._last

    def _training_rows(self):
        """X as the per-step prediction reads it: a CSR copy when X is dense with a share of non-zeros
        at most `PREDICT_CSR_DENSITY` (made on the first step), else X itself.

        Both libraries read a zero of a dense row as absent (XGBoost: ``missing=0``; LightGBM skips
        zeros when it converts a dense row), so the copy predicts the same bits as X, and as
        `predict_scores` on X; it only skips the zeros, which the predictors otherwise visit per
        row and feature.
        """
        if self._prediction_rows is None:
            X = self.X
            if not sp.issparse(X) and X.size and np.count_nonzero(X) <= PREDICT_CSR_DENSITY * X.size:
                X = sp.csr_matrix(X)
            self._prediction_rows = X
        return self._prediction_rows

    def _library_objective(self, prox):
        return lambda scores, data: prox(scores)

    def average(self, states, weights):
        r"""The state :math:`\sum_k w_k x_k / \sum_k w_k` (coefficients and training scores alike)."""
        states = [self._check_state(f"states[{k}]", s) for k, s in enumerate(states)]
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(states),) or not states:
            raise ValueError(f"weights: expected one weight per state ({len(states)}), got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError("weights: must be finite, non-negative and not all zero")
        w = w / w.sum()
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

        Only boosters with a non-zero coefficient are kept.
        """
        state = self._last if state is None else self._check_state("state", state)
        if state is None:
            state = self.initial_state()
        kept = [(b, w) for b, w in state.coefficients.items() if w != 0.0]
        return BoostedEnsemble(self.backend_name, [self.boosters[b] for b, _ in kept], [w for _, w in kept],
                               self.n_outputs, self.n_threads)

    def predict_scores(self, X, state=None):
        """Scores of new rows under ``state`` (default: the last state returned): the sum of its boosters.

        On the training rows this equals ``scores(state)`` exactly for the states of prox steps
        (to rounding for averages).
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
        XGBoost's ``nthread`` (default 1: reproducible and polite on shared machines).
    """

    backend_name = "xgboost"


class LightGBMScoreModel(_BoostingScoreModel):
    """Boosting score model on LightGBM (``params["objective"] = callable``; needs LightGBM >= 4.0).

    Parameters as in `XGBoostScoreModel`; ``params`` go to LightGBM (``num_leaves``,
    ``learning_rate``, ``min_data_in_leaf``, ``lambda_l2``, ...), and the model sets the
    objective, ``num_class``, ``num_threads``, ``seed`` and ``deterministic=True``.
    """

    backend_name = "lightgbm"
