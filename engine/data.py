"""CSV parsing, validation and the :class:`Dataset` every method of the engine consumes.

Two steps, both pure functions of their inputs (no streamlit here):

1. :func:`load_csv` turns bytes or a path into a :class:`pandas.DataFrame` plus a
   :class:`ParseReport`: the detected encoding, delimiter, decimal mark and thousands
   separator, a per-column type, the stray text values read as missing, and the empty
   columns and rows that were removed.
2. :func:`make_dataset` turns a DataFrame and a target column into a :class:`Dataset`:
   ``X`` float64 C-contiguous, ``y`` int64 class codes or float64 values, categorical
   features as integer codes plus their labels.

Every problem with the user's data raises :class:`DataError` (a ``ValueError``) whose
message names the column or file and says how to fix it, in plain words, so the app can
show it as is.

Design choices worth knowing:

* ``decimal=None`` (the default) means "detect": ``'.'`` unless the file is not
  comma-separated and its numbers look like ``1,5`` (then ``','``).  An explicit
  ``decimal`` always wins.  ``thousands=None`` likewise means "detect" (``'.'`` in
  ``1.234,5`` or ``','`` in ``"1,234.5"``, only when no number in the sample contradicts
  it); pass ``thousands=''`` to switch detection off.
* A text feature with more than ``max_categories`` distinct values (an ID or a name
  column) raises :class:`DataError` rather than being dropped silently: dropping a column
  the user meant to use changes the model behind their back.  The ``features`` argument of
  :func:`make_dataset` lets the app leave such columns out.
* Constant feature columns and all-empty columns are dropped with a warning (they cannot
  carry a split); all-empty rows are dropped and counted.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import re
import unicodedata
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

__all__ = [
    "DATASETS_DIR",
    "DEFAULT_NA_VALUES",
    "MAX_BYTES",
    "MAX_CATEGORIES",
    "MAX_COLUMNS",
    "MAX_CLASSES_INFERRED",
    "MAX_ROWS",
    "DataError",
    "Dataset",
    "ParseReport",
    "bundled_datasets",
    "load_bundled",
    "load_csv",
    "make_dataset",
]

# ---------------------------------------------------------------------------------------
# Limits and constants
# ---------------------------------------------------------------------------------------

#: Largest number of data rows :func:`load_csv` accepts by default.
MAX_ROWS = 200_000
#: Largest number of columns :func:`load_csv` accepts by default.
MAX_COLUMNS = 2_000
#: Largest file size in bytes :func:`load_csv` accepts by default (50 MiB).
MAX_BYTES = 50 * 2**20
#: Default limit on distinct values of a categorical feature in :func:`make_dataset`.
MAX_CATEGORIES = 50
#: An integer-valued numeric target with at most this many distinct values is a class label.
MAX_CLASSES_INFERRED = 20
#: Share of the non-missing values of a text column that must parse as numbers for the
#: column to be read as numeric (the rest become missing and are reported).
COERCE_MIN_FRACTION = 0.8

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

_DELIMITERS = ",;\t|"
_DELIMITER_NAMES = {",": "comma (,)", ";": "semicolon (;)", "\t": "tab", "|": "pipe (|)"}
_SNIFF_BYTES = 64 * 1024
_TRUE_TOKENS = frozenset({"true", "yes", "y", "t"})
_FALSE_TOKENS = frozenset({"false", "no", "n", "f"})
_TEXT_CATEGORY_LIMIT = 50  # ParseReport: 'categorical' up to this many distinct values

#: Folder of the bundled CSV files and their ``catalog.json``.
DATASETS_DIR: Path = Path(__file__).resolve().parent.parent / "assets" / "datasets"


# ---------------------------------------------------------------------------------------
# Errors and report
# ---------------------------------------------------------------------------------------


class DataError(ValueError):
    """Bad input data, with a message meant for the person who supplied it.

    The message names the column (or file) and says how to fix the problem in one or two
    plain sentences; the app shows it verbatim.  ``column`` is the offending column name
    when there is exactly one, else ``None``.
    """

    def __init__(self, message: str, column: str | None = None):
        super().__init__(message)
        self.column = column


@dataclass
class ParseReport:
    """What :func:`load_csv` detected and changed while reading a file.

    Attributes:
        delimiter: the field separator used (one of ``, ; \\t |`` or the one given).
        encoding: the text encoding used (``'utf-8'``, ``'utf-8-sig'`` when a BOM was
            stripped, ``'utf-16'``, ``'cp1252'``, ``'latin-1'`` or the one given).
        decimal: the decimal mark used (``'.'`` or ``','``).
        thousands: the thousands separator used, or ``None``.
        n_rows: data rows in the returned frame (after dropping all-empty rows).
        n_columns: columns in the returned frame (after dropping all-empty columns).
        dtypes: per kept column, one of ``'numeric'`` (float), ``'integer'`` (whole
            numbers), ``'boolean'``, ``'categorical'`` (text with few distinct values) or
            ``'text'`` (text with many distinct values).
        coerced: per numeric column that contained stray text, ``{'count': int,
            'examples': list[str]}``: how many cells were read as missing and the first
            (up to 3) distinct such texts.
        missing: per kept column, the number of missing cells (NaN) after parsing.
        dropped_columns: names of the all-empty columns that were removed.
        dropped_rows: number of all-empty rows that were removed.
        warnings: plain-language notes for the user (coercions, drops, detections).
    """

    delimiter: str
    encoding: str
    decimal: str
    thousands: str | None
    n_rows: int
    n_columns: int
    dtypes: dict[str, str] = field(default_factory=dict)
    coerced: dict[str, dict] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    dropped_columns: list[str] = field(default_factory=list)
    dropped_rows: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        """One row per column of the file, for display.

        Columns: ``column`` (str), ``dtype`` (str; ``'empty (removed)'`` for dropped
        columns), ``missing`` (int), ``coerced`` (int: stray texts read as missing) and
        ``examples`` (str: those texts, comma-separated).
        """
        rows = []
        for name, kind in self.dtypes.items():
            info = self.coerced.get(name, {})
            rows.append(
                {
                    "column": name,
                    "dtype": kind,
                    "missing": int(self.missing.get(name, 0)),
                    "coerced": int(info.get("count", 0)),
                    "examples": ", ".join(repr(e) for e in info.get("examples", [])),
                }
            )
        for name in self.dropped_columns:
            rows.append(
                {
                    "column": name,
                    "dtype": "empty (removed)",
                    "missing": self.n_rows,
                    "coerced": 0,
                    "examples": "",
                }
            )
        return pd.DataFrame(rows, columns=["column", "dtype", "missing", "coerced", "examples"])


# ---------------------------------------------------------------------------------------
# load_csv helpers
# ---------------------------------------------------------------------------------------


def _q(name: Any) -> str:
    """Quote a column or value name for a message: ``'age'``."""
    text = str(name)
    if len(text) > 60:
        text = text[:57] + "..."
    return "'" + text + "'"


def _names(names: Sequence[Any], limit: int = 8) -> str:
    """``'a', 'b' and 3 more`` for messages."""
    shown = ", ".join(_q(n) for n in names[:limit])
    if len(names) > limit:
        shown += f" and {len(names) - limit} more"
    return shown


def _file_label(name: str | None) -> str:
    return f"The file {_q(name)}" if name else "The file"


def _read_source(source: Any, max_bytes: int, name: str | None) -> tuple[bytes, str | None]:
    """Return the raw bytes of ``source`` and a display name for messages."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
    elif isinstance(source, (str, Path)):
        path = Path(source)
        name = name or path.name
        if not path.is_file():
            raise DataError(
                f"The file {_q(path)} was not found. Check the path, or upload the file again."
            )
        size = path.stat().st_size
        if size > max_bytes:
            raise DataError(_too_big_message(name, size, max_bytes))
        raw = path.read_bytes()
    elif hasattr(source, "getvalue") or hasattr(source, "read"):
        name = name or getattr(source, "name", None)
        if hasattr(source, "getvalue"):
            raw = source.getvalue()
        else:
            if hasattr(source, "seek"):
                source.seek(0)
            raw = source.read()
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        raw = bytes(raw)
    else:
        raise TypeError(
            "load_csv expects bytes, a path (str or pathlib.Path) or a file object, "
            f"not {type(source).__name__}."
        )
    if len(raw) > max_bytes:
        raise DataError(_too_big_message(name, len(raw), max_bytes))
    return raw, name


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def _too_big_message(name: str | None, size: int, limit: int) -> str:
    return (
        f"{_file_label(name)} is {_mb(size)}, more than the limit of {_mb(limit)}. "
        "Use a smaller file (fewer rows or columns), or raise the limit (max_bytes) "
        "if this machine has the memory for it."
    )


