"""Figures of the Optimal shape trees page (Literati, docs/spec.md section 1): the gap convergence
chart of the AO* search, the shape function of one node, and the shape tree itself.

Pure functions of engine results -> ``go.Figure`` (usable from a notebook)::

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

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.figures.style import FONT_SIZE, HIGHLIGHT, NEUTRAL, base_layout, log_ticks
from engine.figures.tree import _short_name, class_color, tree_figure
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
UB_COLOR = "#BB5566"
LB_COLOR = "#004488"
GAP_FILL = "rgba(187, 85, 102, 0.16)"
#: Breakpoint labels of a shape function closer than this fraction of the x-axis to the
#: previous label are moved one line down (up to three lines).
LABEL_GAP = 0.1
#: Pixels between the rows of the shape-function grid (tick labels plus a two-line title).
ROW_GAP_PX = 100
#: Times below this are drawn at this value on the log-time axis (the first snapshot is
#: often taken at t = 0).
MIN_TIME = 1e-3
#: Events of a trace (column ``event``) and how the gap chart marks them.
EVENT_STYLE = {
    "incumbent": ("new incumbent", "diamond", HIGHLIGHT, 10),
    "optimal": ("proven optimal", "star", "#117733", 18),
    "time_limit": ("time limit reached", "x", "#222222", 13),
    "stopped": ("stopped", "square", NEUTRAL, 11),
}


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
# gap convergence
# ---------------------------------------------------------------------------------------


def _thin_trace(trace: pd.DataFrame, max_points: int) -> pd.DataFrame:
    """At most about ``max_points`` rows: always the first and last rows, every event row and
    every row where UB changes, and evenly spaced rows in between."""
    n = len(trace)
    if n <= max_points:
        return trace
    keep = np.zeros(n, dtype=bool)
    keep[[0, n - 1]] = True
    keep[np.linspace(0, n - 1, max_points).astype(np.int64)] = True
    ub = trace["ub"].to_numpy(dtype=np.float64)
    keep[1:] |= ub[1:] != ub[:-1]
    if "event" in trace:
        keep |= trace["event"].fillna("").astype(str).to_numpy() != ""
    return trace.loc[keep]


def gap_figure(
    trace: pd.DataFrame,
    *,
    time_limit: float | None = None,
    title: str | None = None,
    height: int = 440,
    max_points: int = 1000,
    incumbents: Sequence | None = None,
) -> go.Figure:
    """Gap convergence of an anytime search: upper bound UB (the incumbent's objective) and
    admissible lower bound LB of the root over log time, the gap between them shaded, and
    the trace's events marked (new incumbent, proven optimal, time limit, stopped).

    With ``incumbents``, a slider (and a Play button) replays the search one incumbent at a
    time: step k draws the trace while incumbent k was the best tree (up to the time the
    next one was found; the last step: the whole trace, the figure's own state) and rings
    incumbent k.

    Parameters
    ----------
    trace : DataFrame
        One row per snapshot with columns ``time`` (seconds since the start), ``ub``, ``lb``
        (objective units: misclassified rows + penalties), optionally ``gap``,
        ``rel_gap``, ``iterations``, ``expanded``, ``solved``, ``pruned``, ``cache_size``,
        ``evictions`` (shown in the hover) and ``event`` ('' | 'incumbent' | 'optimal' |
        'time_limit' | 'stopped').  Without ``event``, a drop of UB marks a new incumbent.
        Rows are thinned to about ``max_points`` (events and UB changes kept).
    time_limit : float, optional
        Seconds; drawn as a dotted vertical line (the search stops there).
    title : str, optional
        Default: the last row's UB, LB and gap.
    height : int
        Pixels (plus 90 for the slider).
    incumbents : sequence of mappings with ``time`` and ``ub``, optional
        Every incumbent of the search in the order found (the estimator's ``incumbents_``;
        other keys are ignored).

    Returns
    -------
    go.Figure
        Traces in order: 'lower bound', 'upper bound' (filled down to LB: the gap), then one
        marker trace per event kind present, then (with ``incumbents``) the ringed
        incumbent.  The x-axis is logarithmic; times below :data:`MIN_TIME` are drawn at
        ``MIN_TIME``.  With ``incumbents``: one frame per incumbent (named ``"1"``,
        ``"2"``...), the last equal to the figure's data, and a slider at the last step.

    Raises
    ------
    ValueError
        When ``trace`` lacks ``time``, ``ub`` or ``lb``.
    """
    missing = [c for c in ("time", "ub", "lb") if c not in trace]
    if missing:
        raise ValueError(f"trace lacks column(s) {missing}; it needs time, ub and lb")
    fig = go.Figure()
    if len(trace) == 0:
        fig.update_layout(
            **base_layout(title or "Gap convergence (no snapshot yet)", height=height)
        )
        fig.update_xaxes(type="log", title_text="time since start (s, log scale)")
        fig.update_yaxes(title_text="objective (errors + penalties)")
        return fig
    tr = _thin_trace(trace.reset_index(drop=True), max_points)
    t = np.maximum(tr["time"].to_numpy(dtype=np.float64), MIN_TIME)
    ub = tr["ub"].to_numpy(dtype=np.float64)
    lb = tr["lb"].to_numpy(dtype=np.float64)
    gap = tr["gap"].to_numpy(dtype=np.float64) if "gap" in tr else ub - lb
    rel = (
        tr["rel_gap"].to_numpy(dtype=np.float64)
        if "rel_gap" in tr
        else gap / np.maximum(np.abs(ub), 1e-12)
    )
    counters = [
        c
        for c in ("iterations", "expanded", "solved", "pruned", "cache_size", "evictions")
        if c in tr
    ]
    custom = np.column_stack(
        [ub, lb, gap, 100 * rel] + [tr[c].to_numpy(dtype=np.float64) for c in counters]
    )
    hover = (
        "t = %{x:.3g} s<br>UB = %{customdata[0]:.4g}<br>LB = %{customdata[1]:.4g}"
        "<br>gap = %{customdata[2]:.4g} (%{customdata[3]:.2f} %)"
    )
    for i, c in enumerate(counters):
        hover += f"<br>{c.replace('_', ' ')}: %{{customdata[{4 + i}]:,.0f}}"
    fig.add_scatter(
        x=t,
        y=lb,
        mode="lines",
        line=dict(color=LB_COLOR, width=2.5, shape="hv"),
        name="lower bound LB (admissible)",
        customdata=custom,
        hovertemplate=hover + "<extra>LB</extra>",
    )
    fig.add_scatter(
        x=t,
        y=ub,
        mode="lines",
        line=dict(color=UB_COLOR, width=2.5, shape="hv"),
        fill="tonexty",
        fillcolor=GAP_FILL,
        name="upper bound UB (incumbent); shaded: gap",
        customdata=custom,
        hovertemplate=hover + "<extra>UB</extra>",
    )
    if "event" in tr:
        events = tr["event"].fillna("").astype(str).to_numpy()
    else:
        events = np.array(
            [""] + ["incumbent" if b < a else "" for a, b in zip(ub[:-1], ub[1:], strict=True)],
            dtype=object,
        )
    kinds = []
    for kind, (label, symbol, colour, size) in EVENT_STYLE.items():
        rows = np.flatnonzero(events == kind)
        if rows.size == 0:
            continue
        kinds.append(kind)
        fig.add_scatter(
            x=t[rows],
            y=ub[rows],
            mode="markers",
            name=label,
            marker=dict(symbol=symbol, size=size, color=colour, line=dict(width=1, color="white")),
            customdata=custom[rows],
            hovertemplate=f"<b>{label}</b><br>" + hover + "<extra></extra>",
        )
    if time_limit is not None and time_limit > 0:
        # on a log axis plotly places shapes in data units but annotations in log10 units
        tl = max(float(time_limit), MIN_TIME)
        fig.add_vline(x=tl, line=dict(color="#555555", dash="dot", width=1.5))
        fig.add_annotation(
            x=math.log10(tl),
            y=1.0,
            xref="x",
            yref="paper",
            yanchor="top",
            xanchor="right",
            showarrow=False,
            text=f"time limit {time_limit:g} s ",
            font=dict(color="#555555"),
        )
    if title is None:
        last = tr.iloc[-1]
        title = (
            f"Gap convergence: UB {float(last['ub']):.4g}, LB {float(last['lb']):.4g}, "
            f"gap {gap[-1]:.4g} ({100 * rel[-1]:.1f} %) after {float(last['time']):.2f} s"
        )
    hi = max(float(t.max()), float(time_limit or 0.0), 2 * MIN_TIME)
    lo = min(float(t.min()), hi / 10)
    fig.update_layout(**base_layout(title, height=height), hovermode="closest")
    low, high = math.log10(lo) - 0.1, math.log10(hi) + 0.1
    ticks = log_ticks(10**low, 10**high)
    fig.update_xaxes(
        type="log",
        title_text="time since start (s, log scale)",
        range=[low, high],
        # plain numbers at 1, 10, 100 ... (and 2, 5 on a short range), not plotly's digit
        # labels "6 7 8 9 1 2" between the decades
        tickvals=ticks,
        ticktext=[f"{v:g}" for v in ticks],
    )
    fig.update_yaxes(title_text="objective (errors + penalties)")
    if incumbents:
        _incumbent_slider(fig, tr, t, lb, ub, custom, events, kinds, incumbents, title, height)
    return fig


def _incumbent_slider(fig, tr, t, lb, ub, custom, events, kinds, incumbents, title, height):
    """Frames and a slider over ``incumbents`` for :func:`gap_figure` (see there)."""
    found = np.array([float(inc["time"]) for inc in incumbents], dtype=np.float64)
    levels = np.array([float(inc["ub"]) for inc in incumbents], dtype=np.float64)
    raw_time = tr["time"].to_numpy(dtype=np.float64)
    n = len(found)
    fig.add_scatter(
        x=[max(found[-1], MIN_TIME)],
        y=[levels[-1]],
        mode="markers",
        name="incumbent shown",
        marker=dict(symbol="circle-open", size=20, color=HIGHLIGHT, line=dict(width=3)),
        hovertemplate="incumbent shown: UB %{y:.4g} at %{x:.3g} s<extra></extra>",
    )
    # a fixed y range: every frame on the same scale as the whole run
    finite = np.concatenate([lb[np.isfinite(lb)], ub[np.isfinite(ub)], levels])
    low, high = float(finite.min()), float(finite.max())
    pad = 0.05 * max(high - low, 1.0)
    fig.update_yaxes(range=[low - pad, high + pad])
    frames, steps = [], []
    for k in range(n):
        # while incumbent k was the best: until the next one was found; the last: all rows
        held = raw_time < found[k + 1] if k + 1 < n else np.ones(raw_time.size, dtype=bool)
        data = [
            go.Scatter(x=t[held], y=lb[held], customdata=custom[held]),
            go.Scatter(x=t[held], y=ub[held], customdata=custom[held]),
        ]
        for kind in kinds:
            rows = np.flatnonzero(held & (events == kind))
            data.append(go.Scatter(x=t[rows], y=ub[rows], customdata=custom[rows]))
        data.append(go.Scatter(x=[max(found[k], MIN_TIME)], y=[levels[k]]))
        step_title = (
            title
            if k == n - 1
            else f"Incumbent #{k + 1} of {n}: UB {levels[k]:.4g}, found at {found[k]:.3g} s"
        )
        name = str(k + 1)
        frames.append(go.Frame(name=name, data=data, layout=dict(title_text=step_title)))
        steps.append(
            dict(
                method="animate",
                label=f"#{k + 1}",
                args=[
                    [name],
                    dict(
                        mode="immediate",
                        frame=dict(duration=0, redraw=True),
                        transition=dict(duration=0),
                    ),
                ],
            )
        )
    fig.frames = frames
    margin = fig.layout.margin
    fig.update_layout(
        height=height + 90,
        margin=dict(l=margin.l, r=margin.r, t=margin.t, b=(margin.b or 60) + 90),
        sliders=[
            dict(
                active=n - 1,
                steps=steps,
                x=0.08,
                len=0.92,
                y=-0.12,
                yanchor="top",
                currentvalue=dict(prefix="Incumbent "),
                pad=dict(t=30),
            )
        ],
        updatemenus=[
            dict(
                type="buttons",
                showactive=False,
                x=0.0,
                y=-0.12,
                xanchor="left",
                yanchor="top",
                pad=dict(t=40),
                buttons=[
                    dict(
                        label="Play",
                        method="animate",
                        args=[
                            None,
                            dict(
                                frame=dict(duration=600, redraw=True),
                                fromcurrent=False,
                                transition=dict(duration=0),
                            ),
                        ],
                    )
                ],
            )
        ],
    )


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
    # class histogram
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
                marker=dict(color=class_color(k), line_width=0),
                customdata=lo_hi,
                hovertemplate=f"class {cnames[k]}<br>(%{{customdata[0]:.4g}}, "
                "%{customdata[1]:.4g}]: %{y} rows<extra></extra>",
                row=2,
                col=1,
            )
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


# ---------------------------------------------------------------------------------------
# the tree with its shape functions
# ---------------------------------------------------------------------------------------


def _compact_shape(u: np.ndarray, cats: Sequence[str] | None) -> str:
    """'L 2.45 R 4.75 L' (sides between breakpoints), or the left category set."""
    if cats is not None:
        return "L " + side_text(u, "left", categories=cats)
    parts = ["L"]
    for i, v in enumerate(u):
        parts += [f"{v:.3g}", "R" if i % 2 == 0 else "L"]
    return " ".join(parts)


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
) -> go.Figure:
    """The tree drawn by :func:`engine.figures.tree.tree_figure`, with every internal node
    labelled by its shape function instead of a single threshold.

    Split nodes read ``feature`` over ``L u1 R u2 L`` (the sides between breakpoints); the
    edges say which values go that way (``<= 2.45 or > 4.75`` / ``(2.45, 4.75]``); the hover
    gives the full :func:`shape_rule`, the number of breakpoints K and, when the penalties
    are given, the node's cost ``lambda + alpha * K`` (misclassification units).  Node
    traces keep ``customdata`` = node id, so a page can read clicks.
    """
    names = tree.feature_labels(None if feature_names is None else list(feature_names))
    inner = internal_nodes(tree)
    bps = {v: node_breakpoints(tree, v) for v in inner}
    extra = {}
    for v in inner:
        k = bps[v].size
        line = f"breakpoints K = {k}: " + ", ".join(f"{b:.4g}" for b in bps[v])
        if split_penalty is not None and breakpoint_penalty is not None:
            cost = split_penalty + breakpoint_penalty * k
            line += (
                f"<br>cost \u03bb + \u03b1K = {split_penalty:.4g} + "
                f"{breakpoint_penalty:.4g} \u00d7 {k} = {cost:.4g}"
            )
        extra[v] = line
    if title is None:
        n_bp = sum(b.size for b in bps.values())
        title = (
            f"Shape tree: {len(inner)} split{'s' if len(inner) != 1 else ''}, "
            f"{n_bp} breakpoint{'s' if n_bp != 1 else ''}, {tree.n_leaves} leaves, "
            f"depth {tree.max_depth}"
        )
    fig = tree_figure(
        tree,
        feature_names=names,
        class_names=class_names,
        collapse_depth=collapse_depth,
        title=title,
        height=height,
        node_extra=extra,
    )
    # node coordinates from the node traces (customdata = node id)
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
    visible_splits = [v for v in inner if v in coords and int(tree.children_left[v]) in coords]
    labels_on = bool(fig.layout.annotations)
    # node labels: replace the '<= t' annotation of each visible split node
    if labels_on:
        by_xy = {coords[v]: v for v in visible_splits}
        anns = []
        for ann in fig.layout.annotations:
            v = by_xy.get((float(ann.x), float(ann.y)))
            if v is not None and tree.category_set(v) is None:
                j = int(tree.feature[v])
                cats = tree.categories[j] if tree.categories is not None else None
                ann = go.layout.Annotation(ann)
                ann.text = f"{_short_name(names[j])}<br>{_compact_shape(bps[v], cats)}"
            anns.append(ann)
        fig.layout.annotations = anns
    # edge labels: which values go each way
    fig.data = [t for t in fig.data if t.name != "edge labels"]
    lx, ly, lt, lp = [], [], [], []
    for v in visible_splits:
        if not labels_on and v != 0:
            continue
        j = int(tree.feature[v])
        cats = tree.categories[j] if tree.categories is not None else None
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
    if lx:
        fig.add_trace(
            go.Scatter(
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
        )
    return fig


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
        r, c = i // ncols + 1, i % ncols + 1
        j = int(tree.feature[v])
        cats = tree.categories[j] if tree.categories is not None else None
        u = node_breakpoints(tree, v)
        mask = np.asarray(reached[v], dtype=bool) & ~np.isnan(Xc[:, j])  # NaN: not on the line
        xs = Xc[mask, j]
        if xs.size == 0:
            continue
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
                marker=dict(color=class_color(k) if k >= 0 else NEUTRAL, line_width=0),
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
