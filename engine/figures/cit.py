"""Plotly figures of conditional inference trees and forests (docs/spec.md section 4).

Pure functions of fitted results -> ``go.Figure``; usable from a notebook::

    from engine.cit import ConditionalInferenceTreeClassifier
    from engine.figures.cit import cit_tree_figure, null_histogram_figure
    est = ConditionalInferenceTreeClassifier(keep_null=True, random_state=0).fit(X, y)
    cit_tree_figure(est, feature_names=names).show()

* :func:`cit_tree_figure` -- the tree, partykit style: the stage-A p-value under every split's
  rule, ``n`` and the majority class (or the mean) at every leaf (the class mix is
  :func:`leaf_distribution_figure`); node ids in ``customdata``.
* :func:`leaf_distribution_figure` -- class fractions per leaf (stacked bars) or box plots
  of ``y`` per leaf (regression).
* :func:`null_histogram_figure` -- a permutation null distribution with the observed
  statistic and the tail that counts towards the p-value.
* :func:`threshold_statistic_figure` -- stage B: weighted child impurity over the candidate
  thresholds, the tested ones with their p-values, the chosen one.
* :func:`rankings_figure`, :func:`top_k_figure`, :func:`selection_bias_figure`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.figures.style import (
    HIGHLIGHT,
    NEUTRAL,
    base_layout,
    palette,
    reference_line,
    wrap_text,
)
from engine.figures.tree import class_color, tree_figure
from engine.tree import TreeArrays

#: Compact figures (half page width): legend under the x-axis title, room for a subtitle.
_LEGEND_BELOW = dict(
    legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0),
    margin=dict(l=60, r=20, t=110, b=120),
)


def _fmt_p(p: float) -> str:
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


#: Height (px) of the figure of a tree that is a single leaf: its title, legend and leaf.
SINGLE_LEAF_HEIGHT = 280


def single_leaf_note(est, tree: TreeArrays | None = None) -> str:
    """Why the fitted conditional inference tree ``est`` is a single leaf, in words: "no
    split was significant at alpha = 0.05 (the root's smallest adjusted p-value: 0.31)"
    when stage A stopped it, else the reason :func:`engine.cit.service.leaf_reason` gives
    (too few rows, maximum depth, a pure node, stage B...).  ``tree``: the TreeArrays
    drawn (default ``est.tree_``)."""
    from engine.cit.service import leaf_reason

    t = est.tree_ if tree is None else tree
    rec = est.node_records_[0] if len(est.node_records_) else {}
    compared = rec.get("p_values_adjusted", rec.get("p_values"))
    if "alpha_selector" in rec and compared and not min(compared) < rec["alpha_selector"]:
        which = "adjusted p-value" if "p_values_adjusted" in rec else "p-value"
        return (
            f"no split was significant at alpha = {float(est.alpha_selector):.3g} (the "
            f"root's smallest {which}: {_fmt_p(float(min(compared)))})"
        )
    reason = leaf_reason(rec, float(t.impurity[0]), rows=int(t.n_node_samples[0]), depth=0, est=est)
    return reason.removesuffix(", so the node is a leaf")


def cit_tree_figure(
    est,
    *,
    tree: TreeArrays | None = None,
    feature_names: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
    collapse_depth: int | None = None,
    title: str | None = None,
    highlight_node: int | None = None,
) -> go.Figure:
    """The fitted tree with the stage-A p-value under every split rule and ``n`` at leaves.

    Parameters
    ----------
    est : fitted conditional inference tree (``tree_``, ``p_value_selector_``,
        ``p_value_splitter_``, ``n_permutations_selector_``, ``n_permutations_splitter_``).
    tree : the TreeArrays to draw (default ``est.tree_``; pass a labelled copy to show
        category and class labels).
    collapse_depth : internal nodes at this depth drawn collapsed (default: 4 when the tree
        has more than 31 nodes, else none).
    highlight_node : a node id drawn with a thick orange ring (the selected node).

    Returns
    -------
    go.Figure from :func:`engine.figures.tree.tree_figure` (a single leaf:
    :data:`SINGLE_LEAF_HEIGHT` px, its title says why, :func:`single_leaf_note`) whose
    split labels read
    ``rule`` / ``p = ...`` and leaf labels ``majority`` (or mean) / ``leaf <id>, n = ...``
    (the id the leaf charts name); every node's
    hover adds the stage-A and stage-B p-values and permutations.  Node traces carry the
    node id in ``customdata``.
    """
    t = est.tree_ if tree is None else tree
    n = t.node_count
    if collapse_depth is None and n > 31:
        collapse_depth = 4
    extra = []
    for v in range(n):
        if t.children_left[v] < 0:
            extra.append(None)
            continue
        rec = est.node_records_[v] if v < len(est.node_records_) else {}
        if rec.get("p_value_method") == "asymptotic":
            stage_a = f"stage A adjusted p = {_fmt_p(float(est.p_value_selector_[v]))} (asymptotic)"
        else:
            stage_a = (
                f"stage A p = {_fmt_p(float(est.p_value_selector_[v]))} "
                f"({int(est.n_permutations_selector_[v])} permutations)"
            )
        if "split_statistic" in rec:
            stage_b = (
                f"stage B: largest {rec['split_statistic']} statistic "
                f"{float(rec.get('split_statistic_value', np.nan)):.4g}"
            )
        else:
            stage_b = (
                f"stage B p = {_fmt_p(float(est.p_value_splitter_[v]))} "
                f"({int(est.n_permutations_splitter_[v])} permutations)"
            )
        extra.append(f"{stage_a}<br>{stage_b}")
    single = n == 1
    if title is None and single:
        title = (
            f"Conditional inference tree: a single leaf (n = {int(t.n_node_samples[0])})"
            f"<br><sub>{single_leaf_note(est, t)}</sub>"
        )
    elif title is None:
        title = (
            f"Conditional inference tree: {t.node_count} nodes, {t.n_leaves} leaves, "
            f"depth {t.max_depth} (p = stage-A p-value of the split)"
        )
    fig = tree_figure(
        t,
        feature_names=feature_names,
        class_names=class_names,
        collapse_depth=collapse_depth,
        title=title,
        node_extra=extra,
        height=SINGLE_LEAF_HEIGHT if single else None,
    )
    if single:  # the two-line title at the top, the legend under it
        fig.update_layout(margin_t=120, title_y=1 - 10 / SINGLE_LEAF_HEIGHT, title_yanchor="top")
        fig.update_yaxes(range=[-1.0, 0.6])  # room for the selection ring and the label
    # map marker positions back to node ids, then extend the labels
    pos = {}
    for tr in fig.data:
        if isinstance(tr.meta, dict) and tr.meta.get("role") == "nodes":
            for x, y, v in zip(tr.x, tr.y, tr.customdata, strict=True):
                pos[(round(float(x), 6), round(float(y), 6))] = int(v)
    anns = []
    for a in fig.layout.annotations:
        v = pos.get((round(float(a.x), 6), round(float(a.y), 6)))
        a = a.to_plotly_json()
        if v is not None and v < n:
            if t.children_left[v] >= 0 and np.isfinite(est.p_value_selector_[v]):
                a["text"] = f"{a['text']}<br>p = {_fmt_p(float(est.p_value_selector_[v]))}"
            elif t.children_left[v] < 0:  # "leaf 4": the name the leaf charts use
                a["text"] = f"{a['text']}<br>leaf {v}, n = {int(t.n_node_samples[v])}"
        anns.append(a)
    fig.layout.annotations = anns
    if highlight_node is not None and 0 <= int(highlight_node) < n:
        key = {v: xy for xy, v in pos.items()}.get(int(highlight_node))
        if key is not None:
            fig.add_trace(
                go.Scatter(
                    x=[key[0]],
                    y=[key[1]],
                    mode="markers",
                    hoverinfo="skip",
                    marker=dict(
                        symbol="circle-open",
                        size=44,
                        color=HIGHLIGHT,
                        line=dict(width=4, color=HIGHLIGHT),
                    ),
                    name=f"selected node {int(highlight_node)}",
                    meta={"role": "selected"},
                )
            )
    return fig


def leaf_distribution_figure(
    tree: TreeArrays,
    leaf_of,
    y,
    *,
    class_names=None,
    target: str | None = None,
    title: str | None = None,
) -> go.Figure:
    """Class mix (classification: stacked bars of class fractions, one bar per leaf) or
    the distribution of ``y`` (regression: one box per leaf) of the rows reaching each leaf.

    ``leaf_of`` (n,) int: the leaf each row reaches (``tree.apply(X)``), ``y`` (n,) class
    codes (classification) or values; leaves are listed left to right in node-id order,
    labelled "leaf <id> (n)".  ``target`` names the regression axis (the target column).
    """
    leaf_of = np.asarray(leaf_of, dtype=np.int64)
    y = np.asarray(y)
    leaves = np.flatnonzero(tree.children_left < 0)
    labels = [f"leaf {v} ({int((leaf_of == v).sum())})" for v in leaves]
    fig = go.Figure()
    if tree.task == "classification":
        cnames = tree.class_names(None if class_names is None else list(class_names))
        counts = np.array(
            [[np.sum((leaf_of == v) & (y == k)) for k in range(len(cnames))] for v in leaves],
            dtype=np.float64,
        )
        frac = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
        for k, cname in enumerate(cnames):
            fig.add_trace(
                go.Bar(
                    x=labels,
                    y=frac[:, k],
                    name=str(cname),
                    marker_color=class_color(k, len(cnames)),
                    customdata=np.column_stack([counts[:, k], leaves]),
                    hovertemplate=(
                        f"{cname}: %{{y:.3f}} (%{{customdata[0]:.0f}} rows)"
                        "<br>leaf %{customdata[1]}<extra></extra>"
                    ),
                )
            )
        fig.update_layout(
            **base_layout(
                title or "Class mix of the training rows in each leaf", barmode="stack", height=380
            )
        )
        fig.update_yaxes(title_text="fraction of the leaf's rows", range=[0, 1])
    else:
        for v, lab in zip(leaves, labels, strict=True):
            fig.add_trace(
                go.Box(
                    y=y[leaf_of == v].astype(np.float64),
                    name=lab,
                    marker_color=palette(1)[0],
                    boxmean=True,
                    showlegend=False,
                )
            )
        fig.update_layout(
            **base_layout(
                title
                or "Target values of the training rows in each leaf (box: quartiles, dashed: mean)",
                height=380,
            )
        )
        fig.update_yaxes(title_text=str(target) if target else "target")
    fig.update_xaxes(title_text="leaf (rows)")
    return fig


def null_histogram_figure(
    null,
    observed: float,
    *,
    p_value: float | None = None,
    tail: str = "right",
    name: str = "statistic",
    level: float | None = None,
    title: str | None = None,
    bins: int = 40,
) -> go.Figure:
    """Histogram of a permutation null distribution with the observed statistic marked.

    ``null`` (B,) the statistic under B label permutations; ``observed`` the statistic on the
    data; ``tail`` 'right' (stage A: large is significant) or 'left' (stage B: small
    weighted child impurity is significant).  Bars in the counted tail (>= observed, or <=)
    are drawn in orange, the others grey; the title states the +1 p-value
    (1 + #tail) / (B + 1) (or the given ``p_value``).
    """
    null = np.asarray(null, dtype=np.float64).reshape(-1)
    if null.size == 0:
        raise ValueError("the null distribution is empty")
    if tail not in ("right", "left"):
        raise ValueError(f"tail must be 'right' or 'left', got {tail!r}")
    tol = 1e-12 * max(1.0, abs(observed))
    in_tail = null >= observed - tol if tail == "right" else null <= observed + tol
    count = int(in_tail.sum())
    if p_value is None:
        p_value = (1 + count) / (null.size + 1)
    lo = float(min(null.min(), observed))
    hi = float(max(null.max(), observed))
    if hi <= lo:
        hi = lo + 1e-9
    edges = np.linspace(lo, hi, bins + 1)
    fig = go.Figure()
    for mask, label, colour in (
        (~in_tail, "permutations in the other tail", NEUTRAL),
        (in_tail, f"permutations at least as extreme ({count})", HIGHLIGHT),
    ):
        fig.add_trace(
            go.Histogram(
                x=null[mask],
                xbins=dict(
                    start=edges[0], end=edges[-1] + 1e-12, size=(edges[-1] - edges[0]) / bins
                ),
                name=label,
                marker_color=colour,
                opacity=0.85,
                hovertemplate="%{x}<br>%{y} permutations<extra></extra>",
            )
        )
    fig.add_vline(x=float(observed), line=dict(color="#000000", width=3, dash="dash"))
    fig.add_trace(
        go.Scatter(
            x=[float(observed)],
            y=[0],
            mode="markers",
            marker=dict(symbol="triangle-up", size=14, color="#000000"),
            name=f"observed {name} = {observed:.4g}",
            hovertemplate=f"observed: {observed:.6g}<extra></extra>",
        )
    )
    lvl = "" if level is None else f", level {level:.3g}"
    head = title or f"Permutation null of the {name}"
    fig.update_layout(
        **base_layout(
            f"{head}<br><sup>B = {null.size} permutations, "
            f"p = {_fmt_p(float(p_value))} ({tail} tail{lvl})</sup>",
            barmode="overlay",
            height=440,
            **_LEGEND_BELOW,
        )
    )
    fig.update_layout(title_y=0.96)
    fig.update_xaxes(title_text=name)
    fig.update_yaxes(title_text="permutations")
    return fig


def threshold_statistic_figure(
    record: Mapping,
    *,
    feature_name: str = "feature",
    parent_impurity: float | None = None,
    category_labels: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Stage B at one node: weighted child impurity over every candidate threshold (line),
    the thresholds that were permutation-tested (markers with their p-values, orange when
    p < alpha''), the chosen threshold (dashed line) and the parent's impurity.

    ``record`` is one entry of ``node_records_`` of a split node.  For a categorical feature
    the x-axis is the position in ``category_order`` (pass ``category_labels``, the labels
    of all codes, to name the categories going left).
    """
    if "candidate_thresholds" not in record:
        raise ValueError("this node has no stage-B record (it is a leaf before stage B)")
    if "split_statistic" in record:
        return _maxstat_figure(record, feature_name=feature_name, title=title)
    t = np.asarray(record["candidate_thresholds"], dtype=np.float64)
    s = np.asarray(record["candidate_threshold_statistics"], dtype=np.float64)
    tt = np.asarray(record["thresholds"], dtype=np.float64)
    ts = np.asarray(record["threshold_statistics"], dtype=np.float64)
    tp = np.asarray(record["threshold_p_values"], dtype=np.float64)
    level = float(record["alpha_splitter"])
    cat = "category_order" in record
    xlabel = f"threshold on {feature_name}"
    hover_left = None
    if cat:
        order = record["category_order"]
        lab = (
            [str(category_labels[c]) for c in order]
            if category_labels is not None
            else [str(c) for c in order]
        )
        hover_left = ["left: {" + ", ".join(lab[: int(np.floor(x)) + 1]) + "}" for x in t]
        xlabel = f"{feature_name}: categories sorted by mean target (split position)"
    fig = _candidate_curve(
        t,
        s,
        "every candidate",
        "threshold %{x:.4g}<br>weighted child impurity %{y:.4g}"
        + ("<br>%{text}" if cat else "")
        + "<extra></extra>",
        text=hover_left,
    )
    sig = tp < level
    for mask, label, colour in (
        (~sig, f"tested, p >= {level:.2g}", NEUTRAL),
        (sig, f"tested, p < {level:.2g}", HIGHLIGHT),
    ):
        if mask.any():
            fig.add_trace(
                go.Scatter(
                    x=tt[mask],
                    y=ts[mask],
                    mode="markers",
                    name=label,
                    marker=dict(size=11, color=colour, line=dict(color="#000", width=1)),
                    customdata=tp[mask],
                    hovertemplate=(
                        "threshold %{x:.4g}<br>weighted child impurity %{y:.4g}"
                        "<br>p = %{customdata:.3g}<extra></extra>"
                    ),
                )
            )
    if "chosen_threshold" in record:
        _chosen_threshold_line(fig, float(record["chosen_threshold"]))
    if parent_impurity is not None:
        reference_line(
            fig,
            y=float(parent_impurity),
            line=dict(color=NEUTRAL, dash="dot"),
            name=f"parent impurity {float(parent_impurity):.4g}",
        )
    fig.update_layout(
        **base_layout(
            title
            or f"Stage B on {feature_name}<br><sup>{t.size} candidate thresholds, "
            f"{tt.size} tested (level {level:.2g})</sup>",
            height=440,
            **_LEGEND_BELOW,
        )
    )
    fig.update_layout(title_y=0.96)
    fig.update_xaxes(title_text=xlabel)
    fig.update_yaxes(title_text="weighted child impurity (lower is better)")
    return fig


def _maxstat_figure(record: Mapping, *, feature_name: str, title: str | None) -> go.Figure:
    """ctree's stage B at one node: the two-sample statistic of every admissible cut point
    (line) and the chosen one, the largest (dashed line)."""
    t = np.asarray(record["candidate_thresholds"], dtype=np.float64)
    s = np.asarray(record["candidate_threshold_statistics"], dtype=np.float64)
    form = str(record["split_statistic"])
    fig = _candidate_curve(
        t,
        s,
        "every admissible cut point",
        f"threshold %{{x:.4g}}<br>{form} statistic %{{y:.4g}}<extra></extra>",
    )
    if "chosen_threshold" in record:
        _chosen_threshold_line(fig, float(record["chosen_threshold"]), " (largest statistic)")
    if title is None:  # drawn in half the page's width: the lines wrapped to fit it
        heading = wrap_text(f"Stage B on {feature_name}: maximally selected {form} statistic", 45)
        note = wrap_text(
            f"{t.size} admissible cut points (both sides keep the minimum leaf size); no "
            "test: stage A already chose the feature",
            70,
        )
        title = heading + "".join(f"<br><sup>{line}</sup>" for line in note.split("<br>"))
    fig.update_layout(**base_layout(title, height=460, **_LEGEND_BELOW))
    fig.update_layout(margin_t=130)
    fig.update_layout(title_y=0.96)
    fig.update_xaxes(title_text=f"threshold on {feature_name} (left: x <= threshold)")
    fig.update_yaxes(title_text=f"{form} two-sample statistic")
    return fig


def rankings_figure(
    table, methods: Sequence[str], *, top: int = 15, title: str | None = None
) -> go.Figure:
    """Grouped horizontal bars of normalised importances, one colour per method, for the
    first ``top`` rows of ``table`` (from :func:`engine.cit.report.rankings_table`, sorted
    by mean importance over the methods)."""
    sub = table.head(top).iloc[::-1]
    fig = go.Figure()
    for m, colour in zip(methods, palette(len(methods)), strict=True):
        fig.add_trace(
            go.Bar(
                y=sub["feature"],
                x=sub[m],
                name=m,
                orientation="h",
                marker_color=colour,
                customdata=[f"rank {r}" if pd.notna(r) else "not used" for r in sub[f"{m} rank"]],
                hovertemplate=f"{m}<br>%{{y}}: %{{x:.3f}} (%{{customdata}})<extra></extra>",
            )
        )
    fig.update_layout(
        **base_layout(
            title or f"Normalised importances, top {len(sub)} features by mean importance",
            barmode="group",
            height=max(380, 140 + 22 * len(sub) * max(1, len(methods)) // 2),
        )
    )
    fig.update_xaxes(title_text="importance (share of the method's total)")
    fig.update_yaxes(title_text="feature", automargin=True)
    return fig


def top_k_figure(
    curves: Mapping[str, Mapping], *, metric: str = "balanced accuracy", title: str | None = None
) -> go.Figure:
    """Downstream cross-validated score vs the number ``k`` of top-ranked features kept.

    ``curves`` maps a method name to ``{'k': ints, 'mean': floats, 'std': floats}`` (as
    returned by :func:`engine.cit.top_k_curve`); error bars are +- one standard deviation
    over folds.
    """
    fig = go.Figure()
    for (name, c), colour in zip(curves.items(), palette(len(curves)), strict=True):
        fig.add_trace(
            go.Scatter(
                x=np.asarray(c["k"]),
                y=np.asarray(c["mean"]),
                name=name,
                mode="lines+markers",
                line=dict(color=colour, width=2),
                error_y=dict(
                    type="data",
                    array=np.asarray(c.get("std", np.zeros(len(c["k"])))),
                    visible=True,
                    thickness=1,
                ),
                hovertemplate=f"{name}<br>k = %{{x}}<br>{metric} %{{y:.3f}}<extra></extra>",
            )
        )
    fig.update_layout(
        **base_layout(title or f"Top-k features: cross-validated {metric}", height=400)
    )
    ks = sorted({int(k) for c in curves.values() for k in c["k"]})
    # ticks at the k values measured (1, 2, 3, 5, 10, ...), not plotly's even steps
    fig.update_xaxes(
        title_text="k (number of top-ranked features kept)",
        tickmode="array" if ks else "auto",
        tickvals=ks or None,
    )
    fig.update_yaxes(title_text=f"{metric} (mean over folds, +- 1 sd)")
    return fig


def selection_bias_figure(
    importances: Mapping[str, Sequence[float]],
    feature_names: Sequence[str],
    is_noise: Sequence[bool],
    *,
    title: str | None = None,
) -> go.Figure:
    """Importances of each method on data with added noise features: one bar group per
    feature, noise features (``is_noise``) shaded and named in the axis; the legend states
    each method's total importance on noise."""
    names = [str(n) for n in feature_names]
    noise = np.asarray(is_noise, dtype=bool)
    fig = go.Figure()
    for (m, imp), colour in zip(importances.items(), palette(len(importances)), strict=True):
        v = np.asarray(imp, dtype=np.float64)
        share = float(v[noise].sum() / v.sum()) if v.sum() > 0 else 0.0
        fig.add_trace(
            go.Bar(
                x=names,
                y=v,
                name=f"{m} (noise share {share:.0%})",
                marker_color=colour,
                hovertemplate=f"{m}<br>%{{x}}: %{{y:.3f}}<extra></extra>",
            )
        )
    for i in np.flatnonzero(noise):
        fig.add_vrect(
            x0=i - 0.5, x1=i + 0.5, fillcolor="#DDDDDD", opacity=0.5, layer="below", line_width=0
        )
    fig.update_layout(
        **base_layout(
            title or "Importances with added noise features (grey background = pure noise)",
            barmode="group",
            height=420,
        )
    )
    fig.update_xaxes(title_text="feature", tickangle=-45 if len(names) > 12 else 0)
    fig.update_yaxes(title_text="normalised importance")
    return fig


def _candidate_curve(
    thresholds: np.ndarray, values: np.ndarray, name: str, hovertemplate: str, text=None
) -> go.Figure:
    """A new figure with stage B's statistic over the candidate thresholds (float64
    ``(c,)`` each) as one line, with markers when there are at most 60 candidates."""
    return go.Figure(
        go.Scatter(
            x=thresholds,
            y=values,
            mode="lines+markers" if thresholds.size <= 60 else "lines",
            name=name,
            line=dict(color=palette(1)[0], width=2),
            marker=dict(size=5),
            text=text,
            hovertemplate=hovertemplate,
        )
    )


def _chosen_threshold_line(fig: go.Figure, threshold: float, note: str = "") -> None:
    """The chosen threshold as a black dashed vertical line, in the legend as
    ``chosen <threshold><note>``."""
    reference_line(
        fig,
        x=threshold,
        line=dict(color="#000000", dash="dash", width=2),
        name=f"chosen {threshold:.4g}{note}",
    )
