"""Benchmark: TreeGrad against shap's and shapiq's TreeExplainer, and the rankings'
insertion/deletion AUCs.

Run ``python bench/bench_treegrad.py`` from the repository root (``--quick`` for a short run:
trees of 1k and 10k leaves, 50 test rows; ``--parts speed,numerics`` for a subset;
``--rounds N``).  shapiq >= 1.8 (QuadratureTreeSHAP; needs Python >= 3.12) is the peer the
tables are meant for; with an older shapiq (TreeSHAP-IQ in numpy) it is only measured on
trees of at most 2,000 leaves and 20 batch rows.

1. Speed.  Models: scikit-learn regression trees with ``max_leaf_nodes`` = 1k, 10k, 100k
   (``make_regression``, 20 features, 4 rows per leaf, seed 0) and the grown-out depth-62
   classifier of the numerics table (class 1).  One sample: the gradient of the
   multilinear extension at z = 0.5 (all features, one TreeGrad pass), the Shapley values
   by TreeGrad-Shap, by ``shap.TreeExplainer(model,
   feature_perturbation='tree_path_dependent').shap_values`` and by
   ``shapiq.TreeExplainer(model, index='SV', max_order=1, min_order=1).explain``; the four
   are timed in interleaved rounds (rotating order; each timing repeats the call for about
   2 ms), best of ``3 * rounds`` rounds (``rounds // 3`` at 100k leaves), with the thread's
   CPU time (``time.thread_time``: the machine is shared, and a wall-clock window is often
   cut by other processes; all four calls are single-threaded) and, in one column, the
   wall clock.  The spread of the per-round shap / TreeGrad-Shap ratio shows the noise.
   Setup: our packing and walk tables, shap's explainer, shapiq's explainer and its first
   call.  Batch: Shapley values of 1,000 rows (100 at 100k leaves), samples/s (wall clock,
   best of 3 interleaved rounds, one at 100k): ours on all numba threads and on one, shap,
   shapiq's ``explain_X`` serially and with ``n_jobs`` = the thread count.  Exactness: max
   |difference| over the batch rows between ours and each peer, and of all three against
   the brute force over all 2^n subsets (f_x(S) by its definition; one row with 20
   features, three rows with 10; not at 100k leaves).
2. Rankings: insertion AUC, deletion AUC and ins - del (AUC = mean of the n + 1 curve points,
   the paper's convention) of TreeGrad-Ranker GA and Adam (T = 100, lr = 5), Shapley,
   Banzhaf and the per-sample best Beta among the paper's 10 settings (chosen by insertion,
   by deletion or by ins - del: three oracle baselines), averaged over up to 200 test rows
   (80/20 split, seed 2025) of breast_cancer, digits, wine and diabetes, for a decision tree
   (max_depth 12) and gradient boosting (5 trees of depth 6, as the paper's
   ``n_estimators=5``).  Classifiers explain each row's predicted class; boosting
   classifiers are attributed on the raw score and scored on the probability, as the paper.
3. Numerics: max |Shapley error| against brute force over 2^10 subsets (3 rows) of
   TreeGrad-Shap, TreeProb (roots of unity), the Chebyshev-node Vandermonde method (Linear
   TreeShap's), shap and shapiq, on decision trees of growing depth fitted on
   ``make_classification(40000, 10 features, 6 informative, flip_y=0.3)`` (the page's
   Numerics tab; research/treegrad.md section 10D).

Prints markdown tables plus the machine and the load and writes them to
``bench/out/treegrad.md`` (``bench/out/treegrad_<parts>.md`` for a subset); a full run (all
parts, not ``--quick``) also replaces this script's region of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _docs import update_benchmarks  # noqa: E402
from _machine import machine  # noqa: E402
from sklearn.datasets import make_regression  # noqa: E402
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

import engine.treegrad as tg  # noqa: E402
from engine.data import load_bundled, make_dataset  # noqa: E402
from engine.tree import from_sklearn  # noqa: E402
from engine.treegrad.explain import PAPER_BETAS, best_beta_curves  # noqa: E402
from engine.warmup import warm_up  # noqa: E402

DATASETS = ("breast_cancer", "digits", "wine", "diabetes")
SEED = 2025


def md_table(df: pd.DataFrame) -> str:
    """A DataFrame (cells already formatted) as a markdown table."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def interleaved(fns: dict, rounds: int, inner: dict | None = None, clock=time.perf_counter):
    """Time every function of ``fns`` once per round, in a rotating order, ``rounds`` times.

    Returns ``(best, per_round)``: the best seconds per call of each function and every
    round's seconds per call (lists), so ratios can be taken within a round.  ``inner``
    gives how many calls one timing covers (tiny calls are repeated to exceed the clock's
    noise).  ``clock``: ``time.perf_counter`` (wall clock) or ``time.thread_time`` (CPU
    time of the calling thread: on a shared machine it leaves out the time the thread
    waited for a core; only meaningful for single-threaded calls)."""
    names = list(fns)
    inner = inner or {}
    per_round = {k: [] for k in names}
    for r in range(rounds):
        for k in names[r % len(names) :] + names[: r % len(names)]:
            n = inner.get(k, 1)
            t0 = clock()
            for _ in range(n):
                fns[k]()
            per_round[k].append((clock() - t0) / n)
    return {k: min(v) for k, v in per_round.items()}, per_round


