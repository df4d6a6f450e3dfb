"""Data page: upload or pick a table, read the parse report, set column roles, look at it."""

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from engine.data import DEFAULT_NA_VALUES, MAX_CATEGORIES, DataError
from engine.figures.data import feature_distribution_figure, target_distribution_figure
from pages._link_params import MAX_LEVEL_CAP, data_link
from pages._links import apply_link, mirror_link, page_title
from pages._shared import (
    LEVEL_CAP_LABEL,
    MANY_LEVEL_CHOICES,
    MANY_LEVELS_LABEL,
    MAX_UPLOAD_BYTES,
    MAX_UPLOADS,
    PROJECTION_KEY,
    SMALL_CLASS_CHOICES,
    SMALL_CLASSES_LABEL,
    UPLOAD_PREFIX,
    add_upload,
    bring_back,
    current_dataset,
    current_frame,
    dataset_caption,
    dataset_title,
    left_out_columns,
    md,
    option_label,
    require_entrypoint,
    shown_figure,
)

SEPARATORS = {"auto": None, "comma ,": ",", "semicolon ;": ";", "tab": "\t", "pipe |": "|"}
DECIMALS = {"auto": None, "dot .": ".", "comma ,": ","}
THOUSANDS = {
    "auto": None,
    "none": "",
    "comma ,": ",",
    "dot .": ".",
    "space": " ",
    "apostrophe '": "'",
}
ENCODINGS = {"auto": None, "UTF-8": "utf-8", "Windows-1252": "cp1252", "Latin-1": "latin-1"}
#: The engine's own missing-value tokens, so an upload reads like a bundled file ('-' and
#: '#N/A' are missing, not a category or stray text).
DEFAULT_NA = ", ".join(t for t in DEFAULT_NA_VALUES if t and "," not in t)
#: Highest level cap the page offers (a level per row of a large table is an identifier).


def _on_upload() -> None:
    """Parse the chosen file; on failure keep the previous dataset and remember the message."""
    up = st.session_state.get("uploader")
    st.session_state.pop("_upload_error", None)
    if up is None:
        return
    na = [t.strip() for t in st.session_state.get("csv_na", DEFAULT_NA).split(",")]
    try:
        option = add_upload(
            up.name,
            up.getvalue(),
            sep=SEPARATORS[st.session_state.get("csv_sep", "auto")],
            decimal=DECIMALS[st.session_state.get("csv_decimal", "auto")],
            thousands=THOUSANDS[st.session_state.get("csv_thousands", "auto")],
            encoding=ENCODINGS[st.session_state.get("csv_encoding", "auto")],
            na_values=[""] + [t for t in na if t],
        )
        st.session_state["_upload_ok"] = option
    except DataError as exc:
        # remembered with the dataset it kept, so it disappears once the user picks another
        st.session_state["_upload_error"] = (
            f"Could not load **{md(up.name)}**: {md(exc)}",
            st.session_state.get("ds"),
        )


require_entrypoint("pages/data.py")
page_title("Data")
st.markdown(
    "Pick a bundled dataset in the sidebar or upload your own CSV here. TreeLab reads the "
    "file as written, reports every change it made (values it could not read, units, "
    "dates, identifier columns left out, rows dropped), and shows each feature against the "
    "target. The target, the task and how to treat missing values are set in the sidebar "
    "and shared by every page."
)

