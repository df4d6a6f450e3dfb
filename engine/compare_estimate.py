"""How long a comparison job takes, from the measured cost curves (issue 20 point 4).

The Compare and Split strategies pages say before Run how long their cross-validation job
takes: every model on every fold's training rows plus each model's refit on all rows
(:func:`estimate_comparison`), each fit timed by :func:`fit_seconds` from the curves of
:mod:`engine.scale`.  Models without a curve are named and not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.compare import REGISTRY, _model_entries, load_methods, refitted_keys

__all__ = ["ComparisonEstimate", "estimate_comparison", "fit_seconds", "measured_speed"]

#: scikit-learn models whose fits :func:`measured_speed` scales (their curve is its tree's).
SKLEARN_MODELS = frozenset({"sklearn_tree", "sklearn_forest", "sklearn_boosting"})
#: Rows of the probe fit of :func:`measured_speed`.
PROBE_ROWS = 2_000
#: Timed fits of the probe of :func:`measured_speed` (the fastest counts).
PROBE_FITS = 3
#: Bounds of the speed factor (a probe of a few milliseconds is noisy).
SPEED_BOUNDS = (0.02, 5.0)


def fit_seconds(key: str, params: dict, n_rows: int, n_features: int, task: str, n_classes: int):
    """Seconds of one fit of registry model ``key`` with ``params`` (every parameter, as
    :meth:`ModelSpec.make` validates them) on ``n_rows`` x ``n_features``, from the cost
    curves of :mod:`engine.scale`; ``None`` for a model without a curve (XGBoost,
    LightGBM, the greedy shape tree).

    How each model follows a curve: a tree's curve times its depth / 8
    (:func:`engine.scale.depth_factor`); a forest is ``n_estimators`` such trees on the
    features each node draws (the square root of them for classification forests and
    conditional inference forests); scikit-learn's gradient boosting is ``n_estimators``
    trees per class (one for two classes or regression); a Partition Tree scales with
    log2 of its leaves / 5 (measured at 32), a Partition Forest ``n_estimators`` of them
    on their ``max_samples`` share of the rows and ``max_features`` share of the features;
    Literati at depth 2 is its depth-2 curve capped at its time limit (every fit stops
    there), deeper its time limit itself (no curve was measured deeper: an upper bound).
    A conditional inference tree or forest with permutation p-values has no curve (the
    measured one is the asymptotic default's, hundreds of times faster)."""
    from engine import scale

    def trees(method, count, depth, features):
        return (
            count
            * scale.depth_factor(depth)
            * scale.estimate_seconds(method, max(1, n_rows), max(1, int(round(features))))
        )

    p = n_features
    if key == "sklearn_tree":
        return trees("sklearn_tree", 1, params["max_depth"], p)
    if key == "sklearn_forest":
        sampled = math.sqrt(p) if task == "classification" else p
        return trees("sklearn_tree", params["n_estimators"], params["max_depth"], sampled)
    if key == "sklearn_boosting":
        per_stage = n_classes if task == "classification" and n_classes > 2 else 1
        return trees("sklearn_tree", params["n_estimators"] * per_stage, params["max_depth"], p)
    if key == "treelab_cart":
        return trees("cart", 1, params["max_depth"], p)
    if key == "treelab_cit" or key == "treelab_cif":
        if params.get("p_value") == "permutation":
            return None  # the curve is the asymptotic default's; permutation tests: none
        if key == "treelab_cit":
            return trees("cit", 1, params["max_depth"], p)
        return trees("cit", params["n_estimators"], params["max_depth"], math.sqrt(p))
    if key in ("treelab_partition_tree", "treelab_partition_forest"):
        from engine.partition.base import MAX_LEAVES_CLF, MAX_LEAVES_REG

        default = MAX_LEAVES_CLF if task == "classification" else MAX_LEAVES_REG
        leaves = params.get("max_leaves") or default
        count, rows, features = 1, n_rows, p
        if key == "treelab_partition_forest":  # each tree: its share of rows and features
            from engine.partition.estimators import PartitionForestRegressor

            forest = PartitionForestRegressor()
            count = params.get("n_estimators", forest.n_estimators)
            rows = n_rows * params.get("max_samples", forest.max_samples)
            features = p * params.get("max_features", forest.max_features)
        return (
            count
            * max(1.0, math.log2(max(int(leaves), 2)) / 5)
            * scale.estimate_seconds("partition", max(1, round(rows)), max(1, round(features)))
        )
    if key == "treelab_literati":
        limit = float(params["time_limit"])
        if int(params.get("max_depth") or 0) >= 3:
            return limit  # the depth-2 curve says nothing deeper: at most the time limit
        return min(scale.estimate_seconds("literati", max(1, n_rows), p), limit)
    return None


def measured_speed(X, y, task: str, random_state: int = 0) -> float:
    """This table's speed against the benchmark's: seconds of one scikit-learn depth-8
    tree fitted here on (a seeded subsample of at most :data:`PROBE_ROWS` rows of) ``X``
    (float array, ``(n_samples, n_features)``, NaN allowed) and ``y``, over what the
    ``sklearn_tree`` cost curve predicts at that size (the fastest of :data:`PROBE_FITS`
    fits, clipped to :data:`SPEED_BOUNDS`).  The curves were measured on
    ``make_classification`` data with every value distinct; a table with few distinct
    values per feature or many constant ones (digits' pixels) fits 10-20x faster, and this
    factor says by how much.

    Each fit is timed in the CPU time of this thread (:func:`time.thread_time`), not on the
    wall clock: on a server busy with other work a fit of a few milliseconds waits for the
    processor, and wall-clock probes of the same table gave factors 0.1x to 0.46x (the
    estimate swung from 40 s to 3 min); the thread's CPU time does not count the waiting.
    """
    import time

    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from engine import scale

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    n = X.shape[0]
    if n > PROBE_ROWS:
        rows = np.random.default_rng(random_state).choice(n, PROBE_ROWS, replace=False)
        X, y = X[rows], y[rows]
    model = DecisionTreeClassifier if task == "classification" else DecisionTreeRegressor
    best = math.inf
    for _ in range(PROBE_FITS):
        start = time.thread_time()
        model(max_depth=8, random_state=random_state).fit(X, y)
        best = min(best, time.thread_time() - start)
    predicted = scale.estimate_seconds("sklearn_tree", X.shape[0], X.shape[1])
    low, high = SPEED_BOUNDS
    return float(min(high, max(low, best / predicted)))


@dataclass(frozen=True)
class ComparisonEstimate:
    """How long a comparison job takes, one fit after another, from the cost curves.

    ``seconds``: the whole job, every model on every fold plus each refit on all rows
    (the job's steps, :attr:`ComparisonPlan.n_fits`); ``fold_seconds`` /
    ``refit_seconds``: those two parts; ``models``: ``(label, seconds of one fold fit,
    seconds of the refit)`` per model with a curve; ``without_curve``: labels of the
    models with none (not counted); ``n_folds``, ``fold_rows`` (the training rows of a
    fold), ``n_rows``; ``speed`` and ``scaled``: the factor applied to the scikit-learn
    models' fits and their labels; ``at_time_limit``: labels of the models counted at
    their time limit per fit (Literati deeper than 2: an upper bound for them);
    ``n_refits``: the models with a curve that the job refits on all rows (every one,
    unless the plan refits only the trees: ``refit="trees"``), None for all of them.
    """

    seconds: float
    fold_seconds: float
    refit_seconds: float
    models: tuple
    without_curve: tuple
    n_folds: int
    fold_rows: int
    n_rows: int
    speed: float = 1.0
    scaled: tuple = ()
    at_time_limit: tuple = ()
    n_refits: int | None = None

    def includes(self) -> str:
        """What the estimate counts, in words, for the page."""
        n_models = len(self.models)
        n_refits = n_models if self.n_refits is None else self.n_refits
        text = (
            f"{self.n_folds} folds x {n_models} model{'s' if n_models != 1 else ''} on "
            f"{self.fold_rows:,} training rows each, plus {n_refits} refit"
            f"{'s' if n_refits != 1 else ''} on all {self.n_rows:,} rows"
        )
        if n_refits < n_models:
            text += " (only the trees the page draws; the other models are not refitted)"
        text += ", one after another"
        if self.scaled and self.speed != 1.0:
            text += (
                f"; {', '.join(self.scaled)} at {self.speed:.2g}x the curve's time (a probe "
                "fit on this table)"
            )
        if self.at_time_limit:
            text += (
                f"; {', '.join(self.at_time_limit)} counted at its time limit per fit (no "
                "curve deeper than depth 2: at most that)"
            )
        if self.without_curve:
            text += (
                f"; not counted: {', '.join(self.without_curve)} (no measured curve), so it "
                "is a lower bound"
            )
        return text


def estimate_comparison(
    models,
    n_rows: int,
    n_features: int,
    *,
    n_splits: int,
    task: str,
    n_classes: int = 2,
    refit=True,
    speed: float = 1.0,
) -> ComparisonEstimate:
    """Estimate a comparison of ``models`` (the forms :func:`plan_comparison` accepts;
    missing parameters take their defaults) on ``n_rows`` x ``n_features`` with
    ``n_splits`` folds: each fold fit on its ``n_rows * (n_splits - 1) / n_splits``
    training rows, each refit on all rows (:func:`fit_seconds`).  ``speed`` multiplies
    the scikit-learn models' fits (:func:`measured_speed` of the table: their curve was
    measured on other data).  ``refit``: which models are refitted, as
    :func:`engine.compare.plan_comparison` takes it (True, False or ``"trees"``).  Raises
    ValueError for an unknown model or parameter (as :meth:`ModelSpec.make`) or another
    ``refit``."""
    load_methods()
    refitted = set(refitted_keys(models, refit))
    n_rows, n_splits = int(n_rows), max(2, int(n_splits))
    fold_rows = max(1, round(n_rows * (n_splits - 1) / n_splits))
    parts, missing, scaled, at_limit = [], [], [], []
    n_refits = 0
    for run_id, key, params, label in _model_entries(models):
        if key not in REGISTRY:
            raise ValueError(f"Unknown model {key!r}; registered: {sorted(REGISTRY)}")
        spec = REGISTRY[key]
        values = {p.name: p.validate(params.get(p.name, p.default)) for p in spec.params}
        per_fold = fit_seconds(key, values, fold_rows, n_features, task, n_classes)
        if per_fold is None:
            missing.append(label or spec.label)
            continue
        refit_s = 0.0
        if run_id in refitted:
            refit_s = fit_seconds(key, values, n_rows, n_features, task, n_classes)
            n_refits += 1
        if key in SKLEARN_MODELS:  # this table's speed, from a probe fit on it
            per_fold, refit_s = per_fold * speed, refit_s * speed
            scaled.append(label or spec.label)
        if key == "treelab_literati" and int(values.get("max_depth") or 0) >= 3:
            at_limit.append(label or spec.label)
        parts.append((label or spec.label, per_fold, refit_s))
    folds_s = n_splits * sum(p[1] for p in parts)
    refits_s = sum(p[2] for p in parts)
    return ComparisonEstimate(
        seconds=folds_s + refits_s,
        fold_seconds=folds_s,
        refit_seconds=refits_s,
        models=tuple(parts),
        without_curve=tuple(missing),
        n_folds=n_splits,
        fold_rows=fold_rows,
        n_rows=n_rows,
        speed=float(speed),
        scaled=tuple(scaled),
        at_time_limit=tuple(at_limit),
        n_refits=n_refits,
    )
