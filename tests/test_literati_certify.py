"""Certify any tree (issue 18 point 3): an imported tree's objective in Literati's terms
against the proven lower bound of a search on the same rows and candidates."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.tree import DecisionTreeClassifier

from engine.literati import LiteratiClassifier
from engine.literati.certify import (
    all_thresholds_feasible,
    as_shape_tree,
    certify,
    certify_bounds,
    certify_tree,
    check_splits,
    tree_objective,
)
from engine.tree import TREE_LEAF, TreeArrays

# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def _direct_objective(model, X, y, lam, alpha):
    """Brute-force count with scikit-learn's own routing: every leaf predicts the majority
    of the training rows it receives; each split costs lambda + alpha (K = 1)."""
    leaves = model.apply(X.astype(np.float32))
    errors = 0
    for leaf in np.unique(leaves):
        labels = y[leaves == leaf]
        errors += labels.size - np.bincount(labels).max()
    t = model.tree_
    n_splits = int(np.sum(t.children_left != -1))
    return errors + (lam + alpha) * n_splits, errors, n_splits


def _threshold_tree(spec, n_features, n_classes=2):
    """A TreeArrays from nested tuples ``(feature, threshold, left, right)``; a leaf is
    ``None``."""
    cl, cr, feat, thr = [], [], [], []

    def add(node):
        i = len(cl)
        cl.append(TREE_LEAF)
        cr.append(TREE_LEAF)
        feat.append(-2)
        thr.append(-2.0)
        if node is not None:
            f, t, left, right = node
            feat[i], thr[i] = f, t
            cl[i] = add(left)
            cr[i] = add(right)
        return i

    add(spec)
    m = len(cl)
    ones = np.ones(m, dtype=np.int64)
    return TreeArrays(
        np.array(cl),
        np.array(cr),
        np.array(feat),
        np.array(thr),
        np.zeros(m),
        ones,
        ones.astype(float),
        np.full((m, 1, n_classes), 1.0 / n_classes),
        task="classification",
        n_features=n_features,
        classes_=np.arange(n_classes),
    )


def _random_tree(rng, X, depth):
    """A random threshold tree: random feature, threshold uniform over the feature's
    range widened by one on each side (so some splits send every row one way)."""
    if depth == 0 or rng.random() < 0.2:
        return None
    f = int(rng.integers(X.shape[1]))
    lo, hi = X[:, f].min() - 1, X[:, f].max() + 1
    return (
        f,
        float(rng.uniform(lo, hi)),
        _random_tree(rng, X, depth - 1),
        _random_tree(rng, X, depth - 1),
    )


def _small_data(seed, n=14, p=2):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, p)).astype(float)
    y = ((X[:, 0] > 2) ^ (X[:, 1] > 3) ^ (rng.random(n) < 0.15)).astype(np.int64)
    return X, y


# ---------------------------------------------------------------------------------------
# objective
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_objective_equals_direct_count(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3)).round(2)
    y = rng.integers(0, 3, size=40)
    lam, alpha = 0.7, 0.3
    for depth in (1, 2, 3):
        model = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y)
        expected, errors, n_splits = _direct_objective(model, X, y, lam, alpha)
        got = tree_objective(model, X, y, lam, alpha)
        assert got["objective"] == pytest.approx(expected)
        assert (got["errors"], got["n_splits"], got["n_breakpoints"]) == (
            errors,
            n_splits,
            n_splits,
        )
        # fitted on these rows, its own labels are the majority labels
        assert got["own_errors"] == int(np.sum(model.predict(X) != y))


def test_objective_relabels_leaves_of_a_tree_fitted_elsewhere():
    """Literati's Err uses each leaf's majority on the given rows, not the tree's labels:
    a tree fitted on other rows, and one whose leaves all say class 0."""
    X, y = _small_data(3, n=30)
    model = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X[:15], y[:15])
    expected, errors, _ = _direct_objective(model, X, y, 0.5, 0.5)
    got = tree_objective(model, X, y, 0.5, 0.5)
    assert got["objective"] == pytest.approx(expected)
    assert got["own_errors"] == int(np.sum(model.predict(X) != y)) >= errors
    tree = _threshold_tree((0, 2.5, (1, 3.5, None, None), (1, 3.5, None, None)), 2)
    got = tree_objective(tree, X, y, 0.5, 0.5)  # every leaf's value is uniform: label 0
    leaf = 2 * (X[:, 0] > 2.5) + (X[:, 1] > 3.5)
    majority = sum((leaf == v).sum() - np.bincount(y[leaf == v]).max() for v in range(4))
    assert got["errors"] == majority < got["own_errors"] == int(np.sum(y != 0))
    assert got["objective"] == pytest.approx(majority + 3)


def test_treelab_cart_and_shape_trees_are_read_with_their_own_routing():
    """TreeLab's CART (its tree_ is a TreeArrays) and a K_max = 2 greedy shape tree: the
    objective is the majority count over the leaves their own ``apply`` reaches, with every
    breakpoint priced."""
    from engine.cart import CARTClassifier
    from engine.literati import GreedyShapeTreeClassifier

    X, y = _small_data(5, n=40, p=3)
    lam, alpha = 0.6, 0.4
    cart = CARTClassifier(max_depth=3, random_state=0).fit(X, y)
    greedy = GreedyShapeTreeClassifier(
        max_depth=2, max_breakpoints=2, split_penalty=lam, breakpoint_penalty=alpha
    ).fit(X, y)
    for model in (cart, greedy):
        leaves = model.apply(X)
        errors = sum(
            (leaves == v).sum() - np.bincount(y[leaves == v]).max() for v in np.unique(leaves)
        )
        inner = np.flatnonzero(model.tree_.children_left != -1)
        if model is greedy:
            n_bp = int(model.tree_.bp_offsets[-1])
        else:
            n_bp = inner.size
        got = tree_objective(model, X, y, lam, alpha)
        assert (got["errors"], got["n_splits"], got["n_breakpoints"]) == (errors, inner.size, n_bp)
        assert got["objective"] == pytest.approx(errors + lam * inner.size + alpha * n_bp)
    assert greedy.objective_ == pytest.approx(tree_objective(greedy, X, y, lam, alpha)["objective"])


# ---------------------------------------------------------------------------------------
# the bound
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_lower_bound_at_most_every_imported_tree(seed):
    """All midpoints, K_max = 2: every random threshold tree of depth <= 2 (splits that
    separate nothing included) and scikit-learn's trees stay at or above the proven bound,
    and every split that separates its rows is in the space."""
    X, y = _small_data(seed)
    lam, alpha = 0.5, 0.25
    search = LiteratiClassifier(
        max_depth=2,
        max_breakpoints=2,
        split_penalty=lam,
        breakpoint_penalty=alpha,
        candidate_leaves=None,
        time_limit=30,
    ).fit(X, y)
    assert search.proven_optimal_
    rng = np.random.default_rng(100 + seed)
    trees = [_threshold_tree(_random_tree(rng, X, 2), 2) for _ in range(150)]
    trees += [
        DecisionTreeClassifier(max_depth=d, random_state=r).fit(X, y)
        for d in (1, 2)
        for r in range(3)
    ]
    for tree in trees:
        cert = certify(tree, X, y, search)
        assert cert.lower_bound <= cert.objective + 1e-9
        for s in cert.splits:
            assert s.in_space == (0 < s.rows_left < s.rows), s


@pytest.mark.slow
def test_own_optimal_tree_has_gap_zero():
    X, y = load_iris(return_X_y=True)
    search = LiteratiClassifier(
        max_depth=2, max_breakpoints=1, split_penalty=0.5, breakpoint_penalty=0.5, time_limit=30
    ).fit(X, y)
    assert search.proven_optimal_
    cert = certify(search, X, y, search, name="Literati's tree")
    assert cert.in_space and cert.proven_optimal
    assert cert.gap == pytest.approx(0.0, abs=1e-9)
    assert cert.objective == pytest.approx(search.objective_)
    assert all(s.candidates for s in cert.splits)
    assert "gap 0" in cert.sentence()


@pytest.mark.slow
def test_own_shape_tree_with_two_breakpoints_has_gap_zero():
    """K_max = 2 on the spec's sandwich (optimum 1.5 with breakpoints 3.5 and 7.5): the
    search's own tree, a K = 2 shape, is certified with gap 0 and its breakpoints are
    candidates."""
    X = np.arange(12.0)[:, None]
    y = np.array([0] * 4 + [1] * 4 + [0] * 4)
    search = LiteratiClassifier(
        max_depth=1,
        max_breakpoints=2,
        split_penalty=0.5,
        breakpoint_penalty=0.5,
        candidate_leaves=None,
        time_limit=10,
    ).fit(X, y)
    cert = certify(search, X, y, search)
    assert search.objective_ == pytest.approx(1.5)
    assert cert.in_space and cert.gap == pytest.approx(0.0, abs=1e-9)
    (s,) = cert.splits
    assert s.gaps == ((3.0, 4.0), (7.0, 8.0)) and s.candidates == (3.5, 7.5)
    # the same shape is outside a K_max = 1 space
    (k1,) = check_splits(search, X, y, max_depth=1, max_breakpoints=1, candidate_leaves=None)
    assert not k1.in_space and "more than K_max = 1" in k1.reason


def _binarise(X):
    cols, spec = [], []
    for j in range(X.shape[1]):
        v = np.unique(X[:, j])
        for t in v[:-1] / 2 + v[1:] / 2:
            cols.append((X[:, j] <= t).astype(np.int64))
            spec.append((j, float(t)))
    return np.column_stack(cols), spec


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_sklearn_tree_is_no_better_than_pystreed_optimum(seed):
    """pystreed's optimum on the all-midpoints binarisation is the optimal threshold tree
    (K_max = 1); scikit-learn's tree of the same depth is at or above it, the imported
    pystreed tree equals it, and a proven K_max = 1 search certifies the pystreed tree
    with gap 0."""
    pystreed = pytest.importorskip("pystreed")
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(60, 3)).astype(float)
    y = ((X[:, 0] + rng.integers(0, 4, 60) > 5) ^ (X[:, 2] > 4)).astype(np.int64)
    D, cost = 2, 1.0
    Xb, spec = _binarise(X)
    m = pystreed.STreeDClassifier(
        optimization_task="cost-complex-accuracy",
        max_depth=D,
        cost_complexity=cost / len(y),
        time_limit=60,
    ).fit(Xb, y)
    optimum = float((m.predict(Xb) != y).sum() + cost * (m.get_n_leaves() - 1))
    sk = DecisionTreeClassifier(max_depth=D, random_state=0).fit(X, y)
    assert tree_objective(sk, X, y, cost / 2, cost / 2)["objective"] >= optimum - 1e-9
    imported = as_shape_tree(m, binarisation=spec)
    assert tree_objective(imported, X, y, cost / 2, cost / 2)["objective"] == pytest.approx(optimum)
    search = LiteratiClassifier(
        max_depth=D,
        max_breakpoints=1,
        split_penalty=cost / 2,
        breakpoint_penalty=cost / 2,
        candidate_leaves=None,
        time_limit=30,
    ).fit(X, y)
    cert = certify(imported, X, y, search, name="pystreed's tree")
    assert cert.in_space and cert.proven_optimal
    assert cert.gap == pytest.approx(0.0, abs=1e-9)
    cert_sk = certify(sk, X, y, search)
    assert cert_sk.in_space and cert_sk.gap >= -1e-9


# ---------------------------------------------------------------------------------------
# the candidate space
# ---------------------------------------------------------------------------------------


def test_threshold_maps_to_the_partition_and_its_candidate():
    x = np.arange(12.0)
    X = x[:, None]
    y = np.array([0] * 4 + [1] * 4 + [0] * 4)
    tree = _threshold_tree((0, 3.2, None, None), 1)
    (s,) = check_splits(tree, X, y, max_depth=1, max_breakpoints=1, candidate_leaves=None)
    assert s.in_space and s.gaps == ((3.0, 4.0),) and s.candidates == (3.5,)
    assert (s.rows, s.rows_left) == (12, 4)


def test_thresholds_outside_the_candidate_space_are_reported():
    x = np.arange(12.0)
    X = x[:, None]
    y = np.array([0] * 4 + [1] * 4 + [0] * 4)
    # B_0 = 2: one candidate per feature, the best gini split of the root's rows
    (only,) = [
        c
        for s in check_splits(
            _threshold_tree((0, 3.5, None, None), 1),
            X,
            y,
            max_depth=1,
            max_breakpoints=1,
            candidate_leaves=2,
        )
        for c in s.candidates
    ] or [None]
    assert only in (3.5, 7.5)
    other = 1.5  # between 1 and 2: not the one candidate
    (s,) = check_splits(
        _threshold_tree((0, other, None, None), 1),
        X,
        y,
        max_depth=1,
        max_breakpoints=1,
        candidate_leaves=2,
    )
    assert not s.in_space and s.gaps == ((1.0, 2.0),) and s.candidates == ()
    assert "no candidate between 1 and 2" in s.reason
    # a split that separates nothing, and one below the search's depth
    (s,) = check_splits(
        _threshold_tree((0, 20.0, None, None), 1),
        X,
        y,
        max_depth=1,
        max_breakpoints=1,
        candidate_leaves=None,
    )
    assert not s.in_space and "same way" in s.reason
    checks = check_splits(
        _threshold_tree((0, 3.5, (0, 1.5, None, None), None), 1),
        X,
        y,
        max_depth=1,
        max_breakpoints=1,
        candidate_leaves=None,
    )
    assert [c.in_space for c in checks] == [True, False]
    assert "deeper" in checks[1].reason


@pytest.mark.slow
def test_certificate_outside_the_space_says_the_bound_is_relative():
    x = np.arange(12.0)
    X = x[:, None]
    y = np.array([0] * 4 + [1] * 4 + [0] * 4)
    search = LiteratiClassifier(
        max_depth=1,
        max_breakpoints=1,
        split_penalty=0.5,
        breakpoint_penalty=0.5,
        candidate_leaves=2,
        time_limit=10,
    ).fit(X, y)
    outside = _threshold_tree((0, 1.5, None, None), 1)
    cert = certify(outside, X, y, search, name="A hand-made tree")
    assert not cert.in_space
    assert "outside that space" in cert.sentence()
    assert any("relative to that space" in n for n in cert.notes)
    table = dict(zip(*cert.table().to_dict("list").values(), strict=True))
    assert table["bound covers this tree"] == "no"
    assert "proven gap: at most this above optimal" not in table
    assert table["objective - bound (no proof: outside the space)"] == f"{cert.gap:.4g}"
    assert "its split lies outside that space" in cert.sentence()
    # with every midpoint a candidate the same tree is covered
    cert_all = certify_tree(
        outside,
        X,
        y,
        split_penalty=0.5,
        breakpoint_penalty=0.5,
        candidate_leaves="all",
        time_limit=10,
    )
    assert cert_all.in_space and cert_all.all_candidates and cert_all.gap >= 0
    # the sandwich's K_max = 1, D = 1 optimum is 4.0 (docs/spec.md): 4 errors + 1
    assert cert_all.lower_bound == pytest.approx(4.0)
    assert cert_all.objective == pytest.approx(4 + 1)


@pytest.mark.slow
def test_missing_values_splits_map_to_the_encoded_columns():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 6, size=(30, 2)).astype(float)
    y = ((X[:, 0] > 2) ^ (rng.random(30) < 0.1)).astype(np.int64)
    X[rng.random((30, 2)) < 0.2] = np.nan
    search = LiteratiClassifier(
        max_depth=2,
        max_breakpoints=1,
        split_penalty=0.5,
        breakpoint_penalty=0.5,
        candidate_leaves=None,
        time_limit=30,
    ).fit(X, y)
    for r in range(3):
        sk = DecisionTreeClassifier(max_depth=2, random_state=r).fit(X, y)
        cert = certify(sk, X, y, search)
        assert all(s.in_space for s in cert.splits if 0 < s.rows_left < s.rows)
        assert cert.lower_bound <= cert.objective + 1e-9


def test_a_threshold_split_with_missing_values_is_one_breakpoint_on_its_column():
    """With K_max = 2 both columns of a feature with NaN (missing lowest, missing highest)
    match a threshold split; the one where it is a single breakpoint, as the tree is
    charged, is the one reported (the other needs two)."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 1))
    y = (X[:, 0] > 0.2).astype(np.int64)
    X[rng.random(60) < 0.25, 0] = np.nan
    y[np.isnan(X[:, 0])] = 1  # missing rows with the high side
    sk = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y)
    for missing_left in (False, True):
        tree = as_shape_tree(sk)
        tree.missing_go_to_left[0] = missing_left
        (split,) = check_splits(tree, X, y, max_depth=1, max_breakpoints=2, candidate_leaves=None)
        assert split.in_space
        assert len(split.gaps) == 1 and len(split.candidates) == 1


