"""BM25 (Robertson & Zaragoza 2009) with two exchangeable backends: bm25s and rank_bm25.

Defaults: k1=1.5, b=0.75 — the values Re-Invoke states for its BM25 baseline (reinvoke.md §4.2,
"k = 1.5 ... b = 0.75") — Okapi BM25 with Robertson's IDF (``method="robertson"``, rank_bm25's
``BM25Okapi``; ``"lucene"`` is Lucene/Anserini's variant), and plain lower-cased word tokens with no
stemming and no stop-word removal. No paper states its tokenization; on ToolE single-tool this
setting gives nDCG@5 0.366 against Re-Invoke's printed 0.3735, while Snowball stemming + stop words
give 0.480 (``stemmer="english", stopwords="en"``). Formulas:
    score(q, d) = sum_{t in q} idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = log(1 + (N - df + 0.5) / (df + 0.5))            [lucene, always > 0]
    idf(t) = max(0, log((N - df + 0.5) / (df + 0.5)))         [robertson]
(Kamphuis et al., ECIR 2020, "Which BM25 do you mean?").

Both backends get the same token lists from one tokenizer (lowercase, scikit-learn's
``\\b\\w\\w+\\b`` token pattern as in bm25s; optionally bm25s's English stopword list and Snowball
stemming via PyStemmer), so their scores can be compared. Backend equivalence (tested):
- ``method="robertson"``: rank_bm25's ``BM25Okapi`` with ``epsilon=0``. rank_bm25 multiplies every
  term by (k1 + 1), a constant, so its scores are (k1 + 1) x bm25s's and the ranking is the same.
  rank_bm25's own default ``epsilon=0.25`` floors the IDF of terms in more than half the documents
  at 0.25 x mean IDF instead of 0; pass ``epsilon=0.25`` to get it (rank_bm25 backend only).
- ``method="lucene"``: rank_bm25 has no Lucene IDF, so ``BM25OkapiLuceneIDF`` below swaps only
  ``_calc_idf``; scores are again (k1 + 1) x bm25s's.
- Other bm25s methods ('atire', 'bm25l', 'bm25+') are bm25s-only (rank_bm25's BM25L/BM25Plus
  compute different formulas). bm25s scores in float32, rank_bm25 in float64: near-ties may swap.
Documents that match no query term are not returned (as in Lucene), so a query with no known
token gets an empty result.
"""
from __future__ import annotations

import math
import re
from typing import Callable

import numpy as np

from toolkit.retrieval.base import Run, check_index_input, topk_run

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
BOTH_BACKENDS = ("lucene", "robertson")
BM25S_ONLY = ("atire", "bm25l", "bm25+")


class Tokenizer:
    """text -> tokens: lowercase, regex split, stopword removal, stemming (bm25s.tokenize's steps)."""

    def __init__(self, stemmer: str | None = None, stopwords: str | list[str] | None = None,
                 lower: bool = True, pattern: str = TOKEN_PATTERN):
        self.lower, self.split = lower, re.compile(pattern).findall
        if stopwords in ("en", "english"):
            from bm25s.stopwords import STOPWORDS_EN
            stopwords = STOPWORDS_EN
        elif isinstance(stopwords, str):
            raise ValueError(f"stopwords: 'en', a list of words or None, got {stopwords!r}")
        self.stopwords = frozenset(stopwords or ())
        if stemmer:
            import Stemmer
            self._stem = Stemmer.Stemmer(stemmer).stemWords
        else:
            self._stem = None
        self.desc = f"Tokenizer(stemmer={stemmer!r}, stopwords={'none' if not stopwords else len(self.stopwords)})"

    def __call__(self, text: str) -> list[str]:
        toks = [t for t in self.split(text.lower() if self.lower else text) if t not in self.stopwords]
        return self._stem(toks) if self._stem else toks

    def __repr__(self) -> str:
        return self.desc


def _rank_bm25_classes():
    from rank_bm25 import BM25Okapi

    class BM25OkapiLuceneIDF(BM25Okapi):
        """rank_bm25's BM25Okapi with Lucene's IDF log(1 + (N - df + 0.5) / (df + 0.5))."""

        def _calc_idf(self, nd):
            for word, df in nd.items():
                self.idf[word] = math.log(1 + (self.corpus_size - df + 0.5) / (df + 0.5))

    return {"robertson": BM25Okapi, "lucene": BM25OkapiLuceneIDF}


class BM25Retriever:
    def __init__(self, backend: str = "bm25s", k1: float = 1.5, b: float = 0.75, method: str = "robertson",
                 tokenizer: Callable[[str], list[str]] | None = None, stemmer: str | None = None,
                 stopwords: str | list[str] | None = None, epsilon: float = 0.0, query_block: int = 256):
        """``stemmer``/``stopwords`` build the default ``Tokenizer``; ignored when ``tokenizer`` is given."""
        if backend not in ("bm25s", "rank_bm25"):
            raise ValueError(f"backend must be 'bm25s' or 'rank_bm25', got {backend!r}")
        if method not in BOTH_BACKENDS + BM25S_ONLY:
            raise ValueError(f"method must be one of {BOTH_BACKENDS + BM25S_ONLY}, got {method!r}")
        if backend == "rank_bm25" and method not in BOTH_BACKENDS:
            raise ValueError(f"method {method!r} is bm25s-only; rank_bm25 supports {BOTH_BACKENDS}")
        if epsilon and (backend, method) != ("rank_bm25", "robertson"):
            raise ValueError("epsilon (rank_bm25's IDF floor) applies only to backend='rank_bm25', method='robertson'")
        self.backend, self.k1, self.b, self.method, self.epsilon = backend, k1, b, method, epsilon
        self.tokenizer = tokenizer or Tokenizer(stemmer=stemmer, stopwords=stopwords)
        self.query_block = query_block
        self.doc_ids: list[str] = []
        self._bm = None

    def __repr__(self) -> str:
        return (f"BM25Retriever(backend={self.backend!r}, method={self.method!r}, k1={self.k1}, b={self.b}, "
                f"tokenizer={self.tokenizer!r}, {len(self.doc_ids)} docs)")

    def index(self, doc_ids: list[str], texts: list[str]) -> "BM25Retriever":
        self.doc_ids, texts = check_index_input(doc_ids, texts)
        tokens = [self.tokenizer(t) for t in texts]
        if self.backend == "bm25s":
            import bm25s
            self._bm = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
            self._bm.index(tokens, show_progress=False)
        else:
            cls = _rank_bm25_classes()[self.method]
            self._bm = cls(tokens, k1=self.k1, b=self.b, epsilon=self.epsilon)
        return self

    def _score_one(self, text: str) -> np.ndarray:
        tokens = self.tokenizer(text)
        if self.backend == "bm25s":
            ids = self._bm.get_tokens_ids(tokens)
            if not ids:
                return np.zeros(len(self.doc_ids), np.float32)
            return self._bm.get_scores_from_ids(ids)
        return self._bm.get_scores(tokens)

    def scores(self, texts: list[str]) -> np.ndarray:
        """Full score matrix (n_texts x n_docs)."""
        if self._bm is None:
            raise RuntimeError("BM25Retriever: call index() before search()")
        if not texts:
            return np.zeros((0, len(self.doc_ids)))
        return np.stack([self._score_one(t) for t in texts])

    def search(self, queries: dict[str, str], k: int = 100) -> Run:
        qids, run = list(queries), {}
        for s in range(0, len(qids), self.query_block):
            block = qids[s:s + self.query_block]
            run.update(topk_run(block, self.doc_ids, self.scores([queries[q] for q in block]), k, min_score=0.0))
        return run
