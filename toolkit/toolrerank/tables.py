"""Per-subset values, the paper's averages, and recording them under the paper-number keys.

Subsets are named as in the paper (``I1-Inst`` ... ``I2-Cat``) and recorded under the canonical
dataset keys of ``data/paper_numbers/toolrerank.yaml`` (``toolbench-g1-instruction`` ...);
averages are unweighted means over subsets, as the paper's Average columns.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from toolkit.metrics import evaluate
from toolkit.runs import keep

from .pipeline import Candidates, as_run, method_lists
from .splits import AVERAGES, MULTI_SUBSETS, SEEN_SUBSETS, SINGLE_SUBSETS, SUBSETS, UNSEEN_SUBSETS  # noqa: F401


def dataset_key(name: str) -> str:
    """Paper-number dataset key of a subset or average name."""
    return SUBSETS[name][0] if name in SUBSETS else name


def values(cands: Mapping[str, Candidates], method, metrics=("ndcg@5", "recall@5"),
           averages=("seen-avg", "unseen-avg", "all-avg"), per_query: dict | None = None,
           per_query_metric: str = "recall@5") -> dict[str, dict[str, float]]:
    """{subset or average: {metric: value}} of ``method`` (see :func:`pipeline.method_lists`). A
    ``per_query`` dict is filled, from the same evaluation, with ``{subset: {qid: per_query_metric}}``
    (the paired significance tests of :func:`toolkit.toolrerank.analysis.claims`)."""
    out = {}
    for name, c in cands.items():
        run = as_run(method_lists(c, method))
        keep(name, method if isinstance(method, str) else "ToolRerank " + " ".join(
            f"{k}={v}" for k, v in vars(method).items()), run, c.dataset.qrels)
        pq = evaluate(run, c.dataset.qrels, list(metrics), per_query=True)
        out[name] = {m: float(np.mean(list(v.values()))) for m, v in pq.items()}   # evaluate's own mean
        if per_query is not None and per_query_metric in pq:
            per_query[name] = pq[per_query_metric]
    return add_averages(out, averages)


def _into(per_query: dict | None, label: str) -> dict | None:
    return None if per_query is None else per_query.setdefault(label, {})


def add_averages(vals: dict[str, dict[str, float]], averages) -> dict[str, dict[str, float]]:
    for avg in averages:
        parts = AVERAGES[avg]
        if all(p in vals for p in parts):
            metrics = vals[parts[0]].keys()
            vals[avg] = {m: sum(vals[p][m] for p in parts) / len(parts) for m in metrics}
    return vals


def record(rec, table: str, method: str, vals: dict[str, dict[str, float]], n_queries: Mapping[str, int],
           note: str = "", names=None, metrics=None) -> None:
    for name in names or vals:
        for metric in metrics or vals[name]:
            n = n_queries.get(name) if name in n_queries else sum(n_queries.get(p, 0) for p in AVERAGES.get(name, []))
            rec.add(paper="toolrerank", table=table, dataset=dataset_key(name), method=method, metric=metric,
                    value=vals[name][metric], n_queries=n, note=note)


def frame(rows: Mapping[str, dict[str, dict[str, float]]], columns: list[str], metrics: list[str],
          scale: float = 100.0) -> pd.DataFrame:
    """Rows = methods, columns = (subset/average, metric), in percent like the paper."""
    data = {m: {(col, met): rows[m][col][met] * scale for col in columns for met in metrics if col in rows[m]}
            for m in rows}
    df = pd.DataFrame.from_dict(data, orient="index")
    df.columns = pd.MultiIndex.from_tuples(df.columns)
    return df.round(1)


def paper_frame(table: str, methods: list[str], columns: list[str], metrics: list[str]) -> pd.DataFrame:
    """The paper's printed numbers in the layout of :func:`frame` (percent)."""
    from toolkit.compare import load_paper_numbers
    pn = load_paper_numbers("toolrerank")
    pn = pn[pn["table"] == table]
    look = {(r.dataset, r.method, r.metric): r.value for r in pn.itertuples()}
    data = {m: {(c, met): look.get((dataset_key(c), m, met)) for c in columns for met in metrics} for m in methods}
    df = pd.DataFrame.from_dict(data, orient="index")
    df.columns = pd.MultiIndex.from_tuples(df.columns)
    return df * 100 if pn["value"].max() <= 1.0 else df


