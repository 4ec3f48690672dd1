"""Dataset analyses: the iterative-feedback paper's Figure 2 (instruction length and the term
overlap between an instruction and its relevant tool documents) and per-dataset statistics.

Xu et al. (2024, Fig. 2) contrast tool retrieval with document retrieval: tool instructions are
longer and share fewer terms with the documents they need ("reputation rate", i.e. the rate at
which instruction terms are repeated in the relevant document). We measure, per query:

    length(q)  = number of word tokens in q                          (regex ``\\w+``)
    overlap(q) = |T(q) ∩ T(D_q)| / |T(q)|

where T(x) is the set of lower-cased word tokens of x minus English stop words (scikit-learn's
list) and D_q the concatenated texts of q's relevant documents. The paper does not define its
tokenization; this choice is ours and is a parameter (``stopwords=False`` keeps every token).
"""
from __future__ import annotations

import re

import numpy as np

from .data.contract import RetrievalDataset

_WORD = re.compile(r"\w+")


def _stopwords() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    return frozenset(ENGLISH_STOP_WORDS)


def terms(text: str, stopwords: bool = True) -> set[str]:
    toks = {t for t in _WORD.findall(text.lower())}
    return toks - _stopwords() if stopwords else toks


def instruction_lengths(ds: RetrievalDataset) -> np.ndarray:
    return np.array([len(_WORD.findall(q.text)) for q in ds.queries.values()])


def term_overlap(ds: RetrievalDataset, stopwords: bool = True) -> np.ndarray:
    """overlap(q) for every query (queries with no content term get NaN and are reported, not dropped)."""
    out = []
    for qid, q in ds.queries.items():
        qt = terms(q.text, stopwords)
        dt = set().union(*(terms(ds.corpus[d].text, stopwords) for d in ds.qrels[qid]))
        out.append(len(qt & dt) / len(qt) if qt else np.nan)
    return np.array(out, dtype=float)


def dataset_row(ds: RetrievalDataset) -> dict:
    """One row of a data-statistics table, plus the Figure-2 measures."""
    lengths, overlap = instruction_lengths(ds), term_overlap(ds)
    s = ds.stats()
    return {**s,
            "len_mean": float(lengths.mean()), "len_median": float(np.median(lengths)),
            "doc_len_mean": float(np.mean([len(_WORD.findall(d.text)) for d in ds.corpus.values()])),
            "overlap_mean": float(np.nanmean(overlap)), "overlap_nan": int(np.isnan(overlap).sum())}
