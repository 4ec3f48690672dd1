"""Paper numbers vs our numbers.

The four papers' printed numbers live in ``data/paper_numbers/<paper>.yaml`` (schema and canonical
names: ``data/paper_numbers/README.md``). Notebooks write ``results/<notebook>/<profile>.json`` whose
``cells`` carry the same key ``(paper, table, dataset, method, metric)``. This module joins the two
and prints, for every reproduced cell, the paper's value, ours and the difference, in the style of
pyserini's two-click reproductions: ``OK`` when within tolerance, else the signed difference.

Scales: the YAML stores values exactly as printed and says how they were printed (``percent``,
``fraction``, ``count``, ``seconds``, ``raw``). Everything is compared on *our* scale: ratios as
fractions (a printed ``37.35`` percent becomes ``0.3735``), counts as counts, seconds as seconds.
The tolerance is absolute on that scale (default 0.005 = half a percentage point).

Command line (wired as ``python -m toolkit compare``)::

    python -m toolkit compare [--profile standard] [--paper reinvoke] [--table 1]
                              [--tolerance 0.005] [--all] [--json]
"""
from __future__ import annotations

import argparse
import difflib
import json
import math
import sys
from pathlib import Path
from typing import Iterable

import pandas as pd
import yaml

from toolkit import paths
from toolkit.config import finite_at_least

__all__ = [
    "PAPERS", "SCALES", "KEY", "PaperNumbersError", "PaperNumberNotFound",
    "paper_numbers_dir", "load_paper_file", "load_paper_numbers", "paper_table", "paper_value",
    "load_results", "compare", "summarize", "render", "add_arguments", "run", "main",
]

#: The four papers, in the order they are printed.
PAPERS = ("toolrerank", "iterative_feedback", "reinvoke", "querygen")

#: How a printed value is turned into our scale (multiply by the factor).
SCALES = {"percent": 0.01, "fraction": 1.0, "count": 1.0, "seconds": 1.0, "raw": 1.0}

#: The join key of a cell.
KEY = ["paper", "table", "dataset", "method", "metric"]

_TOP_KEYS_REQUIRED = {"paper", "citation", "tables"}
_TOP_KEYS_OPTIONAL = {"file", "notes"}
_TABLE_KEYS_REQUIRED = {"caption", "source", "scale", "cells"}
_TABLE_KEYS_OPTIONAL = {"notes", "settings", "lost"}
_CELL_KEYS_REQUIRED = ("dataset", "method", "metric", "value")
_CELL_KEYS_OPTIONAL = {"scale", "note"}

PAPER_COLUMNS = ["paper", "table", "dataset", "method", "metric", "value", "printed", "scale", "note"]
RESULT_COLUMNS = ["notebook", "profile", "paper", "table", "dataset", "method", "metric", "value",
                  "n_queries", "note", "ours_only"]
COMPARE_COLUMNS = ["paper", "table", "dataset", "method", "metric", "paper_value", "ours", "diff",
                   "status", "printed", "scale", "notebook", "n_queries", "note", "also_in"]


class PaperNumbersError(ValueError):
    """A paper-numbers YAML (or a results JSON) does not follow the schema."""


