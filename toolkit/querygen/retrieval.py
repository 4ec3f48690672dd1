"""Retrieval over generated queries (Kachuee et al. 2025, §4.2).

An index of API descriptions embedded by all-mpnet-base-v2, a flat exact index, cosine
similarity. Each request has a *set* of queries (the generated ones, plus by default the original
utterance appended last, Appendix B.1); each query retrieves its own ranked list, and the lists
are **interleaved**: "we iterate over the lists and take one item from each while skipping
duplicates to compose the final retrieval result".

    index = QueryIndex(split.corpus)                            # mpnet over api descriptions
    run = index.run({qid: ["Weather API: ...", ...]}, k=11)    # {qid: {doc_id: score}}

The interleaved list carries scores ``k, k-1, ..., 1`` (rank order only: similarities from
different queries are not comparable). The list length ``k`` is ours (the symbol was lost in the
text); 11 is the largest cut-off the paper prints (Recall@11), and MMRR/MAP are computed at it.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from toolkit.data.contract import Document, Run
from toolkit.retrieval import DenseRetriever
from toolkit.retrieval.base import topk_indices

DEFAULT_MODEL = "mpnet"
LIST_SIZE = 11


def interleave(ranked_lists: Sequence[Sequence[str]], k: int) -> list[str]:
    """Round-robin over ``ranked_lists`` (first item of each list in list order, then the second
    items, ...), skipping items already taken, until ``k`` items or the lists run out."""
    if k < 1:
        raise ValueError(f"interleave: k must be >= 1, got {k}")
    out: list[str] = []
    seen: set[str] = set()
    depth = max((len(r) for r in ranked_lists), default=0)
    for pos in range(depth):
        for r in ranked_lists:
            if pos < len(r) and r[pos] not in seen:
                seen.add(r[pos])
                out.append(r[pos])
                if len(out) == k:
                    return out
    return out


def query_sets(generated: Mapping[str, Sequence[str]], utterances: Mapping[str, str],
               append_utterance: bool = True) -> dict[str, list[str]]:
    """Per request: its generated queries, then (by default) the utterance itself. A request with
    no usable generated query falls back to its utterance, so it is never scored as empty."""
    out = {}
    for qid, text in utterances.items():
        qs = [q for q in generated.get(qid, []) if q and q.strip()]
        if append_utterance or not qs:
            qs = qs + [text]
        out[qid] = qs
    return out


class QueryIndex:
    """Flat cosine index over documents' ``text`` (the API descriptions)."""

    def __init__(self, corpus: Mapping[str, Document], model: str = DEFAULT_MODEL, show_progress: bool = False):
        self.model = model
        self.retriever = DenseRetriever(model, normalize=True, show_progress=show_progress)
        self.doc_ids = list(corpus)
        self.retriever.index(self.doc_ids, [corpus[d].text for d in self.doc_ids])
        self._pos = {d: i for i, d in enumerate(self.doc_ids)}

    def ranked(self, texts: Sequence[str], k: int, restrict: set[str] | None = None) -> list[list[str]]:
        """Top-``k`` doc ids per text (ties: earlier corpus position first), optionally among ``restrict`` only."""
        scores = self.retriever.scores(list(texts)) if texts else np.zeros((0, len(self.doc_ids)), np.float32)
        if restrict is not None:
            mask = np.full(len(self.doc_ids), -np.inf, np.float32)
            mask[[self._pos[d] for d in restrict]] = 0.0
            scores = scores + mask
            k = min(k, len(restrict))
        return [[self.doc_ids[i] for i in idx] for idx in topk_indices(scores, k)]

    def run(self, queries: Mapping[str, Sequence[str]], k: int = LIST_SIZE, restrict: set[str] | None = None) -> Run:
        """Interleaved run ``{qid: {doc_id: score}}`` for each request's query set."""
        flat = [(qid, q) for qid, qs in queries.items() for q in qs]
        lists = self.ranked([q for _, q in flat], k, restrict)
        per: dict[str, list[list[str]]] = {qid: [] for qid in queries}
        for (qid, _), r in zip(flat, lists):
            per[qid].append(r)
        run: Run = {}
        for qid, rs in per.items():
            ids = interleave(rs, k) if rs else []
            run[qid] = {d: float(len(ids) - i) for i, d in enumerate(ids)}
        return run
