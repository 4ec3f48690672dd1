"""Retrieval metrics for tool retrieval: NDCG, Recall, Precision, MRR, MAP and MMRR at a cut-off k.

Usage (ranx-like)::

    evaluate(run, qrels, "ndcg@5,recall@5")                  # {"ndcg@5": 0.61, "recall@5": 0.72}
    evaluate(run, qrels, ["mmrr@10"], per_query=True)        # {"mmrr@10": {qid: value}}

``run`` is ``{qid: {doc_id: score}}`` (higher is better), ``qrels`` is ``{qid: {doc_id: relevance}}``
(:mod:`toolkit.data.contract`). Names are ``<metric>@<k>`` with ``k`` a positive integer, case-insensitive;
result keys are lower-case.

Conventions
-----------
* **Queries.** Means are over the queries of ``qrels``. A qrels query missing from the run (or
  with an empty run) scores 0 on every metric (MMRR included, although a ranked list without any
  relevant document gets a positive MMRR, see :func:`_mmrr`), as does a query without any
  relevant document; run queries absent from ``qrels`` are ignored (trec_eval ``-c`` semantics).
* **Relevance.** A document is relevant iff its relevance is > 0. Recall, Precision, MRR, MAP and
  MMRR use binary relevance; NDCG uses the relevance value as gain (``ndcg_gains="linear"``, as
  trec_eval's ``ndcg_cut`` and ``sklearn.metrics.ndcg_score``; ``"exponential"`` gives
  ``2**rel - 1``), and its ideal DCG comes from the qrels, so relevant documents the run misses
  still count against it. Relevance <= 0 has gain 0.
* **Ties** (``ties="trec"``, default; also :func:`rank`). Documents are sorted by score
  descending, scores compared as 32-bit floats (trec_eval stores scores as C ``float``: two scores
  equal after rounding to float32 are a tie), and ties are broken by doc id in *descending*
  code-point order (``"b"`` before ``"a"``, ``"d9"`` before ``"d10"``), exactly as trec_eval
  (checked against pytrec_eval in ``tests/test_metrics.py``).
  ``ties="sklearn"`` instead averages over tied documents like ``sklearn.metrics.ndcg_score``
  (McSherry & Najork, ECIR 2008): each position's gain is replaced by the mean gain of its tie
  group, i.e. the expected value over all orders of the ties, with exact float64 comparison. It is
  offered for NDCG, Recall and Precision (linear in the per-position gains); MRR, MAP and MMRR
  reject it. Documents a run does not score are never ranked (gain 0), like trec_eval: this
  equals sklearn over the whole corpus with unscored documents placed below every scored one,
  hence ToolBench's evaluator whenever the run scores the whole corpus, as it does.

Which paper uses which definition
---------------------------------
* ``querygen.md`` §2.2 (Kachuee et al. 2025): Recall@K, Eq. (1) -> ``recall@k``; MMRR, Eq. (2)
  -> ``mmrr@k``; MAP, Eq. (3) -> ``map@k``. The equations were lost in the text conversion;
  the choices made are in :func:`_mmrr` and :func:`_map`. Table 1 reports MMRR and MAP without a
  cut-off: use k = the length of the retrieved list (§2.1: "a ranked list of APIs, where the size
  of the list is denoted by [lost symbol]").
* ``iterative_feedback.md`` §5.1: NDCG@m "following Qin et al. (2023b)", whose ToolBench
  evaluator (``toolbench/retrieval/api_evaluator.py``) calls ``sklearn.metrics.ndcg_score`` over
  the whole corpus -> ``ndcg@k`` with ``ties="sklearn"``.
* ``reinvoke.md`` §4.1: nDCG@k via ``sklearn.metrics.ndcg_score`` (footnote 1) -> ``ndcg@k`` with
  ``ties="sklearn"``; recall@k via TF-Ranking's ``RecallMetric`` (footnote 2): relevant in top k
  over relevant in the scored list, i.e. over |rel| when the whole toolset is scored ->
  ``recall@k`` (TF-Ranking shuffles ties by default; ``ties="sklearn"`` is its expectation).
  Appendix E, Table 6 confirms the |rel| denominator: on ToolE multi-tool (2 relevant tools per
  query, Appendix D Table 5) recall@1 = nDCG@1 / 2 in 9 of its 10 rows (min(k, |rel|) would make
  the two equal).
* ``toolrerank.md`` §4.2: NDCG@5 (Järvelin & Kekäläinen 2002) and Recall@5, no further
  definition -> ``ndcg@5`` and ``recall@5`` with the defaults.
None of the four divides recall by min(k, |rel|) (BEIR's capped recall), so no such option.
"""
from __future__ import annotations