def _looks_binary(raw: bytes, name: str | None) -> None:
    """Raise DataError for well-known binary formats (Excel, zip, gzip, ...)."""
    label = _file_label(name)
    if raw.startswith(b"PK\x03\x04"):
        raise DataError(
            f"{label} is an Excel (.xlsx) or zip file, not a CSV text file. "
            "Open it in your spreadsheet program and save it as CSV, then upload that."
        )
    if raw.startswith(b"\xd0\xcf\x11\xe0"):
        raise DataError(
            f"{label} is an old Excel (.xls) file, not a CSV text file. "
            "Open it in your spreadsheet program and save it as CSV, then upload that."
        )
    if raw.startswith(b"\x1f\x8b") or raw.startswith(b"BZh") or raw.startswith(b"\xfd7zXZ"):
        raise DataError(f"{label} is compressed. Unpack it first and upload the CSV inside.")
    if raw.startswith(b"PAR1"):
        raise DataError(f"{label} is a Parquet file, not CSV. Export it as CSV first.")


def _garbage(text: str) -> bool:
    """True when decoded text holds too many control characters to be a CSV file."""
    if "\x00" in text:
        return True
    sample = text[:_SNIFF_BYTES]
    bad = sum(1 for ch in sample if ch not in "\t\n\r" and unicodedata.category(ch) == "Cc")
    return bad > max(2, 0.01 * len(sample))


def _decode(raw: bytes, encoding: str | None, name: str | None) -> tuple[str, str]:
    """Decode ``raw``; return ``(text, encoding_used)``.  Raises DataError."""
    label = _file_label(name)
    if encoding not in (None, "", "auto"):
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            raise DataError(
                f"Unknown text encoding {_q(encoding)}. Use for example 'utf-8', 'cp1252' "
                "or 'latin-1', or leave the encoding empty to detect it."
            ) from None
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{label} cannot be read as {encoding} text (byte {exc.start} is not valid). "
                "Choose another encoding, or leave it empty to detect it."
            ) from None
        if codec in ("utf-8", "utf_8") and text.startswith("\ufeff"):
            text = text[1:]
        used = encoding
    else:
        text = used = None
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            try:
                text, used = raw.decode("utf-16"), "utf-16"
            except UnicodeDecodeError:
                text = None
        if text is None:
            if b"\x00" in raw:
                raise DataError(
                    f"{label} contains binary data, not text. Upload a CSV text file "
                    "(in a spreadsheet program: Save as > CSV)."
                )
            for candidate in ("utf-8-sig", "cp1252", "latin-1"):
                try:
                    text = raw.decode(candidate)
                except UnicodeDecodeError:
                    continue
                used = candidate
                if candidate == "utf-8-sig" and not raw.startswith(b"\xef\xbb\xbf"):
                    used = "utf-8"
                break
        assert text is not None and used is not None  # latin-1 decodes anything
        if text.startswith("\ufeff"):
            text = text[1:]
    if _garbage(text):
        raise DataError(
            f"{label} does not look like a text CSV file (it contains binary data). "
            "Upload a CSV file (in a spreadsheet program: Save as > CSV)."
        )
    return text, used


def _sample(text: str) -> str:
    """The first ~64 KB of ``text``, cut at a line end."""
    if len(text) <= _SNIFF_BYTES:
        return text
    head = text[:_SNIFF_BYTES]
    cut = max(head.rfind("\n"), head.rfind("\r"))
    return head[:cut] if cut > 0 else head