def test_a_split_needing_more_breakpoints_than_it_is_charged_is_outside_the_space():
    """A category-set split {1} of codes 0, 1, 2 is charged one breakpoint (its
    threshold), but its partition needs two in Literati's terms: the bound does not cover
    it, even with K_max = 2 and every midpoint a candidate."""
    X = np.repeat([0.0, 1.0, 2.0], 10)[:, None]
    y = (X[:, 0] == 1).astype(np.int64)
    m = 3
    ones = np.ones(m, dtype=np.int64)
    value = np.array([[[0.5, 0.5]], [[0.0, 1.0]], [[1.0, 0.0]]])
    tree = TreeArrays(
        np.array([1, TREE_LEAF, TREE_LEAF]),
        np.array([2, TREE_LEAF, TREE_LEAF]),
        np.array([0, -2, -2]),
        np.array([0.5, -2.0, -2.0]),
        np.zeros(m),
        ones,
        ones.astype(float),
        value,
        task="classification",
        n_features=1,
        classes_=np.arange(2),
        cat_offsets=np.array([0, 1, 1, 1]),
        cat_values=np.array([1]),
    )
    (split,) = check_splits(tree, X, y, max_depth=1, max_breakpoints=2, candidate_leaves=None)
    assert not split.in_space and len(split.gaps) == 2
    assert "more than the 1 its objective counts" in split.reason
    cert = certify_bounds(
        tree,
        X,
        y,
        lower_bound=0.0,
        upper_bound=0.0,
        proven_optimal=True,
        max_depth=1,
        max_breakpoints=2,
        split_penalty=0.5,
        breakpoint_penalty=0.5,
        candidate_leaves=None,
    )
    assert not cert.in_space


