"""Public TreeGrad API (docs/spec.md section 3; research/treegrad.md).

Every function takes

* ``model`` - :class:`engine.tree.TreeArrays`, :class:`engine.tree.TreeEnsemble` or a
  fitted scikit-learn ``DecisionTree*``/``ExtraTree*``, ``RandomForest*``/``ExtraTrees*``,
  ``GradientBoosting*`` (converted with :func:`engine.tree.from_sklearn`); anything else
  raises ``TypeError``;
* ``x`` - one sample (1-D, ``n_features``) or samples (2-D ``(m, n_features)``), cast to
  float64; a wrong number of features or inf raise ``ValueError``, and so does NaN unless
  every tree of the model routes missing values (``missing_go_to_left``: NaN then follows
  each split's side, as shap's TreeExplainer does);
* ``class_index`` - which output to explain: the class column of a classifier's leaf
  fractions (tree, forest), the class's raw score (boosting; binary class 0 is the negative
  of class 1's logit).  ``None``: 0 for regression, 1 for binary classification, required
  for multiclass.  Out of range raises ``ValueError``.

The game is TreeSHAP's path-dependent one (cover = ``weighted_n_node_samples``): f_x(S)
follows x at splits on features in S and averages both children by cover otherwise.
Results for a 1-D ``x`` drop the sample axis.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from scipy.special import betaln

from engine._numba import call_parallel
from engine.treegrad import _kernels as kernels
from engine.treegrad._model import Packed, as_treelab, n_outputs, pack

__all__ = [
    "Curves",
    "RankResult",
    "banzhaf",
    "best_curves",
    "beta_shapley",
    "game_value",
    "insertion_deletion",
    "multilinear",
    "random_insertion_deletion",
    "rank",
    "shapley",
    "treegrad",
    "treeprob",
    "quadrature",
]


def _nchunks() -> int:
    """Parallel chunks per batch call: a few per numba thread (int64)."""
    return 4 * int(numba.get_num_threads())


#: Below this many node visits a batch runs serially in the calling thread: a parallel
#: launch costs a thread wake-up and barrier (and the process-wide lock), which on a loaded
#: machine takes far longer than the work itself.
SERIAL_WORK = 200_000


def _run(name: str, m: int, *args, work: float = float("inf")) -> None:
    """Run batch kernel ``name`` over ``m`` samples: serially in this thread for one sample
    or little ``work`` (estimated node visits), else the ``parallel=True`` kernel (prange
    over samples) under the process-wide lock."""
    if m <= 1 or work < SERIAL_WORK:
        getattr(kernels, name + "_serial")(*args)
    else:
        call_parallel(getattr(kernels, name), *args, _nchunks())


def _grad_call(P: Packed, GL: np.ndarray, Z: np.ndarray, wq: np.ndarray):
    m = GL.shape[0]
    out = np.zeros((m, P.n_features), dtype=np.float64)
    fb = np.zeros((m, Z.shape[1]), dtype=np.float64)
    _run(
        "grad_batch",
        m,
        P.offs,
        P.left,
        P.right,
        P.feat,
        P.parent,
        P.ratio,
        P.lv,
        GL,
        np.ascontiguousarray(Z, dtype=np.float64),
        np.ascontiguousarray(wq, dtype=np.float64),
        int(P.max_depth),
        out,
        fb,
        work=m * Z.shape[1] * P.left.shape[0],
    )
    return out, fb


#: ``GL`` argument of the walk kernels for threshold-only models (never read).
_NO_GOLEFT = np.zeros((0, 0), dtype=np.uint8)

_POOL: tuple[int, int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def _pool(n_threads: int) -> ThreadPoolExecutor:
    """The process's worker threads for the walk kernels (created on first use, again after
    a fork or when more threads are asked for)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid() or _POOL[1] < n_threads:
            if _POOL is not None and _POOL[0] == os.getpid():
                _POOL[2].shutdown(wait=False)  # idle threads of the smaller pool end
            _POOL = (
                os.getpid(),
                n_threads,
                ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="treegrad"),
            )
        return _POOL[2]


