"""Benchmark: TreeGrad against shap's TreeExplainer, and the rankings' insertion/deletion AUCs.

Run ``python bench/bench_treegrad.py`` from the repository root (``--quick`` for a short run:
trees of 1k and 10k leaves, 50 test rows).

1. Speed, one sample: the gradient of the multilinear extension for all features at z = 0.5
   (one O(L) TreeGrad pass) and the Shapley values by TreeGrad-Shap, vs
   ``shap.TreeExplainer(model, feature_perturbation='tree_path_dependent').shap_values`` of
   the same sample, on scikit-learn regression trees with ``max_leaf_nodes`` = 1k, 10k, 100k
   (``make_regression``, 20 features, 4 rows per leaf, seed 0); best of 7 calls
   (``time.perf_counter``), warm JIT, same process.  Batch throughput: Shapley values of
   1,000 rows (100 at 100k leaves; samples/s, best of 3, one run at 100k) for both.  The max |difference| of the Shapley values
   is printed as a check.
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
   TreeShap's) and shap, on decision trees of growing depth fitted on
   ``make_classification(40000, 10 features, 6 informative, flip_y=0.3)`` (the page's
   Numerics tab; research/treegrad.md section 10D).

Prints markdown tables plus the machine and writes them to ``bench/out/treegrad.md``.
"""

from __future__ import annotations

import argparse
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


def speed_table(leaves: list[int]) -> str:
    import shap

    rows = []
    t_all = time.perf_counter()
    for L in leaves:
        X, y = make_regression(4 * L, 20, n_informative=15, noise=10.0, random_state=0)
        t_fit = time.perf_counter()
        m = DecisionTreeRegressor(max_leaf_nodes=L, random_state=0).fit(X, y)
        t_fit = time.perf_counter() - t_fit
        tree = from_sklearn(m)
        ex = shap.TreeExplainer(m, feature_perturbation="tree_path_dependent")
        x = X[1]
        z = np.full(20, 0.5)
        tg.treegrad(tree, x, z)
        tg.shapley(tree, x)
        ex.shap_values(x[None])
        t_grad = best_of(lambda t=tree, x=x, z=z: tg.treegrad(t, x, z), 7)
        t_tgs = best_of(lambda t=tree, x=x: tg.shapley(t, x), 7)
        t_shap = best_of(lambda e=ex, x=x: e.shap_values(x[None]), 7)
        nb = 1000 if L <= 10000 else 100  # shap needs ~0.1 s per sample at 100k leaves
        Xb = X[:nb]
        t0 = time.perf_counter()
        ours_b = tg.shapley(tree, Xb)
        tb_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        theirs_b = ex.shap_values(Xb)
        tb_shap = time.perf_counter() - t0
        diff = float(np.max(np.abs(ours_b - theirs_b)))
        if L <= 10000:
            tb_ours = min(tb_ours, best_of(lambda t=tree, Xb=Xb: tg.shapley(t, Xb), 2))
            tb_shap = min(tb_shap, best_of(lambda e=ex, Xb=Xb: e.shap_values(Xb), 2))
        rows.append(
            {
                "leaves": m.get_n_leaves(),
                "depth": m.get_depth(),
                "gradient, 1 sample (ms)": t_grad * 1e3,
                "TreeGrad-Shap, 1 sample (ms)": t_tgs * 1e3,
                "shap, 1 sample (ms)": t_shap * 1e3,
                "shap / gradient": t_shap / t_grad,
                "shap / TreeGrad-Shap": t_shap / t_tgs,
                "batch rows": nb,
                "TreeGrad-Shap batch (samples/s)": len(Xb) / tb_ours,
                "shap batch (samples/s)": len(Xb) / tb_shap,
                "max |phi - shap|": diff,
                "fit (s)": t_fit,
            }
        )
        print(f"  {L} leaves done ({time.perf_counter() - t_all:.0f} s)", flush=True)
    df = pd.DataFrame(rows)
    fmt = {c: "{:.3f}" for c in df.columns if "(ms)" in c}
    fmt.update(
        {
            "shap / gradient": "{:.1f}x",
            "shap / TreeGrad-Shap": "{:.1f}x",
            "TreeGrad-Shap batch (samples/s)": "{:,.0f}",
            "shap batch (samples/s)": "{:,.0f}",
            "max |phi - shap|": "{:.1e}",
            "fit (s)": "{:.1f}",
        }
    )
    for c, f in fmt.items():
        df[c] = df[c].map(f.format)
    return md_table(df)


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
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    warnings.filterwarnings("ignore")
    warm_up()
    leaves = [1000, 10000] if args.quick else [1000, 10000, 100000]
    n_rows = 50 if args.quick else 200
    blocks = []
    if "speed" in parts:
        print("speed ...", flush=True)
        blocks += [
            "### TreeGrad vs shap TreeExplainer (path-dependent), one regression tree, 20 features",
            speed_table(leaves),
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
    if not args.quick:
        update_benchmarks("bench_treegrad.py", out)
    return out


if __name__ == "__main__":
    main()
