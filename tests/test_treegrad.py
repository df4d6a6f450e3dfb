"""TreeGrad engine tests.

Oracles:
* brute force over all 2^n subsets, computed here in numpy straight from scikit-learn's
  ``tree_`` arrays with the raw per-edge definition (no merged-gamma trick): the game, the
  multilinear extension as an expectation over independent Bernoulli(z) subsets, its partial
  derivatives (exact for a multilinear function: fbar(z | z_i = 1) - fbar(z | z_i = 0)) and
  semivalues with their subset-size weights;
* ``shap.TreeExplainer(model, feature_perturbation='tree_path_dependent')`` for Shapley;
* hand-computed worked cases A and B of research/treegrad.md section 10.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import betaln
from sklearn.datasets import load_breast_cancer, make_classification, make_regression
from sklearn.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import engine.treegrad as tg
from engine.tree import TreeArrays, from_sklearn

# ---------------------------------------------------------------------------------------
# brute-force oracle (independent of the engine)
# ---------------------------------------------------------------------------------------


def _bf_tree(sk_tree, x, col, weight, masks, normalise):
    """f_x(S) for all subsets (rows of ``masks``) of one scikit-learn tree."""
    cl, cr = sk_tree.children_left, sk_tree.children_right
    feat, thr = sk_tree.feature, sk_tree.threshold
    cov = sk_tree.weighted_n_node_samples
    val = sk_tree.value[:, 0, :]
    if normalise:
        val = val / val.sum(axis=1, keepdims=True)
    x32 = x.astype(np.float32).astype(np.float64)
    out = np.zeros(masks.shape[0])
    stack = [(0, np.ones(masks.shape[0]))]
    while stack:
        u, w = stack.pop()
        if cl[u] < 0:
            out += w * val[u, col] * weight
            continue
        j = feat[u]
        goes_left = x32[j] <= thr[u]
        for child, act in ((cl[u], goes_left), (cr[u], not goes_left)):
            r = cov[child] / cov[u]
            stack.append((child, w * np.where(masks[:, j], float(act), r)))
    return out


def _tree_parts(model, class_index):
    """(sklearn Tree, value column, weight, normalise) for every tree of the explained output."""
    if isinstance(model, DecisionTreeClassifier):
        return [(model.tree_, class_index, 1.0, True)]
    if isinstance(model, DecisionTreeRegressor):
        return [(model.tree_, 0, 1.0, False)]
    if isinstance(model, RandomForestClassifier):
        w = 1.0 / len(model.estimators_)
        return [(e.tree_, class_index, w, True) for e in model.estimators_]
    if isinstance(model, RandomForestRegressor):
        w = 1.0 / len(model.estimators_)
        return [(e.tree_, 0, w, False) for e in model.estimators_]
    if isinstance(model, GradientBoostingRegressor):
        return [(e.tree_, 0, model.learning_rate, False) for e in model.estimators_[:, 0]]
    if isinstance(model, GradientBoostingClassifier):
        if model.estimators_.shape[1] == 1:
            sign = -1.0 if class_index == 0 else 1.0
            return [
                (e.tree_, 0, sign * model.learning_rate, False) for e in model.estimators_[:, 0]
            ]
        return [(e.tree_, 0, model.learning_rate, False) for e in model.estimators_[:, class_index]]
    raise TypeError(type(model))


def bf_game(model, x, class_index, n):
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    f = sum(_bf_tree(t, x, c, w, masks, norm) for t, c, w, norm in _tree_parts(model, class_index))
    return f, masks


def bf_fbar(f, masks, z):
    probs = np.prod(np.where(masks, z, 1.0 - z), axis=1)
    return float(probs @ f)


def bf_grad(f, masks, z):
    g = np.empty(masks.shape[1])
    for i in range(masks.shape[1]):
        z1, z0 = z.copy(), z.copy()
        z1[i], z0[i] = 1.0, 0.0
        g[i] = bf_fbar(f, masks, z1) - bf_fbar(f, masks, z0)
    return g


def bf_semivalue(f, n, weight):
    """phi_i = sum_{S not containing i} weight(|S|) (f(S + i) - f(S))."""
    idx = np.arange(2**n)
    size = np.array([bin(s).count("1") for s in idx])
    phi = np.zeros(n)
    for i in range(n):
        out = (idx >> i) & 1 == 0
        s = idx[out]
        phi[i] = np.sum(weight(size[out]) * (f[s | (1 << i)] - f[s]))
    return phi


def beta_weight(n, a, b):
    return lambda s: np.exp(betaln(s + b, n - 1 - s + a) - betaln(a, b))


def wb_weight(n, p):
    return lambda s: p**s * (1 - p) ** (n - 1 - s)


def assert_close(a, b, scale):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * max(1.0, scale))


# ---------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------

N = 7


def _data(kind, seed, n=N, n_samples=300, n_classes=2):
    if kind == "reg":
        X, y = make_regression(n_samples, n, n_informative=n - 2, noise=5.0, random_state=seed)
    else:
        X, y = make_classification(
            n_samples,
            n,
            n_informative=n - 2,
            n_redundant=1,
            n_classes=n_classes,
            n_clusters_per_class=1,
            flip_y=0.1,
            random_state=seed,
        )
    return X.astype(np.float32).astype(np.float64), y


def _model(name, depth, seed):
    if name == "dt_reg":
        X, y = _data("reg", seed)
        return DecisionTreeRegressor(max_depth=depth, random_state=seed).fit(X, y), X, 0
    if name == "dt_clf":
        X, y = _data("clf", seed, n_classes=3)
        return DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y), X, 2
    if name == "rf_clf":
        X, y = _data("clf", seed)
        m = RandomForestClassifier(4, max_depth=depth, random_state=seed).fit(X, y)
        return m, X, 1
    if name == "rf_reg":
        X, y = _data("reg", seed)
        return RandomForestRegressor(3, max_depth=depth, random_state=seed).fit(X, y), X, 0
    if name == "gb_bin":
        X, y = _data("clf", seed)
        m = GradientBoostingClassifier(
            n_estimators=5, max_depth=min(depth, 5), random_state=seed
        ).fit(X, y)
        return m, X, 0
    if name == "gb_multi":
        X, y = _data("clf", seed, n_classes=3)
        m = GradientBoostingClassifier(
            n_estimators=4, max_depth=min(depth, 5), random_state=seed
        ).fit(X, y)
        return m, X, 1
    if name == "gb_reg":
        X, y = _data("reg", seed)
        m = GradientBoostingRegressor(
            n_estimators=5, max_depth=min(depth, 5), random_state=seed
        ).fit(X, y)
        return m, X, 0
    raise KeyError(name)


CASES = [
    ("dt_reg", 2, 0),
    ("dt_reg", 6, 1),
    ("dt_reg", 30, 2),
    ("dt_clf", 3, 3),
    ("dt_clf", 30, 4),
    ("rf_clf", 8, 5),
    ("rf_reg", 12, 6),
    ("gb_bin", 4, 7),
    ("gb_multi", 3, 8),
    ("gb_reg", 5, 9),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,depth,seed", CASES)
def test_brute_force_agreement(name, depth, seed):
    model, X, c = _model(name, depth, seed)
    rng = np.random.default_rng(seed)
    for x in X[rng.choice(len(X), 2, replace=False)]:
        f, masks = bf_game(model, x, c, N)
        scale = np.abs(f).max()
        # game values (the engine adds the output's constant: compare differences)
        gv = tg.game_value(model, x, masks, class_index=c)
        assert_close(gv - gv[-1], f - f[-1], scale)
        # fbar and gradients at random, binary and 0.5 z
        zs = [
            rng.random(N),
            rng.integers(0, 2, N).astype(float),
            np.full(N, 0.5),
            np.ones(N),
            np.zeros(N),
        ]
        for z in zs:
            g, fb = tg.treegrad(model, x, z, class_index=c, return_value=True)
            assert_close(g, bf_grad(f, masks, z), scale)
            assert_close(fb - gv[-1], bf_fbar(f, masks, z) - f[-1], scale)
            assert_close(tg.multilinear(model, x, z, class_index=c), fb, scale)
        # semivalues
        assert_close(
            tg.shapley(model, x, class_index=c), bf_semivalue(f, N, beta_weight(N, 1, 1)), scale
        )
        assert_close(
            tg.banzhaf(model, x, class_index=c), bf_semivalue(f, N, wb_weight(N, 0.5)), scale
        )
        for a, b in [(4, 1), (16, 1), (1, 16), (8, 4)]:
            assert_close(
                tg.beta_shapley(model, x, a, b, class_index=c),
                bf_semivalue(f, N, beta_weight(N, a, b)),
                scale,
            )
        for p in (0.2, 0.8):
            assert_close(
                tg.banzhaf(model, x, p, class_index=c), bf_semivalue(f, N, wb_weight(N, p)), scale
            )
        # TreeProb, roots of unity (any semivalue)
        assert_close(
            tg.treeprob(model, x, 4, 1, class_index=c),
            bf_semivalue(f, N, beta_weight(N, 4, 1)),
            scale,
        )
        assert_close(
            tg.treeprob(model, x, p=0.2, class_index=c),
            bf_semivalue(f, N, wb_weight(N, 0.2)),
            scale,
        )
        # Ranker with one step = Banzhaf
        assert_close(
            tg.rank(model, x, class_index=c, steps=1).scores,
            tg.banzhaf(model, x, class_index=c),
            scale,
        )


@pytest.mark.parametrize("name,depth,seed", CASES[:3] + CASES[7:8])
def test_batch_equals_single_and_efficiency(name, depth, seed):
    model, X, c = _model(name, depth, seed)
    Xb = X[:5]
    phi = tg.shapley(model, Xb, class_index=c)
    for r in range(5):
        np.testing.assert_allclose(phi[r], tg.shapley(model, Xb[r], class_index=c), atol=1e-12)
    full = tg.game_value(model, Xb, np.ones(N, bool), class_index=c)
    empty = tg.game_value(model, Xb, np.zeros(N, bool), class_index=c)
    np.testing.assert_allclose(phi.sum(axis=1), full - empty, atol=1e-10)
    # f(all) is the prediction
    if hasattr(model, "decision_function") and name.startswith("gb"):
        pred = model.decision_function(Xb)
        pred = pred if pred.ndim == 1 else pred[:, c]
        pred = -pred if (name == "gb_bin" and c == 0) else pred
    elif hasattr(model, "predict_proba"):
        pred = model.predict_proba(Xb)[:, c]
    else:
        pred = model.predict(Xb)
    np.testing.assert_allclose(full, pred, atol=1e-9)


def test_random_z_per_sample_and_absent_feature():
    X, y = _data("reg", 11)
    X = X.copy()
    model = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X[:, :5], y)
    # our tree with 2 extra never-used features
    t = from_sklearn(model)
    wide = TreeArrays(
        t.children_left,
        t.children_right,
        t.feature,
        t.threshold,
        t.impurity,
        t.n_node_samples,
        t.weighted_n_node_samples,
        t.value,
        task="regression",
        n_features=N,
    )
    unused = np.setdiff1d(np.arange(N), t.feature[t.feature >= 0])
    assert unused.size >= 2
    rng = np.random.default_rng(0)
    Z = rng.random((4, N))
    G = tg.treegrad(wide, X[:4], Z)
    for r in range(4):
        np.testing.assert_allclose(G[r], tg.treegrad(wide, X[r], Z[r]), atol=1e-12)
    x = X[0]
    for scores in (
        G,
        tg.shapley(wide, X[:4]),
        tg.banzhaf(wide, X[:4], 0.3),
        tg.beta_shapley(wide, X[:4], 8, 4),
        tg.rank(wide, X[:4]).scores,
        tg.rank(wide, X[:4], optimizer="adam").scores,
        tg.treeprob(wide, X[:4]),
    ):
        assert np.all(scores[:, unused] == 0.0)
    assert tg.treegrad(wide, x, np.ones(N))[unused].tolist() == [0.0] * unused.size


# ---------------------------------------------------------------------------------------
# worked cases (research/treegrad.md section 10)
# ---------------------------------------------------------------------------------------


def _case_a():
    cov = [100, 60, 40, 20, 40, 30, 10]
    return TreeArrays(
        [1, 3, 5, -1, -1, -1, -1],
        [2, 4, 6, -1, -1, -1, -1],
        [0, 1, 2, -2, -2, -2, -2],
        [0.5, 0.5, 0.5, -2, -2, -2, -2],
        np.zeros(7),
        cov,
        np.array(cov, float),
        np.array([0, 0, 0, 1, 4, 10, 20.0]).reshape(-1, 1, 1),
        task="regression",
        n_features=3,
    )


def test_case_a():
    T, x = _case_a(), np.array([0.0, 1.0, 1.0])
    masks = ((np.arange(8)[:, None] >> np.arange(3)) & 1).astype(bool)
    np.testing.assert_allclose(
        tg.game_value(T, x, masks), [6.8, 3, 7.4, 4, 9.8, 3, 10.4, 4], atol=1e-12
    )
    for phi in (
        tg.shapley(T, x),
        tg.banzhaf(T, x),
        tg.treeprob(T, x),
        tg.rank(T, x).scores,
        tg.rank(T, x, optimizer="adam").scores,
    ):
        np.testing.assert_allclose(phi, [-5.1, 0.8, 1.5], atol=1e-12)
    np.testing.assert_allclose(tg.beta_shapley(T, x, 4, 1), [-4.32, 0.68, 2.4], atol=1e-12)
    np.testing.assert_allclose(tg.treegrad(T, x, [0, 1, 1]), [-6.4, 0.6, 3], atol=1e-12)
    np.testing.assert_allclose(tg.treegrad(T, x, [1, 0, 0]), [-3.8, 1, 0], atol=1e-12)
    z = np.array([0.3, 0.9, 0.2])
    np.testing.assert_allclose(
        tg.treegrad(T, x, z), [-3.8 + 0.4 * 0.9 - 3 * 0.2, 0.6 + 0.4 * 0.3, 3 - 3 * 0.3], atol=1e-12
    )


def _case_b():
    return TreeArrays(
        [1, 3, -1, -1, -1],
        [2, 4, -1, -1, -1],
        [0, 0, -2, -2, -2],
        [0.5, 0.25, -2, -2, -2],
        np.zeros(5),
        [100, 50, 50, 20, 30],
        np.array([100, 50, 50, 20, 30.0]),
        np.array([0, 0, 6, 10, 4.0]).reshape(-1, 1, 1),
        task="regression",
        n_features=1,
    )


def test_case_b_repeated_feature_and_zero_division():
    T = _case_b()
    assert tg.game_value(T, [0.3], [[0], [1]]).tolist() == pytest.approx([6.2, 4.0])
    for z in (0.0, 0.25, 0.5, 1.0):
        assert tg.treegrad(T, [0.3], [z])[0] == pytest.approx(-2.2, abs=1e-12)
        assert tg.treegrad(T, [0.1], [z])[0] == pytest.approx(3.8, abs=1e-12)
        assert tg.multilinear(T, [0.3], [z]) == pytest.approx(6.2 - 2.2 * z, abs=1e-12)
        assert tg.multilinear(T, [0.1], [z]) == pytest.approx(6.2 + 3.8 * z, abs=1e-12)


def test_depth_two_ranker_equals_banzhaf_equals_shapley():
    for seed in range(4):
        model, X, c = _model("dt_clf", 2, seed)
        for x in X[:3]:
            sh = tg.shapley(model, x, class_index=c)
            np.testing.assert_allclose(tg.banzhaf(model, x, class_index=c), sh, atol=1e-13)
            for opt in ("ga", "adam"):
                for lr, steps in ((5, 100), (1, 10)):
                    r = tg.rank(model, x, class_index=c, optimizer=opt, lr=lr, steps=steps)
                    np.testing.assert_allclose(r.scores, sh, atol=1e-13)


def test_ranker_history_and_objective():
    model, X, c = _model("dt_reg", 8, 3)
    x = X[0]
    r = tg.rank(model, x, steps=20, lr=5, optimizer="adam")
    assert r.z_history.shape == (21, N) and r.objective.shape == (21,)
    assert np.all(r.z_history[0] == 0.5)
    assert np.all((r.z_history >= 0) & (r.z_history <= 1))
    f, masks = bf_game(model, x, c, N)
    for t in (0, 5, 20):
        z = r.z_history[t]
        J = 0.5 * (bf_fbar(f, masks, z) - bf_fbar(f, masks, 1 - z))
        assert r.objective[t] == pytest.approx(J, abs=1e-9 * np.abs(f).max())
    # the Ranker's final objective is no worse than the start (maximisation)
    assert r.objective[-1] >= r.objective[0]
    # scores = running mean of the brute-force symmetric gradient along the z history
    # (Adam saturates z at vertices: the zero-division path)
    for opt in ("adam", "ga"):
        r = tg.rank(model, x, steps=12, lr=5, optimizer=opt)
        sym = [0.5 * (bf_grad(f, masks, z) + bf_grad(f, masks, 1 - z)) for z in r.z_history[:-1]]
        assert_close(r.scores, np.mean(sym, axis=0), np.abs(f).max())
        if opt == "adam":  # the first Adam step (about lr * sign(g)) lands on a vertex
            assert set(np.unique(r.z_history[1]).tolist()) <= {0.0, 0.5, 1.0}


# ---------------------------------------------------------------------------------------
# insertion / deletion
# ---------------------------------------------------------------------------------------


def test_insertion_deletion_curves():
    model, X, c = _model("gb_bin", 4, 7)
    Xb = X[:3]
    sc = tg.shapley(model, Xb, class_index=1)
    cur = tg.insertion_deletion(model, Xb, sc, class_index=1)
    assert cur.insertion.shape == (3, N + 1)
    full = tg.game_value(model, Xb, np.ones(N, bool), class_index=1)
    empty = tg.game_value(model, Xb, np.zeros(N, bool), class_index=1)
    np.testing.assert_allclose(cur.insertion[:, 0], empty)
    np.testing.assert_allclose(cur.insertion[:, -1], full)
    np.testing.assert_allclose(cur.deletion[:, 0], full)
    np.testing.assert_allclose(cur.deletion[:, -1], empty)
    np.testing.assert_allclose(cur.auc_insertion, cur.insertion.mean(axis=1))
    np.testing.assert_allclose(cur.joint, cur.auc_insertion - cur.auc_deletion)
    # each point is f of the top-k set
    order = np.argsort(-sc[0], kind="stable")
    for k in range(N + 1):
        S = np.zeros(N, bool)
        S[order[:k]] = True
        assert cur.insertion[0, k] == pytest.approx(tg.game_value(model, Xb[0], S, 1))
        assert cur.deletion[0, k] == pytest.approx(tg.game_value(model, Xb[0], ~S, 1))
    best = tg.best_curves(model, Xb, class_index=1)
    rnd = tg.random_insertion_deletion(model, Xb, n_rankings=8, seed=0, class_index=1)
    for cv in (cur, rnd):
        assert np.all(best.insertion >= cv.insertion - 1e-12)
        assert np.all(best.deletion <= cv.deletion + 1e-12)
    # probability scale: endpoints are predict_proba
    pc = tg.insertion_deletion(model, Xb, sc, class_index=1, output="probability")
    np.testing.assert_allclose(pc.insertion[:, -1], model.predict_proba(Xb)[:, 1], atol=1e-12)
    mm, Xm, cm = _model("gb_multi", 3, 8)
    pm = tg.insertion_deletion(mm, Xm[:2], np.arange(N), class_index=cm, output="probability")
    np.testing.assert_allclose(pm.insertion[:, -1], mm.predict_proba(Xm[:2])[:, cm], atol=1e-12)


# ---------------------------------------------------------------------------------------
# shap (optional) and deep trees
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_shapley_equals_shap_tree_path_dependent():
    shap = pytest.importorskip("shap")
    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32).astype(np.float64)
    rows = X[::57][:6]
    for depth in (8, 15):
        m = DecisionTreeClassifier(max_depth=depth, random_state=depth).fit(X, y)
        sv = shap.TreeExplainer(m, feature_perturbation="tree_path_dependent").shap_values(rows)
        for c in (0, 1):
            ours = tg.shapley(m, rows, class_index=c)
            np.testing.assert_allclose(ours, sv[:, :, c], atol=1e-10)
    gb = GradientBoostingClassifier(n_estimators=20, max_depth=4, random_state=0).fit(X, y)
    sv = shap.TreeExplainer(gb, feature_perturbation="tree_path_dependent").shap_values(rows)
    scale = max(1.0, np.abs(sv).max())
    np.testing.assert_allclose(tg.shapley(gb, rows, class_index=1), sv, atol=1e-10 * scale)
    np.testing.assert_allclose(tg.shapley(gb, rows, class_index=0), -sv, atol=1e-10 * scale)
    rf = RandomForestRegressor(5, max_depth=10, random_state=0).fit(X, X[:, 0] * 3 + y)
    sv = shap.TreeExplainer(rf, feature_perturbation="tree_path_dependent").shap_values(rows)
    np.testing.assert_allclose(tg.shapley(rf, rows), sv, atol=1e-10 * max(1, np.abs(sv).max()))


@pytest.mark.slow
def test_deep_tree_treegrad_shap_exact_chebyshev_unstable():
    X, y = make_classification(40000, n_features=10, n_informative=6, flip_y=0.3, random_state=0)
    X = X.astype(np.float32).astype(np.float64)
    m = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert m.get_depth() >= 45
    err_tg, err_cheb = 0.0, 0.0
    for x in X[:2]:
        f, _ = bf_game(m, x, 1, 10)
        ref = bf_semivalue(f, 10, beta_weight(10, 1, 1))
        err_tg = max(err_tg, np.abs(tg.shapley(m, x, class_index=1) - ref).max())
        err_cheb = max(
            err_cheb, np.abs(tg.treeprob(m, x, nodes="chebyshev", class_index=1) - ref).max()
        )
        roots = tg.treeprob(m, x, class_index=1)
        np.testing.assert_allclose(roots, ref, atol=1e-10)
    assert err_tg <= 1e-12
    assert err_cheb > 1e-4


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------


def test_errors():
    model, X, c = _model("dt_clf", 3, 0)
    x = X[0]
    with pytest.raises(ValueError, match="class_index"):
        tg.shapley(model, x, class_index=3)
    with pytest.raises(ValueError, match="class_index is required"):
        tg.shapley(model, x)
    with pytest.raises(ValueError):
        tg.shapley(model, x[:3], class_index=0)
    bad = x.copy()
    bad[1] = np.inf
    with pytest.raises(ValueError, match="inf"):
        tg.banzhaf(model, bad, class_index=0)
    with pytest.raises(TypeError, match="unsupported model"):
        tg.shapley(object(), x)
    with pytest.raises(TypeError):
        from sklearn.linear_model import LinearRegression

        tg.shapley(LinearRegression().fit(X, X[:, 0]), x)
    with pytest.raises(ValueError, match="integer"):
        tg.beta_shapley(model, x, 1.5, 1, class_index=0)
    with pytest.raises(ValueError, match="z must"):
        tg.treegrad(model, x, np.full(N, 1.5), class_index=0)
    with pytest.raises(ValueError, match="optimizer"):
        tg.rank(model, x, class_index=0, optimizer="sgd")
    with pytest.raises(ValueError, match="nodes"):
        tg.treeprob(model, x, nodes="legendre", class_index=0)
    with pytest.raises(ValueError, match="n_rankings"):
        tg.random_insertion_deletion(model, x, n_rankings=0, class_index=0)
    with pytest.raises(ValueError, match="scores"):
        tg.insertion_deletion(model, x, np.ones(3), class_index=0)
    with pytest.raises(ValueError, match="feature indices"):
        tg.game_value(model, x, [N + 1], class_index=0)
    reg, Xr, _ = _model("dt_reg", 3, 0)
    assert tg.shapley(reg, Xr[0]).shape == (N,)
    with pytest.raises(ValueError, match="class_index"):
        tg.shapley(reg, Xr[0], class_index=1)
    with pytest.raises(ValueError, match="12"):
        Xw, yw = make_regression(50, 13, random_state=0)
        tg.best_curves(DecisionTreeRegressor(max_depth=3).fit(Xw, yw), Xw[0])


def test_warmup_runs():
    tg._warmup()


def _bf_ours(tree, x, col, masks):
    """Brute-force game of one of our TreeArrays (categorical set splits via _goes_left)."""
    val = tree.value[:, 0, :]
    cov = tree.weighted_n_node_samples
    out = np.zeros(masks.shape[0])
    stack = [(0, np.ones(masks.shape[0]))]
    while stack:
        u, w = stack.pop()
        cl, cr = tree.children_left[u], tree.children_right[u]
        if cl < 0:
            out += w * val[u, col]
            continue
        j = tree.feature[u]
        gl = tree._goes_left(u, x[j])
        for child, act in ((cl, gl), (cr, not gl)):
            stack.append((child, w * np.where(masks[:, j], float(act), cov[child] / cov[u])))
    return out


def test_treelab_cart_with_categorical_splits():
    from engine.cart import CARTClassifier

    rng = np.random.default_rng(5)
    n = 6
    X = rng.normal(size=(400, n))
    X[:, 0] = rng.integers(0, 5, 400)
    X[:, 3] = rng.integers(0, 4, 400)
    y = ((X[:, 0] % 2 == 1) ^ (X[:, 1] > 0) ^ (X[:, 3] == 2)).astype(int)
    est = CARTClassifier(max_depth=7, categorical_features=[0, 3], random_state=0).fit(X, y)
    tree = est.tree_
    assert tree.has_categorical_splits
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    for x in X[:4]:
        f = _bf_ours(tree, x, 1, masks)
        np.testing.assert_allclose(tg.game_value(est, x, masks), f, atol=1e-12)
        np.testing.assert_allclose(
            tg.shapley(est, x), bf_semivalue(f, n, beta_weight(n, 1, 1)), atol=1e-12
        )
        z = rng.random(n)
        np.testing.assert_allclose(tg.treegrad(tree, x, z), bf_grad(f, masks, z), atol=1e-12)
        np.testing.assert_allclose(
            tg.treegrad(tree, x, masks[37].astype(float)),
            bf_grad(f, masks, masks[37].astype(float)),
            atol=1e-12,
        )
    np.testing.assert_allclose(
        tg.game_value(tree, X[:5], np.ones(n, bool)), est.predict_proba(X[:5])[:, 1], atol=1e-12
    )


def test_ten_features_brute_force():
    X, y = make_regression(600, 10, n_informative=8, noise=1.0, random_state=3)
    X = X.astype(np.float32).astype(np.float64)
    m = DecisionTreeRegressor(max_depth=14, random_state=0).fit(X, y)
    x = X[7]
    f, masks = bf_game(m, x, 0, 10)
    scale = np.abs(f).max()
    assert_close(tg.shapley(m, x), bf_semivalue(f, 10, beta_weight(10, 1, 1)), scale)
    assert_close(tg.beta_shapley(m, x, 1, 16), bf_semivalue(f, 10, beta_weight(10, 1, 16)), scale)
    z = np.random.default_rng(0).integers(0, 2, 10).astype(float)
    assert_close(tg.treegrad(m, x, z), bf_grad(f, masks, z), scale)


def test_concurrent_calls_from_threads():
    """Parallel kernels are serialised (call_parallel): two threads get the serial answers."""
    from concurrent.futures import ThreadPoolExecutor

    model, X, c = _model("rf_clf", 8, 5)
    T = from_sklearn(model)
    Xb = X[:40]
    ref_sh = tg.shapley(T, Xb, class_index=c)
    ref_rk = tg.rank(T, Xb, class_index=c, steps=5).scores
    with ThreadPoolExecutor(4) as ex:
        futs = [ex.submit(tg.shapley, T, Xb, class_index=c) for _ in range(3)]
        futs += [ex.submit(lambda: tg.rank(T, Xb, class_index=c, steps=5).scores) for _ in range(3)]
        res = [f.result() for f in futs]
    for r in res[:3]:
        np.testing.assert_array_equal(r, ref_sh)
    for r in res[3:]:
        np.testing.assert_array_equal(r, ref_rk)


def test_best_first_trees_are_renumbered_in_preorder():
    """Trees grown best-first (max_leaf_nodes) number nodes in growth order; TreeGrad packs
    them in depth-first pre-order (the kernels' visiting order).  Results must not change:
    brute force for a scikit-learn tree and a categorical TreeLab CART, shap for Shapley."""
    from engine.cart import CARTClassifier
    from engine.treegrad._model import pack, preorder_ids

    X, y = make_regression(800, N, n_informative=N - 1, noise=2.0, random_state=4)
    X = X.astype(np.float32).astype(np.float64)
    m = DecisionTreeRegressor(max_leaf_nodes=60, random_state=0).fit(X, y)
    T = from_sklearn(m)
    new = preorder_ids(T.children_left, T.children_right, T.depth)
    assert not np.array_equal(new, np.arange(T.node_count))  # really reordered
    assert np.array_equal(np.sort(new), np.arange(T.node_count))
    P = pack(T)
    # pre-order: every left child follows its parent, the root is first
    internal = np.flatnonzero(P.left >= 0)
    assert np.array_equal(P.left[internal], internal + 1) and P.parent[0] == -1
    rng = np.random.default_rng(2)
    for x in X[:3]:
        f, masks = bf_game(m, x, 0, N)
        scale = np.abs(f).max()
        gv = tg.game_value(T, x, masks)
        assert_close(gv - gv[-1], f - f[-1], scale)
        for z in (rng.random(N), rng.integers(0, 2, N).astype(float)):
            assert_close(tg.treegrad(T, x, z), bf_grad(f, masks, z), scale)
        assert_close(tg.shapley(T, x), bf_semivalue(f, N, beta_weight(N, 1, 1)), scale)
        assert_close(tg.treeprob(T, x, 8, 4), bf_semivalue(f, N, beta_weight(N, 8, 4)), scale)
        assert_close(tg.rank(T, x, steps=1).scores, tg.banzhaf(T, x), scale)
    # categorical set splits grown best-first
    n = 6
    Xc = rng.normal(size=(500, n))
    Xc[:, 0] = rng.integers(0, 5, 500)
    yc = ((Xc[:, 0] % 2 == 1) ^ (Xc[:, 1] > 0)).astype(int)
    est = CARTClassifier(max_leaf_nodes=25, categorical_features=[0], random_state=0).fit(Xc, yc)
    tree = est.tree_
    assert tree.has_categorical_splits
    cmasks = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    for x in Xc[:3]:
        fc = _bf_ours(tree, x, 1, cmasks)
        np.testing.assert_allclose(tg.game_value(est, x, cmasks), fc, atol=1e-12)
        np.testing.assert_allclose(
            tg.shapley(est, x), bf_semivalue(fc, n, beta_weight(n, 1, 1)), atol=1e-12
        )


# ---------------------------------------------------------------------------------------
# shapiq (TreeExplainer, path-dependent) as a second peer oracle
# ---------------------------------------------------------------------------------------


def _shapiq_phi(explainer, rows):
    """shapiq's first-order values of every row as float64 ``(m, n)``."""
    n = rows.shape[1]
    return np.array([[iv[(i,)] for i in range(n)] for iv in map(explainer.explain, rows)])


def _shapiq_pair(shapiq, model, class_index=None):
    """shapiq's path-dependent Shapley ("SV") and Banzhaf ("BV"; releases before 1.8 take
    it as the order-1 "BII") explainers."""
    kw = {"max_order": 1, "min_order": 1, "class_index": class_index}
    return (
        shapiq.TreeExplainer(model, index="SV", **kw),
        shapiq.TreeExplainer(model, index="BV" if _shapiq_is_quadrature() else "BII", **kw),
    )


def _shapiq_is_quadrature() -> bool:
    """shapiq >= 1.8 (Python >= 3.12) computes path-dependent values by QuadratureTreeSHAP;
    older releases by TreeSHAP-IQ, whose order-1 Banzhaf loses digits on deep trees with
    many features (1e-4 on the depth-10 breast_cancer forest below, where 1.8 and ours
    agree to 1e-12; 4e-11 against the 2^12 brute force at depth 10 with 12 features)."""
    from importlib.metadata import version

    major, minor = (int(p) for p in version("shapiq").split(".")[:2])
    return (major, minor) >= (1, 8)


@pytest.mark.slow
def test_shapley_and_banzhaf_equal_shapiq():
    """Shapley and Banzhaf values equal shapiq's TreeExplainer (path-dependent; scikit-learn
    trees of both classes and forests) to 1e-10, batch and single rows alike (Banzhaf of
    the regression forest: QuadratureTreeSHAP releases only, see above)."""
    shapiq = pytest.importorskip("shapiq")
    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32).astype(np.float64)
    rows = X[::57][:5]
    for depth in (8, 15):
        m = DecisionTreeClassifier(max_depth=depth, random_state=depth).fit(X, y)
        for c in (0, 1):
            sv, bv = _shapiq_pair(shapiq, m, c)
            np.testing.assert_allclose(
                tg.shapley(m, rows, class_index=c), _shapiq_phi(sv, rows), atol=1e-10
            )
            np.testing.assert_allclose(
                tg.banzhaf(m, rows, class_index=c), _shapiq_phi(bv, rows), atol=1e-10
            )
            np.testing.assert_allclose(
                tg.shapley(m, rows[2], class_index=c), _shapiq_phi(sv, rows[2:3])[0], atol=1e-10
            )
    rf = RandomForestRegressor(5, max_depth=10, random_state=0).fit(X, X[:, 0] * 3 + y)
    sv, bv = _shapiq_pair(shapiq, rf)
    scale = max(1.0, np.abs(X[:, 0]).max() * 3)
    np.testing.assert_allclose(tg.shapley(rf, rows), _shapiq_phi(sv, rows), atol=1e-10 * scale)
    if _shapiq_is_quadrature():
        np.testing.assert_allclose(tg.banzhaf(rf, rows), _shapiq_phi(bv, rows), atol=1e-10 * scale)
    rfc = RandomForestClassifier(6, max_depth=12, random_state=1).fit(X, y)
    sv, bv = _shapiq_pair(shapiq, rfc, 1)
    np.testing.assert_allclose(
        tg.shapley(rfc, rows, class_index=1), _shapiq_phi(sv, rows), atol=1e-10
    )
    np.testing.assert_allclose(
        tg.banzhaf(rfc, rows, class_index=1), _shapiq_phi(bv, rows), atol=1e-10
    )


