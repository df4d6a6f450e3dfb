"""engine.figures.tree: plotly tree view and export_text-style text.

Oracles: the tree's own arrays (node ids, depths, decision_path) and scikit-learn's
``export_text`` for the text form."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
from sklearn import datasets
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor, export_text

from engine.figures import tree_figure, tree_text
from engine.tree import TreeArrays, from_sklearn

IRIS = datasets.load_iris()
CLASS_NAMES = [str(c) for c in IRIS.target_names]


@pytest.fixture(scope="module")
def iris3():
    est = DecisionTreeClassifier(max_depth=3, random_state=0).fit(IRIS.data, IRIS.target)
    return est, from_sklearn(est, feature_names=IRIS.feature_names)


@pytest.fixture(scope="module")
def big_tree():
    X, y = datasets.load_digits(return_X_y=True)
    tree = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y))
    assert tree.node_count >= 300
    return tree, X


def node_ids(fig: go.Figure, role: str = "nodes") -> list[int]:
    ids: list[int] = []
    for trace in fig.data:
        if isinstance(trace.meta, dict) and trace.meta.get("role") == role:
            ids += [int(v) for v in trace.customdata]
    return ids


def test_one_marker_per_node_with_ids(iris3):
    _, tree = iris3
    fig = tree_figure(tree, class_names=CLASS_NAMES)
    ids = node_ids(fig)
    assert sorted(ids) == list(range(tree.node_count))
    for trace in fig.data:
        if isinstance(trace.meta, dict) and trace.meta.get("role") == "nodes":
            assert len(trace.x) == len(trace.customdata) == len(trace.hovertext)


def test_class_names_in_legend_never_codes(iris3):
    _, tree = iris3
    fig = tree_figure(tree, class_names=CLASS_NAMES)
    legend = {t.name for t in fig.data if t.showlegend is not False}
    assert {"setosa", "versicolor", "virginica"} <= legend
    assert not {"0", "1", "2"} & legend
    hover = " ".join(" ".join(t.hovertext) for t in fig.data if t.hovertext is not None)
    assert "setosa" in hover and "petal width (cm) <= 0.8" in hover


def test_layout_leaves_in_order_parents_centred(iris3):
    _, tree = iris3
    fig = tree_figure(tree)
    pos = {}
    for t in fig.data:
        if isinstance(t.meta, dict) and t.meta.get("role") == "nodes":
            for i, x, y in zip(t.customdata, t.x, t.y, strict=True):
                pos[int(i)] = (x, y)
    leaves = [v for v in range(tree.node_count) if tree.is_leaf[v]]
    assert sorted(pos[v][0] for v in leaves) == list(range(len(leaves)))
    for v in range(tree.node_count):
        assert pos[v][1] == -tree.depth[v]
        if not tree.is_leaf[v]:
            left, right = tree.children_left[v], tree.children_right[v]
            assert pos[left][0] < pos[v][0] < pos[right][0]
            assert pos[v][0] == pytest.approx((pos[left][0] + pos[right][0]) / 2)


def test_highlight_path_equals_decision_path(iris3):
    _, tree = iris3
    x = IRIS.data[70]
    fig = tree_figure(tree, class_names=CLASS_NAMES, highlight_path=tree.decision_path(x))
    assert node_ids(fig, "path") == tree.decision_path(x).tolist()
    assert any(t.name == "path of selected sample" and t.showlegend for t in fig.data)


def test_collapse_depth_hides_the_right_nodes(iris3):
    _, tree = iris3
    fig = tree_figure(tree, collapse_depth=2)
    ids = node_ids(fig)
    assert sorted(ids) == [v for v in range(tree.node_count) if tree.depth[v] <= 2]
    hidden = tree.node_count - len(ids)
    assert hidden == int(np.sum(tree.depth > 2))
    folded = [t for t in fig.data if t.name == "collapsed subtree"]
    assert len(folded) == 1
    expected = [v for v in range(tree.node_count) if tree.depth[v] == 2 and not tree.is_leaf[v]]
    assert sorted(int(v) for v in folded[0].customdata) == expected
    assert folded[0].marker.symbol == "triangle-down"
    assert "hidden below" in folded[0].hovertext[0]
    assert f"{hidden} nodes collapsed" in fig.layout.title.text


def test_collapsed_nodes_argument(iris3):
    _, tree = iris3
    node = int(tree.children_right[0])
    fig = tree_figure(tree, collapsed_nodes=[node])
    ids = set(node_ids(fig))
    below = set()
    stack = [int(tree.children_left[node]), int(tree.children_right[node])]
    while stack:
        v = stack.pop()
        below.add(v)
        if not tree.is_leaf[v]:
            stack += [int(tree.children_left[v]), int(tree.children_right[v])]
    assert ids == set(range(tree.node_count)) - below
    with pytest.raises(ValueError, match="out of range"):
        tree_figure(tree, collapsed_nodes=[999])


def test_path_stops_at_collapsed_node(iris3):
    _, tree = iris3
    x = IRIS.data[70]
    path = tree.decision_path(x)
    fig = tree_figure(tree, highlight_path=path, collapse_depth=1)
    assert node_ids(fig, "path") == path[:2].tolist()


def test_big_tree_builds_with_few_traces(big_tree):
    tree, X = big_tree
    fig = tree_figure(tree, highlight_path=tree.decision_path(X[0]))
    assert len(fig.data) < 20
    assert sorted(node_ids(fig)) == list(range(tree.node_count))
    assert not fig.layout.annotations  # no labels on a big tree: hover carries them
    assert fig.layout.height >= 1000
    fig4 = tree_figure(tree, collapse_depth=4)
    assert len(node_ids(fig4)) < tree.node_count


def test_labels_only_on_small_trees(iris3):
    _, tree = iris3
    fig = tree_figure(tree, class_names=CLASS_NAMES)
    texts = [a.text for a in fig.layout.annotations]
    assert len(texts) == tree.node_count
    assert "petal width <= 0.8" in texts  # short form without the unit
    assert "setosa" in texts
    assert not tree_figure(tree, show_labels=False).layout.annotations


def test_titles_axes_and_uirevision(iris3):
    _, tree = iris3
    fig = tree_figure(tree)
    assert fig.layout.title.text.startswith("Decision tree")
    assert tree_figure(tree, title="My tree").layout.title.text == "My tree"
    assert fig.layout.xaxis.visible is False and fig.layout.yaxis.visible is False
    assert (
        fig.layout.uirevision
        == tree_figure(tree, highlight_path=tree.decision_path(IRIS.data[0])).layout.uirevision
    )
    assert tree_figure(tree, height=333).layout.height == 333


def test_regression_tree_figure_and_node_extra():
    X, y = datasets.load_diabetes(return_X_y=True)
    tree = from_sklearn(DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y))
    fig = tree_figure(tree, node_extra={0: "p-value: 0.001"})
    leaf_traces = [t for t in fig.data if t.name == "leaf (mean)"]
    assert len(leaf_traces) == 1 and leaf_traces[0].marker.showscale
    assert sorted(node_ids(fig)) == list(range(tree.node_count))
    hover = {
        int(i): h
        for t in fig.data
        if t.hovertext is not None
        for i, h in zip(t.customdata, t.hovertext, strict=True)
    }
    assert "p-value: 0.001" in hover[0] and "mean value" in hover[1]


def test_hover_shows_tree_extras(iris3):
    _, base = iris3
    n = base.node_count
    tree = TreeArrays(
        base.children_left,
        base.children_right,
        base.feature,
        base.threshold,
        base.impurity,
        base.n_node_samples,
        base.weighted_n_node_samples,
        base.value,
        task="classification",
        n_features=4,
        classes_=base.classes_,
        p_value=np.full(n, 0.0123),
        lower_bound=np.zeros(n),
        upper_bound=np.ones(n),
    )
    fig = tree_figure(tree)
    hover = " ".join(" ".join(t.hovertext) for t in fig.data if t.hovertext is not None)
    assert "p-value: 0.0123" in hover and "bounds: [0, 1]" in hover


@pytest.mark.slow
def test_many_classes_get_distinct_colours():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = np.repeat(np.arange(12), 50)
    tree = from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y))
    fig = tree_figure(tree)
    colours = [
        t.marker.color
        for t in fig.data
        if isinstance(t.meta, dict)
        and t.meta.get("role") == "nodes"
        and t.name not in ("split node", "collapsed subtree")
    ]
    assert len(colours) == len(set(colours)) == 12


def test_tree_text_matches_sklearn_export_text(iris3):
    est, tree = iris3
    for depth in (1, 2, 10):
        ours = tree_text(tree, class_names=CLASS_NAMES, max_depth=depth)
        theirs = export_text(
            est, feature_names=IRIS.feature_names, class_names=CLASS_NAMES, max_depth=depth
        )
        assert ours == theirs
    assert "|--- petal width (cm) <= 0.80" in ours
    assert "class: setosa" in ours


def test_tree_text_regression_matches_sklearn():
    X, y = datasets.load_diabetes(return_X_y=True)
    est = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y)
    tree = from_sklearn(est)
    assert tree_text(tree, max_depth=3) == export_text(est, max_depth=3)


def test_single_leaf_tree_figure_and_text():
    X = np.zeros((4, 2))
    est = DecisionTreeClassifier().fit(X, ["a"] * 4)
    tree = from_sklearn(est)
    fig = tree_figure(tree, highlight_path=tree.decision_path(X[0]))
    assert node_ids(fig) == [0] and node_ids(fig, "path") == [0]
    assert tree_text(tree) == "|--- class: a\n"  # sklearn's export_text prints the code 0


def test_threshold_splits_on_coded_categories_show_labels():
    """A scikit-learn tree fitted on Dataset codes splits 'island <= 0.5'; with the labels in
    ``categories`` every view names the categories instead (docs/spec.md 0.3: labels, never codes)."""
    import dataclasses

    from engine.data import load_bundled, make_dataset

    df, _, entry = load_bundled("penguins")
    ds = make_dataset(df, entry["target"], missing="drop")
    est = DecisionTreeClassifier(max_depth=5, random_state=0).fit(ds.X, ds.y)
    j = ds.feature_names.index("island")
    labels = ds.categories[j]
    tree = dataclasses.replace(
        from_sklearn(est, feature_names=ds.feature_names),
        categories=[ds.categories.get(i) for i in range(ds.n_features)],
        classes_=np.array(list(ds.classes_), dtype=object),
    )
    nodes = [v for v in range(tree.node_count) if tree.feature[v] == j]
    assert nodes, "the penguins tree is expected to split on island"
    for v in nodes:
        left = tree.left_categories(v)
        codes = np.arange(len(labels))
        # the set is exactly the codes the tree routes left
        assert left.tolist() == codes[codes <= tree.threshold[v]].tolist()
        names = "{" + ", ".join(labels[c] for c in left) + "}"
        assert tree.rule(v) == f"island in {names}"
        assert tree.rule(v, branch="right") == f"island not in {names}"
        rows = np.flatnonzero(np.isin(ds.X[:, j], left))
        for r in rows[:5]:
            path = tree.decision_path(ds.X[r]).tolist()
            if v in path and path[-1] != v:
                assert path[path.index(v) + 1] == tree.children_left[v]
    text = tree_text(tree)
    assert "island in {" in text and "island <=" not in text
    fig = tree_figure(tree, show_labels=True)
    hover = " ".join(h for t in fig.data if t.hovertext is not None for h in t.hovertext)
    assert "island in {" in hover and "island <=" not in hover
    shown = " ".join(a.text for a in fig.layout.annotations)
    assert "island in {" in shown and "island <=" not in shown
    assert "Adelie" in tree.to_json() and tree.to_frame().columns.str.startswith("p(Adelie").any()
    # a numeric feature keeps its threshold
    numeric = next(
        v
        for v in range(tree.node_count)
        if tree.feature[v] >= 0 and not ds.is_categorical[tree.feature[v]]
    )
    assert tree.left_categories(numeric) is None and " <= " in tree.rule(numeric)


def _observed_vs_missing_tree():
    """A depth-2 scikit-learn tree whose root splits 'age' into observed | missing
    (threshold +inf, NaN right): the missing rows are class 1, the others class 0 but
    for a band of 'b' below its root that needs a second, ordinary split."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 1] > 1.0).astype(int)
    missing = rng.random(300) < 0.3
    X[missing, 0] = np.nan
    y[missing] = 2
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    assert est.tree_.threshold[0] == np.inf and est.tree_.missing_go_to_left[0] == 0
    return est, from_sklearn(est, feature_names=["age", "b"]), X


