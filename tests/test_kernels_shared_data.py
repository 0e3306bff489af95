"""Kernels against their NumPy references on every shared dataset (1e-12 relative)."""
import numpy as np
import pytest

from fastcon.datasets import dataset_info, list_datasets, load
from fastcon.problems import margin_risk
from fastcon.problems._design import DesignMatrix
from reference import kernels as ref


@pytest.fixture(scope="module", params=list_datasets())
def dataset(request, data_home):
    return load(request.param, data_home=data_home, subset="train")


def test_matvec_and_rmatvec(dataset):
    rng = np.random.default_rng(3)
    design = DesignMatrix(dataset)
    w = rng.standard_normal(dataset.n_features)
    rows = rng.integers(0, dataset.n_samples, size=min(500, dataset.n_samples))
    for subset in (None, rows):
        m = dataset.n_samples if subset is None else subset.size
        scores = design.matvec(w, np.empty(m), rows=subset)
        np.testing.assert_allclose(scores, ref.matvec(dataset.X, subset, w), rtol=1e-12, atol=1e-12 * np.abs(w).sum())
        c = rng.standard_normal(m)
        out = design.rmatvec(c, np.zeros(dataset.n_features), rows=subset)
        expected = ref.rmatvec(dataset.X, subset, c)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


BINARY = [name for name in list_datasets() if dataset_info(name)["task"] == "binary"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("loss", ["hinge", "logistic", "sigmoid", "squared_hinge"])
def test_fused_losses(name, loss, data_home):
    dataset = load(name, data_home=data_home, subset="train")
    rng = np.random.default_rng(4)
    w = rng.standard_normal(dataset.n_features) * 0.5
    term = margin_risk(dataset, loss)
    grad = np.empty(dataset.n_features)
    value = term.value_and_subgradient(w, grad)
    v_ref, g_ref = ref.loss_value_grad(loss, dataset.X, dataset.y, w)
    assert value == pytest.approx(v_ref, rel=1e-12)
    np.testing.assert_allclose(grad, g_ref, rtol=1e-12, atol=1e-12 * np.abs(g_ref).max())