def interleaved_both(fns: dict, rounds: int, inner: dict) -> tuple[dict, dict, dict]:
    """:func:`interleaved` timing every window with both the wall clock and the thread's CPU
    time; returns ``(best_wall, best_cpu, cpu_per_round)``."""
    wall = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    names = list(fns)
    for r in range(rounds):
        for k in names[r % len(names) :] + names[: r % len(names)]:
            n = inner.get(k, 1)
            w0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(n):
                fns[k]()
            cpu[k].append((time.thread_time() - c0) / n)
            wall[k].append((time.perf_counter() - w0) / n)
    return {k: min(v) for k, v in wall.items()}, {k: min(v) for k, v in cpu.items()}, cpu


def _calls_for(fn, target: float = 2e-3) -> int:
    """How many calls of ``fn`` take about ``target`` seconds (one call timed)."""
    t0 = time.perf_counter()
    fn()
    return max(1, int(target / max(time.perf_counter() - t0, 1e-7)))


def _shapiq_version() -> str | None:
    try:
        from importlib.metadata import version

        import shapiq  # noqa: F401
    except ImportError:
        return None
    return version("shapiq")


def _is_quadrature_shapiq(v: str | None) -> bool:
    """shapiq >= 1.8 computes path-dependent values with QuadratureTreeSHAP (C++); older
    releases with TreeSHAP-IQ in numpy, too slow for the big trees."""
    if v is None:
        return False
    major, minor = (int(p) for p in v.split(".")[:2])
    return (major, minor) >= (1, 8)


def _shapiq_matrix(values, n: int) -> np.ndarray:
    """shapiq InteractionValues (one, a list, or a batch) as float64 ``(m, n)``."""
    if hasattr(values, "interactions"):
        values = [values]
    return np.array([[iv[(i,)] for i in range(n)] for iv in values], dtype=np.float64)


def brute_force_shapley(model, x: np.ndarray, class_index=None) -> np.ndarray:
    """Shapley values of one sample by enumerating all 2^n subsets of the path-dependent
    game (f_x(S) by its definition, :func:`engine.treegrad.game_value`), n <= 20."""
    from scipy.special import betaln

    n = int(x.shape[0])
    idx = np.arange(2**n)
    masks = ((idx[:, None] >> np.arange(n)) & 1).astype(np.uint8)
    f = np.asarray(tg.game_value(model, x, masks, class_index=class_index))
    size = masks.sum(axis=1)
    weight = np.exp(betaln(np.arange(n) + 1.0, n - np.arange(n)))  # s! (n - 1 - s)! / n!
    phi = np.zeros(n)
    for i in range(n):
        s = idx[masks[:, i] == 0]
        phi[i] = np.sum(weight[size[s]] * (f[s | (1 << i)] - f[s]))
    return phi


