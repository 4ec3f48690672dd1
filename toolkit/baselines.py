"""Notebook ``01_baselines``: its configuration (smoke / standard / paper) and its tables — the BM25
and off-the-shelf dense rows it contributes to three papers (Re-Invoke Tables 1/6, ToolRerank Table 3,
the feedback paper's Tables 2/3), from the per-query results of
:func:`toolkit.experiment.evaluate_grid`.

    cfg = config_for("standard", dense_model="mpnet")
    table = baseline_table(per_query)                 # means, the I1/I2/I3/All unions, ToolRerank averages
    record_reinvoke(rec, table, cfg)
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from toolkit.config import overridden
from toolkit.experiment import macro_average, means

GROUPS = ["g1-instruction", "g1-tool", "g1-category", "g2-instruction", "g2-category", "g3-instruction"]
DATASETS = ["toole-single", "toole-multi", "ultratool"] + [f"toolbench-{g}" for g in GROUPS]
METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "recall@1", "recall@5"]
# the papers' ToolBench sets as unions of the StableToolBench groups (every query counted once)
UNIONS = {"toolbench-i1": [f"toolbench-{g}" for g in GROUPS[:3]],
          "toolbench-i2": [f"toolbench-{g}" for g in GROUPS[3:5]],
          "toolbench-i3": ["toolbench-g3-instruction"],
          "toolbench-all": [f"toolbench-{g}" for g in GROUPS]}
# ToolRerank's averages are unweighted means over its subsets
SEEN, UNSEEN = ["g1-instruction", "g2-instruction", "g3-instruction"], ["g1-tool", "g1-category", "g2-category"]
AVERAGES = {"seen-avg": SEEN, "unseen-avg": UNSEEN, "all-avg": GROUPS}


@dataclass(frozen=True)
class BaselinesConfig:
    profile: str = "smoke"
    dense_model: str = "minilm"            # minilm | mpnet | a local sentence-transformers directory
    toolbench_corpus: str = "library"      # library (16,427 APIs) | pool (each group's candidate pools)
    toolbench_release_dir: str | None = None   # paper profile: ToolBench's data/retrieval/ (G1/, G2/, G3/)
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    bm25_method: str = "robertson"         # robertson (Okapi, Robertson & Zaragoza 2009) | lucene
    bm25_stemmer: str | None = None        # None: no stemming, closest to the printed Re-Invoke BM25; or english
    bm25_stopwords: str | None = None      # None: keep stop words; or en
    ties: str = "trec"                     # trec (pytrec_eval's order) | sklearn (tie-averaged, ToolBench's evaluator)
    k: int = 100                           # retrieval depth
    sample_queries: int | None = 20        # queries per dataset, seeded sample (None: all)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.profile not in PROFILE_NAMES:
            raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {self.profile!r}")
        checks = [("toolbench_corpus", ("library", "pool")), ("bm25_method", ("robertson", "lucene")),
                  ("ties", ("trec", "sklearn"))]
        for name, allowed in checks:
            if getattr(self, name) not in allowed:
                raise ValueError(f"01_baselines parameter {name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.k < 10:
            raise ValueError(f"01_baselines parameter k must be >= 10 (nDCG@10 is reported), got {self.k}")
        if self.sample_queries is not None and self.sample_queries < 1:
            raise ValueError(f"01_baselines parameter sample_queries must be >= 1 or None (all), got {self.sample_queries}")
        if self.bm25_k1 < 0 or not 0 <= self.bm25_b <= 1:
            raise ValueError(f"01_baselines: bm25_k1 must be >= 0 and bm25_b in [0, 1], got {self.bm25_k1}, {self.bm25_b}")

    @property
    def corpus(self) -> str:
        """The ToolBench corpus this run searches (smoke: the candidate pools, for speed)."""
        return "pool" if self.profile == "smoke" else self.toolbench_corpus

    def bm25_params(self) -> dict:
        return dict(k1=self.bm25_k1, b=self.bm25_b, method=self.bm25_method, stemmer=self.bm25_stemmer,
                    stopwords=self.bm25_stopwords)


PROFILE_NAMES = ("smoke", "standard", "paper")
PROFILES = {
    # a seeded 20 queries per dataset against the candidate pools (seconds)
    "smoke": BaselinesConfig(profile="smoke"),
    # every query against the whole 16,427-API library
    "standard": BaselinesConfig(profile="standard", sample_queries=None),
    # as standard, plus ToolBench's own test sets when toolbench_release_dir is given
    "paper": BaselinesConfig(profile="paper", sample_queries=None),
}


def config_for(profile: str, **overrides) -> BaselinesConfig:
    """The profile's configuration with ``overrides`` (unknown names and wrong types are errors)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {profile!r}")
    return overridden("01_baselines", PROFILES[profile], overrides)


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------

