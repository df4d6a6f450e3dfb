"""TreeLab: explore decision-tree methods in the browser.

Run with ``streamlit run app.py``.  This entry point sets up the page, draws the shared
dataset sidebar and routes to the pages.  Nothing compiles before the first page draws:
after each run it makes sure the numba kernels are being prepared in the background
(:mod:`engine.warmup`), and a page whose kernels are not ready yet shows their progress
instead, then opens by itself.
"""

import streamlit as st

st.set_page_config(page_title="TreeLab", page_icon="🌳", layout="wide")

#: The Start page, at the app's root URL (a default page's own url_path is not served).
START = st.Page("pages/home.py", title="Start", icon="🏠", url_path="start", default=True)


def home_alias() -> None:
    """``/home`` (the Start page's name in the app's links and docs): the Start page, with
    the link's parameters, instead of Streamlit's "Page not found"."""
    st.switch_page(START, query_params=st.query_params.to_dict())


PAGES = {
    "Explore": [
        START,
        st.Page(home_alias, title="Start", url_path="home", visibility="hidden"),
        st.Page("pages/data.py", title="Data", icon="📄", url_path="data"),
        st.Page("pages/compare.py", title="Compare models", icon="⚖️", url_path="compare"),
    ],
    "Methods": [
        st.Page(
            "pages/optimal_shape_trees.py",
            title="Optimal shape trees (Literati)",
            icon="🌲",
            url_path="optimal_shape_trees",
        ),
        st.Page(
            "pages/conditional_density.py",
            title="Conditional density (Partition Tree)",
            icon="📈",
            url_path="conditional_density",
        ),
        st.Page(
            "pages/feature_ranking.py",
            title="Feature ranking (TreeGrad)",
            icon=":material/leaderboard:",
            url_path="feature_ranking",
        ),
        st.Page(
            "pages/conditional_inference.py",
            title="Conditional inference (CIT / CIF)",
            icon="🧪",
            url_path="conditional_inference",
        ),
        st.Page(
            "pages/split_strategies.py",
            title="Split strategies (DICS)",
            icon="✂️",
            url_path="split_strategies",
        ),
    ],
    "Learn": [
        st.Page("pages/learn.py", title="Lessons", icon="🎓", url_path="learn"),
        st.Page(
            "pages/learn_challenge.py",
            title="Build your own tree",
            icon="🏆",
            url_path="learn_challenge",
        ),
        st.Page(
            "pages/learn_growth.py", title="Watch a tree grow", icon="🌱", url_path="learn_growth"
        ),
        st.Page(
            "pages/learn_predict.py",
            title="Predict, then reveal",
            icon="❓",
            url_path="learn_predict",
        ),
        st.Page("pages/learn_glossary.py", title="Glossary", icon="📖", url_path="glossary"),
    ],
}

# the navigation first, before the imports below (seconds on a cold server): until a
# session has called st.navigation, Streamlit lists every module of pages/ as a page
navigation = st.navigation(PAGES)

from pages._links import note_page, show_link_warnings  # noqa: E402
from pages._runs import forget_loaded_run, open_run_link  # noqa: E402
from pages._shared import (  # noqa: E402
    engine_gate,
    keep_widget_state,
    resume_intended_page,
    sidebar,
    start_engine,
)

page_key = navigation.url_path or "home"  # the default page's url_path is ""
# a new server's first request for a page passes through here (require_entrypoint): on to
# that page before the sidebar draws or sets anything (it would draw the default dataset,
# Iris, and keep it over a ?run=<id> link's)
resume_intended_page()
note_page(page_key)  # the page the link opened, or another one switched to
# a run loaded by an earlier run that no page reopened (the finally below cannot drop it
# after a page's st.stop(): every st call there raises StopException again)
forget_loaded_run()
open_run_link(page_key)  # ?run=<id>: the run's parameters into the URL, before any widget
keep_widget_state()
sidebar()
show_link_warnings(page_key)  # the link's warnings again when the page reruns by itself
try:
    if engine_gate(page_key, navigation.title):
        navigation.run()
finally:  # also after a page's st.rerun() or st.stop() (start_engine calls no st function)
    start_engine(page_key)
