"""Group encoding (`fastcon.datasets.encode_groups`), the hard group-fairness metrics against
fairlearn and SciPy, and LIBSVM groups from a feature column (`load_libsvm(group_feature=...)`)."""
import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from scipy.stats import wasserstein_distance

from fastcon.datasets import dump_libsvm, encode_groups, load_libsvm
from reference import group_rates as ref
from fastcon.metrics import (
    demographic_parity_gap, equal_opportunity_gap, equalized_odds_gap, false_positive_rate_gap, group_rates,
    wasserstein_gap,
)



# --------------------------------------------------------------------------- encode_groups
def test_numbering_follows_sorted_labels_as_python_scalars():
    enc = encode_groups(np.array([30, 10, 20, 10]))
    assert enc.codes.dtype == np.int64 and enc.codes.tolist() == [2, 0, 1, 0]
    assert enc.labels == [10, 20, 30] and all(type(g) is int for g in enc.labels)
    assert enc.n_groups == 3 and enc.n_columns == 1 and enc.counts.tolist() == [2, 1, 1]
    enc = encode_groups(["b", "a", "c", "b"])
    assert enc.labels == ["a", "b", "c"] and enc.codes.tolist() == [1, 0, 2, 1] and type(enc.labels[0]) is str
    assert encode_groups(np.array([True, False, True])).labels == [False, True]
    assert encode_groups(pd.Series(["y", "x", "y"])).labels == ["x", "y"]
    assert encode_groups(pd.Series(pd.Categorical(["y", "x", "y"]))).codes.tolist() == [1, 0, 1]


def test_mixed_labels_are_compared_as_given_not_as_strings():
    # NumPy would read [1, "1"] as two equal strings; they are two groups, in order of appearance
    # (an int and a str cannot be sorted).
    enc = encode_groups([2, "1", 1, "1", 2])
    assert enc.labels == [2, "1", 1] and enc.codes.tolist() == [0, 1, 2, 1, 0]
    # Equal values that hash alike are one group, as in a dict and in np.unique.
    assert encode_groups(np.array([1, 1.0, True, 0], dtype=object)).labels == [0, 1]
    # Mutually comparable objects are sorted even in an object array.
    assert encode_groups(np.array([3, 1.5, 2], dtype=object)).labels == [1.5, 2, 3]


def test_same_groups_in_any_order_get_the_same_numbering(rng):
    labels = np.array(["w", "x", "y", "z"])[rng.integers(0, 4, 50)]
    enc = encode_groups(labels)
    perm = rng.permutation(50)
    enc_p = encode_groups(labels[perm])
    assert enc_p.labels == enc.labels
    np.testing.assert_array_equal(enc_p.codes, enc.codes[perm])


def _tuple_oracle(rows):
    labels = sorted(set(rows))
    return [labels.index(r) for r in rows], labels


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(-2, 2), st.sampled_from(["a", "b", "c"]), st.booleans()),
                     min_size=1, max_size=40))
def test_intersectional_groups_are_the_sorted_distinct_row_tuples(rows):
    codes, labels = _tuple_oracle(rows)
    cols = [list(c) for c in zip(*rows)]
    frame = pd.DataFrame({"a": cols[0], "b": cols[1], "c": cols[2]})
    for given_as in (cols, frame, [np.array(c) for c in cols], [pd.Series(c) for c in cols]):
        enc = encode_groups(given_as)
        assert enc.labels == labels and enc.codes.tolist() == codes and enc.n_columns == 3
    assert encode_groups(rows).labels == labels  # a list of tuples: one column of tuple labels
    enc = encode_groups(np.array([c[0] for c in rows])[:, None].repeat(2, axis=1))  # a 2-D array
    assert enc.labels == sorted({(r[0], r[0]) for r in rows})


