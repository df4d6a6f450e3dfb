"""CSV parsing, validation and the :class:`Dataset` every method of the engine consumes.

Two steps, both pure functions of their inputs (no streamlit here):

1. :func:`load_csv` turns bytes or a path into a :class:`pandas.DataFrame` plus a
   :class:`ParseReport`: the detected encoding, delimiter, decimal mark and thousands
   separator, a per-column type, and every automatic change with its count (stray texts
   read as missing, percentages and amounts read as numbers, yes/no spellings unified,
   codes with leading zeros kept as text, dates, identifier columns, empty rows and
   columns removed).
2. :func:`make_dataset` turns a DataFrame and a target column into a :class:`Dataset`:
   ``X`` float64 C-contiguous, ``y`` int64 class codes or float64 values, categorical
   features as integer codes plus their labels (as written in the file), and the rows
   each step dropped, with the reason.

Every problem with the user's data that cannot be worked around raises :class:`DataError`
(a ``ValueError``) whose message names the column or file and says how to fix it, in plain
words, so the app can show it as is.  Problems that can be worked around are worked around
and reported, never silently: see ``docs/data.md`` for the rules.

Design choices worth knowing:

* ``decimal=None`` (the default) means "detect": ``'.'`` unless the file is not
  comma-separated and its numbers look like ``1,5`` (then ``','``).  An explicit
  ``decimal`` always wins.  ``thousands=None`` likewise means "detect" (``'.'`` in
  ``1.234,5`` or ``','`` in ``"1,234.5"``, only when no number in the sample contradicts
  it); pass ``thousands=''`` to switch detection off.
* Values are kept as written: a yes/no column written with two spellings stays text
  (``'yes'``/``'no'``), only true/false columns (and columns mixing several yes/no
  spellings) are boolean.
* Identifier-like columns (names, IDs, row numbers, free text) are left out of the
  features by default, with a warning; a many-level categorical column keeps its most
  frequent levels plus ``'other'`` (or is left out); a class too small for a stratified
  split is kept with a warning (or dropped).  Each choice is an argument of
  :func:`make_dataset`.
* :func:`train_test_rows` is the one seeded train/test split: stratified when it can be,
  else plain with a note saying why.

Modules: :mod:`engine.data.parsing` (:func:`load_csv`; its columns cleaned by
:mod:`engine.data.cleaning`), :mod:`engine.data.parse_report` (:class:`ParseReport`),
:mod:`engine.data.sniffing` (bytes, encoding, delimiter and number format before parsing),
:mod:`engine.data.values` (recognising what cells hold),
:mod:`engine.data.validation` (:func:`make_dataset`; its options in
:mod:`engine.data.options`, the columns read by :mod:`engine.data.columns` and encoded by
:mod:`engine.data.encoding`), :mod:`engine.data.dataset` (:class:`Dataset`),
:mod:`engine.data.splitting` (:func:`train_test_rows`),
:mod:`engine.data.subsample` (:func:`stratified_subsample`, :func:`subsample_dataset`),
:mod:`engine.data.bundled` (the bundled datasets), :mod:`engine.data.errors`
(:class:`DataError`).
"""

from engine.data.binning import binned_counts
from engine.data.bundled import DATASETS_DIR, bundled_datasets, load_bundled
from engine.data.errors import DataError
from engine.data.options import (
    DEFAULT_MISSING,
    LEVEL_CAP_LABEL,
    MANY_LEVEL_CHOICES,
    MANY_LEVEL_OPTIONS,
    MANY_LEVELS_LABEL,
    MAX_CATEGORIES,
    MAX_CLASSES_INFERRED,
    MISSING_CHOICES,
    MISSING_LABEL,
    MISSING_OPTIONS,
    OTHER_LEVEL,
    SMALL_CLASS_CHOICES,
    SMALL_CLASS_OPTIONS,
    SMALL_CLASSES_LABEL,
)
from engine.data.parsing import (
    DEFAULT_NA_VALUES,
    MAX_BYTES,
    MAX_COLUMNS,
    MAX_ROWS,
    ParseReport,
    load_csv,
)
from engine.data.splitting import RowSplit, train_test_rows
from engine.data.subsample import Subsample, stratified_subsample, subsample_dataset
from engine.data.validation import Dataset, make_dataset

__all__ = [
    "binned_counts",
    "Subsample",
    "stratified_subsample",
    "subsample_dataset",
    "DATASETS_DIR",
    "DEFAULT_NA_VALUES",
    "MAX_BYTES",
    "MAX_CATEGORIES",
    "MAX_COLUMNS",
    "MAX_CLASSES_INFERRED",
    "MAX_ROWS",
    "LEVEL_CAP_LABEL",
    "MANY_LEVEL_CHOICES",
    "MANY_LEVEL_OPTIONS",
    "MANY_LEVELS_LABEL",
    "DEFAULT_MISSING",
    "MISSING_CHOICES",
    "MISSING_LABEL",
    "SMALL_CLASS_CHOICES",
    "SMALL_CLASSES_LABEL",
    "MISSING_OPTIONS",
    "OTHER_LEVEL",
    "SMALL_CLASS_OPTIONS",
    "DataError",
    "Dataset",
    "ParseReport",
    "RowSplit",
    "bundled_datasets",
    "load_bundled",
    "load_csv",
    "make_dataset",
    "train_test_rows",
]
