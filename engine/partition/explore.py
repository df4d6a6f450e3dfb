"""What the "Conditional density" page computes, as plain functions (usable from a notebook).

* :func:`split_rows` -- the seeded train / validation / test split;
* :func:`growth_steps` -- a :class:`engine.jobs.Job` step generator growing a Partition Tree
  (one split per step) or Forest (one tree per step) with a live growth trace;
* :func:`comparison_steps` -- a Job step generator fitting the Partition Tree and Forest and
  the scikit-learn baselines on the same split and scoring them on the test rows
  (:func:`gaussian_baselines` documents the Gaussian ones);
* :func:`calibration_scores` -- CRPS, pinball loss and PIT of a fitted regressor beside its NLL
  (:mod:`engine.partition.scoring`);
* :func:`density_grid` -- p(y | x) over a grid of one feature with the others fixed;
* :func:`section_cells` -- the leaves of a tree that meet the line through x along feature j;
* :func:`slice_frame` -- slices as a table for download.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from engine.data import DataError, train_test_rows
from engine.job_context import fit_in_steps, relay, run_to_end
from engine.partition import scoring
from engine.partition.base import DEFAULT_FLOOR
from engine.partition.estimators import (
    PartitionForestClassifier,
    PartitionForestRegressor,
    PartitionTreeClassifier,
    PartitionTreeRegressor,
)

#: Fewest rows the page accepts (each of train / validation / test needs a few).
MIN_ROWS = 20


class RowParts(NamedTuple):
    """The three parts of :func:`split_rows` (int64 row indices, ascending) and a note
    saying when a part could not be stratified (``None`` otherwise)."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    note: str | None


def split_rows(
    n: int,
    y=None,
    *,
    test_fraction: float = 0.2,
    val_fraction: float = 0.2,
    seed: int = 0,
    stratify: bool = False,
    class_names=None,
) -> RowParts:
    """Seeded split of ``n`` rows into train, validation and test parts.

    ``test_fraction`` of the rows is the test set; ``val_fraction`` of the rest is the
    validation set (used only for the growth curve). ``stratify`` keeps class proportions
    (``y`` int class codes) when the classes allow it; each of the two splits is made by
    :func:`engine.data.train_test_rows`, which falls back to a plain shuffle and says why
    in ``note`` (``class_names`` name the classes there).  Raises DataError when a part
    would be empty or ``n < MIN_ROWS``.
    """
    if n < MIN_ROWS:
        raise DataError(
            f"the conditional density page needs at least {MIN_ROWS} rows, the dataset has {n}"
        )
    if not (0.05 <= test_fraction <= 0.5 and 0.0 <= val_fraction <= 0.5):
        raise DataError("test fraction must be in [0.05, 0.5] and validation fraction in [0, 0.5]")
    labels = None if y is None or not stratify else np.asarray(y, dtype=np.int64)
    first = train_test_rows(
        n,
        labels,
        test_size=test_fraction,
        random_state=seed,
        stratify=stratify,
        class_names=class_names,
    )
    rest, test = first.train, first.test
    notes = [first.note]
    val = np.array([], dtype=np.int64)
    if val_fraction > 0:
        second = train_test_rows(
            len(rest),
            None if labels is None else labels[rest],
            test_size=val_fraction,
            random_state=seed + 1,
            stratify=stratify,
            class_names=class_names,
            part="validation split",
        )
        rest, val = rest[second.train], rest[second.test]
        notes.append(second.note)
    if len(rest) < 2 or len(test) < 1:
        raise DataError("too few rows for a train / test split; lower the fractions")
    note = " ".join(n for n in notes if n) or None
    return RowParts(rest, val, test, note)


