"""Dense (bi-encoder) retrieval: exact inner-product search over sentence-transformers embeddings.

Documents and queries are embedded with the same encoder (through the embedding cache), and
scored by inner product — cosine similarity when ``normalize=True``, the setting of the
all-*-v2 models (Reimers & Gurevych 2019) and of the query-generation paper's all-mpnet-base-v2
retriever. Search is exact: numpy matmul in query blocks + top-k, or ``faiss.IndexFlatIP``
(Johnson et al. 2019), which returns the same ranking. ``search_embeddings`` and
``index_embeddings`` take vectors built elsewhere (e.g. Re-Invoke's mean of document copies).
"""
from __future__ import annotations

import numpy as np

from toolkit.retrieval.base import Run, check_index_input, topk_run
from toolkit.retrieval.embedding_cache import encode
from toolkit.retrieval.models import load_encoder


class DenseRetriever:
    def __init__(self, model: str = "minilm", normalize: bool = True, batch_size: int = 64,
                 use_faiss: bool = False, query_block: int = 256, cache: bool = True,
                 device: str | None = None, show_progress: bool | None = None):
        self.model, self.normalize, self.batch_size = model, normalize, batch_size
        self.use_faiss, self.query_block, self.cache = use_faiss, query_block, cache
        self.device, self.show_progress = device, show_progress
        self.doc_ids: list[str] = []
        self.doc_emb: np.ndarray | None = None
        self._faiss = None

    def __repr__(self) -> str:
        return (f"DenseRetriever(model={self.model!r}, normalize={self.normalize}, use_faiss={self.use_faiss}, "
                f"{len(self.doc_ids)} docs)")

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embeddings of ``texts`` (float32), through the on-disk cache unless ``cache=False``."""
        if self.cache:
            return encode(self.model, texts, batch_size=self.batch_size, normalize=self.normalize,
                          show_progress=self.show_progress, device=self.device)
        enc = load_encoder(self.model, self.device)
        return np.asarray(enc.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=self.normalize,
                                     convert_to_numpy=True, show_progress_bar=bool(self.show_progress)), np.float32)

    def index(self, doc_ids: list[str], texts: list[str]) -> "DenseRetriever":
        doc_ids, texts = check_index_input(doc_ids, texts)
        return self.index_embeddings(doc_ids, self.embed(texts))

    def index_embeddings(self, doc_ids: list[str], doc_emb: np.ndarray) -> "DenseRetriever":
        """Index precomputed document vectors (one row per doc id)."""
        doc_emb = np.ascontiguousarray(doc_emb, dtype=np.float32)
        if doc_emb.ndim != 2 or len(doc_emb) != len(doc_ids):
            raise ValueError(f"index_embeddings: {len(doc_ids)} doc ids but embeddings of shape {doc_emb.shape}")
        self.doc_ids, self.doc_emb, self._faiss = list(doc_ids), doc_emb, None
        if self.use_faiss:
            import faiss
            self._faiss = faiss.IndexFlatIP(doc_emb.shape[1])
            self._faiss.add(doc_emb)
        return self

    def search(self, queries: dict[str, str], k: int = 100) -> Run:
        qids = list(queries)
        return self.search_embeddings(qids, self.embed([queries[q] for q in qids]), k)

    def search_embeddings(self, qids: list[str], query_emb: np.ndarray, k: int = 100) -> Run:
        """Top-k by inner product for precomputed query vectors (one row per qid)."""
        if self.doc_emb is None:
            raise RuntimeError("DenseRetriever: call index() before search()")
        Q = np.ascontiguousarray(query_emb, dtype=np.float32).reshape(len(qids), -1)
        if Q.shape[1] != self.doc_emb.shape[1]:
            raise ValueError(f"query vectors have dimension {Q.shape[1]}, the index {self.doc_emb.shape[1]}")
        run: Run = {}
        if self._faiss is not None:
            scores, idx = self._faiss.search(Q, min(k, len(self.doc_ids)))
            for qid, s, i in zip(qids, scores, idx):
                order = np.lexsort((i, -s))  # same tie rule as base.topk_indices
                run[qid] = {self.doc_ids[j]: float(v) for j, v in zip(i[order], s[order]) if j >= 0}
            return run
        for s in range(0, len(qids), self.query_block):
            run.update(topk_run(qids[s:s + self.query_block], self.doc_ids, Q[s:s + self.query_block] @ self.doc_emb.T, k))
        return run

    def scores(self, texts: list[str]) -> np.ndarray:
        """Full score matrix (n_texts x n_docs) — for methods that fuse or re-rank all documents."""
        return self.embed(texts) @ self.doc_emb.T

