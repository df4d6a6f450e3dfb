"""Cleaning the columns :func:`engine.data.load_csv` read: numbers written with decimal
commas, thousands separators, percent signs or units read as numbers, stray texts among
numbers read as missing, yes/no spellings unified, codes with leading zeros kept as text,
dates parsed; every change recorded in the :class:`~engine.data.ParseReport`."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from engine.data.errors import _q
from engine.data.parse_report import TEXT_CATEGORY_LIMIT, ParseReport
from engine.data.values import (
    TRUE_SPELLINGS,
    boolean_spellings,
    has_leading_zero_codes,
    parse_dates,
    parse_unit_numbers,
)

#: Share of the non-missing values of a text column that must parse as numbers for the
#: column to be read as numeric (the rest become missing and are reported).
COERCE_MIN_FRACTION = 0.8


def is_integral(values: np.ndarray) -> bool:
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


def _numbers(text: pd.Series, decimal: str, thousands: str | None) -> pd.Series:
    """``text`` read as numbers (float64, NaN where a cell is not one), each distinct text
    converted once."""
    codes, uniques = pd.factorize(text)
    distinct = pd.Series(np.asarray(uniques, dtype=object), dtype="str")
    values = pd.to_numeric(_normalise_numbers(distinct, decimal, thousands), errors="coerce")
    values = values.to_numpy(dtype="float64", na_value=np.nan)
    out = np.full(len(text), np.nan)
    out[codes >= 0] = values[codes[codes >= 0]]
    return pd.Series(out, index=text.index)


def _stray(bad: pd.Series) -> dict | None:
    """``{'count', 'examples'}`` of the present cells read as missing, or ``None``."""
    if not len(bad):
        return None
    examples = list(dict.fromkeys(bad.tolist()))[:3]
    return {"count": int(len(bad)), "examples": [str(e) for e in examples]}


def _text_cells(col: pd.Series, na_lower: frozenset[str]) -> pd.Series:
    """The column as stripped strings, NaN where missing (a missing-value token in any
    letter case counts as missing)."""
    notna = col.notna()
    text = col.astype("str").where(notna).str.strip()
    return text.where(~text.str.lower().isin(na_lower) & notna)


def _text_kind(text: pd.Series) -> str:
    return "categorical" if text.nunique() <= TEXT_CATEGORY_LIMIT else "text"


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _clean_column(
    name: str,
    col: pd.Series,
    raw: pd.Series | None,
    na_lower: frozenset[str],
    decimal: str,
    thousands: str | None,
    report: ParseReport,
) -> tuple[pd.Series, str, dict | None]:
    """Type one parsed column; record what was recognised in ``report``.

    ``raw`` is the column's text as written, for whole-number columns (leading zeros are
    lost once pandas reads them as numbers).  Returns ``(series, kind, coerced_info)``.
    """
    if ptypes.is_bool_dtype(col.dtype):
        return col, "boolean", None
    if ptypes.is_numeric_dtype(col.dtype):
        if raw is not None:
            codes = _text_cells(raw, na_lower)
            example = has_leading_zero_codes(codes)
            if example is not None:
                _record_codes(report, name, codes, example)
                return codes.astype("str"), _text_kind(codes), None
        col = col.astype("float64") if col.dtype.kind not in "iu" else col
        vals = col.to_numpy(dtype="float64", na_value=np.nan)
        kind = "integer" if col.dtype.kind in "iu" or is_integral(vals) else "numeric"
        return col, kind, None

    # object / str: Python bools with missing values, huge ints, or text
    if col.notna().any() and ptypes.infer_dtype(col, skipna=True) == "boolean":
        return col.astype("boolean"), "boolean", None
    text = _text_cells(col, na_lower)
    present = text.notna()
    n_present = int(present.sum())
    if n_present == 0:
        return pd.Series(np.nan, index=col.index, dtype="float64"), "numeric", None

    spellings = boolean_spellings(text)
    if spellings is not None:
        return _clean_booleans(name, text, spellings, report)

    with_unit = parse_unit_numbers(text, decimal, thousands)
    if with_unit is not None:
        _record_unit(report, name, with_unit)
        vals = with_unit.values.to_numpy()
        return (
            with_unit.values,
            "integer" if is_integral(vals) else "numeric",
            _stray(with_unit.bad),
        )

    # mostly numbers -> numeric, stray texts -> NaN; codes with leading zeros stay text
    nums = _numbers(text, decimal, thousands)
    ok = nums.notna() & present
    n_ok = int(ok.sum())
    if n_ok and n_ok >= COERCE_MIN_FRACTION * n_present:
        example = has_leading_zero_codes(text[ok])
        if example is not None:
            _record_codes(report, name, text, example)
            return text.astype("str"), _text_kind(text), None
        nums = nums.astype("float64").where(ok)
        vals = nums.to_numpy(dtype="float64", na_value=np.nan)
        kind = "integer" if is_integral(vals) else "numeric"
        return nums, kind, _stray(text[present & ~ok])

    dates = parse_dates(text)
    if dates is not None:
        _record_dates(report, name, dates, n_present)
        return dates.values, "date", _stray(dates.bad)

    return text.astype("str"), _text_kind(text), None


def _clean_booleans(name: str, text: pd.Series, spellings, report: ParseReport):
    """A yes/no column: as written (two spellings), letter cases unified, or True/False."""
    present = text.notna()
    if spellings.kind == "as written":
        return text.astype("str"), "categorical", None
    report.booleans[name] = dict(spellings.counts)
    if spellings.kind == "case":
        out = text.replace(spellings.mapping)
        n = sum(spellings.counts[s] for s in spellings.mapping)
        pairs = ", ".join(f"{_q(a)} as {_q(b)}" for a, b in spellings.mapping.items())
        report.record(
            name,
            "spellings unified",
            n,
            f"Column {_q(name)}: {_count(n, 'cell')} written in another letter case were "
            f"read as the column's usual spelling ({pairs}).",
        )
        return out.astype("str"), "categorical", None
    lowered = text.str.lower()
    out = pd.Series(pd.NA, index=text.index, dtype="boolean")
    out[present] = lowered[present].isin(TRUE_SPELLINGS)
    if not out.isna().any():
        out = out.astype(bool)
    n_true = int(out.sum())
    n_false = int(present.sum()) - n_true
    shown = ", ".join(_q(s) for s in list(spellings.counts)[:8])
    if len(spellings.counts) > 8:
        shown += ", ..."
    report.record(
        name,
        "yes/no spellings normalised",
        int(present.sum()),
        f"Column {_q(name)}: {len(spellings.counts)} spellings of yes/no ({shown}) were "
        f"read as True ({n_true:,} cells) and False ({n_false:,} cells).",
    )
    return out, "boolean", None


def _record_codes(report: ParseReport, name: str, codes: pd.Series, example: str) -> None:
    report.codes[name] = example
    n = int(codes.str.match(r"0\d").fillna(False).astype(bool).sum())
    report.record(
        name,
        "codes kept as text",
        n,
        f"Column {_q(name)}: {_count(n, 'code')} with leading zeros such as {_q(example)} "
        "were kept as text (a category), not read as numbers.",
    )


def _record_unit(report: ParseReport, name: str, found) -> None:
    report.units[name] = found.unit
    value = found.values[found.values.notna()]
    idx = found.values.index[found.values.notna()]
    shown = ""
    if len(value):
        first = float(found.values[idx[0]])
        shown = f" ({_q(found.example)} is {first:g})" if found.example else ""
    if found.unit == "%":
        what, change = "percentages", "percent read as numbers"
        tail = f" were read as numbers in percent{shown}."
    else:
        what, change = f"amounts in {found.unit}", f"amounts in {found.unit} read as numbers"
        tail = f" were read as numbers{shown}; the unit is {found.unit}."
    report.record(
        name,
        change,
        found.n_with_unit,
        f"Column {_q(name)}: {found.n_with_unit:,} {what} such as {_q(found.example)}{tail}",
    )


def _record_dates(report: ParseReport, name: str, dates, n_present: int) -> None:
    report.dates[name] = dates.description
    n = n_present - len(dates.bad)
    ambiguous = (
        " Every day is 12 or less, so the order is a guess: day first." if dates.ambiguous else ""
    )
    report.record(
        name,
        "dates",
        n,
        f"Column {_q(name)}: {_count(n, 'date')} ({dates.description}, such as "
        f"{_q(dates.example)}) are used as numbers: days since 1970-01-01.{ambiguous} "
        "Leave the column out on the Data page if the date should not be a feature.",
    )


def clean_columns(
    df: pd.DataFrame,
    names: list[str],
    raw: dict[str, pd.Series],
    na_lower: frozenset[str],
    dec: str,
    thou: str | None,
    report: ParseReport,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every column through :func:`_clean_column`; stray texts read as missing are recorded
    in ``report.coerced`` with a warning.  Returns the cleaned frame and each column's kind."""
    cleaned: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    for col_name in names:
        series, kind, info = _clean_column(
            col_name, df[col_name], raw.get(col_name), na_lower, dec, thou, report
        )
        cleaned[col_name] = series
        kinds[col_name] = kind
        if info:
            report.coerced[col_name] = info
            ex = ", ".join(_q(e) for e in info["examples"])
            n = info["count"]
            noun = "a date" if kind == "date" else "a number"
            nouns = "dates" if kind == "date" else "numbers"
            if n == 1:
                what = f"1 value is not {noun} ({ex}); it was read as missing."
            else:
                what = f"{n} values are not {nouns} (e.g. {ex}); they were read as missing."
            report.record(
                col_name, "stray text read as missing", n, f"Column {_q(col_name)}: {what}"
            )
    return pd.DataFrame(cleaned, index=df.index), kinds
