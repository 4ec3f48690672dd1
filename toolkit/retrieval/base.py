"""Top-k selection shared by every retriever: score matrix -> run {qid: {doc_id: score}}.

Ties are broken deterministically: higher score first, then earlier position in the indexed
corpus (the order of ``doc_ids`` given to ``index``). ``argpartition`` finds the k-th score; all
documents scoring at least that much are then sorted by (-score, position), so which tied
documents make the cut never depends on the partition algorithm.
"""
from __future__ import annotations

import numpy as np

from toolkit.data.contract import Run  # one Run type: the data contract's


def topk_indices(scores: np.ndarray, k: int) -> list[np.ndarray]:
    """Per row of ``scores`` (n_queries x n_docs): indices of the top ``k``, best first."""
    n = scores.shape[1]
    k = min(k, n)
    if k <= 0:
        return [np.empty(0, np.int64) for _ in range(len(scores))]
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(scores, part, axis=1)
    kth = vals.min(axis=1)
    order = np.lexsort((part, -vals), axis=1)
    fast = np.take_along_axis(part, order, axis=1)
    tied_at_cut = (scores >= kth[:, None]).sum(axis=1) > k  # ties straddle the cut: pick lowest positions
    out = list(fast)
    for r in np.flatnonzero(tied_at_cut):
        cand = np.flatnonzero(scores[r] >= kth[r])
        out[r] = cand[np.lexsort((cand, -scores[r, cand]))[:k]]
    return out


def topk_run(qids: list[str], doc_ids: list[str], scores: np.ndarray, k: int,
             min_score: float | None = None) -> Run:
    """Run for the rows of ``scores``; with ``min_score``, drop documents scoring <= it."""
    run = {}
    for qid, row, idx in zip(qids, scores, topk_indices(scores, k)):
        vals = row[idx]
        if min_score is not None:
            keep = vals > min_score
            idx, vals = idx[keep], vals[keep]
        run[qid] = {doc_ids[i]: float(v) for i, v in zip(idx, vals)}
    return run


def check_index_input(doc_ids: list[str], texts: list[str]) -> tuple[list[str], list[str]]:
    doc_ids, texts = list(doc_ids), list(texts)
    if len(doc_ids) != len(texts):
        raise ValueError(f"index: {len(doc_ids)} doc_ids but {len(texts)} texts")
    if len(set(doc_ids)) != len(doc_ids):
        raise ValueError("index: doc_ids are not unique")
    if not doc_ids:
        raise ValueError("index: empty corpus")
    return doc_ids, texts
