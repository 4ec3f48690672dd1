"""Query generation (Kachuee et al. 2025): split protocol, interleaved retrieval, calibration, SFT —
all without an LLM (echo backend, a stub tokenizer and a tiny random Qwen2)."""
from __future__ import annotations

import json

import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.querygen import generation as gen
from toolkit.querygen.data import SplitConfig, api_description, api_fields, check_no_contamination
from toolkit.querygen.retrieval import QueryIndex, interleave, query_sets


# --- interleaving (§4.2) ------------------------------------------------------------------------

def test_interleave_takes_one_from_each_list_in_turn_and_skips_duplicates():
    lists = [["a", "b", "c"], ["b", "d", "e"], ["a", "f"]]
    # rank 1 of each list: a, b, (a dup); rank 2: (b dup), d, f; rank 3: c, e
    assert interleave(lists, 10) == ["a", "b", "d", "f", "c", "e"]
    assert interleave(lists, 3) == ["a", "b", "d"]
    assert interleave([], 5) == []
    with pytest.raises(ValueError, match="k must be >= 1"):
        interleave(lists, 0)


def test_query_sets_append_the_utterance_last_and_fall_back_to_it():
    gen_q = {"q1": ["weather api", "  "], "q2": []}
    utt = {"q1": "will it rain", "q2": "book a cab", "q3": "hi"}
    assert query_sets(gen_q, utt) == {"q1": ["weather api", "will it rain"], "q2": ["book a cab"], "q3": ["hi"]}
    assert query_sets(gen_q, utt, append_utterance=False)["q1"] == ["weather api"]
    # no usable generated query: the utterance stands in, so the request is never scored empty
    assert query_sets(gen_q, utt, append_utterance=False)["q2"] == ["book a cab"]


class _StubIndex(QueryIndex):
    """QueryIndex whose per-query ranking is given (no encoder)."""

    def __init__(self, rankings, doc_ids):
        self.rankings, self.doc_ids = rankings, doc_ids

    def ranked(self, texts, k, restrict=None):
        out = []
        for t in texts:
            r = [d for d in self.rankings[t] if restrict is None or d in restrict]
            out.append(r[:k])
        return out


def test_query_index_run_interleaves_each_requests_lists_with_rank_scores():
    idx = _StubIndex({"x": ["d1", "d2", "d3"], "y": ["d3", "d1", "d4"], "u": ["d5", "d1"]}, ["d1", "d2", "d3", "d4", "d5"])
    run = idx.run({"q": ["x", "y", "u"]}, k=4)
    assert list(run["q"]) == ["d1", "d3", "d5", "d2"]
    assert list(run["q"].values()) == [4.0, 3.0, 2.0, 1.0]
    run = idx.run({"q": ["x", "y"]}, k=3, restrict={"d2", "d4"})
    assert list(run["q"]) == ["d2", "d4"]


# --- the split protocol (§4.1) on ToolLens -------------------------------------------------------

@pytest.fixture(scope="module")
def split():
    from toolkit.querygen.data import make_split
    return make_split(SplitConfig())


def test_split_is_clean_and_counts_what_it_drops(split):
    check_no_contamination(split)
    st = split.stats()
    assert st["apis_before_filter"] == 464 and st["requests_before_filter"] == 18770
    kept = sum(st[f"{k}_requests"] for k in ("train", "dev", "in-domain", "out-of-domain"))
    dropped = st["dropped_api_filtered"] + st["dropped_too_many_gold"] + st["dropped_straddling"]
    assert kept + dropped == 18770          # every request is either in a set or counted as dropped
    assert st["dev_requests"] == 200 and st["out_of_domain_tools"] > 0
    ood_tools = {d.tool for i, d in split.corpus.items() if i not in split.in_domain_docs}
    in_tools = {split.corpus[i].tool for i in split.in_domain_docs}
    assert not ood_tools & in_tools         # split by tool name: no tool on both sides
    for doc in split.corpus.values():       # the description filter holds
        words = len(api_fields(Document(doc.doc_id, "", "", "", doc.meta["toollens_text"]))[2].split())
        assert 3 <= words <= 100


