"""Issue 50 item 4: held-out categories in disjoint blocks per draw, Recall@5 per held-out category, draw intervals."""
from __future__ import annotations

import math

import numpy as np
import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.toolrerank import draws as draws_mod
from toolkit.toolrerank.config import FAIR_STANDARD, config_for, first_run_config
from toolkit.toolrerank.experiment import Setup
from toolkit.toolrerank.pipeline import Candidates, ToolRerankConfig
from toolkit.toolrerank.splits import category_blocks, category_counts, make_split, query_category
from toolkit.toolrerank.tables import by_category

from test_toolrerank import _toy_split_data

# The score-cache (and model-directory) names the smoke and standard profiles replay, computed before the category
# blocks were added: the new Setup fields at their defaults must leave every one unchanged (the committed
# data/score_cache/toolrerank/standard-*.json.gz are four of them).
KEYS_BEFORE = {
    "smoke": {
        "main": "smoke-4f0302e31cbb.json.gz", "model_root": "smoke-175216f6e5d8",
        "alone": "smoke-alone-52e606b615c4.json.gz",
        "draw0": "smoke-draw0-a8473331d94d.json.gz", "draw1": "smoke-draw1-1b349b285fb8.json.gz",
        "variant fine-tuned DPR + fresh head": "smoke-variant-fine-tuned-dpr--fresh-head-f695d02110b3.json.gz",
        "alone fine-tuned DPR + fresh head": "smoke-alone-variant-fine-tuned-dpr--fresh-head-4cb54ec15779.json.gz",
        "variant MiniLM + library random negatives":
            "smoke-variant-minilm--library-random-negatives-3d15dda5d621.json.gz",
        "alone MiniLM + library random negatives":
            "smoke-alone-variant-minilm--library-random-negatives-3b1461aa0f98.json.gz",
    },
    "standard": {
        "main": "standard-36010b63eb66.json.gz", "model_root": "standard-3d2964b4eb56",
        "alone": "standard-alone-2f825c22bd03.json.gz",
        "draw0": "standard-draw0-b50c3e58bb5a.json.gz", "draw1": "standard-draw1-8dffd2152ec1.json.gz",
        "draw2": "standard-draw2-f9495035892a.json.gz",
    },
}
HELDOUT_BEFORE = {"smoke": {"main": ["Business", "Gaming"], 0: ["Business", "Gaming"], 1: ["Gaming", "Sports"]},
                  "standard": {"main": ["Business", "Gaming"], 0: ["Business", "Gaming"], 1: ["Gaming", "Sports"],
                               2: ["Email", "eCommerce"]}}


def _keys(cfg) -> tuple[dict, dict]:
    from toolkit.toolrerank import alone, score_cache
    from toolkit.toolrerank.draws import draw_config
    from toolkit.toolrerank.experiment import model_root, toollens_split
    from toolkit.toolrerank.variants import slug, variant_config
    split = toollens_split(cfg.setup)
    keys = {"main": score_cache.cache_path(cfg, split).name, "model_root": model_root(split, cfg.setup).name,
            "alone": alone.path_for(cfg, split).name}
    held = {"main": split.heldout_categories}
    for s in cfg.draw_seeds:
        dc = draw_config(cfg, s)
        sp = toollens_split(dc.setup)
        keys[f"draw{s}"] = score_cache.cache_path(dc, sp, draw=s).name
        held[s] = sp.heldout_categories
    for v in cfg.variants:
        vc = variant_config(cfg, v)
        sp = toollens_split(vc.setup)
        keys[f"variant {v}"] = score_cache.cache_path(vc, sp, role=slug(v)).name
        keys[f"alone {v}"] = alone.path_for(vc, sp, slug(v)).name
    return keys, held


@pytest.mark.parametrize("profile", ["smoke", "standard"])
def test_the_smoke_and_first_standard_profiles_keep_every_cache_key(profile):
    # the first standard runs' configuration stays reachable (first_run_config) with its committed caches' names
    keys, held = _keys(config_for(profile) if profile == "smoke" else first_run_config())
    assert keys == KEYS_BEFORE[profile]
    assert held == HELDOUT_BEFORE[profile]


