"""scikit-learn's own estimator checks on every public estimator of the engine (issue 19),
their constraint tables, their numpydoc, and the Compare page's widgets read from those
tables (issue 15, point 5).

Oracle: :func:`sklearn.utils.estimator_checks.parametrize_with_checks` (the suite
``check_estimator`` runs) and ``check_param_validation`` (the check scikit-learn runs on its
own estimators' ``_parameter_constraints``).  No check is expected to fail; the only skip is
scikit-learn's own: ``check_array_api_input`` needs ``SCIPY_ARRAY_API=1`` set before scipy is
imported, so :func:`test_array_api_input_with_dispatch_enabled` runs it in a fresh process.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import pkgutil
import re
import subprocess
import sys
import warnings
from numbers import Integral
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks

import engine
from engine import CARTClassifier, CARTRegressor
from engine.cit import (
    ConditionalInferenceForestClassifier,
    ConditionalInferenceForestRegressor,
    ConditionalInferenceTreeClassifier,
    ConditionalInferenceTreeRegressor,
)
from engine.cit.tree import THRESHOLD_METHODS
from engine.compare import (
    REGISTRY,
    ModelSpec,
    ParamSpec,
    check_model_spec,
    param_spec,
    register_model,
)
from engine.data import DataError
from engine.literati import GreedyShapeTreeClassifier, LiteratiClassifier
from engine.partition import (
    PartitionForestClassifier,
    PartitionForestRegressor,
    PartitionTreeClassifier,
    PartitionTreeRegressor,
)

ROOT = Path(__file__).resolve().parents[1]


def _estimators():
    """One instance per public estimator, with small settings so the ~650 checks run in
    about a minute: Literati at depth 2 with a time limit it never reaches on the checks'
    data (every search is proven optimal, so fits are deterministic), forests of 5 trees.
    """
    return [
        CARTClassifier(),
        CARTRegressor(),
        LiteratiClassifier(max_depth=2, time_limit=60.0),
        GreedyShapeTreeClassifier(),
        ConditionalInferenceTreeClassifier(),
        ConditionalInferenceTreeRegressor(),
        ConditionalInferenceForestClassifier(n_estimators=5),
        ConditionalInferenceForestRegressor(n_estimators=5),
        PartitionTreeRegressor(),
        PartitionTreeClassifier(),
        PartitionForestRegressor(n_estimators=5),
        PartitionForestClassifier(n_estimators=5),
    ]


#: CART's constraint table and docstrings belong to the CART package's own issue; every
#: other estimator here has a table and numpydoc sections.
_TABLED = list(_estimators())


def _name(estimator) -> str:
    return type(estimator).__name__


# -- scikit-learn's estimator checks -------------------------------------------------------------


@pytest.mark.slow  # about 650 checks: a minute or more in all
@parametrize_with_checks(_estimators())
def test_sklearn_estimator_checks(estimator, check):
    """Every check of ``check_estimator`` (no expected failures, no tag-based skips)."""
    with warnings.catch_warnings():
        # the checks fit on tiny data; a forest warns about nothing, but joblib / numpy may
        warnings.simplefilter("ignore", RuntimeWarning)
        check(estimator)


@pytest.mark.parametrize("estimator", _TABLED, ids=_name)
def test_parameter_constraint_table(estimator):
    """One constraint per constructor parameter, and a bad type or value of any of them
    raises ``InvalidParameterError`` from ``fit`` with scikit-learn's message naming the
    parameter (scikit-learn runs this check on its own estimators)."""
    assert "_parameter_constraints" in vars(type(estimator)), "a table of its own"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_param_validation(_name(estimator), estimator)


@pytest.mark.slow  # a fresh interpreter that imports the engine and runs the check
def test_array_api_input_with_dispatch_enabled():
    """scikit-learn skips ``check_array_api_input`` unless ``SCIPY_ARRAY_API=1`` is set
    before scipy is imported: run it in a fresh interpreter with the variable set, on every
    estimator (numpy namespace, as for estimators without array API support)."""
    code = """
import warnings
from sklearn.utils.estimator_checks import check_array_api_input
from tests.test_estimator_checks import _estimators
for est in _estimators():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_array_api_input(
            type(est).__name__, est, array_namespace="numpy", expect_only_array_outputs=False
        )
    print("passed", type(est).__name__)
