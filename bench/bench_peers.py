r"""Fair classification against the peers: fastcon's ``FairClassifier``, fairlearn's
``ExponentiatedGradient`` and OxonFair's group thresholds, one benchmark per method (harness and
method definitions: ``bench/_peers.py``; method, semantics of each bound and measured table:
docs/peers.md).

Needs the ``peers`` extra (fairlearn, oxonfair, pandas; xgboost from ``boost``): without it the
module is skipped, so ``pytest bench/ --benchmark-only`` in CI, which does not install the extra,
runs none of these fits. Only COMPAS runs by default (a few seconds in all); the a9a and Adult rows
take minutes (fairlearn refits a logistic regression dozens of times on dense data) and run when
asked for: ``FASTCON_PEERS_DATASETS=a9a,adult,compas pytest bench/bench_peers.py --benchmark-only``.

Each benchmark times one complete fit (three rounds, the minimum is the table's figure) and stores
the test accuracy and gaps in ``extra_info``. Checks: every classifier beats the constant one on
test accuracy (a swapped label or group would not), OxonFair meets its bound on the training data
(it searches thresholds on exactly those rows), and so does ``FairClassifier`` (its ``bound`` bounds
the hard training gap) when the installed fastcon has it.
"""
import os

import numpy as np
import pytest

pytest.importorskip("fairlearn")
pytest.importorskip("oxonfair")

import _peers  # noqa: E402  (after the skips: it imports nothing optional, but the table needs the peers)

TOLERANCE = 0.02
DATASETS = [d.strip() for d in os.environ.get("FASTCON_PEERS_DATASETS", "compas").split(",") if d.strip()]
CASES = [(dataset, constraint, i)
         for dataset in DATASETS
         for constraint in (_peers.CONSTRAINTS if dataset == "compas" else ("demographic_parity",))
         for i in range(len(_peers.methods(constraint)))]


@pytest.fixture(scope="module")
def splits(data_home):
    cache = {}

    def get(dataset):
        if dataset not in cache:
            cache[dataset] = _peers.load_split(dataset, data_home=data_home)
        return cache[dataset]
    return get


@pytest.mark.parametrize("dataset, constraint, index", CASES,
                         ids=[f"{d}-{c}-{_peers.methods(c)[i].name}" for d, c, i in CASES])
def test_peer(benchmark, splits, dataset, constraint, index):
    method = _peers.methods(constraint)[index]
    missing = method.missing()
    if missing:
        pytest.skip(f"{method.name}: {_peers.NOT_AVAILABLE} ({', '.join(missing)})")
    split = splits(dataset)
    data = _peers.prepare(method, split)
    benchmark.group = f"peers, {dataset}, {constraint} <= {TOLERANCE}: {method.name}"
    predictors = benchmark.pedantic(method.fit, args=(data, TOLERANCE), rounds=3, iterations=1)
    fit_s = benchmark.stats.stats.min if benchmark.stats is not None else np.nan
    rows = _peers.score(method, data, predictors, fit_s)
    role = "fastcon" if method.name.startswith("fastcon") else "reference"
    benchmark.extra_info["role"] = role
    for row in rows:
        tag = row["method"][len(method.name):].strip(" []") or "main"
        for key in ("test_accuracy", "test_dp_gap", "test_eo_gap", "train_gap"):
            benchmark.extra_info[f"{key}[{tag}]" if len(rows) > 1 else key] = row[key]

    majority = max(split.y_test.mean(), 1 - split.y_test.mean())
    for row in rows:
        assert row["test_accuracy"] > majority, (row["method"], row["test_accuracy"], majority)
        if method.name.startswith(("OxonFair", "fastcon")):
            assert row["train_gap"] <= TOLERANCE + 1e-12, (row["method"], row["train_gap"])


def test_gaps_by_hand():
    # group 0: predictions 1,1,0,0 (rate 1/2); group 1: 1,0,0 (rate 1/3) -> DP gap 1/6
    pred = np.array([1, 1, 0, 0, 1, 0, 0])
    groups = np.array([0, 0, 0, 0, 1, 1, 1])
    y = np.array([1, 0, 1, 0, 1, 1, 0])
    assert _peers.dp_gap(pred, groups) == pytest.approx(1 / 6)
    # TPR: group 0 1/2, group 1 1/2 -> 0; FPR: group 0 1/2, group 1 0 -> 1/2
    assert _peers.eo_gap(pred, y, groups) == pytest.approx(1 / 2)
    with pytest.raises(ValueError, match="^pred: expected 0/1"):
        _peers.dp_gap(pred * 2, groups)
    with pytest.raises(ValueError, match="^groups: label 0 occurs in fewer than two groups"):
        _peers.eo_gap(pred, np.array([1, 1, 1, 1, 1, 1, 0]), groups)
