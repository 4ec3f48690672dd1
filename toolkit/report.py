"""Tables for notebooks: our recorded cells beside the paper's printed numbers."""
from __future__ import annotations

import pandas as pd

from .results import Recorder


def side_by_side(rec: Recorder, paper: str, table: str, wide: bool = True) -> pd.DataFrame:
    """Our cells of ``paper``/``table`` next to the paper's values (fractions; ``diff`` = ours - paper).

    ``wide`` pivots to one row per method and a column pair (paper, ours) per dataset/metric.
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
        return df
    w = df.pivot_table(index="method", columns=["dataset", "metric"], values=["paper", "ours"], sort=False)
    w = w.reorder_levels([1, 2, 0], axis=1).sort_index(axis=1, level=[0, 1], sort_remaining=False)
    order = list(dict.fromkeys(df["method"]))
    return w.reindex(order)