def _walk_call(P: Packed, X: np.ndarray, t: np.ndarray, omt: np.ndarray, wq: np.ndarray):
    """``sum_q wq[q] grad fbar(t[q] 1)`` ``(m, n_features)`` and ``fbar(t[q] 1)`` without
    the offset ``(m, Q)`` by the pre-order walk kernel :func:`_kernels.shap_rows` (``t`` in
    (0, 1)).  ``X`` comes from ``P.check_X(x, finite=False)``: a non-finite value raises,
    but NaN in a tree that routes missing values (then the goleft table routes the rows).

    Below :data:`SERIAL_WORK` node visits the kernel runs in the calling thread; above, its
    blocks of samples are shared among ``numba.get_num_threads()`` worker threads (the
    kernel releases the GIL).  Threads rather than a ``parallel=True`` kernel: the one
    compiled function serves both cases, where a parallel twin would compile the whole
    traversal a second time (about 16 s more cold start); results are the same bit for bit.
    """
    W = P.walk()
    m = X.shape[0]
    plain = W.plain
    if kernels.count_nonfinite(X):
        P.check_X(X)  # raises with the usual message, unless the NaN are routed
        plain = False  # NaN rows follow missing_go_to_left: the goleft table routes them
    out = np.empty((m, P.n_features), dtype=np.float64)
    fb = np.empty((m, t.shape[0]), dtype=np.float64)
    GL = _NO_GOLEFT if plain else P.goleft(X)
    args = (P.offs, W.ints, W.floats, X, GL, plain, t, omt, wq, W.max_depth, out, fb)
    n_blocks = -(-m // kernels.BLOCK_ROWS)
    threads = min(n_blocks, int(numba.get_num_threads()))
    if threads <= 1 or m * t.shape[0] * W.ints.shape[0] < SERIAL_WORK:
        kernels.shap_rows(0, n_blocks, *args)
        return out, fb
    # a few chunks per thread, taken in turn: a thread slowed by other processes on a
    # shared machine does not hold the others up
    n_chunks = min(n_blocks, 4 * threads)
    bounds = [c * n_blocks // n_chunks for c in range(n_chunks + 1)]
    pool = _pool(threads)
    jobs = [
        pool.submit(kernels.shap_rows, bounds[c], bounds[c + 1], *args) for c in range(n_chunks)
    ]
    for job in jobs:
        job.result()
    return out, fb


def _constant_z(Z: np.ndarray) -> float | None:
    """The common value of a shared ``z`` with every entry equal and inside (0, 1) (where
    the walk kernels apply), else ``None``."""
    if Z.shape[0] != 1 or Z.shape[2] == 0:
        return None
    z0 = float(Z[0, 0, 0])
    if 0.0 < z0 < 1.0 and bool(np.all(Z == z0)):
        return z0
    return None


def _check_z(z: Any, n: int, m: int) -> np.ndarray:
    """z as ``(mz, 1, n)`` with ``mz`` in {1, m}; must be finite and inside [0, 1]."""
    arr = np.asarray(z, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != n or arr.shape[0] not in (1, m):
        raise ValueError(f"z must have shape ({n},) or ({m}, {n}), got {np.shape(z)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("z contains NaN or inf")
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError("z must lie in [0, 1] (the multilinear extension's domain)")
    return np.ascontiguousarray(arr[:, None, :])


def _out(a: np.ndarray, was_1d: bool):
    return a[0] if was_1d else a


def _masks(S: Any, n: int) -> tuple[np.ndarray, bool]:
    """Subsets as uint8 ``(K, n)`` and whether one subset was given.

    Accepts a bool mask ``(n,)``, bool or 0/1 masks ``(K, n)``, or a 1-D list of feature
    indices (one subset; ``[]`` is the empty set).
    """
    arr = np.asarray(S)
    if arr.ndim == 2:
        if arr.dtype != bool and not np.all((arr == 0) | (arr == 1)):
            raise ValueError("2-D subset masks must be bool or 0/1")
    elif arr.ndim <= 1 and arr.dtype != bool:
        idx = arr.astype(np.int64).ravel() if arr.size else np.zeros(0, np.int64)
        if np.any(idx < 0) or np.any(idx >= n) or np.any(arr.ravel() != idx):
            raise ValueError(f"feature indices must be integers in [0, {n}), got {arr.tolist()}")
        arr = np.zeros(n, dtype=bool)
        arr[idx] = True
    single = arr.ndim == 1
    arr = np.atleast_2d(arr)
    if arr.ndim != 2 or arr.shape[1] != n:
        raise ValueError(f"subset masks must have {n} columns, got shape {np.shape(S)}")
    return np.ascontiguousarray(arr != 0, dtype=np.uint8), single


def game_value(model: Any, x: Any, S: Any, class_index: int | None = None):
    """Path-dependent game value f_x(S) (TreeSHAP's EXPVALUE game, plus the output's constant).

    ``S``: a bool mask ``(n_features,)``, a 1-D list of feature indices (one subset), or
    bool/0-1 masks ``(K, n_features)``.  Returns float64: a float for one sample and one subset, ``(K,)``,
    ``(m,)`` or ``(m, K)`` otherwise.  f_x(all) is the prediction (tree/forest: class
    fraction or value; boosting: the raw score ``decision_function``), f_x(empty) the
    cover-weighted mean.
    """
    P = pack(model, class_index)
    X, was_1d = P.check_X(x)
    masks, single = _masks(S, P.n_features)
    out = _game(P, X, masks[None])
    if single:
        out = out[:, 0]
    return float(out[0]) if (was_1d and single) else _out(out, was_1d)


def _game(P: Packed, X: np.ndarray, masks: np.ndarray, GL: np.ndarray | None = None):
    GL = P.goleft(X) if GL is None else GL
    out = np.zeros((X.shape[0], masks.shape[1]), dtype=np.float64)
    _run(
        "game_batch",
        X.shape[0],
        P.offs,
        P.left,
        P.right,
        P.feat,
        P.cover,
        P.rv,
        GL,
        np.ascontiguousarray(masks, dtype=np.uint8),
        out,
        work=X.shape[0] * masks.shape[1] * P.left.shape[0],
    )
    return out + P.offset


def multilinear(model: Any, x: Any, z: Any, class_index: int | None = None):
    """Multilinear extension fbar_x(z) = E_{S ~ Bernoulli(z)} f_x(S)
    = sum_v rho_v (c_v / c_r) prod_{j in F_v} (1 - z_j + z_j gamma_{j,v}) (+ constant).

    ``z``: float64 ``(n_features,)`` shared or ``(m, n_features)`` per sample, in [0, 1].
    Returns a float (one sample) or ``(m,)``.  O(L) per sample.
    """
    P = pack(model, class_index)
    X, was_1d = P.check_X(x)
    Z = _check_z(z, P.n_features, X.shape[0])
    z0 = _constant_z(Z)
    if z0 is not None:
        _, fb = _walk_call(P, X, *_point(z0))
    else:
        _, fb = _grad_call(P, P.goleft(X), Z, np.ones(1))
    res = fb[:, 0] + P.offset
    return float(res[0]) if was_1d else res


def treegrad(
    model: Any, x: Any, z: Any, class_index: int | None = None, return_value: bool = False
):
    """TreeGrad: the gradient of fbar_x at ``z`` for all features in one O(L) pass (Lemma 1):
    d_i fbar(z) = sum_{v: i in F_v} (gamma_{i,v} - 1) H_v(z) / (1 - z_i + z_i gamma_{i,v}),
    repeated features merged into one factor; ``z_i = 1`` with ``gamma = 0`` handled exactly
    (no division by zero).

    ``z`` as in :func:`multilinear`.  Returns float64 ``(n_features,)`` or ``(m,
    n_features)``; with ``return_value`` also fbar (float or ``(m,)``).
    """
    P = pack(model, class_index)
    X, was_1d = P.check_X(x)
    Z = _check_z(z, P.n_features, X.shape[0])
    z0 = _constant_z(Z)
    if z0 is not None:  # z = z0 * 1 inside (0, 1): no zero factor, the walk kernels apply
        g, fb = _walk_call(P, X, *_point(z0))
    else:
        g, fb = _grad_call(P, P.goleft(X), Z, np.ones(1))
    g = _out(g, was_1d)
    if return_value:
        f = fb[:, 0] + P.offset
        return g, (float(f[0]) if was_1d else f)
    return g


def quadrature(alpha: int, beta: int, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes ``t`` on (0, 1) and weights ``w`` (including the Beta density
    t^(beta-1) (1-t)^(alpha-1) / B(alpha, beta)) exact for the integral of a polynomial of
    degree ``<= degree - 1`` times the density: ``ceil((degree + alpha + beta - 2) / 2)``
    nodes (at least 1)."""
    nq = max(1, math.ceil((degree + alpha + beta - 2) / 2))
    x, w = np.polynomial.legendre.leggauss(nq)
    t = (x + 1.0) / 2.0
    logw = (beta - 1) * np.log(t) + (alpha - 1) * np.log1p(-t) - betaln(alpha, beta)
    return t, w / 2.0 * np.exp(logw)


@functools.lru_cache(maxsize=128)
def _rule(alpha: int, beta: int, degree: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`quadrature` as ``(t, 1 - t, w)``, cached (the kernels only read them)."""
    t, w = quadrature(alpha, beta, degree)
    return np.ascontiguousarray(t), np.ascontiguousarray(1.0 - t), np.ascontiguousarray(w)


@functools.lru_cache(maxsize=128)
def _point(p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One evaluation point ``t = p`` with weight 1 (weighted Banzhaf / gradient at p 1)."""
    return np.array([p]), np.array([1.0 - p]), np.ones(1)


def _check_int_param(name: str, v: Any) -> int:
    if type(v) is int and v >= 1:
        return v
    if isinstance(v, bool) or not float(v).is_integer() or v < 1:
        raise ValueError(
            f"{name} must be an integer >= 1 for TreeGrad-Shap, got {v!r} "
            "(use treeprob for real parameters)"
        )
    return int(v)


def beta_shapley(model: Any, x: Any, alpha: int = 1, beta: int = 1, class_index: int | None = None):
    """TreeGrad-Shap: Beta(alpha, beta) semivalue (Shapley = (1, 1)) with integer parameters,
    phi_i = int_0^1 d_i fbar(t 1) t^(beta-1) (1-t)^(alpha-1) / B(alpha, beta) dt, by
    Gauss-Legendre with ceil((D + alpha + beta - 2) / 2) nodes, D = the largest number of
    distinct features on a root-to-leaf path (<= min(max depth, n_features); d_i fbar(t 1)
    restricted to a leaf is a polynomial of degree < D in t): exact up to rounding,
    O(L D).  (Kwon & Zou's convention: Beta(16, 1) stresses small coalitions.)  Subset-size
    weight B(s + beta, n - 1 - s + alpha) / B(alpha, beta).

    One forward pass over the pre-order node tables per sample (``_kernels.shap_rows``),
    batches in blocks of ``BLOCK_ROWS`` samples, shared among threads for large work.

    Returns float64 ``(n_features,)`` or ``(m, n_features)``.  Raises ``ValueError`` for
    non-integer or < 1 parameters and for rows that are not finite.
    """
    a = _check_int_param("alpha", alpha)
    b = _check_int_param("beta", beta)
    P = pack(model, class_index)
    X, was_1d = P.check_X(x, finite=False)
    g, _ = _walk_call(P, X, *_rule(a, b, P.walk().max_path_features))
    return _out(g, was_1d)


def shapley(model: Any, x: Any, class_index: int | None = None):
    """Shapley values of the path-dependent game (= :func:`beta_shapley` with (1, 1))."""
    return beta_shapley(model, x, 1, 1, class_index)


def banzhaf(model: Any, x: Any, p: float = 0.5, class_index: int | None = None):
    """Weighted Banzhaf(p) value = grad fbar(p 1) (Banzhaf: p = 0.5); subset weight
    p^s (1 - p)^(n - 1 - s).  Returns ``(n_features,)`` or ``(m, n_features)``."""
    p = float(p)
    if not 0.0 <= p <= 1.0 or math.isnan(p):
        raise ValueError(f"p must be in [0, 1], got {p}")
    if not 0.0 < p < 1.0:  # a factor 1 - p + p gamma can be zero: the exact TreeGrad pass
        return treegrad(model, x, p, class_index)
    P = pack(model, class_index)
    X, was_1d = P.check_X(x, finite=False)
    g, _ = _walk_call(P, X, *_point(p))
    return _out(g, was_1d)


def treeprob(
    model: Any,
    x: Any,
    alpha: float = 1.0,
    beta: float = 1.0,
    p: float | None = None,
    nodes: str = "roots_of_unity",
    degree: int | None = None,
    class_index: int | None = None,
):
    """TreeProb: a semivalue (Beta(alpha, beta), real parameters > 0, or weighted Banzhaf
    ``p`` when given) from each leaf's path polynomial prod_{j != i}(1 + gamma_j y) lifted to
    degree ``D - 1`` by (1 + y)^(D - d), evaluated at D nodes:

    * ``'roots_of_unity'`` - exp(2 pi i k / D); weights conj(V)^T w / D (V / sqrt(D) is
      unitary).  Default ``degree`` D = min(max depth, n_features).
    * ``'chebyshev'`` - Chebyshev points of the second kind with an explicit Vandermonde
      solve V^T a = w (the Linear TreeShap approach; its condition number grows exponentially,
      for the numerics demo only).  Default ``degree`` D = max depth, as Linear TreeShap.

    O(L D^2).  Returns ``(n_features,)`` or ``(m, n_features)``.  ``degree`` smaller than a
    path's number of distinct features raises ``ValueError``.
    """
    if nodes not in ("roots_of_unity", "chebyshev"):
        raise ValueError(f"nodes must be 'roots_of_unity' or 'chebyshev', got {nodes!r}")
    P = pack(model, class_index)
    X, was_1d = P.check_X(x)
    D = (
        degree
        if degree is not None
        else (min(P.max_depth, P.n_features) if nodes == "roots_of_unity" else P.max_depth)
    )
    D = int(max(D, 1))
    if D < min(P.max_depth, P.n_features):
        raise ValueError(
            f"degree {D} is below the paths' feature count {min(P.max_depth, P.n_features)}"
        )
    k = np.arange(D)
    if p is not None:
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p}")
        w = p**k * (1.0 - p) ** (D - 1 - k)
    else:
        if not (alpha > 0 and beta > 0):
            raise ValueError(f"alpha and beta must be > 0, got {alpha}, {beta}")
        w = np.exp(betaln(k + beta, D - 1 - k + alpha) - betaln(alpha, beta))
    if nodes == "roots_of_unity":
        y = np.exp(2j * np.pi * k / D)
        # coef_q = (1/D) sum_k w_k conj(y_q^k)
        coef = np.conj(np.vander(y, D, increasing=True)) @ w / D
    else:
        y = np.polynomial.chebyshev.chebpts2(D) if D > 1 else np.zeros(1)
        V = np.vander(y, D, increasing=True)
        coef = np.linalg.solve(V.T, w).astype(np.complex128)
        y = y.astype(np.complex128)
    GL = P.goleft(X)
    out = np.zeros((X.shape[0], P.n_features), dtype=np.float64)
    for r in range(X.shape[0]):
        kernels.treeprob_one(
            P.offs,
            P.left,
            P.right,
            P.feat,
            P.parent,
            P.ratio,
            P.lv,
            GL[r],
            np.ascontiguousarray(y),
            np.ascontiguousarray(coef),
            P.n_features,
            out[r],
        )
    return _out(out, was_1d)


@dataclass
class RankResult:
    """TreeGrad-Ranker output.

    * ``scores`` - float64 ``(n,)``/``(m, n)``: running mean of the symmetric gradient
      (rank features by descending score);
    * ``z_history`` - ``(steps + 1, n)``/``(m, steps + 1, n)``: z_0 = 0.5 .. z_T;
    * ``objective`` - ``(steps + 1,)``/``(m, steps + 1)``: J(z_t) = (fbar(z_t) - fbar(1 -
      z_t)) / 2.
    """

    scores: np.ndarray
    z_history: np.ndarray
    objective: np.ndarray


def rank(
    model: Any,
    x: Any,
    class_index: int | None = None,
    optimizer: str = "ga",
    lr: float = 5.0,
    steps: int = 100,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
) -> RankResult:
    """TreeGrad-Ranker: maximise J(z) = (fbar(z) - fbar(1 - z)) / 2 over [0, 1]^n from
    z = 0.5 by projected gradient ascent (``'ga'``) or Adam (``'adam'``, bias-corrected);
    g = (grad(z) + grad(1 - z)) / 2; scores = running mean of g over the ``steps`` steps
    (``steps = 1`` gives the Banzhaf value).  Paper setting: ``lr = 5, steps = 100``.

    Raises ``ValueError`` for an unknown optimizer, ``steps < 1`` or ``lr`` not finite > 0.
    """
    opt = str(optimizer).lower()
    if opt not in ("ga", "adam"):
        raise ValueError(f"optimizer must be 'ga' or 'adam', got {optimizer!r}")
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    steps = int(steps)
    P = pack(model, class_index)
    X, was_1d = P.check_X(x)
    m, n = X.shape[0], P.n_features
    scores = np.zeros((m, n))
    zh = np.zeros((m, steps + 1, n))
    jh = np.zeros((m, steps + 1))
    _run(
        "rank_batch",
        m,
        P.offs,
        P.left,
        P.right,
        P.feat,
        P.parent,
        P.ratio,
        P.lv,
        P.goleft(X),
        steps,
        float(lr),
        opt == "adam",
        float(beta1),
        float(beta2),
        float(eps),
        int(P.max_depth),
        scores,
        zh,
        jh,
        work=2 * m * steps * P.left.shape[0],
    )
    return RankResult(_out(scores, was_1d), _out(zh, was_1d), _out(jh, was_1d))


# ---------------------------------------------------------------------------------------
# insertion / deletion
# ---------------------------------------------------------------------------------------


@dataclass
class Curves:
    """Insertion and deletion curves, float64 ``(m, n + 1)`` (or ``(n + 1,)``).

    ``insertion[k] = f(top-k features)``, ``deletion[k] = f(all minus top-k)``; AUC = mean of
    the n + 1 points (higher insertion, lower deletion is better); ``joint`` = ins - del.
    """

    insertion: np.ndarray
    deletion: np.ndarray

    @property
    def auc_insertion(self):
        return self.insertion.mean(axis=-1)

    @property
    def auc_deletion(self):
        return self.deletion.mean(axis=-1)

    @property
    def joint(self):
        return self.auc_insertion - self.auc_deletion


_OUTPUTS = ("game", "probability")


def _curve_game(
    model: Any, X: np.ndarray, masks: np.ndarray, class_index: int | None, output: str
) -> np.ndarray:
    """f(S) for per-sample masks ``(m, K, n)`` on the chosen output scale."""
    if output not in _OUTPUTS:
        raise ValueError(f"output must be one of {_OUTPUTS}, got {output!r}")
    P = pack(model, class_index)
    mdl = P.model
    boosting_clf = getattr(mdl, "kind", None) == "boosting" and mdl.task == "classification"
    if output == "game" or not boosting_clf:
        return _game(P, X, masks)
    from scipy.special import expit

    if mdl.base.shape[0] == 1:
        raw = _game(pack(mdl, 1), X, masks)
        p1 = expit(2.0 * raw if mdl.link == "half_logit" else raw)
        return p1 if P.class_index == 1 else 1.0 - p1
    raws = np.stack([_game(pack(mdl, c), X, masks) for c in range(n_outputs(mdl))])
    raws -= raws.max(axis=0, keepdims=True)
    e = np.exp(raws)
    return e[P.class_index] / e.sum(axis=0)


def _order_masks(order: np.ndarray, n: int) -> np.ndarray:
    """``(m, n)`` rankings -> insertion masks ``(m, n + 1, n)`` (top-k for k = 0..n)."""
    m = order.shape[0]
    masks = np.zeros((m, n + 1, n), dtype=np.uint8)
    for k in range(1, n + 1):
        masks[:, k] = masks[:, k - 1]
        masks[np.arange(m), k, order[:, k - 1]] = 1
    return masks


def insertion_deletion(
    model: Any, X: Any, scores: Any, class_index: int | None = None, output: str = "game"
) -> Curves:
    """Insertion / deletion curves of the rankings by descending ``scores`` (ties: lower
    feature index first) in the same path-dependent game (``output='game'``), or, for
    boosting classifiers, on the probability scale (``'probability'``: sigmoid/softmax of
    every class's raw score on the same subset, as the paper's experiments).

    ``scores``: ``(n,)`` shared or ``(m, n)`` per sample.  Returns :class:`Curves`.
    """
    model = as_treelab(model)
    P = pack(model, class_index)
    Xc, was_1d = P.check_X(X)
    n, m = P.n_features, Xc.shape[0]
    sc = np.asarray(scores, dtype=np.float64)
    if sc.ndim == 1:
        sc = np.broadcast_to(sc, (m, sc.shape[0]))
    if sc.shape != (m, n):
        raise ValueError(f"scores must have shape ({n},) or ({m}, {n}), got {np.shape(scores)}")
    if not np.all(np.isfinite(sc)):
        raise ValueError("scores contain NaN or inf")
    order = np.argsort(-sc, axis=1, kind="stable")
    return _curves_for_orders(model, Xc, order, class_index, output, was_1d)


def _curves_for_orders(model, Xc, order, class_index, output, was_1d) -> Curves:
    n = order.shape[1]
    ins_masks = _order_masks(order, n)
    vals_ins = _curve_game(model, Xc, ins_masks, class_index, output)
    del_masks = np.ascontiguousarray(1 - ins_masks)
    vals_del = _curve_game(model, Xc, del_masks, class_index, output)
    return Curves(_out(vals_ins, was_1d), _out(vals_del, was_1d))


def random_insertion_deletion(
    model: Any,
    X: Any,
    n_rankings: int = 32,
    seed: int = 0,
    class_index: int | None = None,
    output: str = "game",
) -> Curves:
    """Random-ranking baseline: curves averaged over ``n_rankings`` uniformly random
    permutations per sample (seeded).  Returns :class:`Curves` like
    :func:`insertion_deletion`."""
    if isinstance(n_rankings, bool) or int(n_rankings) != n_rankings or n_rankings < 1:
        raise ValueError(f"n_rankings must be an integer >= 1, got {n_rankings!r}")
    n_rankings = int(n_rankings)
    model = as_treelab(model)
    P = pack(model, class_index)
    Xc, was_1d = P.check_X(X)
    rng = np.random.default_rng(seed)
    n, m = P.n_features, Xc.shape[0]
    ins = np.zeros((m, n + 1))
    dele = np.zeros((m, n + 1))
    for _ in range(int(n_rankings)):
        order = np.argsort(rng.random((m, n)), axis=1)
        c = _curves_for_orders(model, Xc, order, class_index, output, False)
        ins += c.insertion
        dele += c.deletion
    return Curves(_out(ins / n_rankings, was_1d), _out(dele / n_rankings, was_1d))


def best_curves(model: Any, X: Any, class_index: int | None = None, output: str = "game") -> Curves:
    """Brute-force best achievable envelopes (n_features <= 12): ``insertion[k] = max_{|S| =
    k} f(S)`` and ``deletion[k] = min_{|S| = n - k} f(S)``; bounds for any ranking's curves.
    Raises ``ValueError`` for more than 12 features."""
    model = as_treelab(model)
    P = pack(model, class_index)
    Xc, was_1d = P.check_X(X)
    n = P.n_features
    if n > 12:
        raise ValueError(f"best_curves enumerates 2^n subsets; n_features = {n} > 12")
    idx = np.arange(2**n)
    masks = ((idx[:, None] >> np.arange(n)) & 1).astype(np.uint8)
    vals = _curve_game(model, Xc, masks[None], class_index, output)
    size = masks.sum(axis=1)
    ins = np.stack([vals[:, size == k].max(axis=1) for k in range(n + 1)], axis=1)
    dele = np.stack([vals[:, size == n - k].min(axis=1) for k in range(n + 1)], axis=1)
    return Curves(_out(ins, was_1d), _out(dele, was_1d))
