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
#   five tools needs); binary relevance, trec_eval's tie rule. Each method against the set's reference baseline,
#   fixed and named: the best NDCG@5 of BM25, Dense MiniLM and Dense mpnet (no LLM, no training; never a method you
#   add), by the paired randomization test (`toolkit.significance`).
# - Your method: `-p methods='["mypackage.module:MyMethod"]'` (a `toolkit.methods.Method` subclass; e.g.
#   `examples/word_overlap.py:WordOverlap`) runs it on every set, the leaderboard, the Pareto figure and the cost
#   growth, without editing this notebook.
# - Each method in its best standard configuration, read from its committed caches: the fine-tuned DPR and the
#   feedback loop from their traces (`data/feedback_traces/`; the loop under the fair LLM step, which beats
#   the capped one on every set in notebook 30), Re-Invoke's intents from `data/llm_cache/`, the encoders' vectors
#   from `data/embeddings/`. Query generation is zero-shot (Qwen 1.5B at the temperature notebook 40 calibrated,
#   mpnet, interleaved lists), its answers for these queries in `data/llm_cache/headtohead_querygen/`: notebook 40's
#   SFT generator beats it there, but its weights are not committed (retraining it is hours here). A method whose
#   inputs for these queries no cache holds is listed as **pending**, with the command that produces them and its
#   estimated cost — never filled in.
#
# **Costs.** Offline: LLM seconds (tokens where the cache records them), training minutes (trace and score-cache
# meta), indexing (the encoder's speed from `results/bench/encoders.txt`). Online per query: retrieval time measured
# in this run (query encoding timed without the cache) plus the LLM seconds the cache or trace recorded for these
# queries. A replayed MiniLM bi-encoder (DPR, the feedback loop's retriever) searches as fast as Dense MiniLM, and
# is charged its time. LLM seconds are per-call times on 2 CPU cores (the feedback loop decoded 4 calls together).
#
# **Growth.** The last section measures how offline and online cost grow with the library size (nested libraries
# of the ToolBench library) and the query rate, fits t = a·N^b per method, and says what the `paper` profile needs.

# %% tags=["parameters"]
profile = "smoke"   # smoke | standard | paper
overrides = {}      # any field of toolkit.methods.benchmark.HeadToHeadConfig, e.g. {"queries_per_set": 20}
methods = []        # your methods, "package.module:Class" or "path/file.py:Class" (toolkit.methods.user)

# %%
from toolkit.notebook import parameters
overrides = parameters(globals(), "50_headtohead", ('profile', 'overrides', 'methods'))   # papermill -p <field> <value> lands in overrides
from dataclasses import asdict

import pandas as pd
from IPython.display import Markdown, display

from toolkit.methods import benchmark as B
from toolkit.methods.user import load_methods, parse_specs
from toolkit.report import format_table
from toolkit.results import Recorder

cfg = B.config_for(profile, **overrides)
methods = parse_specs(methods)
rec = Recorder("50_headtohead", profile, parameters={"overrides": overrides, "methods": methods,
                                                     **{k_: v for k_, v in asdict(cfg).items() if k_ != "profile"}})
sets = B.benchmark_sets(cfg)
format_table(pd.DataFrame([ds.stats() for ds in sets.values()], index=list(sets))[["queries", "documents", "qrels"]])

# %% [markdown]
# ## The methods and the combinations
#
# Single methods wrap each paper's package (`toolkit/methods/catalog.py`); combinations fuse runs by reciprocal-rank
# fusion (k = 60, `toolkit.methods.fusion.rrf`). Your methods (the `methods` parameter) are imported and checked here
# and run everywhere the built-ins run; the reference baseline stays the best of BM25 and the two off-the-shelf
# encoders. What each combination should fix:

# %%
built_in = B.default_methods(cfg, sets)
yours = load_methods(methods, reserved=built_in)
all_methods = {**built_in, **yours}
format_table(pd.Series(B.COMBINATION_WHY, name="what it should fix").to_frame())

# %%
# NBVAL_IGNORE_OUTPUT
# wall-clock times of each method's offline and online steps: measured, not reproducible to the digit
result = B.run_benchmark(all_methods, sets, ties=cfg.ties)

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
B.leaderboard_table(board, quality)

# %%
# NBVAL_IGNORE_OUTPUT
# costs: the measured parts move with the machine's load
costs = B.cost_table(result)
format_table(costs, metrics=[], missing="not recorded")

