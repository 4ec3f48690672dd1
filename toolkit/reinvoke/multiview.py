"""Multi-view similarity ranking (Re-Invoke §3.3, Appendix C, Algorithm 2, Figures 3 and 8).

Given the similarity matrix ``S`` (n_intents x n_docs) between the intents extracted from one
user query and the (expanded) tool documents, Algorithm 2 ranks the documents as follows:

1. within each intent ``i``, the *reversed ranking order* of every document: the document with the
   lowest similarity gets 1, the highest gets n_docs (Fig. 8 caption);
2. each (intent, document) pair gets the ranking tuple ``r(q_i, d) = (rank(q_i, d), s(q_i, d))``,
   compared lexicographically ("we compare the reversed ranking order followed by the similarity
   score value if the reversed ranking order is the same", App. C);
3. ``r(Q, d) = max_i r(q_i, d)`` (line 12), and the documents are retrieved by ``r(Q, d)``,
   highest first.

The effect (Fig. 3): the top tool of every intent comes first (ordered by its similarity), then the
second tool of every intent, and so on — round-robin over intents, so each intent contributes.

Ties (not specified by the paper): documents with exactly equal similarity within an intent get
the same reversed rank (the larger one: ``#{d' : s(q_i, d') <= s(q_i, d)}``), so the best document
of an intent always has rank n_docs; documents whose final tuples are exactly equal get equal run
scores, and ``order`` breaks such ties by corpus position (earlier first).

Besides the paper's ``multiview`` rule, ``aggregate_intents`` offers two simple alternatives for
ablations (ours, not in the paper): ``max`` (highest similarity over intents) and ``mean``
(mean similarity over intents). With a single intent all three rank by similarity.

Everything is vectorised over the (n_intents x n_docs) matrix with numpy.
"""
from __future__ import annotations

import numpy as np

INTENT_AGGREGATIONS = ("multiview", "max", "mean")


def reversed_ranks(S: np.ndarray) -> np.ndarray:
    """Per row of ``S`` (n_intents x n_docs): the reversed ranking order of each document, an
    integer in 1..n_docs, lowest similarity -> 1, highest -> n_docs; equal similarities share the
    larger rank (``#{d' : s(d') <= s(d)}``)."""
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2:
        raise ValueError(f"similarity matrix must be 2-D (n_intents x n_docs), got shape {S.shape}")
    srt = np.sort(S, axis=1)
    return np.stack([np.searchsorted(row_sorted, row, side="right")
                     for row_sorted, row in zip(srt, S)]).astype(np.int64) if len(S) else np.zeros(S.shape, np.int64)


def multiview_tuples(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``r(Q, d) = max_i (rank(q_i, d), s(q_i, d))`` as two arrays (rank part, similarity part),
    each of length n_docs (Algorithm 2, lines 5-12)."""
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] == 0:
        raise ValueError(f"need at least one intent: similarity matrix of shape {S.shape}")
    R = reversed_ranks(S)
    best_rank = R.max(axis=0)
    best_sim = np.where(R == best_rank[None, :], S, -np.inf).max(axis=0)
    return best_rank, best_sim


def _dense_group_scores(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Order (best first, ties by position) and scores n_groups..1 for lexicographic ``keys``
    (most significant first, higher is better); equal key tuples get equal scores."""
    n = len(keys[0])
    pos = np.arange(n)
    order = np.lexsort((pos,) + tuple(-k for k in reversed(keys)))
    if n == 0:
        return order, np.zeros(0)
    sorted_keys = np.stack([k[order] for k in keys])
    new_group = np.ones(n, bool)
    new_group[1:] = np.any(sorted_keys[:, 1:] != sorted_keys[:, :-1], axis=0)
    group = np.cumsum(new_group) - 1
    scores = np.empty(n, np.float64)
    scores[order] = float(group[-1] + 1) - group
    return order, scores


def aggregate_intents(S: np.ndarray, how: str = "multiview") -> tuple[np.ndarray, np.ndarray]:
    """Combine the intents' similarities into one ranking of the documents.

    Returns ``(order, scores)``: document indices best first, and a score per document that is
    higher for better documents and equal only for exact ties. For ``multiview`` the scores are
    dense ranks of the Algorithm 2 tuples (n_groups for the best .. 1), because a tuple does not fit
    one float without losing precision; for ``max``/``mean`` they are the similarities.
    """
    if how not in INTENT_AGGREGATIONS:
        raise ValueError(f"intent aggregation must be one of {INTENT_AGGREGATIONS}, got {how!r}")
    S = np.asarray(S, dtype=np.float64)
    if S.ndim == 1:
        S = S[None, :]
    if S.ndim != 2 or S.shape[0] == 0:
        raise ValueError(f"need at least one intent: similarity matrix of shape {S.shape}")
    if how == "multiview":
        return _dense_group_scores(list(multiview_tuples(S)))
    agg = S.max(axis=0) if how == "max" else S.mean(axis=0)
    order = np.lexsort((np.arange(len(agg)), -agg))
    return order, agg


def multiview_rank(S: np.ndarray, doc_ids: list[str] | None = None, k: int | None = None,
                   how: str = "multiview") -> list:
    """The top ``k`` documents (indices, or ids when ``doc_ids`` is given), best first."""
    order, _ = aggregate_intents(S, how)
    order = order[:k] if k is not None else order
    return [doc_ids[i] for i in order] if doc_ids is not None else [int(i) for i in order]


def multiview_run_row(S: np.ndarray, doc_ids: list[str], k: int = 100, how: str = "multiview") -> dict[str, float]:
    """One query's run row ``{doc_id: score}`` with the top ``k`` documents."""
    S = np.asarray(S)
    if S.shape[-1] != len(doc_ids):
        raise ValueError(f"similarity matrix has {S.shape[-1]} columns but there are {len(doc_ids)} doc ids")
    order, scores = aggregate_intents(S, how)
    return {doc_ids[i]: float(scores[i]) for i in order[:k]}
