"""Step-through growth (engine/teaching/growth.py, pages/learn_growth.py): the CART steps
replay the fitted CARTClassifier / CARTRegressor exactly and their best decreases equal a
brute force over every midpoint; the conditional inference steps are the fitted tree's;
the Partition steps are grow_steps' sequence; the page steps, goes back, plays, pauses and
switches method."""

import numpy as np
import pytest

from engine.cart import CARTClassifier, CARTRegressor
from engine.partition.growth import GrowParams, grow_steps
from engine.teaching import growth
from engine.teaching.datasets import bundled


def _data(name, max_rows=growth.MAX_ROWS):
    d = bundled(name)
    return growth.prepare(
        d.X,
        d.y,
        task=d.task,
        feature_names=d.feature_names,
        n_classes=len(d.class_names or ()),
        max_rows=max_rows,
    )


def _brute_force_decrease(x, y, classification):
    """Largest impurity decrease over every midpoint of ``x`` (plain Python loops)."""
    values = sorted(set(x.tolist()))
    best = -np.inf

    def impurity(labels):
        if classification:
            _, counts = np.unique(labels, return_counts=True)
            return 1.0 - sum((c / len(labels)) ** 2 for c in counts)
        return float(np.var(labels))

    parent = impurity(y)
    for a, b in zip(values[:-1], values[1:], strict=True):
        left = x <= (a + b) / 2
        wl = left.mean()
        best = max(best, parent - wl * impurity(y[left]) - (1 - wl) * impurity(y[~left]))
    return best


@pytest.mark.parametrize(
    ("name", "depth"), [("iris", 3), ("iris", 5), ("wine", 4), ("diabetes", 4), ("bimodal", 3)]
)
def test_cart_steps_replay_the_fitted_tree(name, depth):
    """Features, thresholds and children of the replayed tree equal CART's with the same
    max_depth, node by node; one step per split, in pre-order; each step's tree has the
    splits made so far (1 + 2k nodes after k splits)."""
    data = _data(name)
    grown = growth.cart_steps(data, max_depth=depth)
    cls = CARTClassifier if data.task == "classification" else CARTRegressor
    fitted = cls(max_depth=depth, random_state=0).fit(data.X, data.y).tree_
    assert np.array_equal(grown.final.feature, fitted.feature)
    assert np.array_equal(grown.final.threshold, fitted.threshold)
    assert np.array_equal(grown.final.children_left, fitted.children_left)
    assert np.array_equal(grown.final.children_right, fitted.children_right)
    splits = [s for s in grown.steps if s.phase == "split"]
    assert [s.node for s in splits] == list(np.flatnonzero(fitted.children_left >= 0))
    for k, s in enumerate(splits, start=1):
        assert s.feature == fitted.feature[s.node] and s.threshold == fitted.threshold[s.node]
        assert s.tree.node_count == 1 + 2 * k
        assert s.tree.feature[s.tree_node] == s.feature


@pytest.mark.parametrize("name", ["iris", "diabetes"])
def test_cart_best_decrease_equals_a_brute_force_at_every_step(name):
    data = _data(name)
    classification = data.task == "classification"
    grown = growth.cart_steps(data, max_depth=3)
    for s in grown.steps:
        rows = grown.final.apply(data.X)  # leaves; the node's rows via its path
        path_rows = np.ones(data.X.shape[0], dtype=bool)
        tree = grown.final
        v, node = 0, s.node
        # walk from the root to the node, keeping the rows on the way
        while v != node:
            f, t = tree.feature[v], tree.threshold[v]
            left = data.X[:, f] <= t
            descendants = set()
            stack = [tree.children_left[v]]
            while stack:
                u = stack.pop()
                descendants.add(u)
                if tree.children_left[u] >= 0:
                    stack += [tree.children_left[u], tree.children_right[u]]
            go_left = node in descendants
            path_rows &= left if go_left else ~left
            v = tree.children_left[v] if go_left else tree.children_right[v]
        assert path_rows.sum() == s.n_samples
        del rows
        best_all = max(
            _brute_force_decrease(data.X[path_rows, f], data.y[path_rows], classification)
            for f in range(data.X.shape[1])
        )
        chosen = max(sc.best_decrease for sc in s.details["scans"] if sc.best >= 0)
        assert s.details["decrease"] == pytest.approx(best_all, rel=1e-9, abs=1e-12)
        assert chosen == pytest.approx(best_all, rel=1e-9, abs=1e-12)
        for sc in s.details["scans"]:
            if sc.best >= 0:
                brute = _brute_force_decrease(
                    data.X[path_rows, sc.feature], data.y[path_rows], classification
                )
                assert sc.best_decrease == pytest.approx(brute, rel=1e-9, abs=1e-12)


