"""Held-out draws: is a finding a property of ToolLens, or of the one random split it was seen on?

The seen/unseen split draws its held-out categories, held-out tools and dev set from a seed
(:func:`toolkit.toolrerank.splits.make_split`). For each seed of ``ExperimentConfig.draw_seeds`` the
split is drawn again, the three models are trained on it with the *draw setup* (the main Setup
changed by ``draw_setup``, smaller so that several draws fit the CPU budget), and one evaluation runs
on a seeded sample of each mirror subset:

- the premise behind m_s < m_u (§4.2): share of gold APIs in the DPR top 10, seen vs unseen subsets;
- Recall@5 (seen-avg, unseen-avg, all-avg) of DPR, Rerank-10/30/50 and ToolRerank, whose
  configuration comes from the same grid search on the draw's own dev sample (Table 2);
- the paper's claims (:func:`toolkit.toolrerank.analysis.claims`) on the draw's tables;
- Recall@5 per subset, and per held-out category on I1-Cat and I2-Cat (:func:`toolkit.toolrerank.tables.by_category`).

Each draw writes its own score cache (key: the draw's Setup, seed included), so the notebook replays
the draws without a model; a draw without a cache is trained only when asked (``train_missing``,
the smoke profile) and is otherwise reported as pending with the command that produces it.

    draws = [run_draw(cfg, s) for s in cfg.draw_seeds]          # None for a pending draw
    spread_table(done)                                           # per seed, mean, std, min, max
    claims_by_draw(done)                                         # claim x seed, stable or not
    heldout_table(cfg)                                           # each draw's held-out categories and their queries
    category_table(done); interval_table(done)                   # per held-out category; each subset's draw interval

With ``Setup.category_draw="block"`` (the fair profile) the draws hold out disjoint categories.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Sequence

import pandas as pd

from .splits import CATEGORY_SUBSETS, SEEN_SUBSETS, SUBSETS, UNSEEN_SUBSETS

RECALL_AVERAGES = ("seen-avg", "unseen-avg", "all-avg")
INTERVAL_STATS = ("mean", "std", "min", "max")


@dataclass
class Draw:
    seed: int
    coverage: dict[str, float]                  # seen / unseen: gold APIs in the DPR top 10
    recall: dict[str, dict[str, float]]         # method -> average -> Recall@5
    claims: dict[str, str]                      # claim -> verdict (toolkit.claims.VERDICTS)
    best: dict                                  # the grid search's ToolRerank configuration
    n_queries: dict[str, int]
    heldout: dict = field(default_factory=dict)  # held-out categories, number of held-out tools
    training: dict = field(default_factory=dict)
    replayed: bool = True
    dev_recall: dict[str, float] = field(default_factory=dict)   # method -> Recall@5 on the dev sample
    subset_recall: dict[str, dict[str, float]] = field(default_factory=dict)   # method -> subset -> Recall@5
    by_category: list[dict] = field(default_factory=list)   # tables.by_category rows: held-out category x subset
    claim_p: dict[str, str] = field(default_factory=dict)   # claim -> its paired p (evaluate_draw with per_query)


def draw_config(cfg, seed: int):
    """The :class:`~toolkit.toolrerank.config.ExperimentConfig` of the draw with ``seed``: the split
    and training seed set, the draw setup's changes applied, the draw's evaluation sizes."""
    return replace(cfg, setup=replace(cfg.setup, seed=seed, **dict(cfg.draw_setup)),
                   subset_queries=cfg.draw_subset_queries, dev_queries=cfg.draw_dev_queries, draw_seeds=())


def draw_command(cfg, seed: int) -> str:
    """The background command that trains one draw's models and writes its score cache."""
    return f"python scripts/train_toolrerank.py --profile {cfg.profile} --draw {seed}"


def evaluate_draw(seed: int, split, cands: dict, training: dict | None = None, replayed: bool = True,
                  per_query: dict | None = None) -> Draw:
    """Grid search on the draw's dev candidates, then coverage, Recall@5 rows and claims on the subsets. With
    ``per_query`` (a dict, filled as :func:`tables.table3` fills it) each claim also gets its paired p (``claim_p``)."""
    from . import analysis, tables
    from .pipeline import grid_search
    cands = dict(cands)
    dev = cands.pop("dev")
    best, _ = grid_search(dev, tables.GRID)
    t3 = tables.table3(cands, {}, best, per_query)
    t5, t6, t7 = (tables.table5(cands, best, per_query), tables.table6(cands, best, per_query),
                  tables.table7(cands, best, per_query))
    rows = analysis.claims(t3, t5, t6, t7, tables.fig1a(cands), per_query=per_query)
    verdicts = {r["claim"]: r["here"] for r in rows}
    coverage = {part: analysis.gold_in_top({k: cands[k] for k in names}, 10)
                for part, names in (("seen", SEEN_SUBSETS), ("unseen", UNSEEN_SUBSETS))}
    recall = {m: {a: t3[m][a]["recall@5"] for a in RECALL_AVERAGES} for m in tables.methods(best)}
    dev_recall = {m: v["dev"]["recall@5"] for m, v in
                  ((m, tables.values({"dev": dev}, x, metrics=["recall@5"], averages=())) for m, x in
                   tables.methods(best).items())}
    from .splits import category_counts
    subset_recall = {m: {s: t3[m][s]["recall@5"] for s in SUBSETS if s in t3[m]} for m in tables.methods(best)}
    return Draw(seed, coverage, recall, verdicts, dict(best.__dict__),
                {"dev": len(dev.dataset.queries), **{k: len(c.dataset.queries) for k, c in cands.items()}},
                {"categories": list(split.heldout_categories), "tools": len(split.heldout_tools),
                 "test_queries": category_counts(split)},
                training or {}, replayed, dev_recall, subset_recall,
                tables.by_category(cands, best, split.heldout_categories, CATEGORY_SUBSETS),
                {r["claim"]: r["p"] for r in rows if r.get("p")} if per_query is not None else {})


