"""Write a benchmark script's tables into ``docs/benchmarks.md``.

Each script owns one region of that file, between ``<!-- begin bench/NAME.py -->`` and
``<!-- end bench/NAME.py -->``; a full run (not ``--quick`` or ``--only``) replaces the
region with what it printed, machine line included.  The notes under a region's tables
discuss those numbers: revise them with a new run.
"""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def update_benchmarks(script: str, markdown: str, path: Path = DOCS) -> None:
    """Replace the region of ``script`` (e.g. ``'bench_predict.py'``) in ``path`` with
    ``markdown``.  Raises ``ValueError`` when the file lacks the two markers."""
    begin = f"<!-- begin bench/{script} -->"
    end = f"<!-- end bench/{script} -->"
    text = path.read_text(encoding="utf-8")
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{path} needs one {begin!r} ... {end!r} region for {script}")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    path.write_text(f"{head}{begin}\n{markdown.strip()}\n{end}{tail}", encoding="utf-8")
    print(f"updated {path.name} ({script})")
