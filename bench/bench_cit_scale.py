"""Benchmark: conditional inference trees at scale, against R partykit's ``ctree``.

Run ``python bench/bench_cit_scale.py`` from the repository root (``--quick``: n up to
20,000 and smaller budgets).  Needs ``Rscript`` with ``library(partykit)`` (Debian
``r-cran-partykit``) for the ctree columns.

1. Fit time and peak memory at n = 1k, 2k, 5k, 20k, 50k, 200k rows of
   ``make_classification(n, 30, n_informative=10, random_state=0)``, maximum depth 8 (the
   table of issue 20): TreeLab's ``ConditionalInferenceTreeClassifier`` with its defaults
   (ctree's procedure) and with the CIT paper's settings (``PAPER_SETTINGS``: permutation
   tests in both stages), R ``ctree`` with its defaults (``maxdepth = 8``) and in Monte
   Carlo mode (``testtype = "MonteCarlo"``, its default 9,999 resamples).  Every
   measurement runs in a fresh process (ours: Python with the numba cache warm and one
   small warm-up fit; R: one Rscript), on the same rows (R reads them from a CSV); time:
   best of ``--repeats`` fits (``time.perf_counter`` around ``fit``; ``system.time`` around
   the ``ctree`` call in R); memory: the rise of the process's resident set during the
   first fit (Linux ``VmHWM`` after resetting it through ``/proc/self/clear_refs``, minus
   ``VmRSS`` before; the same for both languages).  A method whose projected time at the
   next n (from its last two points' slope) exceeds ``--budget`` seconds is not run there.
   The default tree is also compared with ctree's node by node
   (:func:`engine.cit.partykit.compare_with_ctree`).  Slopes: least squares of log time on
   log n over the measured points.
2. Regression on 50 rows x 2,000 features (issue 14: y = x0 and y = x0 + noise): the
   default tree and the paper's settings.

Prints markdown tables with the machine and the load average (the machine may be shared:
the ratios are measured in the same run) and writes them to ``bench/out/cit_scale.md``; a
full run (no ``--quick``, ``--only`` or ``--methods``) also into its region of
``docs/benchmarks.md`` (``bench/_docs.py``).
``--methods`` runs only some of the four columns (e.g. ``--methods defaults ctree``: ours
with its defaults and ctree with its defaults, the two cheap ones).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _machine import reset_peak, status_mb  # noqa: E402

SIZES = (1_000, 2_000, 5_000, 20_000, 50_000, 200_000)
N_FEATURES = 30
MAX_DEPTH = 8
METHODS = ("ours, defaults (ctree)", "ours, paper settings", "ctree defaults", "ctree MonteCarlo")


def data(n: int):
    from sklearn.datasets import make_classification

    X, y = make_classification(n, N_FEATURES, n_informative=10, random_state=0)
    return np.ascontiguousarray(X), y


def child(method: str, n: int, repeats: int) -> dict:
    """One measurement of our tree in this (fresh) process."""
    import gc

    from engine.cit import PAPER_SETTINGS, ConditionalInferenceTreeClassifier
    from engine.warmup import warm_up

    warm_up()
    X, y = data(n)
    params = dict(max_depth=MAX_DEPTH, random_state=0)
    if method == "paper":
        params.update(PAPER_SETTINGS["classification"])
    ConditionalInferenceTreeClassifier(**params).fit(X[:300], y[:300])  # warm
    best = math.inf
    peak = math.nan
    est = None
    for i in range(repeats):
        gc.collect()
        before = reset_peak()
        t0 = time.perf_counter()
        est = ConditionalInferenceTreeClassifier(**params).fit(X, y)
        best = min(best, time.perf_counter() - t0)
        if i == 0:
            peak = status_mb("VmHWM:") - before
    return {"seconds": best, "peak_mb": peak, "nodes": int(est.tree_.node_count)}


def run_ours(method: str, n: int, repeats: int, timeout: float) -> dict:
    r = subprocess.run(
        [sys.executable, __file__, "--child", method, "--n", str(n), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def slope(ns, ts) -> float:
    ok = [(n, t) for n, t in zip(ns, ts, strict=True) if t and np.isfinite(t) and t > 0]
    if len(ok) < 2:
        return math.nan
    x = np.log([n for n, _ in ok])
    y = np.log([t for _, t in ok])
    return float(np.polyfit(x, y, 1)[0])


def projected(ns_done, ts_done, n_next) -> float:
    """Time at ``n_next`` from the slope of the last two points (at least linear)."""
    if not ts_done:
        return 0.0
    if len(ts_done) < 2:
        return ts_done[-1] * n_next / ns_done[-1]
    k = max(1.0, math.log(ts_done[-1] / ts_done[-2]) / math.log(ns_done[-1] / ns_done[-2]))
    return ts_done[-1] * (n_next / ns_done[-1]) ** k


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def scale_table(
    sizes, repeats: int, budget: float, r_ok: bool, methods=METHODS
) -> tuple[str, list[str], dict]:
    from engine.cit import ConditionalInferenceTreeClassifier
    from engine.cit.partykit import compare_with_ctree, run_ctree

    results = {m: {} for m in METHODS}
    agree = {}
    loads = [load()]
    for n in sizes:
        X, y = data(n)
        reps = repeats if n <= 20_000 else 1
        for method in METHODS:
            done = results[method]
            if method not in methods:
                done[n] = {"seconds": math.nan, "skipped": "not asked for (--methods)"}
                continue
            ns = sorted(done)
            ts = [done[k]["seconds"] for k in ns]
            if any(not np.isfinite(t) for t in ts):
                done[n] = {"seconds": math.nan, "skipped": "an earlier n was skipped"}
                continue
            guess = projected(ns, ts, n)
            if guess > budget:
                done[n] = {"seconds": math.nan, "skipped": f"projected {guess:,.0f} s"}
                print(f"{n} {method}: skipped (projected {guess:.0f} s)", file=sys.stderr)
                continue
            if method.startswith("ours"):
                kind = "default" if "defaults" in method else "paper"
                done[n] = run_ours(kind, n, reps if kind == "default" else 1, 10 * budget)
            elif not r_ok:
                done[n] = {"seconds": math.nan, "skipped": "no Rscript/partykit"}
                continue
            else:
                mc = method.endswith("MonteCarlo")
                r = run_ctree(
                    X,
                    y,
                    "classification",
                    maxdepth=MAX_DEPTH,
                    testtype="MonteCarlo" if mc else "Bonferroni",
                    repeats=1 if mc else reps,
                    nodes=not mc,
                    timeout=10 * budget,
                )
                done[n] = {"seconds": r["seconds"], "peak_mb": r["peak_mb"], "nodes": r["n_nodes"]}
                if not mc:
                    est = ConditionalInferenceTreeClassifier(max_depth=MAX_DEPTH, random_state=0)
                    out = compare_with_ctree(est.fit(X, y), X, r["nodes"])
                    agree[n] = out
            print(f"{n} {method}: {done[n]}", file=sys.stderr, flush=True)
        loads.append(load())
    head = (
        "| n rows x 30 | "
        + " | ".join(f"{n:,}" for n in sizes)
        + " | log-log slope |\n|---|"
        + "---:|" * (len(sizes) + 1)
    )
    rows = []
    for method in methods:
        cells = []
        for n in sizes:
            r = results[method][n]
            if np.isfinite(r["seconds"]):
                cells.append(f"{r['seconds']:.2f} s ({r.get('nodes', '?')})")
            else:
                cells.append(f"not run ({r['skipped']})")
        ns = [n for n in sizes if np.isfinite(results[method][n]["seconds"])]
        k = slope(ns, [results[method][n]["seconds"] for n in ns])
        rows.append(f"| {method}: s (nodes) | " + " | ".join(cells) + f" | {k:.2f} |")
    for method in methods:
        cells = []
        for n in sizes:
            r = results[method][n]
            mb = r.get("peak_mb", math.nan)
            cells.append(f"{mb:.1f}" if np.isfinite(mb) else "-")
        rows.append(f"| {method}: peak MiB | " + " | ".join(cells) + " | |")
    base = results["ctree defaults"]
    for method in [m for m in METHODS[:2] if m in methods]:
        cells = []
        for n in sizes:
            a, b = results[method][n]["seconds"], base[n]["seconds"]
            cells.append(f"{a / b:.2f}" if np.isfinite(a) and np.isfinite(b) else "-")
        rows.append(f"| {method} / ctree defaults (time) | " + " | ".join(cells) + " | |")
    if "ctree MonteCarlo" in methods:
        cells = []
        for n in sizes:
            a, b = results["ours, defaults (ctree)"][n]["seconds"], results["ctree MonteCarlo"][n]
            ok = np.isfinite(a) and np.isfinite(b["seconds"])
            cells.append(f"{b['seconds'] / a:.0f}x" if ok else "-")
        rows.append("| ctree MonteCarlo / ours defaults (time) | " + " | ".join(cells) + " | |")
    cells = []
    for n in sizes:
        out = agree.get(n)
        cells.append(
            "-"
            if out is None
            else ("same tree" if not out["mismatches"] else f"{len(out['mismatches'])} differ")
        )
    rows.append("| ours defaults vs ctree defaults: trees | " + " | ".join(cells) + " | |")
    return "\n".join([head] + rows), loads, {"results": results, "agree": agree}


def wide_table(repeats: int, budget: float) -> str:
    from engine.cit import PAPER_SETTINGS, ConditionalInferenceTreeRegressor
    from engine.warmup import warm_up

    warm_up()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2000))
    rows = []
    for target, y in (("y = x0", X[:, 0].copy()), ("noisy", X[:, 0] + 0.5 * rng.normal(size=50))):
        for label, params in (
            ("defaults (ctree)", {}),
            ("paper settings", PAPER_SETTINGS["regression"]),
        ):
            ConditionalInferenceTreeRegressor(**params).fit(X[:, :50], y)  # warm
            best = math.inf
            for _ in range(repeats if label.startswith("defaults") else 1):
                t0 = time.perf_counter()
                est = ConditionalInferenceTreeRegressor(random_state=0, **params).fit(X, y)
                best = min(best, time.perf_counter() - t0)
            t = est.tree_
            rows.append(
                f"| {target} | {label} | {best:.2f} | {t.node_count} | "
                f"{'x0' if t.feature[0] == 0 else ('leaf' if t.feature[0] < 0 else t.feature[0])} |"
            )
            print(rows[-1], file=sys.stderr, flush=True)
    head = "| y | settings | fit s | nodes | root split |\n|---|---|---:|---:|---|"
    return "\n".join([head] + rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per measurement")
    ap.add_argument("--only", nargs="*", choices=("scale", "wide"), default=("scale", "wide"))
    ap.add_argument(
        "--methods",
        nargs="*",
        choices=("defaults", "paper", "ctree", "montecarlo"),
        default=("defaults", "paper", "ctree", "montecarlo"),
        help="which of the four columns to run (in METHODS' order)",
    )
    ap.add_argument("--child", choices=("default", "paper"))
    ap.add_argument("--n", type=int)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n, args.repeats)))
        return
    from _machine import machine

    from engine.cit.partykit import have_partykit

    r_ok = have_partykit()
    sizes = SIZES[:4] if args.quick else SIZES
    budget = 60.0 if args.quick else args.budget
    t0 = time.perf_counter()
    parts = []
    if "scale" in args.only:
        keys = ("defaults", "paper", "ctree", "montecarlo")
        methods = tuple(m for k, m in zip(keys, METHODS, strict=True) if k in args.methods)
        table, loads, _ = scale_table(sizes, args.repeats, budget, r_ok, methods)
        parts.append(
            "### Fit time and peak memory, maximum depth 8\n\n" + table + "\n\n"
            f"Load average (1 / 5 / 15 min) before and after each n: {' -> '.join(loads)}."
        )
    if "wide" in args.only:
        parts.append(
            "### Regression, 50 rows x 2,000 features\n\n" + wide_table(args.repeats, budget)
        )
    text = "\n\n".join(parts) + (
        f"\n\n{machine()}; R partykit via Rscript: {'yes' if r_ok else 'no'}. "
        f"Whole run {time.perf_counter() - t0:.0f} s.\n"
    )
    print(text)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "cit_scale.md").write_text(text)
    if not args.quick and len(args.only) == 2 and len(args.methods) == 4:
        from _docs import update_benchmarks

        update_benchmarks("bench_cit_scale.py", text)


if __name__ == "__main__":
    main()
