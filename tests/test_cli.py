"""The ``fastcon`` command: --version, datasets listing (table and JSON), missing data."""
import json
import subprocess
import sys

import pytest

from fastcon import __version__
from fastcon.cli import main
from fastcon.experiments import data_needed


def needs_data_of(experiment):
    """The `datasets` marker for the datasets that ``fastcon reproduce EXPERIMENT --quick`` reads."""
    return pytest.mark.datasets(*sorted({name for name, _ in data_needed(experiment, quick=True)}))


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"fastcon {__version__}"


def test_python_m_fastcon_runs():
    out = subprocess.run([sys.executable, "-m", "fastcon", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"fastcon {__version__}"


@pytest.mark.datasets()  # all of them
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


@pytest.mark.datasets("german", "a9a")
def test_datasets_table(data_home, capsys):
    assert main(["datasets", "german", "a9a", "--data-home", str(data_home)]) == 0
    text = capsys.readouterr().out
    assert "32,561 x 123" in text and "1,000 x" in text and "female" in text.lower()


def test_datasets_missing_says_where_to_put_files(tmp_path, capsys):
    # A dataset named on the command line and missing: exit 1, with where to put it and how to get it.
    assert main(["datasets", "german", "--data-home", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "missing" in captured.out and str(tmp_path / "german" / "german.data") in captured.out
    assert "fastcon datasets --download german" in captured.err


@pytest.mark.datasets("compas")
def test_datasets_listing_everything_exits_0_with_missing_ones(tmp_path, data_home, capsys):
    (tmp_path / "compas").symlink_to(data_home / "compas")
    assert main(["datasets", "--no-load", "--data-home", str(tmp_path)]) == 0  # an inventory, not a request
    text = capsys.readouterr().out
    assert "compas" in text and "missing" in text
    assert main(["datasets", "compas", "--no-load", "--data-home", str(tmp_path)]) == 0
    assert main(["datasets", "compas", "german", "--no-load", "--data-home", str(tmp_path)]) == 1
    assert "exits 0 even when some are missing" in " ".join(_help(["datasets", "--help"]).split())


def _help(argv):
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    return buffer.getvalue()


def test_datasets_download_failure_exits_nonzero(tmp_path, monkeypatch, capsys):
    import fastcon.datasets
    from fastcon.datasets import DatasetFileError

    calls = []

    def no_network(name, **kw):  # stands in for the download: tests never touch the network
        calls.append((name, kw))
        raise DatasetFileError(f"dataset {name!r}: the download failed: no network")

    monkeypatch.setattr(fastcon.datasets, "load", no_network)
    assert main(["datasets", "german", "--download", "--data-home", str(tmp_path)]) == 1
    assert calls == [("german", {"data_home": str(tmp_path), "subset": "all", "download": True})]
    assert "could not download german" in capsys.readouterr().err


# ------------------------------------------------------------------------------- argument checks
@pytest.mark.parametrize("argv, message", [
    (["reproduce", "ssg-roc", "--jobs", "0"], "argument --jobs: must be a positive integer, got 0"),
    (["reproduce", "ssg-roc", "--jobs", "-3"], "argument --jobs: must be a positive integer, got -3"),
    (["reproduce", "ssg-roc", "--jobs", "two"], "argument --jobs: must be a positive integer, got 'two'"),
    (["reproduce", "ssg-roc", "--seed", "-1"], "argument --seed: must be a non-negative integer, got -1"),
    (["reproduce", "iqrc-mnpc", "--seed", "1.5"], "argument --seed: must be a non-negative integer, got '1.5'"),
    (["demo", "--seed", "-1"], "argument --seed: must be a non-negative integer, got -1"),
])
def test_numeric_options_are_checked(argv, message, capsys, monkeypatch):
    import fastcon.demo
    from fastcon.experiments import EXPERIMENTS

    def must_not_run(*a, **k):
        raise AssertionError("computed despite a bad argument")

    monkeypatch.setattr(fastcon.demo, "run_demo", must_not_run)
    for experiment in EXPERIMENTS.values():
        monkeypatch.setattr(experiment.load(), "run", must_not_run)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"fastcon {argv[0]}: error: {message}" in err and "Traceback" not in err


@needs_data_of("iqrc-mnpc")
def test_valid_numbers_pass(tmp_path, data_home, monkeypatch):
    from fastcon.experiments import iqrc_mnpc

    seen = {}
    monkeypatch.setattr(iqrc_mnpc, "run", lambda **kw: seen.update(kw) or {})
    assert main(["reproduce", "iqrc-mnpc", "--quick", "--seed", "0", "--jobs", "3", "--out", str(tmp_path / "o"),
                 "--data-home", str(data_home), "--quiet"]) == 0
    assert seen["seed"] == 0 and seen["jobs"] == 3 and seen["download"] is False


def test_run_experiment_checks_seed_and_jobs(tmp_path):
    from fastcon.experiments import run_experiment

    with pytest.raises(ValueError, match="^seed: must be an integer >= 0, got -1"):
        run_experiment("iqrc-mnpc", quick=True, out_dir=tmp_path, seed=-1)
    with pytest.raises(ValueError, match="^jobs: must be an integer >= 1, got 0"):
        run_experiment("iqrc-mnpc", quick=True, out_dir=tmp_path, jobs=0)
    with pytest.raises(ValueError, match="^jobs: must be an integer >= 1, got 1.5"):
        run_experiment("iqrc-mnpc", quick=True, out_dir=tmp_path, jobs=1.5)
    with pytest.raises(TypeError, match="^jobs: expected an integer"):
        run_experiment("iqrc-mnpc", quick=True, out_dir=tmp_path, jobs="2")
    assert not any(tmp_path.iterdir())


# ------------------------------------------------------------------------------- --out before computing
@pytest.mark.parametrize("argv", [
    pytest.param(["reproduce", name, "--quick"], marks=needs_data_of(name))
    for name in ("iqrc-mnpc", "spider-table2", "ssg-roc")] + [["demo"]])
def test_unwritable_out_fails_before_computing(argv, tmp_path, data_home, monkeypatch, capsys):
    import fastcon.demo
    from fastcon.experiments import EXPERIMENTS

    def must_not_run(*a, **k):
        raise AssertionError("computed although --out cannot be written")

    monkeypatch.setattr(fastcon.demo, "run_demo", must_not_run)
    for experiment in EXPERIMENTS.values():
        monkeypatch.setattr(experiment.load(), "run", must_not_run)
    (tmp_path / "afile").write_text("a file, not a folder")  # root can write anywhere, but not under a file
    out = tmp_path / "afile" / "out"
    extra = ["--data-home", str(data_home)] if argv[0] == "reproduce" else []
    assert main(argv + ["--out", str(out)] + extra) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"fastcon {argv[0]}: error: argument --out: cannot write to {out}" in err
    # An existing file given as the folder itself.
    assert main(argv + ["--out", str(tmp_path / "afile")] + extra) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_out_probe_leaves_the_folder_clean(tmp_path):
    from fastcon.experiments._writer import output_folder, writable_folder

    assert writable_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert list((tmp_path / "a" / "b").iterdir()) == []
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="^out_dir: cannot write to"):
        output_folder("x", False, tmp_path / "f" / "out")


# ------------------------------------------------------------------------------- missing data
def test_reproduce_without_data_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    from fastcon.experiments import ssg_roc

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("FASTCON_DATA", str(empty))
    monkeypatch.setattr(ssg_roc, "build", lambda *a, **k: pytest.fail("computed without data"))
    out = tmp_path / "out"
    assert main(["reproduce", "ssg-roc", "--quick", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("fastcon reproduce: error: ")
    for name in ("a9a.gz", "a9a.t.gz", "bank-additional-full.csv.gz", "compas-scores-two-years.csv.gz"):
        assert name in err
    assert err.strip().splitlines()[-1] == ("fastcon reproduce: get the data with `fastcon datasets --download a9a "
                                            "bank compas`, or set FASTCON_DATA (or pass --data-home) to a folder "
                                            "that holds them")
    assert not out.exists()  # nothing was created either


@pytest.mark.datasets("a9a", "compas")
def test_third_missing_dataset_fails_before_the_first_is_computed(tmp_path, data_home, monkeypatch, capsys):
    from fastcon.datasets import DatasetFileError
    from fastcon.experiments import run_experiment, ssg_roc

    partial = tmp_path / "data"
    partial.mkdir()
    for folder in ("a9a", "compas"):  # bank (the second of three) is missing
        (partial / folder).symlink_to(data_home / folder)
    monkeypatch.setattr(ssg_roc, "build", lambda *a, **k: pytest.fail("computed without all the data"))
    assert main(["reproduce", "ssg-roc", "--quick", "--out", str(tmp_path / "o"), "--data-home", str(partial)]) == 1
    err = capsys.readouterr().err
    assert "bank-additional-full.csv.gz" in err and "a9a.gz" not in err and "compas-scores" not in err
    assert "`fastcon datasets --download bank`" in err
    # The Python API checks too, and with download=False never reaches for the network.
    with pytest.raises(DatasetFileError, match="bank"):
        run_experiment("ssg-roc", quick=True, out_dir=tmp_path / "o", data_home=partial, download=False)


def test_data_needed_per_experiment():
    from fastcon.experiments import data_needed

    assert data_needed("ssg-roc") == [("a9a", "all"), ("bank", "all"), ("compas", "all")]
    assert data_needed("ssg-wasserstein", datasets=("german",)) == [("german", "all")]
    assert data_needed("iqrc-mnpc", quick=True) == [("pendigits", "train"), ("segment", "train"), ("usps", "train")]
    assert data_needed("spider-table2") == [("a9a", "train"), ("a9a", "test"), ("compas", "all")]


@needs_data_of("iqrc-mnpc")
def test_iqrc_needs_only_the_training_files(tmp_path, data_home):
    from fastcon.experiments import check_data

    for folder in ("segment", "usps"):
        (tmp_path / folder).symlink_to(data_home / folder)
    (tmp_path / "pendigits").mkdir()  # the training file alone: pendigits.tes is not read
    (tmp_path / "pendigits" / "pendigits.tra").symlink_to(data_home / "pendigits" / "pendigits.tra")
    assert check_data("iqrc-mnpc", data_home=tmp_path) == ["pendigits", "segment", "usps"]


# ------------------------------------------------------------------------------- Ctrl-C
@pytest.mark.parametrize("name", [pytest.param(name, marks=needs_data_of(name))
                                  for name in ("iqrc-mnpc", "spider-table2", "ssg-wasserstein")])
def test_ctrl_c_prints_one_line_and_exits_130(name, tmp_path, data_home, monkeypatch, capsys):
    from fastcon.experiments import EXPERIMENTS

    def interrupted(**kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(EXPERIMENTS[name].load(), "run", interrupted)
    assert main(["reproduce", name, "--quick", "--out", str(tmp_path), "--data-home", str(data_home)]) == 130
    err = capsys.readouterr().err
    assert err == "fastcon reproduce: interrupted: nothing saved\n"


def test_datasets_unknown_name(capsys):
    assert main(["datasets", "mnist"]) == 2
    assert "unknown dataset" in capsys.readouterr().err


def test_resume_help_names_the_resumable_experiments():
    from fastcon.cli import _RESUMABLE
    from fastcon.experiments import EXPERIMENTS, is_resumable

    names = [n for n in EXPERIMENTS if is_resumable(n)]
    assert _RESUMABLE == ", ".join(names[:-1]) + " and " + names[-1]
