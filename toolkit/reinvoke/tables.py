"""Notebook ``20_reinvoke``'s tables, from the values frame of
:func:`toolkit.reinvoke.experiment.run_conditions` (one row per evaluated condition: dataset, method,
tables, backbone, m, queries and one column per metric): recording them under the paper's keys
(``data/paper_numbers/reinvoke.yaml``), one table beside the paper's, and the reading's lookups.
"""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from toolkit.reinvoke.experiment import MAIN_BACKBONE, METRICS


def record(rec, values: pd.DataFrame, notes: Mapping[str, str] | None = None,
           dataset_notes: Mapping[str, str] | None = None, main_backbone: str = MAIN_BACKBONE) -> None:
    """Record every computed cell under the paper's keys (Table 1: nDCG@5; 6: all four; 3A-D: nDCG@5).
    A cell's note is ``dataset_notes[dataset]`` (e.g. the ToolBench corpus, which is not the paper's),
    ``notes[method]``, then "m=<synthetic queries per tool>" where the run used any; rows of a backbone
    other than ``main_backbone`` are recorded ``ours_only`` (the paper's backbones are others)."""
    notes, dataset_notes = notes or {}, dataset_notes or {}
    for r in values.to_dict("records"):
        m = r.get("m")
        note = "; ".join(x for x in (dataset_notes.get(r["dataset"], ""), notes.get(r["method"], ""),
                                     "" if m is None or pd.isna(m) else f"m={int(m)}") if x)
        for table in r["tables"].split(","):
            if table == "extra":
                continue
            mets = ["ndcg@5"] if table != "6" else list(METRICS)
            for met in mets:
                rec.add(paper="reinvoke", table=table, dataset=r["dataset"], method=r["method"], metric=met,
                        value=r[met], n_queries=r["queries"], note=note,
                        ours_only=isinstance(r.get("backbone"), str) and r["backbone"] != main_backbone)


def table_frame(values: pd.DataFrame, tables: str, metric: str = "ndcg@5", paper_table: str | None = None) -> pd.DataFrame:
    """Methods × datasets for one table (ours), with the paper's value beside each where printed."""
    from toolkit.compare import load_paper_numbers
    v = values[values["tables"].str.split(",").apply(lambda t: any(x in tables.split(",") for x in t))]
    ours = v.pivot_table(index="method", columns="dataset", values=metric, aggfunc="first")
    if paper_table:
        pn = load_paper_numbers("reinvoke")
        pn = pn[(pn["table"] == paper_table) & (pn["metric"] == metric)]
        paper = pn.pivot_table(index="method", columns="dataset", values="value", aggfunc="first")
        paper = paper.reindex(index=ours.index, columns=ours.columns)
        ours = pd.concat({"ours": ours, "paper": paper}, axis=1).swaplevel(axis=1).sort_index(axis=1)
    return ours.round(4)


def record_roundtrip(rec, roundtrip: pd.DataFrame) -> None:
    """Table 4: the round-trip recall of the row with all the run's synthetic queries (``main``)."""
    for r in roundtrip.to_dict("records"):
        if r["main"]:
            for met in ("recall@5", "recall@10"):
                rec.add(paper="reinvoke", table="4", dataset=r["dataset"], method="Re-Invoke query generator",
                        metric=met, value=r[met], n_queries=int(r["synthetic queries"]), note=f"m={int(r['m'])}")


def reading(values: pd.DataFrame, roundtrip: pd.DataFrame | None = None):
    """A :class:`toolkit.report.Reading` over this run: ours keyed (dataset, method, metric) — a
    condition evaluated on both query sets reads as its whole-set row (Tables 1/6), the LLM-sample
    one is ``<method> (LLM query sample)`` — and Table 4's rows as ``round trip, first <m>``; the
    paper's keyed (table, dataset, method, metric). The default metric is nDCG@5."""
    from toolkit.compare import load_paper_numbers
    from toolkit.report import Reading
    ours = {}
    whole_first = values.assign(_later=~values["tables"].str.split(",").map(lambda t: "1" in t))
    for r in whole_first.sort_values("_later", kind="stable").to_dict("records"):
        for met in METRICS:
            ours.setdefault((r["dataset"], r["method"], met), r[met])
    for r in ([] if roundtrip is None else roundtrip.to_dict("records")):
        for met in ("recall@5", "recall@10"):
            ours[(r["dataset"], f"round trip, first {int(r['m'])}", met)] = r[met]
            if r["main"]:                                    # Table 4's recorded row
                ours[(r["dataset"], "Re-Invoke query generator", met)] = r[met]
    paper = {(r.table, r.dataset, r.method, r.metric): r.value for r in load_paper_numbers("reinvoke").itertuples()}
    return Reading(ours, paper, tail=("ndcg@5",), paper_tail=("ndcg@5",))


def intent_counts(intents: Mapping[str, list[str]]) -> dict:
    """Intents per query: mean and the share of queries with exactly one."""
    n = [len(v) for v in intents.values()]
    return {"mean": sum(n) / len(n) if n else float("nan"), "one": sum(x == 1 for x in n) / len(n) if n else float("nan")}