def test_an_observed_vs_missing_split_reads_is_missing_not_inf():
    est, tree, X = _observed_vs_missing_tree()
    assert tree.missing_split_side(0) == "right"
    assert tree.rule(0) == "age is not missing"
    assert tree.rule(0, branch="right") == "age is missing"
    # the wording is true of the routing: NaN rows go right, every observed row left
    first_step = [tree.decision_path(x)[1] for x in X]
    goes_right = np.asarray(first_step) == tree.children_right[0]
    np.testing.assert_array_equal(goes_right, np.isnan(X[:, 0]))
    # an ordinary split of the same tree keeps its threshold
    inner = [v for v in range(tree.node_count) if tree.children_left[v] >= 0 and v != 0]
    assert inner and all(tree.missing_split_side(v) is None for v in inner)
    assert all(" <= " in tree.rule(v) and "inf" not in tree.rule(v) for v in inner)
    text = tree_text(tree, class_names=["a", "b", "c"])
    assert "|--- age is not missing\n" in text and "|--- age is missing\n" in text
    assert "inf" not in text
    fig = tree_figure(tree, class_names=["a", "b", "c"], show_labels=True)
    hover = " ".join(h for t in fig.data if t.hovertext is not None for h in t.hovertext)
    assert "rule: age is not missing" in hover and "inf" not in hover
    shown = [a.text for a in fig.layout.annotations]
    assert "age is not missing" in shown and not any("inf" in s for s in shown)
    assert tree.to_frame()["rule"][0] == "age is not missing"