# --------------------------------------------------------------------------------------------
# The paper's tables, one function each (notebook 10_toolrerank's cells only call and show them)
# --------------------------------------------------------------------------------------------

# Table 2's grid (m_s, m_u ∈ {10, 30, 50}; τ_s, τ_m ∈ {0.6, …, 0.9}; n ∈ {2, 3, 4})
GRID = {"m_s": [10, 30, 50], "m_u": [10, 30, 50], "tau_s": [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9],
        "tau_m": [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9], "n": [2, 3, 4]}
COLS = SEEN_SUBSETS + ["seen-avg"] + UNSEEN_SUBSETS + ["unseen-avg", "all-avg"]           # Table 3
COLS5 = ["seen-avg", "unseen-avg", "all-avg"]                                              # Table 5
COLS6 = SINGLE_SUBSETS + ["single-avg"] + MULTI_SUBSETS + ["multi-avg", "all-avg"]         # Table 6
COLS7 = SINGLE_SUBSETS + ["single-avg"]                                                    # Table 7
PAIRS5 = [(10, 50), (10, 30), (30, 50), (10, 10), (30, 30), (50, 50), (50, 10), (30, 10), (50, 30)]
HAR6 = [("ToolRerank", "classifier"), ("ToolRerank (none)", "none"), ("ToolRerank (single)", "single"),
        ("ToolRerank (multi)", "multi"), ("ToolRerank (oracle)", "oracle")]
EXTENDED7 = [(False, True), (False, False), (True, True), (True, False)]
FIG1A_M = [5, 10, 15, 20, 30, 40, 50]


def methods(best) -> dict:
    """Table 3's reranking methods: label -> what :func:`pipeline.method_lists` takes."""
    return {"DPR": "dpr", "Rerank-10": "rerank-10", "Rerank-30": "rerank-30", "Rerank-50": "rerank-50",
            "ToolRerank": best}


def by_category(cands: Mapping[str, Candidates], best, categories, subsets=("I1-Cat", "I2-Cat")) -> list[dict]:
    """Recall@5 of Table 3's methods per held-out category: for each of ``categories`` and each of ``subsets`` (every
    gold tool of their queries lies in one held-out category), then over the subsets pooled (``"I1-Cat + I2-Cat"``, a
    mean over queries): ``{"category", "subset", "n", <method>: mean Recall@5 or None when n = 0}``."""
    from .pipeline import evaluate_method
    from .splits import query_category
    subsets = [s for s in subsets if s in cands]
    per_query = {label: {s: evaluate_method(cands[s], m, ("recall@5",), per_query=True)["recall@5"] for s in subsets}
                 for label, m in methods(best).items()}
    of = {s: {q: query_category(cands[s].dataset, q) for q in cands[s].dataset.queries} for s in subsets}
    rows = []
    for cat in categories:
        for part, parts in [(s, [s]) for s in subsets] + ([(" + ".join(subsets), subsets)] if len(subsets) > 1 else []):
            qs = [(s, q) for s in parts for q in cands[s].dataset.queries if of[s][q] == cat]
            row = {"category": cat, "subset": part, "n": len(qs)}
            for label, pq in per_query.items():
                row[label] = float(np.mean([pq[s][q] for s, q in qs])) if qs else None
            rows.append(row)
    return rows


def record_data(rec, split, n_queries: Mapping[str, int]) -> None:
    """Table 1: training, dev and the six test subsets (sizes of our split, and how many are evaluated)."""
    rec.add(paper="toolrerank", table="1", dataset="toolbench-all", method="train", metric="queries",
            value=len(split.train.queries), note="ToolLens train minus dev and queries touching held-out tools/categories")
    rec.add(paper="toolrerank", table="1", dataset="toolbench-all", method="dev", metric="queries",
            value=len(split.dev.queries), note=f"{n_queries['dev']} used for the grid search")
    for name in SUBSETS:
        rec.add(paper="toolrerank", table="1", dataset=SUBSETS[name][0], method="test", metric="queries",
                value=len(split.subsets[name]), note=f"ToolLens mirror of {name}; {n_queries[name]} evaluated")


