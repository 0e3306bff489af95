r"""Row kernels of the partial-fairness constraints: per-group means of shifted hinges and sigmoids.

The constraints of model (13) of He, Huang, Yao & Lin [HHYL25] read the scores :math:`z = \tilde Xw`
only through per-group means at a few *cuts* :math:`t_q`,

.. math::

    H_{kq} = \frac{1}{n_k}\sum_{i \in k}\max\{z_i - t_q, 0\},\qquad
    C_{kq} = \#\{i \in k : z_i > t_q\},

their subgradients :math:`R_{kq} = \sum_{i \in k,\ z_i > t_q}\tilde x_i`, and the logistic
surrogate's sigmoid means. `hinge_cut_sums` puts each row in its bin among the sorted cuts and
sweeps the bins (:math:`O(n + Q)` updates, no cancellation); `hinge_cut_sums_naive` is the
:math:`O(nQ)` oracle. Design notes: docs/design.md, 'Module notes'.
"""
import numpy as np

from ._group_rates import _grid_blocks
from ._jit import njit
from ._linalg import _entry

__all__ = [
    "LINEAR_SEARCH_MAX_CUTS",
    "hinge_cut_row_sums_csr",
    "hinge_cut_row_sums_dense",
    "hinge_cut_sums",
    "hinge_cut_sums_naive",
    "logistic_level_row_sums_csr",
    "logistic_level_row_sums_dense",
    "logistic_level_sums",
    "ramp_level_sums",
]

#: Most cuts for which a row's bin is found by a linear count (a binary search above; crossover
#: measured between 400 and 800 cuts, docs/benchmarks.md).
LINEAR_SEARCH_MAX_CUTS = 512

_ONE = np.uint64(1)


@njit(cache=True)
def hinge_cut_sums_naive(z, groups, cuts, inv_size, sums, counts):
    r"""``sums[k, q]`` :math:`= \frac{1}{n_k}\sum_{i \in k}\max\{z_i - t_q, 0\}`, ``counts[k, q]`` :math:`= \#\{i \in k: z_i > t_q\}`.

    One pass over the rows, an inner loop over the cuts (:math:`O(nQ)`).

    Parameters
    ----------
    z : float64[n]
        Scores.
    groups : int64[n]
        Group id of every row, ``0..G-1``.
    cuts : float64[Q]
        The cuts :math:`t_q`, any order.
    inv_size : float64[G]
        :math:`1/n_k`.
    sums : float64[G, Q]
        Output, overwritten.
    counts : int64[G, Q]
        Output, overwritten.
    """
    n_cuts = cuts.shape[0]
    sums[:, :] = 0.0
    counts[:, :] = 0
    for i in range(z.shape[0]):
        zi = z[i]
        srow = sums[groups[i]]
        crow = counts[groups[i]]
        for q in range(n_cuts):
            u = zi - cuts[q]
            srow[q] += max(u, 0.0)
            crow[q] += 1 if u > 0.0 else 0
    for k in range(sums.shape[0]):
        for q in range(n_cuts):
            sums[k, q] *= inv_size[k]


