"""Conditional inference trees: stage B thresholds, tree growth, importances (docs/spec.md section 4).

Oracles: the counts of docs/spec.md section 4 for threshold methods; permutation-test theory for
pure noise (Bonferroni: at most alpha of the trees split); CART (engine.cart) for the
cardinality-bias case; exact separability for stage B p = 1/(B+1).  Tests of the paper's
permutation procedure fit with ``PAPER_SETTINGS`` (the defaults are ctree's, checked against
R partykit in test_cit_partykit.py); tests that hold for both run both.
"""

import numpy as np
import pytest

from engine.cart import CARTClassifier
from engine.cit.tree import (
    PAPER_SETTINGS,
    ConditionalInferenceTreeClassifier,
    ConditionalInferenceTreeRegressor,
    threshold_candidates,
)

PAPER_CLF = PAPER_SETTINGS["classification"]
PAPER_REG = PAPER_SETTINGS["regression"]
#: Both procedures: the defaults (ctree) and the paper's.
BOTH = pytest.mark.parametrize("preset", [{}, PAPER_CLF], ids=["ctree", "paper"])


def test_threshold_methods_counts():
    x = np.arange(100.0)
    assert threshold_candidates(x, "exact").size == 99
    for k in (3, 5, 10, 20):
        h = threshold_candidates(x, "histogram", k)
        assert h.size <= k + 1 and h[0] == 0.5 and h[-1] == 98.5
        assert threshold_candidates(x, "percentile", k).size <= k
        r = threshold_candidates(x, "random", k, rng=0)
        assert r.size == k and np.unique(r).size == k and np.all(np.isin(r, x[:-1] + 0.5))
    # <= 4 unique values: all midpoints whatever the method
    assert threshold_candidates(np.array([0.0, 1, 2, 3, 3]), "random", 1).size == 3
    # min_samples_leaf drops thresholds with a small side
    t = threshold_candidates(x, "exact", min_samples_leaf=10)
    assert t.size == 81 and t[0] == 9.5 and t[-1] == 89.5
    with pytest.raises(ValueError, match="threshold_method"):
        threshold_candidates(x, "bogus")


def test_k_is_capped_at_the_midpoints_as_in_citrees():
    """citrees' histogram / percentile use min(k, |midpoints|) bins, with k computed on the
    number of unique values (the paper's max_thresholds=256 on a feature with 20 unique
    values: 19 bins, 20 edges, not 256 bins with 257 edges that split the same 19 gaps
    many times over and inflate stage B's Bonferroni divisor)."""
    x = np.repeat(np.arange(20.0), 3)  # 20 unique values, 19 midpoints 0.5 .. 18.5
    mid = np.arange(19.0) + 0.5
    h = threshold_candidates(x, "histogram", 256)
    np.testing.assert_allclose(h, np.linspace(0.5, 18.5, 20))
    np.testing.assert_allclose(h, np.unique(np.histogram(mid, bins=19)[1]))
    p = threshold_candidates(x, "percentile", 256)
    np.testing.assert_allclose(p, mid)  # 19 percentiles of 19 points: the points
    # 'sqrt' and fractions count unique values: 10 unique -> ceil(sqrt(10)) = 4 bins
    x10 = np.arange(10.0)
    np.testing.assert_allclose(
        threshold_candidates(x10, "histogram", "sqrt"), np.linspace(0.5, 8.5, 5)
    )
    # ceil(0.55 * 10) = 6 (on the 9 midpoints it would be ceil(4.95) = 5)
    assert threshold_candidates(x10, "random", 0.55, rng=0).size == 6
    # in a tree: stage B tests |u| thresholds at alpha / |u|
    rng = np.random.default_rng(1)
    xs = rng.integers(0, 20, size=300).astype(float)
    y = (xs > 9).astype(int)
    m = ConditionalInferenceTreeClassifier(
        threshold_method="histogram", max_thresholds=256, max_depth=1, random_state=0, **PAPER_CLF
    ).fit(xs[:, None], y)
    rec = m.node_records_[0]
    assert len(rec["candidate_thresholds"]) == 20
    assert rec["alpha_splitter"] == pytest.approx(0.05 / 20)


@pytest.mark.slow
def test_pure_noise_rarely_splits():
    rng = np.random.default_rng(0)
    n_split = 0
    for rep in range(20):
        X = rng.normal(size=(300, 20))
        y = rng.integers(0, 2, size=300)
        m = ConditionalInferenceTreeClassifier(random_state=rep, **PAPER_CLF).fit(X, y)
        n_split += m.tree_.node_count > 1
        assert np.all(m.feature_importances_ == 0) or m.feature_importances_.sum() == 1
    assert n_split <= 0.05 * 20


