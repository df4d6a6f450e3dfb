"""CSV parsing: :func:`load_csv` turns bytes, a path or a file object into a DataFrame plus a
:class:`ParseReport` (encoding, delimiter, decimal mark and thousands separator detected;
per-column types; stray texts read as missing; empty rows and columns removed).  See
:mod:`engine.data` for the design choices.  The bytes are sniffed by
:mod:`engine.data.sniffing`, the columns cleaned by :mod:`engine.data.cleaning`, and the
report is :mod:`engine.data.parse_report`'s."""

from __future__ import annotations

import csv
import io
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from engine.data.cleaning import COERCE_MIN_FRACTION, clean_columns, is_integral
from engine.data.errors import DataError, _file_label, _inf_error, _names, _q
from engine.data.parse_report import ParseReport
from engine.data.sniffing import (
    DELIMITER_NAMES,
    decode_text,
    detect_delimiter,
    detect_number_format,
    parser_message,
    raw_header,
    read_source,
    refuse_binary,
    sample_rows,
    sniff_sample,
)
from engine.data.values import (
    identifier_columns,
)

__all__ = [
    "COERCE_MIN_FRACTION",
    "DEFAULT_NA_VALUES",
    "MAX_BYTES",
    "MAX_COLUMNS",
    "MAX_ROWS",
    "ParseReport",
    "load_csv",
]

#: Largest number of data rows :func:`load_csv` accepts by default.
MAX_ROWS = 200_000
#: Largest number of feature columns :func:`load_csv` accepts by default (a file may have
#: one column more: the target).
MAX_COLUMNS = 2_000
#: Largest file size in bytes :func:`load_csv` accepts by default (50 MiB).
MAX_BYTES = 50 * 2**20


#: Cell texts read as missing (matched exactly by pandas, and case-insensitively after
#: stripping spaces for text columns).  Includes pandas' own default tokens.
DEFAULT_NA_VALUES: tuple[str, ...] = (
    "",
    "?",
    "-",
    "NA",
    "N/A",
    "n/a",
    "NaN",
    "nan",
    "-nan",
    "-NaN",
    "NULL",
    "null",
    "None",
    "none",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "<NA>",
    "-1.#IND",
    "-1.#QNAN",
    "1.#IND",
    "1.#QNAN",
    "#NULL!",
    "#DIV/0!",
    "#VALUE!",
)


