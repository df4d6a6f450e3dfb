"""Plotly tree view and ``export_text``-style text of a :class:`~engine.tree.TreeArrays`.

The layout is computed here (no graphviz): visible leaves are spaced evenly left to right
in in-order, every parent sits centred over its two children, and the y-axis is the depth
(root on top).  Nodes are markers whose ``customdata`` is the node id, so a page can read
clicks; edges are line traces; all markers of one kind share one trace, so a tree with
hundreds of nodes needs only a handful of traces.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from engine.figures.style import palette
from engine.tree import TREE_LEAF, TreeArrays

#: Class colours: the app-wide palette (``engine.figures.style.palette``: Okabe-Ito for the
#: first 8 classes, then plotly's ``Safe``), so a class has the same colour on every page,
#: extended with plotly's ``Alphabet`` set (greys removed) for very many classes.
# fmt: off
_ALPHABET = [
    "#AA0DFE", "#3283FE", "#85660D", "#782AB6", "#1C8356", "#16FF32", "#F7E1A0", "#1CBE4F",
    "#C4451C", "#DEA0FD", "#FE00FA", "#325A9B", "#FEAF16", "#F8A19F", "#90AD1C", "#F6222E",
    "#1CFFCE", "#2ED9FF", "#B10DA1", "#C075A6", "#FC1CBF", "#B00068", "#FBE426", "#FA0087",
]
# fmt: on
CLASS_COLORS = list(dict.fromkeys(palette(19) + _ALPHABET))
SPLIT_COLOR = "#D9D9D9"
COLLAPSED_COLOR = "#BDBDBD"
EDGE_COLOR = "#9E9E9E"
PATH_COLOR = "#000000"
OUTLINE_COLOR = "#404040"
#: Fill of a leaf whose largest classes tie (no class colour fits it).
TIE_COLOR = "#FFFFFF"
#: Above this many visible nodes, text labels are dropped and hover carries the details.
MAX_LABELLED_NODES = 31
#: Classes listed in a node's hover before the list is cut to the most frequent.
_MAX_HOVER_CLASSES = 10


def class_color(k: int, n_classes: int | None = None) -> str:
    """Colour of class index ``k`` of ``n_classes``: :func:`engine.figures.style.palette`'s,
    so a tree and the other figures of the same classes agree (Okabe-Ito up to 8 classes,
    Dark24 up to 24); beyond, or with ``n_classes`` unknown, :data:`CLASS_COLORS` cycled."""
    if n_classes is not None and k < n_classes <= 24:
        return palette(n_classes)[k]
    return CLASS_COLORS[k % len(CLASS_COLORS)]


# ---------------------------------------------------------------------------------------
# layout
# ---------------------------------------------------------------------------------------


def _visible_nodes(
    tree: TreeArrays, collapse_depth: int | None, collapsed_nodes: Sequence[int]
) -> tuple[list[int], np.ndarray]:
    """Visible node ids in pre-order and a bool mask of collapsed (drawn-as-one) nodes."""
    cl, cr = tree.children_left, tree.children_right
    depth = tree.depth
    forced = {int(v) for v in collapsed_nodes}
    collapsed = np.zeros(tree.node_count, dtype=bool)
    order: list[int] = []
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if cl[node] == TREE_LEAF:
            continue
        if (collapse_depth is not None and depth[node] >= collapse_depth) or node in forced:
            collapsed[node] = True
            continue
        stack.append(int(cr[node]))
        stack.append(int(cl[node]))
    return order, collapsed


def _positions(tree: TreeArrays, order: list[int], collapsed: np.ndarray) -> np.ndarray:
    """x position of every visible node (NaN for hidden nodes).

    Terminal visible nodes (leaves and collapsed nodes) get 0, 1, 2, ... in pre-order,
    which for a binary tree is their in-order (left-to-right) order; parents are centred
    over their children, processed in reverse pre-order so children come first.
    """
    cl, cr = tree.children_left, tree.children_right
    x = np.full(tree.node_count, np.nan)
    k = 0
    for node in order:
        if cl[node] == TREE_LEAF or collapsed[node]:
            x[node] = k
            k += 1
    for node in reversed(order):
        if cl[node] != TREE_LEAF and not collapsed[node]:
            x[node] = 0.5 * (x[cl[node]] + x[cr[node]])
    return x


def _subtree_sizes(tree: TreeArrays) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and leaves in the subtree of every node (itself included), iteratively."""
    cl, cr = tree.children_left, tree.children_right
    n = tree.node_count
    order = np.argsort(tree.depth, kind="stable")[::-1]  # deepest first
    size = np.ones(n, dtype=np.int64)
    leaves = (cl == TREE_LEAF).astype(np.int64)
    for node in order:
        if cl[node] != TREE_LEAF:
            size[node] += size[cl[node]] + size[cr[node]]
            leaves[node] = leaves[cl[node]] + leaves[cr[node]]
    return size, leaves


