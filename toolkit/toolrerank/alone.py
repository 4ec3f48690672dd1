"""The reranker judged on its own: is it weaker than the retriever before any truncation or hierarchy?

For a seeded sample of each test subset, every API of the test library is scored by the reranker alone (sigmoid of
its logit) and by the DPR (cosine), and each query gets, per model:

- Recall@5 of the whole library ranked by that score (:func:`toolkit.metrics.evaluate`);
- the gold-vs-non-gold AUC, the probability that a gold API outscores a non-gold one with ties counting half
  (Mann-Whitney U / (n_gold * n_non_gold); :func:`sklearn.metrics.roc_auc_score`).

The scores (float16, one row per query over the library in sorted id order) are written to a committed file beside
the score caches, so the table replays without a model.
"""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from toolkit.data.contract import RetrievalDataset
from toolkit.metrics import evaluate

from .score_cache import _b64, _unb64
from .splits import SEEN_SUBSETS, SUBSETS

VERSION = 1


def sample_queries(subsets: Mapping[str, RetrievalDataset], n_per_subset: int | None, seed: int
                   ) -> dict[str, list[str]]:
    """``{subset: qids}``: a seeded sample of ``n_per_subset`` queries of each subset (None: all)."""
    return {name: sorted(ds.sample(n_per_subset, seed=seed).queries) for name, ds in subsets.items()}


def score_library(ds: RetrievalDataset, qids: Sequence[str], score: Callable[[list[tuple[str, str]]], np.ndarray],
                  chunk: int = 8, log=None) -> tuple[list[str], np.ndarray]:
    """(library ids in sorted order, float32 matrix queries x library) of ``score(pairs of (query text, doc text))``."""
    ids = sorted(ds.corpus)
    texts = [ds.corpus[d].text for d in ids]
    out = np.zeros((len(qids), len(ids)), np.float32)
    t = time.perf_counter()
    for s in range(0, len(qids), chunk):
        part = qids[s:s + chunk]
        vals = np.asarray(score([(ds.queries[q].text, doc) for q in part for doc in texts]), np.float32)
        out[s:s + len(part)] = vals.reshape(len(part), len(ids))
        if log:
            log(f"reranker alone: {s + len(part)}/{len(qids)} queries, {(s + len(part)) * len(ids)} pairs in "
                f"{time.perf_counter() - t:.0f} s")
    return ids, out


def dense_library(ds: RetrievalDataset, qids: Sequence[str], encode: Callable[[list[str]], np.ndarray]
                  ) -> tuple[list[str], np.ndarray]:
    """(library ids in sorted order, cosine matrix queries x library) of a normalising ``encode``."""
    ids = sorted(ds.corpus)
    D = encode([ds.corpus[d].text for d in ids])
    Q = encode([ds.queries[q].text for q in qids])
    return ids, (Q @ D.T).astype(np.float32)


def per_query(ds: RetrievalDataset, qids: Sequence[str], ids: Sequence[str], scores: np.ndarray, k: int = 5
              ) -> dict[str, dict[str, float]]:
    """``{qid: {"recall@k": ..., "auc": ...}}`` of one model's library scores."""
    from sklearn.metrics import roc_auc_score
    run = {q: dict(zip(ids, map(float, row))) for q, row in zip(qids, scores)}
    rec = evaluate(run, {q: ds.qrels[q] for q in qids}, [f"recall@{k}"], per_query=True)[f"recall@{k}"]
    out = {}
    for q, row in zip(qids, scores):
        gold = np.array([ds.qrels[q].get(d, 0) > 0 for d in ids])
        auc = float(roc_auc_score(gold, row)) if 0 < gold.sum() < len(gold) else float("nan")
        out[q] = {f"recall@{k}": float(rec[q]), "auc": auc}
    return out


def table(values: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]], k: int = 5):
    """Per subset and for seen / unseen pooled: n, and each model's mean Recall@k and AUC (percent), and the paired
    p of reranker vs DPR (:func:`toolkit.significance.paired_randomization`). ``values``: {model: {subset: per_query}}."""
    import pandas as pd

    from toolkit.significance import paired_randomization
    models = list(values)
    groups = {name: [name] for name in SUBSETS} | {"seen": SEEN_SUBSETS,
                                                  "unseen": [s for s in SUBSETS if s not in SEEN_SUBSETS]}
    rows = []
    for label, members in groups.items():
        pq = {m: {f"{s}/{q}": v for s in members for q, v in values[m].get(s, {}).items()} for m in models}
        if not pq[models[0]]:
            continue
        row = {"set": label, "n": len(pq[models[0]])}
        for metric in (f"recall@{k}", "auc"):
            for m in models:
                vals = [v[metric] for v in pq[m].values() if not np.isnan(v[metric])]
                row[f"{m} {metric}"] = 100 * float(np.mean(vals)) if vals else float("nan")
            if len(models) >= 2:
                a, b = models[0], models[1]
                keep = [x for x in pq[a] if not (np.isnan(pq[a][x][metric]) or np.isnan(pq[b][x][metric]))]
                row[f"p {metric}"] = paired_randomization({x: pq[b][x][metric] for x in keep},
                                                          {x: pq[a][x][metric] for x in keep}).p if keep else float("nan")
        rows.append(row)
    return pd.DataFrame(rows).set_index("set")


