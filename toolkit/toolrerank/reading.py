"""Notebook 10's reading: prose whose numbers are looked up in the run (moved out of the notebook, so the
notebook shows one call and its prose, in Lab and in any renderer)."""
from __future__ import annotations

from toolkit.report import Reading
from toolkit.significance import p_label
from toolkit.toolrerank import analysis
from toolkit.toolrerank import budget as budget_mod
from toolkit.toolrerank.splits import SEEN_SUBSETS, UNSEEN_SUBSETS


def reading(*, training_stats, draws_pending, budget_rows, budget_pending, runs_compared, variant_rows,
                variants_pending, alone_table, alone_pending, before_after, rec, fig_rows, diag, weak_runs, spread,
                category_rows, tr, drawn, claims_stability, setup, best, acc, interval_rows, cfg, split, tt,
                budget_vs_dpr=None, budget_pairs=None, main_pairs=None, heldout_by_draw=None) -> str:
    """The reading of notebook 10 (markdown), formatted from the run: the setting, each claim with its numbers, the
    held-out draws, the budget, the categories, the weak setup, the dev set, the variants, the reranker alone,
    before and after. Each parameter is the notebook variable of that name (``toolkit.report.reading_cell``)."""
    R = Reading.from_cells(rec.cells, "toolrerank", tail=("recall@5",))
    # each verdict with the p-values of the paired comparisons it rests on (claims table above)
    verdict = {r["claim"].split(" (")[0]: r["here"] + (f" ({r['p']})" if r.get("p") else "") for r in rec.extra["claims"]}
    fig = {(r["tools"], r["m"]): r["recall@5"] for r in fig_rows}
    best_m = {part: max((m for (p_, m) in fig if p_ == part and m != "dpr"), key=lambda m: fig[(part, m)])
              for part in ("seen", "unseen")}
    unseen_rows = diag.loc[UNSEEN_SUBSETS]
    seen_rows = diag.loc[SEEN_SUBSETS]


    def span(col, rows, fmt=".2f"):
        return f"{rows[col].min():{fmt}}–{rows[col].max():{fmt}}" if col in rows else "n/a"


    converged = analysis.convergence(training_stats)
    epochs_kept = ", ".join(
        f"{name} {st.get('epochs', '?')}/{st.get('best_epoch') or st.get('epochs', '?')}"
        for name, st in training_stats.items()) or "n/a"
    # the negative pool, compared under the earlier weak setup (1 epoch, one gold API per query, one negative per query
    # mined by the off-the-shelf encoder; 100 queries per subset): two kept runs that differ only in ce_neg_pool
    pool_runs = {}
    for pool_, _r in weak_runs.items():
        _i1 = next(r for r in _r["seen_bias"] if r["subset"] == "I1-Tool")
        pool_runs[pool_] = {"toolrerank": next(c["value"] for c in _r["cells"] if (c["table"], c["dataset"], c["method"],
                            c["metric"]) == ("3", "all-avg", "ToolRerank", "recall@5")),
                            "gold": _i1["score gold"], "other": _i1["score other (seen tool)"]}
    if len(pool_runs) == 2:
        a_, s_ = pool_runs["all"], pool_runs["seen"]
        negatives_text = (f"**Negatives matter.** Under the earlier weak setup (`results/10_toolrerank/weak_setup_pool_*.json`: "
                          f"one epoch, one gold API and one negative per query mined by the off-the-shelf encoder, 100 queries "
                          f"per subset; the two runs differ only in `ce_neg_pool`), negatives drawn from the whole library "
                          f"make every held-out API a training negative that is never a positive: the reranker scores I1-Tool's "
                          f"gold APIs {a_['gold']:.2f} against {a_['other']:.2f} for wrong seen-tool APIs (seen-tool pool: "
                          f"{s_['gold']:.2f} vs {s_['other']:.2f}), and ToolRerank all-avg Recall@5 is {100 * a_['toolrerank']:.1f} "
                          f"against {100 * s_['toolrerank']:.1f} with the seen-tool pool.")
    else:
        negatives_text = "**Negatives:** the two kept runs that compare the negative pools are not in this profile's results."
    def _har_source(comparison):   # "ToolRerank (single) vs ToolRerank (none)" -> "single"; the main row's is the classifier
        row = comparison.split(" vs ")[0]
        return "classifier" if row == "ToolRerank" else row[len("ToolRerank ("):-1]
    har_text = ("; ".join(f"{_har_source(t['comparison'])} {100 * t['diff']:+.1f} ({p_label(t['p'])})" for t in tr["har_tests"])
                if tr.get("har_tests") else "not in this score cache")
    text = R.format(f"""
    **Setting.** {setup.base} DPR, reranker and classifier trained on the {len(split.train.queries):,} ToolLens training
    queries (epochs trained / kept on dev: {epochs_kept}; dev curves: {"; ".join(f"{k} {v}" for k, v in converged.items()) or "n/a"}; {"one sampled gold API per query" if setup.de_pos == 1 else "every gold API"};
    reranker negatives: {setup.ce_neg} per {"gold API" if setup.ce_neg_per == "positive" else "query"} from the top
    {setup.ce_depth} of the {"off-the-shelf encoder" if setup.ce_neg_source == "base" else "trained DPR"}, among
    {"seen tools' APIs" if setup.ce_neg_pool == "seen" else "the whole library"}), evaluated on
    {cfg.subset_queries or "all"} queries per mirror subset. Absolute numbers are not comparable with the paper's (other
    queries, a {len(split.pool.corpus):,}-API corpus, bert-base trained on ≈170k ToolBench queries on a GPU): all-avg
    BM25 {{3|all-avg|BM25!p}} / {{paper:3|all-avg|BM25!p}}, DPR {{3|all-avg|DPR!p}} / {{paper:3|all-avg|DPR!p}},
    ToolRerank {{3|all-avg|ToolRerank!p}} / {{paper:3|all-avg|ToolRerank!p}} (ours / paper).

    - **Reranking helps: {verdict.get("reranking helps", "n/a")}.** Rerank-10 moves seen-avg from {{3|seen-avg|DPR!p}} (DPR)
      to {{3|seen-avg|Rerank-10!p}} and unseen-avg from {{3|unseen-avg|DPR!p}} to {{3|unseen-avg|Rerank-10!p}}; all-avg
      Rerank-10/30/50 {{3|all-avg|Rerank-10!p}} / {{3|all-avg|Rerank-30!p}} / {{3|all-avg|Rerank-50!p}} vs DPR
      {{3|all-avg|DPR!p}} (paper {{paper:3|all-avg|Rerank-10!p}} / {{paper:3|all-avg|Rerank-30!p}} /
      {{paper:3|all-avg|Rerank-50!p}} vs {{paper:3|all-avg|DPR!p}}). On the unseen subsets the reranker scores gold APIs
      {span("score gold", unseen_rows)} against {span("score other (seen tool)", unseen_rows)} for wrong seen-tool
      candidates (seen subsets: {span("score gold", seen_rows)} vs {span("score other (seen tool)", seen_rows)}), and with 50
      candidates seen-tool APIs fill {span("seen-tool share top5 Rerank-50", unseen_rows, ".0f")} % of the unseen queries' top 5
      (DPR: {span("seen-tool share top5 DPR", unseen_rows, ".0f")} %).
    - **Fewer candidates for seen tools, more for unseen: {verdict.get("fewer candidates for seen tools, more for unseen", "n/a")}.**
      Figure 1(a): seen tools peak at m = {best_m["seen"]} ({{fig_seen_best!p}}; m = 10: {{fig_seen_10!p}}, m = 50:
      {{fig_seen_50!p}}), unseen at m = {best_m["unseen"]} ({{fig_unseen_best!p}}; m = 10: {{fig_unseen_10!p}}, m = 50:
      {{fig_unseen_50!p}}; no reranking: {{fig_unseen_dpr!p}}). The premise behind it — gold APIs of unseen tools rank
      lower in the DPR — reads here: DPR top 10 holds {{s4.2|seen|DPR|gold_in_top10!p}} % of seen and
      {{s4.2|unseen|DPR|gold_in_top10!p}} % of unseen gold APIs (paper {{paper:s4.2|seen|DPR|gold_in_top10!p}} /
      {{paper:s4.2|unseen|DPR|gold_in_top10!p}}).
    - **m_s < m_u beats equal and reversed: {verdict.get("m_s < m_u beats m_s = m_u and m_s > m_u", "n/a")}** (Table 5):
      (10, 50) {{5|all-avg|ToolRerank (m_s=10, m_u=50)!p}}, (10, 30) {{5|all-avg|ToolRerank (m_s=10, m_u=30)!p}}, (10, 10)
      {{5|all-avg|ToolRerank (m_s=10, m_u=10)!p}}, (50, 10) {{5|all-avg|ToolRerank (m_s=50, m_u=10)!p}}; the grid search on
      dev picked (m_s, m_u) = ({best.m_s}, {best.m_u}).
    - **HAR helps when its algorithm matches the query type: {verdict.get("HAR helps when it matches the query type", "n/a")}.**
      Single-tool average: none {{6|single-avg|ToolRerank (none)!p}} → Algorithm 1 {{6|single-avg|ToolRerank (single)!p}}
      (classifier {{6|single-avg|ToolRerank!p}}); multi-tool: none {{6|multi-avg|ToolRerank (none)!p}} → Algorithm 2
      {{6|multi-avg|ToolRerank (multi)!p}}; the oracle classifier adds {{s4.4|all-avg|ToolRerank (oracle) vs ToolRerank|delta_recall@5!+p}}
      (paper {{paper:s4.4|all-avg|ToolRerank (oracle) vs ToolRerank|delta_recall@5!+p}}); classifier accuracy
      {{s4.4|all-avg|classifier|accuracy!p}} % (paper {{paper:s4.4|all-avg|classifier|accuracy!p}}), lowest on
      {min(acc, key=acc.get)} ({acc[min(acc, key=acc.get)]:.0%}).
    - **Extended list for unseen tools only: {verdict.get("extended list for unseen tools only is best", "n/a")}** (Table 7,
      single-avg): unseen only {{7|single-avg|ToolRerank (extended seen=no, unseen=yes)!p}}, none
      {{7|single-avg|ToolRerank (extended seen=no, unseen=no)!p}}, both {{7|single-avg|ToolRerank (extended seen=yes, unseen=yes)!p}},
      seen only {{7|single-avg|ToolRerank (extended seen=yes, unseen=no)!p}}.
    - **ToolRerank beats every Rerank-m: {verdict.get("ToolRerank > every Rerank-m", "n/a")}** ({{3|all-avg|ToolRerank!p}} vs
      Rerank-10 {{3|all-avg|Rerank-10!p}}; paper {{paper:3|all-avg|ToolRerank - paper:3|all-avg|Rerank-10!+p}}), and its
      order within the top 5 carries signal: shuffling it costs {{s4.4|all-avg|ToolRerank (APIs shuffled)|ndcg@5_decrease!p}}
      NDCG@5 points (paper {{paper:s4.4|all-avg|ToolRerank (APIs shuffled)|ndcg@5_decrease!p}}).

    {negatives_text} Table 4 is not runnable; its proxy (all gold APIs in the top 5) follows Recall@5. The StableToolBench transfer
    ({sum(tr["queries"].values())} queries, tools mostly unseen) gives all-avg DPR {{tr_dpr!p}}, Rerank-10 {{tr_r10!p}},
    ToolRerank {{tr_tr!p}}; hierarchy-aware reranking there against HAR off (Recall@5 points, all-avg, paired over
    {sum(tr["queries"].values())} queries, whose gold tools have {min(tr["gold_tool_apis"].values()):.1f}-{max(tr["gold_tool_apis"].values()):.1f}
    APIs on average per group): {har_text}.
    """, fig_seen_best=fig.get(("seen", best_m["seen"])), fig_seen_10=fig.get(("seen", 10)), fig_seen_50=fig.get(("seen", 50)),
        fig_unseen_best=fig.get(("unseen", best_m["unseen"])), fig_unseen_10=fig.get(("unseen", 10)),
        fig_unseen_50=fig.get(("unseen", 50)), fig_unseen_dpr=fig.get(("unseen", "dpr")),
        **{k: tt[m].get("all-avg", {}).get("recall@5") for k, m in (("tr_dpr", "DPR"), ("tr_r10", "Rerank-10"),
                                                                     ("tr_tr", "ToolRerank"))})
    if spread is not None and len(drawn) > 1:
        gap = spread.loc[("gold in DPR top 10", "seen - unseen")]
        r5 = {m: spread.loc[(f"{m} Recall@5", "all-avg")] for m in ("DPR", "Rerank-10", "ToolRerank")}
        seeds_ = [c for c in claims_stability if c.startswith("seed ")]
        stable = [f"*{c}*: {r[seeds_[0]]} on every draw, main run {r['main run']}" for c, r in claims_stability.iterrows()
                  if r["stable"] == "yes"]
        unstable = [f"*{c}*: {'/'.join(r[seeds_])} by seed, main run {r['main run']}" for c, r in claims_stability.iterrows()
                    if r["stable"] == "no"]
        text += (f"\n**Across {len(drawn)} held-out draws** (seeds {', '.join(str(d_.seed) for d_ in drawn)}; the draw setup, "
                 f"{cfg.draw_subset_queries or 'all'} queries per subset): seen − unseen gold in the DPR top 10 is "
                 f"{gap['mean']:+.1f} points on average (min {gap['min']:+.1f}, max {gap['max']:+.1f}; paper "
                 + R.format("{paper:s4.2|seen|DPR|gold_in_top10 - paper:s4.2|unseen|DPR|gold_in_top10!+p}") + "); all-avg "
                 "Recall@5 " + ", ".join(f"{m} {v['mean']:.1f} ± {v['std']:.1f}" for m, v in r5.items()) + ". "
                 f"Claims with the same verdict on every draw: {'; '.join(stable) or 'none'}. "
                 f"Claims whose verdict changes with the draw: {'; '.join(unstable) or 'none'}.\n")
    elif draws_pending:
        text += f"\n**Held-out draws:** {len(draws_pending)} of {len(cfg.draw_seeds)} pending (see above).\n"
    if budget_rows is not None:
        text += "\n" + budget_mod.reading(budget_rows, budget_vs_dpr, budget_pairs, main_pairs,
                                         budget_setup=cfg.budget_setup) + "\n"
    elif budget_pending:
        text += f"\n**The reranker's budget:** pending (`{budget_pending}`).\n"
    if category_rows is not None and len(drawn) > 1:
        pooled_ = category_rows.xs("I1-Cat + I2-Cat", level="subset")
        pooled_ = pooled_[pooled_["n"] > 0]
        lo_, hi_ = pooled_["ToolRerank"].idxmin(), pooled_["ToolRerank"].idxmax()

        def span_(part):
            r_ = interval_rows.loc["ToolRerank"]
            return f"{r_[(part, 'min')]:.1f}–{r_[(part, 'max')]:.1f}"
        text += (f"\n**Per held-out category** (I1-Cat + I2-Cat, ToolRerank Recall@5 on each draw's sample): from "
                 f"{pooled_.loc[lo_, 'ToolRerank']:.1f} ({lo_[1]}, draw {lo_[0]}, n = {pooled_.loc[lo_, 'n']}) to "
                 f"{pooled_.loc[hi_, 'ToolRerank']:.1f} ({hi_[1]}, draw {hi_[0]}, n = {pooled_.loc[hi_, 'n']}); over the draws "
                 f"ToolRerank's I1-Cat spans {span_('I1-Cat')}, I2-Cat {span_('I2-Cat')}, unseen-avg {span_('unseen-avg')} "
                 f"(seen-avg {span_('seen-avg')}). Categories held out by more than one draw: "
                 f"{', '.join(heldout_by_draw.attrs['shared']) or 'none'}.\n")
    if runs_compared is not None:
        rc = runs_compared
        flipped = [r for (q, r) in rc.index if q == "claim" and rc.loc[(q, r), "changed"] == "yes"]

        def w(part, col):
            return rc.loc[("gold in DPR top 10 (%)", part), col]

        gap_then, gap_now = w("seen", "weak setup") - w("unseen", "weak setup"), w("seen", "this run") - w("unseen", "this run")
        premise = ("turns round, so the reversed premise was a property of the undertrained DPR" if gap_then < 0 < gap_now
                   else "keeps its sign" if gap_then * gap_now > 0 else "changes")
        text += (f"\n**The data or the training?** Against the earlier weak setup (table above), the premise of §4.2 "
                 f"{premise}: gold in the DPR top 10 was {w('seen', 'weak setup'):.1f} % seen / "
                 f"{w('unseen', 'weak setup'):.1f} % unseen and is {w('seen', 'this run'):.1f} / {w('unseen', 'this run'):.1f} % "
                 f"now (paper " + R.format("{paper:s4.2|seen|DPR|gold_in_top10!p} / {paper:s4.2|unseen|DPR|gold_in_top10!p}")
                 + f"). Claims whose verdict changed with the training: {'; '.join(flipped) or 'none'}; the other "
                 f"verdicts are the same under both setups.\n")
    text += (f"\n**Dev set.** `dev_pool = {setup.dev_pool!r}`: {rec.extra['dev_touching_heldout']} of "
             f"{len(split.dev.queries)} dev queries touch held-out tools or categories.\n")
    if variant_rows is not None:
        chosen_ = ", ".join(variant_rows.index[variant_rows["chosen"]])
        text += ("\n**Reranker variants** (screen budget `variant_setup`; dev Rerank-10 Recall@5 / ToolRerank unseen-avg on "
                 "each variant's own sample): " + "; ".join(
                     f"{n_} {r_['dev Rerank-10 R@5']:.1f} / {r_.get('ToolRerank unseen-avg', float('nan')):.1f}"
                     for n_, r_ in variant_rows.iterrows()) + f". Best on dev: {chosen_}.\n")
    elif variants_pending:
        text += f"\n**Reranker variants:** {len(variants_pending)} of {len(cfg.variants)} pending (see above).\n"
    if alone_table is not None:
        a_ = alone_table

        def alone_pair(part, metric):
            return (f"reranker {a_.loc[part, f'reranker {metric}']:.1f} vs DPR {a_.loc[part, f'DPR {metric}']:.1f} "
                    f"(p = {a_.loc[part, f'p {metric}']:.3g})")
        text += (f"\n**The reranker alone** ({cfg.alone_queries} queries per subset scored against "
                 f"{'the whole library' if cfg.alone_library is None else f'{cfg.alone_library} APIs'}): Recall@5 seen "
                 f"{alone_pair('seen', 'recall@5')}, unseen {alone_pair('unseen', 'recall@5')}; gold-vs-non-gold AUC seen "
                 f"{alone_pair('seen', 'auc')}, unseen {alone_pair('unseen', 'auc')}.\n")
    elif alone_pending:
        text += f"\n**The reranker alone:** pending (`{alone_pending}`).\n"
    if before_after is not None:
        ba_, f_ = before_after["claims"], before_after["fig1a_unseen"]
        b_, a_ = f_.columns
        changed_ = [c for c, r in ba_.iterrows() if r[f"{b_}: verdict"] != r[f"{a_}: verdict"]]
        text += (f"\n**Before and after** (the first run, MiniLM-head reranker, against this run): Figure 1(a)'s unseen "
                 f"curve " + ", ".join(f"m = {m} {f_.loc[m, b_]:.1f} → {f_.loc[m, a_]:.1f}" for m in f_.index
                                      if m in ("10", "30", "50", "dpr")) +
                 f". Claims whose verdict changed: {'; '.join(changed_) or 'none'}.\n")
    if R.missing:
        text += (f"\n*{len(set(R.missing))} numbers are not in this run (n/a above): "
                 + ", ".join(sorted(set(R.missing))[:6]) + "*\n")
    return text
