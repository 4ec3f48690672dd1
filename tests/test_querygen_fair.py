"""Issue 49's fair test, the code side: the line stop and repetition penalty, trimmed SFT targets, fresh alignment
requests, the filter relative to the request alone, the sizing -- and the standard profile's names unchanged."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace

import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.llm.base import LLMError, Request, Sampling, lines_grammar, truncate_at_lines
from toolkit.querygen import generation as gen
from toolkit.querygen.retrieval import QueryIndex

TEN_LINES = "\n".join(f"Weather lookup {i} gives the forecast of city {i}" for i in range(1, 11))


# --- the line stop (item 3) ---------------------------------------------------------------------

def test_truncate_at_lines_keeps_the_first_n_non_empty_lines():
    assert truncate_at_lines(TEN_LINES, 5) == ("\n".join(TEN_LINES.split("\n")[:5]), True)
    assert truncate_at_lines("a\n\n\nb\nc", 2) == ("a\n\n\nb", True)          # empty lines are not counted
    assert truncate_at_lines("a\nb", 5) == ("a\nb", False)
    assert truncate_at_lines("a\nb\n\n", 2)[1] is False                        # nothing but newlines after it
    assert truncate_at_lines(TEN_LINES, 0) == (TEN_LINES, False)                # 0 = off


def test_lines_grammar_admits_n_lines_then_only_the_end():
    g = lines_grammar(5)
    assert g.splitlines()[0] == 'root ::= "\\n"* line ("\\n"+ line){0,4} "\\n"?'
    assert g.splitlines()[1] == "line ::= [^\\n]+"
    assert "{0," not in lines_grammar(1)
    with pytest.raises(ValueError):
        lines_grammar(0)


def test_sampling_keys_are_unchanged_at_the_old_decoding():
    old = {"temperature": 0.0, "top_p": 0.9, "top_k": 10, "min_p": 0.0, "max_tokens": 160, "stop": [], "seed": 0}
    s = gen.sampling_at(gen.QUERYGEN, 0.0)
    assert s.key() == old                                     # the committed caches' key (querygen_sft's config record)
    assert gen.sampling_at(gen.QUERYGEN, 0.0, gen.Decoding()).key() == old
    fair = gen.sampling_at(gen.QUERYGEN, 0.0, gen.Decoding(max_lines=5, repeat_penalty=1.1)).key()
    assert fair == {**old, "max_lines": 5, "repeat_penalty": 1.1}
    with pytest.raises(ValueError, match="max_lines"):
        Sampling(max_lines=-1)
    with pytest.raises(ValueError, match="repeat_penalty"):
        gen.Decoding(repeat_penalty=0)


def test_the_local_backend_sends_the_grammar_and_the_penalty_only_when_asked():
    from toolkit.llm.backends import LocalGGUFBackend
    b = object.__new__(LocalGGUFBackend)              # no model loaded: only the request body is built
    b.prompt_cache = True
    body = b._payload(Request("chat", "hi", Sampling()))
    assert body["repeat_penalty"] == 1.0 and "grammar" not in body      # what every committed answer was sent
    body = b._payload(Request("chat", "hi", Sampling(max_lines=5, repeat_penalty=1.15)))
    assert body["grammar"] == lines_grammar(5) and body["repeat_penalty"] == 1.15
    assert "dry_multiplier" not in body                                  # DRY off unless asked


def test_the_dry_sampler_is_sent_only_when_asked_and_keeps_old_keys():
    from toolkit.llm.backends import LocalGGUFBackend, OpenAIBackend, TransformersBackend
    assert "dry_multiplier" not in Sampling().key()                      # every committed answer keeps its key
    assert Sampling(dry_multiplier=0.8).key()["dry_multiplier"] == 0.8
    with pytest.raises(ValueError, match="dry_multiplier"):
        Sampling(dry_multiplier=-0.1)
    b = object.__new__(LocalGGUFBackend)
    b.prompt_cache, b.ctx_per_slot = True, 4096
    body = b._payload(Request("chat", "hi", Sampling(dry_multiplier=0.8)))
    # llama.cpp's documented defaults, over the whole slot (0 would turn DRY off, -1 is refused by xllamacpp)
    assert (body["dry_multiplier"], body["dry_base"], body["dry_allowed_length"], body["dry_penalty_last_n"]) == \
        (0.8, 1.75, 2, 4096)
    oa = OpenAIBackend("m", "http://127.0.0.1:9", max_retries=0)
    assert "dry_multiplier" not in oa._payload(Request("chat", "hi", Sampling()))
    assert oa._payload(Request("chat", "hi", Sampling(dry_multiplier=0.5)))["dry_multiplier"] == 0.5
    tb = TransformersBackend("no-such-model")
    with pytest.raises(LLMError, match="dry_multiplier"):                # refused before any model is loaded
        tb.generate(Request("chat", "hi", Sampling(dry_multiplier=0.8)))


def test_a_looping_answer_ends_at_the_prompts_number_of_lines(tmp_path):
    """Through the client: an answer of 10 lines comes back with 5 under the fair decoding, and the 10-line
    answer cached under the standard decoding is another cache entry."""
    from toolkit.llm.backends import EchoBackend
    from toolkit.llm.client import LLMClient
    llm = LLMClient(EchoBackend(answer_fn=lambda req: TEN_LINES), cache_root=tmp_path, namespace="qg")
    fair = gen.generate_queries({"q": "find a thing"}, llm, 0.0, decoding=gen.Decoding(max_lines=3))
    assert fair["q"] == TEN_LINES.split("\n")[:3]
    std = gen.generate_queries({"q": "find a thing"}, llm, 0.0)
    assert len(std["q"]) == 5                                  # the parser's own limit, the answer uncut
    answers = list(llm.cache(gen.QUERYGEN.namespace).answers())
    assert sorted(a["text"].count("\n") + 1 for a in answers) == [3, 10]


# --- trimmed SFT targets (item 2) ---------------------------------------------------------------

def _doc(desc: str, tool: str = "Coffee Tips", api: str = "Get Tips") -> Document:
    raw = f"category_name:Food, tool_name:{tool}, api_name:{api}, api_description:{desc}, required_params: []"
    return Document("d", "Food", tool, api, f"{tool}: {api}: {desc}", {"toollens_text": raw})


def test_trimmed_target_is_tool_api_and_the_first_sentence_within_the_word_limit():
    from toolkit.querygen.data import first_sentence, trimmed_description
    d = _doc("Offers a list of tips for brewing coffee. Version 2.0 adds espresso. Call it daily.")
    assert trimmed_description(d, 19) == "Coffee Tips: Get Tips: Offers a list of tips for brewing coffee."
    assert trimmed_description(d, 8) == "Coffee Tips: Get Tips: Offers a list of"       # 8 words in all
    assert len(trimmed_description(d, 8).split()) == 8
    assert trimmed_description(d, 3) == "Coffee Tips: Get Tips"          # the names are never cut
    assert first_sentence("Runs v2.0 of the API. Then more.") == "Runs v2.0 of the API."
    assert first_sentence("no full stop here") == "no full stop here"
    with pytest.raises(ValueError):
        trimmed_description(d, 0)


def test_sft_examples_trim_every_target_line_only_when_asked():
    from toolkit.querygen.sft import sft_examples
    corpus = {"d1": _doc("First sentence here. Second one.", api="A"),
              "d2": replace(_doc("Only one sentence", api="B"), doc_id="d2")}
    ds = RetrievalDataset("t", corpus, {"q": Query("q", "help me")}, {"q": {"d1": 1, "d2": 1}})
    assert sft_examples(ds, corpus)[0].target == ("Coffee Tips: A: First sentence here. Second one.\n"
                                                  "Coffee Tips: B: Only one sentence")
    assert sft_examples(ds, corpus, target_words=19)[0].target == ("Coffee Tips: A: First sentence here.\n"
                                                                   "Coffee Tips: B: Only one sentence")


# --- fresh requests per iteration (item 2) ------------------------------------------------------

def test_fresh_requests_differ_between_iterations_are_disjoint_and_seeded():
    from toolkit.querygen.alignment import AlignConfig, iteration_requests
    qids = [f"q{i}" for i in range(100)]
    a = AlignConfig(train_size=30, fresh_requests=True, iterations=3)
    its = [iteration_requests(qids, a, t) for t in (1, 2, 3)]
    assert all(len(x) == 30 for x in its)
    assert not set(its[0]) & set(its[1]) and not set(its[1]) & set(its[2]) and not set(its[0]) & set(its[2])
    assert its == [iteration_requests(list(reversed(qids)), a, t) for t in (1, 2, 3)]     # order of the pool: no matter
    assert iteration_requests(qids, replace(a, seed=1), 1) != its[0]
    fourth = iteration_requests(qids, a, 4)                   # 3 slices of 30 used 90 of 100: a new shuffle
    assert len(fourth) == 30 and fourth != its[0]
    assert iteration_requests(qids, AlignConfig(train_size=30), 2) == qids      # standard: the caller's sample, always
    with pytest.raises(ValueError, match="fresh_requests needs a train_size"):
        AlignConfig(train_size=None, fresh_requests=True)


class _StubIndex(QueryIndex):
    def __init__(self, rankings, doc_ids):
        self.rankings, self.doc_ids = rankings, doc_ids

    def ranked(self, texts, k, restrict=None):
        return [[d for d in self.rankings[t] if restrict is None or d in restrict][:k] for t in texts]


def test_align_with_fresh_requests_drafts_for_new_requests_each_iteration(tmp_path):
    from toolkit.llm.backends import EchoBackend
    from toolkit.llm.client import LLMClient
    from toolkit.querygen.alignment import AlignConfig, align
    corpus = {f"d{i}": Document(f"d{i}", "c", f"t{i}", f"a{i}", f"doc {i}") for i in range(2)}
    queries = {f"q{i}": Query(f"q{i}", f"request {i}") for i in range(4)}
    ds = RetrievalDataset("tiny", corpus, queries, {q: {"d1": 1} for q in queries})
    idx = _StubIndex({"GOLD": ["d1", "d0"], **{f"request {i}": ["d0", "d1"] for i in range(4)}}, list(corpus))
    asked = []

    def make_client(model_dir, model_id):
        def answer(req):
            asked.append((model_id, req.messages()[-1]["content"].rsplit("Human: ", 1)[1].split("\n")[0]))
            return "GOLD"
        return LLMClient(EchoBackend(model_id=model_id, answer_fn=answer), cache_root=tmp_path, namespace="qg")

    cfg = AlignConfig(iterations=2, n_drafts=1, train_size=2, fresh_requests=True)
    hist = align(tmp_path / "base", ds, idx, cfg, tmp_path / "w", make_client, lambda *a: None, log=None)
    first = {r for m, r in asked if m.endswith("it0")}
    second = {r for m, r in asked if m.endswith("it1")}
    assert len(first) == len(second) == 2 and not first & second
    assert [h["requests"] for h in hist] == [2, 2] and hist[0]["first_request"] != hist[1]["first_request"]


# --- the filter relative to the request alone (item 2) ------------------------------------------

def test_relative_filter_keeps_only_drafts_that_beat_the_utterance_alone():
    from toolkit.querygen.alignment import FilterConfig, filter_drafts, kept_counts, utterance_rewards
    idx = _StubIndex({"good": ["d2", "d0"], "same": ["d1", "d2"], "u1": ["d1", "d2"], "u2": ["d0", "d1"]},
                     ["d0", "d1", "d2"])
    qrels = {"a": {"d2": 1}, "b": {"d2": 1}}
    base = utterance_rewards(idx, qrels, {"a": "u1", "b": "u2"}, k=2)
    # the utterance ranks d2 second for a (MMRR 1/2) and not at all for b (1/(k+1) = 1/3)
    assert base == pytest.approx({"a": 0.5, "b": 1 / 3})
    rewards = {"a": [0.5, 0.5], "b": [1.0, 0.4]}            # a's drafts only tie its utterance; b's first beats it
    assert filter_drafts(rewards, FilterConfig(min_reward=0.0)) == [("a", 0), ("b", 0)]
    assert filter_drafts(rewards, FilterConfig(min_reward=0.0, min_gain=0.0), base) == [("b", 0)]
    counts = kept_counts(rewards, {"none": FilterConfig(min_reward=0.0), "gain>0": FilterConfig(min_reward=0.0, min_gain=0.0),
                                   "gain>0.7": FilterConfig(min_reward=0.0, min_gain=0.7)}, base)
    assert counts == {"none": 2, "gain>0": 1, "gain>0.7": 0}
    with pytest.raises(ValueError, match="request-alone rewards"):
        filter_drafts(rewards, FilterConfig(min_gain=0.0))


# --- configuration: the fair test on, the standard's names kept ---------------------------------

def test_standard_profile_keeps_the_names_of_its_committed_runs():
    from toolkit.llm.client import default_cache_root
    from toolkit.querygen.alignment import ABLATION_TABLES, AlignConfig
    from toolkit.querygen.config import QuerygenConfig, config_for
    std = config_for("standard")
    assert std == QuerygenConfig(profile="standard")
    assert std.sft_tag() == "9601e6bd" and std.align.tag() == "58f66a3e"
    root = default_cache_root()
    assert (root / "querygen_sft" / f"querygen-sft-{std.sft_tag()}.train.json").is_file()
    for settings in ABLATION_TABLES.values():
        for change in settings.values():
            tag = replace(std.align, **change).tag()
            assert (root / "querygen_align" / f"querygen-align-{tag}.history.json").is_file(), change
    # the tag as it was computed before the later fields existed
    a = AlignConfig()
    old = {k: v for k, v in asdict(a).items() if k not in ("kind", "fresh_requests", "decoding")}
    old["filter"] = {k: v for k, v in old["filter"].items() if k != "min_gain"}
    assert a.tag() == hashlib.sha256(json.dumps(old, sort_keys=True, default=str).encode()).hexdigest()[:8]


def test_fair_config_turns_every_change_on_under_new_names():
    from toolkit.querygen.config import FAIR_ALIGN, config_for, fair_config
    std, fair = config_for("standard"), fair_config("standard")
    assert fair.sft_train_requests is None and fair.sft_target_words == 19
    assert fair.decoding.max_lines == gen.PROMPT_LINES == fair.align.decoding.max_lines
    assert fair.align.fresh_requests and fair.align.n_drafts >= 20 and fair.align.filter.min_gain == 0.0
    assert fair.sft_tag() != std.sft_tag() and fair.align.tag() != std.align.tag()
    assert fair_config("standard", test_requests=50).test_requests == 50          # overrides are checked as usual
    with pytest.raises(ValueError, match="no parameter"):
        fair_config("standard", n_drafts=3)
    assert fair_config("smoke").align == FAIR_ALIGN


# --- sizing (item 2) ----------------------------------------------------------------------------

def test_simulated_line_stop_counts_the_caps_it_removes():
    from toolkit.querygen.sizing import seconds_line, simulate_line_stop
    answers = [{"text": TEN_LINES, "fin": "length", "ntok": 100, "ms": 2000},          # stopped at line 5
               {"text": "one very long line", "fin": "length", "ntok": 100, "ms": 2000},  # still capped
               {"text": "a\nb", "fin": "stop", "ntok": 10, "ms": 300}]
    s = simulate_line_stop(answers, 5)
    assert s["capped"] == pytest.approx(2 / 3) and s["capped_after"] == pytest.approx(1 / 3)
    assert s["tokens_after"] < s["tokens"]
    a, b = seconds_line(answers)
    assert a == pytest.approx(0.3 - 10 * 1.7 / 90) and b == pytest.approx(1.7 / 90)      # through (10, 0.3), (100, 2)


def test_size_prints_the_fair_test_hours_from_the_committed_caches(capsys):
    from toolkit.querygen.__main__ import main
    assert main(["size", "--fair"]) == 0
    out = capsys.readouterr().out
    assert "SFT: 1 epoch, 6659 examples (209 steps)" in out and "Alignment drafts" in out
    total = float(next(ln for ln in out.splitlines() if ln.startswith("total")).split()[-1])
    assert 5 < total < 25
