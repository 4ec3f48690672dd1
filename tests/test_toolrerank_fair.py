"""Issue 50's pieces: the seen-only dev set, the reranker variants, random library negatives, the reranker alone."""
from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.toolrerank import alone
from toolkit.toolrerank.config import config_for
from toolkit.toolrerank.experiment import PROFILES, Setup
from toolkit.toolrerank.reranker import add_random_negatives
from toolkit.toolrerank.splits import dev_touching_heldout, make_split
from toolkit.toolrerank.variants import VARIANTS, slug, variant_config

from test_toolrerank import _toy_split_data


# --- the dev set ----------------------------------------------------------------------------------
def test_seen_dev_pool_holds_out_the_same_tools_and_no_dev_query_touches_them():
    tr, te = _toy_split_data()
    kw = dict(dev_size=12, n_heldout_categories=1, heldout_tool_frac=0.2, min_category_single=1, seed=3)
    old, new = make_split(tr, te, **kw), make_split(tr, te, dev_pool="seen", **kw)
    assert dev_touching_heldout(old) > 0                   # the first runs' dev set leaks held-out tools ...
    assert dev_touching_heldout(new) == 0                  # ... the paper's does not
    assert (new.heldout_categories, new.heldout_tools) == (old.heldout_categories, old.heldout_tools)
    assert len(new.dev.queries) == 12 and not set(new.dev.queries) & (set(new.train.queries) | set(new.pool.queries))
    n = len(tr.queries) + len(te.queries)
    assert len(new.train.queries) + len(new.dev.queries) + len(new.pool.queries) == n
    # the old dev queries that touch held-out tools are test queries now
    assert {q for q in old.dev.queries if q not in new.dev.queries and q not in new.train.queries} <= set(new.pool.queries)
    assert make_split(tr, te, dev_pool="all", **kw).dev.queries.keys() == old.dev.queries.keys()   # default unchanged
    with pytest.raises(ValueError, match="dev_pool must be one of"):
        make_split(tr, te, dev_pool="clean", **kw)


def test_new_setup_fields_at_their_defaults_keep_every_cache_key():
    # the committed score caches are keyed by training_params(): fields added for issue 50 must not enter it
    # while they hold their defaults, or every committed cache would miss
    params = PROFILES["standard"].training_params()
    assert not {"dev_pool", "ce_init", "ce_base", "ce_random_neg"} & set(params)
    from dataclasses import replace
    changed = replace(PROFILES["standard"], dev_pool="seen", ce_init="dpr").training_params()
    assert changed["dev_pool"] == "seen" and changed["ce_init"] == "dpr"
    with pytest.raises(ValueError, match="ce_init must be one of"):
        Setup(ce_init="bert")
    with pytest.raises(ValueError, match="ce_base names a pretrained encoder"):
        Setup(ce_init="dpr", ce_base="mpnet")
    with pytest.raises(ValueError, match="dev_pool must be one of"):
        Setup(dev_pool="clean")


# --- variants -------------------------------------------------------------------------------------
def test_a_variant_changes_the_reranker_only_and_takes_the_variant_sizes():
    cfg = config_for("standard", variant_setup={"ce_epochs": 1, "ce_pos": 1}, variants=tuple(VARIANTS))
    for name, changes in VARIANTS.items():
        v = variant_config(cfg, name)
        assert v.setup.stage_params("dual_encoder") == cfg.setup.stage_params("dual_encoder")   # the shared DPR
        assert v.setup.ce_epochs == 1 and v.setup.ce_pos == 1
        assert all(getattr(v.setup, k) == x for k, x in changes.items())
        assert (v.subset_queries, v.dev_queries, v.draw_seeds, v.variants) == (cfg.variant_subset_queries,
                                                                               cfg.variant_dev_queries, (), ())
    assert len({slug(n) for n in VARIANTS}) == len(VARIANTS)
    assert len({variant_config(cfg, n).setup.reranker_dir for n in VARIANTS}) == len(VARIANTS)
    with pytest.raises(ValueError, match="variant_setup may change reranker fields"):
        config_for("standard", variant_setup={"de_epochs": 1})
    with pytest.raises(ValueError, match="variants must be distinct names"):
        config_for("standard", variants=("no such variant",))


def test_random_negatives_follow_each_positive_seeded_from_the_pool():
    pairs = [("q1", "g1", 1.0), ("q1", "h1", 0.0), ("q2", "g2", 1.0)]
    pool = [f"lib {i}" for i in range(50)]
    out = add_random_negatives(pairs, pool, 2, seed=4)
    assert len(out) == 3 + 2 * 2
    assert out[0] == pairs[0] and out[3] == pairs[1] and out[4] == pairs[2]
    assert all(lab == 0.0 and d in pool and q == "q1" for q, d, lab in out[1:3])
    assert out == add_random_negatives(pairs, pool, 2, seed=4) != add_random_negatives(pairs, pool, 2, seed=5)
    assert add_random_negatives(pairs, pool, 0) == pairs
    with pytest.raises(ValueError, match="fewer than"):
        add_random_negatives(pairs, pool[:1], 2)


