"""What the Feature ranking page (and a notebook) needs on top of the TreeGrad API: every
method's attributions for one sample or a batch, rank agreement, per-edge gamma of a sample,
the paper's per-sample best-Beta baseline, batch insertion/deletion curves as a resumable
job, and the numerics demos (error vs depth, runtime vs leaves) as resumable jobs.

No Streamlit here; the step generators follow :class:`engine.jobs.Job` (``fn(ctx, ...)``
yields progress dicts and returns the result).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import betaln

from engine.job_context import run_to_end
from engine.tree import TREE_LEAF, TreeArrays, TreeEnsemble
from engine.treegrad import api
from engine.treegrad._model import as_treelab, n_outputs, pack

#: The ten Beta(alpha, beta) settings the paper's per-sample "best Beta" baselines pick from.
PAPER_BETAS = ((16, 1), (8, 1), (4, 1), (2, 1), (1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (1, 32))


@dataclass(frozen=True)
class MethodParams:
    """Parameters of the compared attributions.

    ``alpha``, ``beta``: integers >= 1 (Beta semivalue); ``p`` in [0, 1] (weighted
    Banzhaf); ``lr`` > 0 and ``steps`` >= 1 (TreeGrad-Ranker, both optimizers).
    """

    alpha: int = 4
    beta: int = 1
    p: float = 0.3
    lr: float = 5.0
    steps: int = 100

    def labels(self) -> list[str]:
        """Method labels in display order."""
        return [
            "Shapley",
            "Banzhaf",
            f"Beta({self.alpha},{self.beta})",
            f"Weighted Banzhaf({self.p:g})",
            "Ranker GA",
            "Ranker Adam",
        ]

    def check(self) -> None:
        """Raise ``ValueError`` with a user-facing message for a bad parameter."""
        for name, v in (("alpha", self.alpha), ("beta", self.beta)):
            if isinstance(v, bool) or not float(v).is_integer() or v < 1:
                raise ValueError(f"Beta {name} must be an integer >= 1, got {v!r}")
        if not 0.0 <= float(self.p) <= 1.0:
            raise ValueError(f"weighted Banzhaf p must be in [0, 1], got {self.p!r}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"Ranker learning rate must be a finite number > 0, got {self.lr!r}")
        if isinstance(self.steps, bool) or int(self.steps) != self.steps or self.steps < 1:
            raise ValueError(f"Ranker steps must be an integer >= 1, got {self.steps!r}")


@dataclass
class Explanation:
    """Every method's scores for one sample (``(n,)``) or a batch (``(m, n)``).

    ``scores``: label -> float64 scores in :meth:`MethodParams.labels` order; ``ga``,
    ``adam``: the Ranker runs (z history, J(z_t)); ``f_empty``, ``f_full``: f_x(empty) and
    f_x(all) of the explained output (game scale).
    """

    scores: dict[str, np.ndarray]
    ga: api.RankResult
    adam: api.RankResult
    f_empty: Any
    f_full: Any
    params: MethodParams = field(default_factory=MethodParams)


def explain(
    model: Any, x: Any, class_index: int | None = None, params: MethodParams | None = None
) -> Explanation:
    """Shapley, Banzhaf, Beta(alpha, beta), weighted Banzhaf(p), Ranker GA and Adam for
    ``x`` (one sample ``(n,)`` or ``(m, n)``), on the game scale of output ``class_index``
    (class fraction for trees/forests, raw score for boosting).  Raises ``ValueError``
    (bad parameters, wrong ``x``) and ``TypeError`` (unsupported model)."""
    params = params or MethodParams()
    params.check()
    model = as_treelab(model)
    labels = params.labels()
    ga = api.rank(model, x, class_index, optimizer="ga", lr=params.lr, steps=int(params.steps))
    adam = api.rank(model, x, class_index, optimizer="adam", lr=params.lr, steps=int(params.steps))
    scores = {
        labels[0]: api.shapley(model, x, class_index),
        labels[1]: api.banzhaf(model, x, 0.5, class_index),
        labels[2]: api.beta_shapley(model, x, int(params.alpha), int(params.beta), class_index),
        labels[3]: api.banzhaf(model, x, float(params.p), class_index),
        labels[4]: ga.scores,
        labels[5]: adam.scores,
    }
    n = pack(model, class_index).n_features
    f = api.game_value(model, x, np.array([np.zeros(n, bool), np.ones(n, bool)]), class_index)
    return Explanation(
        scores,
        ga,
        adam,
        f[..., 0] if np.ndim(f) > 1 else f[0],
        f[..., 1] if np.ndim(f) > 1 else f[1],
        params,
    )


def kendall_matrix(scores: dict[str, np.ndarray]) -> pd.DataFrame:
    """Kendall tau-b between the rankings of every pair of methods (one sample's ``(n,)``
    scores each); 1 on the diagonal, NaN when a method's scores are all equal."""
    from scipy.stats import kendalltau

    names = list(scores)
    k = len(names)
    out = np.eye(k)
    for i in range(k):
        for j in range(i + 1, k):
            a, b = np.asarray(scores[names[i]]), np.asarray(scores[names[j]])
            if np.ptp(a) == 0 or np.ptp(b) == 0:
                tau = np.nan
            else:
                tau = float(kendalltau(a, b).statistic)
            out[i, j] = out[j, i] = tau
    return pd.DataFrame(out, index=names, columns=names)


