"""Stage A (selecting the split feature) and stage B (choosing its split point) of the
conditional inference trees at one node (docs/spec.md section 4), as the methods of
:class:`NodeTests`, which :class:`engine.cit.tree._BaseCIT` inherits: the CIT paper's
permutation tests and R partykit's ctree (asymptotic p-values, maximally selected
statistics), and the helpers they share.
"""

from __future__ import annotations

import math

import numpy as np

from engine.cit.asymptotic import (
    MAX_EXHAUSTIVE_LEVELS,
    categorical_pvalue,
    level_sums,
    maxstat_ordered,
    maxstat_unordered,
    n_influence_columns,
    node_influence,
    numeric_pvalues,
    numeric_tests,
    pinv_sym,
)
from engine.cit.parameters import _is_int
from engine.cit.permutation import n_resamples, selector_test, splitter_test, splitter_tests
from engine.cit.statistics import (
    ETA_REG,
    MI,
    bin_codes,
    statistic,
)
from engine.cit.thresholds import is_constant, threshold_candidates
from engine.criteria import (
    ENTROPY,
    GINI,
    SQUARED_ERROR,
    class_impurity,
    squared_error,
    threshold_gains,
)

#: ``sqrt(.Machine$double.xmin)``: partykit's tolerance for tied criteria.
_TIE_CRITERION = math.sqrt(np.finfo(np.float64).tiny)


def _ctree_order(crit, stat, features):
    """Features' positions by partykit's criterion ``log(1 - adjusted p)`` (``crit``, float
    (f,)), best first, and the criterion as partykit ranks it: the criteria tied with the
    largest (within ``sqrt(DBL_MIN)``) get ``rank(log statistic) / (1000 sum(column))``
    added (``column`` = the feature's 1-based column in R's model frame, the response
    first), and equal criteria put the later column first (``rev(order(crit))``).
    Returns ``(order int64 (f,), ranked float64 (f,))``."""
    from scipy.stats import rankdata

    ranked = np.where(np.isnan(crit), -np.inf, np.asarray(crit, dtype=np.float64))
    top = ranked.max()
    if np.isfinite(top):
        ties = np.flatnonzero(np.abs(ranked - top) < _TIE_CRITERION)
        if ties.size > 1:
            logstat = np.log(np.maximum(np.asarray(stat)[ties], np.finfo(np.float64).eps))
            columns = np.asarray(features)[ties] + 2.0
            ranked[ties] = ranked[ties] + rankdata(logstat) / (columns.sum() * 1000.0)
    # descending criterion; among equal values the later column first
    order = np.lexsort((-np.arange(ranked.size), -ranked))
    return order.astype(np.int64), ranked


def _observed(X, rows, f, yc, yv):
    """The node's rows where feature ``f`` is observed: ``(rows int64, y codes, y values)``
    (``yc`` / ``yv`` are aligned with ``rows``)."""
    keep = ~np.isnan(X[rows, f])
    return rows[keep], np.ascontiguousarray(yc[keep]), np.ascontiguousarray(yv[keep])


def _constant_target(classif, yc, yv) -> bool:
    """Whether a target has no variation (fewer than 2 rows, one class, or a constant
    value): partykit's test is NA there (the influence variance is zero)."""
    if yc.size < 2:
        return True
    if classif:
        return bool(np.all(yc == yc[0]))
    return bool(is_constant(yv.min(), yv.max()))


def _impurity_decrease(classif, yc, yv, goes_left, n_classes, criterion, parent):
    """``parent - (n_L / n) i(L) - (n_R / n) i(R)`` of a split (Gini / entropy of the class
    counts, or the squared error)."""
    n = goes_left.size
    n_left = float(goes_left.sum())
    n_right = n - n_left
    if classif:
        left = np.bincount(yc[goes_left], minlength=n_classes).astype(np.float64)
        right = np.bincount(yc[~goes_left], minlength=n_classes).astype(np.float64)
        child = (n_left / n) * class_impurity(left, n_left, criterion) + (
            n_right / n
        ) * class_impurity(right, n_right, criterion)
    else:
        yl = yv[goes_left]
        yr = yv[~goes_left]
        child = (n_left / n) * squared_error(n_left, yl.sum(), (yl * yl).sum()) + (
            n_right / n
        ) * squared_error(n_right, yr.sum(), (yr * yr).sum())
    return float(parent - child)