import re
import warnings
from typing import Callable, Iterable, Mapping

import numpy as np

__all__ = ["check_depth", "evaluate", "metric_names", "rank"]

from toolkit.data.contract import Qrels, Run  # the suite's one definition (BEIR's contract)


# --- per-metric formulas ------------------------------------------------------------------------
# Each takes, for Q queries and K >= k ranked positions: G (Q, K) gains in rank order, B (Q, K)
# binary relevance in rank order (both tie-averaged under ties="sklearn"), R (Q,) number of
# relevant documents, IG (Q, K) ideal gains (qrels gains sorted descending); returns (Q,) values.

def _div(num, den):
    num = np.asarray(num, dtype=float)
    return np.divide(num, den, out=np.zeros_like(num), where=np.asarray(den) > 0)


def _ndcg(G, B, R, IG, k):
    """NDCG@k = DCG@k / IDCG@k,  DCG@k = sum_{i=1..k} g_i / log2(i + 1),  IDCG@k = DCG@k of the
    qrels gains sorted descending (0 if there is no relevant document).

    Järvelin & Kekäläinen (2002), ACM TOIS 20(4); trec_eval ``ndcg_cut``; sklearn ``ndcg_score``.
    """
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    return _div(G[:, :k] @ disc, IG[:, :k] @ disc)


def _recall(G, B, R, IG, k):
    """Recall@k = |rel ∩ top-k| / |rel|.

    trec_eval ``recall_k``; querygen.md §2.2 Eq. (1) ("for a cut-off at K, what percentage of
    relevant items would be retrieved").
    """
    return _div(B[:, :k].sum(1), R)


def _precision(G, B, R, IG, k):
    """Precision@k = |rel ∩ top-k| / k (k even if the run holds fewer documents).

    trec_eval ``P_k``.
    """
    return B[:, :k].sum(1) / k


def _mrr(G, B, R, IG, k):
    """MRR@k = 1 / (rank of the first relevant document) if it is within the top k, else 0.

    Voorhees (1999), TREC-8 QA track; trec_eval ``recip_rank`` on the run cut at k.
    """
    hit = B[:, :k] > 0
    return np.where(hit.any(1), 1.0 / (hit.argmax(1) + 1), 0.0)


def _map(G, B, R, IG, k):
    """MAP@k = mean over queries of  AP@k = (1/|rel|) * sum_{i=1..k} P@i * rel_i.

    querygen.md §2.2 Eq. (3): "a finite sum of precision for the ranked list at each position"
    (Zhu 2004), whose first factor is P@i; the second is read as Zhu's recall increment
    Δrecall_i = rel_i / |rel|, so the normaliser is M = |rel| (the symbol defined in §2.1).
    This is exactly trec_eval's ``map_cut_k`` (tested against it and by hand). It is 1 for a
    perfect ranking when |rel| <= k; with |rel| > k it is at most k/|rel| (a normaliser of
    min(k, |rel|) would differ there, but nothing in the text asks for it).
    """
    b = B[:, :k]
    prec = np.cumsum(b, 1) / np.arange(1, k + 1)
    return _div((prec * b).sum(1), R)


def _mmrr(G, B, R, IG, k):
    """MMRR@k (multiple mean reciprocal rank), querygen.md §2.2 Eq. (2)::

                  (1/M) * sum_{j=1..M} min(j, k+1)
        MMRR@k = -----------------------------------,   M = |rel|,
                  (1/M) * sum_{d in rel} min(rank(d), k+1)

    with rank(d) = inf for a relevant document the run does not rank. The text: the numerator is
    "the average rank position for perfect retrieval of M items"; the denominator is the average
    rank of the relevant items "while clipping the tail by considering any missing item ... to
    appear at rank [lost symbol]"; MMRR "reaches one for perfect retrieval". Choices made where
    the symbols were lost: (1) the cut-off is the metric's k and a relevant item missing from the
    top k counts at rank k+1 (just past the list, so retrieving it at rank k still earns credit);
    (2) the numerator is clipped the same way, so a perfect ranking scores exactly 1 even when
    M > k+1 (for M <= k+1, the usual case, the numerator is the paper's (M+1)/2 unchanged).
    With one relevant document ranked within the top k, MMRR@k = MRR@k. Unlike MAP (which the
    paper says "reaches zero when no relevant item is retrieved") it is never 0 for a non-empty
    ranking when M > 0: no relevant document in the top k gives (M+1)/2 / (k+1) for M <= k+1.
    It is 0 when M = 0, and (module convention) for a query the run does not answer at all.
    """
    hit = B[:, :k] > 0
    found = hit.sum(1)
    den = (hit * np.arange(1, k + 1)).sum(1) + (R - found) * (k + 1)
    m = np.minimum(R, k + 1)
    num = m * (m + 1) / 2 + (R - m) * (k + 1)
    return _div(num, den)


