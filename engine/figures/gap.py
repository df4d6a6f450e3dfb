"""The gap convergence chart of an anytime search (Literati's AO*, docs/spec.md section 1):
the incumbent's objective (upper bound) and the admissible lower bound of the root over log
time, the gap between them shaded, the search's events marked, and a slider replaying the
incumbents.  Pure functions of a search trace -> ``go.Figure``::

    from engine.figures.gap import gap_figure

    gap_figure(est.trace_, time_limit=est.time_limit, incumbents=est.incumbents_)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.figures.style import HIGHLIGHT, NEUTRAL, base_layout, frame_step, log_ticks

UB_COLOR = "#BB5566"
LB_COLOR = "#004488"
GAP_FILL = "rgba(187, 85, 102, 0.16)"
#: Times below this are drawn at this value on the log-time axis (the first snapshot is
#: often taken at t = 0).
MIN_TIME = 1e-3
#: Events of a trace (column ``event``) and how the gap chart marks them.
EVENT_STYLE = {
    "incumbent": ("new incumbent", "diamond", HIGHLIGHT, 10),
    "optimal": ("proven optimal", "star", "#117733", 18),
    "time_limit": ("time limit reached", "x", "#222222", 13),
    "stopped": ("stopped", "square", NEUTRAL, 11),
    "priority": ("node given priority", "triangle-down", "#117733", 12),
    "priority_end": ("priority ended", "triangle-up", "#117733", 12),
}


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
        'time_limit' | 'stopped' | 'priority' | 'priority_end').  Without ``event``, a drop of UB marks a new incumbent.
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
    gap, rel, custom, hover = _hover_data(tr, ub, lb)
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
    events, kinds = _event_markers(fig, tr, t, ub, custom, hover)
    if time_limit is not None and time_limit > 0:
        _time_limit_line(fig, time_limit)
    if title is None:
        last = tr.iloc[-1]
        title = (
            f"Gap convergence: UB {float(last['ub']):.4g}, LB {float(last['lb']):.4g}, "
            f"gap {gap[-1]:.4g} ({100 * rel[-1]:.1f} %) after {float(last['time']):.2f} s"
        )
    fig.update_layout(**base_layout(title, height=height), hovermode="closest")
    _log_time_axis(fig, t, time_limit)
    fig.update_yaxes(title_text="objective (errors + penalties)")
    if incumbents:
        _incumbent_slider(fig, tr, t, lb, ub, custom, events, kinds, incumbents, title, height)
    return fig


def _hover_data(tr: pd.DataFrame, ub: np.ndarray, lb: np.ndarray):
    """``(gap, rel_gap, customdata, hovertemplate)`` of the trace's rows: UB, LB, the gap
    (absolute and in % of UB) and the search's counters present in ``tr``."""
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
    return gap, rel, custom, hover


def _event_markers(fig: go.Figure, tr: pd.DataFrame, t, ub, custom, hover):
    """One marker trace per event kind present (:data:`EVENT_STYLE`); returns every row's
    event (a drop of UB is a new incumbent when ``tr`` has no ``event`` column) and the
    kinds drawn, in order."""
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
    return events, kinds


def _time_limit_line(fig: go.Figure, time_limit: float) -> None:
    """A dotted vertical line at the time limit (seconds), labelled at the top."""
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


def _log_time_axis(fig: go.Figure, t: np.ndarray, time_limit: float | None) -> None:
    """The logarithmic time axis over the trace and the time limit, ticks as plain numbers."""
    hi = max(float(t.max()), float(time_limit or 0.0), 2 * MIN_TIME)
    lo = min(float(t.min()), hi / 10)
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
        steps.append(frame_step(name, f"#{k + 1}"))
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
