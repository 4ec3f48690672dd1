# %% [markdown]
# # 01 — Baselines: BM25 and off-the-shelf dense retrieval
#
# Regenerates the **BM25** and **dense** rows of Re-Invoke Tables 1 and 6 (ToolBench I1/I2/I3, ToolE
# single/multi; nDCG@1/5, recall@1/5), ToolRerank's **BM25** row of Table 3 (six ToolBench subsets,
# NDCG@5 / Recall@5, seen / unseen / all averages), and the feedback paper's **BM25** and
# **Ada Embedding** rows of Table 2 (I1/I2/I3/All, NDCG@1/3/5) and Table 3 (UltraTool, NDCG@1/3/5/10).
#
# **Deviations (say them once, here).**
# - ToolBench test queries are StableToolBench's 765 solvable queries, not the official 6 × 100 ids
#   (whose gold is not public for four groups) nor Re-Invoke's 87k-query pool; the corpus is the whole
#   ToolBench library (16,427 APIs) instead of the per-group `corpus.tsv` (10,439 / 13,142 / 1,605 APIs),
#   which are not public. `toolbench_corpus="pool"` searches only the queries' candidate pools instead.
# - Dense retrieval uses `all-MiniLM-L6-v2` (parameter `dense_model`; `mpnet` = all-mpnet-base-v2) in
#   place of Vertex AI's textembedding-gecko@003 (Re-Invoke) and OpenAI's text-embedding-ada-002 (feedback
#   paper): both rows are *our* dense model, labelled with the paper's method name so `compare` lines them up.
# - BM25: bm25s, Okapi/Robertson BM25 with k1 = 1.5, b = 0.75 (Re-Invoke's stated setting), lower-cased word
#   tokens with no stemming and no stop-word removal. No paper states its tokenization; this one lands
#   closest to Re-Invoke's printed ToolE numbers (Snowball stemming + stop words raise ToolE single-tool
#   nDCG@5 from ≈0.37 to ≈0.48 — set `bm25_stemmer="english"`, `bm25_stopwords="en"` to see it).
# - Metrics follow `toolkit.metrics`: binary relevance, NDCG with the ideal DCG from the qrels, recall@k =
#   |relevant ∩ top-k| / |relevant|; trec_eval tie-breaking.
# - `smoke` evaluates a seeded sample of queries per dataset against the candidate pools only (seconds);
#   `standard` runs every query against the whole library.

# %% tags=["parameters"]
profile = "smoke"              # smoke | standard | paper
dense_model = "minilm"         # minilm | mpnet | a local sentence-transformers directory
toolbench_corpus = "library"   # library (16,427 APIs) | pool (each group's candidate pools)
toolbench_release_dir = ""     # paper profile: ToolBench's data/retrieval/ (G1/, G2/, G3/) for I1/I2/I3
bm25_k1 = 1.5
bm25_b = 0.75
bm25_method = "robertson"      # robertson (Okapi, Robertson & Zaragoza 2009) | lucene
bm25_stemmer = ""              # empty = none, closest to the printed Re-Invoke BM25; or english
bm25_stopwords = ""            # empty = none; or en
ties = "trec"                  # trec (pytrec_eval's order) | sklearn (tie-averaged, as ToolBench's evaluator)
k = 100                        # retrieval depth
smoke_queries = 20             # queries per dataset in the smoke profile
seed = 0

# %%
import pandas as pd

from toolkit.data import load_dataset, load_retrieval_dir
from toolkit.experiment import evaluate_grid, macro_average, means
from toolkit.report import side_by_side
from toolkit.results import Recorder
from toolkit.retrieval import build_retriever

rec = Recorder("01_baselines", profile, parameters=dict(
    dense_model=dense_model, toolbench_corpus=toolbench_corpus, toolbench_release_dir=toolbench_release_dir,
    bm25_k1=bm25_k1, bm25_b=bm25_b, bm25_method=bm25_method, bm25_stemmer=bm25_stemmer,
    bm25_stopwords=bm25_stopwords, ties=ties, k=k, smoke_queries=smoke_queries, seed=seed))
