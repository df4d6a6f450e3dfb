"""Figures of the Optimal shape trees page (Literati, docs/spec.md section 1): the gap convergence
chart of the AO* search, the shape function of one node, and the shape tree itself.

The gap chart is drawn by :mod:`engine.figures.gap`, the shape functions of the nodes by
:mod:`engine.figures.shape_functions`; this module draws the shape tree and re-exports the
others' builders, so the page imports one module.  Pure functions of engine results ->
``go.Figure`` (usable from a notebook)::

    from engine.literati import LiteratiClassifier
    from engine.figures.literati import gap_figure, node_shape_figure, shape_tree_figure

    est = LiteratiClassifier(max_depth=3).fit(X, y)
    gap_figure(est.trace_, time_limit=est.time_limit)
    shape_tree_figure(est.tree_, feature_names=names, class_names=classes)
    node_shape_figure(est.tree_, X, y, node=0, feature_names=names, class_names=classes)

Shape functions (Literati; arXiv 2609.09299): an internal node holds one feature ``j`` and
sorted breakpoints ``u_1 < ... < u_K``; a row goes **left iff the number of breakpoints
strictly below** ``x_j`` **is even** (``searchsorted(u, x_j, side='left') % 2 == 0``), so
the intervals ``(-inf, u_1], (u_1, u_2], ...`` alternate left, right, left, ...  ``K = 1``
is the ordinary ``x_j <= u_1`` split.  A tree keeps the breakpoints of node ``i`` in CSR
form, ``tree.bp_values[tree.bp_offsets[i]:tree.bp_offsets[i + 1]]``; a tree without them
(any plain threshold tree) is read as ``K = 1`` at every internal node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from engine.figures.gap import (
    EVENT_STYLE,
    GAP_FILL,
    LB_COLOR,
    MIN_TIME,
    UB_COLOR,
    gap_figure,
)
from engine.figures.shape_functions import (
    BAND_OPACITY,
    LABEL_GAP,
    LEFT_COLOR,
    RIGHT_COLOR,
    ROW_GAP_PX,
    SIDE_COLORS,
    node_shape_figure,
    shape_function_figure,
    shape_grid_figure,
    shape_rule,
    side_text,
)
from engine.figures.tree import _short_name, tree_figure
from engine.literati.node_bounds import path_label
from engine.literati.shapes import internal_nodes, node_breakpoints
from engine.tree import TreeArrays

__all__ = [
    "BAND_OPACITY",
    "EVENT_STYLE",
    "GAP_FILL",
    "LABEL_GAP",
    "LB_COLOR",
    "LEFT_COLOR",
    "MIN_TIME",
    "RIGHT_COLOR",
    "ROW_GAP_PX",
    "SIDE_COLORS",
    "UB_COLOR",
    "GAP_SCALE",
    "PRIORITY_COLOR",
    "gap_figure",
    "node_shape_figure",
    "shape_function_figure",
    "shape_grid_figure",
    "shape_rule",
    "shape_tree_figure",
    "side_text",
]


# ---------------------------------------------------------------------------------------
# the tree with its shape functions
# ---------------------------------------------------------------------------------------


def _compact_shape(u: np.ndarray, cats: Sequence[str] | None) -> str:
    """What goes left | what goes right (the True | False edges): '≤ 2.45 | > 2.45',
    '≤ 2.45 or > 4.75 | (2.45, 4.75]', or the category sets '{red, green} | {blue}'."""
    return f"{side_text(u, 'left', categories=cats)} | {side_text(u, 'right', categories=cats)}"


def shape_tree_figure(
    tree: TreeArrays,
    *,
    feature_names: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
    split_penalty: float | None = None,
    breakpoint_penalty: float | None = None,
    collapse_depth: int | None = None,
    title: str | None = None,
    height: int | None = None,
    node_bounds=None,
    priority_path: str | None = None,
) -> go.Figure:
    """The tree drawn by :func:`engine.figures.tree.tree_figure`, with every internal node
    labelled by its shape function instead of a single threshold.

    With ``node_bounds`` (:class:`engine.literati.node_bounds.NodeBounds` of this tree, from
    ``LiteratiSearch.node_bounds()`` or the estimator's ``node_bounds_``) every visible node
    gets a ring coloured by its share of the remaining gap (0-100 %, colour bar) and a
    hover with its LB, UB, gap and own share; ``priority_path`` (a node path, ``""`` the
    root) marks the node the search gives priority to.

    Split nodes read ``feature`` over ``L u1 R u2 L`` (the sides between breakpoints); the
    edges say which values go that way (``<= 2.45 or > 4.75`` / ``(2.45, 4.75]``); the hover
    gives the full :func:`shape_rule`, the number of breakpoints K and, when the penalties
    are given, the node's cost ``lambda + alpha * K`` (misclassification units).  Node
    traces keep ``customdata`` = node id, so a page can read clicks.
    """
    names = tree.feature_labels(None if feature_names is None else list(feature_names))
    inner = internal_nodes(tree)
    bps = {v: node_breakpoints(tree, v) for v in inner}
    if title is None:
        title = _shape_tree_title(tree, bps)
    fig = tree_figure(
        tree,
        feature_names=names,
        class_names=class_names,
        collapse_depth=collapse_depth,
        title=title,
        height=height,
        node_extra=_breakpoint_hovers(bps, split_penalty, breakpoint_penalty),
    )
    coords = _shape_node_hovers(fig, tree, bps, names)
    visible_splits = [v for v in inner if v in coords and int(tree.children_left[v]) in coords]
    labels_on = bool(fig.layout.annotations)
    if labels_on:
        _shape_node_labels(fig, tree, bps, names, {coords[v]: v for v in visible_splits})
    fig.data = [t for t in fig.data if t.name != "edge labels"]
    shown = visible_splits if labels_on else [v for v in visible_splits if v == 0]
    edge_labels = _shape_edge_labels(tree, bps, coords, shown)
    if edge_labels is not None:
        fig.add_trace(edge_labels)
    if node_bounds is not None:
        _add_gap_rings(fig, coords, node_bounds, priority_path)
    return fig


def _breakpoint_hovers(
    bps: dict, split_penalty: float | None, breakpoint_penalty: float | None
) -> dict[int, str]:
    """Each split node's extra hover line: its K breakpoints and, with both penalties,
    its cost ``lambda + alpha * K`` (``bps``: node id -> float64 breakpoints)."""
    extra = {}
    for v, u in bps.items():
        k = u.size
        line = f"breakpoints K = {k}: " + ", ".join(f"{b:.4g}" for b in u)
        if split_penalty is not None and breakpoint_penalty is not None:
            cost = split_penalty + breakpoint_penalty * k
            line += (
                f"<br>cost \u03bb + \u03b1K = {split_penalty:.4g} + "
                f"{breakpoint_penalty:.4g} \u00d7 {k} = {cost:.4g}"
            )
        extra[v] = line
    return extra


def _shape_tree_title(tree: TreeArrays, bps: dict) -> str:
    """'Shape tree: 3 splits, 4 breakpoints, 4 leaves, depth 2'."""
    n_split, n_bp = len(bps), sum(b.size for b in bps.values())
    return (
        f"Shape tree: {n_split} split{'s' if n_split != 1 else ''}, "
        f"{n_bp} breakpoint{'s' if n_bp != 1 else ''}, {tree.n_leaves} leaves, "
        f"depth {tree.max_depth}"
    )


def _shape_node_hovers(
    fig: go.Figure, tree: TreeArrays, bps: dict, names: Sequence[str]
) -> dict[int, tuple[float, float]]:
    """Replace the threshold rule in the hover of every drawn threshold split node by its
    shape function (:func:`shape_rule`); return the drawn nodes' coordinates, node id ->
    ``(x, y)``, read from the node traces (``customdata`` = node id)."""
    coords: dict[int, tuple[float, float]] = {}
    for trace in fig.data:
        if (trace.meta or {}).get("role") == "nodes":
            for nid, xv, yv in zip(trace.customdata, trace.x, trace.y, strict=True):
                coords[int(nid)] = (float(xv), float(yv))
            texts = list(trace.hovertext)
            for i, nid in enumerate(trace.customdata):
                v = int(nid)
                if v in bps and tree.category_set(v) is None:
                    old = f"rule: {tree.rule(v, names)}  (True \u2192 left)"
                    texts[i] = texts[i].replace(old, "shape: " + shape_rule(tree, v, names))
            trace.hovertext = texts
    return coords


def _feature_categories(tree: TreeArrays, v: int) -> Sequence[str] | None:
    """The category names of split node ``v``'s feature (None for a numeric feature)."""
    return tree.categories[int(tree.feature[v])] if tree.categories is not None else None


def _shape_node_labels(
    fig: go.Figure, tree: TreeArrays, bps: dict, names: Sequence[str], by_xy: dict
) -> None:
    """Replace the '<= t' annotation of each visible threshold split node (``by_xy``:
    ``(x, y)`` -> node id) by its feature over its compact shape ``L u1 R u2 L``."""
    anns = []
    for ann in fig.layout.annotations:
        v = by_xy.get((float(ann.x), float(ann.y)))
        if v is not None and tree.category_set(v) is None:
            ann = go.layout.Annotation(ann)
            short = _short_name(names[int(tree.feature[v])])
            ann.text = f"{short}<br>{_compact_shape(bps[v], _feature_categories(tree, v))}"
        anns.append(ann)
    fig.layout.annotations = anns


def _shape_edge_labels(
    tree: TreeArrays, bps: dict, coords: dict, splits: Sequence[int]
) -> go.Scatter | None:
    """A text trace saying which values go down each edge of the split nodes ``splits``
    (``<= 2.45 or > 4.75`` / ``(2.45, 4.75]``; True / False for a category set), or None
    when there are none."""
    lx, ly, lt, lp = [], [], [], []
    for v in splits:
        cats = _feature_categories(tree, v)
        # beside the edge at 70 % of its length, clear of the parent's two-line label
        # (at 60 % "<= 1.55 or > 1.75" ran into "L 1.55 R 1.75 L" at 1280 x 720)
        for child, side, pos in (
            (tree.children_left[v], "left", "middle left"),
            (tree.children_right[v], "right", "middle right"),
        ):
            (xa, ya), (xb, yb) = coords[v], coords[int(child)]
            lx.append(xa + 0.7 * (xb - xa))
            ly.append(ya + 0.7 * (yb - ya))
            if tree.category_set(v) is not None:
                lt.append("True" if side == "left" else "False")
            else:
                lt.append(side_text(bps[v], side, categories=cats))
            lp.append(pos)
    if not lx:
        return None
    return go.Scatter(
        x=lx,
        y=ly,
        mode="text",
        text=lt,
        textposition=lp,
        textfont=dict(size=10, color="#555555"),
        hoverinfo="skip",
        showlegend=False,
        name="edge labels",
    )


#: Colour scale of the gap shares (0 %: proven, pale; 100 %: the whole gap, dark red).
GAP_SCALE = "YlOrRd"
PRIORITY_COLOR = "#117733"


def _add_gap_rings(fig: go.Figure, coords: dict, nb, priority_path: str | None) -> None:
    """Rings over the visible nodes coloured by their gap share, a colour bar, the hover
    with each node's bounds, and a marker on the prioritised node (see
    :func:`shape_tree_figure`)."""
    if nb.node_count == 0:
        return
    ids = np.array(sorted(v for v in coords if v < nb.node_count), dtype=np.int64)
    if ids.size == 0:
        return
    xs = np.array([coords[int(v)][0] for v in ids])
    ys = np.array([coords[int(v)][1] for v in ids])
    share = 100 * nb.share[ids]
    custom = np.column_stack(
        [ids, nb.lower[ids], nb.upper[ids], nb.gap[ids], share, 100 * nb.own_share[ids]]
    )
    paths = [path_label(nb.paths[int(v)]) for v in ids]
    status = ["proven optimal" if nb.exact[int(v)] else "open" for v in ids]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            name="gap share (ring)",
            customdata=custom,
            text=[f"{p}: {st}" for p, st in zip(paths, status, strict=True)],
            hovertemplate=(
                "node %{customdata[0]:.0f} (%{text})<br>LB = %{customdata[1]:.4g}, "
                "UB = %{customdata[2]:.4g}<br>gap UB − LB = %{customdata[3]:.4g}"
                "<br>share of the remaining gap: %{customdata[4]:.1f} %"
                "<br>own share (this node's split): %{customdata[5]:.1f} %<extra></extra>"
            ),
            marker=dict(
                symbol="circle-open",
                size=38,
                color=share,
                cmin=0.0,
                cmax=100.0,
                colorscale=GAP_SCALE,
                line=dict(width=5),
                showscale=True,
                colorbar=dict(
                    title=dict(text="share of<br>remaining<br>gap (%)", side="top"),
                    thickness=14,
                    len=0.8,
                    ticksuffix=" %",
                ),
            ),
            hoverlabel=dict(bgcolor="white", bordercolor="#444444", font=dict(color="#222222")),
            showlegend=False,
            meta={"role": "gap"},
        )
    )
    if priority_path is not None and priority_path in nb.paths:
        v = nb.paths.index(priority_path)
        if v in coords:
            fig.add_trace(
                go.Scatter(
                    x=[coords[v][0]],
                    y=[coords[v][1]],
                    mode="markers",
                    name="has priority in the search",
                    marker=dict(
                        symbol="star-diamond-open",
                        size=46,
                        color=PRIORITY_COLOR,
                        line=dict(width=3, color=PRIORITY_COLOR),
                    ),
                    hoverinfo="skip",
                    showlegend=True,
                )
            )
