"""Issue 50's budget control: the main reranker retrained on every training query, paired with the main run."""
from __future__ import annotations

import numpy as np
import pytest

from toolkit.toolrerank import budget
from toolkit.toolrerank.config import config_for
from toolkit.toolrerank.splits import SUBSETS


def _per_query(shift: dict[str, float], seed: int = 0, n: int = 40) -> dict:
    """{method: {subset: {qid: Recall@5}}}: a shared base per query, each method moved by ``shift[method]``."""
    rng = np.random.default_rng(seed)
    base = {s: {f"{s}-q{i}": float(rng.uniform(0.2, 0.8)) for i in range(n)} for s in SUBSETS}
    return {m: {s: {q: min(1.0, max(0.0, v + d)) for q, v in base[s].items()} for s in SUBSETS}
            for m, d in shift.items()}


MAIN = {"DPR": 0.0, "Rerank-10": -0.10, "Rerank-30": -0.2, "Rerank-50": -0.3, "ToolRerank": -0.1}


def test_the_comparison_pairs_queries_and_reads_zero_for_the_shared_dpr():
    full = {**MAIN, "Rerank-10": 0.0, "ToolRerank": 0.05}
    t = budget.comparison_table(_per_query(MAIN), _per_query(full))
    assert t.loc["DPR", "all-avg diff"] == pytest.approx(0.0) and t.loc["DPR", "all-avg p"] == 1.0
    assert t.loc["Rerank-10", "all-avg diff"] == pytest.approx(10.0, abs=0.5)      # points, clipped at [0, 1]
    assert t.loc["Rerank-10", "all-avg p"] < 0.001
    assert t.loc["Rerank-30", "all-avg diff"] == pytest.approx(0.0)
    assert t.loc["ToolRerank", "seen-avg full"] > t.loc["ToolRerank", "seen-avg main"]
    assert int(t.loc["DPR", "n"]) == 40 * len(SUBSETS)
    v = budget.versus_dpr(_per_query(full))
    assert v.loc["Rerank-10", "all-avg minus DPR"] == pytest.approx(0.0) and v.loc["Rerank-10", "p"] == 1.0
    assert v.loc["Rerank-50", "all-avg minus DPR"] < -20 and v.loc["Rerank-50", "p"] < 0.001


def test_unpaired_or_missing_rows_are_refused():
    main, full = _per_query(MAIN), _per_query(MAIN)
    del full["Rerank-30"]
    with pytest.raises(KeyError, match="Rerank-30"):
        budget.comparison_table(main, full)
    other = _per_query(MAIN, n=39)                          # other queries: not a paired comparison
    with pytest.raises(ValueError):
        budget.comparison_table(main, other)


@pytest.mark.parametrize("full_r10, expect", [
    (0.0, "within noise of DPR"),          # the full budget closes the gap
    (0.08, "reranking helps at the full budget"),
    (-0.09, "does not explain it"),
])
def test_the_reading_follows_the_numbers(full_r10, expect):
    full = {**MAIN, "Rerank-10": full_r10}
    t = budget.comparison_table(_per_query(MAIN), _per_query(full))
    text = budget.reading(t, budget.versus_dpr(_per_query(full)), 26000, 6000)
    assert expect in text and "on every training query (26,000 pairs against this run's 6,000" in text
    assert "with ce_queries=32 (" in budget.reading(t, budget.versus_dpr(_per_query(full)), 1, 1,
                                                    budget_setup={"ce_queries": 32})
    if full_r10 == 0.0:
        assert "closing 100 % of Rerank-10's gap" in text
    assert "Rerank-30, Rerank-50, ToolRerank still lose to DPR" in text        # MAIN's deeper lists stay below


def test_the_budget_config_changes_the_reranker_only_and_keeps_the_samples():
    cfg = config_for("standard")
    assert cfg.budget_setup == {"ce_queries": 0} and not cfg.budget_train_missing
    b = budget.budget_config(cfg)
    assert b.setup.ce_queries == 0 and cfg.setup.ce_queries == 2000
    for stage in ("dual_encoder", "classifier"):                 # the committed DPR vectors and the classifier serve it
        assert b.setup.stage_params(stage) == cfg.setup.stage_params(stage)
    assert b.setup.reranker_dir != cfg.setup.reranker_dir
    assert (b.subset_queries, b.dev_queries, b.eval_seed, b.depth) == (cfg.subset_queries, cfg.dev_queries,
                                                                      cfg.eval_seed, cfg.depth)
    assert b.draw_seeds == () and b.variants == () and b.alone_queries == 0
    with pytest.raises(ValueError, match="budget_setup may change reranker fields"):
        config_for("standard", budget_setup={"de_epochs": 2})
    with pytest.raises(ValueError, match="budget_setup is empty"):
        budget.budget_config(config_for("standard", budget_setup={}))
    with pytest.raises(TypeError, match="budget_setup parameter 'ce_queries' must be int"):
        config_for("standard", budget_setup={"ce_queries": "all"})    # checked by type like any override


def test_the_recorded_cells_are_fractions_with_their_n():
    class Rec:
        cells: list = []

        def add(self, **kw):
            self.cells.append(kw)
    rec = Rec()
    t = budget.comparison_table(_per_query(MAIN), _per_query({**MAIN, "Rerank-10": 0.0}))
    budget.record_budget(rec, t, 26292, {"ce_queries": 0})
    assert len(rec.cells) == len(budget.METHODS) * len(budget.PARTS) * 3
    cell = {(c["dataset"], c["method"], c["metric"]): c for c in rec.cells}
    assert cell[("all-avg", "Rerank-10", "recall@5_diff")]["value"] == pytest.approx(0.10, abs=0.005)
    assert cell[("all-avg", "DPR", "p_full_vs_main")]["value"] == 1.0
    assert all(c["n_queries"] == 40 * len(SUBSETS) and "every training query (26292 pairs)" in c["note"]
               for c in rec.cells)
