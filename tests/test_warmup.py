"""engine/warmup.py: each page's kernel groups cover every numba signature the page uses,
the tables match the app, and the background warm-up compiles in another process while
this one only loads from numba's cache."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine import warmup

ROOT = Path(__file__).resolve().parent.parent


def test_tables_name_every_page_of_the_app_and_every_model():
    app = (ROOT / "app.py").read_text()
    # the Start page's own url_path is "start" (served at the root); the app's key for it
    # is "home" (app.py: a default page's url_path reads ""), as is its /home alias
    paths = {"home" if p == "start" else p for p in re.findall(r'url_path="([a-z_]+)"', app)}
    assert paths == set(warmup.PAGE_GROUPS)
    for _, groups in warmup.PAGE_GROUPS.values():
        warmup.closure(groups)  # every name is a group
    from engine.compare import REGISTRY, load_methods

    load_methods()
    treelab = {k for k in REGISTRY if k.startswith("treelab")}
    assert treelab == set(warmup.MODEL_GROUPS)


def test_every_group_is_registered_by_its_package():
    from engine import _numba

    for name, group in warmup.GROUPS.items():
        __import__(group.package)
        assert name in dict(_numba._WARMUPS), name
    # and the other way round: a registered warm-up outside every group would never run
    assert set(dict(_numba._WARMUPS)) <= set(warmup.GROUPS)


def test_closure_puts_prerequisites_first():
    assert warmup.closure(["cit.tree"]) == [
        "criteria",
        "candidates",
        "cit.statistics",
        "cit.permutation",
        "cit.asymptotic",
        "cit.tree",
    ]
    order = warmup.in_order(["literati", "cart"])
    assert order == ["tree.apply", "literati", "criteria", "candidates", "cart"]
    with pytest.raises(KeyError, match="unknown kernel group"):
        warmup.closure(["nope"])


def test_status_counts_ready_groups(monkeypatch):
    monkeypatch.setattr(warmup, "_STATE", {"tree.apply": "ready", "literati": "compiling"})
    monkeypatch.setattr(warmup, "_STARTED_AT", {"literati": 0.0})
    name, progress = warmup.page_status("optimal_shape_trees")
    assert name == "Literati"
    # tree.apply, criteria, candidates, cart (the job's CART baseline) and literati
    assert (progress.done, progress.total, progress.ready) == (1, 5, False)
    assert progress.current == "Literati search"
    assert warmup.page_status("data")[1].ready


@pytest.fixture(scope="module")
def page_reports(warm_engine):
    """Every page's flows, run one after the other in one fresh process (each page from a
    reset engine with only its groups warmed): page -> report of tests/page_signatures.py."""
    proc = subprocess.run(
        # every page, then a control: a page after all the others with nothing warmed
        [sys.executable, str(ROOT / "tests" / "page_signatures.py"), *warmup.PAGE_GROUPS]
        + ["learn:unwarmed"],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
    )
    reports = {}
    for line in proc.stdout.splitlines():
        if line.startswith('{"page": '):
            report = json.loads(line)
            reports[report["page"]] = report
    return reports, proc.returncode, proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("page", list(warmup.PAGE_GROUPS))
def test_page_uses_no_signature_its_warm_up_misses(page, page_reports):
    """Run the page's flows with only its groups warmed: no engine kernel may gain a
    signature (it would compile at a user's click)."""
    reports, returncode, stderr = page_reports
    assert page in reports, f"the flows stopped before {page} (exit {returncode}): {stderr}"
    report = reports[page]
    assert report["new"] == {}, (
        f"{page}: signatures missing from its warm-up groups: "
        + (json.dumps(report["new"], indent=1)[:3000])
    )


@pytest.mark.slow
def test_the_reset_between_pages_leaves_nothing_compiled(page_reports):
    """The control run last, with no group warmed, after every page ran in the same process:
    its kernels compile or load again (the reset between pages cleared them), so a page
    that missed a group would be seen however many pages ran before it."""
    reports, returncode, stderr = page_reports
    assert returncode == 0, stderr
    control = reports["learn:unwarmed"]
    assert control["groups"] == []
    assert len(control["new"]) >= 3, control
    assert "engine.cart._candidate_kernels.all_positions" in control["new"], control


LOADS_ONLY = """
import json, os, sys, time
sys.path.insert(0, {root!r})
os.environ["TREELAB_JOBS"] = {runner!r}
from engine import warmup
if __name__ == "__main__":
    groups = ["tree.apply"]
    t0 = time.perf_counter()
    assert warmup.start_background(groups=groups)
    while not warmup.ready(groups):
        assert time.perf_counter() - t0 < 300, {{g: warmup.state(g) for g in warmup.GROUPS}}
        time.sleep(0.1)
    import engine.tree
    stats = {{n: (sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values()))
             for n, d in warmup.engine_dispatchers().items() if n.startswith("engine.tree.")}}
    print(json.dumps(stats))
    from engine import cluster
    cluster.shutdown()
"""


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["threads", "dask"])
def test_background_warm_up_compiles_elsewhere_and_loads_here(runner, tmp_path):
    """With an empty cache, this process gets the groups ready by loading what another
    process (a child, or a Dask worker) compiled: numba reports cache hits, no misses."""
    script = tmp_path / "loads_only.py"
    script.write_text(LOADS_ONLY.format(root=str(ROOT), runner=runner))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "TREELAB_WORKERS": "1"}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    used = {name: hm for name, hm in stats.items() if sum(hm)}
    assert used, stats
    assert all(misses == 0 and hits >= 1 for hits, misses in used.values()), used


def test_a_requested_page_is_prepared_before_the_others(monkeypatch):
    """The next group to compile: one whose prerequisites are done, a requested page's
    first, else the table's order."""
    monkeypatch.setattr(warmup, "_REQUESTS", [])
    pending = list(warmup.GROUPS)
    assert warmup._next(pending, set()) == "tree.apply"
    warmup.request(["literati"])  # someone opened the Literati page
    assert warmup._next(pending, set()) == "tree.apply"  # its prerequisite first
    pending.remove("tree.apply")
    assert warmup._next(pending, set()) == "literati"
    pending.remove("literati")  # one worker compiles it; the other takes the next in order
    assert warmup._next(pending, {"literati"}) == "criteria"
    # cart waits for its prerequisites even when requested
    warmup.request(["cart"])
    assert warmup._next(pending, set()) == "criteria"
    assert warmup._next(["cart"], {"candidates"}) is None
