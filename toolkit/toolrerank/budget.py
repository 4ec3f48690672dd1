"""The reranker's training budget: is the fair run's verdict the method, or the few pairs its reranker saw?

The standard profile's reranker *is* the chosen screen variant (:mod:`toolkit.toolrerank.variants`): 2,000 training
queries, one gold API, one hard negative and one random library negative each, 6,000 pairs in one epoch, where the
first runs' reranker saw about 73k pairs over two epochs. The budget control retrains that same reranker (same start,
negatives and schedule; ``ExperimentConfig.budget_setup`` changes ``ce_*`` fields only, by default ``ce_queries=0``:
every training query) and keeps everything else: the split, the DPR (its committed vectors), the classifier, and the
main run's own dev and test samples. So every query pairs with the main run's, and the table reads, per method
(DPR, Rerank-10/30/50, ToolRerank with the configuration of its own dev grid search):

    diff = mean_s Recall@5(full budget) - mean_s Recall@5(main budget)     (macro average over the subsets s)

with the two-sided paired randomization p of :func:`toolkit.significance.macro_paired_randomization` (per-query sign
flips). DPR's row is a check of the pairing: the same retriever on the same queries must give diff 0. The paper's
claims are judged again at the full budget (:func:`toolkit.toolrerank.draws.evaluate_draw`, with their p).

    run = run_budget(cfg)                          # None: no score cache yet (budget_command(cfg) writes it)
    comparison_table(main_per_query, run.per_query)
    claims_table(main_claims, run.draw)
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from toolkit.significance import p_label

from .splits import AVERAGES

ROLE = "budget"
METHODS = ("DPR", "Rerank-10", "Rerank-30", "Rerank-50", "ToolRerank")
PARTS = ("seen-avg", "unseen-avg", "all-avg")


@dataclass
class BudgetRun:
    draw: object          # toolkit.toolrerank.draws.Draw: recall, claims (with claim_p), best, training
    per_query: dict       # {row label: {subset: {qid: Recall@5}}}, as tables.table3 fills it


def budget_config(cfg):
    """The main configuration with ``budget_setup`` applied to its Setup: the same split and evaluation sizes, no
    draws, variants or alone table of its own."""
    if not cfg.budget_setup:
        raise ValueError("10_toolrerank: budget_setup is empty, so there is no budget control to run; "
                         "pass e.g. -p budget_setup='{\"ce_queries\": 0}'")
    return replace(cfg, setup=replace(cfg.setup, **dict(cfg.budget_setup)), draw_seeds=(), variants=(),
                   alone_queries=0)


def budget_command(cfg) -> str:
    return f"python scripts/train_toolrerank.py --profile {cfg.profile} --budget"


def run_budget(cfg, train_missing: bool = False, log=None) -> BudgetRun | None:
    """The budget control replayed from its score cache, or (``train_missing``) trained and scored; else None."""
    from . import score_cache
    from .draws import evaluate_config, evaluate_draw
    bcfg = budget_config(cfg)

    def evaluate(split, cands, training, replayed):
        per_query: dict = {}
        return BudgetRun(evaluate_draw(bcfg.setup.seed, split, cands, training, replayed, per_query=per_query),
                         per_query)

    return evaluate_config(bcfg, lambda split: score_cache.cache_path(bcfg, split, role=ROLE), evaluate,
                           train_missing, log, {"budget_setup": dict(cfg.budget_setup)})


def pairs_of(training: dict) -> int | None:
    return (training.get("reranker") or {}).get("train_pairs")


def comparison_table(main: dict, full: dict, methods=METHODS, parts=PARTS) -> pd.DataFrame:
    """Rows: methods; columns per average ``part``: Recall@5 (percent) at the main and the full budget, the difference
    (points) and its paired p. ``main`` / ``full``: ``{row label: {subset: {qid: Recall@5}}}`` on the same queries."""
    from toolkit.significance import compared
    rows = []
    for m in methods:
        if m not in main or m not in full:
            raise KeyError(f"budget.comparison_table: no per-query Recall@5 of {m!r} in both runs")
        row = {"method": m}
        for part in parts:
            groups = AVERAGES[part]
            t = compared(m, {g: main[m][g] for g in groups}, {g: full[m][g] for g in groups})
            row.update({f"{part} main": 100 * t["mean_a"], f"{part} full": 100 * t["mean_b"],
                        f"{part} diff": 100 * (t["mean_b"] - t["mean_a"]), f"{part} p": t["p"]})
        row["n"] = t["n"]
        rows.append(row)
    return pd.DataFrame(rows).set_index("method")


def versus_dpr(per_query: dict, methods=METHODS[1:], part: str = "all-avg") -> pd.DataFrame:
    """At one budget: each reranking method minus DPR (Recall@5 points, ``part``) and its paired p."""
    from toolkit.significance import compared
    groups = AVERAGES[part]
    rows = []
    for m in methods:
        t = compared(m, {g: per_query[m][g] for g in groups}, {g: per_query["DPR"][g] for g in groups})
        rows.append({"method": m, f"{part} minus DPR": 100 * t["diff"], "p": t["p"], "n": t["n"]})
    return pd.DataFrame(rows).set_index("method")


def claims_table(main_claims: list[dict], draw) -> pd.DataFrame:
    """claim -> verdict and p at the main budget (the notebook's claims rows) and at the full budget."""
    from .analysis import verdict_of
    rows = [{"claim": r["claim"], "main budget": verdict_of(r), "main p": r.get("p", ""),
             "full budget": draw.claims.get(r["claim"], "n/a"), "full p": draw.claim_p.get(r["claim"], "")}
            for r in main_claims]
    return pd.DataFrame(rows).set_index("claim")


def record_budget(rec, table: pd.DataFrame, pairs: int | None, budget_setup: dict) -> None:
    """Our own cells (table ``budget``): each method's Recall@5 at the full budget, its difference to the main budget
    and that difference's p, per average (fractions)."""
    note = f"reranker retrained {describe(budget_setup)} ({pairs} pairs) vs the main run's; the same queries"
    for m, row in table.iterrows():
        for part in PARTS:
            for what, metric, scale in (("full", "recall@5_full", 100), ("diff", "recall@5_diff", 100),
                                        ("p", "p_full_vs_main", 1)):
                rec.add(paper="toolrerank", table="budget", dataset=part, method=m, metric=metric,
                        value=float(row[f"{part} {what}"]) / scale, n_queries=int(row["n"]), ours_only=True, note=note)


def describe(budget_setup: dict) -> str:
    """``budget_setup`` in words: "on every training query", or its fields."""
    if dict(budget_setup) == {"ce_queries": 0}:
        return "on every training query"
    return "with " + ", ".join(f"{k}={v}" for k, v in budget_setup.items())


def reading(table: pd.DataFrame, vs_dpr: pd.DataFrame, pairs: int | None, main_pairs: int | None,
            alpha: float = 0.05, part: str = "all-avg", budget_setup: dict | None = None) -> str:
    """The notebook's sentence on the budget: how far the full budget moves Rerank-10 and ToolRerank, how much of
    Rerank-10's gap to DPR it closes, and the verdict it leaves on "reranking helps" (from the numbers, p at ``alpha``)."""
    r10, dpr = table.loc["Rerank-10"], table.loc["DPR"]
    gap_main = r10[f"{part} main"] - dpr[f"{part} main"]
    closed = (r10[f"{part} diff"] / -gap_main) if gap_main < 0 else float("nan")
    d10 = vs_dpr.loc["Rerank-10"]
    diff10, p10 = d10[f"{part} minus DPR"], d10["p"]
    if p10 >= alpha:
        verdict = "Rerank-10 is within noise of DPR at the full budget: the budget explains its loss"
    elif diff10 > 0:
        verdict = "reranking helps at the full budget: Rerank-10's loss was its budget"
    else:
        verdict = "Rerank-10's loss to DPR remains at the full budget: the budget does not explain it"
    below = [m for m in vs_dpr.index if m != "Rerank-10" and vs_dpr.loc[m, "p"] < alpha
             and vs_dpr.loc[m, f"{part} minus DPR"] < 0]
    if below:
        verdict += f"; {', '.join(below)} still lose to DPR at p < {alpha}"
    moves = "; ".join(f"{m} {table.loc[m, f'{part} main']:.1f} → {table.loc[m, f'{part} full']:.1f} "
                      f"({table.loc[m, f'{part} diff']:+.1f}, {p_label(table.loc[m, f'{part} p'])})"
                      for m in table.index if m != "DPR")
    versus = "; ".join(f"{m} {vs_dpr.loc[m, f'{part} minus DPR']:+.1f} ({p_label(vs_dpr.loc[m, 'p'])})"
                       for m in vs_dpr.index)
    share = f", closing {100 * closed:.0f} % of Rerank-10's gap to DPR" if closed == closed else ""
    return (f"**The reranker's budget.** The same reranker retrained {describe(budget_setup or {'ce_queries': 0})} "
            f"({pairs or 0:,} pairs against this run's {main_pairs or 0:,}; n = {int(r10['n'])} test queries, paired) "
            f"moves {part} Recall@5 {moves}{share} (DPR {dpr[f'{part} diff']:+.1f}: the pairing check). At the full "
            f"budget, minus DPR: {versus}. So {verdict}.")