def test_contamination_check_can_fail(split):
    ood_doc = next(d for d in split.corpus if d not in split.in_domain_docs)
    qid = next(iter(split.test_in.qrels))
    split.test_in.qrels[qid][ood_doc] = 1
    try:
        with pytest.raises(AssertionError, match="other side"):
            check_no_contamination(split)
    finally:
        del split.test_in.qrels[qid][ood_doc]


def test_split_config_rejects_bad_values():
    with pytest.raises(ValueError, match="ood_tool_share"):
        SplitConfig(ood_tool_share=1.0)
    with pytest.raises(ValueError, match="min_desc_words"):
        SplitConfig(min_desc_words=10, max_desc_words=5)


def test_api_description_keeps_tool_api_and_description():
    doc = Document("0", "Food", "worldwide_recipes", "suggestions",
                   "category_name:Food, tool_name:Worldwide Recipes, api_name:Suggestions, api_description:Get\n"
                   "Suggestions, required_params: [], optional_params: []")
    assert api_description(doc) == "Worldwide Recipes: Suggestions: Get Suggestions"


def test_nested_sample_grows_without_losing_members(split):
    small, large = split.test_out.nested_sample(50, seed=3), split.test_out.nested_sample(120, seed=3)
    assert len(small.queries) == 50 and set(small.queries) <= set(large.queries)
    assert split.test_out.nested_sample(None) is split.test_out
    with pytest.raises(ValueError, match="sample size"):
        split.test_out.nested_sample(0)


# --- calibration (§4.3) with a deterministic stand-in model ---------------------------------------

def _tiny_dataset():
    corpus = {f"d{i}": Document(f"d{i}", "c", f"t{i}", f"a{i}", f"doc {i}") for i in range(4)}
    queries = {"q1": Query("q1", "alpha request"), "q2": Query("q2", "beta request")}
    return RetrievalDataset("tiny", corpus, queries, {"q1": {"d2": 1}, "q2": {"d3": 1}})


def test_calibrate_picks_the_temperature_whose_queries_retrieve_best(tmp_path):
    from toolkit.llm.backends import EchoBackend
    from toolkit.llm.client import LLMClient
    ds = _tiny_dataset()
    gold_text = {"alpha": "GOLD-d2", "beta": "GOLD-d3"}

    def answer(req):   # at T=0.6 the model names the gold API, elsewhere something useless
        text = req.messages()[-1]["content"]
        word = "alpha" if "alpha request" in text else "beta"
        return gold_text[word] if req.sampling.temperature == 0.6 else "Unrelated API: does nothing"

    llm = LLMClient(EchoBackend(answer_fn=answer), cache_root=tmp_path, namespace="qg")
    idx = _StubIndex({"GOLD-d2": ["d2", "d0"], "GOLD-d3": ["d3", "d0"], "Unrelated API: does nothing": ["d0", "d1"],
                      "alpha request": ["d0", "d1"], "beta request": ["d1", "d0"]}, list(ds.corpus))
    cal = gen.calibrate(idx, ds, llm, temperatures=(0.0, 0.6, 0.9), k=2)
    assert cal["best"] == 0.6 and cal["scores"][0.6] == 1.0 and cal["scores"][0.0] == 0.0
    assert cal["n"] == {0.0: 2, 0.6: 2, 0.9: 2}
    # replayed from the cache, partially: only what is cached is scored
    part = gen.generate_queries({"q1": "alpha request", "zz": "never asked"}, llm, 0.6, partial=True)
    assert part == {"q1": ["GOLD-d2"]}


# --- SFT: prompt masking, answer-only loss, a step that learns -----------------------------------

