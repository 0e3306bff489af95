r"""Hinge-loss ERM and the hinge-constrained problem of Huang & Lin [HL23] §6 (see docs/references.md).

The fairness problems of [HL23] (ROC fairness, eqs. 11-12; Wasserstein fairness, eqs. 13-14)
share one constraint: the training hinge risk may exceed its minimum by at most :math:`\kappa`,

.. math::

    L(w) = \frac1n \sum_{i=1}^n (1 - b_i a_i^\top w)_+, \qquad
    L^* = \min_w L(w) \quad \text{(eq. 10)}, \qquad
    g(w) = L(w) - L^* - \kappa \le 0, \quad \kappa = 10^{-3} L^*,

over the ball :math:`\{\|w\| \le 5 \|w_{ERM}\|\}`, starting at :math:`w_{ERM}` (feasible,
:math:`g = -\kappa`; the paper does not state a start). Because :math:`\kappa` is tiny, :math:`L^*`
must be exact: an error of 0.05 % in :math:`L^*` moves the effective :math:`\kappa` by 50 %.
`erm_optimum` therefore solves (10) as a linear program with HiGHS by default, and keeps the
paper's subgradient method as an option.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ._compose import less_equal
from ._domains import Ball
from ._margin_risk import hinge_risk
from ._problem import ConstrainedProblem

__all__ = ["ErmResult", "erm_optimum", "hinge_constraint", "hinge_constrained_problem"]

#: Largest accepted gap between the LP objective and the hinge risk recomputed at the LP's ``w``.
VERIFY_TOL = 1e-9


@dataclass
class ErmResult:
    r"""Minimum of the hinge risk, [HL23] eq. (10).

    Attributes
    ----------
    value : float
        :math:`L^* = L(w)`, the hinge risk **recomputed at** ``w`` with `hinge_risk` (so that
        :math:`g(w_{ERM}) = -\kappa` holds to round-off whatever the solver's own tolerances).
    w : ndarray of shape (n_features,)
        A minimiser :math:`w_{ERM}`. The hinge ERM is an LP whose optimal face is often not a point:
        different formulations can return minimisers of very different norms (a9a: 7.3 vs 13.5).
    method : {"lp", "subgradient"}
    status : str
        ``"optimal"`` (LP solved and verified), ``"inaccurate"`` (LP solved but the recomputed risk
        differs from the LP objective by more than `VERIFY_TOL`), ``"failed"`` (HiGHS error),
        ``"converged"`` (subgradient method hit a zero subgradient: exact minimiser) or ``"max_iter"``.
    time_s : float
        Wall time of the solve (LP: the ``linprog`` call only; data assembly excluded).
    lp_value : float or None
        The LP's own objective (None for the subgradient method).
    message : str
        HiGHS message or a description of the stopping rule.
    n_iter : int
        HiGHS simplex/IPM iterations, or subgradient iterations.
    formulation : str
        ``"dual"``/``"primal"`` for the LP, ``""`` otherwise.
    extra : dict
        Further details (empty unless a caller adds some).
    """

    value: float
    w: np.ndarray
    method: str
    status: str
    time_s: float
    lp_value: float | None = None
    message: str = ""
    n_iter: int = 0
    formulation: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def norm_w(self) -> float:
        return float(np.linalg.norm(self.w))


def _weights(dataset):
    """Per-row weights :math:`s_i / \\sum s` of the hinge risk (1/n when unweighted), as `hinge_risk`."""
    n = dataset.n_samples
    if dataset.sample_weight is None:
        return np.full(n, 1.0 / n)
    s = np.asarray(dataset.sample_weight, dtype=np.float64)
    return s / s.sum()


def _signed_design(dataset):
    """:math:`\\operatorname{diag}(b) A` as CSR (dense input is converted: HiGHS takes sparse matrices)."""
    X = dataset.X if sp.issparse(dataset.X) else sp.csr_matrix(dataset.X)
    return sp.csr_matrix(sp.diags(dataset.y) @ X)


def _lp_primal(BA, c):
    r"""Variables :math:`(w, \xi)`: min :math:`c^\top \xi` s.t. :math:`-BAw - \xi \le -1`, :math:`\xi \ge 0`."""
    n, d = BA.shape
    A_ub = sp.hstack([-BA, -sp.identity(n, format="csr")], format="csr")
    cost = np.concatenate([np.zeros(d), c])
    bounds = np.zeros((d + n, 2))
    bounds[:d, 0], bounds[:, 1], bounds[:d, 1] = -np.inf, np.inf, np.inf
    from scipy.optimize import linprog  # here, not at import: scipy.optimize costs ~60 ms at `import fastcon`

    res = linprog(cost, A_ub=A_ub, b_ub=-np.ones(n), bounds=bounds, method="highs")
    w = None if res.x is None else np.array(res.x[:d])
    return res, w, None if res.fun is None else float(res.fun)


def _lp_dual(BA, c):
    r"""Dual of the primal LP: max :math:`\sum_i \alpha_i` s.t. :math:`(BA)^\top \alpha = 0`,
    :math:`0 \le \alpha \le c`.

    It has d equality rows instead of n inequality rows, so the simplex basis is d x d: much
    faster than the primal when n >> d (docs/measurements.md). :math:`w` is read off the equality multipliers
    (``w = -marginals``: ``linprog`` minimises :math:`-\sum\alpha`, so the sign flips).
    """
    n, d = BA.shape
    bounds = np.column_stack([np.zeros(n), c])
    from scipy.optimize import linprog  # as in _lp_primal

    res = linprog(-np.ones(n), A_eq=sp.csr_matrix(BA.T), b_eq=np.zeros(d), bounds=bounds, method="highs")
    ok = res.x is not None and getattr(res, "eqlin", None) is not None
    w = -np.array(res.eqlin.marginals) if ok else None
    return res, w, None if res.fun is None else -float(res.fun)


def _subgradient(risk, w0, radius, max_iter, step_size, tol):
    r"""Projected subgradient method with normalised steps :math:`\eta/\sqrt{k+1}`; best iterate."""
    w = np.array(w0, dtype=np.float64)
    ball = None if radius is None else Ball(radius)
    if ball is not None:
        ball.project_inplace(w)
    grad = np.empty_like(w)
    best_v, best_w = np.inf, w.copy()
    status, k = "max_iter", 0
    for k in range(int(max_iter)):
        v = risk.value_and_subgradient(w, grad)
        if v < best_v:
            best_v, best_w[:] = v, w
        gnorm = float(np.linalg.norm(grad))
        # A zero subgradient certifies a global minimiser of the convex risk (e.g. separable data,
        # all margins >= 1); a ball constraint makes it a sufficient, not necessary, condition.
        if gnorm <= tol:
            status = "converged"
            break
        w -= (step_size / np.sqrt(k + 1.0) / gnorm) * grad
        if ball is not None:
            ball.project_inplace(w)
    else:
        k = int(max_iter)
        v = risk.value(w)
        if v < best_v:
            best_v, best_w[:] = v, w
    return best_w, status, k


def erm_optimum(dataset, method="lp", radius=None, max_iter=10000, tol=1e-12, *, formulation="dual",
                step_size=1.0, w0=None) -> ErmResult:
    r"""Minimum :math:`L^*` and a minimiser :math:`w_{ERM}` of the hinge risk ([HL23] eq. 10).

    .. math::

        L^* = \min_w \frac1n \sum_{i=1}^n (1 - b_i a_i^\top w)_+
        \;=\; \min_{w,\ \xi \ge 0} \frac1n \sum_i \xi_i \ \text{ s.t. } \ \xi_i \ge 1 - b_i a_i^\top w

    (with sample weights :math:`s_i` the mean is :math:`\sum_i s_i \xi_i / \sum_i s_i`, as in
    `hinge_risk`).

    Parameters
    ----------
    dataset : fastcon.Dataset
        Binary labels in {-1, +1}; CSR or dense.
    method : {"lp", "subgradient"}
        ``"lp"`` (default): exact LP with scipy ``linprog(method="highs")`` on sparse matrices.
        ``"subgradient"``: projected subgradient method, steps :math:`\eta/\sqrt{k+1}` along the
        normalised subgradient, best iterate returned (mimics the paper's pre-step; inexact).
    radius : float, optional
        Solve over the ball :math:`\|w\| \le r`. Only with ``method="subgradient"``: an LP cannot
        express a Euclidean ball, so ``method="lp"`` with a radius raises ValueError. ([HL23]
        states (10) over the ball of radius :math:`5\|w_{ERM}\|`, which contains :math:`w_{ERM}`, so
        the unconstrained LP answers that problem too.)
    max_iter : int
        Subgradient iterations (ignored by the LP).
    tol : float
        Subgradient method: stop when the subgradient norm is <= tol (exact minimiser). Ignored by
        the LP, which uses HiGHS' default tolerances and is then verified to `VERIFY_TOL`.
    formulation : {"dual", "primal"}
        LP form. ``"primal"`` is the (w, ξ) LP above with an n x (d + n) sparse constraint matrix;
        ``"dual"`` (default) is its dual (see `_lp_dual`), much faster when n >> d. Both give the
        same :math:`L^*`; their :math:`w` may differ (non-unique minimiser).
    step_size : float
        :math:`\eta` of the subgradient method.
    w0 : array-like, optional
        Subgradient starting point (default 0).

    Returns
    -------
    ErmResult
        ``value`` is :math:`L(w)` recomputed with `hinge_risk`; for the LP it is checked against the
        LP objective: a gap above `VERIFY_TOL` gives ``status="inaccurate"`` and a RuntimeWarning.
    """
    if getattr(dataset, "task", "binary") != "binary":
        raise ValueError("dataset: the hinge ERM needs binary labels in {-1, +1}")
    if method not in ("lp", "subgradient"):
        raise ValueError(f"method: expected 'lp' or 'subgradient', got {method!r}")
    if radius is not None:
        radius = float(radius)
        if not radius > 0 or not np.isfinite(radius):
            raise ValueError(f"radius: must be positive and finite, got {radius}")
        if method == "lp":
            raise ValueError("radius: a Euclidean ball cannot be written as LP constraints; use "
                             "method='subgradient' for the ball-constrained ERM (or radius=None: the "
                             "unconstrained minimiser is optimal on any ball that contains it)")
    risk = hinge_risk(dataset)
    d = dataset.n_features

    if method == "subgradient":
        start = np.zeros(d) if w0 is None else np.asarray(w0, dtype=np.float64)
        if start.shape != (d,):
            raise ValueError(f"w0: expected shape ({d},), got {start.shape}")
        t0 = time.perf_counter()
        w, status, n_iter = _subgradient(risk, start, radius, max_iter, float(step_size), float(tol))
        elapsed = time.perf_counter() - t0
        msg = ("zero subgradient (exact minimiser)" if status == "converged"
               else f"{max_iter} iterations; best iterate returned (no optimality certificate)")
        return ErmResult(risk.value(w), w, "subgradient", status, elapsed, None, msg, n_iter, "")

    if formulation not in ("dual", "primal"):
        raise ValueError(f"formulation: expected 'dual' or 'primal', got {formulation!r}")
    BA, c = _signed_design(dataset), _weights(dataset)
    t0 = time.perf_counter()
    res, w, lp_value = (_lp_dual if formulation == "dual" else _lp_primal)(BA, c)
    elapsed = time.perf_counter() - t0
    n_iter = int(getattr(res, "nit", 0) or 0)
    if res.status != 0 or w is None:
        return ErmResult(np.nan, np.full(d, np.nan), "lp", "failed", elapsed, lp_value,
                         f"HiGHS status {res.status}: {res.message}", n_iter, formulation)
    value = risk.value(w)
    status = "optimal"
    if not abs(value - lp_value) <= VERIFY_TOL:
        status = "inaccurate"
        warnings.warn(f"erm_optimum: hinge risk at the LP solution ({value:.15g}) differs from the LP "
                      f"objective ({lp_value:.15g}) by {abs(value - lp_value):.3g} > {VERIFY_TOL:g}",
                      RuntimeWarning, stacklevel=2)
    return ErmResult(value, w, "lp", status, elapsed, lp_value, str(res.message), n_iter, formulation)


def hinge_constraint(constraint_data, relative_bound=1e-3, *, erm=None, bound=None):
    r"""The constraint term :math:`g(w) = L(w) - (L^* + \kappa)` and the ERM it is built on.

    Parameters
    ----------
    constraint_data : fastcon.Dataset
        The data :math:`\mathcal D` of the hinge risk.
    relative_bound : float
        :math:`\kappa_{rel}`: the excess :math:`\kappa = \kappa_{rel} L^*` (paper: 0.001).
    erm : ErmResult, optional
        A precomputed `erm_optimum` (default: the exact LP).
    bound : float, optional
        The excess :math:`\kappa` itself, overriding ``relative_bound`` (e.g. when :math:`L^* = 0`).

    Returns
    -------
    (term, erm, kappa)
        ``term`` is ``less_equal(hinge_risk(constraint_data), L* + kappa)``. To constrain only a block
        of a larger ``x`` (the ``w`` of ``x = (vec P, w)``), wrap it in `BlockTerm`.
    """
    if erm is None:
        erm = erm_optimum(constraint_data)
    if not np.isfinite(erm.value):
        raise ValueError(f"erm: no valid ERM solution (status {erm.status!r}: {erm.message})")
    L_star = float(erm.value)
    if bound is None:
        relative_bound = float(relative_bound)
        if not relative_bound >= 0:
            raise ValueError(f"relative_bound: must be non-negative, got {relative_bound}")
        bound = relative_bound * L_star
    kappa = float(bound)
    if not kappa >= 0 or not np.isfinite(kappa):
        raise ValueError(f"bound: must be non-negative and finite, got {kappa}")
    if kappa == 0:
        # g(w_ERM) = 0: no Slater point (Assumption 3.1 B fails) and Lemma 3.3's multiplier bound is void.
        warnings.warn("hinge_constraint: bound = 0 (L* = 0, separable data?): the constraint has no "
                      "strictly feasible point; pass bound=... to relax it", RuntimeWarning, stacklevel=2)
    return less_equal(hinge_risk(constraint_data), L_star + kappa), erm, kappa


def hinge_constrained_problem(objective, constraint_data, relative_bound=1e-3, radius_factor=5.0, erm=None,
                              x0="erm", *, bound=None, radius=None, name="") -> ConstrainedProblem:
    r"""[HL23] §6.1: :math:`\min_{\|w\| \le r} f(w)` s.t. :math:`L(w) \le L^* + \kappa`.

    .. math::

        \kappa = \kappa_{rel} L^*, \qquad r = \text{radius\_factor} \cdot \|w_{ERM}\|, \qquad
        x_0 = w_{ERM}, \quad g(x_0) = -\kappa,

    with :math:`L` the hinge risk on ``constraint_data`` and :math:`(L^*, w_{ERM})` from
    `erm_optimum` (paper: :math:`\kappa_{rel} = 10^{-3}`, radius factor 5; eq. 10-12).

    Parameters
    ----------
    objective : term
        :math:`f` on :math:`w \in \mathbb R^d` (ROC fairness, a risk, a `custom_term`, ...); its
        ``n_features`` must equal ``constraint_data.n_features``.
    constraint_data : fastcon.Dataset
    relative_bound, radius_factor : float
        :math:`\kappa_{rel}` and the radius factor.
    erm : ErmResult, optional
        Precomputed ERM (default: ``erm_optimum(constraint_data)``, the exact dual LP). The radius
        depends on which minimiser it holds when the minimiser is not unique.
    x0 : "erm", array-like or None
        Starting point: :math:`w_{ERM}` (default), a given vector, or None for zeros.
    bound, radius : float, optional
        Absolute overrides of :math:`\kappa` and :math:`r`.
    name : str

    Returns
    -------
    ConstrainedProblem
        With an ``info`` dict: ``L_star``, ``bound`` (:math:`\kappa`), ``w_erm``, ``radius``, ``erm`` (the
        ErmResult), ``relative_bound``, ``radius_factor``.
    """
    d = constraint_data.n_features
    if int(objective.n_features) != d:
        raise ValueError(f"objective: acts on dimension {objective.n_features} but constraint_data has "
                         f"{d} features; for x = (other blocks, w) compose hinge_constraint with BlockTerm")
    term, erm, kappa = hinge_constraint(constraint_data, relative_bound, erm=erm, bound=bound)
    w_erm = np.array(erm.w, dtype=np.float64)
    if radius is None:
        radius = float(radius_factor) * float(np.linalg.norm(w_erm))
    radius = float(radius)
    if not radius > 0 or not np.isfinite(radius):
        raise ValueError(f"radius: must be positive and finite, got {radius} (||w_ERM|| = "
                         f"{np.linalg.norm(w_erm):.3g}); pass radius=...")
    if isinstance(x0, str):
        if x0 != "erm":
            raise ValueError(f"x0: expected 'erm', an array or None, got {x0!r}")
        x0 = w_erm
    problem = ConstrainedProblem(objective, [term], domain=Ball(radius), x0=x0,
                                 name=name or f"hinge-constrained({getattr(constraint_data, 'name', '')})")
    problem.info = {"L_star": float(erm.value), "bound": kappa, "w_erm": w_erm, "radius": radius, "erm": erm,
                    "relative_bound": float(relative_bound), "radius_factor": float(radius_factor)}
    return problem
