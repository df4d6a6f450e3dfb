"""Figures for the Data page: per-feature distributions and the target distribution.

Pure functions of an :class:`engine.data.Dataset` returning ``plotly.graph_objects.Figure``.
Categorical features and classes are shown with their labels, never their integer codes.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from engine.data.binning import binned_counts
from engine.figures.style import base_layout, palette

MAX_POINTS = 5000  # scatter points drawn; more rows are subsampled (deterministically)
MAX_TOP_LEGEND = 10  # classes listed in a horizontal legend above the plot; more go right


def _subsample(n: int, limit: int = MAX_POINTS, seed: int = 0) -> np.ndarray:
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))


def feature_distribution_figure(
    dataset, feature: int | str, *, nbins: int = 30, units: str = ""
) -> go.Figure:
    """Distribution of one feature, split by class (classification) or against y (regression).

    Parameters
    ----------
    dataset : engine.data.Dataset
    feature : int or str
        Column index into ``dataset.X`` or a name in ``dataset.feature_names``.
    nbins : int
        Histogram bins for a continuous feature.
    units : str
        Optional unit appended to the axis label.

    Classification: stacked histogram (continuous; its bin counts, not the rows, are in the
    figure) or grouped bar of counts per category,
    one trace per class.  Regression: scatter of (feature, target), subsampled to
    ``MAX_POINTS`` rows, or a box per category for categorical features.

    Raises
    ------
    KeyError
        If ``feature`` names no feature.
    """
    if isinstance(feature, str):
        if feature not in dataset.feature_names:
            raise KeyError(f"no feature {feature!r}; features: {dataset.feature_names}")
        j = dataset.feature_names.index(feature)
    else:
        j = int(feature)
    name = dataset.feature_names[j]
    x = dataset.X[:, j]
    is_cat = bool(dataset.is_categorical[j])
    labels = dataset.categories.get(j) if is_cat else None
    xlabel = f"{name} ({units})" if units else name
    fig = go.Figure()
    if dataset.task == "classification":
        colours = palette(len(dataset.classes_))
        if not is_cat:  # counts per bin, not one value per row, go to the browser
            edges, counts = binned_counts(x, dataset.y, len(dataset.classes_), nbins)
            centres, widths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
        for k, cls in enumerate(dataset.classes_):
            xs = x[dataset.y == k]
            if is_cat:
                counts = np.bincount(xs.astype(np.int64), minlength=len(labels))
                fig.add_bar(
                    x=list(labels),
                    y=counts,
                    name=str(cls),
                    marker_color=colours[k],
                    hovertemplate=f"class {cls}<br>%{{x}}: %{{y}} rows<extra></extra>",
                )
            else:
                fig.add_bar(
                    x=centres,
                    y=counts[k],
                    width=widths,
                    customdata=np.column_stack([edges[:-1], edges[1:]]),
                    name=str(cls),
                    marker_color=colours[k],
                    hovertemplate=f"class {cls}<br>{name} %{{customdata[0]:.4g}} to "
                    "%{customdata[1]:.4g}<br>%{y} rows<extra></extra>",
                )
        fig.update_layout(
            **base_layout(
                f"Distribution of {name} by class",
                barmode="stack",
                legend_title_text=dataset.target,
            ),
            xaxis_title=xlabel,
            yaxis_title="rows (count)",
        )
        if len(dataset.classes_) > MAX_TOP_LEGEND:
            # a legend on top would wrap onto a third row and run into the title
            fig.update_layout(
                legend=dict(orientation="v", x=1.02, xanchor="left", y=1.0, yanchor="top")
            )
    else:
        y = dataset.y
        if is_cat:
            for c, lab in enumerate(labels):
                fig.add_box(
                    y=y[x == c], name=str(lab), marker_color=palette(len(labels))[c], boxmean=True
                )
            fig.update_layout(
                **base_layout(f"{dataset.target} by {name}", showlegend=False),
                xaxis_title=xlabel,
                yaxis_title=dataset.target,
            )
        else:
            idx = _subsample(len(x))
            fig.add_scattergl(
                x=x[idx],
                y=y[idx],
                mode="markers",
                name="rows",
                marker=dict(size=5, opacity=0.6, color=palette(1)[0]),
                hovertemplate=f"{name} %{{x}}<br>{dataset.target} %{{y}}<extra></extra>",
            )
            title = f"{dataset.target} against {name}"
            if len(idx) < len(x):
                title += f" ({len(idx):,} of {len(x):,} rows shown)"
            fig.update_layout(**base_layout(title), xaxis_title=xlabel, yaxis_title=dataset.target)
    return fig


def target_distribution_figure(dataset, *, nbins: int = 40) -> go.Figure:
    """Bar chart of class counts (classification) or histogram of y (regression; its
    ``nbins`` bin counts, not the rows, are in the figure)."""
    fig = go.Figure()
    if dataset.task == "classification":
        counts = np.bincount(dataset.y, minlength=len(dataset.classes_))
        labels = [str(c) for c in dataset.classes_]
        fig.add_bar(
            x=labels,
            y=counts,
            marker_color=palette(len(labels)),
            name="rows",
            text=counts,
            textposition="outside",
            hovertemplate="%{x}: %{y} rows<extra></extra>",
        )
        fig.update_layout(
            **base_layout(f"Class counts of {dataset.target}", showlegend=False),
            xaxis_title=f"{dataset.target} (class)",
            yaxis_title="rows (count)",
        )
    else:
        edges, counts = binned_counts(dataset.y, nbins=nbins)
        fig.add_bar(
            x=(edges[:-1] + edges[1:]) / 2,
            y=counts[0],
            width=np.diff(edges),
            customdata=np.column_stack([edges[:-1], edges[1:]]),
            marker_color=palette(1)[0],
            name="rows",
            hovertemplate="%{customdata[0]:.4g} to %{customdata[1]:.4g}: %{y} rows<extra></extra>",
        )
        fig.update_layout(
            **base_layout(f"Distribution of {dataset.target}", showlegend=False),
            xaxis_title=dataset.target,
            yaxis_title="rows (count)",
        )
    return fig
