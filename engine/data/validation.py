"""Validation: :func:`make_dataset` turns a DataFrame and a target column into a
:class:`Dataset` (``X`` float64 C-contiguous, ``y`` int64 class codes or float64 values,
categorical features as integer codes plus their labels)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from engine.data.errors import DataError, _inf_error, _names, _q
from engine.data.values import identifier_columns

#: Default limit on distinct values of a categorical feature in :func:`make_dataset`.
MAX_CATEGORIES = 50
#: An integer-valued numeric target with at most this many distinct values is a class label.
MAX_CLASSES_INFERRED = 20


@dataclass(frozen=True, eq=False)
class Dataset:
    """A validated, fully numeric learning problem.

    Attributes:
        X: float64, C-contiguous, shape ``(n_samples, n_features)``, no inf.  NaN only
            when made with ``missing='keep'`` (a missing value: numeric features and
            categorical codes alike).  Categorical features hold integer codes ``0..k-1``
            (as floats).
        y: shape ``(n_samples,)``; int64 class codes ``0..K-1`` (classification) or
            float64 values (regression); never missing.
        feature_names: ``n_features`` column names (str).
        is_categorical: bool, shape ``(n_features,)``.
        categories: feature index -> labels (list[str]) of codes ``0..k-1``, for every
            categorical feature, as written in the file.
        classes_: object array of ``K`` class labels (str, as written) in code order, or
            ``None`` for regression.
        task: ``'classification'`` or ``'regression'``.
        target: name of the target column.
        warnings: plain-language notes about every automatic change (rows dropped,
            columns left out, levels grouped, small classes, conflicting duplicates).
        n_dropped_rows: rows of the table not in ``X`` (the sum of ``row_steps``).
        row_steps: ``(reason, rows dropped)`` for each step that dropped rows, in order
            (``'missing target'``, ``'missing values'``, ``'small classes'``).
        left_out: column -> why it is not a feature (``'identifier'``, ``'empty'``,
            ``'constant'``, ``'too many levels'``), for the columns left out automatically.
        missing: how missing feature values were treated (``'error'``, ``'drop'`` or
            ``'keep'``).
        conflicts: when rows with identical features have different targets:
            ``{'rows': int, 'groups': int, 'best': float}`` where ``best`` is the best
            training accuracy (classification) or R² (regression) any model can reach,
            each group predicting its most common class (its mean); else ``None``.

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
    row_steps: tuple[tuple[str, int], ...] = ()
    left_out: dict[str, str] = field(default_factory=dict)
    missing: str = "error"
    conflicts: dict | None = None

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

    @property
    def n_missing(self) -> int:
        """Number of missing cells (NaN) in ``X`` (0 unless made with ``missing='keep'``)."""
        return int(np.isnan(self.X).sum())

    def feature_frame(self) -> pd.DataFrame:
        """Features as a DataFrame for display: numeric columns as float64, categorical
        columns as pandas ``Categorical`` holding their labels (never codes); missing
        values are NaN."""
        cols: dict[str, Any] = {}
        for j, fname in enumerate(self.feature_names):
            if self.is_categorical[j]:
                codes = np.where(np.isnan(self.X[:, j]), -1, self.X[:, j]).astype(np.int64)
                cols[fname] = pd.Categorical.from_codes(codes, categories=self.categories[j])
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
    if ptypes.is_datetime64_any_dtype(dtype):
        stamps = s.dt.tz_convert("UTC").dt.tz_localize(None) if s.dt.tz is not None else s
        days = (stamps - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)
        return _Column("numeric", days.to_numpy(dtype="float64", na_value=np.nan), missing)
    if ptypes.is_timedelta64_dtype(dtype):
        days = s / pd.Timedelta(days=1)
        return _Column("numeric", days.to_numpy(dtype="float64", na_value=np.nan), missing)
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
            return _Column("bool", vals, missing)
        if inferred in ("integer", "floating", "mixed-integer-float", "decimal"):
            vals = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
            return _Column("numeric", vals, missing | np.isnan(vals))
    values = np.empty(len(s), dtype=object)
    values[~missing] = s[~missing].astype("str").to_numpy(dtype=object)
    return _Column("text", values, missing)