# %% [markdown]
# ## Pending methods
#
# What no committed cache holds for these queries, the command that would produce it, and what that costs
# (measured rates from the caches and `results/bench/`).

# %%
format_table(B.pending_table(result), metrics=[], missing="unknown")

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

# %% [markdown]
# ## Cost growth with the library size and the query rate
#
# The library at several sizes (`scaling_sizes`: 1,000 / 4,000 / the whole 16,427 under standard, 200 / 400 / 800
# under smoke): seeded nested subsets of the ToolBench library, each holding every gold API of the in-domain queries
# (`toolkit.methods.scaling.nested_subsets`). **Measured** at each size (median of `scaling_repeats`): BM25 indexing
# and search per query; Dense MiniLM encoding a batch of the size's documents without the cache (its per-document
# time x N is the index: linear by construction), indexing the stored vectors, and the exact search per query (the
# query's encoding, which does not read the library, is timed once); the RRF fusion of the two. **Derived** for every
# other method from its cost record on the whole library (the leaderboard's, or a pending method's estimate): LLM
# seconds and training do not depend on N, except Re-Invoke's expansion (N x m answers, its rate from
# `results/bench/synthetic_queries.json`); a replayed MiniLM bi-encoder (the fine-tuned DPR, the feedback loop's
# retriever) indexes and searches as Dense MiniLM at N; the mpnet index at the benchmarked rate
# (`results/bench/encoders.txt`). Each cost is fitted as t = a·N^b by least squares on log-log (b ≈ 0: constant,
# b ≈ 1: linear). Online cost is per query, so the machine time is linear in the query rate; `max queries/s` is
# 1 / online seconds per query, one query at a time. The machine is shared with background jobs: timings are noisy.

# %%
# NBVAL_IGNORE_OUTPUT
# wall-clock timings on nested libraries: measured, not reproducible to the digit
from toolkit.methods import scaling as S
from toolkit.methods.catalog import ENCODER_DOCS_PER_SECOND

points, scale_quality = S.run(cfg, sets, methods=yours)
library_size = len(sets["I1"].corpus)
all_costs = S.benchmark_costs(result)
growth = S.growth_table(points, all_costs, library_size, mpnet_docs_per_second=ENCODER_DOCS_PER_SECOND["mpnet"],
                        parts=result.parts)
fits = S.fit_table(growth)
format_table(fits, metrics=[])

# %%
# NBVAL_CHECK_OUTPUT
# the nested libraries and the measured methods' NDCG@5 on them (committed vectors: deterministic)
gold_apis = len({d for g in B.IN_DOMAIN for r in sets[g].qrels.values() for d in r})
S.record(rec, points, scale_quality, growth, fits, gold=gold_apis)
sizes_table = scale_quality.pivot(index="size", columns="method", values="ndcg@5")
metric_columns = list(sizes_table.columns)
sizes_table.insert(0, "gold APIs kept", gold_apis)
sizes_table.insert(1, "queries", int(scale_quality["queries"].iloc[0]))
format_table(sizes_table, metrics=metric_columns, caption="NDCG@5 (x100) on the nested libraries")

# %%
# NBVAL_IGNORE_OUTPUT
# offline seconds and online seconds per query per size (measured and derived), and batched against one per call
display(format_table(growth.pivot(index="method", columns="size", values=["offline s", "online s/query"])
                     .loc[fits.index], metrics=[]))
format_table(S.batching_table(points), metrics=[])

# %%
# NBVAL_IGNORE_OUTPUT
# the y values are measured timings
fig_scaling = S.scaling_figure(growth, rec.figure_dir() / f"scaling_{profile}.png")

# %% [markdown]
# ### Reading: growth, query rate, and what the `paper` profile needs

# %% tags=["hide-input"] jupyter={"source_hidden": true}
# NBVAL_IGNORE_OUTPUT
# formatted from the measured timings
display(Markdown(S.reading(fits, growth, points, S.batching_table(points)) + "\n\n**The `paper` profile** "
                 "cannot run here; it needs:\n\n" + S.paper_needs(all_costs, fits, library_size)))

# %%
rec.extra["pending"] = B.pending_table(result).reset_index().to_dict(orient="records")
rec.extra["costs"] = costs.reset_index().to_dict(orient="records")
rec.extra["pareto_front"] = B.pareto_front(B.pareto_points(board))
path = rec.save()
print(f"{len(rec.cells)} cells -> {path.relative_to(path.parents[2])}")
