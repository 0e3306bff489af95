r"""Score models: the proximal-subproblem solvers of the Bregman primal–dual methods of Lin & Deng [LD23].

ABPP (Algorithm 1 of [LD23]) and CBPR (Algorithm 2) never touch data. They ask a *score model* for
training scores, for the Bregman distance of its geometry and for (approximate) minimisers of

.. math::

    \psi(x) = \sum_i W_i\,\ell_i(F(x)) + c\,D_W(x, x^t) + \tau^{-1} D_W(x, x^k) + r(x),

with Lagrangian weights :math:`W_i` of either sign, the CBPR anchor :math:`x^t`, the proximal anchor
:math:`x^k` and the model's regulariser :math:`r`; the losses are the cross-entropies of
`fastcon._kernels._boosting`. A score model owns the data and hands out opaque states
(``initial_state``, ``scores``, ``divergence``, ``prox_step``, ``parameters``, ``average``, ...).
The protocol in full: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp

from ..datasets._storage import fast_storage
from .._kernels._boosting import logistic_grad_hess, logistic_losses, softmax_grad_hess, softmax_losses

__all__ = ["LinearScoreModel", "LinearState", "loss_curvature"]

#: Prox-step solvers; the default was chosen by measurement (class docstring).
_SOLVERS = ("lbfgs", "newton-cg")


def loss_curvature(n_outputs) -> float:
    r"""Largest eigenvalue of the Hessian of one cross-entropy term in its scores.

    Two classes: :math:`\sigma'(F) = p(1-p) \le 1/4`. :math:`J` classes:
    :math:`\lambda_{\max}(\operatorname{diag}(p) - pp^\top) \le 1/2` (attained in the limit
    :math:`p = (\tfrac12, \tfrac12, 0, \dots)`).
    """
    return 0.25 if n_outputs == 1 else 0.5


class LinearState:
    """A state of `LinearScoreModel`: the coefficients ``x`` ((p,) or (p, J), read-only) and its scores."""

    __slots__ = ("x", "_scores")

    def __init__(self, x):
        x = np.array(x, dtype=np.float64, order="C")
        x.setflags(write=False)
        self.x = x
        self._scores = None

    def __repr__(self):
        return f"LinearState(shape={self.x.shape}, norm={float(np.linalg.norm(self.x)):.6g})"


class LinearScoreModel:
    r"""Linear scores :math:`F = \tilde A x` for ABPP and CBPR, with the Euclidean geometry :math:`W = I`.

    :math:`\tilde A = [A, \mathbf 1]` when ``fit_intercept`` (the intercept is the last row of
    :math:`x`), and :math:`x \in \mathbb R^{p}` (two classes) or :math:`\mathbb R^{p \times J}`
    (:math:`J \ge 3` classes, softmax), :math:`p = d + 1` or :math:`d`. The Bregman distance is
    :math:`D(x, x') = \tfrac12\|x - x'\|^2` over every entry, intercept included, and the model's
    regulariser is :math:`r(x) = \tfrac{\text{ridge}}{2}\|x\|^2`, also over every entry, so that the
    objective is ``ridge``-strongly convex relative to :math:`D` (:math:`\mu` = ``ridge`` in ABPP;
    Section 5 of [LD23]).

    Parameters
    ----------
    X : ndarray of shape (n, d) or scipy sparse matrix
        Features, finite. Sparse input is kept as CSR (never densified); a dense X with at most a
        third non-zeros is converted to CSR (a pass reads fewer bytes).
    labels : array-like of int, shape (n,)
        Class ids in :math:`[0, J)`.
    n_classes : int
        :math:`J \ge 2`; 2 is the binary (logistic) model with one score per row.
    fit_intercept : bool
        Add the intercept column.
    ridge : float
        :math:`\ge 0`.
    solver : {"lbfgs", "newton-cg"}
        Prox-step solver: SciPy's L-BFGS-B (default) or Newton-CG with exact Hessian-vector
        products (two passes each), both stopped by the gradient test of `prox_step`; L-BFGS took
        as many or fewer data passes on Adult (docs/measurements.md). Sum-type constraints make the weights large (there, the first dual
        step already gives class 0 the weight :math:`\sigma_0 g(0) = 0.1 \times 16{,}278`), so the
        subproblems are ill-conditioned and SciPy's unpreconditioned CG needs about 90 products per
        Newton-CG prox step.

    Attributes
    ----------
    n_samples, n_features, n_outputs, n_classes : int
    labels : ndarray of int64
    last_prox_info : dict
        The last `prox_step`'s iterations, gradient norm, target and whether the target was met.
    """

    def __init__(self, X, labels, n_classes, fit_intercept=True, ridge=0.0, solver="lbfgs"):
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64)
            X.sum_duplicates()
            if not np.all(np.isfinite(X.data)):
                raise ValueError("X: contains NaN or infinity")
        else:
            if isinstance(X, (str, bytes)) or X is None:
                raise TypeError(f"X: expected an array or a scipy sparse matrix, got {type(X).__name__}")
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 2:
                raise ValueError(f"X: expected a 2-d array, got shape {X.shape}")
            if not np.all(np.isfinite(X)):
                raise ValueError("X: contains NaN or infinity")
            X = fast_storage(X)
            if not sp.issparse(X):
                X = np.ascontiguousarray(X)
        if isinstance(n_classes, (bool, np.bool_)) or not isinstance(n_classes, (numbers.Integral, np.integer)):
            raise TypeError(f"n_classes: expected an integer >= 2, got {n_classes!r}")
        if n_classes < 2:
            raise ValueError(f"n_classes: must be >= 2, got {n_classes}")
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != X.shape[0]:
            raise ValueError(f"labels: expected shape ({X.shape[0]},) to match X, got {labels.shape}")
        if labels.size and not np.issubdtype(labels.dtype, np.integer) and not (
                np.issubdtype(labels.dtype, np.floating) and np.all(np.mod(labels, 1) == 0)):
            raise ValueError("labels: expected integer class ids")
        labels = labels.astype(np.int64)
        if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
            bad = labels[(labels < 0) | (labels >= n_classes)][0]
            raise ValueError(f"labels: class id {bad} out of range [0, {n_classes})")
        if isinstance(ridge, (bool, np.bool_)) or not isinstance(ridge, numbers.Real) or not ridge >= 0 \
                or not math.isfinite(ridge):
            raise ValueError(f"ridge: must be a finite number >= 0, got {ridge!r}")
        if solver not in _SOLVERS:
            raise ValueError(f"solver: expected one of {_SOLVERS}, got {solver!r}")
        self.X = X
        self.is_sparse = sp.issparse(X)
        self.labels = np.ascontiguousarray(labels)
        self.labels.setflags(write=False)
        self.n_classes = int(n_classes)
        self.n_outputs = 1 if self.n_classes == 2 else self.n_classes
        self.n_samples, self.n_weights = X.shape
        self.fit_intercept = bool(fit_intercept)
        self.n_features = self.n_weights + int(self.fit_intercept)
        self.ridge = float(ridge)
        self.solver = solver
        self._shape = (self.n_features,) if self.n_outputs == 1 else (self.n_features, self.n_outputs)
        self._onehot = None
        if self.n_outputs > 1:
            self._onehot = np.zeros((self.n_samples, self.n_outputs))
            self._onehot[np.arange(self.n_samples), self.labels] = 1.0
        self._row_norms = None
        self._gram_cache = {}
        self.last_prox_info = {}

    # ------------------------------------------------------------------ protocol
    def initial_state(self) -> LinearState:
        """:math:`x = 0`: all training scores are zero."""
        return LinearState(np.zeros(self._shape))

    def as_state(self, x) -> LinearState:
        """The state of coefficients ``x`` (shape (p,), (p, J) or the flattened (p·J,))."""
        if isinstance(x, LinearState):
            return x
        arr = np.asarray(x, dtype=np.float64)
        if arr.size != int(np.prod(self._shape)) or arr.ndim > 2 or (arr.ndim == 2 and arr.shape != self._shape):
            raise ValueError(f"x0: expected coefficients of shape {self._shape} (or flattened), got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("x0: contains NaN or infinity")
        return LinearState(arr.reshape(self._shape))

    def scores(self, state) -> np.ndarray:
        """:math:`F = \\tilde A x` ((n,) or (n, J), C-contiguous, read-only), computed once per state."""
        if state._scores is None:
            F = np.ascontiguousarray(self._matvec(state.x))
            F.setflags(write=False)
            state._scores = F
        return state._scores

    def divergence(self, state, anchor) -> float:
        r""":math:`D(x, x') = \tfrac12\|x - x'\|^2` (intercept included)."""
        d = state.x - anchor.x
        return 0.5 * float(np.vdot(d, d))

    def parameters(self, state) -> np.ndarray:
        """The coefficients flattened row-major (a copy): ``(w, b)`` or ``vec`` of the (p, J) matrix."""
        return state.x.ravel().copy()

    def average(self, states, weights) -> LinearState:
        r"""The state :math:`\sum_k w_k x_k / \sum_k w_k`; its scores are the same average of the scores."""
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (len(states),) or not np.all(weights >= 0) or not weights.sum() > 0:
            raise ValueError("weights: expected one non-negative weight per state, with a positive sum")
        total = weights.sum()
        x = sum((w / total) * s.x for w, s in zip(weights, states))
        return LinearState(x)

    def regularization(self, state) -> float:
        r""":math:`r(x) = \tfrac{\text{ridge}}{2}\|x\|^2`."""
        return 0.5 * self.ridge * float(np.vdot(state.x, state.x)) if self.ridge else 0.0

    def losses(self, state, out=None) -> np.ndarray:
        """Per-sample cross-entropy :math:`\\ell_i` at ``state``."""
        F = self.scores(state)
        out = np.empty(self.n_samples) if out is None else out
        (logistic_losses if self.n_outputs == 1 else softmax_losses)(F, self.labels, out)
        return out

    # ------------------------------------------------------------------ linear algebra
    def _matvec(self, x):
        """:math:`\\tilde A x` for x of shape (p,) or (p, J)."""
        if self.fit_intercept:
            F = self.X @ x[:-1]
            F += x[-1]
            return F
        return self.X @ x

    def _rmatvec(self, R, out):
        """``out = Ã^T R`` for R of shape (n,) or (n, J)."""
        if self.fit_intercept:
            out[:-1] = self.X.T @ R
            out[-1] = R.sum(axis=0)
        else:
            out[...] = self.X.T @ R
        return out

    def row_norms(self) -> np.ndarray:
        r""":math:`\|\tilde a_i\|` for every row (intercept column included), cached."""
        if self._row_norms is None:
            if self.is_sparse:
                sq = np.asarray(self.X.multiply(self.X).sum(axis=1)).ravel()
            else:
                sq = np.einsum("ij,ij->i", self.X, self.X)
            self._row_norms = np.sqrt(sq + float(self.fit_intercept))
        return self._row_norms

    def gram_lambda_max(self, rows=None) -> float:
        r""":math:`\lambda_{\max}(\tilde A_S^\top \tilde A_S)` for the rows :math:`S` (all when None), cached.

        Up to 400 columns the Gram matrix is formed and `numpy.linalg.eigvalsh` gives the value to
        machine precision; above, Lanczos (`scipy.sparse.linalg.eigsh`, relative tolerance 1e-8) on
        the products :math:`v \mapsto \tilde A_S^\top(\tilde A_S v)`, and the result is enlarged by
        the same relative 1e-6 so that it stays an upper bound.
        """
        if rows is None:
            key = None
        else:
            rows = np.asarray(rows)
            if rows.dtype == bool:
                rows = np.flatnonzero(rows)
            rows = np.sort(rows.astype(np.int64))
            key = rows.tobytes()
        if key in self._gram_cache:
            return self._gram_cache[key]
        A = self.X if rows is None else self.X[rows]
        m = A.shape[0]
        if m == 0:
            value = 0.0
        else:
            value = self._weighted_gram_lambda_max(rows, np.ones(m))
        if len(self._gram_cache) >= 16:  # negative-weight row sets repeat (groups); keep the cache small
            self._gram_cache.pop(next(iter(self._gram_cache)))
        self._gram_cache[key] = value
        return value

    def curvature_bound(self, problem) -> float:
        r""":math:`\rho` of CBPR for ``problem``: the relative smoothness constant of its concave parts.

        ``problem.concave_parts()`` lists the concave parts :math:`h = \kappa\sum_{i \in S}\ell_i`
        as ``(S, κ)`` pairs (`GroupLossGap`: :math:`S` = group :math:`b`, :math:`\kappa = \beta/n_b`).
        In :math:`x` the Hessian of such an :math:`h` is
        :math:`\kappa\sum_{i\in S}(\nabla^2\ell_i \otimes \tilde a_i\tilde a_i^\top) \preceq
        \kappa\,c_\ell\,\tilde A_S^\top\tilde A_S \otimes I`, with :math:`c_\ell` of `loss_curvature`,
        so :math:`\rho = \max_S \kappa_S\,c_\ell\,\lambda_{\max}(\tilde A_S^\top\tilde A_S)`
        (`gram_lambda_max`; a few Lanczos products per group, once per problem).
        """
        parts = problem.concave_parts()
        c = loss_curvature(self.n_outputs)
        return max((kappa * c * self.gram_lambda_max(rows) for rows, kappa in parts), default=0.0)

    # ------------------------------------------------------------------ the prox step
    def negative_curvature(self, weights) -> float:
        r"""An upper bound :math:`\kappa_-` of the curvature the negative weights take away.

        With :math:`S = \{i: W_i < 0\}` the Hessian of :math:`\sum_i W_i\ell_i` is bounded below by
        :math:`-c_\ell\sum_{i\in S}|W_i|\tilde a_i\tilde a_i^\top` (:math:`c_\ell` of `loss_curvature`), so
        :math:`\kappa_- = c_\ell\lambda_{\max}(\sum_{i \in S}|W_i|\tilde a_i\tilde a_i^\top)` or anything above it:

        * few distinct negative values :math:`v` (the group weights of `GroupLossGap`: one per
          group): :math:`c_\ell\min\bigl(\sum_v |v|\lambda_{\max}(\tilde A_{S_v}^\top\tilde A_{S_v}),\
          \max_S|W_i|\,\lambda_{\max}(\tilde A_S^\top\tilde A_S)\bigr)` with the row sets' values
          cached (`gram_lambda_max`): the sets repeat from step to step, so the check is free after
          the first;
        * otherwise the weighted Gram matrix's own largest eigenvalue (one computation per call).

        Zero, at no cost, without negative weights. For the CBPR subproblem of `GroupLossGap` the
        first bound is at most :math:`\rho\sum\Lambda < c`, so the check never rejects it.
        """
        negative = weights < 0
        if not negative.any():
            return 0.0
        c = loss_curvature(self.n_outputs)
        values, inverse = np.unique(weights[negative], return_inverse=True)
        rows = np.flatnonzero(negative)
        if values.size <= 8:
            by_value = sum(-v * self.gram_lambda_max(rows[inverse == j]) for j, v in enumerate(values))
            union = -float(values[0]) * self.gram_lambda_max(negative)
            return c * min(by_value, union)
        return c * self._weighted_gram_lambda_max(rows, -weights[rows])

    def _weighted_gram_lambda_max(self, rows, scale):
        r""":math:`\lambda_{\max}(\tilde A_S^\top \operatorname{diag}(s)\tilde A_S)`, :math:`s \ge 0`, S = ``rows``
        (None: all rows); not cached. Exact (dense eigvalsh) up to 400 columns, else Lanczos (eigsh)
        scaled up by 1e-6."""
        A = self.X if rows is None else self.X[rows]
        if self.n_features <= 400:
            SA = (sp.diags(scale) @ A) if sp.issparse(A) else scale[:, None] * A
            G = A.T @ SA
            G = G.toarray() if sp.issparse(G) else np.asarray(G)
            if self.fit_intercept:
                s = np.asarray(SA.sum(axis=0)).ravel()
                G = np.block([[G, s[:, None]], [s[None, :], np.array([[float(scale.sum())]])]])
            return float(np.linalg.eigvalsh(G)[-1])
        p = self.n_features

        def gram(v):
            z = A @ v[:self.n_weights] + (v[-1] if self.fit_intercept else 0.0)
            z *= scale
            out = np.empty(p)
            out[:self.n_weights] = A.T @ z
            if self.fit_intercept:
                out[-1] = z.sum()
            return out

        import scipy.sparse.linalg  # imported on first use, not at `import fastcon`

        op = scipy.sparse.linalg.LinearOperator((p, p), matvec=gram, dtype=np.float64)
        return float(scipy.sparse.linalg.eigsh(op, k=1, which="LA", tol=1e-8, v0=np.ones(p),
                                               return_eigenvectors=False)[0]) * (1 + 1e-6)

    def prox_step(self, anchor_k, inv_tau, weights, *, anchor_t=None, c=0.0, accuracy=None) -> LinearState:
        r"""An approximate minimiser of :math:`\psi` (module docstring), warm-started at ``anchor_k``.

        .. math::

            \psi(x) = \sum_i W_i\ell_i(\tilde a_i^\top x) + \frac{\text{ridge}}{2}\|x\|^2
            + \frac c2\|x - x^t\|^2 + \frac{\tau^{-1}}{2}\|x - x^k\|^2

        is :math:`m`-strongly convex with :math:`m = \tau^{-1} + c + \text{ridge} - \kappa_-`,
        :math:`\kappa_-` the curvature bound of the negative weights (`negative_curvature`). Then
        :math:`\psi(x) - \min\psi \le \|\nabla\psi(x)\|^2/(2m)`, so the solver stops when
        :math:`\|\nabla\psi(x)\|^2 \le 2\nu m` (Definition 4 of [LD23] with :math:`\delta = 0`),
        or at the rounding floor: the larger of :math:`10^{-10}\sum_i|W_i|\|\tilde a_i\|` (the scale
        of the gradient's sum) and :math:`\sqrt{2m\nu_\epsilon}` with
        :math:`\nu_\epsilon = 16\,\epsilon_{\text{mach}}|\psi(x^k)|`, the smallest accuracy the
        rounding of :math:`\psi` itself lets a line search certify (``accuracy=None`` asks for that
        floor). ``last_prox_info["met"]`` tells whether the target was reached.

        Parameters
        ----------
        anchor_k : LinearState
            :math:`x^k` (also the start).
        inv_tau : float
            :math:`\tau^{-1} > 0`.
        weights : ndarray of shape (n,)
            :math:`W_i`, finite, of either sign.
        anchor_t : LinearState, optional
            :math:`x^t`, required when ``c > 0``.
        c : float
            :math:`\ge 0`.
        accuracy : float, optional
            :math:`\nu \ge 0`.

        Returns
        -------
        LinearState

        Raises
        ------
        ValueError
            ``inv_tau`` when :math:`m \le 0`: the prox weights do not dominate the curvature the
            negative weights remove, so :math:`\psi` may be unbounded below.
        """
        inv_tau = float(inv_tau)
        if not (math.isfinite(inv_tau) and inv_tau > 0):
            raise ValueError(f"inv_tau: must be a finite number > 0, got {inv_tau!r}")
        c = float(c)
        if not (math.isfinite(c) and c >= 0):
            raise ValueError(f"c: must be a finite number >= 0, got {c!r}")
        if c > 0 and anchor_t is None:
            raise ValueError("anchor_t: required when c > 0")
        W = np.ascontiguousarray(weights, dtype=np.float64)
        if W.shape != (self.n_samples,):
            raise ValueError(f"weights: expected shape ({self.n_samples},), got {W.shape}")
        if not np.all(np.isfinite(W)):
            raise ValueError("weights: contains NaN or infinity")
        if accuracy is not None and not (accuracy >= 0 and math.isfinite(accuracy)):
            raise ValueError(f"accuracy: must be a finite number >= 0 or None, got {accuracy!r}")
        kappa = self.negative_curvature(W)
        prox = inv_tau + c + self.ridge
        m = prox - kappa
        if not m > 0:
            raise ValueError(f"inv_tau: the prox weight inv_tau + c + ridge = {prox:.6g} does not dominate the "
                             f"curvature {kappa:.6g} removed by the negative weights (min W = {W.min():.6g}); "
                             f"psi may be unbounded below: take inv_tau > {kappa - c - self.ridge:.6g}")
        xk = anchor_k.x.ravel()
        xt = anchor_t.x.ravel() if c > 0 else None
        ridge = self.ridge

        def quadratic(x):
            # each prox term from its own difference: expanding (prox/2)||x||^2 - <center, x> + const
            # cancels (terms of size inv_tau ||x||^2) and hides the decrease a line search must see
            dk = x - xk
            value = 0.5 * inv_tau * float(dk @ dk)
            grad = inv_tau * dk
            if ridge:
                value += 0.5 * ridge * float(x @ x)
                grad += ridge * x
            if xt is not None:
                dt = x - xt
                value += 0.5 * c * float(dt @ dt)
                grad += c * dt
            return value, grad

        floor = 1e-10 * float(np.abs(W) @ self.row_norms()) * (1.0 if self.n_outputs == 1 else math.sqrt(2.0))

        n, J = self.n_samples, self.n_outputs
        binary = J == 1
        losses = np.empty(n)
        D = np.empty(n) if binary else np.empty((n, J))       # p - y
        H = np.empty(n) if binary else np.empty((n, J))       # p(1-p) (binary) / unused
        ones = np.ones(n)
        cache = {"x": None}
        shape = self._shape
        grad_out = np.empty(shape)

        def evaluate(xflat):
            if cache["x"] is not None and np.array_equal(xflat, cache["x"]):
                return cache["value"], cache["grad"]
            x = xflat.reshape(shape)
            F = np.ascontiguousarray(self._matvec(x))
            if binary:
                logistic_grad_hess(F, self.labels, ones, None, 0.0, None, 0.0, D, H)
                logistic_losses(F, self.labels, losses)
                R = W * D
            else:
                softmax_grad_hess(F, self.labels, ones, None, 0.0, None, 0.0, D, H)
                softmax_losses(F, self.labels, losses)
                R = W[:, None] * D
            q_value, q_grad = quadratic(xflat)
            value = float(W @ losses) + q_value
            self._rmatvec(R, grad_out)
            grad = grad_out.ravel() + q_grad
            cache.update(x=xflat.copy(), value=value, grad=grad, F=F)
            counter["evaluations"] += 1
            return value, grad

        def hessp(xflat, v):
            evaluate(xflat)
            V = v.reshape(shape)
            U = self._matvec(V)
            if binary:
                S = (W * H) * U
            else:
                P = D + self._onehot
                S = W[:, None] * (P * U - P * np.einsum("ij,ij->i", P, U)[:, None])
            out = np.empty(shape)
            self._rmatvec(S, out)
            counter["hessp"] += 1
            return out.ravel() + prox * v

        counter = {"evaluations": 0, "hessp": 0, "iterations": 0}

        def callback(intermediate_result):
            counter["iterations"] += 1
            _, g = evaluate(intermediate_result.x)
            if float(np.linalg.norm(g)) <= target:
                raise StopIteration

        x_start = anchor_k.x.ravel().astype(np.float64)
        psi0, g0 = evaluate(x_start)
        floor = max(floor, math.sqrt(2.0 * m * 16.0 * np.finfo(np.float64).eps * abs(psi0)))
        target = math.sqrt(2.0 * accuracy * m) if accuracy is not None else 0.0
        target = max(target, floor, 1e-300)
        if float(np.linalg.norm(g0)) <= target:
            x_best = x_start
        else:
            # the solvers' vector work has p·J entries and the dot products over n rows are short:
            # OpenBLAS threads spinning on a shared machine made an Adult prox step much slower
            # (docs/measurements.md) - as in augmented_lagrangian
            import scipy.optimize  # both imported on first use, not at `import fastcon`
            from threadpoolctl import threadpool_limits

            with threadpool_limits(1, user_api="blas"):
                if self.solver == "newton-cg":
                    res = scipy.optimize.minimize(evaluate, x_start, jac=True, hessp=hessp, method="Newton-CG",
                                                  callback=callback, options={"xtol": 1e-300, "maxiter": 500})
                else:
                    res = scipy.optimize.minimize(evaluate, x_start, jac=True, method="L-BFGS-B", callback=callback,
                                                  options={"gtol": 0.0, "ftol": 0.0, "maxiter": 15000,
                                                           "maxcor": 20})
            x_best = res.x
        _, g = evaluate(x_best)
        gnorm = float(np.linalg.norm(g))
        self.last_prox_info = {"iterations": counter["iterations"], "evaluations": counter["evaluations"],
                               "hessian_products": counter["hessp"], "gradient_norm": gnorm, "target": target,
                               "met": gnorm <= target * (1 + 1e-12), "strong_convexity": m}
        state = LinearState(x_best.reshape(shape))
        if cache["x"] is not None and np.array_equal(cache["x"], x_best):
            F = cache["F"]
            F.setflags(write=False)
            state._scores = F
        return state