def _encode(col: _Column, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
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
        labels = [_num_label(v) for v in uniq]
        if len(set(labels)) != len(labels):  # extremely close floats: keep them apart
            labels = [repr(float(v)) for v in uniq]
        codes[~miss] = np.searchsorted(uniq, vals)
        return codes, labels
    uniq = list(pd.unique(vals))
    if col.order is not None:
        present = set(uniq)
        labels = [c for c in col.order if c in present]
        known = set(labels)
        labels += sorted((str(u) for u in uniq if u not in known), key=_natural_key)
    else:
        labels = sorted((str(u) for u in uniq), key=_natural_key)
    codes[~miss] = pd.Categorical(vals, categories=labels).codes
    return codes, labels


MISSING_OPTIONS = ("error", "drop", "keep")
SMALL_CLASS_OPTIONS = ("keep", "drop")
MANY_LEVEL_OPTIONS = ("other", "leave_out", "error")
#: Label of the level grouping the rarest levels of a many-level categorical column.
OTHER_LEVEL = "other"
#: The Data page's names for the settings, so that messages name what the user can change
#: in the app first (the parameter follows in parentheses); pages/data.py draws its
#: widgets with these labels.
LEVEL_CAP_LABEL = "Level cap"
MANY_LEVELS_LABEL = "Categorical columns above the cap"
MANY_LEVEL_CHOICES = {
    "other": "keep the most frequent levels, group the rest as 'other'",
    "leave_out": "leave the column out",
}
SMALL_CLASSES_LABEL = "Classes with fewer than 2 rows"
SMALL_CLASS_CHOICES = {
    "keep": "keep them (splits are then not stratified)",
    "drop": "drop their rows",
}
MISSING_LABEL = "Rows with missing values"
#: short enough to fit the sidebar's select box (about 24 characters at 1280 px wide)
MISSING_CHOICES = {
    "keep": "keep (trees route them)",
    "drop": "drop those rows",
    "error": "stop with an error",
}
#: the sidebar's default: tree methods handle missing values themselves (issue 14)
DEFAULT_MISSING = "keep"


def make_dataset(
    df: pd.DataFrame,
    target: str,
    *,
    task: str | None = None,
    categorical: Sequence[str] | str | None = None,
    missing: str = "error",
    min_class_count: int = 2,
    small_classes: str = "keep",
    max_categories: int = MAX_CATEGORIES,
    many_levels: str = "other",
    features: Sequence[str] | None = None,
) -> Dataset:
    """Validate ``df`` and turn it into a :class:`Dataset` predicting ``target``.

    Args:
        df: the table (e.g. from :func:`load_csv`).
        target: name of the column to predict.
        task: ``'classification'``, ``'regression'`` or ``None``/``'auto'`` to infer:
            a text or yes/no target, or a whole-number target with at most
            :data:`MAX_CLASSES_INFERRED` (20) distinct values, is classification,
            unless every row has its own value (more than 2 rows: e.g. whole-dollar
            prices); anything else numeric is regression.
        categorical: extra column names to treat as categories (e.g. a 0/1/2 code);
            text and yes/no columns are always categorical.
        missing: what to do with missing feature values: ``'error'`` (default) raises;
            ``'drop'`` removes those rows; ``'keep'`` leaves them in ``X`` as NaN (for
            trees that route missing values).  Rows with a missing *target* are always
            dropped and counted.
        min_class_count: (classification) rows a class needs for a stratified train/test
            split (2).
        small_classes: a class with fewer than ``min_class_count`` rows is ``'keep'``
            (kept, with a warning: splits then fall back to unstratified) or ``'drop'``
            (its rows are dropped and counted).
        max_categories: the level cap: most distinct values of a categorical feature.
        many_levels: a categorical feature above the cap: ``'other'`` keeps its
            ``max_categories - 1`` most frequent levels and groups the rest as
            ``'other'``; ``'leave_out'`` leaves the column out; ``'error'`` raises.
            All are reported.
        features: columns to use as features.  Default: every column except the target
            and the columns that look like row identifiers (names, IDs, row numbers,
            free text; see :func:`engine.data.values.identifier_reason`), which are left
            out with a warning.  Pass them here to use them.

    Returns:
        a :class:`Dataset`.  Categories (and classes) are the values as written, sorted:
        numbers by value, text alphabetically with numeric-looking labels first, a pandas
        Categorical column by its own category order.  Date columns become days since
        1970-01-01 (float).  Constant and all-empty feature columns are left out with a
        warning.  Every row dropped is counted in ``row_steps`` with its reason.

    Raises:
        DataError: unknown target/feature/categorical column, target all missing or
            constant, no usable feature, missing feature values (with
            ``missing='error'``), no rows left, infinite values, fewer than two classes
            left, too many categories (with ``many_levels='error'``), regression on a
            non-numeric target, unusable column types, or an invalid option.
    """
    task = _check_options(
        df, task, missing, min_class_count, max_categories, small_classes, many_levels
    )
    names, by_name, target, categorical, feat_names = _check_columns(
        df, target, categorical, features
    )
    warn: list[str] = []
    left_out: dict[str, str] = {}
    if features is None:
        feat_names = _leave_out_identifiers(df, by_name, target, feat_names, warn, left_out)
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
    cols = _feature_columns(df, by_name, feat_names, warn, left_out)
    _check_infinite(target, tcol, cols)
    steps: list[tuple[str, int]] = []
    rows = _rows_with_target(target, tcol, n_rows, warn, steps)
    rows = _complete_rows(target, cols, rows, missing, n_rows, warn, steps)
    y, classes, task = _encode_target(tcol, rows, target, task, steps, n_rows)
    if task == "classification":
        rows, y, classes = _small_classes(
            tcol, rows, y, classes, target, min_class_count, small_classes, warn, steps
        )
    X, fnames, is_cat, categories = _encode_features(
        cols, rows, categorical, max_categories, many_levels, warn, left_out
    )
    conflicts = _conflicts(X, y, task, target, warn)
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
        row_steps=tuple(steps),
        left_out=left_out,
        missing=missing,
        conflicts=conflicts,
    )