@pytest.mark.parametrize("name,depth,seed", [("dt_reg", 6, 1), ("dt_clf", 30, 4), ("rf_clf", 8, 5)])
def test_shapiq_and_treegrad_equal_brute_force(name, depth, seed):
    """The peer is an oracle of the same game: shapiq's Shapley and Banzhaf values equal the
    2^n brute force, as ours do."""
    shapiq = pytest.importorskip("shapiq")
    model, X, c = _model(name, depth, seed)
    sv, bv = _shapiq_pair(shapiq, model, c if name != "dt_reg" else None)
    rows = X[:3]
    got_sv, got_bv = _shapiq_phi(sv, rows), _shapiq_phi(bv, rows)
    for r, x in enumerate(rows):
        f, _ = bf_game(model, x, c, N)
        scale = np.abs(f).max()
        ref_sv = bf_semivalue(f, N, beta_weight(N, 1, 1))
        ref_bv = bf_semivalue(f, N, wb_weight(N, 0.5))
        assert_close(got_sv[r], ref_sv, scale)
        assert_close(got_bv[r], ref_bv, scale)
        assert_close(tg.shapley(model, x, class_index=c), ref_sv, scale)
        assert_close(tg.banzhaf(model, x, class_index=c), ref_bv, scale)


@pytest.mark.slow
def test_deep_tree_shapiq_and_treegrad_equal_brute_force():
    """On the grown-out depth >= 45 tree of the numerics table, TreeGrad-Shap stays within
    1e-12 of the 2^10 brute force and shapiq within 1e-10 (Shapley and Banzhaf)."""
    shapiq = pytest.importorskip("shapiq")
    X, y = make_classification(40000, n_features=10, n_informative=6, flip_y=0.3, random_state=0)
    X = X.astype(np.float32).astype(np.float64)
    m = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert m.get_depth() >= 45
    sv, bv = _shapiq_pair(shapiq, m, 1)
    rows = X[:2]
    got_sv, got_bv = _shapiq_phi(sv, rows), _shapiq_phi(bv, rows)
    ours_sv, ours_bv = tg.shapley(m, rows, class_index=1), tg.banzhaf(m, rows, class_index=1)
    for r, x in enumerate(rows):
        f, _ = bf_game(m, x, 1, 10)
        ref_sv = bf_semivalue(f, 10, beta_weight(10, 1, 1))
        ref_bv = bf_semivalue(f, 10, wb_weight(10, 0.5))
        assert np.abs(ours_sv[r] - ref_sv).max() <= 1e-12
        assert np.abs(ours_bv[r] - ref_bv).max() <= 1e-12
        assert np.abs(got_sv[r] - ref_sv).max() <= 1e-10
        assert np.abs(got_bv[r] - ref_bv).max() <= 1e-10