def run_draw(cfg, seed: int, train_missing: bool = False, log=None) -> Draw | None:
    """One draw: replay its score cache, or (``train_missing``) train its models and write the cache;
    ``None`` when it has no cache and may not train."""
    from . import score_cache
    dcfg = draw_config(cfg, seed)
    return run_config(dcfg, lambda split: score_cache.cache_path(dcfg, split, draw=seed), seed, train_missing, log,
                      {"draw_seed": seed})


def evaluate_config(dcfg, path_of, evaluate, train_missing: bool = False, log=None, meta: dict | None = None):
    """``evaluate(split, cands, training stats, replayed)`` of one configuration's candidates on its own split and
    sample (dev + the six subsets): replayed from the score cache at ``path_of(split)``, or (``train_missing``) from its
    trained models, the cache written after ``evaluate`` so it keeps the scores the evaluation asked for on demand;
    ``None`` when it has no cache and may not train."""
    from . import score_cache
    from .experiment import eval_sets, load_models, toollens_split, train_all
    from .pipeline import candidates
    from .splits import seen_tools
    split = toollens_split(dcfg.setup)
    sets = eval_sets(split, dcfg.subset_queries, dcfg.dev_queries, seed=dcfg.eval_seed)
    seen = seen_tools(split.train)
    path = path_of(split)
    if not path.is_file() and (main := score_cache.cache_path(dcfg, split)).is_file():
        path = main   # same key: the main run's models on the same samples (draw 0 is the main split)
    if path.is_file():
        return evaluate(split, score_cache.load(path, sets, seen), score_cache.meta(path).get("training", {}), True)
    if not train_missing:
        return None
    models = train_all(split, dcfg.setup, log=log)
    texts = {d: doc.text for ds in sets.values() for d, doc in ds.corpus.items()}
    make_retriever, reranker, classifier = load_models(models, texts, dcfg.setup)
    retr = make_retriever()
    cands = score_cache.quantize({name: candidates(ds, retr, reranker, seen, classifier, depth=dcfg.depth, log=None)
                                  for name, ds in sets.items()})
    result = evaluate(split, cands, models.stats, False)
    score_cache.save(path, cands, meta={"training": models.stats, **(meta or {})})   # incl. on-demand scores
    return result


def run_config(dcfg, path_of, seed: int, train_missing: bool = False, log=None, meta: dict | None = None
               ) -> Draw | None:
    """Evaluate one configuration (a draw, a reranker variant) on its own split and sample
    (:func:`evaluate_config` with :func:`evaluate_draw`); ``None`` when it has no cache and may not train.
    ``seed`` labels the result."""
    return evaluate_config(dcfg, path_of, lambda split, cands, training, replayed:
                           evaluate_draw(seed, split, cands, training, replayed=replayed), train_missing, log, meta)


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
    """Claim x seed (the verdict, :data:`toolkit.claims.VERDICTS`), and whether it is the same on every draw."""
    claims = list(dict.fromkeys(c for d in draws for c in d.claims))
    from .analysis import verdict_of
    df = pd.DataFrame({f"seed {d.seed}": [verdict_of({"here": d.claims[c]}) if c in d.claims else "n/a"
                                          for c in claims] for d in draws}, index=claims)
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