def save(path: Path, ids: Mapping[str, Sequence[str]], samples: Mapping[str, Sequence[str]],
         scores: Mapping[str, Mapping[str, np.ndarray]], meta: dict) -> None:
    """``scores``: {model: {subset: matrix (len(samples[subset]) x len(ids[subset]))}}, stored as float16."""
    doc = {"version": VERSION, "ids": {k: list(v) for k, v in ids.items()},
           "samples": {k: list(v) for k, v in samples.items()}, "meta": meta,
           "scores": {m: {s: _b64(np.asarray(a, np.float16)) for s, a in by.items()} for m, by in scores.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    tmp.replace(path)


def load(path: Path, record: bool = True
         ) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, dict[str, np.ndarray]], dict]:
    """(ids, samples, {model: {subset: float32 matrix}}, meta); a damaged file is an error naming it. ``record``: note
    the file as an input of this run (:func:`toolkit.provenance.record_input`; its sha256 goes into the results, so
    ``check`` sees an edit), as every loader of a committed, replayable file does."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            doc = json.load(f)
        ids, samples = doc["ids"], doc["samples"]
        scores = {m: {s: _unb64(t, np.float16, (len(samples[s]), len(ids[s]))).astype(np.float32) for s, t in by.items()}
                  for m, by in doc["scores"].items()}
    except (OSError, EOFError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a readable reranker-alone file ({type(err).__name__}: {err}); restore it "
                         f"with git checkout, or delete it to score again") from None
    if doc.get("version") != VERSION:
        raise ValueError(f"{path}: version {doc.get('version')!r}, this code reads {VERSION}")
    if record:
        from toolkit import provenance
        provenance.record_input(path, records=sum(len(v) for v in samples.values()) * len(scores),
                                kind="reranker-alone score file")
    return ids, samples, scores, doc.get("meta", {})


def path_for(cfg, split, role: str = "") -> Path:
    """``data/score_cache/toolrerank/<profile>-alone[-<role>]-<key>.json.gz``: the key covers the training setup and
    split (:func:`toolkit.toolrerank.score_cache.cache_key`), the sample size and seed."""
    import hashlib

    from . import score_cache
    base = score_cache.cache_key(cfg, split)
    key = hashlib.sha256(json.dumps([base, cfg.alone_queries, cfg.alone_library, cfg.eval_seed]).encode()).hexdigest()[:12]
    return score_cache.cache_path(cfg, split).with_name(f"{cfg.profile}-alone{'-' + role if role else ''}-{key}.json.gz")


def capped(ds: RetrievalDataset, qids: Sequence[str], n_docs: int | None, seed: int) -> RetrievalDataset:
    """``ds`` on ``qids`` with its library cut to their gold APIs and a seeded sample of the others, ``n_docs`` in
    all (None: the whole library)."""
    import random
    sub = ds.subset(list(qids))
    if n_docs is None or n_docs >= len(sub.corpus):
        return sub
    gold = sorted({d for q in qids for d, r in sub.qrels[q].items() if r > 0})
    rest = sorted(d for d in sub.corpus if d not in set(gold))
    keep = set(gold) | set(random.Random(seed).sample(rest, max(0, min(len(rest), n_docs - len(gold)))))
    return RetrievalDataset(sub.name, {d: doc for d, doc in sub.corpus.items() if d in keep}, sub.queries, sub.qrels,
                            sub.description + f"; library cut to {len(keep)} documents")


def compute(split, models, setup, n_per_subset: int | None, seed: int, n_docs: int | None = None, log=None):
    """(ids per subset, samples, {"DPR": {subset: cosines}, "reranker": {subset: scores}}) for the trained
    ``models``; ``n_docs`` caps the library (:func:`capped`)."""
    import torch

    from . import dpr_vectors
    from .reranker import Reranker
    subsets = {name: split.subset(name) for name in SUBSETS}
    samples = sample_queries(subsets, n_per_subset, seed)
    subsets = {name: capped(ds, samples[name], n_docs, seed) for name, ds in subsets.items()}
    dpr = dpr_vectors.retriever(models.dual_encoder)   # the live DPR, or its committed vectors (float16-rounded)
    texts = {d: doc.text for d, doc in split.pool.corpus.items()}
    reranker = Reranker(models.reranker, texts, max_length=setup.ce_max_len)

    def encode(batch):
        return dpr.embed(list(batch))

    def score(pairs):
        return reranker.model.predict(pairs, batch_size=64, activation_fn=torch.nn.Sigmoid(), show_progress_bar=False)
    scores: dict[str, dict[str, np.ndarray]] = {"DPR": {}, "reranker": {}}
    ids = {}
    for name, ds in subsets.items():
        ids[name], scores["DPR"][name] = dense_library(ds, samples[name], encode)
        ids2, scores["reranker"][name] = score_library(ds, samples[name], score,
                                                       log=(lambda m, n=name: log(f"{n}: {m}")) if log else None)
        assert ids2 == ids[name]
    return ids, samples, scores


def values_from(split, ids, samples, scores) -> dict:
    """``{model: {subset: per_query}}`` of stored scores (what :func:`table` takes)."""
    return {m: {s: per_query(split.subset(s), samples[s], ids[s], a) for s, a in by.items()}
            for m, by in scores.items()}


def record(rec, df, cfg) -> None:
    """Our own cells (table ``alone``): per subset and pooled, each model's Recall@5 and AUC (fractions) and p."""
    lib = "the whole library" if cfg.alone_library is None else f"a library cut to {cfg.alone_library} APIs"
    for part, row in df.iterrows():
        for col, value in row.items():
            if col == "n" or value != value:
                continue
            method, metric = (col.split(" ", 1) if not col.startswith("p ") else ("reranker vs DPR", col))
            rec.add(paper="toolrerank", table="alone", dataset=part, method=method, metric=metric.replace(" ", "_"),
                    value=float(value) / (1 if col.startswith("p ") else 100), ours_only=True,
                    n_queries=int(row["n"]), note=f"{cfg.alone_queries} queries per subset scored against {lib}")
