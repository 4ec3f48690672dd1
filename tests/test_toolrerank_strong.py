"""The reranker trained to strength (toolkit.toolrerank.strong, issue 82 item 1) at toy scale."""
import math

import pytest

from toolkit.toolrerank import strong as S

DOC = ('category_name:Travel, tool_name:Skyscanner, api_name:Search Place, api_description:Find airports by name., '
       'required_params: [{"name": "query", "type": "STRING"}], optional_params: [], '
       'return_schema: {"data": [{"iata": "LHR", "name": "London Heathrow"}]}')


def test_compact_text_puts_name_and_description_first_and_drops_the_return_schema():
    out = S.compact_text(DOC)
    assert out == "Search Place (Skyscanner): Find airports by name. | required: query | Travel"
    assert len(out) < len(DOC) / 2 and "iata" not in out
    with pytest.raises(ValueError, match="not a ToolLens document text"):
        S.compact_text("Search Place: finds airports")


def test_negatives_come_from_dpr_ranks_1_10_and_11_30_one_group_per_gold_api():
    ranked = {"q": [f"d{i}" for i in range(1, 41)]}            # d1 at rank 1 ... d40 at rank 40
    qrels = {"q": {"d2": 1, "d15": 1, "d3": 0}}               # d3 judged 0: never a negative either
    groups = S.sample_groups(qrels, ranked, neg_top=4, neg_mid=2, seed=0)
    assert [g.gold for g in groups] == ["d2", "d15"]
    for g in groups:
        assert len(g.negatives) == 6 and not {"d2", "d15", "d3"} & set(g.negatives)
        assert sum(1 <= r <= 10 for r in g.ranks) == 4 and sum(11 <= r <= 30 for r in g.ranks) == 2
        assert all(int(d[1:]) == r for d, r in zip(g.negatives, g.ranks))
    assert groups[0].negatives == groups[1].negatives           # the query's negatives, shared by its gold APIs
    assert S.sample_groups(qrels, ranked, 4, 2, seed=0) == groups
    assert S.sample_groups(qrels, ranked, 4, 2, seed=1) != groups
    rnd = S.sample_groups(qrels, ranked, 1, 0, seed=0, random_pool=["d2", "x1", "x2", "x3"], random_neg=2)
    assert all(sum(r == 0 for r in g.ranks) == 2 and "d2" not in g.negatives for g in rnd)
    with pytest.raises(ValueError, match="'q2' has no DPR ranking"):
        S.sample_groups({"q2": {"d1": 1}}, ranked, 4, 2, seed=0)