def table3(cands: Mapping[str, Candidates], bm25: dict, best, per_query: dict | None = None) -> dict[str, dict]:
    """Table 3: BM25 (given), DPR, Rerank-10/30/50, ToolRerank; NDCG@5 and Recall@5 per subset and average.
    ``per_query`` (here and in Tables 5-7): filled with ``{row label: {subset: {qid: Recall@5}}}``."""
    t = {"BM25": add_averages(dict(bm25), ["seen-avg", "unseen-avg", "all-avg"])}
    for label, m in methods(best).items():
        t[label] = values(cands, m, per_query=_into(per_query, label))
    return t


def methods5(best) -> dict:
    """Table 5's rows: label -> ToolRerank with that (m_s, m_u) and the best dev τ's."""
    from dataclasses import replace
    return {f"ToolRerank (m_s={ms}, m_u={mu})": replace(best, m_s=ms, m_u=mu) for ms, mu in PAIRS5}


def methods6(best) -> dict:
    """Table 6's rows: label -> ToolRerank with that query-type source for HAR."""
    from dataclasses import replace
    return {label: replace(best, har=har) for label, har in HAR6}


def methods7(best) -> dict:
    """Table 7's rows: label -> ToolRerank with the extended list for seen / unseen tools or not."""
    from dataclasses import replace
    return {f"ToolRerank (extended seen={'yes' if es else 'no'}, unseen={'yes' if eu else 'no'})":
            replace(best, extend_seen=es, extend_unseen=eu) for es, eu in EXTENDED7}


def table5(cands: Mapping[str, Candidates], best, per_query: dict | None = None) -> dict[str, dict]:
    """Table 5: Adaptive Truncation, every (m_s, m_u) with the τ's at their best dev values (Recall@5)."""
    return {label: values(cands, m, metrics=["recall@5"], per_query=_into(per_query, label))
            for label, m in methods5(best).items()}


def table6(cands: Mapping[str, Candidates], best, per_query: dict | None = None) -> dict[str, dict]:
    """Table 6: Hierarchy-Aware Reranking with each query-type source (Recall@5)."""
    return {label: values(cands, m, metrics=["recall@5"], averages=["single-avg", "multi-avg", "all-avg"],
                          per_query=_into(per_query, label))
            for label, m in methods6(best).items()}


def table7(cands: Mapping[str, Candidates], best, per_query: dict | None = None) -> dict[str, dict]:
    """Table 7: the extended API list for seen / unseen tools, single-tool subsets (Recall@5)."""
    single = {k: cands[k] for k in SINGLE_SUBSETS}
    return {label: values(single, m, metrics=["recall@5"], averages=["single-avg"], per_query=_into(per_query, label))
            for label, m in methods7(best).items()}


def classifier_accuracy(cands: Mapping[str, Candidates]) -> dict[str, float]:
    """Share of queries whose single/multi-tool type the classifier gets right, per subset (§4.4)."""
    return {name: sum(c.single_pred[q] == c.is_single(q, "oracle") for q in c.dataset.queries) / len(c.dataset.queries)
            for name, c in cands.items()}


def fig1a(cands: Mapping[str, Candidates], ms=FIG1A_M) -> list[dict]:
    """Figure 1(a): Recall@5 vs the number of candidates reranked, averaged over the seen and the
    unseen subsets; ``m="dpr"`` rows are the retriever without reranking."""
    from .analysis import recall_vs_candidates
    curves = recall_vs_candidates(cands, ms)
    return [{"tools": part, "m": m, "recall@5": sum(curves[n][m] for n in names) / len(names)}
            for part, names in [("seen", SEEN_SUBSETS), ("unseen", UNSEEN_SUBSETS)] for m in list(ms) + ["dpr"]]


