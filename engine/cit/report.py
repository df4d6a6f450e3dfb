"""Tables that explain a fitted conditional inference tree or compare feature rankings.

* :func:`node_feature_table` -- stage A at one node: every feature's selector statistic,
  permutation p-value, Bonferroni-adjusted p-value, permutations used and whether it was
  chosen (from ``node_records_`` of a fitted tree).
* :func:`threshold_table` -- stage B at one node: the tested thresholds with their weighted
  child impurity and left-tailed p-value.
* :func:`rankings_table` -- several importance vectors side by side, normalised to sum 1,
  with the rank of every feature under each method and their mean.

Pure functions of fitted estimators / arrays; they return pandas DataFrames.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

#: Status of a feature in a node's stage A.
TESTED = "tested"
NOT_TESTED = "not tested (scanning stopped at a significant feature)"
NOT_IN_POOL = "not in the node's pool (muted above, constant here or not drawn)"


def _names(est, feature_names):
    p = est.n_features_in_
    if feature_names is None:
        return [f"x{j}" for j in range(p)]
    if len(feature_names) != p:
        raise ValueError(f"feature_names has {len(feature_names)} names, the tree {p} features")
    return [str(n) for n in feature_names]


def node_feature_table(
    est, node: int, feature_names: Sequence[str] | None = None, *, include_untested: bool = True
) -> pd.DataFrame:
    """Stage A at ``node`` of a fitted conditional inference tree, one row per feature.

    Parameters
    ----------
    est : fitted ConditionalInferenceTreeClassifier / Regressor (``node_records_``).
    node : node id (preorder, as in ``est.tree_``).
    feature_names : display names (default ``x0, x1, ...``).
    include_untested : also list features with no p-value at this node (scanning stopped
        before them, or not in the node's pool).

    Returns
    -------
    DataFrame with columns ``feature``, ``index`` (column index), ``statistic`` (raw
    selector statistic, or the asymptotic test's quadratic / maximum statistic; NaN when
    not computed), ``p_value`` (right-tailed +1 Monte Carlo p-value or the asymptotic
    p-value, unadjusted; NaN when not tested), ``p_bonferroni`` the adjusted p-value when
    the tree adjusts (permutation: min(1, m_t p); asymptotic: partykit's 1 - (1 - p)^m_t;
    m_t = features tested at the node) else ``p_value``, ``level`` (what is compared with
    the level: permutation p with alpha / m_t or alpha, asymptotic adjusted p with alpha),
    ``alpha`` (the nominal level, on the scale of ``p_bonferroni``: significant exactly when
    ``p_bonferroni < alpha``), ``permutations`` (0 for asymptotic tests), ``significant``,
    ``chosen`` (the split feature), ``status``, ``at_floor`` (a permutation p-value equal
    to its floor 1 / (B + 1): no permutation reached the observed statistic); sorted by p-value, then statistic
    (descending).  Empty (with these columns) at a node where stage A did not run (too few
    rows, maximum depth or a pure node).

    Raises
    ------
    IndexError if ``node`` is not a node of the tree.
    """
    n_nodes = len(est.node_records_)
    if not 0 <= int(node) < n_nodes:
        raise IndexError(f"node {node} is not in the tree (it has {n_nodes} nodes)")
    names = _names(est, feature_names)
    rec = est.node_records_[int(node)]
    cols = [
        "feature",
        "index",
        "statistic",
        "p_value",
        "p_bonferroni",
        "level",
        "permutations",
        "significant",
        "chosen",
        "status",
    ]
    if "alpha_selector" not in rec:
        return pd.DataFrame(columns=cols)
    level = float(rec["alpha_selector"])
    m_t = int(rec.get("n_tested", len(rec["features"])))
    adjust = bool(getattr(est, "adjust_alpha_selector", True))
    chosen = int(est.tree_.feature[int(node)])
    asymptotic = rec.get("p_value_method") == "asymptotic"
    rows = _tested_rows(rec, names, chosen, level, m_t, adjust, asymptotic)
    if include_untested:
        rows += _untested_rows(rec, names, level)
    df = pd.DataFrame(rows, columns=cols)
    # the nominal level, on the scale of p_bonferroni: p_bonferroni < alpha is the decision
    # (min(1, m p) < alpha exactly when p < alpha / m)
    nominal = getattr(est, "alpha_selector", None)
    if nominal is None:
        nominal = level * m_t if adjust and not asymptotic else level
    df.insert(cols.index("level") + 1, "alpha", float(nominal))
    permutations = df["permutations"].to_numpy(float)
    df["at_floor"] = (permutations > 0) & np.isclose(
        df["p_value"].to_numpy(float), 1.0 / (permutations + 1.0), rtol=1e-9, atol=0.0
    )
    df["_s"] = -df["statistic"].fillna(-np.inf)
    df = df.sort_values(["p_value", "_s", "index"], na_position="last", kind="stable")
    return df.drop(columns="_s").reset_index(drop=True)


def _tested_rows(rec, names, chosen, level, m_t, adjust, asymptotic) -> list[dict]:
    """:func:`node_feature_table` rows of the features tested at the node (``rec``: its
    record), with their adjusted p-value and decision."""
    rows = []
    for i, (f, s, pv, b) in enumerate(
        zip(rec["features"], rec["statistics"], rec["p_values"], rec["n_permutations"], strict=True)
    ):
        if asymptotic:  # partykit's adjustment, compared with alpha
            p_adj = float(rec["p_values_adjusted"][i])
            significant = p_adj < level
        else:  # Bonferroni on the level: p < alpha / m
            p_adj = min(1.0, m_t * float(pv)) if adjust else float(pv)
            significant = pv < level
        rows.append(
            dict(
                feature=names[f],
                index=int(f),
                statistic=float(s),
                p_value=float(pv),
                p_bonferroni=p_adj,
                level=level,
                permutations=int(b),
                significant=bool(significant),
                chosen=bool(f == chosen),
                status=TESTED,
            )
        )
    return rows


def _untested_rows(rec, names, level) -> list[dict]:
    """:func:`node_feature_table` rows of the features without a p-value at the node: the
    candidates scanning stopped before (with their statistic), then those not in the
    node's pool."""

    def row(f: int, statistic: float, status: str) -> dict:
        return dict(
            feature=names[f],
            index=f,
            statistic=statistic,
            p_value=np.nan,
            p_bonferroni=np.nan,
            level=level,
            permutations=0,
            significant=False,
            chosen=False,
            status=status,
        )

    rows = []
    seen = set(int(f) for f in rec["features"])
    cand = rec.get("candidates", [])
    cstat = rec.get("candidate_statistics", [np.nan] * len(cand))
    for f, s in zip(cand, cstat, strict=True):
        if int(f) not in seen:
            seen.add(int(f))
            rows.append(row(int(f), float(s), NOT_TESTED))
    rows.extend(row(f, np.nan, NOT_IN_POOL) for f in range(len(names)) if f not in seen)
    return rows


def threshold_table(est, node: int) -> pd.DataFrame:
    """Stage B at ``node``: tested thresholds (in test order) with ``statistic`` (weighted
    child impurity), ``p_value`` (left-tailed +1), ``level`` (alpha'' = alpha / |C| or
    alpha), ``significant`` and ``chosen``.  For a categorical feature the thresholds are
    positions in the record's ``category_order``.  Empty at a node without stage B."""
    rec = est.node_records_[int(node)]
    cols = ["threshold", "statistic", "p_value", "level", "significant", "chosen"]
    if "thresholds" not in rec:
        return pd.DataFrame(columns=cols)
    level = float(rec["alpha_splitter"])
    t = np.asarray(rec["thresholds"], dtype=np.float64)
    p = np.asarray(rec["threshold_p_values"], dtype=np.float64)
    chosen = np.zeros(t.size, dtype=bool)
    if est.tree_.feature[int(node)] >= 0 and "chosen_threshold" in rec:
        chosen = t == rec["chosen_threshold"]
    return pd.DataFrame(
        {
            "threshold": t,
            "statistic": rec["threshold_statistics"],
            "p_value": p,
            "level": level,
            "significant": p < level,
            "chosen": chosen,
        },
        columns=cols,
    )


def rankings_table(
    importances: Mapping[str, Sequence[float]], feature_names: Sequence[str]
) -> pd.DataFrame:
    """Importances of several methods side by side.

    ``importances`` maps a method name to a non-negative vector (n_features,); each is
    normalised to sum 1 (all-zero vectors stay zero).  Returns one row per feature with
    ``<method>`` (normalised importance) and ``<method> rank`` (nullable Int64: 1 = most
    important, ties by column order; missing where the importance is 0, since a feature the
    method never used has no place in its order -- a tree without a split ranks nothing)
    and ``mean`` (the mean normalised importance over the methods),
    sorted by ``mean`` (descending; ties by column order).

    Raises ValueError on a vector of the wrong length or with negative entries.
    """
    p = len(feature_names)
    out = pd.DataFrame({"feature": [str(n) for n in feature_names]})
    for name, imp in importances.items():
        v = np.asarray(imp, dtype=np.float64).reshape(-1)
        if v.size != p:
            raise ValueError(f"{name}: {v.size} importances for {p} features")
        if np.any(v < -1e-12) or not np.all(np.isfinite(v)):
            raise ValueError(f"{name}: importances must be finite and >= 0")
        v = np.clip(v, 0.0, None)
        total = v.sum()
        v = v / total if total > 0 else v
        rank = np.empty(p, dtype=np.int64)
        rank[np.argsort(-v, kind="stable")] = np.arange(1, p + 1)
        out[name] = v
        out[f"{name} rank"] = pd.Series(rank, dtype="Int64").where(v > 0, pd.NA)
    if importances:
        out["mean"] = out[list(importances)].mean(axis=1)
        out = out.sort_values("mean", ascending=False, kind="stable").reset_index(drop=True)
    return out
