"""Greedy shape tree (docs/spec.md section 1's baseline) and the greedy seeding of Literati's
incumbents: scikit-learn's CART as the oracle of the K_max = 1 greedy tree, Literati's
proven optimum (and the brute force) as a floor, independent recomputation of every
objective, search invariants with and without seeding, scikit-learn conventions.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from engine.data import load_bundled, make_dataset
from engine.literati import GreedyShapeTreeClassifier, LiteratiClassifier
from engine.literati.greedy import greedy_shape_tree
from tests.test_literati import (
    _BRUTE_CASES,
    _check_trace,
    _random_data,
    _route,
    brute_force,
    tree_objective,
)

# ---------------------------------------------------------------------------------------
# helpers (independent of the engine)
# ---------------------------------------------------------------------------------------


def _continuous(seed, n, p, C):
    """Continuous features exactly representable in float32 (scikit-learn casts X to
    float32) with a noisy non-linear class rule."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, p)) * 4096) / 4096
    score = X[:, 0] + 0.8 * np.sin(2 * X[:, 1]) + 0.5 * X[:, -1] ** 2
    score += rng.normal(scale=0.4, size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, C + 1)[1:-1]))
    return np.ascontiguousarray(X), y.astype(np.int64)


def _proxy_ranking(X, y, ids, C):
    """Every (feature, midpoint) split of the samples ``ids``, scored by scikit-learn's
    gini proxy ``sum L^2 / n_L + sum R^2 / n_R`` (higher is better)."""
    out = []
    for j in range(X.shape[1]):
        x = X[ids, j]
        v = np.unique(x)
        for t in v[:-1] / 2 + v[1:] / 2:
            left = x <= t
            cl = np.bincount(y[ids][left], minlength=C)
            cr = np.bincount(y[ids][~left], minlength=C)
            out.append((cl @ cl / left.sum() + cr @ cr / (~left).sum(), j, t))
    return sorted(out, reverse=True)


def _sk_nodes(tree, X, y, C):
    """scikit-learn's tree in preorder as (feature, threshold, n, children) tuples; asserts
    that no internal node has a tie for the best split (so the oracle is unambiguous)."""
    t = tree.tree_
    X32 = X.astype(np.float32)
    out = []

    def walk(i, ids):
        me = len(out)
        if t.children_left[i] < 0:
            out.append((-2, None, len(ids), None))
            return me
        ranks = _proxy_ranking(X, y, ids, C)
        assert ranks[0][0] > ranks[1][0] * (1 + 1e-9), "the oracle has a tie: pick other data"
        out.append((int(t.feature[i]), float(t.threshold[i]), len(ids), None))
        go = X32[ids, t.feature[i]] <= t.threshold[i]
        a = walk(t.children_left[i], ids[go])
        b = walk(t.children_right[i], ids[~go])
        out[me] = out[me][:3] + ((a, b),)
        return me

    walk(0, np.arange(len(y)))
    return out


def _greedy_nodes(g, X, idx):
    return [
        (
            nd["feature"],
            None if nd["bps"] is None else float(nd["bps"][0]),
            len(nd["idx"]),
            nd["children"],
        )
        for nd in g.nodes(X, idx)
    ]


def _prune(nodes, errs, cost):
    """Bottom-up pruning of a preorder node list: a subtree becomes a leaf when its leaf
    error is not above ``sum(leaf errors) + cost * splits``; returns the pruned list."""

    def value(i):
        if nodes[i][3] is None:
            return errs[i]
        a, b = nodes[i][3]
        return min(errs[i], cost + value(a) + value(b))

    out = []

    def walk(i):
        me = len(out)
        f, thr, n, ch = nodes[i]
        if ch is None or errs[i] <= value(i) + 1e-9:
            out.append((-2, None, n, None))
            return me
        out.append(None)
        a = walk(ch[0])
        b = walk(ch[1])
        out[me] = (f, thr, n, (a, b))
        return me

    walk(0)
    return out


