"""Figures of Literati's shape functions (docs/spec.md section 1): one node's shape function
over its feature with the class histogram of its rows (:func:`shape_function_figure`,
:func:`node_shape_figure`), small multiples of every node's (:func:`shape_grid_figure`),
and their text (:func:`side_text`, :func:`shape_rule`).  The tree drawn with its shape
functions is :func:`engine.figures.literati.shape_tree_figure`.

A shape function on feature ``j`` with sorted breakpoints ``u_1 < ... < u_K`` sends a row
left iff the number of breakpoints strictly below ``x_j`` is even (see
:mod:`engine.figures.literati`); the routing, intervals and bins come from
:mod:`engine.literati.shapes`, these builders only draw them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.figures.style import FONT_SIZE, NEUTRAL, base_layout
from engine.figures.tree import _short_name, class_color
from engine.literati.shapes import (
    code_intervals,
    internal_nodes,
    node_breakpoints,
    shape_histogram,
    shape_intervals,
    shape_sides,
)
from engine.tree import TREE_LEAF, TreeArrays

#: Colours of the two sides a shape function sends rows to (Paul Tol's muted indigo and
#: olive: colour-blind safe, and apart from the Okabe-Ito class colours they sit under).
LEFT_COLOR = "#332288"
RIGHT_COLOR = "#999933"
SIDE_COLORS = {"left": LEFT_COLOR, "right": RIGHT_COLOR}
#: Opacity of the side-coloured bands drawn behind the class histograms.
BAND_OPACITY = 0.13
#: Breakpoint labels of a shape function closer than this fraction of the x-axis to the
#: previous label are moved one line down (up to three lines).
LABEL_GAP = 0.1
#: Pixels between the rows of the shape-function grid (tick labels plus a two-line title).
ROW_GAP_PX = 100


# ---------------------------------------------------------------------------------------
# shape functions: breakpoints, routing, intervals, text
# ---------------------------------------------------------------------------------------


def _num(v: float, decimals: int | None = None) -> str:
    return f"{v:.{decimals}f}" if decimals is not None else f"{v:.4g}"


def _interval_text(a: float, b: float, decimals: int | None = None) -> str:
    if not np.isfinite(a) and not np.isfinite(b):
        return "any value"
    if not np.isfinite(a):
        return f"\u2264 {_num(b, decimals)}"
    if not np.isfinite(b):
        return f"> {_num(a, decimals)}"
    return f"({_num(a, decimals)}, {_num(b, decimals)}]"


def side_text(
    breakpoints: Any,
    side: str = "left",
    *,
    categories: Sequence[str] | None = None,
    decimals: int | None = None,
) -> str:
    """The values a shape function sends to ``side``: ``'<= 2.45 or > 4.75'``, or the set
    of category labels (``'{Biscoe, Torgersen}'``) when ``categories`` labels the integer
    codes ``0..k-1`` of a categorical feature."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    u = np.asarray(breakpoints, dtype=np.float64)
    if categories is not None:
        left = code_intervals(len(categories), u) % 2 == 0
        chosen = left if side == "left" else ~left
        return "{" + ", ".join(str(categories[i]) for i in np.flatnonzero(chosen)) + "}"
    parts = [_interval_text(a, b, decimals) for a, b, s in shape_intervals(u) if s == side]
    return " or ".join(parts) if parts else "nothing"


def shape_rule(
    tree: TreeArrays,
    node: int,
    feature_names: Sequence[str] | None = None,
    *,
    decimals: int | None = None,
) -> str:
    """Text of internal ``node``'s shape function: ``'petal length (cm): left if <= 2.45
    or > 4.75, right if (2.45, 4.75]  (K = 2)'``; category labels (from
    ``tree.categories``) replace codes.  Raises ``ValueError`` for a leaf."""
    node = int(node)
    if not 0 <= node < tree.node_count:
        raise ValueError(f"node {node} is out of range [0, {tree.node_count})")
    if tree.children_left[node] == TREE_LEAF:
        raise ValueError(f"node {node} is a leaf: it has no shape function")
    j = int(tree.feature[node])
    name = tree.feature_labels(None if feature_names is None else list(feature_names))[j]
    cats_set = tree.category_set(node)
    if cats_set is not None:  # a plain tree's category-set split
        return tree.rule(node, feature_names)
    u = node_breakpoints(tree, node)
    labels = tree.categories[j] if tree.categories is not None else None
    left = side_text(u, "left", categories=labels, decimals=decimals)
    right = side_text(u, "right", categories=labels, decimals=decimals)
    return f"{name}: left if {left}, right if {right}  (K = {u.size})"


