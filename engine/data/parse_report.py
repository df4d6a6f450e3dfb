"""The :class:`ParseReport` of :func:`engine.data.load_csv`: what it detected and changed
while reading a file."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

TEXT_CATEGORY_LIMIT = 50  # ParseReport: 'categorical' up to this many distinct values


#: Distinct values a column's ``examples`` shows (:meth:`ParseReport.to_frame`).
N_EXAMPLES = 3
#: The columns of :meth:`ParseReport.to_frame`.
REPORT_COLUMNS = ["column", "dtype", "examples", "missing", "coerced", "coerced texts", "note"]


def example_values(values: pd.Series, count: int = N_EXAMPLES) -> str:
    """The first ``count`` distinct present values of a column as read, comma-separated:
    numbers to 4 significant digits ('5.1, 4.9, 4.7'), a date at midnight as its day,
    texts and booleans as they are."""
    shown = []
    for value in values.dropna().drop_duplicates().head(count):
        if isinstance(value, pd.Timestamp) and value == value.normalize():
            shown.append(str(value.date()))
        elif pd.api.types.is_number(value) and not pd.api.types.is_bool(value):
            shown.append(f"{value:.4g}")
        else:
            shown.append(str(value))
    return ", ".join(shown)


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
            numbers), ``'boolean'`` (true/false), ``'categorical'`` (text with few distinct
            values), ``'text'`` (text with many distinct values) or ``'date'``.
        coerced: per column that contained stray text (numbers, amounts or dates with a
            few cells that are not), ``{'count': int, 'examples': list[str]}``: how many
            cells were read as missing and the first (up to 3) distinct such texts.
        missing: per kept column, the number of missing cells (NaN/NaT) after parsing.
        dropped_columns: names of the all-empty columns that were removed.
        file_columns: every column name of the file's header, in order, removed ones
            included (blank names as renamed, see :attr:`changes`); the last one is the
            usual target.
        dropped_rows: number of all-empty rows that were removed.
        identifiers: per column that looks like a row identifier (names, IDs, row
            numbers, free text), the reason in words; :func:`engine.data.make_dataset`
            leaves these out of the features unless they are asked for.
        units: per column read as numbers with a unit, the unit (``'%'`` or a currency
            mark such as ``'$'``); ``'22%'`` is 22 and ``'$1,204.50'`` is 1204.5.
        codes: per whole-number column kept as text because it has leading zeros, an
            example cell (``'04521'``).
        dates: per date column, the format read (``'day/month/year'``).
        booleans: per yes/no column whose spellings were changed, ``{spelling: count}``
            of the spellings in the file.
        changes: every automatic change, in order, as ``{'column': str or None,
            'change': str, 'count': int, 'message': str}`` (``count`` cells or rows).
        warnings: plain-language notes for the user: the ``message`` of every change,
            and the detections.
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
    file_columns: list[str] = field(default_factory=list)
    dropped_rows: int = 0
    identifiers: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    codes: dict[str, str] = field(default_factory=dict)
    dates: dict[str, str] = field(default_factory=dict)
    booleans: dict[str, dict] = field(default_factory=dict)
    changes: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def record(self, column: str | None, change: str, count: int, message: str) -> None:
        """Add an automatic change to :attr:`changes` and its message to :attr:`warnings`."""
        self.changes.append(
            {"column": column, "change": change, "count": int(count), "message": message}
        )
        self.warnings.append(message)

    def notes(self) -> dict[str, str]:
        """Per column, a short note on what was recognised (for :meth:`to_frame`)."""
        out: dict[str, list[str]] = {}
        for name, unit in self.units.items():
            out.setdefault(name, []).append("percent" if unit == "%" else f"amounts in {unit}")
        for name in self.codes:
            out.setdefault(name, []).append("codes with leading zeros")
        for name, fmt in self.dates.items():
            out.setdefault(name, []).append(f"dates ({fmt})")
        for name in self.booleans:
            out.setdefault(name, []).append("yes/no spellings unified")
        for name in self.identifiers:
            out.setdefault(name, []).append("identifier (left out)")
        return {k: "; ".join(v) for k, v in out.items()}

    def to_frame(self, frame: pd.DataFrame | None = None) -> pd.DataFrame:
        """One row per column of the file, for display.

        Columns: ``column`` (str), ``dtype`` (str; ``'empty (removed)'`` for dropped
        columns), ``examples`` (str: the first :data:`N_EXAMPLES` distinct values of the
        column in ``frame``, the table as read, comma-separated; empty without ``frame``),
        ``missing`` (int), ``coerced`` (int: stray texts read as missing), ``coerced
        texts`` (str: those texts, comma-separated) and ``note`` (str: unit, codes, date
        format, identifier; see :meth:`notes`).
        """
        notes = self.notes()
        rows = []
        for name, kind in self.dtypes.items():
            info = self.coerced.get(name, {})
            values = frame[name] if frame is not None and name in frame.columns else None
            rows.append(
                {
                    "column": name,
                    "dtype": kind,
                    "examples": "" if values is None else example_values(values),
                    "missing": int(self.missing.get(name, 0)),
                    "coerced": int(info.get("count", 0)),
                    "coerced texts": ", ".join(repr(e) for e in info.get("examples", [])),
                    "note": notes.get(name, ""),
                }
            )
        for name in self.dropped_columns:
            rows.append(
                {
                    "column": name,
                    "dtype": "empty (removed)",
                    "examples": "",
                    "missing": self.n_rows,
                    "coerced": 0,
                    "coerced texts": "",
                    "note": "",
                }
            )
        return pd.DataFrame(rows, columns=REPORT_COLUMNS)
