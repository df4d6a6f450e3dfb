"""engine.cart: the CART builder and CARTClassifier / CARTRegressor.

Oracles:

* scikit-learn 1.9's ``DecisionTreeClassifier`` / ``DecisionTreeRegressor`` (depth-first and
  best-first) for ``splitter='exhaustive'``, node by node, on every bundled dataset;
* exhaustive enumeration of category subsets for categorical splits;
* the exhaustive strategy's root gain for every other strategy on iris;
* ``sklearn.utils.estimator_checks`` for scikit-learn compatibility;
* the docs/spec.md section 5 reference accuracies for the DICS strategies (depth-8 5-fold CV).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

import engine
from engine import _numba
from engine.cart import CARTClassifier, CARTRegressor
from engine.cart.candidates import STRATEGIES
from engine.cart.dics import default_m_pairs
from engine.compare import REGISTRY
from engine.data import bundled_datasets, load_bundled, make_dataset

# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled():
    """Every bundled dataset as a Dataset (missing values dropped)."""
    out = {}
    for name, entry in bundled_datasets().items():
        df, _, _ = load_bundled(name)
        out[name] = make_dataset(df, entry["target"], missing="drop")
    return out


def tie_free(X: np.ndarray, seed: int = 0) -> np.ndarray:
    """Values scikit-learn and we see identically, with ties broken by tiny noise.

    scikit-learn casts X to float32 and never splits between values closer than 1e-7
    (``FEATURE_THRESHOLD``).  Each column is standardised, shifted to >= 1 (where float32
    values are >= 1.19e-7 apart), jittered by N(0, 1e-3) and cast through float32.
    """
    rng = np.random.default_rng(seed)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = (X - X.min(axis=0)) / sd + 1.0 + rng.normal(0.0, 1e-3, size=X.shape)
    return np.abs(Z).astype(np.float32).astype(np.float64)


def node_gain(t, k: int) -> float:
    """Weighted impurity decrease at node k from tree arrays (ours or scikit-learn's)."""
    lc, rc = t.children_left[k], t.children_right[k]
    w = t.weighted_n_node_samples
    return float(w[k] * t.impurity[k] - w[lc] * t.impurity[lc] - w[rc] * t.impurity[rc])


def compare_with_sklearn(ours, sk, X):
    """Walk both trees together from the root.

    At every pair of nodes: same leaf/split status, ``n_node_samples``, impurity and value;
    at splits the same impurity decrease and either the same feature and threshold or the
    same partition of the node's rows (a feature giving the identical partition).  When the
    two splits give *different* partitions with the same decrease (an exact tie that
    scikit-learn breaks by its random feature order) the subtree is not compared further.
    Returns ``(n_nodes_compared, n_tie_nodes, rows_below_ties)``.
    """
    a, b = ours.tree_, sk.tree_
    stack = [(0, 0, np.arange(X.shape[0]))]
    compared, ties, tied_rows = 0, 0, []
    while stack:
        i, j, rows = stack.pop()
        compared += 1
        assert a.n_node_samples[i] == b.n_node_samples[j] == len(rows)
        assert a.impurity[i] == pytest.approx(b.impurity[j], rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(a.value[i], b.value[j], rtol=1e-9, atol=1e-12)
        leaf_a, leaf_b = a.children_left[i] == -1, b.children_left[j] == -1
        assert leaf_a == leaf_b, f"node {i}: leaf in one tree only"
        if leaf_a:
            continue
        assert node_gain(a, i) == pytest.approx(node_gain(b, j), rel=1e-9, abs=1e-12)
        go_a = X[rows, a.feature[i]] <= a.threshold[i]
        go_b = X[rows, b.feature[j]] <= b.threshold[j]
        if not np.array_equal(go_a, go_b):
            ties += 1
            tied_rows.append(rows)
            continue
        if a.feature[i] == b.feature[j]:
            assert a.threshold[i] == b.threshold[j]
        stack.append((a.children_left[i], b.children_left[j], rows[go_a]))
        stack.append((a.children_right[i], b.children_right[j], rows[~go_a]))
    below = np.unique(np.concatenate(tied_rows)) if tied_rows else np.empty(0, dtype=int)
    return compared, ties, below


# ---------------------------------------------------------------------------------------
# exhaustive == scikit-learn
# ---------------------------------------------------------------------------------------

DEPTHS = (1, 2, 4, 8, None)


@pytest.mark.slow
@pytest.mark.parametrize("max_depth", DEPTHS)
def test_exhaustive_grows_the_same_tree_as_scikit_learn(bundled, max_depth):
    total_nodes = total_ties = identical = 0
    for name, ds in bundled.items():
        X = tie_free(ds.X)
        if ds.task == "classification":
            ours = CARTClassifier(max_depth=max_depth).fit(X, ds.y)
            sk = DecisionTreeClassifier(max_depth=max_depth, random_state=0).fit(X, ds.y)
        else:
            ours = CARTRegressor(max_depth=max_depth).fit(X, ds.y)
            sk = DecisionTreeRegressor(max_depth=max_depth, random_state=0).fit(X, ds.y)
        assert ours.tree_.node_count == sk.tree_.node_count, name
        compared, ties, below = compare_with_sklearn(ours, sk, X)
        total_nodes += compared
        total_ties += ties
        clean = np.setdiff1d(np.arange(X.shape[0]), below)
        if ds.task == "classification":
            np.testing.assert_array_equal(ours.predict(X[clean]), sk.predict(X[clean]))
        else:
            np.testing.assert_allclose(ours.predict(X[clean]), sk.predict(X[clean]), rtol=1e-12)
        if ties == 0:  # then the trees are identical, node ids included
            np.testing.assert_array_equal(ours.tree_.children_left, sk.tree_.children_left)
            np.testing.assert_allclose(ours.predict(X), sk.predict(X), rtol=1e-12)
            if np.array_equal(ours.tree_.feature, sk.tree_.feature):  # no same-partition swap
                np.testing.assert_allclose(
                    ours.feature_importances_, sk.feature_importances_, atol=1e-12
                )
                identical += 1
    # exact ties between different partitions are rare: most nodes are compared, and most
    # trees are identical down to the feature importances
    assert total_ties <= 0.1 * total_nodes
    assert identical >= 1
    print(
        f"max_depth={max_depth}: {identical}/{len(bundled)} identical trees, "
        f"{total_ties} tie nodes of {total_nodes} compared"
    )


@pytest.mark.slow
@pytest.mark.parametrize("criterion", ["entropy", "log_loss"])
def test_exhaustive_entropy_matches_scikit_learn(bundled, criterion):
    total = total_ties = 0
    for name in ("iris", "breast_cancer", "digits", "moons"):
        ds = bundled[name]
        X = tie_free(ds.X, seed=1)
        ours = CARTClassifier(criterion=criterion, max_depth=6).fit(X, ds.y)
        sk = DecisionTreeClassifier(criterion=criterion, max_depth=6, random_state=0).fit(X, ds.y)
        compared, ties, _ = compare_with_sklearn(ours, sk, X)
        total += compared
        total_ties += ties
    assert total_ties <= 0.1 * total


@pytest.mark.parametrize("max_leaf_nodes", [2, 5, 12, 30])
def test_best_first_growth_matches_scikit_learn(bundled, max_leaf_nodes):
    for name in ("iris", "wine", "breast_cancer", "digits", "diabetes", "moons"):
        ds = bundled[name]
        X = tie_free(ds.X)
        cls = (
            (CARTClassifier, DecisionTreeClassifier)
            if ds.task == "classification"
            else (CARTRegressor, DecisionTreeRegressor)
        )
        ours = cls[0](max_leaf_nodes=max_leaf_nodes).fit(X, ds.y)
        sk = cls[1](max_leaf_nodes=max_leaf_nodes, random_state=0).fit(X, ds.y)
        assert ours.get_n_leaves() == sk.get_n_leaves() <= max_leaf_nodes
        compared, ties, _ = compare_with_sklearn(ours, sk, X)
        assert compared >= 3 or ties


def test_stopping_parameters_match_scikit_learn(bundled):
    ds = bundled["breast_cancer"]
    X = tie_free(ds.X)
    for kw in (
        dict(min_samples_leaf=7),
        dict(min_samples_split=40),
        dict(min_samples_leaf=0.05),
        dict(min_impurity_decrease=0.01),
        dict(max_depth=5, min_samples_split=0.1),
    ):
        ours = CARTClassifier(**kw).fit(X, ds.y)
        sk = DecisionTreeClassifier(random_state=0, **kw).fit(X, ds.y)
        compare_with_sklearn(ours, sk, X)
        assert ours.tree_.node_count == sk.tree_.node_count, kw


def test_sample_weights_match_scikit_learn(bundled):
    """Weights that are multiples of 1/4, so that every sum is exact in any order (with
    arbitrary floats scikit-learn sums class counts and node weights in different orders
    and can see a pure node as impure by 4e-16 > eps, then split it)."""
    total = total_ties = 0
    for name in ("wine", "breast_cancer", "diabetes"):
        ds = bundled[name]
        X = tie_free(ds.X)
        w = np.random.default_rng(0).integers(1, 13, size=len(ds.y)) / 4
        if ds.task == "classification":
            ours = CARTClassifier(max_depth=5).fit(X, ds.y, sample_weight=w)
            sk = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, ds.y, sample_weight=w)
        else:
            ours = CARTRegressor(max_depth=5).fit(X, ds.y, sample_weight=w)
            sk = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, ds.y, sample_weight=w)
        compared, ties, _ = compare_with_sklearn(ours, sk, X)
        total += compared
        total_ties += ties
    assert total_ties <= 0.1 * total


