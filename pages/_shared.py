"""UI helpers shared by every page: engine warm-up, the dataset sidebar, the page-job kit.

Only Streamlit glue lives here; parsing, validation and models are in ``engine``.  The
page-job kit (start, stop, running elsewhere, the live fragment, saved settings, the result
panel and its export hook) is in ``pages/_jobs.py`` and re-exported here: pages import it
from this module.
State kept in ``st.session_state``:

* ``ds`` -- the selected dataset option (``"iris"`` or ``"upload:<name>"``), mirrored in the URL;
* ``uploads`` -- ``{option: (DataFrame, ParseReport, key)}`` for this session's uploads, where
  ``key`` hashes the bytes and the parse options (it keys the prepared-dataset cache);
* ``target::<option>``, ``task::<option>``, ``categorical::<option>``, ``left_out::<option>``
  -- column roles per dataset (``left_out`` starts with the columns the parse report
  found to be identifiers);
* ``max_levels::<option>``, ``many_levels::<option>``, ``small_classes::<option>`` -- the
  Data page's level cap, what to do above it, and what to do with classes too small for a
  stratified split;
* ``missing``, ``seed`` -- shared settings (the seed is mirrored in the URL);
* ``projection`` -- the sidebar's Projection mode: every figure is drawn for a projector
  (:func:`shown_figure`); mirrored in the URL as ``projection=1``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

import numpy as np
import streamlit as st

from engine.data import (  # noqa: F401 (the labels are re-exported for the pages)
    DEFAULT_MISSING,
    DEFAULT_NA_VALUES,
    LEVEL_CAP_LABEL,
    MANY_LEVEL_CHOICES,
    MANY_LEVELS_LABEL,
    MAX_BYTES,
    MAX_CATEGORIES,
    MISSING_CHOICES,
    MISSING_LABEL,
    SMALL_CLASS_CHOICES,
    SMALL_CLASSES_LABEL,
    DataError,
    bundled_datasets,
    load_bundled,
    load_csv,
    make_dataset,
)
from pages._engine_gate import (  # noqa: F401 (re-exported for app.py and the pages)
    WARMUP_DELAY,
    engine_gate,
    kernels_ready,
    start_engine,
)
from pages._jobs import (  # noqa: F401 (the page-job kit, re-exported for the pages)
    MAX_RUNNING_JOBS,
    MEMORY_ADVICE,
    NOT_SAVED_SUFFIXES,
    PROJECTION_KEY,
    PageJob,
    ResultPanel,
    SavedSettings,
    cv_job_panel,
    job_failure,
    job_meta,
    job_waiting,
    reset_on_dataset_change,
    result_panels,
    running_elsewhere,
    show_job_failure,
    shown_figure,
    start_job,
    stop_page,
)
from pages._links import LinkParam, read_param
from pages._scale import (  # noqa: F401 (scale_notice, subsample_meta: for the pages)
    apply_subsample,
    fit_within_budget,
    scale_notice,
    sidebar_subsample,
    subsample_meta,
    subsample_note,
)

UPLOAD_PREFIX = "upload:"
#: Uploaded tables kept per browser session (the oldest is forgotten beyond this).
MAX_UPLOADS = 5
#: Bytes of uploaded files kept per browser session (the oldest are forgotten beyond this;
#: one file is at most the engine's ``MAX_BYTES``, the server's upload limit).
MAX_UPLOAD_BYTES = 2 * MAX_BYTES
TASK_OPTIONS = ("auto", "classification", "regression")
#: The settings' labels and choices come from the engine, whose messages name them.
MISSING_OPTIONS = MISSING_CHOICES


# -- text from the user in Markdown -------------------------------------------------------
#: Characters that start Markdown or LaTeX anywhere in a line (emphasis, code, math,
#: strikethrough, links and Streamlit's ``:color[...]`` directives, HTML, entities, tables).
_MARKDOWN_ANYWHERE = re.compile(r"([\\`*$~\[\]<&|])")
#: An underscore that can open or close emphasis (not one between letters or digits).
_MARKDOWN_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
#: Markers that act only at the start of a line: headings, quotes, lists, setext lines.
_MARKDOWN_LINE_START = re.compile(r"^(\s*(?:\d+)?)([#>+=.)-])", re.MULTILINE)


def md(text) -> str:
    """``text`` (a column name, a label, a file name, a DataError message) escaped for
    ``st.markdown`` and the other elements that render Markdown: shown as written, never
    as bold, LaTeX (``$price$``), a link or HTML.  Put it in a Markdown string as
    ``f"**{md(name)}**"``."""
    text = str(text)
    text = _MARKDOWN_ANYWHERE.sub(r"\\\1", text)
    text = _MARKDOWN_UNDERSCORE.sub(r"\\_", text)
    return _MARKDOWN_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)


# -- datasets ----------------------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=32)
def _bundled(name: str):
    return load_bundled(name)


@st.cache_data(show_spinner="Parsing CSV...", max_entries=16)
def parse_upload(content: bytes, name: str, sep, decimal, thousands, encoding, na_values):
    """Parse uploaded bytes (cached on the bytes and the options); raises DataError."""
    return load_csv(
        content,
        sep=sep,
        decimal=decimal,
        thousands=thousands,
        encoding=encoding,
        na_values=DEFAULT_NA_VALUES if na_values is None else na_values,
        name=name,
    )


def content_hash(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()[:16]


def dataset_options() -> list[str]:
    return list(bundled_datasets()) + list(st.session_state.get("uploads", {}))


def option_label(option: str) -> str:
    """Picker label: the dataset's name and, for a bundled one, its usual task."""
    if option.startswith(UPLOAD_PREFIX):
        return f"{option[len(UPLOAD_PREFIX) :]} (uploaded)"
    entry = bundled_datasets().get(option, {})
    return f"{dataset_title(option)} ({entry.get('task', '?')})"