# ---------------------------------------------------------------------------------------
# the pre-order walk kernels (TreeGrad-Shap, Banzhaf, constant-z gradients)
# ---------------------------------------------------------------------------------------


def _stack_kernel_shapley(model, X, alpha=1, beta=1, class_index=None):
    """Reference: the stack-based traversal (``diag_batch_serial``) with Gauss-Legendre on
    D = min(max depth, n_features) nodes, i.e. TreeGrad-Shap before the walk kernels."""
    from engine.treegrad import _kernels as kernels
    from engine.treegrad._model import pack

    P = pack(model, class_index)
    Xc, _ = P.check_X(X)
    t, w = tg.quadrature(alpha, beta, min(P.max_depth, P.n_features))
    out = np.zeros((Xc.shape[0], P.n_features))
    kernels.diag_batch_serial(
        P.offs, P.left, P.right, P.feat, P.parent, P.ratio, P.lv, P.goleft(Xc), t, w,
        int(P.max_depth), out,
    )  # fmt: skip
    return out


def test_walk_tables_match_the_tree():
    """Depth, edge feature, nearest same-feature ancestor, parent, flags and the largest
    number of distinct features on a path, recomputed by walking parents in Python; for a
    best-first tree (renumbered) and an ensemble (several roots)."""
    from engine.treegrad import _kernels as kernels
    from engine.treegrad._model import pack

    X, y = make_regression(900, 5, n_informative=5, noise=1.0, random_state=2)
    trees = [
        DecisionTreeRegressor(max_leaf_nodes=80, random_state=0).fit(X, y),
        GradientBoostingRegressor(n_estimators=3, max_depth=6, random_state=0).fit(X, y),
    ]
    for model in trees:
        P = pack(from_sklearn(model))
        W = P.walk()
        D = W.max_depth
        assert W.plain and D == P.max_depth
        best = 0
        for u in range(P.left.shape[0]):
            chain = []  # (depth, feature) of the edges from the node up to its root
            v = u
            while P.parent[v] >= 0:
                chain.append(P.feat[P.parent[v]])
                v = P.parent[v]
            d = len(chain)
            assert W.ints[u, kernels.W_DEPTH] == d and W.ints[u, kernels.W_PARENT] == P.parent[u]
            assert bool(W.ints[u, kernels.W_FLAGS] & kernels.IS_LEAF) == (P.left[u] < 0)
            if d == 0:
                assert W.ints[u, kernels.W_PREV] == D + 1
                continue
            p = P.parent[u]
            assert bool(W.ints[u, kernels.W_FLAGS] & kernels.IS_LEFT) == (P.left[p] == u)
            assert W.ints[u, kernels.W_FEAT] == P.feat[p]
            assert W.floats[u, kernels.W_THR] == P.thr[p]
            assert (
                W.floats[u, kernels.W_RATIO] == P.ratio[u] and W.floats[u, kernels.W_LV] == P.lv[u]
            )
            same = [d - k for k in range(1, d) if chain[k] == chain[0]]  # ancestors' depths
            assert W.ints[u, kernels.W_PREV] == (same[0] if same else D + 1)
            if P.left[u] < 0:
                best = max(best, len(set(chain)))
        assert W.max_path_features == best
    # the quadrature size follows the paths' distinct features, not min(depth, n_features)
    X, y = make_regression(4000, 20, n_informative=15, noise=10.0, random_state=0)
    m = DecisionTreeRegressor(max_leaf_nodes=1000, random_state=0).fit(X, y)
    W = pack(from_sklearn(m)).walk()
    assert W.max_path_features < min(m.get_depth(), 20)


