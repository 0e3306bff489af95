"""Shared fixtures, and the test suite's data policy.

Data folder
    Tests read the folder the library resolves (`fastcon.datasets.data_home`: ``$FASTCON_DATA``,
    else ``~/.cache/fastcon``), through the ``data_home`` fixture.

Missing datasets
    A test that fails because a dataset file is missing from that folder (the registry's
    `DatasetFileError`, or a `FileNotFoundError` for a path inside the folder, raised in the test or
    in a fixture) is reported as *skipped*, and the session ends with one line naming the missing
    datasets and how to get them. A test that needs datasets it never loads through the registry
    (e.g. the ``fastcon datasets`` listing) declares them with ``@pytest.mark.datasets("a9a", ...)``
    (no names: all of them). With ``FASTCON_REQUIRE_DATA=1`` (set by ``.ci/run``) nothing is
    skipped: the tests fail, so CI never passes without its data.

No network
    ``FASTCON_OFFLINE=1`` is set for the whole session (subprocesses inherit it): a missing file is
    never downloaded by default. Download tests serve files from a local server and pass
    ``download=True`` explicitly.
"""
import gzip
import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ["FASTCON_OFFLINE"] = "1"  # before any test runs: loads never download unless asked to

from fastcon.datasets import DatasetFileError, dataset_info, list_datasets  # noqa: E402
from fastcon.datasets import data_home as resolve_data_home  # noqa: E402
from fastcon.datasets._registry import fetch_file, get_spec  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
REQUIRE_DATA = os.environ.get("FASTCON_REQUIRE_DATA", "").strip() not in ("", "0")
HOW_TO_GET = "get them with `fastcon datasets --download` or set FASTCON_DATA"
_STATE = "_fastcon_data_policy"  # attribute of the pytest config shared by tests/ and bench/ conftests


def _state(config) -> dict:
    if not hasattr(config, _STATE):
        setattr(config, _STATE, {"missing": {}, "summary_done": False, "header_done": False})
    return getattr(config, _STATE)


def bench_module(name):
    """The module ``bench/<name>.py`` (bench/ is not a package; its own imports resolve from bench/)."""
    import importlib.util

    sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def data_home() -> Path:
    """The data folder, resolved exactly as `fastcon.datasets.load` resolves it."""
    return resolve_data_home()


def dataset_file(data_home, dataset, file_name) -> Path:
    """Local path of one registry file of ``dataset`` (stored ``.gz`` or plain form, whichever is
    present, sha256-checked); raises `DatasetFileError` (a skip) when it is missing."""
    spec = get_spec(dataset)
    spec_file = next(f for f in spec.files if f.name == file_name)
    return fetch_file(spec_file, Path(data_home) / spec.folder, download=False, dataset=spec.name)


def dataset_bytes(data_home, dataset, file_name) -> bytes:
    """Uncompressed content of one registry file of ``dataset`` (see `dataset_file`)."""
    path = dataset_file(data_home, dataset, file_name)
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


# ------------------------------------------------------------------------------- data policy
def _folder_to_dataset(folder: str) -> str:
    for name in list_datasets():
        if get_spec(name).folder == folder:
            return name
    return folder


