"""Optimal shape trees page (Literati): figure builders on synthetic inputs, the page in
AppTest, and a browser test that watches the gap chart of a short search update."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine.figures.literati import (
    gap_figure,
    internal_nodes,
    node_breakpoints,
    node_rows,
    node_shape_figure,
    shape_apply,
    shape_function_figure,
    shape_goes_left,
    shape_grid_figure,
    shape_intervals,
    shape_rule,
    shape_tree_figure,
    side_text,
)
from engine.tree import TreeArrays


# -- synthetic inputs ----------------------------------------------------------------------
def make_shape_tree(categories=True) -> TreeArrays:
    """Depth-2 shape tree on (length, colour): the root sends length <= 3 or > 7 left
    (K = 2), node 1 splits colour codes {0, 1} | {2} (K = 1), node 2 has K = 3."""
    cl = [1, 3, 5, -1, -1, -1, -1]
    cr = [2, 4, 6, -1, -1, -1, -1]
    feat = [0, 1, 0, -2, -2, -2, -2]
    thr = [3.0, 1.5, 4.0, -2, -2, -2, -2]
    bpo = [0, 2, 3, 6, 6, 6, 6, 6]
    bpv = [3.0, 7.0, 1.5, 4.0, 5.0, 6.0]
    value = np.full((7, 3), 1 / 3)
    return TreeArrays(cl, cr, feat, thr, np.zeros(7), np.ones(7, dtype=np.int64), np.ones(7),
                      value, task="classification", n_features=2,
                      classes_=np.array(["a", "b", "c"]),
                      feature_names=["length (cm)", "colour"],
                      categories=[None, ["red", "green", "blue"]] if categories else None,
                      bp_offsets=bpo, bp_values=bpv)


def make_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(0, 10, n), rng.integers(0, 3, n).astype(float)])
    y = np.minimum(((X[:, 0] > 3) & (X[:, 0] <= 7)).astype(int) + (X[:, 1] == 2), 2)
    return X, y


def brute_left(x, u):
    """Left iff an even number of breakpoints lies strictly below x (SPEC section 1)."""
    return np.array([sum(b < v for b in u) % 2 == 0 for v in x])


def brute_leaf(tree: TreeArrays, row) -> int:
    node = 0
    while tree.children_left[node] != -1:
        u = node_breakpoints(tree, node)
        left = sum(b < row[tree.feature[node]] for b in u) % 2 == 0
        node = tree.children_left[node] if left else tree.children_right[node]
    return int(node)


def make_trace(n=60, seed=0, events=True):
    rng = np.random.default_rng(seed)
    t = np.concatenate([[0.0], np.sort(rng.uniform(0.001, 10, n - 1))])
    ub = np.minimum.accumulate(50 - np.floor(rng.exponential(1.0, n).cumsum() / 4))
    ub = np.maximum(ub, 20)
    lb = np.minimum(ub, np.maximum.accumulate(10 + 10 * (1 - np.exp(-t / 3))))
    df = pd.DataFrame({"time": t, "iterations": np.arange(n) * 10, "expanded": np.arange(n) * 3,
                       "solved": np.arange(n), "pruned": np.arange(n) * 2,
                       "cache_size": np.arange(n) * 4, "evictions": np.zeros(n, int),
                       "ub": ub, "lb": lb, "gap": ub - lb, "rel_gap": (ub - lb) / ub})
    if events:
        ev = np.where(np.r_[False, ub[1:] < ub[:-1]], "incumbent", "").astype(object)
        ev[-1] = "time_limit"
        df["event"] = ev
    return df


# -- routing ---------------------------------------------------------------------------------
def test_shape_goes_left_is_the_even_count_rule():
    rng = np.random.default_rng(1)
    for k in range(1, 5):
        u = np.sort(rng.choice(np.arange(0.5, 10), size=k, replace=False))
        x = np.concatenate([rng.integers(0, 11, 200).astype(float), u])  # values on breakpoints
        assert np.array_equal(shape_goes_left(x, u), brute_left(x, u))
        assert np.array_equal(shape_goes_left(x, u[::-1]), brute_left(x, u))  # order-free
    assert np.array_equal(shape_goes_left([1.0, 1.5, 2.0], [1.5]), [True, True, False])


def test_shape_apply_and_node_rows_follow_the_breakpoints():
    tree = make_shape_tree()
    X, _ = make_data(400)
    X[:5, 0] = [3.0, 7.0, 4.0, 5.0, 6.0]  # rows exactly on breakpoints go to the lower interval
    leaves = shape_apply(tree, X)
    assert leaves.tolist() == [brute_leaf(tree, r) for r in X]
    for v in range(tree.node_count):
        below = {v}
        for w in range(tree.node_count):  # the subtree of v
            p = w
            while p > 0 and p not in below:
                p = int(tree.parent[p])
            if p in below:
                below.add(w)
        assert np.array_equal(node_rows(tree, X, v), np.isin(leaves, sorted(below))), v


def test_shape_apply_of_a_plain_tree_equals_threshold_routing():
    from sklearn.tree import DecisionTreeClassifier

    from engine.tree import from_sklearn

    X, y = make_data(300, seed=2)
    tree = from_sklearn(DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y))
    assert tree.bp_offsets is None
    assert np.array_equal(shape_apply(tree, X), tree.apply(X))


def test_intervals_and_texts():
    u = [7.0, 3.0]
    assert shape_intervals(u) == [(-math.inf, 3.0, "left"), (3.0, 7.0, "right"),
                                  (7.0, math.inf, "left")]
    assert side_text(u, "left") == "\u2264 3 or > 7"
    assert side_text(u, "right") == "(3, 7]"
    assert side_text([0.5, 1.5], "left", categories=["x", "y", "z"]) == "{x, z}"
    assert side_text([0.5, 1.5], "right", categories=["x", "y", "z"]) == "{y}"
    tree = make_shape_tree()
    assert shape_rule(tree, 0) == "length (cm): left if \u2264 3 or > 7, right if (3, 7]  (K = 2)"
    assert shape_rule(tree, 1) == "colour: left if {red, green}, right if {blue}  (K = 1)"
    with pytest.raises(ValueError, match="leaf"):
        shape_rule(tree, 3)
    assert internal_nodes(tree) == [0, 1, 2]


# -- gap chart -------------------------------------------------------------------------------
def test_gap_figure_draws_bounds_gap_and_events():
    trace = make_trace()
    fig = gap_figure(trace, time_limit=10)
    lb, ub = fig.data[0], fig.data[1]
    assert lb.name.startswith("lower bound") and ub.name.startswith("upper bound")
    assert ub.fill == "tonexty"  # the gap is the area between UB and LB
    assert np.allclose(ub.y, trace["ub"]) and np.allclose(lb.y, trace["lb"])
    assert min(ub.x) > 0 and fig.layout.xaxis.type == "log"  # t = 0 is drawn at MIN_TIME
    by_name = {t.name: t for t in fig.data}
    n_inc = int((trace["event"] == "incumbent").sum())
    assert n_inc > 0 and len(by_name["new incumbent"].x) == n_inc
    assert np.allclose(by_name["new incumbent"].y, trace.loc[trace.event == "incumbent", "ub"])
    assert len(by_name["time limit reached"].x) == 1
    assert any("time limit 10 s" in (a.text or "") for a in fig.layout.annotations)
    last = trace.iloc[-1]
    assert f"UB {last.ub:.4g}" in fig.layout.title.text


def test_gap_figure_without_event_column_marks_ub_drops():
    trace = make_trace(events=False)
    fig = gap_figure(trace)
    drops = int(np.sum(np.diff(trace["ub"].to_numpy()) < 0))
    marks = [t for t in fig.data if t.name == "new incumbent"]
    assert drops > 0 and len(marks[0].x) == drops


def test_gap_figure_thins_long_traces_but_keeps_every_ub_change():
    n = 20_000
    t = np.linspace(0, 20, n)
    ub = np.repeat(np.arange(100, 50, -1, dtype=float), n // 50)
    trace = pd.DataFrame({"time": t, "ub": ub, "lb": np.linspace(0, 40, n)})
    fig = gap_figure(trace, max_points=500)
    x = np.asarray(fig.data[1].x)
    assert len(x) < 700
    kept_ub = np.asarray(fig.data[1].y)
    assert set(np.unique(kept_ub)) == set(np.unique(ub))  # every incumbent level drawn
    assert x[-1] == pytest.approx(20.0)


def test_gap_figure_errors_and_empty():
    with pytest.raises(ValueError, match="ub"):
        gap_figure(pd.DataFrame({"time": [0.1], "lb": [1.0]}))
    fig = gap_figure(make_trace().iloc[:0])
    assert len(fig.data) == 0 and "no snapshot" in fig.layout.title.text


# -- one node's shape function ---------------------------------------------------------------
def _bars(fig):
    return [t for t in fig.data if t.type == "bar"]


def test_shape_function_histogram_counts_and_sides():
    X, y = make_data(500, seed=3)
    x = X[:, 0]
    u = np.array([3.0, 7.0])
    fig = shape_function_figure(x, y, u, feature_name="length", class_names=["a", "b", "c"])
    bars = _bars(fig)
    assert {b.name for b in bars} == {"a", "b", "c"}
    for b in bars:  # every row counted once, in its class
        assert sum(b.y) == int(np.sum(y == "abc".index(b.name)))
    left = shape_goes_left(x, u)
    for b in bars:  # no bar straddles a breakpoint: a bar's rows all go to one side
        k = "abc".index(b.name)
        for cx, w, cnt in zip(b.x, b.width, b.y, strict=True):
            lo, hi = cx - w / 2, cx + w / 2
            inside = (x > lo + 1e-12) & (x <= hi + 1e-12) & (y == k)
            if cnt:
                assert len(set(left[inside])) == 1
    names = [t.name for t in fig.data if t.type == "scatter" and t.name]
    assert f"goes left ({int(left.sum())} rows)" in names
    assert f"goes right ({int((~left).sum())} rows)" in names
    texts = [a.text for a in fig.layout.annotations]
    assert "u1 = 3" in texts and "u2 = 7" in texts
    # the bands behind the panels alternate left, right, left
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rects) == 2 * 3  # three intervals, two panels


def test_shape_function_categorical_and_errors():
    X, y = make_data(200, seed=4)
    fig = shape_function_figure(X[:, 1], y, [1.5], feature_name="colour",
                                categories=["red", "green", "blue"])
    assert list(fig.layout.xaxis2.ticktext) == ["red", "green", "blue"]
    hover = " ".join(h for t in fig.data if t.type == "scatter" and t.hovertext
                     for h in t.hovertext)
    assert "colour {red, green}" in hover and "colour {blue}" in hover
    assert sum(sum(b.y) for b in _bars(fig)) == 200
    with pytest.raises(ValueError, match="breakpoint"):
        shape_function_figure(X[:, 0], y, [])
    with pytest.raises(ValueError, match="rows"):
        shape_function_figure([], [], [1.0])


def test_node_shape_figure_uses_the_rows_reaching_the_node():
    tree = make_shape_tree()
    X, y = make_data(400, seed=5)
    fig = node_shape_figure(tree, X, y, 2)
    n2 = int(node_rows(tree, X, 2).sum())
    assert sum(sum(b.y) for b in _bars(fig)) == n2
    assert f"{n2} training rows" in fig.layout.title.text and "K = 3" in fig.layout.title.text
    with pytest.raises(ValueError, match="internal"):
        node_shape_figure(tree, X, y, 4)


# -- the tree --------------------------------------------------------------------------------
def test_shape_tree_figure_labels_shapes_not_thresholds():
    tree = make_shape_tree()
    fig = shape_tree_figure(tree, split_penalty=1.0, breakpoint_penalty=0.5)
    hover = {int(c): h for t in fig.data if (t.meta or {}).get("role") == "nodes"
             for c, h in zip(t.customdata, t.hovertext, strict=True)}
    assert set(hover) == set(range(7))
    assert "shape: length (cm): left if \u2264 3 or > 7, right if (3, 7]" in hover[0]
    assert "length (cm) <= 3" not in hover[0]  # no single-threshold rule on a K = 2 node
    assert "cost \u03bb + \u03b1K = 1 + 0.5 \u00d7 2 = 2" in hover[0]
    assert "K = 3" in hover[2]
    edge = next(t for t in fig.data if t.name == "edge labels")
    assert list(edge.text) == ["\u2264 3 or > 7", "(3, 7]", "{red, green}", "{blue}",
                               "\u2264 4 or (5, 6]", "(4, 5] or > 6"]
    ann = [a.text for a in fig.layout.annotations]
    assert "length<br>L 3 R 7 L" in ann and "length<br>L 4 R 5 L 6 R" in ann
    assert "3 splits, 6 breakpoints" in fig.layout.title.text


def test_shape_grid_has_one_panel_per_split_node():
    tree = make_shape_tree()
    X, y = make_data(300, seed=6)
    fig = shape_grid_figure(tree, X, y, cols=2)
    titles = [a.text for a in fig.layout.annotations if a.text.startswith("node ")]
    assert titles == ["node 0: length (K = 2)", "node 1: colour (K = 1)",
                      "node 2: length (K = 3)"]
    per_axis: dict[str, int] = {}
    for b in _bars(fig):
        per_axis[b.xaxis] = per_axis.get(b.xaxis, 0) + int(sum(b.y))
    expected = [int(node_rows(tree, X, v).sum()) for v in (0, 1, 2)]
    assert [per_axis[a] for a in ("x", "x2", "x3")] == expected
    with pytest.raises(ValueError, match="leaf"):
        leaf = TreeArrays([-1], [-1], [-2], [-2.0], [0.0], [1], [1.0], [[1.0]],
                          task="classification", n_features=1, classes_=np.array([0]))
        shape_grid_figure(leaf, X[:, :1], y)
