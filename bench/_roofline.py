r"""Rooflines for the benchmarks and the end-of-session summary table.

A pass cannot be faster than reading its bytes once, nor than evaluating its transcendentals once:

.. math::

    t_{\min} = \max\Big(\frac{\text{bytes read}}{\text{read bandwidth}},\;
               n_{\exp} t_{\exp} + n_{\log} t_{\log} + n_{\div} t_{\div}\Big).

Both rates are **measured on this machine in the same session**, once each (cached):

* read bandwidth: the best of ``np.sum`` and a numba loop with four partial sums streaming a
  float64 buffer of the *same size as the pass's working set*, best of several sweeps. A pass
  repeated by a benchmark finds its data in the cache exactly as this sweep does (a9a's 5.5 MB stay
  in L3: ~28 GB/s here), so this is the rate the pass could reach. The DRAM rate (a 400 MB buffer,
  best of 5) is printed once in the summary header for comparison.
* dense products: a one-thread BLAS GEMM (512 x 512), GFLOP/s.
* transcendentals: a numba loop of scalar ``math.exp`` / ``math.log1p`` over 1M float64 values
  (what a numba kernel calling libm can issue: compiled without fastmath, no SVML here), NumPy's
  vectorised ``np.exp`` over the same values (the machine's best exp rate, the bound for kernels
  with a vectorisable exp polynomial such as the multi-class Neyman-Pearson pass), and
  a vectorised ``out[i] = 1 / (1 + a[i] f)`` loop for the per-pair division of a threshold sweep.

``record_roofline`` stores the counts and, when the benchmark was timed, the bounds and the
fraction of the bound that fastcon reaches; ``summary_lines`` formats the session's table
(called from bench/conftest.py).
"""
import functools
import math

import numba
import numpy as np

from _timing import best_time

DRAM_BYTES = 400_000_000


# --------------------------------------------------------------------------- measured rates
@numba.njit(cache=True, boundscheck=False, fastmath=True)
def _stream_sum(a):
    # Four partial sums (and fastmath for this helper only) so the adds never limit the stream.
    s0 = s1 = s2 = s3 = 0.0
    n4 = a.size // 4 * 4
    for i in range(0, n4, 4):
        s0 += a[i]
        s1 += a[i + 1]
        s2 += a[i + 2]
        s3 += a[i + 3]
    for i in range(n4, a.size):
        s0 += a[i]
    return s0 + s1 + s2 + s3


@numba.njit(cache=True, boundscheck=False)
def _exp_sum(a):
    s = 0.0
    for i in range(a.size):
        s += math.exp(a[i])
    return s


@numba.njit(cache=True, boundscheck=False)
def _log1p_sum(a):
    s = 0.0
    for i in range(a.size):
        s += math.log1p(a[i])
    return s


@numba.njit(cache=True, boundscheck=False)
def _div_pass(a, f, out):
    for i in range(a.size):
        out[i] = 1.0 / (1.0 + a[i] * f)


def _bucket(nbytes):
    """Round to two significant digits so that passes of nearly equal size share one measurement."""
    nbytes = max(int(nbytes), 1 << 16)
    scale = 10 ** max(0, int(math.log10(nbytes)) - 1)
    return int(round(nbytes / scale)) * scale


