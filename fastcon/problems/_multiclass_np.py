r"""Neyman-Pearson classification: the multi-class problem of Ma, Lin & Yang [MLY20] and its
binary case (see docs/references.md).

Multi-class ([MLY20] eq. 11): one linear model per class, the rows of :math:`W \in \mathbb R^{C\times d}`,
:math:`x = \operatorname{vec}(W)`, the sigmoid pairwise loss :math:`L_k(W)` of class :math:`k`, and

.. math::

    \min_{\|w_c\|_2 \le \lambda,\ c = 0..C-1} L_p(W)
    \quad \text{s.t.} \quad L_k(W) \le r_k, \quad k \ne p;

the paper's levels :math:`r_k = (C-1)/2` put :math:`W = 0` on every constraint's boundary. Binary
(:math:`C = 2`): the surrogate type-II error minimised under a bound on the surrogate type-I error,
as in [LX25] Example 1.1. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .._kernels._linalg import CSR
from .._kernels._losses import LOSS_CODES
from .._kernels._multiclass_np import (
    PairwiseTerm, csr_full_pairwise_value, csr_full_pairwise_value_grad, csr_pairwise_value, csr_pairwise_value_grad,
    dense_blas_pairwise_value, dense_blas_pairwise_value_grad, dense_pairwise_value, dense_pairwise_value_grad,
    pairwise_workspace,
)
from ._compose import less_equal
from ._domains import Ball, ColumnBalls, ProductOfBalls, Whole
from ._margin_risk import margin_risk
from ._problem import ConstrainedProblem
from ._validation import check_out, check_rows, check_x

__all__ = ["ClassPairwiseRisk", "multiclass_neyman_pearson", "neyman_pearson"]

#: How ``x`` stores :math:`W` (see :class:`ClassPairwiseRisk`).
LAYOUTS = ("classes", "features")

#: :math:`\phi(0)` of each margin loss: the loss of the zero model on every margin.
LOSS_AT_ZERO = {"hinge": 1.0, "logistic": float(np.log(2.0)), "sigmoid": 0.5, "squared_hinge": 1.0}


def _check_loss(loss):
    if loss not in LOSS_CODES:
        raise ValueError(f"loss: expected one of {sorted(LOSS_CODES)}, got {loss!r}")
    return loss


def _check_layout(layout):
    if layout not in LAYOUTS:
        raise ValueError(f"layout: expected one of {list(LAYOUTS)}, got {layout!r}")
    return layout


def _n_classes(dataset, n_classes=None, require_all=True):
    """Class count C of a multi-class dataset whose labels are the ids 0..C-1.

    With ``require_all`` every class 0..C-1 must have rows (a term needs only its own class).
    """
    if getattr(dataset, "task", None) != "multiclass":
        raise ValueError("dataset: multi-class Neyman-Pearson needs a multi-class Dataset (class ids 0..C-1); "
                         "for labels in {-1, +1} use neyman_pearson")
    if dataset.n_samples == 0:
        raise ValueError("dataset: has no rows")
    top = int(dataset.y.max()) + 1
    C = top if n_classes is None else operator.index(n_classes)
    if C < 2:
        raise ValueError(f"n_classes: need at least 2 classes, got {C}")
    if top > C:
        raise ValueError(f"dataset: label {top - 1} is out of range for n_classes={C}")
    counts = np.bincount(dataset.y, minlength=C)
    if require_all and np.any(counts == 0):
        empty = np.flatnonzero(counts == 0).tolist()
        raise ValueError(f"dataset: class(es) {empty} have no rows; labels must be the ids 0..C-1 of "
                         "non-empty classes (remap with np.unique(y, return_inverse=True))")
    return C


def _class_index(value, C, field):
    try:
        k = operator.index(value)
    except TypeError:
        raise ValueError(f"{field}: expected an integer class id, got {value!r}") from None
    if not 0 <= k < C:
        raise ValueError(f"{field}: class {k} is out of range 0..{C - 1}")
    return k


class ClassPairwiseRisk:
    r"""Pairwise margin loss of one class, :math:`L_k(W)` of [MLY20] eq. (11), on :math:`x = \operatorname{vec}(W)`.

    .. math::

        L_k(W) = \frac{1}{\sum_{i \in D_k} s_i} \sum_{i \in D_k} s_i \sum_{l \ne k}
        \phi\big((w_k - w_l)^\top a_i\big),

    which is :math:`\frac{1}{n_k}\sum_{i\in D_k}\sum_{l\ne k}\phi(\cdot)` unweighted. Its gradient
    has block :math:`\nabla_{w_k} L_k = \frac{1}{n_k}\sum_i \big(\sum_{l\ne k}
    \phi'(m_{il})\big) a_i` and :math:`\nabla_{w_l} L_k = -\frac{1}{n_k}\sum_i \phi'(m_{il}) a_i`
    for :math:`l \ne k`, with :math:`m_{il} = (w_k - w_l)^\top a_i`; the blocks sum to 0 because
    :math:`L_k` depends only on differences :math:`w_k - w_l`. Non-smooth losses (hinge) give the
    subgradient with :math:`\phi'(1) = 0`.

    Row-subset oracles index the rows of class :math:`k` (positions ``0..n_k - 1``, in dataset order;
    :attr:`class_rows` maps them to dataset rows) and return the unbiased minibatch estimate

    .. math::

        \hat L_B(W) = \frac{n_k}{|B| \sum_{i\in D_k} s_i} \sum_{i \in B} s_i \sum_{l \ne k} \phi(m_{il}),

    the plain batch mean when unweighted (repeated indices count repeatedly).

    **Layout of x.** ``"classes"`` (default): :math:`x = \operatorname{vec}(W)` row by row, the
    weights of class :math:`c` are ``x[c*d:(c+1)*d]`` (as scikit-learn's ``coef_.ravel()``).
    ``"features"``: :math:`x = \operatorname{vec}(W^\top)`, the C weights of feature :math:`j`
    side by side, class :math:`c` at ``x[c::C]``; gradients are laid out like ``x``. The CSR
    kernels read one C-vector of weights per stored entry and write one C-vector of gradient per
    column, so ``"features"`` is their native layout: a ``"classes"`` term transposes
    :math:`W` (and, for minibatches, the gradient) on every call, slower on the synthetic
    CSR benchmark (docs/measurements.md). On dense data the two
    layouts cost the same (BLAS takes either; a ``"features"`` term transposes the small
    :math:`C \times d` matrix). Values are the same bits in both layouts, gradients the same
    bits permuted.

    Parameters
    ----------
    dataset : fastcon.Dataset
        Multi-class data (labels 0..C-1), CSR or dense. The rows of class ``class_id`` are copied
        into a contiguous block once; a CSR block is also kept in CSC, from which full passes
        gather the gradient column by column (so a sparse term holds its rows twice).
    class_id : int
        The class :math:`k` whose rows this term averages over.
    n_classes : int, optional
        :math:`C`; default ``max(y) + 1``. Only class ``class_id`` needs rows: the rows :math:`w_c`
        of absent classes still enter the margins.
    loss : {"sigmoid", "hinge", "logistic", "squared_hinge"}
        :math:`\phi`; the paper uses the sigmoid loss :math:`1/(1+e^z)`.
    sample_weight : array-like of shape (dataset.n_samples,), "dataset" or None
        Weights :math:`s_i` of the dataset's rows; "dataset" (default) uses ``dataset.sample_weight``.
    layout : {"classes", "features"}
        How ``x`` stores :math:`W` (above).
    intercept : bool
        Give every row an implicit last feature equal to 1 (index ``d`` = ``dataset.n_features``):
        :math:`W` has :math:`d + 1` columns, the last one the classes' intercepts, and the scores
        are :math:`w_l^\top a_i + W_{l,d}`. The same as appending a column of ones to the data
        (to round-off) without the copy of the data that costs.
    rows : array-like of int, optional
        The dataset rows the term may read (default all; a row listed twice counts once): its
        rows are those of class ``class_id`` among them. A fit that holds rows out (a calibration part) passes the
        others, so only the class's kept rows are copied into the block.

    Attributes
    ----------
    n_samples : int
        :math:`n_k`, the rows one full pass reads.
    n_features : int
        :math:`C d`, the length of ``x`` (:math:`C (d + 1)` with ``intercept``).
    n_classes, n_input_features : int
        :math:`C` and :math:`d` (:math:`d + 1` with ``intercept``: the columns of :math:`W`).
    class_rows : ndarray of int64
        Dataset rows of class :math:`k`, in order.
    rows_read : int
        Rows read since construction or :meth:`reset_counters` (a full pass adds :math:`n_k`).
    """

    def __init__(self, dataset, class_id, n_classes=None, loss="sigmoid", sample_weight="dataset", layout="classes",
                 intercept=False, rows=None):
        self.loss = _check_loss(loss)
        self.intercept = bool(intercept)
        self.layout = _check_layout(layout)
        self._feature_major = layout == "features"
        self._code = LOSS_CODES[loss]
        self.dataset = dataset
        self.n_classes = C = _n_classes(dataset, n_classes, require_all=False)
        self.class_id = _class_index(class_id, C, "class_id")
        n, d = dataset.shape
        dw = int(d) + self.intercept  # columns of W: the intercepts are the last (an implicit column of ones)
        self.n_input_features = dw
        self.n_features = C * dw
        if rows is None:
            self.class_rows = np.flatnonzero(dataset.y == self.class_id).astype(np.int64)
        else:
            rows = np.asarray(rows)
            if rows.size == 0:
                rows = rows.astype(np.int64)
            if rows.ndim != 1 or not np.issubdtype(rows.dtype, np.integer) or (
                    rows.size and (rows.min() < 0 or rows.max() >= n)):
                raise ValueError(f"rows: expected a 1-d array of row indices in [0, {n}), got "
                                 f"{rows.dtype} of shape {rows.shape}")
            rows = np.unique(rows).astype(np.int64)
            self.class_rows = rows[dataset.y[rows] == self.class_id]
        self.n_samples = int(self.class_rows.size)
        if self.n_samples == 0:
            raise ValueError(f"class_id: class {self.class_id} has no rows in the dataset"
                             + ("" if rows is None else " among rows"))
        if isinstance(sample_weight, str) and sample_weight == "dataset":
            sample_weight = dataset.sample_weight
        weights = None
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (n,):
                raise ValueError(f"sample_weight: expected shape ({n},), got {sample_weight.shape}")
            if not np.all(np.isfinite(sample_weight)) or np.any(sample_weight < 0):
                raise ValueError("sample_weight: weights must be finite and non-negative")
            weights = np.ascontiguousarray(sample_weight[self.class_rows])
            if not weights.sum() > 0:
                raise ValueError(f"sample_weight: the weights of class {self.class_id} sum to zero")
        self._weights = weights
        # What every kernel call on this block shares (loss, class, weights, layout, intercept): one argument.
        self._term = PairwiseTerm(self._code, self.class_id, weights, self._feature_major, self.intercept)
        # Divide by the class total rather than multiply by its inverse: L_k(0) = (C-1) phi(0) exactly.
        self._total = float(self.n_samples if weights is None else weights.sum())
        block = dataset.X[self.class_rows]
        if dataset.is_sparse:
            binary = bool(np.all(block.data == 1.0))
            # Indices as narrow as they fit: every full pass streams both copies of the block from
            # memory (20 distinct class blocks do not stay in cache), and 2-byte indices cut that
            # traffic by a sixth (the kernels are generic over the index type; same bits).
            self._design = CSR(block.indptr.astype(np.uint64), block.indices.astype(_index_type(d)),
                               None if binary else np.ascontiguousarray(block.data, dtype=np.float64))
            # The block again in CSC: full passes gather each gradient column from it (see
            # csr_full_pairwise_value_grad), which beats scattering every entry into a (d, C) array.
            cols = block.tocsc()
            cols.sort_indices()
            self._columns = CSR(cols.indptr.astype(np.uint64), cols.indices.astype(_index_type(self.n_samples)),
                                None if binary else np.ascontiguousarray(cols.data, dtype=np.float64))
        else:
            self._design = (np.ascontiguousarray(block, dtype=np.float64),)
        # Kernel scratch, allocated once: CSR (w_t, grad_t, S, P, acc), dense (T, S, P); see pairwise_workspace.
        # A "features" CSR term reads x and writes out as they are: no w_t, grad_t.
        # The CSR tables w_t, grad_t have a row per column of W (d + 1 with intercepts); the dense T
        # holds the gradient of the d columns of the data.
        self._work = pairwise_workspace(C, d if not dataset.is_sparse else dw, self.n_samples,
                                        dense=not dataset.is_sparse, transposes=not self._feature_major)
        # A "features" dense term runs the dense kernels on W and its gradient in (C, d) copies.
        self._dense_copies = (np.empty((C, dw)), np.empty((C, dw))) if self._feature_major and not dataset.is_sparse \
            else None
        # Dense with intercepts: the BLAS products read the first d columns of W from this (C, d) copy.
        self._dense_wx = np.empty((C, int(d))) if self.intercept and not dataset.is_sparse else None
        self.rows_read = 0

    def __repr__(self):
        layout = "" if self.layout == "classes" else f", layout={self.layout!r}"
        return (f"ClassPairwiseRisk(class_id={self.class_id}, n_classes={self.n_classes}, loss={self.loss!r}, "
                f"dataset={getattr(self.dataset, 'name', '')!r}, n_samples={self.n_samples}{layout})")

    @property
    def formula(self) -> str:
        k = self.class_id
        return (f"L_{k}(W) = (1/n_{k}) sum_{{i in class {k}}} sum_{{l != {k}}} phi((w_{k} - w_l)^T a_i), "
                f"phi = {self.loss}")

    def reset_counters(self):
        """Set ``rows_read`` back to 0."""
        self.rows_read = 0

    # ------------------------------------------------------------------ oracles
    def value(self, x) -> float:
        """:math:`L_k(x)` over all rows of class k."""
        x = self._full_pass_point(x)
        value = self._finite_point(self._value(x, None, self._total), x)
        self.rows_read += self.n_samples
        return value

    def value_and_subgradient(self, x, out) -> float:
        r""":math:`L_k(x)`; writes :math:`\nabla L_k(x)` (laid out like ``x``) into ``out``.

        A point with NaN or inf raises ValueError (``out`` may have been written by then).
        """
        x = self._full_pass_point(x)
        out = check_out(out, self.n_features)
        value = self._finite_point(self._value_grad(x, None, self._total, out), x)
        self.rows_read += self.n_samples
        return value

    def value_rows(self, x, rows) -> float:
        r"""Minibatch estimate :math:`\hat L_B(x)` on class-k positions ``rows`` (class docstring)."""
        x = check_x(x, self.n_features)
        rows = check_rows(rows, self.n_samples)
        self.rows_read += rows.shape[0]
        return self._value(x, rows, self._subset_divisor(rows.shape[0]))

    def value_and_subgradient_rows(self, x, rows, out) -> float:
        r""":math:`\hat L_B(x)`; writes its gradient into ``out``."""
        x = check_x(x, self.n_features)
        out = check_out(out, self.n_features)
        rows = check_rows(rows, self.n_samples)
        self.rows_read += rows.shape[0]
        return self._value_grad(x, rows, self._subset_divisor(rows.shape[0]), out)

    def weights(self, x):
        """:math:`W` (C x d) of ``x`` in this term's layout: a view for ``"classes"``, a copy for ``"features"``."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n_features,):
            raise ValueError(f"x: expected shape ({self.n_features},), got {x.shape}")
        if self._feature_major:
            return np.ascontiguousarray(x.reshape(self.n_input_features, self.n_classes).T)
        return x.reshape(self.n_classes, self.n_input_features)

    # ------------------------------------------------------------------ kernel dispatch
    def _full_pass_point(self, x):
        # The full CSR kernels check the point for NaN/inf themselves, each chunk its share inside
        # the parallel region (docs/measurements.md); a NaN value sends the caller
        # to _finite_point.
        return check_x(x, self.n_features, finite_from=self.n_features if len(self._design) == 3 else 0)

    def _finite_point(self, value, x):
        """``value``, after the full finiteness check of ``x`` when the kernel returned NaN or inf."""
        if not math.isfinite(value):
            check_x(x, self.n_features)  # raises on NaN/inf in x; a finite x keeps its non-finite value
        return value

    def _subset_divisor(self, m):
        # Unbiased under uniform row sampling: E[(n_k / m) sum_B s_i l_i] = sum_i s_i l_i.
        return m * self._total / self.n_samples

    def _matrix(self, x):
        """``x`` as the kernels' 2-D array: W (C, d) for "classes", W^T (d, C) for "features" (views)."""
        if self._feature_major:
            return x.reshape(self.n_input_features, self.n_classes)
        return x.reshape(self.n_classes, self.n_input_features)

    def _dense_weights(self, x):
        """W (C, d) for the dense kernels: a view of ``x``, or (features) its transpose in a copy."""
        if self._dense_copies is None:
            return self._matrix(x)
        W = self._dense_copies[0]
        W[...] = self._matrix(x).T
        return W

    def _value(self, x, rows, divisor):
        if len(self._design) == 3:
            w_t, _, S, P, acc = self._work
            W = self._matrix(x)
            if self._feature_major:
                w_t = W  # the kernels read x as it is (feature_major)
            if rows is None:
                return float(csr_full_pairwise_value(self._term, self._design, divisor, W, w_t, S, P, acc))
            return float(csr_pairwise_value(self._term, self._design, divisor, rows, W, w_t, S, P[0]))
        _, S, P = self._work
        W = self._dense_weights(x)
        if rows is None:  # full pass: BLAS products on blocks of rows
            return float(dense_blas_pairwise_value(self._term, self._design[0], divisor, W, S, P, self._dense_wx))
        return float(dense_pairwise_value(self._term, self._design[0], divisor, rows, W, S, P))

    def _value_grad(self, x, rows, divisor, out):
        if len(self._design) == 3:
            w_t, grad_t, S, P, acc = self._work
            W, G = self._matrix(x), self._matrix(out)
            if self._feature_major:
                w_t, grad_t = W, G  # read x and write out as they are (feature_major)
            if rows is None:  # full pass: the gradient column by column from the CSC copy
                return float(csr_full_pairwise_value_grad(self._term, self._design, self._columns, divisor, W, G,
                                                          w_t, S, P, acc))
            return float(csr_pairwise_value_grad(self._term, self._design, divisor, rows, W, G, w_t, grad_t, S,
                                                 P[0]))
        T, S, P = self._work
        W = self._dense_weights(x)
        G = self._matrix(out) if self._dense_copies is None else self._dense_copies[1]
        if rows is None:
            value = dense_blas_pairwise_value_grad(self._term, self._design[0], divisor, W, G, T, S, P,
                                                   self._dense_wx)
        else:
            value = dense_pairwise_value_grad(self._term, self._design[0], divisor, rows, W, G, S, P)
        if self._dense_copies is not None:
            self._matrix(out)[...] = G.T
        return float(value)


def _index_type(extent):
    """The narrowest unsigned type for indices below ``extent``: uint16 up to 65,536, else uint32."""
    return np.uint16 if extent <= 1 << 16 else np.uint32


def multiclass_neyman_pearson(dataset, priority_class=0, bound=None, radius=0.1, loss="sigmoid",
                              layout="classes", intercept=False, rows=None) -> ConstrainedProblem:
    r"""Multi-class Neyman-Pearson classification, [MLY20] eq. (11) (module docstring).

    .. math::

        \min_{\|w_c\|_2 \le \lambda} L_p(W) \quad \text{s.t.} \quad L_k(W) - r_k \le 0,\ k \ne p,

    with :math:`L_k` the :class:`ClassPairwiseRisk` of class :math:`k`.

    Parameters
    ----------
    dataset : fastcon.Dataset
        Multi-class data with labels 0..C-1, every class non-empty (C >= 2).
    priority_class : int
        :math:`p`, the class whose loss is minimised (the paper's class 1).
    bound : float or array-like of length C - 1, optional
        Levels :math:`r_k` of the constrained classes, in increasing class order (``priority_class``
        skipped); a scalar applies to every class. Default :math:`(C - 1)\phi(0)`, the loss of the
        zero model: :math:`(C-1)/2` for the sigmoid loss, the paper's setting (4.5 on pendigits and
        usps, 3 on segment), which makes ``x0 = 0`` feasible with :math:`g(0) = 0`.
    radius : float
        :math:`\lambda > 0`, the radius of each class's ball (paper: 0.1); ``inf`` leaves W free.
    loss : {"sigmoid", "hinge", "logistic", "squared_hinge"}
        :math:`\phi`; the paper uses the sigmoid loss.
    layout : {"classes", "features"}
        How ``x`` stores :math:`W`: ``"classes"`` (default) :math:`\operatorname{vec}(W)` row by
        row, ``"features"`` :math:`\operatorname{vec}(W^\top)`, the native layout of the CSR
        kernels and about 20% faster on sparse data (:class:`ClassPairwiseRisk`). Solvers do
        not depend on it; ``problem.objective.weights(x)`` returns :math:`W` in either.
    intercept : bool
        Intercepts as an implicit last column of ones (:class:`ClassPairwiseRisk`): :math:`W` has
        :math:`d + 1` columns, and every length :math:`d` below becomes :math:`d + 1` (the balls
        then hold the intercepts too, as they would a stored column of ones).
    rows : array-like of int, optional
        The dataset rows the terms read (default all; :class:`ClassPairwiseRisk`).

    Returns
    -------
    ConstrainedProblem
        Objective :math:`L_p`; constraints ``less_equal(L_k, r_k)`` for :math:`k \ne p` in increasing
        k (``problem.constraints[i].term.class_id`` is the class of constraint i); ``x0 = 0``;
        parts ``"w0" .. "w{C-1}"`` (the weights of each class in ``x``: ``slice(c*d, (c+1)*d)``,
        or ``slice(c, C*d, C)`` for ``"features"``); domain: one ball of radius :math:`\lambda`
        per :math:`w_c`, `ProductOfBalls` (``"classes"``) or `ColumnBalls` (``"features"``).
    """
    loss = _check_loss(loss)
    layout = _check_layout(layout)
    C = _n_classes(dataset)
    p = _class_index(priority_class, C, "priority_class")
    others = [k for k in range(C) if k != p]
    if bound is None:
        levels = np.full(C - 1, (C - 1) * LOSS_AT_ZERO[loss])
    else:
        try:
            levels = np.asarray(bound, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"bound: expected a number or C - 1 = {C - 1} numbers, got {bound!r}") from None
        if levels.ndim == 0:
            levels = np.full(C - 1, float(levels))
        if levels.shape != (C - 1,):
            raise ValueError(f"bound: expected a number or C - 1 = {C - 1} levels (one per constrained class), "
                             f"got shape {levels.shape}")
        if not np.all(np.isfinite(levels)):
            raise ValueError("bound: levels must be finite")
    radius = float(radius)
    if not radius > 0:
        raise ValueError(f"radius: must be positive, got {radius}")
    d = dataset.n_features + bool(intercept)
    objective = ClassPairwiseRisk(dataset, p, C, loss, layout=layout, intercept=intercept, rows=rows)
    constraints = [less_equal(ClassPairwiseRisk(dataset, k, C, loss, layout=layout, intercept=intercept, rows=rows),
                              level)
                   for k, level in zip(others, levels)]
    if layout == "classes":
        domain = ProductOfBalls(np.arange(C + 1) * d, np.full(C, radius))
        parts = {f"w{c}": slice(c * d, (c + 1) * d) for c in range(C)}
    else:
        domain = ColumnBalls(np.full(C, radius))
        parts = {f"w{c}": slice(c, C * d, C) for c in range(C)}
    return ConstrainedProblem(objective, constraints, domain, x0=np.zeros(C * d), parts=parts,
                              name=f"multiclass_neyman_pearson[{dataset.name}]")


def neyman_pearson(dataset, loss="hinge", bound=None, radius=None, constrained_class=-1) -> ConstrainedProblem:
    r"""Binary Neyman-Pearson classification with a margin-loss surrogate (module docstring).

    .. math::

        \min_{w \in \mathcal X} \frac{1}{n_+}\sum_{b_i = +1}\phi(a_i^\top w)
        \quad \text{s.t.} \quad \frac{1}{n_-}\sum_{b_i = -1}\phi(-a_i^\top w) - \alpha \le 0.

    The objective is the surrogate type-II error (positives scored negative) and the constraint
    bounds the surrogate type-I error (negatives scored positive); ``constrained_class=1`` swaps the
    roles. Both terms are the foundation's `margin_risk` on the rows of one label, so any margin
    loss works; this is :func:`multiclass_neyman_pearson` with C = 2 and :math:`w = w_1 - w_0`
    (class 1 = label +1), without the ball on each row.

    Parameters
    ----------
    dataset : fastcon.Dataset
        Binary data (labels in {-1, +1}) with rows of both labels.
    loss : {"hinge", "logistic", "sigmoid", "squared_hinge"}
    bound : float, optional
        Level :math:`\alpha` of the constraint, in the loss's units (a surrogate, not an error rate). Default
        :math:`\phi(0)`, the zero model's risk, so ``x0 = 0`` lies on the constraint boundary (as the
        multi-class default does); pass a smaller value to tighten the type-I bound.
    radius : float, optional
        Domain ``Ball(radius)`` around 0; None (default) means the whole space.
    constrained_class : {-1, +1}
        The label whose risk the constraint bounds (default -1); the other label's risk is minimised.

    Returns
    -------
    ConstrainedProblem
        One constraint; objective and constraint terms are `MarginRisk` over the rows of one label
        each (``constraints[0].term``); ``x0 = 0``.
    """
    loss = _check_loss(loss)
    if getattr(dataset, "task", None) != "binary":
        raise ValueError("dataset: binary Neyman-Pearson needs labels in {-1, +1}; "
                         "use multiclass_neyman_pearson for class ids")
    if isinstance(constrained_class, bool) or constrained_class not in (1, -1):
        raise ValueError(f"constrained_class: expected +1 or -1, got {constrained_class!r}")
    priority_label = -int(constrained_class)     # the label whose risk is minimised
    rows_min = np.flatnonzero(dataset.y == priority_label)
    rows_con = np.flatnonzero(dataset.y == -priority_label)
    for rows, label in ((rows_min, priority_label), (rows_con, -priority_label)):
        if rows.size == 0:
            raise ValueError(f"dataset: no rows with label {label:+d}; Neyman-Pearson needs both classes")
    bound = LOSS_AT_ZERO[loss] if bound is None else float(bound)
    if not np.isfinite(bound):
        raise ValueError(f"bound: must be finite, got {bound}")
    if radius is None:
        domain = Whole()
    else:
        radius = float(radius)
        if not radius > 0:
            raise ValueError(f"radius: must be positive, got {radius}")
        domain = Ball(radius)
    name = dataset.name
    objective = margin_risk(dataset.subset(rows_min, name=f"{name}[y={priority_label:+d}]"), loss)
    constraint = less_equal(margin_risk(dataset.subset(rows_con, name=f"{name}[y={-priority_label:+d}]"), loss),
                            bound)
    return ConstrainedProblem(objective, [constraint], domain, x0=np.zeros(dataset.n_features),
                              name=f"neyman_pearson[{name}]")
