"""Benchmark: the CART engine against scikit-learn, and the split strategies against each other.

Run ``python bench/bench_cart.py`` from the repository root.

1. Fit time of ``CARTClassifier(splitter='exhaustive')`` vs scikit-learn's
   ``DecisionTreeClassifier`` (both fully grown, default parameters) in this process, warm
   JIT, best of 5 (``time.perf_counter``), from the same float64 C-contiguous ``X``, on
   breast_cancer, digits (bundled CSVs) and a synthetic 100,000 x 20 table
   (``make_classification``: 10 informative, 4 redundant, 3 classes, flip_y 0.05, seed 0).
2. Per strategy (``max_depth=8``, seed 0): candidates evaluated in one fit on all rows,
   fit time on all rows (best of 3), and depth-8 stratified 5-fold CV accuracy (mean of 3
   shuffles, seeds 0-2) with its difference to exhaustive, on the bundled classification
   sets with continuous features and the synthetic table (CV on its first 20,000 rows).
3. The single 5-fold run (shuffle seed 0) beside the docs/spec.md section 5 reference accuracies.

Prints markdown tables plus the machine and writes them to ``bench/out/cart.md``.
"""

from __future__ import annotations

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
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.model_selection import StratifiedKFold, cross_val_score  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

from engine.cart import CARTClassifier  # noqa: E402
from engine.data import load_bundled, make_dataset  # noqa: E402
from engine.warmup import warm_up  # noqa: E402

REPEATS = 3
FIT_REPEATS = 5  # the scikit-learn comparison: best of 5 (the benchmark box is shared)
STRATEGIES = {
    "exhaustive": {},
    "quantile (16)": {"splitter": "quantile"},
    "histogram (16)": {"splitter": "histogram"},
    "random (16)": {"splitter": "random"},
    "dics_paper": {"splitter": "dics_paper"},
    "dics_paper (k=100/node)": {"splitter": "dics_paper", "n_candidates": 100},
    "kmeans1d (K)": {"splitter": "kmeans1d"},
    "kmeans1d (8)": {"splitter": "kmeans1d", "n_candidates": 8},
    "class_centroid": {"splitter": "class_centroid"},
    "kde_valley": {"splitter": "kde_valley"},
}
STRATEGY_SETS = ("iris", "wine", "breast_cancer", "digits", "moons", "sandwich")
SPEC_REFERENCE = {  # exhaustive / dics_paper / class_centroid / kmeans1d-8 / quantile16
    "iris": (0.933, 0.933, 0.933, 0.940, 0.927),
    "wine": (0.927, 0.933, 0.932, 0.916, 0.905),
    "breast_cancer": (0.926, 0.940, 0.944, 0.935, 0.940),
    "digits": (0.838, 0.822, 0.846, 0.841, 0.836),
}