def load_csv(
    source: bytes | str | Path | Any,
    *,
    sep: str | None = None,
    encoding: str | None = None,
    decimal: str | None = None,
    thousands: str | None = None,
    na_values: Iterable[str] = DEFAULT_NA_VALUES,
    max_rows: int = MAX_ROWS,
    max_columns: int = MAX_COLUMNS,
    max_bytes: int = MAX_BYTES,
    name: str | None = None,
) -> tuple[pd.DataFrame, ParseReport]:
    """Parse a CSV file into a DataFrame plus a :class:`ParseReport`.

    Args:
        source: the file as ``bytes``, a path (``str`` or :class:`pathlib.Path`), or a
            file object (``getvalue()``/``read()``, e.g. Streamlit's ``UploadedFile``).
        sep: field separator; ``None`` detects one of ``, ; \\t |`` with
            :class:`csv.Sniffer` (checked against field counts).  ``'\\\\t'`` means tab.
        encoding: text encoding; ``None`` tries utf-8 (a BOM is stripped), then cp1252,
            then latin-1 (UTF-16 with a BOM is recognised too).
        decimal: decimal mark; ``None`` means ``'.'`` unless the separator is not a comma
            and the numbers look like ``1,5``, then ``','``.  Explicit values win.
        thousands: thousands separator; ``None`` detects an unambiguous one (see module
            docstring), ``''`` means none.
        na_values: cell texts read as missing (exact match; for text columns also
            case-insensitive after stripping spaces).
        max_rows, max_columns, max_bytes: limits; exceeding one raises DataError.
            ``max_columns`` counts features: a file may have ``max_columns + 1``
            columns (the features and the target).
        name: file name for messages (taken from the path or file object if not given).

    Returns:
        ``(df, report)``.  ``df`` has one column per kept CSV column, named by the
        header (spaces stripped; a blank name becomes ``'column i'``, i counting from 1,
        and is reported), a fresh
        RangeIndex, and dtypes: ``int64`` or ``float64`` (NaN = missing) for numbers
        (percentages and amounts too: ``'22%'`` is 22, ``'$1,204.50'`` is 1204.5),
        ``bool`` (or nullable ``boolean`` when values are missing) for true/false columns
        and for columns mixing several yes/no spellings, ``datetime64[ns]`` (NaT =
        missing) for dates, pandas ``str`` (NaN = missing) for text, including yes/no
        columns written with two spellings (kept as written) and whole-number codes with
        leading zeros.  All-empty rows and columns are removed.  Every automatic change
        is in ``report.changes`` and ``report.warnings``.

    Raises:
        DataError: file not found, empty file, header without data rows, duplicate
            column names, a file pandas cannot split into a table, binary data, an
            undecodable file with an explicit encoding, infinite values, or a limit
            exceeded (size, rows, columns).
        TypeError: ``source`` has an unsupported type (a programming error).
    """
    raw, name = read_source(source, max_bytes, name)
    label = _file_label(name)
    if not raw.strip():
        raise DataError(f"{label} is empty. Choose a CSV file with a header row and data rows.")
    refuse_binary(raw, name)
    text, used_encoding = decode_text(raw, encoding, name)
    if not text.strip():
        raise DataError(f"{label} is empty. Choose a CSV file with a header row and data rows.")

    sample = sniff_sample(text)
    delimiter = _choose_delimiter(sample, sep)
    _check_number_marks(delimiter, decimal, thousands)
    thousands_off = thousands == ""
    rows = sample_rows(sample, delimiter)
    dec, thou, notes = detect_number_format(
        rows, delimiter, decimal or None, None if thousands_off else thousands
    )
    if thousands_off:
        thou = None

    # header: read the first row as pandas sees it (blank lines skipped, quotes
    # honoured); duplicates and the column limit are checked on these raw names,
    # since pandas silently renames a repeated 'a' to 'a.1'
    raw_names = raw_header(text, delimiter, name)
    _check_header(raw_names, label, max_columns)
    na_list = [str(v) for v in na_values]
    df = _read_table(text, delimiter, dec, thou, na_list, max_rows, name, label)
    names, renamed = _column_names(df, raw_names, label, max_columns, max_rows)
    df.columns = names

    report = _new_report(delimiter, used_encoding, dec, thou, names, notes, renamed)
    na_lower = frozenset(v.strip().lower() for v in na_list)
    raw_text = _whole_number_text(text, df, names, delimiter, na_list, max_rows)
    out, kinds = clean_columns(df, names, raw_text, na_lower, dec, thou, report)
    _check_infinite(out, names)
    out = _drop_empty(out, names, label, report)
    _leave_out_identifiers(out, report)
    report.n_rows = len(out)
    report.n_columns = out.shape[1]
    report.dtypes = {c: kinds[c] for c in out.columns}
    report.missing = {c: int(out[c].isna().sum()) for c in out.columns}
    return out, report


def _new_report(delimiter, encoding, decimal, thousands, names, notes, renamed) -> ParseReport:
    """The :class:`ParseReport` of a file read with these marks, with the number-format
    ``notes`` and the ``renamed`` blank column names already recorded."""
    report = ParseReport(
        delimiter=delimiter,
        encoding=encoding,
        decimal=decimal,
        thousands=thousands,
        n_rows=0,
        n_columns=0,
        file_columns=list(names),
    )
    for change, message in notes:
        report.record(None, change, 0, message)
    for position, new in renamed:
        report.record(
            new,
            "blank name replaced",
            0,
            f"Column {position} has no name in the header, so it is called {_q(new)}. "
            "Give it a name in the file to choose your own.",
        )
    return report


def _leave_out_identifiers(out: pd.DataFrame, report: ParseReport) -> None:
    """Record the columns of ``out`` that look like identifiers (left out of the features
    by :func:`engine.data.make_dataset`; the Data page can bring them back)."""
    for col_name, reason in identifier_columns(out).items():
        report.identifiers[col_name] = reason
        report.record(
            col_name,
            "identifier left out",
            len(out),
            f"Column {_q(col_name)} looks like an identifier ({reason}), so it is left out "
            "of the features. Bring it back on the Data page if it should be used.",
        )