def edge_gammas(tree: TreeArrays, x: Any) -> np.ndarray:
    """Per-edge gamma of sample ``x``: for every non-root node u with parent p,
    ``cover(p) / cover(u)`` if x takes the edge p -> u, else 0 (NaN at the root).

    float64 ``(node_count,)``.  A leaf's gamma_{j,v} is the product of these over the path
    edges splitting on j; the multilinear extension's factor is (1 - z_j + z_j gamma_{j,v}).
    """
    if not isinstance(tree, TreeArrays):
        raise TypeError(f"edge_gammas takes a TreeArrays, got {type(tree).__name__}")
    xr = tree.check_X(np.asarray(x, dtype=np.float64).reshape(1, -1))[0]
    cl, cr = tree.children_left, tree.children_right
    cov = tree.weighted_n_node_samples
    g = np.full(tree.node_count, np.nan)
    for node in np.flatnonzero(cl != TREE_LEAF):
        left = tree._goes_left(int(node), xr[tree.feature[node]])
        for child, taken in ((cl[node], left), (cr[node], not left)):
            ratio = cov[node] / cov[child] if cov[child] > 0 else 0.0
            g[child] = ratio if taken else 0.0
    return g


def leaf_gammas(tree: TreeArrays, x: Any) -> dict[int, dict[int, float]]:
    """For each leaf v: {feature j: gamma_{j,v}} (product of the per-edge gammas over the
    path edges splitting on j, repeated features merged)."""
    g = edge_gammas(tree, x)
    cl, cr = tree.children_left, tree.children_right
    out: dict[int, dict[int, float]] = {}
    stack: list[tuple[int, dict[int, float]]] = [(0, {})]
    while stack:
        node, acc = stack.pop()
        if cl[node] == TREE_LEAF:
            out[node] = acc
            continue
        j = int(tree.feature[node])
        for child in (cl[node], cr[node]):
            nxt = dict(acc)
            nxt[j] = nxt.get(j, 1.0) * g[child]
            stack.append((int(child), nxt))
    return out


def semivalue_weights(
    n: int, alpha: float | None = None, beta: float | None = None, p: float | None = None
) -> np.ndarray:
    """Subset-size weights ``(n,)`` of a semivalue: Beta(alpha, beta)
    B(s + beta, n - 1 - s + alpha) / B(alpha, beta) (Shapley = (1, 1)) or weighted Banzhaf
    p^s (1 - p)^(n - 1 - s)."""
    s = np.arange(n)
    if p is not None:
        return p**s * (1.0 - p) ** (n - 1 - s)
    return np.exp(betaln(s + beta, n - 1 - s + alpha) - betaln(alpha, beta))


