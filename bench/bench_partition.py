"""Benchmark: Partition Tree / Forest fit time against the reference package and scikit-learn,
and log-loss on the bundled datasets against CART / random forest baselines.

Run ``python bench/bench_partition.py`` from the repository root (about 5-10 minutes on a
shared 2-core box; ``--quick`` skips the reference forest and shrinks the CV).

1. **Fit time** on a synthetic N = 10,000 x 9 regression (``X ~ U(0, 1)^9``, seed 0,
   ``y = sin(2 pi x0) + 2 x1 + (0.1 + x2) eps``), ``max_leaves=256``, warm JIT, in this
   process: our ``PartitionTreeRegressor`` (best of 5) vs the ``partition-tree`` package
   from PyPI (``partition_tree.sklearn.PartitionTreeRegressor``, same ``max_leaves``,
   ``boundaries_expansion_factor=0.1``, ``min_volume_fraction=0.1``; best of 3) and vs
   scikit-learn's ``DecisionTreeRegressor(max_leaf_nodes=256)`` (best of 5); ratios ours /
   peer. Forest of 100 trees (``max_samples=0.8``, ``max_features=0.8``): ours with
   ``n_jobs=1`` and ``n_jobs=2``, the reference package (one fit), scikit-learn's
   ``RandomForestRegressor(100, max_leaf_nodes=256)`` for context. Beside the times: the
   test NLL of each Partition model on 2,000 held-out rows of the same distribution (the
   reference through its skpro API's ``log_pdf``), to show the ratio compares equal models.
   The reference package is imported from the environment, or from the folder named by
   ``PARTITION_TREE_PATH`` (it pins pandas < 2.4, so it can be installed beside the app with
   ``pip install --no-deps --target DIR partition-tree pyo3-partition-tree polars==1.33.1
   skpro scikit-base``); when it cannot be imported the table says so.
2. **Log-loss** (mean negative log-likelihood of held-out y; classification: log-loss with
   probabilities clipped at 1e-15; regression: nats per unit of y with our density floored
   at 1e-9) under 5-fold CV (stratified for classification, shuffle seed 0) on every bundled
   dataset: Partition Tree (defaults), Partition Forest (50 trees), CART (scikit-learn,
   fully grown) and random forest (100 trees) -- for classification through
   ``predict_proba``, for regression with Gaussian residuals (scale out of fold: 5-fold for
   CART, out-of-bag for the forest) -- and the heteroscedastic Gaussian of
   :func:`engine.partition.explore.gaussian_baselines`. The docs/spec.md section 2 reference figures
   (reference package, same protocol) are shown beside ours.

Prints markdown tables plus the machine and writes them to ``bench/out/partition.md``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _docs import update_benchmarks  # noqa: E402
from _machine import machine  # noqa: E402
from scipy.stats import norm  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.model_selection import KFold, StratifiedKFold  # noqa: E402
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

from engine.data import bundled_datasets, load_bundled, make_dataset  # noqa: E402
from engine.partition import (  # noqa: E402
    PartitionForestClassifier,
    PartitionForestRegressor,
    PartitionTreeClassifier,
    PartitionTreeRegressor,
)
from engine.partition.explore import gaussian_baselines  # noqa: E402
from engine.warmup import warm_up  # noqa: E402

QUICK = "--quick" in sys.argv
SPEC_REFERENCE = {
    "iris": (0.343, 0.274),
    "wine": (0.328, 0.190),
    "breast_cancer": (0.245, 0.126),
    "digits": (0.763, 0.431),
}


def best_s(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def reference_package():
    """(sklearn module, skpro module, version) of ``partition-tree``, or the import error."""
    extra = os.environ.get("PARTITION_TREE_PATH")
    if extra:
        sys.path.append(extra)
    try:
        from importlib.metadata import version

        import partition_tree.sklearn as ref_sk
        import partition_tree.skpro as ref_skpro

        return ref_sk, ref_skpro, version("partition-tree")
    except Exception as exc:  # noqa: BLE001 - any failure is reported in the table
        return None, None, f"{type(exc).__name__}: {exc}"


def synthetic(n: int, seed: int):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 9)
    y = np.sin(2 * np.pi * X[:, 0]) + 2 * X[:, 1] + (0.1 + X[:, 2]) * rng.randn(n)
    return np.ascontiguousarray(X), y


def fit_time_tables() -> str:
    import pandas as pd

    X, y = synthetic(10_000, 0)
    Xt, yt = synthetic(2_000, 1)
    ref_sk, ref_skpro, ref_version = reference_package()
    cols = [f"x{i}" for i in range(9)]

    def ref_nll(model_cls, **kw):
        m = model_cls(random_state=0, **kw).fit(
            pd.DataFrame(X, columns=cols), pd.DataFrame({"y": y})
        )
        lp = np.asarray(
            m.predict_proba(pd.DataFrame(Xt, columns=cols)).log_pdf(pd.DataFrame({"y": yt}))
        ).ravel()
        return float(np.mean(-np.maximum(lp, np.log(1e-9)))), int(np.sum(~np.isfinite(lp)))

    rows = [
        "| model (N = 10,000 x 9, max_leaves 256) | fit s | ratio ours / peer | "
        "test NLL (2,000 rows) |",
        "|---|---:|---:|---:|",
    ]
    ours = PartitionTreeRegressor(max_leaves=256, random_state=0)
    t_ours = best_s(lambda: ours.fit(X, y), 5)
    nll_ours = ours.nll(Xt, yt)[0]
    rows.append(f"| Partition Tree (TreeLab), best of 5 | {t_ours:.3f} | -- | {nll_ours:.4f} |")
    if ref_sk is not None:
        kw = dict(max_leaves=256, boundaries_expansion_factor=0.1, min_volume_fraction=0.1)
        t_ref = best_s(lambda: ref_sk.PartitionTreeRegressor(random_state=0, **kw).fit(X, y), 3)
        nll_ref, _ = ref_nll(ref_skpro.PartitionTreeRegressor, **kw)
        rows.append(
            f"| partition-tree {ref_version} (PyPI), best of 3 | {t_ref:.3f} | "
            f"{t_ours / t_ref:.2f} | {nll_ref:.4f} |"
        )
    else:
        rows.append(f"| partition-tree (PyPI): not importable ({ref_version}) | -- | -- | -- |")
    sk = DecisionTreeRegressor(max_leaf_nodes=256, random_state=0)
    t_sk = best_s(lambda: sk.fit(X, y), 5)
    rows.append(
        f"| scikit-learn DecisionTreeRegressor(max_leaf_nodes=256), best of 5 | "
        f"{t_sk:.3f} | {t_ours / t_sk:.2f} | (point prediction only) |"
    )
    print("\n".join(rows), flush=True)

    frows = [
        "| forest of 100 trees (N = 10,000 x 9, max_leaves 256) | fit s | "
        "ratio ours (n_jobs=1) / peer | test NLL (2,000 rows) |",
        "|---|---:|---:|---:|",
    ]
    times = {}
    for nj in (1, 2):
        f = PartitionForestRegressor(n_estimators=100, max_leaves=256, n_jobs=nj, random_state=0)
        t0 = time.perf_counter()
        f.fit(X, y)
        times[nj] = time.perf_counter() - t0
        frows.append(
            f"| Partition Forest (TreeLab), n_jobs={nj} | {times[nj]:.2f} | -- | "
            f"{f.nll(Xt, yt)[0]:.4f} |"
        )
        print(frows[-1], flush=True)
    if ref_sk is not None and not QUICK:
        kw = dict(
            n_estimators=100,
            max_leaves=256,
            boundaries_expansion_factor=0.1,
            min_volume_fraction=0.1,
            max_samples=0.8,
            max_features=0.8,
        )
        t0 = time.perf_counter()
        ref_sk.PartitionForestRegressor(random_state=0, **kw).fit(X, y)
        t_ref = time.perf_counter() - t0
        frows.append(
            f"| partition-tree {ref_version} (PyPI), one fit | {t_ref:.2f} | "
            f"{times[1] / t_ref:.2f} | -- |"
        )
    elif ref_sk is None:
        frows.append(f"| partition-tree (PyPI): not importable ({ref_version}) | -- | -- | -- |")
    rf = RandomForestRegressor(n_estimators=100, max_leaf_nodes=256, random_state=0, n_jobs=1)
    t0 = time.perf_counter()
    rf.fit(X, y)
    t_rf = time.perf_counter() - t0
    frows.append(
        f"| scikit-learn RandomForestRegressor(100, max_leaf_nodes=256), n_jobs=1 | "
        f"{t_rf:.2f} | {times[1] / t_rf:.1f} | (point prediction only) |"
    )
    return "\n".join(rows) + "\n\n" + "\n".join(frows)


def _clf_loss(p, y):
    return float(np.mean(-np.log(np.clip(p[np.arange(len(y)), y], 1e-15, 1.0))))


def log_loss_table() -> str:
    n_trees = 10 if QUICK else 50
    rows = [
        "| dataset | task | Partition Tree | Partition Forest (50) | CART | random forest "
        "(100) | heteroscedastic Gaussian | SPEC ref. tree / forest |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in bundled_datasets():
        df, _, entry = load_bundled(name)
        ds = make_dataset(df, entry["target"], missing="drop")
        cat = ds.is_categorical if ds.is_categorical.any() else None
        clf = ds.task == "classification"
        folds = (StratifiedKFold if clf else KFold)(5, shuffle=True, random_state=0)
        scores = {k: [] for k in ("pt", "pf", "cart", "rf", "het")}
        out_pt = 0
        for tr, te in folds.split(ds.X, ds.y):
            Xtr, ytr, Xte, yte = ds.X[tr], ds.y[tr], ds.X[te], ds.y[te]
            if clf:
                for key, m in (
                    ("pt", PartitionTreeClassifier(categorical_features=cat)),
                    (
                        "pf",
                        PartitionForestClassifier(
                            n_estimators=n_trees, random_state=0, categorical_features=cat
                        ),
                    ),
                ):
                    m.fit(Xtr, ytr)
                    p = np.zeros((len(te), ds.n_classes))
                    p[:, m.classes_] = m.predict_proba(Xte)
                    scores[key].append(_clf_loss(p, yte))
                for key, m in (
                    ("cart", DecisionTreeClassifier(random_state=0)),
                    ("rf", RandomForestClassifier(100, random_state=0)),
                ):
                    m.fit(Xtr, ytr)
                    p = np.zeros((len(te), ds.n_classes))
                    p[:, m.classes_] = m.predict_proba(Xte)
                    scores[key].append(_clf_loss(p, yte))
            else:
                pt = PartitionTreeRegressor(categorical_features=cat).fit(Xtr, ytr)
                nll, n_out = pt.nll(Xte, yte, floor=1e-9)
                scores["pt"].append(nll)
                out_pt += n_out
                pf = PartitionForestRegressor(
                    n_estimators=n_trees, random_state=0, categorical_features=cat
                ).fit(Xtr, ytr)
                scores["pf"].append(pf.nll(Xte, yte, floor=1e-9)[0])
                base = gaussian_baselines(Xtr, ytr, max_leaf_nodes=None, seed=0)
                for key, label in (
                    ("cart", "CART + Gaussian residuals"),
                    ("rf", "Random forest + Gaussian residuals"),
                    ("het", "Heteroscedastic Gaussian (RF mean, RF variance)"),
                ):
                    _, fit, dist = base[label]
                    mean, sd = dist(fit(), Xte)
                    scores[key].append(
                        float(np.mean(-np.maximum(norm.logpdf(yte, mean, sd), np.log(1e-9))))
                    )
        cell = {k: (f"{np.mean(v):.3f}" if v else "--") for k, v in scores.items()}
        if not clf and out_pt:
            cell["pt"] += f" ({out_pt} out of support)"
        ref = SPEC_REFERENCE.get(name)
        rows.append(
            f"| {name} | {ds.task} | {cell['pt']} | {cell['pf']} | {cell['cart']} | "
            f"{cell['rf']} | {cell['het']} | "
            + (f"{ref[0]:.3f} / {ref[1]:.3f}" if ref else "--")
            + " |"
        )
        print(rows[-1], flush=True)
    return "\n".join(rows)


def main() -> str:
    warnings.simplefilter("ignore")
    warm_up()
    load0 = os.getloadavg()[0]
    t_fit = fit_time_tables()
    load1 = os.getloadavg()[0]
    t_ll = log_loss_table()
    out = "\n\n".join(
        [
            "#### Fit time at N = 10,000 x 9, max_leaves 256 (warm JIT)",
            t_fit,
            "#### 5-fold CV log-loss / NLL on the bundled datasets (lower is better; regression "
            "in nats per unit of y)",
            t_ll,
            f"Machine: {machine()}; 1-minute load average {load0:.1f} before and {load1:.1f} "
            "after the fit-time tables (the box is shared: times vary with it, ratios in one "
            "process less so)",
        ]
    )
    print(out)
    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "partition.md").write_text(out + "\n", encoding="utf-8")
    update_benchmarks("bench_partition.py", out)
    return out


if __name__ == "__main__":
    main()