def _penguins():
    from engine.data import load_bundled, make_dataset

    df, _, entry = load_bundled("penguins")
    return make_dataset(df, entry["target"], missing="drop")


def _penguin_problems():
    """(X, y, task, is_categorical, n_classes) on penguins: species (3 classes), sex from
    the rest (2 classes, island categorical), body mass from the rest (regression)."""
    ds = _penguins()
    sex, mass = ds.feature_names.index("sex"), ds.feature_names.index("body_mass_g")
    X2, c2 = np.delete(ds.X, sex, axis=1), np.delete(ds.is_categorical, sex)
    X3, c3 = np.delete(ds.X, mass, axis=1), np.delete(ds.is_categorical, mass)
    return {
        "species": (ds.X, ds.y, "classification", ds.is_categorical, 3),
        "sex": (X2, ds.X[:, sex].astype(np.int64), "classification", c2, 2),
        "mass": (X3, ds.X[:, mass], "regression", c3, 0),
    }


def _same_tree(grown, fitted):
    """Node by node: feature, threshold (NaN at categorical splits), children, left
    category sets."""
    assert np.array_equal(grown.feature, fitted.feature)
    assert np.array_equal(grown.threshold, fitted.threshold, equal_nan=True)
    assert np.array_equal(grown.children_left, fitted.children_left)
    assert np.array_equal(grown.children_right, fitted.children_right)
    for v in range(fitted.node_count):
        mine = grown.cat_values[grown.cat_offsets[v] : grown.cat_offsets[v + 1]]
        theirs = fitted.cat_values[fitted.cat_offsets[v] : fitted.cat_offsets[v + 1]]
        assert mine.tolist() == theirs.tolist(), v


@pytest.mark.parametrize("problem", ["species", "sex", "mass"])
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("depth", [2, 4])
def test_cart_steps_replay_categorical_splits_and_entropy(problem, criterion, depth):
    """Categorical features split into two sets of categories, Gini or entropy: the replay
    equals CARTClassifier / CARTRegressor node by node, category sets included."""
    X, y, task, cat, k = _penguin_problems()[problem]
    if task == "regression" and criterion == "entropy":
        pytest.skip("regression has one criterion, squared error")
    names = [f"f{j}" for j in range(X.shape[1])]
    data = growth.prepare(
        X,
        y,
        task=task,
        feature_names=names,
        is_categorical=cat,
        n_classes=k,
        keep_categorical=True,
    )
    assert data.X.shape[1] == X.shape[1] and data.is_categorical.tolist() == cat.tolist()
    grown = growth.cart_steps(data, max_depth=depth, criterion=criterion)
    if task == "classification":
        est = CARTClassifier(max_depth=depth, criterion=criterion, categorical_features=cat)
    else:
        est = CARTRegressor(max_depth=depth, categorical_features=cat)
    fitted = est.set_params(random_state=0).fit(data.X, data.y).tree_
    _same_tree(grown.final, fitted)
    cat_splits = [s for s in grown.steps if s.phase == "split" and cat[s.feature]]
    # species and mass split on island or sex; sex (binary) scans island's sets only
    assert cat_splits or problem == "sex", "no categorical split: nothing tested"
    for s in cat_splits:
        scan = next(sc for sc in s.details["scans"] if sc.feature == s.feature)
        assert scan.categorical and np.isnan(s.threshold)
        left = fitted.cat_values[fitted.cat_offsets[s.node] : fitted.cat_offsets[s.node + 1]]
        assert scan.best_left_set == tuple(left.tolist())
        assert " in {" in s.reason


