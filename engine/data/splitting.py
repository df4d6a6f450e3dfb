"""The seeded train/test split every page uses: :func:`train_test_rows`.

Stratified by class when the data allows it (scikit-learn's ``train_test_split`` with
``stratify=y``); otherwise shuffled without stratification, with a note saying why, so that
a dataset with a class of one row is still usable and the page can say what it did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.data.errors import _q

#: Rows a class needs for a stratified split (one on each side).
MIN_ROWS_PER_CLASS = 2


@dataclass(frozen=True)
class RowSplit:
    """A train/test split of row indices.

    Attributes:
        train: int64 row indices, ascending.
        test: int64 row indices, ascending; disjoint from ``train``, together all rows.
        stratified: whether class proportions were kept on both sides.
        note: why the split is not stratified although it was asked to be, in plain
            words for the page to show; ``None`` when it is stratified (or was not asked
            to be).
    """

    train: np.ndarray
    test: np.ndarray
    stratified: bool
    note: str | None = None


def _n_test(n_samples: int, test_size: float | int) -> int:
    """Test rows as scikit-learn counts them: ``ceil(test_size * n)`` for a share."""
    if isinstance(test_size, (int, np.integer)) and not isinstance(test_size, bool):
        return int(test_size)
    return int(math.ceil(float(test_size) * n_samples))


def stratify_problem(
    y: np.ndarray, n_test: int, class_names: Sequence[str] | None = None
) -> str | None:
    """Why rows with classes ``y`` (int codes) cannot be split with ``n_test`` test rows
    stratified, or ``None`` when they can (every class has two rows, and each side has at
    least one row per class)."""
    y = np.asarray(y, dtype=np.int64)
    counts = np.bincount(y)
    present = np.flatnonzero(counts)
    n_classes = len(present)
    n_train = len(y) - n_test

    def name(k: int) -> str:
        return _q(class_names[k]) if class_names is not None and k < len(class_names) else _q(k)

    small = [k for k in present if counts[k] < MIN_ROWS_PER_CLASS]
    if small:
        shown = ", ".join(f"{name(k)} ({counts[k]} row)" for k in small[:5])
        more = f" and {len(small) - 5} more" if len(small) > 5 else ""
        one = len(small) == 1
        return (
            f"{'Class' if one else 'Classes'} {shown}{more} {'has' if one else 'have'} fewer "
            f"than the {MIN_ROWS_PER_CLASS} rows a stratified split needs per class"
        )
    if n_test < n_classes:
        return f"the test part ({n_test} rows) has fewer rows than there are classes ({n_classes})"
    if n_train < n_classes:
        return (
            f"the training part ({n_train} rows) has fewer rows than there are classes "
            f"({n_classes})"
        )
    return None


def train_test_rows(
    n_samples: int,
    y: np.ndarray | None = None,
    *,
    test_size: float | int,
    random_state: int,
    stratify: bool = True,
    class_names: Sequence[str] | None = None,
    part: str = "train/test split",
) -> RowSplit:
    """Split rows ``0..n_samples-1`` into train and test, seeded.

    Args:
        n_samples: number of rows.
        y: int class codes, shape ``(n_samples,)``, to stratify on (``None``: no
            stratification, e.g. for regression).
        test_size: share of the rows in the test part (float in (0, 1)) or their number
            (int), as in :func:`sklearn.model_selection.train_test_split`.
        random_state: seed of the shuffle.
        stratify: keep the class proportions when possible.
        class_names: labels of the class codes, for the note.
        part: what the split is called in the note (``'validation split'``).

    Returns:
        a :class:`RowSplit`.  When ``stratify`` is set, ``y`` is given and a class has a
        single row (or a side would have fewer rows than there are classes), the split
        falls back to a plain shuffle and ``note`` says so and why.

    Raises:
        ValueError: (from scikit-learn) a part would be empty.
    """
    idx = np.arange(n_samples)
    note = None
    strat = None
    if stratify and y is not None:
        y = np.asarray(y)
        problem = stratify_problem(y, _n_test(n_samples, test_size), class_names)
        if problem is None:
            strat = y
        else:
            note = (
                f"The {part} is not stratified: {problem}. The rows are shuffled (seed "
                f"{random_state}) without keeping class proportions, so a class may be "
                "missing from one side."
            )
    from sklearn.model_selection import train_test_split  # lazy: the Data page needs no sklearn

    train, test = train_test_split(
        idx, test_size=test_size, random_state=random_state, stratify=strat
    )
    return RowSplit(
        np.sort(train).astype(np.int64), np.sort(test).astype(np.int64), strat is not None, note
    )