def _estimator_nodes(est):
    t = est.tree_
    out = []
    for i in range(t.node_count):
        if t.children_left[i] < 0:
            out.append((-2, None, int(t.n_node_samples[i]), None))
        else:
            out.append(
                (
                    int(t.feature[i]),
                    float(t.bp_values[t.bp_offsets[i]]),
                    int(t.n_node_samples[i]),
                    (int(t.children_left[i]), int(t.children_right[i])),
                )
            )
    return out


@pytest.fixture(scope="module")
def wine():
    df, _, entry = load_bundled("wine")
    return make_dataset(df, entry["target"])


@pytest.fixture(scope="module")
def digits():
    df, _, entry = load_bundled("digits")
    return make_dataset(df, entry["target"])


# ---------------------------------------------------------------------------------------
# (a) K_max = 1, all midpoints, no penalties: exactly scikit-learn's CART
# ---------------------------------------------------------------------------------------

#: (seed, n, p, C, D) where scikit-learn's tree has no tie for the best split at any node
#: (checked by :func:`_sk_nodes`; small deep nodes often tie, e.g. two samples that every
#: feature separates)
_CART_CASES = [
    (1, 300, 3, 2, 3),
    (0, 250, 4, 3, 3),
    (2, 400, 5, 2, 4),
    (1, 200, 3, 3, 2),
    (4, 500, 2, 2, 4),
    (3, 600, 4, 2, 4),
]


@pytest.mark.parametrize("seed,n,p,C,D", _CART_CASES)
def test_kmax1_greedy_tree_splits_like_scikit_learn_cart(seed, n, p, C, D):
    X, y = _continuous(seed, n, p, C)
    sk = DecisionTreeClassifier(max_depth=D, criterion="gini", random_state=seed).fit(X, y)
    expected = _sk_nodes(sk, X, y, C)
    idx = np.arange(n, dtype=np.int64)
    g = greedy_shape_tree(np.ascontiguousarray(X.T), y, C, idx, D, 0, [0], 1, 0.0, 0.0, prune=False)
    got = _greedy_nodes(g, X, idx)
    assert got == expected  # features, thresholds (float64 midpoints), sizes, structure
    # errors of the unpruned tree = scikit-learn's training errors
    assert g.objective == pytest.approx(np.sum(sk.predict(X) != y))
    # the estimator prunes by the objective: with zero penalties a subtree goes when it
    # does not lower the errors (same rule applied to scikit-learn's tree here)
    est = GreedyShapeTreeClassifier(
        max_depth=D,
        max_breakpoints=1,
        split_penalty=0.0,
        breakpoint_penalty=0.0,
        candidate_leaves=None,
    ).fit(X, y)
    leaf_err = [
        float(n_ - np.bincount(y[nd["idx"]]).max())
        for nd, (_, _, n_, _) in zip(g.nodes(X, idx), got, strict=True)
    ]
    assert _estimator_nodes(est) == _prune(expected, leaf_err, 0.0)
    assert est.objective_ == pytest.approx(np.sum(sk.predict(X) != y))
    # (predictions may differ where a merged leaf's majority differs from its parts')
    assert np.sum(est.predict(X) != y) == np.sum(sk.predict(X) != y)


def test_sandwich_needs_two_breakpoints():
    """1-D x = 0..11, y = 0x4, 1x4, 0x4: the gini-best shape with K_max = 2 is the pure
    split {3.5, 7.5} (SPEC's hand case: objective 1.5 with lambda = alpha = 0.5)."""
    X = np.arange(12.0).reshape(-1, 1)
    y = np.array([0] * 4 + [1] * 4 + [0] * 4)
    est = GreedyShapeTreeClassifier(
        max_depth=1,
        max_breakpoints=2,
        split_penalty=0.5,
        breakpoint_penalty=0.5,
        candidate_leaves=None,
    ).fit(X, y)
    np.testing.assert_array_equal(est.tree_.bp_values, [3.5, 7.5])
    assert est.objective_ == pytest.approx(1.5)
    assert est.objective_breakdown_ == {
        "errors": 0,
        "n_splits": 1,
        "n_breakpoints": 2,
        "split_cost": 0.5,
        "breakpoint_cost": 1.0,
        "objective": 1.5,
    }
    # a split dearer than the leaf's 4 errors is pruned
    est = GreedyShapeTreeClassifier(
        max_depth=1,
        max_breakpoints=2,
        split_penalty=3.0,
        breakpoint_penalty=0.6,
        candidate_leaves=None,
    ).fit(X, y)
    assert est.tree_.node_count == 1 and est.objective_ == pytest.approx(4.0)


