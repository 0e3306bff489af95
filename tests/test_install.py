"""A new user's path: the README's two set-up commands, the numba cache and the tests without data.

* numba's on-disk cache of fastcon's kernels lives in a per-user folder (``$NUMBA_CACHE_DIR`` when
  set), never inside the installed package: files there survive ``pip uninstall`` and turned
  ``site-packages/fastcon`` into an empty namespace package that shadowed the editable install.
* Tests whose dataset is missing skip with one summary line, or fail under FASTCON_REQUIRE_DATA=1.
* `test_readme_commands_in_a_fresh_virtualenv` runs both README commands, in order, in a fresh
  virtualenv on a copy of the working tree. It installs from PyPI and compiles kernels into an
  empty cache (minutes), so it runs only with FASTCON_TEST_INSTALL=1 (``.ci/run`` sets it).
"""
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numba
import pytest
from numba.core.caching import NullCache

from fastcon.datasets import list_datasets

from conftest import REPO

TESTS = Path(__file__).resolve().parent
COLD_LINE = re.compile(r"^fastcon: compiling numba kernels into (\S+) \(first use only, a few minutes\)$", re.M)


def _clean_env(tmp_path, **extra) -> dict:
    """The environment of a user who set nothing: no NUMBA_CACHE_DIR, no data folder, HOME in tmp."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "FASTCON_DATA", "FASTCON_REQUIRE_DATA", "XDG_CACHE_HOME", "PYTHONPATH")}
    env["HOME"] = str(tmp_path / "home")
    env.update(extra)
    return env


# ------------------------------------------------------------------------------- numba cache
def test_every_cached_kernel_uses_fastcons_cache_folder():
    import importlib
    import pkgutil

    import fastcon._kernels
    from fastcon._kernels import _jit

    found = []
    for info in pkgutil.iter_modules(fastcon._kernels.__path__):
        module = importlib.import_module(f"fastcon._kernels.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, numba.core.dispatcher.Dispatcher) and not isinstance(obj._cache, NullCache):
                found.append(name)
                assert obj._cache.cache_path == _jit.kernel_cache_dir(), f"{info.name}.{name}"
    assert len(found) > 30
    # Decorating set numba's cache folder only for the time of each decoration.
    assert numba.config.CACHE_DIR == os.environ.get("NUMBA_CACHE_DIR", "")


_PROBE = textwrap.dedent("""
    import sys
    import numba
    import numpy as np
    from fastcon._kernels import _jit, _vector

    y = np.zeros(3)
    _vector.axpy(2.0, np.ones(3), y)  # a cached kernel, compiled (or loaded) here
    assert y.tolist() == [2.0, 2.0, 2.0]
    sys.path.insert(0, sys.argv[1])
    import userjit  # the user's own cache=True function: numba's usual place
    assert userjit.f(1) == 2
    print(_jit.kernel_cache_dir())
    print(repr(numba.config.CACHE_DIR))