def test_pure_noise_adjusted_p_values_are_uniform():
    """Under the null (20 noise features, random classes) ctree's adjusted root p-value
    1 - (1 - p)^20 is uniform: about 5 % of the trees split at alpha = 0.05 and half have
    an adjusted p below 0.5 (within 3 binomial standard deviations over 200 trees)."""
    rng = np.random.default_rng(0)
    reps = 200
    p_min = []
    for _ in range(reps):
        X = rng.normal(size=(300, 20))
        y = rng.integers(0, 2, size=300)
        m = ConditionalInferenceTreeClassifier(max_depth=1).fit(X, y)
        p_min.append(min(m.node_records_[0]["p_values_adjusted"]))
        assert (m.tree_.node_count > 1) == (p_min[-1] < 0.05)
    p_min = np.array(p_min)
    for level in (0.05, 0.5):
        sd = np.sqrt(level * (1 - level) / reps)
        assert abs((p_min < level).mean() - level) <= 3 * sd


@BOTH
def test_cardinality_bias_cit_vs_cart(preset):
    rng = np.random.default_rng(0)
    n = 500
    x0 = rng.integers(0, 2, size=n)
    y = (rng.random(n) < np.where(x0 == 1, 0.7, 0.3)).astype(int)
    X = np.column_stack([x0, rng.normal(size=(n, 10))])
    cit = ConditionalInferenceTreeClassifier(random_state=0, **preset).fit(X, y)
    assert np.argmax(cit.feature_importances_) == 0
    assert cit.feature_importances_[0] == pytest.approx(1.0)
    cart = CARTClassifier(random_state=0).fit(X, y)
    assert cart.feature_importances_[0] < 0.5


def test_perfect_separation_stage_b_p_value_and_records():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 3))
    y = (X[:, 1] > 0.2).astype(int)
    m = ConditionalInferenceTreeClassifier(
        n_resamples_selector=99,
        n_resamples_splitter=99,
        early_stopping_selector=None,
        early_stopping_splitter=None,
        adjust_alpha_splitter=False,
        keep_null=True,
        random_state=0,
        **PAPER_CLF,
    ).fit(X, y)
    assert m.tree_.feature[0] == 1
    assert m.p_value_splitter_[0] == pytest.approx(1 / 100)
    # an integer B is multiplied by the number of tests under Bonferroni (as citrees)
    assert m.p_value_selector_[0] == pytest.approx(1 / (3 * 99 + 1))
    assert m.tree_.p_value[0] == m.p_value_selector_[0]
    assert m.n_permutations_selector_[0] == 297 and m.n_permutations_splitter_[0] == 99
    assert m.score(X, y) == 1.0
    rec = m.node_records_[0]
    assert 1 in rec["features"] and rec["nulls"][1].shape == (297,)
    assert rec["threshold_null"].shape == (99,)
    assert np.isnan(m.tree_.p_value[m.tree_.is_leaf]).all()


@BOTH
def test_min_samples_leaf_and_depth_respected(preset):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=300) > 0).astype(int)
    kw = {**preset, "min_samples_leaf": 25}
    m = ConditionalInferenceTreeClassifier(random_state=0, **kw).fit(X, y)
    t = m.tree_
    assert t.node_count > 1
    assert t.n_node_samples[t.is_leaf].min() >= 25
    m2 = ConditionalInferenceTreeClassifier(max_depth=1, random_state=0, **preset).fit(X, y)
    assert m2.get_depth() <= 1


def test_min_child_fraction_is_ctrees_minprob():
    """A child keeps at least max(min_samples_leaf, ceil(m * min_child_fraction)) rows of
    its parent's m (ctree's minbucket / minprob): with 0.2 no leaf is below a fifth of its
    parent, and the split point moves when the unconstrained best one is too lopsided."""
    rng = np.random.default_rng(12)
    x = rng.normal(size=400)
    y = (x > 1.6).astype(int)  # about 5 % positives: the best cut is lopsided
    X = x[:, None]
    free = ConditionalInferenceTreeClassifier(min_child_fraction=0.0, max_depth=1).fit(X, y)
    held = ConditionalInferenceTreeClassifier(min_child_fraction=0.2, max_depth=1).fit(X, y)
    assert free.tree_.n_node_samples[1:].min() < 80
    t = held.tree_
    assert t.node_count == 3 and t.n_node_samples[1:].min() >= 80
    # the cut is the best admissible one: every candidate leaves >= 80 rows on each side
    rec = held.node_records_[0]
    left = np.array([(x <= c).sum() for c in rec["candidate_thresholds"]])
    assert left.min() >= 80 and (400 - left).min() >= 80
    assert (
        held.tree_.threshold[0]
        == rec["candidate_thresholds"][int(np.argmax(rec["candidate_threshold_statistics"]))]
    )


