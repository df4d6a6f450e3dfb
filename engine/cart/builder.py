"""Python entry points of the CART builder (no scikit-learn input validation):
:func:`presort`, :func:`build_tree` (-> :class:`GrownTree`) and Literati's
:func:`feature_breakpoints`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.cart._grow_kernels import grow_tree
from engine.cart.candidates import default_k, strategy_code
from engine.cart.dics import DICSDictionary, dics_dictionary
from engine.criteria import criterion_code
from engine.tree import TREE_LEAF, TreeArrays

_INT_MAX = np.iinfo(np.int64).max


def presort(X):
    """Per-feature sorted row order and values of ``X`` (float64 ``(n, p)``).

    Returns ``(order, xs)``: int64 and float64 C-contiguous ``(p, n)`` with
    ``xs[f] = X[order[f], f]`` ascending, NaN last (numpy's order; the split kernels rely
    on it).  numpy's SIMD quicksort (ties in an arbitrary but deterministic order; ties
    never change a split) - about 6x faster than a stable sort and nothing to compile.
    """
    Xt = np.ascontiguousarray(X.T)
    order = np.argsort(Xt, axis=1, kind="quicksort")
    xs = np.take_along_axis(Xt, order, axis=1)
    return np.ascontiguousarray(order, dtype=np.int64), np.ascontiguousarray(xs)


@dataclass(frozen=True, eq=False)
class GrownTree:
    """The raw result of :func:`build_tree` (node arrays in scikit-learn's layout).

    ``value`` is float64 ``(n_nodes, n_classes)`` class fractions (classification) or
    ``(n_nodes, 1)`` node means (regression); ``improvement`` the weighted impurity
    decrease of each split (scikit-learn's ``impurity_improvement``, 0 at leaves);
    ``node_candidates`` the (feature, threshold) candidates evaluated at each node;
    ``cat_offsets``/``cat_values`` the left category sets (CSR, or None); ``dictionary``
    the DICS dictionary (or None); ``missing_go_to_left`` (uint8) and ``n_missing``
    (int64) the side of the missing values of each split and the NaN training rows it
    routed (see :func:`engine.cart._grow_kernels.grow_tree`).
    """

    task: str
    n_features: int
    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    value: np.ndarray
    improvement: np.ndarray
    node_candidates: np.ndarray
    cat_offsets: np.ndarray | None
    cat_values: np.ndarray | None
    dictionary: DICSDictionary | None
    missing_go_to_left: np.ndarray
    n_missing: np.ndarray

    @property
    def is_leaf(self) -> np.ndarray:
        """bool per node."""
        return self.children_left == TREE_LEAF

    def tree_arrays(self, classes=None, feature_names=None) -> TreeArrays:
        """The common :class:`engine.tree.TreeArrays` (``classes``: the labels of codes
        ``0..K-1``, default the codes themselves)."""
        if self.task == "classification" and classes is None:
            classes = np.arange(self.value.shape[1])
        return TreeArrays(
            self.children_left,
            self.children_right,
            self.feature,
            self.threshold,
            self.impurity,
            self.n_node_samples,
            self.weighted_n_node_samples,
            self.value[:, None, :],
            task=self.task,
            n_features=self.n_features,
            classes_=classes if self.task == "classification" else None,
            feature_names=feature_names,
            cat_offsets=self.cat_offsets,
            cat_values=self.cat_values,
            missing_go_to_left=self.missing_go_to_left,
            n_missing=self.n_missing,
        )

    def feature_importances(self) -> np.ndarray:
        """Total weighted impurity decrease per feature, normalised to sum 1 (all zeros for
        a single leaf) - scikit-learn's ``feature_importances_``."""
        out = np.zeros(self.n_features, dtype=np.float64)
        split = ~self.is_leaf
        np.add.at(out, self.feature[split], self.improvement[split])
        total = out.sum()
        return out / total if total > 0 else out

    def thresholds(self) -> np.ndarray:
        """Sorted unique finite thresholds of the numeric splits (e.g. Literati's candidate
        breakpoints from a one-feature CART; a split of the observed values from the NaN
        rows has threshold +inf and is left out)."""
        split = ~self.is_leaf & np.isfinite(self.threshold)
        if self.cat_offsets is not None:
            split &= np.diff(self.cat_offsets) == 0
        return np.unique(self.threshold[split])

    def misclassified(self) -> float:
        """Weighted training rows not in their leaf's majority class (classification)."""
        if self.task != "classification":
            raise ValueError("misclassified() needs a classification tree")
        leaf = self.is_leaf
        return float(
            np.sum(self.weighted_n_node_samples[leaf] * (1.0 - self.value[leaf].max(axis=1)))
        )


def build_tree(
    X,
    y,
    *,
    n_classes: int = 0,
    criterion: str | None = None,
    splitter: str = "exhaustive",
    max_depth: int | None = None,
    min_samples_split: int = 2,
    min_samples_leaf: int = 1,
    max_features: int | None = None,
    max_leaf_nodes: int | None = None,
    min_impurity_decrease: float = 0.0,
    sample_weight=None,
    is_categorical=None,
    n_categories=None,
    n_candidates: int | None = None,
    variance_adjusted: bool | None = None,
    fallback: bool = True,
    dics_pairs: int | None = None,
    dics_clusters: int | None = None,
    dics_remove_used: bool = False,
    random_state=None,
) -> GrownTree:
    """Grow a CART tree from arrays, without the estimators' input validation.

    For engine code that fits many small trees (Literati's candidate breakpoints and
    lookahead, forests): ``X`` float64 ``(n, p)``, NaN = missing (each split learns the
    side of the missing values as scikit-learn >= 1.3, see
    :func:`engine.cart._split_kernels._scan_numeric_missing`), no infinities; ``y`` int64 class codes
    ``0..n_classes-1`` (classification, ``n_classes >= 1``) or float64 targets
    (regression, ``n_classes = 0``).  Parameters as :class:`CARTClassifier` but already
    resolved: ``max_features`` a count (None = all), ``min_samples_*`` counts,
    ``is_categorical`` a bool mask with ``n_categories`` (codes per feature; computed when
    omitted).  Zero sample weights remove their rows.  Raises ``ValueError`` for an unknown
    splitter or criterion.
    """
    task = "classification" if n_classes >= 1 else "regression"
    if criterion is None:
        criterion = "gini" if task == "classification" else "squared_error"
    crit = criterion_code(criterion, task)
    strat = strategy_code(splitter, task)
    X, y_code, y_val, w, is_cat, n_cats = _training_arrays(
        X, y, task, sample_weight, is_categorical, n_categories
    )
    n, p = X.shape
    from sklearn.utils import check_random_state

    rs = check_random_state(random_state)
    tree_seed = rs.randint(0, 2**31 - 1)
    km_seed = rs.randint(0, 2**31 - 1)
    rng = np.array([tree_seed], dtype=np.uint64)
    k = default_k(splitter, n_classes) if n_candidates is None else int(n_candidates)
    va = (splitter != "kmeans1d") if variance_adjusted is None else bool(variance_adjusted)
    dictionary = None
    if splitter == "dics_paper":
        n_clusters = dics_clusters or (n_classes if n_classes >= 2 else 8)
        dictionary = dics_dictionary(
            X,
            n_clusters,
            m_pairs=dics_pairs,
            variance_adjusted=va,
            random_state=km_seed,
            features=~is_cat,
        )
        d_off, d_val = dictionary.offsets, dictionary.values
    else:
        d_off, d_val = np.zeros(p + 1, dtype=np.int64), np.empty(0, dtype=np.float64)
    min_leaf = int(min_samples_leaf)
    order, xs = presort(X)
    (cl, cr, feat, thr, imp, nsamp, wsamp, stats, ncand, cmask, impr, miss_left, n_miss) = (
        grow_tree(
            order,
            xs,
            y_code,
            y_val,
            w,
            task == "classification",
            max(n_classes, 1),
            crit,
            is_cat.astype(np.uint8),
            n_cats,
            strat,
            k,
            va,
            bool(fallback),
            d_off,
            d_val,
            k if splitter == "dics_paper" and n_candidates is not None else 0,
            bool(dics_remove_used),
            _INT_MAX if max_depth is None else int(max_depth),
            max(int(min_samples_split), 2 * min_leaf),
            min_leaf,
            p if max_features is None else int(max_features),
            0 if max_leaf_nodes is None else int(max_leaf_nodes),
            float(min_impurity_decrease),
            rng,
        )
    )
    cat_offsets, cat_values = _category_sets(cl, feat, is_cat, cmask, n_cats)
    return GrownTree(
        task=task,
        n_features=p,
        children_left=cl,
        children_right=cr,
        feature=feat,
        threshold=thr,
        impurity=imp,
        n_node_samples=nsamp,
        weighted_n_node_samples=wsamp,
        value=_node_values(stats, task),
        improvement=impr,
        node_candidates=ncand,
        cat_offsets=cat_offsets,
        cat_values=cat_values,
        dictionary=dictionary,
        missing_go_to_left=miss_left,
        n_missing=n_miss,
    )


def _training_arrays(X, y, task, sample_weight, is_categorical, n_categories):
    """The kernel's inputs: ``X`` float64 C-contiguous writable, ``y`` as int64 codes or
    float64 values (the other one empty), weights (rows of weight 0 removed), the categorical
    mask and the codes per feature (computed from ``X`` when not given)."""
    X = np.asarray(X, dtype=np.float64)
    if not (X.flags.c_contiguous and X.flags.writeable):
        X = np.array(X, dtype=np.float64, order="C")
    n, p = X.shape
    if task == "classification":
        y_code = np.array(y, dtype=np.int64, order="C").reshape(-1)
        y_val = np.empty(0, dtype=np.float64)
    else:
        y_val = np.array(y, dtype=np.float64, order="C").reshape(-1)
        y_code = np.empty(0, dtype=np.int64)
    if is_categorical is None:
        is_cat = np.zeros(p, dtype=bool)
    else:
        is_cat = np.asarray(is_categorical, dtype=bool)
    if n_categories is None:
        n_cats = np.zeros(p, dtype=np.int64)
        for j in np.flatnonzero(is_cat):
            observed = X[~np.isnan(X[:, j]), j]
            n_cats[j] = int(observed.max()) + 1 if observed.size else 1
    else:
        n_cats = np.asarray(n_categories, dtype=np.int64)
    if sample_weight is None:
        w = np.ones(n, dtype=np.float64)
    else:
        w = np.array(sample_weight, dtype=np.float64, order="C")  # fresh and writable
        if np.any(w == 0):  # a zero weight removes the row (thresholds and counts too)
            keep = w > 0
            X = np.ascontiguousarray(X[keep])
            w = w[keep]
            y_code = y_code[keep] if task == "classification" else y_code
            y_val = y_val[keep] if task == "regression" else y_val
    return X, y_code, y_val, w, is_cat, n_cats


def _node_values(stats: np.ndarray, task: str) -> np.ndarray:
    """Class fractions (classification) or node means ``(n_nodes, 1)`` from the kernel's
    per-node statistics."""
    if task == "classification":
        tot = stats.sum(axis=1, keepdims=True)
        return np.divide(stats, tot, out=np.zeros_like(stats), where=tot > 0)
    return np.divide(
        stats[:, 1:2], stats[:, 0:1], out=np.zeros((stats.shape[0], 1)), where=stats[:, 0:1] > 0
    )


def _category_sets(cl, feat, is_cat, cmask, n_cats):
    """The left category sets of the categorical splits in CSR form ``(offsets, values)``,
    or ``(None, None)`` without categorical features.

    Only the split feature's own codes ``0..n_cats[f]-1`` are read: the kernel clears a
    mask row up to the scanned feature's number of categories, so the entries beyond
    it can hold another feature's earlier scan (a "sex in {0, 2}" left set seen when the
    step-through growth replayed a regression tree on penguins)."""
    if not is_cat.any():
        return None, None
    split_cat = (cl != TREE_LEAF) & is_cat[np.where(feat >= 0, feat, 0)]
    sets = [
        np.flatnonzero(cmask[i][: int(n_cats[feat[i]])]) if split_cat[i] else np.empty(0, np.int64)
        for i in range(cl.shape[0])
    ]
    cat_offsets = np.zeros(cl.shape[0] + 1, dtype=np.int64)
    cat_offsets[1:] = np.cumsum([a.size for a in sets])
    return cat_offsets, np.concatenate(sets).astype(np.int64)


def feature_breakpoints(
    x,
    y,
    max_leaf_nodes: int | None,
    *,
    n_classes: int | None = None,
    criterion: str = "gini",
    min_samples_leaf: int = 1,
    sample_weight=None,
) -> np.ndarray:
    """Thresholds of a best-first CART with at most ``max_leaf_nodes`` leaves fitted on one
    feature ``x`` (all midpoints of the float64 unique values are candidates): sorted unique
    float64.  ``y``: int64 class codes; ``None`` leaves = grow until pure.  This is
    Literati's candidate-breakpoint rule (docs/spec.md section 1)."""
    y = np.asarray(y, dtype=np.int64)
    K = int(y.max()) + 1 if n_classes is None and y.size else int(n_classes or 1)
    grown = build_tree(
        np.asarray(x, dtype=np.float64).reshape(-1, 1),
        y,
        n_classes=K,
        criterion=criterion,
        max_leaf_nodes=max_leaf_nodes,
        min_samples_leaf=min_samples_leaf,
        sample_weight=sample_weight,
    )
    return grown.thresholds()
