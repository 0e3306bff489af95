"""The README's two set-up commands are the ones CI runs."""
import re

from conftest import REPO


def _commands():
    text = (REPO / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)


def test_readme_has_exactly_two_setup_commands():
    commands = _commands()
    assert commands == ['pip install ".[sklearn,plot]" && fastcon demo',
                        'pip install -e ".[test]" && pytest -n auto --dist loadfile']


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert _commands()[1] in ci.splitlines()


def test_ci_requires_data_and_runs_the_install_test():
    # Locally a missing dataset skips; CI must fail instead, and run the fresh-virtualenv test.
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert "export FASTCON_REQUIRE_DATA=1" in ci and "export FASTCON_TEST_INSTALL=1" in ci
    setup = (REPO / "README.md").read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert "FASTCON_REQUIRE_DATA=1" in setup and "fastcon datasets --download" in setup


def test_readme_names_the_kernel_cache_folder(monkeypatch, tmp_path):
    from fastcon._kernels import _jit

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(_jit.config, "CACHE_DIR", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert _jit.cache_root() == str(tmp_path / ".cache" / "fastcon" / "numba")
    assert "`~/.cache/fastcon/numba`" in (REPO / "README.md").read_text()


def test_readme_estimator_example_runs_and_says_what_it_prints(capsys):
    # the first Python block of the README, as a user would paste it
    text = (REPO / "README.md").read_text()
    block = text.split("## In five lines", 1)[1].split("```python\n", 1)[1].split("\n```", 1)[0]
    exec(compile(block, "README.md", "exec"), {})
    accuracy, report = capsys.readouterr().out.split("\n", 1)
    assert 0.82 <= float(accuracy) <= 0.84                      # "~0.83"
    assert report.startswith("demographic_parity:") and "satisfied" in report.splitlines()[0]
