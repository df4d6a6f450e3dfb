"""What the cells of a text column hold: yes/no spellings, numbers with a unit (percent,
currency), dates, codes with leading zeros, and whether a column identifies rows.

Pure functions on :class:`pandas.Series` used by :mod:`engine.data.parsing` (to type the
columns of a file) and :mod:`engine.data.validation` (to leave identifier columns out).
Every function only *recognises*; the callers decide what to change and report it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

#: Lower-case spellings of a true / false value in a yes/no column.
TRUE_SPELLINGS = frozenset({"true", "yes", "y", "t", "1"})
FALSE_SPELLINGS = frozenset({"false", "no", "n", "f", "0"})
#: The word pairs a consistently written yes/no column uses.
_BOOLEAN_FAMILIES = (
    frozenset({"yes", "no"}),
    frozenset({"y", "n"}),
    frozenset({"true", "false"}),
    frozenset({"t", "f"}),
    frozenset({"1", "0"}),
)

#: Currency marks recognised before or after an amount (one per column).
CURRENCY_SYMBOLS = ("$", "€", "£", "¥", "₹", "USD", "EUR", "GBP", "CHF", "JPY")
_UNIT_RE = "|".join(re.escape(s) for s in ("%", *CURRENCY_SYMBOLS))
_CELL_WITH_UNIT = re.compile(
    rf"^(?P<s1>[-+\u2212]?)\s*(?P<pre>{_UNIT_RE})?\s*(?P<s2>[-+\u2212]?)\s*"
    rf"(?P<num>\d[\d.,'\u2019 \u00a0\u202f]*|[.,]\d+)\s*(?P<post>{_UNIT_RE})?$"
)
_GROUP_CHARS = " \u00a0\u202f'\u2019"

#: Share of a column's cells that must be numbers for it to be read as numbers.
NUMBER_MIN_FRACTION = 0.8


@dataclass(frozen=True)
class UnitNumbers:
    """A text column read as numbers with a unit.

    ``values`` float64 (NaN where the cell was missing or not a number), ``unit`` the mark
    (``'%'`` or a currency such as ``'$'``), ``n_with_unit`` cells written with it,
    ``example`` one such cell and ``bad`` the present cells that are not numbers.
    """

    values: pd.Series
    unit: str
    n_with_unit: int
    example: str
    bad: pd.Series


def number_pattern(decimal: str, thousands: str | None) -> re.Pattern:
    """A regex for the unsigned number text of a cell: digits, an optional decimal part
    with ``decimal``, groups of three digits separated by ``thousands`` (or a space or an
    apostrophe) allowed."""
    groups = re.escape(_GROUP_CHARS + (thousands or ("," if decimal == "." else ".")))
    dec = re.escape(decimal)
    return re.compile(
        rf"^(?:\d{{1,3}}(?P<g>[{groups}])\d{{3}}(?:(?P=g)\d{{3}})*|\d+)(?:{dec}\d+)?$|^{dec}\d+$"
    )


def _distinct(present: pd.Series) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """The distinct cells of ``present`` (a Series), the code of each cell and the number
    of cells per distinct value: the recognisers look at each distinct text once."""
    codes, uniques = pd.factorize(present)
    distinct = pd.Series(np.asarray(uniques, dtype=object), dtype="str")
    return distinct, codes, np.bincount(codes, minlength=len(distinct))


_UNIT_CHARS = re.compile("%|" + "|".join(re.escape(u) for u in CURRENCY_SYMBOLS))


def parse_unit_numbers(text: pd.Series, decimal: str, thousands: str | None) -> UnitNumbers | None:
    """Read a text column of percentages or amounts ('22%', '$1,204.50', '1.204,50 €',
    '-$5', '($5.00)' for -5).

    ``text`` holds the present cells (stripped strings; missing cells NaN).  Returns
    ``None`` unless at least half of the present cells carry the same unit (one currency,
    or ``%``) and :data:`NUMBER_MIN_FRACTION` of them are numbers (with the unit or plain).
    ``'22%'`` is read as 22 (the unit is percent, not a fraction).
    """
    present = text.dropna()
    if present.empty:
        return None
    distinct, codes, weight = _distinct(present)
    if not distinct.str.contains(_UNIT_CHARS).any():
        return None
    # accounting negatives: '($1,204.50)' is -1204.5
    bracketed = distinct.str.fullmatch(r"\(.*\)").fillna(False).astype(bool).to_numpy()
    inner = distinct.where(~bracketed, distinct.str.slice(1, -1))
    parts = inner.str.extract(_CELL_WITH_UNIT)
    matched = parts["num"].notna()
    units = parts["pre"].fillna(parts["post"]).where(matched)
    both = parts["pre"].notna() & parts["post"].notna()
    used = units.dropna().unique()
    if len(used) != 1 or both.any():
        return None
    unit = str(used[0])
    has_unit = units.eq(unit).to_numpy()
    n_unit = int(weight[has_unit].sum())
    if n_unit < 0.5 * len(present):
        return None
    pattern = number_pattern(decimal, thousands)
    number = parts["num"].where(matched).str.strip()
    ok = number.str.match(pattern).fillna(False).astype(bool).to_numpy()
    if int(weight[ok].sum()) < NUMBER_MIN_FRACTION * len(present):
        return None
    negative = (
        parts["s1"].isin(["-", "\u2212"]) | parts["s2"].isin(["-", "\u2212"])
    ).to_numpy() | bracketed
    cleaned = number.where(ok)
    for ch in _GROUP_CHARS + (thousands or ("," if decimal == "." else ".")):
        if ch != decimal:
            cleaned = cleaned.str.replace(ch, "", regex=False)
    if decimal != ".":
        cleaned = cleaned.str.replace(decimal, ".", regex=False)
    values = pd.to_numeric(cleaned, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    values = np.where(negative, -values, values)
    out = pd.Series(np.nan, index=text.index, dtype="float64")
    out[present.index] = values[codes]
    example = str(distinct[np.flatnonzero(has_unit)[0]])
    first_cell = present[has_unit[codes]]
    if len(first_cell):
        example = str(first_cell.iloc[0])
    return UnitNumbers(out, unit, n_unit, example, present[~ok[codes]])


@dataclass(frozen=True)
class BooleanSpellings:
    """How a yes/no column is written.

    ``kind`` is ``'as written'`` (two spellings, e.g. yes/no: keep the text),
    ``'case'`` (one word pair in several letter cases: unify to each word's most common
    spelling, ``mapping`` old -> new) or ``'mixed'`` (several word pairs: read as
    True/False).  ``counts`` maps each original spelling to its number of cells.
    """

    kind: str
    counts: dict[str, int]
    mapping: dict[str, str]


def _letter_case(text: str) -> str:
    if text.islower():
        return "lower"
    if text.isupper():
        return "upper"
    return "title" if text.istitle() else "mixed"


def boolean_spellings(text: pd.Series) -> BooleanSpellings | None:
    """Recognise a yes/no column (present cells ``text``, stripped; NaN = missing).

    Returns ``None`` when some cell is not a spelling of true/false (``TRUE_SPELLINGS``,
    ``FALSE_SPELLINGS``, any letter case).
    """
    present = text.dropna()
    if present.empty:
        return None
    counts = present.value_counts(sort=False)
    lowered = {s: s.lower() for s in counts.index}
    if not all(v in TRUE_SPELLINGS or v in FALSE_SPELLINGS for v in lowered.values()):
        return None
    counts_d = {str(s): int(n) for s, n in counts.items()}
    if len(counts_d) <= 2:
        return BooleanSpellings("as written", counts_d, {})
    words = set(lowered.values())
    if any(words <= family for family in _BOOLEAN_FAMILIES):
        # the letter case most cells use ('yes'/'no' over 'Yes'/'NO'), lower case on a tie
        styles: dict[str, int] = {}
        for spelling, n in counts_d.items():
            styles[_letter_case(spelling)] = styles.get(_letter_case(spelling), 0) + n
        rank = {"lower": 3, "title": 2, "upper": 1}
        style = max(styles, key=lambda k: (styles[k], rank.get(k, 0)))
        target: dict[str, str] = {}
        for word in words:
            spelled = {s: n for s, n in counts_d.items() if lowered[s] == word}
            styled = [s for s in spelled if _letter_case(s) == style]
            target[word] = styled[0] if styled else max(spelled, key=spelled.__getitem__)
        mapping = {s: target[lowered[s]] for s in counts_d if target[lowered[s]] != s}
        return BooleanSpellings("case", counts_d, mapping)
    return BooleanSpellings("mixed", counts_d, {})


def has_leading_zero_codes(text: pd.Series) -> str | None:
    """The first cell of a whole-number column written with a leading zero ('04521'), when
    the column is one of codes: all its numbers have the same width, or at least a fifth of
    them start with 0.  ``None`` otherwise (``'0'`` alone is a number)."""
    present = text.dropna()
    if present.empty:
        return None
    distinct, codes, weight = _distinct(present)
    digits = distinct.str.fullmatch(r"\d+").fillna(False).astype(bool).to_numpy()
    if not digits.any():
        return None
    zero = distinct.str.match(r"0\d").fillna(False).astype(bool).to_numpy() & digits
    if not zero.any():
        return None
    same_width = distinct[digits].str.len().nunique() == 1
    if same_width or weight[zero].sum() >= 0.2 * weight[digits].sum():
        return str(present[zero[codes]].iloc[0])
    return None


# -- dates -------------------------------------------------------------------------------------
_DATE_SHAPES = re.compile(
    r"^(\d{4}-\d{1,2}-\d{1,2}([ T].*)?|\d{4}/\d{1,2}/\d{1,2}( .*)?"
    r"|\d{1,2}[/.\-]\d{1,2}[/.\-]\d{2}(\d{2})?( .*)?"
    r"|\d{1,2}\.? [A-Za-z]{3,9}\.? \d{4}|[A-Za-z]{3,9}\.? \d{1,2},? \d{4})$"
)
#: (strftime format, plain description) tried in this order; day-first before month-first.
DATE_FORMATS: tuple[tuple[str, str], ...] = (
    ("ISO8601", "year-month-day (ISO 8601)"),
    ("%Y/%m/%d", "year/month/day"),
    ("%d/%m/%Y", "day/month/year"),
    ("%m/%d/%Y", "month/day/year"),
    ("%d.%m.%Y", "day.month.year"),
    ("%d-%m-%Y", "day-month-year"),
    ("%m-%d-%Y", "month-day-year"),
    ("%d/%m/%y", "day/month/year (two-digit year)"),
    ("%m/%d/%y", "month/day/year (two-digit year)"),
    ("%d.%m.%y", "day.month.year (two-digit year)"),
    ("%d/%m/%Y %H:%M", "day/month/year hour:minute"),
    ("%m/%d/%Y %H:%M", "month/day/year hour:minute"),
    ("%d.%m.%Y %H:%M", "day.month.year hour:minute"),
    ("%d %b %Y", "day month-name year"),
    ("%d %B %Y", "day month-name year"),
    ("%b %d, %Y", "month-name day, year"),
    ("%B %d, %Y", "month-name day, year"),
)


@dataclass(frozen=True)
class Dates:
    """A text column read as dates: ``values`` datetime64 (NaT = missing or unreadable),
    ``description`` of the format, ``example`` a cell, ``ambiguous`` when the cells also
    read as another day/month order, ``bad`` the present cells that are not dates."""

    values: pd.Series
    description: str
    example: str
    ambiguous: bool
    bad: pd.Series


def _naive(parsed: pd.Series) -> pd.Series:
    """Time-zone aware stamps as naive UTC (naive ones unchanged), dtype datetime64[ns]."""
    if isinstance(parsed.dtype, pd.DatetimeTZDtype):
        parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
    return parsed.astype("datetime64[ns]")


def parse_dates(text: pd.Series) -> Dates | None:
    """Read a text column of dates (ISO '2023-01-15', '15/01/2023', '15.01.2023',
    '15 Jan 2023', 'Jan 15, 2023', with or without a time).

    Returns ``None`` unless :data:`NUMBER_MIN_FRACTION` of the present cells have the shape
    of a date and one format reads them (or, when the column mixes formats, dateutil reads
    them cell by cell, day first).  When day/month and month/day both read every cell
    (all days 12 or less), day first wins and ``ambiguous`` is set.
    """
    cells = text.dropna()
    if cells.empty:
        return None
    present, codes, weight = _distinct(cells)
    shaped = present.str.match(_DATE_SHAPES).fillna(False).astype(bool).to_numpy()
    if weight[shaped].sum() < NUMBER_MIN_FRACTION * len(cells):
        return None
    best = None
    n_best = 0
    readers: dict[str, int] = {}
    for fmt, description in DATE_FORMATS:
        try:
            parsed = pd.to_datetime(present, format=fmt, errors="coerce", utc=True)
        except (ValueError, TypeError, OverflowError):
            continue
        parsed = _naive(parsed)
        n_ok = int(weight[parsed.notna().to_numpy()].sum())
        readers[fmt] = n_ok
        if n_ok > n_best:
            best, n_best = (fmt, description, parsed), n_ok
    if best is None or n_best < NUMBER_MIN_FRACTION * len(cells):
        # several formats in one column: ISO cells as ISO, the others read by dateutil
        # (through pandas) cell by cell, day first (dateutil would read 2023-04-05 as 4 May)
        iso = present.str.match(r"^\d{4}-").fillna(False).astype(bool)
        try:
            parsed = pd.concat(
                [
                    _naive(
                        pd.to_datetime(present[iso], format="ISO8601", errors="coerce", utc=True)
                    ),
                    _naive(
                        pd.to_datetime(
                            present[~iso],
                            format="mixed",
                            dayfirst=True,
                            errors="coerce",
                            utc=True,
                        )
                    ),
                ]
            ).reindex(present.index)
        except (ValueError, TypeError, OverflowError):
            return None
        n_best = int(weight[parsed.notna().to_numpy()].sum())
        if n_best < NUMBER_MIN_FRACTION * len(cells):
            return None
        best = ("mixed", "several formats, day first when unclear", parsed)
    fmt, description, parsed = best
    twin = {
        "%d/%m/%Y": "%m/%d/%Y",
        "%d-%m-%Y": "%m-%d-%Y",
        "%d/%m/%y": "%m/%d/%y",
        "%d/%m/%Y %H:%M": "%m/%d/%Y %H:%M",
    }.get(fmt)
    ambiguous = twin is not None and readers.get(twin, 0) == n_best
    stamps = parsed.to_numpy(dtype="datetime64[ns]")[codes]
    out = pd.Series(pd.NaT, index=text.index, dtype="datetime64[ns]")
    out[cells.index] = stamps
    ok = ~np.isnat(stamps)
    return Dates(out, description, str(cells[ok].iloc[0]), ambiguous, cells[~ok])


# -- identifiers -------------------------------------------------------------------------------
_ID_NAMES = frozenset(
    {
        "id",
        "idx",
        "index",
        "key",
        "uuid",
        "guid",
        "row",
        "rownum",
        "row_num",
        "rownumber",
        "row_number",
        "row_id",
        "rowid",
        "record",
        "record_id",
        "no",
        "nr",
        "#",
    }
)
#: A text column with at least this many present cells, a different value in
#: :data:`IDENTIFIER_DISTINCT_SHARE` of them, is an identifier (names, codes, free text).
IDENTIFIER_MIN_ROWS = 10
IDENTIFIER_DISTINCT_SHARE = 0.9
#: An unnamed whole-number column is row numbers (0..n-1 or 1..n) from this many rows on.
ROW_NUMBER_MIN_ROWS = 20


def named_like_an_id(name: str) -> bool:
    """``'id'``, ``'ID'``, ``'row_id'``, ``'PassengerId'``, ``'customerID'``,
    ``'Unnamed: 0'`` (a written pandas index) -- not ``'paid'`` or ``'valid'``."""
    text = str(name).strip()
    low = text.lower()
    if low in _ID_NAMES or re.fullmatch(r"unnamed: ?\d+", low):
        return True
    if re.search(r"[ _\-.](id|key|uuid|no)$", low):
        return True
    return bool(re.search(r"[a-z0-9](Id|ID)$", text))


def identifier_reason(name: str, series: pd.Series) -> str | None:
    """Why column ``name`` looks like a row identifier, or ``None``.

    * text (or codes) with a different value in at least 90 % of at least 10 present cells,
      present in at least half the rows: names, IDs, free text;
    * free text: sentences (four words on average) with a different value in half the rows;
    * an integer column, a different number in every row, named like an ID
      (:func:`named_like_an_id`) or forming the row numbers 0..n-1 or 1..n (at least 20
      rows);
    * text named like an ID with a different value in every row.

    Dates, booleans and float columns are never identifiers.
    """
    n_rows = len(series)
    if n_rows < 2:
        return None
    dtype = series.dtype
    present = series.dropna()
    n_present = len(present)
    if n_present < 2:
        return None
    if ptypes.is_bool_dtype(dtype) or ptypes.is_datetime64_any_dtype(dtype):
        return None
    if isinstance(dtype, pd.CategoricalDtype):
        present = present.astype("str")
        dtype = present.dtype
    if ptypes.is_numeric_dtype(dtype):
        if not ptypes.is_integer_dtype(dtype):  # measurements, or whole numbers with gaps
            return None
        values = present.to_numpy(dtype="float64")
        if n_present != n_rows or len(np.unique(values)) != n_rows:
            return None
        if named_like_an_id(name):
            return f"named like an ID, a different number in each of the {n_rows:,} rows"
        low = values.min()
        if low in (0.0, 1.0) and values.max() - low == n_rows - 1 and n_rows >= ROW_NUMBER_MIN_ROWS:
            return f"row numbers ({int(low)} to {int(values.max()):,})"
        return None
    texts = present.astype("str")
    n_distinct = int(texts.nunique())
    if named_like_an_id(name) and n_distinct == n_present == n_rows:
        return f"named like an ID, a different value in each of the {n_rows:,} rows"
    if n_present < IDENTIFIER_MIN_ROWS or n_present < 0.5 * n_rows:
        return None
    if n_distinct < 0.5 * n_present:  # categories, not free text or identifiers
        return None
    words = float(texts.str.count(r"\S+").mean())
    if words >= 4:
        return f"free text, {n_distinct:,} different texts"
    if n_distinct >= IDENTIFIER_DISTINCT_SHARE * n_present:
        if n_distinct == n_present:
            return f"a different value in each of the {n_present:,} rows"
        return f"a different value in {n_distinct:,} of {n_present:,} rows"
    return None


def identifier_columns(df: pd.DataFrame, exclude=()) -> dict[str, str]:
    """``{column: reason}`` for the columns of ``df`` that look like row identifiers (see
    :func:`identifier_reason`), in column order, leaving out the names in ``exclude``."""
    skip = {str(c) for c in exclude}
    out: dict[str, str] = {}
    for col in df.columns:
        if str(col) in skip:
            continue
        reason = identifier_reason(str(col), df[col])
        if reason:
            out[str(col)] = reason
    return out
