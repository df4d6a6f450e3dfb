"""Shared plot style: colour-blind-safe palettes and layout defaults for every figure.

Okabe & Ito (2008) "Color Universal Design" palette for up to 8 categories; beyond that
plotly's ``Dark24``, whose first ten colours (digits' classes) are at least 33 CIELAB units
(Delta E 1976) apart, where Okabe-Ito extended by Carto's ``Safe`` put a second light blue
14 units from its own and a second pink 21 units from its own.
"""

from __future__ import annotations

import math
import re

import plotly.express as px
import plotly.graph_objects as go

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
FONT_SIZE = 14
HIGHLIGHT = "#D55E00"
NEUTRAL = "#7f7f7f"


def palette(n: int) -> list[str]:
    """``n`` distinct colours (hex strings): Okabe-Ito (colour-blind safe) up to 8, plotly's
    Dark24 beyond (cycled when ``n`` exceeds 24)."""
    if n <= len(OKABE_ITO):
        colours = list(OKABE_ITO)
    else:
        colours = list(px.colors.qualitative.Dark24)
    return [colours[i % len(colours)] for i in range(max(n, 0))]


def base_layout(title: str, **kw) -> dict:
    """Layout defaults: title, readable fonts, white template, legend on top."""
    layout = dict(
        title=dict(text=title, x=0.0, xanchor="left", y=0.98, yanchor="top"),
        template="plotly_white",
        font=dict(size=FONT_SIZE),
        margin=dict(l=60, r=20, t=100, b=60),
        legend=dict(
            orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0, traceorder="normal"
        ),
    )
    layout.update(kw)
    return layout


def reference_line(
    fig: go.Figure, *, line: dict, name: str, x: float | None = None, y: float | None = None
) -> None:
    """A vertical line at ``x`` (or a horizontal one at ``y``) across the plot, drawn with
    ``line`` (plotly line properties), and a legend entry ``name`` for it (plotly gives
    shapes none)."""
    if x is not None:
        fig.add_vline(x=x, line=line)
    else:
        fig.add_hline(y=y, line=line)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line, name=name))


def frame_step(name: str, label: str) -> dict:
    """A slider step of an animated figure: shows frame ``name`` at once (no transition),
    labelled ``label`` under the slider."""
    return dict(
        method="animate",
        label=label,
        args=[
            [name],
            dict(
                mode="immediate",
                frame=dict(duration=0, redraw=True),
                transition=dict(duration=0),
            ),
        ],
    )


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values for a log axis from ``low`` to ``high`` (> 0): every power of ten, and
    also 2 and 5 times each when the range spans fewer than three decades."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = (1.0, 2.0, 5.0) if math.log10(high / low) < 3 else (1.0,)
    ticks = [step * 10.0**k for k in range(first, last + 1) for step in steps]
    return [float(f"{t:.12g}") for t in ticks if low <= t <= high]


# -- projection mode -------------------------------------------------------------------------
#: Text sizes (px) of a figure in projection mode: body, titles, tick labels; text drawn in
#: the plot (node labels, bar values) grows by :data:`PROJECTION_SCALE`, to at least
#: :data:`PROJECTION_MIN_TEXT`.
PROJECTION_FONT_SIZE = 20
PROJECTION_TITLE_SIZE = 24
PROJECTION_TICK_SIZE = 18
PROJECTION_SCALE = 1.4
#: Subplot titles grow less (side-by-side panels leave little room).
PROJECTION_PANEL_SCALE = 1.2
PROJECTION_MIN_TEXT = 15
#: Ink for text and axes in projection mode (the template's light grey washes out on a
#: projector).
PROJECTION_INK = "#111111"
#: Line widths (px) in projection mode: at least this, and twice the figure's own.
PROJECTION_LINE_WIDTH = 3.5
#: Smallest marker (px) in projection mode.
PROJECTION_MARKER_SIZE = 10
#: Key of a trace's ``meta`` dict: the marker size (px) the trace keeps in projection mode
#: (markers in rows a fixed distance apart, which the usual 1.5x would make overlap).
PROJECTION_MARKER_KEY = "projection_marker_size"