def dataset_title(option: str) -> str:
    """The dataset's name alone (the task shown next to it depends on the chosen target)."""
    if option.startswith(UPLOAD_PREFIX):
        return f"{option[len(UPLOAD_PREFIX) :]} (uploaded)"
    return str(bundled_datasets().get(option, {}).get("title", option))


#: Session-state key: upload option -> the missing-value tokens it was read with.
UPLOAD_NA = "upload_na"


def add_upload(name: str, content: bytes, **options) -> str:
    """Parse an upload and make it the active dataset.

    Raises DataError (message for the user); on error nothing in the session changes,
    so the previous dataset stays active.  At most :data:`MAX_UPLOADS` uploads are kept.
    """
    parse_options = (
        options.get("sep"),
        options.get("decimal"),
        options.get("thousands"),
        options.get("encoding"),
        tuple(options.get("na_values") or ()) or None,
    )
    if len(content) > MAX_UPLOAD_BYTES:
        raise DataError(
            f"The file has {len(content) / 2**20:.1f} MiB; a session keeps at most "
            f"{MAX_UPLOAD_BYTES / 2**20:.0f} MiB of uploads. Upload a smaller sample of it."
        )
    df, report = parse_upload(content, name, *parse_options)
    option = UPLOAD_PREFIX + name
    uploads = dict(st.session_state.get("uploads", {}))
    # the key names this parse (bytes *and* options): the prepared Dataset is cached on it,
    # so re-reading the same file with another delimiter or decimal mark must change it
    key = f"{content_hash(content)}:{content_hash(repr(parse_options).encode())}"
    uploads.pop(option, None)  # re-inserted last: the newest upload
    uploads[option] = (df, report, key)
    sizes = dict(st.session_state.get("upload_bytes", {}))
    sizes.pop(option, None)
    sizes[option] = len(content)
    forgotten = []
    # bound the session's memory: forget the oldest uploads beyond the count or the bytes
    while len(uploads) > MAX_UPLOADS or (
        len(uploads) > 1 and sum(sizes.get(o, 0) for o in uploads) > MAX_UPLOAD_BYTES
    ):
        oldest = next(iter(uploads))
        uploads.pop(oldest)
        sizes.pop(oldest, None)
        forgotten.append(oldest[len(UPLOAD_PREFIX) :])
    st.session_state["uploads"] = uploads
    st.session_state["upload_bytes"] = {o: sizes[o] for o in uploads if o in sizes}
    # the missing-value tokens it was read with, for the snippet (None: the engine's own)
    na_values = {**st.session_state.get(UPLOAD_NA, {}), option: parse_options[4]}
    st.session_state[UPLOAD_NA] = {
        o: list(na_values[o]) if na_values.get(o) is not None else None
        for o in uploads
        if o in na_values
    }
    st.session_state["_uploads_forgotten"] = forgotten
    st.session_state["_pending_ds"] = option
    return option