# ---------------------------------------------------------------------------------------
# text helpers
# ---------------------------------------------------------------------------------------


def _short_name(name: str, width: int = 18) -> str:
    """Drop a trailing unit in parentheses and cut long names: 'petal width (cm)' ->
    'petal width'."""
    s = name
    if s.endswith(")") and " (" in s:
        s = s[: s.rindex(" (")]
    return s if len(s) <= width else s[: width - 1] + "\u2026"


def _short_rule(tree: TreeArrays, node: int, names: list[str]) -> str:
    rule = tree.rule(node, names)
    full = names[int(tree.feature[node])]
    body = rule[len(full) :]
    u = tree.breakpoints(node) if tree.has_shape_splits else None
    if tree.missing_split_side(node) is not None:
        pass  # "x is not missing" / "x is missing": the rule's own words
    elif u is not None and (u.size > 1 or u[0] != tree.threshold[node]):
        body = f": shape, K = {u.size}"  # Literati node; the hover has its intervals
    elif tree.left_categories(node) is None:
        body = f" <= {float(tree.threshold[node]):.4g}"
    elif len(body) > 24:
        body = body[:23] + "\u2026}"
    return _short_name(full) + body


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _hover(
    tree: TreeArrays,
    node: int,
    depth: int,
    names: list[str],
    cnames: list[str] | None,
    kind: str,
    hidden: tuple[int, int] | None,
    extra: str | None,
) -> str:
    leaf = tree.children_left[node] == TREE_LEAF
    head = {"leaf": "leaf", "split": "split", "collapsed": "collapsed subtree"}[kind]
    lines = [f"<b>node {node}</b> ({head}, depth {depth})"]
    if not leaf:
        lines.append(f"rule: {tree.rule(node, names)}  (True \u2192 left)")
        if tree.missing_go_to_left is not None:
            side = "left" if tree.missing_go_to_left[node] else "right"
            routed = "" if tree.n_missing is None else int(tree.n_missing[node])
            lines.append(
                f"missing values \u2192 {side}"
                + ("" if routed == "" else f" ({routed} training rows routed so)")
            )
    if hidden is not None:
        lines.append(f"hidden below: {hidden[0]} nodes, {hidden[1]} leaves")
    n = int(tree.n_node_samples[node])
    w = float(tree.weighted_n_node_samples[node])
    lines.append(f"n = {n}" + ("" if np.isclose(w, n) else f" (weighted {_fmt(w)})"))
    v = tree.value[node, 0]
    if cnames is not None:
        ks = np.arange(len(cnames))
        if len(ks) > _MAX_HOVER_CLASSES:
            ks = np.sort(np.argsort(-v, kind="stable")[:_MAX_HOVER_CLASSES])
        parts = [f"{cnames[k]}: {v[k]:.3f} ({_fmt(v[k] * w)})" for k in ks]
        if len(ks) < len(cnames):
            parts.append(f"\u2026 {len(cnames) - len(ks)} more classes")
        lines.append("classes: " + "<br>&nbsp;&nbsp;".join([""] + parts))
        top = np.flatnonzero(np.isclose(v, v.max(), rtol=0, atol=1e-12))
        lines.append(
            f"majority: {cnames[int(top[0])]}"
            if top.size == 1
            else "majority: a tie of "
            + ", ".join(str(cnames[k]) for k in top)
            + f" (predicts {cnames[int(top[0])]}, the first)"
        )
    else:
        lines.append(f"mean value: {_fmt(float(v[0]))}")
    lines.append(f"impurity: {_fmt(float(tree.impurity[node]))}")
    if tree.p_value is not None and np.isfinite(tree.p_value[node]):
        lines.append(f"p-value: {tree.p_value[node]:.3g}")
    if tree.lower_bound is not None and tree.upper_bound is not None:
        lines.append(
            f"bounds: [{_fmt(float(tree.lower_bound[node]))}, "
            f"{_fmt(float(tree.upper_bound[node]))}]"
        )
    if extra:
        lines.append(str(extra))
    return "<br>".join(lines)