# ---------------------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------------------


def root_gain(est) -> float:
    return node_gain(est.tree_, 0) / est.tree_.weighted_n_node_samples[0]


@pytest.fixture(scope="module")
def iris_stumps(bundled):
    ds = bundled["iris"]
    return {
        s: CARTClassifier(splitter=s, max_depth=1, random_state=0).fit(ds.X, ds.y)
        for s in STRATEGIES
    }


def test_every_strategy_reaches_the_exhaustive_root_gain_on_iris(iris_stumps, bundled):
    best = root_gain(iris_stumps["exhaustive"])
    assert best == pytest.approx(1 / 3)  # setosa split off: Gini 2/3 -> 1/3
    for s, est in iris_stumps.items():
        if s == "quantile":
            continue  # see the next test
        assert root_gain(est) == pytest.approx(best, rel=1e-12), s


def test_quantile16_misses_the_iris_root_split_by_definition(bundled):
    """SPEC says every strategy reaches it; with ``np.quantile(x, j/17)`` it cannot.

    The best split separates the 50 setosa (sorted rows 0..49) from the rest, so a
    quantile level p must put ``p (n - 1) = 149 p`` in [49, 50), i.e. p in [0.3289,
    0.3356); no j/17 lies there (6/17 = 0.353), while 1/3 = 6/18 does (q = 17).
    """
    ds = bundled["iris"]
    best = root_gain(CARTClassifier(max_depth=1).fit(ds.X, ds.y))
    q16 = root_gain(CARTClassifier(splitter="quantile", max_depth=1).fit(ds.X, ds.y))
    q17 = root_gain(
        CARTClassifier(splitter="quantile", n_candidates=17, max_depth=1).fit(ds.X, ds.y)
    )
    assert q16 < best - 0.01
    assert q17 == pytest.approx(best, rel=1e-12)