class PaperNumberNotFound(KeyError):
    """No paper number under that key; the message lists the near misses."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


# ---------------------------------------------------------------------------------------------
# YAML loading and validation

class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader that refuses duplicate mapping keys (plain PyYAML keeps the last one silently)."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise PaperNumbersError(
                f"duplicate key {key!r} at line {key_node.start_mark.line + 1} "
                f"(first at line {seen[key] + 1})")
        seen[key] = key_node.start_mark.line
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def paper_numbers_dir() -> Path:
    """``data/paper_numbers`` of the repository."""
    return paths.PROJECT_DATA / "paper_numbers"


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_paper_file(path: str | Path) -> list[dict]:
    """Read and validate one paper YAML; return its cells as dicts (file order).

    Raises :class:`PaperNumbersError` naming the file, the table and the cell on a missing field,
    an unknown field, an unknown scale, a non-numeric value or a duplicate cell key.
    """
    path = Path(path)
    where = path.name
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except PaperNumbersError as exc:
        raise PaperNumbersError(f"{where}: {exc}") from None
    except yaml.YAMLError as exc:
        raise PaperNumbersError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise PaperNumbersError(f"{where}: top level must be a mapping")
    missing = _TOP_KEYS_REQUIRED - doc.keys()
    if missing:
        raise PaperNumbersError(f"{where}: missing top-level field(s) {sorted(missing)}")
    unknown = doc.keys() - _TOP_KEYS_REQUIRED - _TOP_KEYS_OPTIONAL
    if unknown:
        raise PaperNumbersError(f"{where}: unknown top-level field(s) {sorted(unknown)}")
    paper = doc["paper"]
    if paper != path.stem:
        raise PaperNumbersError(f"{where}: paper is {paper!r} but the file is named {path.stem!r}")
    tables = doc["tables"]
    if not isinstance(tables, dict) or not tables:
        raise PaperNumbersError(f"{where}: 'tables' must be a non-empty mapping")

    rows: list[dict] = []
    seen_tables: set[str] = set()
    for raw_key, table in tables.items():
        tkey = str(raw_key)
        tw = f"{where}: table {tkey!r}"
        if tkey in seen_tables:
            raise PaperNumbersError(f"{tw}: duplicate table key")
        seen_tables.add(tkey)
        if not isinstance(table, dict):
            raise PaperNumbersError(f"{tw}: must be a mapping")
        missing = _TABLE_KEYS_REQUIRED - table.keys()
        if missing:
            raise PaperNumbersError(f"{tw}: missing field(s) {sorted(missing)}")
        unknown = table.keys() - _TABLE_KEYS_REQUIRED - _TABLE_KEYS_OPTIONAL
        if unknown:
            raise PaperNumbersError(f"{tw}: unknown field(s) {sorted(unknown)}")
        tscale = table["scale"]
        if tscale not in SCALES:
            raise PaperNumbersError(f"{tw}: unknown scale {tscale!r} (known: {', '.join(SCALES)})")
        cells = table["cells"]
        if not isinstance(cells, list):
            raise PaperNumbersError(f"{tw}: 'cells' must be a list")
        lost = table.get("lost", [])
        if not isinstance(lost, list) or not all(
                isinstance(x, str) or (isinstance(x, dict) and "what" in x and "note" in x) for x in lost):
            raise PaperNumbersError(f"{tw}: 'lost' must be a list of {{what, note}} entries")
        if not cells and not lost:
            raise PaperNumbersError(f"{tw}: no cells and nothing listed under 'lost'")
        seen_cells: dict[tuple, int] = {}
        for i, cell in enumerate(cells, 1):
            cw = f"{tw}: cell #{i}"
            if not isinstance(cell, dict):
                raise PaperNumbersError(f"{cw}: must be a mapping, got {cell!r}")
            label = "/".join(str(cell.get(k, "?")) for k in ("dataset", "method", "metric"))
            cw = f"{tw}: cell #{i} ({label})"
            missing = [k for k in _CELL_KEYS_REQUIRED if k not in cell]
            if missing:
                raise PaperNumbersError(f"{cw}: missing field(s) {missing}")
            unknown = cell.keys() - set(_CELL_KEYS_REQUIRED) - _CELL_KEYS_OPTIONAL
            if unknown:
                raise PaperNumbersError(f"{cw}: unknown field(s) {sorted(unknown)}")
            for k in ("dataset", "method", "metric"):
                v = cell[k]
                if not isinstance(v, str) or not v.strip() or v != v.strip():
                    raise PaperNumbersError(f"{cw}: {k} must be a non-empty string without outer spaces, got {v!r}")
            for k in ("dataset", "metric"):
                if cell[k] != cell[k].lower():
                    raise PaperNumbersError(f"{cw}: {k} must be lowercase, got {cell[k]!r}")
            value = cell["value"]
            if not _is_number(value):
                raise PaperNumbersError(f"{cw}: value must be a finite number, got {value!r}")
            scale = cell.get("scale", tscale)
            if scale not in SCALES:
                raise PaperNumbersError(f"{cw}: unknown scale {scale!r} (known: {', '.join(SCALES)})")
            key = (cell["dataset"], cell["method"], cell["metric"])
            if key in seen_cells:
                raise PaperNumbersError(f"{cw}: duplicate cell (same dataset/method/metric as cell #{seen_cells[key]})")
            seen_cells[key] = i
            rows.append({
                "paper": paper, "table": tkey, "dataset": cell["dataset"], "method": cell["method"],
                "metric": cell["metric"], "value": round(value * SCALES[scale], 12), "printed": value,
                "scale": scale, "note": cell.get("note"),
            })
    return rows


_CACHE: dict[tuple, object] = {}


def _cached_rows(path: Path) -> list[dict]:
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _CACHE:
        _CACHE[key] = load_paper_file(path)
    return _CACHE[key]


def _paper_files(directory: Path) -> list[Path]:
    files = {p.stem: p for p in directory.glob("*.yaml")}
    order = [files.pop(p) for p in PAPERS if p in files]
    return order + [files[k] for k in sorted(files)]


def load_paper_numbers(paper: str | Iterable[str] | None = None, directory: str | Path | None = None) -> pd.DataFrame:
    """All transcribed paper numbers as a DataFrame.

    Columns: paper, table, dataset, method, metric, value (on our scale: percent / 100), printed (as
    printed), scale (how it was printed), note. Rows keep the order of the YAML files.
    """
    directory = Path(directory) if directory is not None else paper_numbers_dir()
    files = _paper_files(directory)
    if paper is not None:
        wanted = [paper] if isinstance(paper, str) else list(paper)
        known = {p.stem for p in files}
        for w in wanted:
            if w not in known:
                raise PaperNumberNotFound(f"no paper numbers for {w!r} in {directory}; known: {', '.join(sorted(known))}")
        files = [p for p in files if p.stem in wanted]
    rows = [r for p in files for r in _cached_rows(p)]
    return pd.DataFrame(rows, columns=PAPER_COLUMNS)


def paper_table(paper: str, table: str | int, directory: str | Path | None = None) -> pd.DataFrame:
    """The paper numbers of one table (for showing next to ours in a notebook)."""
    df = load_paper_numbers(paper, directory)
    sub = df[df["table"] == str(table)]
    if sub.empty:
        raise PaperNumberNotFound(
            f"{paper} has no table {str(table)!r}; tables: {', '.join(dict.fromkeys(df['table']))}")
    return sub.reset_index(drop=True)


#: How the papers write the ToolBench groups -> our canonical dataset names (used in hints only).
DATASET_ALIASES = {
    "i1-inst": "toolbench-g1-instruction", "i1-instruction": "toolbench-g1-instruction",
    "i1-tool": "toolbench-g1-tool", "i1-cat": "toolbench-g1-category", "i1-category": "toolbench-g1-category",
    "i2-inst": "toolbench-g2-instruction", "i2-instruction": "toolbench-g2-instruction",
    "i2-cat": "toolbench-g2-category", "i2-category": "toolbench-g2-category",
    "i3-inst": "toolbench-g3-instruction", "i3-instruction": "toolbench-g3-instruction",
    "g1_instruction": "toolbench-g1-instruction", "g1_tool": "toolbench-g1-tool",
    "g1_category": "toolbench-g1-category", "g2_instruction": "toolbench-g2-instruction",
    "g2_category": "toolbench-g2-category", "g3_instruction": "toolbench-g3-instruction",
    "i1": "toolbench-i1", "i2": "toolbench-i2", "i3": "toolbench-i3", "all": "toolbench-all",
    "toole": "toole-single", "metatool": "toole-single", "ultratools": "ultratool", "t-eval": "teval",
}


def _suggest(value: str, options: Iterable[str]) -> str:
    options = list(dict.fromkeys(options))
    alias = DATASET_ALIASES.get(value.lower())
    if alias in options:
        return f"did you mean {alias!r}?"
    close = difflib.get_close_matches(value, options, n=5, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    if len(options) <= 15:
        return "known: " + ", ".join(repr(o) for o in options)
    return f"{len(options)} known values, none close"


def paper_value(paper: str, table: str | int, dataset: str, method: str, metric: str, *,
                printed: bool = False, directory: str | Path | None = None) -> float:
    """One paper number, on our scale (``printed=True``: as printed).

    Raises :class:`PaperNumberNotFound` (a ``KeyError``) listing near-miss names when absent.
    """
    df = load_paper_numbers(None, directory)
    label = f"{paper}/{table}/{dataset}/{method}/{metric}"
    if paper not in set(df["paper"]):
        raise PaperNumberNotFound(f"no paper number {label}: unknown paper {paper!r}; {_suggest(paper, df['paper'])}")
    df = df[df["paper"] == paper]
    table = str(table)
    if table not in set(df["table"]):
        raise PaperNumberNotFound(f"no paper number {label}: {paper} has no table {table!r}; {_suggest(table, df['table'])}")
    df = df[df["table"] == table]
    hit = df[(df["dataset"] == dataset) & (df["method"] == method) & (df["metric"] == metric)]
    if len(hit) == 1:
        return float(hit["printed"].iloc[0] if printed else hit["value"].iloc[0])
    hints = []
    for field, val in (("dataset", dataset), ("method", method), ("metric", metric)):
        if val not in set(df[field]):
            hints.append(f"{field} {val!r} not in table {table}: {_suggest(val, df[field])}")
    if not hints:  # every name exists, the combination does not
        near = df[(df["dataset"] == dataset) | (df["method"] == method)]
        combos = [f"{d}/{m}/{k}" for d, m, k in near[["dataset", "method", "metric"]].itertuples(index=False)]
        hints.append("that combination is not printed; cells sharing the dataset or method: "
                     + ", ".join(combos[:12]) + (" ..." if len(combos) > 12 else ""))
    raise PaperNumberNotFound(f"no paper number {label}; " + "; ".join(hints))


# ---------------------------------------------------------------------------------------------
# Results

def _results_dir(results_dir: str | Path | None) -> Path:
    return Path(results_dir) if results_dir is not None else paths.results_dir()


def load_results(profile: str = "standard", notebooks: Iterable[str] | str | None = None,
                 results_dir: str | Path | None = None) -> pd.DataFrame:
    """All cells of ``results/*/<profile>.json`` (optionally only the given notebooks).

    Columns: notebook, profile, paper, table, dataset, method, metric, value, n_queries, note.
    Cells without a paper key (our-only numbers) are kept with paper/table empty.
    """
    root = _results_dir(results_dir)
    if isinstance(notebooks, str):
        notebooks = [notebooks]
    wanted = set(notebooks) if notebooks is not None else None
    rows = []
    for path in sorted(root.glob(f"*/{profile}.json")):
        nb = path.parent.name
        if wanted is not None and nb not in wanted:
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise PaperNumbersError(f"{path}: not valid JSON: {exc}") from None
        cells = doc.get("cells", []) if isinstance(doc, dict) else None
        if not isinstance(cells, list):
            raise PaperNumbersError(f"{path}: 'cells' must be a list")
        for i, c in enumerate(cells, 1):
            if not isinstance(c, dict):
                raise PaperNumbersError(f"{path}: cell #{i} must be an object")
            value = c.get("value")
            if value is not None and not _is_number(value):
                raise PaperNumbersError(f"{path}: cell #{i} ({c.get('dataset')}/{c.get('method')}/{c.get('metric')}): "
                                        f"value must be a number, got {value!r}")
            rows.append({
                "notebook": doc.get("notebook", nb), "profile": doc.get("profile", profile),
                "paper": c.get("paper"), "table": None if c.get("table") is None else str(c["table"]),
                "dataset": c.get("dataset"), "method": c.get("method"), "metric": c.get("metric"),
                "value": float("nan") if value is None else float(value),
                "n_queries": c.get("n_queries"), "note": c.get("note"),
                "ours_only": c.get("ours_only") is True,
            })
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    df["n_queries"] = pd.Series([r["n_queries"] for r in rows], index=df.index, dtype=object)
    return df


