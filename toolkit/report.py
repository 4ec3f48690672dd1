"""Tables for notebooks: our recorded cells beside the paper's printed numbers."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .results import Recorder


def side_by_side(rec: Recorder, paper: str, table: str, wide: bool = True) -> pd.DataFrame:
    """Our cells of ``paper``/``table`` next to the paper's values (fractions; ``diff`` = ours - paper).

    ``wide`` (the default) gives one row per (dataset, method) and, per metric, three columns: the
    paper's value, ours and Δ = ours - paper, then ``n`` (queries behind our cells). It stays as
    narrow as the table has metrics, so it fits a laptop screen where a (dataset × metric) pivot did not.
    ``wide=False`` gives the long frame: one row per cell with its note.
    """
    from .compare import load_paper_numbers
    ours = pd.DataFrame([c for c in rec.cells if c["paper"] == paper and c["table"] == str(table)])
    if ours.empty:
        raise KeyError(f"no recorded cells for {paper} table {table}")
    pn = load_paper_numbers(paper)
    pn = pn[pn["table"] == str(table)][["dataset", "method", "metric", "value"]].rename(columns={"value": "paper"})
    ours = ours.drop(columns=["paper", "table"])
    df = ours.rename(columns={"value": "ours"}).merge(pn, on=["dataset", "method", "metric"], how="left")
    df["diff"] = df["ours"] - df["paper"]
    df = df[["dataset", "method", "metric", "paper", "ours", "diff", "n_queries", "note"]]
    if not wide:
        return integral(df)
    rows = list(dict.fromkeys(zip(df["dataset"], df["method"])))
    metrics = list(dict.fromkeys(df["metric"]))
    w = df.rename(columns={"diff": "Δ"}).pivot_table(index=["dataset", "method"], columns="metric",
                                                      values=["paper", "ours", "Δ"], sort=False, dropna=False)
    w = w.swaplevel(0, 1, axis=1).reindex(columns=pd.MultiIndex.from_product([metrics, ["paper", "ours", "Δ"]]))
    n = df.groupby(["dataset", "method"], sort=False)["n_queries"].max()
    w[("n", "")] = n.astype("Int64")
    w = w.reindex(pd.MultiIndex.from_tuples(rows, names=["dataset", "method"]))
    return integral(w)


def integral(df: pd.DataFrame) -> pd.DataFrame:
    """Columns that hold only whole numbers (counts: queries, APIs, words) as integers, so a table
    prints 195937, not 195937.0; a missing value stays <NA>."""
    out = df.copy()
    for col in out.columns:
        x = out[col]
        if x.dtype.kind == "f" and x.notna().any() and (x.dropna() % 1 == 0).all() and (x.dropna().abs() < 2**53).all():
            out[col] = x.astype("Int64")
    return out


class Reading:
    """Prose whose numbers are looked up in this run's results, so a reading cannot go stale.

    A field in braces names a value; ``|`` separates the parts of a key, ``!`` starts a format spec:

    - ``{toole-single|Dense|ndcg@5}``: our value (key looked up in ``ours``);
    - ``{paper:1|toole-single|Dense|ndcg@5}``: the paper's printed value (key looked up in ``paper``);
    - ``{A - B}`` the signed difference of two such refs (default ``+.3f``), ``{A % B}`` the relative
      change A/B - 1 (default ``+.0%``);
    - ``{name}``: a keyword value given to :meth:`format` (counts, derived figures);
    - ``{toole-single|Dense!.2f}``: an explicit format (default ``.3f``; ``,`` for integers); ``!p`` and
      ``!+p`` print a fraction in percentage points (``43.0``, ``+5.1``), as the papers do.

    A key with fewer parts than the mapping's keys is completed from the end of its ``tail``
    (e.g. the metric), so prose can say ``{toole-single|Dense}``. A missing value prints as
    ``n/a`` and is listed in :attr:`missing` (a smoke run lacks most of a standard reading's cells).
    Built :meth:`from_cells`, ``n`` in the metric's place gives a cell's number of queries
    (``{2|toolbench-i2|Ours|n}``), so prose states the sample it reads from.

        r = Reading(ours={(ds, method, metric): v}, tail=("ndcg@5",),
                    paper={(table, ds, method, metric): v}, paper_tail=("ndcg@5",))
        display(Markdown(r.format("BM25 {toole-single|BM25} vs {paper:1|toole-single|BM25}")))
    """

    def __init__(self, ours: dict | None = None, paper: dict | None = None, tail: tuple = (), paper_tail: tuple = ()):
        self.ours, self.paper = dict(ours or {}), dict(paper or {})
        self.tail, self.paper_tail = tuple(tail), tuple(paper_tail)
        self.missing: list[str] = []

    @classmethod
    def from_cells(cls, cells: list[dict], paper: str, tail: tuple = ()) -> "Reading":
        """``ours`` from recorded cells and ``paper`` from the paper's numbers, both keyed (table,
        dataset, method, metric)."""
        from .compare import load_paper_numbers
        ours = {(c["table"], c["dataset"], c["method"], c["metric"]): c["value"] for c in cells if c["paper"] == paper}
        ours.update({(c["table"], c["dataset"], c["method"], "n"): c["n_queries"] for c in cells
                     if c["paper"] == paper and c.get("n_queries") is not None})
        pn = {(r.table, r.dataset, r.method, r.metric): r.value for r in load_paper_numbers(paper).itertuples()}
        return cls(ours, pn, tail, tail)

    @classmethod
    def from_frames(cls, values: pd.DataFrame, key: list[str], metrics: list[str] | None = None,
                    paper: str | None = None, tail: tuple = (), paper_tail: tuple = ()) -> "Reading":
        """``ours`` from a results frame: ``key`` columns plus either a ``metric``/``value`` pair
        (long frame) or one column per metric in ``metrics`` (wide frame); ``paper`` from the
        paper's numbers keyed (table, dataset, method, metric)."""
        ours = {}
        for r in values.to_dict("records"):
            if metrics is None:
                ours[tuple(r[k] for k in key) + (r["metric"],)] = r["value"]
            else:
                for m in metrics:
                    ours[tuple(r[k] for k in key) + (m,)] = r[m]
        pn = {}
        if paper:
            from .compare import load_paper_numbers
            pn = {(r.table, r.dataset, r.method, r.metric): r.value for r in load_paper_numbers(paper).itertuples()}
        return cls(ours, pn, tail, paper_tail)

    def _lookup(self, ref: str):
        ref = ref.strip()
        table, tail = (self.paper, self.paper_tail) if ref.startswith("paper:") else (self.ours, self.tail)
        parts = tuple(p.strip() for p in ref.removeprefix("paper:").split("|"))
        size = len(next(iter(table))) if table else len(parts)
        if len(parts) < size:
            need = size - len(parts)
            if need > len(tail):
                raise ValueError(f"reading field {ref!r} has {len(parts)} parts, needs {size}")
            parts = parts + tail[len(tail) - need:]
        v = table.get(parts)
        if v is None or (isinstance(v, float) and v != v):
            self.missing.append(ref)
        return v

    def value(self, field: str, named: dict):
        """The number a field names and its default format."""
        for op, fmt in ((" - ", "+.3f"), (" % ", "+.0%")):
            if op in field:
                a, b = (self.value(x, named)[0] for x in field.split(op, 1))
                if a is None or b is None:
                    return None, fmt
                return (a - b if op == " - " else (a / b - 1 if b else None)), fmt
        if "|" not in field:
            if field not in named:
                raise KeyError(f"reading field {{{field}}}: no such value (give it to format())")
            v = named[field]
        else:
            v = self._lookup(field)
        return v, ("," if isinstance(v, int) and not isinstance(v, bool) else ".3f")

    def format(self, text: str, **named) -> str:
        import re

        def sub(m):
            field, _, spec = " ".join(m.group(1).split()).partition("!")   # a field may wrap across lines
            v, default = self.value(field, named)
            if v is None or (isinstance(v, float) and v != v):
                return "n/a"
            if spec in ("p", "+p"):                       # percentage points, as the papers print
                return format(v * 100, "+.1f" if spec == "+p" else ".1f")
            return format(v, spec or default)
        return re.sub(r"\{([^{}]+)\}", sub, text)