def test_the_committed_standard_caches_are_the_ones_the_standard_profile_replays():
    from toolkit.paths import REPO
    committed = {p.name for p in (REPO / "data" / "score_cache" / "toolrerank").glob("standard-*.json.gz")}
    wanted = {v for k, v in KEYS_BEFORE["standard"].items() if k == "main" or k.startswith("draw")}
    assert wanted <= committed                              # the first runs' (first_run_config) still replay
    keys, _ = _keys(config_for("standard"))                 # the fair standard's main run and its MiniLM variants
    fair = {keys["main"]} | {v for k, v in keys.items() if k.startswith("variant") and "mpnet" not in k}
    assert len(fair) == 4 and fair <= committed, sorted(fair - committed)


# --- blocks of one fixed shuffle ------------------------------------------------------------------
def test_block_draws_hold_out_disjoint_categories_and_an_impossible_seed_is_an_error():
    tr, te = _toy_split_data()                          # 4 categories, every one eligible with min_category_single=1
    kw = dict(dev_size=4, n_heldout_categories=2, heldout_tool_frac=0.2, min_category_single=1, category_draw="block")
    blocks = category_blocks(tr, 2, min_category_single=1)
    assert len(blocks) == 2 and sorted(blocks[0] + blocks[1]) == ["cat0", "cat1", "cat2", "cat3"]
    splits = [make_split(tr, te, seed=s, **kw) for s in (0, 1)]
    assert [sp.heldout_categories for sp in splits] == blocks
    assert not set(splits[0].heldout_categories) & set(splits[1].heldout_categories)
    assert make_split(tr, te, seed=1, **kw).heldout_tools == splits[1].heldout_tools          # deterministic
    # any shuffle seed cuts a partition; three per block leaves one category never held out
    assert sorted(sum(category_blocks(tr, 2, 1, category_shuffle_seed=5), [])) == ["cat0", "cat1", "cat2", "cat3"]
    assert len(category_blocks(tr, 3, 1)) == 1 and len(category_blocks(tr, 3, 1)[0]) == 3
    with pytest.raises(ValueError, match=r"seed=2 picks block 2 .* only 2 blocks of n_heldout_categories=2"):
        make_split(tr, te, seed=2, **kw)
    with pytest.raises(ValueError, match="n_heldout_categories=5 is more than the 4 eligible categories"):
        make_split(tr, te, seed=0, **{**kw, "n_heldout_categories": 5})
    with pytest.raises(ValueError, match="category_draw must be one of"):
        make_split(tr, te, seed=0, **{**kw, "category_draw": "blocks"})
    # the default draws as before (the committed caches' splits)
    old = dict(dev_size=4, n_heldout_categories=1, heldout_tool_frac=0.2, min_category_single=1, seed=1)
    a, b = make_split(tr, te, **old), make_split(tr, te, category_draw="sample", **old)
    assert (a.heldout_categories, a.heldout_tools, a.subsets) == (b.heldout_categories, b.heldout_tools, b.subsets)


def test_category_counts_and_query_category():
    tr, te = _toy_split_data()
    sp = make_split(tr, te, dev_size=4, n_heldout_categories=2, heldout_tool_frac=0.2, min_category_single=1,
                    category_draw="block", seed=0)
    counts = category_counts(sp)
    assert set(counts) == set(sp.heldout_categories)
    assert sum(c["I1-Cat"] for c in counts.values()) == len(sp.subsets["I1-Cat"])
    assert sum(c["I2-Cat"] for c in counts.values()) == len(sp.subsets["I2-Cat"])
    cross = next(q for q in tr.queries if tr.queries[q].text.startswith("cross"))
    with pytest.raises(ValueError, match="gold tools in 2 categories"):
        query_category(tr, cross)


def test_setup_fields_are_checked_by_name():
    with pytest.raises(ValueError, match="Setup.category_draw must be one of"):
        Setup(category_draw="blocks")
    with pytest.raises(ValueError, match="Setup.n_heldout_categories must be >= 1"):
        Setup(category_draw="block", n_heldout_categories=0)
    with pytest.raises(ValueError, match="Setup.category_shuffle_seed must be >= 0"):
        Setup(category_shuffle_seed=-1)
    with pytest.raises(TypeError, match="category_shuffle_seed"):
        config_for("standard", category_shuffle_seed="one")
    cfg = first_run_config(category_draw="block", n_heldout_categories=3)
    assert cfg.setup.training_params()["category_draw"] == "block"          # a new key, not an old cache's
    assert "category_draw" not in first_run_config().setup.training_params()
    assert config_for("standard").setup.training_params()["category_draw"] == "block"    # the fair standard profile