@pytest.mark.parametrize(
    "name,depth,seed",
    [
        pytest.param("dt_reg", 30, 2, marks=pytest.mark.slow),  # a deep tree: seconds
        ("rf_clf", 8, 5),
        ("gb_multi", 3, 8),
    ],
)
def test_walk_kernels_blocks_threads_and_stack_reference(name, depth, seed, monkeypatch):
    """Every batch size (blocks of 16 samples, the last one shorter, and blocks of one or two
    samples sample by sample) gives the single-row values and the stack-kernel reference;
    the threaded path gives the serial one bit for bit."""
    from engine.treegrad import api

    model, X, c = _model(name, depth, seed)
    T = from_sklearn(model)
    X = X[:45]
    ref = _stack_kernel_shapley(T, X, class_index=c)
    ref41 = _stack_kernel_shapley(T, X, 4, 1, class_index=c)
    single = np.array([tg.shapley(T, x, class_index=c) for x in X])
    np.testing.assert_allclose(single, ref, atol=1e-12)
    for m in (1, 2, 3, 4, 7, 15, 16, 17, 18, 19, 33, 45):
        np.testing.assert_allclose(tg.shapley(T, X[:m], class_index=c), single[:m], atol=1e-12)
    np.testing.assert_allclose(tg.beta_shapley(T, X, 4, 1, class_index=c), ref41, atol=1e-12)
    serial = {
        "sh": tg.shapley(T, X, class_index=c),
        "bz": tg.banzhaf(T, X, 0.3, class_index=c),
        "g": tg.treegrad(T, X, 0.7, class_index=c),
    }
    monkeypatch.setattr(api, "SERIAL_WORK", 0)  # force the worker threads
    np.testing.assert_array_equal(tg.shapley(T, X, class_index=c), serial["sh"])
    np.testing.assert_array_equal(tg.banzhaf(T, X, 0.3, class_index=c), serial["bz"])
    np.testing.assert_array_equal(tg.treegrad(T, X, 0.7, class_index=c), serial["g"])
    # banzhaf / gradient at a constant z in (0, 1) equal the exact TreeGrad pass at z
    Z = np.full((X.shape[0], N), 0.3)  # per-sample z: never the walk kernel
    np.testing.assert_allclose(serial["bz"], tg.treegrad(T, X, Z, class_index=c), atol=1e-12)
    g, fb = tg.treegrad(T, X, np.full(N, 0.7), class_index=c, return_value=True)
    g2, fb2 = tg.treegrad(T, X, np.full((X.shape[0], N), 0.7), class_index=c, return_value=True)
    np.testing.assert_allclose(g, g2, atol=1e-12)
    np.testing.assert_allclose(fb, fb2, atol=1e-12)
    np.testing.assert_allclose(
        tg.multilinear(T, X, 0.7, class_index=c),
        tg.multilinear(T, X, np.full((X.shape[0], N), 0.7), class_index=c),
        atol=1e-12,
    )


