"""Run retrievers over datasets and collect per-query metrics — the loop every notebook needs.

Per-query values are kept so that unions of datasets (Re-Invoke's I1 = G1_instruction + G1_tool +
G1_category, the feedback paper's "All") and seen/unseen averages are computed from the same
numbers, and every index is built once per (retriever, corpus): the six ToolBench groups share
the library index.
"""
from __future__ import annotations

import hashlib
import time
from typing import Callable, Mapping

import pandas as pd

from .data.contract import RetrievalDataset, Run
from .metrics import evaluate
from .runs import keep


def corpus_fingerprint(ds: RetrievalDataset) -> str:
    h = hashlib.sha256()
    for doc_id, doc in ds.corpus.items():
        h.update(doc_id.encode())
        h.update(b"\0")
        h.update(doc.text.encode())
        h.update(b"\1")
    return h.hexdigest()[:16]


def evaluate_grid(datasets: Mapping[str, RetrievalDataset], retrievers: Mapping[str, Callable[[], object]],
                  metrics: list[str], k: int = 100, ties: str = "trec", log: Callable[[str], None] | None = print
                  ) -> tuple[pd.DataFrame, dict[tuple[str, str], Run], pd.DataFrame]:
    """Evaluate every retriever on every dataset.

    ``retrievers`` maps a method name to a zero-argument factory (a fresh retriever per corpus);
    ``ties`` is passed to :func:`toolkit.metrics.evaluate`.
    Returns (per-query metrics with columns dataset, method, qid, metric, value; the runs keyed by
    (dataset, method); timings with columns dataset, method, index_s, search_s, queries).
    """
    from .metrics import check_depth
    check_depth(metrics, k)                       # before any index is built
    rows, runs, timings = [], {}, []
    indexed: dict[tuple[str, str], object] = {}
    for method, factory in retrievers.items():
        for name, ds in datasets.items():
            key = (method, corpus_fingerprint(ds))
            t0 = time.perf_counter()
            if key not in indexed:
                retriever = factory()
                ids, texts = ds.doc_texts()
                retriever.index(ids, texts)
                indexed[key] = retriever
            t1 = time.perf_counter()
            run = indexed[key].search(ds.query_texts(), k=k)
            t2 = time.perf_counter()
            runs[(name, method)] = run
            keep(name, method, run, ds.qrels, ties=ties)
            per_q = evaluate(run, ds.qrels, metrics, per_query=True, ties=ties)
            for metric, values in per_q.items():
                rows += [(name, method, qid, metric, v) for qid, v in values.items()]
            timings.append({"dataset": name, "method": method, "index_s": t1 - t0, "search_s": t2 - t1,
                            "queries": len(ds.queries), "documents": len(ds.corpus)})
            if log:
                log(f"{method:<10} {name:<28} {len(ds.queries):>6} queries  index {t1 - t0:6.1f}s  "
                    f"search {t2 - t1:6.1f}s")
    per_query = pd.DataFrame(rows, columns=["dataset", "method", "qid", "metric", "value"])
    return per_query, runs, pd.DataFrame(timings)


def means(per_query: pd.DataFrame, unions: Mapping[str, list[str]] | None = None) -> pd.DataFrame:
    """Mean of each (dataset, method, metric); ``unions`` adds rows for unions of datasets, averaged
    over all their queries (micro average, as a merged test set would be)."""
    frames = [per_query]
    for new, parts in (unions or {}).items():
        part = per_query[per_query.dataset.isin(parts)]
        if part.dataset.nunique() != len(parts):
            missing = sorted(set(parts) - set(part.dataset))
            raise KeyError(f"union {new!r} needs datasets {missing} that were not evaluated")
        frames.append(part.assign(dataset=new))
    allq = pd.concat(frames)
    return allq.groupby(["dataset", "method", "metric"], sort=False)["value"].agg(["mean", "count"]).reset_index()


def macro_average(table: pd.DataFrame, name: str, parts: list[str]) -> pd.DataFrame:
    """Rows ``name`` = unweighted mean of the per-dataset means over ``parts`` (ToolRerank's
    seen/unseen/all "Average" columns average the subsets)."""
    sub = table[table.dataset.isin(parts)]
    if sub.dataset.nunique() != len(parts):
        raise KeyError(f"average {name!r} needs datasets {sorted(set(parts) - set(sub.dataset))}")
    out = sub.groupby(["method", "metric"], sort=False).agg(mean=("mean", "mean"), count=("count", "sum")).reset_index()
    return out.assign(dataset=name)[["dataset", "method", "metric", "mean", "count"]]
