"""ToolLens (COLT, Qu et al. 2024): 18,770 queries over 464 ToolBench APIs, BEIR format.

Documents keep ToolLens's own text (``category_name:..., tool_name:..., api_name:..., ...``); the
hierarchy is parsed from it and standardized as ToolBench does, so ids match the library form
``<category>/<tool>/<api>`` in ``meta['api_key']`` (the BEIR doc id stays the document id).
Query group = number of gold tools (``1-tool``, ``2-tool``, ``3-tool``).
"""
from __future__ import annotations

import csv
import json
import re

from .contract import Document, Query, RetrievalDataset
from .sources import data_file
from .standardize import api_key

_FIELDS = re.compile(r"^category_name:(?P<cat>.*?), tool_name:(?P<tool>.*?), api_name:(?P<api>.*?), api_description:")


def render_like_toollens(doc: Document) -> str:
    """A ToolBench library API (:func:`toolkit.data.toolbench.load_library`) in ToolLens's document format, so a
    model trained on ToolLens documents cannot tell a library API from a ToolLens one by its layout. The library
    has standardized names (rendered humanized and title-cased: ``worldwide_recipes`` -> ``Worldwide Recipes``)
    and no response examples (``return_schema: ""``, as 131 of ToolLens's 464 documents have)."""
    def name(s: str) -> str:
        return s.replace("_", " ").title()
    req, opt = doc.meta.get("required_parameters"), doc.meta.get("optional_parameters")
    return (f"category_name:{doc.category}, tool_name:{name(doc.tool)}, api_name:{name(doc.api)}, "
            f"api_description:{doc.meta.get('description') or ''}, "
            f"required_params: {json.dumps(req if req is not None else [])}, "
            f"optional_params: {json.dumps(opt if opt is not None else [])}, return_schema: \"\"")


def _record(path, lineno: int, line: str, fields: tuple[str, ...]) -> dict:
    """One JSONL record with its required fields, or an error naming the file, line and field."""
    try:
        r = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{lineno}: not a JSON object ({e}); a truncated or damaged file?") from None
    missing = [k for k in fields if not isinstance(r, dict) or k not in r]
    if missing:
        raise ValueError(f"{path}:{lineno}: record has no field {missing[0]!r} (needs {', '.join(fields)})")
    return r


def toollens_corpus() -> dict[str, Document]:
    path = data_file("toollens/corpus.jsonl")
    docs = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            r = _record(path, lineno, line, ("_id", "text"))
            m = _FIELDS.match(r.get("text", ""))
            if not m:
                raise ValueError(f"{path}:{lineno}: text does not start with 'category_name:..., tool_name:..., "
                                 f"api_name:..., api_description:'")
            key = api_key(m["cat"], m["tool"], m["api"])
            cat, tool, api = key.split("/")
            docs[r["_id"]] = Document(r["_id"], cat, tool, api, r["text"], {"api_key": key})
    return docs


def load_toollens(split: str = "test") -> RetrievalDataset:
    if split not in ("train", "test"):
        raise ValueError(f"ToolLens split must be 'train' or 'test', got {split!r}")
    corpus = toollens_corpus()
    qpath = data_file("toollens/queries.jsonl")
    texts = {}
    with open(qpath, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            r = _record(qpath, lineno, line, ("_id", "text"))
            texts[r["_id"]] = r["text"]
    rpath = data_file(f"toollens/qrels/{split}.tsv")
    qrels: dict[str, dict[str, int]] = {}
    rows = 0
    with open(rpath, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader)
        if header != ["query-id", "corpus-id", "score"]:
            raise ValueError(f"{rpath}: header must be 'query-id corpus-id score', got {header}")
        for lineno, row in enumerate(reader, 2):
            if len(row) != 3 or not row[2].strip().lstrip("-").isdigit():
                raise ValueError(f"{rpath}:{lineno}: expected 'query-id<TAB>corpus-id<TAB>score' with an integer "
                                 f"score, got {row!r} (a truncated or damaged file?)")
            qid, did, score = row
            if qid not in texts:
                raise ValueError(f"{rpath}:{lineno}: query {qid} is not in {qpath.name}")
            if did not in corpus:
                raise ValueError(f"{rpath}:{lineno}: document {did} is not in corpus.jsonl")
            rows += 1
            qrels.setdefault(qid, {})[did] = max(int(score), qrels.get(qid, {}).get(did, 0))
    queries = {}
    for qid in qrels:
        n_tools = len({corpus[d].tool for d in qrels[qid]})
        queries[qid] = Query(qid, texts[qid], f"{n_tools}-tool")
    return RetrievalDataset(f"toollens-{split}", corpus, queries, qrels, description=f"ToolLens {split}; {rows} qrel rows, "
                            f"{rows - sum(map(len, qrels.values()))} duplicate (query, doc) rows counted once")