def test_walk_kernels_categorical_blocks():
    """Set splits route through the goes-left table in the block kernel too: a batch of
    categorical CART rows equals brute force."""
    from engine.cart import CARTClassifier

    rng = np.random.default_rng(8)
    n = 6
    X = rng.normal(size=(500, n))
    X[:, 0] = rng.integers(0, 5, 500)
    X[:, 4] = rng.integers(0, 3, 500)
    y = ((X[:, 0] % 2 == 1) ^ (X[:, 1] > 0) ^ (X[:, 4] == 1)).astype(int)
    est = CARTClassifier(max_depth=8, categorical_features=[0, 4], random_state=0).fit(X, y)
    assert est.tree_.has_categorical_splits
    rows = X[:11]
    phi = tg.shapley(est, rows)
    bz = tg.banzhaf(est, rows, 0.4)
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    for r, x in enumerate(rows):
        f = _bf_ours(est.tree_, x, 1, masks)
        np.testing.assert_allclose(phi[r], bf_semivalue(f, n, beta_weight(n, 1, 1)), atol=1e-12)
        np.testing.assert_allclose(bz[r], bf_semivalue(f, n, wb_weight(n, 0.4)), atol=1e-12)


def test_walk_kernels_inputs():
    """Non-finite rows raise (one row and a batch); float32, read-only, Fortran-ordered,
    list and DataFrame inputs give the float64 values; a bool class_index stays an error
    after the packed model is cached."""
    import pandas as pd

    model, X, c = _model("dt_clf", 8, 3)
    T = from_sklearn(model)
    ref = tg.shapley(T, X[:6], class_index=c)
    bad = X[:6].copy()
    bad[4, 2] = np.inf
    with pytest.raises(ValueError, match="inf"):
        tg.shapley(T, bad, class_index=c)
    with pytest.raises(ValueError, match="inf"):
        tg.shapley(T, bad[4], class_index=c)
    bad[4, 2] = np.nan  # a tree without a missing-value rule refuses NaN
    no_rule = TreeArrays.from_dict({**T.to_dict(), "missing_go_to_left": None})
    with pytest.raises(ValueError, match="no rule for missing values"):
        tg.banzhaf(no_rule, bad, class_index=c)
    with pytest.raises(ValueError, match="no rule for missing values"):
        tg.shapley(no_rule, bad[4], class_index=c)
    ro = X[:6].copy()
    ro.flags.writeable = False
    for variant in (
        X[:6].astype(np.float32),
        ro,
        np.asfortranarray(X[:6]),
        X[:6].tolist(),
        pd.DataFrame(X[:6]),
    ):
        np.testing.assert_allclose(tg.shapley(T, variant, class_index=c), ref, atol=1e-12)
    with pytest.raises(ValueError, match="class_index"):
        tg.shapley(T, X[0], class_index=True)


