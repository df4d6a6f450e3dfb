"""A classroom on one server: K browser sessions run the default Compare job on digits while
one more *probe* session changes the dataset and opens pages.

For each job runner (``TREELAB_JOBS=threads`` and ``dask``, side by side in one run) and each
K, one fresh server is started (numba cache warm), K Playwright contexts in Debian Chromium
each open ``/compare?ds=digits`` and press **Run** ``--jobs-per-session`` times (waiting for the
results each time), and the probe alternates the sidebar dataset and the Data / Compare /
Split strategies pages.  Reported per (runner, K):

* the probe's rerun latency (click to the script idle again): median and p95;
* jobs finished per minute over the jobs' window (the first **Run** click to the last
  result drawn; the server's start-up and the pages' first runs are not in it), the
  median job (click to results) and the CPU the server and its worker processes used in
  the window, in cores (CPU seconds / window seconds: how much of the machine the runner
  put to work);
* peak resident memory of the server process and of its worker processes (MiB);
* errors: exceptions drawn on any page, failed jobs, timeouts.

Goals (issue 13): probe p95 < 1 s at K = 20; Dask >= 1.8x the thread runner's jobs per minute
on 2 cores; no error; memory flat over a ``--soak`` (10 minutes of K sessions, each keeping
its tab and pressing **Run** again, memory sampled every 30 s and printed as a table).

Run: ``.venv/bin/python bench/bench_load.py [--k 1 5 10 20] [--jobs-per-session 2]
[--runners threads dask] [--soak 600]``; writes bench/out/load.md (and load_soak.md).
A smoke run: ``--k 1 2 --jobs-per-session 1``; the soak alone: ``--k --soak 600``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil
from playwright.async_api import async_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import update_benchmarks  # noqa: E402
from _machine import load_note, machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: What the table in docs/benchmarks.md measures (written above it by a full run).
ABOUT = (
    "One server per (runner, K); K Playwright contexts in Debian Chromium each open "
    "`/compare?ds=digits` and run the default Compare job (decision tree, random forest, "
    "gradient boosting, 5 folds, plus the tree's refit: the page refits only the trees it draws); one more probe session alternates a dataset "
    "change in the sidebar and a page switch (Data, Compare, Split strategies) and records "
    "each rerun (click to the script idle). Reported: the probe's rerun median and p95; jobs "
    "finished per minute over the jobs' window (first Run click to the last result drawn: the "
    "server's start-up and the pages' first runs are outside it), the median job (click to "
    "results) and the CPU the server and its workers used in that window, in cores; peak RSS "
    "of the server and of its worker processes; errors. Goals "
    "(issue 13): probe p95 under 1 s at K = 20, Dask at least 1.8x the thread runner's job "
    "throughput, no error, memory flat over a 10-minute soak (`--soak 600`)."
)
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
JOB_TIMEOUT_MS = 900_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(runner: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "TREELAB_JOBS": runner, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py")]
        + ["--server.headless", "true", "--server.port", str(port)]
        + ["--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
        + ["--server.fileWatcherType", "none"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, f"http://127.0.0.1:{port}"


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    """Wait until the server answers ``/_stcore/health``."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.2)


def memory(proc: subprocess.Popen) -> tuple[float, float]:
    """(server RSS, sum of its descendants' RSS) in MiB."""
    try:
        server = psutil.Process(proc.pid)
        own = server.memory_info().rss
        kids = 0
        for child in server.children(recursive=True):
            try:
                kids += child.memory_info().rss
            except psutil.Error:
                pass
    except psutil.Error:
        return 0.0, 0.0
    return own / 2**20, kids / 2**20


def cpu_seconds(proc: subprocess.Popen) -> float:
    """User + system CPU seconds of the server and its live descendants (the workers)."""
    total = 0.0
    try:
        server = psutil.Process(proc.pid)
        for process in [server, *server.children(recursive=True)]:
            try:
                times = process.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return total


async def idle(page, timeout=120_000) -> None:
    await page.wait_for_timeout(150)
    await page.wait_for_selector(IDLE, timeout=timeout)


