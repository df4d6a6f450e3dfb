"""Benchmark: cost curves of every method from 1,000 to 200,000 rows, each against its peer.

Run ``python bench/bench_scale.py`` from the repository root (``--quick``: n up to 20,000
and a 60 s budget; ``--pairs cart treegrad``: only some pairs).  Issue 20 point 1.

For each pair (ours / the peer a user would pick) and each n in 1k, 2k, 5k, 20k, 50k, 200k:

* **CART**, depth 8, ``make_classification(n, 30, n_informative=10, random_state=0)``:
  ``engine.cart.CARTClassifier(max_depth=8)`` / scikit-learn's ``DecisionTreeClassifier``.
* **Literati**, depth 2, ``max_breakpoints=2``, default candidate thresholds, the same
  classification rows: ``LiteratiClassifier`` (time to proof, ``time_limit`` = the budget)
  / pystreed's ``STreeDClassifier`` (depth 2, its own binarisation of the continuous
  columns, cost-complexity as in ``bench/bench_literati.py``).  Both solve their own
  problem optimally; the column says whether Literati proved optimality in time.
* **Partition Tree**, 32 leaves, ``make_regression(n, 30, n_informative=10, noise=10,
  random_state=0)``: ``PartitionTreeRegressor`` / the reference ``partition-tree`` package
  (``partition_tree.sklearn.PartitionTreeRegressor``, from the environment or the folder
  named by ``PARTITION_TREE_PATH``; see ``bench/bench_partition.py`` for its install).
* **TreeGrad**, explain: Shapley values of 200 rows for a scikit-learn
  ``DecisionTreeRegressor(min_samples_leaf=5)`` fitted on the n regression rows (its
  leaves grow with n): ``engine.treegrad.shapley`` / ``shap.TreeExplainer.shap_values``.
* **Conditional inference**, depth 8, classification rows:
  ``ConditionalInferenceTreeClassifier`` with its defaults (ctree's procedure) / R
  ``partykit::ctree`` with its defaults (Rscript; ``bench/bench_cit_scale.py`` has the
  Monte Carlo mode and the paper's settings too).

Every measurement runs in a fresh process (numba cache warm, one small warm-up fit):
time = best of ``--repeats`` runs (one above 20,000 rows), peak memory = the rise of the
process's resident set during the first run (Linux ``VmHWM`` after resetting it through
``/proc/self/clear_refs``, minus ``VmRSS`` before; R's via ``run_ctree``).  A side whose
projected time at the next n (slope of its last two points) exceeds ``--budget`` seconds
is not run there.  Slopes: least squares of log time on log n over the measured points
(1 = linear; n log n reads about 1.1 over this range).

Prints markdown tables with the machine and the load averages (the ratios are measured in
the same run, side by side, so a shared machine slows both sides alike), writes them to
``bench/out/scale.md`` and the log-log figure to ``docs/images/scale.png`` (matplotlib);
a full run (no ``--quick``, all pairs) also replaces its region of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _machine import reset_peak, status_mb  # noqa: E402

SIZES = (1_000, 2_000, 5_000, 20_000, 50_000, 200_000)
N_FEATURES = 30
EXPLAINED_ROWS = 200
PAIRS = {
    "cart": ("CART depth 8", "TreeLab CARTClassifier", "scikit-learn DecisionTreeClassifier"),
    "literati": ("Literati depth 2 (time to proof)", "TreeLab LiteratiClassifier", "pystreed"),
    "partition": ("Partition Tree 32 leaves", "TreeLab PartitionTreeRegressor", "partition-tree"),
    "treegrad": (
        f"Shapley values of {EXPLAINED_ROWS} rows",
        "TreeLab treegrad.shapley",
        "shap TreeExplainer",
    ),
    "cit": ("Conditional inference depth 8", "TreeLab defaults (ctree procedure)", "R ctree"),
}
STREED_PENALTY = 0.005  # as bench/bench_literati.py: a split costs 0.01 n misclassifications


def classification(n: int):
    from sklearn.datasets import make_classification

    X, y = make_classification(n, N_FEATURES, n_informative=10, random_state=0)
    return np.ascontiguousarray(X), y


def regression(n: int):
    from sklearn.datasets import make_regression

    X, y = make_regression(n, N_FEATURES, n_informative=10, noise=10.0, random_state=0)
    return np.ascontiguousarray(X), y


def _side(pair: str, ours: bool, n: int):
    """``(warm-up callable, measured callable, detail callable)`` of one side of a pair."""
    if pair == "cart":
        X, y = classification(n)
        if ours:
            from engine.cart import CARTClassifier

            return (
                lambda: CARTClassifier(max_depth=8).fit(X[:300], y[:300]),
                lambda: CARTClassifier(max_depth=8).fit(X, y),
                lambda m: f"{m.tree_.node_count} nodes",
            )
        from sklearn.tree import DecisionTreeClassifier

        return (
            lambda: DecisionTreeClassifier(max_depth=8).fit(X[:300], y[:300]),
            lambda: DecisionTreeClassifier(max_depth=8).fit(X, y),
            lambda m: f"{m.tree_.node_count} nodes",
        )
    if pair == "literati":
        X, y = classification(n)
        if ours:
            from engine.literati import LiteratiClassifier

            budget = float(os.environ.get("TREELAB_BENCH_BUDGET", "300"))
            return (
                lambda: LiteratiClassifier(max_depth=1, time_limit=5).fit(X[:300], y[:300]),
                lambda: LiteratiClassifier(max_depth=2, max_breakpoints=2, time_limit=budget).fit(
                    X, y
                ),
                lambda m: "proven" if m.proven_optimal_ else "not proven",
            )
        from pystreed import STreeDClassifier

        def streed():
            return STreeDClassifier(
                optimization_task="cost-complex-accuracy",
                max_depth=2,
                cost_complexity=2 * STREED_PENALTY,
            )

        return (
            lambda: streed().fit(X[:300], y[:300]),
            lambda: streed().fit(X, y),
            lambda m: f"{m.get_n_leaves()} leaves",
        )
    if pair == "partition":
        X, y = regression(n)
        if ours:
            from engine.partition import PartitionTreeRegressor

            cls = PartitionTreeRegressor
        else:
            if os.environ.get("PARTITION_TREE_PATH"):
                sys.path.append(os.environ["PARTITION_TREE_PATH"])
            from partition_tree.sklearn import PartitionTreeRegressor as cls
        return (
            lambda: cls(max_leaves=32).fit(X[:300], y[:300]),
            lambda: cls(max_leaves=32).fit(X, y),
            lambda m: "",
        )
    if pair == "treegrad":
        from sklearn.tree import DecisionTreeRegressor

        X, y = regression(n)
        model = DecisionTreeRegressor(min_samples_leaf=5, random_state=0).fit(X, y)
        rows = X[:EXPLAINED_ROWS]
        leaves = f"{model.get_n_leaves()} leaves"
        if ours:
            import engine.treegrad as treegrad
            from engine.tree import from_sklearn

            tree = from_sklearn(model)
            return (
                lambda: treegrad.shapley(tree, rows[:5]),
                lambda: treegrad.shapley(from_sklearn(model), rows),
                lambda _: leaves,
            )
        import shap

        return (
            lambda: shap.TreeExplainer(model).shap_values(rows[:5]),
            lambda: shap.TreeExplainer(model).shap_values(rows),
            lambda _: leaves,
        )
    if pair == "cit" and ours:
        from engine.cit import ConditionalInferenceTreeClassifier

        X, y = classification(n)
        return (
            lambda: ConditionalInferenceTreeClassifier(max_depth=8).fit(X[:300], y[:300]),
            lambda: ConditionalInferenceTreeClassifier(max_depth=8, random_state=0).fit(X, y),
            lambda m: f"{m.tree_.node_count} nodes",
        )
    raise ValueError(f"no side {pair!r} ours={ours}")


def child(pair: str, ours: bool, n: int, repeats: int) -> dict:
    """One measurement of one side in this (fresh) process."""
    import gc

    warnings.simplefilter("ignore")
    if ours:
        from engine.warmup import warm_up

        warm_up()
    warm, run, detail = _side(pair, ours, n)
    warm()
    best, peak, result = math.inf, math.nan, None
    for i in range(repeats):
        gc.collect()
        before = reset_peak()
        t0 = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - t0)
        if i == 0:
            peak = status_mb("VmHWM:") - before
    return {"seconds": best, "peak_mb": peak, "detail": detail(result)}


def measure(pair: str, ours: bool, n: int, repeats: int, budget: float) -> dict:
    if pair == "cit" and not ours:
        from engine.cit.partykit import run_ctree

        X, y = classification(n)
        r = run_ctree(X, y, "classification", maxdepth=8, repeats=repeats, nodes=False)
        return {"seconds": r["seconds"], "peak_mb": r["peak_mb"], "detail": f"{r['n_nodes']} nodes"}
    env = {**os.environ, "TREELAB_BENCH_BUDGET": str(budget)}
    args = ["--child", pair, "--side", "ours" if ours else "peer", "--n", str(n)]
    done = subprocess.run(
        [sys.executable, __file__, *args, "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        timeout=10 * budget + 120,
        cwd=ROOT,
        env=env,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"seconds": math.nan, "skipped": last[:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def slope(ns, ts) -> float:
    ok = [(n, t) for n, t in zip(ns, ts, strict=True) if np.isfinite(t) and t > 0]
    if len(ok) < 2:
        return math.nan
    return float(np.polyfit(np.log([n for n, _ in ok]), np.log([t for _, t in ok]), 1)[0])


def projected(points: dict, n_next: int) -> float:
    """Time at ``n_next`` from the slope of the last two measured points (at least linear)."""
    ns = [n for n in sorted(points) if np.isfinite(points[n]["seconds"])]
    if not ns:
        return 0.0
    t_last = points[ns[-1]]["seconds"]
    if len(ns) < 2:
        return t_last * n_next / ns[-1]
    t_prev = points[ns[-2]]["seconds"]
    k = max(1.0, math.log(max(t_last, 1e-9) / max(t_prev, 1e-9)) / math.log(ns[-1] / ns[-2]))
    return t_last * (n_next / ns[-1]) ** k


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def run_pair(pair: str, sizes, repeats: int, budget: float, r_ok: bool) -> dict:
    out = {"ours": {}, "peer": {}, "loads": [_load()]}
    for n in sizes:
        reps = repeats if n <= 20_000 else 1
        for side in ("ours", "peer"):
            points = out[side]
            if any(not np.isfinite(p["seconds"]) for p in points.values()):
                points[n] = {"seconds": math.nan, "skipped": "an earlier n was not run"}
                continue
            guess = projected(points, n)
            if guess > budget:
                points[n] = {"seconds": math.nan, "skipped": f"projected {guess:,.0f} s"}
            elif pair == "cit" and side == "peer" and not r_ok:
                points[n] = {"seconds": math.nan, "skipped": "no Rscript with partykit"}
            else:
                points[n] = measure(pair, side == "ours", n, reps, budget)
            print(f"{pair} {side} n={n}: {points[n]}", file=sys.stderr, flush=True)
        out["loads"].append(_load())
    return out


def _cell(point: dict) -> str:
    if not np.isfinite(point["seconds"]):
        return f"not run ({point['skipped']})"
    detail = f" ({point['detail']})" if point.get("detail") else ""
    return f"{point['seconds']:.3g} s{detail}"


def table(results: dict, sizes) -> str:
    head = (
        "| method | "
        + " | ".join(f"{n:,}" for n in sizes)
        + " | log-log slope |\n|---|"
        + "---:|" * (len(sizes) + 1)
    )
    rows = []
    for pair, res in results.items():
        title, ours_name, peer_name = PAIRS[pair]
        for side, name in (("ours", ours_name), ("peer", peer_name)):
            pts = res[side]
            k = slope(list(sizes), [pts[n]["seconds"] for n in sizes])
            cells = " | ".join(_cell(pts[n]) for n in sizes)
            rows.append(f"| {title}: {name} | {cells} | {k:.2f} |")
        ratio = []
        for n in sizes:
            a, b = res["ours"][n]["seconds"], res["peer"][n]["seconds"]
            ratio.append(f"{a / b:.2f}" if np.isfinite(a) and np.isfinite(b) and b > 0 else "-")
        rows.append(f"| {title}: time ours / peer | " + " | ".join(ratio) + " | |")
        for side, name in (("ours", ours_name), ("peer", peer_name)):
            mb = [res[side][n].get("peak_mb", math.nan) for n in sizes]
            rows.append(
                f"| {title}: {name}, peak MiB | "
                + " | ".join(f"{m:.0f}" if np.isfinite(m) else "-" for m in mb)
                + " | |"
            )
    return "\n".join([head] + rows)


def figure(results: dict, sizes, path: Path) -> None:
    """Log-log time against n, one panel per pair (ours solid, the peer dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(3, len(results))
    rows = math.ceil(len(results) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.0 * columns, 4.0 * rows), squeeze=False)
    for ax in axes.flat[len(results) :]:
        ax.set_visible(False)
    for ax, (pair, res) in zip(axes.flat, results.items(), strict=False):
        title, ours_name, peer_name = PAIRS[pair]
        for side, name, style in (("ours", ours_name, "o-"), ("peer", peer_name, "s--")):
            ns = [n for n in sizes if np.isfinite(res[side][n]["seconds"])]
            ax.loglog(ns, [res[side][n]["seconds"] for n in ns], style, label=name)
        ax.set_title(title, fontsize=13)
        ax.set_xlabel("training rows n", fontsize=12)
        ax.set_ylabel("time (s)", fontsize=12)
        ax.tick_params(labelsize=11)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per measurement")
    ap.add_argument("--pairs", nargs="*", choices=tuple(PAIRS), default=tuple(PAIRS))
    ap.add_argument("--child", choices=tuple(PAIRS))
    ap.add_argument("--side", choices=("ours", "peer"))
    ap.add_argument("--n", type=int)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.side == "ours", args.n, args.repeats)))
        return
    from _machine import machine

    from engine.cit.partykit import have_partykit

    sizes = SIZES[:4] if args.quick else SIZES
    budget = 60.0 if args.quick else args.budget
    t0 = time.perf_counter()
    r_ok = have_partykit()
    results = {p: run_pair(p, sizes, args.repeats, budget, r_ok) for p in args.pairs}
    loads = "; ".join(f"{p}: {' -> '.join(r['loads'])}" for p, r in results.items())
    text = (
        "### Time and peak memory from 1,000 to 200,000 rows\n\n"
        + table(results, sizes)
        + "\n\n![log-log time against rows](images/scale.png)\n\n"
        + f"Load average (1 / 5 / 15 min) before and after each n: {loads}.\n\n"
        + f"{machine()}. Whole run {time.perf_counter() - t0:.0f} s.\n"
    )
    print(text)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "scale.md").write_text(text)
    (out / "scale.json").write_text(json.dumps(results, default=float))
    full = not args.quick and set(args.pairs) == set(PAIRS)
    figure(results, sizes, (ROOT / "docs" / "images" if full else out) / "scale.png")
    if full:
        from _docs import update_benchmarks

        update_benchmarks("bench_scale.py", text)


if __name__ == "__main__":
    main()