def test_bucketed_batches_cover_every_item_once_and_pad_less():
    import random
    lengths = [random.Random(i).randint(10, 200) for i in range(1000)]
    plain = S.bucket_batches(lengths, 8, seed=3, bucketed=False)
    bucketed = S.bucket_batches(lengths, 8, seed=3)
    for batches in (plain, bucketed):
        assert sorted(i for b in batches for i in b) == list(range(1000)) and max(map(len, batches)) == 8
    assert S.padded_tokens(bucketed, lengths) < 0.7 * S.padded_tokens(plain, lengths)
    assert S.bucket_batches(lengths, 8, seed=3) == bucketed and S.bucket_batches(lengths, 8, seed=4) != bucketed
    spread = [max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in bucketed]
    assert sorted(spread)[len(spread) // 2] < 15               # a typical batch holds similar lengths


def test_listwise_loss_is_the_softmax_cross_entropy_of_the_gold_api_per_group():
    torch = pytest.importorskip("torch")
    logits = torch.tensor([2.0, 0.0, 1.0, 0.5, 0.5])          # group 1: gold 2.0 vs 0, 1; group 2: gold 0.5 vs 0.5
    want = (-(2 - math.log(math.exp(2) + 1 + math.e)) + math.log(2)) / 2
    assert float(S.listwise_loss(logits, [3, 2])) == pytest.approx(want, rel=1e-6)
    assert float(S.listwise_loss(torch.tensor([9.0, 0.0, 0.0]), [3])) < 1e-3   # gold far ahead: ~0
    with pytest.raises(ValueError, match="sizes add up to 4"):
        S.listwise_loss(logits, [2, 2])
    bce = S.pointwise_loss(torch.tensor([0.0, 0.0]), [2])
    assert float(bce) == pytest.approx(math.log(2))


def test_early_stopping_stops_after_patience_evaluations_without_a_rise():
    es = S.EarlyStopping(patience=2)
    assert es.update(300, 0.50) and es.update(600, 0.55) and not es.stop
    assert not es.update(900, 0.55) and not es.stop             # a tie is not a rise
    assert not es.update(1200, 0.54) and es.stop
    assert es.best == 0.55 and es.best_step == 600 and [c["step"] for c in es.curve] == [300, 600, 900, 1200]
    again = S.EarlyStopping(**es.state())                       # a resumed run goes on counting
    assert again.stop and again.curve == es.curve


def test_the_head_trains_at_its_own_learning_rate():
    torch = pytest.importorskip("torch")
    m = torch.nn.ModuleDict({"encoder": torch.nn.Linear(2, 2), "classifier": torch.nn.Linear(2, 1)})
    groups = S.param_groups(m, lr=1e-5, head_lr=1e-3)
    head = [g for g in groups if g["lr"] == 1e-3]
    assert sum(p.numel() for g in head for p in g["params"]) == 3
    with pytest.raises(ValueError, match="no parameter name holds"):
        S.param_groups(torch.nn.Linear(2, 1), 1e-5, 1e-3)


def test_configurations_and_the_plan():
    assert S.strong_config().loss == "listwise" and S.strong_config("strong pointwise BCE").loss == "bce"
    assert S.strong_config("strong + random library negatives").group_size == 9
    with pytest.raises(ValueError, match="loss must be"):
        S.strong_config(loss="hinge")
    qrels = {f"q{i}": {"a": 1, "b": 1, "c": 0} for i in range(100)}
    p = S.plan(qrels, S.StrongConfig(batch_groups=8), pairs_per_second=10.0, expected_epochs=2)
    assert p["groups (query, gold API)"] == 200 and p["pairs per epoch"] == 1400 and p["steps per epoch"] == 25
    assert p["hours per seed"] == pytest.approx(2 * 1400 / 10 / 3600 + (2 * 25 / 300) * 2000 / 30 / 3600, abs=0.01)
    assert "hours per seed" not in S.plan(qrels, S.StrongConfig(), None)


class _Toy:
    """A bag-of-hashed-words cross-encoder stand-in: an encoder embedding and a classifier head."""

    def __init__(self, torch):
        torch.manual_seed(0)
        self.m = torch.nn.ModuleDict({"encoder": torch.nn.EmbeddingBag(64, 8),
                                      "drop": torch.nn.Dropout(0.2), "classifier": torch.nn.Linear(8, 1)})
        self.torch = torch

    def score(self, pairs):
        ids = [[hash(w) % 64 for w in (q + " " + d).split()] for q, d in pairs]
        flat = self.torch.tensor([i for x in ids for i in x])
        offsets = self.torch.tensor([0] + [len(x) for x in ids[:-1]]).cumsum(0)
        return self.m["classifier"](self.m["drop"](self.m["encoder"](flat, offsets))).squeeze(-1)


def test_the_trainer_resumes_from_the_store_bit_for_bit_and_stops_early(tmp_path):
    torch = pytest.importorskip("torch")
    ranked = {f"q{i}": [f"d{(i + j) % 40}" for j in range(30)] for i in range(24)}
    qrels = {q: {r[3]: 1} for q, r in ranked.items()}
    groups = S.sample_groups(qrels, ranked, 2, 1, seed=0)
    text = lambda x, is_query: f"text of {x} " + ("query" if is_query else "api")   # noqa: E731
    cfg = S.StrongConfig(batch_groups=4, max_epochs=2, eval_every=4, patience=50, checkpoint_every=5)
    lengths = [len(g.negatives) + int(g.qid[1:]) % 5 for g in groups]
    kw = dict(base="toy", base_sha256="0" * 64, command="pytest", root=tmp_path, log=None)

    whole = _Toy(torch)
    rec = S.train_groups("whole", whole.m, whole.score, groups, text, lengths, cfg, 0, **kw,
                         dev_eval=lambda: 0.5)
    assert rec["steps"] == 12 and not rec["stopped_early"] and len(rec["curve"]) == 3
    first = _Toy(torch)
    S.train_groups("cut", first.m, first.score, groups, text, lengths, cfg, 0, max_steps=5, **kw, dev_eval=lambda: 0.5)
    torch.manual_seed(123)                                        # another process: other generators
    second = _Toy(torch)
    rec2 = S.train_groups("cut", second.m, second.score, groups, text, lengths, cfg, 0, **kw, dev_eval=lambda: 0.5)
    assert rec2["steps"] == 12 and rec2["steps_this_call"] == 7 and rec2["curve"] == rec["curve"]
    for k, v in whole.m.state_dict().items():
        assert torch.equal(v, second.m.state_dict()[k]), k
    scores = iter([0.3, 0.4, 0.4, 0.35, 0.2])
    stop = _Toy(torch)
    rec3 = S.train_groups("stop", stop.m, stop.score, groups, text, lengths, S.StrongConfig(
        batch_groups=2, max_epochs=2, eval_every=2, patience=2, checkpoint_every=5), 0, **kw,
        dev_eval=lambda: next(scores))
    assert rec3["stopped_early"] and rec3["steps"] == 8 and rec3["best_step"] == 4
    from toolkit import checkpoints as C
    assert C.load("stop-best", root=tmp_path, record=False).manifest["steps_done"] == 4
    with pytest.raises(ValueError, match="another configuration"):
        S.train_groups("cut", second.m, second.score, groups, text, lengths, replace_cfg(cfg), 0, **kw)


def replace_cfg(cfg):
    from dataclasses import replace
    return replace(cfg, lr=1e-3)
