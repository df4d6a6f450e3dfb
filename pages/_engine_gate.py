"""The kernels-ready gate of the pages: start the background warm-up of the numba kernels,
and show a page's (or a Run button's) kernels compiling, with progress, until they are ready
(re-exported by :mod:`pages._shared`)."""

from __future__ import annotations

import streamlit as st

from engine import warmup
from pages._links import page_title

# -- engine warm-up ------------------------------------------------------------------------
#: Seconds between the end of the server's first page and the start of the background
#: warm-up (the browser fetches the page's scripts meanwhile; a page waiting on its kernels
#: starts it at once).
WARMUP_DELAY = 3.0


def start_engine(page: str = "data", delay: float = WARMUP_DELAY) -> None:
    """Start compiling every kernel group in the background, once per server process.

    Called at the end of every run of ``app.py`` (so the first page is drawn first), and
    without delay by a page whose kernels are not ready; the groups of ``page`` are
    prepared before the others.  Plain Python (no Streamlit call), so it also runs in
    ``app.py``'s ``finally`` after a page's ``st.stop()``, where every Streamlit call
    raises again; :func:`engine.warmup.start_background` starts once per process.
    """
    warmup.start_background(tuple(warmup.PAGE_GROUPS.get(page, ("", ()))[1]), delay=float(delay))


def _progress(now, whose: str, after: str = "") -> None:
    """The progress bar of a compilation: ``now`` (a warm-up progress), ``whose`` (what is
    compiled, after 'Compiling'), ``after`` (the end of its text); reruns the app once the
    kernels are ready."""
    if now.ready:
        st.rerun()
    current = f"now: {now.current}, " if now.current else ""
    st.progress(
        now.done / max(now.total, 1),
        text=f"Compiling {whose}: {now.done} of {now.total} kernel groups ready "
        f"({current}{now.seconds:.0f} s so far){after}",
    )


def engine_gate(page: str, title: str) -> bool:
    """True when ``page``'s kernel groups are ready; else shows their progress in the main
    area, refreshing twice a second, and reruns the app (opening the page) once ready."""
    engine_name, progress = warmup.page_status(page)
    if progress.ready:
        return True
    warmup.request(warmup.page_groups(page))  # serve the page being waited on first
    start_engine(page, delay=0.0)
    page_title(title)

    @st.fragment(run_every=0.5)
    def compiling() -> None:
        name, now = warmup.page_status(page)
        _progress(now, f"the {name} engine")
        st.caption(
            "TreeLab compiles its numba kernels once, in the background, after the server "
            "starts (about a minute on two cores; instant once they are in the cache). "
            "This page opens by itself when its kernels are ready; the Data page works "
            "meanwhile."
        )

    compiling()
    return False


def kernels_ready(groups, what: str) -> bool:
    """True when ``groups`` are ready; else shows their progress (``what``: whose kernels,
    e.g. "the chosen models") and reruns the app once they are."""
    progress = warmup.status(groups)
    if progress.ready:
        return True
    warmup.request(groups)
    start_engine(delay=0.0)

    @st.fragment(run_every=0.5)
    def compiling() -> None:
        _progress(
            warmup.status(groups), f"the kernels of {what}", ". Run is enabled when they are."
        )

    compiling()
    return False