def test_transform_maps_new_data_through_the_fitted_numbering():
    train = pd.DataFrame({"sex": ["m", "f", "m", "f"], "race": ["x", "x", "y", "y"]})
    enc = encode_groups(train)
    assert enc.labels == [("f", "x"), ("f", "y"), ("m", "x"), ("m", "y")]
    test = pd.DataFrame({"sex": ["m", "m"], "race": ["y", "y"]})  # only one of the groups
    assert enc.transform(test).tolist() == [3, 3]
    assert enc.transform(enc.labels).tolist() == [0, 1, 2, 3]
    assert enc.transform(train.iloc[:0]).tolist() == []
    assert enc.names == ["f, x", "f, y", "m, x", "m, y"]
    with pytest.raises(ValueError, match=r"^sensitive_features: group \('z', 'x'\) was not seen at fit"):
        enc.transform(pd.DataFrame({"sex": ["m", "z"], "race": ["x", "x"]}))
    with pytest.raises(ValueError, match=r"^sensitive_features: has 1 column\(s\) but the encoding was fitted on 2"):
        enc.transform(["m", "f"])
    one = encode_groups([0, 1, 1])
    with pytest.raises(ValueError, match="^sensitive_features: group 2 was not seen at fit"):
        one.transform([1, 2])


@pytest.mark.parametrize("bad, where", [
    ([1, None, 2], "missing value \\(None\\) at sample 1"),
    (np.array([0.0, 1.0, np.nan]), "missing value \\(NaN\\) at sample 2"),
    (pd.Series(["a", None, "b"]), "missing value .* at sample 1"),
    (pd.Series([1, None], dtype="Int64"), "missing value .* at sample 1"),
    (np.array([1, pd.NA], dtype=object), "missing value \\(<NA>\\) at sample 1"),
    (np.array(["2020-01-01", "NaT"], dtype="datetime64[D]"), "missing value \\(NaT\\) at sample 1"),
    (np.array([0.0, np.inf]), "non-finite value inf at sample 1"),
])
def test_missing_group_labels_raise_naming_the_sample(bad, where):
    with pytest.raises(ValueError, match="^sensitive_features: " + where):
        encode_groups(bad)


def test_missing_value_in_one_of_several_columns_names_the_column():
    with pytest.raises(ValueError, match=r"^sensitive_features\['race'\]: missing value"):
        encode_groups(pd.DataFrame({"sex": ["m", "f"], "race": ["x", None]}))
    with pytest.raises(ValueError, match=r"^sensitive_features\[:, 1\]: missing value \(NaN\) at sample 0"):
        encode_groups(np.array([[0.0, np.nan], [1.0, 2.0]]))


@pytest.mark.parametrize("bad, message", [
    ([], "no samples"),
    (5, "expected one label per sample"),
    ("ab", "expected one label per sample"),
    ([{1: 2}, {3: 4}], "unhashable label \\{1: 2\\} \\(type dict\\) at sample 0"),
    ([[1, 2], [3]], "\\[1\\]: has 1 values but sensitive_features\\[0\\] has 2"),
    (np.zeros((2, 2, 2)), "expected a 1-D or 2-D array"),
    (np.zeros((3, 0)), "has no columns"),
])
def test_malformed_sensitive_features_raise(bad, message):
    with pytest.raises(ValueError, match="^sensitive_features" + ("" if message.startswith("\\[") else ": ") + message):
        encode_groups(bad)


# --------------------------------------------------------------------------- hard metrics
def _draw(seed, n_groups, label_kind, extra):
    """Data where every group has both classes (so every TPR and FPR is defined)."""
    rng = np.random.default_rng(seed)
    names = {"int": [7, -3, 0, 12, 5], "str": ["women", "men", "other", "nb", "x"],
             "bool": [False, True]}[label_kind][:n_groups]
    g = np.concatenate([np.repeat(np.arange(n_groups), 2), rng.integers(0, n_groups, extra)])
    y_true = np.concatenate([np.tile([1, 0], n_groups), rng.integers(0, 2, extra)])
    y_pred = rng.integers(0, 2, g.size)
    perm = rng.permutation(g.size)
    groups = np.array(names, dtype=object if label_kind == "str" else None)[g[perm]]
    return y_pred[perm], y_true[perm], groups


