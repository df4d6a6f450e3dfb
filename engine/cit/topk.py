"""Top-k evaluation of a feature ranking (the benchmark of docs/spec.md section 4).

:func:`top_k_curve` scores a fixed downstream learner trained on the ``k`` top-ranked
features, for every ``k`` in ``ks``, by K-fold cross-validation: on each training fold the
features are standardised (``StandardScaler`` fitted on the training fold only) and the
ranking is either given or recomputed from an estimator fitted on the standardised training
fold (:func:`ranking_of` its ``feature_importances_``, ties in column order), as in the CIT
paper's benchmark (citrees ``paper/benchmark/pipeline/stage1.py``).  Learners (the CIT
paper's benchmark settings, research/density_cit_dics.md section 2.5): classification
'logistic' (``LogisticRegression(class_weight='balanced', max_iter=1000)``), 'svm' (RBF
``SVC(C=1, gamma='scale', class_weight='balanced')``), 'knn' (5 nearest neighbours,
distance-weighted) scored by balanced accuracy; regression 'ridge' (``Ridge(alpha=1)``),
'svr' (RBF ``SVR(C=1, epsilon=0.1, gamma='scale')``), 'knn' (5 nearest neighbours,
distance-weighted) scored by R^2; or any scikit-learn estimator.  Missing values (NaN in
``X``): rankers are fitted on the folds with their NaN (the trees route them); the
downstream learner, which takes no NaN, gets each missing value replaced by its training
fold's mean (0 after the standardisation).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.metrics import balanced_accuracy_score, r2_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.preprocessing import StandardScaler

CLASSIFICATION_LEARNERS = ("logistic", "svm", "knn")
REGRESSION_LEARNERS = ("ridge", "svr", "knn")


def make_learner(name, task: str):
    """The downstream learner ``name`` for ``task`` (an estimator is cloned as is)."""
    if not isinstance(name, str):
        return clone(name)
    if task == "classification":
        from sklearn.linear_model import LogisticRegression
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.svm import SVC

        table = {
            "logistic": lambda: LogisticRegression(class_weight="balanced", max_iter=1000),
            "svm": lambda: SVC(C=1.0, gamma="scale", class_weight="balanced"),
            "knn": lambda: KNeighborsClassifier(5, weights="distance"),
        }
    else:
        from sklearn.linear_model import Ridge
        from sklearn.neighbors import KNeighborsRegressor
        from sklearn.svm import SVR

        table = {
            "ridge": lambda: Ridge(alpha=1.0),
            "svr": lambda: SVR(C=1.0, epsilon=0.1, gamma="scale"),
            "knn": lambda: KNeighborsRegressor(5, weights="distance"),
        }
    if name not in table:
        raise ValueError(
            f"learner must be one of {list(table)} for {task} or an estimator, got {name!r}"
        )
    return table[name]()


def ranking_of(importances, ties: str = "column") -> np.ndarray:
    """Feature indices (int64, best first) by descending importance.

    ``ties='column'`` (default): equal importances in column order (a stable sort, the same
    on every machine).  ``ties='numpy'``: the CIT paper's benchmark expression
    ``np.argsort(importances)[::-1]`` (citrees ``paper/benchmark/pipeline/stage1.py``,
    ``embedding_selector``) as is: its order among ties is whatever numpy's default sort
    gives, which depends on the numpy version and the CPU (numpy 2.4 on an AVX-512 CPU
    returns equal values in no fixed column order).  Ties matter for a
    single tree, whose unused features all have importance 0.  Raises ValueError on another
    ``ties``.
    """
    imp = np.asarray(importances, dtype=np.float64)
    if ties == "column":
        return np.argsort(-imp, kind="stable").astype(np.int64)
    if ties == "numpy":
        return np.argsort(imp)[::-1].astype(np.int64)
    raise ValueError(f"ties must be 'column' or 'numpy', got {ties!r}")


def ranker_training_fold(estimator, X_raw, X_scaled) -> np.ndarray:
    """The training fold a ranking ``estimator`` is fitted on: ``X_scaled`` (the
    standardised fold, as in the CIT paper's benchmark), except the columns the estimator
    treats as categorical (its ``categorical_features``, a boolean mask or column indices),
    which keep their raw integer codes from ``X_raw``: a standardised code is no longer a
    category code, and the conditional inference tree and forest reject it.  Trees rank the
    same on raw or standardised numeric columns; the codes only matter to the ranker.

    ``X_raw``, ``X_scaled``: float (n, p) arrays of the same fold.  Returns float64 (n, p)
    (``X_scaled`` itself when the estimator has no categorical features).
    """
    cf = getattr(estimator, "categorical_features", None)
    if cf is None:
        return X_scaled
    p = X_scaled.shape[1]
    a = np.asarray(cf)
    if a.dtype == bool:  # as the tree reads it (a wrong-length mask: the fit raises)
        mask = a.copy()
    else:  # indices, negative ones from the end; out of range raises IndexError, as the fit
        mask = np.zeros(p, dtype=bool)
        mask[a.astype(np.int64)] = True
    if mask.shape != (p,) or not mask.any():
        return X_scaled
    out = np.array(X_scaled, dtype=np.float64, copy=True)
    out[:, mask] = np.asarray(X_raw, dtype=np.float64)[:, mask]
    return out


def top_k_curve(
    estimator_or_ranking,
    X,
    y,
    ks: Sequence[int],
    learner="logistic",
    cv=5,
    *,
    task: str | None = None,
    random_state: int = 0,
    progress: Callable[[float], None] | None = None,
) -> dict:
    """Cross-validated downstream score on the top-``k`` features for every ``k`` in ``ks``.

    Parameters
    ----------
    estimator_or_ranking : estimator with ``feature_importances_`` (refitted on every
        standardised training fold, its categorical columns left as codes:
        :func:`ranker_training_fold`) or a ranking (int feature indices, best first) used
        for all folds.
    X, y : data; ``ks`` : ints >= 1 (capped at the number of features).
    learner : a name (see the module docstring) or a scikit-learn estimator.
    cv : number of folds (stratified for classification, shuffled with ``random_state``)
        or a scikit-learn splitter.
    task : 'classification' | 'regression'; default: classification when the estimator or
        the learner is a classifier or ``learner`` is a classification name.
    progress : called with the fraction done after each fold.

    Returns
    -------
    dict with ``k`` (int array), ``scores`` (folds x len(ks)), ``mean``, ``std`` and
    ``rankings`` (one per fold).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    p = X.shape[1]
    ks = np.array(sorted({min(int(k), p) for k in ks}), dtype=np.int64)
    if ks.size == 0 or ks.min() < 1:
        raise ValueError(f"ks must hold ints >= 1, got {ks.tolist()}")
    fixed = None
    if not hasattr(estimator_or_ranking, "fit"):
        fixed = np.asarray(estimator_or_ranking, dtype=np.int64).reshape(-1)
        if fixed.size == 0 or fixed.min() < 0 or fixed.max() >= p:
            raise ValueError("a ranking must hold feature indices in [0, n_features)")
    if task is None:
        if fixed is None:
            clf = is_classifier(estimator_or_ranking)
        elif isinstance(learner, str):
            clf = (
                learner in CLASSIFICATION_LEARNERS
                and learner != "knn"
                or (learner == "knn" and y.dtype.kind in "iubOU")
            )
        else:
            clf = is_classifier(learner)
        task = "classification" if clf else "regression"
    if isinstance(cv, (int, np.integer)):
        splitter = (
            StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
            if task == "classification"
            else KFold(int(cv), shuffle=True, random_state=random_state)
        )
    else:
        splitter = cv
    folds = list(splitter.split(X, y))
    scores = np.zeros((len(folds), ks.size))
    rankings = []
    for i, (tr, te) in enumerate(folds):
        scaler = StandardScaler().fit(X[tr])
        Xtr = scaler.transform(X[tr])
        Xte = scaler.transform(X[te])
        if fixed is None:
            est = clone(estimator_or_ranking)
            est.fit(ranker_training_fold(est, X[tr], Xtr), y[tr])
            rank = ranking_of(est.feature_importances_)
        else:
            rank = fixed
        rankings.append(rank)
        # the learners take no NaN: the training fold's mean (0 once standardised)
        Ltr = np.nan_to_num(Xtr, nan=0.0)
        Lte = np.nan_to_num(Xte, nan=0.0)
        for j, k in enumerate(ks):
            cols = rank[:k]
            model = make_learner(learner, task).fit(Ltr[:, cols], y[tr])
            pred = model.predict(Lte[:, cols])
            scores[i, j] = (
                balanced_accuracy_score(y[te], pred)
                if task == "classification"
                else r2_score(y[te], pred)
            )
        if progress is not None:
            progress((i + 1) / len(folds))
    return {
        "k": ks,
        "scores": scores,
        "mean": scores.mean(axis=0),
        "std": scores.std(axis=0),
        "rankings": rankings,
    }