def best_s(fn, repeats: int = REPEATS) -> float:
    """Best wall time of ``repeats`` calls, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bundled(name):
    df, _, entry = load_bundled(name)
    ds = make_dataset(df, entry["target"], missing="drop")
    return np.ascontiguousarray(ds.X, dtype=np.float64), ds.y


def synthetic():
    X, y = make_classification(
        n_samples=100_000,
        n_features=20,
        n_informative=10,
        n_redundant=4,
        n_classes=3,
        flip_y=0.05,
        random_state=0,
    )
    return np.ascontiguousarray(X, dtype=np.float64), y


def fit_time_table(data) -> str:
    rows = [
        "| dataset | rows x features | sklearn ms | ours ms | ratio (ours/sklearn) | "
        "nodes (sklearn / ours) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name, (X, y) in data.items():
        sk = DecisionTreeClassifier(random_state=0)
        ours = CARTClassifier()
        t_sk = best_s(lambda sk=sk, X=X, y=y: sk.fit(X, y), FIT_REPEATS)
        t_ours = best_s(lambda ours=ours, X=X, y=y: ours.fit(X, y), FIT_REPEATS)
        rows.append(
            f"| {name} | {X.shape[0]:,} x {X.shape[1]} | {t_sk * 1e3:.1f} | {t_ours * 1e3:.1f} "
            f"| {t_ours / t_sk:.2f} | {sk.tree_.node_count:,} / {ours.tree_.node_count:,} |"
        )
    return "\n".join(rows)


def cv_mean(X, y, params, seeds=(0, 1, 2)):
    accs = []
    for s in seeds:
        cv = StratifiedKFold(5, shuffle=True, random_state=s)
        accs.append(
            cross_val_score(
                CARTClassifier(max_depth=8, random_state=s, **params), X, y, cv=cv
            ).mean()
        )
    return float(np.mean(accs)), float(accs[0])


def strategy_tables(data) -> tuple[str, str, str, dict]:
    names = list(data)
    cand, times, accs, first = {}, {}, {}, {}
    for name, (X, y) in data.items():
        Xcv, ycv = (X[:20_000], y[:20_000]) if X.shape[0] > 20_000 else (X, y)
        for label, params in STRATEGIES.items():
            est = CARTClassifier(max_depth=8, random_state=0, **params)
            times[name, label] = best_s(lambda est=est, X=X, y=y: est.fit(X, y))
            cand[name, label] = est.n_candidates_evaluated_
            accs[name, label], first[name, label] = cv_mean(Xcv, ycv, params)
        print(f"  strategies done on {name}", flush=True)

    head = "| strategy | " + " | ".join(names) + " |"
    sep = "|---|" + "---:|" * len(names)
    t1 = [head, sep]
    t2 = [head, sep]
    t3 = [head, sep]
    for label in STRATEGIES:
        c_cells, t_cells, a_cells = [], [], []
        for name in names:
            c, c0 = cand[name, label], cand[name, "exhaustive"]
            c_cells.append(f"{c:,}" + ("" if label == "exhaustive" else f" ({c0 / c:.1f}x)"))
            t, t0 = times[name, label], times[name, "exhaustive"]
            t_cells.append(f"{t * 1e3:.1f}" + ("" if label == "exhaustive" else f" ({t / t0:.2f})"))
            a, a0 = accs[name, label], accs[name, "exhaustive"]
            a_cells.append(f"{a:.3f}" + ("" if label == "exhaustive" else f" ({a - a0:+.3f})"))
        t1.append(f"| {label} | " + " | ".join(c_cells) + " |")
        t2.append(f"| {label} | " + " | ".join(t_cells) + " |")
        t3.append(f"| {label} | " + " | ".join(a_cells) + " |")
    return "\n".join(t1), "\n".join(t2), "\n".join(t3), first


def spec_table(first) -> str:
    cols = ("exhaustive", "dics_paper", "class_centroid", "kmeans1d (8)", "quantile (16)")
    rows = [
        "| dataset | " + " | ".join(f"{c}: ours / SPEC" for c in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for name, ref in SPEC_REFERENCE.items():
        cells = [f"{first[name, c]:.3f} / {r:.3f}" for c, r in zip(cols, ref, strict=True)]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> str:
    warnings.simplefilter("ignore")
    warm_up()
    fit_data = {
        "breast_cancer": bundled("breast_cancer"),
        "digits": bundled("digits"),
        "synthetic 100k x 20": synthetic(),
    }
    t_fit = fit_time_table(fit_data)
    print(t_fit, flush=True)
    strat_data = {name: bundled(name) for name in STRATEGY_SETS}
    strat_data["synthetic 100k x 20"] = fit_data["synthetic 100k x 20"]
    t_cand, t_time, t_acc, first = strategy_tables(strat_data)
    t_spec = spec_table(first)
    out = "\n\n".join(
        [
            "#### Fit time, exhaustive splitter vs scikit-learn (fully grown trees, best of 5)",
            t_fit,
            "#### Candidates evaluated in one depth-8 fit on all rows (x fewer than exhaustive)",
            t_cand,
            "#### Fit time ms of one depth-8 fit on all rows, best of 3 (ratio to exhaustive)",
            t_time,
            "#### Depth-8 5-fold CV accuracy, mean of 3 shuffles (difference to exhaustive; "
            "synthetic: first 20,000 rows)",
            t_acc,
            "#### One 5-fold run (shuffle seed 0) beside the docs/spec.md section 5 references",
            t_spec,
            f"Machine: {machine()}",
        ]
    )
    print(out)
    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "cart.md").write_text(out + "\n", encoding="utf-8")
    update_benchmarks("bench_cart.py", out)
    return out


if __name__ == "__main__":
    main()
