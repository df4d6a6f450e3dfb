"""One self-contained HTML report of a run: title, dataset summary, parameters, result
tables and interactive plotly figures (issue 16 point 3).

The file needs no network: plotly.js is inlined exactly once (``plotly.offline.get_plotlyjs``,
the version of the installed plotly), every figure keeps its interactivity (hover, zoom,
legend toggles) and its replayable parts (sliders, animation frames and their play
buttons).  Text from the user (dataset names, column names, notes) is HTML-escaped.
Tables are bounded (:data:`MAX_TABLE_ROWS` rows each, the report says when rows are left
out).
"""

from __future__ import annotations

import datetime as _datetime
import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

#: Rows of one table written to a report (the rest is left out, with a note).
MAX_TABLE_ROWS = 1000
#: plotly config of every figure: no plotly logo, no link to plotly's cloud editor.
FIGURE_CONFIG = {"displaylogo": False, "responsive": True}

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #222; background: #fff; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 1.8rem; margin: 0 0 4px; }
h2 { font-size: 1.3rem; margin: 32px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 1.05rem; margin: 20px 0 6px; }
.generated { color: #666; font-size: 0.9rem; margin: 0 0 16px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
.table-wrap { overflow-x: auto; max-height: 480px; overflow-y: auto; border: 1px solid #eee; }
table.result { border-collapse: collapse; font-size: 0.88rem; }
table.result th, table.result td { padding: 3px 8px; border-bottom: 1px solid #eee;
       text-align: right; white-space: nowrap; }
table.result thead th { position: sticky; top: 0; background: #f6f6f6; }
.figure { margin: 8px 0 24px; }
.note { color: #555; font-size: 0.9rem; }
ul.notes li { margin: 2px 0; }
pre.code { background: #f6f8fa; border: 1px solid #e1e4e8; padding: 12px 16px;
       overflow-x: auto; font-size: 0.85rem; line-height: 1.4; }
"""


def _text(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _facts(items: Mapping[str, Any]) -> str:
    if not items:
        return '<p class="note">(none)</p>'
    rows = []
    for key, value in items.items():
        if isinstance(value, Mapping | list | tuple):
            shown = json.dumps(value, default=str, ensure_ascii=False)
        else:
            shown = str(value)
        rows.append(f"<dt>{_text(key)}</dt><dd>{_text(shown)}</dd>")
    return '<dl class="facts">' + "".join(rows) + "</dl>"


def _table(name: str, frame: pd.DataFrame, max_rows: int) -> str:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"table {name!r} must be a pandas DataFrame, got {type(frame).__name__}")
    shown = frame.head(max_rows)
    body = shown.to_html(
        classes="result",
        border=0,
        escape=True,
        na_rep="",
        float_format=lambda v: f"{v:.6g}",
        index=not isinstance(frame.index, pd.RangeIndex),  # row numbers say nothing
    )
    note = ""
    if len(frame) > max_rows:
        note = (
            f'<p class="note">First {max_rows:,} of {len(frame):,} rows; the full table is '
            "in the page's CSV download.</p>"
        )
    return f'<h3>{_text(name)}</h3><div class="table-wrap">{body}</div>{note}'


def _figure(index: int, caption: str, figure) -> str:
    import plotly.graph_objects as go
    import plotly.io as pio

    if not isinstance(figure, go.Figure):
        raise TypeError(f"figure {caption!r} must be a plotly Figure, got {type(figure).__name__}")
    div = pio.to_html(
        figure,
        full_html=False,
        include_plotlyjs=False,
        include_mathjax=False,
        div_id=f"figure-{index}",
        config=FIGURE_CONFIG,
        auto_play=False,
        validate=True,
    )
    return f'<section class="figure"><h3>{_text(caption)}</h3>{div}</section>'


def _pairs(items, what: str) -> list[tuple[str, Any]]:
    if items is None:
        return []
    if isinstance(items, Mapping):
        return [(str(k), v) for k, v in items.items()]
    out = []
    for i, item in enumerate(items):
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            out.append(item)
        else:
            title = getattr(getattr(getattr(item, "layout", None), "title", None), "text", None)
            out.append((title or f"{what} {i + 1}", item))
    return out


def build_report(
    title: str,
    dataset: Mapping[str, Any],
    params: Mapping[str, Any],
    tables: Mapping[str, pd.DataFrame] | Sequence[tuple[str, pd.DataFrame]] = (),
    figures: Mapping[str, Any] | Sequence[Any] = (),
    notes: Iterable[str] = (),
    *,
    code: str | None = None,
    max_table_rows: int = MAX_TABLE_ROWS,
    generated: _datetime.datetime | None = None,
) -> str:
    """The report as one HTML document (a str; write it with ``encoding='utf-8'``).

    Parameters
    ----------
    title : str
        Heading and ``<title>`` (e.g. "Compare -- iris").
    dataset : mapping str -> value
        Dataset summary shown as a list (name, rows, features, target, task...).
    params : mapping str -> value
        The run's parameters (values are shown as text; lists and dicts as JSON).
    tables : mapping name -> DataFrame, or sequence of (name, DataFrame)
        Result tables, in order; each shows at most ``max_table_rows`` rows.
    figures : mapping caption -> plotly Figure, or sequence of Figures / (caption, Figure)
        Interactive figures, in order (a bare Figure is captioned by its title).  Sliders
        and animation frames are kept (``auto_play`` off).
    notes : iterable of str
        Messages for the reader (warnings of the run, automatic fixes...).
    code : str, optional
        Python code that computes the same result with the engine
        (:mod:`engine.snippets`), shown as "Reproduce in Python" after the parameters.
    generated : datetime, optional
        The time stamp shown (default: now, UTC).

    Returns
    -------
    str
        ``<!DOCTYPE html>`` document with plotly.js inline once; no external resource.

    Raises
    ------
    TypeError
        When a table is not a DataFrame or a figure not a plotly Figure (naming it).
    """
    from plotly.offline import get_plotlyjs

    stamp = (generated or _datetime.datetime.now(_datetime.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    table_pairs = _pairs(tables, "Table")
    figure_pairs = _pairs(figures, "Figure")
    note_list = [str(n) for n in notes]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="TreeLab">',
        f"<title>{_text(title)}</title>",
        f"<style>{_CSS}</style>",
        # plotly.js, inline, once; the figures' scripts below call window.Plotly
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head><body><main>",
        f"<h1>{_text(title)}</h1>",
        f'<p class="generated">TreeLab report, generated {_text(stamp)}. Every figure is '
        "interactive: hover for values, drag to zoom, double-click to reset, click legend "
        "entries to hide traces; sliders and play buttons replay the run.</p>",
        "<h2>Dataset</h2>",
        _facts(dict(dataset)),
        "<h2>Parameters</h2>",
        _facts(dict(params)),
    ]
    if code:
        parts.append("<h2>Reproduce in Python</h2>")
        parts.append(
            '<p class="note">The engine calls that compute this result in a notebook or a '
            "script, with TreeLab's <code>engine</code> package installed (<code>pip install "
            ".</code> in a TreeLab checkout).</p>"
        )
        parts.append(f'<pre class="code"><code class="language-python">{_text(code)}</code></pre>')
    if note_list:
        parts.append("<h2>Notes</h2><ul class='notes'>")
        parts.extend(f"<li>{_text(n)}</li>" for n in note_list)
        parts.append("</ul>")
    if table_pairs:
        parts.append("<h2>Results</h2>")
        parts.extend(_table(name, frame, max_table_rows) for name, frame in table_pairs)
    if figure_pairs:
        parts.append("<h2>Figures</h2>")
        parts.extend(_figure(i, cap, fig) for i, (cap, fig) in enumerate(figure_pairs))
    parts.append("</main></body></html>")
    return "\n".join(parts)


def report_filename(title: str) -> str:
    """A safe download name: 'Compare -- iris' -> 'treelab-compare-iris.html'."""
    slug = "".join(c.lower() if c.isalnum() else "-" for c in str(title))
    slug = "-".join(p for p in slug.split("-") if p)[:80] or "report"
    return f"treelab-{slug}.html"