def test_the_mirrored_and_the_category_set_forms_of_the_missing_split():
    """NaN left with threshold -inf reads the other way round; a category set of every
    category with NaN right is the same split; an observed-only threshold with NaN
    routed left is an ordinary split."""
    import dataclasses

    _, tree, _ = _observed_vs_missing_tree()
    threshold = tree.threshold.copy()
    side = tree.missing_go_to_left.copy()
    threshold[0], side[0] = -np.inf, 1
    mirrored = dataclasses.replace(tree, threshold=threshold, missing_go_to_left=side)
    assert mirrored.missing_split_side(0) == "left"
    assert mirrored.rule(0) == "age is missing"
    assert mirrored.rule(0, branch="right") == "age is not missing"
    side = tree.missing_go_to_left.copy()
    side[0] = 1  # +inf with NaN left: every row goes left, not a missing split
    assert dataclasses.replace(tree, missing_go_to_left=side).missing_split_side(0) is None
    assert tree.missing_split_side(1 if tree.children_left[1] >= 0 else 2) is None
    # TreeLab's CART on a categorical feature: the set of every category, NaN right
    from engine.cart import CARTClassifier

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(300, 2)).astype(float)
    y = np.zeros(300, dtype=int)
    missing = rng.random(300) < 0.3
    X[missing, 0], y[missing] = np.nan, 1
    cart = CARTClassifier(max_depth=1, categorical_features=[0]).fit(X, y).tree_
    assert cart.category_set(0).tolist() == [0, 1, 2] and cart.missing_go_to_left[0] == 0
    assert cart.rule(0) == "feature_0 in {0, 1, 2}"  # without labels: not known to be all
    labelled = dataclasses.replace(cart, categories=[["red", "green", "blue"], None])
    assert labelled.rule(0) == "feature_0 is not missing"
    assert labelled.rule(0, branch="right") == "feature_0 is missing"
    fewer = dataclasses.replace(cart, categories=[["red", "green", "blue", "grey"], None])
    assert fewer.rule(0) == "feature_0 in {red, green, blue}"


