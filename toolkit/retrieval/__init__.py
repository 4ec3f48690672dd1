"""First-stage retrieval: BM25 (bm25s, rank_bm25), dense bi-encoders, embedding cache, model registry.

    from toolkit.retrieval import build_retriever, retrieve
    run = retrieve(dataset, build_retriever("bm25"), k=100)        # {qid: {doc_id: score}}

Names: ``bm25`` (bm25s), ``bm25-rank`` (rank_bm25), ``minilm``, ``mpnet``, ``dense:<model name or path>``.
Every retriever has ``index(doc_ids, texts)``, ``search(queries, k)`` and ``scores(texts)``.
"""
from __future__ import annotations

import inspect

from toolkit.config import check_value

from toolkit.retrieval.base import Run, topk_indices, topk_run
from toolkit.retrieval.bm25 import BM25Retriever, Tokenizer
from toolkit.retrieval.dense import DenseRetriever
from toolkit.retrieval.embedding_cache import encode
from toolkit.retrieval.models import MODEL_CARDS, load_encoder, resolve_model

RETRIEVERS = {
    "bm25": (BM25Retriever, {"backend": "bm25s"}),
    # rank_bm25 as papers that used it ran it: BM25Okapi with its own IDF floor epsilon=0.25
    # (overridable: epsilon=0 gives bm25's exact ranking).
    "bm25-rank": (BM25Retriever, {"backend": "rank_bm25"}),
    "minilm": (DenseRetriever, {"model": "minilm"}),
    "mpnet": (DenseRetriever, {"model": "mpnet"}),
    "dense:<model>": (DenseRetriever, {}),
}
DEFAULTS = {"bm25-rank": {"method": "robertson", "epsilon": 0.25}}


def build_retriever(name: str, **params):
    """A retriever by name; ``params`` go to its constructor (unknown ones raise TypeError)."""
    if isinstance(name, str) and name.startswith("dense:") and len(name) > 6:
        cls, fixed = DenseRetriever, {"model": name[6:]}
    elif name in RETRIEVERS and name != "dense:<model>":
        cls, fixed = RETRIEVERS[name]
    else:
        raise ValueError(f"unknown retriever {name!r}; valid: {', '.join(RETRIEVERS)}")
    sig = inspect.signature(cls.__init__).parameters
    allowed = set(sig) - {"self"}
    for key in params:
        if key in fixed:
            raise TypeError(f"retriever {name!r}: parameter {key!r} is fixed by the name ({key}={fixed[key]!r})")
        if key not in allowed:
            raise TypeError(f"retriever {name!r}: unknown parameter {key!r}; "
                            f"valid: {', '.join(sorted(allowed - set(fixed)))}")
        default = sig[key].default
        if default is not inspect.Parameter.empty:
            check_value(f"retriever {name!r}: parameter {key!r}", params[key], default)
    defaults = DEFAULTS.get(name, {})
    return cls(**fixed, **{**defaults, **params})


def retrieve(dataset, retriever, k: int = 100) -> Run:
    """Index ``dataset.corpus`` (skipped if this retriever already holds that exact corpus), search its queries."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"retrieve: k (documents per query) must be a positive integer, got {k!r}")
    blank = [q for q, t in dataset.query_texts().items() if not t.strip()]
    if blank:
        import warnings
        warnings.warn(f"retrieve: {len(blank)} of {len(dataset.queries)} queries of {dataset.name!r} have blank text "
                      f"(first: {blank[0]!r}); they retrieve nothing useful and score 0 or noise",
                      RuntimeWarning, stacklevel=2)
    doc_ids, texts = dataset.doc_texts()
    key = (len(doc_ids), hash(tuple(doc_ids)), hash(tuple(texts)))
    if getattr(retriever, "_toolkit_corpus_key", None) != key:
        retriever.index(doc_ids, texts)
        retriever._toolkit_corpus_key = key
    return retriever.search(dataset.query_texts(), k=k)


__all__ = ["BM25Retriever", "DenseRetriever", "MODEL_CARDS", "RETRIEVERS", "Run", "Tokenizer", "build_retriever",
           "encode", "load_encoder", "resolve_model", "retrieve", "topk_indices", "topk_run"]
