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

VERSION = 2       # the file format: 2 = scores as float32 arrays, each distinct API embedding stored once (1: JSON
                  # floats, embeddings per set; still read). 3.4 MB instead of 6.4 for the standard run's 3,098 queries
KEY_VERSION = 1   # what the cached numbers mean (in the cache key); a new file format alone keeps the key


class ScoreCacheMiss(KeyError):
    """The replayed candidates lack a score a method asked for (the cache was written by a run that
    never needed it): rerun with the models (``-p retrain=True``) to extend it."""


def cache_key(cfg, split) -> str:
    """Hash of what decides the cached numbers: training setup, split, evaluation sizes, seed, depth."""
    key = {"version": KEY_VERSION, "training": cfg.setup.training_params(), "depth": cfg.depth, "seed": cfg.eval_seed,
           "sizes": [cfg.subset_queries, cfg.dev_queries, cfg.transfer_queries],
           "split": {"train": len(split.train.queries), "heldout": [split.heldout_categories, split.heldout_tools]}}
    if getattr(cfg, "transfer_corpus", "pool") != "pool":      # added later: the pool keeps the keys written before
        key["transfer_corpus"] = cfg.transfer_corpus
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]


def cache_path(cfg, split, root: Path | None = None, draw: int | None = None, role: str | None = None) -> Path:
    """``<profile>-<key>.json.gz`` for the main run, ``<profile>-draw<seed>-<key>.json.gz`` for a held-out draw,
    ``<profile>-<role>-<key>.json.gz`` for another role (a reranker variant): a draw or variant whose setup and sizes
    equal the main run's (smoke) has the main run's key, and the two must not write one file (a run killed between
    them left a cache without the main run's sets)."""
    from toolkit.paths import REPO
    root = root or REPO / "data" / "score_cache" / "toolrerank"
    if draw is not None and role:
        raise ValueError("cache_path: a draw or a role, not both")
    role = f"{role}-" if role else "" if draw is None else f"draw{int(draw)}-"
    return root / f"{cfg.profile}-{role}{cache_key(cfg, split)}.json.gz"


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def _unb64(text: str, dtype, shape=None) -> np.ndarray:
    a = np.frombuffer(base64.b64decode(text), dtype=dtype)
    return a.reshape(shape) if shape is not None else a


def _intern(rows, table: list, row_of: dict) -> list[int]:
    """Each float16 row's index in ``table``, appending the rows not seen before (``row_of``: bytes -> index)."""
    out = []
    for row in rows:
        out.append(row_of.setdefault(row.tobytes(), len(table)))
        if out[-1] == len(table):
            table.append(row)
    return out


def _pack_scores(values: list[float]) -> dict:
    """Scores as one array: float32 when that is exact (a reranker's outputs), float64 otherwise."""
    a = np.array(values, dtype=np.float64)
    dtype = np.float32 if np.array_equal(a.astype(np.float32).astype(np.float64), a) else np.float64
    return {"score_values": _b64(a.astype(dtype)), "score_dtype": np.dtype(dtype).name}


def _file(meta: dict, table: list, sets: dict) -> dict:
    emb = np.stack(table) if table else np.zeros((0, 0), dtype=np.float16)
    return {"version": VERSION, "meta": meta, "emb": _b64(emb), "emb_shape": list(emb.shape), "sets": sets}


