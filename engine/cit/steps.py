"""Background-job step generators and helpers for the Conditional inference page.

Each ``*_steps(ctx, ...)`` is a generator for :class:`engine.jobs.Job`: it does one fit (or
one cross-validation fold) per step, yields a progress dict ``{"done", "total", "message",
...partial results}`` and returns the full result, so Stop keeps what finished.

* :func:`fit_rankings_steps` -- the conditional inference tree (with null distributions),
  then CART, random forest and the conditional inference forest on the same data; their
  normalised importances.
* :func:`top_k_steps` -- :func:`engine.cit.top_k_curve` for several rankers, fold by fold.
* :func:`selection_bias_steps` -- CART and CIT on the data plus continuous noise features.
* :func:`add_noise_features` -- the noise columns of the selection-bias demonstration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from sklearn.base import clone

from engine.cit.forest import (
    ConditionalInferenceForestClassifier,
    ConditionalInferenceForestRegressor,
)
from engine.cit.topk import ranker_training_fold, ranking_of, top_k_curve
from engine.cit.tree import ConditionalInferenceTreeClassifier, ConditionalInferenceTreeRegressor
from engine.job_context import fit_in_steps

#: Display names of the four rankers.
CIT, CIF, CART, RF = ("CIT", "CIF", "CART", "Random forest")
#: Tree parameters that the forest does not take from the page (it has its own defaults).
_FOREST_OWN = ("max_features",)


def make_tree(
    task: str, params: Mapping, *, categorical=None, random_state: int = 0, keep_null: bool = False
):
    """A conditional inference tree for ``task`` with ``params`` (estimator keyword args)."""
    cls = (
        ConditionalInferenceTreeClassifier
        if task == "classification"
        else ConditionalInferenceTreeRegressor
    )
    return cls(
        **dict(params),
        categorical_features=categorical,
        keep_null=keep_null,
        random_state=random_state,
    )


def make_rankers(
    task: str, params: Mapping, *, categorical=None, n_estimators: int = 100, random_state: int = 0
) -> dict:
    """Unfitted rankers by display name: CIT (``params``), CIF (``params`` except
    ``max_features``, which stays 'sqrt'), scikit-learn CART (fully grown) and random forest
    (``n_estimators`` trees).  CART and RF see categorical codes as ordered numbers."""
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    clf = task == "classification"
    fparams = {k: v for k, v in params.items() if k not in _FOREST_OWN}
    fcls = ConditionalInferenceForestClassifier if clf else ConditionalInferenceForestRegressor
    return {
        CIT: make_tree(task, params, categorical=categorical, random_state=random_state),
        CIF: fcls(
            n_estimators=int(n_estimators),
            categorical_features=categorical,
            random_state=random_state,
            n_jobs=1,
            **fparams,
        ),
        CART: (DecisionTreeClassifier if clf else DecisionTreeRegressor)(random_state=random_state),
        RF: (RandomForestClassifier if clf else RandomForestRegressor)(
            n_estimators=int(n_estimators), random_state=random_state, n_jobs=1
        ),
    }


def fit_rankings_steps(
    ctx,
    X,
    y,
    task: str,
    params: Mapping,
    *,
    categorical=None,
    n_estimators: int = 100,
    random_state: int = 0,
    methods: Sequence[str] = (CIT, CART, RF, CIF),
):
    """Job steps: fit the CIT with ``keep_null=True`` first (so Stop after step 1 still has
    the tree), then the other rankers; one fit per step, except the forests: the
    conditional inference forest is fitted one tree per step (:meth:`fit_steps`) and
    scikit-learn's random forest a chunk of trees per step
    (:func:`engine.job_context.fit_in_steps`, the same forest as one fit), so that Stop
    and the job's budget take effect within a tree or a chunk.  ``done`` counts finished models (fractional while
    the forest grows).

    Yields and returns ``{"done", "total", "message", "tree": fitted CIT or None,
    "importances": {name: (n_features,) normalised importances}, "seconds": {name: s}}``.
    Raises ValueError (from the estimators) on bad parameters or data.
    """
    import time

    rankers = make_rankers(
        task, params, categorical=categorical, n_estimators=n_estimators, random_state=random_state
    )
    rankers[CIT] = make_tree(
        task, params, categorical=categorical, random_state=random_state, keep_null=True
    )
    order = [m for m in methods if m in rankers]
    state = {
        "done": 0,
        "total": len(order),
        "message": f"fitting {order[0]}...",
        "tree": None,
        "importances": {},
        "seconds": {},
    }
    yield dict(state)
    for i, name in enumerate(order):
        t0 = time.perf_counter()
        est = rankers[name]
        if hasattr(est, "fit_steps"):
            n_trees = int(est.n_estimators)
            for k in est.fit_steps(X, y):
                if k < n_trees:
                    yield {
                        **state,
                        "done": i + k / n_trees,
                        "message": f"fitting {name}: tree {k + 1}/{n_trees}...",
                        "importances": dict(state["importances"]),
                        "seconds": dict(state["seconds"]),
                    }
        else:  # a scikit-learn forest: a chunk of trees per step (Stop between chunks)
            for grown, n_trees in fit_in_steps(est, X, y):
                yield {
                    **state,
                    "done": i + grown / n_trees,
                    "message": f"fitting {name}: {grown}/{n_trees} trees...",
                    "importances": dict(state["importances"]),
                    "seconds": dict(state["seconds"]),
                }
        state["seconds"][name] = time.perf_counter() - t0
        imp = np.asarray(est.feature_importances_, dtype=np.float64)
        state["importances"][name] = imp / imp.sum() if imp.sum() > 0 else imp
        if name == CIT:
            state["tree"] = est
        state["done"] = i + 1
        state["message"] = (
            f"fitted {name}" if i + 1 == len(order) else f"fitted {name}; fitting {order[i + 1]}..."
        )
        yield {
            **state,
            "importances": dict(state["importances"]),
            "seconds": dict(state["seconds"]),
        }
    return state


class _OneFold:
    """A cross-validation splitter that yields one given (train, test) pair."""

    def __init__(self, train, test):
        self.fold = (train, test)

    def split(self, X, y=None, groups=None):
        yield self.fold

    def get_n_splits(self, *args, **kwargs):
        return 1


def top_k_steps(
    ctx,
    X,
    y,
    task: str,
    rankers: Mapping,
    ks: Sequence[int],
    *,
    learner: str = "logistic",
    n_folds: int = 5,
    random_state: int = 0,
):
    """Job steps: the top-k curve of every ranker, one (ranker, fold) per step.

    ``rankers`` maps a name to an unfitted estimator with ``feature_importances_`` (re-ranked
    on every training fold, the paper's protocol) or to a fixed ranking (feature indices).
    The folds are the same for every ranker and the same as Compare's
    (:func:`engine.compare.make_folds`: shuffled with ``random_state``, stratified for
    classification); a class with fewer rows than folds is kept, and ``notes`` says that
    some test folds miss it.  A forest with ``fit_steps`` is fitted one tree per step (same
    ranking as refitting it inside :func:`top_k_curve`), so Stop takes effect within a
    tree.  Yields ``{"done", "total", "message", "curves": {name: {"k", "mean", "std",
    "scores"}}, "notes": [sentences for the page]}`` with the finished rankers (and the
    finished folds of the current one); returns the same with everything.  Raises
    ValueError when there are fewer than 2 folds or more folds than rows (regression:
    fewer than 2 rows per fold).
    """
    from sklearn.preprocessing import StandardScaler

    from engine.compare import make_folds

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    notes = []
    if task == "classification":
        _, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
        folds = make_folds(task, codes.ravel(), int(n_folds), random_state)
        smallest = int(counts.min())
        if smallest < n_folds:  # as Compare: such a class cannot be in every test fold
            rows = "row" if smallest == 1 else "rows"
            notes.append(
                f"The smallest class has {smallest} {rows}, fewer than {n_folds} folds: "
                "some test folds miss that class."
            )
    else:
        if X.shape[0] < 2 * n_folds:
            raise ValueError(f"{X.shape[0]} rows are too few for {n_folds} folds")
        folds = make_folds(task, y, int(n_folds), random_state)
    total = len(rankers) * len(folds)
    curves: dict = {}
    done = 0
    yield {"done": 0, "total": total, "message": "starting...", "curves": {}, "notes": notes}
    for name, ranker in rankers.items():
        rows = []
        ks_out = None
        for tr, te in folds:
            r = ranker if not hasattr(ranker, "fit") else clone(ranker)
            if hasattr(r, "fit_steps"):  # a forest: one tree per step, so Stop is prompt
                n_trees = int(r.n_estimators)
                # fitted on the standardised training fold (categorical codes kept), as
                # top_k_curve does
                Xtr = ranker_training_fold(r, X[tr], StandardScaler().fit_transform(X[tr]))
                for k in r.fit_steps(Xtr, y[tr]):
                    if k < n_trees:
                        yield {
                            "done": done + k / n_trees,
                            "total": total,
                            "message": f"{name}: fold {len(rows) + 1}/{len(folds)}, "
                            f"tree {k + 1}/{n_trees}",
                            "curves": {c: dict(v) for c, v in curves.items()},
                            "notes": notes,
                        }
                r = ranking_of(r.feature_importances_)  # what top_k_curve would rank by
            res = top_k_curve(
                r,
                X,
                y,
                ks,
                learner=learner,
                cv=_OneFold(tr, te),
                task=task,
                random_state=random_state,
            )
            rows.append(res["scores"][0])
            ks_out = res["k"]
            done += 1
            scores = np.array(rows)
            curves[name] = {
                "k": ks_out,
                "mean": scores.mean(axis=0),
                "std": scores.std(axis=0),
                "scores": scores,
                "complete": len(rows) == len(folds),
            }
            yield {
                "done": done,
                "total": total,
                "message": f"{name}: fold {len(rows)}/{len(folds)}",
                "curves": {k: dict(v) for k, v in curves.items()},
                "notes": notes,
            }
    return {"done": done, "total": total, "message": "done", "curves": curves, "notes": notes}


def add_noise_features(X, n_noise: int, *, random_state: int = 0):
    """``X`` with ``n_noise`` extra columns of continuous Uniform(0, 1) noise appended (every
    value distinct, the most a cardinality-biased split search can exploit).

    Returns float64 (n, p + n_noise).  Raises ValueError when ``n_noise < 1``.
    """
    if int(n_noise) < 1:
        raise ValueError(f"n_noise must be >= 1, got {n_noise}")
    X = np.asarray(X, dtype=np.float64)
    rng = np.random.RandomState(random_state)
    return np.ascontiguousarray(np.hstack([X, rng.uniform(size=(X.shape[0], int(n_noise)))]))


def selection_bias_steps(
    ctx, X, y, task: str, params: Mapping, n_noise: int, *, categorical=None, random_state: int = 0
):
    """Job steps: append ``n_noise`` uniform noise features, then fit scikit-learn's fully
    grown CART and the conditional inference tree (``params``) on the widened data.

    Yields / returns ``{"done", "total", "message", "importances": {"CART": ..., "CIT":
    ...}, "n_noise"}``; the noise columns are the last ``n_noise``.
    """
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    X2 = add_noise_features(X, n_noise, random_state=random_state)
    cat = None
    if categorical is not None:
        cat = np.r_[np.asarray(categorical, dtype=bool), np.zeros(int(n_noise), dtype=bool)]
    models = {
        CART: (DecisionTreeClassifier if task == "classification" else DecisionTreeRegressor)(
            random_state=random_state
        ),
        CIT: make_tree(task, params, categorical=cat, random_state=random_state),
    }
    state = {
        "done": 0,
        "total": 2,
        "message": "fitting CART...",
        "importances": {},
        "n_noise": int(n_noise),
    }
    yield dict(state)
    for i, (name, est) in enumerate(models.items()):
        est.fit(X2, y)
        imp = np.asarray(est.feature_importances_, dtype=np.float64)
        state["importances"][name] = imp / imp.sum() if imp.sum() > 0 else imp
        state["done"] = i + 1
        state["message"] = "fitted CART; fitting CIT..." if i == 0 else "done"
        yield {**state, "importances": dict(state["importances"])}
    return state