_METRICS: dict[str, Callable] = {
    "ndcg": _ndcg, "recall": _recall, "precision": _precision,
    "mrr": _mrr, "map": _map, "mmrr": _mmrr,
}
_LINEAR = {"ndcg", "recall", "precision"}  # metrics that accept ties="sklearn"
_GAINS = {"linear": lambda r: r, "exponential": lambda r: 2.0 ** r - 1.0}
_NAME = re.compile(r"^([a-z_]+)@([1-9][0-9]*)$")


def metric_names() -> list[str]:
    """Supported metrics, each used as ``<name>@<k>`` (e.g. ``ndcg@5``)."""
    return list(_METRICS)


def check_depth(metrics: str | Iterable[str], k: int) -> list[str]:
    """Validate metric names *before* retrieval runs and the retrieval depth ``k`` against them:
    ``k`` must be >= 1 and >= the largest cut-off (a run cut at k=3 cannot score ndcg@5: its
    documents past rank 3 are missing, so the metric would be silently truncated). Returns the
    normalized names."""
    specs = _parse(metrics)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"retrieval depth k must be a positive integer, got {k!r}")
    deepest = max(specs, key=lambda s: s[2])
    if k < deepest[2]:
        raise ValueError(f"retrieval depth k={k} is below the cut-off of {deepest[0]}: retrieve at least "
                         f"k={deepest[2]} documents (or drop that metric)")
    return [name for name, _, _ in specs]


def _parse(metrics: str | Iterable[str]) -> list[tuple[str, str, int]]:
    names = metrics.split(",") if isinstance(metrics, str) else list(metrics)
    out, seen = [], set()
    for raw in names:
        name = str(raw).strip().lower()
        m = _NAME.match(name)
        if not m or m.group(1) not in _METRICS:
            valid = ", ".join(f"{n}@k" for n in _METRICS)
            raise ValueError(f"unknown or malformed metric {raw!r}; valid metrics: {valid} "
                             "(k a positive integer)")
        if name not in seen:
            seen.add(name)
            out.append((name, m.group(1), int(m.group(2))))
    if not out:
        raise ValueError("no metric given; valid metrics: "
                         + ", ".join(f"{n}@k" for n in _METRICS))
    return out


# --- ranking ------------------------------------------------------------------------------------

def _scores(run_for_query: Mapping[str, float]) -> tuple[list, np.ndarray]:
    ids = list(run_for_query)
    s = np.fromiter(run_for_query.values(), dtype=float, count=len(ids))
    if np.isnan(s).any():
        raise ValueError("run contains NaN scores")
    return ids, s


def _top_candidates(s: np.ndarray, k: int | None) -> np.ndarray:
    """Indices of every document scoring at least the k-th largest score (all of them if k is
    None): a superset of the top k that keeps whole tie groups."""
    n = len(s)
    if k is None or k >= n:
        return np.arange(n)
    return np.flatnonzero(s >= np.partition(s, n - k)[n - k])


def _trec_order(ids: list, s: np.ndarray, k: int | None) -> np.ndarray:
    s = s.astype(np.float32)
    cand = _top_candidates(s, k)
    names = np.array([str(ids[i]) for i in cand])
    cand = cand[np.argsort(names, kind="stable")[::-1]]      # doc id descending ...
    cand = cand[np.argsort(-s[cand], kind="stable")]         # ... within score descending
    return cand[:k]


def rank(run_for_query: Mapping[str, float], k: int | None = None) -> list:
    """Doc ids of one query's run ``{doc_id: score}`` in rank order, the first ``k`` (all if None).

    Tie rule (trec_eval's): score descending, scores compared after rounding to float32, ties
    broken by doc id in descending code-point order. ``rank({"a": 1, "b": 1, "c": 2})`` is
    ``["c", "b", "a"]``. Raises ValueError on NaN scores.
    """
    if k is not None and k < 1:
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    ids, s = _scores(run_for_query)
    return [ids[i] for i in _trec_order(ids, s, k)]