def test_library_apis_render_in_toollens_format_and_stay_outside_the_test_library():
    from toolkit.data import load_dataset, load_library
    from toolkit.data.toollens import _FIELDS, render_like_toollens
    from toolkit.toolrerank.experiment import random_negative_pool
    tl = load_dataset("toollens-train")
    lib = load_library()
    doc = next(iter(tl.corpus.values()))
    mine = render_like_toollens(lib[doc.meta["api_key"]])
    m, theirs = _FIELDS.match(mine), _FIELDS.match(doc.text)
    assert m and (m["cat"], m["tool"], m["api"]) == (theirs["cat"], theirs["tool"], theirs["api"])
    assert re.search(r"required_params: \[.*\], optional_params: \[.*\], return_schema: \"\"$", mine)
    pool = random_negative_pool(tl)
    assert len(pool) == len(lib) - len({d.meta["api_key"] for d in tl.corpus.values()})
    assert not set(pool) & {render_like_toollens(lib[d.meta["api_key"]]) for d in tl.corpus.values()}


# --- the reranker alone ---------------------------------------------------------------------------
def _alone_ds():
    docs = {f"d{i}": Document(f"d{i}", "c", f"t{i}", "a", f"doc {i}") for i in range(6)}
    queries = {"q1": Query("q1", "one"), "q2": Query("q2", "two")}
    return RetrievalDataset("toy", docs, queries, {"q1": {"d0": 1, "d3": 1}, "q2": {"d5": 1}})


def test_recall_and_auc_per_query_by_hand():
    ds = _alone_ds()
    ids = sorted(ds.corpus)
    s = np.array([[0.9, 0.8, 0.7, 0.1, 0.6, 0.5],      # q1: gold d0 first, d3 last of 6
                  [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]], np.float32)   # q2: gold d5 first
    v = alone.per_query(ds, ["q1", "q2"], ids, s, k=5)
    # q1: top 5 = d0 d1 d2 d4 d5 -> one of two gold; AUC: d0 beats all 4 non-gold, d3 none -> 4 / 8
    assert v["q1"] == {"recall@5": 0.5, "auc": 0.5}
    assert v["q2"] == {"recall@5": 1.0, "auc": 1.0}


def test_table_pools_seen_and_unseen_with_a_paired_p():
    rng = np.random.default_rng(0)
    per = {m: {s: {f"{s}-{i}": {"recall@5": float(x), "auc": float(x)} for i, x in
                   enumerate(rng.random(20) * (0.5 if m == "DPR" else 1.0))}
               for s in ("I1-Inst", "I1-Cat")} for m in ("DPR", "reranker")}
    t = alone.table(per)
    assert list(t.index) == ["I1-Inst", "I1-Cat", "seen", "unseen"]
    assert t.loc["seen", "n"] == 20 and 0 <= t.loc["unseen", "p auc"] <= 1
    assert t.loc["seen", "reranker recall@5"] > t.loc["seen", "DPR recall@5"]


def test_alone_file_round_trips_in_float16_and_a_damaged_one_names_itself(tmp_path):
    ids, samples = {"I1-Inst": ["d0", "d1", "d2"]}, {"I1-Inst": ["q1", "q2"]}
    scores = {"DPR": {"I1-Inst": np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])}}
    path = tmp_path / "a.json.gz"
    alone.save(path, ids, samples, scores, {"variant": "main"})
    ids2, samples2, scores2, meta = alone.load(path)
    assert (ids2, samples2, meta) == (ids, samples, {"variant": "main"})
    np.testing.assert_allclose(scores2["DPR"]["I1-Inst"], scores["DPR"]["I1-Inst"], atol=1e-3)
    path.write_bytes(gzip.compress(b'{"version": 1, "ids": ['))
    with pytest.raises(ValueError, match=f"{path.name}.*not a readable reranker-alone file"):
        alone.load(path)


def test_variant_table_picks_the_best_dev_rerank10_and_records_no_costs():
    from toolkit.results import Recorder
    from toolkit.toolrerank.draws import Draw
    from toolkit.toolrerank.variants import record_variants, variant_table
    cfg = config_for("standard", variants=tuple(VARIANTS))
    rec3 = {m: {a: 0.5 for a in ("seen-avg", "unseen-avg", "all-avg")} for m in ("DPR", "Rerank-10", "ToolRerank")}

    def draw(dev, secs):
        return Draw(0, {}, rec3, {}, {}, {}, training={"reranker": {"train_pairs": 10, "seconds": secs}},
                    dev_recall={"Rerank-10": dev})
    df = variant_table(cfg, {"pretrained MiniLM + fresh head": draw(0.4, 60),
                             "fine-tuned DPR + fresh head": draw(0.6, 120)})
    assert df["chosen"].tolist() == [False, True]
    assert df.loc["fine-tuned DPR + fresh head", "init"] == "the fine-tuned DPR"
    assert df.loc["pretrained MiniLM + fresh head", "init"] == "minilm"
    rec = Recorder("10_toolrerank", "smoke")
    record_variants(rec, df)
    metrics = {c["metric"] for c in rec.cells}
    assert "dev_Rerank-10_R@5" in metrics and not {"train_min", "train_pairs"} & metrics
    assert any("chosen on dev" in c["note"] for c in rec.cells if c["method"] == "fine-tuned DPR + fresh head")


@pytest.mark.slow
def test_the_fresh_reranker_head_comes_from_the_seed_not_the_process_history():
    torch = pytest.importorskip("torch")
    from toolkit.toolrerank.reranker import load_base_cross_encoder

    def head(seed, burn):
        torch.manual_seed(burn)
        torch.rand(burn)                      # another model trained before in the same process
        m = load_base_cross_encoder("minilm", 64, seed=seed)
        return torch.cat([p.detach().flatten() for n, p in m.model.named_parameters() if "classifier" in n])
    assert torch.equal(head(0, 1), head(0, 1000))
    assert not torch.equal(head(0, 1), head(1, 1))