def test_reproducible_and_importances():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 5))
    y = X[:, 0] * 2 + X[:, 2] + rng.normal(size=200)
    a = ConditionalInferenceTreeRegressor(random_state=5, **PAPER_REG).fit(X, y)
    b = ConditionalInferenceTreeRegressor(random_state=5, **PAPER_REG).fit(X, y)
    assert a.tree_.structure_digest() == b.tree_.structure_digest()
    np.testing.assert_array_equal(a.p_value_selector_, b.p_value_selector_)
    np.testing.assert_array_equal(a.n_permutations_splitter_, b.n_permutations_splitter_)
    assert a.feature_importances_.sum() == pytest.approx(1.0)
    assert set(np.argsort(-a.feature_importances_)[:2]) == {0, 2}
    assert a.score(X, y) > 0.6
    # a selected split's stage-A p-value is below the Bonferroni level of its node
    for i in np.flatnonzero(~a.tree_.is_leaf):
        assert a.p_value_selector_[i] < a.node_records_[i]["alpha_selector"]
        assert a.p_value_splitter_[i] < a.node_records_[i]["alpha_splitter"]


@pytest.mark.slow  # every threshold method and selector
def test_threshold_methods_and_selectors_fit():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1).astype(int)
    for method in ("exact", "random", "percentile", "histogram"):
        for selector in ("mc", "mi"):
            m = ConditionalInferenceTreeClassifier(
                selector=selector,
                threshold_method=method,
                max_thresholds=10,
                feature_scanning=method != "random",
                random_state=0,
                **PAPER_CLF,
            ).fit(X, y)
            assert m.score(X, y) > 0.8
            assert m.feature_importances_[2] < 0.2


@BOTH
def test_categorical_feature_set_split(preset):
    rng = np.random.default_rng(5)
    n = 300
    c = rng.integers(0, 4, size=n)
    y = np.isin(c, [1, 3]).astype(int)
    X = np.column_stack([rng.normal(size=n), c])
    m = ConditionalInferenceTreeClassifier(categorical_features=[1], random_state=0, **preset).fit(
        X, y
    )
    assert m.tree_.feature[0] == 1 and m.score(X, y) == 1.0
    left = m.tree_.left_categories(0)
    assert set(left.tolist()) in ({0, 2}, {1, 3})


def test_bad_parameters():
    X = np.zeros((10, 2))
    y = np.arange(10) % 2
    for kw, match in (
        ({"selector": "pc"}, "selector"),
        ({"alpha_selector": 2}, "alpha"),
        ({"n_resamples_selector": "lots"}, "n_resamples"),
        ({"min_samples_leaf": 0}, "min_samples_leaf"),
        ({"p_value": "exact"}, "p_value"),
        ({"teststat": "scalar"}, "teststat"),
        ({"splitter": "mse"}, "splitter"),
        ({"min_child_fraction": 0.5}, "min_child_fraction"),
    ):
        with pytest.raises(ValueError, match=match):
            ConditionalInferenceTreeClassifier(**kw).fit(X, y)


def test_registered_in_compare():
    from engine.compare import REGISTRY

    spec = REGISTRY["treelab_cit"]
    assert {p.name for p in spec.params} >= {
        "p_value",
        "alpha_selector",
        "max_depth",
        "min_samples_leaf",
    }
    m = spec.make("regression", 0, max_depth=2)
    assert isinstance(m, ConditionalInferenceTreeRegressor) and m.max_depth == 2
    assert spec.make("classification", 0, max_depth=0).max_depth is None


