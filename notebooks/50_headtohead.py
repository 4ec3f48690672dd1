# %% [markdown]
# # 50 — Head-to-head: every method on one benchmark, with its cost
#
# Each paper reports on its own data, metrics and models. Here every method of the suite speaks one interface
# (`toolkit.methods`: an offline step, an online step queries → run, and a cost record) and runs on one benchmark.
#
# **Benchmark.**
# - In-domain: the StableToolBench groups I1 / I2 / I3 over the whole 16,427-API ToolBench library; out-of-domain:
#   UltraTool (its 436 tools). `I1-I3` is the union of the three in-domain sets.
# - Common queries: the feedback loop's LLM samples (`toolkit.feedback.experiment.llm_sample`, its standard
#   configuration: I1 150, I2 230, I3 61, UltraTool 150), so the most expensive method is on every query. The smoke
#   profile keeps the first 5 queries of each sample (the samples are nested), over the same corpora.
# - Metrics: NDCG@5, Recall@5 and the share of queries with every gold API in the top 5 (what an agent that reads
#   five tools needs); binary relevance, trec_eval's tie rule. Each method against the best cheap baseline of the
#   set (no LLM, no training: the highest NDCG@5 of BM25 and the off-the-shelf encoders) by the paired randomization
#   test (`toolkit.significance`).
# - Each method in its best standard configuration, read from its committed caches: the fine-tuned DPR and the
#   feedback loop from their traces (`data/feedback_traces/`), Re-Invoke's intents from `data/llm_cache/`, the
#   encoders' vectors from `data/embeddings/`. A method whose inputs for these queries no cache holds is listed as
#   **pending**, with the command that produces them and its estimated cost — never filled in.
#
# **Costs.** Offline: LLM seconds (tokens where the cache records them), training minutes (trace and score-cache
# meta), indexing (the encoder's speed from `results/bench/encoders.txt`). Online per query: retrieval time measured
# in this run (query encoding timed without the cache) plus the LLM seconds the cache or trace recorded for these
# queries. A replayed MiniLM bi-encoder (DPR, the feedback loop's retriever) searches as fast as Dense MiniLM, and
# is charged its time. LLM seconds are per-call times on 2 CPU cores (the feedback loop decoded 4 calls together).

# %% tags=["parameters"]
profile = "smoke"   # smoke | standard | paper
overrides = {}      # any field of toolkit.methods.benchmark.HeadToHeadConfig, e.g. {"queries_per_set": 20}

# %%
from toolkit.notebook import parameters
overrides = parameters(globals(), "50_headtohead", ('profile', 'overrides'))   # papermill -p <field> <value> lands in overrides
from dataclasses import asdict

import pandas as pd
from IPython.display import Markdown, display

from toolkit.methods import benchmark as B
from toolkit.results import Recorder

cfg = B.config_for(profile, **overrides)
rec = Recorder("50_headtohead", profile, parameters={"overrides": overrides,
                                                     **{k_: v for k_, v in asdict(cfg).items() if k_ != "profile"}})
sets = B.benchmark_sets(cfg)
pd.DataFrame([ds.stats() for ds in sets.values()], index=list(sets))[["queries", "documents", "qrels"]]

# %% [markdown]
# ## The methods and the combinations
#
# Single methods wrap each paper's package (`toolkit/methods/catalog.py`); combinations fuse runs by reciprocal-rank
# fusion (k = 60, `toolkit.methods.fusion.rrf`). What each combination should fix:

# %%
methods = B.default_methods(cfg, sets)
pd.Series(B.COMBINATION_WHY, name="what it should fix").to_frame()

# %%
# NBVAL_IGNORE_OUTPUT
# wall-clock times of each method's offline and online steps: measured, not reproducible to the digit
result = B.run_benchmark(methods, sets, ties=cfg.ties)

# %% [markdown]
# ## Leaderboard
#
# NDCG@5 (x100) per set with n and the paired p against the set's best cheap baseline; Recall@5 and all-gold@5 on
# I1-I3 and UltraTool; online seconds per query and offline minutes (the cost table below says where each comes from).

# %%
# NBVAL_CHECK_OUTPUT
# quality and p are deterministic (committed vectors, traces and answers; seeded tests): these must not move
board = B.leaderboard(result, n_permutations=cfg.n_permutations)
B.record(rec, result, board)
quality = [c for c in board.columns if not c.startswith(("online", "offline"))]
board[quality].round(3)

# %%
# NBVAL_IGNORE_OUTPUT
# costs: the measured parts move with the machine's load
costs = B.cost_table(result)
costs

# %% [markdown]
# ## Pending methods
#
# What no committed cache holds for these queries, the command that would produce it, and what that costs
# (measured rates from the caches and `results/bench/`).

# %%
B.pending_table(result)

# %% [markdown]
# ## Quality against online cost
#
# NDCG@5 on I1-I3 against online seconds per query (log scale, LLM time included); the Pareto front is joined,
# its methods in bold; squares are combinations. The points: the csv beside the figure.

# %%
# NBVAL_IGNORE_OUTPUT
# the x positions are measured timings
fig = B.pareto_figure(board, rec.figure_dir() / f"pareto_{profile}.png")

# %% [markdown]
# ## Reading
#
# Formatted from this run's leaderboard (the smoke profile's 5 queries per set mean nothing).

# %% tags=["hide-input"] jupyter={"source_hidden": true}
# NBVAL_IGNORE_OUTPUT
# the front's order depends on measured timings
display(Markdown(B.reading(board, result)))

# %%
rec.extra["pending"] = B.pending_table(result).reset_index().to_dict(orient="records")
rec.extra["costs"] = costs.reset_index().to_dict(orient="records")
rec.extra["pareto_front"] = B.pareto_front(B.pareto_points(board))
path = rec.save()
print(f"{len(rec.cells)} cells -> {path.relative_to(path.parents[2])}")
