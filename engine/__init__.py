"""TreeLab engine: data layer, tree arrays, background jobs and tree methods.

The engine never imports streamlit; everything here can be used from a notebook::

    from engine import load_bundled, make_dataset, from_sklearn
    df, report, entry = load_bundled("iris")
    ds = make_dataset(df, entry["target"])

Names are imported on first use (PEP 562), so ``import engine.data`` does not pay for
numba, scikit-learn and every method's kernels: the app's first page draws without them.
:func:`engine.compare.available_models` imports every method (each registers its models).
"""

from engine._cache_dir import ensure_cache_dir as _ensure_cache_dir

_ensure_cache_dir()  # before anything imports numba (see engine/_cache_dir.py)

#: Public name -> module that defines it.
_LAZY = {
    "warm_up": "engine.warmup",
    "STRATEGIES": "engine.cart",
    "candidate_thresholds": "engine.cart",
    "dics_dictionary": "engine.cart",
    "CARTClassifier": "engine.cart",
    "CARTRegressor": "engine.cart",
    "ModelSpec": "engine.compare",
    "ParamSpec": "engine.compare",
    "available_models": "engine.compare",
    "cross_validate_steps": "engine.compare",
    "plan_comparison": "engine.compare",
    "register_model": "engine.compare",
    "exhaustive_gains": "engine.criteria",
    "threshold_gains": "engine.criteria",
    "DataError": "engine.data",
    "Dataset": "engine.data",
    "ParseReport": "engine.data",
    "bundled_datasets": "engine.data",
    "load_bundled": "engine.data",
    "load_csv": "engine.data",
    "make_dataset": "engine.data",
    "Job": "engine.jobs",
    "JobContext": "engine.jobs",
    "JobSlots": "engine.jobs",
    "TreeArrays": "engine.tree",
    "TreeEnsemble": "engine.tree",
    "from_sklearn": "engine.tree",
    "from_lightgbm": "engine.tree",
    "from_xgboost": "engine.tree",
    "load_model_dump": "engine.tree",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
