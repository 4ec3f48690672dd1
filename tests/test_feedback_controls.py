"""The feedback experiment's controls (issue 48): the matched-budget training data, the oracle's refinement and its
loop, and the decomposition of the gap -- without a model."""
from __future__ import annotations

import pytest

from toolkit.data.contract import Document
from toolkit.feedback import controls as C
from toolkit.feedback.loop import Trace, iterate
from toolkit.feedback.round import FeedbackConfig
from toolkit.feedback.training import IterationConfig, feedback_examples


def _doc(i, tool, api, desc):
    return Document(i, "cat", tool, api, f"cat, {tool}, {api}, {desc}", {"description": desc})


CORPUS = {"d0": _doc("d0", "weather_api", "get_forecast", "Returns the forecast for a city. Use it daily."),
          "d1": _doc("d1", "songkick", "songkick_concert", "Find concerts near you! Many artists."),
          "d2": _doc("d2", "translator", "translator", "")}


def test_oracle_refinement_names_each_gold_api_with_its_first_sentence():
    text = C.oracle_refinement("plan my week", [CORPUS["d0"], CORPUS["d1"], CORPUS["d2"]])
    assert text == ("plan my week weather api, get forecast: Returns the forecast for a city. "
                    "songkick, songkick concert: Find concerts near you! translator.")
    long = _doc("d9", "t", "a", "word " * 100)
    assert len(C.api_hint(long)) <= len("t, a: ") + C.HINT_CHARS


def test_oracle_round_says_na_when_every_gold_api_is_shown():
    round_fn = C.oracle_round({"q": {"d1": 1, "d2": 1}}, CORPUS)
    tr = Trace("q", ["find a concert and translate", "something else"])
    assert round_fn(tr, [CORPUS["d2"], CORPUS["d1"]]).refined is None
    fb = round_fn(tr, [CORPUS["d0"], CORPUS["d1"]])       # d2 missing: refine, always from the original instruction
    assert fb.refined.startswith("find a concert and translate songkick") and "translator." in fb.refined


def test_oracle_loop_finds_the_gold_api_a_plain_search_misses():
    # a search that finds d1 only when its name is in the text: the oracle's hint must get it there in one round
    def search(queries):
        return {q: ({"d1": 1.0, "d0": 0.5} if "songkick" in t else {"d0": 1.0, "d2": 0.5}) for q, t in queries.items()}
    traces = iterate({"q": "live music tonight"}, search, CORPUS, llm=None, rounds=3,
                     cfg=FeedbackConfig(k=2),
                     prefix=True, progress=False, round_fn=C.oracle_round({"q": {"d1": 1}}, CORPUS))
    tr = traces["q"]
    assert list(tr.runs[0])[0] == "d0" and list(tr.runs[-1])[0] == "d1"
    assert len(tr.instructions) == 2 and tr.stopped          # round 2 sees d1 among the K shown: "N/A"
    assert tr.seconds == [0.0, 0.0]


def test_same_steps_keeps_every_example_but_the_feedback_text():
    tr = Trace("q", ["orig", "refined once", "refined twice"], [{"d0": 1.0, "d2": 0.9}, {"d2": 1.0}, {"d0": 1.0}],
               [], [1.0, 1.0], [])
    qrels, cfg = {"q": {"d1": 1}}, IterationConfig(seed=3)
    ours = feedback_examples({"q": tr}, qrels, CORPUS, cfg)
    same = feedback_examples(C.same_steps_traces({"q": tr}), qrels, CORPUS, cfg)
    assert len(same) == len(ours) == 3
    assert [e.query for e in same] == ["Iteration 0: orig", "Iteration 1: orig", "Iteration 2: orig"]
    assert [(e.positive, e.negative, e.weight, e.t) for e in same] == [(e.positive, e.negative, e.weight, e.t)
                                                                      for e in ours]
    assert tr.instructions[1] == "refined once"              # the original trace is not changed