def test_a_huge_candidate_count_is_the_number_of_rows_as_in_the_search():
    """B_d = 10**30 (a link's 'bd' can say so): the estimator caps it at the rows; the
    check does the same instead of overflowing the kernel's int64."""
    X, y = load_iris(return_X_y=True)
    sk = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    space = {"max_depth": 2, "max_breakpoints": 2}
    huge = check_splits(sk, X, y, candidate_leaves=(10**30, 10**30), **space)
    rows = check_splits(sk, X, y, candidate_leaves=(150, 150), **space)
    assert huge == rows and all(s.in_space for s in huge)


def test_bad_input_messages():
    X, y = _small_data(0)
    with pytest.raises(ValueError, match="not fitted"):
        as_shape_tree(DecisionTreeClassifier())
    with pytest.raises(TypeError, match="Certify a TreeArrays"):
        as_shape_tree(object())
    with pytest.raises(ValueError, match="has not run"):
        certify(_threshold_tree(None, 2), X, y, LiteratiClassifier())
    assert all_thresholds_feasible(100, 10) and not all_thresholds_feasible(10_000, 30)


# ---------------------------------------------------------------------------------------
# the page's "Certify a tree" section (AppTest)
# ---------------------------------------------------------------------------------------

PAGE = "pages/optimal_shape_trees.py"


