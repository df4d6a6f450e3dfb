"""The glossary of the Learn section: the terms the lessons, the challenge and the method
pages use, each in two or three plain sentences (``GLOSSARY``: term -> definition, in
alphabetical order), and :func:`lookup` (case-insensitive, plural-tolerant).

Each term has an anchor on the glossary page (:func:`anchor`); :func:`link_terms` turns the
technical terms of a help text or caption (``LINKED_FORMS``) into Markdown links to them,
and :func:`glossary_links` lists the anchors a text links to.
"""

from __future__ import annotations

import re

GLOSSARY: dict[str, str] = {
    "AUC": (
        "Area under a curve; for insertion and deletion curves the mean of the curve's "
        "n + 1 points. Higher is better for insertion, lower for deletion."
    ),
    "alpha": (
        "The significance level of a test: a result counts as significant when its p-value "
        "is below alpha (0.05 by default), so a feature with no relation to the target is "
        "wrongly declared significant about alpha of the time."
    ),
    "Banzhaf value": (
        "An attribution that averages a feature's marginal contribution over every coalition "
        "of the other features, each coalition weighted equally (so coalitions of middle "
        "size dominate). Weighted Banzhaf(p) includes each other feature with probability p."
    ),
    "Bonferroni": (
        "A correction for testing many hypotheses: with m tests, each p-value is compared "
        "with alpha / m (or, equivalently, m x p with alpha), so that the chance of any "
        "false discovery stays below alpha."
    ),
    "breakpoint": (
        "A threshold inside a Literati shape function. With K sorted breakpoints a node "
        "cuts a feature into K + 1 intervals whose sides alternate left, right, left; "
        "K = 1 is an ordinary threshold split."
    ),
    "candidate threshold": (
        "A threshold the split search evaluates. Exhaustive CART takes every midpoint "
        "between neighbouring values; a candidate strategy (quantiles, k-means, DICS) "
        "proposes a few, trading a possibly worse split for less work."
    ),
    "coalition": (
        "A set of features whose values are known to the model while the others are "
        "averaged out; attributions compare a model's output with and without a feature "
        "over coalitions."
    ),
    "conditional density": (
        "p(y | x): how likely each target value is for the given features, a whole "
        "distribution instead of one predicted number. The Partition Tree estimates it as "
        "a histogram per cell of x."
    ),
    "deletion curve": (
        "The model's output as a sample's features are removed (averaged out) one by one "
        "in a ranking's order; a good ranking makes it fall fast."
    ),
    "depth": (
        "The number of splits on the longest path from the root to a leaf. A tree of depth "
        "D has at most 2^D leaves."
    ),
    "gap": (
        "Upper bound minus lower bound of an optimal search: how much better than the "
        "current tree the optimum could still be. A gap of 0 means the tree is proven "
        "optimal."
    ),
    "Gini impurity": (
        "1 - sum over classes of p_k^2 for the class fractions p_k of a node: 0 for a pure "
        "node, largest when the classes are equally mixed."
    ),
    "greedy": (
        "Building a tree one split at a time, each the best for its node alone, never "
        "revisiting earlier choices. Fast, but a split that looks useless now (xor) can be "
        "the best first move."
    ),
    "held-out": (
        "Rows kept out of training (the test split) to measure how a model does on data it "
        "has not seen; training rows flatter a model."
    ),
    "heteroscedastic": (
        "Of noise whose spread changes with x. A single predicted number cannot say that "
        "some predictions are much less certain than others; a density can."
    ),
    "impurity": (
        "How mixed the target values in a node are: Gini impurity or entropy for classes, "
        "the variance (squared error) for numbers. A split is good when its children are "
        "less impure than the parent."
    ),
    "impurity decrease": (
        "The parent's impurity minus the children's impurities weighted by their share of "
        "the rows; CART splits where it is largest. Trees weight it again by the node's "
        "share of all rows when they sum it into feature importances."
    ),
    "insertion curve": (
        "The model's output as a sample's features are revealed one by one in a ranking's "
        "order, starting from all averaged out; a good ranking makes it rise fast."
    ),
    "leaf": (
        "A node without children; every row ends in exactly one leaf, which predicts the "
        "majority class (or the mean) of its training rows."
    ),
    "lower bound": (
        "A proven limit: no tree in the search space has a smaller objective. Literati "
        "raises it while searching; when it meets the upper bound the incumbent is optimal."
    ),
    "mode": "A peak of a distribution: a value (or range) the target takes most often.",
    "multilinear extension": (
        "The game of a model extended from sets of features to weights z in [0, 1]^n: each "
        "feature is present with probability z_j. Its gradient at z gives Shapley (averaged "
        "over z), Banzhaf (z = 1/2) and the TreeGrad-Ranker's ascent."
    ),
    "negative log-likelihood": (
        "Minus the log of the density a model gives to the observed value, averaged over "
        "rows (in nats); lower is better. It rewards a density that is both right and "
        "confident."
    ),
    "objective": (
        "What an optimal tree minimises; in Literati the training errors plus a penalty per "
        "split and per breakpoint."
    ),
    "optimal": (
        "Best possible in the search space: no tree with the same depth and candidate "
        "thresholds has a lower objective. Proven when the lower bound meets the upper bound."
    ),
    "p-value": (
        "The probability, if the feature had no relation to the target, of a statistic at "
        "least as extreme as the one observed. Small p-values are evidence of a relation."
    ),
    "permutation test": (
        "A test that shuffles the target B times to see how related a feature looks by "
        "chance; the p-value is (1 + number of shuffles at least as extreme) / (B + 1), so "
        "it is never below 1 / (B + 1)."
    ),
    "point prediction": (
        "A single predicted value for each x (a regression tree's leaf mean), with no word "
        "on how spread out or multimodal the target is."
    ),
    "quantile": (
        "The value below which a given share of the rows lies; quantile candidates are the "
        "k - 1 values that cut the feature into k equal-count bins."
    ),
    "root": "The first node of a tree, holding every training row.",
    "selection bias": (
        "CART's preference for features with many distinct values: more thresholds give "
        "more chances to fit noise, so a useless feature can win the split."
    ),
    "shape function": (
        "A Literati node's rule: one feature with K sorted breakpoints; a row goes left "
        "when an even number of breakpoints lies below its value."
    ),
    "Shapley value": (
        "An attribution that averages a feature's marginal contribution over orderings of "
        "the features: every coalition size weighted equally. The attributions sum to the "
        "prediction minus the average prediction."
    ),
    "threshold": (
        "The value t of a split rule x <= t: rows with x at most t go left, the others right."
    ),
    "upper bound": (
        "The objective of the best tree found so far (the incumbent): the optimum is at most this."
    ),
}


