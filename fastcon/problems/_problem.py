r"""`ConstrainedProblem`: :math:`\min_{x \in \mathcal X} f(x)` s.t. :math:`g_i(x) \le 0`, :math:`i = 1..m`.

Solvers see one constraint function :math:`g(x) = \max_i g_i(x)` and its active index, so one or
many constraints are handled alike (Huang & Lin [HL23] §1, problem (1)). Each :math:`g_i` is a term whose value must be
non-positive; build it from a risk and a level with `less_equal`.
"""
from __future__ import annotations

import numpy as np

from ._domains import Whole

__all__ = ["ConstrainedProblem"]


class ConstrainedProblem:
    """Objective term, constraint terms, domain and starting point.

    Parameters
    ----------
    objective : term
        :math:`f`, with the oracle protocol (``value``, ``value_and_subgradient``, ...).
    constraints : sequence of terms
        :math:`g_1..g_m` (feasible iff every value <= 0). May be empty.
    domain : Domain, optional
        :math:`\\mathcal X` (default: the whole space): `Whole`, `Ball`, `ProductOfBalls`,
        `ColumnBalls`, `Box`, `Product`, `TransportPolytope` or any other subclass of `Domain`.
    x0 : array-like, optional
        Default starting point (projected onto the domain if outside it; zeros if absent).
    parts : dict of name -> slice, optional
        Named blocks of x (e.g. ``{"P": slice(0, m*m), "w": slice(m*m, m*m + d)}``).
    name : str
    """

    def __init__(self, objective, constraints=(), domain=None, x0=None, parts=None, name=""):
        self.objective = objective
        self.constraints = list(constraints)
        self.dim = int(objective.n_features)
        for k, c in enumerate(self.constraints):
            if int(c.n_features) != self.dim:
                raise ValueError(f"constraints: constraint {k} acts on dimension {c.n_features}, "
                                 f"the objective on {self.dim}")
        self.domain = domain if domain is not None else Whole()
        self.parts = dict(parts or {"x": slice(0, self.dim)})
        self.name = name
        self.x0 = self.domain.project(np.zeros(self.dim) if x0 is None else self.check_x(x0, "x0"))
        self._work = np.empty(self.dim)

    @property
    def n_constraints(self) -> int:
        return len(self.constraints)

    def check_x(self, x, field="x"):
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.dim,):
            raise ValueError(f"{field}: expected shape ({self.dim},), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{field}: contains NaN or inf")
        return np.ascontiguousarray(x)

    # ------------------------------------------------------------------ objective
    def f(self, x) -> float:
        return self.objective.value(x)

    def f_and_subgradient(self, x, out) -> float:
        return self.objective.value_and_subgradient(x, out)

    # ------------------------------------------------------------------ constraints
    def constraint_values(self, x) -> np.ndarray:
        return np.array([c.value(x) for c in self.constraints], dtype=np.float64)

    def g(self, x):
        """``(max_i g_i(x), argmax)``; ``(-inf, -1)`` without constraints (always feasible)."""
        if not self.constraints:
            return -np.inf, -1
        if len(self.constraints) == 1:
            return self.constraints[0].value(x), 0
        values = self.constraint_values(x)
        i = int(np.argmax(values))
        return float(values[i]), i

    def g_and_subgradient(self, x, out):
        """``(g(x), active index)``; writes a subgradient of the active :math:`g_i` into ``out``.

        One constraint costs one fused pass; m constraints cost m value passes plus one fused pass
        for the active one (a max-type function's subgradient is the active piece's).
        """
        if not self.constraints:
            out[:] = 0.0
            return -np.inf, -1
        if len(self.constraints) == 1:
            return self.constraints[0].value_and_subgradient(x, out), 0
        _, i = self.g(x)
        return self.constraints[i].value_and_subgradient(x, out), i

    def lagrangian(self, x, multipliers_of, out):
        r"""``(f(x), g(x))`` (g: every constraint's value); writes :math:`\nabla f + \sum_j \lambda_j \nabla g_j` into ``out``.

        ``multipliers_of`` maps the constraint values to the weights :math:`\lambda \ge 0` (an
        augmented Lagrangian's weights depend on them). This generic version costs one pass per
        constraint with a non-zero weight on top of the values; problems on shared scores override
        it with a fused pass (`fastcon.problems.LinearModelProblem`).
        """
        f = self.f_and_subgradient(x, out)
        g = self.constraint_values(x)
        lam = np.asarray(multipliers_of(g), dtype=np.float64)
        for c, weight in zip(self.constraints, lam):
            if weight != 0.0:
                c.value_and_subgradient(x, self._work)
                out += weight * self._work
        return f, g

    def curvature_diagonal(self):
        """A positive estimate of the objective's Hessian diagonal, or None when the problem has none.

        Solvers that scale their variables (`fastcon.solvers.augmented_lagrangian`) ask for it; the
        objective answers for itself (``objective.curvature_diagonal()``, e.g.
        `fastcon.problems.LinearLoss`), and an objective without one leaves the variables unscaled.
        """
        own = getattr(self.objective, "curvature_diagonal", None)
        return None if own is None else own()

    def max_violation(self, x) -> float:
        """:math:`\\max(0, g(x))`."""
        return max(0.0, self.g(x)[0])

    # ------------------------------------------------------------------ domain and counters
    def project(self, x):
        return self.domain.project(x)

    def project_inplace(self, x):
        return self.domain.project_inplace(x)

    @property
    def rows_read_f(self) -> int:
        return int(self.objective.rows_read)

    @property
    def rows_read_g(self) -> int:
        return int(sum(c.rows_read for c in self.constraints))

    @property
    def n_samples_f(self) -> int:
        return int(self.objective.n_samples)

    @property
    def n_samples_g(self) -> int:
        return int(max((c.n_samples for c in self.constraints), default=0))

    def reset_counters(self):
        self.objective.reset_counters()
        for c in self.constraints:
            c.reset_counters()

    def __repr__(self):
        return (f"ConstrainedProblem({self.name!r}, dim={self.dim}, {self.n_constraints} constraint(s), "
                f"domain={self.domain!r})")