# ---------------------------------------------------------------------------------------------
# Compare

def compare(profile: str = "standard", paper: str | None = None, table: str | int | None = None,
            tolerance: float = 0.005, notebooks: Iterable[str] | str | None = None,
            results_dir: str | Path | None = None, paper_dir: str | Path | None = None) -> pd.DataFrame:
    """Join paper numbers with our results on (paper, table, dataset, method, metric).

    Returns one row per paper cell plus one per result cell that matches no paper cell, with
    columns paper, table, dataset, method, metric, paper_value, ours, diff (= ours - paper, on our
    scale), status, printed, scale, notebook, n_queries, note, also_in (other notebooks that
    produced the same cell; the paper's own notebook wins — the one whose name contains the
    paper key — else the first by name). ``status`` is ``OK`` (|diff| <=
    tolerance), ``DIFF``, ``missing`` (no notebook produced the cell), ``lost`` (a result cell of
    a table whose values the paper does not print, e.g. a figure: listed under ``lost:`` in the
    YAML), ``ours only`` (a result cell recorded with ``ours_only``: a row the paper has no counterpart
    for, such as our second LLM backbone) or ``unmatched`` (a result cell whose key is not in the paper
    numbers: usually a naming slip).
    """
    P = load_paper_numbers(paper, paper_dir)
    R = load_results(profile, notebooks, results_dir)
    R = R[R["paper"].notna()]  # cells without a paper key are our own extra numbers
    if paper is not None:
        R = R[R["paper"] == paper]
        P = P[P["paper"] == paper]
    if table is not None:
        P = P[P["table"] == str(table)]
        R = R[R["table"] == str(table)]
    # a cell produced by several notebooks: keep the table's owning notebook (data/owners.yaml) so
    # that a table's baseline rows come from the same corpus and settings as its method rows;
    # otherwise the first by name. Name the others.
    owner = owners()
    R = (R.assign(_own=[owner_of(owner, p, t) == nb for p, t, nb in zip(R["paper"], R["table"], R["notebook"])])
          .sort_values(["_own", "notebook"], ascending=[False, True], kind="stable").drop(columns="_own"))
    R["also_in"] = None
    dup = R.duplicated(KEY, keep="first")
    if dup.any():
        others = {k: ", ".join(g["notebook"]) for k, g in R[dup].groupby(KEY, sort=False)}
        R = R[~dup].copy()
        R["also_in"] = [others.get(tuple(k)) for k in R[KEY].itertuples(index=False)]
    P = P.reset_index(drop=True).assign(_order=lambda d: range(len(d)))
    merged = P.merge(R.drop(columns=["profile"]), on=KEY, how="outer", suffixes=("_paper", "_ours"),
                     indicator=True)
    out = pd.DataFrame({k: merged[k] for k in KEY})
    out["paper_value"] = merged["value_paper"]
    out["ours"] = merged["value_ours"]
    out["diff"] = (out["ours"] - out["paper_value"]).round(12)
    # tables the YAML lists but whose values the paper does not print (figure-only / lost)
    valueless = set(_captions(paper_dir)) - set(zip(P["paper"], P["table"]))
    status = []
    own = merged["ours_only"].fillna(False).astype(bool)
    for side, d, ours, pt, own_row in zip(merged["_merge"], out["diff"], out["ours"], zip(out["paper"], out["table"]), own):
        if side == "left_only" or (side == "both" and pd.isna(ours)):
            status.append("missing")
        elif side == "right_only":
            status.append("lost" if pt in valueless else "ours only" if own_row else "unmatched")
        else:
            status.append("OK" if abs(d) <= tolerance + 1e-12 else "DIFF")
    out["status"] = status
    out["printed"] = merged["printed"]
    out["scale"] = merged["scale"]
    # our own rows print in the scale their table prints the same metric in (else the table's first), so a
    # control reads beside the paper's cells
    by_metric = P.drop_duplicates(["paper", "table", "metric"]).set_index(["paper", "table", "metric"])["scale"]
    by_table = P.drop_duplicates(["paper", "table"]).set_index(["paper", "table"])["scale"]
    for i in out.index[out["status"] == "ours only"]:
        key = (out.at[i, "paper"], out.at[i, "table"])
        out.at[i, "scale"] = by_metric.get(key + (out.at[i, "metric"],), by_table.get(key))
    out["notebook"] = merged["notebook"]
    out["n_queries"] = merged["n_queries"]
    out["also_in"] = merged["also_in"]
    out["note"] = merged["note_ours"].where(merged["note_ours"].notna(), merged["note_paper"])
    order = merged["_order"].fillna(len(P) + 1).to_numpy()
    out = out.iloc[sorted(range(len(out)), key=lambda i: (order[i], i))].reset_index(drop=True)
    return out[COMPARE_COLUMNS]