# ---------------------------------------------------------------------------------------
# one node's shape function
# ---------------------------------------------------------------------------------------


def _counts_text(counts: np.ndarray, cnames: list[str] | None) -> str:
    if cnames is None:
        return ""
    order = np.argsort(-counts, kind="stable")
    shown = [f"{cnames[k]} {int(counts[k])}" for k in order[:6] if counts[k] > 0]
    more = int(np.sum(counts[order[6:]] > 0))
    return ", ".join(shown) + (f", ... {more} more" if more else "")


def shape_function_figure(
    x: Any,
    y: Any,
    breakpoints: Any,
    *,
    feature_name: str = "x",
    class_names: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    title: str | None = None,
    n_bins: int = 30,
    height: int = 520,
) -> go.Figure:
    """The shape function of one node over its feature, with the class histogram of the
    node's rows underneath.

    Top panel: the step function (1 = left, 0 = right) over the feature's range, each
    interval drawn in the colour of the side it sends rows to, breakpoints as dashed lines
    labelled ``u1 = ...``.  Bottom panel: rows per bin stacked by class; the bins never
    straddle a breakpoint, and bands in the side colours run behind both panels.

    Parameters
    ----------
    x : array-like (n,)
        The feature's values for the rows at the node (float; categorical codes allowed).
    y : array-like (n,) of int class codes ``0..C-1``, or None
        Class of each row (None: one grey histogram).
    breakpoints : array-like (K,)
        The node's breakpoints (sorted here).  ``K >= 1``.
    feature_name : str
        Axis title.
    class_names : sequence of str, optional
        Labels of the class codes (default ``'0', '1', ...``).
    categories : sequence of str, optional
        Labels of the codes ``0..k-1`` of a categorical feature: ticks show labels and
        each code gets its own bar.
    n_bins : int
        Equal-width bins of the histogram (continuous features with many values).

    Raises
    ------
    ValueError
        No breakpoint, ``x`` empty, or ``x``/``y`` lengths that differ.
    """
    xs = np.asarray(x, dtype=np.float64).ravel()
    u = np.sort(np.asarray(breakpoints, dtype=np.float64).ravel())
    if u.size == 0:
        raise ValueError("a shape function needs at least one breakpoint")
    if xs.size == 0:
        raise ValueError("no rows at this node: nothing to draw")
    yc = None if y is None else np.asarray(y).ravel().astype(np.int64)
    if yc is not None and yc.size != xs.size:
        raise ValueError(f"x has {xs.size} values but y has {yc.size}")
    n_classes = 0 if yc is None else int(max(yc.max() + 1, len(class_names or ())))
    cnames = (
        None
        if yc is None
        else (
            [str(c) for c in class_names]
            if class_names is not None
            else [str(k) for k in range(n_classes)]
        )
    )
    sides = shape_sides(xs, u)
    left_mask = sides.goes_left

    data_lo, data_hi = float(xs.min()), float(xs.max())
    lo, hi = min(data_lo, float(u[0])), max(data_hi, float(u[-1]))
    span = hi - lo if hi > lo else 1.0
    pad = 0.5 if categories is not None else 0.04 * span
    x0, x1 = lo - pad, hi + pad
    intervals = shape_intervals(u, x0, x1)

    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.3, 0.7], vertical_spacing=0.06
    )
    # side bands behind both panels
    for a, b, side in intervals:
        fig.add_vrect(
            x0=a,
            x1=b,
            fillcolor=SIDE_COLORS[side],
            opacity=BAND_OPACITY,
            line_width=0,
            layer="below",
            row="all",
            col=1,
            exclude_empty_subplots=False,
        )
    _step_function(fig, intervals, sides, u, yc, n_classes, cnames, feature_name, categories)
    _class_histogram(fig, xs, u, yc, n_classes, cnames, n_bins, categories)
    _breakpoint_lines(fig, u, x0, x1)
    n_left = int(left_mask.sum())
    if title is None:
        title = (
            f"Shape function on {feature_name}: {u.size} breakpoint"
            f"{'s' if u.size != 1 else ''}, {n_left} rows left / {xs.size - n_left} right"
        )
    fig.update_layout(
        **base_layout(
            title, height=height, barmode="stack", bargap=0.02, margin=dict(l=70, r=20, t=120, b=60)
        )
    )
    fig.update_yaxes(
        title_text="side",
        tickvals=[0, 1],
        ticktext=["right", "left"],
        range=[-0.35, 1.35],
        row=1,
        col=1,
    )
    fig.update_yaxes(title_text="rows (count)", row=2, col=1)
    fig.update_xaxes(range=[x0, x1])
    fig.update_xaxes(title_text=feature_name, row=2, col=1)
    if categories is not None:
        fig.update_xaxes(
            tickvals=list(range(len(categories))), ticktext=[str(c) for c in categories]
        )
    return fig