def _check_options(
    df, task, missing, min_class_count, max_categories, small_classes, many_levels
) -> str | None:
    """DataError (TypeError for ``df``) for an invalid option; returns ``task`` with
    ``'auto'``/``''`` as ``None``."""
    if missing not in MISSING_OPTIONS:
        raise DataError(
            f"missing={missing!r} is not an option: use 'error' (stop when values are "
            "missing), 'drop' (drop rows with missing values) or 'keep' (keep them as NaN)."
        )
    if small_classes not in SMALL_CLASS_OPTIONS:
        raise DataError(
            f"small_classes={small_classes!r} is not an option: use 'keep' (keep classes "
            "with few rows, with a warning) or 'drop' (drop their rows)."
        )
    if many_levels not in MANY_LEVEL_OPTIONS:
        raise DataError(
            f"many_levels={many_levels!r} is not an option: use 'other' (group the rarest "
            "levels), 'leave_out' (leave the column out) or 'error'."
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


def _leave_out_identifiers(df, by_name, target, feat_names, warn, left_out) -> list[str]:
    """The feature names without the identifier-like columns (each left out with a
    warning), unless that leaves none: then they are kept, with a warning."""
    found = identifier_columns(df[[by_name[n] for n in feat_names]], exclude=[target])
    if not found:
        return feat_names
    kept = [n for n in feat_names if n not in found]
    if not kept:
        warn.append(
            f"{_names(list(found))} {'look' if len(found) > 1 else 'looks'} like "
            f"{'identifiers' if len(found) > 1 else 'an identifier'} but "
            f"{'are' if len(found) > 1 else 'is'} the only feature"
            f"{'s' if len(found) > 1 else ''}, so {'they are' if len(found) > 1 else 'it is'} "
            "used."
        )
        return feat_names
    for name, reason in found.items():
        left_out[name] = "identifier"
        warn.append(
            f"Column {_q(name)} looks like an identifier ({reason}) and was left out of "
            "the features. To use it, press 'Use as a feature' on the Data page (features= "
            "in the library)."
        )
    return kept


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


def _feature_columns(df, by_name, feat_names, warn: list[str], left_out) -> dict[str, _Column]:
    """The feature columns with at least one value (all-empty ones are left out with a
    warning); DataError when none is left."""
    cols: dict[str, _Column] = {}
    empty = []
    dates = []
    for fname in feat_names:
        series = df[by_name[fname]]
        col = _as_column(fname, series)
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


def _rows(n: int) -> str:
    return f"{n:,} row{'s' if n != 1 else ''}"


def _rows_with_target(target, tcol, n_rows: int, warn, steps) -> np.ndarray:
    """Indices of the rows whose target is present; the others are dropped and counted."""
    n_missing = int(tcol.missing.sum())
    if n_missing:
        verb = "has" if n_missing == 1 else "have"
        warn.append(
            f"{n_missing:,} of {n_rows:,} rows {verb} no value in the target {_q(target)} "
            f"and {'were' if n_missing != 1 else 'was'} dropped."
        )
        steps.append(("missing target", n_missing))
    return np.flatnonzero(~tcol.missing)


def _complete_rows(target, cols, rows, missing: str, n_rows: int, warn, steps) -> np.ndarray:
    """The rows of ``rows`` to use given the feature values missing there.  ``'error'``
    raises DataError naming the columns; ``'drop'`` drops and counts them (DataError
    when none is left); ``'keep'`` keeps them all and says how many have gaps."""
    miss_by_col = {c: col.missing[rows] for c, col in cols.items()}
    counts = [(c, int(m.sum())) for c, m in miss_by_col.items()]
    counts = sorted([(c, n) for c, n in counts if n], key=lambda cn: -cn[1])
    if not counts:
        return rows
    miss = np.zeros(len(rows), dtype=bool)
    for m in miss_by_col.values():
        miss |= m
    n_missing_rows = int(miss.sum())
    parts = ", ".join(f"{_q(c)} ({n:,})" for c, n in counts[:6])
    more = f" and {len(counts) - 6} more columns" if len(counts) > 6 else ""
    if missing == "error":
        one = len(counts) == 1
        if one:
            c, n = counts[0]
            what = f"Column {_q(c)} has {n:,} missing value{'s' if n != 1 else ''}"
        else:
            listed = ", ".join(f"{_q(c)} ({n} missing)" for c, n in counts[:8])
            more8 = f" and {len(counts) - 8} more columns" if len(counts) > 8 else ""
            what = f"Columns {listed}{more8} have missing values"
        raise DataError(
            f"{what} ({n_missing_rows:,} of {len(rows):,} rows affected). Choose "
            f"'{MISSING_CHOICES['drop']}' or '{MISSING_CHOICES['keep']}' under "
            f"'{MISSING_LABEL}' in the sidebar (missing='drop' or 'keep'), or fill them in.",
            column=counts[0][0] if one else None,
        )
    if missing == "keep":
        n_cells = sum(n for _, n in counts)
        warn.append(
            f"{n_missing_rows:,} of {len(rows):,} rows {'has' if n_missing_rows == 1 else 'have'} "
            f"missing values ({n_cells:,} cell{'s' if n_cells != 1 else ''}, in {parts}{more}); "
            f"{'it is' if n_missing_rows == 1 else 'they are'} kept, with the values missing (NaN)."
        )
        return rows
    if n_missing_rows == len(rows):
        raise DataError(
            f"Every row has a missing value (in {parts}{more}), so no rows are left after "
            f"dropping them. Choose '{MISSING_CHOICES['keep']}' under '{MISSING_LABEL}' in "
            "the sidebar (missing='keep'), "
            "leave out the columns with many missing values, or fill them in."
        )
    worst = counts[0][0]
    others = np.zeros(len(rows), dtype=bool)
    for c, m in miss_by_col.items():
        if c != worst:
            others |= m
    saved = int((miss_by_col[worst] & ~others).sum())
    hint = ""
    if saved == n_missing_rows:
        hint = f" Leaving {_q(worst)} out would keep all of them."
    elif saved >= max(1, 0.1 * n_missing_rows):
        hint = f" Leaving {_q(worst)} out would keep {saved:,} of them."
    warn.append(
        f"{n_missing_rows:,} of {len(rows):,} rows had missing values (in {parts}{more}) "
        f"and {'was' if n_missing_rows == 1 else 'were'} dropped.{hint}"
    )
    steps.append(("missing values", n_missing_rows))
    return rows[~miss]


def _label_of(tcol: _Column, value) -> str:
    if tcol.kind == "numeric":
        return _num_label(value)
    if tcol.kind == "bool":
        return "True" if value else "False"
    return str(value)


#: How a row step reads in a message on too few rows or values: ``(singular, plural)``.
_STEP_WORDS = {
    "missing target": ("has no target value", "have no target value"),
    "missing values": ("has missing feature values", "have missing feature values"),
}


def _dropped_clause(steps, n_rows: int) -> str:
    """'27 of 40 rows have no target value and were dropped' for the steps so far, or ''."""
    parts = []
    for reason, n in steps:
        one, many = _STEP_WORDS.get(reason, ("was dropped", "were dropped"))
        parts.append(
            f"{n:,} of {n_rows:,} rows {one if n == 1 else many} and "
            f"{'was' if n == 1 else 'were'} dropped"
        )
    return "; ".join(parts)


def _encode_target(
    tcol: _Column, rows: np.ndarray, target: str, task, steps=(), n_rows: int | None = None
):
    """``(y, classes, task)``: the task inferred when ``None``; float64 ``y`` and ``None``
    for regression, int64 codes and their labels (object array) for classification.
    DataError for a single row or a constant target, naming the rows dropped before
    (``steps``, of ``n_rows``)."""
    if tcol.kind == "numeric":
        tvals = tcol.values[rows]
        n_distinct = len(np.unique(tvals))
        if task is None:
            integral = bool(np.all(tvals == np.round(tvals)))
            # a value per row (prices, amounts, measurements) is not a set of classes
            all_distinct = n_distinct == len(tvals) and len(tvals) > 2
            task = (
                "classification"
                if integral and n_distinct <= MAX_CLASSES_INFERRED and not all_distinct
                else "regression"
            )
    else:
        task = "classification"
        n_distinct = len(pd.unique(tcol.values[rows]))
    if n_distinct < 2:
        shown = _label_of(tcol, tcol.values[rows][0])
        dropped = _dropped_clause(steps, len(rows) if n_rows is None else n_rows)
        fix = (
            "Fill in the missing values, or pick another target."
            if dropped
            else "Pick another target."
        )
        if len(rows) == 1:
            where = f" ({dropped})" if dropped else ""
            raise DataError(
                f"Only 1 row is left to learn from{where}: its target {_q(target)} is "
                f"{_q(shown)}, so there is nothing to predict. A tree needs rows with at "
                "least two different target values. "
                + (fix if dropped else "Add more rows to the file."),
                column=target,
            )
        if dropped:
            raise DataError(
                f"The target column {_q(target)} has the same value ({_q(shown)}) in all "
                f"{len(rows):,} rows left ({dropped}), so there is nothing to predict. {fix}",
                column=target,
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
    return y, classes, task


def _looks_numeric(label: str) -> bool:
    try:
        float(label)
    except ValueError:
        return False
    return True


def _small_classes(tcol, rows, y, classes, target, min_class_count, small_classes, warn, steps):
    """Classes with fewer than ``min_class_count`` rows: kept with a warning, or their rows
    dropped and counted (``small_classes='drop'``).  Returns ``(rows, y, classes)``;
    DataError when fewer than two classes are left."""
    counts = np.bincount(y, minlength=len(classes))
    small = [k for k, n in enumerate(counts) if n < min_class_count]
    if not small:
        return rows, y, classes
    labels = [str(c) for c in classes]
    parts = ", ".join(f"{_q(labels[k])} ({_rows(int(counts[k]))})" for k in small[:8])
    more = f" and {len(small) - 8} more" if len(small) > 8 else ""
    one = len(small) == 1
    noun = "Class" if one else "Classes"
    stray = ""
    text_labels = [lab for lab in labels if not _looks_numeric(lab)]
    numeric_small = [labels[k] for k in small if _looks_numeric(labels[k])]
    if numeric_small and len(text_labels) >= 0.5 * len(labels):
        stray = (
            f" {_names(numeric_small)} {'is a number' if len(numeric_small) == 1 else 'are numbers'}"
            " among text labels: check the file for a typo."
        )
    if small_classes == "keep":
        warn.append(
            f"{noun} {parts}{more} of the target {_q(target)} "
            f"{'has' if one else 'have'} fewer than the {min_class_count} rows a stratified "
            f"train/test split needs per class; {'it is' if one else 'they are'} kept, and "
            "splits on this data are not stratified (each page says so). To remove "
            f"{'its' if one else 'their'} rows, choose '{SMALL_CLASS_CHOICES['drop']}' under "
            f"'{SMALL_CLASSES_LABEL}' on the Data page (small_classes='drop').{stray}"
        )
        return rows, y, classes
    keep = ~np.isin(y, small)
    n_drop = int((~keep).sum())
    rows = rows[keep]
    if len(classes) - len(small) < 2:
        raise DataError(
            f"Dropping the small {'class' if one else 'classes'} {parts}{more} of the target "
            f"{_q(target)} leaves fewer than two classes, so there is nothing to predict. "
            f"Choose '{SMALL_CLASS_CHOICES['keep'].split(' (')[0]}' under '{SMALL_CLASSES_LABEL}' "
            "on the Data page "
            "(small_classes='keep'), or pick another target."
        )
    warn.append(
        f"{noun} {parts}{more} of the target {_q(target)} "
        f"{'has' if one else 'have'} fewer than {min_class_count} rows; "
        f"{_rows(n_drop)} {'was' if n_drop == 1 else 'were'} dropped.{stray}"
    )
    steps.append(("small classes", n_drop))
    codes, new_labels = _encode(tcol, rows)
    y = np.ascontiguousarray(codes, dtype=np.int64)
    classes = np.empty(len(new_labels), dtype=object)
    classes[:] = new_labels
    return rows, y, classes


def _too_many_categories(fname: str, col: _Column, labels: list[str], max_categories: int):
    """The DataError for a categorical feature with more than ``max_categories`` values."""
    examples = ", ".join(_q(v) for v in labels[:2])
    if col.kind == "numeric":  # a number column the caller marked as categorical
        return DataError(
            f"Column {_q(fname)} is marked as categorical but has {len(labels)} "
            f"different values (e.g. {examples}), too many for a category (the limit "
            f"is {max_categories}). On the Data page, take it out of 'Treat these numeric "
            "columns as categorical' to use it as a number, add it to 'Leave out these "
            f"columns' if it is an ID, or raise the '{LEVEL_CAP_LABEL}' (max_categories).",
            column=fname,
        )
    return DataError(
        f"Column {_q(fname)} has {len(labels)} different values (e.g. {examples}), "
        f"too many for a category (the limit is {max_categories}). If it is an ID "
        "or a name, add it to 'Leave out these columns' on the Data page; otherwise raise "
        f"the '{LEVEL_CAP_LABEL}' there (max_categories).",
        column=fname,
    )


def _group_rare_levels(codes: np.ndarray, labels: list[str], keep: int):
    """Keep the ``keep`` most frequent levels (ties: label order) and map the others to
    one level 'other' (last).  Returns ``(codes, labels, n_grouped_levels, n_rows)``."""
    present = ~np.isnan(codes)
    counts = np.bincount(codes[present].astype(np.int64), minlength=len(labels))
    order = sorted(range(len(labels)), key=lambda k: (-counts[k], k))
    kept = sorted(order[:keep])
    other = OTHER_LEVEL
    while other in labels:
        other = f"({other})"
    new_of = np.full(len(labels), len(kept), dtype=np.float64)
    new_of[kept] = np.arange(len(kept), dtype=np.float64)
    out = np.full(len(codes), np.nan)
    out[present] = new_of[codes[present].astype(np.int64)]
    n_rows = int(counts.sum() - counts[kept].sum())
    return out, [labels[k] for k in kept] + [other], len(labels) - len(kept), n_rows


def _encode_features(
    cols, rows, categorical, max_categories: int, many_levels: str, warn, left_out
):
    """``(X, feature_names, is_categorical, categories)`` of the kept rows: numbers as they
    are, categorical columns as codes with their labels (NaN where missing); constant
    columns are left out with a warning (DataError when none is left); columns above the
    level cap are grouped or left out (``many_levels``)."""
    cat_set = set(categorical)
    blocks: list[np.ndarray] = []
    fnames: list[str] = []
    is_cat: list[bool] = []
    categories: dict[int, list[str]] = {}
    constant: list[str] = []
    for fname, col in cols.items():
        vals = col.values[rows]
        if col.kind == "numeric" and fname not in cat_set:
            observed = vals[~col.missing[rows]]
            if observed.size == 0 or observed.min() == observed.max():
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
            if many_levels == "error":
                raise _too_many_categories(fname, col, labels, max_categories)
            if many_levels == "leave_out":
                left_out[fname] = "too many levels"
                warn.append(
                    f"Column {_q(fname)} has {len(labels):,} levels, more than the cap of "
                    f"{max_categories}, and was left out. To use it, raise the "
                    f"'{LEVEL_CAP_LABEL}' on the Data page (max_categories), or choose "
                    f"\"{MANY_LEVEL_CHOICES['other']}\" under '{MANY_LEVELS_LABEL}' "
                    "(many_levels='other')."
                )
                continue
            n_levels = len(labels)
            codes, labels, n_grouped, n_grouped_rows = _group_rare_levels(
                codes, labels, max_categories - 1
            )
            warn.append(
                f"Column {_q(fname)} has {n_levels:,} levels, more than the cap of "
                f"{max_categories}: the {max_categories - 1} most frequent are kept and the "
                f"other {n_grouped:,} levels ({_rows(n_grouped_rows)}) are grouped as "
                f"{_q(labels[-1])}. To change this, raise the '{LEVEL_CAP_LABEL}' on the "
                f"Data page (max_categories), or choose '{MANY_LEVEL_CHOICES['leave_out']}' under "
                f"'{MANY_LEVELS_LABEL}' (many_levels='leave_out')."
            )
        categories[len(fnames)] = labels
        blocks.append(codes)
        fnames.append(fname)
        is_cat.append(True)
    if constant:
        for fname in constant:
            left_out[fname] = "constant"
        warn.append(
            f"{'Columns' if len(constant) > 1 else 'Column'} {_names(constant)} "
            f"{'have' if len(constant) > 1 else 'has'} the same value in every row and "
            f"{'were' if len(constant) > 1 else 'was'} left out."
        )
    if not fnames:
        raise DataError(
            "No feature columns are left: every feature has the same value in every row "
            f"({_names(constant)}) or was left out. Add columns that vary, or pick another "
            "target."
        )
    X = np.empty((len(rows), len(fnames)), dtype=np.float64, order="C")
    for j, block in enumerate(blocks):
        X[:, j] = block
    return X, fnames, is_cat, categories


def _conflicts(X: np.ndarray, y: np.ndarray, task: str, target: str, warn) -> dict | None:
    """Rows whose features are identical (missing values equal) but whose targets differ:
    ``{'rows', 'groups', 'best'}`` with a warning, or ``None``.

    ``best`` is the training accuracy (classification) or R² (regression) of predicting
    each group of identical rows by its most common class (its mean): no model that only
    sees the features can do better.
    """
    if len(y) < 2:
        return None
    keys = pd.util.hash_pandas_object(pd.DataFrame(X), index=False).to_numpy()
    group, sizes = np.unique(keys, return_inverse=True, return_counts=True)[1:]
    if sizes.max() < 2:
        return None
    frame = pd.DataFrame({"g": group, "y": y})
    dup = sizes[group] > 1
    per_group = frame[dup].groupby("g")["y"]
    if task == "classification":
        n_labels = per_group.nunique()
        bad = n_labels[n_labels > 1].index
        if not len(bad):
            return None
        sub = frame[frame["g"].isin(bad)]
        majority = sub.groupby("g")["y"].agg(lambda v: v.value_counts().iloc[0]).sum()
        n_conf = len(sub)
        correct = len(y) - n_conf + int(majority)
        best = correct / len(y)
        warn.append(
            f"{_rows(n_conf)} in {len(bad):,} group{'s' if len(bad) != 1 else ''} have "
            f"identical features but different classes of {_q(target)}: no model can "
            f"tell them apart, so the best training accuracy possible is {best:.1%} "
            f"({correct:,} of {len(y):,} rows, each group predicting its most common class)."
        )
        return {"rows": n_conf, "groups": int(len(bad)), "best": float(best)}
    spread = per_group.nunique()
    bad = spread[spread > 1].index
    if not len(bad):
        return None
    sse = float(((frame["y"] - frame.groupby("g")["y"].transform("mean")) ** 2).sum())
    sst = float(((y - y.mean()) ** 2).sum())
    if sst <= 0:
        return None
    best = 1.0 - sse / sst
    n_conf = int(frame["g"].isin(bad).sum())
    warn.append(
        f"{_rows(n_conf)} in {len(bad):,} group{'s' if len(bad) != 1 else ''} have identical "
        f"features but different values of {_q(target)}: the best training R² possible is "
        f"{best:.3f} (each group predicting its mean)."
    )
    return {"rows": n_conf, "groups": int(len(bad)), "best": float(best)}
