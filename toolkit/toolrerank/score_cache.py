"""Replayable ToolRerank evaluation: everything notebook ``10_toolrerank`` needs from the three trained
models, per evaluated query — the DPR's top-``depth`` candidates, the reranker's score of each (and of
every API the extended list scored on demand), the classifier's single/multi-tool decision — and the
DPR embeddings of the APIs those lists hold (Algorithm 2's similarity), committed as a versioned
file beside the LLM caches. A fresh clone replays it in seconds instead of training for hours.

    path = cache_path(cfg, split)                       # data/score_cache/toolrerank/<profile>-<key>.json.gz
    save(path, cands, meta)                             # after the notebook computed every table
    cands = load(path, datasets, seen)                  # Candidates without a model; a score it lacks is an error

The key hashes every field that changes what the models output on the evaluated queries (the training
Setup, the split, the evaluation sizes and seed, the depth), so a changed configuration misses the
cache and trains (or is told to) instead of replaying stale scores.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
from pathlib import Path
from typing import Mapping

import numpy as np

from toolkit.data.contract import RetrievalDataset

from .pipeline import Candidates

VERSION = 1


class ScoreCacheMiss(KeyError):
    """The replayed candidates lack a score a method asked for (the cache was written by a run that
    never needed it): rerun with the models (``-p retrain=True``) to extend it."""


def cache_key(cfg, split) -> str:
    """Hash of what decides the cached numbers: training setup, split, evaluation sizes, seed, depth."""
    key = {"version": VERSION, "training": cfg.setup.training_params(), "depth": cfg.depth, "seed": cfg.eval_seed,
           "sizes": [cfg.subset_queries, cfg.dev_queries, cfg.transfer_queries],
           "split": {"train": len(split.train.queries), "heldout": [split.heldout_categories, split.heldout_tools]}}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]


def cache_path(cfg, split, root: Path | None = None) -> Path:
    from toolkit.paths import REPO
    root = root or REPO / "data" / "score_cache" / "toolrerank"
    return root / f"{cfg.profile}-{cache_key(cfg, split)}.json.gz"


def save(path: Path, cands: Mapping[str, Candidates], meta: dict | None = None) -> Path:
    """Write ``cands`` (every scored (query, API) pair, the classifier's decisions, the embeddings of the
    APIs in any candidate list, as float16) to ``path``; returns it."""
    sets = {}
    for name, c in cands.items():
        docs = sorted({d for q in c.ranked for d in c.ranked[q]} | {d for q in c.scores for d in c.scores[q]})
        pos = {d: i for i, d in enumerate(docs)}
        emb = np.stack([c.doc_emb[c.doc_index[d]] for d in docs]).astype(np.float16) if docs else np.zeros((0, 0))
        sets[name] = {
            "docs": docs,
            "ranked": {q: [pos[d] for d in c.ranked[q]] for q in c.dataset.queries},
            "scores": {q: {str(pos[d]): float(v) for d, v in c.scores[q].items()} for q in c.dataset.queries},
            "single": {q: bool(c.single_pred[q]) for q in c.dataset.queries},
            "emb": base64.b64encode(emb.tobytes()).decode(), "emb_shape": list(emb.shape)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt") as f:
        json.dump({"version": VERSION, "meta": meta or {}, "sets": sets}, f)
    tmp.replace(path)
    return path


def load(path: Path, datasets: Mapping[str, RetrievalDataset], seen: set[str]) -> dict[str, Candidates]:
    """:class:`Candidates` for every dataset in ``datasets`` from the cache at ``path``; no model is
    loaded. A dataset or query the cache does not hold is an error naming it."""
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    if data.get("version") != VERSION:
        raise ValueError(f"{path}: score cache version {data.get('version')}, this code reads {VERSION}; rerun "
                         "10_toolrerank with -p retrain=True to rewrite it")
    out = {}
    for name, ds in datasets.items():
        if name not in data["sets"]:
            raise KeyError(f"{path.name} has no scores for {name!r} (it holds {', '.join(data['sets'])}); "
                           "rerun with -p retrain=True")
        s = data["sets"][name]
        missing = [q for q in ds.queries if q not in s["ranked"]]
        if missing:
            raise KeyError(f"{path.name}: {len(missing)} queries of {name!r} are not cached (e.g. {missing[0]!r})")
        docs = s["docs"]
        emb = np.frombuffer(base64.b64decode(s["emb"]), dtype=np.float16).reshape(s["emb_shape"]).astype(np.float32)
        ranked = {q: [docs[i] for i in s["ranked"][q]] for q in ds.queries}
        scores = {q: {docs[int(i)]: v for i, v in s["scores"][q].items()} for q in ds.queries}

        def replay_score(text: str, ids: list[str], _name=name, _scores=scores, _ds=ds) -> dict[str, float]:
            q = next((q for q, x in _ds.query_texts().items() if x == text), None)
            have = _scores.get(q, {})
            lacking = [d for d in ids if d not in have]
            if lacking:
                raise ScoreCacheMiss(f"{_name}: no cached reranker score for query {q!r} and API {lacking[0]!r} "
                                     f"(and {len(lacking) - 1} more); rerun with -p retrain=True to extend the cache")
            return {d: have[d] for d in ids}

        out[name] = Candidates(ds, ranked, scores, set(seen), {q: s["single"][q] for q in ds.queries},
                               {d: i for i, d in enumerate(docs)}, emb, score_fn=replay_score,
                               timings={"replayed": True, "queries": len(ds.queries)})
    return out


def quantize(cands: Mapping[str, Candidates]) -> dict[str, Candidates]:
    """The candidates with their API embeddings rounded to float16, as the cache stores them: the run
    that writes the cache computes its tables on exactly what a replay will read, so both give the
    same numbers (Algorithm 2 compares similarities with thresholds)."""
    from dataclasses import replace
    return {name: replace(c, doc_emb=np.asarray(c.doc_emb, dtype=np.float16).astype(np.float32))
            for name, c in cands.items()}


def meta(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f).get("meta", {})