def _open_and_run(app, dataset="iris", depth=2, **widgets):
    if dataset != app.selectbox(key="ds").value:
        app.selectbox(key="ds").set_value(dataset).run()
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    app.slider(key="lit_depth").set_value(depth)
    app.number_input(key="lit_time").set_value(10.0)
    for key, value in widgets.items():
        app.session_state[key] = value
    app.button(key="lit_run").click().run()
    assert app.session_state["lit_job"].join(120), "the search job did not finish"
    app.run()
    assert not app.exception, app.exception
    return app.session_state["lit_job_meta"], app.session_state["_lit_results"][1]["models"]


def _certificate_values(app):
    for frame in app.dataframe:
        value = frame.value
        if list(value.columns) == ["quantity", "value"]:
            return dict(zip(value["quantity"], value["value"], strict=True))
    raise AssertionError("no certificate table on the page")


def _view_key(app, name):
    return f"lit_{name}{app.session_state['lit_job_meta']['run']}_view"


@pytest.mark.slow
def test_page_certifies_a_cart_tree_against_the_search(app):
    """The section's numbers are the tree refitted here (scikit-learn, same depth, seed and
    training rows) counted directly, and the search's bounds; switching the tree or the
    bound's search redraws them."""
    meta, models = _open_and_run(app)
    assert any(h.value == "Certify a tree" for h in app.subheader)
    X, y = meta["X"][meta["tr"]], meta["y"][meta["tr"]]
    lam, alpha = meta["lam"], meta["alpha"]
    sk = DecisionTreeClassifier(max_depth=2, random_state=meta["seed"]).fit(X, y)
    expected, errors, n_splits = _direct_objective(sk, X, y, lam, alpha)
    main = models["main"]
    shown = _certificate_values(app)
    assert shown["training errors (majority per leaf)"] == str(errors)
    assert shown["objective"] == f"{expected:.4g}"
    assert shown["lower bound (proven)"] == f"{main.lower_bound_:.4g}"
    assert shown["upper bound (search's incumbent)"] == f"{main.upper_bound_:.4g}"
    gap = expected - main.lower_bound_
    assert shown["proven gap: at most this above optimal"] == f"{gap:.4g}" and gap >= -1e-9
    assert shown["search proved its optimum"] == "yes"
    assert shown["splits with an equivalent candidate"] == f"{n_splits} of {n_splits}"
    sentence = " ".join(s.value for s in app.success)
    assert "scikit-learn's depth-2 CART tree makes" in sentence
    assert f"{expected:.4g}" in sentence
    # the K_max = 1 search's bound: at least the K_max = 2 one (a smaller space)
    app.radio(key=_view_key(app, "certify_bound")).set_value("k1").run()
    assert not app.exception, app.exception
    k1 = _certificate_values(app)
    assert k1["lower bound (proven)"] == f"{models['k1'].lower_bound_:.4g}"
    assert models["k1"].lower_bound_ >= main.lower_bound_ - 1e-9
    # the greedy shape tree lies in the search's space by construction
    app.radio(key=_view_key(app, "certify_source")).set_value("greedy").run()
    assert not app.exception, app.exception
    greedy = _certificate_values(app)
    assert greedy["bound covers this tree"] == "yes"
    assert float(greedy["objective"]) >= float(greedy["lower bound (proven)"]) - 1e-3
    # TreeLab's CART, refitted here with the run's depth and seed
    from engine.cart import CARTClassifier

    app.radio(key=_view_key(app, "certify_source")).set_value("cart").run()
    assert not app.exception, app.exception
    cart = CARTClassifier(max_depth=2, random_state=meta["seed"]).fit(X, y)
    want = tree_objective(cart, X, y, lam, alpha)
    shown = _certificate_values(app)
    assert shown["objective"] == f"{want['objective']:.4g}"
    assert shown["training errors (majority per leaf)"] == str(want["errors"])


