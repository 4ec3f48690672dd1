"""Held-out draws (toolkit.toolrerank.draws): the draw's configuration, the spread and stability tables."""
from __future__ import annotations

import math

import pytest

from toolkit.toolrerank.config import config_for, first_run_config
from toolkit.toolrerank.draws import Draw, claims_by_draw, draw_command, draw_config, record_draws, spread_table


def _draw(seed, seen, unseen, dpr, claims):
    recall = {m: {"seen-avg": dpr + i / 10, "unseen-avg": dpr - i / 10, "all-avg": dpr}
              for i, m in enumerate(["DPR", "ToolRerank"])}
    return Draw(seed, {"seen": seen, "unseen": unseen}, recall, claims, {"m_s": 10}, {"dev": 5, "I1-Inst": 3, "I1-Tool": 4})


def test_draw_config_changes_only_the_seed_the_draw_setup_and_the_sizes():
    cfg = first_run_config()
    d = draw_config(cfg, 2)
    assert d.setup.seed == 2 and d.setup.de_epochs == 1 and d.setup.ce_neg == 1
    assert (d.subset_queries, d.dev_queries, d.draw_seeds) == (100, 200, ())
    assert d.setup.ce_neg_source == cfg.setup.ce_neg_source == "dpr"        # not in draw_setup: the main run's
    # the draw's training differs from the main run's, so do the model and score-cache keys
    assert d.setup.training_params() != cfg.setup.training_params()
    assert draw_config(cfg, 1).setup.training_params() != d.setup.training_params()
    assert draw_command(cfg, 2) == "python scripts/train_toolrerank.py --profile standard --draw 2"


def test_the_fair_standard_draw_0_is_the_main_run_and_replays_its_cache(tmp_path, monkeypatch):
    from toolkit.toolrerank import draws, experiment, score_cache
    cfg = config_for("standard")
    d0 = draw_config(cfg, 0)
    assert d0.setup == cfg.setup and (d0.subset_queries, d0.dev_queries) == (cfg.subset_queries, cfg.dev_queries)
    # run_config: no draw cache, but the main run's cache has the same key -> it is replayed, nothing is trained
    main, missing = tmp_path / "main.json.gz", tmp_path / "draw0.json.gz"
    main.write_bytes(b"x")
    from types import SimpleNamespace
    monkeypatch.setattr(experiment, "toollens_split", lambda setup: SimpleNamespace(train="train"))
    monkeypatch.setattr(experiment, "eval_sets", lambda *a, **k: {})
    monkeypatch.setattr(experiment, "train_all", lambda *a, **k: pytest.fail("trained although the main cache fits"))
    import toolkit.toolrerank.splits as splits
    monkeypatch.setattr(splits, "seen_tools", lambda train: set())
    monkeypatch.setattr(score_cache, "cache_path", lambda c, sp, **k: main)
    read = []
    monkeypatch.setattr(score_cache, "load", lambda path, sets, seen: read.append(path) or {})
    monkeypatch.setattr(score_cache, "meta", lambda path: {"training": {"from": path.name}})
    monkeypatch.setattr(draws, "evaluate_draw", lambda seed, split, cands, training, replayed: (seed, training, replayed))
    assert draws.run_config(d0, lambda split: missing, 0, train_missing=True) == (0, {"from": "main.json.gz"}, True)
    assert read == [main]
    main.unlink()                                       # neither file: pending without train_missing
    assert draws.run_config(d0, lambda split: missing, 0, train_missing=False) is None


def test_bad_draw_parameters_name_the_parameter():
    with pytest.raises(ValueError, match="draw_setup has no parameter 'de_epoch'"):
        config_for("smoke", draw_setup={"de_epoch": 2})
    with pytest.raises(TypeError, match="'ce_neg' must be int"):
        config_for("smoke", draw_setup={"ce_neg": "two"})
    with pytest.raises(ValueError, match="draw_seeds must be distinct"):
        config_for("smoke", draw_seeds=(1, 1))
    with pytest.raises(ValueError, match="draw_subset_queries must be >= 1"):
        config_for("smoke", draw_subset_queries=0)


def test_spread_is_per_seed_then_mean_std_min_max_in_percent():
    draws = [_draw(0, 0.7, 0.8, 0.5, {}), _draw(1, 0.9, 0.6, 0.6, {}), _draw(2, 0.8, 0.7, 0.7, {})]
    t = spread_table(draws)
    gap = t.loc[("gold in DPR top 10", "seen - unseen")]
    assert [gap[f"seed {s}"] for s in range(3)] == pytest.approx([-10, 30, 10])
    assert gap["mean"] == pytest.approx(10) and gap["std"] == pytest.approx(20)      # sample std
    assert (gap["min"], gap["max"]) == pytest.approx((-10, 30))
    assert t.loc[("ToolRerank Recall@5", "seen-avg"), "seed 1"] == pytest.approx(70)
    assert math.isnan(spread_table(draws[:1]).loc[("DPR Recall@5", "all-avg"), "std"])


def test_claims_are_stable_only_when_every_draw_agrees():
    draws = [_draw(0, 1, 1, 1, {"a": "yes", "b": "no"}), _draw(1, 1, 1, 1, {"a": "yes", "b": "yes"}),
             _draw(2, 1, 1, 1, {"a": "yes"})]
    t = claims_by_draw(draws)
    assert t.loc["a", "stable"] == "yes"
    assert t.loc["b", "stable"] == "no" and t.loc["b", "seed 2"] == "n/a"


def test_recorded_draw_cells_are_ours_only_with_their_sizes():
    from toolkit.results import Recorder
    rec = Recorder("10_toolrerank", "smoke")
    draws = [_draw(0, 0.7, 0.8, 0.5, {}), _draw(1, 0.9, 0.6, 0.6, {})]
    record_draws(rec, draws)
    cells = {(c["dataset"], c["method"], c["metric"]): c for c in rec.cells}
    assert all(c["ours_only"] and c["table"] == "draws" for c in rec.cells)
    c = cells[("seen", "gold in DPR top 10", "seed_1")]
    assert c["value"] == pytest.approx(0.9) and c["n_queries"] == 7
    assert cells[("unseen", "gold in DPR top 10", "mean")]["value"] == pytest.approx(0.7)
    assert cells[("unseen", "gold in DPR top 10", "mean")]["n_queries"] == 14