def _step_function(fig, intervals, sides, u, yc, n_classes, cnames, feature_name, categories):
    """Top panel of :func:`shape_function_figure`: the step (1 = left, 0 = right), one trace
    per side (segments and a hover marker at each interval's middle), and its risers."""
    left_mask = sides.goes_left
    # step function: one trace per side (segments + a hover marker at each middle)
    level = {"left": 1.0, "right": 0.0}
    int_idx = sides.interval  # interval of every row
    code_interval = None if categories is None else code_intervals(len(categories), u)
    for side in ("left", "right"):
        sx, sy, texts, sizes = [], [], [], []
        n_side = int(left_mask.sum() if side == "left" else (~left_mask).sum())
        for i, (a, b, s) in enumerate(intervals):
            if s != side:
                continue
            rows = int_idx == i
            counts = np.bincount(yc[rows], minlength=n_classes) if yc is not None else np.zeros(0)
            a_txt = -math.inf if i == 0 else a
            b_txt = math.inf if i == len(intervals) - 1 else b
            desc = _interval_text(a_txt, b_txt)
            if categories is not None:  # the codes inside this interval
                inside = np.flatnonzero(code_interval == i)
                desc = "{" + ", ".join(str(categories[c]) for c in inside) + "}"
            text = f"<b>{feature_name} {desc}</b><br>goes {side}: {int(rows.sum())} rows" + (
                f"<br>{_counts_text(counts, cnames)}" if cnames else ""
            )
            sx += [a, 0.5 * (a + b), b, None]
            sy += [level[side]] * 3 + [None]
            texts += [text] * 3 + [""]
            sizes += [0, 11, 0, 0]
        fig.add_scatter(
            x=sx,
            y=sy,
            mode="lines+markers",
            connectgaps=False,
            line=dict(color=SIDE_COLORS[side], width=5),
            marker=dict(size=sizes, color=SIDE_COLORS[side]),
            name=f"goes {side} ({n_side} rows)",
            legendgroup=side,
            hovertext=texts,
            hovertemplate="%{hovertext}<extra></extra>",
            row=1,
            col=1,
        )
    # vertical risers of the step
    for v in u:
        fig.add_scatter(
            x=[v, v],
            y=[0, 1],
            mode="lines",
            showlegend=False,
            line=dict(color="#555555", width=1.5),
            hoverinfo="skip",
            row=1,
            col=1,
        )


def _class_histogram(fig, xs, u, yc, n_classes, cnames, n_bins, categories):
    """Bottom panel of :func:`shape_function_figure`: rows per bin stacked by class (one grey
    histogram without classes); the bins never straddle a breakpoint."""
    hist = shape_histogram(
        xs,
        u,
        yc,
        n_classes=n_classes,
        n_bins=n_bins,
        discrete=True if categories is not None else None,
    )
    edges, centres, widths = hist.edges, hist.centres, hist.widths
    lo_hi = np.column_stack([edges[:-1], edges[1:]])
    if yc is None:
        counts = hist.counts[0]
        fig.add_bar(
            x=centres,
            y=counts,
            width=widths,
            name="rows",
            marker=dict(color=NEUTRAL, line_width=0),
            customdata=lo_hi,
            hovertemplate="(%{customdata[0]:.4g}, %{customdata[1]:.4g}]: %{y} rows<extra></extra>",
            row=2,
            col=1,
        )
    else:
        for k in range(n_classes):
            counts = hist.counts[k]
            if not counts.any():
                continue
            fig.add_bar(
                x=centres,
                y=counts,
                width=widths,
                name=cnames[k],
                legendgroup="classes",
                marker=dict(color=class_color(k, len(cnames)), line_width=0),
                customdata=lo_hi,
                hovertemplate=f"class {cnames[k]}<br>(%{{customdata[0]:.4g}}, "
                "%{customdata[1]:.4g}]: %{y} rows<extra></extra>",
                row=2,
                col=1,
            )