@pytest.mark.slow
def test_random_reaches_the_iris_root_split_at_the_binomial_rate(bundled):
    """16 of the 42 petal-length and 16 of the 21 petal-width midpoints are drawn; the
    best split is hit unless both miss: p = 1 - (26/42)(5/21) = 0.853."""
    ds = bundled["iris"]
    best = 1 / 3
    hits = sum(
        root_gain(CARTClassifier(splitter="random", max_depth=1, random_state=s).fit(ds.X, ds.y))
        == pytest.approx(best)
        for s in range(200)
    )
    p = 1 - (26 / 42) * (5 / 21)
    assert abs(hits - 200 * p) <= 4 * np.sqrt(200 * p * (1 - p))


def test_candidates_per_feature_never_exceed_unique_gaps(bundled):
    for name in ("iris", "wine", "breast_cancer", "digits"):
        ds = bundled[name]
        gaps = sum(len(np.unique(ds.X[:, j])) - 1 for j in range(ds.n_features))
        counts = {}
        for s in STRATEGIES:
            est = CARTClassifier(splitter=s, max_depth=1, random_state=0).fit(ds.X, ds.y)
            counts[s] = int(est.node_candidates_[0])
            assert counts[s] <= gaps, (name, s)
        assert counts["exhaustive"] == gaps  # every midpoint of every feature
        K = ds.n_classes
        assert counts["dics_paper"] <= default_m_pairs(K) * ds.n_features
        assert counts["class_centroid"] <= (K - 1) * ds.n_features


