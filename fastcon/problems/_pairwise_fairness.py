r"""Pairwise quadratic fairness constraints and the Euclidean projection onto them.

The in-processing baselines of He, Huang, Yao & Lin [HHYL25] Appendix D.3.1 (group AUC, inter-group
and intra-group pairwise fairness, eqs. 66, 69, 71) replace each pair indicator by the quadratic
surrogate :math:`\sigma(x) = \frac12(1+x)^2` (eq. 67). For a linear score the mean over all pairs of
two sample sets has the closed form

.. math::

    T_{X,Y}(w) = \tfrac12\bigl[1 + 2w^\top\Delta + w^\top(C_X + C_Y + \Delta\Delta^\top)w\bigr],

so every constraint is a convex quadratic, computed once in :math:`O(n d^2)`. `qcqp_projection`
solves the projection subproblems (72)–(74) exactly through the concave Lagrangian dual.
Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._validation import check_x

__all__ = ["PAIRWISE_KINDS", "QuadraticConstraints", "pairwise_fairness_constraints", "QCQPProjection",
           "qcqp_projection"]

#: The baselines of [HHYL25] Appendix D.3.1, by the equation of their constraint.
PAIRWISE_KINDS = {"group_auc": "(66)", "inter_group": "(69)", "intra_group": "(71)"}

# A_j counts as PSD when its smallest eigenvalue is >= -_PSD_SLACK * max(1, largest |eigenvalue|):
# covariances built as E[xx^T] - m m^T carry rounding of that relative size.
_PSD_SLACK = 1e-10


# ---------------------------------------------------------------------------- constraint container
class QuadraticConstraints:
    r"""Convex quadratic constraints :math:`q_j(w) = \frac12 w^\top A_j w + b_j^\top w + c_j \le 0`, :math:`j < m`.

    Parameters
    ----------
    A : array-like of shape (m, d, d)
        Symmetric positive semidefinite Hessians (symmetric to rounding; stored symmetrised).
    b : array-like of shape (m, d)
    c : array-like of shape (m,)
    names : sequence of str, optional
        One label per constraint (default ``"q0"``, ``"q1"``, ...).

    Attributes
    ----------
    A, b, c : ndarray
        As above (float64, read-only copies).
    names : list of str
    n_constraints : int
        :math:`m`.
    n_features : int
        :math:`d`.
    shared_hessian : bool
        All :math:`A_j` are equal (two groups in `pairwise_fairness_constraints`); `qcqp_projection`
        then works in the eigenbasis of :math:`A_0`.
    pairs : ndarray of shape (m, 2) or None
        The ordered group pair :math:`(k, k')` of each constraint, when built by
        `pairwise_fairness_constraints`.
    """

    def __init__(self, A, b, c, names=None):
        A = _real_array(A, "A", 3)
        m, d = A.shape[0], A.shape[1]
        if A.shape[2] != d:
            raise ValueError(f"A: expected shape (m, d, d), got {A.shape}")
        b = _real_array(b, "b", 2)
        if b.shape != (m, d):
            raise ValueError(f"b: expected shape ({m}, {d}) to match A, got {b.shape}")
        c = _real_array(c, "c", 1)
        if c.shape != (m,):
            raise ValueError(f"c: expected shape ({m},) to match A, got {c.shape}")
        if m == 0:
            raise ValueError("A: needs at least one constraint, got m = 0")
        for j in range(m):
            asym = float(np.max(np.abs(A[j] - A[j].T)))
            if asym > 1e-12 * max(1.0, float(np.max(np.abs(A[j])))):
                raise ValueError(f"A: matrix {j} is not symmetric (max |A - A^T| = {asym:.3g})")
        A = 0.5 * (A + np.transpose(A, (0, 2, 1)))
        if names is None:
            names = [f"q{j}" for j in range(m)]
        names = [str(s) for s in names]
        if len(names) != m:
            raise ValueError(f"names: expected {m} names, got {len(names)}")
        self.shared_hessian = all(np.array_equal(A[0], A[j]) for j in range(1, m))
        # Eigendecompositions of the distinct Hessians: the PSD check, and the basis of the shared case.
        eig, first = {}, {}
        for j in range(m):
            key = next((i for i in first.values() if np.array_equal(A[i], A[j])), None)
            if key is None:
                first[j] = j
                lam, Q = np.linalg.eigh(A[j])
                floor = -_PSD_SLACK * max(1.0, float(np.max(np.abs(lam))))
                if lam[0] < floor:
                    raise ValueError(f"A: matrix {j} is not positive semidefinite (smallest eigenvalue "
                                     f"{lam[0]:.6g}); the constraint set must be convex")
                eig[j] = (np.maximum(lam, 0.0), Q)
        self._eig = eig[0] if self.shared_hessian else None
        for arr in (A, b, c):
            arr.flags.writeable = False
        self.A, self.b, self.c = A, b, c
        self.names = names
        self.n_constraints, self.n_features = m, d
        self.pairs = None

    def __repr__(self):
        return f"QuadraticConstraints(m={self.n_constraints}, d={self.n_features})"

    def values(self, w) -> np.ndarray:
        r""":math:`q_j(w)` for every :math:`j`, shape (m,)."""
        w = check_x(w, self.n_features, "w")
        Aw = self.A @ w
        return 0.5 * (Aw @ w) + self.b @ w + self.c

    def gradients(self, w) -> np.ndarray:
        r"""Rows :math:`\nabla q_j(w) = A_j w + b_j`, shape (m, d)."""
        w = check_x(w, self.n_features, "w")
        return self.A @ w + self.b

    def max_violation(self, w) -> float:
        r""":math:`\max(0, \max_j q_j(w))`."""
        return max(0.0, float(np.max(self.values(w))))

    def project(self, z, **kwargs) -> QCQPProjection:
        """`qcqp_projection` of ``z`` onto these constraints (keywords are passed on)."""
        return qcqp_projection(z, self, **kwargs)


def _real_array(value, field, ndim):
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field}: cannot be read as a float64 array ({exc})") from None
    if arr.ndim != ndim:
        raise ValueError(f"{field}: expected a {ndim}-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{field}: contains NaN or inf")
    return arr


# ---------------------------------------------------------------------------- the baselines' constraints
def _cell_moments(X, rows):
    """``(mean (d,), population covariance (d, d))`` of the rows ``rows`` of X (dense or CSR)."""
    n = rows.shape[0]
    Xc = X[rows]
    if sp.issparse(Xc):
        # Never densify X: E[x x^T] from one sparse product (O(sum of nnz_i^2)), d x d dense after.
        mean = np.asarray(Xc.sum(axis=0)).ravel() / n
        second = (Xc.T @ Xc).toarray() / n
        cov = second - np.outer(mean, mean)
    else:
        mean = Xc.mean(axis=0)
        centred = Xc - mean       # centring first avoids the cancellation of E[xx^T] - m m^T
        cov = centred.T @ centred / n
    return mean, 0.5 * (cov + cov.T)


def pairwise_fairness_constraints(X, y, groups, kind, bound) -> QuadraticConstraints:
    r"""Pairwise quadratic fairness constraints of [HHYL25] eqs. (66), (69), (71), one per ordered group pair.

    See the module docstring for the three models. For a linear score :math:`h(\xi) = w^\top\tilde x`
    the pair terms are the closed form
    :math:`T_{X,Y}(w) = \frac12[1 + 2w^\top\Delta + w^\top(C_X + C_Y + \Delta\Delta^\top)w]`, so constraint
    :math:`j = (k, k')` is :math:`\frac12 w^\top A_j w + b_j^\top w + c_j \le 0` with

    - group AUC (66): :math:`A_j = C_k + C_{k'} + \Delta\Delta^\top`, :math:`b_j = \Delta = m_k - m_{k'}`;
    - inter-group (69): the sums of these over the pairs :math:`(\mathcal D_{k,+}, \mathcal D_{k',-})` and
      :math:`(\mathcal D_{k,-}, \mathcal D_{k',+})`;
    - intra-group (71): over :math:`(\mathcal D_{k,+}, \mathcal D_{k,-})` and
      :math:`(\mathcal D_{k',-}, \mathcal D_{k',+})`;

    and :math:`c_j = -\kappa` in all three (the ½ of each pair term cancels the ½ or 1 of the model).
    At :math:`w = 0` every constraint equals :math:`-\kappa`.

    Parameters
    ----------
    X : (n, d) dense array or scipy sparse matrix
        The design :math:`\tilde X` the score is linear in, constant column included when there is an
        intercept (e.g. the cross-term features :math:`(1, \xi, \gamma, \gamma\xi)`). Sparse input is
        used through sparse products only (never densified); moments cost :math:`O(n d^2)` dense,
        :math:`O(\sum_i \mathrm{nnz}_i^2)` sparse, plus :math:`d \times d` dense matrices.
    y : (n,) array
        Labels, -1/+1 (0/1 and bool are read as -1/+1, as by `fastcon.datasets.Dataset`). Only the
        inter- and intra-group models read them.
    groups : (n,) array of int
        Group ids :math:`0..G-1`, :math:`G \ge 2`, every group non-empty.
    kind : {"group_auc", "inter_group", "intra_group"}
    bound : float
        The bound :math:`\kappa` (finite; the quadratic surrogate is unbounded, so it may exceed 1;
        [HHYL25] Appendix D.3.2 uses 0.06..15). A negative :math:`\kappa` can make the set empty.

    Returns
    -------
    QuadraticConstraints
        :math:`m = G(G-1)` constraints ordered :math:`(0,1), (0,2), \dots, (1,0), (1,2), \dots`
        (``pairs`` holds them), named ``"<kind>(k,k')"``.

    Raises
    ------
    ValueError
        Malformed X, y or groups (message starting with the argument's name); a cell
        :math:`\mathcal D_{k,\pm}` that the model needs is empty; unknown ``kind``; non-finite ``bound``.
    """
    from ..datasets import Dataset   # datasets sits below problems; lazy like _roc_fairness

    if kind not in PAIRWISE_KINDS:
        raise ValueError(f"kind: expected one of {tuple(PAIRWISE_KINDS)}, got {kind!r}")
    if isinstance(bound, (bool, np.bool_)) or not isinstance(bound, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"bound: expected a number, got {type(bound).__name__} {bound!r}")
    bound = float(bound)
    if not math.isfinite(bound):
        raise ValueError(f"bound: must be finite, got {bound!r}")
    if groups is None:
        raise ValueError("groups: pairwise fairness needs group ids 0..G-1, got None")
    # The Dataset checks X (shape, NaN, sparse structure), y (binary labels) and groups (ids, no
    # empty group) with the library's wording; copy=False reads the caller's arrays where it can.
    ds = Dataset(X, y, groups=groups, task="binary", copy=False)
    G = ds.n_groups
    if G < 2:
        raise ValueError(f"groups: pairwise fairness needs at least two groups, got {G}")
    Xd = ds.X
    label = ds.y > 0
    moments = {}

    def cell(k, sign):
        key = (k, sign)
        if key not in moments:
            mask = ds.groups == k
            if sign is not None:
                mask &= label if sign > 0 else ~label
            rows = np.flatnonzero(mask)
            if rows.size == 0:
                which = "positive" if sign > 0 else "negative"
                raise ValueError(f"y: group {k} has no {which} rows; the {kind} model {PAIRWISE_KINDS[kind]} "
                                 f"needs both labels in every group")
            moments[key] = _cell_moments(Xd, rows)
        return moments[key]

    def pair_term(a, b_):
        (ma, Ca), (mb, Cb) = cell(*a), cell(*b_)
        delta = ma - mb
        return Ca + Cb + np.outer(delta, delta), delta

    d = Xd.shape[1]
    pairs = [(k, k2) for k in range(G) for k2 in range(G) if k2 != k]
    A = np.empty((len(pairs), d, d))
    b = np.empty((len(pairs), d))
    index = {pair: j for j, pair in enumerate(pairs)}
    for j, (k, k2) in enumerate(pairs):
        if k2 < k:
            # (k, k') and (k', k) have the same Hessian and opposite linear terms (the pair terms are
            # symmetric in their covariances): copy, so that two groups share A bit for bit.
            A[j], b[j] = A[index[(k2, k)]], -b[index[(k2, k)]]
            continue
        if kind == "group_auc":
            terms = [((k, None), (k2, None))]
        elif kind == "inter_group":
            terms = [((k, +1), (k2, -1)), ((k, -1), (k2, +1))]
        else:
            terms = [((k, +1), (k, -1)), ((k2, -1), (k2, +1))]
        A[j], b[j] = 0.0, 0.0
        for a_cell, b_cell in terms:
            Aj, bj = pair_term(a_cell, b_cell)
            A[j] += Aj
            b[j] += bj
    names = [f"{kind}({k},{k2})" for k, k2 in pairs]
    out = QuadraticConstraints(A, b, np.full(len(pairs), -bound), names=names)
    out.pairs = np.array(pairs, dtype=np.int64)
    out.kind, out.bound = kind, bound
    return out


# ---------------------------------------------------------------------------- projection
class QCQPProjection(NamedTuple):
    r"""Result of `qcqp_projection`.

    Attributes
    ----------
    w : ndarray of shape (d,)
        The projection. On ``"infeasible"``: for :math:`m = 1` a minimiser of :math:`q` (the least
        violating point), for :math:`m \ge 2` the point :math:`w(\lambda)` of the last multipliers,
        which approaches a minimiser of the weighted violation :math:`\sum_j \mu_j q_j`.
    multipliers : ndarray of shape (m,)
        :math:`\lambda \ge 0`; with ``w`` they satisfy
        :math:`w - z + \sum_j \lambda_j (A_j w + b_j) = 0` to rounding (``inf`` for an infeasible
        single constraint, whose dual is unbounded).
    iterations : int
        Dual iterations (0 when ``z`` is already feasible).
    max_violation : float
        :math:`\max(0, \max_j q_j(w))`.
    converged : bool
        ``status == "converged"``.
    status : str
        ``"converged"``; ``"infeasible"`` (a certificate :math:`\mu \ge 0` with
        :math:`\min_w \sum_j \mu_j q_j(w) > 0` was found: no point satisfies the constraints);
        ``"max_iter"`` (the budget ran out, or the multipliers grew past :math:`10^{300}` without a
        certificate); ``"stalled"`` (no step improved the dual at rounding level).
    message : str
    """

    w: np.ndarray
    multipliers: np.ndarray
    iterations: int
    max_violation: float
    converged: bool
    status: str
    message: str


class _Dual:
    r"""The dual function :math:`\phi(\lambda) = \min_w \frac12\|w - z\|^2 + \sum_j \lambda_j q_j(w)` and its derivatives.

    :math:`w(\lambda) = H^{-1}(z - B^\top\lambda)`, :math:`H = I + \sum_j \lambda_j A_j`;
    :math:`\nabla\phi = q(w(\lambda))`, :math:`\nabla^2\phi = -G H^{-1} G^\top` with rows
    :math:`G_j = A_j w(\lambda) + b_j`. Shared Hessian: everything in the eigenbasis of :math:`A`
    (:math:`O(dm^2)` per evaluation); otherwise a Cholesky factor of :math:`H` (:math:`O(d^3)`).
    """

    def __init__(self, z, cons, tol):
        self.cons, self.z, self.tol = cons, z, tol
        self.shared = cons.shared_hessian
        if self.shared:
            self.lam, self.Q = cons._eig
            self.zh = self.Q.T @ z
            self.Bh = cons.b @ self.Q

    def evaluate(self, lam):
        """``(phi, q, hess, thresh, u)`` at ``lam`` (``u``: w in the solver's coordinates), None if H fails.

        ``thresh`` is the accuracy asked of each :math:`q_j` (`_thresholds`).
        """
        import scipy.linalg as sla  # here, not at import: scipy.linalg costs ~80 ms to import

        c = self.cons.c
        if self.shared:
            D = 1.0 + lam.sum() * self.lam
            u = (self.zh - lam @ self.Bh) / D
            Lu = self.lam * u
            quad = 0.5 * float(Lu @ u)
            lin = self.Bh @ u
            G = Lu[None, :] + self.Bh
            hess = (G / D) @ G.T
            dist = 0.5 * float((u - self.zh) @ (u - self.zh))
        else:
            A, B = self.cons.A, self.cons.b
            H = np.eye(A.shape[1]) + np.tensordot(lam, A, axes=1)
            try:
                factor = sla.cho_factor(H, lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                return None
            u = sla.cho_solve(factor, self.z - lam @ B, check_finite=False)
            Au = A @ u
            quad = 0.5 * (Au @ u)
            lin = B @ u
            G = Au + B
            hess = G @ sla.cho_solve(factor, G.T, check_finite=False)
            dist = 0.5 * float((u - self.z) @ (u - self.z))
        q = quad + lin + c
        thresh = _thresholds(self.tol, c, lin, quad)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(hess))):
            return None
        return dist + float(lam @ q), q, hess, thresh, u

    def point(self, u):
        return self.Q @ u if self.shared else u


def _thresholds(tol, c, lin, quad):
    r"""Accuracy asked of :math:`q_j`: :math:`\mathrm{tol}(1 + |c_j|)`, but not below what rounding can resolve.

    :math:`q_j = \frac12 w^\top A_j w + b_j^\top w + c_j` is computed with an error of a few ulps of
    its largest term (``quad`` :math:`\ge 0` as :math:`A_j` is PSD), so the floor is
    :math:`10^3\,\varepsilon_{\mathrm{mach}}(|c_j| + |b_j^\top w| + \frac12 w^\top A_j w)`.
    """
    return np.maximum(tol * (1.0 + np.abs(c)), 1e3 * np.finfo(np.float64).eps * (np.abs(c) + np.abs(lin) + quad))


def _certificate(cons, mu):
    r""":math:`\min_w \sum_j \mu_j q_j(w)` (``-inf`` when unbounded below); > 0 proves infeasibility."""
    b, c = mu @ cons.b, float(mu @ cons.c)
    if cons.shared_hessian:     # sum_j mu_j A = (sum mu) A: reuse the cached eigenbasis
        lam, Q = float(mu.sum()) * cons._eig[0], cons._eig[1]
    else:
        lam, Q = np.linalg.eigh(np.tensordot(mu, cons.A, axes=1))
    bh = Q.T @ b
    flat = lam <= 1e-12 * max(1.0, float(np.max(np.abs(lam))))
    if np.any(np.abs(bh[flat]) > 1e-9 * max(1.0, float(np.linalg.norm(b)))):
        return -math.inf, None
    # minimiser in the eigenbasis: -b/lam on the curved directions, anything (0) on the flat ones
    u = np.zeros_like(bh)
    u[~flat] = -bh[~flat] / lam[~flat]
    return c + 0.5 * float(bh[~flat] @ u[~flat]), Q @ u


def _check_projection_args(z, constraints, tol, max_iter, multipliers0):
    if not isinstance(constraints, QuadraticConstraints):
        raise TypeError(f"constraints: expected a QuadraticConstraints, got {type(constraints).__name__}")
    z = check_x(z, constraints.n_features, "z")
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (numbers.Real, np.floating)):
        raise TypeError(f"tol: expected a number, got {type(tol).__name__} {tol!r}")
    if not (math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol: must be positive and finite, got {tol!r}")
    if (isinstance(max_iter, (bool, np.bool_)) or not isinstance(max_iter, (numbers.Integral, np.integer))
            or max_iter < 1):
        raise ValueError(f"max_iter: must be an integer >= 1, got {max_iter!r}")
    m = constraints.n_constraints
    if multipliers0 is None:
        lam0 = np.zeros(m)
    else:
        lam0 = np.array(multipliers0, dtype=np.float64)
        if lam0.shape != (m,):
            raise ValueError(f"multipliers0: expected shape ({m},), got {lam0.shape}")
        if not (np.all(np.isfinite(lam0)) and np.all(lam0 >= 0.0)):
            raise ValueError("multipliers0: must be finite and non-negative")
    return z, float(tol), int(max_iter), lam0


def qcqp_projection(z, constraints, *, tol=1e-10, max_iter=100, multipliers0=None) -> QCQPProjection:
    r"""Euclidean projection onto convex quadratic constraints, by an exact dual method.

    Solves

    .. math::

        \min_w \tfrac12\|w - z\|^2 \quad\text{s.t.}\quad q_j(w) = \tfrac12 w^\top A_j w + b_j^\top w + c_j
        \le 0,\ j = 1..m,

    the projection step (72)–(74) of the baselines of He, Huang, Yao & Lin [HHYL25] Appendix D.3.2.
    For :math:`\lambda \ge 0` the Lagrangian is minimised by
    :math:`w(\lambda) = (I + \sum_j\lambda_j A_j)^{-1}(z - \sum_j\lambda_j b_j)`; the dual
    :math:`\phi(\lambda)` is concave and smooth with :math:`\nabla\phi(\lambda) = q(w(\lambda))` and
    :math:`\nabla^2\phi(\lambda) = -G H^{-1} G^\top` (rows :math:`G_j = \nabla q_j(w(\lambda))`). It is
    maximised over :math:`\lambda \ge 0`:

    - :math:`m = 1`: the root of the decreasing scalar :math:`\lambda \mapsto q(w(\lambda))` by Newton's
      method safeguarded by a bracket (bisection whenever Newton leaves it or fails to halve it), in the
      eigenbasis of :math:`A`: :math:`O(d)` per evaluation;
    - :math:`m \ge 2`: Bertsekas' projected Newton method (*Projected Newton methods for optimization
      problems with simple constraints*, SIAM J. Control Optim. 1982): Newton on the multipliers that
      are not at an active bound, a scaled gradient step on those that are, Armijo search along the
      projection arc (a step that halves the best KKT residual is also accepted, which keeps the
      final quadratic steps when :math:`\phi` is flat to rounding). Every limit point is a dual
      maximiser; near a non-degenerate solution the rate is quadratic. Equal :math:`A_j` (two groups)
      are handled in their eigenbasis, :math:`O(dm^2)` per evaluation; distinct ones by a Cholesky
      factor of :math:`H` per evaluation, :math:`O(d^3)`.

    The KKT conditions at the output: stationarity :math:`w - z + \sum_j\lambda_j(A_j w + b_j) = 0` holds
    to rounding by construction; the method stops when the natural residual
    :math:`|\min(\lambda_j, -q_j(w))| \le \mathrm{tol}\,(1 + |c_j|)` for every :math:`j` (primal
    feasibility and complementarity), the bound being raised to what rounding can resolve when the
    terms of :math:`q_j` are large: :math:`10^3\varepsilon_{\mathrm{mach}}(|c_j| + |b_j^\top w| +
    \frac12 w^\top A_j w)`.

    Infeasible constraint sets are reported, never raised: the multipliers then grow without bound
    along a direction :math:`\mu`, and :math:`\min_w \sum_j \mu_j q_j(w) > 0` certifies that no point
    is feasible (:math:`m = 1`: checked before iterating). Without such a certificate (e.g. a
    feasible set with no interior, where the dual supremum is not attained) the iterations end
    at ``max_iter``, whatever happens.

    Parameters
    ----------
    z : array-like of shape (d,)
        The point to project.
    constraints : QuadraticConstraints
    tol : float
        Relative KKT tolerance (> 0), see above.
    max_iter : int
        Dual iterations (Newton steps; line-search trials are not counted) at most.
    multipliers0 : array-like of shape (m,), optional
        Warm start for :math:`m \ge 2` (e.g. the previous projection's multipliers in a projected
        gradient loop); default 0. Ignored for :math:`m = 1`, whose bracketing starts at 0.

    Returns
    -------
    QCQPProjection
        ``(w, multipliers, iterations, max_violation, converged, status, message)``.
    """
    z, tol, max_iter, lam = _check_projection_args(z, constraints, tol, max_iter, multipliers0)
    cons = constraints
    q_z = cons.values(z)
    if np.all(q_z <= _thresholds(tol, cons.c, cons.b @ z, 0.5 * ((cons.A @ z) @ z))):
        return QCQPProjection(z.copy(), np.zeros(cons.n_constraints), 0, max(0.0, float(np.max(q_z))), True,
                              "converged", "z is feasible: the projection is z")
    dual = _Dual(z, cons, tol)
    if cons.n_constraints == 1:
        return _project_one(dual, cons, tol, max_iter)
    return _project_many(dual, cons, tol, max_iter, lam)


def _result(dual, cons, lam, u, iterations, status, message):
    w = dual.point(u)
    viol = max(0.0, float(np.max(cons.values(w))))
    return QCQPProjection(w, lam.copy(), int(iterations), viol, status == "converged", status, message)


def _project_one(dual, cons, tol, max_iter):
    """m = 1: safeguarded Newton on the decreasing root function lambda -> q(w(lambda)) (q(w(0)) > 0)."""
    bound, w_min = _certificate(cons, np.ones(1))
    if bound > tol * (1.0 + abs(float(cons.c[0]))):
        # No w has q(w) <= 0; w_min minimises q and is returned as the least-violating point.
        viol = float(cons.values(w_min)[0])
        return QCQPProjection(w_min, np.full(1, math.inf), 0, max(0.0, viol), False, "infeasible",
                              f"infeasible: min_w q(w) = {bound:.6g} > 0")
    lo, hi = 0.0, math.inf
    lam = np.zeros(1)
    state = dual.evaluate(lam)
    last_step = prev_step = math.inf
    for it in range(1, max_iter + 1):
        _, q, hess, _, _ = state
        slope = -float(hess[0, 0])     # d q / d lambda <= 0
        newton = lam[0] - float(q[0]) / slope if slope < 0.0 else math.inf
        if math.isinf(hi):
            # No upper bracket yet: Newton from the left (grow at least geometrically so an
            # unattained supremum cannot crawl).
            trial = newton if math.isfinite(newton) else max(1.0, 4.0 * lam[0])
            trial = max(trial, 2.0 * lam[0])
        elif lo < newton < hi and abs(newton - lam[0]) <= 0.5 * abs(prev_step):
            trial = newton
        else:
            trial = 0.5 * (lo + hi)
        if not (trial < 1e300):
            return _result(dual, cons, lam, state[4], it, "max_iter",
                           "max_iter: the multiplier passed 1e300 without a certificate of infeasibility")
        prev_step, last_step = last_step, trial - lam[0]
        lam = np.array([trial])
        new = dual.evaluate(lam)
        if new is None:
            return _result(dual, cons, np.array([lo]), dual.evaluate(np.array([lo]))[4], it, "stalled",
                           "stalled: I + lambda A lost definiteness to rounding")
        state = new
        _, q, _, thresh, u = state
        r = float(q[0])
        if abs(min(lam[0], -r)) <= float(thresh[0]):
            return _result(dual, cons, lam, u, it, "converged", f"converged in {it} iterations")
        if r > 0.0:
            lo = lam[0]
        else:
            hi = lam[0]
        if math.isfinite(hi) and hi - lo <= 4e-16 * hi:
            return _result(dual, cons, lam, u, it, "stalled",
                           f"stalled: the bracket on lambda shrank to rounding with q = {r:.3g}")
    return _result(dual, cons, lam, state[4], max_iter, "max_iter", f"max_iter: {max_iter} iterations")


def _project_many(dual, cons, tol, max_iter, lam):
    """m >= 2: projected Newton (Bertsekas 1982) on psi = -phi over lambda >= 0."""
    import scipy.linalg as sla  # here, not at import: scipy.linalg costs ~80 ms to import

    m = cons.n_constraints
    state = dual.evaluate(lam)
    if state is None:  # a warm start so large that H lost definiteness: restart from 0
        lam = np.zeros(m)
        state = dual.evaluate(lam)
    sigma, eps_bar = 1e-4, 1e-3
    next_check = 1e6
    phi, q, hess, thresh, u = state
    best_res = math.inf
    for it in range(1, max_iter + 1):
        res_vec = np.abs(np.minimum(lam, -q))
        if np.all(res_vec <= thresh):
            return _result(dual, cons, lam, u, it - 1, "converged", f"converged in {it - 1} iterations")
        best_res = min(best_res, float(np.max(res_vec / thresh)))
        g = -q                                         # gradient of psi
        eps_k = min(eps_bar, float(np.linalg.norm(np.minimum(lam, g))))
        active = (lam <= eps_k) & (g > 0.0)
        free = ~active
        d = np.zeros(m)
        hdiag = np.diag(hess)
        reg = 1e-12 * max(1.0, float(np.max(hdiag)))   # keeps the scaling uniformly positive definite
        if np.any(free):
            Hf = hess[np.ix_(free, free)] + reg * np.eye(int(free.sum()))
            try:
                d[free] = sla.solve(Hf, g[free], assume_a="pos", check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                d[free] = np.linalg.lstsq(Hf, g[free], rcond=None)[0]
        d[active] = g[active] / np.maximum(hdiag[active], reg)
        alpha, accepted = 1.0, None
        for _ in range(60):
            trial = np.maximum(lam - alpha * d, 0.0)
            new = dual.evaluate(trial)
            if new is not None:
                gain = new[0] - phi                      # psi(lam) - psi(trial)
                want = sigma * (alpha * float(g[free] @ d[free]) + float(g[active] @ (lam - trial)[active]))
                res_new = float(np.max(np.abs(np.minimum(trial, -new[1])) / new[3]))
                if gain >= want or res_new <= 0.5 * best_res:
                    accepted = trial, new
                    break
            alpha *= 0.5
        if accepted is None:
            return _result(dual, cons, lam, u, it, "stalled",
                           f"stalled: no step improved the dual (KKT residual {best_res:.3g})")
        lam, state = accepted
        phi, q, hess, thresh, u = state
        total = float(lam.sum())
        if total >= next_check:
            # Growing multipliers: an infeasible set shows itself by a positive bound along lam/|lam|.
            next_check = 10.0 * total
            bound, _ = _certificate(cons, lam / total)
            if bound > tol * (1.0 + float(np.abs(cons.c).max())):
                return _result(dual, cons, lam, u, it, "infeasible",
                               f"infeasible: min_w sum_j mu_j q_j(w) = {bound:.6g} > 0 for mu = lambda/sum(lambda)")
            if total > 1e300:
                return _result(dual, cons, lam, u, it, "max_iter",
                               "max_iter: the multipliers passed 1e300 without a certificate of infeasibility")
    res_vec = np.abs(np.minimum(lam, -q))
    if np.all(res_vec <= thresh):
        return _result(dual, cons, lam, u, max_iter, "converged", f"converged in {max_iter} iterations")
    return _result(dual, cons, lam, u, max_iter, "max_iter", f"max_iter: {max_iter} iterations")