def _missing_dataset(exc, home: Path):
    """Name of the dataset whose missing file (inside ``home``) caused ``exc``, else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:  # also through `raise ... from` and pools
        seen.add(id(exc))
        path = getattr(exc, "path", None) if isinstance(exc, DatasetFileError) else (
            exc.filename if isinstance(exc, FileNotFoundError) else None)
        if path is not None:
            try:
                rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(home))
            except ValueError:
                rel = None  # a file elsewhere (a test's tmp_path): a real failure, never a skip
            if rel is not None and rel.parts:
                if isinstance(exc, DatasetFileError):
                    return exc.dataset
                name = _folder_to_dataset(rel.parts[0])
                # A dataset that is present (e.g. downloaded plain, not .gz) but opened under another
                # file name is the test's bug, not missing data: use `dataset_file`.
                present = name in list_datasets() and dataset_info(name, home)["available"]
                return None if present else name
        exc = exc.__cause__ or exc.__context__
    return None


def pytest_configure(config):
    if not config.pluginmanager.has_plugin(_MissingDatasets.__name__):  # tests/ and bench/ share one
        config.pluginmanager.register(_MissingDatasets(config), _MissingDatasets.__name__)
    config.addinivalue_line(
        "markers", "datasets(*names): the test needs these registry datasets (none given: all of them) "
                   "in the data folder; skipped when one is missing, failed with FASTCON_REQUIRE_DATA=1")


def pytest_runtest_setup(item):
    marker = item.get_closest_marker("datasets")
    if marker is None:
        return
    home = resolve_data_home()
    for name in marker.args or list_datasets():
        info = dataset_info(name, home)
        if not info["available"]:
            missing = next(f for f in info["files"] if not f["present"])
            raise DatasetFileError(f"dataset {info['name']!r}: {missing['path']} not found (the test is marked "
                                   f"@pytest.mark.datasets); {HOW_TO_GET}",
                                   dataset=info["name"], path=Path(missing["path"]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None:
        return
    home = resolve_data_home()
    name = _missing_dataset(call.excinfo.value, home)
    if name is None:
        return
    # Carried by the report itself, so the closing summary also counts tests that ran in
    # pytest-xdist workers (reports reach the controlling process, hook state does not).
    report.user_properties.append((_MISSING_KEY, name))
    if REQUIRE_DATA:
        return  # CI: a missing dataset is a failure
    report.outcome = "skipped"
    # One location and one reason for every such skip, so `-ra` folds them into the single summary
    # line: it names every dataset absent from the folder, not only this test's.
    report.longrepr = (__file__, _SKIP_LINE, _skip_reason(item.config, home))


def _skip_reason(config, home) -> str:
    state = _state(config)
    if "absent" not in state:
        state["absent"] = [n for n in list_datasets() if not dataset_info(n, home)["available"]]
    return f"datasets not found in {home} ({', '.join(state['absent'])}); {HOW_TO_GET}"


_SKIP_LINE = pytest_runtest_makereport.__code__.co_firstlineno
_MISSING_KEY = "fastcon_missing_dataset"


class _MissingDatasets:
    """Collects the missing datasets named by test reports, made here or sent by a pytest-xdist worker."""

    def __init__(self, config):
        self.config = config

    def pytest_runtest_logreport(self, report):
        for key, name in getattr(report, "user_properties", ()):
            if key == _MISSING_KEY:
                _state(self.config)["missing"].setdefault(name, set()).add(report.nodeid)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = _state(config)
    # Without FASTCON_REQUIRE_DATA the folded skip line of `-ra` already says it all.
    if state["summary_done"] or not state["missing"] or not REQUIRE_DATA:
        return
    state["summary_done"] = True
    n = len(set().union(*state["missing"].values()))
    terminalreporter.write_line(
        f"{n} test{'s' if n != 1 else ''} failed (FASTCON_REQUIRE_DATA=1): datasets not found in "
        f"{resolve_data_home()} ({', '.join(sorted(state['missing']))}); {HOW_TO_GET}", red=True)


def pytest_report_header(config):
    state = _state(config)
    if state["header_done"]:
        return None
    state["header_done"] = True
    from fastcon._kernels import _jit

    home = resolve_data_home()
    found = sum(dataset_info(name, home)["available"] for name in list_datasets())
    line = (f"fastcon: data folder {home} ({found}/{len(list_datasets())} datasets"
            f"{', required' if REQUIRE_DATA else ''}); numba cache {_jit.kernel_cache_dir()}")
    if _jit.cache_is_cold():
        line += " (empty: the first tests compile the kernels, a few minutes)"
    return line


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# ----------------------------------------------------------------------------- sparse input kept sparse
def refuse_densify(patcher):
    """Make every scipy.sparse ``toarray``/``todense`` raise, through ``patcher`` (a monkeypatch or its context)."""
    import scipy.sparse as sp

    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{type(self).__name__} densified")

    def subclasses(cls):
        yield cls
        for sub in cls.__subclasses__():
            yield from subclasses(sub)
    for cls in set(subclasses(sp._base._spbase)):
        for name in ("toarray", "todense"):
            if name in vars(cls):
                patcher.setattr(cls, name, refuse)
    return refuse


@pytest.fixture
def no_densify(monkeypatch):
    """Every scipy.sparse toarray/todense raises while the fixture is active."""
    return refuse_densify(monkeypatch)