def lookup(term: str) -> tuple[str, str] | None:
    """``(term, definition)`` for ``term`` (any case; a trailing 's' is tolerated), or
    ``None`` when it is not in the glossary."""
    wanted = term.strip().lower()
    for name, text in GLOSSARY.items():
        key = name.lower()
        if wanted in (key, key + "s") or wanted.rstrip("s") == key:
            return name, text
    return None


def sorted_terms() -> list[str]:
    """The glossary's terms in case-insensitive alphabetical order."""
    return sorted(GLOSSARY, key=str.lower)


#: The glossary page's URL path (``app.py``); links are relative to the app's base path.
GLOSSARY_PAGE = "glossary"

#: The words of a help text or caption that link to a glossary term: surface form (as
#: written, matched case-insensitively, a plural ``s`` tolerated) -> glossary term.  Only
#: technical terms: "depth", "root" or "leaf" in a widget's help would only add noise.
LINKED_FORMS: dict[str, str] = {
    "Gini impurity": "Gini impurity",
    "impurity decrease": "impurity decrease",
    "impurity": "impurity",
    "candidate threshold": "candidate threshold",
    "threshold": "threshold",
    "p-value": "p-value",
    "Bonferroni": "Bonferroni",
    "permutation test": "permutation test",
    "Shapley value": "Shapley value",
    "Shapley": "Shapley value",
    "Banzhaf value": "Banzhaf value",
    "Banzhaf": "Banzhaf value",
    "multilinear extension": "multilinear extension",
    "upper bound": "upper bound",
    "lower bound": "lower bound",
    "gap": "gap",
    "breakpoint": "breakpoint",
    "shape function": "shape function",
    "insertion curve": "insertion curve",
    "deletion curve": "deletion curve",
    "AUC": "AUC",
    "negative log-likelihood": "negative log-likelihood",
    "NLL": "negative log-likelihood",
    "conditional density": "conditional density",
    "selection bias": "selection bias",
    "coalition": "coalition",
    "quantile": "quantile",
    "heteroscedastic": "heteroscedastic",
}

