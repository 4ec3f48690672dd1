"""ToolE (MetaTool, Huang et al. 2023): 199 tools; 20,550 single-tool and 497 multi-tool queries.

A tool is its own single API, so category = "toole" and tool = api = the tool name. Documents are
``"<name>: <description>"`` from ``plugin_des.json`` (Re-Invoke: ToolE tool documents are the
tool name and description).
"""
from __future__ import annotations

import csv
import json

from .contract import Document, Query, RetrievalDataset
from .sources import data_file


def toole_corpus() -> dict[str, Document]:
    path = data_file("toole/plugin_des.json")
    des = json.load(open(path, encoding="utf-8"))
    if not isinstance(des, dict):
        raise ValueError(f"{path}: expected a JSON object tool name -> description")
    return {name: Document(name, "toole", name, name, f"{name}: {text}", {"description": text})
            for name, text in des.items()}


def load_toole_single(duplicates: str = "union") -> RetrievalDataset:
    """ToolE single-tool queries (``all_clean_data.csv``, header ``Query,Tool``).

    The file has 20,614 rows for 20,550 distinct queries: 50 queries repeat, 11 of them with two
    different tools. ``duplicates="union"`` (default) keeps every label, so those 11 queries have
    two relevant tools; ``"first"`` keeps the first row's tool only (Re-Invoke's 20,550 pairs).
    Query ids ``s<i>`` follow first occurrence order.
    """
    if duplicates not in ("union", "first"):
        raise ValueError(f"duplicates must be 'union' or 'first', got {duplicates!r}")
    path = data_file("toole/all_clean_data.csv")
    corpus = toole_corpus()
    qid_of: dict[str, str] = {}
    queries, qrels = {}, {}
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != ["Query", "Tool"]:
            raise ValueError(f"{path}: header must be 'Query,Tool', got {reader.fieldnames}")
        for lineno, row in enumerate(reader, 2):
            text, tool = row["Query"], row["Tool"]
            if tool not in corpus:
                raise ValueError(f"{path}:{lineno}: tool {tool!r} has no description in plugin_des.json")
            qid = qid_of.get(text)
            if qid is None:
                qid = qid_of[text] = f"s{len(qid_of)}"
                queries[qid] = Query(qid, text, "single")
                qrels[qid] = {tool: 1}
            elif duplicates == "union":
                qrels[qid][tool] = 1
    return RetrievalDataset("toole-single", corpus, queries, qrels,
                            description=f"ToolE single-tool, duplicates={duplicates}")


def load_toole_multi() -> RetrievalDataset:
    """ToolE multi-tool queries (``multi_tool_query_golden.json``): 497 queries, two tools each.
    Query ids ``m<i>`` in file order."""
    path = data_file("toole/multi_tool_query_golden.json")
    corpus = toole_corpus()
    data = json.load(open(path, encoding="utf-8"))
    queries, qrels = {}, {}
    for i, r in enumerate(data):
        try:
            text, tools = r["query"], r["tool"]
        except (KeyError, TypeError) as e:
            raise ValueError(f"{path}: record {i} needs 'query' and 'tool' fields") from e
        bad = [t for t in tools if t not in corpus]
        if bad:
            raise ValueError(f"{path}: record {i}: tool {bad[0]!r} has no description in plugin_des.json")
        qid = f"m{i}"
        queries[qid] = Query(qid, text, "multi")
        qrels[qid] = {t: 1 for t in tools}
    return RetrievalDataset("toole-multi", corpus, queries, qrels, description="ToolE multi-tool")
