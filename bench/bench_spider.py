r"""3S-Econ-S (Liu & Xu [LX25]) on Problem 2 / a9a: iterations per second, and time/DP(g) to the stopping rule.

Problem 2 ([LX25] eq. (47)): hinge risk on the a9a train file (32,561 rows) + 0.02 SCAD,
s.t. :math:`|\overline{\sigma}_p - \overline{\sigma}_u| \le 0.02` on the a9a test file split by sex
(16,281 rows), start 0.

**Group 1, iteration speed** (issue 4: at least 50,000 it/s with :math:`S_2 = q = 181`):

* ``fastcon``: `fastcon.solvers.spider`, stochastic, :math:`q = S_2 = 181`, objective batch 181,
  ``N_FAST`` iterations with one history record at the end (the record's two full passes are
  included in the time). ``extra_info["it_per_s"]`` is the figure the target refers to.
* ``reference``: the same iteration as a competent NumPy/SciPy user writes it
  (``bench/_references.spider_iterations``): per iteration one CSR row gather ``G[B]`` of the
  constraint batch, reused for both SPIDER points (one product with ``x`` and ``x_prev`` side by
  side) and for the constraint subgradient, one gather ``A[B_f]`` of the objective batch,
  ``expit``, sparse products; it replays the compiled loop's random stream, ``N_REF`` iterations,
  compared per iteration and checked against fastcon's iterate. The ``tests/reference`` oracle
  (``logaddexp`` sigmoids, seven CSR row gathers per iteration) is timed too, for the old ratio.
  Roofline per iteration: the bytes of the two gathered batches (binary rows: ``uint32`` indices,
  the ``indptr`` pair, labels), the full constraint pass of every ``q``-th iteration spread over
  ``q``, and the d-vectors; one ``exp`` per constraint row and point. At ~15 kB per iteration
  this is a latency/overhead-bound loop: the bound is far below any achieved time.

**Group 2, to the stopping rule** ([LX25] §4.3): SSG-S vs 3S-Econ-S, each run until SVio <
5e-3 (checked every 1,000 iterations, not timed nor counted) or 2e5 iterations, as in
``fastcon reproduce spider-table2``; ``extra_info`` holds both DP(g) (paper convention), their ratio
(paper: 466) and the wall-time ratio. Here ``reference`` is the baseline method, not a NumPy loop.

``FASTCON_BENCH_SMALL=1``: 500 / 20 iterations in group 1; group 2 capped at 2,000 iterations.
"""
import os

import numpy as np
import pytest

from _references import spider_iterations
from _roofline import csr_pass_bytes, record_roofline
from _timing import best_time
from fastcon.problems import ConstrainedProblem, Whole, hinge_risk, less_equal, penalized, \
    scad_penalty, smoothed_demographic_parity
from fastcon.solvers import spider
from reference.spider import Problem2Reference, spider_reference

SMALL = bool(os.environ.get("FASTCON_BENCH_SMALL"))
N_FAST = 500 if SMALL else 100_000
N_REF = 20 if SMALL else 300
Q = 181
TARGET_IT_PER_S = 50_000
GROUP1 = f"3S-Econ-S iteration, Problem 2 a9a (S2 = q = batch_f = {Q}): fastcon vs NumPy (per iteration)"
GROUP2 = "Problem 2 a9a to SVio < 5e-3: 3S-Econ-S (fastcon) vs SSG-S (reference = baseline method)"


@pytest.fixture(scope="module")
def p2_a9a(data_home):
    from fastcon.datasets import load

    D, T = load("a9a", data_home=data_home, subset="train"), load("a9a", data_home=data_home, subset="test")
    p, u = T.subset(T.groups == 1), T.subset(T.groups == 0)
    obj = penalized(hinge_risk(D), scad_penalty(D.n_features, 0.02))
    prob = ConstrainedProblem(obj, [less_equal(smoothed_demographic_parity(p, u), 0.02)], Whole(), x0=np.zeros(D.n_features))
    ref = Problem2Reference(D.X.tocsr(), D.y.astype(np.float64), p.X.tocsr(), u.X.tocsr(), 0.02, 0.02)
    binary = D.is_binary_features and p.is_binary_features and u.is_binary_features
    return prob, ref, binary


def _bytes_per_iteration(ref, binary):
    """Rows a 3S-Econ-S iteration reads: both batches, 1/q of the full constraint pass, the d-vectors."""
    per_nnz = 4 if binary else 12
    nnz_f, nnz_g = ref.A.nnz / ref.A.shape[0], ref.G.nnz / ref.G.shape[0]
    batches = Q * (per_nnz * (nnz_f + nnz_g) + 2 * 16 + 8)
    return batches + csr_pass_bytes(ref.G, binary) / Q + 6 * 8 * ref.A.shape[1]