def current_frame(option: str):
    """(DataFrame, ParseReport, default target, content key) of a dataset option.

    The default target of an upload is the file's last column, even when that column was
    removed while reading (it was empty): the sidebar then chooses no target and says why
    (:func:`target_problem`), rather than silently predicting another column.
    """
    uploads = st.session_state.get("uploads", {})
    if option in uploads:
        df, report, key = uploads[option]
        file_columns = getattr(report, "file_columns", None) or list(df.columns)
        return df, report, str(file_columns[-1]), key
    df, report, entry = _bundled(option)
    return df, report, entry["target"], option


@st.cache_data(show_spinner="Preparing dataset...", max_entries=32)
def _make(
    _df,
    key: str,
    target: str,
    task,
    categorical: tuple,
    missing: str,
    left_out: tuple = (),
    max_categories: int = MAX_CATEGORIES,
    many_levels: str = "other",
    small_classes: str = "keep",
):
    features = [str(c) for c in _df.columns if str(c) not in left_out and str(c) != target]
    return make_dataset(
        _df,
        target,
        task=task,
        categorical=list(categorical) or None,
        missing=missing,
        features=features,
        max_categories=max_categories,
        many_levels=many_levels,
        small_classes=small_classes,
    )


def left_out_columns(option: str) -> list[str]:
    """The columns left out of the features of ``option``: the user's choice, which starts
    as the columns the parse report found to be identifiers (names, IDs, row numbers, free
    text)."""
    key = f"left_out::{option}"
    if key not in st.session_state:
        _df, report, _default, _ = current_frame(option)
        st.session_state[key] = list(report.identifiers)
    return list(st.session_state[key])


def bring_back(option: str, column: str) -> None:
    """Use ``column`` as a feature again (a button callback on the Data page)."""
    key = f"left_out::{option}"
    st.session_state[key] = [c for c in left_out_columns(option) if c != column]


def _to_url(key: str, value, default) -> None:
    """Mirror a setting in the URL (dropped when it is the default) so links reproduce it."""
    if value == default or value is None:
        st.query_params.pop(key, None)
    elif st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)


#: Widget keys whose values must survive a page switch (exact keys and ``prefix`` matches).
_KEPT_PREFIXES = (
    "target::",
    "task::",
    "categorical::",
    "left_out::",
    "max_levels::",
    "many_levels::",
    "small_classes::",
    "plot_feature::",
    "csv_",
    "cmp_",
    "ss_",
    "lit_",
    "pt_",
    "tg_",
    "ci_",
    "learn_",
    "subsample",
)
#: Keys under those prefixes that are not kept: buttons (cannot be set), the job itself, and
#: result-view widgets whose bounds depend on the last result.
_NOT_KEPT = frozenset(
    {
        "cmp_run",
        "cmp_stop",
        "cmp_job",
        "cmp_job_meta",
        "cmp_tree_models",
        "cmp_collapse",
        "cmp_row",
        "ss_run",
        "ss_stop",
        "ss_job",
        "ss_job_meta",
        "ss_tree_fig",
        "ss_left_tree",
        "ss_right_tree",
        "ss_dl_cand",
        "ss_dl_cv",
    }
)
#: Key endings that are never kept, whatever the page: buttons and download buttons (their
#: value cannot be set), jobs, and ``*_view`` widgets whose options depend on the last result.
_NOT_KEPT_SUFFIXES = ("_run", "_stop", "_btn", "_dl", "_job", "_job_meta", "_view")


def keep_widget_state() -> None:
    """Keep the values of page widgets while another page is shown.

    Streamlit drops a widget's value at the end of any run that does not draw the widget,
    so without this the categorical columns and CSV options of the Data page, the models,
    folds and parameters of the Compare page, and the column roles of the datasets not
    currently selected would reset whenever the user switches page or dataset.
    Re-assigning a value through ``st.session_state`` makes Streamlit keep it.  Call it
    once per run, before any widget is drawn.
    """
    for key in list(st.session_state.keys()):
        if (
            isinstance(key, str)
            and key.startswith(_KEPT_PREFIXES)
            and key not in _NOT_KEPT
            and not key.endswith(_NOT_KEPT_SUFFIXES)
        ):
            st.session_state[key] = st.session_state[key]


