"""Run one app page's main flows with only that page's kernel groups warmed (a subprocess of
tests/test_warmup.py); print, as JSON, every numba signature the flows added.

``python tests/page_signatures.py compare learn`` prints one line per page,
``{"page": ..., "groups": [...], "new": {...}}`` (every page of :data:`FLOWS` when none is
named); the pages run one after the other in this process, each from a reset engine.

The page runs in AppTest (the whole app, with navigation) on a classification, a regression
and a categorical dataset; every Run-like button of the page is pressed and its jobs (in
threads of this process) are waited for.  The background warm-up is switched off, so only
:data:`engine.warmup.PAGE_GROUPS` of the page are compiled before the flows start.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["TREELAB_JOBS"] = "threads"

#: Page -> (script, datasets to run it on, widget values set before pressing buttons).
FLOWS = {
    "home": ("pages/home.py", ("iris", "diabetes"), {}),
    "data": ("pages/data.py", ("iris", "diabetes", "penguins"), {}),
    "compare": (
        "pages/compare.py",
        ("iris", "diabetes", "penguins"),
        {"cmp_folds": 2, "cmp_treelab_literati_time_limit": 1.0},
    ),
    "optimal_shape_trees": (
        "pages/optimal_shape_trees.py",
        ("iris", "penguins"),
        {"lit_depth": 2, "lit_time": 1.0},
    ),
    "conditional_density": ("pages/conditional_density.py", ("iris", "diabetes", "penguins"), {}),
    "feature_ranking": (
        "pages/feature_ranking.py",
        ("iris", "diabetes", "penguins"),
        {"tg_num_rows": 5000, "tg_num_depths": [5, 20], "tg_rt_leaves": [100]},
    ),
    "conditional_inference": (
        "pages/conditional_inference.py",
        ("iris", "diabetes", "penguins"),
        {},
    ),
    "split_strategies": ("pages/split_strategies.py", ("iris", "diabetes", "penguins"), {}),
    "learn": ("pages/learn.py", ("iris",), {}),
    "learn_challenge": ("pages/learn_challenge.py", ("iris", "penguins"), {}),
    "learn_predict": ("pages/learn_predict.py", ("iris", "diabetes", "penguins"), {}),
    "learn_growth": ("pages/learn_growth.py", ("iris", "diabetes"), {}),
    "glossary": ("pages/learn_glossary.py", ("iris",), {}),
}
TIMEOUT = 180


def _jobs(at):
    from engine.jobs import Job

    return [v for v in at.session_state.values() if isinstance(v, Job)]


def _settle(at) -> None:
    """Wait for every job of the session, then rerun so the page draws the results."""
    deadline = time.monotonic() + TIMEOUT
    for _ in range(10):
        jobs = [j for j in _jobs(at) if not j.finished]
        if not jobs:
            break
        for job in jobs:
            job.join(max(1.0, deadline - time.monotonic()))
        at.run()
    at.run()
    if at.exception:
        raise RuntimeError(f"the page raised: {at.exception}")


def run_flows(page: str) -> None:
    from streamlit.testing.v1 import AppTest
    from streamlit.testing.v1 import app_test as app_test_module

    from tests.conftest import navigation_pages_manager

    app_test_module.PagesManager = navigation_pages_manager()
    script, datasets, widgets = FLOWS[page]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    for dataset in datasets:
        at.selectbox(key="ds").set_value(dataset).run()
        at.switch_page(script).run()
        if page == "compare":  # every TreeLab model (scikit-learn's use no kernels)
            from engine.compare import available_models

            task = "regression" if dataset == "diabetes" else "classification"
            keys = [s.key for s in available_models(task) if s.key.startswith("treelab")]
            at.multiselect(key="cmp_models").set_value(keys).run()
        for key, value in widgets.items():
            at.session_state[key] = value
        at.run()
        _settle(at)
        pressed = set()
        for _ in range(4):  # buttons may appear after a result (e.g. a comparison)
            buttons = [
                b
                for b in at.button
                if b.key and b.key.endswith("_run") and not b.disabled and b.key not in pressed
            ]
            if not buttons:
                break
            for button in buttons:
                pressed.add(button.key)
                at.button(key=button.key).click().run()
                _settle(at)


def _fresh_engine() -> None:
    """Return this process to the state a new one starts in, for the next page: every engine
    kernel without compiled signatures (numba loads them again from its cache on use), no
    group marked warm, Streamlit's caches and the engine's memoised helpers empty (a cached
    result would skip the kernel calls the page makes in a new server)."""
    import streamlit as st

    from engine import warmup

    for dispatcher in warmup.engine_dispatchers().values():
        dispatcher._reset_overloads()
    with warmup._LOCK:
        warmup._STATE.clear()
        warmup._STARTED_AT.clear()
        warmup._ERRORS.clear()
    st.cache_data.clear()
    st.cache_resource.clear()
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith(("engine", "pages")):
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
                value.cache_clear()


def main(page: str, warm: bool = True) -> dict:
    """Reset the engine, warm the page's groups, run its flows; return the signatures they
    added.  ``warm=False`` is the control that shows a missing warm-up is seen: the page's
    groups are marked ready (so it runs) but none is loaded."""
    from engine import warmup

    warmup.start_background = lambda *args, **kwargs: False  # only this page's groups
    _fresh_engine()
    if any(warmup.signatures().values()):
        raise RuntimeError("engine kernels kept compiled signatures after the reset")
    # the Compare flows run every TreeLab model: their groups too
    models = warmup.MODEL_GROUPS if page == "compare" else ()
    groups = warmup.page_groups(page, models)
    if warm:
        warmup.warm_groups(groups)
    else:  # the page sees its groups ready (else it waits for them) but nothing is loaded
        with warmup._LOCK:
            warmup._STATE.update(dict.fromkeys(warmup.closure(groups), "ready"))
        groups = []
    before = warmup.signatures()
    run_flows(page)
    after = warmup.signatures()
    new = {
        name: sorted(sigs - before.get(name, set()))
        for name, sigs in after.items()
        if sigs - before.get(name, set())
    }
    return {"page": page if warm else f"{page}:unwarmed", "groups": groups, "new": new}


if __name__ == "__main__":
    # one JSON line per page named (all pages when none is): the pages run one after the
    # other in this process, each from a reset engine (see _fresh_engine); "learn:unwarmed"
    # runs a page with no group warmed
    for name in sys.argv[1:] or list(FLOWS):
        page, _, flag = name.partition(":")
        print(json.dumps(main(page, warm=flag != "unwarmed")), flush=True)