def _ranked_rows(run_q, rels, gain, K, ties):
    """Gains and binary relevance of the first K ranked positions (zero-padded)."""
    g, b = np.zeros(K), np.zeros(K)
    if not run_q:
        return g, b
    ids, s = _scores(run_q)
    if ties == "trec":
        order = _trec_order(ids, s, K)
    else:
        cand = _top_candidates(s, K)
        order = cand[np.argsort(-s[cand], kind="stable")]
    rel = np.array([float(rels.get(ids[i], 0)) for i in order])
    gq, bq = np.where(rel > 0, gain(rel), 0.0), (rel > 0).astype(float)
    if ties == "sklearn":  # replace each position's value by its tie group's mean
        ss = s[order]
        starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])
        counts = np.diff(np.r_[starts, len(ss)])
        gq = np.repeat(np.add.reduceat(gq, starts) / counts, counts)
        bq = np.repeat(np.add.reduceat(bq, starts) / counts, counts)
    n = min(K, len(order))
    g[:n], b[:n] = gq[:n], bq[:n]
    return g, b


# --- entry point --------------------------------------------------------------------------------

def evaluate(run: Run, qrels: Qrels, metrics: str | Iterable[str], per_query: bool = False,
             ndcg_gains: str = "linear", ties: str = "trec"):
    """Evaluate ``run`` against ``qrels``.

    Args:
        run: ``{qid: {doc_id: score}}``, higher scores rank first.
        qrels: ``{qid: {doc_id: relevance}}``; relevance > 0 means relevant.
        metrics: list, or comma-separated string, of ``<name>@<k>`` with name in
            :func:`metric_names` (``ndcg``, ``recall``, ``precision``, ``mrr``, ``map``, ``mmrr``).
        per_query: return ``{name: {qid: value}}`` over every qrels query instead of means.
        ndcg_gains: ``"linear"`` (gain = relevance, trec_eval/sklearn) or ``"exponential"``
            (gain = 2**relevance - 1). Identical for binary qrels.
        ties: ``"trec"`` (deterministic trec_eval order) or ``"sklearn"`` (tie-averaged, NDCG,
            Recall and Precision only); see the module docstring.

    Returns:
        ``{name: mean over the qrels queries}`` (plain floats). A qrels query missing from the
        run scores 0 on every metric; run queries absent from qrels are ignored.

    Raises:
        ValueError: unknown metric or malformed ``@k`` (the message lists the valid ones), empty
        qrels, unknown ``ties``/``ndcg_gains``, ``ties="sklearn"`` with MRR/MAP/MMRR, NaN scores.
    """
    specs = _parse(metrics)
    if ties not in ("trec", "sklearn"):
        raise ValueError(f"ties must be 'trec' or 'sklearn', got {ties!r}")
    if ndcg_gains not in _GAINS:
        raise ValueError(f"ndcg_gains must be one of {sorted(_GAINS)}, got {ndcg_gains!r}")
    if ties == "sklearn":
        bad = [name for name, kind, _ in specs if kind not in _LINEAR]
        if bad:
            raise ValueError(f"ties='sklearn' is only defined for {sorted(_LINEAR)}, not {bad}")
    if not qrels:
        raise ValueError("qrels is empty: nothing to average over")
    answered_any = [q for q in qrels if run.get(q)]
    if not answered_any:
        # every query scores 0: almost always a mistake (an empty run, or qids of another dataset)
        shared = len(set(run) & set(qrels))
        warnings.warn(f"evaluate: the run answers none of the {len(qrels)} qrels queries ("
                      f"{len(run)} run queries, {shared} shared qids, all with empty rankings); every metric is 0"
                      if run else f"evaluate: the run is empty; every metric is 0 for the {len(qrels)} queries",
                      RuntimeWarning, stacklevel=2)

    gain = _GAINS[ndcg_gains]
    qids = list(qrels)
    K = max(k for _, _, k in specs)
    G, B, IG = (np.zeros((len(qids), K)) for _ in range(3))
    R = np.zeros(len(qids))
    for i, qid in enumerate(qids):
        rel = np.array([float(v) for v in qrels[qid].values()])
        rel = rel[rel > 0]
        R[i] = len(rel)
        ideal = np.sort(gain(rel))[::-1][:K]
        IG[i, :len(ideal)] = ideal
        G[i], B[i] = _ranked_rows(run.get(qid) or {}, qrels[qid], gain, K, ties)

    answered = np.array([bool(run.get(q)) for q in qids])
    values = {name: np.where(answered, _METRICS[kind](G, B, R, IG, k), 0.0)
              for name, kind, k in specs}
    if per_query:
        return {name: dict(zip(qids, map(float, v))) for name, v in values.items()}
    return {name: float(v.mean()) for name, v in values.items()}