""")


def _probe(tmp_path, env):
    user = tmp_path / "user"
    user.mkdir(exist_ok=True)
    (user / "userjit.py").write_text("import numba\n\n\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    out = subprocess.run([sys.executable, "-c", _PROBE, str(user)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    kernel_dir, config_dir = out.stdout.splitlines()[-2:]
    return Path(kernel_dir), config_dir, out.stderr


def test_the_cache_key_changes_with_any_kernel_source(tmp_path, monkeypatch):
    # numba checks an entry against its own file's timestamp only; kernels inline helpers of other
    # files, so an edit of one file must invalidate every kernel's entries
    from fastcon._kernels import _jit, _linalg

    _linalg.n_chunks_for(10, 10, 1)                  # one compiled signature
    sig = _linalg.n_chunks_for.signatures[0]
    key = _linalg.n_chunks_for._cache._index_key(sig, _linalg.n_chunks_for.targetctx.codegen())
    assert key[-1] == _jit._sources_tag()
    folder = tmp_path / "_kernels"
    folder.mkdir()
    (folder / "_a.py").write_text("x = 1\n")
    (folder / "_b.py").write_text("y = 2\n")
    monkeypatch.setattr(_jit, "_KERNEL_FILE", str(folder / "_a.py"))
    monkeypatch.setitem(_jit._state, "sources", None)
    first = _jit._sources_tag()
    monkeypatch.setitem(_jit._state, "sources", None)
    (folder / "_b.py").write_text("y = 3\n")
    assert _jit._sources_tag() != first
    monkeypatch.setitem(_jit._state, "sources", None)
    (folder / "_b.py").write_text("y = 2\n")
    assert _jit._sources_tag() == first


def test_default_cache_is_per_user_and_announced_once(tmp_path):
    xdg = tmp_path / "xdg"
    env = _clean_env(tmp_path, XDG_CACHE_HOME=str(xdg))
    start = time.time()
    kernel_dir, config_dir, err = _probe(tmp_path, env)
    assert kernel_dir.parent == xdg / "fastcon" / "numba" and kernel_dir.name.startswith("_kernels_")
    assert config_dir == "''"  # the user's numba configuration is untouched
    assert list(kernel_dir.glob("_vector.axpy-*.nbi"))
    assert COLD_LINE.findall(err) == [str(kernel_dir)]
    assert list((tmp_path / "user" / "__pycache__").glob("userjit.f-*.nbi"))  # numba's default for the user
    # Nothing was written next to fastcon's sources (site-packages for an installed fastcon).
    pkg_cache = REPO / "fastcon" / "_kernels" / "__pycache__"
    assert not [p for p in pkg_cache.glob("*.nb[ic]") if p.stat().st_mtime >= start]
    # Warm: loaded from the cache, nothing announced.
    assert _probe(tmp_path, env)[2].count("fastcon: compiling") == 0
    # Without XDG_CACHE_HOME: ~/.cache.
    env.pop("XDG_CACHE_HOME")
    assert _probe(tmp_path, env)[0].parent == tmp_path / "home" / ".cache" / "fastcon" / "numba"


def test_numba_cache_dir_is_honoured(tmp_path):
    kernel_dir, config_dir, _ = _probe(tmp_path, _clean_env(tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "nc")))
    assert kernel_dir.parent == tmp_path / "nc" and config_dir == repr(str(tmp_path / "nc"))
    assert list(kernel_dir.glob("_vector.axpy-*.nbi"))
    assert list((tmp_path / "nc").glob("user_*/userjit.f-*.nbi"))  # the user's functions go there too


def test_unwritable_cache_folder_compiles_without_cache(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    kernel_dir, _, err = _probe(tmp_path, _clean_env(tmp_path, XDG_CACHE_HOME=str(blocker)))
    assert "numba cache folder" in err and "is not writable" in err and "NUMBA_CACHE_DIR" in err
    assert err.count("is not writable") == 1
    assert "fastcon: compiling" not in err  # nothing is being cached, so no "first use only"


# ------------------------------------------------------------------------------- tests without data
_POLICY_TESTS = textwrap.dedent("""
    import os

    import pytest
    from conftest import dataset_file
    from fastcon.datasets import load


    def test_registry_load():
        load("german")


    def test_registry_file(data_home):
        dataset_file(data_home, "a9a", "a9a.gz")


    def test_file_in_data_folder(data_home):
        (data_home / "compas" / "compas-scores-two-years.csv.gz").read_bytes()


    @pytest.mark.datasets("segment")
    def test_marked():
        raise AssertionError("runs only when segment is present")


    def test_missing_file_elsewhere_is_a_failure(tmp_path):
        (tmp_path / "nope.csv").read_bytes()


    def test_offline():
        assert os.environ["FASTCON_OFFLINE"] == "1"