# ---------------------------------------------------------------------------------------
# figure
# ---------------------------------------------------------------------------------------


def _node_trace(
    ids: list[int],
    x: np.ndarray,
    y: np.ndarray,
    hover: dict[int, str],
    *,
    name: str,
    marker: dict,
    showlegend: bool = True,
) -> go.Scatter:
    arr = np.asarray(ids, dtype=np.int64)
    return go.Scatter(
        x=x[arr],
        y=y[arr],
        mode="markers",
        marker=marker,
        name=name,
        customdata=arr,
        hovertext=[hover[i] for i in ids],
        hovertemplate="%{hovertext}<extra></extra>",
        showlegend=showlegend,
        meta={"role": "nodes"},
    )


#: Assumed plot width (px) and text width per character (px, about that of the projection
#: mode's 15.4 px labels) when estimating whether two labels collide.
LABEL_PLOT_WIDTH = 800
LABEL_CHAR_WIDTH = 8.0
#: Extra downward shift (px) of a label moved to the second row: one projection-mode line.
LABEL_ROW_SHIFT = 20
#: Rows a level's labels are staggered on; a label with no room on any of them is left out
#: (its node's hover has it).
LABEL_ROWS = 3
#: Left plus right margin (px) of the tree figure: its plot is the figure's width less this.
TREE_SIDE_MARGINS = 40


def _label_rows(
    labels: dict[int, str],
    x: np.ndarray,
    y: np.ndarray,
    n_terminal: int,
    plot_width: float = LABEL_PLOT_WIDTH,
) -> dict[int, int | None]:
    """Row (0 to :data:`LABEL_ROWS` - 1) of every label: at each depth, left to right, a
    label goes on the first row where it does not touch the label before it (its estimated
    width is its characters times :data:`LABEL_CHAR_WIDTH` on a ``plot_width`` px plot);
    ``None`` when it touches on every row (the label is left out, the hover has it)."""
    unit = plot_width / (max(n_terminal, 1) + 0.6)  # px per terminal node
    rows: dict[int, int | None] = {}
    levels: dict[float, list[int]] = {}
    for node in labels:
        levels.setdefault(float(y[node]), []).append(node)
    for nodes in levels.values():
        nodes.sort(key=lambda node: x[node])
        right_edge = [-np.inf] * LABEL_ROWS  # px, of the last label on each row
        for node in nodes:
            half = 0.5 * LABEL_CHAR_WIDTH * len(labels[node]) + 4
            centre = float(x[node]) * unit
            row = next((r for r in range(LABEL_ROWS) if centre - half > right_edge[r]), None)
            rows[node] = row
            if row is not None:
                right_edge[row] = centre + half
    return rows


