"""Data page: upload or pick a table, read the parse report, set column roles, look at it."""

import pandas as pd
import streamlit as st

from engine.data import DEFAULT_NA_VALUES, DataError
from engine.figures.data import feature_distribution_figure, target_distribution_figure
from pages._shared import (
    MAX_UPLOAD_BYTES,
    MAX_UPLOADS,
    UPLOAD_PREFIX,
    add_upload,
    current_dataset,
    current_frame,
    dataset_caption,
    dataset_title,
    option_label,
    require_entrypoint,
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
            f"Could not load **{up.name}**: {exc}",
            st.session_state.get("ds"),
        )


require_entrypoint("pages/data.py")
st.title("Data")
st.markdown(
    "Pick a bundled dataset in the sidebar or upload your own CSV here. TreeLab reads the "
    "file, reports what it found (delimiter, encoding, column types, values it could not "
    "read), and shows each feature against the target. The target, the task and how to "
    "treat missing values are set in the sidebar and shared by every page."
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
        help="Up to 50 MB, 200,000 rows and 2,000 columns. Excel workbooks "
        "must be saved as CSV first.",
    )
    error = st.session_state.get("_upload_error")
    if error is not None and error[1] == st.session_state.get("ds"):
        st.error(error[0] + "  \nThe previously selected dataset is still active.")
    elif ok := st.session_state.pop("_upload_ok", None):
        st.success(f"Loaded {option_label(ok)}; it is now the active dataset.")
        if forgotten := st.session_state.pop("_uploads_forgotten", None):
            st.info(
                f"A session keeps at most {MAX_UPLOADS} uploads and "
                f"{MAX_UPLOAD_BYTES / 2**20:.0f} MiB of uploaded files, so the oldest "
                f"{'upload was' if len(forgotten) == 1 else 'uploads were'} forgotten: "
                + ", ".join(f"**{name}**" for name in forgotten)
                + ". Upload again to use it."
            )

option = st.session_state["ds"]
df, report, _default, _key = current_frame(option)

st.subheader(f"Parse report: {dataset_title(option)}")
m = st.columns(5)
m[0].metric("Rows", f"{report.n_rows:,}")
m[1].metric("Columns", report.n_columns)
m[2].metric("Delimiter", {"\t": "tab", " ": "space"}.get(report.delimiter, report.delimiter))
m[3].metric("Encoding", report.encoding)
m[4].metric("Decimal mark", report.decimal)
for w in report.warnings:
    st.warning(w)
with st.expander("Columns as read", expanded=option.startswith(UPLOAD_PREFIX)):
    st.dataframe(report.to_frame(), hide_index=True, width="stretch")

st.subheader("Column roles")
target = st.session_state.get(f"target::{option}")
numeric_features = [
    c
    for c in df.columns
    if c != target
    and pd.api.types.is_numeric_dtype(df[c])
    and not pd.api.types.is_bool_dtype(df[c])
]
st.multiselect(
    "Treat these numeric columns as categorical",
    numeric_features,
    key=f"categorical::{option}",
    help="Text, yes/no and true/false columns are always categorical. Mark number "
    "columns that are really codes (zip codes, ratings) here.",
)
st.multiselect(
    "Leave out these columns",
    [c for c in df.columns if c != target],
    key=f"left_out::{option}",
    help="Columns the trees must not use: IDs, names, free text, or anything that "
    "gives the answer away.",
)
st.caption("Target, task and missing-value handling are in the sidebar.")

ds = current_dataset()
with st.expander("Preview (first 200 rows)"):
    st.dataframe(df.head(200), width="stretch")
if ds is None:
    st.stop()

st.markdown(dataset_caption(ds))
for w in ds.warnings:
    st.info(w)

left, right = st.columns(2)
with left:
    feature = st.selectbox("Feature to plot", ds.feature_names, key=f"plot_feature::{option}")
    st.plotly_chart(feature_distribution_figure(ds, feature), key="feature_fig")
with right:
    st.plotly_chart(target_distribution_figure(ds), key="target_fig")

st.download_button(
    "Download the prepared table (CSV)",
    data=lambda: (
        ds.feature_frame().assign(**{ds.target: ds.target_labels()}).to_csv(index=False).encode()
    ),
    file_name=f"{option.removeprefix(UPLOAD_PREFIX).rsplit('.', 1)[0]}_prepared.csv",
    mime="text/csv",
    on_click="ignore",
)