def _entropy(labels):
    _, counts = np.unique(labels, return_counts=True)
    p = counts / labels.size
    return float(-(p * np.log2(p)).sum())


def test_cart_entropy_decrease_and_category_sets_equal_a_brute_force_at_the_root():
    """At the root of species on penguins: every numeric feature's best entropy decrease
    is the brute force over its midpoints, and the categorical feature's best is the
    brute force over every subset of its categories (a 3-category feature: the scanned
    prefixes cover every split into two sets)."""
    from itertools import combinations

    X, y, task, cat, k = _penguin_problems()["species"]
    data = growth.prepare(
        X,
        y,
        task=task,
        feature_names=[f"f{j}" for j in range(X.shape[1])],
        is_categorical=cat,
        n_classes=k,
        keep_categorical=True,
    )
    root = growth.cart_steps(data, max_depth=1, criterion="entropy").steps[0]
    parent = _entropy(y)
    for sc in root.details["scans"]:
        x = data.X[:, sc.feature]
        if cat[sc.feature]:
            codes = np.unique(x).astype(int).tolist()
            subsets = [c for r in range(1, len(codes)) for c in combinations(codes, r)]
        else:
            values = np.unique(x)
            subsets = [(a + b) / 2 for a, b in zip(values[:-1], values[1:], strict=True)]
        best = -np.inf
        for sub in subsets:
            left = np.isin(x, sub) if cat[sc.feature] else x <= sub
            wl = left.mean()
            best = max(best, parent - wl * _entropy(y[left]) - (1 - wl) * _entropy(y[~left]))
        assert sc.best_decrease == pytest.approx(best, rel=1e-9), sc.feature


def test_cart_category_sets_hold_only_the_features_own_codes():
    """CART's stored left sets name only codes of the split feature (the kernel's mask row
    kept a code 2 from island's scan in a split on sex, a 2-category feature)."""
    X, y, task, cat, _ = _penguin_problems()["mass"]
    tree = CARTRegressor(max_depth=4, categorical_features=cat, random_state=0).fit(X, y).tree_
    n_codes = [int(X[:, j].max()) + 1 if cat[j] else 0 for j in range(X.shape[1])]
    for v in range(tree.node_count):
        left = tree.cat_values[tree.cat_offsets[v] : tree.cat_offsets[v + 1]]
        if left.size:
            assert left.max() < n_codes[tree.feature[v]], (v, left)


def test_cart_steps_refuse_an_unknown_criterion():
    with pytest.raises(ValueError, match="criterion"):
        growth.cart_steps(_data("iris"), criterion="log_loss")


def test_cart_ties_go_to_the_first_feature_as_the_builder():
    """Two copies of a column: every split is on the first copy, as CARTClassifier."""
    d = bundled("iris")
    X = np.c_[d.X[:, 3], d.X[:, 3], d.X[:, 2]]
    data = growth.prepare(X, d.y, task="classification", feature_names=["a", "b", "c"], n_classes=3)
    grown = growth.cart_steps(data, max_depth=3)
    fitted = CARTClassifier(max_depth=3).fit(data.X, data.y).tree_
    assert np.array_equal(grown.final.feature, fitted.feature)
    assert 1 not in set(grown.final.feature.tolist())


