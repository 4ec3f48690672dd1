"""Notebook ``30_feedback``'s tables, one function each (Xu et al. 2024, Tables 1-3), and the cells
they record under the paper's keys (``data/paper_numbers/iterative_feedback.yaml``)."""
from __future__ import annotations

import pandas as pd

from toolkit.feedback.data import IN_DOMAIN, OUT_OF_DOMAIN, UNAVAILABLE

PAPER = "iterative_feedback"
KEY = {**IN_DOMAIN, **OUT_OF_DOMAIN, "T-Eval": "teval"}       # column label -> the YAML's dataset key


def table1(train_queries: int, train_apis: int, tests: dict) -> pd.DataFrame:
    """Our statistics: # instructions and # tool set per set (T-Eval: tools only, its queries are not public)."""
    rows = [{"set": "Training: ToolLens train (in place of ToolBench train)", "dataset": "toolbench-all",
             "method": "train", "queries": train_queries, "tools": train_apis}]
    for label, ds in tests.items():
        rows.append({"set": f"{'In' if label in IN_DOMAIN else 'Out-of'}-domain: {label}", "dataset": KEY[label],
                     "method": "test", "queries": len(ds.queries), "tools": len(ds.corpus)})
    for label, why in UNAVAILABLE.items():
        rows.append({"set": f"Out-of-domain: {label}", "dataset": KEY[label], "method": "test", "queries": None,
                     "tools": 50, "note": why})
    return pd.DataFrame(rows)


def record_table1(rec, t1: pd.DataFrame) -> None:
    for r in t1.itertuples():
        for metric in ("queries", "tools"):
            v = getattr(r, metric)
            if v is not None and not pd.isna(v):
                rec.add(paper=PAPER, table="1", dataset=r.dataset, method=r.method, metric=metric, value=float(v),
                        note=getattr(r, "note", "") if isinstance(getattr(r, "note", ""), str) else "")


def retrieval_table(values: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Tables 2/3: method rows x (set, metric) columns, ours (x100, as the paper prints)."""
    v = values[values.metric.isin(metrics)]
    w = v.pivot_table(index="method", columns=["set", "metric"], values="value", sort=False) * 100
    return w.round(2)


def improve(values: pd.DataFrame, ours: str = "Ours", best_previous: str = "ToolRetriever") -> pd.DataFrame:
    """'% improve': the relative improvement of ours over the best previous method, per cell."""
    w = values.pivot_table(index=["set", "metric"], columns="method", values="value", sort=False)
    if ours not in w or best_previous not in w:
        return pd.DataFrame(columns=["set", "metric", "% improve"])
    return ((w[ours] / w[best_previous] - 1) * 100).rename("% improve").reset_index()


def record_retrieval(rec, values: pd.DataFrame, table: str, notes: dict[str, str] | None = None) -> None:
    """Cells of Tables 2/3 (our values as fractions); rows on an LLM sample carry its size in the note."""
    notes = notes or {}
    for r in values.itertuples():
        rec.add(paper=PAPER, table=table, dataset=KEY[r.set], method=r.method, metric=r.metric, value=r.value,
                n_queries=int(r.n), note=notes.get(r.method, ""), ours_only=bool(getattr(r, "ours_only", False)))