class _StubTokenizer:
    """Character-level chat tokenizer: <u>=1, <a>=2, <eot>=3 (eos), pad=0, chars = 10 + ord % 200."""
    eos_token_id, pad_token_id = 3, 0

    def _enc(self, s):
        return [10 + ord(c) % 200 for c in s]

    def apply_chat_template(self, msgs, add_generation_prompt=False, tokenize=True, return_dict=False):
        ids = []
        for m in msgs:
            ids += [1 if m["role"] == "user" else 2] + self._enc(m["content"]) + [3]
        if add_generation_prompt:
            ids += [2]
        return ids


def test_sft_examples_pair_the_fig2_prompt_with_the_gold_descriptions(split):
    from toolkit.llm.prompts import querygen_prompt
    from toolkit.querygen.sft import sft_examples
    ex = sft_examples(split.train, split.corpus)
    assert len(ex) == len(split.train.queries)
    qid = ex[0].qid
    assert ex[0].prompt == querygen_prompt(split.train.queries[qid].text)
    assert ex[0].target.split("\n") == [split.corpus[d].text for d in split.train.qrels[qid]]


def test_encode_example_masks_the_prompt_and_keeps_the_answer():
    from toolkit.querygen.sft import IGNORE, Example, encode_example
    tok = _StubTokenizer()
    ex = Example("q", "hi", "ab")
    ids, labels = encode_example(tok, ex, max_length=64)
    prompt_len = len(tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True))
    assert ids[:prompt_len] == tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    assert labels[:prompt_len] == [IGNORE] * prompt_len
    assert labels[prompt_len:] == tok._enc("ab") + [3]
    with pytest.raises(ValueError, match="max_length"):
        encode_example(tok, ex, max_length=3)


@pytest.fixture(scope="module")
def tiny_lm():
    torch = pytest.importorskip("torch")
    from transformers import Qwen2Config, Qwen2ForCausalLM
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=220, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128)
    return Qwen2ForCausalLM(cfg)


def test_answer_loss_ignores_prompt_tokens(tiny_lm):
    import torch
    from toolkit.querygen.sft import IGNORE, answer_loss
    ids = torch.tensor([[1, 50, 51, 3, 2, 60, 61, 3]])
    att = torch.ones_like(ids)
    lab = torch.tensor([[IGNORE] * 5 + [60, 61, 3]])
    with torch.no_grad():  # values only; float() of a grad-requiring scalar warns
        loss, n = answer_loss(tiny_lm, ids, att, lab)
        # same as the model's full cross-entropy restricted to the answer positions
        ref = tiny_lm(input_ids=ids, attention_mask=att, labels=lab).loss
        # changing a prompt label (not an answer token) changes nothing
        lab2 = lab.clone()
        lab2[0, 2] = IGNORE
        loss2 = answer_loss(tiny_lm, ids, att, lab2)[0]
    assert n == 3
    assert float(loss) == pytest.approx(float(ref), rel=1e-5)
    assert float(loss2) == pytest.approx(float(loss))


def test_training_lowers_the_answer_loss(tiny_lm):
    import copy

    import torch
    from toolkit.querygen.sft import Example, SFTConfig, _collate, answer_loss, encode_example, train_examples
    tok = _StubTokenizer()
    lm = copy.deepcopy(tiny_lm)
    exs = [Example(str(i), f"request {i % 4}", f"api {i % 4}: does {i % 4}") for i in range(16)]
    ids, att, lab = _collate([encode_example(tok, e, 64) for e in exs], 0)
    with torch.no_grad():
        before = float(answer_loss(lm, ids, att, lab)[0])
    cfg = SFTConfig(epochs=8, batch_size=8, micro_batch=4, lr=3e-3, weight_decay=0.0, bf16=False)
    log = train_examples(lm, tok, exs, cfg, log=None)
    with torch.no_grad():
        after = float(answer_loss(lm, ids, att, lab)[0])
    assert after < before * 0.7
    assert len(log["steps_log"]) == 16 and log["steps"] == 16 and log["tokens"] > 0


