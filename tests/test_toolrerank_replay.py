"""The committed ToolRerank score cache reproduces the standard run's numbers with every model patched to
fail if called (issue 20: a fresh clone replays the standard profile in seconds, without training)."""
from __future__ import annotations

import json

import pytest

from toolkit.paths import REPO

STANDARD = REPO / "results" / "10_toolrerank" / "standard.json"


def _standard():
    data = json.loads(STANDARD.read_text())
    cache = data.get("score_cache")
    if not cache or not (REPO / cache).is_file():
        pytest.skip("the standard run has no committed score cache yet (its models are trained in the background; "
                    "issue 20)")
    return data, REPO / cache


def test_standard_tables_replay_without_a_model(monkeypatch):
    data, cache = _standard()
    import toolkit.retrieval.dense as dense
    from toolkit.toolrerank import experiment, reranker, classifier, score_cache, tables
    from toolkit.toolrerank.config import config_for
    from toolkit.toolrerank.pipeline import ToolRerankConfig
    from toolkit.toolrerank.splits import seen_tools

    def no_model(*a, **k):
        raise AssertionError("the replay must not load or call a model")
    for target, name in [(experiment, "train_all"), (experiment, "load_models"), (reranker.Reranker, "__init__"),
                         (classifier.QueryClassifier, "__init__"), (dense.DenseRetriever, "embed")]:
        monkeypatch.setattr(target, name, no_model)
    cfg = config_for("standard", **data["parameters"].get("overrides", {}))
    split = experiment.toollens_split(cfg.setup)
    assert score_cache.cache_path(cfg, split) == cache, "the committed cache is not this configuration's"
    sets = experiment.eval_sets(split, cfg.subset_queries, cfg.dev_queries, seed=cfg.eval_seed)
    cands = score_cache.load(cache, sets, seen_tools(split.train))
    cands.pop("dev")
    best = ToolRerankConfig(**data["best_config"])
    t3 = tables.table3(cands, {n: {"ndcg@5": 0.0, "recall@5": 0.0} for n in cands}, best)
    want = {(c["method"], c["metric"]): c["value"] for c in data["cells"]
            if c["table"] == "3" and c["dataset"] == "all-avg" and c["method"] != "BM25"}
    for (method, metric), v in want.items():
        assert t3[method]["all-avg"][metric] == pytest.approx(v, abs=1e-9), (method, metric)