def test_dics_paper_keeps_at_most_m_per_feature_at_every_node(bundled):
    ds = bundled["wine"]
    est = CARTClassifier(splitter="dics_paper", max_depth=8, random_state=0, fallback=False).fit(
        ds.X, ds.y
    )
    d = est.dics_dictionary_
    assert d.m_pairs == default_m_pairs(3) == 3
    assert all(len(d.feature(j)) <= 3 for j in range(ds.n_features))
    assert est.node_candidates_.max() <= 3 * ds.n_features
    est2 = CARTClassifier(splitter="dics_paper", dics_pairs=2, random_state=0).fit(ds.X, ds.y)
    assert all(len(est2.dics_dictionary_.feature(j)) <= 2 for j in range(ds.n_features))


def test_dics_per_node_sampling_evaluates_at_most_k(bundled):
    ds = bundled["breast_cancer"]
    est = CARTClassifier(
        splitter="dics_paper", n_candidates=10, fallback=False, random_state=0, max_depth=8
    ).fit(ds.X, ds.y)
    assert 0 < est.node_candidates_.max() <= 10
    full = CARTClassifier(splitter="dics_paper", random_state=0, max_depth=8).fit(ds.X, ds.y)
    assert est.n_candidates_evaluated_ < full.n_candidates_evaluated_


def test_dics_remove_used_entries_shrinks_the_dictionary(bundled):
    ds = bundled["iris"]
    kept = CARTClassifier(splitter="dics_paper", random_state=0, fallback=False).fit(ds.X, ds.y)
    removed = CARTClassifier(
        splitter="dics_paper", random_state=0, fallback=False, dics_remove_used=True
    ).fit(ds.X, ds.y)
    assert removed.n_candidates_evaluated_ < kept.n_candidates_evaluated_


def test_random_strategy_is_reproducible(bundled):
    ds = bundled["breast_cancer"]
    a = CARTClassifier(splitter="random", random_state=3).fit(ds.X, ds.y)
    b = CARTClassifier(splitter="random", random_state=3).fit(ds.X, ds.y)
    c = CARTClassifier(splitter="random", random_state=4).fit(ds.X, ds.y)
    np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)
    assert a.tree_.node_count != c.tree_.node_count or not np.array_equal(
        a.tree_.threshold, c.tree_.threshold
    )


def test_max_features_is_reproducible_and_random(bundled):
    ds = bundled["digits"]
    a = CARTClassifier(max_features="sqrt", random_state=1, max_depth=6).fit(ds.X, ds.y)
    b = CARTClassifier(max_features="sqrt", random_state=1, max_depth=6).fit(ds.X, ds.y)
    c = CARTClassifier(max_features="sqrt", random_state=2, max_depth=6).fit(ds.X, ds.y)
    np.testing.assert_array_equal(a.tree_.feature, b.tree_.feature)
    assert not np.array_equal(a.tree_.feature, c.tree_.feature)
    assert a.max_features_ == int(np.sqrt(ds.n_features))
    full = CARTClassifier(max_depth=6).fit(ds.X, ds.y)
    assert a.n_candidates_evaluated_ < full.n_candidates_evaluated_


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_constant_features_and_one_row_nodes(strategy):
    rng = np.random.default_rng(0)
    X = np.column_stack([np.full(60, 2.0), rng.normal(size=60), np.zeros(60)])
    y = (X[:, 1] > 0).astype(int)
    est = CARTClassifier(splitter=strategy, random_state=0).fit(X, y)
    internal = est.tree_.children_left != -1
    assert set(est.tree_.feature[internal]) == {1}
    assert np.all(est.node_candidates_[~internal & (est.tree_.n_node_samples == 1)] == 0)
    one = CARTClassifier(splitter=strategy).fit(X[:1], y[:1])
    assert one.tree_.node_count == 1 and one.n_candidates_evaluated_ == 0
    const = CARTClassifier(splitter=strategy).fit(np.ones((10, 2)), np.arange(10) % 2)
    assert const.tree_.node_count == 1
    np.testing.assert_allclose(const.predict_proba(np.ones((1, 2))), [[0.5, 0.5]])
    if strategy != "class_centroid":
        reg = CARTRegressor(splitter=strategy, random_state=0).fit(X, X[:, 1] ** 2)
        assert np.isfinite(reg.predict(X)).all()