data = st.builds(
    lambda seed, k, kind, extra: _draw(seed, k if kind != "bool" else 2, kind, extra),
    st.integers(0, 2**31), st.integers(2, 5), st.sampled_from(["int", "str", "bool"]), st.integers(0, 80))


@settings(max_examples=100, deadline=None)
@given(case=data, pred_enc=st.sampled_from(["01", "bool", "pm1"]), true_enc=st.sampled_from(["01", "bool", "pm1"]))
def test_gaps_match_fairlearn(case, pred_enc, true_enc):
    # fairlearn is a peer (the `peers` extra), not a test dependency: test_gaps_match_numpy runs always
    fairlearn_metrics = pytest.importorskip("fairlearn.metrics")
    y_pred, y_true, groups = case
    enc = {"01": lambda v: v, "bool": lambda v: v.astype(bool), "pm1": lambda v: 2 * v - 1.0}
    p, t = enc[pred_enc](y_pred), enc[true_enc](y_true)
    fl = dict(y_true=y_true, y_pred=y_pred, sensitive_features=groups)  # fairlearn: one 0/1 encoding
    assert equal_opportunity_gap(t, p, sensitive_features=groups) == pytest.approx(
        fairlearn_metrics.true_positive_rate_difference(**fl), abs=1e-12)
    assert false_positive_rate_gap(t, p, sensitive_features=groups) == pytest.approx(
        fairlearn_metrics.false_positive_rate_difference(**fl), abs=1e-12)
    assert equalized_odds_gap(t, p, sensitive_features=groups) == pytest.approx(
        fairlearn_metrics.equalized_odds_difference(**fl), abs=1e-12)
    rates = group_rates(t, p, sensitive_features=groups)
    assert rates.gap() == pytest.approx(fairlearn_metrics.demographic_parity_difference(**fl), abs=1e-12)
    assert group_rates(None, p, sensitive_features=groups).gap("selection_rate") == rates.gap("selection_rate")
    assert equalized_odds_gap(t, p, sensitive_features=encode_groups(groups)) == equalized_odds_gap(
        t, p, sensitive_features=groups)
    # the signatures are fairlearn's: the same keywords call both libraries
    for ours, theirs in ((demographic_parity_gap, fairlearn_metrics.demographic_parity_difference),
                         (equal_opportunity_gap, fairlearn_metrics.true_positive_rate_difference),
                         (false_positive_rate_gap, fairlearn_metrics.false_positive_rate_difference),
                         (equalized_odds_gap, fairlearn_metrics.equalized_odds_difference)):
        assert ours(**fl) == pytest.approx(theirs(**fl), abs=1e-12)
    frame = fairlearn_metrics.MetricFrame(
        metrics={"sr": fairlearn_metrics.selection_rate, "tpr": fairlearn_metrics.true_positive_rate,
                 "fpr": fairlearn_metrics.false_positive_rate, "n": fairlearn_metrics.count}, **fl).by_group
    for k, label in enumerate(rates.labels):
        row = frame.loc[label]
        assert rates.counts[k] == row["n"]
        np.testing.assert_allclose([rates.selection_rate[k], rates.true_positive_rate[k],
                                    rates.false_positive_rate[k]], [row["sr"], row["tpr"], row["fpr"]], atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(case=data, pred_enc=st.sampled_from(["01", "bool", "pm1"]))
def test_gaps_match_numpy(case, pred_enc):
    y_pred, y_true, groups = case
    p = {"01": y_pred, "bool": y_pred.astype(bool), "pm1": 2 * y_pred - 1.0}[pred_enc]
    table = ref.rates(y_pred, y_true, groups)               # {label: (n, selection, TPR, FPR)}
    rates = group_rates(y_true, p, sensitive_features=groups)
    for k, label in enumerate(rates.labels):
        n, sr, tpr, fpr = table[label]
        assert rates.counts[k] == n
        np.testing.assert_allclose([rates.selection_rate[k], rates.true_positive_rate[k],
                                    rates.false_positive_rate[k]], [sr, tpr, fpr], rtol=1e-14)
    for constraint, gap in (("demographic_parity", rates.gap()),
                            ("equal_opportunity", equal_opportunity_gap(y_true, p, sensitive_features=groups)),
                            ("false_positive_parity", false_positive_rate_gap(y_true, p, sensitive_features=groups)),
                            ("equalized_odds", equalized_odds_gap(y_true, p, sensitive_features=groups))):
        assert gap == pytest.approx(ref.hard_gap(constraint, y_pred, y_true, groups), abs=1e-14)


@settings(max_examples=40, deadline=None)
@given(case=data, seed=st.integers(0, 2**31))
def test_intersectional_gaps_match_fairlearn(case, seed):
    fairlearn_metrics = pytest.importorskip("fairlearn.metrics")
    y_pred, y_true, groups = case
    second = np.random.default_rng(seed).choice(["a", "b"], size=y_pred.size)
    frame = pd.DataFrame({"g": groups, "h": second})
    enc = encode_groups(frame)
    rates = group_rates(y_true, y_pred, sensitive_features=frame)
    assert rates.labels == enc.labels
    assert rates.gap() == pytest.approx(fairlearn_metrics.demographic_parity_difference(
        y_true, y_pred, sensitive_features=frame), abs=1e-12)
    if np.all(rates.positives > 0) and np.all(rates.negatives > 0):
        assert equalized_odds_gap(y_true, y_pred, sensitive_features=frame) == pytest.approx(
            fairlearn_metrics.equalized_odds_difference(y_true, y_pred, sensitive_features=frame), abs=1e-12)


def test_gap_is_the_worst_pair_over_three_groups():
    #            group a: 1/2 selected, b: 3/4, c: 0/2
    y_pred = np.array([1, 0, 1, 1, 1, 0, 0, 0])
    groups = np.array(["a", "a", "b", "b", "b", "b", "c", "c"])
    y_true = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    rates = group_rates(y_true, y_pred, sensitive_features=groups)
    np.testing.assert_array_equal(rates.selection_rate, [0.5, 0.75, 0.0])
    np.testing.assert_array_equal(rates.true_positive_rate, [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(rates.false_positive_rate, [0.0, 0.5, 0.0])
    assert rates.gap() == 0.75 and equal_opportunity_gap(y_true, y_pred, sensitive_features=groups) == 1.0
    assert false_positive_rate_gap(y_true, y_pred, sensitive_features=groups) == 0.5
    assert equalized_odds_gap(y_true, y_pred, sensitive_features=groups) == 1.0


def test_undefined_rates_and_bad_encodings_raise():
    groups = ["a", "a", "b", "b"]
    rates = group_rates([1, 1, 1, 0], [1, 0, 1, 0], sensitive_features=groups)  # group a has no negatives
    assert np.isnan(rates.false_positive_rate[0]) and rates.true_positive_rate.tolist() == [0.5, 1.0]
    with pytest.raises(ValueError, match="^y_true: group 'a' has no negative samples"):
        false_positive_rate_gap([1, 1, 1, 0], [1, 0, 1, 0], sensitive_features=groups)
    with pytest.raises(ValueError, match="^y_true: group 'b' has no positive samples"):
        equal_opportunity_gap([1, 0, 0, 0], [1, 0, 1, 0], sensitive_features=groups)
    with pytest.raises(ValueError, match="^y_true: required for the true positive rate"):
        group_rates(None, [1, 0, 1, 0], sensitive_features=groups).gap("true_positive_rate")
    with pytest.raises(ValueError, match="^rate: expected one of"):
        rates.gap("accuracy")
    with pytest.raises(ValueError, match="^sensitive_features: a gap compares at least two groups, found 1"):
        group_rates(None, [1, 0], sensitive_features=["a", "a"]).gap()
    with pytest.raises(ValueError, match=r"^y_pred: expected 0/1, bool or -1/\+1 values \(one encoding\), found \[2\]"):
        group_rates(None, [0, 2], sensitive_features=groups[:2])
    with pytest.raises(ValueError, match=r"^y_true: expected 0/1, bool or -1/\+1 values \(one encoding\), "
                                         r"found \[-1, 0, 1\]"):
        group_rates([-1, 0, 1], [0, 1, 1], sensitive_features=["a", "b", "b"])
    with pytest.raises(ValueError, match="^y_pred: expected 0/1, bool or -1/\\+1 values, got dtype <U1"):
        group_rates(None, ["1", "0"], sensitive_features=groups[:2])
    with pytest.raises(ValueError, match="^y_true: has 3 values but y_pred has 4"):
        group_rates([1, 0, 1], [1, 0, 1, 0], sensitive_features=groups)
    with pytest.raises(ValueError, match="^sensitive_features: has 3 labels but y_pred has 4"):
        group_rates(None, [1, 0, 1, 0], sensitive_features=groups[:3])
    with pytest.raises(ValueError, match="^sensitive_features: missing value"):
        group_rates(None, [1, 0], sensitive_features=["a", None])


# --------------------------------------------------------------------------- Wasserstein
@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(2, 4), n=st.integers(2, 120), ties=st.booleans(),
       scale=st.sampled_from([1e-3, 1.0, 1e4]))
def test_wasserstein_gap_matches_scipy(seed, k, n, ties, scale):
    rng = np.random.default_rng(seed)
    g = np.concatenate([np.arange(k), rng.integers(0, k, n)])
    s = (rng.standard_normal(g.size) + 0.3 * g) * scale
    if ties:
        s = np.round(s / scale * 2) * scale  # many equal scores across and within groups
    labels = np.array(["p", "q", "r", "s"])[g]
    expected = max(wasserstein_distance(s[g == a], s[g == b]) for a, b in itertools.combinations(range(k), 2))
    assert wasserstein_gap(s, sensitive_features=labels) == pytest.approx(expected, rel=1e-10, abs=1e-14 * scale)
    assert wasserstein_gap(s, sensitive_features=encode_groups(labels)) == wasserstein_gap(
        s, sensitive_features=labels)


def test_wasserstein_gap_of_a_shift_is_the_shift(rng):
    a = rng.standard_normal(300)
    s = np.concatenate([a, a + 0.75, a - 0.25])
    groups = np.repeat([0, 1, 2], 300)
    # the worst pair: groups 1 and 2
    assert wasserstein_gap(s, sensitive_features=groups) == pytest.approx(1.0, rel=1e-12)
    assert wasserstein_gap(s[:600], sensitive_features=groups[:600]) == pytest.approx(0.75, rel=1e-12)
    assert wasserstein_gap(np.ones(4), sensitive_features=[0, 0, 1, 1]) == 0.0


def test_wasserstein_gap_errors():
    with pytest.raises(ValueError, match="^sensitive_features: a gap compares at least two groups, found 1"):
        wasserstein_gap([0.0, 1.0], sensitive_features=[3, 3])
    with pytest.raises(ValueError, match="^y_score: contains NaN or inf"):
        wasserstein_gap([0.0, np.nan], sensitive_features=[0, 1])
    with pytest.raises(ValueError, match="^sensitive_features: has 3 labels but y_score has 2"):
        wasserstein_gap([0.0, 1.0], sensitive_features=[0, 1, 1])


# --------------------------------------------------------------------------- load_libsvm(group_feature=...)
def test_load_libsvm_group_feature(tmp_path):
    path = tmp_path / "g.svm"
    path.write_bytes(b"1 1:0.5 3:2\n-1 2:1\n1 1:1 2:1 3:2\n-1 3:7\n1 1:2\n")
    ds = load_libsvm(path, group_feature=2)
    # Column 2 (file index 3) holds 2, 0 (absent), 2, 7, 0: groups numbered by value.
    assert ds.groups.tolist() == [1, 0, 1, 2, 0] and ds.group_names == ["0", "2", "7"]
    assert ds.n_features == 3 and ds.X[:, 2].toarray().ravel().tolist() == [2, 0, 2, 7, 0]  # kept
    dropped = load_libsvm(path, group_feature=2, drop_group_feature=True)
    assert dropped.groups.tolist() == ds.groups.tolist() and dropped.n_features == 2
    np.testing.assert_array_equal(dropped.X.toarray(), ds.X.toarray()[:, :2])
    first = load_libsvm(path, group_feature=0, drop_group_feature=True)
    assert first.group_names == ["0", "0.5", "1", "2"] and first.groups.tolist() == [1, 0, 2, 0, 3]
    np.testing.assert_array_equal(first.X.toarray(), ds.X.toarray()[:, 1:])
    assert first.X.has_canonical_format and first.X.indices.max() < 2
    multi = tmp_path / "m.svm"
    multi.write_bytes(b"0 1:1\n2 1:0\n1 1:1\n")
    assert load_libsvm(multi, group_feature=0).groups.tolist() == [1, 0, 1]


def test_load_libsvm_group_feature_on_a_random_sparse_file(tmp_path, rng):
    X = sp.random(60, 8, density=0.3, random_state=1, format="csr")
    X.data = np.round(X.data * 3)  # a few distinct values, explicit zeros included
    y = rng.choice([-1.0, 1.0], 60)
    dump_libsvm(X, tmp_path / "r.svm", y)
    for j in range(8):
        ds = load_libsvm(tmp_path / "r.svm", n_features=8, group_feature=j, drop_group_feature=True)
        col = X[:, j].toarray().ravel()
        enc = encode_groups(col)
        np.testing.assert_array_equal(ds.groups, enc.codes)
        np.testing.assert_array_equal(ds.X.toarray(), np.delete(X.toarray(), j, axis=1))


def test_load_libsvm_group_feature_errors():
    data = b"1 1:1\n-1 2:1\n"
    with pytest.raises(ValueError, match=r"^group_feature: column 2 out of range \[0, 2\)"):
        load_libsvm(data, group_feature=2)
    with pytest.raises(TypeError, match="^group_feature: expected a column index"):
        load_libsvm(data, group_feature=1.0)
    with pytest.raises(ValueError, match="^drop_group_feature: True needs a group_feature"):
        load_libsvm(data, drop_group_feature=True)


def test_group_rates_sample_weight_is_a_repeated_row():
    rng = np.random.default_rng(7)
    n = 60
    y_pred, y_true = rng.integers(0, 2, n), rng.integers(0, 2, n)
    groups = rng.choice(["a", "b", "c"], n)
    w = rng.integers(0, 4, n)
    weighted = group_rates(y_true, y_pred, sensitive_features=groups, sample_weight=w)
    repeated = group_rates(y_true.repeat(w), y_pred.repeat(w), sensitive_features=groups.repeat(w))
    for rate in ("selection_rate", "true_positive_rate", "false_positive_rate"):
        np.testing.assert_allclose(getattr(weighted, rate), getattr(repeated, rate), rtol=1e-14)
    np.testing.assert_array_equal(weighted.counts, np.bincount(np.unique(groups, return_inverse=True)[1]))
    for gap in (equal_opportunity_gap, false_positive_rate_gap, equalized_odds_gap, demographic_parity_gap):
        assert gap(y_true, y_pred, sensitive_features=groups, sample_weight=w) == pytest.approx(
            gap(y_true.repeat(w), y_pred.repeat(w), sensitive_features=groups.repeat(w)), abs=1e-14)
    with pytest.raises(ValueError, match="^sample_weight: must be finite and non-negative"):
        group_rates(y_true, y_pred, sensitive_features=groups, sample_weight=-w)
