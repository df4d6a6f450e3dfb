"""The options of :func:`engine.data.make_dataset` and the Data page's names for them."""

#: Default limit on distinct values of a categorical feature in ``make_dataset``.
MAX_CATEGORIES = 50
#: An integer-valued numeric target with at most this many distinct values is a class label.
MAX_CLASSES_INFERRED = 20
#: The choices of ``missing``, ``small_classes`` and ``many_levels``.
MISSING_OPTIONS = ("error", "drop", "keep")
SMALL_CLASS_OPTIONS = ("keep", "drop")
MANY_LEVEL_OPTIONS = ("other", "leave_out", "error")
#: Label of the level grouping the rarest levels of a many-level categorical column.
OTHER_LEVEL = "other"
#: The Data page's names for the settings, so that messages name what the user can change
#: in the app first (the parameter follows in parentheses); pages/data.py draws its
#: widgets with these labels.
LEVEL_CAP_LABEL = "Level cap"
MANY_LEVELS_LABEL = "Categorical columns above the cap"
MANY_LEVEL_CHOICES = {
    "other": "keep the most frequent levels, group the rest as 'other'",
    "leave_out": "leave the column out",
}
SMALL_CLASSES_LABEL = "Classes with fewer than 2 rows"
SMALL_CLASS_CHOICES = {
    "keep": "keep them (splits are then not stratified)",
    "drop": "drop their rows",
}
MISSING_LABEL = "Rows with missing values"
#: short enough to fit the sidebar's select box (about 24 characters at 1280 px wide)
MISSING_CHOICES = {
    "keep": "keep (trees route them)",
    "drop": "drop those rows",
    "error": "stop with an error",
}
#: the sidebar's default: tree methods handle missing values themselves (issue 14)
DEFAULT_MISSING = "keep"