def _fast(prob, n):
    return spider(prob, variant="stochastic", q=Q, batch_size=Q, objective_batch_size=Q, max_iter=n,
                  record_every=n, seed=0)


@pytest.mark.benchmark(group=GROUP1)
def test_spider_iteration_fastcon(benchmark, p2_a9a):
    prob, ref, binary = p2_a9a
    _fast(prob, 100)  # compile
    res = benchmark.pedantic(_fast, args=(prob, N_FAST), rounds=3 if SMALL else 5, iterations=1)
    benchmark.extra_info.update(role="fastcon", iterations_fastcon=N_FAST, target_it_per_s=TARGET_IT_PER_S)
    if not benchmark.disabled:
        it_per_s = N_FAST / benchmark.stats.stats.min
        benchmark.extra_info.update(it_per_s=it_per_s,
                                    it_per_s_target="MET" if it_per_s >= TARGET_IT_PER_S else "NOT MET")
    record_roofline(benchmark, _bytes_per_iteration(ref, binary), n_exp=2 * Q + ref.G.shape[0] / Q,
                    seconds=None if benchmark.disabled else benchmark.stats.stats.min / N_FAST)
    assert res.n_iter == N_FAST


@pytest.mark.benchmark(group=GROUP1)
def test_spider_iteration_reference(benchmark, p2_a9a):
    prob, ref, _ = p2_a9a
    from fastcon._kernels._spider import draw_rows, rng_state
    from fastcon.problems._groups import stratified_sizes

    n_f, n_g = ref.A.shape[0], ref.G.shape[0]
    g_sizes = [*stratified_sizes(Q, ref.n_p, n_g - ref.n_p), 0, n_g]
    f_sizes = [Q, 0, 0, n_f]
    x0 = np.zeros(ref.A.shape[1])

    def state():
        return rng_state(np.random.SeedSequence(0).spawn(2)[0])

    def run():
        return spider_iterations(ref, x0, N_REF, Q, 0.01, True, 10.0, 1e-5, f_sizes, g_sizes, state(), draw_rows)

    def run_oracle():
        return spider_reference(ref, x0, N_REF, Q, 0.01, True, 10.0, 1e-5, f_sizes, g_sizes, state())

    # same stream, same iterates: the comparison is of one computation (checked before timing)
    xs, _ = run()
    fast = spider(prob, variant="stochastic", q=Q, batch_size=Q, objective_batch_size=Q, max_iter=N_REF,
                  record_every=N_REF, seed=0)
    np.testing.assert_allclose(fast.x, xs[-1], rtol=1e-8, atol=1e-12)
    benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info.update(role="reference", iterations_reference=N_REF)
    if not benchmark.disabled:
        benchmark.extra_info.update(superseded_ms=best_time(run_oracle, 2) / N_REF * 1e3,
                                    superseded_label="tests/reference oracle, per iteration")


def _to_stop(method, data_home):
    from fastcon.experiments import spider_table2 as E

    cfg = E.config(False)
    if SMALL:
        cfg.update(max_iter_sto=2000, svio_iter=100)
    params = {"step_size": 0.002} if method == "ssg_s" else {}
    return E.run_method("a9a", "p2", method, params, cfg, data_home=str(data_home), seed=0)


_stop = {}


@pytest.mark.benchmark(group=GROUP2)
def test_to_stopping_rule_spider_s(benchmark, data_home):
    rec = benchmark.pedantic(_to_stop, args=("spider_s", data_home), rounds=1, iterations=1)
    _stop["spider_s"] = rec
    benchmark.extra_info.update(role="fastcon", dp_g_spider_s=rec["data_passes_g"], it_spider_s=rec["n_iter"],
                                svio_spider_s=rec["svio"], wall_spider_s=rec["wall_time_s"])


@pytest.mark.benchmark(group=GROUP2)
def test_to_stopping_rule_ssg_s(benchmark, data_home):
    rec = benchmark.pedantic(_to_stop, args=("ssg_s", data_home), rounds=1, iterations=1)
    info = dict(role="reference", dp_g_ssg_s=rec["data_passes_g"], it_ssg_s=rec["n_iter"], svio_ssg_s=rec["svio"],
                wall_ssg_s=rec["wall_time_s"])
    other = _stop.get("spider_s")
    if other is not None:
        info.update(dp_g_ratio=rec["data_passes_g"] / other["data_passes_g"], paper_dp_g_ratio=466.0,
                    wall_time_ratio=rec["wall_time_s"] / other["wall_time_s"])
    benchmark.extra_info.update(info)
