"""Encoding for :func:`engine.data.make_dataset`: the target as class codes or values (the
task inferred; classes too small for a stratified split kept or dropped) and the features
as numbers or category codes (constant columns left out; the rarest levels of a
many-level column grouped as 'other', or the column left out)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.data.columns import Column, column_codes, number_label
from engine.data.errors import DataError, _names, _q, _rows
from engine.data.options import (
    LEVEL_CAP_LABEL,
    MANY_LEVEL_CHOICES,
    MANY_LEVELS_LABEL,
    MAX_CLASSES_INFERRED,
    OTHER_LEVEL,
    SMALL_CLASS_CHOICES,
    SMALL_CLASSES_LABEL,
)


def _label_of(tcol: Column, value) -> str:
    if tcol.kind == "numeric":
        return number_label(value)
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


def encode_target(
    tcol: Column, rows: np.ndarray, target: str, task, steps=(), n_rows: int | None = None
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
    codes, labels = column_codes(tcol, rows)
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


def handle_small_classes(
    tcol, rows, y, classes, target, min_class_count, small_classes, warn, steps
):
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
    codes, new_labels = column_codes(tcol, rows)
    y = np.ascontiguousarray(codes, dtype=np.int64)
    classes = np.empty(len(new_labels), dtype=object)
    classes[:] = new_labels
    return rows, y, classes


def _too_many_categories(fname: str, col: Column, labels: list[str], max_categories: int):
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


def encode_features(cols, rows, categorical, max_categories: int, many_levels: str, warn, left_out):
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
        codes, labels = column_codes(col, rows)
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
            present = ~np.isnan(codes)
            most = int(np.bincount(codes[present].astype(np.int64)).max())
            codes, labels, n_grouped, n_grouped_rows = _group_rare_levels(
                codes, labels, max_categories - 1
            )
            unique = (
                " Every level occurs once, so no level is more frequent than another: the "
                f"{max_categories - 1} kept are the first in label order, and a column of "
                "unique values is usually an ID, better left out."
                if most == 1
                else ""
            )
            warn.append(
                f"Column {_q(fname)} has {n_levels:,} levels, more than the cap of "
                f"{max_categories}: the {max_categories - 1} most frequent are kept and the "
                f"other {n_grouped:,} levels ({_rows(n_grouped_rows)}) are grouped as "
                f"{_q(labels[-1])}.{unique} To change this, raise the '{LEVEL_CAP_LABEL}' on "
                f"the Data page (max_categories), or choose "
                f"'{MANY_LEVEL_CHOICES['leave_out']}' under '{MANY_LEVELS_LABEL}' "
                "(many_levels='leave_out')."
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