with st.expander("Upload a CSV", expanded=True):
    c1, c2, c3, c4 = st.columns(4)
    c1.selectbox(
        "Delimiter",
        list(SEPARATORS),
        key="csv_sep",
        on_change=_on_upload,
        help="auto detects comma, semicolon, tab or pipe.",
    )
    c2.selectbox(
        "Decimal mark",
        list(DECIMALS),
        key="csv_decimal",
        on_change=_on_upload,
        help="European files often write 1,5 for one and a half (with ; between "
        "columns); auto detects it.",
    )
    c3.selectbox(
        "Thousands separator",
        list(THOUSANDS),
        key="csv_thousands",
        on_change=_on_upload,
        help="For numbers written like 1,234,567 or 1.234,5; auto detects it when unambiguous.",
    )
    c4.selectbox(
        "Encoding",
        list(ENCODINGS),
        key="csv_encoding",
        on_change=_on_upload,
        help="auto tries UTF-8 (with or without BOM), then Windows-1252.",
    )
    st.text_input(
        "Missing-value tokens (comma-separated)",
        value=DEFAULT_NA,
        key="csv_na",
        on_change=_on_upload,
        help="Cells with these texts (and empty cells) are read as missing.",
    )
    # Excel files are let through so that the engine can say what to do with them (the
    # browser otherwise only greys the file out, with no explanation)
    st.file_uploader(
        "CSV file",
        type=["csv", "txt", "tsv", "xlsx", "xls"],
        key="uploader",
        on_change=_on_upload,
        max_upload_size=50,
        help="Up to 50 MB, 200,000 rows and 2,000 feature columns plus the target. Excel "
        "workbooks must be saved as CSV first.",
    )
    error = st.session_state.get("_upload_error")
    if error is not None and error[1] == st.session_state.get("ds"):
        st.error(error[0] + "  \nThe previously selected dataset is still active.")
    elif ok := st.session_state.pop("_upload_ok", None):
        st.success(f"Loaded {md(option_label(ok))}; it is now the active dataset.")
        if forgotten := st.session_state.pop("_uploads_forgotten", None):
            st.info(
                f"A session keeps at most {MAX_UPLOADS} uploads and "
                f"{MAX_UPLOAD_BYTES / 2**20:.0f} MiB of uploaded files, so the oldest "
                f"{'upload was' if len(forgotten) == 1 else 'uploads were'} forgotten: "
                + ", ".join(f"**{md(name)}**" for name in forgotten)
                + ". Upload again to use it."
            )


def _rows_line(report, ds) -> str:
    """'60 rows in the file, 47 dropped (missing values), 13 used' -- each step that dropped
    rows, with its count and reason."""
    parts = [f"**{report.n_rows + report.dropped_rows:,}** rows in the file"]
    if report.dropped_rows:
        parts.append(f"{report.dropped_rows:,} empty rows removed while reading")
    for reason, n in ds.row_steps:
        parts.append(f"{n:,} dropped: {ROW_STEP_WORDS.get(reason, reason)}")
    sample = ds.subsample
    if sample is not None:  # the sidebar's subsample, the user's choice
        parts.append(
            f"{sample.total - sample.kept:,} not in the seeded stratified subsample "
            f"(seed {sample.seed})"
        )
    parts.append(f"**{ds.n_samples:,}** used")
    return "Rows: " + " → ".join(parts) + "."


ROW_STEP_WORDS = {
    "missing target": "no target value",
    "missing values": "missing feature values",
    "small classes": "classes too small for a stratified split",
}


def _plotted(ds, feature: str):
    """``ds`` restricted to the rows where ``feature`` is present (the figures draw present
    values only), and how many rows that leaves out."""
    j = ds.feature_names.index(feature)
    present = ~np.isnan(ds.X[:, j])
    n_missing = int((~present).sum())
    if not n_missing:
        return ds, 0
    return dataclasses.replace(ds, X=ds.X[present], y=ds.y[present]), n_missing


option = st.session_state["ds"]
df, report, _default, _key = current_frame(option)

st.subheader(f"Parse report: {md(dataset_title(option))}")
m = st.columns(5)
m[0].metric("Rows", f"{report.n_rows:,}")
m[1].metric("Columns", report.n_columns)
m[2].metric("Delimiter", {"\t": "tab", " ": "space"}.get(report.delimiter, report.delimiter))
m[3].metric("Encoding", report.encoding)
m[4].metric("Decimal mark", report.decimal)
changes = [c for c in report.changes if c["change"] != "identifier left out"]
if changes:
    st.warning(
        f"**{len(changes)} automatic change{'s' if len(changes) != 1 else ''} while reading**\n\n"
        + "\n".join(f"- {md(c['message'])}" for c in changes)
    )
with st.expander("Columns as read", expanded=option.startswith(UPLOAD_PREFIX)):
    st.dataframe(
        report.to_frame(df),
        hide_index=True,
        width="stretch",
        column_config={
            "column": st.column_config.TextColumn(width="medium"),
            "dtype": st.column_config.TextColumn(width="small"),
            "examples": st.column_config.TextColumn(
                width="medium", help="The first three different values of the column as read."
            ),
            "missing": st.column_config.NumberColumn(width="small"),
            "coerced": st.column_config.NumberColumn(
                width="small", help="Texts in a number column, read as missing."
            ),
            "coerced texts": st.column_config.TextColumn(width="small"),
            "note": st.column_config.TextColumn(width="large"),
        },
    )

