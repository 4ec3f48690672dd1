"""Notebook 01's reading: prose whose numbers are looked up in the run (moved out of the notebook, so the
notebook shows one call and its prose, in Lab and in any renderer)."""
from __future__ import annotations

from toolkit.compare import load_paper_numbers
from toolkit.report import Reading


def reading(*, rec, value, cfg, data) -> str:
    """The reading of notebook 01 (markdown): the baselines beside the three papers' printed numbers. Each parameter is the notebook variable of that name
    (``toolkit.report.reading_cell``)."""
    pn = {(r.paper, r.table, r.dataset, r.method, r.metric): r.value
          for r in load_paper_numbers(["reinvoke", "toolrerank", "iterative_feedback"]).itertuples()}
    R = Reading({key: v for key, (v, n) in value.items()}, pn, tail=("ndcg@5",), paper_tail=("ndcg@5",))
    var = rec.extra["bm25_variants_toole_single_ndcg@5"]
    gap = abs(value[("toole-single", "BM25", "ndcg@5")][0] - pn[("reinvoke", "1", "toole-single", "BM25", "ndcg@5")])
    spread = max(var.values()) - min(var.values())
    dense_wins_toolbench = all(value[(d, "BM25", "ndcg@5")][0] > value[(d, "Dense", "ndcg@5")][0]
                               for d in ("toolbench-i1", "toolbench-i2", "toolbench-i3"))
    text = R.format(f"""
    - **ToolE, same data as Re-Invoke.** BM25 nDCG@5 {{toole-single|BM25}} on {len(data["toole-single"].queries):,}
      single-tool queries against the printed {{paper:reinvoke|1|toole-single|BM25}} (Table 6:
      {{paper:reinvoke|6|toole-single|BM25}}), nDCG@1 {{toole-single|BM25|ndcg@1}} vs {{paper:reinvoke|6|toole-single|BM25|ndcg@1}},
      recall@5 {{toole-single|BM25|recall@5}} vs {{paper:reinvoke|6|toole-single|BM25|recall@5}}. The gap ({gap:.3f}) is
      {"small next to" if gap < spread else "not explained by"} what tokenization does, which no paper states: rank_bm25's IDF floor gives
      {{v_floor}}, Lucene's IDF {{v_lucene}}, Snowball stemming + stop words {{v_stem}} — a spread of {spread:.3f}.
      ToolE multi-tool BM25 is {{toole-multi|BM25}} vs {{paper:reinvoke|1|toole-multi|BM25}}. The dense row
      ({cfg.dense_model} in place of Vertex AI gecko): {{toole-single|Dense}} vs {{paper:reinvoke|1|toole-single|Dense}}
      single-tool, {{toole-multi|Dense}} vs {{paper:reinvoke|1|toole-multi|Dense}} multi-tool.
    - **ToolBench: not comparable cell by cell, and the papers disagree among themselves.** Our queries are
      StableToolBench's solvable subset and our corpus is {"the whole 16,427-API library" if cfg.corpus == "library" else "the candidate pools"}.
      BM25 I1 nDCG@5 is {{toolbench-i1|BM25}} here, against {{paper:reinvoke|1|toolbench-i1|BM25}} (Re-Invoke, all 87k I1
      queries, 10,439-API corpus), {{paper:iterative_feedback|2|toolbench-i1|BM25}} (feedback paper) and
      {{paper:toolrerank|3|toolbench-g1-instruction|BM25}} on I1-Inst (ToolRerank). ToolRerank's BM25 all-avg NDCG@5 is
      {{paper:toolrerank|3|all-avg|BM25!p}} against our {{all-avg|BM25!p}}.
    - **Dense vs BM25 on ToolBench.** All three papers find dense retrieval better than BM25; with {cfg.dense_model}
      BM25 is {"better on every ToolBench set" if dense_wins_toolbench else "not better on every ToolBench set"}
      (I1 {{toolbench-i1|BM25}} vs {{toolbench-i1|Dense}}, I2 {{toolbench-i2|BM25}} vs {{toolbench-i2|Dense}}, I3
      {{toolbench-i3|BM25}} vs {{toolbench-i3|Dense}}), while dense beats BM25 on ToolE (short documents) and UltraTool
      ({{ultratool|Dense}} vs {{ultratool|BM25}}). MiniLM reads 256 tokens and ToolBench documents carry long parameter
      lists; `dense_model="mpnet"` is the next check (≈6× slower to encode here).
    - **UltraTool**: BM25 {{ultratool|BM25!p}} vs {{paper:iterative_feedback|3|ultratool|BM25!p}} nDCG@5 and dense
      {{ultratool|Dense!p}} vs {{paper:iterative_feedback|3|ultratool|Ada Embedding!p}} for Ada: our corpus is the
      {len(data["ultratool"].corpus)} tools the test file documents, not TR-bench's 498.
    """, v_floor=var.get("rank_bm25 IDF floor"), v_lucene=var.get("Lucene IDF"), v_stem=var.get("Snowball stemming + stop words"))
    if R.missing:
        text += "\n*Not in this run:* " + ", ".join(sorted(set(R.missing)))
    return text