def brute_force_semivalue(
    model: Any,
    x: Any,
    alpha: float = 1.0,
    beta: float = 1.0,
    p: float | None = None,
    class_index: int | None = None,
) -> np.ndarray:
    """Exact reference by enumerating all 2^n subsets (n <= 12) of the path-dependent game
    (:func:`engine.treegrad.game_value`): phi_i = sum_{S not containing i} w(|S|)
    (f(S + i) - f(S)).  One sample ``(n,)``.  Raises ``ValueError`` for n > 12."""
    P = pack(model, class_index)
    n = P.n_features
    if n > 12:
        raise ValueError(f"brute force enumerates 2^n subsets; n_features = {n} > 12")
    idx = np.arange(2**n)
    masks = ((idx[:, None] >> np.arange(n)) & 1).astype(bool)
    f = np.asarray(api.game_value(model, np.asarray(x, dtype=np.float64), masks, class_index))
    size = masks.sum(axis=1)
    w = semivalue_weights(n, alpha, beta, p)
    phi = np.zeros(n)
    for i in range(n):
        without = ~masks[:, i]
        s = idx[without]
        phi[i] = np.sum(w[size[without]] * (f[s | (1 << i)] - f[s]))
    return phi


# ---------------------------------------------------------------------------------------
# insertion / deletion for a batch
# ---------------------------------------------------------------------------------------


def best_beta_curves(
    model: Any,
    X: np.ndarray,
    class_index: int | None = None,
    output: str = "game",
    criterion: str = "joint",
    betas=PAPER_BETAS,
) -> tuple[api.Curves, np.ndarray]:
    """The paper's per-sample oracle baseline: for each row, the Beta(alpha, beta) among
    ``betas`` whose ranking has the best insertion AUC (``criterion='insertion'``), the
    lowest deletion AUC (``'deletion'``) or the best ins - del (``'joint'``).

    ``X`` 2-D ``(m, n)``.  Returns (curves of the chosen rankings ``(m, n + 1)``, index of
    the chosen setting per row ``(m,)``)."""
    if criterion not in ("insertion", "deletion", "joint"):
        raise ValueError(f"criterion must be insertion, deletion or joint, got {criterion!r}")
    all_c = [
        api.insertion_deletion(
            model, X, api.beta_shapley(model, X, a, b, class_index), class_index, output
        )
        for a, b in betas
    ]
    ins = np.stack([c.insertion for c in all_c])  # (B, m, n + 1)
    dele = np.stack([c.deletion for c in all_c])
    key = {
        "insertion": ins.mean(-1),
        "deletion": -dele.mean(-1),
        "joint": ins.mean(-1) - dele.mean(-1),
    }[criterion]
    pick = np.argmax(key, axis=0)  # (m,)
    rows = np.arange(X.shape[0])
    return api.Curves(ins[pick, rows], dele[pick, rows]), pick


@dataclass
class CurveSet:
    """Insertion/deletion curves of several rankings on the same rows.

    ``curves``: label -> :class:`~engine.treegrad.Curves` with ``(n + 1,)`` arrays (mean
    over ``n_rows``); ``per_row_auc``: DataFrame (row, method, ins, del, joint)."""

    curves: dict[str, api.Curves]
    n_rows: int
    per_row_auc: pd.DataFrame

    def auc_table(self) -> pd.DataFrame:
        """Method, insertion AUC, deletion AUC and ins - del of the mean curves."""
        return pd.DataFrame(
            [
                (k, float(c.auc_insertion), float(c.auc_deletion), float(c.joint))
                for k, c in self.curves.items()
            ],
            columns=["method", "insertion_auc", "deletion_auc", "ins_minus_del"],
        )

    def to_frame(self) -> pd.DataFrame:
        """Long table: method, k (features inserted/deleted), insertion, deletion."""
        parts = [
            pd.DataFrame(
                {
                    "method": k,
                    "k": np.arange(c.insertion.shape[-1]),
                    "insertion": c.insertion,
                    "deletion": c.deletion,
                }
            )
            for k, c in self.curves.items()
        ]
        return pd.concat(parts, ignore_index=True)


