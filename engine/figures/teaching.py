"""Figures of the Learn section: each lesson step names existing builders
(:class:`engine.teaching.lessons.FigureSpec`), :func:`step_figure` calls them; the challenge's
user tree is drawn by :func:`engine.figures.tree.tree_figure` and its split preview by
:func:`split_preview_figure`.  Pure functions of engine results (nothing is fitted here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from engine.figures.style import NEUTRAL, base_layout, palette


def _slices(
    slices,
    *,
    predictions: Mapping[str, float] | None = None,
    x_title: str | None = None,
    **kw,
) -> go.Figure:
    """:func:`engine.figures.partition.slice_figure` with each point prediction drawn as a
    dotted vertical line (its value in the legend) and, when given, the x-axis title
    ``x_title`` (the target's name with its unit)."""
    from engine.figures.partition import slice_figure

    fig = slice_figure(slices, **kw)
    if x_title:
        fig.update_xaxes(title_text=x_title)
    top = max((float(np.max(s["heights"])) for s in slices), default=1.0)
    for (name, value), colour in zip(
        (predictions or {}).items(), ["#000000", NEUTRAL, "#D55E00"], strict=False
    ):
        fig.add_scatter(
            x=[value, value],
            y=[0, top * 1.05],
            mode="lines",
            line=dict(color=colour, dash="dot", width=3),
            name=f"{name}: {value:.3g}",
            hovertemplate=f"{name} = {value:.4g}<extra></extra>",
        )
    return fig


def _builders() -> dict[str, Callable[..., go.Figure]]:
    from engine.figures.cit import cit_tree_figure
    from engine.figures.literati import gap_figure, node_shape_figure, shape_tree_figure
    from engine.figures.splits import candidates_figure, gain_curve_figure, threshold_scan_figure
    from engine.figures.tree import tree_figure
    from engine.figures.treegrad import attribution_figure, curves_figure

    return {
        "attribution": attribution_figure,
        "candidates": candidates_figure,
        "cit_tree": cit_tree_figure,
        "curves": curves_figure,
        "gain_curve": gain_curve_figure,
        "gap": gap_figure,
        "node_shape": node_shape_figure,
        "shape_tree": shape_tree_figure,
        "slices": _slices,
        "threshold_scan": threshold_scan_figure,
        "tree": tree_figure,
    }


#: Builder names a :class:`~engine.teaching.lessons.FigureSpec` may use.
BUILDERS = (
    "attribution",
    "candidates",
    "cit_tree",
    "curves",
    "gain_curve",
    "gap",
    "node_shape",
    "shape_tree",
    "slices",
    "threshold_scan",
    "tree",
)


def step_figure(spec) -> go.Figure:
    """Draw one :class:`~engine.teaching.lessons.FigureSpec` (``builder`` + ``kwargs``).

    Raises ``KeyError`` for a builder not in :data:`BUILDERS`.
    """
    builders = _builders()
    if spec.builder not in builders:
        raise KeyError(f"unknown figure builder {spec.builder!r}; builders: {list(BUILDERS)}")
    return builders[spec.builder](**spec.kwargs)


def split_preview_figure(
    edges: Any,
    counts: Any,
    threshold: float,
    *,
    feature_name: str,
    class_names: Sequence[str],
    curve_thresholds: Any = None,
    curve_gains: Any = None,
) -> go.Figure:
    """The chosen leaf's rows of one feature (histogram stacked by class) with the
    student's threshold as a line, and, when given, the impurity decrease at every
    midpoint underneath (the student's threshold and the best one marked).

    ``edges`` float (B + 1,) and ``counts`` int (K, B): the histogram
    (:class:`engine.teaching.challenge.SplitPreview`'s ``histogram_edges`` and
    ``histogram_counts``); ``curve_thresholds``/``curve_gains`` float (m,) its
    ``curve_thresholds`` and ``curve_gains``.
    """
    from plotly.subplots import make_subplots

    edges = np.asarray(edges, dtype=np.float64)
    counts = np.asarray(counts)
    has_curve = curve_thresholds is not None and len(curve_thresholds) > 0
    fig = make_subplots(
        rows=2 if has_curve else 1,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.55, 0.45] if has_curve else [1.0],
        vertical_spacing=0.08,
    )
    for k, (name, colour) in enumerate(zip(class_names, palette(len(class_names)), strict=True)):
        fig.add_bar(
            x=(edges[1:] + edges[:-1]) / 2,
            y=counts[k],
            width=np.diff(edges),
            name=str(name),
            marker_color=colour,
            row=1,
            col=1,
            hovertemplate=f"{name}: %{{y}} rows<extra></extra>",
        )
    fig.add_vline(x=threshold, line=dict(color="#000000", width=3, dash="dash"), row=1, col=1)
    fig.update_yaxes(title_text="rows in the leaf", row=1, col=1)
    if has_curve:
        t = np.asarray(curve_thresholds, dtype=np.float64)
        g = np.asarray(curve_gains, dtype=np.float64)
        fig.add_scatter(
            x=t,
            y=g,
            mode="lines",
            line=dict(color=NEUTRAL, width=2),
            name="impurity decrease at each threshold",
            row=2,
            col=1,
        )
        ok = np.isfinite(g)
        if ok.any():
            best = int(np.flatnonzero(ok)[np.argmax(g[ok])])
            fig.add_scatter(
                x=[t[best]],
                y=[g[best]],
                mode="markers",
                marker=dict(symbol="star", size=16, color="#D55E00"),
                name=f"best threshold {t[best]:.4g}",
                row=2,
                col=1,
            )
            here = int(np.argmin(np.abs(t - threshold)))
            fig.add_scatter(
                x=[t[here]],
                y=[g[here]],
                mode="markers",
                marker=dict(symbol="circle", size=13, color="#000000"),
                name=f"your threshold {threshold:.4g}",
                row=2,
                col=1,
            )
        fig.update_yaxes(title_text="Gini decrease", row=2, col=1)
    fig.update_xaxes(title_text=feature_name, row=2 if has_curve else 1, col=1)
    fig.update_layout(
        **base_layout(f"Rows of the leaf by {feature_name}, split at {threshold:.4g}"),
        barmode="stack",
        bargap=0,
        height=480 if has_curve else 320,
    )
    return fig