def test_the_fair_profile_draws_hold_out_three_disjoint_categories_each():
    cfg = config_for("standard")
    assert cfg == config_for("standard", **FAIR_STANDARD) == first_run_config(**FAIR_STANDARD)   # adopted
    assert (cfg.setup.category_draw, cfg.setup.n_heldout_categories, cfg.draw_seeds) == ("block", 3, (0, 1, 2))
    table = draws_mod.heldout_table(cfg)
    per_seed = table.reset_index().groupby("seed")["category"].apply(list).to_dict()
    assert [len(per_seed[s]) for s in (0, 1, 2)] == [3, 3, 3]
    assert len({c for cats in per_seed.values() for c in cats}) == 9 and table.attrs["shared"] == []
    assert (table["I1-Cat queries"] + table["I2-Cat queries"] > 0).all()
    # the first standard draws (category_draw="sample") shared Gaming
    assert draws_mod.heldout_table(first_run_config()).attrs["shared"] == ["Gaming"]
    # a fourth draw has no block of three left among the 11 eligible categories
    from toolkit.toolrerank.experiment import toollens_split
    with pytest.raises(ValueError, match=r"seed=3 picks block 3 .* must be < 3"):
        toollens_split(draws_mod.draw_config(cfg, 3).setup)
    with pytest.raises(ValueError, match="n_heldout_categories=12 is more than the 11 eligible"):
        toollens_split(config_for("standard", category_draw="block", n_heldout_categories=12).setup)


# --- per held-out category, on a tiny fake draw ---------------------------------------------------
def _fake_cands():
    """I1-Cat: qa (category A, gold first in the DPR list), qb (category B, gold sixth: the reranker lifts it);
    I2-Cat: qa2 (category A, two gold APIs, one in the DPR top 5)."""
    docs = {}
    for cat, tool, apis in [("A", "ta", 2), ("A", "tb", 1), ("B", "tc", 2), ("C", "td", 4)]:
        for i in range(apis):
            docs[f"{tool}{i}"] = Document(f"{tool}{i}", cat, tool, f"api{i}", f"{tool} {i}")
    ids = list(docs)
    emb = np.eye(len(ids), dtype=np.float32)

    def cands(qrels, ranked, scores):
        ds = RetrievalDataset("fake", docs, {q: Query(q, f"text {q}") for q in qrels}, qrels)
        return Candidates(ds, ranked, scores, seen={"C/td"}, single_pred={q: len(qrels[q]) == 1 for q in qrels},
                          doc_index={d: i for i, d in enumerate(ids)}, doc_emb=emb, score_fn=lambda q, x: {d: 0.0 for d in x})
    other = ["td0", "td1", "td2", "td3"]
    i1 = cands({"qa": {"ta0": 1}, "qb": {"tc1": 1}},
               {"qa": ["ta0"] + other + ["ta1"], "qb": other + ["tc0", "tc1"]},
               {"qa": {"ta0": 0.9, "ta1": 0.1, **{d: 0.2 for d in other}},
                "qb": {"tc1": 0.95, "tc0": 0.1, **{d: 0.2 for d in other}}})
    i2 = cands({"qa2": {"ta0": 1, "tb0": 1}}, {"qa2": ["ta0"] + other + ["tb0"]},
               {"qa2": {"ta0": 0.9, "tb0": 0.05, **{d: 0.2 for d in other}}})
    return {"I1-Cat": i1, "I2-Cat": i2}