@pytest.mark.slow
def test_page_says_when_a_tree_is_outside_the_candidate_space(app):
    """With the root's candidates (B_0 = 2) CART's second-level split is no candidate:
    the page says the bound is relative to the space and offers every threshold, whose
    search covers the tree."""
    meta, _ = _open_and_run(app, lit_scope="the root's (counting)", lit_bd="2", lit_k1=False)
    assert meta["scope"] == "root"
    shown = _certificate_values(app)
    assert shown["bound covers this tree"] == "no"
    assert "proven gap: at most this above optimal" not in shown
    assert any("outside that space" in w.value for w in app.warning)
    splits = next(f.value for f in app.dataframe if "in the search's space" in f.value.columns)
    assert any(v.startswith("no: no candidate between") for v in splits["in the search's space"])
    # the every-threshold search runs as its own job (the page only draws its result)
    assert "lit_cert_job" not in app.session_state
    app.button(key="lit_cert_run").click().run()
    assert not app.exception, app.exception
    job = app.session_state["lit_cert_job"]
    assert job.fn.__name__ == "certify_all_thresholds_steps"
    assert job.join(120), "the certify job did not finish"
    app.run()
    assert not app.exception, app.exception
    assert app.session_state["lit_cert_job"] is job  # drawn from that job, not run again
    text = " ".join(m.value for m in app.markdown)
    assert "With every threshold as a candidate:" in text
    X, y = meta["X"][meta["tr"]], meta["y"][meta["tr"]]
    sk = DecisionTreeClassifier(max_depth=2, random_state=meta["seed"]).fit(X, y)
    wide = certify_tree(
        sk,
        X,
        y,
        split_penalty=meta["lam"],
        breakpoint_penalty=meta["alpha"],
        max_depth=2,
        max_breakpoints=meta["kmax"],
        candidate_leaves="all",
        time_limit=10,
    )
    assert wide.in_space and wide.proven_optimal
    assert f"{wide.lower_bound:.4g} (proven)" in text
    # pressed again: the new job's certificate replaces the last one when it ends
    stored = app.session_state["_lit_certificates"]
    (first_key,) = [k for k in stored if k[-1] == "all"]
    first_entry = stored[first_key]
    app.button(key="lit_cert_run").click().run()
    again = app.session_state["lit_cert_job"]
    assert again is not job
    # the last certificate is gone at once; a job this small may already have ended
    # within that same run, and then its own certificate stands in its place
    pending = app.session_state["_lit_certificates"].get(first_key)
    assert pending is None or (pending is not first_entry and pending[2] is again.result)
    assert again.join(120), "the second certify job did not finish"
    app.run()
    assert not app.exception, app.exception
    entry = app.session_state["_lit_certificates"][first_key]
    assert entry is not first_entry and entry[2] is again.result