smoke = profile == "smoke"
corpus = "pool" if smoke else toolbench_corpus
GROUPS = ["g1-instruction", "g1-tool", "g1-category", "g2-instruction", "g2-category", "g3-instruction"]
names = ["toole-single", "toole-multi", "ultratool"] + [f"toolbench-{g}" for g in GROUPS]
data = {}
for name in names:
    ds = load_dataset(name, **({"corpus": corpus} if name.startswith("toolbench") else {}))
    data[name] = ds.sample(smoke_queries, seed=seed) if smoke else ds
if profile == "paper" and toolbench_release_dir:
    for i in (1, 2, 3):
        data[f"toolbench-i{i}-release"] = load_retrieval_dir(f"{toolbench_release_dir}/G{i}", "test")
pd.DataFrame([d.stats() for d in data.values()]).set_index("dataset")[["queries", "documents", "qrels"]]

# %%
METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "recall@1", "recall@5"]
retrievers = {
    "BM25": lambda: build_retriever("bm25", k1=bm25_k1, b=bm25_b, method=bm25_method,
                                    stemmer=bm25_stemmer or None, stopwords=bm25_stopwords or None),
    "Dense": lambda: build_retriever(dense_model),
}
per_query, runs, timings = evaluate_grid(data, retrievers, METRICS, k=k, ties=ties)
UNIONS = {"toolbench-i1": [f"toolbench-{g}" for g in GROUPS[:3]],
          "toolbench-i2": [f"toolbench-{g}" for g in GROUPS[3:5]],
          "toolbench-i3": ["toolbench-g3-instruction"],
          "toolbench-all": [f"toolbench-{g}" for g in GROUPS]}
table = means(per_query, UNIONS)
SEEN, UNSEEN = ["g1-instruction", "g2-instruction", "g3-instruction"], ["g1-tool", "g1-category", "g2-category"]
averages = pd.concat([macro_average(table, "seen-avg", [f"toolbench-{g}" for g in SEEN]),
                      macro_average(table, "unseen-avg", [f"toolbench-{g}" for g in UNSEEN]),
                      macro_average(table, "all-avg", [f"toolbench-{g}" for g in GROUPS])])
table = pd.concat([table, averages], ignore_index=True)
value = {(r.dataset, r.method, r.metric): (r.mean, r.count) for r in table.itertuples()}
timings.round(2)

# %%
# NBVAL_CHECK_OUTPUT
# BM25 is deterministic: these smoke values must not move.
for name in ["toole-single", "toole-multi", "toolbench-g1-instruction", "toolbench-g3-instruction"]:
    print(f"{name:<28} BM25 ndcg@5 {value[(name, 'BM25', 'ndcg@5')][0]:.4f}")

# %% [markdown]
# ## Re-Invoke Tables 1 and 6 — BM25 and dense rows

# %%
dense_note = f"{dense_model} in place of Vertex AI textembedding-gecko@003"
for name in ["toolbench-i1", "toolbench-i2", "toolbench-i3", "toole-single", "toole-multi"]:
    for method in ["BM25", "Dense"]:
        note = dense_note if method == "Dense" else ""
        mean, n = value[(name, method, "ndcg@5")]
        rec.add(paper="reinvoke", table="1", dataset=name, method=method, metric="ndcg@5", value=mean, n_queries=n, note=note)
        for metric in ["ndcg@1", "ndcg@5", "recall@1", "recall@5"]:
            mean, n = value[(name, method, metric)]
            rec.add(paper="reinvoke", table="6", dataset=name, method=method, metric=metric, value=mean, n_queries=n, note=note)
side_by_side(rec, "reinvoke", "6").round(4)

# %% [markdown]
# ## ToolRerank Table 3 — BM25 row (NDCG@5, Recall@5)
#
# Seen = I1-Inst, I2-Inst, I3-Inst; unseen = I1-Tool, I1-Cat, I2-Cat (BM25 has no training, so the split
# only names the subsets). Averages are unweighted means over subsets, as the paper's Average columns are.