# --- the one formatter of the suite's tables ------------------------------------------------------------------

#: a label (any level) that matches names a retrieval metric: a fraction in results, ×100 in tables
METRIC_NAME = re.compile(r"(ndcg|recall|precision|\bmap\b|mrr|comp@|completeness|all.?gold|accuracy|success|hit@|"
                         r"improve)", re.I)
#: words a table prints instead of NaN: our cell not computed yet, the paper's value not printed, the test's
#: reference (no p against itself)
PENDING, NOT_PRINTED, REFERENCE = "pending", "not printed", "reference"


def percent(x: float, signed: bool = False) -> str:
    """A fraction ×100 with one decimal, as the papers print (``0.46097`` -> ``46.1``; ``signed``: ``+27.7``)."""
    return format(x * 100, "+.1f" if signed else ".1f")


def p_value(p: float) -> str:
    """A p value with three decimals, ``< 0.001`` below what 10,000 permutations resolve."""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def number(x) -> str:
    """Any other number: whole numbers with thousands separators, others with 3 significant digits (no
    exponent above 1,000)."""
    x = float(x)
    if x.is_integer() and abs(x) < 2**53:
        return f"{int(x):,}"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def is_missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


class Table:
    """A formatted table: ``frame`` holds the strings it shows; text columns (``left``) left-aligned, numbers
    right-aligned. Shown as HTML in a notebook, as aligned text elsewhere (``str``)."""

    def __init__(self, frame: pd.DataFrame, left: list, caption: str = ""):
        self.frame, self.left, self.caption = frame, list(left), caption

    def __str__(self) -> str:
        f = self.frame.copy()
        for c in self.left:
            width = max([len(str(v)) for v in f[c]] + [1])
            f[c] = [str(v).ljust(width) for v in f[c]]
        text = f.to_string()
        return f"{self.caption}\n{text}" if self.caption else text

    __repr__ = __str__

    def _repr_html_(self) -> str:
        sty = self.frame.style
        if self.left:
            sty = sty.set_properties(subset=self.left, **{"text-align": "left"})
        if self.caption:
            sty = sty.set_caption(self.caption)
        return sty.to_html(table_uuid="t")


