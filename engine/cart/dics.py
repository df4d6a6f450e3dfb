"""The global DICS candidate dictionary (Mazumder & Yu, arXiv 2608.20258, Algorithm 1).

Computed once per fit by :func:`dics_dictionary` (:class:`DICSDictionary`); the CART
builder (strategy ``dics_paper``) samples and removes its entries per node.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

# ---------------------------------------------------------------------------------------
# DICS dictionary (once per fit)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DICSDictionary:
    """The global DICS candidate dictionary of a training matrix.

    ``offsets`` int64 ``(n_features + 1,)`` and ``values`` float64: feature ``j``'s raw-unit
    thresholds are ``values[offsets[j]:offsets[j + 1]]`` (sorted, unique, at most ``m``;
    empty for categorical or excluded features).  ``pairs`` int64 ``(m, 2)``: the kept
    centroid pairs, farthest first; ``centers`` and ``stds``: float64 ``(K, n_used)`` centroids
    and within-cluster stds in standardised units of the used features ``used`` (int64).
    """

    offsets: np.ndarray
    values: np.ndarray
    pairs: np.ndarray
    centers: np.ndarray
    stds: np.ndarray
    used: np.ndarray
    n_clusters: int
    m_pairs: int
    variance_adjusted: bool

    def feature(self, j: int) -> np.ndarray:
        """Thresholds of feature ``j`` (raw units, sorted)."""
        return self.values[self.offsets[j] : self.offsets[j + 1]]


_CONTROLLER = []


def _openmp_controller():
    """A ``threadpoolctl.ThreadpoolController`` made once, after scikit-learn's OpenMP
    runtime is loaded (``threadpool_limits`` rescans the libraries, ~3 ms per call)."""
    if not _CONTROLLER:
        import sklearn.cluster  # noqa: F401  (loads the OpenMP runtime first)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def default_m_pairs(n_clusters: int) -> int:
    """``K (K - 1) / 2`` for ``K <= 5``, else 25 (the DICS paper)."""
    all_pairs = n_clusters * (n_clusters - 1) // 2
    return all_pairs if n_clusters <= 5 else min(25, all_pairs)


def dics_dictionary(
    X,
    n_clusters: int,
    *,
    m_pairs: int | None = None,
    variance_adjusted: bool = True,
    random_state=None,
    features=None,
    batch_size: int = 512,
) -> DICSDictionary:
    """DICS candidate dictionary (Mazumder & Yu, arXiv 2608.20258, Algorithm 1).

    1. Standardise the used columns of ``X`` (mean 0, std 1 over the observed values;
       constant columns keep std 1); a missing value (NaN) is put at its column's mean
       for the clustering.
    2. scikit-learn ``MiniBatchKMeans(n_clusters, init='k-means++', batch_size)`` once on
       them (``n_clusters`` clamped to the number of rows; run with one OpenMP thread).
    3. Keep the ``m`` centroid pairs farthest apart (Euclidean; ties by pair order);
       ``m`` defaults to :func:`default_m_pairs`.
    4. For every used feature ``f`` and pair ``(i, j)``: the boundary
       ``zeta = (s_i mu_j + s_j mu_i) / (s_i + s_j)`` (``s`` within-cluster std + 1e-9, the
       plain midpoint when ``variance_adjusted`` is False), mapped back to raw units.

    ``features``: indices (or bool mask) of the columns to use (default all).  Fewer than 2
    clusters or rows give an empty dictionary.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    n, p = X.shape
    if features is None:
        used = np.arange(p, dtype=np.int64)
    else:
        f = np.asarray(features)
        used = np.flatnonzero(f).astype(np.int64) if f.dtype == bool else f.astype(np.int64)
    K = int(min(int(n_clusters), n))
    m = default_m_pairs(K) if m_pairs is None else int(m_pairs)
    if m < 0:
        raise ValueError(f"dics_pairs must be a positive int or None, got {m_pairs!r}")
    empty = DICSDictionary(
        offsets=np.zeros(p + 1, dtype=np.int64),
        values=np.empty(0),
        pairs=np.empty((0, 2), dtype=np.int64),
        centers=np.empty((0, used.size)),
        stds=np.empty((0, used.size)),
        used=used,
        n_clusters=K,
        m_pairs=0,
        variance_adjusted=bool(variance_adjusted),
    )
    if K < 2 or used.size == 0 or m == 0:
        return empty
    from sklearn.cluster import MiniBatchKMeans

    Z = X[:, used]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: mean NaN
        mean = np.nan_to_num(np.nanmean(Z, axis=0))
        sd = np.nan_to_num(np.nanstd(Z, axis=0))
    sd = np.where(sd > 0, sd, 1.0)
    # missing values sit at their column's mean (0 once standardised) for the clustering
    Z = np.nan_to_num((Z - mean) / sd, nan=0.0)
    # One OpenMP thread: on a busy 2-core machine scikit-learn's OpenMP barriers made the
    # same fit take 20 ms to 3.4 s (measured, 100k x 20); single-threaded it is ~0.2 s.
    with (
        warnings.catch_warnings(),
        _openmp_controller().limit(limits=1, user_api="openmp"),
    ):
        warnings.simplefilter("ignore")
        km = MiniBatchKMeans(
            n_clusters=K,
            init="k-means++",
            batch_size=batch_size,
            random_state=random_state,
            n_init="auto",
        ).fit(Z)
    centers = km.cluster_centers_
    labels = km.labels_
    stds = np.zeros_like(centers)
    for c in range(K):
        rows = Z[labels == c]
        if rows.shape[0]:
            stds[c] = rows.std(axis=0)
    ii, jj = np.triu_indices(K, 1)
    dist = np.linalg.norm(centers[ii] - centers[jj], axis=1)
    keep = np.argsort(-dist, kind="stable")[:m]
    pairs = np.column_stack([ii[keep], jj[keep]]).astype(np.int64)
    mu_i, mu_j = centers[pairs[:, 0]], centers[pairs[:, 1]]
    if variance_adjusted:
        s_i, s_j = stds[pairs[:, 0]] + 1e-9, stds[pairs[:, 1]] + 1e-9
        zeta = (s_i * mu_j + s_j * mu_i) / (s_i + s_j)
    else:
        zeta = 0.5 * (mu_i + mu_j)
    raw = zeta * sd + mean  # (m, n_used)
    per_feature = [np.empty(0)] * p
    for col, j in enumerate(used):
        per_feature[j] = np.unique(raw[:, col])
    offsets = np.zeros(p + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([a.size for a in per_feature])
    values = np.ascontiguousarray(np.concatenate(per_feature), dtype=np.float64)
    return DICSDictionary(
        offsets=offsets,
        values=values,
        pairs=pairs,
        centers=centers,
        stds=stds,
        used=used,
        n_clusters=K,
        m_pairs=int(pairs.shape[0]),
        variance_adjusted=bool(variance_adjusted),
    )
