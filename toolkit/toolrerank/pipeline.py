"""The ToolRerank pipeline and the Rerank-m baselines, on any dataset of the data layer.

:func:`candidates` runs the trained dual encoder ("DPR") over a dataset and has the cross-encoder
score the top ``depth`` APIs of every query once; every method below is then a pure function of
those :class:`Candidates`, so grids (Table 2, Table 5, Figure 1(a)) cost no model calls — except
APIs that the extended list pulls in from outside the candidates, which the reranker scores on
demand (memoised).

- ``dpr``: C as retrieved;
- ``rerank(m)``: the top-m of C sorted by score(q, .) (Rerank-m, Nogueira & Cho 2019);
- ``toolrerank(cfg)``: Adaptive Truncation (m_s / m_u) -> sort by score -> Hierarchy-Aware
  Reranking chosen per query by ``cfg.har``: ``classifier`` (the paper), ``oracle`` (gold number
  of tools), ``single`` / ``multi`` (one algorithm for all), ``none``; the extended API list for
  the tools ``cfg.extend_seen`` / ``cfg.extend_unseen`` say.

Runs are ``{qid: {doc_id: score}}`` with score = list length - position, so the metrics see the
list order exactly.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import numpy as np

from toolkit.data.contract import RetrievalDataset
from toolkit.metrics import evaluate

from .hierarchy import har_multi, har_single
from .splits import is_single_tool, tool_id
from .truncation import adaptive_truncate


@dataclass(frozen=True)
class ToolRerankConfig:
    m_s: int = 10
    m_u: int = 50
    tau_s: float = 0.85
    tau_m: float = 0.7
    n: int = 3
    har: str = "classifier"          # classifier | oracle | single | multi | none
    extend_seen: bool = False
    extend_unseen: bool = True

    def __post_init__(self):
        if self.har not in ("classifier", "oracle", "single", "multi", "none"):
            raise ValueError(f"har must be classifier|oracle|single|multi|none, got {self.har!r}")


@dataclass
class Candidates:
    """Everything the methods need for one dataset."""
    dataset: RetrievalDataset
    ranked: dict[str, list[str]]                   # C: top-depth doc ids per query (DPR order)
    scores: dict[str, dict[str, float]]            # score(q, d) for d in C (and extended APIs, on demand)
    seen: set[str]                                 # seen tool ids
    single_pred: dict[str, bool]                   # classifier: query is single-tool
    doc_index: dict[str, int]                      # doc id -> row of doc_emb
    doc_emb: np.ndarray                            # normalized DPR document embeddings
    score_fn: Callable[[str, list[str]], Mapping[str, float]] | None = None   # reranker for extra APIs
    tool_apis: dict[str, list[str]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _sims: dict = field(default_factory=dict, repr=False)    # query -> (position of each candidate, sim matrix)

    def __post_init__(self):
        if not self.tool_apis:
            for d, doc in self.dataset.corpus.items():
                self.tool_apis.setdefault(tool_id(doc), []).append(d)

    def tool_of(self, d: str) -> str:
        return tool_id(self.dataset.corpus[d])

    def sim_matrix(self, q: str, ids: Sequence[str]) -> np.ndarray:
        """sim(a, b) for every pair of ``ids`` (a subset of query ``q``'s candidates): rows of one
        matrix product over the candidates, computed once per query (the grid search asks ~10^3 times)."""
        if q not in self._sims:
            E = self.doc_emb[[self.doc_index[d] for d in self.ranked[q]]]
            self._sims[q] = ({d: i for i, d in enumerate(self.ranked[q])}, E @ E.T)
        pos, S = self._sims[q]
        idx = [pos[d] for d in ids]
        return S[np.ix_(idx, idx)]

    def is_single(self, q: str, how: str) -> bool:
        return is_single_tool(self.dataset, q) if how == "oracle" else self.single_pred[q]


def as_run(lists: Mapping[str, list[str]]) -> dict[str, dict[str, float]]:
    return {q: {d: float(len(L) - i) for i, d in enumerate(L)} for q, L in lists.items()}


def rerank_list(c: Candidates, q: str, m: int) -> list[str]:
    s = c.scores[q]
    return sorted(c.ranked[q][:m], key=lambda d: -s[d])


def _score_extra(c: Candidates, q: str) -> Callable[[list[str]], Mapping[str, float]]:
    def fn(ids: list[str]) -> Mapping[str, float]:
        if c.score_fn is None:
            raise ValueError("extended API list needs a reranker (Candidates.score_fn)")
        got = c.score_fn(c.dataset.queries[q].text, ids)
        c.scores[q].update(got)
        return got
    return fn


def toolrerank_list(c: Candidates, q: str, cfg: ToolRerankConfig) -> list[str]:
    T = adaptive_truncate(c.ranked[q], c.tool_of, c.seen, cfg.m_s, cfg.m_u)
    s = c.scores[q]
    R = sorted(T, key=lambda d: -s[d])
    mode = cfg.har
    if mode in ("classifier", "oracle"):
        mode = "single" if c.is_single(q, mode) else "multi"
    if mode == "none":
        return R
    if mode == "single":
        ext = None
        if cfg.extend_seen or cfg.extend_unseen:
            ext = lambda t: cfg.extend_seen if t in c.seen else cfg.extend_unseen  # noqa: E731
        return har_single(R, s, c.tool_of, cfg.tau_s, extend=ext, library_apis=lambda t: c.tool_apis.get(t, []),
                          score_fn=_score_extra(c, q))
    return har_multi(R, s, c.tool_of, c.sim_matrix(q, R), cfg.tau_m, cfg.n)


def method_lists(c: Candidates, method: str | ToolRerankConfig, qids=None) -> dict[str, list[str]]:
    """Ranked lists of ``method``: 'dpr', 'rerank-<m>' or a ToolRerankConfig."""
    qids = list(qids or c.dataset.queries)
    if isinstance(method, ToolRerankConfig):
        return {q: toolrerank_list(c, q, method) for q in qids}
    if method == "dpr":
        return {q: list(c.ranked[q]) for q in qids}
    if method.startswith("rerank-"):
        m = int(method.split("-")[1])
        return {q: rerank_list(c, q, m) for q in qids}
    raise ValueError(f"unknown method {method!r}: dpr, rerank-<m> or a ToolRerankConfig")


def evaluate_method(c: Candidates, method, metrics=("ndcg@5", "recall@5"), qids=None, per_query=False):
    lists = method_lists(c, method, qids)
    qrels = {q: c.dataset.qrels[q] for q in lists}
    return evaluate(as_run(lists), qrels, list(metrics), per_query=per_query)


# ---------------------------------------------------------------------------------------------
# building Candidates

def candidates(ds: RetrievalDataset, retriever, reranker, seen: set[str], classifier=None, depth: int = 50,
               log: Callable[[str], None] | None = print) -> Candidates:
    """DPR top-``depth`` for every query, reranker scores for all of them, classifier decisions.

    ``retriever``: a DenseRetriever (its ``doc_emb`` gives sim for Algorithm 2);
    ``reranker``: :class:`toolkit.toolrerank.reranker.Reranker`; ``classifier``: a
    :class:`toolkit.toolrerank.classifier.QueryClassifier` (None: oracle decisions are used).
    """
    t0 = time.perf_counter()
    ids, texts = ds.doc_texts()
    if getattr(retriever, "doc_ids", None) != ids:
        retriever.index(ids, texts)
    t1 = time.perf_counter()
    qtexts = ds.query_texts()
    run = retriever.search(qtexts, k=depth)
    ranked = {q: sorted(r, key=lambda d: -r[d]) for q, r in run.items()}
    for q in ds.queries:
        ranked.setdefault(q, [])
    t2 = time.perf_counter()
    reranker.score_many([(qtexts[q], ranked[q]) for q in ds.queries])
    scores = {q: reranker.score(qtexts[q], ranked[q]) for q in ds.queries}
    t3 = time.perf_counter()
    qids = list(ds.queries)
    if classifier is not None:
        single = dict(zip(qids, classifier.predict([qtexts[q] for q in qids])))
    else:
        single = {q: is_single_tool(ds, q) for q in qids}
    t4 = time.perf_counter()
    emb = retriever.doc_emb
    c = Candidates(ds, ranked, scores, set(seen), single, {d: i for i, d in enumerate(retriever.doc_ids)}, emb,
                   score_fn=reranker.score,
                   timings={"index_s": t1 - t0, "retrieve_s": t2 - t1, "rerank_s": t3 - t2, "classify_s": t4 - t3,
                            "queries": len(qids)})
    if log:
        log(f"{ds.name}: {len(qids)} queries, {len(ds.corpus)} docs; index {t1 - t0:.1f}s retrieve {t2 - t1:.1f}s "
            f"rerank {t3 - t2:.1f}s classify {t4 - t3:.1f}s")
    return c


def restrict(c: Candidates, qids) -> Candidates:
    """The same candidates for a subset of the queries (no model calls)."""
    qids = list(qids)
    return replace(c, dataset=c.dataset.subset(qids), ranked={q: c.ranked[q] for q in qids},
                   scores={q: c.scores[q] for q in qids}, single_pred={q: c.single_pred[q] for q in qids})


# ---------------------------------------------------------------------------------------------
# grid search (Table 2)

def grid_search(c: Candidates, grid: Mapping[str, list], metric: str = "recall@5", har: str = "classifier",
                extend_seen: bool = False, extend_unseen: bool = True) -> tuple[ToolRerankConfig, "object"]:
    """Best (m_s, m_u, tau_s, tau_m, n) on ``c`` by mean ``metric`` (ties: nDCG@5, then grid order).

    The two HAR algorithms act on disjoint queries (by the classifier), so for each (m_s, m_u)
    tau_s is chosen on the single-tool queries and (tau_m, n) on the multi-tool ones: the sum
    of per-query values is maximised exactly with 9 x (7 + 21) evaluations instead of 1,323.
    Returns (best config, DataFrame of every evaluated (m_s, m_u, part, value))."""
    import pandas as pd
    qids = list(c.dataset.queries)
    single = [q for q in qids if c.is_single(q, har)]
    multi = [q for q in qids if not c.is_single(q, har)]
    rows, best = [], None
    for m_s in grid["m_s"]:
        for m_u in grid["m_u"]:
            base = ToolRerankConfig(m_s=m_s, m_u=m_u, har=har, extend_seen=extend_seen, extend_unseen=extend_unseen)

            def total(cfg, qs):
                if not qs:
                    return 0.0, 0.0
                pq = evaluate_method(c, cfg, (metric, "ndcg@5"), qids=qs, per_query=True)
                return sum(pq[metric].values()), sum(pq["ndcg@5"].values())

            s_best = max(((total(replace(base, tau_s=t), single), -i, t) for i, t in enumerate(grid["tau_s"])))
            m_opts = [(tm, n) for tm in grid["tau_m"] for n in grid["n"]]
            m_best = max(((total(replace(base, tau_m=tm, n=n), multi), -i, (tm, n)) for i, (tm, n) in enumerate(m_opts)))
            val = (s_best[0][0] + m_best[0][0]) / len(qids)
            tie = (s_best[0][1] + m_best[0][1]) / len(qids)
            cfg = replace(base, tau_s=s_best[2], tau_m=m_best[2][0], n=m_best[2][1])
            rows.append({"m_s": m_s, "m_u": m_u, "tau_s": cfg.tau_s, "tau_m": cfg.tau_m, "n": cfg.n, metric: val,
                         "ndcg@5": tie})
            key = (val, tie)
            if best is None or key > best[0]:
                best = (key, cfg)
    return best[1], pd.DataFrame(rows)
