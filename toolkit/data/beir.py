"""A BEIR-format folder as a dataset: ``load_dataset("beir:/path/to/folder")``.

The folder holds what BEIR's ``GenericDataLoader`` reads (Thakur et al., "BEIR: A Heterogeneous Benchmark for
Zero-shot Evaluation of Information Retrieval Models", arXiv:2104.08663):

- ``corpus.jsonl``: one ``{"_id", "title", "text"}`` object a line; an optional ``metadata`` object may carry
  ``category``, ``tool`` and ``api`` (the tool hierarchy; else the document's id is its tool and API);
- ``queries.jsonl``: one ``{"_id", "text"}`` object a line;
- ``qrels/<split>.tsv``: ``query-id  corpus-id  score`` with a header line (``split`` defaults to ``test``).

The dataset's queries are those the split's qrels name. A document's text is its title and text joined by ": "
(as ToolBench documents lead with the API's name). Every retriever and method of the suite runs on the result.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from .contract import Document, Query, RetrievalDataset


def _jsonl(path: Path, fields: tuple[str, ...]) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing; a BEIR folder holds corpus.jsonl, queries.jsonl and "
                                "qrels/<split>.tsv")
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not a JSON object ({e.msg}); each line must be one object") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{n}: each line must be a JSON object, got {type(row).__name__}")
            missing = [k for k in fields if k not in row]
            if missing:
                raise ValueError(f"{path}:{n}: field {missing[0]!r} missing; each line needs {', '.join(fields)}")
            rows.append(row)
    return rows


def load_beir(folder: str | Path, split: str = "test", name: str | None = None) -> RetrievalDataset:
    """The BEIR-format ``folder``'s ``split`` as a :class:`RetrievalDataset` (see the module docstring)."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise NotADirectoryError(f"beir:{folder}: no such folder; pass the folder holding corpus.jsonl, "
                                 "queries.jsonl and qrels/<split>.tsv")
    corpus = {}
    for row in _jsonl(root / "corpus.jsonl", ("_id", "text")):
        did, meta = str(row["_id"]), row.get("metadata") or {}
        title = str(row.get("title") or "").strip()
        text = f"{title}: {row['text']}" if title else str(row["text"])
        corpus[did] = Document(did, str(meta.get("category", "")), str(meta.get("tool", did)),
                               str(meta.get("api", did)), text, meta=dict(meta))
    queries_all = {str(r["_id"]): str(r["text"]) for r in _jsonl(root / "queries.jsonl", ("_id", "text"))}
    qpath = root / "qrels" / f"{split}.tsv"
    if not qpath.is_file():
        have = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise FileNotFoundError(f"{qpath}: missing; splits in this folder: {have or 'none'} (split=...)")
    qrels: dict[str, dict[str, float]] = {}
    with qpath.open(encoding="utf-8", newline="") as f:
        for n, row in enumerate(csv.reader(f, delimiter="\t"), 1):
            if not row or (n == 1 and not _is_number(row[-1])):
                continue                      # the header line
            if len(row) != 3:
                raise ValueError(f"{qpath}:{n}: a qrels line has 3 tab-separated fields (query-id corpus-id "
                                 f"score), got {len(row)}")
            q, d, s = row
            if not _is_number(s):
                raise ValueError(f"{qpath}:{n}: score {s!r} is not a number")
            if q not in queries_all:
                raise ValueError(f"{qpath}:{n}: query {q!r} is not in queries.jsonl")
            if d not in corpus:
                raise ValueError(f"{qpath}:{n}: document {d!r} is not in corpus.jsonl")
            qrels.setdefault(q, {})[d] = float(s)
    qrels = {q: r for q, r in qrels.items() if any(v > 0 for v in r.values())}
    if not qrels:
        raise ValueError(f"{qpath}: no query has a relevant document (score > 0)")
    queries = {q: Query(q, queries_all[q]) for q in qrels}
    return RetrievalDataset(name or f"beir:{root.name}/{split}", corpus, queries, qrels,
                            f"BEIR-format folder {root} ({split})")


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False