def test_candidate_counts_are_consistent(bundled):
    ds = bundled["wine"]
    for s in STRATEGIES:
        est = CARTClassifier(splitter=s, random_state=0, max_depth=5).fit(ds.X, ds.y)
        assert est.node_candidates_.shape == (est.tree_.node_count,)
        assert est.n_candidates_evaluated_ == est.node_candidates_.sum()
        leaves = est.tree_.children_left == -1
        assert np.all(est.node_candidates_[~leaves] > 0)


# ---------------------------------------------------------------------------------------
# DICS accuracy (docs/spec.md section 5 references)
# ---------------------------------------------------------------------------------------

#: docs/spec.md section 5 reference depth-8 5-fold accuracies (our research notes' runs):
#: exhaustive / dics_paper / class_centroid / kmeans1d-8 / quantile16.
SPEC_REFERENCE = {
    "iris": (0.933, 0.933, 0.933, 0.940, 0.927),
    "wine": (0.927, 0.933, 0.932, 0.916, 0.905),
    "breast_cancer": (0.926, 0.940, 0.944, 0.935, 0.940),
    "digits": (0.838, 0.822, 0.846, 0.841, 0.836),
}
CV_STRATEGIES = {
    "exhaustive": {},
    "dics_paper": {"splitter": "dics_paper"},
    "class_centroid": {"splitter": "class_centroid"},
    "kmeans1d-8": {"splitter": "kmeans1d", "n_candidates": 8},
    "kmeans1d": {"splitter": "kmeans1d"},
    "kde_valley": {"splitter": "kde_valley"},
}
CV_REPEATS = 3


@pytest.fixture(scope="module")
def cv_accuracy(bundled):
    """Depth-8 stratified 5-fold CV accuracy, repeated with shuffles 0..2 (one 5-fold run
    on 178 wines has a standard deviation of about 0.02-0.03, as large as the margin).
    Returns ``{dataset: {strategy: (mean over repeats, first repeat)}}``."""
    out = {}
    for name in SPEC_REFERENCE:
        ds = bundled[name]
        res = {}
        for label, params in CV_STRATEGIES.items():
            accs = []
            for rep in range(CV_REPEATS):
                cv = StratifiedKFold(5, shuffle=True, random_state=rep)
                est = CARTClassifier(max_depth=8, random_state=rep, **params)
                accs.append(cross_val_score(est, ds.X, ds.y, cv=cv).mean())
            res[label] = (float(np.mean(accs)), float(accs[0]))
        out[name] = res
    return out


@pytest.mark.slow
@pytest.mark.parametrize("dataset", list(SPEC_REFERENCE))
def test_dics_strategies_stay_within_003_of_exhaustive(cv_accuracy, dataset):
    res = cv_accuracy[dataset]
    exhaustive = res["exhaustive"][0]
    # the exhaustive tree itself lands near the SPEC's reference CART figure
    assert exhaustive == pytest.approx(SPEC_REFERENCE[dataset][0], abs=0.03)
    for label in CV_STRATEGIES:
        assert res[label][0] >= exhaustive - 0.03, (dataset, label, res)


# ---------------------------------------------------------------------------------------
# categorical subset splits
# ---------------------------------------------------------------------------------------


def _impurity(y, kind, K=2):
    if kind == "squared_error":
        return float(np.var(y)) if len(y) else 0.0
    p = np.bincount(y, minlength=K) / len(y)
    if kind == "gini":
        return float(1 - np.sum(p**2))
    p = p[p > 0]
    return float(-np.sum(p * np.log2(p)))