def _label_annotations(
    labels: dict[int, str],
    x: np.ndarray,
    y: np.ndarray,
    marker_size: int,
    n_terminal: int,
    plot_width: float = LABEL_PLOT_WIDTH,
) -> list[dict]:
    """Node labels as annotations under the markers, on a white box so that edges and the
    highlighted path never make them unreadable (SVG text has no halo in every browser);
    neighbours that would touch are staggered on up to :data:`LABEL_ROWS` rows, and a
    label with no room on any is left out (:func:`_label_rows`)."""
    rows = _label_rows(labels, x, y, n_terminal, plot_width)
    return [
        {
            "x": float(x[v]),
            "y": float(y[v]),
            "xref": "x",
            "yref": "y",
            "text": text,
            "showarrow": False,
            "yanchor": "top",
            "yshift": -(marker_size // 2 + 6) - LABEL_ROW_SHIFT * rows[v],
            "font": {"size": 11, "color": "#222222"},
            "bgcolor": "rgba(255,255,255,0.85)",
            "borderpad": 1,
        }
        for v, text in labels.items()
        if rows[v] is not None
    ]


def _add_edges(fig, splits, xs, ys, cl, cr, labels_on) -> None:
    """The edges of the visible split nodes, with True / False labels (always at the root)."""
    ex: list[float | None] = []
    ey: list[float | None] = []
    lab_x, lab_y, lab_t, lab_pos = [], [], [], []
    for v in splits:
        # beside the edge at 70 % of its length: clear of the parent's label below the
        # parent (a rule and a p-value, two lines, covered labels at 60 %) and of the child
        for child, text, pos in ((cl[v], "True", "middle left"), (cr[v], "False", "middle right")):
            ex += [xs[v], xs[child], None]
            ey += [ys[v], ys[child], None]
            if labels_on or v == 0:
                lab_x.append(xs[v] + 0.7 * (xs[child] - xs[v]))
                lab_y.append(ys[v] + 0.7 * (ys[child] - ys[v]))
                lab_t.append(text)
                lab_pos.append(pos)
    fig.add_trace(
        go.Scatter(
            x=ex,
            y=ey,
            mode="lines",
            line={"color": EDGE_COLOR, "width": 1.5},
            hoverinfo="skip",
            showlegend=False,
            name="edges",
        )
    )
    if lab_x:
        fig.add_trace(
            go.Scatter(
                x=lab_x,
                y=lab_y,
                mode="text",
                text=lab_t,
                textposition=lab_pos,
                textfont={"size": 10, "color": "#555555"},
                hoverinfo="skip",
                showlegend=False,
                name="edge labels",
            )
        )


def _add_path(fig, tree, highlight_path, collapsed, xs, ys) -> list[int]:
    """The decision path ``highlight_path`` (up to a collapsed node) as thick edges under
    the nodes; returns its node ids (empty without a path)."""
    path: list[int] = []
    if highlight_path is not None:
        for v in [int(v) for v in highlight_path]:
            path.append(v)
            if collapsed[v]:
                break
        px_, py_ = [], []
        for a, b in zip(path[:-1], path[1:], strict=True):
            px_ += [xs[a], xs[b], None]
            py_ += [ys[a], ys[b], None]
        fig.add_trace(
            go.Scatter(
                x=px_ or [xs[0]],
                y=py_ or [ys[0]],
                mode="lines",
                line={"color": PATH_COLOR, "width": 5},
                hoverinfo="skip",
                name="path of selected sample",
                legendgroup="path",
                showlegend=True,
            )
        )

    return path


def _add_nodes(
    fig, tree, splits, leaves, folded, xs, ys, hover, names, cnames, size, marker_size
) -> dict[int, str]:
    """Split nodes, leaves (one trace per majority class, or coloured by the mean) and
    collapsed subtrees; returns each node's short label."""
    classification = tree.task == "classification"
    node_labels: dict[int, str] = {}
    outline = {"color": OUTLINE_COLOR, "width": 1}
    if splits:
        node_labels.update({v: _short_rule(tree, v, names) for v in splits})
        fig.add_trace(
            _node_trace(
                splits,
                xs,
                ys,
                hover,
                name="split node",
                marker={
                    "color": SPLIT_COLOR,
                    "size": marker_size,
                    "symbol": "circle",
                    "line": outline,
                },
            )
        )
    if classification:
        majority = np.argmax(tree.value[:, 0, :], axis=1)
        # a leaf whose largest classes are equal (iris's root: 50 / 50 / 50) predicts the
        # first of them, but naming or colouring it as that class would mislead: "tie", grey
        tied = _tied_classes(tree.value[:, 0, :])
        ties = [v for v in leaves if tied[v]]
        for k, cname in enumerate(cnames):
            ids = [v for v in leaves if majority[v] == k and not tied[v]]
            if not ids:
                continue
            node_labels.update({v: _short_name(cname, 14) for v in ids})
            fig.add_trace(
                _node_trace(
                    ids,
                    xs,
                    ys,
                    hover,
                    name=cname,
                    marker={
                        "color": class_color(k, len(cnames)),
                        "size": marker_size,
                        "symbol": "circle",
                        "line": outline,
                    },
                )
            )
        if ties:
            node_labels.update(dict.fromkeys(ties, "tie"))
            fig.add_trace(
                _node_trace(
                    ties,
                    xs,
                    ys,
                    hover,
                    name="tie (classes equal)",
                    marker={
                        "color": TIE_COLOR,
                        "size": marker_size,
                        "symbol": "circle",
                        "line": outline,
                    },
                )
            )
    elif leaves:
        vals = tree.value[leaves, 0, 0]
        node_labels.update({v: _fmt(float(tree.value[v, 0, 0])) for v in leaves})
        fig.add_trace(
            _node_trace(
                leaves,
                xs,
                ys,
                hover,
                name="leaf (mean)",
                showlegend=False,
                marker={
                    "color": vals,
                    "colorscale": "Viridis",
                    "size": marker_size,
                    "line": outline,
                    "showscale": True,
                    "colorbar": {"title": {"text": "leaf mean"}, "thickness": 14},
                },
            )
        )
    if folded:
        node_labels.update({v: f"+{int(size[v] - 1)} nodes" for v in folded})
        fig.add_trace(
            _node_trace(
                folded,
                xs,
                ys,
                hover,
                name="collapsed subtree",
                marker={
                    "color": COLLAPSED_COLOR,
                    "size": marker_size + 4,
                    "symbol": "triangle-down",
                    "line": outline,
                },
            )
        )
    return node_labels


def _add_path_rings(fig, path, xs, ys, marker_size) -> None:
    """Rings over the nodes of the highlighted path."""
    arr = np.asarray(path, dtype=np.int64)
    fig.add_trace(
        go.Scatter(
            x=xs[arr],
            y=ys[arr],
            mode="markers",
            customdata=arr,
            hoverinfo="skip",
            marker={
                "symbol": "circle-open",
                "size": marker_size + 10,
                "color": PATH_COLOR,
                "line": {"width": 3, "color": PATH_COLOR},
            },
            name="path of selected sample",
            legendgroup="path",
            showlegend=False,
            meta={"role": "path"},
        )
    )


def _tree_layout(
    fig,
    tree,
    order,
    collapsed,
    folded,
    depth,
    n_terminal,
    node_labels,
    xs,
    ys,
    marker_size,
    labels_on,
    title,
    height,
    width=None,
) -> None:
    """Title, height, axes, legend and the node labels; ``uirevision`` keeps the user's
    zoom while the same tree with the same collapsed nodes is redrawn."""
    n_visible = len(order)
    vis_depth = int(max(depth[v] for v in order))
    if title is None:
        title = (
            f"Decision tree: {tree.node_count} nodes, {tree.n_leaves} leaves, "
            f"depth {tree.max_depth}"
        )
        if folded:
            title += f" ({tree.node_count - n_visible} nodes collapsed)"
    plot_width = LABEL_PLOT_WIDTH if width is None else max(width - TREE_SIDE_MARGINS, 100)
    annotations = (
        _label_annotations(node_labels, xs, ys, marker_size, n_terminal, plot_width)
        if labels_on
        else []
    )
    if height is None:
        # labels staggered on more rows need a taller level, or the lower rows meet the
        # True / False labels of the edges below
        lowest = max((-a["yshift"] - (marker_size // 2 + 6) for a in annotations), default=0)
        per_level = 110 + 2 * lowest
        height = int(min(1600, max(420, 170 + per_level * vis_depth)))
    digest = hashlib.blake2b(digest_size=8)
    digest.update(tree.structure_digest().encode())
    digest.update(np.flatnonzero(collapsed).tobytes())
    digest.update(str(n_visible).encode())
    top = _top_margin(fig, width)
    heading = {"text": title, "x": 0.01, "xanchor": "left"}
    if top > 90:  # the title at the top, not halfway down the margin, where the legend is
        heading.update(y=1 - 12 / height, yanchor="top")
    fig.update_layout(
        title=heading,
        height=height,
        template="plotly_white",
        margin={"l": 20, "r": 20, "t": top, "b": 20},
        xaxis={"visible": False, "range": [-0.8, max(n_terminal - 1, 0) + 0.8]},
        yaxis={"visible": False, "range": [-vis_depth - 0.55, 0.4]},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0},
        hoverlabel={"align": "left"},
        uirevision=digest.hexdigest(),
        clickmode="event",
        annotations=annotations,
    )


def _top_margin(fig, width: int | None) -> int:
    """Pixels above the plot for the title and the legend's rows: 90 (a title and one
    legend row), more when ``width`` (the figure's, px) wraps the legend on more rows,
    which would otherwise run into the title.  A wrapped horizontal legend is a grid whose
    columns are as wide as its widest entry (about 30 px plus 7 px per character)."""
    if width is None:
        return 90
    names = [t.name for t in fig.data if t.showlegend is not False and t.name]
    if not names:
        return 90
    room = max(width - TREE_SIDE_MARGINS, 100)
    entry = max(30 + 7 * len(name) for name in names)
    if entry * len(names) <= room:
        return 90
    rows = math.ceil(len(names) / max(1, int(room // entry)))
    return max(90, 50 + 22 * rows)


def tree_figure(
    tree: TreeArrays,
    *,
    feature_names: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
    highlight_path: Sequence[int] | None = None,
    collapse_depth: int | None = None,
    collapsed_nodes: Sequence[int] = (),
    title: str | None = None,
    height: int | None = None,
    node_extra: Mapping[int, str] | Sequence[str] | None = None,
    show_labels: bool | None = None,
    width: int | None = None,
) -> go.Figure:
    """Draw a tree as a plotly figure (pure function; no graphviz).

    Parameters
    ----------
    tree : TreeArrays
        Any TreeLab or converted scikit-learn tree.
    feature_names, class_names : sequences of str, optional
        Display names; default ``tree.feature_names`` / ``str(tree.classes_)``.
    highlight_path : sequence of int, optional
        The decision path of one sample (root first, as :meth:`TreeArrays.decision_path`
        returns it), drawn with thick black edges and rings, legend entry "path of
        selected sample" (the path stops at a collapsed node).
    collapse_depth : int, optional
        Internal nodes at this depth are drawn as one triangle each, hiding everything
        below (docs/spec.md 0.7 suggests 4 for big trees).  ``None`` shows every node.
    collapsed_nodes : sequence of int
        Further internal nodes drawn collapsed (e.g. toggled by clicks).
    title : str, optional
        Figure title; default states nodes, leaves and depth.
    height : int, optional
        Pixels; default grows with the visible depth.
    node_extra : mapping node id -> str (or sequence indexed by node id), optional
        Extra hover line per node (p-value, bounds, ...).  p-values and bounds stored in
        the tree are shown anyway.
    show_labels : bool, optional
        Text on nodes (short rule at splits, majority class or mean at leaves, True/False
        on edges); default only when at most 31 nodes are visible.
    width : int, optional
        Pixels the figure is shown at (a page's half-width column: about 420), used to
        place the node labels so that none overlaps: neighbours too close are staggered on
        up to :data:`LABEL_ROWS` rows, and a label with no room on any is left out (its
        hover has it).  Default: :data:`LABEL_PLOT_WIDTH` px of plot.  The figure itself
        still takes its container's width.

    Returns
    -------
    go.Figure
        Traces: edges, edge labels, split nodes, leaves (one trace per majority class, or one
        trace coloured by the mean for regression), collapsed subtrees, and the highlighted
        path.  Node traces carry ``customdata`` = node id (int) and ``meta={'role':
        'nodes'}``.

    Raises
    ------
    ValueError
        A node id out of range in ``highlight_path`` or ``collapsed_nodes``, or a wrong
        number of names.
    """
    if not isinstance(tree, TreeArrays):
        raise TypeError(f"tree_figure takes a TreeArrays, got {type(tree).__name__}")
    for what, nodes in (("collapsed_nodes", collapsed_nodes), ("highlight_path", highlight_path)):
        for v in nodes if nodes is not None else ():
            if not 0 <= int(v) < tree.node_count:
                raise ValueError(f"{what}: node {v} is out of range [0, {tree.node_count})")
    names = tree.feature_labels(None if feature_names is None else list(feature_names))
    classification = tree.task == "classification"
    cnames = (
        tree.class_names(None if class_names is None else list(class_names))
        if classification
        else None
    )

    order, collapsed = _visible_nodes(tree, collapse_depth, collapsed_nodes)
    xs = _positions(tree, order, collapsed)
    depth = tree.depth
    ys = -depth.astype(np.float64)
    cl, cr = tree.children_left, tree.children_right
    is_leaf = cl == TREE_LEAF
    n_visible = len(order)
    labels_on = n_visible <= MAX_LABELLED_NODES if show_labels is None else bool(show_labels)
    size, n_leaves_below = _subtree_sizes(tree)

    splits = [v for v in order if not is_leaf[v] and not collapsed[v]]
    leaves = [v for v in order if is_leaf[v]]
    folded = [v for v in order if collapsed[v]]
    hover = _node_hovers(tree, order, collapsed, names, cnames, node_extra, size, n_leaves_below)

    n_terminal = len(leaves) + len(folded)
    marker_size = 26 if n_terminal <= 16 else (16 if n_terminal <= 64 else 10)
    fig = go.Figure()

    _add_edges(fig, splits, xs, ys, cl, cr, labels_on)
    path = _add_path(fig, tree, highlight_path, collapsed, xs, ys)
    node_labels = _add_nodes(
        fig, tree, splits, leaves, folded, xs, ys, hover, names, cnames, size, marker_size
    )
    if path:
        _add_path_rings(fig, path, xs, ys, marker_size)
    _tree_layout(
        fig,
        tree,
        order,
        collapsed,
        folded,
        depth,
        n_terminal,
        node_labels,
        xs,
        ys,
        marker_size,
        labels_on,
        title,
        height,
        width,
    )
    return fig


def _node_hovers(
    tree, order, collapsed, names, cnames, node_extra, size, n_leaves_below
) -> dict[int, str]:
    """Hover text of every visible node of :func:`tree_figure` (``node_extra``: a mapping
    or a sequence of extra lines by node id; ``size`` / ``n_leaves_below``: nodes and
    leaves of each subtree)."""
    depth = tree.depth
    is_leaf = tree.children_left == TREE_LEAF

    def extra_for(node: int) -> str | None:
        if node_extra is None:
            return None
        if isinstance(node_extra, Mapping):
            return node_extra.get(node)
        return node_extra[node] if node < len(node_extra) else None

    hover: dict[int, str] = {}
    for v in order:
        kind = "leaf" if is_leaf[v] else ("collapsed" if collapsed[v] else "split")
        hidden = (int(size[v] - 1), int(n_leaves_below[v])) if collapsed[v] else None
        hover[v] = _hover(tree, v, int(depth[v]), names, cnames, kind, hidden, extra_for(v))
    return hover


# ---------------------------------------------------------------------------------------
# text export
# ---------------------------------------------------------------------------------------


def tree_text(
    tree: TreeArrays,
    feature_names: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
    max_depth: int = 10,
    decimals: int = 2,
) -> str:
    """The tree as text in scikit-learn's ``export_text`` style, with class names.

    ::

        |--- petal width (cm) <= 0.80
        |   |--- class: setosa
        |--- petal width (cm) >  0.80
        |   |--- ...

    Nodes deeper than ``max_depth`` are summarised as ``truncated branch of depth d``.
    Regression leaves show ``value: [mean]``.  Built with an explicit stack (no recursion).
    """
    if max_depth < 0:
        raise ValueError(f"max_depth must be >= 0, got {max_depth}")
    names = tree.feature_labels(None if feature_names is None else list(feature_names))
    cnames = (
        tree.class_names(None if class_names is None else list(class_names))
        if tree.task == "classification"
        else None
    )
    cl, cr = tree.children_left, tree.children_right
    size_depth = _subtree_depths(tree)

    def leaf_text(node: int) -> str:
        v = tree.value[node, 0]
        if cnames is not None:
            return f"class: {cnames[int(np.argmax(v))]}"
        return f"value: [{float(v[0]):.{decimals}f}]"

    lines: list[str] = []
    if cl[0] == TREE_LEAF:
        return f"|--- {leaf_text(0)}\n"
    # stack items: ("node", id, level) or ("line", text)
    stack: list[tuple] = [("node", 0, 1)]
    while stack:
        item = stack.pop()
        if item[0] == "line":
            lines.append(item[1])
            continue
        _, node, level = item
        indent = "|   " * (level - 1) + "|---"
        if cl[node] == TREE_LEAF:
            lines.append(f"{indent} {leaf_text(node)}")
            continue
        if level > max_depth + 1:
            lines.append(f"{indent} truncated branch of depth {int(size_depth[node])}")
            continue
        left = tree.rule(node, names, branch="left", decimals=decimals)
        right = tree.rule(node, names, branch="right", decimals=decimals)
        if tree.left_categories(node) is None:
            right = right.replace(" > ", " >  ", 1)
        stack.append(("node", int(cr[node]), level + 1))
        stack.append(("line", f"{indent} {right}"))
        stack.append(("node", int(cl[node]), level + 1))
        lines.append(f"{indent} {left}")
    return "\n".join(lines) + "\n"


def _tied_classes(values: np.ndarray) -> np.ndarray:
    """(n_nodes,) bool: the node's largest class fractions are equal (to 1e-12)."""
    top = values.max(axis=1, keepdims=True)
    return np.isclose(values, top, rtol=0, atol=1e-12).sum(axis=1) > 1


def _subtree_depths(tree: TreeArrays) -> np.ndarray:
    """Height of the subtree under each node, counting the node's own level (a leaf is 1)."""
    cl, cr = tree.children_left, tree.children_right
    h = np.ones(tree.node_count, dtype=np.int64)
    for node in np.argsort(tree.depth, kind="stable")[::-1]:
        if cl[node] != TREE_LEAF:
            h[node] = 1 + max(h[cl[node]], h[cr[node]])
    return h
