r"""Where a step of the ssg-wasserstein experiment spends its time (docs/benchmarks.md, "Transport projection").

Run from the repository root (the COMPAS data in ``$FASTCON_DATA``):

    python bench/wasserstein_step_profile.py [--method ssg_diminishing] [--steps 1500] [--dataset compas]

Builds the experiment's full-run problem of one dataset (`fastcon.experiments.ssg_wasserstein.build`,
seed 0: COMPAS gives m = 692, a plan of 479k entries) and runs one method of its grid for
``--steps`` iterations exactly as a grid point does (`fastcon.experiments._tuning.solve_method`,
the experiment's run options: stochastic minibatch objective, history every 30 iterations), with
a timer around every projection of the transport plan (`TransportPolytope.project_inplace`).
Prints the whole run's time per step, the projection's time per call and the solver's counters
(passes over the plan, Newton steps, CG iterations). The grid point timed per method:

* ``ssg_diminishing``: :math:`E_1 = 0.1`, :math:`E_2 = 2\cdot10^{-4}`;
* ``ssg_static``: :math:`\epsilon = 10^{-5}`, :math:`\eta = 0.015`;
* ``conex``: :math:`c_1 = 0.02`, :math:`c_2 = 50`;
* ``ipp_ssg``: :math:`\hat\rho` factor :math:`10^{-4}`, :math:`\epsilon = 10^{-5}`, :math:`\eta = 0.015`;
* ``ipp_conex``: :math:`\hat\rho` factor :math:`10^{-4}`, :math:`c_1 = 100`, :math:`c_2 = 0.01`.

One process, one numba thread; pause other jobs on the machine: two memory-bound runs side by side
each take about 1.6x longer (the plan and the subgradients, 3.8 MB each at m = 692, do not fit a
core's L2).
"""
import argparse
import time

import numba

from fastcon.experiments import ssg_wasserstein
from fastcon.experiments._tuning import solve_method
from fastcon.problems._transport_domain import TransportPolytope

GRID_POINTS = {
    "ssg_diminishing": {"E1": 0.1, "E2": 2e-4},
    "ssg_static": {"switching_level": 1e-5, "step_size": 0.015},
    "conex": {"c1": 0.02, "c2": 50.0},
    "ipp_ssg": {"rho_hat_factor": 1e-4, "switching_level": 1e-5, "step_size": 0.015},
    "ipp_conex": {"rho_hat_factor": 1e-4, "c1": 100.0, "c2": 0.01},
}


def profile(dataset, method, steps, data_home=None) -> dict:
    """Run ``steps`` iterations of one grid point; return the timings and the projection's counters."""
    cfg = ssg_wasserstein.config(quick=False)
    bundle = ssg_wasserstein.build(dataset, ssg_wasserstein.build_options(cfg), data_home=data_home, seed=0)
    problem, record = bundle["instance"](0)
    m = bundle["meta"]["m"]
    totals = {"seconds": 0.0, "calls": 0, "passes": 0, "newton": 0, "cg": 0}
    original = TransportPolytope.project_inplace

    def timed(self, x):
        t0 = time.perf_counter()
        out = original(self, x)
        if self.m == m:  # the solver's plan (not a 1-point block of another domain)
            totals["seconds"] += time.perf_counter() - t0
            totals["calls"] += 1
            totals["passes"] += self.last.n_passes
            totals["newton"] += self.last.n_iter
            totals["cg"] += self.last.n_cg
        return out

    options = ssg_wasserstein.run_options(cfg)
    ipp = method.startswith("ipp")
    inner = min(steps, options["inner_iter"])
    if ipp:
        steps = max(1, steps // inner) * inner  # whole outer iterations of `inner` steps
    TransportPolytope.project_inplace = timed
    try:
        t0 = time.perf_counter()
        solve_method(problem, method, GRID_POINTS[method], max_iter=steps, inner_iter=inner,
                     record_every=options["record_every"], seed=1, rho_base=bundle["meta"]["rho_ipp_base"],
                     conex_dual=options["conex_dual"], ipp_conex_primal=options["ipp_conex_primal"],
                     ipp_conex_index=options["ipp_conex_index"], oracle=options["oracle"],
                     record_problem=None if ipp else record)
        total = time.perf_counter() - t0
    finally:
        TransportPolytope.project_inplace = original
    n = max(totals["calls"], 1)
    return {"m": m, "step_ms": 1e3 * total / steps, "projection_ms": 1e3 * totals["seconds"] / n,
            "passes": totals["passes"] / n, "newton": totals["newton"] / n, "cg": totals["cg"] / n,
            "projections": totals["calls"], "steps": steps}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="compas", choices=["compas", "german"])
    parser.add_argument("--method", default="ssg_diminishing", choices=sorted(GRID_POINTS))
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    numba.set_num_threads(1)
    r = profile(args.dataset, args.method, args.steps)
    print(f"{args.dataset} (m = {r['m']}) {args.method}, {r['steps']} steps: {r['step_ms']:.2f} ms per step; "
          f"projection {r['projection_ms']:.3f} ms per call ({r['projections']} calls), {r['passes']:.2f} passes, "
          f"{r['newton']:.2f} Newton steps, {r['cg']:.2f} CG iterations")
