"""Figures for the Compare page: cross-validated scores, fit time and tree size per model."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.figures.style import base_layout, palette

METRIC_LABELS = {
    "accuracy": "accuracy (fraction correct, higher is better)",
    "log_loss": "log-loss (nats per row, lower is better)",
    "r2": "R² (higher is better)",
    "rmse": "RMSE (target units, lower is better)",
    "fit_seconds": "fit time (seconds per fold)",
    "n_leaves": "leaves (summed over trees)",
}


def cv_summary_figure(summary: pd.DataFrame, task: str, n_folds: int | None = None) -> go.Figure:
    """Bar charts of the mean CV metrics per model, with one standard deviation error bars.

    ``summary`` is :attr:`engine.compare.CompareResult.summary` (one row per model with the
    metric means, ``<metric>_std`` columns, ``fit_seconds`` and ``n_leaves``); ``n_folds``
    is the number of folds planned, so a stopped run's title says "3 of 5 folds".  A model
    with one fold (std NaN) gets no whisker.
    """
    from engine.compare import folds_label

    metrics = ["accuracy", "log_loss"] if task == "classification" else ["r2", "rmse"]
    panels = metrics + ["fit_seconds", "n_leaves"]
    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=[METRIC_LABELS[p] for p in panels],
        horizontal_spacing=0.1,
        vertical_spacing=0.18,
    )
    models = list(summary["model"])
    colours = palette(len(models))
    for c, col in enumerate(panels):
        r, k = divmod(c, 2)
        err = summary.get(col + "_std")
        for i, model in enumerate(models):
            fig.add_bar(
                x=[model],
                y=[summary[col].iloc[i]],
                name=model,
                legendgroup=model,
                showlegend=(c == 0),
                marker_color=colours[i],
                row=r + 1,
                col=k + 1,
                error_y=None if err is None else dict(type="data", array=[err.iloc[i]]),
                hovertemplate=f"{model}<br>{col}: %{{y:.4g}}<extra></extra>",
            )
        fig.update_xaxes(showticklabels=False, row=r + 1, col=k + 1)
    fig.update_layout(
        **base_layout(
            f"Cross-validated comparison ({folds_label(summary, n_folds)}"
            "; bars: mean, whiskers: ±1 std)"
            if len(summary)
            else "Cross-validated comparison"
        ),
        height=660,
        barmode="group",
    )
    fig.update_layout(legend=dict(y=1.1), margin=dict(t=130))  # above the panel titles
    fig.update_annotations(font_size=12)
    return fig
