"""Reading the columns of a table for :func:`engine.data.make_dataset`: each column reduced
to numbers, yes/no values or text (:class:`Column`, :func:`read_column`; dates become days
since 1970-01-01), its codes and labels (:func:`column_codes`: labels as written, sorted
numbers first), and the target and feature columns checked (empty, infinite, not numeric
for regression)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from engine.data.errors import DataError, _inf_error, _names, _q


def number_label(v: float) -> str:
    """'3' for 3.0, '0.1' for 0.1."""
    f = float(v)
    if math.isfinite(f) and f == round(f) and abs(f) < 1e15:
        return str(int(f))
    return repr(f)


def natural_key(label: str) -> tuple:
    try:
        value = float(label)
        if math.isnan(value):
            raise ValueError
        return (0, value, label)
    except ValueError:
        return (1, 0.0, label.casefold(), label)


@dataclass
class Column:
    """A column reduced to 'numeric' (float64 values), 'bool' or 'text' (object)."""

    kind: str
    values: np.ndarray  # float64 for numeric/bool (NaN = missing), object for text
    missing: np.ndarray  # bool
    order: list[str] | None = None  # label order for pandas Categorical columns


def read_column(name: str, s: pd.Series) -> Column:
    dtype = s.dtype
    missing = s.isna().to_numpy()
    if isinstance(dtype, pd.CategoricalDtype):
        cats = [str(c) for c in dtype.categories]
        values = np.empty(len(s), dtype=object)
        values[~missing] = s[~missing].astype("str").to_numpy(dtype=object)
        return Column("text", values, missing, order=list(dict.fromkeys(cats)))
    if ptypes.is_bool_dtype(dtype):
        vals = s.to_numpy(dtype="float64", na_value=np.nan)
        return Column("bool", vals, missing)
    if ptypes.is_numeric_dtype(dtype) and not ptypes.is_complex_dtype(dtype):
        vals = s.to_numpy(dtype="float64", na_value=np.nan)
        return Column("numeric", vals, missing)
    if ptypes.is_datetime64_any_dtype(dtype):
        stamps = s.dt.tz_convert("UTC").dt.tz_localize(None) if s.dt.tz is not None else s
        days = (stamps - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)
        return Column("numeric", days.to_numpy(dtype="float64", na_value=np.nan), missing)
    if ptypes.is_timedelta64_dtype(dtype):
        days = s / pd.Timedelta(days=1)
        return Column("numeric", days.to_numpy(dtype="float64", na_value=np.nan), missing)
    if ptypes.is_complex_dtype(dtype) or isinstance(dtype, pd.PeriodDtype):
        raise DataError(
            f"Column {_q(name)} holds periods or complex numbers, which cannot be used "
            "directly. Convert it to numbers or text, or leave it out.",
            column=name,
        )
    # object / str
    if (~missing).any():
        inferred = ptypes.infer_dtype(s, skipna=True)
        if inferred == "boolean":
            vals = s.astype("boolean").to_numpy(dtype="float64", na_value=np.nan)
            return Column("bool", vals, missing)
        if inferred in ("integer", "floating", "mixed-integer-float", "decimal"):
            vals = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
            return Column("numeric", vals, missing | np.isnan(vals))
    values = np.empty(len(s), dtype=object)
    values[~missing] = s[~missing].astype("str").to_numpy(dtype=object)
    return Column("text", values, missing)


def column_codes(col: Column, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Codes (float64; NaN where the value is missing) and labels of ``col`` restricted to
    ``rows``."""
    miss = col.missing[rows]
    codes = np.full(len(rows), np.nan)
    vals = col.values[rows][~miss]
    if col.kind == "bool":
        present = np.unique(vals)
        labels = [("True" if v else "False") for v in present]
        codes[~miss] = np.searchsorted(present, vals)
        return codes, labels
    if col.kind == "numeric":
        uniq = np.unique(vals)
        labels = [number_label(v) for v in uniq]
        if len(set(labels)) != len(labels):  # extremely close floats: keep them apart
            labels = [repr(float(v)) for v in uniq]
        codes[~miss] = np.searchsorted(uniq, vals)
        return codes, labels
    uniq = list(pd.unique(vals))
    if col.order is not None:
        present = set(uniq)
        labels = [c for c in col.order if c in present]
        known = set(labels)
        labels += sorted((str(u) for u in uniq if u not in known), key=natural_key)
    else:
        labels = sorted((str(u) for u in uniq), key=natural_key)
    codes[~miss] = pd.Categorical(vals, categories=labels).codes
    return codes, labels


def target_column(series: pd.Series, target: str, task: str | None) -> Column:
    """The target as a :class:`Column`; DataError when it is empty, or not numeric for
    regression."""
    tcol = read_column(target, series)
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
    return tcol


def feature_columns(df, by_name, feat_names, warn: list[str], left_out) -> dict[str, Column]:
    """The feature columns with at least one value (all-empty ones are left out with a
    warning); DataError when none is left."""
    cols: dict[str, Column] = {}
    empty = []
    dates = []
    for fname in feat_names:
        series = df[by_name[fname]]
        col = read_column(fname, series)
        if col.missing.all():
            empty.append(fname)
            left_out[fname] = "empty"
            continue
        if ptypes.is_datetime64_any_dtype(series.dtype):
            dates.append(fname)
        cols[fname] = col
    if empty:
        warn.append(
            f"{'Columns' if len(empty) > 1 else 'Column'} {_names(empty)} "
            f"{'have' if len(empty) > 1 else 'has'} no values and "
            f"{'were' if len(empty) > 1 else 'was'} left out."
        )
    if dates:
        warn.append(
            f"{'Columns' if len(dates) > 1 else 'Column'} {_names(dates)} "
            f"{'hold dates, used' if len(dates) > 1 else 'holds dates, used'} as numbers: "
            "days since 1970-01-01."
        )
    if not cols:
        raise DataError(
            f"No usable feature columns: {_names(empty)} "
            f"{'are' if len(empty) > 1 else 'is'} empty. Add columns with values."
        )
    return cols


def check_infinite(target: str, tcol: Column, cols: dict[str, Column]) -> None:
    """DataError naming the numeric columns (target first) that hold inf or -inf."""
    infs = []
    for cname, col in [(target, tcol), *cols.items()]:
        if col.kind == "numeric":
            n_inf = int(np.isinf(col.values).sum())
            if n_inf:
                infs.append((cname, n_inf))
    if infs:
        raise _inf_error(infs)
