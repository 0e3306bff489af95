"""Benchmark conventions: every comparison is a pytest-benchmark *group* holding one
``fastcon`` benchmark and one ``reference`` benchmark (NumPy/SciPy/sklearn), timed in the same
run. At the end of the session the speed-up ``reference / fastcon`` (ratio of minimum times) is
printed per group, together with any extra figures a benchmark stored in ``extra_info``.
"""
import importlib.util
import sys
from pathlib import Path

# Benchmarks time fastcon against the plain NumPy references of tests/reference/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

# tests/conftest.py holds the data-folder fixture; loaded under its own name because pytest has
# already registered *this* file as the module "conftest".
_spec = importlib.util.spec_from_file_location(
    "_fastcon_tests_conftest", Path(__file__).resolve().parents[1] / "tests" / "conftest.py")
_tests_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tests_conftest)
data_home = _tests_conftest.data_home
shared_data_dir = _tests_conftest.shared_data_dir


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    groups = {}
    for bench in session.benchmarks:
        role = bench.extra_info.get("role")
        groups.setdefault(bench.group, {})[role] = bench
    tr = terminalreporter
    tr.section("fastcon speed-ups (reference min time / fastcon min time)")
    for group, roles in sorted(groups.items(), key=lambda kv: str(kv[0])):
        fast, ref = roles.get("fastcon"), roles.get("reference")
        extras = {}
        for b in roles.values():
            extras.update({k: v for k, v in b.extra_info.items() if k not in ("role", "target")})
        line = f"{group}:"
        if fast is not None and ref is not None:
            # Runs of different lengths (a long fastcon run against a short reference run) are
            # compared per iteration when both benchmarks say how many iterations they ran.
            n_fast = fast.extra_info.get("iterations_fastcon", 1)
            n_ref = ref.extra_info.get("iterations_reference", 1)
            t_fast, t_ref = fast.stats.min / n_fast, ref.stats.min / n_ref
            ratio = t_ref / t_fast
            target = fast.extra_info.get("target")
            unit = " per iteration" if (n_fast, n_ref) != (1, 1) else ""
            line += (f" fastcon {t_fast * 1e3:.3f} ms, reference {t_ref * 1e3:.3f} ms{unit}, "
                     f"ratio {ratio:.2f}x")
            if target is not None:
                line += f" (target >= {target}x: {'MET' if ratio >= target else 'NOT MET'})"
        if extras:
            line += " " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in extras.items())
        tr.write_line(line)