"""
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    passed = re.findall(r"^passed (\w+)$", out.stdout, flags=re.M)
    assert passed == [_name(e) for e in _estimators()]


def _public_estimator_classes():
    """Every public classifier / regressor class defined in the engine package."""
    found = set()
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and not name.startswith("_")
                and obj.__module__.startswith("engine.")
                and issubclass(obj, BaseEstimator)
                and issubclass(obj, (ClassifierMixin, RegressorMixin))
            ):
                found.add(obj)
    return found


def test_every_public_estimator_is_checked():
    """A classifier or regressor added to the engine later joins this suite (or fails here)."""
    found = _public_estimator_classes()
    assert len(found) >= 12
    assert found == {type(e) for e in _estimators()}


# -- bad input gets scikit-learn's messages ------------------------------------------------------


@pytest.mark.parametrize("estimator", _estimators(), ids=_name)
def test_nan_and_sparse_are_refused_with_scikit_learns_messages(estimator):
    """An estimator whose trees do not route missing values (``allow_nan`` False) refuses
    NaN in X with scikit-learn's message; one that does (``allow_nan`` True) fits and
    predicts rows with NaN (finite predictions) and still refuses infinity.  Sparse X is
    refused with scikit-learn's TypeError; the tags say so."""
    import scipy.sparse

    rng = np.random.RandomState(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int) if isinstance(estimator, ClassifierMixin) else X[:, 0]
    tags = estimator.__sklearn_tags__()
    assert not tags.input_tags.sparse
    X_nan = X.copy()
    X_nan[4, 2] = np.nan
    X_nan[7, 0] = np.nan
    if tags.input_tags.allow_nan:
        fitted = estimator.fit(X_nan, y)
        prediction = np.asarray(fitted.predict(X_nan))
        assert prediction.shape == (30,)
        if not isinstance(estimator, ClassifierMixin):
            assert np.isfinite(prediction).all()
        X_inf = X.copy()
        X_inf[4, 2] = np.inf
        with pytest.raises(ValueError, match="Input X contains infinity"):
            estimator.fit(X_inf, y)
    else:
        with pytest.raises(ValueError, match="Input X contains NaN"):
            estimator.fit(X_nan, y)
    with pytest.raises(TypeError, match="Sparse data was passed"):
        estimator.fit(scipy.sparse.csr_matrix(X), y)
    fitted = estimator.fit(X, y)
    if not tags.input_tags.allow_nan:
        with pytest.raises(ValueError, match="Input X contains NaN"):
            fitted.predict(X_nan)
    with pytest.raises(ValueError, match="expecting 3 features"):
        fitted.predict(X[:, :2])


@pytest.mark.parametrize(
    "estimator",
    [
        LiteratiClassifier(),
        GreedyShapeTreeClassifier(),
        PartitionTreeRegressor(),
        PartitionForestClassifier(),
    ],
    ids=_name,
)
def test_data_errors_stay_data_errors(estimator):
    """Literati and Partition report bad data as :class:`engine.data.DataError` (a
    ValueError the pages show), with scikit-learn's message inside."""
    X = np.zeros((0, 2))
    with pytest.raises(DataError, match="0 sample"):
        estimator.fit(X, np.zeros(0))


# -- constraint tables: messages, and the Compare page's widgets ----------------------------------


def test_bad_parameter_messages_name_the_parameter_and_the_allowed_values():
    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10) % 2
    cases = [
        (
            LiteratiClassifier(max_depth=9),
            r"The 'max_depth' parameter of LiteratiClassifier must be an int in the range "
            r"\[1, 8\]\. Got 9 instead\.",
        ),
        (
            ConditionalInferenceTreeRegressor(selector="mc"),
            r"The 'selector' parameter of ConditionalInferenceTreeRegressor must be a str "
            r"among \{'pc'\} or None\. Got 'mc' instead\.",
        ),
        (
            ConditionalInferenceForestClassifier(max_samples=1.5),
            r"The 'max_samples' parameter of ConditionalInferenceForestClassifier must be an "
            r"int in the range \[1, inf\), a float in the range \(0\.0, 1\.0\] or None\. "
            r"Got 1\.5 instead\.",
        ),
        (
            PartitionForestRegressor(aggregation="median"),
            r"The 'aggregation' parameter of PartitionForestRegressor must be a str among "
            r"\{'(un)?normalised', '(un)?normalised'\}\. Got 'median' instead\.",
        ),
    ]
    for est, match in cases:
        with pytest.raises(InvalidParameterError, match=match):
            est.fit(X, y)


def test_literati_checks_the_items_of_a_candidate_leaves_sequence():
    """The one rule the table cannot express: every item of a B_d sequence is an int >= 2
    or None; refused with the table's message format."""
    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10) % 2
    for bad in [(), (8, 1), [4, "8"], (True, 4)]:
        with pytest.raises(InvalidParameterError, match="'candidate_leaves' parameter"):
            LiteratiClassifier(candidate_leaves=bad).fit(X, y)
    fitted = GreedyShapeTreeClassifier(candidate_leaves=[4, None]).fit(X, y)
    assert fitted.candidate_leaves_ == [4, 0]


def _interval(estimator, name):
    return next(c for c in type(estimator)._parameter_constraints[name] if isinstance(c, Interval))