@functools.lru_cache(maxsize=None)
def read_gbps(nbytes):
    """Measured read bandwidth (GB/s) for a working set of ``nbytes`` (rounded), best of both readers."""
    nbytes = _bucket(nbytes)
    a = np.random.default_rng(0).random(nbytes // 8)
    repeat = int(min(200, max(5, 2e9 / nbytes)))
    t = min(best_time(lambda: a.sum(), repeat), best_time(lambda: _stream_sum(a), repeat))
    return a.nbytes / t / 1e9


@functools.lru_cache(maxsize=None)
def dram_read_gbps():
    """Read bandwidth from main memory: a 400 MB buffer, best of 5 (well past the caches' reach)."""
    return read_gbps(DRAM_BYTES)


@functools.lru_cache(maxsize=None)
def gemm_gflops():
    """Measured one-thread BLAS GEMM rate (GFLOP/s, 512 x 512 products): the dense compute roof."""
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(2).random((512, 512))
    out = np.empty_like(a)
    with threadpool_limits(limits=1):
        t = best_time(lambda: np.dot(a, a, out=out), 20)
    return 2 * 512 ** 3 / t / 1e9


@functools.lru_cache(maxsize=None)
def transcendental_ns():
    """Measured ns per scalar ``exp`` (numba/libm), per vectorised ``exp`` (NumPy's SIMD ``np.exp``),
    per scalar ``log1p``, per vectorised ``log1p`` (``np.log1p``) and per vectorised ``1/(1 + a f)``."""
    a = np.random.default_rng(1).standard_normal(1_000_000)
    e = np.exp(a)
    out = np.empty(1 << 16)
    small = e[: out.size].copy()
    buf = np.empty_like(a)
    return dict(exp=best_time(lambda: _exp_sum(a), 5) / a.size * 1e9,
                exp_vector=best_time(lambda: np.exp(a, out=buf), 5) / a.size * 1e9,
                log1p=best_time(lambda: _log1p_sum(e), 5) / a.size * 1e9,
                log1p_vector=best_time(lambda: np.log1p(e, out=buf), 5) / a.size * 1e9,
                div=best_time(lambda: _div_pass(small, 1.5, out), 50) / out.size * 1e9)


# --------------------------------------------------------------------------- per-benchmark figures
def csr_pass_bytes(X, binary):
    """Bytes of a full pass over CSR ``X`` as fastcon's kernels hold it: ``indptr`` uint64,
    ``indices`` uint32, and float64 ``data`` unless the features are binary (no values array)."""
    return 8 * (X.shape[0] + 1) + 4 * X.nnz + (0 if binary else 8 * X.nnz)


def record_roofline(benchmark, nbytes, n_exp=0, n_log=0, n_div=0, n_flop=0, gathered=(), threads=1,
                    exp_kind="scalar", seconds=None):
    """Store the roofline of the pass timed by ``benchmark`` in its ``extra_info``.

    Parameters
    ----------
    benchmark : pytest-benchmark fixture
        Timed (or ``--benchmark-disable``: then only the counts are stored).
    nbytes : int
        Bytes one pass must read: the arrays the kernel really streams (CSR ``data`` — absent on the
        binary path — ``indices``, ``indptr``, or the dense matrix, plus the vectors).
    n_exp, n_log, n_div : int
        Scalar ``exp``, ``log1p`` and per-pair divisions one pass must evaluate.
    n_flop : int
        Floating-point operations of dense products, at the one-thread GEMM rate.
    gathered : sequence of (bytes, working_set_bytes)
        Further traffic from a small table re-read many times (e.g. a row of W per stored entry),
        at the read bandwidth of its own working set; added to the read bound.
    exp_kind : {"scalar", "vector"}
        Rate of ``n_exp`` and ``n_log``: libm's scalar ``exp``/``log1p`` in a numba loop (kernels
        that call them per entry), or NumPy's vectorised ``np.exp``/``np.log1p`` (kernels with
        vectorisable polynomials, `fastcon._kernels._vecmath`).
    threads : int
        Threads the timed pass runs on (numba's, for the parallel kernels): both bounds are divided
        by it, i.e. perfect scaling of the one-core rates is assumed (an optimistic bound).
    seconds : float, optional
        Time of one pass, when the benchmark times several (per iteration); default: its min time.
    """
    info = benchmark.extra_info
    info.update(roof_bytes=int(nbytes), roof_n_exp=int(n_exp), roof_n_log=int(n_log), roof_n_div=int(n_div),
                roof_n_flop=int(n_flop), roof_gathered_bytes=int(sum(b for b, _ in gathered)),
                roof_threads=int(threads), roof_exp_kind=exp_kind)
    if seconds is None:
        if benchmark.stats is None:  # --benchmark-disable: the function ran once, untimed
            return
        seconds = benchmark.stats.stats.min
    bw = read_gbps(nbytes)
    rates = transcendental_ns()
    t_read = nbytes / (bw * 1e9) + sum(b / (read_gbps(ws) * 1e9) for b, ws in gathered)
    scalar = exp_kind == "scalar"
    t_comp = (n_exp * rates["exp" if scalar else "exp_vector"] + n_log * rates["log1p" if scalar else "log1p_vector"]
              + n_div * rates["div"]) * 1e-9
    if n_flop:
        t_comp += n_flop / (gemm_gflops() * 1e9)
    t_read, t_comp = t_read / threads, t_comp / threads
    info.update(roof_read_GBps=bw, roof_read_ms=t_read * 1e3, roof_compute_ms=t_comp * 1e3,
                roof_bound="compute" if t_comp > t_read else "read",
                roof_achieved_GBps=nbytes / seconds / 1e9,
                roof_pct=100.0 * max(t_read, t_comp) / seconds)


# --------------------------------------------------------------------------- summary table
_ROOF_KEYS = ("roof_threads", "roof_exp_kind", "roof_bytes", "roof_n_exp", "roof_n_log", "roof_n_div", "roof_n_flop", "roof_gathered_bytes",
              "roof_read_GBps", "roof_read_ms",
              "roof_compute_ms", "roof_bound", "roof_achieved_GBps", "roof_pct")
_HIDDEN = {"role", "target", "superseded_ms", "superseded_label", *_ROOF_KEYS}


def _fmt(v):
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _roof_line(info):
    if "roof_pct" not in info:
        return None
    counts = [f"{info['roof_bytes'] / 1e6:.2f} MB"]
    if info.get("roof_gathered_bytes"):
        counts.append(f"{info['roof_gathered_bytes'] / 1e6:.1f} MB re-read from a cached table")
    vector = "" if info.get("roof_exp_kind", "scalar") == "scalar" else "vectorised "
    for key, name in (("roof_n_exp", vector + "exp"), ("roof_n_log", vector + "log1p"), ("roof_n_div", "divisions"),
                      ("roof_n_flop", "GEMM flops")):
        if info.get(key):
            counts.append(f"{info[key]:,} {name}")
    on = f" on {info['roof_threads']} threads" if info.get("roof_threads", 1) > 1 else ""
    return (f"roofline (fastcon{on}): reads {', '.join(counts)}; read bound {info['roof_read_ms']:.3g} ms at "
            f"{info['roof_read_GBps']:.1f} GB/s, compute bound {info['roof_compute_ms']:.3g} ms -> "
            f"{info['roof_bound']}-bound; fastcon reaches {info['roof_pct']:.0f}% of it "
            f"({info['roof_achieved_GBps']:.1f} GB/s achieved)")


def summary_lines(benchmarks):
    """The session's table, one block per group: times, honest ratio vs target, the superseded
    (old) reference's ratio where one was timed, fastcon's roofline, then the remaining extras."""
    groups = {}
    for bench in benchmarks:
        groups.setdefault(bench.group, {})[bench.extra_info.get("role")] = bench
    lines = []
    if any("roof_pct" in b.extra_info for b in benchmarks):
        rates = transcendental_ns()
        lines.append(f"machine: DRAM read {dram_read_gbps():.1f} GB/s (400 MB, best of 5); scalar exp "
                     f"{rates['exp']:.2f} ns (vectorised np.exp {rates['exp_vector']:.2f} ns), log1p {rates['log1p']:.2f} ns "
                     f"(vectorised {rates['log1p_vector']:.2f} ns), vectorised 1/(1+af) "
                     f"{rates['div']:.2f} ns (numba, no fastmath); one-thread GEMM {gemm_gflops():.1f} GFLOP/s")
    for group, roles in sorted(groups.items(), key=lambda kv: str(kv[0])):
        fast, ref = roles.get("fastcon"), roles.get("reference")
        lines.append(f"{group}:")
        if fast is not None and ref is not None:
            # Runs of different lengths (a long fastcon run against a short reference run) are
            # compared per iteration when both benchmarks say how many iterations they ran.
            n_fast = fast.extra_info.get("iterations_fastcon", 1)
            n_ref = ref.extra_info.get("iterations_reference", 1)
            t_fast, t_ref = fast.stats.min / n_fast, ref.stats.min / n_ref
            ratio = t_ref / t_fast
            unit = " per iteration" if (n_fast, n_ref) != (1, 1) else ""
            line = (f"    fastcon {t_fast * 1e3:.4g} ms, honest reference {t_ref * 1e3:.4g} ms{unit}: "
                    f"ratio {ratio:.2f}x")
            target = fast.extra_info.get("target")
            if target is not None:
                line += f" (target >= {target}x: {'MET' if ratio >= target else 'NOT MET'})"
            old = ref.extra_info.get("superseded_ms")
            if old is not None:
                label = ref.extra_info.get("superseded_label", "superseded reference")
                line += f"; old ratio {old / 1e3 / t_fast:.2f}x ({label}: {old:.4g} ms)"
            lines.append(line)
        roof = _roof_line(fast.extra_info) if fast is not None else None
        if roof:
            lines.append("    " + roof)
        extras = {}
        for b in roles.values():
            extras.update({k: v for k, v in b.extra_info.items() if k not in _HIDDEN})
        if extras:
            lines.append("    " + ", ".join(f"{k}={_fmt(v)}" for k, v in extras.items()))
    return lines