def test_sft_config_rejects_bad_values():
    from toolkit.querygen.sft import SFTConfig
    with pytest.raises(ValueError, match="multiple of micro_batch"):
        SFTConfig(batch_size=32, micro_batch=5)
    with pytest.raises(ValueError, match="lr"):
        SFTConfig(lr=0)


# --- alignment: rewards and the rejection-sampling filter (§3.3, App. B.2/B.3) -----------------

def test_draft_rewards_score_each_draft_by_simulated_retrieval():
    from toolkit.querygen.alignment import draft_rewards
    idx = _StubIndex({"good": ["d2", "d0"], "bad": ["d0", "d1"], "u": ["d1", "d0"]}, ["d0", "d1", "d2"])
    r = draft_rewards({"q": [["bad"], ["good"]]}, idx, {"q": {"d2": 1}}, {"q": "u"}, reward="mmrr", k=2)
    # draft 0: d0, d1 -> gold missing: (1)/(k+1) = 1/3; draft 1: d2 first -> 1
    assert r["q"] == pytest.approx([1 / 3, 1.0])
    r = draft_rewards({"q": [["bad"], ["good"]]}, idx, {"q": {"d2": 1}}, {"q": "u"}, reward="map", k=2)
    assert r["q"] == pytest.approx([0.0, 1.0])
    # restricted to the training APIs: the gold is not among them, so no draft can earn MAP
    r = draft_rewards({"q": [["good"]]}, idx, {"q": {"d2": 1}}, {"q": "u"}, reward="map", k=2, restrict={"d0", "d1"})
    assert r["q"] == [0.0]
    with pytest.raises(ValueError, match="reward must be one of"):
        draft_rewards({}, idx, {}, {}, reward="ndcg")


def test_filter_keeps_best_drafts_then_applies_threshold_and_percentile():
    from toolkit.querygen.alignment import FilterConfig, filter_drafts
    rewards = {"a": [0.2, 0.9, 0.5], "b": [0.01, 0.04], "c": [0.6, 0.6], "d": [0.3]}
    assert filter_drafts(rewards) == [("a", 1), ("c", 0), ("d", 0)]        # b's best 0.04 < 0.05
    assert filter_drafts(rewards, FilterConfig(min_reward=0.0)) == [("a", 1), ("b", 1), ("c", 0), ("d", 0)]
    assert filter_drafts(rewards, FilterConfig(keep_per_sample=2)) == [("a", 1), ("a", 2), ("c", 0), ("c", 1), ("d", 0)]
    # top 50 percent of the kept best drafts (0.9, 0.04, 0.6, 0.3 -> median 0.45)
    assert filter_drafts(rewards, FilterConfig(top_percent=50, min_reward=0.0)) == [("a", 1), ("c", 0)]
    with pytest.raises(ValueError, match="top_percent"):
        FilterConfig(top_percent=0)


def test_reward_summary_describes_the_distribution():
    from toolkit.querygen.alignment import reward_summary
    s = reward_summary({"a": [0.2, 0.8], "b": [0.5]})
    assert s["drafts"] == 3 and s["best_mean"] == pytest.approx(0.65) and sum(s["histogram"]) == 3