RANDOM = "Random ranking"
BEST = "Best achievable (brute force)"
BEST_BETA = "Best Beta per sample (ins - del)"


def _chunk_curves(
    model, X, ci, params: MethodParams, output, n_random, seed, with_best, with_best_beta
):
    """Per-row curves of every ranking for rows ``X`` explained at class ``ci``."""
    ex = explain(model, X, ci, params)
    out = {k: api.insertion_deletion(model, X, s, ci, output) for k, s in ex.scores.items()}
    if with_best_beta:
        out[BEST_BETA] = best_beta_curves(model, X, ci, output)[0]
    if n_random > 0:
        out[RANDOM] = api.random_insertion_deletion(model, X, n_random, seed, ci, output)
    if with_best:
        out[BEST] = api.best_curves(model, X, ci, output)
    return out


def curves_steps(
    ctx,
    model: Any,
    X: np.ndarray,
    class_index: Any = None,
    params: MethodParams | None = None,
    output: str = "game",
    n_random: int = 8,
    seed: int = 0,
    with_best: bool | None = None,
    with_best_beta: bool = True,
    chunk: int = 8,
    step_seconds: float = 0.1,
):
    """Job step generator: mean insertion/deletion curves over the rows of ``X`` (2-D).

    ``class_index``: one int/None for all rows, or an int array ``(m,)`` (e.g. each row's
    predicted class).  Each step handles a chunk of rows (``chunk`` at first, doubled while a
    step takes less than ``step_seconds``: the kernels batch over rows, so fewer, larger steps
    cost less Python overhead) and yields ``{"done", "total", "result": CurveSet of the rows
    so far}``; returns the final :class:`CurveSet`.  ``with_best`` defaults to
    ``n_features <= 12``.
    """
    params = params or MethodParams()
    params.check()
    model = as_treelab(model)
    X = np.ascontiguousarray(np.atleast_2d(np.asarray(X, dtype=np.float64)))
    m = X.shape[0]
    if m == 0:
        raise ValueError("no rows to evaluate")
    cls = np.asarray(
        [class_index] * m if class_index is None or np.ndim(class_index) == 0 else class_index,
        dtype=object,
    )
    if cls.shape != (m,):
        raise ValueError(f"class_index must be one value or {m} values, got {cls.shape}")
    n = pack(model, None if cls[0] is None else int(cls[0])).n_features
    if with_best is None:
        with_best = n <= 12
    sums: dict[str, list[np.ndarray]] = {}
    rows: list[pd.DataFrame] = []
    start, size = 0, max(1, int(chunk))
    result = None
    while start < m:
        t0 = time.perf_counter()
        idx = np.arange(start, min(m, start + size))
        for c in pd.unique(cls[idx]):
            sel = idx[cls[idx] == c]
            ci = None if c is None else int(c)
            cur = _chunk_curves(
                model, X[sel], ci, params, output, n_random, seed + start, with_best, with_best_beta
            )
            for k, cv in cur.items():
                acc = sums.setdefault(k, [np.zeros(n + 1), np.zeros(n + 1)])
                acc[0] += cv.insertion.sum(axis=0)
                acc[1] += cv.deletion.sum(axis=0)
                rows.append(
                    pd.DataFrame(
                        {
                            "row": sel,
                            "method": k,
                            "class_index": ci,
                            "insertion_auc": cv.auc_insertion,
                            "deletion_auc": cv.auc_deletion,
                            "ins_minus_del": cv.joint,
                        }
                    )
                )
        done = int(idx[-1]) + 1
        rows = [pd.concat(rows, ignore_index=True)]
        result = CurveSet(
            {k: api.Curves(a / done, d / done) for k, (a, d) in sums.items()}, done, rows[0]
        )
        yield {"done": done, "total": m, "result": result}
        start = done
        if time.perf_counter() - t0 < step_seconds:
            size = min(2 * size, 256)
    return result


