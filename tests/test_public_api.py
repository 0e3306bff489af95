"""The public names other code depends on (issues 2-5) import from where they are promised."""
import importlib

import pytest

PUBLIC = {
    "fastcon": ["Dataset", "SolveResult", "__version__", "switching_subgradient", "ConstrainedProblem", "read_fcsr",
                "load", "load_model"],
    "fastcon.datasets": ["Dataset", "load_libsvm", "dump_libsvm", "load", "list_datasets",
                         "make_fair_classification", "make_multiclass", "read_fcsr", "write_fcsr",
                         "convert_libsvm"],
    "fastcon.problems": ["ConstrainedProblem", "hinge_risk", "erm_optimum", "roc_fairness", "wasserstein_fairness",
                         "custom_term", "less_equal", "Domain", "Ball", "ProductOfBalls", "ColumnBalls", "Box", "Whole",
                         "smoothed_demographic_parity", "scad_penalty", "multiclass_neyman_pearson", "neyman_pearson",
                         "partial_dp_constraints", "weak_partial_dp_constraints", "cross_term_features",
                         "PartialFairnessProblem", "pairwise_fairness_constraints", "qcqp_projection",
                         "LinearScoreModel", "NeymanPearsonScores", "GroupLossGap"],
    "fastcon.solvers": ["switching_subgradient", "conex", "proximal_point", "switching_theory_parameters",
                        "spider_theory_parameters", "check_certificate",
                        "spider", "iqrc", "exact_penalty_trust_region", "check_feasibility", "FeasibilityResult",
                        "idca", "switching_polyak", "near_stationarity", "penalty_subgradient", "projected_gradient",
                        "abpp", "cbpr"],
    "fastcon.boosting": ["NeymanPearsonGBMClassifier", "FairGBMClassifier", "XGBoostScoreModel", "LightGBMScoreModel",
                         "xgboost_objective", "lightgbm_objective"],
    "fastcon.metrics": ["roc_gap", "smoothed_roc_gap", "demographic_parity_gap", "accuracy",
                        "partial_dp", "weak_partial_dp", "choose_interval", "ks_demographic_parity"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names(module):
    mod = importlib.import_module(module)
    for name in PUBLIC[module]:
        assert hasattr(mod, name), f"{module}.{name} is missing"
        if name != "__version__":
            assert name in mod.__all__, f"{module}.__all__ lacks {name}"


def test_one_model_loader():
    """`fastcon.load` loads datasets; `fastcon.load_model` every saved model; there is no per-kind model `load`."""
    pytest.importorskip("sklearn")
    import fastcon

    assert fastcon.load is fastcon.datasets.load
    assert fastcon.load_model.__module__ == "fastcon.boosting._persist"
    for module in ("fastcon.estimators", "fastcon.boosting"):
        mod = importlib.import_module(module)
        assert not hasattr(mod, "load") and "load" not in mod.__all__, module


def test_kernels_import_nothing_from_fastcon():
    """Layering (docs/design.md): `_kernels` sits at the bottom and knows no fastcon module."""
    import pathlib
    import re

    root = pathlib.Path(importlib.import_module("fastcon").__file__).parent / "_kernels"
    for path in root.glob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*from \.\.|^\s*import fastcon|^\s*from fastcon", text, flags=re.M), path.name
