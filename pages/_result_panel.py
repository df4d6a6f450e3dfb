"""The result panel of a page (:class:`ResultPanel`, re-exported by ``pages/_jobs.py`` and
``pages/_shared.py``): the export hook every result figure and table goes through, the
page's export row (report HTML, figures PNG / SVG) and the projection-mode figure style
(:func:`shown_figure`).  See ``pages/_jobs.py`` for the whole page-job kit."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import streamlit as st

logger = logging.getLogger(__name__)

#: Longest list / dict / text shown as a parameter.
_MAX_PARAM_ITEMS, _MAX_PARAM_TEXT = 50, 500


# -- the result panel -----------------------------------------------------------------------
_PANELS = "_result_panels"


#: Heading of each page's report (page name -> title, as in the navigation).
PAGE_TITLES = {
    "optimal_shape_trees": "Optimal shape trees (Literati)",
    "conditional_density": "Conditional density (Partition Tree)",
    "feature_ranking": "Feature ranking (TreeGrad)",
    "conditional_inference": "Conditional inference (CIT / CIF)",
    "split_strategies": "Split strategies (DICS)",
    "compare": "Compare models",
}


#: Widget-key prefix of each page: its widgets' values are the report's page settings.
PAGE_PREFIXES = {
    "optimal_shape_trees": "lit_",
    "conditional_density": "pt_",
    "feature_ranking": "tg_",
    "conditional_inference": "ci_",
    "split_strategies": "ss_",
    "compare": "cmp_",
}


#: Keys of a run's meta that are the dataset (its summary) or bookkeeping, not parameters.
_DATASET_META = {
    "task", "feature_names", "classes", "categories", "X", "y", "target", "caption",
    "digest", "tr", "te", "train", "val", "test", "is_categorical", "run", "run_id",
    "ds_option",
}  # fmt: skip


#: Why the image downloads are off when no browser is installed.
NO_IMAGES = (
    "Figure images need Chromium on the server (apt-get install chromium, or set "
    "BROWSER_PATH); the report and each chart's camera button still work."
)


_NOT_A_SETTING = object()


def _plain(value, nested: bool = False):
    """``value`` as JSON-able text / numbers when it is a setting (a scalar, or a short list
    or dict of scalars), else ``_NOT_A_SETTING``."""
    import numpy as np

    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if len(value) <= _MAX_PARAM_TEXT else _NOT_A_SETTING
    if nested or not isinstance(value, list | tuple | dict) or len(value) > _MAX_PARAM_ITEMS:
        return _NOT_A_SETTING
    pairs = value.items() if isinstance(value, dict) else enumerate(value)
    plain = {key: _plain(item, nested=True) for key, item in pairs}
    if any(item is _NOT_A_SETTING for item in plain.values()):
        return _NOT_A_SETTING
    return (
        {str(k): v for k, v in plain.items()} if isinstance(value, dict) else list(plain.values())
    )


def _unmark(text: str) -> str:
    """Markdown caption -> plain text (bold marks and backslash escapes removed)."""
    import re

    return re.sub(r"\\(.)", r"\1", str(text).replace("**", "")).strip()


def images_status() -> tuple[bool, str]:
    """Whether figure images can be made here, and if not why (:data:`NO_IMAGES`)."""
    from engine.images import available

    return (True, "") if available() else (False, NO_IMAGES)


#: Session-state key of the sidebar's "Projection mode" toggle.
PROJECTION_KEY = "projection"


def shown_figure(figure):
    """``figure`` as the page draws it: restyled for a projector
    (:func:`engine.figures.style.projection_style`) while the sidebar's Projection mode is
    on, else unchanged.  Every ``st.plotly_chart`` of the pages goes through it."""
    if not st.session_state.get(PROJECTION_KEY):
        return figure
    from engine.figures.style import projection_style

    return projection_style(figure)


class ResultPanel:
    """The result section of a page for one run: draws and records its figures and tables.

    ``page`` names the page ("optimal_shape_trees"), ``meta`` is the run's
    :class:`PageJob` meta (the dataset and settings it ran with).  Creating a panel makes
    it the page's current one (:func:`result_panels`).  See the module docstring for the
    export hook.
    """

    def __init__(self, page: str, meta: dict | None = None, *, exports: bool = True) -> None:
        self.page = page
        self.meta = meta or {}
        self.figures: dict[str, object] = {}
        self.tables: dict[str, object] = {}
        self.notes: list[str] = []
        self.code: str | None = None  # the page's "Reproduce in Python" (:meth:`snippet`)
        #: download-button key -> the callable that makes its file (run on click)
        self.export_files: dict[str, Callable[[], bytes | str]] = {}
        #: the page's widget values now (the report's page settings: its callable runs
        #: on click in another thread, without the session)
        self.page_settings = self._page_settings()
        st.session_state.setdefault(_PANELS, {})[page] = self
        if exports:
            self.exports()
        self.subsample_caption()

    def subsample_caption(self) -> None:
        """A run on a subsample (its meta's ``subsample``) says so under the export row
        and in the report: 'Every result below is on a seeded stratified subsample of N of
        M rows (seed S).'"""
        from pages._scale import meta_note

        note = meta_note(self.meta)
        if note is not None:
            text = f"Every result below is {note}."
            st.caption(text)
            self.notes.append(text)

    def chart(self, figure, *, key: str, where=None, **kwargs):
        """Draw a plotly ``figure`` (``st.plotly_chart``, in ``where`` or the current
        container) and record it under ``key``; returns the chart's selection event."""
        self.figures[key] = figure
        return (where or st).plotly_chart(shown_figure(figure), key=key, **kwargs)

    def table(self, frame, *, name: str, where=None, **kwargs):
        """Draw a DataFrame (``st.dataframe``) and record it under ``name``."""
        self.tables[name] = frame
        return (where or st).dataframe(frame, **kwargs)

    def record_table(self, name: str, frame) -> None:
        """Record a table for the exports without drawing it (e.g. per-fold results the
        page offers as CSV only)."""
        self.tables[name] = frame

    def note(self, text: str) -> None:
        """Record a message of the run (a warning, an automatic fix) for the report."""
        self.notes.append(str(text))

    def snippet(self, code: str) -> None:
        """Show ``code`` (engine calls that compute this result, :mod:`engine.snippets`) in
        a "Reproduce in Python" expander, copyable, and keep it for the report."""
        self.code = str(code)
        with st.expander("Reproduce in Python"):
            st.caption("The engine calls that compute this result in a notebook or a script.")
            st.code(self.code, language="python")

    # -- exports ---------------------------------------------------------------------------
    def report_title(self) -> str:
        """'<page title> -- <dataset>' (e.g. 'Compare models -- iris')."""
        title = PAGE_TITLES.get(self.page, self.page.replace("_", " ").capitalize())
        dataset = _unmark(self.meta.get("caption", "")).split(" -- ")[0].strip()
        return f"{title} -- {dataset}" if dataset else title

    def report_dataset(self) -> dict:
        """The dataset summary of the report, from the run's meta."""
        meta = self.meta
        out: dict = {}
        if meta.get("caption"):
            out["dataset"] = _unmark(meta["caption"])
        X = meta.get("X")
        if getattr(X, "ndim", 0) == 2:
            out["rows"], out["features"] = int(X.shape[0]), int(X.shape[1])
        for key in ("target", "task"):
            if meta.get(key) is not None:
                out[key] = str(meta[key])
        if meta.get("classes") is not None:
            out["classes"] = [str(c) for c in meta["classes"]]
        if meta.get("feature_names") is not None:
            names = [str(n) for n in meta["feature_names"]]
            more = len(names) - _MAX_PARAM_ITEMS
            out["feature names"] = (
                names if more <= 0 else names[:_MAX_PARAM_ITEMS] + [f"... and {more} more"]
            )
        return out

    def _page_settings(self) -> dict:
        """The plain values of the page's widgets (keys with its prefix, not buttons,
        downloads, jobs or views), by key without the prefix."""
        from pages._jobs import NOT_SAVED_SUFFIXES

        prefix = PAGE_PREFIXES.get(self.page)
        out: dict = {}
        if not prefix:
            return out
        for key in sorted(k for k in st.session_state.keys() if isinstance(k, str)):
            if not key.startswith(prefix) or key.endswith(NOT_SAVED_SUFFIXES):
                continue
            plain = _plain(st.session_state[key])
            if plain is not _NOT_A_SETTING:
                out[key[len(prefix) :]] = plain
        return out

    def report_params(self) -> dict:
        """The run's settings (the plain values of its meta) and the page's widget values
        when the panel was drawn (``page setting <key>``), for the report."""
        out: dict = {}
        for key, value in self.meta.items():
            skip = key in _DATASET_META or str(key).startswith("_")
            plain = _NOT_A_SETTING if skip else _plain(value)
            if plain is not _NOT_A_SETTING:
                out[str(key)] = plain
        out.update({f"page setting {key}": value for key, value in self.page_settings.items()})
        return out

    def report_figures(self) -> list[tuple[str, object]]:
        """(caption, figure) of every recorded figure: its title, else its key."""
        import re

        out = []
        for key, figure in list(self.figures.items()):
            title = getattr(getattr(getattr(figure, "layout", None), "title", None), "text", "")
            text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", title or "")).strip()
            out.append((text or key, figure))
        return out

    def report_html(self) -> str:
        """The page's report (:func:`engine.report.build_report`): dataset, parameters,
        notes, every recorded table (a styled table: its data) and figure."""
        import pandas as pd

        from engine.report import build_report

        tables = []
        notes = list(self.notes)
        for name, frame in list(self.tables.items()):
            frame = getattr(frame, "data", frame)  # a pandas Styler holds its DataFrame
            if isinstance(frame, pd.DataFrame):
                tables.append((name, frame))
            else:
                notes.append(f"Table {name} is not in the report (not a table of values).")
        return build_report(
            self.report_title(),
            self.report_dataset(),
            self.report_params(),
            tables,
            self.report_figures(),
            notes,
            code=self.code,
        )

    def safe_report_html(self) -> str:
        """:meth:`report_html`, or, when it fails, a short HTML page saying why (the
        download runs after the click, where an exception would reach the browser)."""
        import html

        try:
            return self.report_html()
        except Exception as exc:  # noqa: BLE001 - a download must never show a traceback
            logger.exception("report of %s could not be made", self.page)
            reason = html.escape(f"{type(exc).__name__}: {exc}")
            return (
                "<!DOCTYPE html><html><head><meta charset='utf-8'><title>TreeLab report "
                "not made</title></head><body><h1>The report could not be made</h1>"
                f"<p>{reason}</p><p>The page's results are unchanged; the tables' CSV "
                "downloads still work. Please report this with the page's link.</p>"
                "</body></html>"
            )

    def images_zip(self, format: str) -> bytes:
        """A zip of every recorded figure as ``format`` ('png' / 'svg') images.  When none
        can be made (no figure, no browser) the zip holds ``problems.txt`` saying why."""
        import io
        import zipfile

        from engine.images import ImageExportError, figures_zip

        try:
            return figures_zip(self.report_figures(), format)
        except Exception as exc:  # noqa: BLE001 - a download must never show a traceback
            if not isinstance(exc, ValueError | ImageExportError):
                logger.exception("figures of %s could not be rendered", self.page)
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                archive.writestr("problems.txt", f"No image could be made: {exc}.\n")
            return buffer.getvalue()

    def exports(self) -> None:
        """The export row: "Download report (HTML)" and "Download figures (PNG)" / "(SVG)".

        The files are made on click, from what this panel recorded by then (the whole run).
        Without a browser for images, the image buttons are disabled and a caption says why.
        """
        from engine.report import report_filename

        stem = report_filename(self.report_title())[: -len(".html")]
        can_draw, why = images_status()
        self.export_files = {
            f"{self.page}_report_dl": self.safe_report_html,
            f"{self.page}_png_dl": lambda: self.images_zip("png"),
            f"{self.page}_svg_dl": lambda: self.images_zip("svg"),
        }
        buttons = [
            (
                "Download report (HTML)",
                f"{stem}.html",
                "text/html",
                "One HTML file: the dataset, the parameters, every table and every figure of "
                "these results, interactive (sliders replay the run); opens offline.",
            ),
            (
                "Download figures (PNG)",
                f"{stem}-png.zip",
                "application/zip",
                "A zip of every figure of these results as a PNG image, made when you click "
                "(a few seconds)."
                if can_draw
                else why,
            ),
            (
                "Download figures (SVG)",
                f"{stem}-svg.zip",
                "application/zip",
                "A zip of every figure of these results as an SVG image, made when you click "
                "(a few seconds)."
                if can_draw
                else why,
            ),
        ]
        columns = st.columns([1, 1, 1, 0.5])  # a label cut short at 1280 px in fifths
        for i, (col, (key, data), (label, file_name, mime, help)) in enumerate(
            zip(columns, self.export_files.items(), buttons, strict=False)
        ):
            col.download_button(
                label,
                data,
                file_name=file_name,
                mime=mime,
                on_click="ignore",
                key=key,
                help=help,
                disabled=i > 0 and not can_draw,
                width="stretch",
            )
        if not can_draw:
            st.caption(why)

    def downloads(self, files: Iterable[tuple], *, columns: tuple | None = None) -> None:
        """The result's download buttons, one per ``(label, data, file_name, mime, key)``,
        side by side (``columns``: their widths, by default equal with a spacer)."""
        files = list(files)
        widths = list(columns or [1] * len(files) + [max(1, 5 - 2 * len(files))])
        for col, (label, data, file_name, mime, key) in zip(
            st.columns(widths), files, strict=False
        ):
            col.download_button(
                label, data, file_name=file_name, mime=mime, on_click="ignore", key=key
            )


def result_panels() -> dict[str, ResultPanel]:
    """The last :class:`ResultPanel` each page drew in this session (page -> panel)."""
    return dict(st.session_state.get(_PANELS, {}))