def _rows(sample: str, delimiter: str, limit: int = 2000) -> list[list[str]]:
    """Rows of the sample split by the csv module (blank lines skipped)."""
    out: list[list[str]] = []
    try:
        for row in csv.reader(
            io.StringIO(sample, newline=""), delimiter=delimiter, skipinitialspace=True
        ):
            if row and any(cell.strip() for cell in row):
                out.append(row)
                if len(out) >= limit:
                    break
    except csv.Error:
        return out
    return out


def _consistency(rows: list[list[str]]) -> tuple[float, int]:
    """(share of rows with as many fields as the header, header width)."""
    if not rows:
        return 0.0, 0
    width = len(rows[0])
    same = sum(1 for r in rows if len(r) == width or (len(r) == width + 1 and r[-1] == ""))
    return same / len(rows), width


def _detect_delimiter(sample: str) -> str:
    """csv.Sniffer over the sample, checked by field counts; count-based fallback."""
    try:
        sniffed = csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except Exception:  # the sniffer raises csv.Error (and worse) on odd input
        sniffed = None
    scores = {}
    for d in _DELIMITERS:
        share, width = _consistency(_rows(sample, d, limit=500))
        scores[d] = (share, width)
    if sniffed in scores:
        share, width = scores[sniffed]
        if width > 1 and share >= 0.9:
            return sniffed
    good = [
        (share, width, -i, d)
        for i, (d, (share, width)) in enumerate(scores.items())
        if width > 1 and share >= 0.9
    ]
    if good:
        return max(good)[3]
    fair = [
        (share, width, -i, d)
        for i, (d, (share, width)) in enumerate(scores.items())
        if width > 1 and share >= 0.5
    ]
    if fair:
        return max(fair)[3]
    return ","


_RE_COMMA_DEC = re.compile(r"^[-+]?(\d{1,3}(\.\d{3})+|\d+),\d+$")
_RE_DOT_DEC = re.compile(r"^[-+]?\d*\.\d+([eE][-+]?\d+)?$")
_RE_DOT_GROUP = re.compile(r"^[-+]?\d{1,3}(\.\d{3})+(,\d+)?$")
_RE_COMMA_GROUP = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$")
_RE_COMMA_PLAIN = re.compile(r"^[-+]?\d+,\d+$")
_RE_DOT_PLAIN = re.compile(r"^[-+]?\d+\.\d+$")


def _detect_number_format(
    rows: list[list[str]], delimiter: str, decimal: str | None, thousands: str | None
) -> tuple[str, str | None, list[str]]:
    """Decide the decimal mark and thousands separator from sample fields."""
    notes: list[str] = []
    cells = [c.strip() for r in rows[1:] for c in r]
    if decimal is None:
        decimal = "."
        if delimiter != ",":
            comma = [c for c in cells if _RE_COMMA_DEC.match(c)]
            dot = any(_RE_DOT_DEC.match(c) and not _RE_DOT_GROUP.match(c) for c in cells)
            if comma and not dot:
                decimal = ","
                notes.append(
                    f"Numbers such as {_q(comma[0])} were read with a decimal comma (1,5 = 1.5)."
                )
    if thousands is None:
        sep = "." if decimal == "," else ","
        group_re = _RE_DOT_GROUP if sep == "." else _RE_COMMA_GROUP
        plain_re = _RE_DOT_PLAIN if sep == "." else _RE_COMMA_PLAIN
        # '1.234' cannot be a number when the decimal mark is ',' (and '1,234' when it
        # is '.'), so grouping is the only reading, unless another number contradicts it
        grouped = [c for c in cells if group_re.match(c)]
        contradict = any(plain_re.match(c) and not group_re.match(c) for c in cells)
        if grouped and not contradict:
            thousands = sep
            notes.append(
                f"Numbers such as {_q(grouped[0])} were read with {_q(sep)} as the "
                "thousands separator."
            )
    return decimal, (thousands or None), notes


def _parser_message(exc: Exception, name: str | None, delimiter: str) -> str:
    text = str(exc)
    label = _file_label(name)
    dname = _DELIMITER_NAMES.get(delimiter, _q(delimiter))
    m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if m:
        return (
            f"{label} could not be read as a table: line {m.group(2)} has {m.group(3)} "
            f"values but the header has {m.group(1)} (separator: {dname}). Fix that line, "
            "or choose the right delimiter yourself."
        )
    m = re.search(r"EOF inside string starting at row (\d+)", text)
    if m:
        return (
            f'{label} could not be read as a table: a quote (") opened near line '
            f"{int(m.group(1)) + 1} is never closed. Fix the quotes in that line."
        )
    return (
        f"{label} could not be read as a table (separator: {dname}). Check that it is a "
        "CSV file, or choose the delimiter yourself."
    )


def _raw_header(text: str, delimiter: str, name: str | None) -> list[str]:
    """The header cells as pandas reads them (spaces stripped), before any renaming."""
    try:
        head = pd.read_csv(
            io.StringIO(text),
            sep=delimiter,
            header=None,
            nrows=1,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skipinitialspace=True,
            skip_blank_lines=True,
            index_col=False,
            engine="c",
        )
    except pd.errors.EmptyDataError:
        return []
    except (pd.errors.ParserError, csv.Error, ValueError, OverflowError) as exc:
        raise DataError(_parser_message(exc, name, delimiter)) from None
    if len(head) == 0:
        return []
    return [str(c).strip() for c in head.iloc[0].tolist()]


