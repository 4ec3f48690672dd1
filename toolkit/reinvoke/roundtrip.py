"""Round-trip consistency of the synthetic queries (Re-Invoke §6.2, Table 4; Alberti et al. 2019).

Every synthetic query is used as a query; its only relevant document is the tool document it was
generated from; recall@k says how often that tool is in the top k. The paper does not say which
index is searched; we search the plain (unexpanded) tool documents by default — searching the
expanded index would let each query find its own copy. ``index`` may be any object with
``doc_ids`` and ``scores(texts)`` (e.g. ``pipeline.build_index(ds, "dense")``).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from toolkit.data.contract import Qrels, Run
from toolkit.reinvoke.pipeline import run_from_intents


def roundtrip_dataset(expansions: Mapping[str, Sequence[str]]) -> tuple[dict[str, list[str]], Qrels]:
    """Synthetic queries as queries ``{"<doc_id>#<i>": [query]}`` and their qrels."""
    queries, qrels = {}, {}
    for d, qs in expansions.items():
        for i, q in enumerate(qs):
            if q and q.strip():
                queries[f"{d}#{i}"] = [q]
                qrels[f"{d}#{i}"] = {d: 1}
    return queries, qrels


def roundtrip_run(index, expansions: Mapping[str, Sequence[str]], k: int = 10) -> tuple[Run, Qrels]:
    """Run and qrels for :func:`toolkit.metrics.evaluate` (Table 4 reports recall@5 and recall@10)."""
    queries, qrels = roundtrip_dataset(expansions)
    return run_from_intents(index, queries, k=k), qrels
