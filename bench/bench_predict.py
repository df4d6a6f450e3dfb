"""Benchmark: TreeLab's numba routing vs scikit-learn's ``predict`` on the same models.

Run ``python bench/bench_predict.py`` from the repository root.  It fits scikit-learn
``DecisionTreeClassifier`` (max_depth=None and 12) and ``RandomForestClassifier`` (100 trees)
on 200,000 synthetic rows (``make_classification``, 20 features, seed 0), converts them with
``engine.tree.from_sklearn``, warms the kernels, then times both ``predict`` calls in this
process (best of 5, ``time.perf_counter``).  Both sides are single-threaded: the forest is
timed with ``n_jobs=1`` (our kernels are single-threaded by design).  Prints a markdown
table plus the machine and writes it to ``bench/out/predict.md``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _docs import update_benchmarks  # noqa: E402
from _machine import machine  # noqa: E402  (bench/ is on sys.path when run as a script)
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

from engine.tree import TreeArrays, from_sklearn  # noqa: E402
from engine.warmup import warm_up  # noqa: E402

N_ROWS = 200_000
N_FEATURES = 20
SEED = 0
REPEATS = 5


def best_ms(fn, repeats: int = REPEATS) -> float:
    """Best wall time of ``repeats`` calls, in milliseconds."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main() -> str:
    X, y = make_classification(
        n_samples=N_ROWS,
        n_features=N_FEATURES,
        n_informative=10,
        n_redundant=4,
        n_classes=3,
        flip_y=0.05,
        random_state=SEED,
    )
    X = np.ascontiguousarray(X, dtype=np.float64)
    warm_up()  # every registered kernel, as the app does once per process

    models = [
        (
            "DecisionTreeClassifier(max_depth=None)",
            DecisionTreeClassifier(max_depth=None, random_state=SEED),
        ),
        (
            "DecisionTreeClassifier(max_depth=12)",
            DecisionTreeClassifier(max_depth=12, random_state=SEED),
        ),
        (
            "RandomForestClassifier(100 trees)",
            RandomForestClassifier(n_estimators=100, random_state=SEED, n_jobs=-1),
        ),
    ]
    rows = []
    for name, est in models:
        t0 = time.perf_counter()
        est.fit(X, y)
        fit_s = time.perf_counter() - t0
        if hasattr(est, "n_jobs"):
            est.n_jobs = 1  # time sklearn single-threaded, like our kernel
        ours = from_sklearn(est)
        ours.predict(X[:10])  # first call after conversion
        assert np.array_equal(ours.predict(X), est.predict(X)), name
        nodes = (
            ours.node_count
            if isinstance(ours, TreeArrays)
            else sum(t.node_count for t in ours.trees)
        )
        sk_ms = best_ms(lambda est=est: est.predict(X))
        our_ms = best_ms(lambda ours=ours: ours.predict(X))
        rows.append((name, N_ROWS, nodes, sk_ms, our_ms, our_ms / sk_ms))
        print(
            f"  {name}: fit {fit_s:.1f} s, sklearn {sk_ms:.1f} ms, ours {our_ms:.1f} ms",
            file=sys.stderr,
        )

    lines = [
        f"Predict on {N_ROWS:,} rows x {N_FEATURES} features (make_classification, 3 classes, "
        f"seed {SEED}); best of {REPEATS}; both single-threaded (forest timed with n_jobs=1).",
        "",
        "| model | rows | nodes | sklearn ms | ours ms | ratio (ours/sklearn) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, n, nodes, sk_ms, our_ms, ratio in rows:
        lines.append(f"| {name} | {n:,} | {nodes:,} | {sk_ms:.1f} | {our_ms:.1f} | {ratio:.2f} |")
    lines += ["", f"Machine: {machine()}"]
    table = "\n".join(lines) + "\n"
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "predict.md").write_text(table)
    update_benchmarks("bench_predict.py", table)
    return table


if __name__ == "__main__":
    print(main())
