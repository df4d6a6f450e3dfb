"""TreeLab engine: data layer, tree arrays, background jobs and tree methods.

The engine never imports streamlit; everything here can be used from a notebook::

    from engine import load_bundled, make_dataset, from_sklearn
    df, report, entry = load_bundled("iris")
    ds = make_dataset(df, entry["target"])
"""

# isort: off
from engine import _numba  # noqa: F401  (sets NUMBA_CACHE_DIR before any kernel compiles)

# isort: on
import engine.cit  # noqa: F401  (registers the conditional inference models)
import engine.literati  # noqa: F401
import engine.partition  # noqa: F401
import engine.treegrad  # noqa: F401  (registers the TreeGrad warm-up)
from engine._numba import warm_up
from engine.cart import (
    STRATEGIES,
    CARTClassifier,
    CARTRegressor,
    candidate_thresholds,
    dics_dictionary,
)
from engine.compare import (
    ModelSpec,
    ParamSpec,
    available_models,
    cross_validate_steps,
    plan_comparison,
    register_model,
)
from engine.criteria import exhaustive_gains, threshold_gains
from engine.data import (
    DataError,
    Dataset,
    ParseReport,
    bundled_datasets,
    load_bundled,
    load_csv,
    make_dataset,
)
from engine.jobs import Job, JobContext
from engine.tree import TreeArrays, TreeEnsemble, from_sklearn

__all__ = [
    "DataError",
    "Dataset",
    "Job",
    "JobContext",
    "ModelSpec",
    "ParamSpec",
    "ParseReport",
    "TreeArrays",
    "TreeEnsemble",
    "available_models",
    "bundled_datasets",
    "cross_validate_steps",
    "from_sklearn",
    "load_bundled",
    "load_csv",
    "make_dataset",
    "plan_comparison",
    "register_model",
    "warm_up",
    "CARTClassifier",
    "CARTRegressor",
    "STRATEGIES",
    "candidate_thresholds",
    "dics_dictionary",
    "exhaustive_gains",
    "threshold_gains",
]