@pytest.mark.parametrize("name", ["iris", "diabetes", "bimodal"])
def test_cit_steps_are_the_fitted_trees(name):
    data = _data(name)
    grown = growth.cit_steps(data, max_depth=3)
    est = growth.cit_estimator(data.task, max_depth=3).fit(data.X, data.y)
    tested = [v for v, r in enumerate(est.node_records_) if "p_value_method" in r]
    assert sorted({s.node for s in grown.steps}) == tested
    for s in grown.steps:
        rec = est.node_records_[s.node]
        assert list(s.details["p_adjusted"]) == list(rec["p_values_adjusted"])
        if s.phase == "split":
            assert s.feature == est.tree_.feature[s.node]
            assert s.threshold == est.tree_.threshold[s.node]
        if s.phase in ("tests", "split"):
            best = int(np.nanargmin(rec["p_values_adjusted"]))
            assert rec["features"][best] == s.feature
        if s.phase == "leaf":
            assert est.tree_.children_left[s.node] == -1
    phases = [s.phase for s in grown.steps]
    assert phases.count("split") == int((est.tree_.children_left >= 0).sum())
    if name == "bimodal":  # x says nothing about y's level: one test, a leaf
        assert phases == ["leaf"] and "No significant feature" in grown.steps[0].reason


@pytest.mark.parametrize("name", ["iris", "diabetes"])
def test_partition_steps_follow_grow_steps(name):
    """Node split at each step, its gain and the training log-loss equal grow_steps'
    sequence with the estimator's inputs; the chosen leaf's gain is at least every waiting
    leaf's."""
    data = _data(name)
    grown = growth.partition_steps(data, max_leaves=7)
    est = growth.partition_estimator(data.task, max_leaves=7).fit(data.X, data.y)
    params = GrowParams(max_leaves=7, min_volume_fraction=est._default_min_volume)
    seq = list(
        grow_steps(
            data.X,
            data.y.astype(np.float64),
            is_cat=np.zeros(data.X.shape[1], bool),
            n_cats=np.zeros(data.X.shape[1], np.int64),
            discrete_y=data.task == "classification",
            n_classes=data.n_classes,
            y_box=est.y_box_,
            params=params,
            rng=np.random.RandomState(0),
        )
    )
    assert len(grown.steps) == len(seq) - 1 == est.partition_tree_.n_leaves - 1
    nll = [s[1] for s in seq]
    final = seq[-1][2]()
    for k, s in enumerate(grown.steps):
        assert s.details["train_nll"] == (nll[k], nll[k + 1])
        assert s.details["gain"] == pytest.approx(nll[k] - nll[k + 1], abs=1e-12)
        assert s.details["gain"] == final.gain[s.node]
        assert all(s.details["gain"] >= o[1] for o in s.details["others"])
        assert s.tree.n_leaves == k + 2


def test_prepare_subsamples_and_says_so():
    rng = np.random.RandomState(1)
    X = rng.rand(5000, 3)
    data = growth.prepare(
        X,
        (X[:, 0] > 0.5).astype(int),
        task="classification",
        feature_names=["a", "b", "c"],
        n_classes=2,
        seed=3,
    )
    assert data.X.shape == (growth.MAX_ROWS, 3)
    assert any("2,000 of the 5,000 rows" in n for n in data.notes)
    again = growth.prepare(
        X,
        (X[:, 0] > 0.5).astype(int),
        task="classification",
        feature_names=["a", "b", "c"],
        n_classes=2,
        seed=3,
    )
    assert np.array_equal(data.X, again.X)
    with pytest.raises(ValueError, match="categorical"):
        growth.prepare(
            X,
            X[:, 0],
            task="regression",
            feature_names=["a", "b", "c"],
            is_categorical=[True, True, True],
        )


# ---------------------------------------------------------------------------------------
# the page
# ---------------------------------------------------------------------------------------


def _pos(at):
    return at.session_state["learn_gr_pos"]