def heldout_table(cfg, seeds: Sequence[int] | None = None) -> pd.DataFrame:
    """Per draw (``cfg.draw_seeds``, trained or pending) and held-out category: the test queries of I1-Cat and I2-Cat
    the draw's split holds, and how many of them its evaluation sample takes (``draw_subset_queries`` per subset).
    Needs the data, not the models. ``attrs["shared"]``: categories held out by more than one draw."""
    from collections import Counter

    from .experiment import eval_sets, toollens_split
    from .splits import query_category
    rows = []
    for seed in (cfg.draw_seeds if seeds is None else seeds):
        dcfg = draw_config(cfg, seed)
        split = toollens_split(dcfg.setup)
        sets = eval_sets(split, dcfg.subset_queries, dcfg.dev_queries, seed=dcfg.eval_seed)
        for cat in split.heldout_categories:
            row = {"seed": seed, "category": cat}
            for s in CATEGORY_SUBSETS:
                row[f"{s} queries"] = sum(query_category(split.pool, q) == cat for q in split.subsets[s])
            for s in CATEGORY_SUBSETS:
                row[f"{s} evaluated"] = sum(query_category(sets[s], q) == cat for q in sets[s].queries)
            row["held-out tools (draw)"] = len(split.heldout_tools)
            rows.append(row)
    df = pd.DataFrame(rows).set_index(["seed", "category"]) if rows else pd.DataFrame()
    times = Counter(r["category"] for r in rows)
    df.attrs["shared"] = sorted(c for c, n in times.items() if n > 1)
    return df


def category_table(draws: Sequence[Draw]) -> pd.DataFrame:
    """Recall@5 (percent) of DPR, Rerank-10/30/50 and ToolRerank per draw, held-out category and subset (I1-Cat, I2-Cat
    and both pooled), with ``n`` the evaluated queries; rows with n = 0 have no values."""
    rows = [{"seed": d.seed, **r} for d in draws for r in d.by_category]
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows).set_index(["seed", "category", "subset"])
    methods = [c for c in df.columns if c != "n"]
    df[methods] = df[methods].astype(float) * 100
    df["n"] = df["n"].astype(int)
    return df


def interval_table(draws: Sequence[Draw], parts: Sequence[str] = tuple(SUBSETS) + RECALL_AVERAGES) -> pd.DataFrame:
    """The draw interval of each subset's and each average's Recall@5, per method: mean, sample standard deviation, min
    and max over the draws (percent; columns ``(part, stat)``). A part some draw lacks is left out."""
    if not draws:
        return pd.DataFrame()
    methods = list(draws[0].recall)

    def value(d, m, p):
        return d.recall.get(m, {}).get(p) if p in RECALL_AVERAGES else d.subset_recall.get(m, {}).get(p)
    data = {}
    for m in methods:
        row = {}
        for p in parts:
            vals = [value(d, m, p) for d in draws]
            if any(v is None for v in vals):
                continue
            vals = [v * 100 for v in vals]
            row.update({(p, "mean"): statistics.fmean(vals),
                        (p, "std"): statistics.stdev(vals) if len(vals) > 1 else float("nan"),
                        (p, "min"): min(vals), (p, "max"): max(vals)})
        data[m] = row
    df = pd.DataFrame.from_dict(data, orient="index")
    df.columns = pd.MultiIndex.from_tuples(df.columns, names=["part", "stat"])
    df.index.name = "method"
    return df


def interval_text(table: pd.DataFrame, digits: int = 1) -> pd.DataFrame:
    """:func:`interval_table` as one cell per (method, part): ``mean ± std [min–max]``."""
    parts = list(dict.fromkeys(p for p, _ in table.columns))
    f = f"{{:.{digits}f}}"

    def cell(r, p):
        sd = r[(p, "std")]
        spread = "" if sd != sd else f" ± {f.format(sd)}"
        return f"{f.format(r[(p, 'mean')])}{spread} [{f.format(r[(p, 'min')])}–{f.format(r[(p, 'max')])}]"
    return pd.DataFrame({p: [cell(r, p) for _, r in table.iterrows()] for p in parts}, index=table.index)


def record_categories(rec, draws: Sequence[Draw]) -> None:
    """Our own cells: Recall@5 per draw and held-out category (table ``draw categories``: dataset ``<category>
    <subset>``, metric ``seed_<s>``, n the evaluated queries) and each subset's draw interval (table ``draw intervals``:
    mean, std, min, max; the averages' are table ``draws``'s already)."""
    for d in draws:
        for r in d.by_category:
            for m in d.recall:
                if r.get(m) is None:
                    continue
                rec.add(paper="toolrerank", table="draw categories", dataset=f"{r['category']} {r['subset']}",
                        method=m, metric=f"seed_{d.seed}", value=r[m], ours_only=True, n_queries=r["n"],
                        note=f"held-out draw {d.seed}, held-out category {r['category']}")
    table = interval_table(draws, parts=tuple(SUBSETS))
    n = {p: sum(d.n_queries.get(p, 0) for d in draws) for p in SUBSETS}
    for m, row in table.iterrows():
        for (p, stat), value in row.items():
            if value != value:
                continue
            rec.add(paper="toolrerank", table="draw intervals", dataset=p, method=f"{m} Recall@5", metric=stat,
                    value=value / 100, ours_only=True, n_queries=n[p],
                    note=f"over held-out draws {', '.join(str(d.seed) for d in draws)}")
