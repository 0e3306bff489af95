r"""Optimality measures of a problem at a point: KKT residual, constraint violation.

The functions accept any object with the `ConstrainedProblem` interface (``f_and_subgradient``,
``g_and_subgradient``, ``constraint_values``, ``domain``, ``dim``, ``objective``, ``constraints``).
They import nothing from ``fastcon.problems`` or ``fastcon.solvers`` (metrics sit below both layers)
and leave the terms' ``rows_read`` counters as they found them (`preserved_counters`, which the
near-stationarity certificate, `fastcon.solvers.near_stationarity`, uses too).
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np


__all__ = ["kkt_residual", "constraint_violation", "preserved_counters"]


# ---------------------------------------------------------------------- counters
def _counter_holders(term, out, seen):
    """Objects that store ``rows_read`` as a plain attribute, found through wrappers (``.term``/``.terms``).

    Wrappers (`ShiftedTerm`, `ProximalTerm`, ...) expose ``rows_read`` as a read-only property that
    forwards to the wrapped term; only the leaf that owns the count can (and must) be restored.
    """
    if term is None or id(term) in seen:
        return out
    seen.add(id(term))
    if "rows_read" in getattr(term, "__dict__", {}):
        out.append(term)
    _counter_holders(getattr(term, "term", None), out, seen)
    for sub in getattr(term, "terms", None) or ():
        _counter_holders(sub, out, seen)
    return out


@contextlib.contextmanager
def preserved_counters(problem):
    """Run a block and then put every term's ``rows_read`` back to its value before the block.

    Certificates are measurements, not part of the algorithm: the data passes they spend must not
    show up in the caller's solver accounting. A term whose counter cannot be found or restored
    triggers a RuntimeWarning (checked through ``problem.rows_read_f/g`` when available).

    Parameters
    ----------
    problem : ConstrainedProblem
        The problem whose terms' ``rows_read`` counters are restored.
    """
    seen = set()
    holders = _counter_holders(problem.objective, [], seen)
    for c in problem.constraints:
        _counter_holders(c, holders, seen)
    saved = [(h, h.rows_read) for h in holders]
    totals = (getattr(problem, "rows_read_f", None), getattr(problem, "rows_read_g", None))
    try:
        yield
    finally:
        for h, value in saved:
            h.rows_read = value
        after = (getattr(problem, "rows_read_f", None), getattr(problem, "rows_read_g", None))
        if after != totals:
            warnings.warn(f"metrics: could not restore the data-pass counters (rows_read f/g {totals} -> "
                          f"{after}); a term keeps its count somewhere other than a rows_read attribute",
                          RuntimeWarning, stacklevel=3)


# ---------------------------------------------------------------------- KKT residual
def kkt_residual(problem, x, multipliers):
    r"""Residuals of the KKT conditions (2) at :math:`x` with multipliers :math:`\lambda_i`.

    .. math::

        r_{stat} = \operatorname{Dist}\Big(\zeta_f + \sum_i \lambda_i \zeta_{g_i},\,
                   -\mathcal N_{\mathcal X}(x)\Big), \quad
        r_{comp} = \max_i |\lambda_i g_i(x)|, \quad
        r_{feas} = \max_i [g_i(x)]_+, \quad
        r_{dual} = \max_i [-\lambda_i]_+ .

    :math:`\zeta_f, \zeta_{g_i}` are the subgradients the oracles return, one element of each
    subdifferential, so :math:`r_{stat}` is an upper bound on the best achievable one at a kink.
    :math:`r_{stat}` is the domain's ``normal_cone_distance`` (for a domain without a closed-form
    normal cone, the projected-gradient residual, zero exactly when the distance is).
    ([HL23] eq. (3) asks :math:`r_{stat} \le \epsilon`, :math:`r_{comp} \le \epsilon^2`,
    :math:`g \le \epsilon`.) Counters are preserved.

    Parameters
    ----------
    problem : ConstrainedProblem
    x : array-like of shape (dim,)
    multipliers : float or array-like of shape (n_constraints,)

    Returns
    -------
    dict
        ``stationarity``, ``complementarity``, ``feasibility``, ``dual_feasibility`` and ``max``
        (the largest of the four).
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    lam = np.atleast_1d(np.asarray(multipliers, dtype=np.float64))
    m = len(problem.constraints)
    if lam.shape != (m,):
        raise ValueError(f"multipliers: expected {m} value(s), got shape {lam.shape}")
    v, buf = np.empty(problem.dim), np.empty(problem.dim)
    with preserved_counters(problem):
        problem.f_and_subgradient(x, v)
        gvals = np.empty(m)
        for i, c in enumerate(problem.constraints):
            gvals[i] = c.value_and_subgradient(x, buf)
            v += lam[i] * buf
    out = {
        "stationarity": problem.domain.normal_cone_distance(x, v),
        "complementarity": float(np.max(np.abs(lam * gvals), initial=0.0)),
        "feasibility": float(np.max(np.maximum(gvals, 0.0), initial=0.0)),
        "dual_feasibility": float(np.max(np.maximum(-lam, 0.0), initial=0.0)),
    }
    out["max"] = max(out.values())
    return out


def constraint_violation(problem, x, per_constraint=False):
    r""":math:`\max_i [g_i(x)]_+` (0 when feasible or unconstrained); counters are preserved.

    With ``per_constraint=True`` returns the array :math:`([g_i(x)]_+)_i`. Membership of
    :math:`\mathcal X` is not included (solvers keep iterates in :math:`\mathcal X` by projection;
    check ``problem.domain.contains(x)`` separately).

    Parameters
    ----------
    problem : ConstrainedProblem
        The problem whose constraints :math:`g_i` are evaluated.
    x : ndarray
        The point.
    per_constraint : bool
        Return the per-constraint array instead of the maximum.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    with preserved_counters(problem):
        values = np.maximum(problem.constraint_values(x), 0.0)
    if per_constraint:
        return values
    return float(np.max(values, initial=0.0))