@njit(inline="always")
def _bin_of(sorted_cuts, v):
    """Number of cuts strictly below ``v`` (the row is in the mask ``z > t`` of exactly those cuts).

    Up to `LINEAR_SEARCH_MAX_CUTS` cuts a branch-free count over all of them (it vectorises and
    never mispredicts); above, a binary search, whose log2(Q) data-dependent steps cost a
    mispredicted branch each on scores in random order. A NaN score is above no cut: bin 0.
    """
    n_cuts = sorted_cuts.shape[0]
    if n_cuts <= LINEAR_SEARCH_MAX_CUTS:
        b = 0
        for q in range(n_cuts):
            b += 1 if sorted_cuts[q] < v else 0
        return b
    lo = 0
    hi = n_cuts
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_cuts[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def hinge_cut_sums(z, groups, cuts, inv_size, sums, counts, bins):
    r"""``sums``, ``counts`` as in `hinge_cut_sums_naive` by the bins between the sorted cuts (module notes),
    and every row's bin.

    Per row: :math:`Q` branch-free compares up to `LINEAR_SEARCH_MAX_CUTS` cuts, a binary search
    above, then two accumulator updates; :math:`O(GQ)` for the suffix sweep.

    Parameters
    ----------
    z, groups, cuts, inv_size, sums, counts
        As in `hinge_cut_sums_naive`.
    bins : int32[n]
        Output, overwritten: the number of cuts strictly below ``z[i]``, the input of
        `hinge_cut_row_sums_csr` / `hinge_cut_row_sums_dense` for the same scores and cuts.
    """
    n_groups, n_cuts = sums.shape
    perm = np.argsort(cuts)
    sc = cuts[perm]
    n_bin = np.zeros((n_groups, n_cuts + 1), dtype=np.int64)
    d_bin = np.zeros((n_groups, n_cuts + 1))
    low = np.empty(n_cuts + 1)                  # low[b]: the cut below bin b (bin 0 is never summed)
    low[0] = 0.0
    low[1:] = sc
    for i in range(z.shape[0]):
        zi = z[i]
        b = _bin_of(sc, zi)
        bins[i] = b
        k = groups[i]
        n_bin[k, b] += 1
        d_bin[k, b] += zi - low[b]              # >= 0 for b > 0: bin b is (sc[b-1], sc[b]]
    for k in range(n_groups):
        h = 0.0
        c = 0
        for j in range(n_cuts - 1, -1, -1):
            if j + 1 < n_cuts:
                h += c * (sc[j + 1] - sc[j])   # rows above sc[j+1] each gain the gap between the cuts
            h += d_bin[k, j + 1]
            c += n_bin[k, j + 1]
            sums[k, perm[j]] = h * inv_size[k]
            counts[k, perm[j]] = c


@njit(cache=True)
def ramp_level_sums(z, groups, theta, inv_size, s_plus, s_minus, c_plus, c_minus):
    r"""The two hinge means of the ramp at every level, for every group.

    ``s_plus[k, p]`` :math:`= S^+_{kp} = \frac{1}{n_k}\sum_{i \in k}\max\{z_i - (\theta_p - \tfrac12), 0\}`,
    ``s_minus[k, p]`` :math:`= S^-_{kp}` the same at :math:`\theta_p + \tfrac12`, and the counts
    ``c_plus[k, p]`` :math:`= \#\{z_i > \theta_p - \tfrac12\}`, ``c_minus[k, p]`` :math:`= \#\{z_i > \theta_p + \tfrac12\}`
    (the cut is rounded first, then compared: a score equal to the rounded cut is outside the mask).
    By `hinge_cut_sums`.
    """
    n_levels = theta.shape[0]
    cuts = np.empty(2 * n_levels)
    for p in range(n_levels):
        cuts[p] = theta[p] - 0.5
        cuts[n_levels + p] = theta[p] + 0.5
    sums = np.empty((inv_size.shape[0], 2 * n_levels))
    counts = np.empty((inv_size.shape[0], 2 * n_levels), dtype=np.int64)
    hinge_cut_sums(z, groups, cuts, inv_size, sums, counts, np.empty(z.shape[0], dtype=np.int32))
    s_plus[:, :] = sums[:, :n_levels]
    s_minus[:, :] = sums[:, n_levels:]
    c_plus[:, :] = counts[:, :n_levels]
    c_minus[:, :] = counts[:, n_levels:]


@njit(inline="always")
def _suffix_over_bins(buf, n_bin, perm, out, counts):
    """Cell sums -> mask sums: ``out[k, perm[j]] = sum_{b > j} buf[k, b]`` (and the counts); returns the rows
    counted above the lowest cut. ``buf`` and ``n_bin`` flat, as `_cell_buffers` makes them."""
    n_groups, n_cuts, n_w = out.shape
    buf = buf.reshape((n_groups, n_cuts + 1, n_w))
    n_bin = n_bin.reshape((n_groups, n_cuts + 1))
    for k in range(n_groups):
        c = 0
        for j in range(n_cuts - 1, -1, -1):
            if j + 1 < n_cuts:
                nxt = buf[k, j + 2]
                cur = buf[k, j + 1]
                for col in range(n_w):
                    cur[col] += nxt[col]
            c += n_bin[k, j + 1]
            out[k, perm[j], :] = buf[k, j + 1]
            counts[k, perm[j]] = c
    return n_bin[:, 1:].sum()


@njit(inline="always")
def _cell_buffers(out, cuts):
    """``(perm, n_bin, buf)``: the cuts' sort order, the rows per (group, bin) cell and the cells' row sums,
    flat (group, bin, column) so that a row's cell is an offset, not an array view per row."""
    n_groups, n_cuts, n_w = out.shape
    n_cells = n_groups * (n_cuts + 1)
    return np.argsort(cuts), np.zeros(n_cells, dtype=np.int64), np.zeros(n_cells * n_w)


@njit(inline="always")
def _row_offset(bins, groups, i, n_cells, n_w, n_bin):
    """Row ``i``'s offset in the flat cell buffer, counted in ``n_bin``; -1 below the lowest cut (not read)."""
    b = bins[i]
    if b == 0:
        return -1
    cell = groups[i] * n_cells + b
    n_bin[cell] += 1
    return cell * n_w


@njit(cache=True)
def hinge_cut_row_sums_csr(indptr, indices, data, bins, groups, cuts, out, counts):
    r"""``out[k, q]`` :math:`= R_{kq} = \sum_{i \in k,\ z_i > t_q}\tilde x_i`, ``counts[k, q]`` as in `hinge_cut_sums_naive`.

    One pass over the rows of a CSR :math:`\tilde X` (``data=None``: binary features): each row
    above the lowest cut is added once to the row sum of its bin, then a suffix sum over the bins
    (module notes). :math:`O(\mathrm{nnz} + GQn_w)`.

    Parameters
    ----------
    indptr, indices, data
        CSR arrays (uint64 / uint32 / float64 or None).
    bins : int32[n]
        Every row's bin, as `hinge_cut_sums` wrote it for the scores :math:`z` and these ``cuts``.
    groups, cuts
        As in `hinge_cut_sums_naive`.
    out : float64[G, Q, n_w]
        Output, overwritten.
    counts : int64[G, Q]
        Output, overwritten.

    Returns
    -------
    int
        Rows read (those above the lowest cut).
    """
    n_cells, n_w = out.shape[1] + 1, out.shape[2]
    perm, n_bin, buf = _cell_buffers(out, cuts)
    for i in range(bins.shape[0]):
        base = _row_offset(bins, groups, i, n_cells, n_w, n_bin)
        if base >= 0:
            for e in range(indptr[i], indptr[i + _ONE]):
                buf[base + indices[e]] += _entry(data, e)
    return _suffix_over_bins(buf, n_bin, perm, out, counts)


@njit(cache=True)
def hinge_cut_row_sums_dense(X, bins, groups, cuts, out, counts):
    """`hinge_cut_row_sums_csr` for a dense C-contiguous :math:`\\tilde X`."""
    n_cells, n_w = out.shape[1] + 1, out.shape[2]
    perm, n_bin, buf = _cell_buffers(out, cuts)
    for i in range(bins.shape[0]):
        base = _row_offset(bins, groups, i, n_cells, n_w, n_bin)
        if base >= 0:
            for col in range(n_w):
                buf[base + col] += X[i, col]
    return _suffix_over_bins(buf, n_bin, perm, out, counts)


@njit(inline="always")
def _sigmoid_row(zi, starts, anchors, f, s, d):
    r"""``s[j]`` :math:`= \sigma(z_i - \theta_j)`, ``d[j]`` :math:`= \sigma'(z_i - \theta_j)` over an ascending grid.

    The anchor factoring of `fastcon._kernels._group_rates.cell_sigmoid_sums`: one exponential per
    row and block, :math:`\sigma = 1/(1 + u)`, :math:`\sigma' = u\sigma^2`, :math:`u = e^{c - z_i}f_j`
    capped at 1e300 (an overflowed :math:`u` gives :math:`\sigma, \sigma' \approx 10^{-300}`).
    """
    for b in range(anchors.shape[0]):
        a = np.exp(anchors[b] - zi)
        for j in range(starts[b], starts[b + 1]):
            u = min(a * f[j], 1e300)
            sj = 1.0 / (1.0 + u)
            s[j] = sj
            d[j] = sj * (u * sj)


@njit(cache=True, error_model="numpy")
def logistic_level_sums(z, groups, theta, inv_size, sums, dsums):
    r"""``sums[k, p]`` :math:`= \frac{1}{n_k}\sum_{i \in k}\sigma(z_i - \theta_p)`, ``dsums[k, p]`` the same with :math:`\sigma'`.

    :math:`\sigma` the logistic function; ``theta`` in any order (sorted here for the anchor
    blocks, one exponential per row and block of levels spanning at most 350).
    """
    n_groups, n_levels = sums.shape
    perm = np.argsort(theta)
    starts, anchors, f = _grid_blocks(theta[perm], 1.0)
    s_acc = np.zeros((n_groups, n_levels))
    d_acc = np.zeros((n_groups, n_levels))
    s = np.empty(n_levels)
    d = np.empty(n_levels)
    for i in range(z.shape[0]):
        _sigmoid_row(z[i], starts, anchors, f, s, d)
        srow = s_acc[groups[i]]
        drow = d_acc[groups[i]]
        for j in range(n_levels):
            srow[j] += s[j]
            drow[j] += d[j]
    for k in range(n_groups):
        for j in range(n_levels):
            sums[k, perm[j]] = s_acc[k, j] * inv_size[k]
            dsums[k, perm[j]] = d_acc[k, j] * inv_size[k]


@njit(inline="always")
def _level_accumulators(theta, n_groups, n_w):
    """The sorted levels' blocks and the zeroed accumulators of the logistic row-sum kernels."""
    n_levels = theta.shape[0]
    perm = np.argsort(theta)
    starts, anchors, f = _grid_blocks(theta[perm], 1.0)
    acc = np.zeros((n_groups, n_w, n_levels))
    d_acc = np.zeros((n_groups, n_levels))
    return perm, starts, anchors, f, acc, d_acc, np.empty(n_levels), np.empty(n_levels)


@njit(inline="always")
def _scatter_levels(acc, d_acc, perm, out, dsums):
    """``out[k, perm[j], col] = acc[k, col, j]`` (accumulated level-minor, returned level-major), and
    ``dsums[k, perm[j]] = d_acc[k, j]``."""
    n_groups, n_w, n_levels = acc.shape
    for k in range(n_groups):
        for j in range(n_levels):
            dst = out[k, perm[j]]
            for col in range(n_w):
                dst[col] = acc[k, col, j]
            dsums[k, perm[j]] = d_acc[k, j]


@njit(cache=True, error_model="numpy", inline="always")
def _level_weights(zi, starts, anchors, f, scale, s, d, d_acc_k):
    r"""A row's weights :math:`\sigma'(z_i - \theta_p)/n_k` into ``d`` (``s``: scratch), added to its group's sums."""
    _sigmoid_row(zi, starts, anchors, f, s, d)
    for j in range(d.shape[0]):
        d[j] *= scale
        d_acc_k[j] += d[j]


@njit(cache=True, error_model="numpy")
def logistic_level_row_sums_csr(indptr, indices, data, z, groups, theta, inv_size, out, dsums):
    r"""``out[k, p]`` :math:`= \frac{1}{n_k}\sum_{i \in k}\sigma'(z_i - \theta_p)\tilde x_i` (the :math:`w`-gradients
    of every level mean), ``dsums`` as in `logistic_level_sums`.

    One pass over the rows: the row's :math:`P` weights :math:`\sigma'(z_i - \theta_p)/n_k`, then
    every stored entry adds its value times the weights to a level-minor accumulator (an inner
    loop over :math:`P` contiguous entries). :math:`O(\mathrm{nnz}\,P)`: the weights differ for every
    (row, level), so no suffix trick applies.
    """
    n_groups, n_levels, n_w = out.shape
    perm, starts, anchors, f, acc, d_acc, s, d = _level_accumulators(theta, n_groups, n_w)
    for i in range(z.shape[0]):
        k = groups[i]
        _level_weights(z[i], starts, anchors, f, inv_size[k], s, d, d_acc[k])
        for e in range(indptr[i], indptr[i + _ONE]):
            x = _entry(data, e)
            dst = acc[k, indices[e]]
            for j in range(n_levels):
                dst[j] += x * d[j]
    _scatter_levels(acc, d_acc, perm, out, dsums)


@njit(cache=True, error_model="numpy")
def logistic_level_row_sums_dense(X, z, groups, theta, inv_size, out, dsums):
    """`logistic_level_row_sums_csr` for a dense C-contiguous :math:`\\tilde X`."""
    n_groups, n_levels, n_w = out.shape
    perm, starts, anchors, f, acc, d_acc, s, d = _level_accumulators(theta, n_groups, n_w)
    for i in range(z.shape[0]):
        k = groups[i]
        _level_weights(z[i], starts, anchors, f, inv_size[k], s, d, d_acc[k])
        xi = X[i]
        for col in range(n_w):
            x = xi[col]
            dst = acc[k, col]
            for j in range(n_levels):
                dst[j] += x * d[j]
    _scatter_levels(acc, d_acc, perm, out, dsums)
