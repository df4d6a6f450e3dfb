"""K-fold cross-validation for the Compare page (docs/spec.md section 6).

The models it can compare are in the model registry (:mod:`engine.model_registry`:
:class:`ModelSpec`, :class:`ParamSpec`, :func:`register_model`, :func:`available_models`,
re-exported here; the baselines' entries in :mod:`engine.baseline_models`, Literati's in
:mod:`engine.literati.registration`).  :func:`plan_comparison` validates a request and
:func:`cross_validate_steps` is its step generator for
:class:`engine.jobs.Job`: one step fits and scores one model on one fold, so progress is
live and Stop keeps every fold finished so far.

Metrics (scikit-learn's implementations): classification -- accuracy and log-loss
(natural log, over all classes of the dataset); regression -- R^2 and RMSE (target units).
Fit time is wall-clock seconds of ``fit`` on the training folds.

Missing values (NaN in ``X``, when the dataset keeps rows with missing values): a model that
routes them itself (scikit-learn's ``allow_nan`` estimator tag, :func:`handles_missing`:
TreeLab's trees, scikit-learn's decision tree and random forest, XGBoost, LightGBM) is
fitted and scored on every row; a model that cannot (scikit-learn's gradient boosting) is
fitted and scored on the complete rows of the same folds only, and the plan's notes say so,
naming the model and the rows left out.  Every fold row records ``n_train`` / ``n_test``
and the summary the ``rows`` each model used.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, log_loss, mean_squared_error, r2_score
from sklearn.model_selection import KFold, StratifiedKFold

# The registry and its entries, in the order the page lists them: the baselines, Literati,
# then (on first use, load_methods) the other method packages.
from engine import baseline_models  # noqa: F401 (registers the scikit-learn and booster models)
from engine.baseline_models import booster_estimator
from engine.job_context import fit_in_steps, relay, run_to_end
from engine.literati import registration as _literati_registration  # noqa: F401 (registers)
from engine.model_registry import (
    METHOD_MODULES,
    REGISTRY,
    TASKS,
    ModelSpec,
    ParamSpec,
    available_models,
    check_model_spec,
    load_methods,
    param_spec,
    register_model,
)

__all__ = [
    "METHOD_MODULES",
    "MISSING_VALUES_CAPTION",
    "REGISTRY",
    "TASKS",
    "CompareResult",
    "ComparisonPlan",
    "ModelSpec",
    "ParamSpec",
    "available_models",
    "booster_estimator",
    "check_model_spec",
    "cross_validate_steps",
    "folds_label",
    "handles_missing",
    "load_methods",
    "make_folds",
    "missing_values_note",
    "param_spec",
    "plan_comparison",
    "register_model",
    "run_comparison",
    "summarise",
    "tree_size",
]

#: One sentence the Compare page shows on how it treats missing values.
MISSING_VALUES_CAPTION = (
    "Missing values: a model that routes them itself (TreeLab's trees, scikit-learn's "
    "decision tree and random forest, XGBoost, LightGBM) is fitted and scored on every row; "
    "a model that cannot (scikit-learn's gradient boosting) on the rows without a missing "
    "value, in the same folds, and the results say so (the rows column counts the rows "
    "each model used)."
)


# -- cross-validation -------------------------------------------------------------------------
@dataclass
class CompareResult:
    """Output of :func:`cross_validate_steps`.

    ``folds``: one row per (model, fold) with the metrics, ``fit_seconds``, ``n_leaves``,
    ``depth``; ``summary``: mean and standard deviation per model; ``models``: each model
    refitted on all rows (for drawing); ``warnings``: messages for the user.
    """

    folds: pd.DataFrame
    summary: pd.DataFrame
    models: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    complete: bool = True
    n_folds: int | None = None


def folds_label(summary: pd.DataFrame, n_folds: int | None = None) -> str:
    """The folds a summary covers, for titles: ``"5 folds"``, ``"3 of 5 folds"`` (after Stop)
    or ``"1-3 of 5 folds"`` (models finished different numbers of folds).

    ``n_folds`` is the number of folds planned (``None``: the folds that ran are all)."""
    if summary.empty:
        return f"0 of {n_folds} folds" if n_folds else "no folds"
    low, high = int(summary["folds"].min()), int(summary["folds"].max())
    ran = str(high) if low == high else f"{low}\u2013{high}"
    if n_folds is None or (low == high == n_folds):
        return f"{ran} fold{'s' if high != 1 else ''}"
    return f"{ran} of {n_folds} folds"


#: What a summary table shows where a model ran one fold (no standard deviation).
NO_SPREAD = "\u2014"


def shown_summary(summary: pd.DataFrame, decimals: int = 4) -> pd.DataFrame:
    """A cross-validation summary for display: numbers rounded to ``decimals``, and the
    missing standard deviations of a model with one fold shown as :data:`NO_SPREAD`.

    The ``*_std`` columns become text columns (each number written with ``decimals``
    places, or the dash): a column mixing numbers and text cannot be converted to Arrow,
    which ``st.dataframe`` needs (Streamlit logs an error and rewrites the column), and no
    string is filled into a float column (pandas 4 will refuse that).  ``summary`` is not
    changed.
    """
    shown = summary.round(decimals)
    for column in shown.columns:
        if str(column).endswith("_std"):
            shown[column] = [
                NO_SPREAD if pd.isna(value) else f"{value:.{decimals}f}" for value in shown[column]
            ]
    return shown


#: Readable headers of a summary's columns (the data keep their names, for code and CSV).
SUMMARY_HEADERS = {
    "fit_seconds": "fit time (s)",
    "n_leaves": "leaves",
    "depth": "depth",
    "log_loss": "log loss",
    "balanced_accuracy": "balanced accuracy",
    "rows": "rows fitted",
}


def summary_header(column: str) -> str:
    """The header a summary table shows for ``column`` (``accuracy_std`` -> ``accuracy
    (std)``; :data:`SUMMARY_HEADERS`; other names unchanged)."""
    column = str(column)
    if column.endswith("_std"):
        return f"{summary_header(column[: -len('_std')])} (std)"
    return SUMMARY_HEADERS.get(column, column.replace("_", " "))


def tree_size(estimator) -> tuple[int, int]:
    """(number of leaves, maximum depth) of a fitted tree model; summed leaves / max depth
    over the trees of an ensemble; (-1, -1) when the model has no trees we can read."""
    if hasattr(estimator, "tree_"):
        t = estimator.tree_
        n_leaves = int(np.sum(np.asarray(t.children_left) == -1))
        depth = int(getattr(t, "max_depth", -1))
        return n_leaves, depth
    library = type(estimator).__module__.split(".")[0]
    if library in ("xgboost", "lightgbm"):
        from engine.tree import from_lightgbm, from_xgboost

        trees = (from_xgboost if library == "xgboost" else from_lightgbm)(estimator).trees
        return sum(t.n_leaves for t in trees), max(t.max_depth for t in trees)
    members = getattr(estimator, "estimators_", None)
    if members is None:
        return -1, -1
    leaves, depth = 0, 0
    for m in np.ravel(np.asarray(members, dtype=object)):
        lv, d = tree_size(m)
        leaves += max(lv, 0)
        depth = max(depth, d)
    return leaves, depth


#: Largest deviation of a row of class probabilities from a sum of 1 that
#: :func:`_fold_metrics` treats as rounding (float32 probabilities) and rescales away.
PROBABILITY_ROUNDING = 1e-6


def _fold_metrics(task, est, X_test, y_test, n_classes) -> dict[str, float]:
    pred = est.predict(X_test)
    if task == "regression":
        return {
            "r2": float(r2_score(y_test, pred)),
            "rmse": float(np.sqrt(mean_squared_error(y_test, pred))),
        }
    out = {"accuracy": float(accuracy_score(y_test, pred))}
    if hasattr(est, "predict_proba"):
        proba = np.zeros((len(y_test), n_classes))
        proba[:, np.asarray(est.classes_, dtype=np.int64)] = est.predict_proba(X_test)
        # float32 probabilities (XGBoost) sum to 1 only up to rounding (1e-7), which
        # log_loss warns about: such rows are rescaled; a larger deviation is left as it
        # is, for log_loss to warn about
        total = proba.sum(axis=1, keepdims=True)
        rounding = np.abs(total - 1.0) <= PROBABILITY_ROUNDING
        proba = np.divide(proba, total, out=proba, where=rounding & (total > 0))
        out["log_loss"] = float(log_loss(y_test, proba, labels=np.arange(n_classes)))
    else:
        out["log_loss"] = float("nan")
    return out


def handles_missing(estimator) -> bool:
    """True when ``estimator`` (unfitted) fits and predicts on rows with NaN itself:
    scikit-learn's ``allow_nan`` input tag (``sklearn.utils.get_tags``), which scikit-learn's
    trees and forests, XGBoost, LightGBM and TreeLab's estimators set, and scikit-learn's
    gradient boosting does not.  An estimator without tags counts as not handling NaN."""
    from sklearn.utils import get_tags

    try:
        return bool(get_tags(estimator).input_tags.allow_nan)
    except (AttributeError, TypeError, ValueError):
        return False


def _rows_phrase(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")


def missing_values_note(
    n_rows: int, n_complete: int, fallback: list[str], *, others: bool = True
) -> str:
    """The Compare note for a dataset of ``n_rows`` rows, ``n_complete`` of them without a
    missing value, when the models labelled ``fallback`` cannot take missing values (they
    are fitted and scored on the complete rows) and, with ``others``, the other models
    chosen route them (they use every row)."""
    names = ", ".join(fallback[:-1]) + " and " + fallback[-1] if len(fallback) > 1 else fallback[0]
    one = len(fallback) == 1
    text = (
        f"{names} cannot take missing values: {'it is' if one else 'they are'} fitted and "
        f"scored on the {_rows_phrase(n_complete)} without a missing value, in the same "
        f"folds ({_rows_phrase(n_rows - n_complete)} with missing values left out)."
    )
    if others:
        text += f" The other models route missing values themselves and use all {n_rows:,} rows."
    return text


def make_folds(task: str, y: np.ndarray, n_splits: int, random_state: int):
    """Shuffled (stratified for classification) k-fold index pairs.

    Raises ValueError when ``n_splits`` is below 2 or above the number of rows.
    """
    n = len(y)
    if not 2 <= n_splits <= n:
        raise ValueError(
            f"The number of folds must be between 2 and the number of rows ({n}); got {n_splits}."
        )
    if task == "classification" and np.bincount(y).max() >= n_splits:
        splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=random_state)
    else:
        splitter = KFold(n_splits=n_splits, shuffle=True, random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "least populated class" is reported by the caller
        return list(splitter.split(np.zeros((n, 1)), y))


@dataclass
class ComparisonPlan:
    """A validated comparison: the estimators (unfitted), the folds and notes for the user.

    Built by :func:`plan_comparison`; run by :func:`cross_validate_steps`.
    """

    task: str
    X: np.ndarray
    y: np.ndarray
    n_classes: int
    estimators: dict[str, tuple[str, Any]]  # run id -> (label, unfitted estimator)
    folds: list[tuple[np.ndarray, np.ndarray]]
    notes: list[str]
    #: run id -> the rows (sorted indices) a model that cannot take missing values is
    #: fitted and scored on: the complete rows; a model not listed uses every row
    row_subsets: dict[str, np.ndarray] = field(default_factory=dict)
    #: what :func:`plan_comparison` was called with, as JSON values: ``models`` (a list of
    #: ``[key, params, label]``), ``n_splits``, ``random_state`` (for :mod:`engine.snippets`)
    request: dict = field(default_factory=dict)
    #: run ids of the models refitted on all rows after the folds (for drawing), in
    #: :attr:`estimators` order; None: every model (``plan_comparison(refit=...)``)
    refitted: tuple[str, ...] | None = None

    @property
    def refit_ids(self) -> tuple[str, ...]:
        """Run ids of the models the job refits on all rows (:attr:`refitted`)."""
        return tuple(self.estimators) if self.refitted is None else self.refitted

    @property
    def n_fits(self) -> int:
        """Number of job steps: one per (model, fold) plus one per refit (:attr:`refit_ids`)."""
        return len(self.estimators) * len(self.folds) + len(self.refit_ids)

    def model_rows(self, run_id: str) -> np.ndarray | None:
        """The rows model ``run_id`` is fitted on (its refit), or None for every row."""
        return self.row_subsets.get(run_id)

    def model_folds(self, run_id: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """The folds of model ``run_id``: :attr:`folds`, cut to its rows when it has a
        subset (:attr:`row_subsets`), so every model sees the same split of the rows."""
        rows = self.row_subsets.get(run_id)
        if rows is None:
            return self.folds
        keep = np.zeros(len(self.y), dtype=bool)
        keep[rows] = True
        return [(train[keep[train]], test[keep[test]]) for train, test in self.folds]


def _model_entries(models) -> list[tuple[str, str, dict, str | None]]:
    """Normalise the accepted ``models`` forms to ``(run id, registry key, params, label)``."""
    if isinstance(models, dict):
        items = [(k, p, None) for k, p in models.items()]
    else:
        items = []
        for m in models:
            if isinstance(m, str):
                items.append((m, {}, None))
            elif isinstance(m, tuple | list) and len(m) in (2, 3):
                items.append((m[0], dict(m[1] or {}), m[2] if len(m) == 3 else None))
            else:
                raise ValueError(f"A model is a registry key or (key, params[, label]); got {m!r}")
    seen: dict[str, int] = {}
    out = []
    for key, params, label in items:
        seen[key] = seen.get(key, 0) + 1
        run_id = key if seen[key] == 1 else f"{key}#{seen[key]}"
        out.append((run_id, key, params or {}, label))
    return out


#: The ``refit`` choices of :func:`plan_comparison`.
REFIT_CHOICES = (True, False, "trees")


def refitted_keys(models, refit=True) -> list[str]:
    """Run ids of ``models`` (the forms :func:`plan_comparison` accepts) that a comparison
    with ``refit`` refits on all rows: every model (True), none (False), or ``"trees"``:
    the single trees the pages draw (:attr:`ModelSpec.tree_figure`), not the ensembles.
    Raises ValueError for another ``refit`` or an unknown model."""
    if not (refit is True or refit is False or (isinstance(refit, str) and refit == "trees")):
        raise ValueError(
            f"refit must be True (every model), False (none) or 'trees' (the single trees "
            f"the pages draw); got {refit!r}"
        )
    load_methods()
    keys = []
    for run_id, key, _, _ in _model_entries(models):
        if key not in REGISTRY:
            raise ValueError(f"Unknown model {key!r}; registered: {sorted(REGISTRY)}")
        if refit is True or (refit == "trees" and REGISTRY[key].tree_figure):
            keys.append(run_id)
    return keys


def plan_comparison(
    dataset, models, *, n_splits: int = 5, random_state: int = 0, refit=True
) -> ComparisonPlan:
    """Validate a comparison request and build its estimators and folds (fits nothing).

    Parameters
    ----------
    dataset : engine.data.Dataset
        ``X`` float64 (n_samples, n_features), ``y`` int64 codes or float64 values.
    models : dict key -> params, a list of registry keys (default parameters), or a list of
        ``(key, params)`` / ``(key, params, label)`` tuples (the same key may appear several
        times with different parameters, e.g. one CART per split strategy).
    n_splits : int
        Number of folds (2 <= n_splits <= n_samples).
    random_state : int
        Seed for the fold shuffle and every model.
    refit : True, False or "trees"
        Which models the job refits on all rows after the folds (:attr:`CompareResult.models`):
        every model (True, the default), none, or only the single trees the pages draw
        (``"trees"``: the Compare page, which draws no ensemble; a forest's refit would
        cost a fit and hold its trees in the server's memory for nothing).

    Raises
    ------
    ValueError
        No model, an unknown model key, a model that does not support the task, a bad
        parameter, ``n_splits`` out of range, or another ``refit``.

    Estimators with a ``categorical_features`` parameter (TreeLab's CART) receive the
    dataset's ``is_categorical`` mask, so they split those features by category sets.

    When ``dataset.X`` has NaN, a model that cannot take missing values
    (:func:`handles_missing` False) is fitted and scored on the complete rows of the same
    folds (:attr:`ComparisonPlan.row_subsets`), and a note names it with the rows left out;
    when the complete rows cannot fill every fold it is left out, with a note (ValueError
    when no model is left).
    """
    entries = _model_entries(models)
    if not entries:
        raise ValueError("Choose at least one model to compare.")
    refit_ids = refitted_keys(models, refit)
    task = dataset.task
    estimators = {}
    load_methods()
    for run_id, key, params, label in entries:
        if key not in REGISTRY:
            raise ValueError(f"Unknown model {key!r}; registered: {sorted(REGISTRY)}")
        spec = REGISTRY[key]
        est = spec.make(task, random_state, **params)
        # estimators that split categorical features by category sets are told which they are
        is_cat = getattr(dataset, "is_categorical", None)
        if is_cat is not None and np.any(is_cat) and "categorical_features" in est.get_params():
            est.set_params(categorical_features=np.asarray(is_cat, dtype=bool))
        estimators[run_id] = (label or spec.label, est)
    folds = make_folds(task, dataset.y, n_splits, random_state)
    notes = []
    n_classes = 0
    if task == "classification":
        n_classes = int(dataset.n_classes)
        smallest = int(np.bincount(dataset.y, minlength=n_classes).min())
        if smallest < n_splits:
            notes.append(
                f"The smallest class has {smallest} rows, fewer than {n_splits} folds: "
                "some test folds miss that class."
            )
    else:
        single = sum(len(te) < 2 for _, te in folds)
        if single:  # r2_score is nan on one row; the mean R^2 would skip those folds
            most = len(dataset.y) // 2
            advice = (
                f"Use at most {most} folds for R² on every fold."
                if most >= 2
                else "There are too few rows for R² on every fold (it needs 2 test rows "
                "per fold and 2 folds)."
            )
            covered = (
                f"the mean R² covers only the other {n_splits - single} folds"
                if single < n_splits
                else "no fold has an R², so neither has the mean"
            )
            notes.append(
                f"{single} of the {n_splits} test folds have a single row, where R² "
                f"is not defined: {covered}. {advice}"
            )
    row_subsets = _complete_row_subsets(dataset, estimators, folds, notes)
    request = {
        "models": [[key, _json_params(params), label] for _, key, params, label in entries],
        "n_splits": int(n_splits),
        "random_state": int(random_state),
    }
    return ComparisonPlan(
        task,
        dataset.X,
        dataset.y,
        n_classes,
        estimators,
        folds,
        notes,
        row_subsets,
        request,
        refitted=tuple(run_id for run_id in refit_ids if run_id in estimators),
    )


def _json_params(params: dict) -> dict:
    """``params`` with numpy scalars as Python numbers (JSON values)."""
    return {str(k): v.item() if isinstance(v, np.generic) else v for k, v in params.items()}


def _complete_row_subsets(dataset, estimators, folds, notes) -> dict[str, np.ndarray]:
    """The complete rows for each model of ``estimators`` that cannot take missing values
    (:func:`handles_missing`) when ``dataset.X`` has NaN, with a note naming them; a model
    whose folds would lack complete rows (a fold without training or test rows, or, for
    classification, training rows of one class) is removed from ``estimators``, with a
    note.  Raises ValueError when that leaves no model."""
    missing = np.isnan(dataset.X)
    if not missing.any():
        return {}
    complete = ~missing.any(axis=1)
    fallback = [rid for rid, (_, est) in estimators.items() if not handles_missing(est)]
    if not fallback:
        return {}
    n_rows, n_complete = len(complete), int(complete.sum())
    classification = dataset.task == "classification"

    def usable(train, test) -> bool:
        train, test = train[complete[train]], test[complete[test]]
        if not train.size or not test.size:
            return False
        return not classification or np.unique(dataset.y[train]).size >= 2

    if all(usable(train, test) for train, test in folds):
        kept = fallback
    else:
        kept = []
        labels = [estimators.pop(rid)[0] for rid in fallback]
        names = ", ".join(labels)
        if n_complete == 0:
            reason = f"{names} cannot take missing values, and every row has one"
        else:
            reason = (
                f"{names} cannot take missing values, and the {_rows_phrase(n_complete)} "
                f"without one (of {n_rows:,}) do not fill every fold"
                + (" with two classes to train on" if classification else "")
            )
        if not estimators:
            raise ValueError(
                f"{reason}. Choose a model that routes missing values (a decision tree, a "
                "random forest, XGBoost, LightGBM or a TreeLab model), use fewer folds, or "
                "drop the rows with missing values in the sidebar."
            )
        notes.append(f"{reason}: left out of this comparison.")
    if not kept:
        return {}
    labels = [estimators[rid][0] for rid in kept]
    notes.append(
        missing_values_note(n_rows, n_complete, labels, others=len(kept) < len(estimators))
    )
    rows = np.flatnonzero(complete)
    return {rid: rows for rid in kept}


def _fit_fold_steps(proto, X, y, train, test, task, n_classes, label, key, fold):
    """Generator: fit a clone of ``proto`` on rows ``train`` (a forest a chunk of trees
    per step, :func:`engine.job_context.fit_in_steps`, so Stop is seen between chunks)
    and score it on ``test``; yields ``(trees grown, trees)``, returns one result row."""
    from sklearn.base import clone

    est = clone(proto)
    t0 = time.perf_counter()
    yield from fit_in_steps(est, X[train], y[train])
    fit_s = time.perf_counter() - t0
    leaves, depth = tree_size(est)
    row = {
        "model": label,
        "key": key,
        "fold": fold,
        "n_train": len(train),
        "n_test": len(test),
        "fit_seconds": fit_s,
        "n_leaves": leaves,
        "depth": depth,
    }
    if hasattr(est, "n_candidates_evaluated_"):
        row["candidates"] = int(est.n_candidates_evaluated_)
    row.update(_fold_metrics(task, est, X[test], y[test], n_classes))
    return row


def _fit_fold(proto, X, y, train, test, task, n_classes, label, key, fold) -> dict:
    """Fit a clone of ``proto`` on rows ``train`` and score it on ``test``: one result row
    (:func:`_fit_fold_steps` run to its end; a Dask task of the fan-out)."""
    return run_to_end(_fit_fold_steps(proto, X, y, train, test, task, n_classes, label, key, fold))


def _refit_steps(proto, X, y, rows=None):
    """Generator: a clone of ``proto`` fitted on every row, or on ``rows`` (indices) when
    given (the model the page draws); yields between a forest's chunks of trees."""
    from sklearn.base import clone

    if rows is not None:
        X, y = X[rows], y[rows]
    return (yield from fit_in_steps(clone(proto), X, y))


def _refit(proto, X, y, rows=None):
    """:func:`_refit_steps` run to its end (a Dask task of the fan-out)."""
    return run_to_end(_refit_steps(proto, X, y, rows))


def _stepped(steps, snapshot: dict, what: str):
    """Run the fit generator ``steps`` as job steps: after each of its chunks yield
    ``snapshot`` with ``message`` + ``what`` and the trees grown; return its value."""
    return relay(
        steps, lambda chunk: {**snapshot, "message": f"{what}: {chunk[0]}/{chunk[1]} trees"}
    )


def _in_dask_worker() -> bool:
    """True inside a Dask task (a job on the Dask runner), unless ``TREELAB_FAN_OUT=0``."""
    if os.environ.get("TREELAB_FAN_OUT", "1").strip() == "0":
        return False
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):  # not inside a Dask task
        return False
    return True


def _check_refit_switch(refit) -> None:
    if refit is not True and refit is not False:
        raise ValueError(
            f"refit here is True (the plan's refits, ComparisonPlan.refit_ids) or False "
            f"(none); got {refit!r}. Which models are refitted is chosen by "
            "plan_comparison(..., refit=True | False | 'trees')."
        )


def cross_validate_steps(ctx, plan: ComparisonPlan, *, refit: bool = True):
    """Step generator for :class:`engine.jobs.Job`: run a :class:`ComparisonPlan`.

    One step fits and scores one model on one fold (every model sees the same folds);
    with ``refit`` one more step per model of :attr:`ComparisonPlan.refit_ids` refits it
    on all rows, for drawing.  Yields
    ``{"completed", "total", "message", "rows"}`` (rows: one dict per finished fold, in
    model then fold order) and returns a :class:`CompareResult`.

    In a Dask worker (the app's default job runner) on a cluster with more than one worker
    thread, the fits fan out as further Dask tasks (``distributed.worker_client``: the job's
    own task secedes while it waits), so one comparison uses every worker; a step then
    ends when any fit finishes, and Stop cancels the fits not started.  Elsewhere (the
    thread runner, a notebook) the fits run here one after another.  The rows are the same
    either way: each fit is seeded by its estimator's ``random_state``.
    """
    _check_refit_switch(refit)
    if _in_dask_worker():
        from distributed import worker_client

        with worker_client() as client:
            if sum(client.nthreads().values()) > 1:
                return (yield from _fan_out_steps(ctx, plan, refit, client))
    return (yield from _serial_steps(plan, refit))


def run_comparison(plan: ComparisonPlan, *, refit: bool = True) -> CompareResult:
    """Run a :class:`ComparisonPlan` here, fit after fit (no job, e.g. in a notebook).

    The same rows and summary as :func:`cross_validate_steps` run as a job: each fit is
    seeded by its estimator's ``random_state``.  ``refit``: True runs the plan's refits
    (``plan_comparison(refit=...)`` chooses which), False none; anything else raises
    ValueError.
    """
    _check_refit_switch(refit)
    return run_to_end(_serial_steps(plan, refit))


def _fold_tasks(plan: ComparisonPlan) -> list[tuple]:
    return [
        (key, label, proto, i, train, test)
        for key, (label, proto) in plan.estimators.items()
        for i, (train, test) in enumerate(plan.model_folds(key))
    ]


def _ordered(rows: list[dict], plan: ComparisonPlan) -> list[dict]:
    order = {key: n for n, key in enumerate(plan.estimators)}
    return sorted(rows, key=lambda row: (order[row["key"]], row["fold"]))


def _serial_steps(plan: ComparisonPlan, refit: bool):
    X, y, task = plan.X, plan.y, plan.task
    rows: list[dict] = []
    refits = plan.refit_ids if refit else ()
    total = len(plan.estimators) * len(plan.folds) + len(refits)
    for key, label, proto, i, train, test in _fold_tasks(plan):
        what = f"{label}: fold {i + 1}/{len(plan.folds)}"
        before = {"completed": len(rows), "total": total, "rows": list(rows)}
        fold = _fit_fold_steps(proto, X, y, train, test, task, plan.n_classes, label, key, i + 1)
        rows.append((yield from _stepped(fold, before, what)))
        yield {"completed": len(rows), "total": total, "rows": list(rows), "message": what}
    fitted = {}
    for key in refits:
        label, proto = plan.estimators[key]
        what = f"{label}: refit on all rows"
        before = {"completed": len(rows) + len(fitted), "total": total, "rows": list(rows)}
        steps = _refit_steps(proto, X, y, plan.model_rows(key))
        fitted[key] = yield from _stepped(steps, before, what)
        yield {
            "completed": len(rows) + len(fitted),
            "total": total,
            "rows": list(rows),
            "message": what,
        }
    return summarise(rows, task, models=fitted, warnings=plan.notes, n_folds=len(plan.folds))


def _fan_out_steps(ctx, plan: ComparisonPlan, refit: bool, client):
    from distributed import as_completed

    X, y, task = plan.X, plan.y, plan.task
    refits = plan.refit_ids if refit else ()
    total = len(plan.estimators) * len(plan.folds) + len(refits)
    X_data, y_data = client.scatter([X, y], broadcast=True)
    futures = {}
    for key, label, proto, i, train, test in _fold_tasks(plan):
        future = client.submit(
            _fit_fold,
            proto,
            X_data,
            y_data,
            train,
            test,
            task,
            plan.n_classes,
            label,
            key,
            i + 1,
            pure=False,
        )
        futures[future] = ("fold", key, label, i)
    for key in refits:
        label = plan.estimators[key][0]
        refit_future = client.submit(
            _refit, plan.estimators[key][1], X_data, y_data, plan.model_rows(key), pure=False
        )
        futures[refit_future] = ("refit", key, label, None)
    rows: list[dict] = []
    fitted = {}
    try:
        for future in as_completed(list(futures)):
            kind, key, label, i = futures[future]
            value = future.result()  # a fit's exception ends the job with it
            if kind == "fold":
                rows.append(value)
                message = f"{label}: fold {i + 1}/{len(plan.folds)}"
            else:
                fitted[key] = value
                message = f"{label}: refit on all rows"
            yield {
                "completed": len(rows) + len(fitted),
                "total": total,
                "rows": _ordered(rows, plan),
                "message": message,
            }
    finally:  # Stop, the budget or an error: the fits not finished are not waited for
        client.cancel([f for f in futures if not f.done()])
    fitted = {key: fitted[key] for key in plan.estimators if key in fitted}
    return summarise(
        _ordered(rows, plan), task, models=fitted, warnings=plan.notes, n_folds=len(plan.folds)
    )


def summarise(
    rows: list[dict], task: str, *, models=None, warnings=(), complete=True, n_folds=None
):
    """Build a :class:`CompareResult` from per-fold rows (also used for a stopped job).

    ``folds`` in the summary counts each model's finished folds and ``rows`` the rows it
    was fitted and scored on (fewer than the dataset's for a model that cannot take missing
    values, see :meth:`ComparisonPlan.model_folds`); a ``<metric>_std`` is NaN
    (no spread) for a model with fewer than 2 folds.  ``n_folds`` is the number of folds
    planned, kept on the result for titles (:func:`folds_label`).
    """
    folds = pd.DataFrame(rows)
    metrics = ["accuracy", "log_loss"] if task == "classification" else ["r2", "rmse"]
    cols = metrics + ["fit_seconds", "n_leaves", "depth"]
    if "candidates" in folds:
        cols.append("candidates")  # thresholds evaluated per fit (TreeLab CART)
    if folds.empty:
        summary = pd.DataFrame(columns=["model", "folds"] + cols)
    else:
        g = folds.groupby("model", sort=False)
        summary = g[cols].mean()
        counts = g.size()
        for m in metrics:  # one fold has no spread: NaN, not 0
            summary[m + "_std"] = g[m].std(ddof=0).where(counts >= 2)
        summary.insert(0, "folds", counts)
        if {"n_train", "n_test"} <= set(folds):  # rows a model used (not all: no NaN support)
            used = (folds["n_train"] + folds["n_test"]).groupby(folds["model"], sort=False)
            summary.insert(1, "rows", used.max())
        summary = summary.reset_index()
    return CompareResult(
        folds=folds,
        summary=summary,
        models=dict(models or {}),
        warnings=list(warnings),
        complete=complete,
        n_folds=n_folds,
    )
