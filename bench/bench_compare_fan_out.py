"""One Compare job on digits: its fits fanned out over the Dask workers, against the same
job with one fit after another (in one Dask worker, and in a thread of this process).

The job is the Compare page's default (the first three registered models: decision tree,
random forest, gradient boosting, with their page defaults; 5 stratified folds plus one
refit per model, 18 fits).  Three runs of each, in one process, alternating:

* ``dask, fan-out``: the app's default runner; the job's fits are Dask tasks spread over
  the embedded cluster's workers (one single-threaded worker process per core);
* ``dask, one worker``: the same job with ``TREELAB_FAN_OUT=0`` (its fits run in the job's
  own worker, one after another);
* ``threads``: the thread runner (``TREELAB_JOBS=threads``), the fits in a thread here.

Reported: median wall seconds from ``Job.start()`` to the result, and the ratio of the
thread runner's time to each (higher is faster).  The fold metrics are checked equal.

Run: ``.venv/bin/python bench/bench_compare_fan_out.py [--repeat 3]``; writes its region of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import update_benchmarks  # noqa: E402
from _machine import load_note, machine  # noqa: E402


def set_fan_out(value: str) -> None:
    """Set ``TREELAB_FAN_OUT`` in this process (run on each worker by ``client.run``)."""
    os.environ["TREELAB_FAN_OUT"] = value


def main() -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from engine import cluster
    from engine.compare import available_models, cross_validate_steps, plan_comparison
    from engine.data import make_dataset
    from engine.data.bundled import load_bundled
    from engine.jobs import Job

    frame, _, entry = load_bundled("digits")
    dataset = make_dataset(frame, entry["target"], task=entry["task"])
    models = [spec.key for spec in available_models(dataset.task)[:3]]
    plan = plan_comparison(dataset, models, n_splits=5, random_state=0)
    client = cluster.get_client()
    n_workers = len(client.scheduler_info()["workers"])

    def run(runner: str, fan_out: bool) -> tuple[float, object]:
        value = "1" if fan_out else "0"
        set_fan_out(value)
        # a function, not os.environ's bound method (that would pickle a copy of environ)
        assert set(client.run(set_fan_out, value).values()) == {None}
        assert set(client.run(os.environ.get, "TREELAB_FAN_OUT").values()) == {value}
        t0 = time.perf_counter()
        job = Job(cross_validate_steps, plan, budget=None, runner=runner).start()
        assert job.join(1800), "the job did not finish in 30 minutes"
        assert job.status == "done", job.error
        return time.perf_counter() - t0, job.result.folds.drop(columns=["fit_seconds"])

    cases = {
        "dask, fan-out": ("dask", True),
        "dask, one worker": ("dask", False),
        "threads": ("threads", False),
    }
    run("dask", True)  # first use: workers import the estimators
    times: dict[str, list[float]] = {name: [] for name in cases}
    reference = None
    load_before = load_note()
    for _ in range(args.repeat):
        for name, (runner, fan_out) in cases.items():
            seconds, folds = run(runner, fan_out)
            times[name].append(seconds)
            if reference is None:
                reference = folds
            assert folds.round(12).equals(reference.round(12)), f"{name}: other fold metrics"
    threads = statistics.median(times["threads"])
    lines = [
        f"Compare on digits (1,797 rows x 64 features): {', '.join(models)}; 5 folds + "
        f"refits = {plan.n_fits} fits; embedded cluster of {n_workers} worker processes; "
        f"medians of {args.repeat} runs; the fold metrics are equal in every run.",
        "",
        "| runner | wall (s) | speed vs threads | runs (s) |",
        "|---|---|---|---|",
    ]
    for name in cases:
        median = statistics.median(times[name])
        runs = ", ".join(f"{t:.1f}" for t in times[name])
        lines.append(f"| {name} | {median:.1f} | {threads / median:.2f}x | {runs} |")
    lines += ["", f"Machine: {machine()}", "", f"Load: {load_before} before, {load_note()} after."]
    text = "\n".join(lines)
    print(text)
    update_benchmarks("bench_compare_fan_out.py", text)
    cluster.shutdown()
    return text


if __name__ == "__main__":
    main()
