"""Cold and warm start of the app against a bare one-line Streamlit app started the same way.

Seconds from ``streamlit run`` to the first page *interactive* in Debian Chromium (driven by
Playwright): for TreeLab, its Start page (text and links to every page, no plot) is drawn
and the script is idle (``data-test-script-state="notRunning"``); for the bare app
(``st.write("Hello")``), its text is drawn and the script is idle; a second reference
adds one plotly chart to the bare app (the cost of plotly.js in the browser).  After the
first page, the run opens the Data page and times until its first plotly chart is drawn
(plotly.js loaded and parsed).  Cold: an empty
``NUMBA_CACHE_DIR`` (nothing compiled yet; the kernels compile in the background after
the first page); warm: the same folder again, after the cold run's background warm-up
filled it.  After the first page, the run also opens the Literati page and times until
its **Run** button shows (its kernels ready: compiled in the background when cold, loaded
from the cache when warm).  Each case runs ``--repeat`` times; the table gives medians and
the ratios to the bare app (issue 13's goals: cold <= 3x, warm <= 1.5x).

Run: ``.venv/bin/python bench/bench_startup.py [--repeat 3] [--jobs dask|threads]``
(needs /usr/bin/chromium).  Writes bench/out/startup.md.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import update_benchmarks  # noqa: E402
from _machine import load_note, machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BARE = 'import streamlit as st\nst.write("Hello")\n'
# the same with one plotly chart: Streamlit loads plotly.js in the browser only for the
# first chart, and parsing it holds the page's main thread for seconds on a slow CPU
BARE_CHART = (
    "import plotly.graph_objects as go\nimport streamlit as st\n"
    'st.write("Hello")\nst.plotly_chart(go.Figure(go.Bar(x=[1, 2], y=[3, 4])))\n'
)


#: What the table in docs/benchmarks.md measures (written above it by each run).
ABOUT = (
    "Seconds from `streamlit run` to the first page interactive in Debian Chromium "
    '(Playwright), against a bare one-line Streamlit app (`st.write("Hello")`) started the '
    "same way. TreeLab's first page (its Start page: text and a link to every page, no plot) "
    "is interactive when its heading is drawn and the script is idle; nothing compiles "
    "before that (the engine imports "
    "lazily; the kernels compile in the background, in the Dask workers, starting 3 s after "
    "the first page). Cold: empty `NUMBA_CACHE_DIR`; warm: the same folder after the cold run. "
    '"Data page drawn": the run then opens the Data page and waits for its first plotly '
    "chart (plotly.js loaded and parsed in the browser). "
    '"Literati page ready": the run then opens the Literati page and waits for its **Run** '
    "button (its kernel groups compiled in the background when cold, loaded from the cache "
    "when warm). Goals (issue 13): cold <= 3x the bare app, warm <= 1.5x."
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(script: Path, env: dict, port: int):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(script),
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=script.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def open_when_up(page, url: str, deadline: float) -> None:
    while True:
        try:
            page.goto(url, timeout=5000)
            return
        except Exception:
            if time.perf_counter() > deadline:
                raise
            time.sleep(0.05)


def idle(page, timeout_ms: int) -> None:
    page.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms
    )


def time_app(
    cache_dir: str, browser, jobs: str, literati: bool = True
) -> tuple[float, float, float]:
    """Seconds from the server's start to (the Start page interactive, the Data page's first
    chart drawn, the Literati page's Run button)."""
    port = free_port()
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "TREELAB_JOBS": jobs}
    t0 = time.perf_counter()
    proc = start_server(ROOT / "app.py", env, port)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        open_when_up(page, f"http://127.0.0.1:{port}", t0 + 120)
        page.get_by_role("heading", name="TreeLab").first.wait_for(timeout=120_000)
        idle(page, 120_000)
        first = time.perf_counter() - t0
        page.goto(f"http://127.0.0.1:{port}/data", timeout=60_000)
        page.get_by_test_id("stPlotlyChart").first.wait_for(timeout=120_000)
        idle(page, 120_000)
        data = time.perf_counter() - t0
        if not literati:
            page.close()
            return first, data, float("nan")
        page.goto(f"http://127.0.0.1:{port}/optimal_shape_trees", timeout=60_000)
        page.get_by_role("button", name="Run", exact=True).first.wait_for(timeout=600_000)
        literati = time.perf_counter() - t0
        page.close()
        return first, data, literati
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def time_bare(browser, folder: Path, chart: bool = False) -> float:
    """Seconds to the bare app's text drawn (and its chart, with ``chart``), script idle."""
    port = free_port()
    script = folder / ("bare_chart_app.py" if chart else "bare_app.py")
    script.write_text(BARE_CHART if chart else BARE)
    t0 = time.perf_counter()
    proc = start_server(script, dict(os.environ), port)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        open_when_up(page, f"http://127.0.0.1:{port}", t0 + 120)
        page.get_by_text("Hello").first.wait_for(timeout=60_000)
        if chart:
            page.get_by_test_id("stPlotlyChart").first.wait_for(timeout=60_000)
        idle(page, 60_000)
        elapsed = time.perf_counter() - t0
        page.close()
        return elapsed
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", choices=("dask", "threads"), default="dask")
    ap.add_argument(
        "--no-literati", action="store_true", help="skip timing the Literati page (faster)"
    )
    args = ap.parse_args()
    bare, bare_chart, cold, warm = [], [], [], []
    load_before = load_note()
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as scratch:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for _ in range(args.repeat):
            bare.append(time_bare(browser, Path(scratch)))
            bare_chart.append(time_bare(browser, Path(scratch), chart=True))
            with tempfile.TemporaryDirectory() as cache:
                cold.append(time_app(cache, browser, args.jobs, not args.no_literati))
                if args.no_literati:  # fill the cache for the warm run
                    subprocess.run(
                        [sys.executable, "-m", "engine.warmup"],
                        cwd=ROOT,
                        env={**os.environ, "NUMBA_CACHE_DIR": cache},
                        stdout=subprocess.DEVNULL,
                        check=True,
                    )
                warm.append(time_app(cache, browser, args.jobs, not args.no_literati))
        browser.close()
    b = statistics.median(bare)

    def row(name, cache, runs):
        first = statistics.median(r[0] for r in runs)
        data = statistics.median(r[1] for r in runs)
        lit = statistics.median(r[2] for r in runs)
        return (
            f"| {name} | {cache} | {first:.1f} | {first / b:.2f}x | {data:.1f} | {lit:.1f} | "
            + ", ".join(f"{r[0]:.1f}" for r in runs)
            + " |"
        )

    table = [
        ABOUT,
        "",
        f"Jobs: `TREELAB_JOBS={args.jobs}`; medians of {args.repeat} runs.",
        "",
        "| start | numba cache | first page interactive (s) | vs bare app | Data page "
        "drawn (s) | Literati page ready (s) | runs: first page (s) |",
        "|---|---|---|---|---|---|---|",
        f"| bare one-line app | - | {b:.1f} | 1.00x | - | - | "
        + ", ".join(f"{t:.1f}" for t in bare)
        + " |",
        f"| bare app with one plotly chart | - | {statistics.median(bare_chart):.1f} | "
        f"{statistics.median(bare_chart) / b:.2f}x | - | - | "
        + ", ".join(f"{t:.1f}" for t in bare_chart)
        + " |",
        row("TreeLab cold", "empty", cold),
        row("TreeLab warm", "filled by the cold run", warm),
        "",
        f"Machine: {machine()}",
        "",
        f"Load: {load_before} before, {load_note()} after.",
    ]
    text = "\n".join(table)
    print(text)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "startup.md").write_text(text + "\n")
    update_benchmarks("bench_startup.py", text)
    return text


if __name__ == "__main__":
    main()
