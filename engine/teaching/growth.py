"""Step-through growth (the Learn page "Watch a tree grow"): how CART, the conditional
inference tree and the Partition Tree build a tree, one node at a time.

Every ``*_steps`` function returns a :class:`Growth`: a list of :class:`GrowthStep` records
computed at once (the page bounds the rows and the depth or leaves, so this is instant) and
the final tree.  Each step says which node is examined, what was scanned or tested there,
what was chosen and why, and carries the tree as it stands after the step
(:class:`engine.tree.TreeArrays`, node ids renumbered in pre-order; ``tree_node`` is the
examined node's id in it).

* :func:`cart_steps` -- depth-first CART (pre-order, left child first), every midpoint of
  every feature scanned with exact numpy code that orders candidates by the same
  floating-point proxy as the numba builder (:mod:`engine.criteria`, the builder's row
  orders from :func:`engine.cart.builder.presort`), so the chosen split equals
  :class:`engine.cart.CARTClassifier` / :class:`~engine.cart.CARTRegressor` with the same
  ``max_depth`` and ``min_samples_leaf`` (exhaustive splitter, Gini / squared error),
  ties included (tests/test_growth.py checks it).
* :func:`cit_steps` -- the fitted :class:`engine.cit.ConditionalInferenceTreeClassifier` /
  ``Regressor``'s own node records, in its growth order: stage A's tests at a node, then
  stage B's cut points on the chosen feature and the split (two steps), or the leaf.
* :func:`partition_steps` -- the Partition Tree's best-first growth
  (:meth:`fit_steps` with its ``frontier``): which leaf splits next, its gain against the
  other leaves' best gains, an X or a Y split.

:func:`prepare` bounds the rows (a seeded subsample of at most :data:`MAX_ROWS`) and keeps
the continuous features, saying what it did.

Modules: the records in :mod:`engine.teaching.growth_records`, CART's growth in
:mod:`engine.teaching.cart_growth` (both re-exported here); the conditional inference
tree's and the Partition Tree's growth here.
"""

from __future__ import annotations

import numpy as np

from engine.teaching.cart_growth import cart_steps, category_list
from engine.teaching.growth_records import (
    CART_CRITERIA,
    MAX_ROWS,
    METHODS,
    PARTITION_KINDS,
    FeatureScan,
    Growth,
    GrowthData,
    GrowthStep,
    partial_tree,
    prepare,
)
from engine.tree import TREE_LEAF, TREE_UNDEFINED, TreeArrays

__all__ = [
    "CART_CRITERIA",
    "MAX_ROWS",
    "METHODS",
    "PARTITION_KINDS",
    "FeatureScan",
    "Growth",
    "GrowthData",
    "GrowthStep",
    "cart_steps",
    "category_list",
    "cit_estimator",
    "cit_steps",
    "grow",
    "partial_tree",
    "partition_estimator",
    "partition_steps",
    "partition_tree_arrays",
    "prepare",
]


# ---------------------------------------------------------------------------------------
# conditional inference tree
# ---------------------------------------------------------------------------------------


def cit_estimator(task: str, *, max_depth: int = 3, alpha: float = 0.05, random_state: int = 0):
    """The conditional inference tree the steps are read from (partykit ctree's procedure,
    the engine's defaults, with ``max_depth`` and ``alpha_selector``)."""
    from engine.cit.tree import (
        ConditionalInferenceTreeClassifier,
        ConditionalInferenceTreeRegressor,
    )

    cls = (
        ConditionalInferenceTreeClassifier
        if task == "classification"
        else ConditionalInferenceTreeRegressor
    )
    return cls(max_depth=int(max_depth), alpha_selector=float(alpha), random_state=random_state)


