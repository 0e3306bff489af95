"""The ``fastcon`` command: --version, datasets listing (table and JSON), missing data."""
import json
import subprocess
import sys

import pytest

from fastcon import __version__
from fastcon.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"fastcon {__version__}"


def test_python_m_fastcon_runs():
    out = subprocess.run([sys.executable, "-m", "fastcon", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"fastcon {__version__}"


def test_datasets_json_lists_every_shared_dataset(data_home, capsys):
    from fastcon.datasets import list_datasets

    assert main(["datasets", "--json", "--data-home", str(data_home)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list_datasets()
    assert all(r["found"] and r["error"] is None for r in rows)
    by_name = {r["name"]: r for r in rows}
    assert by_name["a9a"]["subsets"]["train"]["shape"] == [32561, 123]
    assert by_name["a9a"]["subsets"]["test"]["shape"] == [16281, 123]
    assert by_name["compas"]["subsets"]["train"]["shape"][0] == 6172
    assert by_name["pendigits"]["subsets"]["train"]["classes"] == 10


def test_datasets_table(data_home, capsys):
    assert main(["datasets", "german", "a9a", "--data-home", str(data_home)]) == 0
    text = capsys.readouterr().out
    assert "32,561 x 123" in text and "1,000 x" in text and "female" in text.lower()


def test_datasets_missing_says_where_to_put_files(tmp_path, capsys):
    assert main(["datasets", "german", "--data-home", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "missing" in text and str(tmp_path / "german" / "german.data") in text


def test_datasets_unknown_name(capsys):
    assert main(["datasets", "mnist"]) == 2
    assert "unknown dataset" in capsys.readouterr().err