""")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
@pytest.mark.parametrize("require", [False, True])
def test_missing_datasets_skip_with_one_line_or_fail_in_ci(tmp_path, require, workers):
    # Also with the tests spread over pytest-xdist workers (the README's test command): the
    # closing lines are written by the controlling process from the workers' reports.
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    shutil.copy(TESTS / "conftest.py", project / "tests" / "conftest.py")
    (project / "tests" / "test_policy.py").write_text(_POLICY_TESTS)
    empty = tmp_path / "no-data"
    env = _clean_env(tmp_path, FASTCON_DATA=str(empty), NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", ""))
    if require:
        env["FASTCON_REQUIRE_DATA"] = "1"
    out = subprocess.run([sys.executable, "-m", "pytest", "-ra", "-p", "no:cacheprovider", *workers, "tests"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=600)
    text = out.stdout
    names = "(a9a, compas, german, segment); get them with `fastcon datasets --download` or set FASTCON_DATA"
    assert f"fastcon: data folder {empty} (0/10 datasets{', required' if require else ''})" in text
    if require:
        assert "4 failed, 1 passed, 1 error" in text, text  # the marked test fails in its set-up
        assert f"4 tests failed (FASTCON_REQUIRE_DATA=1): datasets not found in {empty} {names}" in text
        assert "SKIPPED" not in text
    else:
        assert "1 failed, 1 passed, 4 skipped" in text, text
        # One line: pytest's folded skip line names every dataset absent from the folder.
        every = ", ".join(list_datasets())
        skipped = [line for line in text.splitlines() if line.startswith("SKIPPED")]
        assert len(skipped) == 1 and skipped[0].startswith("SKIPPED [4] "), text
        assert skipped[0].endswith(f"datasets not found in {empty} ({every}); get them with "
                                   "`fastcon datasets --download` or set FASTCON_DATA"), skipped[0]
        assert "tests skipped" not in text
        assert "FAILED tests/test_policy.py::test_missing_file_elsewhere_is_a_failure" in text


# ------------------------------------------------------------------------------- fresh virtualenv
def _readme_commands():
    text = (REPO / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)


def _copy_working_tree(dest: Path):
    """Committed and uncommitted files, not ignored ones (.venv, build/, caches)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():  # a tracked file deleted in the working tree is left out
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


@pytest.mark.skipif(os.environ.get("FASTCON_TEST_INSTALL") != "1",
                    reason="slow (installs from PyPI, compiles kernels into an empty cache: minutes); "
                           "set FASTCON_TEST_INSTALL=1 to run the README's commands in a fresh virtualenv")
def test_readme_commands_in_a_fresh_virtualenv(tmp_path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to copy the working tree from")
    first, second = _readme_commands()
    install, test_command = second.split(" && ")
    assert test_command.startswith("pytest")
    clone = tmp_path / "clone"
    _copy_working_tree(clone)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = _clean_env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "home" / ".cache"), VIRTUAL_ENV=str(venv),
                     PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
                     # Reuse downloaded wheels; the cache location changes nothing being tested.
                     PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR")
                     or str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pip"),
                     PIP_DISABLE_PIP_VERSION_CHECK="1")
    timings = {}

    def run(command, cwd=clone):
        t0 = time.perf_counter()
        out = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                             timeout=3600)
        timings[command] = time.perf_counter() - t0
        assert out.returncode == 0, f"`{command}` failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        return out

    demo = run(first)  # pip install ".[sklearn,plot]" && fastcon demo
    assert COLD_LINE.search(demo.stderr), demo.stderr[-2000:]
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", purelib], env=env, capture_output=True, text=True,
                               check=True).stdout.strip())
    assert (site / "fastcon" / "__init__.py").is_file()
    assert not list((site / "fastcon").rglob("*.nb[ic]")), "numba cached into the installed package"

    run(install)  # pip install -e ".[test]"
    # The regular install is gone without a trace: no folder left to shadow the editable install.
    assert not (site / "fastcon").exists()
    collected = run("pytest --co -q -p no:cacheprovider")
    assert re.search(r"^\d+ tests collected", collected.stdout, re.M) and " error" not in collected.stdout, \
        collected.stdout[-3000:]
    # The README's test command (its options: workers) on a few tests.
    quick = run(f"{test_command} -q -p no:cacheprovider tests/test_readme.py tests/test_cli.py::test_version")
    # the README's estimator example needs a9a: without the data folder it is skipped (the data
    # policy of tests/conftest.py), so a skip is allowed here and nothing else
    assert re.search(r"^\d+ passed(, \d+ skipped)? in", quick.stdout, re.M), quick.stdout[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = run("fastcon demo", cwd=elsewhere)  # the editable install, from outside the clone
    assert "demo" in again.stdout
    print("fresh-virtualenv timings: " + "; ".join(f"{c!r} {t:.0f} s" for c, t in timings.items()))