def _is_integral(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(finite.size) and bool(np.all(finite == np.round(finite)))


def _normalise_numbers(s: pd.Series, decimal: str, thousands: str | None) -> pd.Series:
    """Make text numbers in ``s`` readable by pd.to_numeric ('1.234,5' -> '1234.5')."""
    if thousands:
        s = s.str.replace(thousands, "", regex=False)
    if decimal != ".":
        s = s.where(~s.str.contains(".", regex=False))
        s = s.str.replace(decimal, ".", regex=False)
    return s


def _clean_column(
    col: pd.Series,
    na_lower: frozenset[str],
    decimal: str,
    thousands: str | None,
) -> tuple[pd.Series, str, dict | None]:
    """Type one parsed column.  Returns ``(series, kind, coerced_info)``."""
    if ptypes.is_bool_dtype(col.dtype):
        return col, "boolean", None
    if ptypes.is_numeric_dtype(col.dtype):
        col = col.astype("float64") if col.dtype.kind not in "iu" else col
        vals = col.to_numpy(dtype="float64", na_value=np.nan)
        kind = "integer" if col.dtype.kind in "iu" or _is_integral(vals) else "numeric"
        return col, kind, None

    # object / str: Python bools with missing values, huge ints, or text
    notna = col.notna()
    if notna.any():
        inferred = ptypes.infer_dtype(col, skipna=True)
        if inferred == "boolean":
            return col.astype("boolean"), "boolean", None
    text = col.astype("str").where(notna)
    text = text.str.strip()
    lowered = text.str.lower()
    text = text.where(~lowered.isin(na_lower) & notna)
    lowered = lowered.where(text.notna())
    present = text.notna()
    n_present = int(present.sum())
    if n_present == 0:
        return pd.Series(np.nan, index=col.index, dtype="float64"), "numeric", None

    # booleans: yes/no, true/false, y/n, t/f (any case)
    if lowered[present].isin(_TRUE_TOKENS | _FALSE_TOKENS).all():
        out = pd.Series(pd.NA, index=col.index, dtype="boolean")
        out[present] = lowered[present].isin(_TRUE_TOKENS)
        if not out.isna().any():
            out = out.astype(bool)
        return out, "boolean", None

    # mostly numbers -> numeric, stray texts -> NaN
    nums = pd.to_numeric(_normalise_numbers(text, decimal, thousands), errors="coerce")
    ok = nums.notna() & present
    n_ok = int(ok.sum())
    if n_ok and n_ok >= COERCE_MIN_FRACTION * n_present:
        nums = nums.astype("float64").where(ok)
        bad = text[present & ~ok]
        info = None
        if len(bad):
            examples = list(dict.fromkeys(bad.tolist()))[:3]
            info = {"count": int(len(bad)), "examples": [str(e) for e in examples]}
        vals = nums.to_numpy(dtype="float64", na_value=np.nan)
        kind = "integer" if _is_integral(vals) else "numeric"
        return nums, kind, info

    kind = "categorical" if text.nunique() <= _TEXT_CATEGORY_LIMIT else "text"
    return text.astype("str"), kind, None


# ---------------------------------------------------------------------------------------
# load_csv
# ---------------------------------------------------------------------------------------


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
        name: file name for messages (taken from the path or file object if not given).

    Returns:
        ``(df, report)``.  ``df`` has one column per kept CSV column, named by the
        header (spaces stripped; empty names become ``'Unnamed: i'``), a fresh
        RangeIndex, and dtypes: ``int64`` or ``float64`` (NaN = missing) for numbers,
        ``bool`` (or nullable ``boolean`` when values are missing) for yes/no columns,
        pandas ``str`` (NaN = missing) for text.  All-empty rows and columns are removed.

    Raises:
        DataError: file not found, empty file, header without data rows, duplicate
            column names, a file pandas cannot split into a table, binary data, an
            undecodable file with an explicit encoding, infinite values, or a limit
            exceeded (size, rows, columns).
        TypeError: ``source`` has an unsupported type (a programming error).
    """
    raw, name = _read_source(source, max_bytes, name)
    label = _file_label(name)
    if not raw.strip():
        raise DataError(f"{label} is empty. Choose a CSV file with a header row and data rows.")
    _looks_binary(raw, name)
    text, used_encoding = _decode(raw, encoding, name)
    if not text.strip():
        raise DataError(f"{label} is empty. Choose a CSV file with a header row and data rows.")

    sample = _sample(text)
    if sep in (None, "", "auto"):
        delimiter = _detect_delimiter(sample)
    else:
        delimiter = {"\\t": "\t", "tab": "\t"}.get(sep, sep)
        if len(delimiter) != 1 or delimiter in '"\r\n':
            raise DataError(
                f"The delimiter {_q(sep)} cannot be used: choose a single character such as "
                "',' ';' '|' or a tab, or leave it empty to detect it."
            )
    if decimal not in (None, "") and (len(decimal) != 1 or decimal == delimiter):
        raise DataError(
            f"The decimal mark {_q(decimal)} cannot be used with the delimiter "
            f"{_q(delimiter)}: choose '.' or ',' (different from the delimiter)."
        )
    thousands_off = thousands == ""
    if thousands not in (None, "") and (len(thousands) != 1 or thousands in (delimiter, decimal)):
        raise DataError(
            f"The thousands separator {_q(thousands)} cannot be used: choose one character "
            "different from the delimiter and the decimal mark, or leave it empty."
        )

    rows = _rows(sample, delimiter)
    dec, thou, notes = _detect_number_format(
        rows, delimiter, decimal or None, None if thousands_off else thousands
    )
    if thousands_off:
        thou = None

    # header: read the first row as pandas sees it (blank lines skipped, quotes
    # honoured); duplicates and the column limit are checked on these raw names,
    # since pandas silently renames a repeated 'a' to 'a.1'
    raw_names = _raw_header(text, delimiter, name)
    if len(raw_names) > max_columns:
        raise DataError(
            f"{label} has {len(raw_names)} columns, more than the limit of "
            f"{max_columns}. Remove columns you do not need, or raise the limit "
            "(max_columns)."
        )
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

    na_list = [str(v) for v in na_values]
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
            raise DataError(_parser_message(exc, name, delimiter)) from None
    if any(issubclass(w.category, pd.errors.ParserWarning) for w in caught):
        raise DataError(
            f"{label} could not be read as a table: some rows have more values than the "
            f"header has column names ({df.shape[1]}). Check the delimiter "
            f"(now {_DELIMITER_NAMES.get(delimiter, _q(delimiter))}), or add names for "
            "the extra columns."
        )

    if df.shape[1] > max_columns:
        raise DataError(
            f"{label} has {df.shape[1]} columns, more than the limit of {max_columns}. "
            "Remove columns you do not need, or raise the limit (max_columns)."
        )
    if len(df) > max_rows:
        raise DataError(
            f"{label} has more than {max_rows} data rows, the limit. Use a sample of the "
            "rows, or raise the limit (max_rows)."
        )
    if len(raw_names) == df.shape[1]:
        names = [c or f"Unnamed: {i}" for i, c in enumerate(raw_names)]
    else:  # should not happen; keep pandas' own names
        names = [str(c).strip() or f"Unnamed: {i}" for i, c in enumerate(df.columns)]
    if len(set(names)) != len(names):  # e.g. a real 'Unnamed: 1' next to an empty name
        names = [str(c) for c in df.columns]
    if len(set(names)) != len(names):
        raise DataError(f"{label} has repeated column names. Give each column a different name.")
    df.columns = names
    if len(df) == 0:
        raise DataError(
            f"{label} has column names but no data rows. Add the data rows below the header."
        )

    report = ParseReport(
        delimiter=delimiter,
        encoding=used_encoding,
        decimal=dec,
        thousands=thou,
        n_rows=0,
        n_columns=0,
    )
    report.warnings.extend(notes)
    na_lower = frozenset(v.strip().lower() for v in na_list)

    cleaned: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    for col_name in names:
        series, kind, info = _clean_column(df[col_name], na_lower, dec, thou)
        cleaned[col_name] = series
        kinds[col_name] = kind
        if info:
            report.coerced[col_name] = info
            ex = ", ".join(_q(e) for e in info["examples"])
            n = info["count"]
            if n == 1:
                what = f"1 value is not a number ({ex}); it was read as missing."
            else:
                what = f"{n} values are not numbers (e.g. {ex}); they were read as missing."
            report.warnings.append(f"Column {_q(col_name)}: {what}")
    out = pd.DataFrame(cleaned, index=df.index)

    # infinite values
    infs = []
    for col_name in names:
        s = out[col_name]
        if ptypes.is_float_dtype(s.dtype):
            n_inf = int(np.isinf(s.to_numpy()).sum())
            if n_inf:
                infs.append((col_name, n_inf))
    if infs:
        raise _inf_error(infs)

    # all-empty columns and rows
    empty_cols = [c for c in names if not out[c].notna().any()]
    if empty_cols:
        out = out.drop(columns=empty_cols)
        report.dropped_columns = empty_cols
        report.warnings.append(
            f"{'Columns' if len(empty_cols) > 1 else 'Column'} {_names(empty_cols)} "
            f"{'are' if len(empty_cols) > 1 else 'is'} empty (no values) and "
            f"{'were' if len(empty_cols) > 1 else 'was'} removed."
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
        report.warnings.append(f"{n_empty} empty row{'s were' if n_empty > 1 else ' was'} removed.")
    if len(out) == 0:
        raise DataError(
            f"{label} has column names but no data rows. Add the data rows below the header."
        )
    out = out.reset_index(drop=True)

    report.n_rows = len(out)
    report.n_columns = out.shape[1]
    report.dtypes = {c: kinds[c] for c in out.columns}
    report.missing = {c: int(out[c].isna().sum()) for c in out.columns}
    return out, report


def _inf_error(infs: list[tuple[str, int]]) -> DataError:
    if len(infs) == 1:
        col, n = infs[0]
        return DataError(
            f"Column {_q(col)} has {n} infinite value{'s' if n != 1 else ''} "
            "(inf or -inf); replace them or remove those rows.",
            column=col,
        )
    parts = ", ".join(f"{_q(c)} ({n})" for c, n in infs[:8])
    more = f" and {len(infs) - 8} more" if len(infs) > 8 else ""
    return DataError(
        f"Columns {parts}{more} have infinite values (inf or -inf); replace them or "
        "remove those rows."
    )


# ---------------------------------------------------------------------------------------
# Dataset
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Dataset:
    """A validated, fully numeric learning problem.

    Attributes:
        X: float64, C-contiguous, shape ``(n_samples, n_features)``, no NaN or inf.
            Categorical features hold integer codes ``0..k-1`` (as floats).
        y: shape ``(n_samples,)``; int64 class codes ``0..K-1`` (classification) or
            float64 values (regression).
        feature_names: ``n_features`` column names (str).
        is_categorical: bool, shape ``(n_features,)``.
        categories: feature index -> labels (list[str]) of codes ``0..k-1``, for every
            categorical feature.
        classes_: object array of ``K`` class labels (str) in code order, or ``None`` for
            regression.
        task: ``'classification'`` or ``'regression'``.
        target: name of the target column.
        warnings: plain-language notes about dropped rows and columns.
        n_dropped_rows: rows removed because of missing values.

    The arrays are shared, not copied: treat them as read-only.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    is_categorical: np.ndarray
    categories: dict[int, list[str]]
    classes_: np.ndarray | None
    task: str
    target: str
    warnings: tuple[str, ...] = ()
    n_dropped_rows: int = 0

    @property
    def n_samples(self) -> int:
        """Number of rows of ``X``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        """Number of classes ``K`` (0 for regression)."""
        return 0 if self.classes_ is None else len(self.classes_)

    def feature_frame(self) -> pd.DataFrame:
        """Features as a DataFrame for display: numeric columns as float64, categorical
        columns as pandas ``Categorical`` holding their labels (never codes)."""
        cols: dict[str, Any] = {}
        for j, fname in enumerate(self.feature_names):
            if self.is_categorical[j]:
                cols[fname] = pd.Categorical.from_codes(
                    self.X[:, j].astype(np.int64), categories=self.categories[j]
                )
            else:
                cols[fname] = self.X[:, j]
        return pd.DataFrame(cols)

    def target_labels(self) -> np.ndarray:
        """``y`` decoded: an object array of class labels (str) for classification, or
        ``y`` itself (float64) for regression."""
        if self.classes_ is None:
            return self.y
        return self.classes_[self.y]

    def __repr__(self) -> str:
        extra = f", n_classes={self.n_classes}" if self.classes_ is not None else ""
        return (
            f"Dataset(task={self.task!r}, target={self.target!r}, n_samples={self.n_samples}, "
            f"n_features={self.n_features}, n_categorical={int(self.is_categorical.sum())}"
            f"{extra})"
        )


# ---------------------------------------------------------------------------------------
# make_dataset helpers
# ---------------------------------------------------------------------------------------


def _num_label(v: float) -> str:
    """'3' for 3.0, '0.1' for 0.1."""
    f = float(v)
    if math.isfinite(f) and f == round(f) and abs(f) < 1e15:
        return str(int(f))
    return repr(f)


def _natural_key(label: str) -> tuple:
    try:
        value = float(label)
        if math.isnan(value):
            raise ValueError
        return (0, value, label)
    except ValueError:
        return (1, 0.0, label.casefold(), label)


@dataclass
class _Column:
    """A column reduced to 'numeric' (float64 values), 'bool' or 'text' (object)."""

    kind: str
    values: np.ndarray  # float64 for numeric/bool (NaN = missing), object for text
    missing: np.ndarray  # bool
    order: list[str] | None = None  # label order for pandas Categorical columns


def _as_column(name: str, s: pd.Series) -> _Column:
    dtype = s.dtype
    missing = s.isna().to_numpy()
    if isinstance(dtype, pd.CategoricalDtype):
        cats = [str(c) for c in dtype.categories]
        values = np.empty(len(s), dtype=object)
        values[~missing] = s[~missing].astype("str").to_numpy(dtype=object)
        return _Column("text", values, missing, order=list(dict.fromkeys(cats)))
    if ptypes.is_bool_dtype(dtype):
        vals = s.to_numpy(dtype="float64", na_value=np.nan)
        return _Column("bool", vals, missing)
    if ptypes.is_numeric_dtype(dtype) and not ptypes.is_complex_dtype(dtype):
        vals = s.to_numpy(dtype="float64", na_value=np.nan)
        return _Column("numeric", vals, missing)
    if (
        ptypes.is_datetime64_any_dtype(dtype)
        or ptypes.is_timedelta64_dtype(dtype)
        or ptypes.is_complex_dtype(dtype)
        or isinstance(dtype, pd.PeriodDtype)
    ):
        raise DataError(
            f"Column {_q(name)} holds dates, times or complex numbers, which cannot be used "
            "directly. Convert it to numbers or text, or leave it out.",
            column=name,
        )
    # object / str
    if (~missing).any():
        inferred = ptypes.infer_dtype(s, skipna=True)
        if inferred == "boolean":
            vals = s.astype("boolean").to_numpy(dtype="float64", na_value=np.nan)
            return _Column("bool", vals, missing)
        if inferred in ("integer", "floating", "mixed-integer-float", "decimal"):
            vals = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
            return _Column("numeric", vals, missing | np.isnan(vals))
    values = np.empty(len(s), dtype=object)
    values[~missing] = s[~missing].astype("str").to_numpy(dtype=object)
    return _Column("text", values, missing)


def _encode(col: _Column, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Codes (float64) and labels of ``col`` restricted to ``rows`` (no missing there)."""
    vals = col.values[rows]
    if col.kind == "bool":
        present = np.unique(vals)
        labels = [("True" if v else "False") for v in present]
        codes = np.searchsorted(present, vals).astype(np.float64)
        return codes, labels
    if col.kind == "numeric":
        uniq = np.unique(vals)
        labels = [_num_label(v) for v in uniq]
        if len(set(labels)) != len(labels):  # extremely close floats: keep them apart
            labels = [repr(float(v)) for v in uniq]
        return np.searchsorted(uniq, vals).astype(np.float64), labels
    uniq = list(pd.unique(vals))
    if col.order is not None:
        present = set(uniq)
        labels = [c for c in col.order if c in present]
        known = set(labels)
        labels += sorted((str(u) for u in uniq if u not in known), key=_natural_key)
    else:
        labels = sorted((str(u) for u in uniq), key=_natural_key)
    cat = pd.Categorical(vals, categories=labels)
    return cat.codes.astype(np.float64), labels


# ---------------------------------------------------------------------------------------
# make_dataset
# ---------------------------------------------------------------------------------------


def make_dataset(
    df: pd.DataFrame,
    target: str,
    *,
    task: str | None = None,
    categorical: Sequence[str] | str | None = None,
    missing: str = "error",
    min_class_count: int = 2,
    max_categories: int = MAX_CATEGORIES,
    features: Sequence[str] | None = None,
) -> Dataset:
    """Validate ``df`` and turn it into a :class:`Dataset` predicting ``target``.

    Args:
        df: the table (e.g. from :func:`load_csv`).
        target: name of the column to predict.
        task: ``'classification'``, ``'regression'`` or ``None``/``'auto'`` to infer:
            a text or yes/no target, or a whole-number target with at most
            :data:`MAX_CLASSES_INFERRED` (20) distinct values, is classification;
            anything else numeric is regression.
        categorical: extra column names to treat as categories (e.g. a 0/1/2 code);
            text and yes/no columns are always categorical.
        missing: ``'error'`` (default) raises on any missing value in the used columns;
            ``'drop'`` removes those rows and records a warning.
        min_class_count: (classification) every class needs at least this many rows.
        max_categories: a categorical feature may have at most this many distinct
            values; more (an ID or name column) raises DataError.
        features: columns to use as features (default: every column except the target).

    Returns:
        a :class:`Dataset`.  Categories (and classes) are sorted: numbers by value,
        text alphabetically with numeric-looking labels first, a pandas Categorical
        column by its own category order.  Constant and all-empty feature columns are
        dropped with a warning.

    Raises:
        DataError: unknown target/feature/categorical column, target all missing or
            constant, no usable feature, missing values (with ``missing='error'``), no
            rows left, infinite values, a class with fewer than ``min_class_count`` rows,
            too many categories, regression on a non-numeric target, unusable column
            types, or an invalid ``task``/``missing``/limit argument.
    """
    if missing not in ("error", "drop"):
        raise DataError(
            f"missing={missing!r} is not an option: use 'error' (stop when values are "
            "missing) or 'drop' (drop rows with missing values)."
        )
    if task in ("auto", ""):
        task = None
    if task not in (None, "classification", "regression"):
        raise DataError(
            f"task={task!r} is not an option: use 'classification', 'regression' or None "
            "(detect it from the target)."
        )
    if (
        isinstance(min_class_count, bool)
        or not isinstance(min_class_count, (int, np.integer))
        or min_class_count < 1
    ):
        raise DataError(f"min_class_count={min_class_count!r} must be a whole number >= 1.")
    if (
        isinstance(max_categories, bool)
        or not isinstance(max_categories, (int, np.integer))
        or max_categories < 2
    ):
        raise DataError(f"max_categories={max_categories!r} must be a whole number >= 2.")
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"make_dataset expects a pandas DataFrame, not {type(df).__name__}.")

    names = [str(c) for c in df.columns]
    if len(set(names)) != len(names):
        dups = sorted({n for n in names if names.count(n) > 1})
        raise DataError(
            f"Column {_names(dups)} appears more than once. Give each column a different name.",
            column=dups[0] if len(dups) == 1 else None,
        )
    target = str(target) if target is not None else ""
    if target not in names:
        raise DataError(
            f"There is no column {_q(target)} in the data; pick another target. "
            f"Available columns: {_names(names, 12)}.",
            column=target,
        )
    if len(df) == 0:
        raise DataError("The table has no rows. Load a file with data rows.")
    by_name = dict(zip(names, df.columns, strict=True))

    if categorical is None:
        categorical = []
    elif isinstance(categorical, str):
        categorical = [categorical]
    categorical = [str(c) for c in categorical]
    unknown = [c for c in categorical if c not in names]
    if unknown:
        raise DataError(
            f"Column {_names(unknown)} (marked as categorical) is not in the data. "
            f"Available columns: {_names(names, 12)}.",
            column=unknown[0] if len(unknown) == 1 else None,
        )
    if features is None:
        feat_names = [n for n in names if n != target]
    else:
        feat_names = [str(c) for c in ([features] if isinstance(features, str) else features)]
        unknown = [c for c in feat_names if c not in names]
        if unknown:
            raise DataError(
                f"Feature column {_names(unknown)} is not in the data. "
                f"Available columns: {_names(names, 12)}.",
                column=unknown[0] if len(unknown) == 1 else None,
            )
        feat_names = [n for n in dict.fromkeys(feat_names) if n != target]
    warn: list[str] = []
    n_rows = len(df)

    # target ---------------------------------------------------------------------------
    tcol = _as_column(target, df[by_name[target]])
    if tcol.missing.all():
        raise DataError(
            f"The target column {_q(target)} has no values (all missing). Pick another target.",
            column=target,
        )
    if task == "regression" and tcol.kind != "numeric":
        raise DataError(
            f"The target column {_q(target)} holds text or yes/no values, so it cannot be "
            "predicted by regression. Choose classification, or pick a numeric target.",
            column=target,
        )

    if not feat_names:
        if len(names) > 1:  # the caller's ``features`` left every other column out
            raise DataError(
                f"There are no feature columns: every column other than the target "
                f"{_q(target)} is left out. Keep at least one column to predict it from."
            )
        raise DataError(
            f"There are no feature columns: the data has only the target {_q(target)}. "
            "Add columns to predict it from."
        )

    # features ---------------------------------------------------------------------------
    cols: dict[str, _Column] = {}
    empty = []
    for fname in feat_names:
        col = _as_column(fname, df[by_name[fname]])
        if col.missing.all():
            empty.append(fname)
            continue
        cols[fname] = col
    if empty:
        warn.append(
            f"{'Columns' if len(empty) > 1 else 'Column'} {_names(empty)} "
            f"{'have' if len(empty) > 1 else 'has'} no values and "
            f"{'were' if len(empty) > 1 else 'was'} left out."
        )
    if not cols:
        raise DataError(
            f"No usable feature columns: {_names(empty)} "
            f"{'are' if len(empty) > 1 else 'is'} empty. Add columns with values."
        )

    # infinite values
    infs = []
    for cname, col in [(target, tcol), *cols.items()]:
        if col.kind == "numeric":
            n_inf = int(np.isinf(col.values).sum())
            if n_inf:
                infs.append((cname, n_inf))
    if infs:
        raise _inf_error(infs)

    # missing values
    miss = tcol.missing.copy()
    for col in cols.values():
        miss |= col.missing
    n_missing_rows = int(miss.sum())
    if n_missing_rows:
        counts = [(c, int(col.missing.sum())) for c, col in [(target, tcol), *cols.items()]]
        counts = [(c, n) for c, n in counts if n]
        if missing == "error":
            one = len(counts) == 1
            if one:
                c, n = counts[0]
                what = f"Column {_q(c)} has {n} missing value{'s' if n != 1 else ''}"
            else:
                parts = ", ".join(f"{_q(c)} ({n} missing)" for c, n in counts[:8])
                more = f" and {len(counts) - 8} more columns" if len(counts) > 8 else ""
                what = f"Columns {parts}{more} have missing values"
            raise DataError(
                f"{what} ({n_missing_rows} of {n_rows} rows affected). Choose 'drop rows "
                "with missing values' (missing='drop'), or fill them in.",
                column=counts[0][0] if one else None,
            )
        if n_missing_rows == n_rows:
            raise DataError(
                f"Every row has a missing value (in {_names([c for c, _ in counts])}), so "
                "no rows are left after dropping them. Leave out the columns with many "
                "missing values, or fill them in."
            )
        warn.append(f"{n_missing_rows} of {n_rows} rows had missing values and were dropped.")
    rows = np.flatnonzero(~miss)

    # target encoding and task ------------------------------------------------------------
    if tcol.kind == "numeric":
        tvals = tcol.values[rows]
        n_distinct = len(np.unique(tvals))
        if task is None:
            integral = bool(np.all(tvals == np.round(tvals)))
            task = (
                "classification"
                if integral and n_distinct <= MAX_CLASSES_INFERRED
                else "regression"
            )
    else:
        task = "classification"
        n_distinct = len(pd.unique(tcol.values[rows]))
    if n_distinct < 2:
        only = tcol.values[rows][0]
        shown = (
            _num_label(only)
            if tcol.kind == "numeric"
            else (("True" if only else "False") if tcol.kind == "bool" else str(only))
        )
        raise DataError(
            f"The target column {_q(target)} has the same value ({_q(shown)}) in every row, "
            "so there is nothing to predict. Pick another target.",
            column=target,
        )
    if task == "regression":
        y = np.ascontiguousarray(tcol.values[rows], dtype=np.float64)
        classes = None
    else:
        codes, labels = _encode(tcol, rows)
        y = np.ascontiguousarray(codes, dtype=np.int64)
        classes = np.empty(len(labels), dtype=object)
        classes[:] = labels
        counts_per_class = np.bincount(y, minlength=len(labels))
        small = [(labels[k], int(n)) for k, n in enumerate(counts_per_class) if n < min_class_count]
        if small:
            parts = ", ".join(f"{_q(lab)} ({n} row{'s' if n != 1 else ''})" for lab, n in small[:8])
            more = f" and {len(small) - 8} more" if len(small) > 8 else ""
            one = len(small) == 1
            raise DataError(
                f"{'Class' if one else 'Classes'} {parts}{more} of the target {_q(target)} "
                f"{'has' if one else 'have'} fewer than {min_class_count} rows. Remove "
                f"{'those rows' if one else 'the rows of those classes'} or merge "
                f"{'that class' if one else 'them'} with another class"
                f"{'' if tcol.kind != 'numeric' else ', or choose regression'}.",
                column=target,
            )

    # feature encoding ----------------------------------------------------------------------
    cat_set = set(categorical)
    blocks: list[np.ndarray] = []
    fnames: list[str] = []
    is_cat: list[bool] = []
    categories: dict[int, list[str]] = {}
    constant: list[str] = []
    for fname, col in cols.items():
        vals = col.values[rows]
        if col.kind == "numeric" and fname not in cat_set:
            if vals.size == 0 or vals.min() == vals.max():
                constant.append(fname)
                continue
            blocks.append(vals)
            fnames.append(fname)
            is_cat.append(False)
            continue
        codes, labels = _encode(col, rows)
        if len(labels) < 2:
            constant.append(fname)
            continue
        if len(labels) > max_categories:
            examples = ", ".join(_q(v) for v in labels[:2])
            if col.kind == "numeric":  # a number column the caller marked as categorical
                raise DataError(
                    f"Column {_q(fname)} is marked as categorical but has {len(labels)} "
                    f"different values (e.g. {examples}), too many for a category (the limit "
                    f"is {max_categories}). Unmark it to use it as a number, leave it out if "
                    "it is an ID, or raise the limit (max_categories).",
                    column=fname,
                )
            raise DataError(
                f"Column {_q(fname)} has {len(labels)} different values (e.g. {examples}), "
                f"too many for a category (the limit is {max_categories}). If it is an ID "
                "or a name, leave it out; otherwise raise the limit (max_categories).",
                column=fname,
            )
        categories[len(fnames)] = labels
        blocks.append(codes)
        fnames.append(fname)
        is_cat.append(True)
    if constant:
        warn.append(
            f"{'Columns' if len(constant) > 1 else 'Column'} {_names(constant)} "
            f"{'have' if len(constant) > 1 else 'has'} the same value in every row and "
            f"{'were' if len(constant) > 1 else 'was'} left out."
        )
    if not fnames:
        raise DataError(
            "No feature columns are left: every feature has the same value in every row "
            f"({_names(constant)}). Add columns that vary, or pick another target."
        )

    X = np.empty((len(rows), len(fnames)), dtype=np.float64, order="C")
    for j, block in enumerate(blocks):
        X[:, j] = block
    return Dataset(
        X=X,
        y=y,
        feature_names=fnames,
        is_categorical=np.asarray(is_cat, dtype=bool),
        categories=categories,
        classes_=classes,
        task=task,
        target=target,
        warnings=tuple(warn),
        n_dropped_rows=int(n_rows - len(rows)),
    )