def sidebar() -> None:
    """Draw the shared sidebar: dataset, target, task, missing values, seed.

    Dataset, target, task (for bundled datasets) and seed live in the URL
    (``?ds=wine&target=...&task=...&seed=3``) so a link reproduces the configuration.
    """
    options = dataset_options()
    pending = st.session_state.pop("_pending_ds", None)
    if pending in options:
        st.session_state["ds"] = pending
    elif "ds" in st.session_state and st.session_state["ds"] not in options:
        del st.session_state["ds"]  # never leave the widget on an option that is gone
    if "ds" not in st.session_state:
        read_param(LinkParam("ds", "ds", str, options[0], options=tuple(bundled_datasets())))
    sb = st.sidebar
    sb.header("Dataset")
    option = sb.selectbox(
        "Dataset",
        options,
        format_func=option_label,
        key="ds",
        help="A bundled dataset, or a CSV you uploaded on the Data page.",
    )
    bundled = not option.startswith(UPLOAD_PREFIX)
    _to_url("ds", option if bundled else None, options[0])
    df, _report, default_target, _ = current_frame(option)
    columns = [str(c) for c in df.columns]
    tkey, taskkey = f"target::{option}", f"task::{option}"
    if bundled:
        read_param(LinkParam(tkey, "target", str, default_target, options=tuple(columns)))
        read_param(LinkParam(taskkey, "task", str, "auto", options=TASK_OPTIONS))
    _choose_target(option, columns, default_target)
    target = sb.selectbox(
        "Target column",
        columns,
        # no target: an empty box with a placeholder (a chosen one cannot be cleared)
        index=None if st.session_state.get(tkey) is None else 0,
        key=tkey,
        placeholder="Pick the target column",
        on_change=_forget_target_note,
        args=(option,),
        help="The column the trees predict. Every other column is a feature.",
    )
    task = sb.radio(
        "Task",
        TASK_OPTIONS,
        key=taskkey,
        horizontal=True,
        help="auto: text, yes/no or integer targets with at most 20 values are ",
    )
    _to_url("target", target if bundled else None, default_target)
    _to_url("task", task if bundled else None, "auto")
    read_param(LinkParam("missing", "missing", str, "keep", options=tuple(MISSING_OPTIONS)))
    sb.selectbox(
        MISSING_LABEL,
        list(MISSING_OPTIONS),
        key="missing",
        format_func=MISSING_OPTIONS.get,
        help="keep (default): keep every row; the trees route missing values themselves "
        "(each page says how; a method page that cannot route them yet says so). drop: "
        "use only complete rows. error: stop and say which columns have gaps. Rows without a target "
        "value are always dropped, and counted.",
    )
    _to_url("missing", st.session_state.get("missing"), next(iter(MISSING_OPTIONS)))
    read_param(LinkParam("seed", "seed", int, 0, low=0, high=2**31 - 1))
    value = sb.number_input(
        "Random seed",
        min_value=0,
        max_value=2**31 - 1,
        value=None if "seed" in st.session_state else 0,
        step=1,
        key="seed",
        help="Every random choice (folds, forests, sampling) uses this seed, so a "
        "result can be reproduced and shared by URL.",
    )
    _to_url("seed", value, 0)
    sidebar_subsample(sb, len(df))
    sb.header("Display")
    read_param(LinkParam(PROJECTION_KEY, PROJECTION_KEY, bool, False))
    projection = sb.toggle(
        "Projection mode",
        key=PROJECTION_KEY,
        help="Large fonts, dark tick labels, thick lines and big markers on every figure, "
        "to be read on a projector from the back of the room.",
    )
    _to_url(PROJECTION_KEY, "1" if projection else None, None)