def _label(col) -> str:
    return " ".join(str(c) for c in col) if isinstance(col, tuple) else str(col)


def _listed(col, names) -> bool:
    return any(col == n or _label(col) == n for n in names)


def role_of(col, values: pd.Series, metrics=None, percents=(), p=(), text=()) -> str:
    """How :func:`format_table` shows a column: text, p, percent (already ×100), metric (a fraction: ×100) or
    number."""
    name, last = _label(col), str(col[-1] if isinstance(col, tuple) else col)
    numeric = values.map(lambda v: is_missing(v) or (isinstance(v, (int, float, np.number)) and not isinstance(v, bool)))
    if _listed(col, text) or not numeric.all():
        return "text"
    if _listed(col, p) or re.match(r"^p( |_|$)", name) or last == "p":
        return "p"
    if percents == "floats" and values.map(lambda v: is_missing(v) or not float(v).is_integer()).all() \
            and not values.map(is_missing).all():
        return "percent"
    if percents != "floats" and _listed(col, percents):
        return "percent"
    if metrics is not None:
        return "metric" if _listed(col, metrics) else "number"
    return "metric" if METRIC_NAME.search(name) else "number"


def format_table(df: pd.DataFrame, *, metrics=None, percents=(), p=(), text=(), signed=(),
                 missing: str | dict = PENDING, caption: str = "") -> Table:
    """The suite's one table format (it formats what a notebook shows; the recorded values keep their scale):

    - metrics on the papers' scale: a fraction ×100 with one decimal (columns named like a metric,
      :data:`METRIC_NAME`, or exactly those listed in ``metrics``); ``percents``: columns already ×100
      (``"floats"``: every column of non-whole numbers, in a table of percentages);
    - a Δ column (last label ``Δ``, or listed in ``signed``: differences) signed, ``+27.7``;
    - p values (a column ``p``, or a label starting ``p ``) as ``< 0.001`` or three decimals;
    - other numbers: whole ones as integers with thousands separators, others with 3 significant digits;
    - NaN as a word (``missing``: one word, or column label -> word; default "pending");
    - text columns left-aligned.
    """
    out = pd.DataFrame(index=df.index)
    left = []
    for i, col in enumerate(df.columns):
        x = df.iloc[:, i]
        last = str(col[-1] if isinstance(col, tuple) else col)
        if isinstance(missing, dict):
            word = next((missing[k] for k in (col, _label(col), last) if k in missing), PENDING)
        else:
            word = missing
        role = role_of(col, x, metrics, percents, p, text)
        sign = last == "Δ" or _listed(col, signed)

        def fmt(v, role=role, signed=sign, word=word):
            if is_missing(v):
                return word
            if role == "text":
                return str(v)
            if role == "p":
                return p_value(float(v))
            if role == "metric":
                return percent(float(v), signed)
            if role == "percent":
                return format(float(v), "+.1f" if signed else ".1f")
            return number(v)
        out[i] = [fmt(v) for v in x]
        if role == "text":
            left.append(col)
    out.columns = df.columns
    return Table(out, left, caption)