def test_crowded_labels_at_one_depth_are_staggered_on_two_rows():
    """Two long rules two leaves apart on a 12-leaf tree would overlap on one line (the
    Compare page's wine tree: 'flavanoids <= 1.58' ran into 'color_intensity <= 5.815');
    the second goes one row down, a third far enough right returns to the first row."""
    import numpy as np

    from engine.figures.tree import LABEL_CHAR_WIDTH, LABEL_PLOT_WIDTH, _label_rows

    x = np.array([0.5, 2.5, 4.5, 9.0])
    y = np.full(4, -4.0)
    long = {0: "flavanoids <= 1.58", 1: "color_intensity <= 5.815", 2: "hue <= 0.9", 3: "ash"}
    assert _label_rows(long, x, y, n_terminal=12) == {0: 0, 1: 1, 2: 0, 3: 0}
    short = {0: "a <= 1", 1: "b <= 2", 2: "c <= 3", 3: "d"}
    assert set(_label_rows(short, x, y, n_terminal=12).values()) == {0}
    # the premise: at 12 leaves the two need more room than two leaves' width
    unit = LABEL_PLOT_WIDTH / 12.6
    assert 0.5 * LABEL_CHAR_WIDTH * (len(long[0]) + len(long[1])) + 8 > 2 * unit
    # the same labels where a leaf is three times as wide: nothing moves
    assert set(_label_rows(long, x, y, n_terminal=3).values()) == {0}


def test_the_wine_tree_staggers_its_bottom_split_labels():
    from sklearn.datasets import load_wine
    from sklearn.tree import DecisionTreeClassifier

    from engine import from_sklearn
    from engine.figures.tree import tree_figure

    data = load_wine()
    model = DecisionTreeClassifier(max_depth=5, random_state=0).fit(data.data, data.target)
    fig = tree_figure(from_sklearn(model), feature_names=list(data.feature_names))
    labels = {a.text: a.yshift for a in fig.layout.annotations if a.xref == "x"}
    # one of the two moved a row down
    assert labels["flavanoids <= 1.58"] != labels["color_intensity <= 5.815"], labels
    assert labels["proline <= 755"] == max(labels.values())  # the root keeps the first row
