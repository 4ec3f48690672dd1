"""Re-Invoke retrieval runs (§3, Algorithm 1) and the paper's baselines and ablations.

    from toolkit.reinvoke import reinvoke_run, hyde_run
    run = reinvoke_run(ds, "dense", expansions, intents)        # Re-Invoke w/ dense (Table 1)
    run = reinvoke_run(ds, "bm25", expansions, intents)         # Re-Invoke w/ BM25
    run = reinvoke_run(ds, "dense", expansions, None)           # + query generator only (Table 3A)
    run = reinvoke_run(ds, "dense", None, intents)              # + intent extractor only (Table 3A)
    run = reinvoke_run(ds, "dense")                             # baseline (plain dense retrieval)
    run = hyde_run(ds, "bm25", hyde_docs)                       # HyDE baseline (§4.2(c))

Indexing (Algorithm 1 lines 2-6): each document becomes its copies "Documentation: <doc> Query:
<synthetic query>" (:mod:`toolkit.reinvoke.expansion`); dense: mean of the copies' embeddings
(Algorithm 2 line 3); BM25: the copies form the BM25 corpus, a document scores the mean of its
copies. Retrieval (lines 7-9): every intent is scored against every document and the documents
are ranked by multi-view similarity ranking (:mod:`toolkit.reinvoke.multiview`). Without intents
the query itself is the one intent, so ranking is by similarity; without expansions each document
is its own single copy — with neither, this is the plain BM25 / dense baseline.

HyDE (Gao et al. 2023; §4.2(c)): the hypothetical tool document generated from the query (Fig. 6)
replaces the query; the real documents are not expanded.

``embed`` is any function ``list[str] -> (n, dim) array``; by default the embedding-cached
``DenseRetriever(model).embed`` (normalised vectors: inner product = cosine, as §4.2(b)).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from toolkit.data.contract import RetrievalDataset, Run
from toolkit.reinvoke.expansion import BM25ExpandedIndex, DenseExpandedIndex, EmbedFn, expand_corpus
from toolkit.reinvoke.multiview import INTENT_AGGREGATIONS, aggregate_intents

RETRIEVER_KINDS = ("bm25", "dense")
# Table 3(A) rows: which components are on
VARIANTS = {
    "baseline": (False, False),
    "query_generator": (True, False),
    "intent_extractor": (False, True),
    "reinvoke": (True, True),
}


def default_embed(model: str = "minilm") -> EmbedFn:
    from toolkit.retrieval import DenseRetriever
    return DenseRetriever(model).embed


def build_index(dataset: RetrievalDataset, retriever_kind: str = "dense",
                expansions: Mapping[str, Sequence[str]] | None = None, *, m: int | None = None,
                mode: str = "append", copy_agg: str = "mean", embed: EmbedFn | None = None,
                model: str = "minilm", renormalize: bool = False, bm25=None):
    """The (expanded) document index: an object with ``doc_ids`` and ``scores(texts)``."""
    if retriever_kind not in RETRIEVER_KINDS:
        raise ValueError(f"retriever_kind must be one of {RETRIEVER_KINDS}, got {retriever_kind!r}")
    doc_ids, texts = dataset.doc_texts()
    ec = expand_corpus(doc_ids, texts, expansions, m=m, mode=mode)
    if retriever_kind == "dense":
        return DenseExpandedIndex(ec, embed or default_embed(model), copy_agg=copy_agg, renormalize=renormalize)
    return BM25ExpandedIndex(ec, copy_agg=copy_agg, bm25=bm25)


def run_from_intents(index, query_intents: Mapping[str, Sequence[str]], k: int = 100,
                     intent_agg: str = "multiview", drop_zero: bool | None = None) -> Run:
    """Score every intent of every query in one batch and rank each query's documents.
    ``drop_zero`` (default: True for BM25) leaves out documents no intent scores above 0, as
    ``BM25Retriever`` leaves out documents that match no query term."""
    if intent_agg not in INTENT_AGGREGATIONS:
        raise ValueError(f"intent_agg must be one of {INTENT_AGGREGATIONS}, got {intent_agg!r}")
    if drop_zero is None:
        drop_zero = isinstance(index, BM25ExpandedIndex)
    qids = list(query_intents)
    flat: list[str] = []
    bounds = [0]
    for q in qids:
        its = [t for t in query_intents[q] if t and t.strip()]
        if not its:
            raise ValueError(f"query {q!r} has no intent text")
        flat += its
        bounds.append(len(flat))
    doc_ids = index.doc_ids
    S_all = index.scores(flat) if flat else np.zeros((0, len(doc_ids)))
    run: Run = {}
    for j, q in enumerate(qids):
        S = S_all[bounds[j]:bounds[j + 1]]
        order, scores = aggregate_intents(S, intent_agg)
        if drop_zero:
            keep = S.max(axis=0) > 0
            order = order[keep[order]]
        run[q] = {doc_ids[i]: float(scores[i]) for i in order[:k]}
    return run


def _query_intents(dataset: RetrievalDataset, intents: Mapping[str, Sequence[str]] | None) -> dict[str, list[str]]:
    out = {}
    missing = []
    for q in dataset.queries.values():
        if intents is None:
            out[q.qid] = [q.text]
        elif q.qid not in intents:
            missing.append(q.qid)
        else:
            its = [t for t in intents[q.qid] if t and t.strip()]
            out[q.qid] = its or [q.text]      # no intent extracted: the query itself
    if missing:
        raise KeyError(f"no intents for {len(missing)} queries of {dataset.name!r} (first: {missing[0]!r}); "
                       f"generate them (python -m toolkit llm generate --prompt intents ...) or pass intents=None")
    return out


def reinvoke_run(dataset: RetrievalDataset, retriever_kind: str = "dense",
                 expansions: Mapping[str, Sequence[str]] | None = None,
                 intents: Mapping[str, Sequence[str]] | None = None, *, k: int = 100, m: int | None = None,
                 mode: str = "append", copy_agg: str = "mean", intent_agg: str = "multiview",
                 embed: EmbedFn | None = None, model: str = "minilm", renormalize: bool = False,
                 bm25=None, index=None, drop_zero: bool | None = None) -> Run:
    """Re-Invoke over ``dataset`` (its corpus and queries) -> run ``{qid: {doc_id: score}}``.

    expansions  ``{doc_id: [synthetic queries]}`` or None (no query generator)
    intents     ``{qid: [intents]}`` or None (no intent extractor: the query is the one intent)
    m           synthetic queries per document (first m; Table 3(C)); None = all given
    mode        "append" (§4.3) or "query_only" (Table 3(B))
    copy_agg    "mean" (Algorithm 2) or "max" over the copies (Table 3(D))
    intent_agg  "multiview" (Algorithm 2), or "max"/"mean" over intents (our extra ablation)
    index       a prebuilt ``build_index(...)`` to reuse across runs (then the index options are ignored)
    Scores are multi-view dense ranks (higher is better), or similarities for ``max``/``mean``.
    """
    if index is None:
        index = build_index(dataset, retriever_kind, expansions, m=m, mode=mode, copy_agg=copy_agg,
                            embed=embed, model=model, renormalize=renormalize, bm25=bm25)
    return run_from_intents(index, _query_intents(dataset, intents), k=k, intent_agg=intent_agg, drop_zero=drop_zero)


def variant_run(variant: str, dataset: RetrievalDataset, retriever_kind: str = "dense",
                expansions: Mapping[str, Sequence[str]] | None = None,
                intents: Mapping[str, Sequence[str]] | None = None, **kw: Any) -> Run:
    """A Table 3(A) row: ``baseline``, ``query_generator``, ``intent_extractor`` or ``reinvoke``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    use_qg, use_ie = VARIANTS[variant]
    if use_qg and expansions is None:
        raise ValueError(f"variant {variant!r} needs expansions (synthetic queries)")
    if use_ie and intents is None:
        raise ValueError(f"variant {variant!r} needs intents")
    return reinvoke_run(dataset, retriever_kind, expansions if use_qg else None, intents if use_ie else None, **kw)


def hyde_run(dataset: RetrievalDataset, retriever_kind: str, hyde_docs: Mapping[str, str], *, k: int = 100,
             embed: EmbedFn | None = None, model: str = "minilm", bm25=None, index=None) -> Run:
    """HyDE baseline (§4.2(c)): the hypothetical document replaces the query (empty -> the query)."""
    intents = {q: [hyde_docs.get(q) or dataset.queries[q].text] for q in dataset.queries}
    missing = [q for q in dataset.queries if q not in hyde_docs]
    if missing:
        raise KeyError(f"no HyDE document for {len(missing)} queries (first: {missing[0]!r})")
    return reinvoke_run(dataset, retriever_kind, None, intents, k=k, embed=embed, model=model, bm25=bm25, index=index)
