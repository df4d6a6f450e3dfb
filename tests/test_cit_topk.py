"""top_k_curve: checked against scikit-learn's cross_val_score on the same folds."""

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from engine.cit.topk import ranking_of, top_k_curve
from engine.cit.tree import ConditionalInferenceTreeClassifier
from tests.conftest import drive


@pytest.mark.slow
def test_fixed_ranking_matches_cross_val_score():
    X, y = load_wine(return_X_y=True)
    rank = np.array([12, 6, 9, 0, 1])
    res = top_k_curve(rank, X, y, [1, 3, 5], "logistic", 5, random_state=0)
    assert res["k"].tolist() == [1, 3, 5] and res["scores"].shape == (5, 3)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    for j, k in enumerate([1, 3, 5]):
        ref = cross_val_score(
            make_pipeline(
                StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000)
            ),
            X[:, rank[:k]],
            y,
            cv=cv,
            scoring="balanced_accuracy",
        )
        np.testing.assert_allclose(res["scores"][:, j], ref)


def test_learners_are_the_cit_papers_settings():
    """Balanced class weights and distance-weighted 5-NN, as in the CIT paper's benchmark; a
    uniform 5-NN gives different scores on one feature with many ties (wine's ash)."""
    from sklearn.neighbors import KNeighborsClassifier

    X, y = load_wine(return_X_y=True)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    res = top_k_curve(np.array([2]), X, y, [1], "knn", 5, random_state=0)
    scores = {
        w: cross_val_score(
            make_pipeline(StandardScaler(), KNeighborsClassifier(5, weights=w)),
            X[:, [2]],
            y,
            cv=cv,
            scoring="balanced_accuracy",
        )
        for w in ("distance", "uniform")
    }
    np.testing.assert_allclose(res["scores"][:, 0], scores["distance"])
    assert not np.allclose(scores["distance"], scores["uniform"])


def test_estimator_ranking_per_fold_and_progress():
    X, y = load_wine(return_X_y=True)
    seen = []
    res = top_k_curve(
        ConditionalInferenceTreeClassifier(random_state=0),
        X,
        y,
        [1, 2, 30],
        "knn",
        3,
        progress=seen.append,
    )
    assert seen == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert res["k"].tolist() == [1, 2, 13] and len(res["rankings"]) == 3
    assert res["mean"][-1] > 0.85
    with pytest.raises(ValueError, match="ks"):
        top_k_curve([0], X, y, [0])


def test_ranking_ties():
    """Default: ties in column order.  ties='numpy' is the paper's ``np.argsort(imp)[::-1]``
    verbatim, whose order among ties is numpy's (platform-dependent), not reversed columns."""
    assert ranking_of([0.1, 0.5, 0.1, 0.3]).tolist() == [1, 3, 0, 2]
    rng = np.random.default_rng(0)
    for p in (2, 5, 13, 16, 40):
        for _ in range(50):
            imp = rng.integers(0, 4, size=p) / 4.0  # many ties
            np.testing.assert_array_equal(ranking_of(imp, ties="numpy"), np.argsort(imp)[::-1])
            np.testing.assert_array_equal(ranking_of(imp), np.lexsort((np.arange(p), -imp)))
    with pytest.raises(ValueError, match="ties"):
        ranking_of([1.0], ties="random")


class _ScaleProbe:
    """A ranker that records the training rows it was fitted on."""

    seen: list = []

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        _ScaleProbe.seen.append(np.array(X))
        self.feature_importances_ = np.arange(X.shape[1], dtype=float)
        return self


def test_ranker_is_fitted_on_the_standardised_training_fold():
    """As the CIT paper's stage 1: StandardScaler on the training fold, then the ranker."""
    X, y = load_wine(return_X_y=True)
    _ScaleProbe.seen = []
    res = top_k_curve(_ScaleProbe(), X, y, [2], "logistic", 3, task="classification")
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    assert len(_ScaleProbe.seen) == 3
    for Xfit, (tr, _) in zip(_ScaleProbe.seen, folds, strict=True):
        np.testing.assert_allclose(Xfit, StandardScaler().fit_transform(X[tr]))
    assert res["rankings"][0][:2].tolist() == [12, 11]


class _StepProbe(_ScaleProbe):
    """A forest-like ranker (``fit_steps``, one tree per step) that records its rows."""

    n_estimators = 2

    def fit_steps(self, X, y):
        self.fit(X, y)
        yield from range(1, self.n_estimators + 1)


def test_top_k_steps_fit_a_forest_on_the_standardised_training_fold():
    """The page's job grows a forest tree by tree itself (not through top_k_curve): it must
    standardise the training fold as top_k_curve does."""
    from engine.cit.steps import top_k_steps

    X, y = load_wine(return_X_y=True)
    _ScaleProbe.seen = []
    gen = top_k_steps(
        None, X, y, "classification", {"probe": _StepProbe()}, [2], n_folds=3, random_state=0
    )
    _, res = drive(gen)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    assert len(_ScaleProbe.seen) == 3
    for Xfit, (tr, _) in zip(_ScaleProbe.seen, folds, strict=True):
        np.testing.assert_allclose(Xfit, StandardScaler().fit_transform(X[tr]))
    assert res["curves"]["probe"]["complete"]