def make_model(kind: str, task: str, params: dict, *, categorical=None, random_state: int = 0):
    """An unfitted Partition Tree (``kind='tree'``) or Forest (``'forest'``) for ``task``.

    ``params`` are the estimator's keyword arguments (forest-only ones are dropped for a
    tree, tree-only ones such as ``select_size`` for a forest). Raises ValueError for an unknown kind or task.
    """
    if kind not in ("tree", "forest") or task not in ("classification", "regression"):
        raise ValueError(f"unknown model kind {kind!r} or task {task!r}")
    forest_only = ("n_estimators", "max_samples", "max_features", "aggregation", "n_jobs")
    tree_only = ("select_size",)
    p = dict(params)
    if kind == "tree":
        p = {k: v for k, v in p.items() if k not in forest_only}
        cls = PartitionTreeClassifier if task == "classification" else PartitionTreeRegressor
    else:
        p = {k: v for k, v in p.items() if k not in tree_only}
        cls = PartitionForestClassifier if task == "classification" else PartitionForestRegressor
    return cls(categorical_features=categorical, random_state=random_state, **p)


def growth_steps(
    ctx,
    model,
    X_train,
    y_train,
    X_val=None,
    y_val=None,
    *,
    floor: float = DEFAULT_FLOOR,
    val_every: int = 1,
):
    """Job step generator: grow ``model`` (a Partition Tree or Forest) live.

    Each step is one split (tree) or one tree (forest). Yields and returns snapshots
    ``{'model', 'n_leaves', 'n_trees', 'train_nll', 'val_nll', 'fit_seconds'}``; the model
    in a snapshot is always a valid fitted model (the growth so far), so Stop keeps it.
    The trace is in ``model.trace_`` (``(n_leaves or n_trees, train NLL, val NLL)``).
    """
    forest = hasattr(model, "n_estimators")
    if forest:
        steps = model.fit_steps(X_train, y_train, X_val, y_val, floor=floor)
    else:
        steps = model.fit_steps(X_train, y_train, X_val, y_val, val_every=val_every, floor=floor)
    t0 = time.perf_counter()
    snap = None
    for step in steps:
        snap = {
            "model": model,
            "n_leaves": step["n_leaves"],
            "n_trees": step.get("n_trees", 1),
            "train_nll": step["train_nll"],
            "val_nll": step["val_nll"],
            "fit_seconds": time.perf_counter() - t0,
            "forest": forest,
        }
        yield snap
    if not forest and model.trace_:  # the final validation NLL may be filled in at the end
        snap = {**snap, "val_nll": model.trace_[-1][2]}
    return snap


# -- comparison on one split -------------------------------------------------------------
def _gaussian_nll(y, mean, sd, floor):
    return float(np.mean(-np.log(np.maximum(norm.pdf(y, mean, sd), floor))))