def test_adaptive_tree_same_splits_fewer_permutations():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] + X[:, 3] > 0).astype(int)
    fixed = ConditionalInferenceTreeClassifier(
        early_stopping_selector=None,
        early_stopping_splitter=None,
        threshold_method="histogram",
        max_thresholds=16,
        max_depth=2,
        random_state=0,
        **PAPER_CLF,
    ).fit(X, y)
    ada = ConditionalInferenceTreeClassifier(
        threshold_method="histogram", max_thresholds=16, max_depth=2, random_state=0, **PAPER_CLF
    ).fit(X, y)
    inner = ~fixed.tree_.is_leaf
    assert inner.sum() >= 3
    np.testing.assert_array_equal(fixed.tree_.feature, ada.tree_.feature)
    np.testing.assert_array_equal(fixed.tree_.threshold, ada.tree_.threshold)
    total_fixed = sum(sum(r["n_permutations"]) for r in fixed.node_records_)
    total_ada = sum(sum(r["n_permutations"]) for r in ada.node_records_)
    assert total_ada < 0.7 * total_fixed
    assert ada.n_permutations_splitter_.sum() < 0.5 * fixed.n_permutations_splitter_.sum()


@pytest.mark.slow
def test_feature_muting_is_subtree_local():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=400) > 0).astype(int)
    m = ConditionalInferenceTreeClassifier(
        max_depth=1, random_state=0, feature_scanning=False, **PAPER_CLF
    ).fit(X, y)
    rec = m.node_records_[0]
    # without scanning every feature is tested at the root; the noise ones are muted
    assert sorted(rec["features"]) == [0, 1, 2, 3]
    on = ConditionalInferenceTreeClassifier(
        max_depth=3, random_state=0, feature_scanning=False, **PAPER_CLF
    ).fit(X, y)
    off = ConditionalInferenceTreeClassifier(
        max_depth=3,
        random_state=0,
        feature_scanning=False,
        **{**PAPER_CLF, "feature_muting": False},
    ).fit(X, y)
    root = on.node_records_[0]
    kept = {
        f
        for f, p in zip(root["features"], root["p_values"], strict=True)
        if p < root["alpha_selector"]
    }
    assert 0 in kept and kept != {0, 1, 2, 3}
    checked = 0
    for node in np.flatnonzero(~on.tree_.is_leaf & (on.tree_.depth == 1)):
        assert set(on.node_records_[node]["features"]) <= kept
        checked += 1
    assert checked >= 1
    for node in np.flatnonzero(~off.tree_.is_leaf & (off.tree_.depth == 1)):
        assert set(off.node_records_[node]["features"]) == {0, 1, 2, 3}
        checked += 1
    assert checked >= 2


@pytest.mark.slow
def test_threshold_scanning_stops_the_shared_run_at_the_first_significant(monkeypatch):
    """When a node's lowest-impurity threshold is not significant, the remaining candidates
    are tested in one shared-permutation run that ends once the thresholds up to the first
    significant one are decided (before, every remaining candidate was run to its own
    decision: 169 on breast_cancer's node below, where scanning stops at the third).  Each
    returned test equals the one-by-one test with the same seed, so the fit is unchanged."""
    from sklearn.datasets import load_breast_cancer

    import engine.cit.stages as cit_stages
    from engine.cit.permutation import splitter_test

    X, y = load_breast_cancer(return_X_y=True)
    seen = []
    real = cit_stages.splitter_tests

    def spy(*args, **kw):
        out = real(*args, **kw)
        seen.append((len(args[3]), len(out)))
        single = {k: v for k, v in kw.items() if k != "stop_at_first"}
        for q, r in zip(args[3], out, strict=False):
            one = splitter_test(*args[:3], int(q), *args[4:], **single)
            assert (r.p_value, r.n_permutations) == (one.p_value, one.n_permutations)
        return out

    monkeypatch.setattr(cit_stages, "splitter_tests", spy)
    fit = ConditionalInferenceTreeClassifier(
        threshold_method="histogram", max_thresholds=256, random_state=0, **PAPER_CLF
    ).fit(X, y)
    assert seen, "no node went past its first threshold: the case is not exercised"
    assert any(sent > 10 * got for sent, got in seen)  # the case of the docstring
    tested = [len(r["thresholds"]) for r in fit.node_records_ if len(r.get("thresholds", [])) > 1]
    assert sorted(got for _, got in seen) == sorted(t - 1 for t in tested)
    for r in fit.node_records_:
        if len(r.get("thresholds", [])) > 1:
            cand = np.asarray(r["candidate_thresholds"])
            order = np.argsort(np.asarray(r["candidate_threshold_statistics"]), kind="stable")
            # the thresholds recorded are the candidates in ascending impurity, up to the
            # first significant one
            assert r["thresholds"] == [float(t) for t in cand[order[: len(r["thresholds"])]]]
            assert all(p >= r["alpha_splitter"] for p in r["threshold_p_values"][:-1])