def baseline_table(per_query: pd.DataFrame) -> pd.DataFrame:
    """Means per (dataset, method, metric) with the I1/I2/I3/All unions (micro) and ToolRerank's
    seen/unseen/all averages (macro over groups); columns dataset, method, metric, mean, count."""
    table = means(per_query, UNIONS)
    avgs = [macro_average(table, name, [f"toolbench-{g}" for g in parts]) for name, parts in AVERAGES.items()]
    return pd.concat([table, *avgs], ignore_index=True)


def lookup(table: pd.DataFrame) -> dict[tuple[str, str, str], tuple[float, int]]:
    return {(r.dataset, r.method, r.metric): (r.mean, r.count) for r in table.itertuples()}


def record_reinvoke(rec, table: pd.DataFrame, dense_model: str) -> None:
    """Re-Invoke Table 1 (nDCG@5) and Table 6 (nDCG@1/5, recall@1/5): BM25 and dense on I1/I2/I3, ToolE."""
    value, note = lookup(table), f"{dense_model} in place of Vertex AI textembedding-gecko@003"
    for name in ["toolbench-i1", "toolbench-i2", "toolbench-i3", "toole-single", "toole-multi"]:
        for method in ["BM25", "Dense"]:
            for tab, metrics in (("1", ["ndcg@5"]), ("6", ["ndcg@1", "ndcg@5", "recall@1", "recall@5"])):
                for metric in metrics:
                    mean, n = value[(name, method, metric)]
                    rec.add(paper="reinvoke", table=tab, dataset=name, method=method, metric=metric, value=mean,
                            n_queries=n, note=note if method == "Dense" else "")


def record_toolrerank(rec, table: pd.DataFrame) -> None:
    """ToolRerank Table 3's BM25 row: the six groups and the seen/unseen/all averages, NDCG@5 and Recall@5."""
    value = lookup(table)
    for name in [f"toolbench-{g}" for g in GROUPS] + list(AVERAGES):
        for metric in ["ndcg@5", "recall@5"]:
            mean, n = value[(name, "BM25", metric)]
            rec.add(paper="toolrerank", table="3", dataset=name, method="BM25", metric=metric, value=mean, n_queries=n)


def record_feedback(rec, table: pd.DataFrame, dense_model: str) -> None:
    """The feedback paper's Table 2 (I1/I2/I3/All, NDCG@1/3/5) and Table 3 (UltraTool, NDCG@1/3/5/10):
    BM25 and the dense model labelled "Ada Embedding"."""
    value, note = lookup(table), f"{dense_model} in place of OpenAI text-embedding-ada-002"
    rows = [(n, ["ndcg@1", "ndcg@3", "ndcg@5"], "2") for n in ["toolbench-i1", "toolbench-i2", "toolbench-i3",
                                                               "toolbench-all"]]
    rows.append(("ultratool", ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"], "3"))
    for name, metrics, tab in rows:
        for method, label in [("BM25", "BM25"), ("Dense", "Ada Embedding")]:
            for metric in metrics:
                mean, n = value[(name, method, metric)]
                rec.add(paper="iterative_feedback", table=tab, dataset=name, method=label, metric=metric,
                        value=mean, n_queries=n, note=note if method == "Dense" else "")


# BM25 tokenization/IDF variants the reading sets beside our setting on ToolE single-tool: no paper
# states its tokenization, so the spread these give is the uncertainty of the BM25 rows
BM25_VARIANTS = {
    "rank_bm25 IDF floor": ("bm25-rank", {}),
    "Lucene IDF": ("bm25", {"method": "lucene"}),
    "Snowball stemming + stop words": ("bm25", {"stemmer": "english", "stopwords": "en"}),
}