def test_decomposition_parts_are_paired_differences_that_add_up():
    q = [f"q{i}" for i in range(30)]
    tool = {x: 0.2 for x in q}
    same = {x: 0.3 for x in q}
    t0 = {x: 0.25 for x in q}
    ours = {x: 0.5 if i % 2 else 0.25 for i, x in enumerate(q)}
    rows = {"ToolRetriever": tool, C.SAME_STEPS: same, C.OURS_T0: t0, "Ours": ours}
    d = C.decomposition({"I2": {m: {"ndcg@5": v} for m, v in rows.items()}})
    parts = d.set_index("part")["diff"]
    assert parts["Ours - ToolRetriever"] == pytest.approx(parts["training part"] + parts["loop part"])
    assert parts["training part"] == pytest.approx(parts["= more fine-tuning"] + parts["+ training on feedback"])
    assert parts["+ training on feedback"] == pytest.approx(-0.05)
    assert d.set_index("part")["p"]["= more fine-tuning"] < 0.001 and set(d.n) == {30}
    assert "oracle's gain, Ours' retriever" not in parts       # no oracle row: its parts are left out
    assert set(d.metric) == {"ndcg@5"}                          # no other metric given: none computed
    table = C.decomposition_table(d.to_dict("records"))
    assert table.loc["I2", "n"] == 30 and table.loc["I2", "+ training on feedback"] == "-0.050 (p<0.001)"


def test_cap_rates_tell_the_steps_apart_and_count_answers_cut_at_their_cap(tmp_path):
    from toolkit.feedback import budget as B
    from toolkit.llm import prompts
    from toolkit.llm.cache import ResponseCache
    cache = ResponseCache(tmp_path, "feedback", "m")
    first = [{"role": "user", "content": "tools ... step 1"}]
    chat = first + [{"role": "assistant", "content": "c"}]
    turns = {"comprehension": first,
             "assessment": chat + [{"role": "user", "content": prompts.FEEDBACK_STEP_ASSESSMENT}],
             "decision": chat + [{"role": "user", "content": prompts.FEEDBACK_STEP_DECISION}],
             "refinement": chat + [{"role": "user", "content": prompts.FEEDBACK_REFINE_WORDINGS["enrich-add"]}]}
    for i, (step, prompt) in enumerate(turns.items()):
        for j, fin in enumerate(["length", "stop", "stop", "stop"][: 4 - i]):
            cache.put("chat", prompt, {"max_tokens": 100 + i, "temperature": 0.0}, j, f"{step} {j}", fin=fin)
    got = B.cap_rates(cache).set_index("step")
    assert list(got.index) == ["comprehension", "assessment", "decision", "refinement"]
    assert got.loc["comprehension", "answers"] == 4 and got.loc["comprehension", "share at the cap"] == 0.25
    assert got.loc["refinement", "answers"] == 1 and got.loc["refinement", "share at the cap"] == 1.0
    assert got.loc["decision", "cap (tokens)"] == 102


def test_decomposition_text_names_the_largest_part():
    q = [f"q{i}" for i in range(20)]
    rows = {"ToolRetriever": {x: 0.5 for x in q}, C.SAME_STEPS: {x: 0.45 for x in q}, C.OURS_T0: {x: 0.4 for x in q},
            "Ours": {x: 0.1 if i < 10 else 0.4 for i, x in enumerate(q)}, C.ORACLE: {x: 0.9 for x in q}}
    d = C.decomposition({"I2": {m: {"ndcg@5": v} for m, v in rows.items()}})
    text = C.decomposition_text(d.to_dict("records"))
    assert text.startswith("I2 (n = 20): Ours − ToolRetriever -0.250")
    assert "training part -0.100" in text and "loop part -0.150" in text and "largest: loop part (-0.150)" in text
    assert "the oracle's gain with Ours' retriever +0.500 (p<0.001)" in text
    assert "no query's ndcg@5 changed" not in text and d.set_index("part").loc["loop part", "differ"] == 10
    # a loop that changed no query's score is said so (on I3 13 of 61 refinements moved no gold API)
    rows["Ours"] = rows[C.OURS_T0]
    text = C.decomposition_text(C.decomposition({"I2": {m: {"ndcg@5": v} for m, v in rows.items()}}).to_dict("records"))
    assert "loop part +0.000 (p=1.000) (no query's ndcg@5 changed" in text