def speed_models(leaves: list[int]):
    """(label, fitted scikit-learn model, X, class_index) of the speed tables: regression
    trees with ``max_leaf_nodes`` = each of ``leaves`` (make_regression, 20 features, 4 rows
    per leaf, seed 0) and the grown-out depth-62 classifier of the numerics table."""
    from engine.treegrad.explain import _deep_data

    for L in leaves:
        X, y = make_regression(4 * L, 20, n_informative=15, noise=10.0, random_state=0)
        yield (
            f"regression, {L:,} leaves",
            DecisionTreeRegressor(max_leaf_nodes=L, random_state=0),
            X,
            y,
            None,
        )
    X, y = _deep_data(40000, 0)
    yield "classification, grown out (numerics)", DecisionTreeClassifier(random_state=0), X, y, 1


def _speed_model(label, est, X, y, cls, rounds, sv, quad):
    """Per-sample, batch and exactness rows of one model (see :func:`speed_tables`)."""
    import numba
    import shap

    if sv is not None:
        import shapiq

    t_fit = time.perf_counter()
    m = est.fit(X, y)
    t_fit = time.perf_counter() - t_fit
    n = X.shape[1]
    L = m.get_n_leaves()
    t0 = time.perf_counter()
    tree = from_sklearn(m)
    tg.shapley(tree, X[0], class_index=cls)  # pack + walk tables, cached on the tree
    setup_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    ex = shap.TreeExplainer(m, feature_perturbation="tree_path_dependent")
    setup_shap = time.perf_counter() - t0

    def shap_phi(rows, ex=ex):
        out = np.asarray(ex.shap_values(rows))
        return out[:, :, cls] if out.ndim == 3 else out

    x = X[1]
    z = np.full(n, 0.5)
    fns = {
        "gradient": lambda t=tree, x=x, z=z: tg.treegrad(t, x, z, class_index=cls),
        "ours": lambda t=tree, x=x: tg.shapley(t, x, class_index=cls),
        "shap": lambda x=x: ex.shap_values(x[None]),
    }
    peer = None
    if sv is not None and (quad or L <= 2000):
        t0 = time.perf_counter()
        peer = shapiq.TreeExplainer(m, index="SV", max_order=1, min_order=1, class_index=cls)
        peer.explain(x)  # builds its per-model structures
        setup_shapiq = time.perf_counter() - t0
        fns["shapiq"] = lambda x=x, p=peer: p.explain(x)
    inner = {k: _calls_for(f) for k, f in fns.items()}
    n_rounds = 3 * rounds if L < 50000 else max(3, rounds // 3)
    wall, best, rounds_t = interleaved_both(fns, n_rounds, inner)
    ratios = np.array(rounds_t["shap"]) / np.array(rounds_t["ours"])
    noise = (float(ratios.min()), float(np.median(ratios)), float(ratios.max()))
    row = {
        "model": label,
        "leaves": L,
        "depth": m.get_depth(),
        "gradient (ms)": best["gradient"] * 1e3,
        "TreeGrad-Shap (ms)": best["ours"] * 1e3,
        "shap (ms)": best["shap"] * 1e3,
        "shapiq (ms)": best.get("shapiq", np.nan) * 1e3,
        "shap / TreeGrad-Shap": best["shap"] / best["ours"],
        "shapiq / TreeGrad-Shap": best.get("shapiq", np.nan) / best["ours"],
        "shap / TreeGrad-Shap per round (min-median-max)": "{:.1f}-{:.1f}-{:.1f}x".format(*noise),
        "wall clock: shap / TreeGrad-Shap, shapiq / TreeGrad-Shap": "{:.1f}x, {}".format(
            wall["shap"] / wall["ours"],
            f"{wall['shapiq'] / wall['ours']:.1f}x" if "shapiq" in wall else "n/a",
        ),
        "setup ours / shap / shapiq (ms)": "{:.0f} / {:.0f} / {}".format(
            setup_ours * 1e3,
            setup_shap * 1e3,
            f"{setup_shapiq * 1e3:.0f}" if peer is not None else "n/a",
        ),
        "fit (s)": t_fit,
        "_noise": noise,
    }
    # batch throughput
    nb = 1000 if L <= 20000 else 100
    Xb = np.ascontiguousarray(X[:nb])
    threads = numba.get_num_threads()

    def ours_threads(k, t=tree, Xb=Xb):
        numba.set_num_threads(k)
        try:
            return tg.shapley(t, Xb, class_index=cls)
        finally:
            numba.set_num_threads(threads)

    bfns = {
        f"TreeGrad-Shap, {threads} threads": lambda: ours_threads(threads),
        "TreeGrad-Shap, 1 thread": lambda: ours_threads(1),
        "shap": lambda Xb=Xb: ex.shap_values(Xb),
    }
    nb_peer = nb if quad else min(nb, 20)
    if peer is not None:
        bfns["shapiq"] = lambda p=peer, Xb=Xb[:nb_peer]: p.explain_X(Xb)
        bfns[f"shapiq, n_jobs={threads}"] = lambda p=peer, Xb=Xb[:nb_peer]: p.explain_X(
            Xb, n_jobs=threads
        )
    bbest, _ = interleaved(bfns, 3 if L < 50000 else 1)
    rows_of = {k: (nb_peer if k.startswith("shapiq") else nb) for k in bfns}
    brow = {"model": label, "leaves": L, "rows": nb}
    for k, v in bbest.items():
        brow[f"{k} (samples/s)"] = rows_of[k] / v
    ours_rate = brow[f"TreeGrad-Shap, {threads} threads (samples/s)"]
    brow["ours / shap"] = ours_rate / brow["shap (samples/s)"]
    if peer is not None:
        best_peer = max(brow["shapiq (samples/s)"], brow[f"shapiq, n_jobs={threads} (samples/s)"])
        brow["ours / best shapiq"] = ours_rate / best_peer
    # exactness: the batch rows against both peers, one to three rows against brute force
    ours_b = tg.shapley(tree, Xb, class_index=cls)
    erow = {
        "model": label,
        "rows": nb,
        "max |phi - shap|": float(np.max(np.abs(ours_b - shap_phi(Xb)))),
        "max |phi|": float(np.max(np.abs(ours_b))),
    }
    if peer is not None:
        theirs = _shapiq_matrix(peer.explain_X(Xb[:nb_peer]), n)
        erow["max |phi - shapiq|"] = float(np.max(np.abs(ours_b[:nb_peer] - theirs)))
        erow["max |shap - shapiq|"] = float(np.max(np.abs(shap_phi(Xb[:nb_peer]) - theirs)))
    if L <= 20000:  # 2^20 subsets x the tree: about a minute at 10k leaves
        k_bf = 3 if n <= 12 else 1
        err = {"ours": 0.0, "shap": 0.0, "shapiq": 0.0}
        for r in range(k_bf):
            ref = brute_force_shapley(tree, X[r], class_index=cls)
            err["ours"] = max(err["ours"], np.abs(ours_b[r] - ref).max())
            err["shap"] = max(err["shap"], np.abs(shap_phi(X[r : r + 1])[0] - ref).max())
            if peer is not None:
                got = _shapiq_matrix(peer.explain(X[r]), n)[0]
                err["shapiq"] = max(err["shapiq"], np.abs(got - ref).max())
        erow["brute-force rows"] = k_bf
        erow["ours - brute force"] = err["ours"]
        erow["shap - brute force"] = err["shap"]
        erow["shapiq - brute force"] = err["shapiq"] if peer is not None else np.nan
    return row, brow, erow


def speed_tables(leaves: list[int], rounds: int) -> tuple[str, str, str, dict]:
    """Per-sample, batch and exactness tables of TreeGrad against shap and shapiq."""
    sv = _shapiq_version()
    quad = _is_quadrature_shapiq(sv)
    per_sample, batch, exact = [], [], []
    noise = {}
    load = [os.getloadavg()]
    t_all = time.perf_counter()
    for label, est, X, y, cls in speed_models(leaves):
        row, brow, erow = _speed_model(label, est, X, y, cls, rounds, sv, quad)
        noise[label] = row.pop("_noise")
        per_sample.append(row)
        batch.append(brow)
        exact.append(erow)
        load.append(os.getloadavg())
        print(f"  {label} done ({time.perf_counter() - t_all:.0f} s)", flush=True)
    ps = pd.DataFrame(per_sample)
    for c in ps.columns:
        if c.endswith("(ms)") and ps[c].dtype == float:
            ps[c] = ps[c].map(lambda v: "n/a" if np.isnan(v) else f"{v:.3f}")
    for c in ("shap / TreeGrad-Shap", "shapiq / TreeGrad-Shap"):
        ps[c] = ps[c].map(lambda v: "n/a" if np.isnan(v) else f"{v:.1f}x")
    ps["fit (s)"] = ps["fit (s)"].map("{:.1f}".format)
    bt = pd.DataFrame(batch)
    for c in bt.columns:
        if c.endswith("(samples/s)"):
            bt[c] = bt[c].map(lambda v: "n/a" if pd.isna(v) else f"{v:,.0f}")
        elif c.startswith("ours /"):
            bt[c] = bt[c].map(lambda v: "n/a" if pd.isna(v) else f"{v:.1f}x")
    ex_df = pd.DataFrame(exact)
    for c in ex_df.columns:
        if ex_df[c].dtype == float and c not in ("rows", "brute-force rows"):
            ex_df[c] = ex_df[c].map(lambda v: "n/a" if pd.isna(v) else f"{v:.1e}")
    for c in ("brute-force rows",):
        if c in ex_df:
            ex_df[c] = ex_df[c].map(lambda v: "n/a" if pd.isna(v) else f"{int(v)}")
    info = {"shapiq": sv, "load": load, "noise": noise}
    return md_table(ps), md_table(bt), md_table(ex_df), info


def _model(kind: str, task: str):
    if kind == "tree":
        cls = DecisionTreeClassifier if task == "classification" else DecisionTreeRegressor
        return cls(max_depth=12, random_state=SEED)
    cls = GradientBoostingClassifier if task == "classification" else GradientBoostingRegressor
    return cls(n_estimators=5, max_depth=6, random_state=SEED)


def ranking_rows(name: str, kind: str, n_rows: int) -> list[dict]:
    df, _r, entry = load_bundled(name)
    ds = make_dataset(df, entry["target"], missing="drop")
    tr, te = train_test_split(np.arange(ds.n_samples), test_size=0.2, random_state=SEED)
    m = _model(kind, ds.task).fit(ds.X[tr], ds.y[tr])
    model = from_sklearn(m)
    X = ds.X[te[:n_rows]]
    clf = ds.task == "classification"
    out = "probability" if (clf and kind == "boosting") else "game"
    if clf:
        cls = np.argmax(model.predict_proba(X), axis=1)
    else:
        cls = np.zeros(len(X), dtype=np.int64)
    sums: dict[str, np.ndarray] = {}

    def add(label, cv):
        acc = sums.setdefault(label, np.zeros(3))
        acc += [cv.auc_insertion.sum(), cv.auc_deletion.sum(), cv.joint.sum()]

    for c in np.unique(cls):
        sel = np.flatnonzero(cls == c)
        Xc = X[sel]
        ci = int(c) if clf else None
        scores = {
            "Ranker GA": tg.rank(model, Xc, ci, "ga", lr=5.0, steps=100).scores,
            "Ranker Adam": tg.rank(model, Xc, ci, "adam", lr=5.0, steps=100).scores,
            "Shapley": tg.shapley(model, Xc, ci),
            "Banzhaf": tg.banzhaf(model, Xc, 0.5, ci),
        }
        for label, s in scores.items():
            add(label, tg.insertion_deletion(model, Xc, s, ci, out))
        for crit, label in (
            ("insertion", "Best Beta (by ins)"),
            ("deletion", "Best Beta (by del)"),
            ("joint", "Best Beta (by ins - del)"),
        ):
            add(label, best_beta_curves(model, Xc, ci, out, crit, PAPER_BETAS)[0])
    rows = []
    for label, (i, d, j) in sums.items():
        rows.append(
            {
                "dataset": name,
                "model": "decision tree (depth 12)"
                if kind == "tree"
                else "gradient boosting (5 x depth 6)",
                "rows": len(X),
                "method": label,
                "insertion AUC": i / len(X),
                "deletion AUC": d / len(X),
                "ins - del": j / len(X),
            }
        )
    return rows


def ranking_tables(n_rows: int) -> tuple[str, str]:
    rows = []
    for name in DATASETS:
        for kind in ("tree", "boosting"):
            rows += ranking_rows(name, kind, n_rows)
            print(f"  {name} {kind} done", flush=True)
    df = pd.DataFrame(rows)
    summary = []
    for (name, model), part in df.groupby(["dataset", "model"], sort=False):
        p = part.set_index("method")
        best_lin_ins = p.loc[["Shapley", "Banzhaf"], "insertion AUC"].max()
        summary.append(
            {
                "dataset": name,
                "model": model,
                "rows": int(part["rows"].iloc[0]),
                "Ranker Adam ins - Shapley ins": p.loc["Ranker Adam", "insertion AUC"]
                - p.loc["Shapley", "insertion AUC"],
                "Ranker GA ins - Shapley ins": p.loc["Ranker GA", "insertion AUC"]
                - p.loc["Shapley", "insertion AUC"],
                "Ranker Adam joint - Shapley joint": p.loc["Ranker Adam", "ins - del"]
                - p.loc["Shapley", "ins - del"],
                "Ranker Adam ins >= best linear ins": bool(
                    p.loc["Ranker Adam", "insertion AUC"] >= best_lin_ins - 1e-12
                ),
            }
        )
    full = df.copy()
    for c in ("insertion AUC", "deletion AUC", "ins - del"):
        full[c] = full[c].map("{:.4f}".format)
    sm = pd.DataFrame(summary)
    for c in sm.columns:
        if sm[c].dtype == float:
            sm[c] = sm[c].map("{:+.4f}".format)
    return md_table(full), md_table(sm)


def numerics_table() -> str:
    from engine.treegrad.explain import error_vs_depth_steps

    df = None
    for snap in error_vs_depth_steps(
        None, depths=(5, 10, 20, 30, 45, None), n_rows=40000, n_samples=3, seed=0
    ):
        df = snap["rows"]
    wide = df.pivot_table(
        index=["depth", "leaves"], columns="method", values="max_abs_error", sort=False
    ).reset_index()
    for c in wide.columns[2:]:
        wide[c] = wide[c].map("{:.1e}".format)
    return md_table(wide)


def main() -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="trees of 1k and 10k leaves only, 50 test rows per dataset",
    )
    ap.add_argument(
        "--parts",
        default="speed,rankings,numerics",
        help="comma-separated subset of speed, rankings, numerics",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=15,
        help="interleaved timing rounds per model for the one-sample table (best of N)",
    )
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    warnings.filterwarnings("ignore")
    warm_up()
    leaves = [1000, 10000] if args.quick else [1000, 10000, 100000]
    n_rows = 50 if args.quick else 200
    blocks = []
    if "speed" in parts:
        print("speed ...", flush=True)
        one, many, exact, info = speed_tables(leaves, args.rounds)
        import shap

        loads = ", ".join(f"{a[0]:.1f}" for a in info["load"])
        blocks += [
            "### TreeGrad vs shap and shapiq (path-dependent Shapley values), one sample",
            one,
            "### Batch throughput (Shapley values of many rows)",
            many,
            "### Exactness (max absolute differences; brute force over all 2^n subsets)",
            exact,
            f"Peers: shap {shap.__version__} (`TreeExplainer(model, "
            "feature_perturbation='tree_path_dependent').shap_values`), shapiq "
            f"{info['shapiq'] or 'not installed'} (`TreeExplainer(model, index='SV', "
            "max_order=1, min_order=1).explain` / `explain_X`). 1-minute load average "
            f"before and after each model: {loads} (2 cores).",
        ]
    if "rankings" in parts:
        print("rankings ...", flush=True)
        full, summary = ranking_tables(n_rows)
        blocks += [
            f"### Insertion / deletion AUCs (mean over up to {n_rows} test rows; AUC = "
            "mean of the n + 1 points; higher insertion, lower deletion, higher ins - "
            "del is better)",
            full,
            "### Ranker vs Shapley (differences of the means above)",
            summary,
        ]
    if "numerics" in parts:
        print("numerics ...", flush=True)
        blocks += [
            "### Max |Shapley error| vs brute force (2^10 subsets, 3 rows) by tree depth",
            numerics_table(),
        ]
    blocks.append(f"Machine: {machine()}" + (" (quick run)" if args.quick else ""))
    out = "\n\n".join(blocks)
    print(out)
    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    name = (
        "treegrad.md"
        if parts == {"speed", "rankings", "numerics"}
        else f"treegrad_{'_'.join(sorted(parts))}.md"
    )
    (out_dir / name).write_text(out + "\n", encoding="utf-8")
    if not args.quick and name == "treegrad.md":  # a subset would drop the other parts' tables
        update_benchmarks("bench_treegrad.py", out)
    return out


if __name__ == "__main__":
    main()