class NodeTests:
    """Stage A and stage B of one node (mixed into the trees' base class)."""

    def _stage_a_permutation(
        self, X, rows, yc, yv, n_classes, tested, nonconst, is_cat, prm, rng, node
    ):
        """The paper's stage A (docs/spec.md section 4): Monte Carlo permutation tests of the
        selector statistic at the Bonferroni level alpha / m_t, feature scanning, feature
        muting.  Returns ``([(feature, p, permutations)], child_pool)`` or None."""
        classif = self._task == "classification"
        Xn = X[rows]
        m_t = tested.size
        a_sel = prm["a_sel"] / m_t if self.adjust_alpha_selector else prm["a_sel"]
        B = n_resamples(self.n_resamples_selector, a_sel)
        if self.adjust_alpha_selector and _is_int(self.n_resamples_selector):
            B *= m_t  # as citrees: an integer B is per test at the unadjusted level
        prepared = []
        stats = []
        for f in tested:
            x = np.ascontiguousarray(Xn[:, f])
            yc_f, yv_f = yc, yv
            if self._has_missing[f]:  # tested on the rows where f is observed
                keep = ~np.isnan(x)
                if not keep.all():
                    x = np.ascontiguousarray(x[keep])
                    yc_f = np.ascontiguousarray(yc[keep])
                    yv_f = np.ascontiguousarray(yv[keep])
                    if _constant_target(classif, yc_f, yv_f):
                        stats.append(0.0)  # no test: p = 1
                        prepared.append(None)
                        continue
            if is_cat[f]:
                a, n_a = bin_codes(x, categorical=True)
                code = MI if classif else ETA_REG
            elif prm["sel"] == MI:
                a, n_a = bin_codes(x)
                code = MI
            else:
                a, n_a = np.zeros(x.size, dtype=np.int64), 1
                code = prm["sel"]
            stats.append(statistic(code, x, a, n_a, yc_f, yv_f, n_classes))
            prepared.append((code, x, a, n_a, yc_f, yv_f))
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
            if prepared[i] is None:  # the target is constant where f is observed
                rec["features"].append(f)
                rec["statistics"].append(0.0)
                rec["p_values"].append(1.0)
                rec["n_permutations"].append(0)
                if self.feature_muting and nonconst.size > 1:
                    muted.add(f)
                continue
            code, x, a, n_a, yc_f, yv_f = prepared[i]
            res = selector_test(
                code,
                x,
                a,
                n_a,
                yc_f,
                yv_f,
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
        return [(best_f, best_p, best_b)], child_pool

    def _stage_a_asymptotic(self, X, rows, yc, yv, n_classes, tested, nonconst, is_cat, prm, node):
        """ctree's stage A (:mod:`engine.cit.asymptotic`): every drawn feature's asymptotic
        p-value, adjusted as partykit does when ``adjust_alpha_selector``
        (``1 - (1 - p)^m``); features ranked by ``log(1 - adjusted p)`` with partykit's
        tie rule (ties broken by the statistic's rank, then by the later column).  Returns
        ``([(feature, adjusted p, 0)], child_pool)`` for the significant features, best
        first, or None when none is below ``alpha_selector``."""
        classif = self._task == "classification"
        n_q = n_influence_columns(classif, n_classes)
        mean_h, cov_h = node_influence(yc, yv, classif, n_q)
        node["influence"] = (n_q, mean_h, cov_h)
        m_t = tested.size
        stat = np.empty(m_t)
        p = np.empty(m_t)
        lower = np.empty(m_t)
        df = np.empty(m_t)
        # a feature missing on some of the node's rows is tested on the rows where it is
        # observed, with the influence function of those rows (partykit's subset); one
        # whose observed rows leave the target constant has no test (NA in partykit)
        partial = np.array([self._has_missing[f] and np.isnan(X[rows, f]).any() for f in tested])
        numeric = np.flatnonzero(~is_cat[tested] & ~partial)
        if numeric.size:
            D, vx = numeric_tests(
                X, rows, np.ascontiguousarray(tested[numeric]), yc, yv, classif, n_q, mean_h
            )
            stat[numeric], p[numeric], lower[numeric], df[numeric] = numeric_pvalues(
                D, vx, cov_h, prm["teststat"]
            )
        for i in np.flatnonzero(is_cat[tested] | partial):
            f = int(tested[i])
            if partial[i]:
                obs_rows, yc_f, yv_f = _observed(X, rows, f, yc, yv)
                if _constant_target(classif, yc_f, yv_f):
                    stat[i] = p[i] = lower[i] = df[i] = np.nan
                    continue
                mean_f, cov_f = node_influence(yc_f, yv_f, classif, n_q)
            else:
                obs_rows, yc_f, yv_f, mean_f, cov_f = rows, yc, yv, mean_h, cov_h
            if not is_cat[f]:
                D, vx = numeric_tests(X, obs_rows, np.array([f]), yc_f, yv_f, classif, n_q, mean_f)
                res = numeric_pvalues(D, vx, cov_f, prm["teststat"])
                stat[i], p[i], lower[i], df[i] = (float(v[0]) for v in res)
                continue
            codes = X[obs_rows, f].astype(np.int64)
            counts, sums = level_sums(codes, int(codes.max()) + 1, yc_f, yv_f, classif, n_q)
            stat[i], p[i], lower[i], df[i] = categorical_pvalue(
                counts, sums, mean_f, cov_f, prm["teststat"]
            )
        # partykit's Bonferroni counts the features with a test (non-NA p-values)
        m_t = int(np.count_nonzero(~np.isnan(lower)))
        crit = lower * m_t if self.adjust_alpha_selector else lower.copy()
        with np.errstate(over="ignore"):
            p_adj = -np.expm1(crit)
        alpha = prm["a_sel"]
        rec = node["record"]
        rec.update(
            p_value_method="asymptotic",
            teststat=self.teststat,
            alpha_selector=alpha,
            n_tested=int(m_t),
            candidates=[int(f) for f in tested],
            candidate_statistics=[float(v) for v in stat],
            features=[int(f) for f in tested],
            statistics=[float(v) for v in stat],
            p_values=[float(v) for v in p],
            p_values_adjusted=[float(v) for v in p_adj],
            degrees_of_freedom=[float(v) for v in df],
            n_permutations=[0] * int(m_t),
        )
        order, ranked = _ctree_order(crit, stat, tested)
        limit = math.log(1.0 - alpha)
        significant = [int(i) for i in order if ranked[i] > limit]
        if not significant:
            return None
        muted = set()
        if self.feature_muting and nonconst.size > 1:
            muted = {int(f) for f, pa in zip(tested, p_adj, strict=True) if not pa < alpha}
        child_pool = np.array([f for f in nonconst if f not in muted], dtype=np.int64)
        if child_pool.size == 0:
            child_pool = nonconst
        return [(int(tested[i]), float(p_adj[i]), 0) for i in significant], child_pool

    def _stage_b_maxstat(self, X, rows, yc, yv, n_classes, f, is_cat, prm, rng, node):
        """ctree's split point on feature ``f``: the cut point (numeric) or the split of
        the levels into two groups (categorical) with the largest two-sample statistic in
        the ``splitter`` form (:func:`engine.cit.asymptotic.maxstat_ordered` /
        ``maxstat_unordered``), both children holding at least :meth:`_min_leaf` rows.
        The search runs on the rows where ``f`` is observed (with their influence function,
        as partykit); the others are routed by :meth:`_route_missing`.  Returns ``(f,
        goes_left (over all the node's rows), impurity decrease)`` or None (no admissible
        cut point, or a decrease below ``min_impurity_decrease``)."""
        classif = self._task == "classification"
        rec = node["record"]
        m = rows.size
        min_leaf = self._min_leaf(m)  # partykit: minprob of all the node's rows
        all_yc, all_yv = yc, yv
        observed = np.ones(m, dtype=bool)
        if self._has_missing[f]:
            observed = ~np.isnan(X[rows, f])
        if observed.all():
            if "influence" not in node:
                n_q = n_influence_columns(classif, n_classes)
                mean_h, cov_h = node_influence(yc, yv, classif, n_q)
                node["influence"] = (n_q, mean_h, cov_h)
            n_q, mean_h, cov_h = node["influence"]
        else:
            rows, yc, yv = _observed(X, rows, f, yc, yv)
            if rows.size < 2 * min_leaf or _constant_target(classif, yc, yv):
                return None
            n_q = n_influence_columns(classif, n_classes)
            mean_h, cov_h = node_influence(yc, yv, classif, n_q)
        A, _ = pinv_sym(cov_h)
        var_h = np.ascontiguousarray(np.diag(cov_h))
        rec["split_statistic"] = prm["split_stat_name"]
        x = np.ascontiguousarray(X[rows, f])
        cats = None
        if is_cat[f]:
            codes = x.astype(np.int64)
            counts, sums = level_sums(codes, int(codes.max()) + 1, yc, yv, classif, n_q)
            present = np.flatnonzero(counts > 0)
            if present.size <= MAX_EXHAUSTIVE_LEVELS:
                group, best = maxstat_unordered(
                    counts[present],
                    np.ascontiguousarray(sums[present]),
                    mean_h,
                    A,
                    var_h,
                    prm["split_stat"],
                    float(min_leaf),
                )
                rec["split_statistic_value"] = float(best)
                if not best > 0.0:
                    return None
                cats = present[group == 0]
                goes_left = np.isin(codes, cats)
            else:  # many levels: ordered by their mean influence, then cut points
                if n_q == 1:
                    key = sums[present, 0] / counts[present]
                else:
                    key = sums[present, int(np.argmax(sums.sum(axis=0)))] / counts[present]
                rank = np.zeros(counts.size)
                rank[present[np.argsort(key, kind="stable")]] = np.arange(present.size)
                x = np.ascontiguousarray(rank[codes])
        order = np.argsort(x, kind="stable")
        if cats is None:
            xs = np.ascontiguousarray(x[order])
            n_left, stats_, best = maxstat_ordered(
                xs,
                np.ascontiguousarray(yc[order]),
                np.ascontiguousarray(yv[order]),
                classif,
                n_q,
                mean_h,
                A,
                var_h,
                prm["split_stat"],
                float(min_leaf),
            )
            if not is_cat[f]:
                mids = (xs[n_left - 1] + xs[n_left]) / 2.0
                # a midpoint of two adjacent floats may round up to the upper one
                mids = np.where(mids >= xs[n_left], xs[n_left - 1], mids)
                rec["candidate_thresholds"] = mids
                rec["candidate_threshold_statistics"] = stats_
            if best < 0:
                rec["split_statistic_value"] = 0.0
                return None
            rec["split_statistic_value"] = float(stats_[best])
            i = int(n_left[best])
            if is_cat[f]:
                cats = np.unique(codes[x <= xs[i - 1]])
                goes_left = np.isin(codes, cats)
            else:
                thr = float(mids[best])
                goes_left = x <= thr
        goes_left = self._route_missing(goes_left, observed, rng, node)
        delta = _impurity_decrease(
            classif, all_yc, all_yv, goes_left, n_classes, prm["crit"], node["impurity"]
        )
        if delta < self.min_impurity_decrease:
            rec.pop("n_missing_routed", None)
            rec.pop("n_missing_left", None)
            return None
        node["feature"] = int(f)
        if cats is not None:
            node["cats"] = np.sort(cats).astype(np.int64)
            node["threshold"] = np.nan
            rec["chosen_categories"] = [int(c) for c in node["cats"]]
        else:
            node["threshold"] = thr
            rec["chosen_threshold"] = thr
        return int(f), goes_left, delta

    def _stage_b_permutation(self, X, rows, yc, yv, n_classes, f, is_cat, prm, rng, node):
        """The paper's stage B (docs/spec.md section 4) on feature ``f``: a left-tailed permutation
        test of the weighted child impurity of every candidate threshold, threshold
        scanning, Bonferroni alpha / |C|.  Returns ``(f, goes_left, decrease)`` or None."""
        classif = self._task == "classification"
        rec = node["record"]
        m = rows.size
        all_yc, all_yv = yc, yv
        prepared = self._stage_b_values(X, rows, yc, yv, n_classes, f, is_cat, prm, node)
        if prepared is None:
            return None
        rows, yc, yv, observed, parent_impurity, x, cat_order = prepared
        cand = threshold_candidates(
            x,
            self.threshold_method,
            self.max_thresholds,
            rng=rng,
            min_samples_leaf=self._min_leaf(m),
        )
        if cand.size == 0:
            return None
        crit_name = {GINI: "gini", ENTROPY: "entropy", SQUARED_ERROR: "squared_error"}[prm["crit"]]
        gains, pos = threshold_gains(
            x, yc if classif else yv, cand, crit_name, n_classes=n_classes if classif else None
        )
        child = parent_impurity - gains
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
        best_p2, best_t, best_b2, best_null = self._stage_b_tests(
            classif, ycs, yvs, pos, t_order, cand, n_classes, prm, a_spl, B2, rng, rec
        )
        if best_p2 >= a_spl:
            return None
        thr = float(cand[best_t])
        delta = float(gains[best_t])
        goes_left = x <= thr
        if not observed.all():
            goes_left = self._route_missing(goes_left, observed, rng, node)
            delta = _impurity_decrease(
                classif, all_yc, all_yv, goes_left, n_classes, prm["crit"], node["impurity"]
            )
        else:
            self._route_missing(goes_left, observed, rng, node)
        if delta < self.min_impurity_decrease or delta <= 0.0:
            rec.pop("n_missing_routed", None)
            rec.pop("n_missing_left", None)
            return None
        rec["chosen_threshold"] = thr
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
        return f, goes_left, delta

    def _stage_b_values(self, X, rows, yc, yv, n_classes, f, is_cat, prm, node):
        """Stage B's rows and values of feature ``f``: the node's rows where ``f`` is
        observed (all of them without missing values), their parent impurity, and ``x``
        (a categorical feature's codes replaced by their rank in the order of the target's
        mean per category).  Returns ``(rows, yc, yv, observed (bool (m,)), parent impurity,
        x, category order or None)`` or None when fewer than 2 rows are observed."""
        classif = self._task == "classification"
        m = rows.size
        parent_impurity = node["impurity"]
        observed = np.ones(m, dtype=bool)
        if self._has_missing[f]:
            observed = ~np.isnan(X[rows, f])
        if not observed.all():  # thresholds searched and tested on the observed rows
            rows, yc, yv = _observed(X, rows, f, yc, yv)
            if rows.size < 2:
                return None
            if classif:
                counts = np.bincount(yc, minlength=n_classes).astype(np.float64)
                parent_impurity = class_impurity(counts, float(rows.size), prm["crit"])
            else:
                parent_impurity = squared_error(float(rows.size), yv.sum(), (yv * yv).sum())
        x = np.ascontiguousarray(X[rows, f])
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
        return rows, yc, yv, observed, parent_impurity, x, cat_order

    def _stage_b_tests(
        self, classif, ycs, yvs, pos, t_order, cand, n_classes, prm, a_spl, B2, rng, rec
    ):
        """The permutation tests of stage B's candidate thresholds ``cand`` in the order
        ``t_order`` (``ycs`` / ``yvs`` the target sorted by the feature, ``pos`` each
        threshold's split position), recorded in ``rec``; ties of the smallest p-value are
        broken at random.  Returns ``(best p-value, best threshold's position in cand,
        its permutations, its null distribution)``."""
        best_b2 = best_null = None
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
        return best_p2, best_t, best_b2, best_null