def test_brevity_changes_the_prompts_but_not_the_committed_trace_names():
    from dataclasses import replace

    from toolkit.feedback import budget as B
    from toolkit.feedback import experiment as X
    from toolkit.feedback.config import config_for
    from toolkit.feedback.round import feedback_round
    from toolkit.llm import prompts
    cfg = config_for("standard")
    assert X.train_trace_path(cfg).is_file() and X.test_trace_path(cfg, "I2", None).is_file()   # found by name
    brief = replace(cfg, feedback=replace(cfg.feedback, brevity="one-line"))
    assert X.test_trace_path(brief, "I2", None) != X.test_trace_path(cfg, "I2", None)
    # an old bench record: measured at the old values of the fields added since
    assert B._priced({"k": 10}) == {"k": 10, "brevity": "none", "tool_format": "text", "unchanged": "retrieve",
                                    "reasoning_repeat_penalty": 1.0, "reasoning_dry": 0.0}
    with pytest.raises(ValueError, match="brevity"):
        FeedbackConfig(brevity="short")

    class Recorder:
        def __init__(self):
            self.prompts = []

        def generate(self, batch, n, sampling, namespace, progress):
            self.prompts.append(batch[0])
            return [["1) no\n2) yes" if len(self.prompts) == 3 else "refined text"]]
    llm = Recorder()
    feedback_round(llm, "do x", [CORPUS["d0"]], FeedbackConfig(brevity="one-line"))
    first, second = llm.prompts[0][-1]["content"], llm.prompts[1][-1]["content"]
    assert first.endswith(prompts.FEEDBACK_BREVITY["one-line"][0])
    assert second == prompts.FEEDBACK_STEP_ASSESSMENT + prompts.FEEDBACK_BREVITY["one-line"][1]
    assert B.answer_step(llm.prompts[1]) == "assessment" and B.answer_step(llm.prompts[0]) == "comprehension"


