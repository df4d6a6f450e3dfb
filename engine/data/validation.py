"""Validation: :func:`make_dataset` turns a DataFrame and a target column into a
:class:`Dataset` (``X`` float64 C-contiguous, ``y`` int64 class codes or float64 values,
categorical features as integer codes plus their labels)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from engine.data.errors import DataError, _inf_error, _names, _q

#: Default limit on distinct values of a categorical feature in :func:`make_dataset`.
MAX_CATEGORIES = 50
#: An integer-valued numeric target with at most this many distinct values is a class label.
MAX_CLASSES_INFERRED = 20


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
    task = _check_options(df, task, missing, min_class_count, max_categories)
    names, by_name, target, categorical, feat_names = _check_columns(
        df, target, categorical, features
    )
    warn: list[str] = []
    n_rows = len(df)
    tcol = _target_column(df[by_name[target]], target, task)
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
    cols = _feature_columns(df, by_name, feat_names, warn)
    _check_infinite(target, tcol, cols)
    rows = _complete_rows(target, tcol, cols, missing, n_rows, warn)
    y, classes, task = _encode_target(tcol, rows, target, task, min_class_count)
    X, fnames, is_cat, categories = _encode_features(cols, rows, categorical, max_categories, warn)
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


def _check_options(df, task, missing, min_class_count, max_categories) -> str | None:
    """DataError (TypeError for ``df``) for an invalid option; returns ``task`` with
    ``'auto'``/``''`` as ``None``."""
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
    return task


def _check_columns(df, target, categorical, features):
    """The column names (str), a map to the frame's own labels, the target name and the
    categorical and feature column lists; DataError for a repeated or unknown name or an
    empty table."""
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
    return names, by_name, target, categorical, feat_names


def _target_column(series: pd.Series, target: str, task: str | None) -> _Column:
    """The target as a :class:`_Column`; DataError when it is empty, or not numeric for
    regression."""
    tcol = _as_column(target, series)
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


def _feature_columns(df, by_name, feat_names, warn: list[str]) -> dict[str, _Column]:
    """The feature columns with at least one value (all-empty ones are left out with a
    warning); DataError when none is left."""
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
    return cols


def _check_infinite(target: str, tcol: _Column, cols: dict[str, _Column]) -> None:
    """DataError naming the numeric columns (target first) that hold inf or -inf."""
    infs = []
    for cname, col in [(target, tcol), *cols.items()]:
        if col.kind == "numeric":
            n_inf = int(np.isinf(col.values).sum())
            if n_inf:
                infs.append((cname, n_inf))
    if infs:
        raise _inf_error(infs)


def _complete_rows(target, tcol, cols, missing: str, n_rows: int, warn: list[str]) -> np.ndarray:
    """Indices (int64) of the rows without a missing value in the used columns.  With
    ``missing='error'`` any missing value raises DataError; with ``'drop'`` the dropped
    rows are counted in a warning (DataError when every row has one)."""
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
    return np.flatnonzero(~miss)


def _encode_target(tcol: _Column, rows: np.ndarray, target: str, task, min_class_count: int):
    """``(y, classes, task)``: the task inferred when ``None``; float64 ``y`` and ``None``
    for regression, int64 codes and their labels (object array) for classification.
    DataError for a constant target or a class with fewer than ``min_class_count`` rows."""
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
        return np.ascontiguousarray(tcol.values[rows], dtype=np.float64), None, task
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
    return y, classes, task


def _too_many_categories(fname: str, col: _Column, labels: list[str], max_categories: int):
    """The DataError for a categorical feature with more than ``max_categories`` values."""
    examples = ", ".join(_q(v) for v in labels[:2])
    if col.kind == "numeric":  # a number column the caller marked as categorical
        return DataError(
            f"Column {_q(fname)} is marked as categorical but has {len(labels)} "
            f"different values (e.g. {examples}), too many for a category (the limit "
            f"is {max_categories}). Unmark it to use it as a number, leave it out if "
            "it is an ID, or raise the limit (max_categories).",
            column=fname,
        )
    return DataError(
        f"Column {_q(fname)} has {len(labels)} different values (e.g. {examples}), "
        f"too many for a category (the limit is {max_categories}). If it is an ID "
        "or a name, leave it out; otherwise raise the limit (max_categories).",
        column=fname,
    )


def _encode_features(cols, rows, categorical, max_categories: int, warn: list[str]):
    """``(X, feature_names, is_categorical, categories)`` of the kept rows: numbers as they
    are, categorical columns as codes with their labels; constant columns are left out with
    a warning (DataError when none is left)."""
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
            raise _too_many_categories(fname, col, labels, max_categories)
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
    return X, fnames, is_cat, categories