# spans left alone: Markdown links, inline code, LaTeX, URLs
_PROTECTED = re.compile(r"\[[^\]]*\]\([^)]*\)|`[^`]*`|\$[^$]*\$|https?://\S+")
_FORMS = re.compile(
    r"(?<![\w\-/#\[])("
    + "|".join(re.escape(f) for f in sorted(LINKED_FORMS, key=len, reverse=True))
    + r")(s|es)?(?![\w\-])",
    re.IGNORECASE,
)
_LINK = re.compile(r"\]\(" + re.escape(GLOSSARY_PAGE) + r"#([a-z0-9\-]+)\)")


def anchor(term: str) -> str:
    """The anchor of ``term`` on the glossary page: lower case, runs of other characters
    than letters and digits turned into one hyphen (``"Gini impurity"`` ->
    ``"gini-impurity"``, ``"p-value"`` -> ``"p-value"``)."""
    return re.sub(r"[^a-z0-9]+", "-", term.lower()).strip("-")


def term_link(term: str, text: str | None = None) -> str:
    """A Markdown link to ``term`` on the glossary page, showing ``text`` (default the
    term).  Raises ``KeyError`` for a term not in :data:`GLOSSARY`."""
    if term not in GLOSSARY:
        raise KeyError(f"{term!r} is not a glossary term")
    return f"[{text or term}]({GLOSSARY_PAGE}#{anchor(term)})"


def link_terms(text: str | None) -> str | None:
    """``text`` (Markdown) with the first occurrence of each technical glossary term
    (:data:`LINKED_FORMS`) made a link to the glossary page, as written; links, inline
    code, LaTeX and URLs are left alone.  ``None`` (or anything not a string) is returned
    as is."""
    if not isinstance(text, str) or not text:
        return text
    done: set[str] = set()

    def one(match: re.Match) -> str:
        word = match.group(0)
        term = LINKED_FORMS[next(f for f in LINKED_FORMS if f.lower() == match.group(1).lower())]
        if term in done:
            return word
        done.add(term)
        return term_link(term, word)

    parts, last = [], 0
    for protected in _PROTECTED.finditer(text):
        parts.append(_FORMS.sub(one, text[last : protected.start()]))
        parts.append(protected.group(0))
        last = protected.end()
    parts.append(_FORMS.sub(one, text[last:]))
    return "".join(parts)


def glossary_links(text: str | None) -> list[str]:
    """The glossary anchors ``text`` links to (``[...](glossary#<anchor>)``), in order."""
    return _LINK.findall(text or "")


_LINKED_TEXT = re.compile(r"\[([^\]]*)\]\(" + re.escape(GLOSSARY_PAGE) + r"#[a-z0-9\-]+\)")


def unlink_terms(text: str | None) -> str | None:
    """``text`` with its glossary links turned back into their words: the inverse of
    :func:`link_terms` (``unlink_terms(link_terms(t)) == t``)."""
    if not isinstance(text, str):
        return text
    return _LINKED_TEXT.sub(r"\1", text)