def _best_subset_gain(codes, y, kind, K=2):
    """Oracle: every subset of the present categories (one of each complementary pair)."""
    cats = np.unique(codes)
    n = len(y)
    parent = _impurity(y, kind, K)
    best = 0.0
    for r in range(1, len(cats)):
        for left in itertools.combinations(cats[1:], r - 1):
            mask = np.isin(codes, (cats[0], *left))
            if mask.all():
                continue
            g = (
                parent
                - (
                    mask.sum() * _impurity(y[mask], kind, K)
                    + (~mask).sum() * _impurity(y[~mask], kind, K)
                )
                / n
            )
            best = max(best, g)
    return best


def _cat_data(rng, n_cats, kind, K=2):
    codes = rng.integers(0, n_cats, size=120)
    if kind == "squared_error":
        means = rng.normal(size=n_cats) * 3
        y = means[codes] + rng.normal(size=120)
    else:
        probs = rng.dirichlet(np.ones(K), size=n_cats)
        y = np.array([rng.choice(K, p=probs[c]) for c in codes])
    return codes.astype(float), y


@pytest.mark.parametrize("kind", ["gini", "entropy", "squared_error"])
def test_categorical_split_equals_exhaustive_subset_search(kind):
    """Binary classification and regression: ordering categories by the class-1 share
    (or the mean) and taking the best prefix is optimal (Breiman et al. 1984, 9.4)."""
    rng = np.random.default_rng(0)
    for trial in range(20):
        n_cats = 3 + trial % 6  # 3..8 categories
        codes, y = _cat_data(rng, n_cats, kind)
        X = np.column_stack([codes, rng.normal(size=len(codes)) * 0])  # 2nd column constant
        if kind == "squared_error":
            est = CARTRegressor(max_depth=1, categorical_features=[0]).fit(X, y)
        else:
            est = CARTClassifier(max_depth=1, criterion=kind, categorical_features=[0]).fit(X, y)
        expect = _best_subset_gain(codes.astype(int), y, kind)
        if expect <= 1e-12:
            continue
        assert root_gain(est) == pytest.approx(expect, rel=1e-9, abs=1e-12), trial
        # the left set routes the rows
        left = est.tree_.cat_values[est.tree_.cat_offsets[0] : est.tree_.cat_offsets[1]]
        np.testing.assert_array_equal(
            est.apply(X) == est.tree_.children_left[0], np.isin(codes, left)
        )


def test_multiclass_categorical_heuristic_is_never_above_the_optimum():
    """One-vs-rest orderings are a heuristic for K > 2: never better than the optimum
    (sanity), and optimal in most random cases."""
    rng = np.random.default_rng(1)
    exact = 0
    for trial in range(30):
        codes, y = _cat_data(rng, 3 + trial % 6, "gini", K=3)
        est = CARTClassifier(max_depth=1, categorical_features=[0]).fit(codes[:, None], y)
        expect = _best_subset_gain(codes.astype(int), y, "gini", K=3)
        got = root_gain(est)
        assert got <= expect + 1e-12
        exact += got == pytest.approx(expect, rel=1e-9)
    assert exact >= 20