st.subheader("Column roles")
target = st.session_state.get(f"target::{option}")
others = [c for c in df.columns if c != target]
left_key = f"left_out::{option}"
left_out = [c for c in left_out_columns(option) if c in others]
st.session_state[left_key] = left_out
for column, reason in report.identifiers.items():
    if column not in left_out:
        continue
    text, button = st.columns([4, 1], vertical_alignment="center")
    text.info(
        f"**{md(column)}** looks like an identifier ({md(reason)}), so it is left out of the "
        "features."
    )
    button.button(
        "Use as a feature",
        key=f"bring_back::{option}::{column}",
        on_click=bring_back,
        args=(option, column),
        help=f"Bring '{md(column)}' back as a feature (one category per distinct value, or "
        "numbers). Leave it out again below.",
    )
numeric_features = [
    c
    for c in others
    if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
]
bundled = not option.startswith(UPLOAD_PREFIX)
LINK = data_link(option if bundled else None, numeric_features)
apply_link("data", LINK)
roles = st.columns(2)
roles[0].multiselect(
    "Treat these numeric columns as categorical",
    numeric_features,
    key=f"categorical::{option}",
    help="Text, yes/no and true/false columns are always categorical. Mark number "
    "columns that are really codes (zip codes, ratings) here.",
)
roles[1].multiselect(
    "Leave out these columns",
    others,
    key=left_key,
    help="Columns the trees must not use: IDs, names, free text, or anything that "
    "gives the answer away. Columns that look like identifiers start here.",
)
levels = st.columns([1, 2, 2])
st.session_state.setdefault(f"max_levels::{option}", MAX_CATEGORIES)
levels[0].number_input(
    LEVEL_CAP_LABEL,
    min_value=2,
    max_value=MAX_LEVEL_CAP,
    step=1,
    key=f"max_levels::{option}",
    help="Most levels (distinct values) a categorical column may have.",
)
levels[1].radio(
    MANY_LEVELS_LABEL,
    list(MANY_LEVEL_CHOICES),
    format_func=MANY_LEVEL_CHOICES.get,
    key=f"many_levels::{option}",
    help="Keep the most frequent levels (the cap minus one) and group all the others "
    "as one level 'other', or leave such a column out. Either way it is reported below.",
)
levels[2].radio(
    SMALL_CLASSES_LABEL,
    list(SMALL_CLASS_CHOICES),
    format_func=SMALL_CLASS_CHOICES.get,
    key=f"small_classes::{option}",
    help="A stratified train/test split needs 2 rows per class. Keep such a class (the "
    "pages then split without stratification and say so) or drop its rows.",
)
mirror_link(LINK)
st.caption("Target, task and missing-value handling are in the sidebar.")

ds = current_dataset(allow_missing=True)
with st.expander("Preview (first 200 rows)"):
    st.dataframe(df.head(200), width="stretch")
if ds is None:
    st.stop()

st.markdown(dataset_caption(ds))
st.markdown(_rows_line(report, ds))
for w in ds.warnings:
    st.info(md(w))

# side by side; one above the other in projection mode (half a screen is too narrow for
# the larger text)
left, right = (
    (st.container(), st.container()) if st.session_state.get(PROJECTION_KEY) else st.columns(2)
)
with left:
    feature = st.selectbox("Feature to plot", ds.feature_names, key=f"plot_feature::{option}")
    shown, n_absent = _plotted(ds, feature)
    st.plotly_chart(shown_figure(feature_distribution_figure(shown, feature)), key="feature_fig")
    if n_absent:
        st.caption(f"{n_absent:,} rows with no value for {md(feature)} are not drawn.")
with right:
    st.plotly_chart(shown_figure(target_distribution_figure(ds)), key="target_fig")

st.download_button(
    "Download the prepared table (CSV)",
    data=lambda: (
        ds.feature_frame().assign(**{ds.target: ds.target_labels()}).to_csv(index=False).encode()
    ),
    file_name=f"{option.removeprefix(UPLOAD_PREFIX).rsplit('.', 1)[0]}_prepared.csv",
    mime="text/csv",
    on_click="ignore",
)
