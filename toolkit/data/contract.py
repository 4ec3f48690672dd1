"""The one data contract every method speaks (BEIR-like).

corpus  {doc_id -> Document(category, tool, api, text)}
queries {qid -> Query(text, group)}
qrels   {qid -> {doc_id: relevance}}
run     {qid -> {doc_id: score}}

The tool hierarchy (category -> tool -> API) is kept on every document because ToolRerank's
hierarchy-aware reranking and the seen/unseen splits need it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterable, Mapping

# read-only views: a qrels or run may be any mapping (a dict, a ranx/pytrec_eval mapping)
Qrels = Mapping[str, Mapping[str, float]]     # {qid: {doc_id: graded relevance}}
Run = Mapping[str, Mapping[str, float]]       # {qid: {doc_id: score}}


@dataclass(frozen=True)
class Document:
    doc_id: str
    category: str
    tool: str
    api: str
    text: str
    meta: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    group: str = ""


@dataclass
class RetrievalDataset:
    """A named retrieval task: corpus, queries and binary qrels."""

    name: str
    corpus: dict[str, Document]
    queries: dict[str, Query]
    qrels: Qrels
    description: str = ""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        missing_q = [q for q in self.qrels if q not in self.queries]
        if missing_q:
            raise ValueError(f"dataset {self.name!r}: qrels name {len(missing_q)} queries that are not in "
                             f"queries (first: {missing_q[0]!r})")
        for qid, rels in self.qrels.items():
            bad = [d for d in rels if d not in self.corpus]
            if bad:
                raise ValueError(f"dataset {self.name!r}: query {qid!r} has relevant document {bad[0]!r} "
                                 f"that is not in the corpus")
        no_rel = [q for q in self.queries if not self.qrels.get(q)]
        if no_rel:
            raise ValueError(f"dataset {self.name!r}: {len(no_rel)} queries have no relevant document "
                             f"(first: {no_rel[0]!r})")

    def __repr__(self) -> str:
        return (f"RetrievalDataset({self.name!r}, {len(self.queries)} queries, "
                f"{len(self.corpus)} documents, {sum(len(r) for r in self.qrels.values())} qrels)")

    # -- views ---------------------------------------------------------------------------
    def doc_texts(self) -> tuple[list[str], list[str]]:
        ids = list(self.corpus)
        return ids, [self.corpus[d].text for d in ids]

    def query_texts(self) -> dict[str, str]:
        return {q.qid: q.text for q in self.queries.values()}

    def subset(self, qids: Iterable[str], name: str | None = None) -> "RetrievalDataset":
        """Same corpus, only the given queries (order kept)."""
        qids = list(qids)
        unknown = [q for q in qids if q not in self.queries]
        if unknown:
            raise KeyError(f"dataset {self.name!r} has no query {unknown[0]!r}")
        return RetrievalDataset(name or self.name, self.corpus, {q: self.queries[q] for q in qids},
                                {q: self.qrels[q] for q in qids}, self.description)

    def sample(self, n: int | None, seed: int = 0) -> "RetrievalDataset":
        """A fixed seeded sample of ``n`` queries (all when n is None or >= size)."""
        if n is None or n >= len(self.queries):
            return self
        rng = random.Random(seed)
        qids = sorted(rng.sample(sorted(self.queries), n))
        return self.subset(qids, name=f"{self.name}[sample {n}, seed {seed}]")

    def nested_sample(self, n: int | None, seed: int = 0) -> "RetrievalDataset":
        """The first ``n`` queries of one seeded shuffle (all when n is None or >= size), so a larger
        ``n`` extends a smaller one: a sample can grow with a generation budget and every answer
        already generated stays in it. Queries keep the dataset's order."""
        if n is None or n >= len(self.queries):
            return self
        if n < 1:
            raise ValueError(f"sample size must be >= 1 (or None for all), got {n}")
        keep = set(self.sample_order(seed)[:n])
        return self.subset([q for q in self.queries if q in keep],
                           name=f"{self.name}[{n} of {len(self.queries)}, seed {seed}]")

    def sample_order(self, seed: int = 0) -> list[str]:
        """The seeded shuffle behind :meth:`nested_sample`: its first n query ids are ``nested_sample(n, seed)``'s."""
        order = sorted(self.queries, key=lambda q: (len(q), q))
        random.Random(seed).shuffle(order)
        return order

    def stats(self) -> dict:
        n_rel = [len(r) for r in self.qrels.values()]
        return {
            "dataset": self.name,
            "queries": len(self.queries),
            "documents": len(self.corpus),
            "tools": len({d.tool for d in self.corpus.values()}),
            "categories": len({d.category for d in self.corpus.values()}),
            "qrels": sum(n_rel),
            "relevant_per_query": (sum(n_rel) / len(n_rel)) if n_rel else 0.0,
        }
