"""The :class:`Dataset` every method of the engine consumes (made by
:func:`engine.data.make_dataset`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


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
        subsample: when the rows are a seeded stratified subsample of the prepared rows
            (:func:`engine.data.subsample_dataset`), the :class:`engine.data.Subsample`
            that made them (rows kept of rows total, seed); ``None`` for all rows.

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
    subsample: Any = None

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