def _choose_target(option: str, columns: list[str], default_target: str) -> None:
    """Set the target of ``option`` before its selectbox is drawn: the user's choice while it
    is a column, else the default target, else none (the user must pick one).  Replacing a
    chosen target that is no longer a column is reported (:func:`target_problem`)."""
    tkey = f"target::{option}"
    chosen = st.session_state.get(tkey)
    if chosen in columns or (chosen is None and tkey in st.session_state):
        return
    new = default_target if default_target in columns else None
    st.session_state[tkey] = new
    if chosen is not None:  # a target the user had, gone after a new upload of the file
        now = f"the target is now '{new}'" if new is not None else "no target is chosen"
        st.session_state[f"_target_note::{option}"] = (
            f"The target '{chosen}' is not a column of {dataset_title(option)} any more "
            f"(the file was read again), so {now}. Pick the target under Target column in "
            "the sidebar."
        )


def _forget_target_note(option: str) -> None:
    st.session_state.pop(f"_target_note::{option}", None)


def target_problem(option: str) -> str | None:
    """Why ``option`` has no usable target, or the note on an automatic change of target
    (plain text, to be shown with :func:`md`); ``None`` when there is nothing to say."""
    note = st.session_state.get(f"_target_note::{option}")
    if note is not None:
        return note
    if st.session_state.get(f"target::{option}") is not None:
        return None
    df, report, default_target, _ = current_frame(option)
    if default_target in getattr(report, "dropped_columns", ()):
        return (
            f"The target '{default_target}' (the file's last column, the usual target) has "
            "no values: the column is empty and was removed while reading. Pick another "
            "target under Target column in the sidebar."
        )
    return "No target column is chosen. Pick the target under Target column in the sidebar."


def require_entrypoint(page: str) -> None:
    """Send a page that runs without ``app.py`` back through the entry point.

    Streamlit treats an app with a ``pages/`` folder as a legacy multipage app until the
    first ``st.navigation`` call in the process, so the very first request of a new server
    to ``/compare`` would run the page alone, without the sidebar.  Call this first on
    every page with its own path (``"pages/compare.py"``); :func:`resume_intended_page`
    in ``app.py`` then opens that page with the URL's settings.
    """
    if "ds" not in st.session_state:
        st.session_state["_intended_page"] = (page, st.query_params.to_dict())
        st.switch_page("app.py", query_params=st.query_params.to_dict())


def resume_intended_page() -> None:
    """Open the page that :func:`require_entrypoint` redirected from (if any)."""
    intended = st.session_state.pop("_intended_page", None)
    if intended is not None:
        st.switch_page(intended[0], query_params=intended[1])


def current_dataset(*, allow_missing: bool = False):
    """The active :class:`engine.data.Dataset`, or ``None`` after showing why not.

    While the sidebar's subsample is on (:mod:`pages._scale`), its seeded stratified
    subsample of the prepared rows (``ds.subsample`` says which).

    ``allow_missing``: the page can use a dataset with missing values (NaN in ``X``, when
    the sidebar keeps rows with missing values).  Pages whose methods cannot do so yet
    leave it ``False``: they get ``None`` and a message saying what to choose instead
    (:func:`missing_values_message`).
    """
    option = st.session_state.get("ds")
    if option is None:
        return None
    df, _report, _default, key = current_frame(option)
    target = st.session_state.get(f"target::{option}")
    problem = target_problem(option)
    if target is None or target not in [str(c) for c in df.columns]:
        st.error(md(problem or "No target column is chosen. Pick one in the sidebar."))
        return None
    if problem:
        st.warning(md(problem))
    task = st.session_state.get(f"task::{option}", "auto")
    categorical = tuple(st.session_state.get(f"categorical::{option}", ()))

    def make(missing):
        return _make(
            df,
            key,
            target,
            None if task == "auto" else task,
            categorical,
            missing,
            tuple(left_out_columns(option)),
            int(st.session_state.get(f"max_levels::{option}") or MAX_CATEGORIES),
            st.session_state.get(f"many_levels::{option}", "other"),
            st.session_state.get(f"small_classes::{option}", "keep"),
        )

    try:
        ds = make(st.session_state.get("missing", DEFAULT_MISSING))
    except DataError as exc:
        st.error(f"**This dataset cannot be used as set up:** {md(exc)}")
        return None
    if ds.n_missing and not allow_missing:
        # this page's methods cannot route missing values yet: its complete rows, said so
        try:
            complete = make("drop")
        except DataError:
            st.warning(missing_values_message(ds))
            return None
        st.info(
            f"The methods on this page cannot use missing values yet: the "
            f"{ds.n_samples - complete.n_samples:,} rows with missing values are left out "
            "here (the pages whose trees route missing values keep them)."
        )
        return apply_subsample(complete)
    return apply_subsample(ds)


