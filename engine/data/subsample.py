"""The seeded, stratified subsample a page offers when a method would exceed its time
budget on all rows: :func:`stratified_subsample` (row indices) and
:func:`subsample_dataset` (a :class:`Dataset` of those rows that says so).

Strata are the classes (classification) or equal-count bins of the target's ranks
(regression, :data:`REGRESSION_BINS` bins).  Each stratum keeps its share of the rows by
largest remainders, so a stratum of ``n_k`` of ``n`` rows keeps ``floor(size * n_k / n)``
or one more row: its proportion is exact to within one row (a class rarer than one in
``size`` still keeps one row, taken from the most over-served class).  The rows inside a stratum are
drawn without replacement by ``numpy.random.default_rng(seed)``; the same data, size and
seed give the same rows on every machine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

#: Equal-count bins of the target a regression subsample is stratified on.
REGRESSION_BINS = 10


@dataclass(frozen=True)
class Subsample:
    """A seeded stratified subsample of rows.

    Attributes:
        rows: int64 indices of the kept rows into the full data, ascending, shape
            ``(kept,)``.
        kept: rows kept.
        total: rows of the full data.
        seed: the seed of the draw.
        strata: what the rows were stratified on (``'class'`` or ``'target quantile
            bins'``).
    """

    rows: np.ndarray
    kept: int
    total: int
    seed: int
    strata: str

    def note(self) -> str:
        """The phrase every result on these rows carries: ``'on a seeded stratified
        subsample of 20,000 of 200,000 rows (seed 0)'``."""
        return (
            f"on a seeded stratified subsample of {self.kept:,} of {self.total:,} rows "
            f"(seed {self.seed})"
        )

    def as_dict(self) -> dict:
        """JSON values for a run's parameters and its recipe: ``{'rows': kept, 'of':
        total, 'seed': seed, 'strata': strata}``."""
        return {"rows": self.kept, "of": self.total, "seed": self.seed, "strata": self.strata}


def _strata(y: np.ndarray, task: str, n_bins: int) -> tuple[np.ndarray, str]:
    """Stratum code (int64, shape ``(n,)``) of every row and what the strata are."""
    if task == "classification":
        _, codes = np.unique(y, return_inverse=True)
        return codes.astype(np.int64), "class"
    if task != "regression":
        raise ValueError(f"task must be 'classification' or 'regression', not {task!r}.")
    values = np.asarray(y, dtype=np.float64)
    if np.isnan(values).any():
        raise ValueError("The target has missing values; drop those rows before subsampling.")
    n = len(values)
    ranks = np.empty(n, dtype=np.int64)
    ranks[np.argsort(values, kind="stable")] = np.arange(n)
    return (ranks * n_bins) // max(n, 1), "target quantile bins"


def _keep_every_class(quota: np.ndarray, counts: np.ndarray, exact: np.ndarray) -> None:
    """Give every class with rows at least one row (in place): each class whose quota
    rounded to 0 takes one row from the class whose quota most exceeds its exact share
    (ties to the lower code).  Without it, a class rarer than one in ``size`` would vanish
    from the subsample while the data still names it."""
    for k in np.flatnonzero((quota == 0) & (counts > 0)):
        donors = np.flatnonzero(quota > 1)
        if donors.shape[0] == 0:
            return  # fewer rows than classes: nothing left to move
        giver = donors[np.argmax(quota[donors] - exact[donors])]
        quota[giver] -= 1
        quota[k] = 1


def stratified_subsample(
    y: np.ndarray, size: int, *, task: str, seed: int = 0, n_bins: int = REGRESSION_BINS
) -> Subsample:
    """Pick ``size`` of the ``len(y)`` rows, stratified, seeded.

    Parameters
    ----------
    y : array, shape (n,)
        Class codes or labels (classification) or target values (regression, no NaN).
    size : int
        Rows to keep, ``1 <= size``; ``size >= n`` keeps every row.
    task : ``'classification'`` or ``'regression'``
        Strata: the classes, or ``n_bins`` equal-count bins of the target's ranks.
    seed : int
        Seed of ``numpy.random.default_rng``.
    n_bins : int
        Bins of a regression target.

    Returns
    -------
    Subsample
        Each stratum keeps ``floor(size * n_k / n)`` rows or one more (largest
        remainders, ties to the lower stratum code), so its share is exact within a row;
        except that every class keeps at least one row (a class rarer than one in
        ``size`` takes it from the class whose quota most exceeds its share) while
        ``size`` is at least the number of classes.

    Raises
    ------
    ValueError
        ``size`` below 1, an unknown task, or a regression target with NaN.
    """
    y = np.asarray(y)
    n = len(y)
    size = int(size)
    if size < 1:
        raise ValueError(f"A subsample needs at least one row, not {size}.")
    codes, strata = _strata(y, task, int(n_bins))
    if size >= n:
        return Subsample(np.arange(n, dtype=np.int64), n, n, int(seed), strata)
    counts = np.bincount(codes)
    exact = counts * size / n
    quota = np.floor(exact).astype(np.int64)
    short = size - int(quota.sum())
    order = np.lexsort((np.arange(len(counts)), -(exact - quota)))
    quota[order[:short]] += 1
    if task == "classification":
        _keep_every_class(quota, counts, exact)
    rng = np.random.default_rng(int(seed))
    by_stratum = np.argsort(codes, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)))
    kept = [
        rng.choice(by_stratum[starts[k] : starts[k + 1]], size=quota[k], replace=False)
        for k in range(len(counts))
        if quota[k]
    ]
    rows = np.sort(np.concatenate(kept)).astype(np.int64)
    return Subsample(rows, len(rows), n, int(seed), strata)


def subsample_dataset(ds, size: int, seed: int = 0):
    """``ds`` (a :class:`Dataset`) cut to a seeded stratified subsample of ``size`` rows,
    its ``subsample`` set (:class:`Subsample`); ``ds`` itself when ``size`` keeps every
    row.  Raises ValueError as :func:`stratified_subsample`."""
    sample = stratified_subsample(ds.y, size, task=ds.task, seed=seed)
    if sample.kept == sample.total:
        return ds
    return dataclasses.replace(
        ds,
        X=np.ascontiguousarray(ds.X[sample.rows]),
        y=ds.y[sample.rows],
        subsample=sample,
    )