def _scaled(size, factor: float, floor: float):
    """``size`` (a number, a sequence or None) times ``factor``, at least ``floor``."""
    if size is None:
        return None
    if isinstance(size, int | float):
        return max(float(size) * factor, floor)
    return [max(float(s) * factor, floor) for s in size]


def _bigger_text(
    font, default: float, factor: float = PROJECTION_SCALE, *, ink_when_unset: bool = True
) -> dict:
    """A font dict: ``font``'s size (``default`` when unset) times ``factor``, at least
    :data:`PROJECTION_MIN_TEXT`; a light grey colour (and, with ``ink_when_unset``, no
    colour) becomes :data:`PROJECTION_INK`."""
    size = getattr(font, "size", None) if font is not None else None
    out = dict(font.to_plotly_json()) if hasattr(font, "to_plotly_json") else {}
    out["size"] = _scaled(default if size is None else size, factor, PROJECTION_MIN_TEXT)
    colour = getattr(font, "color", None) if font is not None else None
    if (colour is None and ink_when_unset) or (
        isinstance(colour, str) and colour.lower() in _LIGHT_INKS
    ):
        out["color"] = PROJECTION_INK
    return out


#: Text colours too light for a projector, darkened in projection mode.
_LIGHT_INKS = frozenset({"#555555", "#666666", "#777777", "#7f7f7f", "#888888", "#999999", "grey"})


#: Figures grow this much taller in projection mode (bigger text needs the room); a figure
#: without a height gets :data:`PROJECTION_DEFAULT_HEIGHT`.
PROJECTION_HEIGHT_SCALE = 1.3
PROJECTION_DEFAULT_HEIGHT = 560
#: A figure does not grow beyond this height (px; one already taller grows 15 %): a 720 px
#: projector shows about this much below the app's header.
PROJECTION_MAX_HEIGHT = 640
#: Smallest title size (px) in projection mode: a title too long for the figure's width
#: at :data:`PROJECTION_TITLE_SIZE` gets a smaller font, down to this.
PROJECTION_MIN_TITLE_SIZE = 17
#: Width (px) assumed for a figure when wrapping subplot titles and thinning ticks: the
#: main column of a 1280 px screen beside the sidebar.
PROJECTION_ASSUMED_WIDTH = 780


def _wrap(text: str, width: int) -> tuple[str, int]:
    """``text`` wrapped at ``width`` characters with ``<br>`` (existing breaks kept), and
    the number of lines."""
    import textwrap

    lines: list[str] = []
    for part in re.split(r"<br\s*/?>", text):
        lines += textwrap.wrap(part, width, break_long_words=False) or [""]
    return "<br>".join(lines), len(lines)


def wrap_text(text: str, width: int) -> str:
    """``text`` wrapped at ``width`` characters with plotly's ``<br>`` (existing breaks
    kept, words never cut): for titles drawn in a narrow column."""
    return _wrap(text, width)[0]


def _plain_length(text: str) -> int:
    return len(re.sub(r"<[^>]+>", "", text))


