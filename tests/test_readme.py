"""The README's two set-up commands are the ones CI runs."""
import re

from conftest import REPO


def _commands():
    text = (REPO / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)


def test_readme_has_exactly_two_setup_commands():
    commands = _commands()
    assert commands == ['pip install ".[plot]" && fastcon demo', 'pip install -e ".[test]" && pytest']


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert _commands()[1] in ci.splitlines()
