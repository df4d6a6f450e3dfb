"""Figures of the step-through growth (:mod:`engine.teaching.growth`): the tree so far with
the examined node marked, CART's candidate scan, the conditional inference tree's stage-A
tests and the Partition Tree's waiting leaves.  They only draw the step records."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.figures.style import HIGHLIGHT, NEUTRAL, base_layout, palette
from engine.figures.tree import tree_figure

#: Features drawn in the CART scan figure (those with the largest best decrease).
MAX_SCAN_PANELS = 6


def growth_tree_figure(
    step, *, class_names: Sequence[str] | None = None, title: str | None = None
) -> go.Figure:
    """The tree after ``step`` (a :class:`engine.teaching.growth.GrowthStep`), drawn by
    :func:`engine.figures.tree.tree_figure` with the path to the examined node in thick
    black and that node ringed (legend "node examined at this step").  A Partition Tree's
    leaves are coloured by their cell's density."""
    tree = step.tree
    verb = {"split": "just split", "leaf": "made a leaf", "tests": "being tested"}[step.phase]
    fig = tree_figure(
        tree,
        class_names=class_names if tree.task == "classification" else None,
        highlight_path=step.path,
        title=title
        or (f"After step {step.index + 1}: {tree.node_count} nodes (ringed: the node {verb})"),
    )
    fig.update_traces(name="node examined at this step", selector={"legendgroup": "path"})
    fig.update_layout(margin={"t": 140}, legend={"y": 1.02})
    if step.method == "Partition Tree":
        fig.update_traces(
            marker_colorbar_title_text="cell density", selector={"name": "leaf (mean)"}
        )
    return fig


def cart_scan_figure(
    step, *, feature_names: Sequence[str], criterion: str, categories=None
) -> go.Figure:
    """Impurity decrease against the threshold, one panel per feature (the
    :data:`MAX_SCAN_PANELS` features with the largest best decrease, in column order), every
    candidate a marker; each panel's best candidate ringed and the chosen split a star.
    A categorical feature's candidates are its left category sets, numbered in scan order
    (the hover names the set).

    ``criterion``: the impurity's short name for the axes (``'Gini'``, ``'entropy'``,
    ``'squared error'``); ``categories``: per feature, the labels of its codes (or None)."""

    def set_text(s, left) -> str:
        labels = None if categories is None else categories[s.feature]
        return "{" + ", ".join(str(labels[c]) if labels else str(c) for c in left) + "}"

    def where(s) -> str:
        return set_text(s, s.best_left_set) if s.categorical else f"{s.best_threshold:.4g}"

    scans = [s for s in step.details["scans"] if s.best >= 0]
    if not scans:
        fig = go.Figure()
        fig.update_layout(**base_layout("No feature varies at this node: nothing to scan"))
        return fig
    ranked = sorted(scans, key=lambda s: -s.best_decrease)[:MAX_SCAN_PANELS]
    shown = [s for s in scans if s in ranked]
    if step.feature >= 0 and not any(s.feature == step.feature for s in shown):
        shown = [s for s in scans if s.feature == step.feature] + shown[:-1]
    colours = palette(len(feature_names))
    n_cols = 1 if len(shown) == 1 else 2
    n_rows = -(-len(shown) // n_cols)
    fig = make_subplots(
        rows=n_rows,
        cols=n_cols,
        vertical_spacing=min(0.2, 0.6 / n_rows),
        horizontal_spacing=0.1,
        subplot_titles=[
            f"{feature_names[s.feature]}: best {s.best_decrease:.3g} at {where(s)}" for s in shown
        ],
    )
    for i, s in enumerate(shown):
        row, col = i // n_cols + 1, i % n_cols + 1
        name = feature_names[s.feature]
        if s.categorical:  # candidates numbered in scan order, the set in the hover
            xs = np.arange(1, len(s.left_sets) + 1, dtype=np.float64)
            hover = [f"{name} in {set_text(s, left)}" for left in s.left_sets]
            template = "%{text}<br>decrease %{y:.4g}<extra></extra>"
            best_x = float(s.best + 1)
        else:
            xs, hover = s.thresholds, None
            template = f"{name} <= %{{x:.4g}}<br>decrease %{{y:.4g}}<extra></extra>"
            best_x = s.best_threshold
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=s.decreases,
                text=hover,
                mode="lines+markers" if not s.categorical else "markers",
                line={"color": colours[s.feature], "width": 2},
                marker={"size": 5 if not s.categorical else 9, "color": colours[s.feature]},
                name=name,
                showlegend=False,
                hovertemplate=template,
            ),
            row=row,
            col=col,
        )
        chosen = s.feature == step.feature
        fig.add_trace(
            go.Scatter(
                x=[best_x],
                y=[s.best_decrease],
                mode="markers",
                marker={
                    "symbol": "star" if chosen else "circle-open",
                    "size": 18 if chosen else 13,
                    "color": HIGHLIGHT if chosen else NEUTRAL,
                    "line": {"width": 2, "color": HIGHLIGHT if chosen else NEUTRAL},
                },
                name="chosen split" if chosen else "best on this feature",
                legendgroup="chosen" if chosen else "best",
                showlegend=chosen or (i == 0 and not chosen),
                hovertemplate=f"best: {where(s)}<br>decrease %{{y:.4g}}<extra></extra>",
            ),
            row=row,
            col=col,
        )
        fig.update_xaxes(
            title_text=f"category set of {name} (candidate no.)"
            if s.categorical
            else f"threshold on {name}",
            row=row,
            col=col,
        )
        if s.categorical:
            fig.update_xaxes(dtick=1, row=row, col=col)
        fig.update_yaxes(title_text=f"{criterion} decrease", row=row, col=col)
    fig.update_annotations(font_size=13)
    n_all = sum(s.thresholds.size for s in scans)
    title = f"Node {step.tree_node}: {criterion} decrease at all {n_all} candidate splits" + (
        f" ({len(shown)} of {len(scans)} features drawn)" if len(shown) < len(scans) else ""
    )
    fig.update_layout(
        **base_layout(
            title,
            height=max(360, 150 + 250 * n_rows),
            margin={"t": 80, "l": 70, "b": 110},
            legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0.0},
        )
    )
    return fig


