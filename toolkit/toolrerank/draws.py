"""Held-out draws: is a finding a property of ToolLens, or of the one random split it was seen on?

The seen/unseen split draws its held-out categories, held-out tools and dev set from a seed
(:func:`toolkit.toolrerank.splits.make_split`). For each seed of ``ExperimentConfig.draw_seeds`` the
split is drawn again, the three models are trained on it with the *draw setup* (the main Setup
changed by ``draw_setup``, smaller so that several draws fit the CPU budget), and one evaluation runs
on a seeded sample of each mirror subset:

- the premise behind m_s < m_u (§4.2): share of gold APIs in the DPR top 10, seen vs unseen subsets;
- Recall@5 (seen-avg, unseen-avg, all-avg) of DPR, Rerank-10/30/50 and ToolRerank, whose
  configuration comes from the same grid search on the draw's own dev sample (Table 2);
- the paper's claims (:func:`toolkit.toolrerank.analysis.claims`) on the draw's tables.

Each draw writes its own score cache (key: the draw's Setup, seed included), so the notebook replays
the draws without a model; a draw without a cache is trained only when asked (``train_missing``,
the smoke profile) and is otherwise reported as pending with the command that produces it.

    draws = [run_draw(cfg, s) for s in cfg.draw_seeds]          # None for a pending draw
    spread_table(done)                                           # per seed, mean, std, min, max
    claims_by_draw(done)                                         # claim x seed, stable or not
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Sequence

import pandas as pd

from .splits import SEEN_SUBSETS, UNSEEN_SUBSETS

RECALL_AVERAGES = ("seen-avg", "unseen-avg", "all-avg")


@dataclass
class Draw:
    seed: int
    coverage: dict[str, float]                  # seen / unseen: gold APIs in the DPR top 10
    recall: dict[str, dict[str, float]]         # method -> average -> Recall@5
    claims: dict[str, str]                      # claim -> "yes" / "no"
    best: dict                                  # the grid search's ToolRerank configuration
    n_queries: dict[str, int]
    heldout: dict = field(default_factory=dict)  # held-out categories, number of held-out tools
    training: dict = field(default_factory=dict)
    replayed: bool = True
    dev_recall: dict[str, float] = field(default_factory=dict)   # method -> Recall@5 on the dev sample


def draw_config(cfg, seed: int):
    """The :class:`~toolkit.toolrerank.config.ExperimentConfig` of the draw with ``seed``: the split
    and training seed set, the draw setup's changes applied, the draw's evaluation sizes."""
    return replace(cfg, setup=replace(cfg.setup, seed=seed, **dict(cfg.draw_setup)),
                   subset_queries=cfg.draw_subset_queries, dev_queries=cfg.draw_dev_queries, draw_seeds=())


def draw_command(cfg, seed: int) -> str:
    """The background command that trains one draw's models and writes its score cache."""
    return f"python scripts/train_toolrerank.py --profile {cfg.profile} --draw {seed}"


def evaluate_draw(seed: int, split, cands: dict, training: dict | None = None, replayed: bool = True) -> Draw:
    """Grid search on the draw's dev candidates, then coverage, Recall@5 rows and claims on the subsets."""
    from . import analysis, tables
    from .pipeline import grid_search
    cands = dict(cands)
    dev = cands.pop("dev")
    best, _ = grid_search(dev, tables.GRID)
    t3 = tables.table3(cands, {}, best)
    t5, t6, t7 = tables.table5(cands, best), tables.table6(cands, best), tables.table7(cands, best)
    verdicts = {r["claim"]: r["holds"] for r in analysis.claims(t3, t5, t6, t7, tables.fig1a(cands))}
    coverage = {part: analysis.gold_in_top({k: cands[k] for k in names}, 10)
                for part, names in (("seen", SEEN_SUBSETS), ("unseen", UNSEEN_SUBSETS))}
    recall = {m: {a: t3[m][a]["recall@5"] for a in RECALL_AVERAGES} for m in tables.methods(best)}
    dev_recall = {m: v["dev"]["recall@5"] for m, v in
                  ((m, tables.values({"dev": dev}, x, metrics=["recall@5"], averages=())) for m, x in
                   tables.methods(best).items())}
    return Draw(seed, coverage, recall, verdicts, dict(best.__dict__),
                {"dev": len(dev.dataset.queries), **{k: len(c.dataset.queries) for k, c in cands.items()}},
                {"categories": list(split.heldout_categories), "tools": len(split.heldout_tools)},
                training or {}, replayed, dev_recall)