def _choose_delimiter(sample: str, sep: str | None) -> str:
    """The field separator: detected from ``sample`` when ``sep`` is empty or 'auto', else
    ``sep`` itself (``'\\t'`` and 'tab' mean a tab); DataError for an unusable one."""
    if sep in (None, "", "auto"):
        return detect_delimiter(sample)
    delimiter = {"\\t": "\t", "tab": "\t"}.get(sep, sep)
    if len(delimiter) != 1 or delimiter in '"\r\n':
        raise DataError(
            f"The delimiter {_q(sep)} cannot be used: choose a single character such as "
            "',' ';' '|' or a tab, or leave it empty to detect it."
        )
    return delimiter


def _check_number_marks(delimiter: str, decimal: str | None, thousands: str | None) -> None:
    """DataError when an explicit decimal mark or thousands separator cannot be used."""
    if decimal not in (None, "") and (len(decimal) != 1 or decimal == delimiter):
        raise DataError(
            f"The decimal mark {_q(decimal)} cannot be used with the delimiter "
            f"{_q(delimiter)}: choose '.' or ',' (different from the delimiter)."
        )
    if thousands not in (None, "") and (len(thousands) != 1 or thousands in (delimiter, decimal)):
        raise DataError(
            f"The thousands separator {_q(thousands)} cannot be used: choose one character "
            "different from the delimiter and the decimal mark, or leave it empty."
        )


def _too_many_columns(label: str, n: int, max_columns: int) -> str:
    return (
        f"{label} has {n:,} columns, more than the limit of {max_columns:,} feature "
        "columns plus the target. Remove the columns you do not need (IDs, free text, "
        "repeated measurements) and upload it again."
    )


def _check_header(raw_names: list[str], label: str, max_columns: int) -> None:
    """DataError for more than ``max_columns`` features plus a target, or a repeated
    column name."""
    if len(raw_names) > max_columns + 1:
        raise DataError(_too_many_columns(label, len(raw_names), max_columns))
    seen: dict[str, int] = {}
    dups: list[str] = []
    for c in raw_names:
        if c and c in seen and c not in dups:
            dups.append(c)
        seen[c] = seen.get(c, 0) + 1
    if dups:
        which = dups[0]
        if len(dups) == 1:
            msg = (
                f"Column {_q(which)} appears {seen[which]} times in the header. "
                "Give each column a different name."
            )
        else:
            msg = (
                f"Columns {_names(dups)} appear more than once in the header. "
                "Give each column a different name."
            )
        raise DataError(msg, column=which if len(dups) == 1 else None)