def cit_tests_figure(step, *, feature_names: Sequence[str]) -> go.Figure:
    """Stage A at one node: every tested feature's adjusted p-value as a bar of
    ``-log10(p)`` (longer = stronger evidence), the level ``alpha`` as a dashed line and
    the chosen feature in orange."""
    rec = step.details["record"]
    feats = list(rec["features"])
    p_adj = np.asarray(step.details["p_adjusted"], dtype=np.float64)
    alpha = float(step.details["alpha"])
    with np.errstate(divide="ignore"):
        strength = -np.log10(np.clip(p_adj, 1e-300, 1.0))
    names = [feature_names[f] for f in feats]
    colours = [HIGHLIGHT if f == step.feature else NEUTRAL for f in feats]
    fig = go.Figure(
        go.Bar(
            x=strength,
            y=names,
            orientation="h",
            marker_color=colours,
            text=[f"p = {p:.3g}" for p in p_adj],
            textposition="auto",
            customdata=np.c_[p_adj, np.asarray(rec["p_values"], dtype=np.float64)],
            hovertemplate="%{y}<br>adjusted p %{customdata[0]:.3g}<br>raw p "
            "%{customdata[1]:.3g}<extra></extra>",
            name="adjusted p-value",
            showlegend=False,
        )
    )
    fig.add_vline(
        x=-np.log10(alpha),
        line_dash="dash",
        line_color="#000000",
        annotation_text=f"alpha = {alpha:g}",
        annotation_position="top",
    )
    verdict = "chosen in orange" if step.feature >= 0 else "none right of alpha: leaf"
    fig.update_layout(
        **base_layout(
            f"Stage A tests at node {step.tree_node}",
            height=max(300, 120 + 34 * len(feats)),
            xaxis_title=f"-log10(adjusted p); {verdict}",
            yaxis={"autorange": "reversed"},
            showlegend=False,
        )
    )
    return fig


def partition_gains_figure(step) -> go.Figure:
    """The leaves waiting to split before ``step``: each one's best gain (log-loss
    decrease), the one that splits in orange."""
    others = step.details["others"]
    labels = [f"node {step.tree_node}: {step.details['rule']}"] + [
        f"node {o[0]}: {o[3]}" + (f" <= {o[4]:.4g}" if np.isfinite(o[4]) else "") for o in others
    ]
    gains = [step.details["gain"]] + [o[1] for o in others]
    kinds = [step.details["kind"]] + [o[2] for o in others]
    fig = go.Figure(
        go.Bar(
            x=gains,
            y=labels,
            orientation="h",
            marker_color=[HIGHLIGHT] + [NEUTRAL] * len(others),
            text=[f"{g:.4g} ({k})" for g, k in zip(gains, kinds, strict=True)],
            textposition="auto",
            hovertemplate="%{y}<br>gain %{x:.4g}<extra></extra>",
            showlegend=False,
        )
    )
    fig.update_layout(
        **base_layout(
            "Waiting leaves: the largest gain splits next",
            height=max(280, 120 + 34 * len(labels)),
            xaxis_title="best split's gain (nats per row)",
            yaxis={"autorange": "reversed"},
            showlegend=False,
        )
    )
    return fig
