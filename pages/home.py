"""Start page: what TreeLab is, the dataset in use, and one line per page with its link.

The app opens here.  It draws text and links only (no plot, no engine computation), so the
first page is ready in about the time a bare Streamlit app takes, while the numba kernels
compile in the background.
"""

import streamlit as st

from engine import warmup
from pages._link_params import home_link
from pages._links import apply_link, page_title
from pages._shared import current_dataset, dataset_caption, require_entrypoint

#: (section, [(script, title, what the page shows)]) in the navigation's order.
SECTIONS = (
    (
        "Explore",
        (
            (
                "pages/data.py",
                "Data",
                "upload a CSV or pick a bundled table; read what was changed while reading "
                "it; plot each feature against the target.",
            ),
            (
                "pages/compare.py",
                "Compare models",
                "cross-validate trees, forests and boosters side by side, live.",
            ),
        ),
    ),
    (
        "Methods",
        (
            (
                "pages/optimal_shape_trees.py",
                "Optimal shape trees (Literati)",
                "an anytime search closes the gap between the best tree found (upper "
                "bound) and what no tree can beat (lower bound); certify any tree.",
            ),
            (
                "pages/conditional_density.py",
                "Conditional density (Partition Tree)",
                "the whole distribution p(y | x) and how it moves as you change a row.",
            ),
            (
                "pages/feature_ranking.py",
                "Feature ranking (TreeGrad)",
                "Shapley, Banzhaf and TreeGrad attributions of a tree model for one row.",
            ),
            (
                "pages/conditional_inference.py",
                "Conditional inference (CIT / CIF)",
                "splits chosen by permutation or asymptotic tests, with a p-value at every node.",
            ),
            (
                "pages/split_strategies.py",
                "Split strategies (DICS)",
                "which thresholds each candidate strategy tries, which it picks, and what "
                "that costs.",
            ),
        ),
    ),
    (
        "Learn",
        (
            (
                "pages/learn.py",
                "Lessons",
                "predict what a method will find, then see it (for a class: start here).",
            ),
            (
                "pages/learn_challenge.py",
                "Build your own tree",
                "grow a tree by hand and see how far it is from the proven optimum.",
            ),
            (
                "pages/learn_growth.py",
                "Watch a tree grow",
                "CART, a conditional inference tree or a Partition Tree, node by node.",
            ),
            (
                "pages/learn_predict.py",
                "Predict, then reveal",
                "questions on your own data, answered by the methods.",
            ),
            ("pages/learn_glossary.py", "Glossary", "the terms the pages use, in plain words."),
        ),
    ),
)

require_entrypoint("pages/home.py")
apply_link("home", home_link())
page_title("TreeLab")
st.markdown(
    "Explore decision-tree methods in the browser: load a table, pick a method, set its "
    "parameters and watch it work. Each method is checked against a reference "
    "implementation or a brute force."
)
ds = current_dataset(allow_missing=True)
if ds is not None:
    st.markdown(
        f"Dataset in use: {dataset_caption(ds)} Change it in the sidebar, or upload your "
        "own table on the Data page."
    )
for section, pages in SECTIONS:
    st.subheader(section)
    for script, title, what in pages:
        left, right = st.columns((1, 2), vertical_alignment="center")
        left.page_link(script, label=f"**{title}**")
        right.markdown(what)
engine = warmup.status(tuple(warmup.GROUPS))
if engine.done < engine.total:
    st.caption(
        f"The engine is compiling in the background ({engine.done} of {engine.total} kernel "
        "groups ready); "
        "a method page whose kernels are not ready yet shows their progress and opens by "
        "itself."
    )