def run_draw(cfg, seed: int, train_missing: bool = False, log=None) -> Draw | None:
    """One draw: replay its score cache, or (``train_missing``) train its models and write the cache;
    ``None`` when it has no cache and may not train."""
    from . import score_cache
    dcfg = draw_config(cfg, seed)
    return run_config(dcfg, lambda split: score_cache.cache_path(dcfg, split, draw=seed), seed, train_missing, log,
                      {"draw_seed": seed})


def run_config(dcfg, path_of, seed: int, train_missing: bool = False, log=None, meta: dict | None = None
               ) -> Draw | None:
    """Evaluate one configuration (a draw, a reranker variant) on its own split and sample: replay the score cache
    at ``path_of(split)``, or (``train_missing``) train its models and write that cache; ``None`` when it has no
    cache and may not train. ``seed`` labels the result."""
    from . import score_cache
    from .experiment import eval_sets, load_models, toollens_split, train_all
    from .pipeline import candidates
    from .splits import seen_tools
    split = toollens_split(dcfg.setup)
    sets = eval_sets(split, dcfg.subset_queries, dcfg.dev_queries, seed=dcfg.eval_seed)
    seen = seen_tools(split.train)
    path = path_of(split)
    if path.is_file():
        return evaluate_draw(seed, split, score_cache.load(path, sets, seen),
                             score_cache.meta(path).get("training", {}), replayed=True)
    if not train_missing:
        return None
    models = train_all(split, dcfg.setup, log=log)
    texts = {d: doc.text for ds in sets.values() for d, doc in ds.corpus.items()}
    make_retriever, reranker, classifier = load_models(models, texts, dcfg.setup)
    retr = make_retriever()
    cands = score_cache.quantize({name: candidates(ds, retr, reranker, seen, classifier, depth=dcfg.depth, log=None)
                                  for name, ds in sets.items()})
    draw = evaluate_draw(seed, split, cands, models.stats, replayed=False)
    score_cache.save(path, cands, meta={"training": models.stats, **(meta or {})})   # incl. on-demand scores
    return draw


def spread_table(draws: Sequence[Draw]) -> pd.DataFrame:
    """Rows: the coverage premise and each method's Recall@5 averages; columns: one per seed, then
    mean, sample standard deviation, min and max over the draws (percent, unrounded)."""
    rows = {}
    for part in ("seen", "unseen"):
        rows[("gold in DPR top 10", part)] = {d.seed: d.coverage[part] for d in draws}
    rows[("gold in DPR top 10", "seen - unseen")] = {d.seed: d.coverage["seen"] - d.coverage["unseen"] for d in draws}
    for method in draws[0].recall if draws else []:
        for avg in RECALL_AVERAGES:
            rows[(f"{method} Recall@5", avg)] = {d.seed: d.recall[method][avg] for d in draws}
    df = pd.DataFrame.from_dict(rows, orient="index") * 100
    df.columns = [f"seed {c}" for c in df.columns]
    vals = df.to_numpy()
    df["mean"] = vals.mean(axis=1)
    df["std"] = [statistics.stdev(r) if len(r) > 1 else float("nan") for r in vals.tolist()]
    df["min"], df["max"] = vals.min(axis=1), vals.max(axis=1)
    df.index = pd.MultiIndex.from_tuples(df.index, names=["quantity", "part"])
    return df


def claims_by_draw(draws: Sequence[Draw]) -> pd.DataFrame:
    """Claim x seed ("yes"/"no"), and whether the verdict is the same on every draw."""
    claims = list(dict.fromkeys(c for d in draws for c in d.claims))
    df = pd.DataFrame({f"seed {d.seed}": [d.claims.get(c, "n/a") for c in claims] for d in draws}, index=claims)
    df.index.name = "claim"
    df["stable"] = ["yes" if len(set(r)) == 1 else "no" for r in df.to_numpy().tolist()]
    return df


def record_draws(rec, draws: Sequence[Draw]) -> None:
    """Our own cells (the paper has no counterpart): per seed and over the draws, the coverage premise
    and the Recall@5 averages, under table ``draws``."""
    table = spread_table(draws)
    n = {d.seed: sum(v for k, v in d.n_queries.items() if k != "dev") for d in draws}
    for (quantity, part), row in table.iterrows():
        for col, value in row.items():
            if value != value:
                continue
            seed = int(col.split()[1]) if col.startswith("seed ") else None
            rec.add(paper="toolrerank", table="draws", dataset=part, method=quantity,
                    metric=col.replace(" ", "_"), value=value / 100, ours_only=True,
                    n_queries=n.get(seed) if seed is not None else sum(n.values()),
                    note=f"held-out draw{'' if seed is not None else 's'} "
                         f"{seed if seed is not None else ', '.join(str(d.seed) for d in draws)}")