# %%
for name in [f"toolbench-{g}" for g in GROUPS] + ["seen-avg", "unseen-avg", "all-avg"]:
    for metric in ["ndcg@5", "recall@5"]:
        mean, n = value[(name, "BM25", metric)]
        rec.add(paper="toolrerank", table="3", dataset=name, method="BM25", metric=metric, value=mean, n_queries=n)
side_by_side(rec, "toolrerank", "3").round(4)

# %% [markdown]
# ## Iterative-feedback Tables 2 and 3 — BM25 and "Ada Embedding" rows
#
# "All" is the union of the six groups (every query counted once). T-Eval has no public queries.

# %%
ada_note = f"{dense_model} in place of OpenAI text-embedding-ada-002"
for name, metrics, table_no in [(n, ["ndcg@1", "ndcg@3", "ndcg@5"], "2") for n in
                                ["toolbench-i1", "toolbench-i2", "toolbench-i3", "toolbench-all"]] + \
                               [("ultratool", ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"], "3")]:
    for method, label in [("BM25", "BM25"), ("Dense", "Ada Embedding")]:
        for metric in metrics:
            mean, n = value[(name, method, metric)]
            rec.add(paper="iterative_feedback", table=table_no, dataset=name, method=label, metric=metric,
                    value=mean, n_queries=n, note=ada_note if method == "Dense" else "")
pd.concat([side_by_side(rec, "iterative_feedback", "2"), side_by_side(rec, "iterative_feedback", "3")], axis=1).round(4)

# %% [markdown]
# ## Reading (standard profile, `results/01_baselines/standard.json`)
#
# - **ToolE, same data as Re-Invoke: close.** BM25 nDCG@5 0.366 on all 20,550 single-tool queries
#   against the printed 0.3735 (Table 1; 0.3732 in Table 6), nDCG@1 0.283 vs 0.272, recall@5 0.441 vs
#   0.462. The remaining gap is tokenization, which no paper states: rank_bm25's IDF floor
#   (`bm25-rank`, ε = 0.25) gives 0.369, Lucene's IDF 0.359, and stemming + stop words 0.480 — a spread
#   ten times the gap. ToolE multi-tool BM25 is 0.223 vs 0.263. The dense row (MiniLM in place of
#   Vertex AI gecko) lands on the paper: 0.661 vs 0.652 single-tool, 0.494 vs 0.530 multi-tool.
# - **ToolBench: not comparable cell by cell, and the papers disagree among themselves.** Our queries are
#   StableToolBench's solvable subset and our corpus is the whole 16,427-API library. BM25 I1 nDCG@5 is
#   0.483 here, against 0.359 (Re-Invoke, all 87k I1 queries, 10,439-API corpus), 0.197 (feedback paper)
#   and 0.452 on I1-Inst (ToolRerank). ToolRerank's BM25 averages come out near ours (all-avg NDCG@5
#   43.2 vs 44.4) though individual subsets differ by up to 14 points.
# - **Dense vs BM25 on ToolBench: the papers' ordering does not hold for MiniLM.** All three papers find
#   dense retrieval better than BM25; with MiniLM (256-token limit, ToolBench documents with long
#   parameter lists) BM25 is better on every ToolBench set (I1 0.483 vs 0.415 nDCG@5), while MiniLM
#   beats BM25 by far on ToolE (short documents) and UltraTool. A stronger encoder (`dense_model="mpnet"`)
#   is the obvious next check; it was not run in the standard profile for time (mpnet encodes ≈6×
#   slower than MiniLM here).
# - **UltraTool**: both our rows are above the feedback paper's (BM25 31.3 vs 16.0 nDCG@5; dense 60.6 vs
#   39.9 for Ada): our corpus is the 436 tools the test file documents, not TR-bench's 498.

# %%
rec.extra["timings"] = timings.to_dict(orient="records")
path = rec.save()
print(f"{len(rec.cells)} cells -> {path.relative_to(path.parents[2])}")