def batch_curves(model: Any, X: np.ndarray, class_index: Any = None, **kw) -> CurveSet:
    """:func:`curves_steps` run to the end in this thread (for notebooks and the bench)."""
    return run_to_end(curves_steps(None, model, X, class_index, **kw))


# ---------------------------------------------------------------------------------------
# numerics demos
# ---------------------------------------------------------------------------------------


def _deep_data(n_rows: int, seed: int):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_rows, n_features=10, n_informative=6, flip_y=0.3, random_state=seed
    )
    return X.astype(np.float32).astype(np.float64), y


def shapiq_explainer(model: Any, class_index: int | None = None):
    """shapiq's path-dependent Shapley explainer of a scikit-learn model
    (``TreeExplainer(model, index='SV', max_order=1, min_order=1)``; QuadratureTreeSHAP
    from shapiq 1.8, TreeSHAP-IQ before), or ``None`` when shapiq is not installed or does
    not support the model (e.g. scikit-learn gradient boosting)."""
    try:
        import shapiq
    except ImportError:  # pragma: no cover - shapiq is in requirements
        return None
    try:
        return shapiq.TreeExplainer(
            model, index="SV", max_order=1, min_order=1, class_index=class_index
        )
    except (TypeError, ValueError, NotImplementedError):
        return None


def shapiq_values(explainer: Any, x: np.ndarray) -> np.ndarray:
    """First-order values of one sample from a shapiq explainer, float64 ``(n_features,)``."""
    iv = explainer.explain(np.asarray(x, dtype=np.float64))
    return np.array([iv[(i,)] for i in range(x.shape[0])], dtype=np.float64)


def error_vs_depth_steps(
    ctx, depths=(5, 10, 20, 30, 45, None), n_rows: int = 40000, n_samples: int = 3, seed: int = 0
):
    """Job step generator for the instability demo (research/treegrad.md section 10D):
    decision trees of each max depth (``None`` = grown out, depth ~60) on
    ``make_classification(n_rows, 10 features, flip_y=0.3)``; for ``n_samples`` rows, the
    max abs error of the class-1 Shapley values against brute force over 2^10 subsets, for
    TreeGrad-Shap, TreeProb with roots of unity, TreeProb with Chebyshev nodes (Linear
    TreeShap's Vandermonde solve), shap's TreeExplainer (path-dependent) and shapiq's
    (:func:`shapiq_explainer`) when installed.

    One step per depth; yields ``{"done", "total", "rows": DataFrame so far}``; returns the
    DataFrame (depth, max_depth_param, leaves, method, max_abs_error)."""
    from sklearn.tree import DecisionTreeClassifier

    try:
        import shap
    except ImportError:  # pragma: no cover - shap is in requirements
        shap = None
    X, y = _deep_data(n_rows, seed)
    rng = np.random.default_rng(seed)
    rows_idx = rng.choice(X.shape[0], n_samples, replace=False)
    records: list[dict] = []
    depths = list(depths)
    for k, d in enumerate(depths):
        m = DecisionTreeClassifier(max_depth=d, random_state=seed).fit(X, y)
        errs: dict[str, float] = {}
        explainer = (
            shap.TreeExplainer(m, feature_perturbation="tree_path_dependent")
            if shap is not None
            else None
        )
        peer = shapiq_explainer(m, class_index=1)
        for r in rows_idx:
            x = X[r]
            ref = brute_force_semivalue(m, x, 1, 1, class_index=1)
            got = {
                "TreeGrad-Shap": api.shapley(m, x, class_index=1),
                "TreeProb (roots of unity)": api.treeprob(m, x, class_index=1),
                "Chebyshev nodes (Linear TreeShap)": api.treeprob(
                    m, x, nodes="chebyshev", class_index=1
                ),
            }
            if explainer is not None:
                sv = np.asarray(explainer.shap_values(x[None]))
                got["shap TreeExplainer"] = sv[0, :, 1] if sv.ndim == 3 else sv[0]
            if peer is not None:
                got["shapiq TreeExplainer"] = shapiq_values(peer, x)
            for name, v in got.items():
                e = float(np.max(np.abs(v - ref)))
                errs[name] = max(errs.get(name, 0.0), e if np.isfinite(e) else np.inf)
        for name, e in errs.items():
            records.append(
                {
                    "depth": int(m.get_depth()),
                    "max_depth_param": "none" if d is None else str(int(d)),
                    "leaves": int(m.get_n_leaves()),
                    "method": name,
                    "max_abs_error": e,
                }
            )
        yield {"done": k + 1, "total": len(depths), "rows": pd.DataFrame(records)}
    return pd.DataFrame(records)