def test_numerics_jobs_include_shapiq():
    """The page's numerics jobs measure shapiq beside shap: on a grown-out tree its error
    against brute force is that of an exact method, and its runtime is recorded."""
    pytest.importorskip("shapiq")
    from engine.treegrad import explain as E

    df = list(E.error_vs_depth_steps(None, depths=(None,), n_rows=4000, n_samples=2))[-1]["rows"]
    err = df.set_index("method")["max_abs_error"]
    assert int(df.depth.max()) >= 25
    assert err["shapiq TreeExplainer"] <= 1e-10 and err["TreeGrad-Shap"] <= 1e-12
    rt = list(E.runtime_vs_leaves_steps(None, leaves=(50,), repeat=1))[-1]["rows"]
    assert "shapiq TreeExplainer (Shapley)" in set(rt.method)
    assert (rt.seconds > 0).all()
    # no peer (instead of an error) for a model shapiq does not read
    from sklearn.linear_model import LinearRegression

    assert E.shapiq_explainer(LinearRegression().fit(*_data("reg", 0))) is None


def test_the_opening_row_is_the_first_whose_paths_test_the_most_features():
    """teaching_row: a brute force over the candidate rows (distinct features on each row's
    decision paths); on iris's depth-6 tree the first test row (a setosa) uses one feature,
    the chosen row more."""
    from sklearn.tree import DecisionTreeClassifier

    from engine.data import load_bundled, make_dataset
    from engine.treegrad.service import as_treelab, teaching_row

    df, _, entry = load_bundled("iris")
    ds = make_dataset(df, entry["target"])
    rows = list(range(0, 150, 3))
    fitted = DecisionTreeClassifier(max_depth=6, random_state=0).fit(ds.X, ds.y)
    tree = as_treelab(fitted)
    node_features = fitted.tree_.feature
    counts = [
        len({int(node_features[n]) for n in fitted.decision_path(ds.X[[r]]).indices[:-1]})
        for r in rows
    ]
    expected = rows[int(np.argmax(counts))]  # argmax: the first of the largest
    assert teaching_row(tree, ds.X, rows) == expected
    assert counts[0] == 1 and max(counts) > 1
    with pytest.raises(ValueError, match="no rows"):
        teaching_row(tree, ds.X, [])
