"""What each candidate-threshold strategy tries at one node, and what it picks (docs/spec.md section 5).

:func:`split_profile` answers, for one node and one continuous feature: which thresholds
does each strategy propose (:func:`engine.cart.candidates.candidate_thresholds`), what is the
impurity decrease at each (:func:`engine.criteria.threshold_gains`, the same kernel the CART
builder uses), which one wins, and how far that is from the exhaustive optimum.  The
exhaustive impurity-decrease curve is the reference every strategy is drawn on.

:func:`node_mask` finds the training rows that reach a node of a fitted tree, and
:func:`strategy_models` turns a list of strategies into Compare-page model entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.cart.candidates import FALLBACK_Q, candidate_thresholds
from engine.cart.dics import dics_dictionary
from engine.criteria import exhaustive_gains, threshold_gains

#: strategies that never fall back to quantile (they always have candidates when any split
#: is allowed).
NO_FALLBACK = ("exhaustive", "random", "quantile")


def node_mask(tree, X: np.ndarray, node: int) -> np.ndarray:
    """Boolean mask (n_samples,) of the rows of ``X`` whose decision path passes ``node``.

    ``tree`` is an :class:`engine.tree.TreeArrays`; ``X`` float64 (n_samples, n_features).
    Follows the ancestors of ``node`` from the root, applying each split rule (``x <= t``
    goes left; categorical set splits: code in the left set goes left; a NaN goes left iff
    the node's ``missing_go_to_left``).

    Raises
    ------
    IndexError
        If ``node`` is not a node id of ``tree``.
    """
    if not 0 <= node < tree.node_count:
        raise IndexError(f"node {node} is not in the tree (it has {tree.node_count} nodes)")
    X = np.asarray(X, dtype=np.float64)
    path = [int(node)]
    parent = tree.parent
    while parent[path[-1]] >= 0:
        path.append(int(parent[path[-1]]))
    path.reverse()
    mask = np.ones(X.shape[0], dtype=bool)
    for a, child in zip(path[:-1], path[1:], strict=True):
        x = X[:, tree.feature[a]]
        cats = tree.left_categories(a)
        left = np.isin(x, cats) if cats is not None else x <= tree.threshold[a]
        if tree.missing_go_to_left is not None:
            left = np.where(np.isnan(x), bool(tree.missing_go_to_left[a]), left)
        mask &= left if child == tree.children_left[a] else ~left
    return mask


@dataclass
class StrategyResult:
    """One strategy at one node and feature.

    ``thresholds`` float64 (m,) ascending; ``gains`` float64 (m,) impurity decrease at each
    (``nan`` where ``min_samples_leaf`` forbids the split); ``best_threshold`` and
    ``best_gain`` are those of the largest gain (``nan`` without candidates); ``fallback``
    is True when the strategy found no candidate of its own and the thresholds are the
    quantile fallback's (k = 16).
    """

    strategy: str
    thresholds: np.ndarray
    gains: np.ndarray
    best_threshold: float
    best_gain: float
    fallback: bool = False

    @property
    def n_candidates(self) -> int:
        return int(self.thresholds.size)


@dataclass(frozen=True, eq=False)
class NodeHistogram:
    """The node's rows of one feature in ``n_bins`` equal-width bins over ``[min, max]``
    (the maximum in the last bin, as ``np.histogram``; one unit-wide bin for a constant
    feature).

    ``edges`` float64 ``(n_bins + 1,)``, ``centres`` float64 ``(n_bins,)``, ``width`` the bin
    width (feature units); ``counts`` int64 ``(n_groups, n_bins)``: rows of each class code
    ``0..n_groups-1`` (classification) or all rows (regression, one group); ``max_count``
    the fullest bin of ``np.histogram(x, bins=n_bins)`` (1 for no rows).
    """

    edges: np.ndarray
    centres: np.ndarray
    width: float
    counts: np.ndarray
    max_count: float


@dataclass
class SplitProfile:
    """Output of :func:`split_profile`.

    ``x`` float64 (n,) and ``y`` (int64 class codes or float64 targets) are the node's rows
    for the feature; ``curve_thresholds``/``curve_gains`` the exhaustive curve;
    ``results`` one :class:`StrategyResult` per strategy, in the order asked.
    """

    feature: int
    feature_name: str
    task: str
    criterion: str
    x: np.ndarray
    y: np.ndarray
    curve_thresholds: np.ndarray
    curve_gains: np.ndarray
    results: dict[str, StrategyResult] = field(default_factory=dict)

    @property
    def best_gain(self) -> float:
        """The exhaustive optimum (largest impurity decrease over all midpoints)."""
        g = self.curve_gains[np.isfinite(self.curve_gains)]
        return float(g.max()) if g.size else float("nan")

    def histogram(self, n_bins: int = 30, n_classes: int | None = None) -> NodeHistogram:
        """The node's histogram of the feature, per class code ``0..n_classes-1``
        (classification; default ``y.max() + 1``) or of all rows (regression)."""
        x = self.x
        lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 1.0)
        bins = n_bins
        if hi <= lo:
            lo, hi, bins = lo - 0.5, lo + 0.5, 1
        edges = np.linspace(lo, hi, bins + 1)
        if self.task == "classification":
            groups = int(self.y.max()) + 1 if n_classes is None else int(n_classes)
            counts = np.array([np.histogram(x[self.y == k], bins=edges)[0] for k in range(groups)])
        else:
            counts = np.histogram(x, bins=edges)[0][None, :]
        max_count = float(np.histogram(x, bins=n_bins)[0].max()) if x.size else 1.0
        return NodeHistogram(
            edges=edges,
            centres=0.5 * (edges[:-1] + edges[1:]),
            width=float(edges[1] - edges[0]),
            counts=counts.astype(np.int64).reshape(len(counts), -1),
            max_count=max_count,
        )

    def rows_left(self, thresholds: np.ndarray) -> np.ndarray:
        """int64: how many of the node's rows go left (``x <= t``) at each threshold."""
        return np.searchsorted(np.sort(self.x), thresholds, side="right")

    def to_frame(self) -> pd.DataFrame:
        """One row per strategy: candidates, whether they are the quantile fallback's, chosen
        threshold, its gain, share of the optimum."""
        best = self.best_gain
        rows = []
        for r in self.results.values():
            share = r.best_gain / best if best > 0 and np.isfinite(r.best_gain) else np.nan
            rows.append(
                {
                    "strategy": r.strategy,
                    "candidates": r.n_candidates,
                    "quantile fallback": r.fallback,
                    "chosen threshold": r.best_threshold,
                    "impurity decrease": r.best_gain,
                    "share of exhaustive best": share,
                }
            )
        return pd.DataFrame(rows)


def split_profile(
    X,
    y,
    feature: int,
    strategies,
    *,
    task: str,
    n_classes: int | None = None,
    criterion: str = "gini",
    k: int | None = None,
    min_samples_leaf: int = 1,
    random_state: int | None = 0,
    dictionary=None,
    feature_name: str | None = None,
    is_categorical=None,
) -> SplitProfile:
    """Candidates, gains and the chosen threshold of every strategy at one node.

    Parameters
    ----------
    X : float64 (n, p)
        The node's rows.
    y : (n,)
        int64 class codes ``0..K-1`` (classification) or float64 targets (regression).
    feature : int
        Column of ``X`` to profile (a continuous feature).
    strategies : sequence of str
        Names from :data:`engine.cart.candidates.STRATEGIES`.
    task : {'classification', 'regression'}
    n_classes : int, optional
        ``K`` (classification).
    criterion : {'gini', 'entropy', 'squared_error'}
        Impurity; regression always uses squared error.
    k : int, optional
        Every strategy's ``k`` (``None``: each strategy's default).
    min_samples_leaf : int
        Splits leaving fewer rows on a side are not candidates.
    random_state : int or None
        Seed of ``random`` and of the k-means behind ``dics_paper``.
    dictionary : engine.cart.dics.DICSDictionary, optional
        The global DICS dictionary of the training matrix (``dics_paper`` uses its entries
        for ``feature``); computed from this node's ``X`` when omitted (``n_classes``
        clusters, 8 for regression, as the CART builder).
    is_categorical : bool array (p,), optional
        Categorical columns (integer codes) are left out of that fallback k-means.

    Raises
    ------
    ValueError
        Unknown strategy, a label-aware strategy for regression.

    Rows whose ``feature`` is missing (NaN) are left out of the profile: the candidates
    and gains are those of the observed values (the tree chooses the side of the missing
    rows per split, see :mod:`engine.cart`).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    x = np.ascontiguousarray(X[:, feature])
    if task == "regression":
        criterion, yv = "squared_error", np.asarray(y, dtype=np.float64)
    else:
        yv = np.asarray(y, dtype=np.int64)
    observed = ~np.isnan(x)
    if not observed.all():
        x, yv = np.ascontiguousarray(x[observed]), yv[observed]
    t_all, g_all = exhaustive_gains(
        x, yv, criterion, n_classes=n_classes, min_samples_leaf=min_samples_leaf
    )
    profile = SplitProfile(
        feature=int(feature),
        feature_name=feature_name or f"x{feature}",
        task=task,
        criterion=criterion,
        x=x,
        y=yv,
        curve_thresholds=t_all,
        curve_gains=g_all,
    )
    if "dics_paper" in strategies and dictionary is None:
        cont = None if is_categorical is None else ~np.asarray(is_categorical, dtype=bool)
        K = max(int(n_classes or 2), 2) if task == "classification" else 8
        dictionary = dics_dictionary(X, K, random_state=random_state, features=cont)
    for s in strategies:
        profile.results[s] = _strategy_result(
            s,
            x,
            yv,
            task=task,
            criterion=criterion,
            n_classes=n_classes,
            k=k,
            min_samples_leaf=min_samples_leaf,
            random_state=random_state,
            feature_dictionary=dictionary.feature(feature) if s == "dics_paper" else None,
        )
    return profile


def _strategy_result(
    s,
    x,
    yv,
    *,
    task,
    criterion,
    n_classes,
    k,
    min_samples_leaf,
    random_state,
    feature_dictionary,
) -> StrategyResult:
    """Strategy ``s`` at one node's feature values ``x``: its candidates (``quantile``'s
    when it finds none and may fall back), their gains and the best one."""
    # without the fallback first, to tell the strategy's own candidates from quantile's
    t = candidate_thresholds(
        x,
        yv,
        s,
        k=None if s == "exhaustive" else k,
        random_state=random_state,
        task=task,
        n_classes=n_classes,
        min_samples_leaf=min_samples_leaf,
        fallback=False,
        dictionary=feature_dictionary,
    )
    fell_back = False
    if t.size == 0 and s not in NO_FALLBACK:
        t = candidate_thresholds(
            x,
            yv,
            "quantile",
            k=FALLBACK_Q,
            task=task,
            n_classes=n_classes,
            min_samples_leaf=min_samples_leaf,
        )
        fell_back = t.size > 0
    g, _ = (
        threshold_gains(
            x,
            yv,
            t,
            criterion,
            n_classes=n_classes,
            min_samples_leaf=min_samples_leaf,
        )
        if t.size
        else (np.empty(0), None)
    )
    ok = np.isfinite(g)
    if ok.any():
        i = int(np.flatnonzero(ok)[np.argmax(g[ok])])
        bt, bg = float(t[i]), float(g[i])
    else:
        bt = bg = float("nan")
    return StrategyResult(s, t, g, bt, bg, fell_back)


def strategy_models(strategies, **params) -> list[tuple[str, dict, str]]:
    """Compare-page entries (registry key, parameters, label) for CART with each strategy."""
    return [("treelab_cart", {**params, "splitter": s}, f"CART / {s}") for s in strategies]
