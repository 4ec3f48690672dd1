"""A ceiling and a floor for Table 1, on the same requests: query sets that need no LLM.

Each function below writes, per request, the list of queries a generator would have answered, and that
list goes through the generators' own path (:func:`toolkit.querygen.retrieval.query_sets`: the utterance
appended last, one ranked list per query, the lists interleaved):

- :func:`oracle_queries` ("Oracle queries"): the gold APIs' own index texts
  (:func:`~toolkit.querygen.data.api_description`, ``<tool>: <api>: <description>``). Each is the index key
  of its API, so its nearest neighbour is that API (cosine 1); the interleaving takes the first item of
  every list first, so every gold API is ranked in the first ``len(gold)`` places and every metric is 1
  **by construction** (while no two APIs share an index text). It is the upper end of the scale, not a
  result.
- :func:`oracle_descriptions` ("Oracle descriptions (no names)"): the gold APIs' developer descriptions
  alone, without the tool and API names (``api_fields(doc)[2]``): what a generator writes that knows what
  each needed API does but not what it is called. Retrieval has to earn this ceiling: a description
  shared by several APIs, or one too generic to single out its API, costs rank.
- :func:`copy_utterance` ("Copy the utterance"): the request itself as the one generated query. With the
  utterance appended the query set is the request twice, and interleaving a list with itself gives that
  list, so the row equals the utterance baseline on the same requests, request by request: the floor,
  reached through the generators' path (a check that the path adds nothing).

:func:`gap_closed` is the share of the floor-to-ceiling distance a method covers,
``(method - floor) / (ceiling - floor)``: 0 at the floor, 1 at the ceiling, negative below the floor.
"""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from toolkit.data.contract import Document, RetrievalDataset
from toolkit.querygen.data import api_fields

ORACLE = "Oracle queries"
ORACLE_DESCRIPTIONS = "Oracle descriptions (no names)"
COPY = "Copy the utterance"
BOUNDS = (COPY, ORACLE_DESCRIPTIONS, ORACLE)


def _gold(qrels: Mapping[str, Mapping[str, int]], qid: str) -> list[str]:
    """The request's gold APIs, in doc-id order (the queries' order is the interleaving's)."""
    return sorted(d for d, r in qrels[qid].items() if r > 0)


def description_only(doc: Document) -> str:
    """An API's developer description without its tool and API names. The split's documents keep
    ToolLens's original text in ``meta["toollens_text"]`` (their ``text`` is the index key)."""
    raw = doc.meta.get("toollens_text", doc.text)
    return api_fields(Document(doc.doc_id, doc.category, doc.tool, doc.api, raw, {}))[2]


def oracle_queries(ds: RetrievalDataset, corpus: Mapping[str, Document]) -> dict[str, list[str]]:
    """Per request of ``ds``: its gold APIs' index texts (the documents' ``text``)."""
    return {q: [corpus[d].text for d in _gold(ds.qrels, q)] for q in ds.queries}


def oracle_descriptions(ds: RetrievalDataset, corpus: Mapping[str, Document]) -> dict[str, list[str]]:
    """Per request of ``ds``: its gold APIs' descriptions without names (:func:`description_only`)."""
    return {q: [description_only(corpus[d]) for d in _gold(ds.qrels, q)] for q in ds.queries}


def copy_utterance(ds: RetrievalDataset) -> dict[str, list[str]]:
    """Per request of ``ds``: the request itself, as the only generated query."""
    return {q: [t] for q, t in ds.query_texts().items()}


def bound_queries(corpus: Mapping[str, Document], tests: Mapping[str, RetrievalDataset]
                  ) -> dict[str, dict[str, dict[str, list[str]]]]:
    """``{row: {test set: {qid: queries}}}`` for the three rows, on the requests of ``tests`` (the LLM
    samples), in the shape :func:`toolkit.querygen.experiment.evaluate_conditions` takes."""
    return {COPY: {n: copy_utterance(ds) for n, ds in tests.items()},
            ORACLE_DESCRIPTIONS: {n: oracle_descriptions(ds, corpus) for n, ds in tests.items()},
            ORACLE: {n: oracle_queries(ds, corpus) for n, ds in tests.items()}}


def gap_closed(value: float, floor: float, ceiling: float) -> float | None:
    """``(value - floor) / (ceiling - floor)``; None when the ceiling is not above the floor."""
    if ceiling is None or floor is None or value is None or not ceiling > floor:
        return None
    return (value - floor) / (ceiling - floor)


def gap_table(values: pd.DataFrame, methods, ceilings=(ORACLE, ORACLE_DESCRIPTIONS), floor: str = COPY,
              metrics=("recall@5", "mmrr@11")) -> pd.DataFrame:
    """Per test set, method, ceiling and metric: floor, ceiling and method values and the share of the gap
    the method closes. ``values``: :func:`~toolkit.querygen.experiment.evaluate_conditions`' long table
    holding ``methods``, ``floor`` and ``ceilings`` (the utterance appended, LLM sample). With a
    ``per_query`` column the floor and ceiling are averaged over the method's own requests (a method
    still partly answered is compared on what it answered). Columns dataset, method, ceiling, metric,
    floor_value, ceiling_value, value, share, n."""
    v = values[values.utterance & (values["sample"] == "llm")]
    cols = ["dataset", "method", "ceiling", "metric", "floor_value", "ceiling_value", "value", "share", "n"]

    def cell(method, ds, metric):
        c = v[(v.method == method) & (v.dataset == ds) & (v.metric == metric)]
        return c.iloc[0] if len(c) else None

    def mean_on(c, qids):
        if "per_query" not in c or not isinstance(c.per_query, dict):
            return float(c.value)
        got = [c.per_query[q] for q in qids if q in c.per_query]
        return sum(got) / len(got) if len(got) == len(qids) and got else None

    rows = []
    for ds in dict.fromkeys(v.dataset):
        for method in methods:
            for metric in metrics:
                m, lo = cell(method, ds, metric), cell(floor, ds, metric)
                if m is None or lo is None:
                    continue
                qids = list(m.per_query) if "per_query" in m and isinstance(m.per_query, dict) else None
                for ceiling in ceilings:
                    hi = cell(ceiling, ds, metric)
                    if hi is None:
                        continue
                    f, c = (mean_on(lo, qids), mean_on(hi, qids)) if qids else (float(lo.value), float(hi.value))
                    rows.append({"dataset": ds, "method": method, "ceiling": ceiling, "metric": metric,
                                 "floor_value": f, "ceiling_value": c, "value": float(m.value),
                                 "share": gap_closed(float(m.value), f, c), "n": int(m.n)})
    return pd.DataFrame(rows, columns=cols)


def not_first(index, ds: RetrievalDataset, corpus: Mapping[str, Document], text=description_only) -> tuple[int, int]:
    """(gold APIs of ``ds``, how many of them ``text(doc)`` alone does not retrieve first) with ``index``
    (a :class:`~toolkit.querygen.retrieval.QueryIndex`, or anything with its ``ranked(texts, k)``): why an
    oracle row falls short of 1. With ``text`` the index key itself the second number is 0 while no two
    APIs share a key."""
    gold = sorted({d for q in ds.queries for d in _gold(ds.qrels, q)})
    firsts = index.ranked([text(corpus[d]) for d in gold], 1) if gold else []
    return len(gold), sum(1 for d, r in zip(gold, firsts) if not r or r[0] != d)
