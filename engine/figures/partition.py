"""Figures for the Partition Tree / Forest ("Conditional density" page), usable in a notebook.

Every builder is a pure function of engine results (``model.slice(x)``, ``model.trace_``,
``model.cells()``, :func:`engine.partition.explore.density_grid`) returning a plotly figure::

    from engine.partition import PartitionTreeRegressor
    from engine.figures.partition import slice_figure
    m = PartitionTreeRegressor().fit(X, y)
    s = m.slice(X[0])
    slice_figure([{"label": "row 0", "true_y": y[0], **s}], target="y").show()
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.figures.style import HIGHLIGHT, NEUTRAL, base_layout, palette, reference_line


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float | np.floating) else str(v)


def growth_figure(trace, *, forest: bool = False, title: str | None = None) -> go.Figure:
    """Train and validation NLL against the number of leaves (tree) or trees (forest).

    ``trace``: rows ``(n_leaves or n_trees, train_nll, val_nll)`` (``model.trace_``); NaN
    validation values (not evaluated at that split) are skipped. For a tree the train curve
    is the growth objective (loss of the unnormalised cells), for a forest the in-sample NLL.
    """
    t = np.asarray(trace, dtype=np.float64).reshape(-1, 3)
    unit = "trees" if forest else "leaves"
    fig = go.Figure()
    train_name = "train NLL (in-sample)" if forest else "train loss (growth objective)"
    fig.add_scatter(
        x=t[:, 0],
        y=t[:, 1],
        mode="lines+markers" if len(t) < 60 else "lines",
        name=train_name,
        line=dict(color=palette(1)[0]),
        hovertemplate=f"%{{x}} {unit}<br>train: %{{y:.4f}}<extra></extra>",
    )
    ok = np.isfinite(t[:, 2])
    if ok.any():
        fig.add_scatter(
            x=t[ok, 0],
            y=t[ok, 2],
            mode="lines+markers" if ok.sum() < 60 else "lines",
            name="validation NLL",
            line=dict(color=palette(2)[1]),
            hovertemplate=f"%{{x}} {unit}<br>validation: %{{y:.4f}}<extra></extra>",
        )
        best = int(np.nanargmin(np.where(ok, t[:, 2], np.nan)))
        fig.add_scatter(
            x=[t[best, 0]],
            y=[t[best, 2]],
            mode="markers",
            name="best validation",
            marker=dict(color=HIGHLIGHT, size=12, symbol="star"),
            hovertemplate=f"best: %{{x}} {unit}, %{{y:.4f}}<extra></extra>",
        )
    last = f"{int(t[-1, 0])} {unit}" if len(t) else "empty"
    fig.update_layout(
        **base_layout(title or f"Growth: negative log-likelihood vs {unit} ({last})"),
        height=380,
        xaxis_title=f"number of {unit}",
        yaxis_title="NLL (nats per row; lower is better)",
    )
    return fig


def slice_figure(
    slices: list[dict], *, target: str = "y", title: str | None = None, y_range=None
) -> go.Figure:
    """Piecewise-constant conditional densities p(y | x), one step line per x.

    ``slices``: dicts with ``label``, ``edges`` (m + 1,), ``heights`` (m,) (as returned by
    ``model.slice``) and optional ``true_y`` with ``true_label`` (drawn as a dashed vertical
    line in the slice's colour, once per distinct true y: an edited x keeps the true y of the
    row it started from). The area under each line is 1 (the slice is normalised).
    """
    fig = go.Figure()
    colours = palette(len(slices))
    drawn = set()
    for s, c in zip(slices, colours, strict=True):
        e, h = np.asarray(s["edges"], dtype=float), np.asarray(s["heights"], dtype=float)
        xs = np.repeat(e, 2)[1:-1]
        ys = np.repeat(h, 2)
        hover = [
            f"{s['label']}<br>{target} in ({e[i // 2]:.4g}, {e[i // 2 + 1]:.4g}]"
            f"<br>density {h[i // 2]:.4g}"
            for i in range(len(xs))
        ]
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            name=s["label"],
            line=dict(color=c, width=2),
            text=hover,
            hovertemplate="%{text}<extra></extra>",
            fill="tozeroy" if len(slices) == 1 else None,
        )
        ty = s.get("true_y")
        if ty is not None and np.isfinite(ty) and float(ty) not in drawn:
            drawn.add(float(ty))
            top = float(h.max()) if len(h) else 1.0
            fig.add_scatter(
                x=[ty, ty],
                y=[0, top * 1.05],
                mode="lines",
                line=dict(color=c, dash="dash", width=2),
                name=f"true {target} ({s.get('true_label', s['label'])})",
                hovertemplate=f"true {target} = {ty:.4g}<extra></extra>",
            )
    fig.update_layout(
        **base_layout(title or f"Conditional density p({target} | x)"),
        height=420,
        xaxis_title=str(target),
        yaxis_title=f"density (per unit of {target})",
    )
    if y_range is not None:
        fig.update_xaxes(range=list(y_range))
    return fig


def class_proba_figure(
    classes, probas: list[dict], *, target: str = "class", title: str | None = None
) -> go.Figure:
    """Grouped bars of P(class | x), one group per class and one bar colour per x.

    ``probas``: dicts with ``label``, ``proba`` (n_classes,) and optional ``true_class``
    (its bar gets a thick outline and the label says "true").
    """
    names = [str(c) for c in classes]
    fig = go.Figure()
    for p, c in zip(probas, palette(len(probas)), strict=True):
        true = p.get("true_class")
        widths = [3 if true is not None and str(true) == n else 0 for n in names]
        fig.add_bar(
            x=names,
            y=np.asarray(p["proba"], dtype=float),
            name=p["label"],
            marker=dict(color=c, line=dict(color="#000000", width=widths)),
            hovertemplate=f"{p['label']}<br>P(%{{x}}) = %{{y:.4f}}<extra></extra>",
        )
    true_names = {str(p["true_class"]) for p in probas if p.get("true_class") is not None}
    note = f" (outlined: true {target})" if true_names else ""
    fig.update_layout(
        **base_layout(title or f"Class probabilities P({target} | x){note}"),
        height=420,
        barmode="group",
        xaxis_title=target,
        yaxis_title="probability",
        yaxis_range=[0, 1.05],
    )
    return fig


def density_heatmap_figure(
    values,
    z,
    *,
    feature: str,
    target: str,
    y_grid=None,
    classes=None,
    x_current=None,
    categories=None,
    title: str | None = None,
) -> go.Figure:
    """Heat map of p(y | x_j) over one feature (columns) with the other features fixed.

    ``z``: (len(y_grid), len(values)) densities, or (n_classes, len(values)) probabilities
    when ``classes`` is given. ``categories``: labels of a categorical feature's codes
    ``values``. ``x_current`` marks the current value of the feature.
    """
    z = np.asarray(z, dtype=float)
    values = np.asarray(values, dtype=float)
    xs = [categories[int(v)] for v in values] if categories is not None else values
    discrete = classes is not None
    ys = [str(c) for c in classes] if discrete else np.asarray(y_grid, dtype=float)
    label = "probability" if discrete else f"density (per unit of {target})"
    fig = go.Figure(
        go.Heatmap(
            x=xs,
            y=ys,
            z=z,
            colorscale="Viridis",
            colorbar=dict(title=label),
            hovertemplate=f"{feature} = %{{x}}<br>{target} = %{{y}}<br>{label}: %{{z:.4g}}"
            "<extra></extra>",
        )
    )
    if x_current is not None:
        xc = categories[int(x_current)] if categories is not None else float(x_current)
        fig.add_scatter(
            x=[xc, xc],
            y=[ys[0], ys[-1]],
            mode="lines",
            name=f"current {feature}",
            line=dict(color=HIGHLIGHT, dash="dash", width=2),
            hovertemplate=f"current {feature} = {_fmt(xc)}<extra></extra>",
        )
    fig.update_layout(
        **base_layout(title or f"p({target} | {feature}), other features fixed"),
        height=460,
        xaxis_title=str(feature),
        yaxis_title=str(target),
    )
    return fig


def _x_intervals(cell, j, lo, hi, categorical):
    if categorical is not None:  # categorical feature: one interval per allowed code
        allowed = cell["x_categories"].get(j)
        codes = range(len(categorical)) if allowed is None else allowed
        return [(int(c) - 0.4, int(c) + 0.4) for c in codes]
    a = max(float(cell["x_low"][j]), lo)
    b = min(float(cell["x_high"][j]), hi)
    return [(a, b)] if b > a else []


def cells_figure(
    cells: list[dict],
    x_values,
    y_values,
    *,
    feature_index: int,
    feature: str,
    target: str,
    y_box=None,
    classes=None,
    categories=None,
    x_current=None,
    title: str | None = None,
) -> go.Figure:
    """The partition cells drawn as rectangles over a scatter of (x_j, y).

    ``cells``: ``model.cells()`` entries (usually :func:`section_cells` for the current x).
    A continuous feature and continuous y give **one rectangle per cell**
    (``[x_low, x_high] x [y_low, y_high]`` clipped to the data range and ``y_box``), shaded
    by the cell density n_XY / (n_X mu(A_Y)); a categorical feature gives one rectangle per
    allowed category, a categorical target one per class of the cell (classes on the y axis
    at their codes). The scatter shows the training rows (``y_values``: values or codes).
    """
    x_values = np.asarray(x_values, dtype=float)
    y_values = np.asarray(y_values, dtype=float)
    discrete = classes is not None
    lo = float(np.min(x_values)) if len(x_values) else 0.0
    hi = float(np.max(x_values)) if len(x_values) else 1.0
    pad = 0.02 * (hi - lo or 1.0)
    lo, hi = lo - pad, hi + pad
    if categories is not None:
        lo, hi = -0.5, len(categories) - 0.5
    dens = []
    for c in cells:
        if discrete:
            dens.append(c["n_xy"] / max(c["n_x"], 1.0) / max(len(c["classes"]), 1))
        else:
            dens.append(c["density"])
    top = max(dens) if dens and max(dens) > 0 else 1.0
    cls_index = {str(k): i for i, k in enumerate(classes)} if discrete else {}
    fig = go.Figure()
    shapes, hx, hy, ht = _cell_boxes(
        cells, dens, top, cls_index, feature_index, lo, hi, categories, discrete
    )
    # invisible markers at the cell centres carry the hover text of each box
    fig.add_scatter(
        x=hx,
        y=hy,
        mode="markers",
        marker=dict(size=14, color="#0072B2", opacity=0.0, symbol="square"),
        showlegend=False,
        name="cells",
        text=ht,
        hovertemplate="%{text}<extra></extra>",
    )
    jitter = 0.0
    if discrete:
        jitter = np.random.RandomState(0).uniform(-0.3, 0.3, len(y_values))
    xj = x_values
    if categories is not None:
        xj = x_values + np.random.RandomState(1).uniform(-0.3, 0.3, len(x_values))
    fig.add_scatter(
        x=xj,
        y=y_values + jitter,
        mode="markers",
        name="training rows",
        marker=dict(size=5, color=NEUTRAL, opacity=0.6),
        hovertemplate=f"{feature} = %{{x:.4g}}<br>{target} = %{{y:.4g}}<extra></extra>",
    )
    layout = base_layout(
        title or f"Partition cells over ({feature}, {target}): {len(cells)} cells",
        height=480,
        shapes=shapes,
        xaxis_title=str(feature),
        yaxis_title=str(target),
    )
    fig.update_layout(**layout)
    if x_current is not None:  # after the cells: update_layout(shapes=...) would overwrite it
        reference_line(
            fig,
            x=float(x_current),
            line=dict(color=HIGHLIGHT, dash="dash", width=2),
            name=f"current {feature}",
        )
    if categories is not None:
        fig.update_xaxes(
            tickmode="array",
            tickvals=list(range(len(categories))),
            ticktext=list(categories),
            range=[lo, hi],
        )
    if discrete:
        fig.update_yaxes(
            tickmode="array",
            tickvals=list(range(len(classes))),
            ticktext=[str(k) for k in classes],
            range=[-0.6, len(classes) - 0.4],
        )
    elif y_box is not None:
        fig.update_yaxes(range=list(y_box))
    return fig


def _cell_boxes(cells, dens, top, cls_index, feature_index, lo, hi, categories, discrete):
    """The rectangles of :func:`cells_figure` (shaded by density ``dens`` relative to
    ``top``) and the centre and hover text of each: ``(shapes, hx, hy, ht)``."""
    shapes = []
    hx, hy, ht = [], [], []
    for c, d in zip(cells, dens, strict=True):
        if discrete:
            y_ints = [(cls_index[str(k)] - 0.45, cls_index[str(k)] + 0.45) for k in c["classes"]]
        else:
            y_ints = [(c["y_low"], c["y_high"])]
        for x0, x1 in _x_intervals(c, feature_index, lo, hi, categories):
            for y0, y1 in y_ints:
                alpha = 0.08 + 0.55 * d / top
                shapes.append(
                    dict(
                        type="rect",
                        x0=x0,
                        x1=x1,
                        y0=y0,
                        y1=y1,
                        layer="below",
                        line=dict(color="#0072B2", width=1),
                        fillcolor=f"rgba(0,114,178,{alpha:.3f})",
                    )
                )
                hx.append(0.5 * (x0 + x1))
                hy.append(0.5 * (y0 + y1))
                what = "mass / class" if discrete else "cell density"
                ht.append(f"n_XY = {c['n_xy']:.0f}, n_X = {c['n_x']:.0f}<br>{what}: {d:.4g}")
    return shapes, hx, hy, ht


def comparison_figure(table: pd.DataFrame, *, task: str) -> go.Figure:
    """Horizontal bars of the test NLL (log-loss) per model, lower is better.

    ``table``: rows of :func:`engine.partition.explore.comparison_steps` (``model``,
    ``test_nll``, ``n_out_of_support``, ``fit_seconds``).
    """
    t = table.sort_values("test_nll", ascending=False)
    colours = [HIGHLIGHT if "TreeLab" in m else palette(1)[0] for m in t["model"]]
    unit = "nats per row" if task == "classification" else "nats per row, per unit of y"
    fig = go.Figure(
        go.Bar(
            x=t["test_nll"],
            y=t["model"],
            orientation="h",
            marker_color=colours,
            text=[f"{v:.3f}" for v in t["test_nll"]],
            textposition="outside",
            textangle=0,
            cliponaxis=False,
            customdata=np.column_stack([t["n_out_of_support"], t["fit_seconds"]]),
            hovertemplate="%{y}<br>test NLL %{x:.4f}<br>out of support %{customdata[0]}"
            "<br>fit %{customdata[1]:.3f} s<extra></extra>",
            name="test NLL",
        )
    )
    metric = "log-loss" if task == "classification" else "NLL"
    fig.update_layout(
        **base_layout(
            f"Test {metric} on the same split (lower is better)",
            margin=dict(l=330, r=70, t=60, b=60),
        ),
        height=140 + 45 * len(t),
        xaxis_title=f"test {metric} ({unit})",
        showlegend=False,
    )
    return fig


def pit_figure(histograms: dict, *, title: str | None = None) -> go.Figure:
    """PIT histograms: the density of u = F(y | x) over test rows, one bar series per model.

    ``histograms``: ``{label: PitHistogram}`` from :func:`engine.partition.scoring.
    pit_histogram` (same bins for every model). Bars are densities on [0, 1], so a
    calibrated model's bars lie on the dashed line at 1; a U shape means the predictive
    distributions are too narrow, a hump too wide, a slope biased.
    """
    fig = go.Figure()
    for (label, hist), c in zip(histograms.items(), palette(len(histograms)), strict=True):
        edges = np.asarray(hist.edges, dtype=np.float64)
        bins = len(edges) - 1
        fig.add_bar(
            x=0.5 * (edges[:-1] + edges[1:]),
            y=hist.density,
            width=1.0 / bins / max(len(histograms), 1),
            name=label,
            marker_color=c,
            customdata=np.column_stack([edges[:-1], edges[1:], hist.counts]),
            hovertemplate=f"{label}<br>PIT in (%{{customdata[0]:.2f}}, %{{customdata[1]:.2f}}]"
            "<br>%{customdata[2]} rows, density %{y:.3f}<extra></extra>",
        )
    fig.add_scatter(
        x=[0.0, 1.0],
        y=[1.0, 1.0],
        mode="lines",
        line=dict(color=NEUTRAL, dash="dash", width=2),
        name="uniform (calibrated)",
        hoverinfo="skip",
    )
    fig.update_layout(
        **base_layout(title or "PIT histogram: calibration on the test rows"),
        height=380,
        barmode="group",
        bargap=0.05,
        xaxis_title="PIT value F(y | x) (probability, 0 to 1)",
        yaxis_title="density (1 = calibrated)",
        xaxis_range=[0, 1],
    )
    return fig