class _CatProbe(_ScaleProbe):
    """A ranker with categorical columns (as the CIT / CIF): records the rows it was fit on."""

    def __init__(self, categorical_features=None):
        self.categorical_features = categorical_features

    def get_params(self, deep=True):
        return {"categorical_features": self.categorical_features}


def _categorical_data(n=150, seed=0):
    """Column 0: a 3-level category that decides the class; columns 1, 2: noise."""
    rng = np.random.default_rng(seed)
    code = rng.integers(0, 3, n).astype(float)
    X = np.column_stack([code, rng.normal(size=n), rng.normal(5.0, 2.0, size=n)])
    y = (code == 2).astype(np.int64)
    return X, y


@pytest.mark.parametrize("cat", [[0], np.array([True, False, False])])
def test_ranker_keeps_categorical_codes_on_the_standardised_fold(cat):
    """Standardised codes are not codes: the CIT / CIF refused them ('categorical feature 0
    must hold integer codes'), so top-k re-ranking failed on any dataset with a categorical
    feature (penguins).  The categorical columns keep their codes, the others are scaled."""
    X, y = _categorical_data()
    _ScaleProbe.seen = []
    top_k_curve(_CatProbe(cat), X, y, [1], "logistic", 3, task="classification")
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    for Xfit, (tr, _) in zip(_ScaleProbe.seen, folds, strict=True):
        np.testing.assert_array_equal(Xfit[:, 0], X[tr, 0])
        np.testing.assert_allclose(Xfit[:, 1:], StandardScaler().fit_transform(X[tr])[:, 1:])
    from engine.cit.steps import top_k_steps

    _ScaleProbe.seen = []

    class _CatStepProbe(_CatProbe, _StepProbe):
        pass

    gen = top_k_steps(
        None, X, y, "classification", {"probe": _CatStepProbe(cat)}, [1], n_folds=3, random_state=0
    )
    for _ in gen:
        pass
    for Xfit, (tr, _) in zip(_ScaleProbe.seen, folds, strict=True):
        np.testing.assert_array_equal(Xfit[:, 0], X[tr, 0])
        np.testing.assert_allclose(Xfit[:, 1:], StandardScaler().fit_transform(X[tr])[:, 1:])


def test_top_k_with_categorical_cit_and_cif():
    """The real rankers on a categorical feature: the category that decides y ranks first
    on every fold, in top_k_curve (CIT) and in the page's job (CIF, grown tree by tree)."""
    from engine.cit import ConditionalInferenceForestClassifier
    from engine.cit.steps import top_k_steps

    X, y = _categorical_data()
    res = top_k_curve(
        ConditionalInferenceTreeClassifier(categorical_features=[0], random_state=0),
        X,
        y,
        [1],
        "logistic",
        3,
        task="classification",
    )
    assert all(r[0] == 0 for r in res["rankings"])
    forest = ConditionalInferenceForestClassifier(
        n_estimators=5, categorical_features=[0], random_state=0, n_jobs=1
    )
    gen = top_k_steps(None, X, y, "classification", {"CIF": forest}, [1], n_folds=3)
    curve = drive(gen)[1]["curves"]["CIF"]
    assert curve["complete"] and curve["mean"][0] == pytest.approx(1.0)  # y is code == 2


def test_ranker_training_fold_reads_categorical_features_as_the_tree_does():
    """Boolean masks and index lists (negative indices from the end, as the tree reads
    them) keep those columns' raw codes; estimators without categorical features (CART,
    random forest) get the standardised fold; an out-of-range index raises, as the fit."""
    from sklearn.tree import DecisionTreeClassifier

    from engine.cit import ConditionalInferenceTreeClassifier
    from engine.cit.topk import ranker_training_fold

    raw = np.array([[0.0, 5.0, 2.0], [1.0, 6.0, 0.0], [2.0, 7.0, 1.0]])
    scaled = (raw - raw.mean(0)) / raw.std(0)
    for cf in ([False, False, True], [2], [-1]):
        out = ranker_training_fold(
            ConditionalInferenceTreeClassifier(categorical_features=cf), raw, scaled
        )
        np.testing.assert_array_equal(out[:, 2], raw[:, 2])
        np.testing.assert_array_equal(out[:, :2], scaled[:, :2])
    assert ranker_training_fold(DecisionTreeClassifier(), raw, scaled) is scaled
    with pytest.raises(IndexError):
        ranker_training_fold(
            ConditionalInferenceTreeClassifier(categorical_features=[3]), raw, scaled
        )