def _best_time(fn, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def runtime_vs_leaves_steps(
    ctx, leaves=(100, 1000, 10000), n_features: int = 20, repeat: int = 5, seed: int = 0
):
    """Job step generator: one sample's gradient (all features, one O(L) TreeGrad pass),
    its Shapley values by TreeGrad-Shap and by shap's and shapiq's TreeExplainer
    (path-dependent; shapiq when installed), on
    regression trees with ``max_leaf_nodes`` = each entry of ``leaves`` (fitted on
    ``make_regression`` with 4 rows per leaf).  Best of ``repeat`` timings, seconds.

    One step per size; yields ``{"done", "total", "rows"}``; returns the DataFrame
    (leaves, depth, method, seconds)."""
    from sklearn.datasets import make_regression
    from sklearn.tree import DecisionTreeRegressor

    try:
        import shap
    except ImportError:  # pragma: no cover
        shap = None
    records: list[dict] = []
    leaves = list(leaves)
    for k, L in enumerate(leaves):
        X, y = make_regression(max(4 * int(L), 200), n_features, noise=10.0, random_state=seed)
        m = DecisionTreeRegressor(max_leaf_nodes=int(L), random_state=seed).fit(X, y)
        t = as_treelab(m)
        x = X[0]
        z = np.full(n_features, 0.5)
        api.treegrad(t, x, z)  # pack once (cached on our tree)
        times = {
            "TreeGrad gradient (all features)": _best_time(
                lambda t=t, x=x, z=z: api.treegrad(t, x, z), repeat
            ),
            "TreeGrad-Shap (Shapley)": _best_time(lambda t=t, x=x: api.shapley(t, x), repeat),
        }
        if shap is not None:
            ex = shap.TreeExplainer(m, feature_perturbation="tree_path_dependent")
            times["shap TreeExplainer (Shapley)"] = _best_time(
                lambda ex=ex, x=x: ex.shap_values(x[None]), repeat
            )
        peer = shapiq_explainer(m)
        if peer is not None:
            peer.explain(x)  # shapiq builds its per-model structures on the first call
            times["shapiq TreeExplainer (Shapley)"] = _best_time(
                lambda p=peer, x=x: p.explain(x), repeat
            )
        for name, s in times.items():
            records.append(
                {
                    "leaves": int(m.get_n_leaves()),
                    "depth": int(m.get_depth()),
                    "method": name,
                    "seconds": s,
                }
            )
        yield {"done": k + 1, "total": len(leaves), "rows": pd.DataFrame(records)}
    return pd.DataFrame(records)


def model_summary(model: Any) -> dict:
    """Trees, leaves, max depth, features and outputs of a supported model."""
    t = as_treelab(model)
    trees = t.trees if isinstance(t, TreeEnsemble) else [t]
    return {
        "trees": len(trees),
        "leaves": int(sum(tr.n_leaves for tr in trees)),
        "max_depth": int(max(tr.max_depth for tr in trees)),
        "n_features": int(t.n_features),
        "outputs": n_outputs(t),
    }
