"""R partykit's ``ctree`` as an oracle for tests and benchmarks (Debian ``r-cran-partykit``,
run through ``Rscript``; never called by the app's pages).

:func:`run_ctree` writes the rows to a temporary CSV, fits ``ctree(y ~ ., data, control =
ctree_control(...))`` in a fresh ``Rscript`` process (``system.time`` around the ``ctree``
call only) and parses every node's tests and split.  Categorical features are written as
zero-padded level labels (``L000``, ``L001``, ...) so that R's factor levels sort in the
same order as our integer codes (the order in which libcoin enumerates level splits).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

R_SCRIPT = r"""
suppressMessages(library(partykit))
a <- commandArgs(TRUE)
d <- read.csv(a[1], stringsAsFactors = TRUE)
if (a[2] == "classification") d$y <- factor(d$y)
testtype <- a[4]
ctl <- ctree_control(teststat = a[3], splitstat = a[3], testtype = testtype,
                     alpha = as.numeric(a[5]), minsplit = as.integer(a[6]),
                     minbucket = as.integer(a[7]), minprob = as.numeric(a[8]),
                     maxdepth = if (a[9] == "Inf") Inf else as.integer(a[9]),
                     nresample = as.integer(a[10]), majority = a[13] == "1")
reps <- as.integer(a[11])
# peak resident memory of the fit: reset the high-water mark (Linux clear_refs), then read
# VmHWM - VmRSS before (MiB; NA where /proc does not allow it)
status_mb <- function(field) {
  s <- readLines("/proc/self/status")
  as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", s[startsWith(s, field)])) / 1024
}
best <- Inf
peak <- NA
for (i in seq_len(reps)) {
  set.seed(i)
  invisible(gc())
  before <- tryCatch({
    cat("5", file = "/proc/self/clear_refs")
    status_mb("VmRSS:")
  }, error = function(e) NA)
  t <- system.time(m <- ctree(y ~ ., data = d, control = ctl))[["elapsed"]]
  if (i == 1) peak <- status_mb("VmHWM:") - before
  best <- min(best, t)
}
cat("TIME", best, "\n", sep = "\t")
cat("MEMORY", peak, "\n", sep = "\t")
cat("NODES", length(m), "\n", sep = "\t")
if (a[12] == "1") {
  f <- function(v) sprintf("%.17g", v)
  walk <- function(nd) {
    id <- id_node(nd)
    crit <- info_node(nd)$criterion
    if (!is.null(crit)) {
      for (v in colnames(crit))
        cat("TEST", id, v, f(crit["statistic", v]), f(crit["p.value", v]), "\n", sep = "\t")
    }
    s <- split_node(nd)
    if (is.null(s)) {
      cat("LEAF", id, "\n", sep = "\t")
    } else {
      v <- names(m$data)[varid_split(s)]
      br <- breaks_split(s)
      if (!is.null(br)) {
        cat("SPLIT", id, v, "num", f(br), "\n", sep = "\t")
      } else {
        idx <- index_split(s)
        levs <- levels(m$data[[v]])
        left <- levs[!is.na(idx) & idx == 1L]
        cat("SPLIT", id, v, "cat", paste(left, collapse = "|"), "\n", sep = "\t")
      }
      for (k in kids_node(nd)) walk(k)
    }
  }
  walk(node_party(m))
  cat("PREDICT", predict(m, newdata = d, type = "node"), "\n", sep = "\t")
}
"""


@dataclass
class CtreeNode:
    """One node of a fitted ``ctree`` in preorder: ``split`` is None at a leaf, else
    ``(feature index, 'num', break)`` (left: ``x <= break``) or ``(feature index, 'cat',
    frozenset of the codes going to the first kid)``; ``tests`` maps a feature index to
    ``(statistic, p-value)`` as partykit reports them (adjusted with Bonferroni)."""

    id: int
    split: tuple | None = None
    tests: dict = field(default_factory=dict)


def have_partykit() -> bool:
    """Whether ``Rscript`` runs and loads partykit."""
    if shutil.which("Rscript") is None:
        return False
    r = subprocess.run(
        ["Rscript", "-e", "suppressMessages(library(partykit))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.returncode == 0


def frame_for_r(X, y, task: str, categorical=None) -> pd.DataFrame:
    """The rows as R reads them: columns ``f0, f1, ...`` (categorical codes as ``L000``
    labels) and ``y`` (class codes as ``c0, c1, ...`` labels)."""
    X = np.asarray(X, dtype=np.float64)
    cat = np.zeros(X.shape[1], dtype=bool) if categorical is None else np.asarray(categorical)
    cols = {}
    for j in range(X.shape[1]):
        if cat[j]:
            cols[f"f{j}"] = [None if np.isnan(v) else f"L{int(v):03d}" for v in X[:, j]]
        else:
            cols[f"f{j}"] = X[:, j]
    frame = pd.DataFrame(cols)
    if task == "classification":
        frame["y"] = [f"c{int(v)}" for v in np.asarray(y)]
    else:
        frame["y"] = np.asarray(y, dtype=np.float64)
    return frame


def run_ctree(
    X,
    y,
    task: str,
    *,
    categorical=None,
    teststat: str = "quadratic",
    testtype: str = "Bonferroni",
    alpha: float = 0.05,
    minsplit: int = 20,
    minbucket: int = 7,
    minprob: float = 0.01,
    maxdepth: int | None = None,
    nresample: int = 9999,
    repeats: int = 1,
    nodes: bool = True,
    majority: bool = False,
    timeout: float = 3600.0,
) -> dict:
    """Fit ``ctree`` on ``X`` (n, p) and ``y`` in R; returns ``{"seconds": best elapsed of
    ``repeats`` fits (``system.time``), "peak_mb": the rise of the process's resident
    memory during the first fit (MiB, Linux ``VmHWM`` after resetting it; nan elsewhere),
    "n_nodes": nodes of the tree, "nodes": [CtreeNode] in preorder (empty unless
    ``nodes``), "predict": ctree's node of every row (``predict(type = "node")``, int64
    (n,), 1-based preorder ids; with ``nodes``)}``.  ``testtype`` is ctree's ('Bonferroni',
    'Univariate', 'MonteCarlo'); ``majority`` is ``ctree_control``'s (NaN in ``X`` is
    written as R's NA).

    Raises RuntimeError with R's message when Rscript fails."""
    frame = frame_for_r(X, y, task, categorical)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "data.csv"
        script = Path(tmp) / "ctree.R"
        frame.to_csv(csv, index=False, na_rep="NA")
        script.write_text(R_SCRIPT)
        args = [
            task,
            teststat,
            testtype,
            repr(float(alpha)),
            str(int(minsplit)),
            str(int(minbucket)),
            repr(float(minprob)),
            "Inf" if maxdepth is None else str(int(maxdepth)),
            str(int(nresample)),
            str(int(repeats)),
            "1" if nodes else "0",
            "1" if majority else "0",
        ]
        r = subprocess.run(
            ["Rscript", str(script), str(csv), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if r.returncode != 0:
        raise RuntimeError(f"Rscript failed: {r.stderr[-2000:]}")
    return parse_output(r.stdout)


def parse_output(text: str) -> dict:
    """Parse :data:`R_SCRIPT`'s output (``TIME``, ``TEST``, ``LEAF``, ``SPLIT`` lines)."""
    seconds = np.nan
    peak_mb = np.nan
    n_nodes = 0
    predict = np.zeros(0, dtype=np.int64)
    out: list[CtreeNode] = []
    by_id: dict[int, CtreeNode] = {}

    def node(i):
        if i not in by_id:
            by_id[i] = CtreeNode(i)
            out.append(by_id[i])
        return by_id[i]

    for line in text.splitlines():
        parts = [p for p in line.rstrip("\n").split("\t")]
        while parts and parts[-1].strip() == "":
            parts.pop()
        if not parts:
            continue
        kind = parts[0]
        if kind == "TIME":
            seconds = float(parts[1])
        elif kind == "MEMORY":
            peak_mb = float(parts[1]) if parts[1] not in ("NA", "-Inf") else np.nan
        elif kind == "NODES":
            n_nodes = int(parts[1])
        elif kind == "PREDICT":
            predict = np.array([int(v) for v in parts[1:]], dtype=np.int64)
        elif kind == "TEST":
            nd = node(int(parts[1]))
            nd.tests[int(parts[2][1:])] = (float(parts[3]), float(parts[4]))
        elif kind == "LEAF":
            node(int(parts[1]))
        elif kind == "SPLIT":
            nd = node(int(parts[1]))
            j = int(parts[2][1:])
            if parts[3] == "num":
                nd.split = (j, "num", float(parts[4]))
            else:
                labels = parts[4].split("|") if len(parts) > 4 and parts[4] else []
                nd.split = (j, "cat", frozenset(int(lab[1:]) for lab in labels))
    out.sort(key=lambda nd: nd.id)
    return {
        "seconds": seconds,
        "peak_mb": peak_mb,
        "n_nodes": n_nodes,
        "nodes": out,
        "predict": predict,
    }


def node_rows(tree, X) -> dict[int, np.ndarray]:
    """Rows (int64 indices into ``X``) of every node of a fitted ``TreeArrays`` as its
    prediction routes them (NaN by ``missing_go_to_left``)."""
    rows = {0: np.arange(X.shape[0])}
    stack = [0]
    while stack:
        v = stack.pop()
        left, right = int(tree.children_left[v]), int(tree.children_right[v])
        if left < 0:
            continue
        r = rows[v]
        f = int(tree.feature[v])
        if tree.cat_offsets is not None and tree.cat_offsets[v + 1] > tree.cat_offsets[v]:
            cats = tree.cat_values[tree.cat_offsets[v] : tree.cat_offsets[v + 1]]
            go = np.isin(X[r, f], cats)
        else:
            go = X[r, f] <= tree.threshold[v]
        if tree.missing_go_to_left is not None:
            go = np.where(np.isnan(X[r, f]), bool(tree.missing_go_to_left[v]), go)
        rows[left], rows[right] = r[go], r[~go]
        stack += [left, right]
    return rows


def compare_with_ctree(est, X, nodes, *, p_floor: float = 0.0) -> dict:
    """Compare a fitted conditional inference tree (asymptotic tests) with ``ctree``'s
    ``nodes`` (:func:`run_ctree`, fitted on the same ``X``), node by node in preorder.

    Returns ``{"mismatches": [str], "max_rel_p": float, "max_rel_statistic": float,
    "n_p_values": int, "n_nodes": (ours, ctree)}``: a mismatch is a node that splits in
    one tree only, on another feature, or into other rows (ctree's break is the last value
    on the left; ours is the midpoint to the next value), or a node where another set of
    features was tested.  The relative differences are over every tested feature of every
    node whose ctree p-value is at least ``p_floor`` (ours: ``p_values_adjusted``)."""
    tree = est.tree_
    rows = node_rows(tree, X)
    out = {
        "mismatches": [],
        "max_rel_p": 0.0,
        "max_rel_statistic": 0.0,
        "n_p_values": 0,
        "n_nodes": (int(tree.node_count), len(nodes)),
    }
    if tree.node_count != len(nodes):
        out["mismatches"].append(f"{tree.node_count} nodes, ctree {len(nodes)}")
    for v, nd in enumerate(nodes[: tree.node_count]):
        rec = est.node_records_[v]
        if nd.tests:
            ours = {
                f: p
                for f, p in zip(
                    rec.get("features", []), rec.get("p_values_adjusted", []), strict=True
                )
                if not np.isnan(p)  # no test (partykit drops its NA)
            }
            stat = dict(zip(rec.get("features", []), rec.get("statistics", []), strict=True))
            if set(ours) != set(nd.tests):
                out["mismatches"].append(
                    f"node {v}: tested {sorted(ours)}, ctree {sorted(nd.tests)}"
                )
                continue
            for j, (r_stat, r_p) in nd.tests.items():
                if r_stat > 0:  # partykit reports max(statistic, DBL_EPSILON)
                    ours_stat = max(stat[j], np.finfo(np.float64).eps)
                    rel = abs(ours_stat - r_stat) / r_stat
                    out["max_rel_statistic"] = max(out["max_rel_statistic"], rel)
                if r_p < p_floor:
                    continue
                out["n_p_values"] += 1
                if r_p > 0:
                    out["max_rel_p"] = max(out["max_rel_p"], abs(ours[j] - r_p) / r_p)
                elif ours[j] != 0:
                    out["max_rel_p"] = np.inf
        split = tree.children_left[v] >= 0
        if nd.split is None or not split:
            if (nd.split is None) != (not split):
                out["mismatches"].append(f"node {v}: " + ("we split" if split else "ctree splits"))
            continue
        j, kind, value = nd.split
        if int(tree.feature[v]) != j:
            out["mismatches"].append(f"node {v}: feature {tree.feature[v]}, ctree {j}")
            continue
        x = X[rows[v], j]
        if kind == "num":
            last = x[x <= tree.threshold[v]].max()
            if last != value:
                out["mismatches"].append(f"node {v}: last value left {last}, ctree break {value}")
        else:
            left = set(tree.cat_values[tree.cat_offsets[v] : tree.cat_offsets[v + 1]].tolist())
            present = set(np.unique(x[~np.isnan(x)]).astype(int).tolist())
            if left & present != set(value) & present:
                out["mismatches"].append(f"node {v}: left {sorted(left)}, ctree {sorted(value)}")
    return out