def test_align_samples_from_the_latest_model_and_trains_on_kept_drafts(tmp_path):
    """Algorithm 1 with a stand-in model: iteration t samples from the model trained at t-1."""
    from toolkit.llm.backends import EchoBackend
    from toolkit.llm.client import LLMClient
    from toolkit.querygen.alignment import AlignConfig, align
    ds = _tiny_dataset()
    idx = _StubIndex({"GOLD-d2": ["d2", "d0"], "GOLD-d3": ["d3", "d0"], "junk": ["d0", "d1"],
                      "alpha request": ["d0", "d1"], "beta request": ["d1", "d0"]}, list(ds.corpus))
    used_ids, trained = [], []

    def make_client(model_dir, model_id):
        used_ids.append(model_id)
        # draft 0 is junk, draft 1 names the gold API
        def answer(req):
            word = "alpha" if "alpha request" in req.messages()[-1]["content"] else "beta"
            return ("GOLD-d2" if word == "alpha" else "GOLD-d3") if req.index == 1 else "junk"
        return LLMClient(EchoBackend(model_id=model_id, answer_fn=answer), cache_root=tmp_path, namespace="qg")

    def train_fn(model_dir, examples, out_dir):
        trained.append((str(model_dir), sorted((e.qid, e.target) for e in examples), str(out_dir)))

    cfg = AlignConfig(iterations=2, n_drafts=2, temperature=0.7, train_size=None)
    seen = []
    hist = align(tmp_path / "base", ds, idx, cfg, tmp_path / "work", make_client, train_fn, log=None,
                 on_iteration=lambda h, d, m: seen.append((len(h), str(d), m)))
    assert used_ids == [f"querygen-align-{cfg.tag()}-it0", f"querygen-align-{cfg.tag()}-it1"]
    # after each iteration, with the history so far and the model just trained
    assert seen == [(1, str(tmp_path / "work" / "it1"), f"querygen-align-{cfg.tag()}-it1"),
                    (2, str(tmp_path / "work" / "it2"), f"querygen-align-{cfg.tag()}-it2")]
    assert hist[0]["drafts_generated"] == 4 and hist[0]["drafts_per_s"] > 0
    assert trained[0][1] == [("q1", "GOLD-d2"), ("q2", "GOLD-d3")]          # only the rewarded drafts
    assert trained[1][0] == str(tmp_path / "work" / "it1")                   # iteration 2 starts from it1
    assert [h["kept"] for h in hist] == [2, 2] and hist[0]["best_mean"] == pytest.approx(1.0)


def test_a_resumed_alignment_keeps_the_draft_timings_it_did_not_measure():
    from toolkit.querygen.runs import _keep_measured
    before = [{"iteration": 1, "drafts_generated": 1500, "draft_seconds": 4000.0, "drafts_per_s": 0.375, "kept": 290},
              {"iteration": 2, "drafts_generated": 1500, "draft_seconds": 3000.0, "drafts_per_s": 0.5, "kept": 295}]
    replayed = [{"iteration": 1, "drafts_generated": 0, "draft_seconds": 2.0, "drafts_per_s": None, "kept": 290}]
    # after the resumed run's first iteration, and again after its second: the file as found is
    # what is kept from, not the file this run has already rewritten (which lacks iteration 2)
    assert _keep_measured(before, replayed)[0]["draft_seconds"] == 4000.0
    replayed.append({"iteration": 2, "drafts_generated": 0, "draft_seconds": 1.0, "drafts_per_s": None, "kept": 295})
    out = _keep_measured(before, replayed)
    assert [r["draft_seconds"] for r in out] == [4000.0, 3000.0] and out[1]["drafts_per_s"] == 0.5
    fresh = [{"iteration": 3, "drafts_generated": 1500, "draft_seconds": 2000.0, "drafts_per_s": 0.75, "kept": 300}]
    assert _keep_measured(before, fresh) == fresh
    # an ablation row whose drafts all came from the base model's cache, run twice: the second run's
    # reading time (0.2 s) does not replace the first's (0.1 s) - the history file stays as committed
    row = [{"iteration": 1, "drafts_generated": 0, "draft_seconds": 0.1, "drafts_per_s": None, "kept": 298}]
    again = [{**row[0], "draft_seconds": 0.2}]
    assert _keep_measured(row, again) == row


