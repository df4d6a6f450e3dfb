"""Conditional inference trees (docs/spec.md section 4): stage A (permutation-tested feature
selection) then stage B (permutation-tested threshold search) at every node.

Public API: :class:`ConditionalInferenceTreeClassifier`,
:class:`ConditionalInferenceTreeRegressor` and :func:`threshold_candidates`.

A fitted estimator has ``tree_`` (:class:`engine.tree.TreeArrays`, with ``p_value`` = the
stage-A p-value of each split, ``nan`` at leaves), ``feature_importances_`` (impurity
decrease per split, **not** weighted by the node size, normalised to sum 1; all zeros when
the root is a leaf), the per-node arrays ``p_value_selector_``, ``p_value_splitter_``,
``n_permutations_selector_``, ``n_permutations_splitter_`` (nan / 0 at leaves) and
``node_records_``: one dict per node with every tested feature's statistic, p-value and
permutations (``features``, ``statistics``, ``p_values``, ``n_permutations``, in test
order), the level ``alpha_selector`` used (after Bonferroni), the features drawn for the
node's stage A (``candidates``, ``n_tested`` = m_t of the Bonferroni division) with their raw
statistics (``candidate_statistics``; with feature scanning the test stops at the first
significant one, so later candidates have a statistic but no p-value), stage B's
candidate thresholds with the weighted child impurity of each (``candidate_thresholds``,
``candidate_threshold_statistics``; for a categorical feature the thresholds are positions
in ``category_order``, the node's categories sorted by mean target), the tested thresholds
(``thresholds``, ``threshold_statistics``, ``threshold_p_values``, ``alpha_splitter``) and
at a split the ``chosen_threshold`` (on that same scale), and with ``keep_null=True`` the
permutation null distributions (``nulls``: feature -> array; ``threshold_null``: the chosen
threshold's null).

Categorical features (``categorical_features``: mask or indices; integer codes 0..C-1):
stage A uses the plug-in mutual information of the codes (classification) or the
correlation ratio of ``y`` across the categories (regression); stage B orders the node's
categories by their mean target (classification: the fraction of the node's majority
class) and searches thresholds on that order; the split is stored as a category set
(``cat_offsets``/``cat_values`` of ``tree_``: listed categories go left).
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from engine._numba import register_warmup
from engine.cit.permutation import n_resamples, selector_test, splitter_test, splitter_tests
from engine.cit.statistics import (
    CLASSIFICATION_SELECTORS,
    ETA_REG,
    MI,
    REGRESSION_SELECTORS,
    bin_codes,
    statistic,
)
from engine.compare import ModelSpec, ParamSpec, register_model
from engine.criteria import (
    ENTROPY,
    GINI,
    SQUARED_ERROR,
    class_impurity,
    squared_error,
    threshold_gains,
    weighted_class_counts,
)
from engine.tree import TreeArrays

THRESHOLD_METHODS = ("exact", "random", "percentile", "histogram")
_SPLITTERS_CLF = {"gini": GINI, "entropy": ENTROPY}
_SPLITTERS_REG = {"mse": SQUARED_ERROR, "squared_error": SQUARED_ERROR}


def _n_thresholds(max_thresholds, n_unique: int) -> int:
    """``k`` of :func:`threshold_candidates` for a node feature with ``n_unique`` distinct
    values (as citrees' ``calculate_max_value`` on the number of unique values, except
    ``None``: ours is 'sqrt', citrees' is every value); the caller caps it at the number of
    midpoints.  Raises ValueError on a bad ``max_thresholds``."""
    if max_thresholds is None or max_thresholds == "sqrt":
        return max(1, int(math.ceil(math.sqrt(n_unique))))
    if max_thresholds == "log2":
        return max(1, int(math.ceil(math.log2(max(n_unique, 2)))))
    if isinstance(max_thresholds, (int, np.integer)) and not isinstance(max_thresholds, bool):
        if max_thresholds < 1:
            raise ValueError(f"max_thresholds must be >= 1, got {max_thresholds}")
        return int(max_thresholds)
    if isinstance(max_thresholds, float) and 0.0 < max_thresholds <= 1.0:
        return max(1, int(math.ceil(max_thresholds * n_unique)))
    raise ValueError(
        "max_thresholds must be None, 'sqrt', 'log2', an int >= 1 or a fraction in "
        f"(0, 1], got {max_thresholds!r}"
    )


def threshold_candidates(
    x, method: str = "exact", max_thresholds=None, *, rng=None, min_samples_leaf: int = 1
) -> np.ndarray:
    """Stage-B candidate thresholds (sorted float64) of one feature at a node.

    From the midpoints ``m`` of the sorted unique values ``u`` of ``x``: ``exact`` all of
    them; ``random`` ``k`` distinct midpoints drawn without replacement; ``percentile``
    ``unique(percentile(m, linspace(0, 100, k)))``; ``histogram`` the unique edges of
    ``np.histogram(m, bins=k)`` (``k + 1`` equally spaced edges from ``min(m)`` to
    ``max(m)``).  All midpoints when ``x`` has at most 4 unique values.  ``k`` from
    ``max_thresholds`` on the number of unique values ``|u|`` (None/'sqrt':
    ceil(sqrt(|u|)), 'log2': ceil(log2(|u|)), an int, or ceil(fraction * |u|)), then capped
    at ``|m| = |u| - 1`` as in citrees: a histogram never has more bins than there are
    midpoints (``max_thresholds=256`` on 100 unique values gives 99 bins, 100 edges).
    Thresholds leaving fewer than ``min_samples_leaf`` rows on a side (left iff ``x <= t``)
    are dropped.  Raises ValueError on an unknown ``method`` or a bad ``max_thresholds``.
    """
    if method not in THRESHOLD_METHODS:
        raise ValueError(
            f"threshold_method must be one of {list(THRESHOLD_METHODS)}, got {method!r}"
        )
    x = np.asarray(x, dtype=np.float64)
    u = np.unique(x)
    mid = (u[:-1] + u[1:]) / 2.0
    if mid.size == 0:
        return mid
    if method != "exact" and u.size > 4:
        k = min(_n_thresholds(max_thresholds, u.size), mid.size)
        if method == "random":
            if k < mid.size:
                rng = check_random_state(rng)
                mid = np.sort(mid[rng.choice(mid.size, size=k, replace=False)])
        elif method == "percentile":
            mid = np.unique(np.percentile(mid, np.linspace(0.0, 100.0, k)))
        else:
            mid = np.unique(np.histogram(mid, bins=k)[1])
    if min_samples_leaf > 1:
        xs = np.sort(x)
        pos = np.searchsorted(xs, mid, side="right")
        mid = mid[(pos >= min_samples_leaf) & (x.size - pos >= min_samples_leaf)]
    return np.ascontiguousarray(mid, dtype=np.float64)


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_alpha(name, value):
    if not isinstance(value, (int, float)) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def _early(name, value) -> bool:
    if value in ("adaptive", True):
        return True
    if value in (None, False, "none"):
        return False
    raise ValueError(f"{name} must be 'adaptive' or None, got {value!r}")


class _BaseCIT(BaseEstimator):
    _task = "classification"

    def __init__(
        self,
        *,
        selector=None,
        splitter=None,
        alpha_selector=0.05,
        alpha_splitter=0.05,
        adjust_alpha_selector=True,
        adjust_alpha_splitter=True,
        n_resamples_selector="auto",
        n_resamples_splitter="auto",
        early_stopping_selector="adaptive",
        early_stopping_splitter="adaptive",
        feature_muting=True,
        feature_scanning=True,
        threshold_scanning=True,
        threshold_method="exact",
        max_thresholds=None,
        max_features=None,
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_impurity_decrease=0.0,
        categorical_features=None,
        keep_null=False,
        random_state=None,
    ):
        self.selector = selector
        self.splitter = splitter
        self.alpha_selector = alpha_selector
        self.alpha_splitter = alpha_splitter
        self.adjust_alpha_selector = adjust_alpha_selector
        self.adjust_alpha_splitter = adjust_alpha_splitter
        self.n_resamples_selector = n_resamples_selector
        self.n_resamples_splitter = n_resamples_splitter
        self.early_stopping_selector = early_stopping_selector
        self.early_stopping_splitter = early_stopping_splitter
        self.feature_muting = feature_muting
        self.feature_scanning = feature_scanning
        self.threshold_scanning = threshold_scanning
        self.threshold_method = threshold_method
        self.max_thresholds = max_thresholds
        self.max_features = max_features
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.categorical_features = categorical_features
        self.keep_null = keep_null
        self.random_state = random_state

    # -- parameters ------------------------------------------------------------------

    def _n_features_node(self, m: int) -> int:
        mf = self.max_features
        if mf is None:
            return m
        if mf == "sqrt":
            return max(1, int(math.ceil(math.sqrt(m))))
        if mf == "log2":
            return max(1, int(math.ceil(math.log2(max(m, 2)))))
        if isinstance(mf, (int, np.integer)) and not isinstance(mf, bool) and mf >= 1:
            return min(int(mf), m)
        if isinstance(mf, float) and 0.0 < mf <= 1.0:
            return max(1, int(math.ceil(mf * m)))
        raise ValueError(
            "max_features must be None, 'sqrt', 'log2', an int >= 1 or a fraction "
            f"in (0, 1], got {mf!r}"
        )

    def _validate(self):
        classif = self._task == "classification"
        sel = self.selector if self.selector is not None else ("mc" if classif else "pc")
        table = CLASSIFICATION_SELECTORS if classif else REGRESSION_SELECTORS
        if sel not in table:
            raise ValueError(f"selector must be one of {list(table)}, got {sel!r}")
        spl = self.splitter if self.splitter is not None else ("gini" if classif else "mse")
        stable = _SPLITTERS_CLF if classif else _SPLITTERS_REG
        if spl not in stable:
            raise ValueError(f"splitter must be one of {list(stable)}, got {spl!r}")
        for name in ("max_depth",):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, np.integer)) or v < 0):
                raise ValueError(f"{name} must be None or an int >= 0, got {v!r}")
        for name, low in (("min_samples_split", 2), ("min_samples_leaf", 1)):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"{name} must be an int >= {low}, got {v!r}")
        if self.threshold_method not in THRESHOLD_METHODS:
            raise ValueError(
                f"threshold_method must be one of {list(THRESHOLD_METHODS)}, "
                f"got {self.threshold_method!r}"
            )
        for name in ("n_resamples_selector", "n_resamples_splitter"):
            n_resamples(getattr(self, name), 0.05)
        return dict(
            sel=table[sel],
            crit=stable[spl],
            a_sel=_check_alpha("alpha_selector", self.alpha_selector),
            a_spl=_check_alpha("alpha_splitter", self.alpha_splitter),
            es_sel=_early("early_stopping_selector", self.early_stopping_selector),
            es_spl=_early("early_stopping_splitter", self.early_stopping_splitter),
        )

    def check_params(self):
        """Validate the parameters without fitting; raises ValueError with the reason.

        Returns ``self`` (so a page can check a configuration before starting a job).
        """
        self._validate()
        self._n_features_node(10)
        _n_thresholds(self.max_thresholds, 10)
        v = self.min_impurity_decrease
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v >= 0.0:
            raise ValueError(f"min_impurity_decrease must be a number >= 0, got {v!r}")
        return self

    def _categorical_mask(self, p):
        cf = self.categorical_features
        mask = np.zeros(p, dtype=bool)
        if cf is None:
            return mask
        a = np.asarray(cf)
        if a.dtype == bool:
            if a.shape != (p,):
                raise ValueError(f"categorical_features mask must have {p} booleans")
            return a.copy()
        mask[a.astype(np.int64)] = True
        return mask

    # -- fit -------------------------------------------------------------------------

    def _fit(self, X, y_code, y_val, n_classes):
        prm = self._validate()
        classif = self._task == "classification"
        n, p = X.shape
        self.n_features_in_ = p
        is_cat = self._categorical_mask(p)
        for j in np.flatnonzero(is_cat):
            col = X[:, j]
            if np.any(col < 0) or np.any(col != np.round(col)):
                raise ValueError(f"categorical feature {j} must hold integer codes 0, 1, ...")
        rng = check_random_state(self.random_state)
        max_depth = self.max_depth if self.max_depth is not None else np.iinfo(np.int64).max
        crit = prm["crit"]
        nodes = []  # dicts in preorder
        importances = np.zeros(p)
        # stack of (rows, depth, pool, parent, is_left)
        stack = [(np.arange(n), 0, np.arange(p), -1, False)]
        while stack:
            rows, depth, pool, parent, is_left = stack.pop()
            node_id = len(nodes)
            yc = np.ascontiguousarray(y_code[rows])
            yv = np.ascontiguousarray(y_val[rows])
            node = {"rows_n": rows.size}
            if classif:
                counts = weighted_class_counts(yc, np.ones(rows.size), n_classes)
                node["value"] = counts / counts.sum()
                node["impurity"] = class_impurity(counts, float(rows.size), crit)
            else:
                node["value"] = np.array([yv.mean()])
                node["impurity"] = squared_error(float(rows.size), yv.sum(), (yv * yv).sum())
            node.update(
                feature=-2,
                threshold=-2.0,
                left=-1,
                right=-1,
                cats=None,
                p_sel=np.nan,
                p_spl=np.nan,
                b_sel=0,
                b_spl=0,
                record={"features": [], "statistics": [], "p_values": [], "n_permutations": []},
            )
            nodes.append(node)
            if parent >= 0:
                nodes[parent]["left" if is_left else "right"] = node_id
            split = self._split_node(
                X, rows, yc, yv, n_classes, depth, max_depth, pool, is_cat, prm, rng, node
            )
            if split is None:
                continue
            f, goes_left, child_pool, delta = split
            importances[f] += delta
            # push right first so the left child gets the next id (preorder)
            stack.append((rows[~goes_left], depth + 1, child_pool, node_id, False))
            stack.append((rows[goes_left], depth + 1, child_pool, node_id, True))
        self._store(nodes, importances, n_classes, p, is_cat)
        return self

    def _split_node(
        self, X, rows, yc, yv, n_classes, depth, max_depth, pool, is_cat, prm, rng, node
    ):
        classif = self._task == "classification"
        m = rows.size
        if m < self.min_samples_split or depth >= max_depth or m < 2 * self.min_samples_leaf:
            return None
        if node["impurity"] <= 1e-12:
            return None
        Xn = X[rows]
        # drop features constant at the node (for the whole subtree)
        nonconst = np.array(
            [f for f in pool if Xn[0, f] != Xn[:, f].min() or Xn[:, f].max() != Xn[0, f]],
            dtype=np.int64,
        )
        if nonconst.size == 0:
            return None
        k = self._n_features_node(nonconst.size)
        tested = (
            np.sort(rng.choice(nonconst, size=k, replace=False)) if k < nonconst.size else nonconst
        )
        m_t = tested.size
        a_sel = prm["a_sel"] / m_t if self.adjust_alpha_selector else prm["a_sel"]
        B = n_resamples(self.n_resamples_selector, a_sel)
        if self.adjust_alpha_selector and _is_int(self.n_resamples_selector):
            B *= m_t  # as citrees: an integer B is per test at the unadjusted level
        prepared = []
        stats = []
        for f in tested:
            x = np.ascontiguousarray(Xn[:, f])
            if is_cat[f]:
                a, n_a = bin_codes(x, categorical=True)
                code = MI if classif else ETA_REG
            elif prm["sel"] == MI:
                a, n_a = bin_codes(x)
                code = MI
            else:
                a, n_a = np.zeros(m, dtype=np.int64), 1
                code = prm["sel"]
            stats.append(statistic(code, x, a, n_a, yc, yv, n_classes))
            prepared.append((code, x, a, n_a))
        order = (
            np.argsort(-np.asarray(stats), kind="stable")
            if self.feature_scanning
            else rng.permutation(m_t)
        )
        rec = node["record"]
        rec["alpha_selector"] = a_sel
        rec["n_tested"] = int(m_t)
        rec["candidates"] = [int(f) for f in tested]
        rec["candidate_statistics"] = [float(s) for s in stats]
        if self.keep_null:
            rec["nulls"] = {}
        best_p = np.inf
        best_f = -1
        n_ties = 0
        muted = set()
        for i in order:
            f = int(tested[i])
            code, x, a, n_a = prepared[i]
            res = selector_test(
                code,
                x,
                a,
                n_a,
                yc,
                yv,
                n_classes,
                B,
                int(rng.randint(0, 2**31 - 1)),
                alpha=a_sel,
                adaptive=prm["es_sel"],
                keep_null=self.keep_null,
            )
            rec["features"].append(f)
            rec["statistics"].append(res.statistic)
            rec["p_values"].append(res.p_value)
            rec["n_permutations"].append(res.n_permutations)
            if self.keep_null:
                rec["nulls"][f] = res.null
            if res.p_value < best_p:
                best_p, best_f, n_ties = res.p_value, f, 1
                best_b = res.n_permutations
            elif res.p_value == best_p:
                n_ties += 1
                if rng.randint(0, n_ties) == 0:
                    best_f = f
                    best_b = res.n_permutations
            if res.p_value >= a_sel and self.feature_muting and nonconst.size > 1:
                muted.add(f)
            if self.feature_scanning and res.p_value < a_sel:
                break
        if best_p >= a_sel:
            return None
        child_pool = np.array([f for f in nonconst if f not in muted], dtype=np.int64)
        if child_pool.size == 0:
            child_pool = nonconst
        node["p_sel"] = best_p
        node["b_sel"] = best_b
        # ---- stage B
        f = best_f
        x = np.ascontiguousarray(Xn[:, f])
        cat_order = None
        if is_cat[f]:
            cats = np.unique(x).astype(np.int64)
            if classif:
                target = (yc == int(np.argmax(node["value"]))).astype(np.float64)
            else:
                target = yv
            means = np.array([target[x == c].mean() for c in cats])
            cat_order = cats[np.argsort(means, kind="stable")]
            rank = np.empty(int(cats.max()) + 1)
            rank[cat_order] = np.arange(cat_order.size, dtype=np.float64)
            x = np.ascontiguousarray(rank[x.astype(np.int64)])
        cand = threshold_candidates(
            x,
            self.threshold_method,
            self.max_thresholds,
            rng=rng,
            min_samples_leaf=self.min_samples_leaf,
        )
        if cand.size == 0:
            return None
        crit_name = {GINI: "gini", ENTROPY: "entropy", SQUARED_ERROR: "squared_error"}[prm["crit"]]
        gains, pos = threshold_gains(
            x, yc if classif else yv, cand, crit_name, n_classes=n_classes if classif else None
        )
        child = node["impurity"] - gains
        a_spl = prm["a_spl"] / cand.size if self.adjust_alpha_splitter else prm["a_spl"]
        B2 = n_resamples(self.n_resamples_splitter, a_spl)
        if self.adjust_alpha_splitter and _is_int(self.n_resamples_splitter):
            B2 *= cand.size
        sort_idx = np.argsort(x, kind="stable")
        ycs = np.ascontiguousarray(yc[sort_idx])
        yvs = np.ascontiguousarray(yv[sort_idx])
        t_order = (
            np.argsort(child, kind="stable")
            if self.threshold_scanning
            else rng.permutation(cand.size)
        )
        rec["candidate_thresholds"] = [float(t) for t in cand]
        rec["candidate_threshold_statistics"] = [float(c) for c in child]
        if cat_order is not None:
            rec["category_order"] = [int(c) for c in cat_order]
        rec["thresholds"] = []
        rec["threshold_statistics"] = []
        rec["threshold_p_values"] = []
        rec["alpha_splitter"] = a_spl
        best_p2 = np.inf
        best_t = -1
        n_ties = 0
        seed_b = int(rng.randint(0, 2**31 - 1))
        kw = dict(alpha=a_spl, adaptive=prm["es_spl"], keep_null=self.keep_null)
        k_cls = n_classes if classif else 1
        # one seed per node: every threshold sees the same permutations, so testing the
        # first threshold alone and then the rest at once (one prefix scan per permutation)
        # gives the same p-values as testing them one by one.  With threshold scanning the
        # shared run stops once the thresholds up to the first significant one are decided
        # (testing every remaining candidate to its own decision spent most of some fits on
        # thresholds after the one that scanning stops at).
        first = splitter_test(
            classif, ycs, yvs, int(pos[t_order[0]]), prm["crit"], k_cls, B2, seed_b, **kw
        )
        results = [first]
        if not (self.threshold_scanning and first.p_value < a_spl) and t_order.size > 1:
            results += splitter_tests(
                classif,
                ycs,
                yvs,
                pos[t_order[1:]],
                prm["crit"],
                k_cls,
                B2,
                seed_b,
                stop_at_first=self.threshold_scanning,
                **kw,
            )
        for i, res in zip(t_order, results, strict=False):
            rec["thresholds"].append(float(cand[i]))
            rec["threshold_statistics"].append(res.statistic)
            rec["threshold_p_values"].append(res.p_value)
            rec.setdefault("threshold_n_permutations", []).append(res.n_permutations)
            if res.p_value < best_p2:
                best_p2, best_t, n_ties = res.p_value, int(i), 1
                best_b2, best_null = res.n_permutations, res.null
            elif res.p_value == best_p2:
                n_ties += 1
                if rng.randint(0, n_ties) == 0:
                    best_t, best_b2, best_null = int(i), res.n_permutations, res.null
            if self.threshold_scanning and res.p_value < a_spl:
                break
        if best_p2 >= a_spl:
            return None
        delta = float(gains[best_t])
        if delta < self.min_impurity_decrease or delta <= 0.0:
            return None
        thr = float(cand[best_t])
        rec["chosen_threshold"] = thr
        goes_left = x <= thr
        node["feature"] = int(f)
        node["p_spl"] = best_p2
        node["b_spl"] = best_b2
        if self.keep_null:
            rec["threshold_null"] = best_null
        if cat_order is not None:
            node["cats"] = np.sort(cat_order[: int(math.floor(thr)) + 1])
            node["threshold"] = np.nan
        else:
            node["threshold"] = thr
        return f, goes_left, child_pool, delta

    def _store(self, nodes, importances, n_classes, p, is_cat):
        classif = self._task == "classification"
        cat_offsets = cat_values = None
        if any(nd["cats"] is not None for nd in nodes):
            sizes = [0 if nd["cats"] is None else nd["cats"].size for nd in nodes]
            cat_offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
            cat_values = np.concatenate(
                [nd["cats"] for nd in nodes if nd["cats"] is not None]
            ).astype(np.int64)
        p_sel = np.array([nd["p_sel"] for nd in nodes])
        self.tree_ = TreeArrays(
            np.array([nd["left"] for nd in nodes]),
            np.array([nd["right"] for nd in nodes]),
            np.array([nd["feature"] for nd in nodes]),
            np.array([nd["threshold"] if nd["cats"] is None else 0.0 for nd in nodes]),
            np.array([nd["impurity"] for nd in nodes]),
            np.array([nd["rows_n"] for nd in nodes]),
            np.array([float(nd["rows_n"]) for nd in nodes]),
            np.stack([nd["value"] for nd in nodes])[:, None, :],
            task=self._task,
            n_features=p,
            classes_=self.classes_ if classif else None,
            p_value=p_sel,
            cat_offsets=cat_offsets,
            cat_values=cat_values,
        )
        self.p_value_selector_ = p_sel
        self.p_value_splitter_ = np.array([nd["p_spl"] for nd in nodes])
        self.n_permutations_selector_ = np.array([nd["b_sel"] for nd in nodes], dtype=np.int64)
        self.n_permutations_splitter_ = np.array([nd["b_spl"] for nd in nodes], dtype=np.int64)
        self.node_records_ = [nd["record"] for nd in nodes]
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances

    # -- predict ---------------------------------------------------------------------

    def _X(self, X):
        check_is_fitted(self, "tree_")
        return self.tree_.check_X(X)

    def apply(self, X):
        """Leaf id of each row."""
        return self.tree_.apply(self._X(X))

    def get_depth(self) -> int:
        check_is_fitted(self, "tree_")
        return int(self.tree_.max_depth)

    def get_n_leaves(self) -> int:
        check_is_fitted(self, "tree_")
        return int(self.tree_.n_leaves)


def _check_Xy(X, y):
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X holds NaN or infinite values")
    y = np.asarray(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y has {y.shape[0]} rows, X has {X.shape[0]}")
    return X, y


class ConditionalInferenceTreeClassifier(ClassifierMixin, _BaseCIT):
    """Conditional inference tree classifier (selector 'mc' | 'mi'; splitter 'gini' |
    'entropy').  See the module docstring for the fitted attributes."""

    _task = "classification"

    def fit(self, X, y):
        X, y = _check_Xy(X, y)
        self.classes_, y_code = np.unique(y, return_inverse=True)
        self.n_classes_ = self.classes_.size
        y_code = np.ascontiguousarray(y_code, dtype=np.int64)
        return self._fit(X, y_code, np.zeros(X.shape[0]), self.n_classes_)

    def predict_proba(self, X):
        return self.tree_.predict_proba(self._X(X))

    def predict(self, X):
        return self.tree_.predict(self._X(X))


class ConditionalInferenceTreeRegressor(RegressorMixin, _BaseCIT):
    """Conditional inference tree regressor (selector 'pc'; splitter 'mse')."""

    _task = "regression"

    def fit(self, X, y):
        X, y = _check_Xy(X, y)
        y_val = np.ascontiguousarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y_val)):
            raise ValueError("y holds NaN or infinite values")
        return self._fit(X, np.zeros(X.shape[0], dtype=np.int64), y_val, 1)

    def predict(self, X):
        return self.tree_.predict(self._X(X))


# ---------------------------------------------------------------------------------------
# Compare page registration and warm-up
# ---------------------------------------------------------------------------------------


def _build_cit(task, random_state, **params):
    cls = (
        ConditionalInferenceTreeClassifier
        if task == "classification"
        else ConditionalInferenceTreeRegressor
    )
    return cls(random_state=random_state, **params)


CIT_PARAMS = (
    ParamSpec(
        "alpha_selector",
        0.05,
        "float",
        0.001,
        0.5,
        help="Level of the stage-A permutation test (Bonferroni-adjusted per node).",
    ),
    ParamSpec(
        "n_resamples_selector",
        "auto",
        "choice",
        choices=("auto", "minimum", "maximum"),
        help="Permutations per stage-A test: presets at the adjusted level "
        "(minimum ceil(1/a), auto, maximum ceil(1/(4 a^2))).",
    ),
    ParamSpec(
        "max_depth", 0, "int_or_none", 0, 50, help="Maximum depth of the tree; 0 means unlimited."
    ),
    ParamSpec(
        "min_samples_leaf", 1, "int", 1, 1000, help="Minimum number of training rows in a leaf."
    ),
)

register_model(
    ModelSpec(
        key="treelab_cit",
        label="Conditional inference tree (TreeLab)",
        build=_build_cit,
        params=CIT_PARAMS,
        description="Splits only when a permutation test finds an association (stage A picks "
        "the feature, stage B the threshold); Milletich et al., arXiv 2607.01417.",
        family="TreeLab",
    )
)


@register_warmup("cit.tree")
def _warmup() -> None:
    """Fit tiny trees through every code path (both tasks, mi selector, categorical)."""
    rng = np.random.RandomState(0)
    X = np.column_stack([np.arange(30.0), rng.randint(0, 3, 30).astype(np.float64)])
    y = (X[:, 0] > 14).astype(np.int64)
    for sel in ("mc", "mi"):
        for spl in ("gini", "entropy"):
            ConditionalInferenceTreeClassifier(
                selector=sel, splitter=spl, categorical_features=[1], random_state=0
            ).fit(X, y)
    ConditionalInferenceTreeRegressor(categorical_features=[1], random_state=0).fit(
        X, X[:, 0] * 1.0
    )
