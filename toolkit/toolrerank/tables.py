"""Per-subset values, the paper's averages, and recording them under the paper-number keys.

Subsets are named as in the paper (``I1-Inst`` ... ``I2-Cat``) and recorded under the canonical
dataset keys of ``data/paper_numbers/toolrerank.yaml`` (``toolbench-g1-instruction`` ...);
averages are unweighted means over subsets, as the paper's Average columns.
"""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from toolkit.metrics import evaluate

from .pipeline import Candidates, as_run, method_lists
from .splits import MULTI_SUBSETS, SEEN_SUBSETS, SINGLE_SUBSETS, SUBSETS, UNSEEN_SUBSETS

AVERAGES = {"seen-avg": SEEN_SUBSETS, "unseen-avg": UNSEEN_SUBSETS, "all-avg": list(SUBSETS),
            "single-avg": SINGLE_SUBSETS, "multi-avg": MULTI_SUBSETS}


def dataset_key(name: str) -> str:
    """Paper-number dataset key of a subset or average name."""
    return SUBSETS[name][0] if name in SUBSETS else name


def values(cands: Mapping[str, Candidates], method, metrics=("ndcg@5", "recall@5"),
           averages=("seen-avg", "unseen-avg", "all-avg")) -> dict[str, dict[str, float]]:
    """{subset or average: {metric: value}} of ``method`` (see :func:`pipeline.method_lists`)."""
    out = {}
    for name, c in cands.items():
        out[name] = evaluate(as_run(method_lists(c, method)), c.dataset.qrels, list(metrics))
    return add_averages(out, averages)


def add_averages(vals: dict[str, dict[str, float]], averages) -> dict[str, dict[str, float]]:
    for avg in averages:
        parts = AVERAGES[avg]
        if all(p in vals for p in parts):
            metrics = vals[parts[0]].keys()
            vals[avg] = {m: sum(vals[p][m] for p in parts) / len(parts) for m in metrics}
    return vals


def record(rec, table: str, method: str, vals: dict[str, dict[str, float]], n_queries: Mapping[str, int],
           note: str = "", names=None, metrics=None) -> None:
    for name in names or vals:
        for metric in metrics or vals[name]:
            n = n_queries.get(name) if name in n_queries else sum(n_queries.get(p, 0) for p in AVERAGES.get(name, []))
            rec.add(paper="toolrerank", table=table, dataset=dataset_key(name), method=method, metric=metric,
                    value=vals[name][metric], n_queries=n, note=note)


def frame(rows: Mapping[str, dict[str, dict[str, float]]], columns: list[str], metrics: list[str],
          scale: float = 100.0) -> pd.DataFrame:
    """Rows = methods, columns = (subset/average, metric), in percent like the paper."""
    data = {m: {(col, met): rows[m][col][met] * scale for col in columns for met in metrics if col in rows[m]}
            for m in rows}
    df = pd.DataFrame.from_dict(data, orient="index")
    df.columns = pd.MultiIndex.from_tuples(df.columns)
    return df.round(1)


def paper_frame(table: str, methods: list[str], columns: list[str], metrics: list[str]) -> pd.DataFrame:
    """The paper's printed numbers in the layout of :func:`frame` (percent)."""
    from toolkit.compare import load_paper_numbers
    pn = load_paper_numbers("toolrerank")
    pn = pn[pn["table"] == table]
    look = {(r.dataset, r.method, r.metric): r.value for r in pn.itertuples()}
    data = {m: {(c, met): look.get((dataset_key(c), m, met)) for c in columns for met in metrics} for m in methods}
    df = pd.DataFrame.from_dict(data, orient="index")
    df.columns = pd.MultiIndex.from_tuples(df.columns)
    return df * 100 if pn["value"].max() <= 1.0 else df