def dataset_recipe(ds) -> dict:
    """How the sidebar made ``ds``, as JSON values for a run's meta: the dataset (bundled
    name, or an upload's file name and parse options) and every :func:`engine.data.make_dataset`
    option, with the missing-value choice ``ds`` was made with (``'drop'`` where the page
    left out rows with missing values).  :mod:`engine.snippets` writes it as code."""
    option = st.session_state.get("ds")
    if option is None or option not in dataset_options():
        return None
    df, report, _default, _key = current_frame(option)
    left_out = left_out_columns(option)
    task = st.session_state.get(f"task::{option}", "auto")
    recipe = {
        "source": "upload" if option.startswith(UPLOAD_PREFIX) else "bundled",
        "name": option[len(UPLOAD_PREFIX) :] if option.startswith(UPLOAD_PREFIX) else option,
        "target": str(ds.target),
        "task": None if task == "auto" else str(task),
        "categorical": [str(c) for c in st.session_state.get(f"categorical::{option}", ())],
        "missing": str(ds.missing),
        "features": (
            [str(c) for c in df.columns if str(c) not in left_out and str(c) != ds.target]
            if left_out
            else None
        ),
        "max_categories": int(st.session_state.get(f"max_levels::{option}") or MAX_CATEGORIES),
        "many_levels": str(st.session_state.get(f"many_levels::{option}", "other")),
        "small_classes": str(st.session_state.get(f"small_classes::{option}", "keep")),
    }
    if getattr(ds, "subsample", None) is not None:
        recipe["subsample"] = ds.subsample.as_dict()
    if recipe["source"] == "upload":
        recipe["parse"] = {
            "sep": report.delimiter,
            "decimal": report.decimal,
            "thousands": report.thousands,
            "encoding": report.encoding,
        }
        na_values = st.session_state.get(UPLOAD_NA, {}).get(option)
        if na_values is not None and list(na_values) != list(DEFAULT_NA_VALUES):
            recipe["parse"]["na_values"] = [str(token) for token in na_values]
    return recipe


def missing_values_message(ds) -> str:
    """What a page whose methods cannot route missing values yet says about ``ds``."""
    rows = int(np.isnan(ds.X).any(axis=1).sum())
    cols = [ds.feature_names[j] for j in np.flatnonzero(np.isnan(ds.X).any(axis=0))]
    shown = ", ".join(f"'{md(c)}'" for c in cols[:5]) + (
        f" and {len(cols) - 5} more" if len(cols) > 5 else ""
    )
    return (
        "**The methods on this page cannot use missing values yet.** The sidebar keeps rows "
        f"with missing values: {rows:,} of {ds.n_samples:,} rows have {ds.n_missing:,} "
        f"missing values (in {shown}). Choose *{MISSING_OPTIONS['drop']}* under "
        "**Rows with missing values** in the sidebar to use this page, or leave those "
        "columns out on the Data page."
    )


def dataset_caption(ds) -> str:
    kind = (
        f"classification, {ds.n_classes} classes" if ds.task == "classification" else "regression"
    )
    rows = f"{ds.n_samples:,} row" + ("s" if ds.n_samples != 1 else "")
    feats = f"{ds.n_features} feature" + ("s" if ds.n_features != 1 else "")
    note = subsample_note(ds)
    sample = "" if note is None else f"; {note}"
    return (
        f"**{md(dataset_title(st.session_state['ds']))}** -- {rows} x {feats}{sample}; "
        f"target **{md(ds.target)}** ({kind})."
    )


#: Pixels of a half-width column (``st.columns(2)``) at a 1280 px wide window (about 460
#: at 1400 px): figures drawn side by side place their labels for it.
HALF_COLUMN_WIDTH = 420
#: Most folds the pages offer.
MAX_FOLDS = 10


def csv_download(label: str, frame, file_name: str, *, key: str | None = None) -> None:
    """A download button for ``frame`` (a pandas DataFrame) as a CSV file without its
    index, named ``file_name``; clicking it does not rerun the page."""
    st.download_button(
        label,
        frame.to_csv(index=False).encode(),
        file_name=file_name,
        mime="text/csv",
        on_click="ignore",
        key=key,
    )


