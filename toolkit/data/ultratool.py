"""UltraTool English test set (1,000 queries; JSON Lines despite the .json name) and the T-Eval
tool documents (15 tools, 50 APIs; T-Eval's queries are not public).

UltraTool: the corpus is every distinct tool name in the file (436), its text ``"<name>:
<description>"`` from the first record that documents it; a query's gold tools are the names in
its ``tools`` list. Category = the record's domain where the tool first appears.
"""
from __future__ import annotations

import json

from .contract import Document, Query, RetrievalDataset
from .sources import data_file


def load_ultratool() -> RetrievalDataset:
    path = data_file("ultratool/test.json")
    corpus: dict[str, Document] = {}
    queries, qrels = {}, {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            try:
                r = json.loads(line)
                question, tools = r["question"], r["tools"]
            except (json.JSONDecodeError, KeyError) as e:
                raise ValueError(f"{path}:{i + 1}: expected a JSON object with question and tools ({e})") from e
            for t in tools:
                if t["name"] not in corpus:
                    corpus[t["name"]] = Document(t["name"], r.get("domain", ""), t["name"], t["name"],
                                                 f"{t['name']}: {t.get('description', '')}",
                                                 {"description": t.get("description", "")})
            qid = f"u{i}"
            queries[qid] = Query(qid, question.strip(), r.get("domain", ""))
            qrels[qid] = {t["name"]: 1 for t in tools}
    return RetrievalDataset("ultratool", corpus, queries, qrels, description="UltraTool English test")


def load_teval_corpus() -> dict[str, Document]:
    """T-Eval's 50 API documents (``<tool>.<api>`` ids). There are no queries to evaluate on."""
    path = data_file("teval/api_descrip.json")
    docs = {}
    for tool in json.load(open(path, encoding="utf-8")):
        for a in tool["api_list"]:
            key = f"{tool['name']}.{a['name']}"
            docs[key] = Document(key, "teval", tool["name"], a["name"],
                                 f"{tool['name']}, {a['name']}, {a.get('description', '')}",
                                 {"tool_description": tool.get("tool_description", "")})
    return docs