def _tree_nodes(at):
    """Node markers of the tree figure (customdata of its node traces)."""
    import base64

    import plotly.io

    ids = set()
    traces = [
        trace
        for chart in at.get("plotly_chart")
        for trace in plotly.io.from_json(chart.proto.spec).data
    ]
    for trace in traces:
        if (getattr(trace, "meta", None) or {}).get("role") == "nodes":
            data = trace.customdata
            if isinstance(data, dict):  # plotly's typed array: {"dtype", "bdata"}
                data = np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"])
            ids.update(int(v) for v in np.asarray(data).reshape(-1))
    return len(ids)


@pytest.mark.slow
def test_page_steps_back_plays_pauses_and_switches_method(app):
    app.switch_page("pages/learn_growth.py").run()
    assert not app.exception, app.exception
    app.selectbox(key="learn_gr_source").set_value("Iris (curated: classification)").run()
    assert _pos(app) == 0
    for k in range(1, 4):
        app.button(key="learn_gr_step_btn").click().run()
        assert not app.exception, app.exception
        assert _pos(app) == k
        assert _tree_nodes(app) == 1 + 2 * k  # every CART step on Iris splits
    app.button(key="learn_gr_back_btn").click().run()
    assert _pos(app) == 2 and _tree_nodes(app) == 5
    app.button(key="learn_gr_play_btn").click().run()
    assert not app.exception, app.exception
    assert app.session_state["learn_gr_playing"]
    assert app.button(key="learn_gr_play_btn").label == "Pause"
    app.button(key="learn_gr_play_btn").click().run()
    assert not app.session_state["learn_gr_playing"]
    assert app.button(key="learn_gr_play_btn").label == "Play"
    app.button(key="learn_gr_reset_btn").click().run()
    assert _pos(app) == 0
    for method in ("Conditional inference tree", "Partition Tree"):
        app.selectbox(key="learn_gr_method").set_value(method).run()
        assert not app.exception, app.exception
        assert _pos(app) == 0
        for _ in range(3):
            app.button(key="learn_gr_step_btn").click().run()
            assert not app.exception, app.exception
        assert _pos(app) == 3
    # Partition Tree: one split per step
    assert _tree_nodes(app) == 7


@pytest.mark.slow
def test_page_grows_cart_with_entropy_on_categorical_features(app):
    """Penguins in the sidebar: CART keeps island and sex, splits them into category sets
    named by their labels, with the entropy criterion; the page's final tree is
    CARTClassifier's with the same criterion on the page's rows."""
    app.session_state["missing"] = "drop"
    app.selectbox(key="ds").set_value("penguins").run()
    app.switch_page("pages/learn_growth.py").run()
    assert not app.exception, app.exception
    app.selectbox(key="learn_gr_source").set_value("the sidebar's dataset").run()
    app.radio(key="learn_gr_criterion").set_value("entropy").run()
    assert not app.exception, app.exception
    assert not any("categorical feature(s) left out" in i.value for i in app.info)
    grown = next(iter(app.session_state["_learn_gr_growths"].values()))
    assert grown.params["criterion"] == "entropy"
    data_cat = grown.final.categories
    fitted = CARTClassifier(
        max_depth=3,
        criterion="entropy",
        categorical_features=[c is not None for c in data_cat],
        random_state=0,
    )
    # the page's rows: penguins without missing values (every row, under MAX_ROWS)
    ds = _penguins()
    tree = fitted.fit(ds.X, ds.y).tree_
    _same_tree(grown.final, tree)
    steps = [s for s in grown.steps if s.phase == "split"]
    k = next(i for i, s in enumerate(grown.steps, start=1) if s in steps and data_cat[s.feature])
    for _ in range(k):
        app.button(key="learn_gr_step_btn").click().run()
        assert not app.exception, app.exception
    step = grown.steps[k - 1]
    labels = data_cat[step.feature]
    shown = [m.value for m in app.success]
    assert any(" in {" in v and any(label in v for label in labels) for v in shown), shown
    table = next(d.value for d in app.dataframe if "best split" in d.value.columns)
    assert table.loc[table["chosen"], "best split"].iloc[0].startswith("in {")
