"""TreeLab: explore decision-tree methods in the browser.

Run with ``streamlit run app.py``.  This entry point sets up the page, warms the numba
engine once per process, draws the shared dataset sidebar and routes to the pages.
"""

import streamlit as st

st.set_page_config(page_title="TreeLab", page_icon="🌳", layout="wide")

from pages._shared import (  # noqa: E402
    keep_widget_state,
    resume_intended_page,
    sidebar,
    warm_engine,
)

PAGES = {
    "Explore": [
        st.Page("pages/data.py", title="Data", icon="📄", url_path="data", default=True),
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
}

navigation = st.navigation(PAGES)
keep_widget_state()
sidebar()
resume_intended_page()
warm_engine()
navigation.run()