def gaussian_baselines(X_train, y_train, *, max_leaf_nodes: int, seed: int = 0):
    """The regression baselines: ``{name: (description, fit, predict_dist)}``.

    ``fit()`` returns a fitted state; ``predict_dist(state, X)`` returns ``(mean, sd)``.

    * constant Gaussian: mean and standard deviation of the training y;
    * CART + Gaussian residuals: ``DecisionTreeRegressor(max_leaf_nodes=...)``; the residual
      scale is the root mean square of **5-fold out-of-fold** residuals on the training rows
      (an in-sample residual of a grown tree is about 0 and the NLL would explode);
    * random forest + Gaussian residuals: ``RandomForestRegressor(100 trees)``; scale from
      its **out-of-bag** residuals (out of fold for every tree);
    * heteroscedastic Gaussian: mean from that random forest, variance sigma^2(x) from a
      second random forest (100 trees, ``min_samples_leaf=10``) fitted to the squared
      out-of-bag residuals (floored at 1e-6 of the y variance).
    """
    rs = int(seed)
    floor_var = 1e-6 * max(float(np.var(y_train)), 1e-300)

    def constant():
        return float(np.mean(y_train)), max(float(np.std(y_train)), np.sqrt(floor_var))

    def cart():
        est = DecisionTreeRegressor(max_leaf_nodes=max_leaf_nodes, random_state=rs)
        k = min(5, len(y_train))
        oof = cross_val_predict(est, X_train, y_train, cv=KFold(k, shuffle=True, random_state=rs))
        est.fit(X_train, y_train)
        return est, max(float(np.sqrt(np.mean((y_train - oof) ** 2))), np.sqrt(floor_var))

    # the forests grow a chunk of trees per job step (fit_in_steps: the same forests as
    # one fit); ``fit()`` runs them to the end, ``fit.steps()`` is the generator
    def forest_steps():
        est = RandomForestRegressor(n_estimators=100, oob_score=True, random_state=rs)
        yield from fit_in_steps(est, X_train, y_train)
        return est, _oob_residuals(est, X_train, y_train)

    def forest_scale_steps():
        est, resid = yield from forest_steps()
        return est, max(float(np.sqrt(np.mean(resid**2))), np.sqrt(floor_var))

    def hetero_steps():
        est, resid = yield from forest_steps()
        var_model = RandomForestRegressor(
            n_estimators=100, min_samples_leaf=10, random_state=rs + 1
        )
        yield from fit_in_steps(var_model, X_train, resid**2)
        return est, var_model

    def stepwise(steps):
        def fit():
            return run_to_end(steps())

        fit.steps = steps
        return fit

    forest_scale, hetero = stepwise(forest_scale_steps), stepwise(hetero_steps)

    def _oob_residuals(est, X, y):
        pred = est.oob_prediction_
        ok = np.isfinite(pred)
        pred = np.where(ok, pred, est.predict(X))  # rows never out of bag (tiny data)
        return y - pred

    return {
        "Gaussian (constant)": (
            "Normal with the training mean and standard deviation (no features)",
            constant,
            lambda s, X: (np.full(X.shape[0], s[0]), np.full(X.shape[0], s[1])),
        ),
        "CART + Gaussian residuals": (
            f"scikit-learn DecisionTreeRegressor (max_leaf_nodes={max_leaf_nodes}); residual "
            "scale = RMS of 5-fold out-of-fold residuals",
            cart,
            lambda s, X: (s[0].predict(X), np.full(X.shape[0], s[1])),
        ),
        "Random forest + Gaussian residuals": (
            "scikit-learn RandomForestRegressor (100 trees); residual scale = RMS of "
            "out-of-bag residuals",
            forest_scale,
            lambda s, X: (s[0].predict(X), np.full(X.shape[0], s[1])),
        ),
        "Heteroscedastic Gaussian (RF mean, RF variance)": (
            "mean from the random forest; variance from a second random forest "
            "(min_samples_leaf=10) fitted to the squared out-of-bag residuals",
            hetero,
            lambda s, X: (s[0].predict(X), np.sqrt(np.maximum(s[1].predict(X), floor_var))),
        ),
    }