def projection_style(figure: go.Figure) -> go.Figure:
    """The figure restyled to be read on a projector (a new figure; ``figure`` is kept).

    Body text :data:`PROJECTION_FONT_SIZE` px, titles :data:`PROJECTION_TITLE_SIZE` (smaller,
    down to :data:`PROJECTION_MIN_TITLE_SIZE`, when too long for the width), tick labels :data:`PROJECTION_TICK_SIZE` in
    near-black ink with outside tick marks and dark axis lines (fewer ticks on narrow
    panels); text in the plot (annotations, node labels, bar values) grows by
    :data:`PROJECTION_SCALE` (subplot titles wrap to their panel); lines are twice as wide
    (at least :data:`PROJECTION_LINE_WIDTH` px) and markers 1.5 times as big (at least
    :data:`PROJECTION_MARKER_SIZE` px).  The figure grows :data:`PROJECTION_HEIGHT_SCALE`
    times taller and its top margin makes room for the title and a legend above the plot.  Pure: no Streamlit;
    works on every figure of :mod:`engine.figures`.

    Parameters
    ----------
    figure : plotly.graph_objects.Figure

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = go.Figure(figure)
    layout = fig.layout
    # a long title gets a smaller font rather than more lines (plotly and Streamlit place
    # a wrapped title's first line above the figure)
    lines = re.split(r"<br\s*/?>", layout.title.text or "")
    title_lines = len(lines)
    longest = max(_plain_length(line) for line in lines)
    title_size = min(
        PROJECTION_TITLE_SIZE,
        max(PROJECTION_MIN_TITLE_SIZE, PROJECTION_ASSUMED_WIDTH / (0.6 * max(longest, 1))),
    )
    fig.update_layout(
        font={"size": PROJECTION_FONT_SIZE, "color": PROJECTION_INK},
        title_font={"size": title_size, "color": PROJECTION_INK},
        legend_font={"size": max(PROJECTION_FONT_SIZE - 2, PROJECTION_MIN_TEXT)},
        legend_title_font={"size": PROJECTION_FONT_SIZE - 2, "color": PROJECTION_INK},
        hoverlabel_font={"size": PROJECTION_FONT_SIZE - 2},
    )
    margin = layout.margin
    # room above the plot for the title's lines and a horizontal legend's rows
    extra_top = int((title_lines - 1) * 1.45 * title_size)
    needed = 24 + 1.45 * title_size * title_lines + 28 * _legend_rows(fig) + 12
    top = int(max(margin.t if margin.t is not None else 100, 110, needed))
    grown = layout.height * PROJECTION_HEIGHT_SCALE if layout.height else PROJECTION_DEFAULT_HEIGHT
    # not taller than a 720 px projector shows below the app's header, unless it was tall
    # already (then 15 % more, for the larger text)
    grown = min(grown, max(PROJECTION_MAX_HEIGHT, 1.15 * (layout.height or 0)))
    height = int(grown + extra_top)
    bottom = max(margin.b if margin.b is not None else 60, 90)
    legend = layout.legend
    if _legend_rows(fig) and legend.y is not None and legend.y > 1.02:
        # a legend placed higher than just above the plot (above panel titles: y = 1.1) sits
        # (y - 1) plot heights higher: the margin takes that too, or the legend covers the
        # title (Compare's chart).  top = needed + gap (height - top - bottom), solved.
        gap = float(legend.y) - 1.0
        top = int(max(top, (needed + gap * (height - bottom)) / (1.0 + gap)))
    if title_lines > 1:  # plotly puts the first line at y: move it down to keep it all in
        title_y = layout.title.y if layout.title.y is not None else 0.98
        layout.title.y = title_y - extra_top / height
        layout.title.yanchor = "top"
    fig.update_layout(
        height=height,
        margin={
            "t": top,
            "b": bottom,
            "l": max(margin.l if margin.l is not None else 60, 20),
        },
    )

    def axis_style(axis) -> None:
        if axis.visible is False:
            return
        axis.update(
            tickfont={"size": PROJECTION_TICK_SIZE, "color": PROJECTION_INK},
            title_font={"size": PROJECTION_FONT_SIZE, "color": PROJECTION_INK},
            ticks="outside",
            tickwidth=2,
            ticklen=6,
            tickcolor=PROJECTION_INK,
            showline=True,
            linewidth=2,
            linecolor=PROJECTION_INK,
            gridcolor="#c8c8c8",
            automargin=True,
        )

    fig.for_each_xaxis(axis_style)
    fig.for_each_yaxis(axis_style)

    def fewer_ticks(axis) -> None:  # a narrow panel of a grid: at most about 3 labels
        domain = axis.domain or (0.0, 1.0)
        width = (domain[1] - domain[0]) * PROJECTION_ASSUMED_WIDTH
        if axis.visible is not False and width < 260 and axis.tickvals is None:
            axis.nticks = max(3, min(axis.nticks or 99, int(width // 45)))

    fig.for_each_xaxis(fewer_ticks)
    panels = [a for a in layout.annotations or () if _is_subplot_title(a)]
    panel_width = PROJECTION_ASSUMED_WIDTH / max(1, _panels_in_a_row(panels))
    for annotation in layout.annotations or ():
        panel_title = any(annotation is other for other in panels)
        annotation.font = _bigger_text(
            annotation.font, FONT_SIZE, PROJECTION_PANEL_SCALE if panel_title else PROJECTION_SCALE
        )
        if panel_title and annotation.text:
            characters = max(8, int(panel_width / (0.55 * annotation.font.size)))
            if _plain_length(annotation.text) > characters:
                annotation.text = _wrap(annotation.text, characters)[0]
    for menu in layout.updatemenus or ():  # Play / Pause: readable, not over the slider
        menu.font = {"size": 16, "color": PROJECTION_INK}
    for slider in layout.sliders or ():
        slider.font = {"size": 16, "color": PROJECTION_INK}
        slider.currentvalue.font = {"size": 18, "color": PROJECTION_INK}
    for trace in fig.data:
        _projection_trace(trace)
    return fig


def _legend_rows(fig) -> int:
    """Rows of a horizontal legend above the plot at projection size (0 for none): plotly
    lays entries out in columns as wide as the widest one (18 px text)."""
    layout = fig.layout
    legend = layout.legend
    if layout.showlegend is False or legend.orientation != "h":
        return 0
    if legend.y is not None and legend.y < 1:
        return 0
    names = list(dict.fromkeys(t.name for t in fig.data if t.name and t.showlegend is not False))
    if len(names) < 2 and layout.showlegend is not True:
        return 0
    widest = 50 + 10 * max((len(n) for n in names), default=0)
    return math.ceil(len(names) / max(1, int(PROJECTION_ASSUMED_WIDTH // widest)))


def _is_subplot_title(annotation) -> bool:
    """An annotation ``make_subplots`` placed as a panel title (above a panel, in paper
    coordinates, centred, no arrow)."""
    return (
        annotation.xref == "paper"
        and annotation.yref == "paper"
        and annotation.showarrow is False
        and annotation.yanchor == "bottom"
        and annotation.xanchor == "center"
    )


def _panels_in_a_row(panels) -> int:
    """The most subplot titles on one row (same y)."""
    rows: dict[float, int] = {}
    for annotation in panels:
        key = round(float(annotation.y or 0.0), 3)
        rows[key] = rows.get(key, 0) + 1
    return max(rows.values(), default=1)


def _projection_trace(trace) -> None:
    """Thicker lines, bigger markers and text on one trace (in place)."""
    kind = trace.type
    line = getattr(trace, "line", None)
    if line is not None and "width" in line:
        default = 2.0 if kind in ("scatter", "scattergl", "box", "violin") else 0.0
        width = line.width if line.width is not None else default
        if width > 0 or kind in ("scatter", "scattergl"):
            trace.line.width = max(2.0 * width, PROJECTION_LINE_WIDTH)
    marker = getattr(trace, "marker", None)
    meta = trace.meta if isinstance(getattr(trace, "meta", None), dict) else {}
    if marker is not None and PROJECTION_MARKER_KEY in meta:
        trace.marker.size = float(meta[PROJECTION_MARKER_KEY])
        if marker.line is not None and marker.line.width:
            trace.marker.line.width = max(1.5 * marker.line.width, 1.5)
    elif marker is not None and "size" in marker and kind in ("scatter", "scattergl", "box"):
        size = marker.size if marker.size is not None else 6
        bigger = _scaled(size, 1.5, PROJECTION_MARKER_SIZE)  # big markers: at most 10 px more
        if isinstance(bigger, list):
            trace.marker.size = [min(b, float(a) + 10) for a, b in zip(size, bigger, strict=True)]
        else:
            trace.marker.size = min(bigger, float(size) + 10)
        if marker.line is not None and marker.line.width:
            trace.marker.line.width = max(1.5 * marker.line.width, 1.5)
    if kind == "heatmap":  # the text must fit its cell: a little bigger, at most 14 px,
        # in plotly's own colour (white on dark cells, black on light ones)
        size = trace.textfont.size if trace.textfont.size is not None else 12
        trace.textfont.size = min(1.15 * size, 14)
    elif "textfont" in trace:  # plotly picks a contrasting colour for text on bars
        trace.textfont = _bigger_text(trace.textfont, FONT_SIZE, ink_when_unset=False)
    colorbar = getattr(marker, "colorbar", None) if marker is not None else None
    if colorbar is not None and marker.showscale:
        colorbar.tickfont = {"size": PROJECTION_TICK_SIZE, "color": PROJECTION_INK}
    if "colorbar" in trace and trace.colorbar is not None:
        trace.colorbar.tickfont = {"size": PROJECTION_TICK_SIZE, "color": PROJECTION_INK}