async def student(browser, url: str, jobs: int, stats: dict, deadline: float | None = None) -> None:
    """One tab: open Compare on digits, then press **Run** ``jobs`` times (or, with a
    ``deadline``, until ``time.perf_counter()`` passes it), waiting for the results each
    time; every click and result time goes into ``stats``."""
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    page = await context.new_page()
    try:
        await page.goto(url + "/compare?ds=digits", timeout=120_000)
        await page.get_by_text("1,797 rows").first.wait_for(timeout=300_000)
        await idle(page, 300_000)
        done = 0
        while (done < jobs) if deadline is None else (time.perf_counter() < deadline):
            run = page.get_by_role("button", name="Run", exact=True)
            await run.wait_for(timeout=120_000)
            while await run.is_disabled():
                await page.wait_for_timeout(200)
            results = page.get_by_role("heading", name="Results")
            had_results = await results.count() > 0
            clicked = time.perf_counter()
            stats["clicks"].append(clicked)
            await run.click()
            if had_results:  # the live view replaces the last results while the job runs
                await results.wait_for(state="detached", timeout=60_000)
            await results.wait_for(timeout=JOB_TIMEOUT_MS)
            finished = time.perf_counter()
            await idle(page, 60_000)
            if await page.get_by_test_id("stException").count():
                stats["errors"].append("exception on the Compare page")
            if await page.get_by_text("failed").count():
                stats["errors"].append("a job failed")
            stats["jobs"] += 1
            stats["finishes"].append(finished)
            stats["durations"].append(finished - clicked)
            done += 1
    except Exception as exc:  # noqa: BLE001 - counted, the benchmark goes on
        stats["errors"].append(f"student: {type(exc).__name__}: {str(exc)[:120]}")
    finally:
        await context.close()