def test_ties_go_to_the_lowest_feature_then_fewest_breakpoints():
    """Two identical columns: the first wins.  x = 0..5 with y = 0 0 1 1 0 0: K = 2 gives a
    pure split, K = 1 cannot; with y = 0 0 0 1 1 1, K = 1 and K = 2 ({2.5, 5.5} is not a
    candidate) -> the single breakpoint 2.5."""
    x = np.arange(6.0)
    X = np.column_stack([x, x])
    est = GreedyShapeTreeClassifier(
        max_depth=1,
        max_breakpoints=2,
        split_penalty=0.1,
        breakpoint_penalty=0.1,
        candidate_leaves=None,
    )
    est.fit(X, [0, 0, 1, 1, 0, 0])
    assert est.tree_.feature[0] == 0
    np.testing.assert_array_equal(est.tree_.bp_values, [1.5, 3.5])
    est.fit(X, [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(est.tree_.bp_values, [2.5])


# ---------------------------------------------------------------------------------------
# (b) objective: independent recomputation, never below the optimum
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,n,p,C,D,k,lam,alpha", _BRUTE_CASES[::2])
def test_greedy_objective_is_at_least_the_brute_force_optimum(seed, n, p, C, D, k, lam, alpha):
    X, y = _random_data(seed, n, p, C)
    est = GreedyShapeTreeClassifier(
        max_depth=D,
        max_breakpoints=k,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=None,
    ).fit(X, y)
    obj, _ = tree_objective(est, X, y)
    assert est.objective_ == pytest.approx(obj, abs=1e-9)
    assert est.objective_ >= brute_force(X, y, D, k, lam, alpha) - 1e-9


@pytest.mark.parametrize(
    "name,D,k", [("iris", 2, 2), ("iris", 3, 2), ("wine", 2, 2), ("wine", 3, 1)]
)
def test_greedy_objective_is_at_least_literatis_proven_optimum(name, D, k):
    df, _, entry = load_bundled(name)
    ds = make_dataset(df, entry["target"])
    g = GreedyShapeTreeClassifier(max_depth=D, max_breakpoints=k).fit(ds.X, ds.y)
    opt = LiteratiClassifier(max_depth=D, max_breakpoints=k, time_limit=120).fit(ds.X, ds.y)
    assert opt.proven_optimal_
    assert g.objective_ >= opt.objective_ - 1e-9
    obj, leaf = tree_objective(g, ds.X, ds.y)
    assert g.objective_ == pytest.approx(obj, abs=1e-9)
    # breakdown and predictions agree with an independent routing of the training rows
    b = g.objective_breakdown_
    assert b["objective"] == pytest.approx(g.objective_)
    t = g.tree_
    majority = np.argmax(t.value[:, 0, :], axis=1)
    assert b["errors"] == int(np.sum(g.classes_[majority[leaf]] != ds.y))
    np.testing.assert_array_equal(g.predict(ds.X), g.classes_[majority[leaf]])
    assert b["n_splits"] == int((t.children_left >= 0).sum())
    assert b["n_breakpoints"] == t.bp_values.shape[0] <= k * b["n_splits"]


# ---------------------------------------------------------------------------------------
# (c) seeding does not change the optimum; it starts from the greedy tree
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,n,p,C,D,k,lam,alpha", _BRUTE_CASES)
def test_seeding_keeps_the_proven_optimum(seed, n, p, C, D, k, lam, alpha):
    X, y = _random_data(seed, n, p, C)
    kw = dict(
        max_depth=D,
        max_breakpoints=k,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=None,
        time_limit=60,
    )
    on = LiteratiClassifier(greedy_seed=True, **kw).fit(X, y)
    off = LiteratiClassifier(greedy_seed=False, **kw).fit(X, y)
    g = GreedyShapeTreeClassifier(
        max_depth=D,
        max_breakpoints=k,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=None,
    ).fit(X, y)
    assert on.proven_optimal_ and off.proven_optimal_
    assert on.objective_ == pytest.approx(off.objective_, abs=1e-9)
    assert on.objective_ == pytest.approx(brute_force(X, y, D, k, lam, alpha), abs=1e-9)
    assert on.trace_.ub.iloc[0] <= g.objective_ + 1e-9
    assert tree_objective(on, X, y)[0] == pytest.approx(on.objective_, abs=1e-9)


@pytest.mark.parametrize("seed,k", [(0, 1), (1, 2), (2, 2), (3, 2)])
def test_seeding_keeps_the_optimum_at_depth_3_and_4(seed, k):
    """Deeper trees: states with three levels left are searched (and seeded) below the
    root; the finite-candidate optimum with and without seeding must agree."""
    X, y = _random_data(300 + seed, 14, 2, 2, levels=5)
    D = 3 if seed < 2 else 4
    kw = dict(
        max_depth=D,
        max_breakpoints=k,
        split_penalty=0.2,
        breakpoint_penalty=0.15,
        candidate_leaves=(4, 3),
        time_limit=120,
    )
    search = LiteratiClassifier(greedy_seed=True, **kw).start(X, y)
    while not search.step(1.0):
        pass
    on = search.finish()
    off = LiteratiClassifier(greedy_seed=False, **kw).fit(X, y)
    assert on.proven_optimal_ and off.proven_optimal_
    assert on.objective_ == pytest.approx(off.objective_, abs=1e-9)
    assert tree_objective(on, X, y)[0] == pytest.approx(on.objective_, abs=1e-9)
    assert search.engine.greedy_calls >= (1 if D == 3 else 2)  # seeded below the root at D=4
    if D == 3:
        assert on.objective_ == pytest.approx(
            brute_force(X, y, D, k, 0.2, 0.15, leaves=[4, 3]), abs=1e-9
        )


@pytest.mark.parametrize("name,D", [("wine", 4), ("breast_cancer", 5), ("digits", 6)])
def test_first_incumbent_is_the_greedy_tree(name, D):
    df, _, entry = load_bundled(name)
    ds = make_dataset(df, entry["target"])
    g = GreedyShapeTreeClassifier(max_depth=D).fit(ds.X, ds.y)
    search = LiteratiClassifier(max_depth=D, time_limit=30).start(ds.X, ds.y)
    first = search.incumbents[0]
    leaf_err = len(ds.y) - np.bincount(ds.y).max()
    assert g.objective_ < leaf_err
    assert first["ub"] == pytest.approx(g.objective_, abs=1e-9)
    assert search.trace().ub.iloc[0] == pytest.approx(g.objective_, abs=1e-9)
    np.testing.assert_array_equal(first["tree"].feature, g.tree_.feature)
    np.testing.assert_array_equal(first["tree"].bp_values, g.tree_.bp_values)
    np.testing.assert_array_equal(first["tree"].children_left, g.tree_.children_left)
    off = LiteratiClassifier(max_depth=D, time_limit=30, greedy_seed=False).start(ds.X, ds.y)
    assert off.incumbents[0]["ub"] == pytest.approx(leaf_err)
    search.finish()
    off.finish()


# ---------------------------------------------------------------------------------------
# (d) anytime invariants with seeding on deeper trees
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "data,D,limit", [("wine", 4, 1.5), ("wine", 5, 1.5), ("digits", 4, 2.0), ("digits", 5, 2.0)]
)
def test_trace_invariants_with_seeding(data, D, limit, wine, digits):
    ds = wine if data == "wine" else digits
    search = LiteratiClassifier(max_depth=D, time_limit=limit).start(ds.X, ds.y)
    while not search.step(max_seconds=0.1):
        snap = search.snapshot()
        assert snap["lb"] <= snap["ub"] + 1e-9
    _check_trace(search, ds.X, ds.y)
    est = search.finish()
    assert est.lower_bound_ <= est.objective_ + 1e-9
    assert tree_objective(est, ds.X, ds.y)[0] == pytest.approx(est.objective_, abs=1e-9)
    g = GreedyShapeTreeClassifier(max_depth=D).fit(ds.X, ds.y)
    assert est.objective_ <= g.objective_ + 1e-9  # never worse than its own seed


def test_seeded_subtrees_deep_in_the_incumbent_route_correctly(wine):
    """After some iterations the incumbent mixes expanded states and greedy completions of
    frontier states: its recomputed objective is the root's UB, and predictions route as
    the shape functions say."""
    search = LiteratiClassifier(max_depth=5, time_limit=60).start(wine.X, wine.y)
    eng = search.engine
    deep = 0
    for _ in range(30):
        eng.iterate()
        nodes, obj = eng.extract()
        assert obj == pytest.approx(eng.root.ub, abs=1e-9)
        assert eng.root.lb <= eng.root.ub + 1e-9
        for key in eng.incumbent_keys():
            st = eng._cache.get(key)
            if (
                st is not None
                and st is not eng.root
                and st.greedy is not None
                and (st.kind != "expanded" or st.best is None)
                and st.gub < st.err
            ):
                deep += 1  # a frontier state whose incumbent is its greedy completion
                break
    assert deep > 0 and eng.greedy_calls > 1
    search._refresh_incumbent()
    est = search.finish()
    t = est.tree_
    for i, row in enumerate(wine.X[:40]):
        node = 0
        while t.children_left[node] >= 0:
            u = t.bp_values[t.bp_offsets[node] : t.bp_offsets[node + 1]]
            node = (
                t.children_left[node] if _route(row[t.feature[node]], u) else t.children_right[node]
            )
        assert est.apply(wine.X[i : i + 1])[0] == node


# ---------------------------------------------------------------------------------------
# (e) scikit-learn conventions
# ---------------------------------------------------------------------------------------


@parametrize_with_checks([GreedyShapeTreeClassifier(max_depth=2)])
def test_scikit_learn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(estimator)


def test_params_clone_and_probabilities(wine):
    est = GreedyShapeTreeClassifier()
    assert est.get_params() == {
        "max_depth": 3,
        "max_breakpoints": 2,
        "split_penalty": None,
        "breakpoint_penalty": None,
        "candidate_leaves": (8, 4),
        "random_state": None,
    }
    est.set_params(max_depth=4)
    assert clone(est).get_params() == est.get_params()
    est.fit(wine.X, wine.y)
    proba = est.predict_proba(wine.X)
    assert proba.shape == (len(wine.y), len(np.unique(wine.y)))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert est.score(wine.X, wine.y) == pytest.approx(np.mean(est.predict(wine.X) == wine.y))
    assert est.split_penalty_ == est.breakpoint_penalty_ == pytest.approx(0.005 * len(wine.y))
    assert est.candidate_leaves_ == [8, 4]
    assert LiteratiClassifier().get_params()["greedy_seed"] is True
    with pytest.raises(
        ValueError,
        match=r"^The 'max_depth' parameter of GreedyShapeTreeClassifier must be an int in the "
        r"range \[1, 8\]\. Got 0 instead\.$",
    ):
        GreedyShapeTreeClassifier(max_depth=0).fit(wine.X, wine.y)
    with pytest.raises(
        ValueError,
        match=r"^The 'greedy_seed' parameter of LiteratiClassifier must be an instance of "
        r"'bool' or an instance of 'numpy.bool'\. Got 'yes' instead\.$",
    ):
        LiteratiClassifier(greedy_seed="yes").fit(wine.X, wine.y)