# ---------------------------------------------------------------------------------------
# Bundled datasets
# ---------------------------------------------------------------------------------------


def bundled_datasets() -> dict[str, dict]:
    """The bundled datasets listed in ``DATASETS_DIR / 'catalog.json'``.

    Returns ``{name: entry}`` in catalog order; each entry is a copy of the catalog's dict
    (keys such as ``file``, ``target``, ``task``, ``title``, ``description``,
    ``source``).  Returns ``{}`` when the catalog file does not exist.

    Raises:
        DataError: the catalog exists but is not valid JSON of that form.
    """
    path = DATASETS_DIR / "catalog.json"
    if not path.is_file():
        return {}
    try:
        catalog = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(
            f"The dataset catalog {_q(path)} could not be read ({exc}). Reinstall the app's "
            "bundled data."
        ) from None
    if not isinstance(catalog, dict) or not all(
        isinstance(v, dict) and "file" in v for v in catalog.values()
    ):
        raise DataError(
            f"The dataset catalog {_q(path)} is not in the expected form "
            "({name: {'file': ..., 'target': ...}}). Reinstall the app's bundled data."
        )
    return {str(k): dict(v) for k, v in catalog.items()}


def load_bundled(name: str) -> tuple[pd.DataFrame, ParseReport, dict]:
    """Load a bundled dataset by its catalog name (e.g. ``'iris'``).

    Returns ``(df, report, entry)``: the parsed table and report as :func:`load_csv`
    gives them, and the catalog entry (dict with ``file``, ``target``, ``task``, ...).

    Raises:
        DataError: unknown name (the message lists the available names) or a missing or
            unreadable file.
    """
    catalog = bundled_datasets()
    if name not in catalog:
        available = ", ".join(sorted(catalog)) or "(none installed)"
        raise DataError(f"There is no bundled dataset {_q(name)}. Available datasets: {available}.")
    entry = catalog[name]
    path = DATASETS_DIR / str(entry["file"])
    if not path.is_file():
        raise DataError(
            f"The bundled dataset {_q(name)} is missing its file {_q(entry['file'])}. "
            "Reinstall the app's bundled data."
        )
    kwargs = {k: entry[k] for k in ("sep", "encoding", "decimal", "thousands") if k in entry}
    df, report = load_csv(
        path, max_rows=max(MAX_ROWS, 10**7), max_bytes=max(MAX_BYTES, 2**31), **kwargs
    )
    return df, report, entry