def seen_bias(cands: Mapping[str, Candidates], depth: int) -> pd.DataFrame:
    """Per subset: share of the top 5 taken by APIs of seen tools (DPR, Rerank-10/50, percent) and the
    reranker's mean score of gold and non-gold candidates in the DPR top ``depth``."""
    from .analysis import reranker_scores_by_label, seen_share_in_top
    rows = {}
    for name in SUBSETS:
        c = cands[name]
        row = {f"seen-tool share top5 {m}": seen_share_in_top(c, m.lower()) * 100 for m in ("DPR", "Rerank-10", "Rerank-50")}
        row |= {f"score {k}": v for k, v in reranker_scores_by_label(c, depth).items()}
        rows[name] = row
    return pd.DataFrame(rows).T.round(3)


def record_coverage(rec, cands: Mapping[str, Candidates], t3: dict, t6: dict, best, seed: int = 0) -> dict:
    """§4.2 and §4.4's statistics: gold APIs in the DPR top 10 (seen vs unseen), ToolRerank's gain over
    each Rerank-m, gold APIs cut by the truncation, the oracle classifier's gain, the NDCG@5 cost of
    shuffling ToolRerank's top 5; returns the count of multi-tool gold APIs outside T sharing a tool."""
    from .analysis import gold_in_top, gold_outside_truncation, outside_T_sharing_tool, shuffled_ndcg_drop
    part = {p: {k: cands[k] for k in names} for p, names in
            (("seen", SEEN_SUBSETS), ("unseen", UNSEEN_SUBSETS), ("single", SINGLE_SUBSETS), ("multi", MULTI_SUBSETS))}
    for d in ("seen", "unseen"):
        rec.add(paper="toolrerank", table="s4.2", dataset=d, method="DPR", metric="gold_in_top10",
                value=gold_in_top(part[d], 10), note="pooled gold APIs of the three subsets")
    for m in ["Rerank-10", "Rerank-30", "Rerank-50"]:
        rec.add(paper="toolrerank", table="s4.2", dataset="all-avg", method=f"ToolRerank vs {m}", metric="delta_recall@5",
                value=t3["ToolRerank"]["all-avg"]["recall@5"] - t3[m]["all-avg"]["recall@5"])
    out_T = gold_outside_truncation(part["single"], best)
    for d in ("seen", "unseen"):
        rec.add(paper="toolrerank", table="s4.4", dataset=d, method="ToolRerank", metric="gold_outside_truncation",
                value=out_T[d], note=f"single-tool subsets, {out_T['n_' + d]} gold APIs of {d} tools")
    rec.add(paper="toolrerank", table="s4.4", dataset="all-avg", method="ToolRerank (oracle) vs ToolRerank",
            metric="delta_recall@5",
            value=t6["ToolRerank (oracle)"]["all-avg"]["recall@5"] - t6["ToolRerank"]["all-avg"]["recall@5"])
    drops = {k: shuffled_ndcg_drop(c, best, seed=seed) for k, c in cands.items()}
    rec.add(paper="toolrerank", table="s4.4", dataset="all-avg", method="ToolRerank (APIs shuffled)",
            metric="ndcg@5_decrease", value=sum(drops.values()) / len(drops), note="top-5 shuffled, 5 shuffles per query")
    return outside_T_sharing_tool(part["multi"], best)


def table4_proxy(cands: Mapping[str, Candidates], best) -> dict[str, dict[str, float]]:
    """Table 4's proxy: share of queries whose gold APIs are all in the top 5, per method and subset."""
    from .analysis import all_gold_in_top
    return {label: {name: all_gold_in_top(c, m) for name, c in cands.items()} for label, m in methods(best).items()}


GROUP_LABEL = {"toolbench-g1-instruction": "I1-Inst", "toolbench-g2-instruction": "I2-Inst",
               "toolbench-g3-instruction": "I3-Inst", "toolbench-g1-tool": "I1-Tool",
               "toolbench-g1-category": "I1-Cat", "toolbench-g2-category": "I2-Cat"}