async def probe(browser, url: str, stop: asyncio.Event, stats: dict) -> None:
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    page = await context.new_page()
    datasets = ["Wine", "Iris", "Palmer penguins", "Diabetes"]
    pages = ["Data", "Compare models", "Split strategies (DICS)"]
    try:
        await page.goto(url, timeout=120_000)
        await idle(page)
        i = 0
        while not stop.is_set():
            if i % 2 == 0:  # change the dataset in the sidebar
                box = page.get_by_test_id("stSelectbox").filter(has_text="Dataset").first
                await box.click()
                option = page.get_by_role(
                    "option", name=re.compile(datasets[(i // 2) % len(datasets)])
                )
                t0 = time.perf_counter()
                await option.first.click()
            else:  # open another page
                link = page.get_by_role("link", name=pages[(i // 2) % len(pages)])
                t0 = time.perf_counter()
                await link.first.click()
            await idle(page, 60_000)
            stats["latency"].append(time.perf_counter() - t0)
            if await page.get_by_test_id("stException").count():
                stats["errors"].append("exception on a probe page")
            i += 1
            await page.wait_for_timeout(300)
    except Exception as exc:  # noqa: BLE001
        stats["errors"].append(f"probe: {type(exc).__name__}: {str(exc)[:120]}")
    finally:
        await context.close()


async def one_case(runner: str, k: int, jobs: int, soak: float = 0.0) -> dict:
    proc, url = start_server(runner)
    stats = {
        "latency": [],
        "jobs": 0,
        "errors": [],
        "memory": [],
        "clicks": [],
        "finishes": [],
        "durations": [],
        "cpu": [],
    }
    try:
        wait_healthy(url, proc)
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            stop = asyncio.Event()
            probe_task = asyncio.create_task(probe(browser, url, stop, stats))
            t0 = time.perf_counter()

            async def sample():
                while not stop.is_set():
                    now = time.perf_counter()
                    stats["memory"].append((now - t0, *memory(proc)))
                    stats["cpu"].append((now, cpu_seconds(proc)))
                    await asyncio.sleep(1.0)

            sampler = asyncio.create_task(sample())
            deadline = t0 + soak if soak else None
            await asyncio.gather(*(student(browser, url, jobs, stats, deadline) for _ in range(k)))
            stats["cpu"].append((time.perf_counter(), cpu_seconds(proc)))
            stop.set()
            await probe_task
            await sampler
            await browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    lat = sorted(stats["latency"])
    p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))] if lat else float("nan")
    # the jobs' window: first Run click to the last result drawn
    first = min(stats["clicks"], default=0.0)
    last = max(stats["finishes"], default=first)
    window = max(last - first, 1e-9)
    inside = [c for t, c in stats["cpu"] if first <= t <= last + 1.0]
    before = [c for t, c in stats["cpu"] if t <= first]
    cpu_used = (inside[-1] - (before[-1] if before else inside[0])) if inside else 0.0
    return {
        "runner": runner,
        "k": k,
        "wall": window,
        "jobs": stats["jobs"],
        "per_minute": stats["jobs"] / (window / 60.0) if stats["jobs"] else 0.0,
        "job_median": statistics.median(stats["durations"]) if stats["durations"] else 0.0,
        "cores": cpu_used / window if stats["jobs"] else 0.0,
        "probe_n": len(lat),
        "probe_median": statistics.median(lat) if lat else float("nan"),
        "probe_p95": p95,
        "server_mib": max((m[1] for m in stats["memory"]), default=0.0),
        "workers_mib": max((m[2] for m in stats["memory"]), default=0.0),
        "memory": stats["memory"],
        "errors": stats["errors"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--k",
        type=int,
        nargs="*",
        default=[1, 5, 10, 20],
        help="sessions per case; none: soak only",
    )
    ap.add_argument("--jobs-per-session", type=int, default=2)
    ap.add_argument("--runners", nargs="+", default=["threads", "dask"])
    ap.add_argument("--soak", type=float, default=0.0, help="seconds of soak (e.g. 600)")
    ap.add_argument("--soak-k", type=int, default=5)
    args = ap.parse_args()
    before = load_note()
    rows = []
    for k in args.k:
        for runner in args.runners:
            res = asyncio.run(one_case(runner, k, args.jobs_per_session))
            rows.append(res)
            print(
                f"{runner:7s} K={k:2d}: {res['jobs']} jobs in {res['wall']:.0f} s "
                f"({res['per_minute']:.2f}/min, job median {res['job_median']:.0f} s, "
                f"{res['cores']:.2f} cores), probe median {res['probe_median']:.2f} s "
                f"p95 {res['probe_p95']:.2f} s (n={res['probe_n']}), server "
                f"{res['server_mib']:.0f} MiB, workers {res['workers_mib']:.0f} MiB, "
                f"errors {len(res['errors'])}",
                flush=True,
            )
    lines = [
        f"Each of K sessions ran the default Compare job on digits "
        f"{args.jobs_per_session} time(s); one probe session changed datasets and pages.",
        "",
        "| runner | K | jobs | jobs' window (s) | jobs / min | vs threads | job median (s) "
        "| CPU used (cores) | probe rerun median (s) | probe p95 (s) | probe reruns "
        "| server peak (MiB) | workers peak (MiB) | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by = {(r["runner"], r["k"]): r for r in rows}
    for r in rows:
        base = by.get(("threads", r["k"]))
        ratio = f"{r['per_minute'] / base['per_minute']:.2f}x" if base and base["jobs"] else "-"
        lines.append(
            f"| {r['runner']} | {r['k']} | {r['jobs']} | {r['wall']:.0f} | "
            f"{r['per_minute']:.2f} | {ratio} | {r['job_median']:.0f} | {r['cores']:.2f} | "
            f"{r['probe_median']:.2f} | "
            f"{r['probe_p95']:.2f} | {r['probe_n']} | {r['server_mib']:.0f} | "
            f"{r['workers_mib']:.0f} | {len(r['errors'])} |"
        )
    errors = [f"- {r['runner']} K={r['k']}: {e}" for r in rows for e in r["errors"]]
    lines += ["", *(["Errors:", *errors, ""] if errors else [])]
    lines += [f"Machine: {machine()}", "", f"Load: {before} before, {load_note()} after."]
    text = "\n".join(lines)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    if rows:
        print(text)
        (out / "load.md").write_text(text + "\n")
    soak_text = ""
    if args.soak:
        res = asyncio.run(one_case("dask", args.soak_k, 1, soak=args.soak))
        soak = [
            f"Soak: {args.soak_k} sessions (each keeping its tab) re-running the Compare job "
            f"on digits for "
            f"{args.soak:.0f} s (Dask runner); {res['jobs']} jobs, {len(res['errors'])} errors.",
            "",
            "| minute | server RSS (MiB) | workers RSS (MiB) |",
            "|---|---|---|",
        ]
        for t, server, workers in res["memory"][::30]:
            soak.append(f"| {t / 60:.1f} | {server:.0f} | {workers:.0f} |")
        if res["errors"]:
            soak += ["", "Errors:", *(f"- {e}" for e in res["errors"])]
        soak_text = "\n".join(soak)
        print(soak_text)
        (out / "load_soak.md").write_text(soak_text + "\n")
    if sorted(args.k) == [1, 5, 10, 20] and sorted(args.runners) == ["dask", "threads"]:
        update_benchmarks("bench_load.py", "\n\n".join(filter(None, [ABOUT, text, soak_text])))


if __name__ == "__main__":
    main()