@pytest.mark.slow
def test_page_certifies_a_tree_another_page_offered(app):
    """A conditional inference tree the CIT page remembered for this dataset (fitted on
    every row) is offered and certified on the run's training rows, leaves relabelled by
    their majority there."""
    from engine.cit import ConditionalInferenceTreeClassifier

    meta, models = _open_and_run(app, lit_k1=False)
    tree = ConditionalInferenceTreeClassifier(max_depth=2, random_state=0).fit(meta["X"], meta["y"])
    label = "CIT, Iris, 3 leaves"
    app.session_state["fitted_models"] = {
        label: {
            "model": tree,
            "digest": meta["digest"],
            "source": "Conditional inference (CIT / CIF)",
            "meta": {},
        }
    }
    app.run()
    radio = app.radio(key=_view_key(app, "certify_source"))
    assert any(label in str(o) for o in radio.options)
    radio.set_value(f"other::{label}").run()
    assert not app.exception, app.exception
    X, y = meta["X"][meta["tr"]], meta["y"][meta["tr"]]
    want = tree_objective(tree, X, y, meta["lam"], meta["alpha"])
    shown = _certificate_values(app)
    assert shown["objective"] == f"{want['objective']:.4g}"
    assert shown["lower bound (proven)"] == f"{models['main'].lower_bound_:.4g}"
    sentence = " ".join(s.value for s in [*app.success, *app.warning])
    errors = f"{want['errors']} error{'' if want['errors'] == 1 else 's'}"
    assert f"{label} makes {errors}" in sentence
    captions = " ".join(c.value for c in app.caption)
    assert "fitted on the Conditional inference (CIT / CIF) page" in captions
    assert "fitted on the run's training rows" not in captions  # it was not


# ---------------------------------------------------------------------------------------
# the search job fits and checks the baselines (issue 20: the page only draws)
# ---------------------------------------------------------------------------------------