def transfer(tcands: Mapping[str, Candidates], best, seen: set) -> dict:
    """The six StableToolBench groups with the ToolLens-trained models: Table 3's methods per group,
    the query and corpus sizes, and the share of gold APIs whose tool was seen in training. ``har_tests``: each of
    Table 6's rows against HAR off ("ToolRerank (none)"), Recall@5 macro-paired over the groups
    (:func:`toolkit.significance.compared`, the mean of per-group means, as all-avg)."""
    from toolkit.significance import compared
    tc = {GROUP_LABEL[k]: v for k, v in tcands.items()}
    share = {k: sum(c.tool_of(d) in seen for q in c.dataset.qrels for d in c.dataset.qrels[q]) /
             max(1, sum(len(r) for r in c.dataset.qrels.values())) for k, c in tc.items()}
    # how much a hierarchy can act on: APIs per gold tool in each corpus (ToolLens: 1.48 APIs per tool)
    apis_per_tool = {k: float(np.mean([len(c.tool_apis[c.tool_of(d)]) for q in c.dataset.qrels for d in c.dataset.qrels[q]]))
                     for k, c in tc.items()}
    from .score_cache import ScoreCacheMiss
    pq, off = {}, "ToolRerank (none)"
    try:    # a score cache written before this table lacks the extended lists' scores the other HAR rows ask for
        har = {label: values(tc, m, metrics=["recall@5"], per_query=_into(pq, label)) for label, m in methods6(best).items()}
        har_tests = [compared(f"{label} vs {off}", pq[label], pq[off]) for label in pq if label != off]
    except ScoreCacheMiss as miss:
        har, har_tests = {"missing": str(miss)}, []
    return {"values": {label: values(tc, m) for label, m in methods(best).items()}, "har": har, "har_tests": har_tests,
            "queries": {k: len(c.dataset.queries) for k, c in tc.items()},
            "documents": {k: len(c.dataset.corpus) for k, c in tc.items()}, "gold_seen_share": share,
            "gold_tool_apis": apis_per_tool}


def paper_tables(t3: dict, t5: dict, t6: dict, t7: dict) -> dict[str, dict]:
    """The paper's Tables 3/5/6/7 (Recall@5) in the layout of ours, for :func:`analysis.claims`."""
    from .analysis import table_values
    return {name: table_values(paper_frame(tab, list(t), cols, ["recall@5"]))
            for name, tab, t, cols in [("t3", "3", t3, COLS), ("t5", "5", t5, COLS5), ("t6", "6", t6, COLS6),
                                       ("t7", "7", t7, COLS7)]}


def beside_paper(ours: dict, table: str, cols: list[str], metrics: list[str], label: str = "ours"):
    """Per method three rows, ours, the paper's and Δ = ours - paper (percent, one decimal; Δ signed), through the
    suite's formatter (:func:`toolkit.report.format_table`): "not printed" where the paper has no value, "pending"
    where we have none."""
    from toolkit.report import NOT_PRINTED, Table, format_table, is_missing
    o, p = frame(ours, cols, metrics), paper_frame(table, list(ours), cols, metrics)
    p = p.reindex(index=o.index, columns=o.columns)
    d = o - p
    rows = {}
    for m in ours:
        rows[(m, label)], rows[(m, "paper")], rows[(m, "Δ")] = o.loc[m], p.loc[m], d.loc[m]
    df = pd.DataFrame(rows).T
    df.columns = o.columns
    shown = format_table(df, percents=list(df.columns)).frame
    for k, (m, who) in enumerate(df.index):
        if who == label:
            continue
        shown.iloc[k] = [NOT_PRINTED if is_missing(v) else format(float(v), "+.1f" if who == "Δ" else ".1f")
                         for v in df.iloc[k]]
    return Table(shown, [])


# --------------------------------------------------------------------------------------------
# The claims' conditions and controls (each verdict with its reason)
# --------------------------------------------------------------------------------------------

CONDITION = ("dual encoder and cross-encoder reranker: all-MiniLM-L6 fine-tuned on CPU on the ToolLens mirror "
             "subsets, Recall@5 on samples of each subset (paper: bert-base-uncased on ToolBench, GPU)")