OWNERS = paths.PROJECT_DATA / "owners.yaml"


def owners(path: Path | None = None) -> dict:
    """``{paper: {"default": notebook, "<table>": notebook}}`` from ``data/owners.yaml``."""
    import yaml
    path = Path(path or OWNERS)
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for paper, spec in doc.items():
        if not isinstance(spec, dict) or "default" not in spec:
            raise PaperNumbersError(f"{path}: {paper!r} needs a mapping with a 'default' notebook")
    return doc


def owner_of(owner: dict, paper: str, table: str | None) -> str | None:
    spec = owner.get(paper) or {}
    return spec.get(str(table), spec.get("default"))


def summarize(df: pd.DataFrame) -> dict:
    """Counts: reproduced (OK + DIFF), ok, diff, missing, unmatched, lost, ours_only."""
    counts = df["status"].value_counts()
    ok, diff = int(counts.get("OK", 0)), int(counts.get("DIFF", 0))
    return {"reproduced": ok + diff, "ok": ok, "diff": diff,
            "missing": int(counts.get("missing", 0)), "unmatched": int(counts.get("unmatched", 0)),
            "lost": int(counts.get("lost", 0)), "ours_only": int(counts.get("ours only", 0))}


def _fmt_paper(v, scale) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if float(v).is_integer() and scale in ("count", "raw"):
        return str(int(v))
    return f"{v:g}" if scale == "raw" else str(v)


