"""Conditional inference forests: importances, reproducibility, sampling (docs/spec.md section 4).

Oracles: the definition (sum of normalised tree vectors, renormalised); determinism for a
random_state whatever n_jobs; stratified sampling keeps every class.
"""

import numpy as np
import pytest

from engine.cit.forest import (
    ConditionalInferenceForestClassifier,
    ConditionalInferenceForestRegressor,
)


def _data(seed=0, n=200):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_forest_importances_and_predictions():
    X, y = _data()
    f = ConditionalInferenceForestClassifier(n_estimators=8, random_state=0).fit(X, y)
    assert len(f.estimators_) == 8
    vec = np.sum([t.feature_importances_ for t in f.estimators_], axis=0)
    np.testing.assert_allclose(f.feature_importances_, vec / vec.sum())
    assert f.feature_importances_.sum() == pytest.approx(1.0)
    assert np.argmax(f.feature_importances_) == 0
    proba = f.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba, f.ensemble_.predict_proba(X))
    assert f.score(X, y) > 0.85


def test_forest_reproducible_whatever_n_jobs():
    X, y = _data(1)
    a = ConditionalInferenceForestClassifier(n_estimators=6, random_state=3).fit(X, y)
    b = ConditionalInferenceForestClassifier(n_estimators=6, random_state=3, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.feature_importances_, b.feature_importances_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_stratified_sampling_keeps_every_class():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 3))
    y = np.r_[np.zeros(55, int), np.ones(3, int), np.full(2, 2)]
    f = ConditionalInferenceForestClassifier(n_estimators=5, max_samples=0.5, random_state=0).fit(
        X, y
    )
    for t in f.estimators_:
        root = t.tree_.value[0, 0]
        assert np.all(root > 0)
    assert f.predict_proba(X).shape == (60, 3)


def test_forest_regressor_and_noise():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 4))
    y = 3 * X[:, 2] + rng.normal(size=150)
    f = ConditionalInferenceForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    assert np.argmax(f.feature_importances_) == 2 and f.score(X, y) > 0.7
    yn = rng.normal(size=150)
    g = ConditionalInferenceForestRegressor(n_estimators=5, max_features=None, random_state=0).fit(
        X, yn
    )
    s = g.feature_importances_.sum()
    assert s == 0.0 or s == pytest.approx(1.0)


def test_bad_forest_parameters():
    X, y = _data(n=40)
    with pytest.raises(ValueError, match="n_estimators"):
        ConditionalInferenceForestClassifier(n_estimators=0).fit(X, y)
    with pytest.raises(ValueError, match="sampling_method"):
        ConditionalInferenceForestClassifier(sampling_method="x").fit(X, y)


def test_bootstrap_sizes_as_citrees():
    """citrees: a fractional max_samples is rounded up, an int is capped at n, and the
    stratified shares are the largest-remainder apportionment (summing to max_samples)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = np.r_[np.zeros(31, int), np.ones(19, int), np.full(10, 2)]

    def root_counts(**kw):
        f = ConditionalInferenceForestClassifier(n_estimators=3, random_state=0, **kw).fit(X, y)
        return [
            np.rint(t.tree_.value[0, 0] * t.tree_.n_node_samples[0]).astype(int).tolist()
            for t in f.estimators_
        ]

    # ceil(0.29 * 60) = 18 (not round(17.4) = 17): ideal shares 9.3, 5.7, 3.0 -> 9, 6, 3
    assert root_counts(max_samples=0.29) == [[9, 6, 3]] * 3
    assert root_counts(max_samples=1000) == [[31, 19, 10]] * 3  # capped at n
    assert root_counts() == [[31, 19, 10]] * 3
    f = ConditionalInferenceForestClassifier(
        n_estimators=3, max_samples=0.29, sampling_method="bootstrap", random_state=0
    )
    assert all(t.tree_.n_node_samples[0] == 18 for t in f.fit(X, y).estimators_)
