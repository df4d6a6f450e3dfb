"""CSV parsing, validation and the :class:`Dataset` every method of the engine consumes.

Two steps, both pure functions of their inputs (no streamlit here):

1. :func:`load_csv` turns bytes or a path into a :class:`pandas.DataFrame` plus a
   :class:`ParseReport`: the detected encoding, delimiter, decimal mark and thousands
   separator, a per-column type, the stray text values read as missing, and the empty
   columns and rows that were removed.
2. :func:`make_dataset` turns a DataFrame and a target column into a :class:`Dataset`:
   ``X`` float64 C-contiguous, ``y`` int64 class codes or float64 values, categorical
   features as integer codes plus their labels.

Every problem with the user's data raises :class:`DataError` (a ``ValueError``) whose
message names the column or file and says how to fix it, in plain words, so the app can
show it as is.

Design choices worth knowing:

* ``decimal=None`` (the default) means "detect": ``'.'`` unless the file is not
  comma-separated and its numbers look like ``1,5`` (then ``','``).  An explicit
  ``decimal`` always wins.  ``thousands=None`` likewise means "detect" (``'.'`` in
  ``1.234,5`` or ``','`` in ``"1,234.5"``, only when no number in the sample contradicts
  it); pass ``thousands=''`` to switch detection off.
* A text feature with more than ``max_categories`` distinct values (an ID or a name
  column) raises :class:`DataError` rather than being dropped silently: dropping a column
  the user meant to use changes the model behind their back.  The ``features`` argument of
  :func:`make_dataset` lets the app leave such columns out.
* Constant feature columns and all-empty columns are dropped with a warning (they cannot
  carry a split); all-empty rows are dropped and counted.

Modules: :mod:`engine.data.parsing` (:func:`load_csv`, :class:`ParseReport`),
:mod:`engine.data.validation` (:func:`make_dataset`, :class:`Dataset`),
:mod:`engine.data.bundled` (the bundled datasets), :mod:`engine.data.errors`
(:class:`DataError`).
"""

from engine.data.bundled import DATASETS_DIR, bundled_datasets, load_bundled
from engine.data.errors import DataError
from engine.data.parsing import (
    DEFAULT_NA_VALUES,
    MAX_BYTES,
    MAX_COLUMNS,
    MAX_ROWS,
    ParseReport,
    load_csv,
)
from engine.data.validation import MAX_CATEGORIES, MAX_CLASSES_INFERRED, Dataset, make_dataset

__all__ = [
    "DATASETS_DIR",
    "DEFAULT_NA_VALUES",
    "MAX_BYTES",
    "MAX_CATEGORIES",
    "MAX_COLUMNS",
    "MAX_CLASSES_INFERRED",
    "MAX_ROWS",
    "DataError",
    "Dataset",
    "ParseReport",
    "bundled_datasets",
    "load_bundled",
    "load_csv",
    "make_dataset",
]