def comparison_steps(
    ctx,
    X_train,
    y_train,
    X_test,
    y_test,
    *,
    task: str,
    n_classes: int = 0,
    categorical=None,
    tree_params: dict,
    forest_params: dict,
    seed: int = 0,
    floor: float = DEFAULT_FLOOR,
):
    """Job step generator: fit each model on the training rows, score it on the test rows.

    Models: Partition Tree and Partition Forest (TreeLab, ``tree_params`` /
    ``forest_params``), and for regression the Gaussian baselines of
    :func:`gaussian_baselines` (CART with ``max_leaf_nodes`` = the tree's ``max_leaves``);
    for classification scikit-learn's DecisionTreeClassifier (same leaf budget) and
    RandomForestClassifier (100 trees) through ``predict_proba``. Every score is the mean
    negative log-likelihood of the test y with density / probability floored at ``floor``
    (regression: nats per unit of y). One model per step; yields and returns
    ``{'rows': [...], 'completed', 'total', 'message'}``. Each row has ``model``,
    ``test_nll``, ``n_out_of_support``, ``fit_seconds``, ``description`` and ``accuracy``
    (classification) or ``rmse`` (regression, of the point prediction) with the
    :func:`calibration_scores` columns (``crps``, ``pinball``, ``pit_ks`` and the PIT values
    ``pit``; Gaussian baselines through their closed forms).
    """
    X_train = np.ascontiguousarray(X_train, dtype=np.float64)
    X_test = np.ascontiguousarray(X_test, dtype=np.float64)
    specs = []
    leaves = int(tree_params.get("max_leaves") or 32)
    for kind, params in (("tree", tree_params), ("forest", forest_params)):
        label = f"Partition {kind.capitalize()} (TreeLab)"
        specs.append((label, "ours", kind, params))
    if task == "regression":
        for name, (desc, fit, dist) in gaussian_baselines(
            X_train, y_train, max_leaf_nodes=max(leaves, 2), seed=seed
        ).items():
            specs.append((name, "gauss", desc, (fit, dist)))
    else:
        specs.append(
            (
                "CART predict_proba (scikit-learn)",
                "skclf",
                f"DecisionTreeClassifier(max_leaf_nodes={max(leaves, 2)})",
                DecisionTreeClassifier(max_leaf_nodes=max(leaves, 2), random_state=seed),
            )
        )
        specs.append(
            (
                "Random forest predict_proba (scikit-learn)",
                "skclf",
                "RandomForestClassifier(100 trees)",
                RandomForestClassifier(n_estimators=100, random_state=seed),
            )
        )
    levels = scoring.DEFAULT_LEVELS
    rows = []
    total = len(specs)
    yield {"rows": [], "completed": 0, "total": total, "message": f"fitting {specs[0][0]}"}
    for i, (label, how, a, b) in enumerate(specs):
        t0 = time.perf_counter()
        row = {"model": label}
        if how == "ours":
            m = make_model(a, task, b, categorical=categorical, random_state=seed)
            m.fit(X_train, y_train)
            fit_s = time.perf_counter() - t0
            nll, n_out = m.nll(X_test, y_test, floor=floor)
            row.update(test_nll=nll, n_out_of_support=n_out)
            if task == "classification":
                row["accuracy"] = float(np.mean(m.predict(X_test) == y_test))
            else:
                row.update(calibration_scores(m, X_test, y_test))
                row["rmse"] = float(np.sqrt(np.mean((m.predict(X_test) - y_test) ** 2)))
            desc = (
                "tree, " if a == "tree" else f"{m.n_estimators} trees, "
            ) + f"max_leaves={m.max_leaves}"
        elif how == "gauss":
            fit, dist = b
            steps = getattr(fit, "steps", None)  # a forest: a chunk of trees per step
            state = fit() if steps is None else (yield from _chunks(steps(), rows, i, total, label))
            fit_s = time.perf_counter() - t0
            mean, sd = dist(state, X_test)
            g = scoring.gaussian_scores(y_test, mean, sd, levels)
            row.update(
                test_nll=_gaussian_nll(y_test, mean, sd, floor),
                n_out_of_support=0,
                **_score_columns(g["pit"], g["crps"], g["pinball"]),
                rmse=float(np.sqrt(np.mean((mean - y_test) ** 2))),
            )
            desc = a
        else:
            est = yield from _chunks(fit_in_steps(b, X_train, y_train), rows, i, total, label)
            fit_s = time.perf_counter() - t0
            proba = np.zeros((X_test.shape[0], n_classes))
            proba[:, est.classes_.astype(np.int64)] = est.predict_proba(X_test)
            p = proba[np.arange(len(y_test)), y_test]
            row.update(
                test_nll=float(np.mean(-np.log(np.maximum(p, floor)))),
                n_out_of_support=int(np.sum(~np.isin(y_test, est.classes_))),
                accuracy=float(np.mean(est.predict(X_test) == y_test)),
            )
            desc = a
        row.update(fit_seconds=fit_s, description=desc)
        rows.append(row)
        nxt = specs[i + 1][0] if i + 1 < total else "done"
        yield {
            "rows": list(rows),
            "completed": i + 1,
            "total": total,
            "message": f"fitting {nxt}" if i + 1 < total else "done",
        }
    return {"rows": rows, "completed": total, "total": total, "message": "done"}


def _chunks(steps, rows, done, total, label):
    """Run a fit generator (:func:`engine.job_context.fit_in_steps`) as job steps, each
    saying how many trees of model ``label`` are grown; returns its value."""
    return relay(
        steps,
        lambda chunk: {
            "rows": list(rows),
            "completed": done,
            "total": total,
            "message": f"fitting {label}: {chunk[0]}/{chunk[1]} trees",
        },
    )