def claim_controls(cells: list[dict], seen_bias_rows: list[dict] | None = None, transfer: dict | None = None,
                   multi_sharing: int | None = None) -> dict[str, tuple[list[dict], str]]:
    """The control rows that can account for each claim of :func:`analysis.claims` (key of
    :data:`analysis.CLAIM_KEYS`) -> ``(rows, conclusion)``, read from this run's results:

    - the premise of Figure 1(a) and m_s < m_u (§4.2): gold APIs in the DPR top 10, unseen minus seen;
    - the reranker's bias to seen tools: the seen-tool share of the top 5, Rerank-50 minus DPR, mean over subsets
      (``seen_bias_rows``, :func:`seen_bias`);
    - HAR: the tool classifier's accuracy minus the paper's 0.933, the oracle classifier's gain over ours, and HAR
      against none on the StableToolBench library (``transfer['har_tests']``: tools with several APIs);
    - the extended list: gold APIs of multi-tool queries outside T whose tool has an API in T (``multi_sharing``).

    A conclusion is stated only when its control row points that way (e.g. "reranker favours seen tools" when
    the share rises by more than 5 points)."""
    from toolkit.claims import control
    cell = {(c["table"], c["dataset"], c["method"], c["metric"]): c["value"] for c in cells}
    seen, unseen = cell.get(("s4.2", "seen", "DPR", "gold_in_top10")), cell.get(("s4.2", "unseen", "DPR",
                                                                                "gold_in_top10"))
    premise = control("gold APIs in the DPR top 10, unseen - seen subsets", None if None in (seen, unseen)
                      else unseen - seen)
    bias = None
    if seen_bias_rows:
        d = [r["seen-tool share top5 Rerank-50"] - r["seen-tool share top5 DPR"] for r in seen_bias_rows]
        bias = control("seen-tool share of the top 5, Rerank-50 - DPR (mean over subsets)", sum(d) / len(d) / 100)
    acc = cell.get(("s4.4", "all-avg", "classifier", "accuracy"))
    classifier = control("tool classifier accuracy - paper's 0.933", None if acc is None else acc - 0.933)
    oracle = cell.get(("s4.4", "all-avg", "ToolRerank (oracle) vs ToolRerank", "delta_recall@5"))
    oracle_c = control("oracle classifier - ours, Recall@5", oracle)
    har_lib = next((control(f"on the StableToolBench library: {t['comparison']}", t["diff"], t["p"], t["n"])
                    for t in (transfer or {}).get("har_tests", []) if t["comparison"].startswith("ToolRerank (oracle)")),
                   None)
    sharing = None if multi_sharing is None else control("multi-tool gold APIs outside T sharing a tool in T "
                                                         "(count; paper: none)", multi_sharing)
    biased = bias is not None and bias["diff"] is not None and bias["diff"] > 0.05
    fewer_unseen = premise["diff"] is not None and premise["diff"] < 0
    return {
        "reranking": ([bias, premise], "the reranker favours the tools it was trained on" if biased else ""),
        "toolrerank": ([bias, premise], "the reranker favours the tools it was trained on" if biased else ""),
        "fig1a": ([premise], "unseen-tool gold APIs rank lower in DPR, as the paper's premise says, yet the curve "
                             "does not follow" if fewer_unseen else "the premise itself does not hold here"),
        "truncation": ([premise, bias], ""),
        "har": ([classifier, oracle_c, har_lib], ""),
        "extended": ([sharing], ""),
    }


def judged_claims(t3: dict, t5: dict, t6: dict, t7: dict, fig_rows: list[dict], per_query: dict, cells: list[dict],
                  seen_bias_rows: list[dict] | None = None, transfer: dict | None = None,
                  multi_sharing: int | None = None) -> list[dict]:
    """Notebook 10's claims cell: :func:`analysis.claims` on this run (with its paired tests, condition and controls)
    and on the paper's printed Tables 3/5/6/7 (by direction), merged by :func:`toolkit.claims.with_paper`."""
    from toolkit.claims import with_paper

    from . import analysis
    ours = analysis.claims(t3, t5, t6, t7, fig_rows, per_query=per_query, condition=CONDITION,
                           controls=claim_controls(cells, seen_bias_rows, transfer, multi_sharing))
    paper_t = paper_tables(t3, t5, t6, t7)
    on_paper = {r["key"]: r for r in analysis.claims(paper_t["t3"], paper_t["t5"], paper_t["t6"], paper_t["t7"])}
    blank = {"here": "", "ours": None}
    return with_paper(ours, [on_paper.get(r["key"], blank) for r in ours])
