"""Validation: :func:`make_dataset` turns a DataFrame and a target column into a
:class:`Dataset` (``X`` float64 C-contiguous, ``y`` int64 class codes or float64 values,
categorical features as integer codes plus their labels)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from engine.data.columns import check_infinite, feature_columns, target_column
from engine.data.dataset import Dataset
from engine.data.encoding import encode_features, encode_target, handle_small_classes
from engine.data.errors import DataError, _names, _q, _rows
from engine.data.options import (
    MANY_LEVEL_OPTIONS,
    MAX_CATEGORIES,
    MISSING_CHOICES,
    MISSING_LABEL,
    MISSING_OPTIONS,
    SMALL_CLASS_OPTIONS,
)
from engine.data.values import identifier_columns

__all__ = ["Dataset", "make_dataset"]


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
    tcol = target_column(df[by_name[target]], target, task)
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
    cols = feature_columns(df, by_name, feat_names, warn, left_out)
    check_infinite(target, tcol, cols)
    steps: list[tuple[str, int]] = []
    rows = _rows_with_target(target, tcol, n_rows, warn, steps)
    rows = _complete_rows(target, cols, rows, missing, n_rows, warn, steps)
    y, classes, task = encode_target(tcol, rows, target, task, steps, n_rows)
    if task == "classification":
        rows, y, classes = handle_small_classes(
            tcol, rows, y, classes, target, min_class_count, small_classes, warn, steps
        )
    X, fnames, is_cat, categories = encode_features(
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
    _require_columns(categorical, names, "Column {} (marked as categorical)")
    if features is None:
        feat_names = [n for n in names if n != target]
    else:
        feat_names = [str(c) for c in ([features] if isinstance(features, str) else features)]
        _require_columns(feat_names, names, "Feature column {}")
        feat_names = [n for n in dict.fromkeys(feat_names) if n != target]
    return names, by_name, target, categorical, feat_names


def _require_columns(wanted: list[str], names: list[str], described: str) -> None:
    """Raise :class:`DataError` naming the columns of ``wanted`` that are not in ``names``
    (``described``: how the message names them, ``{}`` standing for the names)."""
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise DataError(
            f"{described.format(_names(unknown))} is not in the data. "
            f"Available columns: {_names(names, 12)}.",
            column=unknown[0] if len(unknown) == 1 else None,
        )


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