def save(path: Path, cands: Mapping[str, Candidates], meta: dict | None = None) -> Path:
    """Write ``cands`` (every scored (query, API) pair, the classifier's decisions, the embeddings of the
    APIs in any candidate list, as float16) to ``path``; returns it.

    Per set: ``docs`` (the API ids it needs), ``ranked`` (positions in ``docs``), ``score_docs`` (per query,
    the positions of the APIs it has a score for) and ``score_values`` (those scores in the same order, one
    float32 array: the reranker's outputs are float32, so nothing is lost; float64 if any value is not),
    ``single`` and ``emb_rows`` (each doc's row of the file's one embedding table ``emb``: the seven ToolLens
    sets share one 464-API corpus, so most rows repeat)."""
    table, row_of, sets = [], {}, {}
    for name, c in cands.items():
        docs = sorted({d for q in c.ranked for d in c.ranked[q]} | {d for q in c.scores for d in c.scores[q]})
        pos = {d: i for i, d in enumerate(docs)}
        rows = (np.asarray(c.doc_emb[c.doc_index[d]], dtype=np.float16) for d in docs)
        qs = list(c.dataset.queries)
        sets[name] = {
            "docs": docs,
            "ranked": {q: [pos[d] for d in c.ranked[q]] for q in qs},
            "score_docs": {q: [pos[d] for d in c.scores[q]] for q in qs},
            **_pack_scores([v for q in qs for v in c.scores[q].values()]),
            "single": {q: bool(c.single_pred[q]) for q in qs},
            "emb_rows": _intern(rows, table, row_of)}
    write_file(path, _file(meta or {}, table, sets))
    return path


def write_file(path: Path, data: dict) -> None:
    """Atomic write of a score cache's JSON (gzip)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt") as f:
        json.dump(data, f)
    tmp.replace(path)


def upgrade(data: dict, path: Path | str = "score cache") -> dict:
    """A version-1 file's contents in version 2's layout (lossless: version 1 held float32 scores as JSON
    floats and float16 embeddings per set); version 2 is returned as it is."""
    version = data.get("version")
    if version == VERSION:
        return data
    if version != 1:
        raise ValueError(f"{path}: score cache version {version}, this code reads 1 and {VERSION}; rerun "
                         "10_toolrerank with -p retrain=True to rewrite it")
    table, row_of, sets = [], {}, {}
    for name, s in data["sets"].items():
        sets[name] = {"docs": s["docs"], "ranked": s["ranked"],
                      "score_docs": {q: [int(i) for i in s["scores"][q]] for q in s["ranked"]},
                      **_pack_scores([v for q in s["ranked"] for v in s["scores"][q].values()]),
                      "single": s["single"], "emb_rows": _intern(_unb64(s["emb"], np.float16, s["emb_shape"]), table, row_of)}
    return _file(data.get("meta", {}), table, sets)


def load(path: Path, datasets: Mapping[str, RetrievalDataset], seen: set[str]) -> dict[str, Candidates]:
    """:class:`Candidates` for every dataset in ``datasets`` from the cache at ``path``; no model is
    loaded. A dataset or query the cache does not hold, or a damaged file, is an error naming it."""
    from toolkit import provenance
    try:
        with gzip.open(path, "rt") as f:
            data = upgrade(json.load(f), path)
        if not isinstance(data.get("sets"), dict) or "emb" not in data:
            raise ValueError("it lacks its 'sets' or 'emb' field")
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as e:   # gzip.BadGzipFile is an OSError
        raise ValueError(f"{path}: the score cache is damaged ({type(e).__name__}: {e}); restore the committed file "
                         f"(git checkout -- {path}) or rebuild it with -p retrain=True") from e
    provenance.record_input(path, records=sum(len(s.get("ranked", {})) for s in data["sets"].values()),
                            kind="ToolRerank score cache")
    table = _unb64(data["emb"], np.float16, data["emb_shape"])
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
        emb = table[np.asarray(s["emb_rows"], dtype=np.int64)].astype(np.float32) if docs else np.zeros((0, 0))
        values = _unb64(s["score_values"], np.dtype(s["score_dtype"])).astype(np.float64).tolist()
        stored, at = {}, 0
        for q, positions in s["score_docs"].items():   # the values' order: queries, then positions, as saved
            stored[q] = {docs[i]: v for i, v in zip(positions, values[at:at + len(positions)])}
            at += len(positions)
        ranked = {q: [docs[i] for i in s["ranked"][q]] for q in ds.queries}
        scores = {q: stored[q] for q in ds.queries}

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