def test_categorical_features_on_penguins(bundled):
    ds = bundled["penguins"]
    cats = np.flatnonzero(ds.is_categorical)
    est = CARTClassifier(categorical_features=ds.is_categorical, max_depth=4).fit(ds.X, ds.y)
    assert est.tree_.has_categorical_splits or not np.isin(est.tree_.feature, cats).any()
    proba = est.predict_proba(ds.X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert est.score(ds.X, ds.y) > 0.9
    same = CARTClassifier(categorical_features=list(cats), max_depth=4).fit(ds.X, ds.y)
    np.testing.assert_array_equal(same.predict(ds.X), est.predict(ds.X))


# ---------------------------------------------------------------------------------------
# scikit-learn compatibility
# ---------------------------------------------------------------------------------------

_WEIGHTS_BY_ROWS = (
    "candidates of this strategy are placed from row counts (quantiles, cluster or class "
    "means, densities), not from sample weights, so integer weights are not equivalent to "
    "repeated rows; the exhaustive splitter passes this check"
)


def _expected_failures(est):
    # observed failing; quantile and kmeans1d pass on this check's data by chance
    # (few unique values), which the non-strict xfail allows
    if est.splitter in ("exhaustive", "histogram", "random"):
        return {}
    return {"check_sample_weight_equivalence_on_dense_data": _WEIGHTS_BY_ROWS}


_CHECKED = (
    [CARTClassifier(), CARTRegressor()]
    + [CARTClassifier(splitter=s, random_state=0) for s in STRATEGIES if s != "exhaustive"]
    + [CARTRegressor(splitter=s, random_state=0) for s in ("dics_paper", "kmeans1d", "kde_valley")]
)


# check_array_api_input is skipped by scikit-learn itself (SCIPY_ARRAY_API unset); the
# estimators take numpy input only.
@pytest.mark.slow
@parametrize_with_checks(_CHECKED, expected_failed_checks=_expected_failures)
def test_scikit_learn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(estimator)


def test_parameters_are_validated_with_clear_messages():
    """One scikit-learn constraint table per estimator, checked in fit: the message names
    the parameter and what it may be; what the table cannot say is checked by hand."""
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    cases = [
        (dict(splitter="best"), r"'splitter' parameter of CARTClassifier must be a str among"),
        (dict(criterion="squared_error"), r"'criterion' parameter .* among \{.*'gini'"),
        (dict(max_depth=0), r"'max_depth' .* must be an int in the range \[1, inf\) or None"),
        (dict(min_samples_leaf=0), r"'min_samples_leaf' .* an int in the range \[1, inf\)"),
        (dict(min_samples_split=1), r"'min_samples_split' .* an int in the range \[2, inf\)"),
        (
            dict(max_features="all"),
            r"'max_features' .* a str among \{'(sqrt|log2)', '(sqrt|log2)'\}",
        ),
        (dict(max_leaf_nodes=1), r"'max_leaf_nodes' .* an int in the range \[2, inf\) or None"),
        (dict(n_candidates=0), r"'n_candidates' .* an int in the range \[1, inf\) or None"),
        (dict(min_impurity_decrease=-1.0), r"'min_impurity_decrease' .* \[0.0, inf\)"),
        (
            dict(fallback="yes"),
            r"'fallback' parameter of CARTClassifier must be an instance of 'bool'",
        ),
        (dict(categorical_features=[5]), "categorical_features holds an index outside"),
        (dict(categorical_features=[0]), "categorical feature 0 must hold integer codes"),
    ]
    for params, message in cases:
        with pytest.raises(ValueError, match=message):
            CARTClassifier(**params).fit(X, y)
    with pytest.raises(ValueError, match="'class_centroid' needs class labels"):
        CARTRegressor(splitter="class_centroid").fit(X, X[:, 0])
    with pytest.raises(
        ValueError, match=r"'criterion' parameter of CARTRegressor .* \{'squared_error'\}"
    ):
        CARTRegressor(criterion="gini").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="sample_weight must be finite and non-negative"):
        CARTClassifier().fit(X, y, sample_weight=-np.ones(20))


def test_estimator_examples_run_as_documented():
    """The Examples sections of CARTClassifier and CARTRegressor print what they say."""
    import doctest

    from engine.cart import estimator

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = [
        test
        for cls in (CARTClassifier, CARTRegressor)
        for test in finder.find(cls, module=estimator)
        if test.name.endswith(cls.__name__) and test.examples
    ]
    assert len(tests) == 2
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_fitted_attributes(bundled):
    ds = bundled["breast_cancer"]
    est = CARTClassifier(max_depth=3).fit(ds.feature_frame(), ds.y)
    assert isinstance(est.tree_, engine.TreeArrays)
    assert list(est.feature_names_in_) == ds.feature_names == est.tree_.feature_names
    assert est.n_features_in_ == 30 and est.n_classes_ == 2 and est.n_outputs_ == 1
    assert est.feature_importances_.sum() == pytest.approx(1.0)
    assert est.get_depth() == 3 and est.get_n_leaves() == est.tree_.n_leaves
    np.testing.assert_array_equal(est.apply(ds.feature_frame()), est.tree_.apply(ds.X))
    labels = ds.target_labels()
    named = CARTClassifier(max_depth=3).fit(ds.X, labels)
    np.testing.assert_array_equal(named.classes_, np.unique(labels))
    assert set(named.predict(ds.X)) <= set(labels)


def test_zero_weights_remove_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    w = rng.integers(0, 3, size=80).astype(float)
    a = CARTClassifier().fit(X, y, sample_weight=w)
    b = CARTClassifier().fit(X[w > 0], y[w > 0], sample_weight=w[w > 0])
    np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)