def test_a_retrained_iteration_keeps_the_earlier_training_whose_model_made_the_cached_answers():
    from toolkit.querygen.runs import _keep_measured
    first = {"iteration": 1, "drafts_generated": 0, "train_seconds": 1139.0, "train_tokens_per_s": 65.4,
             "train_final_loss": 1.1743}
    same = dict(first)                                        # the finished run directory was reused
    assert "earlier_training" not in _keep_measured([first], [same])[0]
    again = {**first, "train_seconds": 523.6, "train_tokens_per_s": 142.3, "train_final_loss": 1.1749}
    rec = _keep_measured([first], [again])[0]
    assert rec["train_final_loss"] == 1.1749
    assert rec["earlier_training"] == [{"train_seconds": 1139.0, "train_tokens_per_s": 65.4, "train_final_loss": 1.1743}]
    from toolkit.querygen.runs import SFT_LOG_KEYS, earlier_trainings
    assert earlier_trainings({"seconds": 1865.3, "tokens_per_s": 71.4, "final_loss": 0.6393},
                             {"seconds": 1224.6, "tokens_per_s": 108.8, "final_loss": 0.6398}, SFT_LOG_KEYS) \
        == [{"seconds": 1865.3, "tokens_per_s": 71.4, "final_loss": 0.6393}]
    assert earlier_trainings({}, {"final_loss": 0.6398}, SFT_LOG_KEYS) == []
    third = {**again, "train_seconds": 500.0, "train_final_loss": 1.1751}
    assert [e["train_final_loss"] for e in _keep_measured([rec], [third])[0]["earlier_training"]] == [1.1743, 1.1749]


def test_ablation_settings_are_configurations_and_old_tags_survive_new_fields():
    from dataclasses import asdict, replace
    import hashlib
    from toolkit.querygen.alignment import TABLE3_SETTINGS, TABLE4_SETTINGS, TABLE5_SETTINGS, AlignConfig
    a = AlignConfig()
    # the tag before `kind` (and issue 49's fresh_requests, decoding and filter.min_gain) existed
    old = {k: v for k, v in asdict(a).items() if k not in ("kind", "fresh_requests", "decoding")}
    old["filter"] = {k: v for k, v in old["filter"].items() if k != "min_gain"}
    assert a.tag() == hashlib.sha256(json.dumps(old, sort_keys=True, default=str).encode()).hexdigest()[:8]
    tags = {replace(a, **ch).tag() for t in (TABLE3_SETTINGS, TABLE4_SETTINGS, TABLE5_SETTINGS) for ch in t.values()}
    assert len(tags) == 1 + 4 + 2 + 1                                 # one baseline, every row its own model
    with pytest.raises(ValueError, match="kind must be description or intent"):
        AlignConfig(kind="poem")


def test_align_stops_after_the_asked_iteration(tmp_path):
    from toolkit.llm.backends import EchoBackend
    from toolkit.llm.client import LLMClient
    from toolkit.querygen.alignment import AlignConfig, align
    ds = _tiny_dataset()
    idx = _StubIndex({"junk": ["d0", "d1"], "alpha request": ["d0", "d1"], "beta request": ["d1", "d0"]},
                     list(ds.corpus))
    trained = []
    hist = align(tmp_path / "base", ds, idx, AlignConfig(iterations=3, n_drafts=1, train_size=None),
                 tmp_path / "work", lambda d, m: LLMClient(EchoBackend(model_id=m, answer_fn=lambda r: "junk"),
                                                           cache_root=tmp_path, namespace="qg"),
                 lambda d, ex, out: trained.append(out), log=None, stop_after=1)
    assert len(hist) == 1 and len(trained) == 1


def test_ablation_rows_run_in_their_own_process_and_report_failure():
    import sys

    from toolkit.querygen.ablation import in_own_process
    assert in_own_process(print, "an ablation row") == 0
    assert in_own_process(sys.exit, 3) == 3                 # a failed row is seen by the parent, not lost


def test_ablate_stops_at_a_failed_row_naming_it(monkeypatch):
    from toolkit.querygen import __main__ as qm
    from toolkit.querygen import ablation
    from toolkit.querygen.config import config_for
    monkeypatch.setattr(ablation, "in_own_process", lambda target, *a: -9)
    args = qm.argparse.Namespace(tables="4")
    with pytest.raises(SystemExit, match=r"Table 4 row 'Alignment \(MAP reward\)'.*-9 \(killed: out of memory\?\)"):
        qm.cmd_ablate(args, config_for("smoke"))