def test_toolretriever_loop_runs_the_llm_loop_on_the_warmup_retriever_without_prefix(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from toolkit.feedback import experiment as X
    from toolkit.feedback import stages
    texts = {"q1": "weather in Paris", "q2": "a concert"}
    ds = SimpleNamespace(corpus=CORPUS, queries=texts, query_texts=lambda: dict(texts))
    seen = {}

    def fake_iterate_to_file(queries, search, corpus, llm, out, meta, prefix=True, **kw):
        seen.update(queries=dict(queries), prefix=prefix, meta=meta, llm=llm, rounds=kw["rounds"], chunk=kw["chunk"])
        out.write_text("")
        return {}
    monkeypatch.setattr(X, "TRACE_DIR", tmp_path)
    order = ["q9", "q2", "q1"]                   # the group's shuffle: its first k are the nested sample of k
    monkeypatch.setattr(X, "test_datasets", lambda cfg: {"I2": SimpleNamespace(nested_sample=lambda n, s: ds,
                                                                               sample_order=lambda s: order)})
    monkeypatch.setattr(X, "warmup_id", lambda cfg: "warmup-abc")
    monkeypatch.setattr(stages, "warmup", lambda cfg: ("/models/warmup", {"steps": 1}))
    monkeypatch.setattr(stages, "dense_search", lambda model, corpus: ("search", model))
    monkeypatch.setattr(stages, "iterate_to_file", fake_iterate_to_file)
    from toolkit.feedback.config import config_for
    cfg = config_for("smoke")
    out = C.toolretriever_loop_test(cfg, "I2", llm="the-llm")
    assert out.parent == tmp_path and "control-toolretriever-loop-I2" in out.name
    assert seen["prefix"] is False and seen["llm"] == "the-llm" and seen["meta"]["model"] == "warmup-abc"
    assert seen["queries"] == {"q1": "weather in Paris", "q2": "a concert"} and seen["rounds"] == cfg.training.rounds
    assert list(seen["queries"]) == ["q2", "q1"]            # traced in the sample's order, not the dataset's
    assert seen["chunk"] == 20
    C.toolretriever_loop_test(cfg, "I2", llm="the-llm", chunk=8)
    assert seen["chunk"] == 8                              # --chunk: instructions per trace write
    # other feedback settings (caps, wording) are another trace
    from dataclasses import replace
    other = replace(cfg, feedback=replace(cfg.feedback, comprehension_tokens=cfg.feedback.comprehension_tokens + 1))
    assert C.toolretriever_loop_trace_path(other, "I2", 2) != C.toolretriever_loop_trace_path(cfg, "I2", 2)


def test_the_llm_scale_rows_pair_each_llm_with_toolretriever_the_next_smaller_llm_and_the_oracle():
    from toolkit.feedback import experiment as X
    from toolkit.feedback.config import FAIR_FEEDBACK, config_for, with_fair_feedback
    cfg = config_for("standard")
    runs = C.scale_runs(cfg)
    assert [(name, c.llm, n) for name, c, n in runs] == [("smollm2", "smollm2", 60), ("qwen-0.5b", "qwen-0.5b", 60),
                                                         ("qwen-1.5b", "qwen-1.5b", None)]
    assert runs[2][1].feedback == FAIR_FEEDBACK                # the 0.5B's own setting: the test below
    assert runs[0][1].feedback.reasoning_dry == runs[1][1].feedback.reasoning_dry == 0.8   # the small ones get DRY
    # the profile's LLM reads the whole-I2 trace (the ToolRetriever + loop row's); the other its own 60
    big, small = runs[2][1], runs[1][1]
    assert C.toolretriever_loop_trace_path(big, "I2", None) == C.toolretriever_loop_trace_path(
        with_fair_feedback(cfg), "I2", None)
    assert C.toolretriever_loop_trace_path(small, "I2", 60) != C.toolretriever_loop_trace_path(big, "I2", 60)
    assert X.command("toolretriever-loop", small, "I2", n=60) == \
        "python -m toolkit.feedback toolretriever-loop --profile standard --fair --llm qwen-0.5b --group I2 --n 60"
    assert X.command("toolretriever-loop", big, "I2", n=None) == \
        "python -m toolkit.feedback toolretriever-loop --profile standard --fair --group I2"
    q = [f"q{i}" for i in range(10)]
    rows = {"ToolRetriever": {x: 0.5 for x in q}, C.ORACLE_TOOLRETRIEVER: {x: 0.9 for x in q},
            C.scale_row("qwen-0.5b"): {x: 0.4 for x in q}, C.scale_row("qwen-1.5b"): {x: 0.6 for x in q[:6]}}
    d = C.decomposition({"I2": {m: {"ndcg@5": v} for m, v in rows.items()}}, metrics=("ndcg@5",),
                        parts=C.scale_parts(cfg.scale_llms)).set_index("part")
    assert "qwen-0.5b - smollm2" not in d.index           # no SmolLM2 row here: its comparisons are left out
    assert d.loc["loop (qwen-0.5b) - ToolRetriever", "diff"] == pytest.approx(-0.1)
    assert d.loc["qwen-1.5b - qwen-0.5b", "diff"] == pytest.approx(0.2) and d.loc["qwen-1.5b - qwen-0.5b", "n"] == 6
    assert d.loc["oracle - loop (qwen-1.5b)", "diff"] == pytest.approx(0.3)


def test_the_feedback_cli_takes_another_llm_and_a_sample_size_for_the_loop_only(monkeypatch):
    from toolkit.feedback import controls
    from toolkit.feedback.__main__ import main
    got = {}
    monkeypatch.setattr(controls, "toolretriever_loop_test",
                        lambda cfg, group, n=None, chunk=20: got.update(cfg=cfg, n=n, chunk=chunk))
    main(["toolretriever-loop", "--profile", "standard", "--fair", "--llm", "qwen-0.5b", "--group", "I2", "--n", "60"])
    assert got["cfg"].llm == "qwen-0.5b" and got["n"] == 60 and got["chunk"] == 20
    main(["toolretriever-loop", "--profile", "standard", "--fair", "--group", "I2", "--chunk", "8"])
    assert got["chunk"] == 8 and got["n"] is None
    with pytest.raises(SystemExit):
        main(["status", "--n", "60"])
    with pytest.raises(SystemExit):
        main(["status", "--chunk", "8"])
    with pytest.raises(SystemExit):
        main(["toolretriever-loop", "--group", "I2", "--n", "0"])


def test_the_loop_alone_on_toolretriever_is_read_on_the_instructions_traced_so_far():
    q = [f"q{i}" for i in range(20)]
    rows = {"ToolRetriever": {x: 0.5 for x in q}, C.OURS_T0: {x: 0.4 for x in q}, "Ours": {x: 0.3 for x in q},
            C.TOOLRETRIEVER_LOOP: {x: 0.6 for x in q[:8]}}               # a trace in progress: 8 of 20
    d = C.decomposition({"I2": {m: {"ndcg@5": v} for m, v in rows.items()}})
    alone = d[(d.part == "loop on ToolRetriever") & (d.metric == "ndcg@5")].iloc[0]
    assert alone.n == 8 and alone["diff"] == pytest.approx(0.1)
    assert "the loop alone on ToolRetriever +0.100" in C.decomposition_text(d.to_dict("records")) and "(n = 8)" in \
        C.decomposition_text(d.to_dict("records"))


def test_cap_rates_keep_the_fair_llm_steps_answers_apart_from_the_first_generations(tmp_path):
    from toolkit.feedback import budget as B
    from toolkit.feedback.config import FAIR_FEEDBACK
    from toolkit.feedback.round import first_turn
    from toolkit.llm.cache import ResponseCache
    cache = ResponseCache(tmp_path, "feedback", "m")
    doc = CORPUS["d0"]
    for i, (fb, fin) in enumerate([(FAIR_FEEDBACK, "stop"), (FAIR_FEEDBACK, "stop"), (FeedbackConfig(brevity="none"), "length")]):
        prompt = [{"role": "user", "content": first_turn(f"do x{i}", [doc], fb)}]
        cache.put("chat", prompt, {"max_tokens": fb.comprehension_tokens, "temperature": 0.0}, 0, "c", fin=fin)
    got = B.cap_rates(cache)
    assert list(got.setting) == ["fair", "first generation"]
    assert list(got.answers) == [2, 1] and list(got["share at the cap"]) == [0.0, 1.0]
    # the same prompts decoded with the DRY sampler are their own row, and the decoding says so
    prompt = [{"role": "user", "content": first_turn("do x0", [doc], FAIR_FEEDBACK)}]
    cache.put("chat", prompt, {"max_tokens": 1024, "temperature": 0.0, "repeat_penalty": 1.1, "dry_multiplier": 0.8},
              0, "c", fin="length")
    got = B.cap_rates(cache)
    assert list(got.decoding) == ["greedy", "repeat 1.1, DRY 0.8", "greedy"]
    assert list(got.answers) == [2, 1, 1] and list(got["at the cap"]) == [0, 1, 1]
    assert B.answer_decoding({"repeat_penalty": 1.1}) == "repeat 1.1" and B.answer_decoding({}) == "greedy"


def test_loop_cost_divides_the_recorded_wall_time_by_the_traced_rounds(tmp_path):
    from toolkit.feedback import budget as B
    from toolkit.feedback import experiment as X
    traces = {"a": Trace("a", ["x", "y"], [{"d0": 1.0}, {"d1": 1.0}], [], [30.0, 20.0]),
              "b": Trace("b", ["z"], [{"d0": 1.0}], [], [40.0])}
    path = X.save_traces(traces, tmp_path / "loop.jsonl", {"wall_s": 120.0})
    got = B.loop_cost({"loop (m)": path, "not yet": tmp_path / "missing.jsonl"})
    assert list(got["row"]) == ["loop (m)"]                      # a trace not written yet adds no row
    r = got.iloc[0]
    assert (r["instructions"], r["LLM rounds"], r["s per instruction"], r["s per round"]) == (2, 3, 60.0, 40.0)


def test_cap_rates_by_llm_count_each_llms_own_answers_and_skip_one_without_any(tmp_path, monkeypatch):
    from toolkit.feedback import budget as B
    from toolkit.feedback.config import FAIR_FEEDBACK, config_for
    from toolkit.feedback.round import first_turn
    from toolkit.llm.cache import ResponseCache
    caches = {m: ResponseCache(tmp_path, "feedback", m) for m in ("big", "small", "none")}
    for m, fins in (("big", ["stop", "stop"]), ("small", ["length", "stop", "stop"])):
        for i, fin in enumerate(fins):
            prompt = [{"role": "user", "content": first_turn(f"do {m}{i}", [CORPUS["d0"]], FAIR_FEEDBACK)}]
            caches[m].put("chat", prompt, {"max_tokens": 1024, "temperature": 0.0}, 0, "c", fin=fin)
    monkeypatch.setattr(B, "feedback_cache", lambda cfg: caches[cfg.llm])
    got = B.cap_rates_by_llm(config_for("standard"), ("big", "small", "none", "big"))
    assert list(got.columns[:2]) == ["llm", "setting"] and list(got.llm) == ["big", "small"]
    assert list(got.answers) == [2, 3] and got["share at the cap"].tolist() == [0.0, pytest.approx(1 / 3)]


def test_the_repetition_penalty_reaches_the_reasoning_steps_only_and_keeps_old_names():
    from toolkit.feedback import experiment as X
    from toolkit.feedback.config import FAIR_FEEDBACK
    assert FAIR_FEEDBACK.sampling("comprehension").repeat_penalty == 1.1
    assert FAIR_FEEDBACK.sampling("assessment").repeat_penalty == 1.1
    assert FAIR_FEEDBACK.sampling("decision").repeat_penalty == 1.0
    assert FAIR_FEEDBACK.sampling("refinement").repeat_penalty == 1.0
    off = FeedbackConfig()
    assert "reasoning_repeat_penalty" not in X.feedback_key(off)            # old traces keep their names
    assert X.feedback_key(FAIR_FEEDBACK)["reasoning_repeat_penalty"] == 1.1
    assert off.sampling("assessment").key() == FeedbackConfig().sampling("assessment").key()
    with pytest.raises(ValueError, match="reasoning_repeat_penalty"):
        FeedbackConfig(reasoning_repeat_penalty=0)


def test_the_small_llm_gets_its_dry_sampler_on_the_reasoning_steps_and_the_others_keep_their_names():
    from dataclasses import replace

    from toolkit.feedback import controls
    from toolkit.feedback import experiment as X
    from toolkit.feedback.config import FAIR_FEEDBACK, FAIR_FEEDBACK_FOR_LLM, config_for, fair_config
    small = fair_config("standard", llm="qwen-0.5b")
    assert small.feedback == replace(FAIR_FEEDBACK, **FAIR_FEEDBACK_FOR_LLM["qwen-0.5b"])
    assert small.feedback.sampling("assessment").dry_multiplier == 0.8
    assert small.feedback.sampling("refinement").dry_multiplier == 0.0      # the refinement copies the instruction
    assert fair_config("standard").feedback == FAIR_FEEDBACK                # the 1.5B traces keep their settings
    assert "reasoning_dry" not in X.feedback_key(FAIR_FEEDBACK)             # ... and their names
    # an explicit override wins over the per-LLM setting
    assert fair_config("standard", llm="qwen-0.5b", feedback={"reasoning_dry": 0.0}).feedback == FAIR_FEEDBACK
    runs = {name: c for name, c, _ in controls.scale_runs(config_for("standard"))}
    assert runs["qwen-0.5b"].feedback == small.feedback and runs["qwen-1.5b"].feedback == FAIR_FEEDBACK
    assert controls.toolretriever_loop_trace_path(small, "I2", 60) == \
        controls.toolretriever_loop_trace_path(runs["qwen-0.5b"], "I2", 60)   # the CLI's trace is the row's
    with pytest.raises(ValueError, match="reasoning_dry"):
        FeedbackConfig(reasoning_dry=-1)


def test_scale_text_reads_each_part_and_names_the_loop_closest_to_the_oracle():
    recs = [{"part": "oracle - ToolRetriever", "a": "O", "b": "T", "metric": "ndcg@5", "n": 60, "diff": 0.11, "p": 0.0001},
            {"part": "loop (s) - ToolRetriever", "a": "L(s)", "b": "T", "metric": "ndcg@5", "n": 60, "diff": -0.1,
             "p": 0.03},
            {"part": "oracle - loop (s)", "a": "O", "b": "L(s)", "metric": "ndcg@5", "n": 60, "diff": 0.21, "p": 0.002},
            {"part": "oracle - loop (b)", "a": "O", "b": "L(b)", "metric": "ndcg@5", "n": 40, "diff": 0.135,
             "p": 0.0009},
            {"part": "oracle - loop (b)", "a": "O", "b": "L(b)", "metric": "ndcg@1", "n": 40, "diff": 0.0, "p": 1.0}]
    text = C.scale_text(recs)
    assert text.startswith("oracle - ToolRetriever +0.110 (n = 60, p<0.001); loop (s) - ToolRetriever -0.100 "
                           "(n = 60, p=0.030)")
    assert text.endswith("Closest to the oracle: L(b), 0.135 below it (n = 40, p<0.001)")
    assert C.scale_text([]) == ""


def test_non_refinements_count_texts_that_are_not_instructions_and_what_stopping_would_have_kept():
    from types import SimpleNamespace

    from toolkit.llm import prompts
    from toolkit.llm.parsers import non_instruction, repeats_prompt
    request = prompts.FEEDBACK_REFINE_WORDINGS["enrich"]
    assert repeats_prompt("Step 4: refinement. " + request[20:200], request)
    assert not repeats_prompt("Find concerts near Berlin next week and translate the venue names into German", request)
    with pytest.raises(ValueError, match="words must be >= 1"):
        repeats_prompt("a", "a", words=0)
    assert non_instruction("Step 4: refinement. " + request[20:200], request) == "repeats the request"
    assert non_instruction("Yes", request) == non_instruction("yes yes.", request) == "a bare yes/no"
    assert non_instruction("I'm sorry, but I can't assist with that.", request) == "a refusal"
    for real in ("Yes, find concerts near Berlin and book two tickets", "No-code tools for a landing page",
                 "Find concerts near Berlin next week and translate the venue names into German"):
        assert non_instruction(real, request) is None, real
    qrels = {"a": {"d1": 1}, "b": {"d1": 1}, "c": {"d1": 1}}
    traces = {"a": Trace("a", ["find a concert", request], runs=[{"d1": 2.0, "d0": 1.0}, {"d0": 2.0, "d1": 1.0}]),
              "b": Trace("b", ["find a concert", "find a concert near me"],
                         runs=[{"d0": 2.0, "d1": 1.0}, {"d1": 2.0, "d0": 1.0}]),
              "c": Trace("c", ["find a concert", "Yes"], runs=[{"d1": 2.0, "d0": 1.0}, {"d0": 2.0, "d1": 1.0}])}
    cfg = SimpleNamespace(feedback=FeedbackConfig())
    e = C.non_refinements(traces, qrels, cfg, metric="ndcg@1")
    assert e["instructions"] == 3 and e["refinements"] == 3 and e["not a refinement"] == 2
    assert (e["repeats the request"], e["a bare yes/no"], e["a refusal"]) == (1, 1, 0)
    # a and c lost d1 at round 1; stopped at round 0 they keep it -- b's real refinement is kept as it is
    assert e["ndcg@1"] == pytest.approx(1 / 3) and e["ndcg@1 had they stopped"] == pytest.approx(1.0)
    assert 0 < e["p"] <= 1   # paired on the three instructions: two gain 1.0, one is unchanged