def test_registered_on_the_compare_page_and_warmed_on_import():
    spec = REGISTRY["treelab_cart"]
    assert set(spec.tasks) == {"classification", "regression"}
    assert dict((p.name, p.choices) for p in spec.params)["splitter"] == STRATEGIES
    assert isinstance(spec.make("classification", 0, splitter="kmeans1d"), CARTClassifier)
    assert isinstance(spec.make("regression", 0), CARTRegressor)
    with pytest.raises(ValueError, match="needs class labels"):
        spec.make("regression", 0, splitter="class_centroid")
    names = [name for name, _ in _numba._WARMUPS]
    assert {"criteria", "candidates", "cart"} <= set(names)
    assert engine.CARTClassifier is CARTClassifier


def test_build_tree_and_feature_breakpoints_for_reuse(bundled):
    """The validation-free entry points: Literati's one-feature CART breakpoints equal the
    thresholds of scikit-learn's best-first tree on that feature."""
    from engine.cart import build_tree, feature_breakpoints

    ds = bundled["breast_cancer"]
    X = tie_free(ds.X)
    for j, leaves in [(0, 4), (7, 8), (20, None)]:
        sk = DecisionTreeClassifier(max_leaf_nodes=leaves, random_state=0).fit(X[:, [j]], ds.y)
        expect = np.unique(sk.tree_.threshold[sk.tree_.children_left != -1])
        np.testing.assert_array_equal(feature_breakpoints(X[:, j], ds.y, leaves), expect)
    grown = build_tree(X, ds.y, n_classes=2, max_depth=3)
    est = CARTClassifier(max_depth=3).fit(X, ds.y)
    assert grown.misclassified() == pytest.approx((1 - est.score(X, ds.y)) * len(ds.y))
    np.testing.assert_array_equal(grown.tree_arrays().apply(X), est.apply(X))
    np.testing.assert_allclose(grown.feature_importances(), est.feature_importances_)


def _one_feature_tie_data(seed):
    """One float32-exact feature with many equal-gain splits (six integers or eighths),
    2-4 classes and an integer regression target."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(5, 120))
    if seed % 2 == 0:
        x = rng.integers(0, 6, size=m).astype(np.float64)
    else:
        x = np.round(rng.normal(size=m) * 8) / 8
    y = rng.integers(0, 2 + seed % 3, size=m)
    return x, y, rng.integers(0, 4, size=m).astype(np.float64)


def _assert_best_first_equals_scikit_learn(x, y, target, leaves):
    from engine.cart import feature_breakpoints

    sk = DecisionTreeClassifier(max_leaf_nodes=leaves, random_state=0).fit(x[:, None], y).tree_
    expect = np.unique(sk.threshold[sk.children_left != -1])
    np.testing.assert_array_equal(feature_breakpoints(x, y, leaves), expect)
    sk = DecisionTreeRegressor(max_leaf_nodes=leaves, random_state=0).fit(x[:, None], target)
    ours = CARTRegressor(max_leaf_nodes=leaves).fit(x[:, None], target).tree_
    internal = ours.children_left != -1
    np.testing.assert_array_equal(
        np.unique(ours.threshold[internal]),
        np.unique(sk.tree_.threshold[sk.tree_.children_left != -1]),
    )


def test_best_first_ties_between_nodes_break_as_scikit_learn():
    """Seed 293 (4 classes, 8 leaves): the last split is a tie between two nodes of equal
    improvement; scikit-learn's frontier is a C++ heap (std::push_heap / std::pop_heap over
    every node, leaves included), whose order takes the node split at -1.25, not 1.4375."""
    x, y, target = _one_feature_tie_data(293)
    _assert_best_first_equals_scikit_learn(x, y, target, 8)


@pytest.mark.slow
def test_best_first_breakpoints_equal_scikit_learn_on_many_seeds():
    """300 random features, 2-4 classes and regression, 2-8 leaves: the same thresholds."""
    for seed in range(300):
        x, y, target = _one_feature_tie_data(seed)
        for leaves in (2, 3, 4, 5, 8):
            _assert_best_first_equals_scikit_learn(x, y, target, leaves)