@pytest.mark.slow  # three fits and two searches on wine
def test_the_jobs_baseline_checks_give_the_certificates_of_a_fresh_fit():
    """fit_baselines (run in the search job) fits each baseline and checks it once; the
    certificate made later from that check and a search's bounds alone equals certifying
    a tree refitted from scratch on the same rows with certify_bounds (and with a direct
    count of scikit-learn's tree)."""
    from sklearn.datasets import load_wine

    from engine.cart import CARTClassifier
    from engine.literati.estimator import GreedyShapeTreeClassifier
    from engine.literati.service import BASELINE_STEPS, certificate_of_check, fit_baselines

    X, y = load_wine(return_X_y=True)
    lam = alpha = 0.01 * len(y)
    settings = {
        "depth": 2,
        "kmax": 2,
        "lam": lam,
        "alpha": alpha,
        "leaves": (8, 4),
        "scope": "state",
        "seed": 0,
        "bounds": ["main", "k1"],
    }
    steps = fit_baselines(X, y, settings)
    keys = []
    while True:
        try:
            keys.append(next(steps))
        except StopIteration as stop:
            fitted = stop.value
            break
    assert keys == list(BASELINE_STEPS) and not fitted["errors"]
    common = dict(max_depth=2, split_penalty=lam, breakpoint_penalty=alpha)
    models = {
        "main": LiteratiClassifier(max_breakpoints=2, time_limit=20, **common).fit(X, y),
        "k1": LiteratiClassifier(max_breakpoints=1, time_limit=20, **common).fit(X, y),
    }
    fresh = {
        "sklearn": DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y),
        "cart": CARTClassifier(max_depth=2, random_state=0).fit(X, y),
        "greedy": GreedyShapeTreeClassifier(
            max_breakpoints=2, candidate_leaves=(8, 4), random_state=0, **common
        ).fit(X, y),
    }
    for key, model in fresh.items():
        for bound, search in models.items():
            got = certificate_of_check(fitted["checks"][key][bound], models, bound)
            want = certify_bounds(
                model,
                X,
                y,
                lower_bound=search.lower_bound_,
                upper_bound=search.upper_bound_,
                proven_optimal=search.proven_optimal_,
                max_depth=2,
                max_breakpoints=2 if bound == "main" else 1,
                split_penalty=lam,
                breakpoint_penalty=alpha,
                candidate_leaves=(8, 4),
                name=fitted["names"][key],
            )
            assert got == want, (key, bound)
    expected, _, _ = _direct_objective(fresh["sklearn"], X, y, lam, alpha)
    assert certificate_of_check(fitted["checks"]["sklearn"]["main"], models).objective == (
        pytest.approx(expected)
    )
    with pytest.raises(ValueError, match="No search 'k2'"):
        certificate_of_check(fitted["checks"]["sklearn"]["main"], models, "k2")


def test_a_baseline_that_fails_is_reported_not_raised(monkeypatch):
    """A baseline fit that raises leaves that baseline out with its message; the others
    are fitted and checked."""
    from engine.literati.estimator import GreedyShapeTreeClassifier
    from engine.literati.service import fit_baselines

    def broken(self, X, y):
        raise ValueError("no candidate breakpoints")

    monkeypatch.setattr(GreedyShapeTreeClassifier, "fit", broken)
    X, y = load_iris(return_X_y=True)
    settings = {"depth": 1, "kmax": 1, "lam": 1.0, "alpha": 1.0, "leaves": 4, "seed": 0}
    steps = fit_baselines(X, y, settings)
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            fitted = stop.value
            break
    assert fitted["errors"] == {"greedy": "no candidate breakpoints"}
    assert set(fitted["checks"]) == {"sklearn", "cart"}
    assert set(fitted["checks"]["sklearn"]) == {"main"}


@pytest.mark.slow
def test_a_greedy_tree_beating_a_root_scope_optimum_is_not_blamed_on_the_time_limit():
    """With the root's candidates the greedy shape tree (each state's own candidates) lies
    outside the search's space: on this data it beats the proven root-scope optimum, and
    the warning names the candidate space, not a time limit that never ran out."""
    from sklearn.datasets import make_classification

    from engine.literati import LiteratiClassifier
    from engine.literati.service import fit_baselines, search_results

    X, y = make_classification(
        300, 6, n_informative=4, n_classes=3, n_clusters_per_class=1, random_state=1
    )
    tr, te = np.arange(300), np.arange(250, 300)
    settings = {"depth": 2, "kmax": 2, "lam": 1.5, "alpha": 1.5, "leaves": (8, 4)}
    settings |= {"seed": 0, "scope": "root"}
    main = LiteratiClassifier(
        max_depth=2,
        max_breakpoints=2,
        split_penalty=1.5,
        breakpoint_penalty=1.5,
        candidate_leaves=(8, 4),
        candidate_scope="root",
        time_limit=60,
    ).fit(X, y)
    assert main.proven_optimal_
    steps = fit_baselines(X, y, settings)
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            base = stop.value
            break
    greedy = base["models"]["greedy"]
    assert greedy.objective_ < main.objective_ - 1e-9  # the case itself
    meta = {"X": X, "y": y, "tr": tr, "te": te, "lam": 1.5, "alpha": 1.5, "depth": 2}
    meta |= {"kmax": 2, "scope": "root"}
    warnings = search_results({"main": main}, meta, "done", base)["warnings"]
    beats = [w for w in warnings if "greedy shape tree" in w and "beats" in w]
    assert len(beats) == 1
    assert "time limit" not in beats[0] and "root's candidates" in beats[0]


