"""Figures of the Split strategies page: candidates on the histogram, the impurity-decrease
curve, an animated threshold scan, and the accuracy-vs-time trade-off of whole trees.

Pure functions of :class:`engine.cart.profile.SplitProfile` (or a CV summary) -> ``go.Figure``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.cart.candidates import STRATEGIES
from engine.figures.style import (
    PROJECTION_MARKER_KEY,
    base_layout,
    frame_step,
    log_ticks,
    palette,
)

#: Size (px) of a strategy's chosen-threshold star in projection mode, where the candidate
#: rug's rows are about 21.5 px apart (six strategies): plotly draws a star 1.27x its size
#: tall (its path: 1.4 x the radius up, 0.81 x that down), so 14 px plus the outline fits
#: in a row; the usual 1.5x (24 px, 30 px tall) ran into the neighbouring rows' stars.
STAR_PROJECTION_SIZE = 14

#: marker symbol of each strategy, in :data:`engine.cart.candidates.STRATEGIES` order (the thin
#: tick is exhaustive's: its candidates are dense).
SYMBOLS = (
    "line-ns-open",
    "diamond",
    "square",
    "circle",
    "triangle-up",
    "hexagon",
    "x",
    "star-diamond",
)


def _strategy_index(name: str) -> int:
    return STRATEGIES.index(name) if name in STRATEGIES else len(STRATEGIES)


#: a fixed colour per strategy (the same whichever strategies are shown), from plotly's
#: colour-blind-safe ``Safe`` palette so that they differ from the first class colours
#: (Okabe-Ito); exhaustive is the dark grey of the gain curve.
STRATEGY_COLOURS = {
    "exhaustive": "#555555",
    "quantile": "rgb(153,153,51)",
    "histogram": "rgb(68,170,153)",
    "random": "rgb(170,68,153)",
    "dics_paper": "rgb(51,34,136)",
    "kmeans1d": "rgb(102,17,0)",
    "class_centroid": "rgb(204,102,119)",
    "kde_valley": "rgb(136,204,238)",
}


def _strategy_colours(names) -> dict[str, str]:
    extra = iter(palette(19)[8:])
    return {s: STRATEGY_COLOURS.get(s) or next(extra) for s in names}


def _symbol(name: str) -> str:
    return SYMBOLS[_strategy_index(name) % len(SYMBOLS)]


def _short_name(r) -> str:
    """``'kde_valley → quantile'`` when the strategy had no candidate of its own and shows
    the quantile fallback's, else the strategy's name."""
    return f"{r.strategy} → quantile" if getattr(r, "fallback", False) else r.strategy


def _strategy_label(r) -> str:
    """Legend name: the strategy (and its fallback) with its number of candidates."""
    return f"{_short_name(r)} ({_plural(r.n_candidates, 'candidate')})"


def _histogram(fig, profile, class_names, nbins, row=1):
    """Stacked bars of the node's rows per bin (and class), counted by
    :meth:`SplitProfile.histogram` with ``np.histogram`` so every row is drawn (plotly's own
    binning left out rows equal to the maximum when the bin edges rounded below it)."""
    hover = "[%{customdata[0]:.4g}, %{customdata[1]:.4g}]<br>%{y} rows<extra></extra>"
    if profile.task == "classification":
        names = class_names or [str(k) for k in range(int(profile.y.max()) + 1)]
        hist = profile.histogram(nbins, n_classes=len(names))
        lo_hi = np.column_stack([hist.edges[:-1], hist.edges[1:]])
        colours = palette(len(names))
        for k, name in enumerate(names):
            fig.add_bar(
                x=hist.centres,
                y=hist.counts[k],
                width=hist.width,
                name=str(name),
                legendgroup="classes",
                marker=dict(color=colours[k], line_width=0),
                customdata=lo_hi,
                hovertemplate=f"class {name}<br>" + hover,
                row=row,
                col=1,
            )
    else:
        hist = profile.histogram(nbins)
        lo_hi = np.column_stack([hist.edges[:-1], hist.edges[1:]])
        fig.add_bar(
            x=hist.centres,
            y=hist.counts[0],
            width=hist.width,
            name="rows",
            marker=dict(color=palette(1)[0], line_width=0),
            customdata=lo_hi,
            hovertemplate=hover,
            row=row,
            col=1,
        )
    return hist


def _criterion_name(profile) -> str:
    return {
        "gini": "Gini",
        "entropy": "entropy",
        "log_loss": "entropy",
        "squared_error": "squared error",
    }.get(profile.criterion, profile.criterion)


def _fit_legend(fig, width: float = 900.0, title_lines: int = 1) -> None:
    """Make room above the plot for the horizontal legend, which grows upwards over the
    title when it wraps (many classes and strategies): plotly lays entries out in columns
    as wide as the widest one, so the rows are estimated from that width (14 px font);
    each title line after the first takes about 18 px more."""
    names = [t.name for t in fig.data if t.name and t.showlegend is not False]
    if not names:
        return
    widest = 50 + 7.5 * max(len(n) for n in names)
    rows = math.ceil(len(names) / max(1, int(width // widest)))
    fig.update_layout(margin=dict(t=max(100, 62 + 22 * rows) + 18 * (title_lines - 1)))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def candidates_figure(profile, *, class_names=None, nbins: int = 30, units: str = "") -> go.Figure:
    """The node's histogram of the feature (stacked by class) with every strategy's candidate
    thresholds as a row of markers underneath and its chosen threshold as a dashed line.

    ``profile``: :class:`engine.cart.profile.SplitProfile`; ``class_names``: labels in code order.
    """
    strategies = list(profile.results)
    colours = _strategy_colours(strategies)
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.62, 0.38], vertical_spacing=0.04
    )
    _histogram(fig, profile, class_names, nbins)
    for s in strategies:
        r = profile.results[s]
        gains = np.where(np.isfinite(r.gains), r.gains, np.nan)
        fig.add_scatter(
            x=r.thresholds,
            y=[_short_name(r)] * r.n_candidates,
            mode="markers",
            name=_strategy_label(r),
            legendgroup=s,
            marker=dict(
                symbol=_symbol(s), size=9, color=colours[s], line=dict(width=1.5, color=colours[s])
            ),
            customdata=gains,
            hovertemplate=f"{s}<br>threshold %{{x:.4g}}<br>impurity decrease "
            "%{customdata:.4g}<extra></extra>",
            row=2,
            col=1,
        )
        if np.isfinite(r.best_threshold):
            fig.add_scatter(
                x=[r.best_threshold],
                y=[_short_name(r)],
                mode="markers",
                showlegend=False,
                legendgroup=s,
                marker=dict(
                    symbol="star", size=16, color=colours[s], line=dict(width=1, color="black")
                ),
                hovertemplate=f"{s} chooses %{{x:.4g}}<extra></extra>",
                meta={PROJECTION_MARKER_KEY: STAR_PROJECTION_SIZE},
                row=2,
                col=1,
            )
            fig.add_vline(
                x=r.best_threshold, line=dict(color=colours[s], dash="dash", width=2), row=1, col=1
            )
    name = profile.feature_name + (f" ({units})" if units else "")
    fig.update_layout(
        **base_layout(
            f"Candidate thresholds on {profile.feature_name}, "
            f"{profile.x.size:,} row{'' if profile.x.size == 1 else 's'} at this node"
            "<br><sup>star and dashed line: each strategy's chosen threshold</sup>",
            barmode="stack",
            height=620,
        )
    )
    _fit_legend(fig, title_lines=2)
    fig.update_layout(title_y=0.96)  # the two-line title's first line stays inside the figure
    fig.update_yaxes(title_text="rows (count)", row=1, col=1)
    fig.update_yaxes(
        title_text="strategy",
        row=2,
        col=1,
        type="category",
        categoryorder="array",
        categoryarray=[_short_name(profile.results[s]) for s in strategies][::-1],
        # every strategy named: plotly drops category labels it thinks too close
        tickmode="array",
        tickvals=[_short_name(profile.results[s]) for s in strategies],
    )
    fig.update_xaxes(title_text=name, row=2, col=1)
    return fig


def gain_curve_figure(profile, *, units: str = "") -> go.Figure:
    """Impurity decrease over every exhaustive threshold, with each strategy's candidates on
    the curve and its chosen one starred; the dotted line is the exhaustive optimum."""
    strategies = list(profile.results)
    colours = _strategy_colours(strategies)
    fig = go.Figure()
    fig.add_scatter(
        x=profile.curve_thresholds,
        y=profile.curve_gains,
        mode="lines",
        name="all midpoints (exhaustive)",
        line=dict(color="#555555", width=2),
        hovertemplate="threshold %{x:.4g}<br>impurity decrease %{y:.4g}<extra></extra>",
    )
    for s in strategies:
        r = profile.results[s]
        if s == "exhaustive":
            continue
        fig.add_scatter(
            x=r.thresholds,
            y=r.gains,
            mode="markers",
            name=_short_name(r),
            legendgroup=s,
            marker=dict(
                symbol=_symbol(s), size=10, color=colours[s], line=dict(width=1.5, color=colours[s])
            ),
            hovertemplate=f"{s}<br>threshold %{{x:.4g}}<br>impurity decrease "
            "%{y:.4g}<extra></extra>",
        )
    for s in strategies:
        r = profile.results[s]
        if np.isfinite(r.best_threshold):
            fig.add_scatter(
                x=[r.best_threshold],
                y=[r.best_gain],
                mode="markers",
                showlegend=False,
                legendgroup=s,
                marker=dict(
                    symbol="star", size=16, color=colours[s], line=dict(width=1, color="black")
                ),
                hovertemplate=f"{s} chooses %{{x:.4g}} (decrease %{{y:.4g}})<extra></extra>",
            )
    if np.isfinite(profile.best_gain):
        fig.add_hline(
            y=profile.best_gain,
            line=dict(dash="dot", color="#555555"),
            annotation_text="exhaustive best",
            annotation_position="top left",
        )
    crit = _criterion_name(profile)
    fig.update_layout(
        **base_layout(f"Impurity decrease ({crit}) along {profile.feature_name}", height=460),
        xaxis_title=profile.feature_name + (f" ({units})" if units else "") + " threshold",
        yaxis_title=f"impurity decrease ({crit})",
    )
    _fit_legend(fig)
    return fig


def _text_side(t, i) -> str:
    """Where the row counts stand beside the threshold line ``t[i]``: to its right in the
    left third of the range, to its left in the right third, centred between (a centred
    label at the edge was cut: "ow | 149 rows" at 1280 x 720)."""
    low, high = float(t[0]), float(t[-1])
    where = (float(t[i]) - low) / (high - low) if high > low else 0.5
    return "top right" if where < 1 / 3 else "top left" if where > 2 / 3 else "top center"


def _scan_frames(t, g, idx, animated, ymax, split_text):
    """One animation frame and one slider step per threshold index in ``idx``: the line
    over the histogram, the curve traced so far and the current point."""
    frames, steps = [], []
    for i in idx:
        i = int(i)
        name = f"{t[i]:.4g}"
        frames.append(
            go.Frame(
                name=name,
                traces=animated,
                data=[
                    go.Scatter(
                        x=[t[i], t[i]],
                        y=[0, ymax * 1.05],
                        text=split_text(i),
                        textposition=_text_side(t, i),
                    ),
                    go.Scatter(x=t[: i + 1], y=g[: i + 1]),
                    go.Scatter(x=[t[i]], y=[g[i]]),
                ],
            )
        )
        steps.append(frame_step(name, name))
    return frames, steps


def _play_pause():
    """The Play (from the current frame, 250 ms per frame) and Pause buttons."""
    play = dict(
        label="▶ Play",
        method="animate",
        args=[
            None,
            dict(
                frame=dict(duration=250, redraw=True), fromcurrent=True, transition=dict(duration=0)
            ),
        ],
    )
    pause = dict(
        label="Pause",
        method="animate",
        args=[
            [None],
            dict(
                mode="immediate", frame=dict(duration=0, redraw=False), transition=dict(duration=0)
            ),
        ],
    )
    return play, pause


def threshold_scan_figure(
    profile, *, class_names=None, nbins: int = 30, max_frames: int = 60, units: str = ""
) -> go.Figure:
    """Animated scan (play / pause / slider) of a threshold sweeping the feature: the line
    moves over the histogram while the impurity-decrease curve is traced underneath.

    At most ``max_frames`` thresholds (evenly spaced among the exhaustive midpoints) are shown.
    The slider's steps are evenly spaced among those thresholds, not in value, so the line
    over the histogram names the threshold it stands at ("threshold 2.45: ← 50 rows |
    100 rows →") where its position on the feature's axis is the real one.
    """
    t, g = profile.curve_thresholds, profile.curve_gains
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.55, 0.45], vertical_spacing=0.06
    )
    ymax = _histogram(fig, profile, class_names, nbins).max_count
    n_static = len(fig.data)
    gmax = float(np.nanmax(g)) if g.size and np.isfinite(g).any() else 1.0
    fig.add_scatter(
        x=t,
        y=g,
        mode="lines",
        line=dict(color="#bbbbbb"),
        name="full curve",
        hoverinfo="skip",
        row=2,
        col=1,
    )
    if t.size == 0:
        fig.update_layout(
            **base_layout(
                f"Threshold scan on {profile.feature_name}: the feature "
                "is constant at this node, nothing to scan"
            )
        )
        return fig
    idx = np.unique(np.linspace(0, t.size - 1, min(max_frames, t.size)).round().astype(int))
    first = int(idx[0])
    n_left = profile.rows_left(t)
    n_rows = profile.x.size

    def split_text(i):
        # the threshold's value at the line: the slider's steps are evenly spaced among the
        # candidate thresholds, not in value (a gap in the data is one step)
        return [
            "",
            f"threshold {t[i]:.4g}: ← {_plural(int(n_left[i]), 'row')} | "
            f"{_plural(int(n_rows - n_left[i]), 'row')} →",
        ]

    fig.add_scatter(
        x=[t[first], t[first]],
        y=[0, ymax * 1.05],
        mode="lines+text",
        text=split_text(first),
        textposition=_text_side(t, first),
        line=dict(color="black", width=3),
        name="threshold",
        row=1,
        col=1,
    )
    fig.add_scatter(
        x=t[: first + 1],
        y=g[: first + 1],
        mode="lines",
        line=dict(color="#D55E00", width=3),
        name="impurity decrease so far",
        row=2,
        col=1,
    )
    fig.add_scatter(
        x=[t[first]],
        y=[g[first]],
        mode="markers",
        marker=dict(size=12, color="#D55E00"),
        name="current threshold",
        row=2,
        col=1,
    )
    animated = [n_static + 1, n_static + 2, n_static + 3]
    fig.frames, steps = _scan_frames(t, g, idx, animated, ymax, split_text)
    play, pause = _play_pause()
    fig.update_layout(
        **base_layout(
            f"Threshold scan on {profile.feature_name}: the split x <= threshold sends rows left",
            height=620,
        ),
        barmode="stack",
        updatemenus=[
            dict(
                type="buttons",
                direction="left",
                x=0.0,
                y=-0.12,
                xanchor="left",
                yanchor="top",
                buttons=[play, pause],
            )
        ],
        sliders=[
            dict(
                active=0,
                steps=steps,
                x=0.18,
                len=0.82,
                y=-0.08,
                # at the slider's right end: on the left the Pause button covered it
                currentvalue=dict(prefix="threshold = ", xanchor="right"),
            )
        ],
    )
    fig.update_layout(margin=dict(b=140))
    _fit_legend(fig)
    fig.update_yaxes(title_text="rows (count)", range=[0, ymax * 1.25], row=1, col=1)
    fig.update_yaxes(
        title_text=f"impurity decrease ({_criterion_name(profile)})",
        range=[0, gmax * 1.1 if gmax > 0 else 1],
        row=2,
        col=1,
    )
    fig.update_xaxes(
        title_text=profile.feature_name + (f" ({units})" if units else ""), row=2, col=1
    )
    return fig


#: Where a point's label may go, in order of preference, with the label box's offset from
#: the point in units of (label width, label height).
_LABEL_PLACES = (
    ("top center", (-0.5, 0.6), (0.5, 1.6)),
    ("bottom center", (-0.5, -1.6), (0.5, -0.6)),
    ("middle right", (0.15, -0.5), (1.15, 0.5)),
    ("middle left", (-1.15, -0.5), (-0.15, 0.5)),
    ("top right", (0.1, 0.5), (1.1, 1.5)),
    ("bottom left", (-1.1, -1.5), (-0.1, -0.5)),
    ("top left", (-1.1, 0.5), (-0.1, 1.5)),
    ("bottom right", (0.1, -1.5), (1.1, -0.5)),
)


def label_positions(
    x,
    y,
    texts,
    *,
    sizes=None,
    x_range=None,
    y_range=None,
    plot_px: tuple[float, float] = (700.0, 380.0),
    height: float = 0.07,
    char_width: float = 0.014,
) -> list[str]:
    """A plotly ``textposition`` for each point's label so that labels do not overlap each
    other, the other points' markers or the plot's edges (greedy: each label takes the first free place of
    :data:`_LABEL_PLACES`, top centre first; when none is free, the place it shares least
    with the labels before and the markers).

    ``x``, ``y``: the points (any units: they are scaled to [0, 1] over ``x_range`` and
    ``y_range``, the axes' ranges, by default the points' own);
    ``texts``: the labels; ``sizes``: marker diameters (px; default 0); ``plot_px``: the
    plot area's width and height (px); ``height`` and ``char_width``: a label's height and
    one character's width as fractions of the plot (14-20 px text).
    """
    px = _unit(np.asarray(x, dtype=float), x_range)
    py = _unit(np.asarray(y, dtype=float), y_range)
    diameters = np.zeros(px.size) if sizes is None else np.asarray(sizes, dtype=float)
    rx = diameters / 2 / plot_px[0]
    ry = diameters / 2 / plot_px[1]
    markers = [(px[j] - rx[j], py[j] - ry[j], px[j] + rx[j], py[j] + ry[j]) for j in range(px.size)]
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for i, text in enumerate(texts):
        width = max(1, len(str(text))) * char_width
        others = [box for j, box in enumerate(markers) if j != i]
        best = None
        for name, (x0, y0), (x1, y1) in _LABEL_PLACES:
            # labels start at the marker's edge: move the box out by its radius
            shift_x = rx[i] * np.sign(round((x0 + x1) / 2, 6)) if abs(x0 + x1) > 0.6 else 0.0
            shift_y = ry[i] * np.sign(round((y0 + y1) / 2, 6)) if abs(y0 + y1) > 0.6 else 0.0
            box = (
                px[i] + x0 * width + shift_x,
                py[i] + y0 * height + shift_y,
                px[i] + x1 * width + shift_x,
                py[i] + y1 * height + shift_y,
            )
            covered = sum(_overlap(box, other) for other in placed + others)
            # a label that leaves the plot is cut: count the part outside as covered
            area = (box[2] - box[0]) * (box[3] - box[1])
            covered += area - _overlap(box, (0.0, -0.15, 1.0, 1.15))
            if best is None or covered < best[0] - 1e-12:
                best = (covered, name, box)
            if covered == 0:
                break
        placed.append(best[2])
        out.append(best[1])
    return out


def _unit(values: np.ndarray, span=None) -> np.ndarray:
    """``values`` scaled to [0, 1] over ``span`` (low, high), by default their own range
    padded by 8 % on each side (as plotly's autorange pads for the markers)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.zeros_like(values)
    if span is None:
        pad = 0.08 * (float(finite.max()) - float(finite.min()))
        span = (float(finite.min()) - pad, float(finite.max()) + pad)
    low, high = map(float, span)
    width = high - low if high > low else 1.0
    return np.nan_to_num((values - low) / width)


def _overlap(a, b) -> float:
    """The area two boxes ``(x0, y0, x1, y1)`` share (0 when apart)."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def strategy_tradeoff_figure(summary: pd.DataFrame, task: str) -> go.Figure:
    """Cross-validated score against fit time per strategy; marker area ~ candidates evaluated.

    ``summary``: :attr:`engine.compare.CompareResult.summary` of CART runs (columns ``model``,
    ``fit_seconds``, ``accuracy`` or ``r2``, optionally ``candidates`` and ``<metric>_std``).
    """
    metric = "accuracy" if task == "classification" else "r2"
    label = "accuracy (fraction correct)" if metric == "accuracy" else "R²"
    fig = go.Figure()
    colours = palette(len(summary))
    cand = summary["candidates"] if "candidates" in summary else pd.Series([np.nan] * len(summary))
    finite = cand[np.isfinite(cand)]
    cmax = float(finite.max()) if finite.size else 1.0
    rows = summary.reset_index(drop=True)
    texts = [str(m).replace("CART / ", "") for m in rows["model"]]
    sizes = [
        14 + 30 * np.sqrt(c / cmax) if np.isfinite(c) and cmax > 0 else 14 for c in cand.iloc[:]
    ]
    seconds = rows["fit_seconds"].to_numpy(dtype=float)
    # times spread over orders of magnitude: a log axis keeps the fast strategies apart
    log_time = bool(seconds.size > 1 and np.all(seconds > 0) and seconds.max() > 5 * seconds.min())
    scores = rows[metric].to_numpy(dtype=float)
    spread = rows.get(metric + "_std")
    spread = np.zeros_like(scores) if spread is None else np.nan_to_num(spread.to_numpy(float))
    x_values = np.log10(seconds) if log_time else seconds
    places = label_positions(
        x_values,
        scores,
        texts,
        sizes=sizes,
        x_range=(x_values.min() - 0.2, x_values.max() + 0.2) if log_time else None,
        y_range=(np.nanmin(scores - spread), np.nanmax(scores + spread)),  # the error bars
    )
    for i, row in rows.iterrows():
        c = cand.iloc[i]
        size = sizes[i]
        err = row.get(metric + "_std")
        fig.add_scatter(
            x=[row["fit_seconds"]],
            y=[row[metric]],
            mode="markers+text",
            name=str(row["model"]),
            text=[texts[i]],
            textposition=places[i],
            error_y=None if err is None or not np.isfinite(err) else dict(type="data", array=[err]),
            marker=dict(size=size, color=colours[i], line=dict(width=1, color="black")),
            customdata=[[c]],
            hovertemplate=f"{row['model']}<br>{label}: %{{y:.4f}}<br>fit time: "
            "%{x:.4f} s<br>candidates evaluated: %{customdata[0]:,.0f}"
            "<extra></extra>",
        )
    fig.update_layout(
        **base_layout(
            f"Cross-validated {metric} against fit time (marker area: "
            "thresholds evaluated per fit)",
            height=480,
        ),
        xaxis_title="fit time (seconds per fold" + (", log scale)" if log_time else ")"),
        yaxis_title=label,
    )
    if log_time:
        low, high = seconds.min() / 1.6, seconds.max() * 1.6
        ticks = log_ticks(low, high)
        fig.update_xaxes(
            type="log",
            range=[np.log10(low), np.log10(high)],
            tickvals=ticks,
            ticktext=[f"{v:g}" for v in ticks],
        )
    return fig
