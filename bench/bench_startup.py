"""Cold and warm start of the app: seconds from ``streamlit run`` to the first page interactive.

"Interactive" means Debian Chromium (driven by Playwright) shows the Data page heading and
the script is idle (``data-test-script-state="notRunning"``), i.e. the engine warm-up has
finished and the bundled dataset is drawn.  Cold: an empty ``NUMBA_CACHE_DIR`` (every kernel
compiles); warm: the same folder again (kernels load from the cache).  Each case runs
``--repeat`` times; the table shows the median.

Run: ``.venv/bin/python bench/bench_startup.py`` (needs /usr/bin/chromium).
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
from _machine import machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_to_interactive(cache_dir: str, browser) -> float:
    port = free_port()
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        page = browser.new_page()
        deadline = time.perf_counter() + 180
        while True:
            try:
                page.goto(f"http://127.0.0.1:{port}", timeout=5000)
                break
            except Exception:
                if time.perf_counter() > deadline:
                    raise
                time.sleep(0.1)
        page.get_by_role("heading", name="Data").first.wait_for(timeout=180_000)
        page.wait_for_selector(
            '[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=180_000
        )
        page.get_by_test_id("stPlotlyChart").first.wait_for(timeout=180_000)
        elapsed = time.perf_counter() - t0
        page.close()
        return elapsed
    finally:
        proc.terminate()
        proc.wait(20)


def main() -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cold, warm = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as cache:
                cold.append(time_to_interactive(cache, browser))
                warm.append(time_to_interactive(cache, browser))
        browser.close()
    table = [
        "| start | numba cache | seconds to first page interactive (median of "
        f"{args.repeat}) | runs |",
        "|---|---|---|---|",
        f"| cold | empty | {statistics.median(cold):.1f} | "
        + ", ".join(f"{t:.1f}" for t in cold)
        + " |",
        f"| warm | filled by the cold run | {statistics.median(warm):.1f} | "
        + ", ".join(f"{t:.1f}" for t in warm)
        + " |",
        "",
        f"Machine: {machine()}",
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