def test_compare_widgets_read_the_constraint_tables():
    """Every registered model's widgets agree with its estimators' tables (also checked
    at registration), and the TreeLab widgets' ranges and choices are the tables' own."""
    for spec in REGISTRY.values():
        check_model_spec(spec)
    literati = {p.name: p for p in REGISTRY["treelab_literati"].params}
    depth = _interval(LiteratiClassifier(), "max_depth")
    assert (literati["max_depth"].low, literati["max_depth"].high) == (depth.left, depth.right)
    kmax = _interval(LiteratiClassifier(), "max_breakpoints")
    assert (literati["max_breakpoints"].low, literati["max_breakpoints"].high) == (1, 4)
    assert (kmax.left, kmax.right) == (1, 4)
    greedy = {p.name: p for p in REGISTRY["treelab_greedy_shape"].params}
    assert greedy["max_depth"] == literati["max_depth"]
    cit = {p.name: p for p in REGISTRY["treelab_cit"].params}
    assert cit["max_depth"].kind == "int_or_none"  # None is allowed by the table
    assert (
        cit["min_samples_leaf"].low
        == _interval(ConditionalInferenceTreeClassifier(), "min_samples_leaf").left
    )
    options = next(
        c
        for c in ConditionalInferenceTreeClassifier._parameter_constraints["n_resamples_selector"]
        if isinstance(c, StrOptions)
    )
    assert set(cit["n_resamples_selector"].choices) == options.options


def test_param_spec_derives_kind_bounds_and_choices():
    assert param_spec(LiteratiClassifier, "max_depth", 3) == ParamSpec("max_depth", 3, "int", 1, 8)
    assert param_spec(ConditionalInferenceTreeClassifier, "max_depth", 0, high=50) == (
        ParamSpec("max_depth", 0, "int_or_none", 0, 50)
    )
    method = param_spec(ConditionalInferenceTreeClassifier, "threshold_method", "exact")
    assert method.kind == "choice" and method.choices == tuple(sorted(THRESHOLD_METHODS))
    with pytest.raises(ValueError, match="outside"):
        param_spec(LiteratiClassifier, "max_depth", 3, high=9)
    with pytest.raises(ValueError, match="no finite closed right bound"):
        param_spec(LiteratiClassifier, "time_limit", 5.0, low=1.0)
    with pytest.raises(ValueError, match="not allowed"):
        param_spec(ConditionalInferenceTreeClassifier, "splitter", "gini", choices=("mse",))

    class Narrower(LiteratiClassifier):
        _parameter_constraints = {
            **LiteratiClassifier._parameter_constraints,
            "max_depth": [Interval(Integral, 1, 5, closed="both")],
        }

    # a table change moves the widget with it
    assert param_spec(Narrower, "max_depth", 3).high == 5


def test_register_model_refuses_a_widget_its_table_refuses():
    def build(task, random_state, max_depth):
        return LiteratiClassifier(max_depth=max_depth, random_state=random_state)

    spec = ModelSpec(
        key="test_bad_literati",
        label="bad",
        build=build,
        tasks=("classification",),
        params=(ParamSpec("max_depth", 3, "int", 1, 9),),
    )
    with pytest.raises(ValueError, match=r"max_depth=9 \(classification\): The 'max_depth'"):
        register_model(spec)
    assert "test_bad_literati" not in REGISTRY
    typo = ModelSpec(
        key="test_typo",
        label="typo",
        build=lambda task, random_state, depth: LiteratiClassifier(),
        tasks=("classification",),
        params=(ParamSpec("depth", 3, "int", 1, 8),),
    )
    with pytest.raises(ValueError, match="no estimator built by 'test_typo' has it"):
        register_model(typo)
    assert "test_typo" not in REGISTRY


# -- numpydoc ----------------------------------------------------------------------------------


def _section(doc: str, title: str) -> str:
    match = re.search(
        rf"^ *{title}\n *-{{{len(title)}}}\n(.*?)(?=^ *\w[\w ]*\n *-{{3,}}\n|\Z)", doc, re.M | re.S
    )
    return match.group(1) if match else ""


@pytest.mark.parametrize("estimator", _TABLED, ids=_name)
def test_numpydoc_sections_document_every_parameter(estimator):
    """Parameters (every constructor parameter, once), Attributes and Examples sections."""
    doc = inspect.cleandoc(type(estimator).__doc__)
    params = _section(doc, "Parameters")
    documented = []
    for line in params.splitlines():
        match = re.match(r"^(\w+(?:, \w+)*) :", line)
        if match:
            documented += match.group(1).split(", ")
    assert sorted(documented) == sorted(estimator.get_params(deep=False))
    assert re.search(r"^\w+_ :", _section(doc, "Attributes"), re.M)
    assert ">>>" in _section(doc, "Examples")


@pytest.mark.parametrize("estimator", _TABLED, ids=_name)
def test_docstring_examples_run(estimator):
    """The Examples sections are doctests that pass."""
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(type(estimator), globs={})
    assert tests and tests[0].examples
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