def cit_steps(
    data: GrowthData, *, max_depth: int = 3, alpha: float = 0.05, class_names=None
) -> Growth:
    """The conditional inference tree's growth, read from the fitted estimator's node
    records in its growth order (pre-order).

    A node where stage A ran gives a ``'tests'`` step (every feature's statistic, p-value
    and adjusted p-value; ``details`` holds the record) followed by a ``'split'`` step
    (stage B's cut points on the chosen feature: ``candidate_thresholds``,
    ``candidate_threshold_statistics``, ``chosen_threshold``), or a single ``'leaf'``
    step when no feature is significant (or no cut point is admissible).  Nodes that are
    leaves before any test (depth, ``min_samples_split`` = 20, ``min_samples_leaf`` = 7,
    pure) get no step.
    """
    est = cit_estimator(data.task, max_depth=max_depth, alpha=alpha)
    est.fit(data.X, data.y if class_names is None else np.asarray(class_names)[data.y])
    final = est.tree_
    final.feature_names = list(data.feature_names)
    names = data.feature_names
    steps: list[GrowthStep] = []
    done: list[int] = []
    depth = final.depth
    for v in range(final.node_count):
        rec = est.node_records_[v]
        if "p_value_method" not in rec:
            continue
        is_split = final.children_left[v] != TREE_LEAF
        p_adj = np.asarray(rec.get("p_values_adjusted", rec["p_values"]), dtype=np.float64)
        feats = rec["features"]
        alpha_level = float(rec["alpha_selector"])
        base = dict(
            method="Conditional inference tree",
            node=v,
            depth=int(depth[v]),
            n_samples=int(final.n_node_samples[v]),
            details={"record": rec, "p_adjusted": p_adj, "alpha": alpha_level},
        )
        finite = np.isfinite(p_adj)
        i_min = int(np.flatnonzero(finite)[np.argmin(p_adj[finite])]) if finite.any() else -1
        smallest = (
            f"the smallest adjusted p-value is {p_adj[i_min]:.3g} ({names[feats[i_min]]})"
            if i_min >= 0
            else "no feature could be tested"
        )
        if not is_split:
            significant = i_min >= 0 and p_adj[i_min] < alpha_level
            reason = (
                f"Leaf: {smallest}, below alpha = {alpha_level:g}, but no cut point leaves "
                "enough rows on both sides."
                if significant
                else f"No significant feature: leaf. {smallest[0].upper()}{smallest[1:]}, "
                f"not below alpha = {alpha_level:g}."
            )
            tree, new = partial_tree(final, done)
            steps.append(
                GrowthStep(
                    index=len(steps),
                    tree_node=new[v],
                    phase="leaf",
                    feature=-1,
                    threshold=float("nan"),
                    reason=reason,
                    tree=tree,
                    **base,
                )
            )
            continue
        f = int(final.feature[v])
        tree, new = partial_tree(final, done)
        steps.append(
            GrowthStep(
                index=len(steps),
                tree_node=new[v],
                phase="tests",
                feature=f,
                threshold=float("nan"),
                reason=(
                    f"Stage A: {len(feats)} independence tests; {smallest}, below alpha = "
                    f"{alpha_level:g}: the node splits on {names[f]}."
                ),
                tree=tree,
                **base,
            )
        )
        done.append(v)
        tree, new = partial_tree(final, done)
        thr = float(final.threshold[v])
        n_cut = len(rec.get("candidate_thresholds", ()))
        steps.append(
            GrowthStep(
                index=len(steps),
                tree_node=new[v],
                phase="split",
                feature=f,
                threshold=thr,
                reason=(
                    f"Stage B: of {n_cut} admissible cut points on {names[f]}, "
                    f"{names[f]} <= {thr:.4g} has the largest two-sample statistic "
                    f"({rec.get('split_statistic_value', float('nan')):.4g}); no test here."
                ),
                tree=tree,
                **base,
            )
        )
    return Growth(
        "Conditional inference tree",
        steps,
        final,
        names,
        data.task,
        {"max_depth": int(max_depth), "alpha_selector": float(alpha)},
    )


# ---------------------------------------------------------------------------------------
# Partition Tree
# ---------------------------------------------------------------------------------------


def partition_estimator(task: str, *, max_leaves: int = 8, random_state: int = 0):
    """The Partition Tree the steps come from (the engine's defaults, ``max_leaves``)."""
    from engine.partition.estimators import PartitionTreeClassifier, PartitionTreeRegressor

    cls = PartitionTreeClassifier if task == "classification" else PartitionTreeRegressor
    return cls(max_leaves=int(max_leaves), random_state=random_state)


