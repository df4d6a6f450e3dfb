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


def test_fixed_ranking_matches_cross_val_score():
    X, y = load_wine(return_X_y=True)
    rank = np.array([12, 6, 9, 0, 1])
    res = top_k_curve(rank, X, y, [1, 3, 5], "logistic", 5, random_state=0)
    assert res["k"].tolist() == [1, 3, 5] and res["scores"].shape == (5, 3)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    for j, k in enumerate([1, 3, 5]):
        ref = cross_val_score(make_pipeline(StandardScaler(), LogisticRegression(
            class_weight="balanced", max_iter=1000)), X[:, rank[:k]], y, cv=cv,
            scoring="balanced_accuracy")
        np.testing.assert_allclose(res["scores"][:, j], ref)


def test_learners_are_the_cit_papers_settings():
    """Balanced class weights and distance-weighted 5-NN, as in the CIT paper's benchmark; a
    uniform 5-NN gives different scores on one feature with many ties (wine's ash)."""
    from sklearn.neighbors import KNeighborsClassifier

    X, y = load_wine(return_X_y=True)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    res = top_k_curve(np.array([2]), X, y, [1], "knn", 5, random_state=0)
    scores = {w: cross_val_score(make_pipeline(StandardScaler(), KNeighborsClassifier(
        5, weights=w)), X[:, [2]], y, cv=cv, scoring="balanced_accuracy") for w in
        ("distance", "uniform")}
    np.testing.assert_allclose(res["scores"][:, 0], scores["distance"])
    assert not np.allclose(scores["distance"], scores["uniform"])


def test_estimator_ranking_per_fold_and_progress():
    X, y = load_wine(return_X_y=True)
    seen = []
    res = top_k_curve(ConditionalInferenceTreeClassifier(random_state=0), X, y, [1, 2, 30],
                      "knn", 3, progress=seen.append)
    assert seen == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert res["k"].tolist() == [1, 2, 13] and len(res["rankings"]) == 3
    assert res["mean"][-1] > 0.85
    assert ranking_of([0.1, 0.5, 0.1, 0.3]).tolist() == [1, 3, 0, 2]
    with pytest.raises(ValueError, match="ks"):
        top_k_curve([0], X, y, [0])
