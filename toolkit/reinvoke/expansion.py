"""Document expansion with synthetic queries (Re-Invoke §3.1, §4.3, Algorithm 1 lines 2-6,
Algorithm 2 lines 2-4, Table 3 B-D).

For each tool document d the query generator writes m synthetic queries (Fig. 4 prompt, sampled m
times at temperature 0.7, §4.3; see :mod:`toolkit.reinvoke.generation`). Each query makes one
*copy* of the document:

    "Documentation: <tool document> Query: <synthetic query>"     (§4.3, ``mode="append"``)
    "<synthetic query>"                                           (Table 3(B) "synthetic query only")

and a document is represented by its m copies:

* **dense** (Algorithm 2, line 3): ``E_d = 1/m * sum_i f_enc(d_i)`` — the plain mean of the copies'
  embeddings, **not re-normalised** (the algorithm does not re-normalise, and only then is
  ``f_enc(q) . E_d`` exactly the mean of the copies' similarities, which is the "Mean similarity
  score" row of Table 3(D)). ``renormalize=True`` is offered as an option.
* **sparse** (§4.3 "Re-Invoke using BM25 embedding vectors"; the paper does not say how): the copies
  are indexed as a BM25 corpus of their own (IDF and average length over the copies) and the score
  of a document is the mean of its copies' BM25 scores — the same aggregation as the dense case.
* ``copy_agg="max"``: the maximum similarity over the copies instead (Table 3(D) "Maximum
  similarity score"), for both dense and sparse.

A document whose generator produced no usable query (an empty answer after parsing) keeps the
copies it has; with none at all it is represented by its plain text ("Documentation: <doc>" is not
invented). ``m`` takes the first m samples (sample indices 0..m-1), so m = 1/5/10 (Table 3(C)) are
nested.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

MODES = ("append", "query_only")
COPY_AGGREGATIONS = ("mean", "max")
COPY_FORMAT = "Documentation: {doc} Query: {query}"     # §4.3

EmbedFn = Callable[[list[str]], np.ndarray]


def expand_document(doc_text: str, queries: Sequence[str], mode: str = "append") -> list[str]:
    """The copies of one document (§4.3). Empty queries are skipped; no query left -> ``[doc_text]``."""
    if mode not in MODES:
        raise ValueError(f"expansion mode must be one of {MODES}, got {mode!r}")
    qs = [" ".join(q.split()) for q in queries if q and q.strip()]
    if not qs:
        return [doc_text]
    if mode == "append":
        return [COPY_FORMAT.format(doc=doc_text, query=q) for q in qs]
    return qs


@dataclass
class ExpandedCorpus:
    """All copies of all documents, flat, with ``owner[j]`` = index of the document of copy j.
    Documents are in ``doc_ids`` order and their copies are contiguous."""

    doc_ids: list[str]
    copies: list[str]
    owner: np.ndarray            # (n_copies,) int
    starts: np.ndarray           # (n_docs,) index of each document's first copy
    counts: np.ndarray           # (n_docs,) copies per document (>= 1)

    def __len__(self) -> int:
        return len(self.copies)


def expand_corpus(doc_ids: Sequence[str], doc_texts: Sequence[str],
                  expansions: Mapping[str, Sequence[str]] | None, m: int | None = None,
                  mode: str = "append") -> ExpandedCorpus:
    """Copies for every document. ``expansions`` maps doc id -> synthetic queries (in sample
    order); ``m`` keeps the first m per document (None: all). ``expansions=None`` means no
    expansion: one copy = the document text (the "intent extractor only" ablation)."""
    if m is not None and m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    if len(doc_ids) != len(doc_texts):
        raise ValueError(f"{len(doc_ids)} doc ids but {len(doc_texts)} texts")
    copies: list[str] = []
    owner: list[int] = []
    counts = []
    for i, (d, text) in enumerate(zip(doc_ids, doc_texts)):
        if expansions is None:
            cs = [text]
        else:
            qs = list(expansions.get(d, ()))
            cs = expand_document(text, qs[:m] if m is not None else qs, mode)
        copies += cs
        owner += [i] * len(cs)
        counts.append(len(cs))
    counts_a = np.asarray(counts, np.int64)
    starts = np.concatenate([[0], np.cumsum(counts_a)[:-1]]).astype(np.int64)
    return ExpandedCorpus(list(doc_ids), copies, np.asarray(owner, np.int64), starts, counts_a)


def aggregate_copies(copy_scores: np.ndarray, ec: ExpandedCorpus, how: str = "mean") -> np.ndarray:
    """(n_texts x n_copies) scores -> (n_texts x n_docs) by mean or max over each document's copies."""
    if how not in COPY_AGGREGATIONS:
        raise ValueError(f"copy aggregation must be one of {COPY_AGGREGATIONS}, got {how!r}")
    X = np.asarray(copy_scores, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(ec):
        raise ValueError(f"copy scores of shape {X.shape} do not match {len(ec)} copies")
    if how == "max":
        return np.maximum.reduceat(X, ec.starts, axis=1)
    return np.add.reduceat(X, ec.starts, axis=1) / ec.counts[None, :]


def mean_embeddings(copy_emb: np.ndarray, ec: ExpandedCorpus, renormalize: bool = False) -> np.ndarray:
    """Algorithm 2 line 3: ``E_d = 1/m sum_i f_enc(d_i)`` (optionally scaled back to unit length)."""
    E = np.add.reduceat(np.asarray(copy_emb, dtype=np.float64), ec.starts, axis=0) / ec.counts[:, None]
    if renormalize:
        E = E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
    return E


class DenseExpandedIndex:
    """Dense scorer over an expanded corpus: ``scores(texts)`` -> (n_texts x n_docs)."""

    def __init__(self, ec: ExpandedCorpus, embed: EmbedFn, copy_agg: str = "mean", renormalize: bool = False):
        if copy_agg not in COPY_AGGREGATIONS:
            raise ValueError(f"copy aggregation must be one of {COPY_AGGREGATIONS}, got {copy_agg!r}")
        self.ec, self.embed, self.copy_agg, self.renormalize = ec, embed, copy_agg, renormalize
        self.copy_emb = np.asarray(embed(ec.copies), dtype=np.float64)
        self.doc_emb = mean_embeddings(self.copy_emb, ec, renormalize)

    @property
    def doc_ids(self) -> list[str]:
        return self.ec.doc_ids

    def scores(self, texts: list[str]) -> np.ndarray:
        Q = np.asarray(self.embed(list(texts)), dtype=np.float64)
        if self.copy_agg == "mean":
            return Q @ self.doc_emb.T
        return aggregate_copies(Q @ self.copy_emb.T, self.ec, "max")


class BM25ExpandedIndex:
    """BM25 scorer over an expanded corpus: the copies are the BM25 corpus; a document's score is
    the mean (or max) of its copies' scores. ``bm25`` is a ``BM25Retriever`` (or anything with
    ``index(ids, texts)`` and ``scores(texts)``); default ``toolkit.retrieval.build_retriever("bm25")``."""

    def __init__(self, ec: ExpandedCorpus, copy_agg: str = "mean", bm25=None):
        if copy_agg not in COPY_AGGREGATIONS:
            raise ValueError(f"copy aggregation must be one of {COPY_AGGREGATIONS}, got {copy_agg!r}")
        if bm25 is None:
            from toolkit.retrieval import build_retriever
            bm25 = build_retriever("bm25")
        self.ec, self.copy_agg, self.bm25 = ec, copy_agg, bm25
        self.bm25.index([f"{ec.doc_ids[o]}#{j}" for j, o in enumerate(ec.owner)], ec.copies)

    @property
    def doc_ids(self) -> list[str]:
        return self.ec.doc_ids

    def scores(self, texts: list[str]) -> np.ndarray:
        return aggregate_copies(np.asarray(self.bm25.scores(list(texts)), dtype=np.float64), self.ec, self.copy_agg)