def test_the_certificate_sentence_counts_one_error_in_the_singular():
    """A tree with one training error reads "makes 1 error", not "1 errors"."""
    from sklearn.tree import DecisionTreeClassifier

    from engine.literati import LiteratiClassifier
    from engine.literati.certify import certify

    X = np.arange(10, dtype=np.float64).reshape(-1, 1)
    y = np.array([0, 0, 0, 1, 0, 1, 1, 1, 1, 1])  # one 1 among the 0s: no stump avoids it
    search = LiteratiClassifier(
        max_depth=1, max_breakpoints=1, split_penalty=0.5, breakpoint_penalty=0.5
    ).fit(X, y)
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y)
    assert int(np.sum(stump.predict(X) != y)) == 1
    sentence = certify(stump, X, y, search, name="The stump").sentence()
    assert "The stump makes 1 error (" in sentence


# ---------------------------------------------------------------------------------------
# "certify against every threshold" as a job (issue 15 / 18: the page only draws)
# ---------------------------------------------------------------------------------------


def _iris_settings(seed=0):
    X, y = load_iris(return_X_y=True)
    lam = alpha = 0.01 * len(y)
    settings = {"depth": 2, "kmax": 2, "lam": lam, "alpha": alpha, "seed": seed}
    return X, y, settings


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["threads", "dask"])
def test_certify_job_returns_the_direct_certificate_under_both_runners(runner, request):
    """The job (either runner) returns the certificate certify_tree computes directly for
    the same tree (scikit-learn's, refitted with the run's depth and seed) against a
    B_d = all search; its snapshots carry the certificate against the bound so far."""
    from engine.jobs import Job
    from engine.literati.service import certify_all_thresholds_steps

    if runner == "dask":
        request.getfixturevalue("dask_client")
    X, y, settings = _iris_settings(seed=3)
    job = Job(
        certify_all_thresholds_steps, "sklearn", X, y, settings, 20.0, budget=120, runner=runner
    ).start()
    assert job.join(180), "the certify job did not finish"
    snap = job.snapshot()
    assert snap.status == "done", snap.error
    got = snap.result["certificate"]
    sk = DecisionTreeClassifier(max_depth=2, random_state=3).fit(X, y)
    want = certify_tree(
        sk,
        X,
        y,
        split_penalty=settings["lam"],
        breakpoint_penalty=settings["alpha"],
        max_depth=2,
        max_breakpoints=2,
        candidate_leaves="all",
        time_limit=20,
    )
    assert want.proven_optimal and got.proven_optimal and snap.result["proven"]
    assert got.in_space and got.all_candidates
    assert got.objective == pytest.approx(want.objective)
    assert got.lower_bound == pytest.approx(want.lower_bound)
    assert got.gap == pytest.approx(want.objective - want.lower_bound)
    assert [s.in_space for s in got.splits] == [s.in_space for s in want.splits]
    phases = [item.get("phase") for _, item in snap.history]
    assert phases[0] == "fitting" and "search" in phases
    for _, item in snap.history:
        if item.get("phase") == "search":
            assert item["certificate"].lower_bound == item["lb"] <= want.lower_bound + 1e-9


@pytest.mark.slow
def test_stopping_the_certify_job_keeps_a_valid_certificate():
    """Stop during the search ends the job within a step and keeps the certificate
    against the bound proven by then: no higher than the proven optimum, not proven."""
    import time

    from sklearn.datasets import load_wine

    from engine.jobs import Job
    from engine.literati.service import certify_all_thresholds_steps

    X, y = load_wine(return_X_y=True)
    settings = {"depth": 3, "kmax": 2, "lam": 1.0, "alpha": 1.0, "seed": 0}
    job = Job(
        certify_all_thresholds_steps, "sklearn", X, y, settings, 60.0, budget=120, runner="threads"
    ).start()
    t0 = time.monotonic()
    while (job.snapshot().latest or {}).get("phase") != "search" and not job.finished:
        assert time.monotonic() - t0 < 120, "the search did not start"
        time.sleep(0.05)
    assert not job.finished, "the search finished before Stop: pick a harder case"
    t_stop = time.monotonic()
    job.cancel()
    assert job.join(10)
    assert time.monotonic() - t_stop < 5  # one step of 0.1 s of AO* work, under load
    snap = job.snapshot()
    assert snap.status == "cancelled"
    cert = snap.result["certificate"]
    assert cert.lower_bound == snap.result["lb"] and cert.upper_bound == snap.result["ub"]
    assert not cert.proven_optimal
    assert cert.lower_bound <= cert.upper_bound + 1e-9


def test_certify_job_refuses_too_many_rows_with_a_message():
    """Over the every-threshold size the job's first step raises a ValueError naming the
    rows and features (the page shows it as a sentence)."""
    from engine.literati.service import certify_all_thresholds_steps

    X = np.zeros((5_000, 5))
    y = np.zeros(5_000, dtype=np.int64)
    steps = certify_all_thresholds_steps(None, "sklearn", X, y, _iris_settings()[2], 1.0)
    with pytest.raises(ValueError, match="5,000 training rows x 5 features are too many"):
        next(steps)