def test_by_category_gives_n_and_recall_per_held_out_category_and_subset():
    rows = {(r["category"], r["subset"]): r for r in by_category(_fake_cands(), ToolRerankConfig(), ["A", "B", "Z"])}
    assert rows[("A", "I1-Cat")]["n"] == 1 and rows[("A", "I1-Cat")]["DPR"] == 1.0
    assert rows[("B", "I1-Cat")]["DPR"] == 0.0 and rows[("B", "I1-Cat")]["Rerank-10"] == 1.0
    assert rows[("A", "I2-Cat")]["DPR"] == 0.5 and rows[("B", "I2-Cat")]["n"] == 0
    assert rows[("B", "I2-Cat")]["DPR"] is None
    pooled = rows[("A", "I1-Cat + I2-Cat")]
    assert pooled["n"] == 2 and pooled["DPR"] == pytest.approx(0.75)          # a mean over the two queries
    assert rows[("Z", "I1-Cat + I2-Cat")]["n"] == 0
    assert set(pooled) == {"category", "subset", "n", "DPR", "Rerank-10", "Rerank-30", "Rerank-50", "ToolRerank"}


def _draw(seed, shift, cats):
    recall = {m: {"seen-avg": 0.5 + shift, "unseen-avg": 0.4 + shift, "all-avg": 0.45 + shift} for m in ("DPR", "ToolRerank")}
    subset = {m: {s: 0.3 + shift for s in ("I1-Inst", "I2-Inst", "I3-Inst", "I1-Tool", "I1-Cat", "I2-Cat")} for m in recall}
    by_cat = [{"category": c, "subset": "I1-Cat", "n": 2, "DPR": 0.5 + shift, "ToolRerank": None if c == "X" else 0.25}
              for c in cats]
    return draws_mod.Draw(seed, {"seen": 0.9, "unseen": 0.7}, recall, {}, {"m_s": 10},
                          {"dev": 5, "I1-Cat": 4, "I2-Cat": 3}, {"categories": cats}, subset_recall=subset,
                          by_category=by_cat)


def test_category_and_interval_tables_and_their_cells():
    from toolkit.results import Recorder
    done = [_draw(0, 0.0, ["A", "X"]), _draw(1, 0.1, ["B"]), _draw(2, 0.2, ["C"])]
    ct = draws_mod.category_table(done)
    assert ct.loc[(1, "B", "I1-Cat"), "DPR"] == pytest.approx(60) and ct.loc[(0, "X", "I1-Cat"), "n"] == 2
    assert math.isnan(ct.loc[(0, "X", "I1-Cat"), "ToolRerank"])
    it = draws_mod.interval_table(done)
    assert it.loc["DPR", ("I1-Cat", "mean")] == pytest.approx(40) and it.loc["DPR", ("I1-Cat", "std")] == pytest.approx(10)
    assert (it.loc["DPR", ("all-avg", "min")], it.loc["DPR", ("all-avg", "max")]) == pytest.approx((45, 65))
    assert draws_mod.interval_text(it).loc["DPR", "I1-Cat"] == "40.0 ± 10.0 [30.0–50.0]"
    assert draws_mod.interval_text(draws_mod.interval_table(done[:1])).loc["DPR", "I1-Cat"] == "30.0 [30.0–30.0]"
    # a draw written before the per-subset values leaves the subsets out, the averages in
    old = draws_mod.Draw(3, {"seen": 1, "unseen": 1}, done[0].recall, {}, {}, {"dev": 1})
    assert {p for p, _ in draws_mod.interval_table(done + [old]).columns} == {"seen-avg", "unseen-avg", "all-avg"}
    rec = Recorder("10_toolrerank", "smoke")
    draws_mod.record_categories(rec, done)
    cells = {(c["table"], c["dataset"], c["method"], c["metric"]): c for c in rec.cells}
    assert all(c["ours_only"] for c in rec.cells)
    c = cells[("draw categories", "B I1-Cat", "DPR", "seed_1")]
    assert c["value"] == pytest.approx(0.6) and c["n_queries"] == 2
    assert ("draw categories", "X I1-Cat", "ToolRerank", "seed_0") not in cells        # no value, no cell
    c = cells[("draw intervals", "I2-Cat", "ToolRerank Recall@5", "max")]
    assert c["value"] == pytest.approx(0.5) and c["n_queries"] == 9
    assert not any(k[0] == "draw intervals" and k[1].endswith("-avg") for k in cells)   # table "draws" has those
