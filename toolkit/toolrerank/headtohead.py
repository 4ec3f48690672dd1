"""ToolRerank on notebook 50's common set: the standard models of notebook 10 over the head-to-head's
corpora (the 16,427-API library for I1/I2/I3, UltraTool's tools), scored once and replayed.

    python scripts/train_toolrerank.py --profile standard --headtohead      # writes the score cache below

The file is a ToolRerank score cache (:mod:`toolkit.toolrerank.score_cache`) named ``<profile>-headtohead-<key>``,
``key`` the main run's (training setup, split, sizes, depth): it holds the DPR top ``depth``, the reranker's scores and
the classifier's decisions for every query of :func:`toolkit.methods.benchmark.benchmark_sets`. ToolRerank's
configuration (m_s, m_u, τ_s, τ_m, n) is the one notebook 10's grid search picks on its dev set, recomputed here from
the main score cache (the same dev candidates, so the same pick). "Seen" tools are those of the ToolLens training
queries: on the library nearly every gold tool is unseen, on UltraTool every one is.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping

from toolkit.data.contract import RetrievalDataset

ROLE = "headtohead"


def cache_path(cfg) -> Path:
    from . import score_cache
    from .experiment import toollens_split
    return score_cache.cache_path(cfg, toollens_split(cfg.setup), role=ROLE)


def command(cfg) -> str:
    return f"python scripts/train_toolrerank.py --profile {cfg.profile} --headtohead"


def score(cfg, sets: Mapping[str, RetrievalDataset], log=print) -> Path:
    """Load (or train, if gone) the main run's three models, build the candidates of every set (or read them from
    an existing file), score what ToolRerank's extended API lists ask for at the dev pick, and save them all."""
    from dataclasses import replace

    from . import score_cache
    from .experiment import load_models, toollens_split, train_all
    from .pipeline import candidates, method_lists
    from .splits import seen_tools
    split = toollens_split(cfg.setup)
    seen = seen_tools(split.train)
    best = best_config(cfg)
    t0 = time.perf_counter()
    models = train_all(split, cfg.setup, log=log)
    texts = {d: doc.text for ds in sets.values() for d, doc in ds.corpus.items()}
    make_retriever, reranker, classifier = load_models(models, texts, cfg.setup)
    path = cache_path(cfg)
    old = score_cache.meta(path) if path.is_file() else {}
    if path.is_file():        # a file written before the extended lists were scored: keep its candidates
        cands, retrievers = {}, {}
        for n, c in score_cache.load(path, sets, seen).items():   # the whole corpus's embeddings: extended APIs
            ids, txt = sets[n].doc_texts()
            retr = retrievers.get(tuple(ids))
            if retr is None:
                retr = retrievers[tuple(ids)] = make_retriever()
                retr.index(ids, txt)
            cands[n] = score_cache.quantize({n: replace(
                c, score_fn=reranker.score, doc_index={d: i for i, d in enumerate(retr.doc_ids)},
                doc_emb=retr.doc_emb)})[n]
        timings = old.get("timings", {})
    else:
        cands, retrievers = {}, {}
        for name, ds in sets.items():     # one retriever per corpus: the library's sets share its index
            retr = retrievers.setdefault(tuple(sorted(ds.corpus)), make_retriever())
            cands[name] = score_cache.quantize(
                {name: candidates(ds, retr, reranker, seen, classifier, depth=cfg.depth, log=log)})[name]
        timings = {n: c.timings for n, c in cands.items()}
    for c in cands.values():          # the extended API lists score extra pairs on demand (into c.scores)
        method_lists(c, best)
    seconds = time.perf_counter() - t0 + old.get("seconds", 0.0)
    score_cache.save(path, cands, meta={"training": models.stats, "seconds": round(seconds, 1), "timings": timings,
                                        "best": best.__dict__, "sets": {n: len(ds.queries) for n, ds in sets.items()},
                                        "written": time.strftime("%Y-%m-%d")})
    return path


def best_config(cfg):
    """ToolRerank's configuration as notebook 10 picks it: the grid search over the main score cache's dev set."""
    from . import score_cache, tables
    from .experiment import eval_sets, toollens_split
    from .pipeline import grid_search
    from .splits import seen_tools
    split = toollens_split(cfg.setup)
    main = score_cache.cache_path(cfg, split)
    if not main.is_file():
        raise FileNotFoundError(f"{main.name}: notebook 10's score cache for this configuration is not there; run "
                                f"python -m toolkit run 10_toolrerank --profile {cfg.profile} first")
    dev = eval_sets(split, cfg.subset_queries, cfg.dev_queries, seed=cfg.eval_seed)["dev"]
    cands = score_cache.load(main, {"dev": dev}, seen_tools(split.train))["dev"]
    best, _ = grid_search(cands, tables.GRID)
    return best


def load(cfg, sets: Mapping[str, RetrievalDataset]):
    """The replayed candidates of ``sets`` (a missing file: FileNotFoundError naming the command)."""
    from . import score_cache
    from .experiment import toollens_split
    from .splits import seen_tools
    path = cache_path(cfg)
    if not path.is_file():
        raise FileNotFoundError(f"{path.name}: no ToolRerank scores for the head-to-head sets; write them with "
                                f"{command(cfg)}")
    return score_cache.load(path, sets, seen_tools(toollens_split(cfg.setup).train)), score_cache.meta(path)