# -- scores beside the NLL ----------------------------------------------------------------
def _score_columns(pit_values, crps_values, pinball) -> dict:
    summary = scoring.summarise(pit_values=pit_values, crps_values=crps_values, pinball=pinball)
    return {
        "crps": summary["crps"],
        "pinball": summary["pinball"],
        "pit_ks": summary["pit_ks"],
        "pit": np.asarray(pit_values, dtype=np.float64),
    }


def calibration_scores(model, X_test, y_test, *, levels=None) -> dict:
    """Scores of a fitted Partition regressor on the test rows, beside its NLL.

    ``{'crps', 'pinball', 'pit_ks', 'pit'}``: the mean CRPS and the mean pinball loss at
    ``levels`` (default 0.05, 0.10, ..., 0.95), both in units of y (lower is better), the
    Kolmogorov-Smirnov distance of the PIT values from U(0, 1) (0 = calibrated) and the PIT
    values ``(n,)`` themselves (formulas in :mod:`engine.partition.scoring`).
    """
    levels = scoring.DEFAULT_LEVELS if levels is None else levels
    dens = scoring.conditional_densities(model, X_test)
    y = np.asarray(y_test, dtype=np.float64)
    q = scoring.quantiles(dens, levels)
    return _score_columns(
        scoring.pit(dens, y), scoring.crps(dens, y), scoring.pinball_loss(y, q, levels)
    )


# -- views of a fitted model ---------------------------------------------------------------
def density_grid(model, x, j: int, values, y_grid=None) -> np.ndarray:
    """p(y | x with x_j replaced by each of ``values``), others fixed at ``x``.

    Regression: shape ``(len(y_grid), len(values))`` of densities at ``y_grid``;
    classification (``y_grid`` ignored): ``(n_classes, len(values))`` class probabilities.
    """
    values = np.asarray(values, dtype=np.float64)
    Xg = np.tile(np.asarray(x, dtype=np.float64), (values.shape[0], 1))
    Xg[:, j] = values
    if hasattr(model, "predict_proba"):
        return model.predict_proba(Xg).T
    y_grid = np.asarray(y_grid, dtype=np.float64)
    nv, ny = values.shape[0], y_grid.shape[0]
    d = model.density(np.repeat(Xg, ny, axis=0), np.tile(y_grid, nv))
    return d.reshape(nv, ny).T


def section_cells(cells: list[dict], x, j: int) -> list[dict]:
    """The cells whose X region meets the line {x' : x'_k = x_k for every k != j}.

    Drawn over the plane (x_j, y), these cells partition it as the tree does for that line
    (at most the whole list; every leaf when the tree has a single feature).
    """
    x = np.asarray(x, dtype=np.float64)
    keep = []
    others = np.ones(x.shape[0], dtype=bool)
    others[j] = False
    for c in cells:
        lo, hi = c["x_low"], c["x_high"]
        # a continuous split sends x <= threshold left: the left cell is (lo, thr]
        if np.any((x[others] <= lo[others]) & np.isfinite(lo[others])) or np.any(
            x[others] > hi[others]
        ):
            continue
        if any(f != j and int(x[f]) not in set(v.tolist()) for f, v in c["x_categories"].items()):
            continue
        keep.append(c)
    return keep


def slice_frame(slices: list[dict], *, target: str = "y") -> pd.DataFrame:
    """Slices (``label`` plus ``edges``/``heights`` or ``classes``/``proba``) as one table."""
    out = []
    for s in slices:
        if "edges" in s:
            e, h = np.asarray(s["edges"]), np.asarray(s["heights"])
            out.append(
                pd.DataFrame(
                    {
                        "x": s["label"],
                        f"{target}_low": e[:-1],
                        f"{target}_high": e[1:],
                        "density": h,
                    }
                )
            )
        else:
            out.append(
                pd.DataFrame(
                    {
                        "x": s["label"],
                        "class": [str(c) for c in s["classes"]],
                        "probability": np.asarray(s["proba"]),
                    }
                )
            )
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()