def paper_table(rec: Recorder, paper: str, table: str | list[str], wide: bool = True, columns: list | None = None,
                caption: str = "") -> Table:
    """:func:`side_by_side` through :func:`format_table`: the paper's value, ours and Δ = ours - paper, metrics
    ×100 with one decimal (counts as counts); "not printed" where the paper has no value, "pending" where we have
    none yet. ``columns``: the long frame's columns to show (``wide=False``); ``table``: one table, or (long) several
    shown as one."""
    if isinstance(table, str):
        df = side_by_side(rec, paper, table, wide=wide)
    elif wide:
        raise ValueError("paper_table: several tables only with wide=False")
    else:
        df = pd.concat([side_by_side(rec, paper, t, wide=False) for t in table], ignore_index=True)
    if wide:
        cells = [c for c in df.columns if c[1] in ("paper", "ours", "Δ")]
        metrics = [c for c in cells if METRIC_NAME.search(str(c[0]))]
        missing = {c: NOT_PRINTED if c[1] in ("paper", "Δ") else PENDING for c in cells}
        return format_table(df, metrics=metrics, missing=missing, caption=caption)
    df = df.rename(columns={"diff": "Δ"})
    # a long frame mixes metrics (fractions) and counts row by row: each value formatted by its row's metric
    shown = df if columns is None else df[[c if c != "diff" else "Δ" for c in columns]]
    out = format_table(shown, text=[c for c in ("dataset", "method", "metric", "note") if c in shown.columns],
                       missing={"paper": NOT_PRINTED, "Δ": NOT_PRINTED, "ours": PENDING, "note": "",
                                "n_queries": ""}, caption=caption)
    is_metric = df["metric"].map(lambda m: bool(METRIC_NAME.search(str(m))))
    for c in ("paper", "ours", "Δ"):
        if c in shown.columns:
            out.frame[c] = [out.frame[c].iloc[k] if is_missing(v) else
                            (percent(float(v), c == "Δ") if is_metric.iloc[k] else number(v))
                            for k, v in enumerate(shown[c])]
    return out


def call_with(fn, namespace):
    """``fn`` called with each of its keyword-only parameters taken by name from ``namespace`` (a notebook's
    ``globals()``). A name the namespace lacks is an error naming it, unless the parameter has a default (a variable
    the notebook defines only on some paths, e.g. when a score cache exists)."""
    import inspect
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY]
    names = [p.name for p in params if p.name in namespace or p.default is p.empty]
    missing = [n for n in names if n not in namespace]
    if missing:
        raise NameError(f"{fn.__module__}.{fn.__name__} needs {', '.join(missing)} from the notebook: run the cells "
                        f"above it first")
    return fn(**{n: namespace[n] for n in names})


def reading_cell(fn, namespace):
    """A notebook's reading in one call: the markdown ``fn`` formats from the run (its keyword-only parameters taken
    from ``namespace``, :func:`call_with`), as a displayable Markdown object."""
    from IPython.display import Markdown
    return Markdown(call_with(fn, namespace))
