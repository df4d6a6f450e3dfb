"""Histogram counts for the Data page's figures: the browser gets one bar per bin, not
one value per row (a 200,000-row upload sent 200,000 numbers per histogram)."""

from __future__ import annotations

import numpy as np


def binned_counts(
    values: np.ndarray, groups: np.ndarray | None = None, n_groups: int = 1, nbins: int = 30
) -> tuple[np.ndarray, np.ndarray]:
    """Counts of ``values`` in ``nbins`` equal-width bins shared by every group.

    Parameters
    ----------
    values : float array, shape (n,)
        NaN values are not counted.
    groups : int array, shape (n,), optional
        Group code ``0..n_groups-1`` of each value (the class); ``None``: one group.
    n_groups : int
        Number of groups (rows of the result).
    nbins : int
        Bins between the smallest and the largest present value (numpy's
        ``histogram_bin_edges``; one unit-wide bin around a constant).

    Returns
    -------
    edges : float64 array, shape (nbins + 1,)
    counts : int64 array, shape (n_groups, nbins); row ``k`` sums to the present values
        of group ``k`` (the last bin includes its right edge).
    """
    values = np.asarray(values, dtype=np.float64)
    present = ~np.isnan(values)
    codes = np.zeros(len(values), dtype=np.int64) if groups is None else np.asarray(groups)
    edges = np.histogram_bin_edges(values[present], bins=int(nbins))
    counts = np.zeros((int(n_groups), len(edges) - 1), dtype=np.int64)
    for k in range(int(n_groups)):
        counts[k], _ = np.histogram(values[present & (codes == k)], bins=edges)
    return edges, counts
