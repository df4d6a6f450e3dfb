"""Plotly figures for TreeGrad (Feature ranking page; usable from a notebook).

Pure functions of engine results (:mod:`engine.treegrad`, :mod:`engine.treegrad.explain`)
-> ``go.Figure``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.figures.style import NEUTRAL, base_layout, palette
from engine.figures.tree import tree_figure
from engine.tree import TreeArrays
from engine.treegrad.api import Curves, RankResult
from engine.treegrad.explain import BEST, BEST_BETA, RANDOM

#: Fixed colours for the baselines so they read the same on every chart.
BASELINE_STYLE = {
    RANDOM: dict(color=NEUTRAL, dash="dot"),
    BEST: dict(color="#000000", dash="dash"),
    BEST_BETA: dict(color="#999933", dash="dashdot"),
}


def _method_colours(names: Sequence[str]) -> dict[str, str]:
    methods = [n for n in names if n not in BASELINE_STYLE]
    return dict(zip(methods, palette(len(methods)), strict=True))


def top_features(scores: Mapping[str, np.ndarray], k: int | None) -> np.ndarray:
    """Indices of the ``k`` features with the largest max |score| over the methods (all
    when ``k`` is None or >= n), ordered by that magnitude, largest first."""
    mag = np.max(np.abs(np.stack([np.asarray(v, float) for v in scores.values()])), axis=0)
    order = np.argsort(-mag, kind="stable")
    return order if k is None or k >= order.size else order[:k]


def attribution_figure(
    scores: Mapping[str, np.ndarray],
    feature_names: Sequence[str],
    *,
    top_k: int | None = 15,
    normalise: bool = False,
    title: str = "Attributions",
    value_label: str = "attribution",
) -> go.Figure:
    """Horizontal bars, one panel per method side by side, features on a shared y axis.

    ``scores``: method -> ``(n,)`` float scores of one sample.  ``top_k`` keeps the features
    with the largest magnitude over all methods; ``normalise`` divides each method by its
    max |score| (so shapes compare).  Negative bars are hatched; hover shows the raw value
    and the rank.
    """
    names = list(scores)
    if not names:
        raise ValueError("no scores to plot")
    keep = top_features(scores, top_k)
    fn = [str(feature_names[j]) for j in keep]
    # side by side, long method names get two lines ("Weighted<br>Banzhaf(0.3)"): on one
    # line they run into the next panel's title on a 1280-pixel screen
    width = max(10, 84 // len(names))
    titles = ["<br>".join(textwrap.wrap(name, width)) or name for name in names]
    fig = make_subplots(
        rows=1, cols=len(names), shared_yaxes=True, subplot_titles=titles, horizontal_spacing=0.012
    )
    colours = _method_colours(names)
    for c, name in enumerate(names, start=1):
        raw = np.asarray(scores[name], float)
        ranks = np.empty(raw.size, int)
        ranks[np.argsort(-raw, kind="stable")] = np.arange(1, raw.size + 1)
        v = raw[keep]
        scale = np.max(np.abs(raw)) if normalise and np.max(np.abs(raw)) > 0 else 1.0
        fig.add_trace(
            go.Bar(
                x=v / scale,
                y=fn,
                orientation="h",
                name=name,
                showlegend=False,
                marker=dict(
                    color=colours[name],
                    pattern=dict(shape=["" if t >= 0 else "/" for t in v], solidity=0.55),
                ),
                customdata=np.stack([v, ranks[keep]], axis=1),
                hovertemplate="%{y}<br>" + name + ": %{customdata[0]:.4g}<br>rank %{customdata[1]}"
                " of " + str(raw.size) + "<extra></extra>",
            ),
            row=1,
            col=c,
        )
        fig.update_xaxes(
            zeroline=True,
            zerolinecolor="#444",
            row=1,
            col=c,
            nticks=4,
            title_text=("share of max |value|" if normalise else value_label) if c == 1 else None,
        )
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    height = max(320, 26 * len(fn) + 170)
    fig.update_layout(
        **base_layout(
            title, height=height, showlegend=False, margin=dict(l=150, r=20, t=110, b=60)
        ),
        bargap=0.25,
    )
    return fig


def kendall_figure(tau: pd.DataFrame, title: str = "Rank agreement (Kendall tau)") -> go.Figure:
    """Heat map of a Kendall tau matrix (:func:`engine.treegrad.explain.kendall_matrix`),
    -1 (reversed) .. 1 (same ranking), values printed in the cells."""
    z = tau.to_numpy(float)
    text = [["n/a" if not np.isfinite(v) else f"{v:.2f}" for v in row] for row in z]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(tau.columns),
            y=list(tau.index),
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            text=text,
            texttemplate="%{text}",
            colorbar=dict(title="tau"),
            hovertemplate="%{y} vs %{x}: tau = %{z:.3f}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        **base_layout(
            title,
            height=120 + 45 * len(tau),
            showlegend=False,
            margin=dict(l=190, r=20, t=60, b=120),
        )
    )
    return fig


def curve_label(name: str, auc: float) -> str:
    """Legend entry of a curve: the method and its AUC (mean of the n + 1 points)."""
    return f"{name} (AUC {auc:.4g})"


def curves_figure(
    curves: Mapping[str, Curves],
    which: str = "insertion",
    *,
    y_label: str = "model output",
    n_rows: int = 1,
    title: str | None = None,
) -> go.Figure:
    """Insertion or deletion curves (``which``) of several rankings; each legend entry
    carries its AUC (mean of the n + 1 points, :attr:`Curves.auc_insertion` /
    ``auc_deletion``).  Curves hold ``(n + 1,)`` arrays (a sample, or the mean over
    ``n_rows`` rows).  Baselines (random ranking, brute-force best, best Beta) are dashed.
    """
    if which not in ("insertion", "deletion"):
        raise ValueError(f"which must be 'insertion' or 'deletion', got {which!r}")
    colours = _method_colours(list(curves))
    fig = go.Figure()
    for name, cv in curves.items():
        y = np.asarray(getattr(cv, which), float)
        if y.ndim != 1:
            raise ValueError(f"{name}: expected one curve of shape (n + 1,), got {y.shape}")
        auc = float(y.mean())
        style = BASELINE_STYLE.get(name, dict(color=colours.get(name)))
        fig.add_trace(
            go.Scatter(
                x=np.arange(y.size),
                y=y,
                mode="lines+markers" if y.size <= 31 else "lines",
                name=curve_label(name, auc),
                line=dict(width=2.5, **style),
                marker=dict(size=5),
                meta={"method": name, "auc": auc},
                hovertemplate=f"{name}<br>k = %{{x}}<br>{y_label} = %{{y:.4g}}<extra></extra>",
            )
        )
    verb = "inserted" if which == "insertion" else "deleted"
    better = "higher AUC is better" if which == "insertion" else "lower AUC is better"
    rows = "one sample" if n_rows == 1 else f"mean over {n_rows} rows"
    fig.update_layout(
        **base_layout(
            title or f"{which.capitalize()} curves, {rows} ({better})",
            height=520,
            legend=dict(orientation="v", yanchor="top", y=-0.18, xanchor="left", x=0.0),
            margin=dict(l=70, r=20, t=60, b=60),
        )
    )
    fig.update_xaxes(title_text=f"number of features {verb} (in ranking order)", dtick=None)
    fig.update_yaxes(title_text=y_label)
    fig.update_layout(height=460 + 22 * len(curves))
    return fig


def ranker_figure(
    results: Mapping[str, RankResult],
    feature_names: Sequence[str],
    *,
    heat: str | None = None,
    top_k: int | None = 20,
    title: str = "TreeGrad-Ranker convergence",
) -> go.Figure:
    """z over iterations as a heat map (features x t, for the run ``heat``, default the
    first) above J(z_t) = (fbar(z_t) - fbar(1 - z_t)) / 2 for every run.  One sample's
    :class:`RankResult` each.  ``top_k`` features with the largest final |score|."""
    names = list(results)
    heat = heat or names[0]
    r = results[heat]
    zh = np.asarray(r.z_history, float)
    if zh.ndim != 2:
        raise ValueError("ranker_figure takes one sample's RankResult")
    keep = np.argsort(-np.abs(np.asarray(r.scores)), kind="stable")
    keep = keep if top_k is None else keep[:top_k]
    fig = make_subplots(
        rows=2,
        cols=1,
        row_heights=[0.6, 0.4],
        vertical_spacing=0.16,
        subplot_titles=[
            f"z_t of {heat} (t = 0 is z = 0.5; features by final |score|)",
            "objective J(z_t)",
        ],
    )
    fig.add_trace(
        go.Heatmap(
            z=zh[:, keep].T,
            x=np.arange(zh.shape[0]),
            y=[str(feature_names[j]) for j in keep],
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            colorbar=dict(title="z", len=0.55, y=0.78),
            hovertemplate="%{y}<br>t = %{x}<br>z = %{z:.3f}<extra></extra>",
            name="z",
        ),
        row=1,
        col=1,
    )
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    colours = _method_colours(names)
    for name, res in results.items():
        j = np.asarray(res.objective, float)
        fig.add_trace(
            go.Scatter(
                x=np.arange(j.size),
                y=j,
                mode="lines",
                name=f"J(z_t), {name}",
                line=dict(width=2.5, color=colours[name]),
                hovertemplate=name + "<br>t = %{x}<br>J = %{y:.5g}<extra></extra>",
            ),
            row=2,
            col=1,
        )
    fig.update_xaxes(title_text="iteration t", row=2, col=1)
    fig.update_yaxes(title_text="J(z_t) (model output units)", row=2, col=1)
    fig.update_layout(
        **base_layout(
            title,
            height=max(560, 22 * len(keep) + 420),
            legend=dict(orientation="h", y=-0.12, x=0.0, yanchor="top", xanchor="left"),
        )
    )
    return fig


def _short(name: str, width: int = 16) -> str:
    return name if len(name) <= width else name[: width - 1] + "\u2026"


def gamma_tree_figure(
    tree: TreeArrays,
    gammas: Any,
    path: Sequence[int],
    *,
    feature_names: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
    collapse_depth: int | None = None,
    title: str | None = None,
) -> go.Figure:
    """The tree with a sample's decision ``path`` (node ids, root first) highlighted and
    gamma written on each visible edge of the path and its sibling edges; every node's hover
    shows the gamma of its incoming edge.

    ``gammas``: float64 ``(node_count,)``, the gamma of the edge into each node
    (:func:`engine.treegrad.explain.edge_gammas`: cover(parent) / cover(child) where the
    sample takes the edge, 0 where it does not, NaN at the root).
    """
    g = np.asarray(gammas, dtype=np.float64)
    path = np.asarray(path, dtype=np.int64)
    names = tree.feature_labels(None if feature_names is None else list(feature_names))
    extra = {
        int(v): (
            f"gamma of the edge into this node: {g[v]:.4g}"
            if np.isfinite(g[v])
            else "root (no incoming edge)"
        )
        for v in range(tree.node_count)
    }
    fig = tree_figure(
        tree,
        feature_names=feature_names,
        class_names=class_names,
        highlight_path=path,
        collapse_depth=collapse_depth,
        node_extra=extra,
        title=title,
    )
    pos: dict[int, tuple[float, float]] = {}
    for tr in fig.data:
        if (
            isinstance(tr.meta, dict)
            and tr.meta.get("role") == "nodes"
            and tr.customdata is not None
        ):
            for node, xx, yy in zip(tr.customdata, tr.x, tr.y, strict=True):
                pos[int(node)] = (float(xx), float(yy))
    ann = []
    for parent in path[:-1]:
        for child in (tree.children_left[parent], tree.children_right[parent]):
            if int(parent) in pos and int(child) in pos:
                (x0, y0), (x1, y1) = pos[int(parent)], pos[int(child)]
                on = child in path
                # 70% of the way down the edge: clear of the True/False labels at mid-edge
                text = f"\u03b3={g[child]:.3g}"
                if on:
                    text = f"{_short(names[int(tree.feature[parent])])}: {text}"
                ann.append(
                    dict(
                        x=x0 + 0.7 * (x1 - x0),
                        y=y0 + 0.7 * (y1 - y0),
                        xref="x",
                        yref="y",
                        text=text,
                        showarrow=False,
                        font=dict(size=12, color="#000" if on else "#777"),
                        bgcolor="rgba(255,255,200,0.9)" if on else "rgba(255,255,255,0.8)",
                    )
                )
    fig.update_layout(annotations=list(fig.layout.annotations) + ann)
    return fig


def error_depth_figure(df: pd.DataFrame, title: str = "Shapley error vs tree depth") -> go.Figure:
    """Max abs error (log scale) vs actual tree depth per method, from
    :func:`engine.treegrad.explain.error_vs_depth_steps`'s DataFrame."""
    fig = go.Figure()
    colours = palette(df["method"].nunique())
    for c, (name, part) in zip(colours, df.groupby("method", sort=False), strict=True):
        part = part.sort_values("depth")
        err = np.maximum(part["max_abs_error"].to_numpy(float), 1e-17)
        fig.add_trace(
            go.Scatter(
                x=part["depth"],
                y=err,
                mode="lines+markers",
                name=name,
                line=dict(width=2.5, color=c),
                marker=dict(size=8),
                customdata=np.stack([part["leaves"], part["max_abs_error"]], axis=1),
                hovertemplate=name + "<br>depth %{x}, %{customdata[0]} leaves<br>max |error| = "
                "%{customdata[1]:.3g}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text="tree depth (levels)")
    fig.update_yaxes(
        title_text="max |phi - exact| (probability units, log scale)",
        type="log",
        exponentformat="power",
    )
    fig.update_layout(**base_layout(title, height=480))
    return fig


def runtime_figure(
    df: pd.DataFrame, title: str = "Runtime for one sample vs number of leaves"
) -> go.Figure:
    """Seconds (log) vs leaves (log) per method, from
    :func:`engine.treegrad.explain.runtime_vs_leaves_steps`."""
    fig = go.Figure()
    colours = palette(df["method"].nunique())
    for c, (name, part) in zip(colours, df.groupby("method", sort=False), strict=True):
        part = part.sort_values("leaves")
        fig.add_trace(
            go.Scatter(
                x=part["leaves"],
                y=part["seconds"] * 1e3,
                mode="lines+markers",
                name=name,
                line=dict(width=2.5, color=c),
                marker=dict(size=8),
                hovertemplate=name + "<br>%{x} leaves<br>%{y:.3g} ms<extra></extra>",
            )
        )
    fig.update_xaxes(title_text="leaves (log scale)", type="log", dtick=1)
    fig.update_yaxes(title_text="time (ms, log scale, best of repeats)", type="log", dtick=1)
    fig.update_layout(**base_layout(title, height=460))
    return fig