def partition_tree_arrays(tree, feature_names, target: str = "y") -> TreeArrays:
    """A Partition Tree (:class:`engine.partition.PartitionTreeArrays`) as a
    :class:`TreeArrays` to draw: a Y split is a split on an extra last column named
    ``target``; a leaf's value is its cell's density ``n_XY / (n_X mu_Y(A_Y))`` (the
    unnormalised conditional density of the cell, 1 / width at the root)."""
    p = len(feature_names)
    kind = tree.kind
    split = kind != 0
    feature = np.where(kind >= 3, p, tree.feature)
    feature = np.where(split, feature, TREE_UNDEFINED).astype(np.int64)
    threshold = np.where(split & ((kind == 1) | (kind == 3)), tree.threshold, 0.0)
    threshold = np.where(split, threshold, float(TREE_UNDEFINED))
    mu = tree.measure()
    with np.errstate(divide="ignore", invalid="ignore"):
        density = np.where(tree.nx > 0, tree.nxy / (tree.nx * mu), 0.0)
    cat_offsets = cat_values = None
    if np.any((kind == 2) | (kind == 4)):
        sets = [
            np.flatnonzero(tree.cat_left[v]).astype(np.int64)
            if kind[v] in (2, 4)
            else np.empty(0, np.int64)
            for v in range(kind.size)
        ]
        cat_offsets = np.r_[0, np.cumsum([a.size for a in sets])].astype(np.int64)
        cat_values = np.concatenate(sets).astype(np.int64)
    return TreeArrays(
        tree.left.astype(np.int64),
        tree.right.astype(np.int64),
        feature,
        threshold.astype(np.float64),
        np.zeros(kind.size),
        tree.nxy.astype(np.int64),
        tree.nxy.astype(np.float64),
        density[:, None, None],
        task="regression",
        n_features=p + 1,
        feature_names=[*feature_names, target],
        cat_offsets=cat_offsets,
        cat_values=cat_values,
    )


def partition_steps(data: GrowthData, *, max_leaves: int = 8, target: str = "y") -> Growth:
    """The Partition Tree's best-first growth, one step per split (the estimator's
    :meth:`fit_steps`): ``details`` holds ``gain`` (the log-loss decrease of the split),
    ``kind`` (``'X split'`` / ``'Y split'``), ``others`` (the other waiting leaves:
    ``(node id in the final tree, best gain, kind word, feature name or target,
    threshold)``, largest gain first) and ``train_nll`` before and after."""
    est = partition_estimator(data.task, max_leaves=max_leaves)
    frontier: list[dict] = []
    trace = [step["train_nll"] for step in est.fit_steps(data.X, data.y, frontier=frontier)]
    pt = est.partition_tree_
    names = list(data.feature_names)
    final = partition_tree_arrays(pt, names, target)
    steps = []
    done: list[int] = []

    def feature_word(kind: int, f: int) -> str:
        return target if kind >= 3 else names[f]

    for k, fr in enumerate(frontier):
        v = int(fr["node"])
        done.append(v)
        tree, new = partial_tree(final, done)
        others = [
            (new[o[0]], o[1], PARTITION_KINDS[o[2]], feature_word(o[2], o[3]), o[4])
            for o in fr["others"]
        ]
        word = PARTITION_KINDS[fr["kind"]]
        rule = f"{feature_word(fr['kind'], fr['feature'])}"
        if fr["kind"] in (1, 3):
            rule += f" <= {fr['threshold']:.4g}"
        if others:
            why = (
                f"its best gain {fr['gain']:.4g} is the largest of the {len(others) + 1} "
                f"leaves waiting (next: {others[0][1]:.4g})"
            )
        else:
            why = f"it is the only leaf with an admissible split (gain {fr['gain']:.4g})"
        steps.append(
            GrowthStep(
                index=k,
                method="Partition Tree",
                node=v,
                tree_node=new[v],
                depth=int(pt.depth[v]),
                n_samples=int(pt.nxy[v]),
                phase="split",
                feature=int(fr["feature"]) if fr["kind"] in (1, 2) else -1,
                threshold=float(fr["threshold"]),
                reason=f"This leaf splits next ({word}: {rule}) because {why}.",
                tree=tree,
                details={
                    "gain": fr["gain"],
                    "kind": word,
                    "rule": rule,
                    "others": others,
                    "train_nll": (trace[k], trace[k + 1]),
                },
            )
        )
    return Growth(
        "Partition Tree", steps, final, data.feature_names, data.task, {"max_leaves": max_leaves}
    )


def grow(
    method: str,
    data: GrowthData,
    *,
    cap: int,
    class_names=None,
    target: str = "y",
    criterion: str = "gini",
):
    """The steps of ``method`` (one of :data:`METHODS`) with its size cap (depth for CART
    and the conditional inference tree, leaves for the Partition Tree); ``criterion``
    is CART's (``'gini'`` or ``'entropy'``, classification).

    Raises
    ------
    ValueError
        For an unknown method.
    """
    if method == "CART":
        return cart_steps(data, max_depth=cap, class_names=class_names, criterion=criterion)
    if method == "Conditional inference tree":
        return cit_steps(data, max_depth=cap, class_names=class_names)
    if method == "Partition Tree":
        return partition_steps(data, max_leaves=cap, target=target)
    raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