def folds_slider(container, key: str, ds, *, default: int = 5, help: str | None = None) -> int:
    """The 'Folds (k)' slider of a cross-validation page, at most the number of rows of
    ``ds`` (every fold needs a row): below :data:`MAX_FOLDS` rows the range is cut and a
    caption says so, and a chosen k above it is lowered, and reported."""
    n = ds.n_samples
    high = min(MAX_FOLDS, n)
    chosen = st.session_state.get(key)
    if chosen is not None and chosen > high:
        st.session_state[key] = high
    if high <= 2:  # a slider needs two values
        container.caption(
            f"Folds (k): 2 -- the dataset has {n} rows, and every fold needs at least one."
        )
        return 2
    k = container.slider("Folds (k)", 2, high, min(default, high), key=key, help=help)
    if high < MAX_FOLDS:
        lowered = (
            f" ({chosen} chosen before, lowered to {high})"
            if chosen is not None and chosen > high
            else ""
        )
        container.caption(
            f"At most {high} folds: the dataset has {n} rows and every fold needs at least "
            f"one{lowered}."
        )
    return int(k)


def clicked_node(event) -> int | None:
    """The node id clicked in a tree chart drawn with ``on_select`` (``event``: what
    ``st.plotly_chart`` returned, or its value in ``st.session_state``), or None.

    Node markers carry the node id as ``customdata``; a gap ring carries a list whose first
    entry is the node (``[node, LB, UB, ...]``).  The first point holding a number wins.
    """
    points = (event.selection.points if event and event.selection else None) or []
    ids = [p.get("customdata") for p in points]
    ids = [c[0] if isinstance(c, list | tuple) and c else c for c in ids]
    return next((int(c) for c in ids if isinstance(c, int | float)), None)


def labelled_tree(model, meta: dict):
    """The fitted tree of ``model`` as TreeArrays carrying feature, category and class labels.

    TreeLab's estimators keep a TreeArrays in ``tree_``; scikit-learn's are converted.  The
    models were fitted on codes, so the labels make rules, figures, node tables and JSON say
    'island in {Biscoe}' and 'Adelie', never 'island <= 0.5' and 0.
    """
    from engine.tree import TreeArrays, from_sklearn

    tree = model.tree_ if isinstance(model.tree_, TreeArrays) else from_sklearn(model)
    classes = meta.get("classes")
    return dataclasses.replace(
        tree,
        feature_names=meta["feature_names"],
        categories=meta.get("categories"),
        classes_=None if classes is None else np.array(classes, dtype=object),
    )


def dataset_digest(ds) -> str:
    """Content hash of a Dataset (arrays, names, task): a cache key for fits on it."""
    h = hashlib.blake2b(digest_size=16)
    for a in (ds.X, ds.y):
        h.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1).data)
    h.update(
        repr(
            (
                ds.task,
                ds.target,
                tuple(ds.feature_names),
                ds.is_categorical.tolist(),
                None if ds.classes_ is None else list(map(str, ds.classes_)),
            )
        ).encode()
    )
    return h.hexdigest()


def seed() -> int:
    return int(st.session_state.get("seed") or 0)


#: Most fitted models kept per session for other pages (the oldest is dropped first).
MAX_REMEMBERED_MODELS = 8


def remember_model(label: str, model, ds, source: str) -> None:
    """Offer a model fitted on one page to the other pages (e.g. Feature ranking explains it).

    ``label`` names it for a selectbox ("CIT, wine, depth 4"), ``source`` is the page title.
    Models are kept with the digest of the dataset they were fitted on, so a page only offers
    the ones that match the current dataset (see :func:`remembered_models`).
    """
    models = st.session_state.setdefault("fitted_models", {})
    models.pop(label, None)
    models[label] = {
        "model": model,
        "digest": dataset_digest(ds),
        "source": source,
        "meta": job_meta(ds),
    }
    while len(models) > MAX_REMEMBERED_MODELS:
        models.pop(next(iter(models)))


def remembered_models(ds) -> dict:
    """The models remembered by :func:`remember_model` that were fitted on ``ds`` (label -> entry
    dict with ``model``, ``source``, ``meta``), newest last."""
    digest = dataset_digest(ds)
    return {
        label: entry
        for label, entry in st.session_state.get("fitted_models", {}).items()
        if entry["digest"] == digest
    }
