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

# tests/conftest.py holds the data policy (the data-folder fixture, missing datasets skipped with
# one summary line or failed under FASTCON_REQUIRE_DATA=1, no downloads, the cache header); loaded
# under its own name because pytest has already registered *this* file as the module "conftest".
# Its per-test hooks are re-exported here because pytest applies a conftest's per-test hooks only
# to the tests below that conftest's folder; the session-wide parts print once per session.
_spec = importlib.util.spec_from_file_location(
    "_fastcon_tests_conftest", Path(__file__).resolve().parents[1] / "tests" / "conftest.py")
_tests_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tests_conftest)
data_home = _tests_conftest.data_home
dataset_file = _tests_conftest.dataset_file
dataset_bytes = _tests_conftest.dataset_bytes
pytest_configure = _tests_conftest.pytest_configure
pytest_runtest_setup = _tests_conftest.pytest_runtest_setup
pytest_runtest_makereport = _tests_conftest.pytest_runtest_makereport
pytest_report_header = _tests_conftest.pytest_report_header


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    _tests_conftest.pytest_terminal_summary(terminalreporter, exitstatus, config)
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    from _roofline import summary_lines  # bench/ helpers (honest ratio, old ratio, roofline)

    terminalreporter.section("fastcon speed-ups (honest reference min time / fastcon min time) and rooflines")
    for line in summary_lines(session.benchmarks):
        terminalreporter.write_line(line)