def _breakpoint_lines(fig, u, x0, x1):
    """Dashed lines at the breakpoints through both panels, labelled ``u1 = ...`` at the top."""
    # breakpoints: dashed lines through both panels, labelled at the top; a label closer
    # than LABEL_GAP of the axis to the previous one moves one line down (else it hides it)
    level = 0
    for i, v in enumerate(u):
        fig.add_vline(
            x=v,
            line=dict(color="#333333", dash="dash", width=1.5),
            row="all",
            col=1,
            exclude_empty_subplots=False,
        )
        level = (level + 1) % 3 if i and v - u[i - 1] < LABEL_GAP * (x1 - x0) else 0
        fig.add_annotation(
            x=v,
            y=1.0,
            xref="x",
            yref="y domain",
            yanchor="top",
            yshift=-20 * level,
            showarrow=False,
            text=f"u{i + 1} = {v:.4g}",
            font=dict(size=12),
            bgcolor="rgba(255,255,255,0.8)",
        )


def _node_context(tree: TreeArrays, node: int, feature_names, class_names):
    j = int(tree.feature[node])
    names = tree.feature_labels(None if feature_names is None else list(feature_names))
    cats = tree.categories[j] if tree.categories is not None else None
    cnames = (
        tree.class_names(None if class_names is None else list(class_names))
        if tree.task == "classification"
        else None
    )
    return j, names[j], cats, cnames


def node_shape_figure(
    tree: TreeArrays,
    X: Any,
    y: Any,
    node: int,
    *,
    feature_names: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
    **kw,
) -> go.Figure:
    """:func:`shape_function_figure` of internal ``node`` of ``tree`` over the rows that
    reach it: ``X`` (n, p), ``y`` their class codes (or None), e.g. ``X[mask]`` with
    ``mask = node_rows(tree, X, node)`` (:mod:`engine.literati.shapes`).  Raises
    ``ValueError`` for a leaf or when no row is given."""
    node = int(node)
    if not 0 <= node < tree.node_count or tree.children_left[node] == TREE_LEAF:
        raise ValueError(f"node {node} is not an internal node of this tree")
    Xc = tree.check_X(X)
    if not Xc.shape[0]:
        raise ValueError(f"no row of X reaches node {node}")
    j, name, cats, cnames = _node_context(tree, node, feature_names, class_names)
    observed = ~np.isnan(Xc[:, j])  # missing values have no place on the line
    yy = None if y is None else np.asarray(y)[observed]
    kw.setdefault("title", None)
    if kw["title"] is None:
        u = node_breakpoints(tree, node)
        n_missing = int(Xc.shape[0] - observed.sum())
        kw["title"] = (
            f"Node {node}: shape function on {name} (K = {u.size}), {Xc.shape[0]} training rows"
            + (f" ({n_missing} missing, not drawn)" if n_missing else "")
        )
    return shape_function_figure(
        Xc[observed, j],
        yy,
        node_breakpoints(tree, node),
        feature_name=name,
        class_names=cnames,
        categories=cats,
        **kw,
    )