def _fmt_ours(x, scale) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if scale == "percent":
        return f"{x * 100:.2f}"
    if scale == "fraction":
        return f"{x:.4f}"
    if scale == "count":
        return str(int(round(x))) if abs(x - round(x)) < 1e-9 else f"{x:.2f}"
    if scale == "seconds":
        return f"{x:.2f}"
    return f"{x:g}"


def _fmt_n(n) -> str:
    """Queries behind our value (e.g. a 1,000-query sample beside a full-set baseline)."""
    return "-" if n is None or pd.isna(n) else str(int(n))


def _fmt_status(status, d, scale) -> str:
    if status != "DIFF":
        return status
    if scale == "percent":
        return f"{d * 100:+.2f}"
    if scale == "fraction":
        return f"{d:+.4f}"
    if scale == "seconds":
        return f"{d:+.2f}"
    return f"{d:+g}"


def _captions(directory: Path | None = None) -> dict:
    caps = {}
    for p in _paper_files(Path(directory) if directory else paper_numbers_dir()):
        st = p.stat()
        key = ("captions", str(p.resolve()), st.st_mtime_ns, st.st_size)
        if key not in _CACHE:
            doc = yaml.load(p.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
            _CACHE[key] = {(doc.get("paper"), str(k)): (t.get("caption", ""), t.get("source", ""))
                           for k, t in (doc.get("tables") or {}).items()}
        caps.update(_CACHE[key])
    return caps


def render(df: pd.DataFrame, show_all: bool = False, paper_dir: str | Path | None = None,
           max_unmatched: int = 20, show_own: bool = False) -> str:
    """The readable report: one block per paper/table, values in the paper's printed scale. ``show_own`` lists
    our own rows (controls, second backbones; paper column "-", status "ours only") inside their table's block:
    ``--paper`` turns it on, since a reader asking about one paper wants its controls beside its cells."""
    lines = []
    caps = _captions(paper_dir)
    shown = df[df["status"].isin(["OK", "DIFF"] + (["missing"] if show_all else [])
                                 + (["ours only"] if show_own else []))]
    table_missing = df[df["status"] == "missing"].groupby(["paper", "table"], sort=False).size()
    for (paper, table), g in shown.groupby(["paper", "table"], sort=False):
        caption, source = caps.get((paper, table), ("", ""))
        lines.append(f"== {paper} table {table}: {caption}  [{source}]")
        wd = max(7, g["dataset"].str.len().max())
        wm = max(6, g["method"].str.len().max())
        wk = max(6, g["metric"].str.len().max())
        lines.append(f"   {'dataset':<{wd}}  {'method':<{wm}}  {'metric':<{wk}}  {'paper':>9}  {'ours':>9}  {'n':>6}  status")
        for r in g.itertuples(index=False):
            lines.append(f"   {r.dataset:<{wd}}  {r.method:<{wm}}  {r.metric:<{wk}}  "
                         f"{_fmt_paper(r.printed, r.scale):>9}  {_fmt_ours(r.ours, r.scale):>9}  {_fmt_n(r.n_queries):>6}  "
                         f"{_fmt_status(r.status, r.diff, r.scale)}"
                         + (f"  [{r.note}]" if isinstance(r.note, str) and r.note else ""))   # e.g. ours at m=1
        n_missing = int(table_missing.get((paper, table), 0))
        if n_missing and not show_all:
            lines.append(f"   ({n_missing} more cell(s) of this table not reproduced yet; --all lists them)")
        lines.append("")
    unmatched = df[df["status"] == "unmatched"]
    if len(unmatched):
        lines.append(f"!! {len(unmatched)} result cell(s) match no paper cell "
                     f"(check names against data/paper_numbers/README.md):")
        rows = unmatched if show_all else unmatched.head(max_unmatched)
        for r in rows.itertuples(index=False):
            lines.append(f"   {r.notebook}: {r.paper}/{r.table}/{r.dataset}/{r.method}/{r.metric} = {r.ours:g}")
        if len(rows) < len(unmatched):
            lines.append(f"   ... {len(unmatched) - len(rows)} more (--all)")
        lines.append("")
    own = df[df["status"] == "ours only"]
    if len(own) and show_all and not show_own:
        lines.append(f"-- {len(own)} result cell(s) of our own rows, with no paper counterpart (e.g. a second LLM backbone):")
        for r in own.itertuples(index=False):
            lines.append(f"   {r.notebook}: {r.paper}/{r.table}/{r.dataset}/{r.method}/{r.metric} = {r.ours:g}")
        lines.append("")
    lost = df[df["status"] == "lost"]
    if len(lost) and show_all:
        lines.append(f"-- {len(lost)} result cell(s) of tables whose values the paper does not print (figures, lost):")
        for r in lost.itertuples(index=False):
            lines.append(f"   {r.notebook}: {r.paper}/{r.table}/{r.dataset}/{r.method}/{r.metric} = {r.ours:g}")
        lines.append("")
    dups = df[df["also_in"].notna() & df["status"].isin(["OK", "DIFF", "unmatched"])]
    if len(dups):
        lines.append(f"!! {len(dups)} cell(s) produced by more than one notebook (the paper's own notebook shown, else the first by name):")
        for r in dups.itertuples(index=False):
            lines.append(f"   {r.paper}/{r.table}/{r.dataset}/{r.method}/{r.metric}: {r.notebook}; also {r.also_in}")
        lines.append("")
    s = summarize(df)
    hidden = (s["lost"] or (s["ours_only"] and not show_own)) and not show_all   # listed only with --all
    lines.append(f"{s['reproduced']} cells produced, of which {s['ok']} within tolerance and {s['diff']} outside it; "
                 f"{s['missing']} not produced yet"
                 + (f", {s['unmatched']} result cells unmatched" if s["unmatched"] else "")
                 + (f", {s['lost']} with no printed paper value" if s["lost"] else "")
                 + (f", {s['ours_only']} of our own rows" if s["ours_only"] else "")
                 + (" (--all lists them)" if hidden else ""))
    return "\n".join(lines)


def render_markdown(df: pd.DataFrame, profile: str = "standard", paper_dir: str | Path | None = None,
                    results_dir: str | Path | None = None) -> str:
    """``RESULTS.md``: the verdicts at a glance first (:func:`toolkit.verdicts.verdict_markdown`: counts and a claims
    table per paper, the forest plot linked when ``figures/claims/forest_<profile>.png`` exists), then every produced
    cell beside the paper's, one Markdown table per paper table.
    Generated by ``python -m toolkit compare --markdown > RESULTS.md``; never edited by hand."""
    from toolkit import verdicts
    caps = _captions(paper_dir)
    s = summarize(df)
    forest = verdicts.forest_path(profile)
    lines = [f"# Results ({profile} profile), ours beside the papers'", "",
             "Generated by `python -m toolkit compare --markdown > RESULTS.md` from `results/*/" + profile + ".json` and "
             "`data/paper_numbers/*.yaml`; do not edit.", "",
             verdicts.verdict_markdown(profile, results_dir,
                                       forest.relative_to(paths.REPO).as_posix() if forest.is_file() else None),
             "## Every cell", "",
             "Values in each paper's printed scale; n = queries behind our "
             "value; status OK = within the tolerance (0.005 on our scale), else the difference.", "",
             f"{s['reproduced']} cells produced, {s['ok']} within tolerance, {s['diff']} outside it, "
             f"{s['missing']} not produced yet, {s['ours_only']} of our own rows.", ""]
    shown = df[df["status"].isin(["OK", "DIFF"])]
    for (paper, table), g in shown.groupby(["paper", "table"], sort=False):
        caption, source = caps.get((paper, table), ("", ""))
        lines += [f"## {paper} — table {table}", "", f"{caption} ({source}; notebook {', '.join(sorted(set(g['notebook'])))})",
                  "", "| dataset | method | metric | paper | ours | n | status | note |", "|---|---|---|---|---|---|---|---|"]
        for r in g.itertuples(index=False):
            note = (r.note if isinstance(r.note, str) else "").replace("|", "/")
            lines.append(f"| {r.dataset} | {r.method} | {r.metric} | {_fmt_paper(r.printed, r.scale)} | "
                         f"{_fmt_ours(r.ours, r.scale)} | {_fmt_n(r.n_queries)} | "
                         f"{_fmt_status(r.status, r.diff, r.scale)} | {note} |")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Command line

def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--profile", default="standard", help="results profile to read (default: standard)")
    parser.add_argument("--paper", choices=PAPERS,
                        help="only this paper; its tables also list our own rows (controls, second backbones)")
    parser.add_argument("--table", help="only this table key (e.g. 1, 3A, s4.2)")
    parser.add_argument("--notebook", action="append", dest="notebooks", metavar="NAME",
                        help="only results of this notebook (repeatable)")
    parser.add_argument("--tolerance", type=finite_at_least(0), default=0.005,
                        help="absolute tolerance on our scale (fractions; default 0.005)")
    parser.add_argument("--all", action="store_true", dest="show_all",
                        help="also list the paper cells no notebook produced")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--markdown", action="store_true", help="print RESULTS.md (Markdown tables of every produced cell)")
    parser.add_argument("--readme", action="store_true",
                        help="rewrite README.md's verdicts-at-a-glance block (between <!-- verdicts --> markers)")
    parser.add_argument("--results-dir", default=None, help=argparse.SUPPRESS)
    return parser


def _jsonable(v):
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


def check_selection(profile: str, paper: str | None, table: str | None, notebooks: list[str] | None,
                    results_dir: str | Path | None = None) -> None:
    """Refuse a selection that names nothing that exists, saying what does: an unknown table of the
    paper(s), notebook or profile would otherwise print "0 cells" and exit 0. A profile is a plain
    name, never a path out of the results directory."""
    root = _results_dir(results_dir)
    from .results import PROFILES
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; profiles: {', '.join(PROFILES)}")
    have = sorted(p.parent.name for p in root.glob(f"*/{profile}.json"))
    known_nbs = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for nb in notebooks or []:
        if nb not in known_nbs:
            raise ValueError(f"no results for notebook {nb!r} in {root}; notebooks: {', '.join(known_nbs) or 'none'}")
        if nb not in have:
            raise ValueError(f"notebook {nb!r} has no {profile} run ({root / nb / (profile + '.json')}); "
                             f"its runs: {', '.join(sorted(p.stem for p in (root / nb).glob('*.json'))) or 'none'}")
    if table is not None:
        P = load_paper_numbers(paper)
        tables = sorted(set(P["table"]), key=lambda t: (len(t), t))
        if str(table) not in tables:
            raise ValueError(f"no table {table!r} in the paper numbers of {paper or 'any paper'}; tables: "
                             f"{', '.join(tables)}")


def failed_runs(profile: str, results_dir: str | Path | None = None) -> list[str]:
    """Notebooks whose last ``profile`` run failed (``<profile>.failed`` beside the previous JSON)."""
    root = _results_dir(results_dir)
    return sorted(p.parent.name for p in root.glob(f"*/{profile}.failed"))


def run(args: argparse.Namespace) -> int:
    if args.tolerance < 0:
        raise SystemExit("--tolerance must be >= 0")
    check_selection(args.profile, args.paper, args.table, args.notebooks, args.results_dir)
    for nb in failed_runs(args.profile, args.results_dir):
        print(f"warning: the last {args.profile} run of {nb} FAILED "
              f"({_results_dir(args.results_dir) / nb / (args.profile + '.failed')}); its cells below are from "
              f"the previous successful run", file=sys.stderr)
    if getattr(args, "readme", False):
        path = update_readme(paths.REPO / "README.md", args.profile, args.results_dir)
        print(f"{path.name}: verdicts block rewritten from results/*/{args.profile}.json")
        return 0
    df = compare(profile=args.profile, paper=args.paper, table=args.table, tolerance=args.tolerance,
                 notebooks=args.notebooks, results_dir=args.results_dir)
    root = _results_dir(args.results_dir)
    if args.json:
        rows = df if args.show_all else df[~df["status"].isin(["missing", "lost"])]
        payload = {"profile": args.profile, "tolerance": args.tolerance, "summary": summarize(df),
                   "cells": [{k: _jsonable(v) for k, v in r.items()} for r in rows.to_dict(orient="records")]}
        print(json.dumps(payload, indent=1))
        return 0
    if getattr(args, "markdown", False):
        print(render_markdown(df, args.profile, results_dir=args.results_dir))
        return 0
    if not any(root.glob(f"*/{args.profile}.json")):
        print(f"(no results/*/{args.profile}.json under {root}; run the notebooks first)")
    print(render(df, show_all=args.show_all, show_own=args.paper is not None))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit compare",
                                     description="Paper numbers vs ours, cell by cell.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# --- README's verdicts at a glance ---------------------------------------------------------------

VERDICT_WORDS = {"yes": "held", "held": "held", "holds": "held", "no": "not held", "not held": "not held",
                 "within noise": "within noise", "pending": "pending"}
VERDICT_COLUMNS = ("held", "not held", "within noise", "pending")
README_MARKERS = ("<!-- verdicts -->", "<!-- /verdicts -->")


def verdict_counts(profile: str = "standard", results_dir: str | Path | None = None) -> dict[str, dict[str, int]]:
    """``{notebook: {verdict: count}}`` over each results file's ``claims`` (our verdict: the record's ``here``,
    else ``holds``), verdicts named as in :data:`VERDICT_WORDS`; any other verdict string counts under itself."""
    out: dict[str, dict[str, int]] = {}
    for f in sorted(_results_dir(results_dir).glob(f"*/{profile}.json")):
        claims = json.loads(f.read_text()).get("claims") or []
        if not isinstance(claims, list) or not claims:
            continue
        # a notebook that judges two setups (feedback: fair and capped LLM) is counted on its headline setup, as
        # RESULTS.md counts it (toolkit.verdicts.headline)
        claims = [c for c in claims if not isinstance(c, dict) or c.get("headline", True)]
        counts: dict[str, int] = {}
        for c in claims:
            raw = str(c.get("here", c.get("holds", "pending"))).strip().lower()
            word = VERDICT_WORDS.get(raw, raw)
            counts[word] = counts.get(word, 0) + 1
        out[f.parent.name] = counts
    return out


def verdicts_markdown(profile: str = "standard", results_dir: str | Path | None = None) -> str:
    """The README's table of claim verdicts per notebook (generated: ``python -m toolkit compare --readme``)."""
    counts = verdict_counts(profile, results_dir)
    cols = list(VERDICT_COLUMNS) + sorted({w for c in counts.values() for w in c} - set(VERDICT_COLUMNS))
    lines = ["| notebook | claims | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for nb, c in counts.items():
        lines.append(f"| `{nb}` | {sum(c.values())} | " + " | ".join(str(c.get(k, 0)) for k in cols) + " |")
    tot = {k: sum(c.get(k, 0) for c in counts.values()) for k in cols}
    lines.append(f"| **all** | **{sum(tot.values())}** | " + " | ".join(f"**{tot[k]}**" for k in cols) + " |")
    links = ["[RESULTS.md](RESULTS.md) (every cell beside the paper's)"]
    forest = sorted(p.relative_to(paths.REPO) for p in (paths.REPO / "figures").glob(f"**/*forest*{profile}*.png"))
    if forest:
        links.insert(0, f"[the forest plot]({forest[0].as_posix()}) (each claim's effect with its interval)")
    return "\n".join(lines + ["", f"Each claim of a paper judged on our {profile} run with the paired randomization "
                               "test's p. Details: " + ", ".join(links) + "."])


def update_readme(path: Path, profile: str = "standard", results_dir: str | Path | None = None) -> Path:
    """Rewrite the block between :data:`README_MARKERS` in ``path`` with :func:`verdicts_markdown`."""
    text = path.read_text()
    start, end = README_MARKERS
    if start not in text or end not in text or text.index(start) > text.index(end):
        raise ValueError(f"{path}: no '{start}' ... '{end}' block to fill; put the two marker lines where the "
                         "verdicts go")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{start}\n{verdicts_markdown(profile, results_dir)}\n{end}{tail}")
    return path