def _read_table(
    text: str,
    delimiter: str,
    dec: str,
    thou: str | None,
    na_list: list[str],
    max_rows: int,
    name: str | None,
    label: str,
) -> pd.DataFrame:
    """``pandas.read_csv`` of the decoded text (at most ``max_rows + 1`` rows); its errors and
    its warning about rows longer than the header become DataError."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            df = pd.read_csv(
                io.StringIO(text),
                sep=delimiter,
                decimal=dec,
                thousands=thou,
                na_values=na_list,
                keep_default_na=False,
                skipinitialspace=True,
                skip_blank_lines=True,
                index_col=False,
                header=0,
                nrows=max_rows + 1,
                low_memory=False,
                engine="c",
            )
        except pd.errors.EmptyDataError:
            raise DataError(
                f"{label} is empty. Choose a CSV file with a header row and data rows."
            ) from None
        except (pd.errors.ParserError, csv.Error, ValueError, OverflowError) as exc:
            raise DataError(parser_message(exc, name, delimiter)) from None
    if any(issubclass(w.category, pd.errors.ParserWarning) for w in caught):
        raise DataError(
            f"{label} could not be read as a table: some rows have more values than the "
            f"header has column names ({df.shape[1]}). Check the delimiter "
            f"(now {DELIMITER_NAMES.get(delimiter, _q(delimiter))}), or add names for "
            "the extra columns."
        )
    return df


def _column_names(
    df: pd.DataFrame, raw_names: list[str], label: str, max_columns: int, max_rows: int
) -> tuple[list[str], list[tuple[int, str]]]:
    """The kept column names (the raw header, blank names as ``'column i'``) and the blank
    names replaced (see :func:`_name_blank_columns`), after the column and row limits;
    DataError for repeated names or no data rows."""
    if df.shape[1] > max_columns + 1:
        raise DataError(_too_many_columns(label, df.shape[1], max_columns))
    if len(df) > max_rows:
        raise DataError(
            f"{label} has more than {max_rows:,} data rows, the limit. Upload a random "
            f"sample of at most {max_rows:,} rows."
        )
    if len(raw_names) == df.shape[1]:
        names = list(raw_names)
    else:  # should not happen; keep pandas' own names (its 'Unnamed: i' for blank ones)
        names = [str(c).strip() for c in df.columns]
    renamed = _name_blank_columns(names)
    if len(set(names)) != len(names):
        raise DataError(f"{label} has repeated column names. Give each column a different name.")
    if len(df) == 0:
        raise DataError(
            f"{label} has column names but no data rows. Add the data rows below the header."
        )
    return names, renamed


def _name_blank_columns(names: list[str]) -> list[tuple[int, str]]:
    """Name the blank (empty or all-space) header cells ``'column i'`` (1-based position;
    ``'column i (2)'`` when a real column has that name), in place; returns ``(position,
    new name)`` of each."""
    renamed = []
    taken = set(names)
    for i, name in enumerate(names):
        if name.strip():
            continue
        new = base = f"column {i + 1}"
        k = 2
        while new in taken:
            new, k = f"{base} ({k})", k + 1
        names[i] = new
        taken.add(new)
        renamed.append((i + 1, new))
    return renamed


def _whole_number_text(
    text: str,
    df: pd.DataFrame,
    names: list[str],
    delimiter: str,
    na_list: list[str],
    max_rows: int,
) -> dict[str, pd.Series]:
    """The cells as written of the columns pandas read as whole numbers (int, or float
    holding only whole numbers), so that leading zeros ('04521') can be seen."""
    wanted = []
    for i, col_name in enumerate(names):
        s = df[col_name]
        if ptypes.is_bool_dtype(s.dtype) or not ptypes.is_numeric_dtype(s.dtype):
            continue
        if s.dtype.kind in "iu" or is_integral(s.to_numpy(dtype="float64", na_value=np.nan)):
            wanted.append(i)
    if not wanted:
        return {}
    raw = pd.read_csv(
        io.StringIO(text),
        sep=delimiter,
        usecols=wanted,
        dtype=str,
        na_values=na_list,
        keep_default_na=False,
        skipinitialspace=True,
        skip_blank_lines=True,
        index_col=False,
        header=0,
        nrows=max_rows + 1,
        engine="c",
    )
    if len(raw) != len(df):  # should not happen (same reader, same options)
        return {}
    return {names[i]: raw.iloc[:, k] for k, i in enumerate(wanted)}


def _check_infinite(out: pd.DataFrame, names: list[str]) -> None:
    """DataError naming the float columns that hold inf or -inf."""
    infs = []
    for col_name in names:
        s = out[col_name]
        if ptypes.is_float_dtype(s.dtype):
            n_inf = int(np.isinf(s.to_numpy()).sum())
            if n_inf:
                infs.append((col_name, n_inf))
    if infs:
        raise _inf_error(infs)


def _drop_empty(out: pd.DataFrame, names: list[str], label: str, report: ParseReport):
    """Drop all-empty columns and rows (recorded in ``report`` with warnings); DataError when
    nothing is left.  Returns the frame with a fresh RangeIndex."""
    empty_cols = [c for c in names if not out[c].notna().any()]
    if empty_cols:
        out = out.drop(columns=empty_cols)
        report.dropped_columns = empty_cols
        report.record(
            None,
            "empty columns removed",
            len(empty_cols),
            f"{'Columns' if len(empty_cols) > 1 else 'Column'} {_names(empty_cols)} "
            f"{'are' if len(empty_cols) > 1 else 'is'} empty (no values) and "
            f"{'were' if len(empty_cols) > 1 else 'was'} removed.",
        )
    if out.shape[1] == 0:
        raise DataError(
            f"{label} has no values at all, only column names. Add data rows below the header."
        )
    empty_rows = ~out.notna().any(axis=1)
    n_empty = int(empty_rows.sum())
    if n_empty:
        out = out.loc[~empty_rows.to_numpy()]
        report.dropped_rows = n_empty
        report.record(
            None,
            "empty rows removed",
            n_empty,
            f"{n_empty} empty row{'s were' if n_empty > 1 else ' was'} removed.",
        )
    if len(out) == 0:
        raise DataError(
            f"{label} has column names but no data rows. Add the data rows below the header."
        )
    return out.reset_index(drop=True)