def shape_grid_figure(
    tree: TreeArrays,
    X: Any,
    y: Any,
    reached: Mapping[int, Any],
    *,
    feature_names: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
    nodes: Sequence[int] | None = None,
    cols: int = 3,
    max_nodes: int = 15,
    n_bins: int = 24,
    row_height: int = 280,
) -> go.Figure:
    """Small multiples: the shape function of every internal node (pre-order, at most
    ``max_nodes``), each as the class histogram of the node's rows with the intervals shaded
    by the side they send rows to and the breakpoints as dashed lines.

    ``X``: the rows (usually the training rows), ``y``: their class codes (or None),
    ``reached``: node id -> bool mask of the rows of ``X`` that reach it
    (:func:`engine.literati.shapes.rows_by_node`).  Panel titles name the node, feature and
    K.  Nodes no row reaches show an empty panel.  Raises ``ValueError`` when the tree has
    no internal node.
    """
    chosen = list(internal_nodes(tree) if nodes is None else nodes)[:max_nodes]
    if not chosen:
        raise ValueError("the tree is a single leaf: it has no shape function to draw")
    Xc = tree.check_X(X)
    yc = None if y is None else np.asarray(y).astype(np.int64)
    names = tree.feature_labels(None if feature_names is None else list(feature_names))
    cnames = (
        tree.class_names(None if class_names is None else list(class_names))
        if tree.task == "classification"
        else None
    )
    ncols = max(1, min(cols, len(chosen)))
    nrows = math.ceil(len(chosen) / ncols)
    titles = []
    for v in chosen:
        u = node_breakpoints(tree, v)
        titles.append(f"node {v}: {_short_name(names[int(tree.feature[v])], 22)} (K = {u.size})")
    height = int(150 + row_height * nrows)
    plot_h = height - 190  # the plot area: height minus the top and bottom margins
    fig = make_subplots(
        rows=nrows,
        cols=ncols,
        subplot_titles=titles,
        horizontal_spacing=0.06,
        # a fixed gap in pixels between rows: the x tick labels of one row and a panel
        # title of two lines (as projection mode wraps them) above the next
        vertical_spacing=min(0.3, ROW_GAP_PX / plot_h) if nrows > 1 else 0.0,
    )
    shown_classes: set[int] = set()
    for i, v in enumerate(chosen):
        row, col = i // ncols + 1, i % ncols + 1
        _grid_panel(
            fig, row, col, tree, v, Xc, yc, reached[v], names, cnames, n_bins, shown_classes
        )
    for side in ("left", "right"):  # legend entries for the shaded sides
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=f"shaded: goes {side}",
            marker=dict(symbol="square", size=14, color=SIDE_COLORS[side], opacity=0.5),
            hoverinfo="skip",
        )
    fig.update_layout(
        **base_layout(
            "Shape function of every split node (rows per bin stacked by class; shading: the side "
            "each interval goes to)",
            barmode="stack",
            bargap=0.02,
            height=height,
            margin=dict(l=50, r=20, t=150, b=40),
            legend=dict(
                orientation="h", yanchor="bottom", y=1 + 42 / plot_h, xanchor="left", x=0.0
            ),
        )
    )
    for ann in fig.layout.annotations:
        ann.font = dict(size=FONT_SIZE - 1)
    fig.update_yaxes(title_text="rows", col=1)
    return fig


def _grid_panel(fig, r, c, tree, v, Xc, yc, reached, names, cnames, n_bins, shown_classes):
    """Panel ``(r, c)`` of :func:`shape_grid_figure`: node ``v``'s sides shaded, its
    breakpoints, and the class histogram of the rows ``reached`` (a bool mask of ``Xc``);
    an empty panel when no row with a value reaches it.  ``shown_classes`` collects the
    classes already in the legend."""
    j = int(tree.feature[v])
    cats = tree.categories[j] if tree.categories is not None else None
    u = node_breakpoints(tree, v)
    mask = np.asarray(reached, dtype=bool) & ~np.isnan(Xc[:, j])  # NaN: not on the line
    xs = Xc[mask, j]
    if xs.size == 0:
        return
    lo, hi = min(float(xs.min()), float(u[0])), max(float(xs.max()), float(u[-1]))
    pad = 0.5 if cats is not None else 0.04 * (hi - lo if hi > lo else 1.0)
    for a, b, side in shape_intervals(u, lo - pad, hi + pad):
        fig.add_vrect(
            x0=a,
            x1=b,
            fillcolor=SIDE_COLORS[side],
            opacity=BAND_OPACITY + 0.05,
            line_width=0,
            layer="below",
            row=r,
            col=c,
            exclude_empty_subplots=False,
        )
    for val in u:
        fig.add_vline(
            x=val,
            line=dict(color="#333333", dash="dash", width=1),
            row=r,
            col=c,
            exclude_empty_subplots=False,
        )
    by_class = yc is not None and cnames is not None
    hist = shape_histogram(
        xs,
        u,
        yc[mask] if by_class else None,
        n_classes=len(cnames) if by_class else 0,
        n_bins=n_bins,
        discrete=True if cats is not None else None,
    )
    centres, widths = hist.centres, hist.widths
    for k, counts in zip(range(len(cnames)) if by_class else [-1], hist.counts, strict=True):
        if not counts.any():
            continue
        name = cnames[k] if k >= 0 else "rows"
        fig.add_bar(
            x=centres,
            y=counts,
            width=widths,
            name=name,
            legendgroup=name,
            showlegend=k not in shown_classes,
            marker=dict(color=class_color(k, len(cnames)) if k >= 0 else NEUTRAL, line_width=0),
            hovertemplate=f"node {v}, {name}<br>{names[j]} \u2248 %{{x:.4g}}: "
            "%{y} rows<extra></extra>",
            row=r,
            col=c,
        )
        shown_classes.add(k)
    fig.update_xaxes(range=[lo - pad, hi + pad], row=r, col=c)
    if cats is not None:
        fig.update_xaxes(
            tickvals=list(range(len(cats))), ticktext=[str(s) for s in cats], row=r, col=c
        )
