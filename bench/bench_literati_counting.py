"""Benchmark: Literati depth 2 and 3 with ``candidate_scope='root'`` (the counting solvers)
from 1,000 to 200,000 rows, against pystreed on the same binarisation, in one process.

Run ``python bench/bench_literati_counting.py`` from the repository root (``--quick``: n up
to 20,000).  Issue 20 point 3.

Rows: ``make_classification(n, 30, n_informative=10, random_state=0)``, depth 2,
lambda = alpha = 0.005 n (the defaults), root candidates ``candidate_leaves=8`` (the
default top B_d: up to 7 thresholds per feature from a univariate CART on all rows).

* **ours, K_max = 1 / 2, root scope**: ``LiteratiClassifier(max_depth=2,
  candidate_scope='root')``, fit time (proof included).
* **pystreed, K_max = 1**: ``STreeDClassifier(max_depth=2, cost_complexity=(lambda +
  alpha) / n)`` on the 0/1 columns ``x_j <= t`` for the same thresholds ``t``: the same
  problem, so its objective must equal ours at K_max = 1 (the column says so); the
  binarisation's time is not counted.
* **ours, K_max = 2, state scope** (the paper's space, every state its own CART
  candidates), up to 20,000 rows: what the counting solver replaces.

Depth 3 (n = 2,000 to 50,000; ``run_depth3``): ours at K_max = 1 and 2 with the default
time limit, pystreed ``max_depth=3`` at K_max = 1 on the same columns, and the graph search
the depth-3 kernel replaced (forced), same limit.

Depth 4 (``--depth4 SECONDS``, printed only): breast_cancer, ours at K_max = 1 and 2 and
pystreed at K_max = 1 on the same columns, wall and CPU seconds at that time limit, and for
ours the depth-3 kernel calls (their number and CPU seconds; deterministic counts are
better evidence than seconds on a loaded machine).  ``--kmax 2`` runs ours at that K_max
only (no pystreed).  ``--scope state`` runs ours in the default scope instead (every state
its own candidates, B_d = (8, 4); no pystreed, which has no such space): the AO* iterations,
the depth-2 kernel calls and their depth-1 solves (deterministic) with their CPU seconds,
the lower bound and the gap.

Time: best of ``--repeats`` runs (one above 20,000 rows) after a warm-up fit; the ratio is
pystreed / ours at K_max = 1 (above 1: ours is faster).  Prints a markdown table with the
machine and the load averages and, on a full run, replaces its region of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SIZES = (1_000, 5_000, 20_000, 50_000, 200_000)
LEAVES = 8


def _best_of(model, X, y, repeats: int):
    """Best fit time (s) of ``model`` on ``(X, y)`` over ``repeats`` fits, and the last fit."""
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = model.fit(X, y)
        best = min(best, time.perf_counter() - t0)
    return best, out


def _binarise(X, thresholds):
    return np.column_stack(
        [(X[:, j] <= t).astype(np.int64) for j in range(X.shape[1]) for t in thresholds[j]]
    )


def run(sizes, repeats: int) -> str:
    from pystreed import STreeDClassifier
    from sklearn.datasets import make_classification

    from engine.literati import LiteratiClassifier
    from engine.literati import _kernels as kernels

    def ours(kmax, scope, limit=600.0):
        return LiteratiClassifier(
            max_depth=2,
            max_breakpoints=kmax,
            candidate_leaves=(LEAVES, 4),
            candidate_scope=scope,
            time_limit=limit,
        )

    X0, y0 = make_classification(300, 30, n_informative=10, random_state=1)
    for scope in ("root", "state"):
        ours(2, scope).fit(X0, y0)
    # large states sort in parallel (another kernel): warm it too, as the app's warm-up does
    X0, y0 = make_classification(40_000, 30, n_informative=10, random_state=1)
    ours(1, "root").fit(X0, y0)
    rows = []
    for n in sizes:
        X, y = make_classification(n, 30, n_informative=10, random_state=0)
        X = np.ascontiguousarray(X)
        reps = repeats if n <= 20_000 else 1
        lam = alpha = 0.005 * n
        t1, m1 = _best_of(ours(1, "root"), X, y, reps)
        t2, m2 = _best_of(ours(2, "root"), X, y, reps)
        # the thresholds the root scope used: the root's candidates (B_0 = 8)
        XT = np.ascontiguousarray(X.T)
        idx = np.arange(n, dtype=np.int64)
        off, vals, _ = kernels.state_candidates(
            XT, y.astype(np.int64), kernels.sort_orders(XT, idx), 2, LEAVES
        )
        thresholds = [vals[off[j] : off[j + 1]] for j in range(X.shape[1])]
        Xb = _binarise(X, thresholds)
        streed = STreeDClassifier(
            optimization_task="cost-complex-accuracy",
            max_depth=2,
            cost_complexity=(lam + alpha) / n,
            time_limit=600,
        )
        ts, ms = _best_of(streed, Xb, y, reps)
        s_obj = float((ms.predict(Xb) != y).sum() + (lam + alpha) * (ms.get_n_leaves() - 1))
        same = "yes" if abs(s_obj - m1.objective_) < 1e-6 else f"no ({s_obj:.1f})"
        if n <= 20_000:
            t3, m3 = _best_of(ours(2, "state"), X, y, 1)
            state = f"{t3:.2f} ({'proven' if m3.proven_optimal_ else 'not proven'})"
        else:
            state = "not run"
        rows.append(
            f"| {n:,} | {t1:.3f} | {ts:.3f} | {ts / t1:.1f}x | {same} | {t2:.3f} "
            f"| {m2.objective_:.1f} ({'proven' if m2.proven_optimal_ else 'not proven'}) "
            f"| {state} |"
        )
        print(rows[-1], flush=True)
    from _machine import load_note, machine

    head = (
        "Depth 2 on `make_classification(n, 30, n_informative=10, random_state=0)`, "
        "lambda = alpha = 0.005 n, root candidates B_0 = 8 (`candidate_scope='root'`: every "
        "state uses the root's thresholds; the depth-2 problem is solved from class counts). "
        "pystreed solves the same K_max = 1 problem on the same thresholds (0/1 columns; "
        "binarisation not timed): equal objectives are checked in the 'same optimum' column. "
        "Seconds, best of "
        f"{repeats} up to 20,000 rows, then one run; the state scope (the paper's space) "
        "is one run.\n\n"
        "| n | ours K_max=1 (s) | pystreed K_max=1 (s) | pystreed / ours | same optimum "
        "| ours K_max=2 (s) | K_max=2 objective | state scope K_max=2 (s) |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    return f"{head}\n" + "\n".join(rows) + f"\n\nMachine: {machine()}\n\n{load_note()}\n"


DEPTH3_SIZES = (2_000, 5_000, 20_000, 50_000)


def run_depth3(sizes, repeats: int) -> str:
    """Depth 3, root scope: ours (the depth-3 counting kernel) at K_max = 1 and 2 within
    the default time limit (20 s), pystreed at K_max = 1 on the same thresholds, and the
    graph search the kernel replaces (the AO* root over depth-2 children counted one by
    one, forced by ``expansion._D3_BYTES = 0``) with the same 20 s limit."""
    from pystreed import STreeDClassifier
    from sklearn.datasets import make_classification

    from engine.literati import LiteratiClassifier, expansion
    from engine.literati import _kernels as kernels

    def ours(kmax):
        return LiteratiClassifier(
            max_depth=3, max_breakpoints=kmax, candidate_leaves=(LEAVES, 4), candidate_scope="root"
        )

    def graph(kmax, X, y):
        kernel_bytes = expansion._D3_BYTES
        expansion._D3_BYTES = 0
        try:
            t, m = _best_of(ours(kmax), X, y, 1)
        finally:
            expansion._D3_BYTES = kernel_bytes
        return (
            f"{t:.1f} ({'proven' if m.proven_optimal_ else f'not proven, LB {m.lower_bound_:.0f}'})"
        )

    X0, y0 = make_classification(300, 30, n_informative=10, random_state=1)
    for kmax in (1, 2):
        ours(kmax).fit(X0, y0)
    X0, y0 = make_classification(2_000, 30, n_informative=10, random_state=1)
    graph(1, X0, y0)
    rows = []
    for n in sizes:
        X, y = make_classification(n, 30, n_informative=10, random_state=0)
        X = np.ascontiguousarray(X)
        reps = repeats if n <= 20_000 else 1
        lam = alpha = 0.005 * n
        t1, m1 = _best_of(ours(1), X, y, reps)
        t2, m2 = _best_of(ours(2), X, y, reps)
        XT = np.ascontiguousarray(X.T)
        idx = np.arange(n, dtype=np.int64)
        off, vals, _ = kernels.state_candidates(
            XT, y.astype(np.int64), kernels.sort_orders(XT, idx), 2, LEAVES
        )
        Xb = _binarise(X, [vals[off[j] : off[j + 1]] for j in range(X.shape[1])])
        streed = STreeDClassifier(
            optimization_task="cost-complex-accuracy",
            max_depth=3,
            cost_complexity=(lam + alpha) / n,
            time_limit=600,
        )
        ts, ms = _best_of(streed, Xb, y, reps)
        s_obj = float((ms.predict(Xb) != y).sum() + (lam + alpha) * (ms.get_n_leaves() - 1))
        same = "yes" if abs(s_obj - m1.objective_) < 1e-6 else f"no ({s_obj:.1f})"
        g1 = graph(1, X, y) if n <= 20_000 else "not run"
        g2 = graph(2, X, y) if n <= 5_000 else "not run"

        def proof(m):
            return "proven" if m.proven_optimal_ else f"not proven, LB {m.lower_bound_:.0f}"

        rows.append(
            f"| {n:,} | {t1:.2f} ({proof(m1)}) | {ts:.2f} | {ts / t1:.1f}x | {same} "
            f"| {t2:.2f} ({proof(m2)}) | {m2.objective_:.1f} | {g1} | {g2} |"
        )
        print(rows[-1], flush=True)
    return (
        "Depth 3 on the same rows and candidates, `LiteratiClassifier(max_depth=3, "
        "candidate_scope='root')` with its default time limit (20 s): one triple histogram "
        "per root feature, every root shape's two depth-2 children solved from class counts "
        "(`solve_depth3_counting`). pystreed: `max_depth=3` on the same 0/1 columns. 'Graph "
        "search': the method it replaces (the AO* root with its depth-2 children counted one "
        "by one), same 20 s limit, one run. Seconds, best of "
        f"{repeats} up to 20,000 rows, then one run.\n\n"
        "| n | ours K_max=1 (s) | pystreed K_max=1 (s) | pystreed / ours | same optimum "
        "| ours K_max=2 (s) | K_max=2 objective | graph search K_max=1 (s) "
        "| graph search K_max=2 (s) |\n"
        "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


class _KernelCalls:
    """Counts the depth-3 kernel calls of a fit (calls that ran the kernel, and their CPU
    seconds by ``time.process_time``, every thread of this process) by wrapping
    :meth:`engine.literati.expansion.StateExpansion._solve_d3` for the duration of a
    ``with`` block."""

    def __enter__(self):
        from engine.literati import expansion

        self.calls, self.cpu = 0, 0.0
        self._cls = expansion.StateExpansion
        self._orig = original = self._cls._solve_d3
        counter = self

        def counted(search, st, budget):
            c0, before = time.process_time(), search.expanded
            original(search, st, budget)
            if search.expanded > before:
                counter.calls += 1
                counter.cpu += time.process_time() - c0

        self._cls._solve_d3 = counted
        return self

    def __exit__(self, *exc):
        self._cls._solve_d3 = self._orig
        return False


class _Depth2Calls:
    """Counts the depth-2 kernel calls of a fit (:func:`engine.literati._depth2_kernels.
    solve_depth2` as the search reaches it), their depth-1 solves and their CPU seconds
    (every thread of this process), for the duration of a ``with`` block."""

    def __enter__(self):
        from engine.literati import _depth2_kernels

        self.calls, self.solves, self.cpu = 0, 0, 0.0
        self._module = _depth2_kernels
        self._orig = original = _depth2_kernels.solve_depth2
        counter = self

        def counted(*args):
            c0 = time.process_time()
            out = original(*args)
            counter.cpu += time.process_time() - c0
            counter.calls += 1
            counter.solves += int(out[5])
            return out

        _depth2_kernels.solve_depth2 = counted
        return self

    def __exit__(self, *exc):
        self._module.solve_depth2 = self._orig
        return False


def run_depth4_state(limit: float, kmaxes=(1, 2)) -> str:
    """breast_cancer at depth 4 in the default scope (each state its own candidates, B_d =
    (8, 4), lambda = alpha = 0.005 n), ours at each K_max with the time limit ``limit``:
    wall and CPU seconds, AO* iterations, depth-2 kernel calls, their depth-1 solves and
    CPU seconds, the bounds and the gap at the end."""
    from sklearn.datasets import load_breast_cancer

    from engine.literati import LiteratiClassifier
    from engine.warmup import warm_up

    X, y = load_breast_cancer(return_X_y=True)
    X = np.ascontiguousarray(X)
    warm_up()
    rows = []
    for kmax in kmaxes:
        est = LiteratiClassifier(max_depth=4, max_breakpoints=kmax, time_limit=limit)
        t0, c0 = time.perf_counter(), time.process_time()
        with _Depth2Calls() as calls:
            search = est.start(X, y)
            while not search.step(0.5):
                pass
            m = search.finish()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        eng = search.engine
        gap = 100 * (m.objective_ - m.lower_bound_) / m.objective_
        state = "proven" if m.proven_optimal_ else f"not proven, gap {gap:.1f} %"
        rows.append(
            f"| ours, K_max = {kmax} | {wall:.1f} | {cpu:.1f} | {m.objective_:.2f} | "
            f"{m.lower_bound_:.2f} | {state} | {eng.iterations:,} | {calls.calls:,} | "
            f"{calls.solves:,} | {calls.cpu:.1f} |"
        )
        print(rows[-1], flush=True)
    return (
        f"breast_cancer (569 x 30) at depth 4, default scope (B_d = (8, 4)), lambda = alpha "
        f"= 0.005 n, time limit {limit:g} s.\n\n"
        "| solver | wall s | CPU s | objective | lower bound | result | AO* iterations | "
        "depth-2 calls | their depth-1 solves | their CPU s |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def run_depth4(limit: float, kmaxes=(1, 2), streed: bool = True) -> str:
    """breast_cancer at depth 4, root scope (B_0 = 8, lambda = alpha = 0.005 n): ours at
    K_max = 1 and 2 (the AO* root over three-level states solved by the depth-3 kernel) and
    pystreed at K_max = 1 on the same 0/1 columns, each with the time limit ``limit``;
    wall and CPU seconds (CPU: every thread of this process), the proof or the gap."""
    from pystreed import STreeDClassifier
    from sklearn.datasets import load_breast_cancer

    from engine.literati import LiteratiClassifier
    from engine.literati import _kernels as kernels

    X, y = load_breast_cancer(return_X_y=True)
    X = np.ascontiguousarray(X)
    n = X.shape[0]
    lam = 0.005 * n
    LiteratiClassifier(max_depth=3, candidate_scope="root", candidate_leaves=LEAVES).fit(
        X[:200], y[:200]
    )  # warm-up: the kernels load from the cache
    rows = []
    for kmax in kmaxes:
        t0, c0 = time.perf_counter(), time.process_time()
        with _KernelCalls() as calls:
            m = LiteratiClassifier(
                max_depth=4,
                max_breakpoints=kmax,
                candidate_leaves=(LEAVES, 4),
                candidate_scope="root",
                time_limit=limit,
            ).fit(X, y)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        state = "proven" if m.proven_optimal_ else f"not proven, LB {m.lower_bound_:.2f}"
        rows.append(
            f"| ours, K_max = {kmax} | {wall:.1f} | {cpu:.1f} | {m.objective_:.2f} | {state} "
            f"| {calls.calls} | {calls.cpu:.1f} |"
        )
        print(rows[-1], flush=True)
    header = (
        "| solver | wall s | CPU s | objective | result | depth-3 calls | their CPU s |\n"
        "|---|---|---|---|---|---|---|\n"
    )
    if not streed:
        return (
            f"breast_cancer (569 x 30) at depth 4, root candidates B_0 = {LEAVES}, "
            f"lambda = alpha = 0.005 n, time limit {limit:g} s.\n\n" + header + "\n".join(rows)
        )
    XT = np.ascontiguousarray(X.T)
    idx = np.arange(n, dtype=np.int64)
    off, vals, _ = kernels.state_candidates(
        XT, y.astype(np.int64), kernels.sort_orders(XT, idx), 2, LEAVES
    )
    Xb = _binarise(X, [vals[off[j] : off[j + 1]] for j in range(X.shape[1])])
    t0, c0 = time.perf_counter(), time.process_time()
    streed = STreeDClassifier(
        optimization_task="cost-complex-accuracy",
        max_depth=4,
        cost_complexity=2 * lam / n,
        time_limit=limit,
    ).fit(Xb, y)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s_obj = float((streed.predict(Xb) != y).sum() + 2 * lam * (streed.get_n_leaves() - 1))
    state = "finished" if wall < limit - 1 else "stopped at its time limit (no bound)"
    rows.append(f"| pystreed, K_max = 1 | {wall:.1f} | {cpu:.1f} | {s_obj:.2f} | {state} | - | - |")
    print(rows[-1], flush=True)
    return (
        f"breast_cancer (569 x 30) at depth 4, root candidates B_0 = 8 ({Xb.shape[1]} 0/1 "
        f"columns for pystreed), lambda = alpha = 0.005 n, time limit {limit:g} s.\n\n"
        + header
        + "\n".join(rows)
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n up to 20,000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--depth4",
        type=float,
        metavar="SECONDS",
        help="only breast_cancer at depth 4 with this time limit (printed, not written)",
    )
    parser.add_argument(
        "--kmax",
        type=int,
        choices=(1, 2),
        help="with --depth4: ours at this K_max only, without pystreed",
    )
    parser.add_argument(
        "--scope",
        choices=("root", "state"),
        default="root",
        help="with --depth4: the candidates' scope (state: the default scope, ours only)",
    )
    args = parser.parse_args()
    if args.depth4:
        from _machine import load_note, machine

        print(load_note())
        if args.scope == "state":
            print(run_depth4_state(args.depth4, kmaxes=(args.kmax,) if args.kmax else (1, 2)))
        elif args.kmax:
            print(run_depth4(args.depth4, kmaxes=(args.kmax,), streed=False))
        else:
            print(run_depth4(args.depth4))
        print(f"Machine: {machine()}\n\n{load_note()}")
        return
    sizes = [n for n in SIZES if n <= 20_000] if args.quick else list(SIZES)
    from _machine import load_note

    print(load_note())
    sizes3 = [n for n in DEPTH3_SIZES if n <= 20_000] if args.quick else list(DEPTH3_SIZES)
    depth3 = run_depth3(sizes3, args.repeats)
    markdown = run(sizes, args.repeats)
    # the machine and load lines end the depth-2 table: the depth-3 table goes before them
    table2, machine_lines = markdown.split("\n\nMachine: ", 1)
    markdown = f"{table2}\n\n{depth3}\nMachine: {machine_lines}"
    print(markdown)
    if not args.quick:
        from _docs import update_benchmarks

        update_benchmarks("bench_literati_counting.py", markdown)


if __name__ == "__main__":
    main()
