"""notebook 30's conditions, trace files and tables from traces (toolkit.feedback.experiment), without a model."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.feedback import experiment as X
from toolkit.feedback.collect import collect
from toolkit.feedback import controls as C

CONTROLS = {C.SAME_STEPS, C.ORACLE, C.ORACLE_TOOLRETRIEVER}      # their traces are written by `controls` (no LLM)
from toolkit.feedback.config import config_for
from toolkit.feedback.loop import Trace

DOCS = {f"d{i}": Document(f"d{i}", "cat", f"tool{i}", f"api{i}", f"tool {i} text") for i in range(6)}


def _ds(name, qids, gold):
    return RetrievalDataset(name, DOCS, {q: Query(q, f"instruction {q}") for q in qids}, {q: {gold[q]: 1} for q in qids})


def _trace(q, lists, seconds):
    tr = Trace(q, [f"instruction {q}"] + [f"refined {q} {t}" for t in range(1, len(lists))])
    tr.runs = [{d: float(10 - i) for i, d in enumerate(r)} for r in lists]
    tr.seconds = seconds
    return tr


def test_conditions_change_the_model_not_the_training_feedback():
    cfg = config_for("standard")
    main_model, main_trace = X.model_id(cfg), X.train_trace_path(cfg)
    ids = {main_model}
    for table, rows in X.CONDITIONS.items():
        for label in rows:
            c = X.condition(cfg, table, label)
            assert X.train_trace_path(c) == main_trace         # the offline feedback is generated once
            ids.add(X.model_id(c))
            assert X.test_trace_path(c, "I2", 40) != X.test_trace_path(cfg, "I2", 40)
    assert len(ids) == 1 + sum(len(r) for r in X.CONDITIONS.values())
    assert X.condition(cfg, "6", "Ours (RoBERTa-based)").base == "mpnet"
    # the smoke profile checks Table 6's path with MiniLM (trains ~5x faster): still its own warm-up and model
    smoke = config_for("smoke")
    row6 = X.condition(smoke, "6", "Ours (RoBERTa-based)")
    assert row6.base == "minilm" and X.warmup_id(row6) != X.warmup_id(smoke) and X.model_id(row6) != X.model_id(smoke)
    assert X.condition_change(smoke, "6", "Ours (RoBERTa-based)") == {"base": "minilm", "warmup_pairs": 5000}
    assert X.condition(cfg, "4", "w/o joint & hard-neg").training.joint is False
    # a different LLM or sample size is a different trace
    assert X.test_trace_path(config_for("standard", llm="other"), "I2", None) != X.test_trace_path(cfg, "I2", None)
    assert X.test_trace_path(cfg, "I2", 10) != X.test_trace_path(cfg, "I2", None)


def test_values_per_round_and_seconds_count_only_the_rounds_an_instruction_ran():
    ds = _ds("g", ["a", "b"], {"a": "d1", "b": "d2"})
    traces = {"a": _trace("a", [["d0", "d1"], ["d1", "d0"]], [2.0]),          # refined once, then N/A
              "b": _trace("b", [["d0", "d2"], ["d2"], ["d2"]], [3.0, 5.0])}
    assert X.trace_values(traces, ds.qrels, 0, ["ndcg@1"])["ndcg@1"] == 0.0
    assert X.trace_values(traces, ds.qrels, 1, ["ndcg@1"])["ndcg@1"] == 1.0
    assert X.trace_values(traces, ds.qrels, None, ["ndcg@1"])["ndcg@1"] == 1.0
    assert X.seconds_per_instruction(traces, 1) == pytest.approx(2.5)
    assert X.seconds_per_instruction(traces, 2) == pytest.approx(5.0)      # a: 2 s, b: 3 + 5 s
    case = X.case_study(traces, ds)
    assert case["qid"] == "b" and case["rounds"] == 2 and "Iteration 2: refined b 2" in case["text"]
    assert "1. * tool2 / api2" in case["text"] and case["changed"] == 2
    assert X.case_study(traces, ds, loss=True) is None                   # both rose: no case with a loss
    traces["b"].runs.reverse()                                           # b, changed in more rounds, now falls
    assert X.case_study(traces, ds)["qid"] == "a"                        # the gain case is one that rose
    lost = X.case_study(traces, ds, loss=True)
    assert lost["qid"] == "b" and lost["changed"] == 2 and lost["ndcg@5 first"] == 1.0 > lost["ndcg@5 last"]
    traces["b"].runs.reverse()
    # a "refinement" into the same text is not a change: b, refined into itself twice, is not the case any more
    traces["b"].instructions = ["instruction b"] * 3
    case = X.case_study(traces, ds)
    assert case["qid"] == "a" and case["changed"] == 1
    traces["a"].instructions = ["instruction a"] * 2
    assert X.case_study(traces, ds) is None


def test_trace_files_round_trip_with_their_meta_and_name_the_bad_line(tmp_path):
    traces = {"a": _trace("a", [["d0", "d1"], ["d1", "d0"]], [2.0])}
    p = X.save_traces(traces, tmp_path / "t.jsonl", {"stage": "test"})
    back = X.load_traces(p)
    assert back["a"].instructions == traces["a"].instructions and list(back["a"].runs[1]) == ["d1", "d0"]
    assert back["a"].seconds == [2.0] and X.load_meta(p) == {"stage": "test"}
    p.write_text(p.read_text() + '{"qid": 3}\n')
    with pytest.raises(ValueError, match=r"t.jsonl:2: not a feedback trace line"):
        X.load_traces(p)


def test_collect_reads_traces_and_lists_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(X, "TRACE_DIR", tmp_path)
    cfg = config_for("smoke", test_requests={"I1": 1, "I2": 2, "I3": 1, "UltraTool": 1}, ablation_requests=1,
                     baseline_queries=None)
    gold = {"a": "d1", "b": "d2", "c": "d3", "e": "d4", "u": "d5", "v": "d0"}
    tests = {"I1": _ds("i1", ["a"], gold), "I2": _ds("i2", ["b", "c"], gold), "I3": _ds("i3", ["e"], gold),
             "UltraTool": _ds("ut", ["u", "v"], gold)}
    tests["All"] = _ds("all", ["a", "b", "c", "e"], gold)
    tests = {k: tests[k] for k in ("I1", "I2", "I3", "All", "UltraTool")}
    values, pending, _ = collect(cfg, tests)
    assert values.empty
    assert {(p["condition"], p["set"]) for p in pending} >= {("ToolRetriever", "I1"), ("Ours", "I2"),
                                                              ("w/o warm-up", "I2"), ("Ours (dim=300)", "I2")}
    assert all(p["needs"].startswith("python -m toolkit.feedback ") for p in pending)
    # write the main run's traces (ToolRetriever: round 0 only; Ours: gold found after one round)
    for label, ds in tests.items():
        if label == "All":
            continue
        X.save_traces({q: _trace(q, [["d0", gold[q]]], []) for q in ds.queries}, X.toolretriever_trace_path(cfg, label))
        n = cfg.sample_size(label)
        sample = ds.nested_sample(n, cfg.sample_seed).queries
        X.save_traces({q: _trace(q, [["d0", gold[q]], [gold[q]]], [4.0]) for q in sample},
                      X.test_trace_path(cfg, label, n))
    values, pending, extra = collect(cfg, tests)
    v = values.set_index(["table", "set", "method", "metric"])["value"]
    assert v["2", "I2", "Ours", "ndcg@1"] == 1.0 and v["2", "I2", "ToolRetriever", "ndcg@1"] == 0.0
    assert v["2", "All", "Ours", "ndcg@1"] == 1.0                 # All = the union of the groups' traces
    assert values.set_index(["table", "set", "method", "metric"])["n"]["2", "All", "Ours", "ndcg@1"] == 4
    assert v["3", "UltraTool", "ToolRetriever (LLM sample)", "ndcg@3"] == pytest.approx(0.6309, abs=1e-4)
    assert v["3", "UltraTool", "% improve", "ndcg@3"] == pytest.approx(1 / 0.6309297 - 1, abs=1e-4)
    assert v["5", "I2", "Ours (T=1)", "seconds_per_instruction"] == 4.0
    assert v["5", "I2", "Ours (T=0)", "ndcg@1"] == 0.0 and v["5", "I2", "Ours (T=0)", "seconds_per_instruction"] == 0.0
    assert v["5", "I2", "Ours (T=3, unchanged = N/A)", "ndcg@1"] == 1.0     # every refinement changed the text
    own = values[values.table == "5"].groupby("method").ours_only.first()
    assert own["Ours (T=0)"] and own["Ours (T=3, unchanged = N/A)"] and not own["Ours (T=1)"]
    assert extra["rewritten_by_round"] == {1: 1.0, 2: 0.0, 3: 0.0}
    assert v["4", "I2", "Ours", "ndcg@1"] == 1.0 and ("4", "I2", "w/o warm-up", "ndcg@1") not in v
    # Table 6: each base's ToolRetriever on the same I2 queries; the BERT-class one is the main warm-up's run, the
    # RoBERTa-class one waits for its own warm-up's run (no LLM), then reads it
    assert v["6", "I2", "ToolRetriever (BERT-based)", "ndcg@1"] == 0.0
    assert values.set_index(["table", "set", "method", "metric"])["n"]["6", "I2", "ToolRetriever (BERT-based)", "ndcg@1"] == 1
    roberta = [p for p in pending if p["condition"] == "ToolRetriever (RoBERTa-based)"]
    assert len(roberta) == 1 and roberta[0]["needs"].endswith(
        "toolretriever --profile smoke --group I2 --condition '6:Ours (RoBERTa-based)'")
    mpnet = X.condition(cfg, "6", "Ours (RoBERTa-based)")
    assert X.toolretriever_trace_path(mpnet, "I2") != X.toolretriever_trace_path(cfg, "I2")
    X.save_traces({q: _trace(q, [[gold[q]]], []) for q in tests["I2"].queries}, X.toolretriever_trace_path(mpnet, "I2"))
    values, pending, extra = collect(cfg, tests)
    v = values.set_index(["table", "set", "method", "metric"])["value"]
    assert v["6", "I2", "ToolRetriever (RoBERTa-based)", "ndcg@1"] == 1.0
    assert not [p for p in pending if p["condition"].startswith("ToolRetriever") and not p["condition"].startswith(C.TOOLRETRIEVER_LOOP)]
    loop = [p for p in pending if p["condition"] == C.TOOLRETRIEVER_LOOP]      # the fair LLM's loop: not traced here
    assert loop and all("toolretriever-loop --profile smoke --fair --group" in p["needs"] for p in loop)
    assert {p["set"] for p in pending if p["condition"] not in CONTROLS | {C.TOOLRETRIEVER_LOOP}} == {"I2", "ToolLens train"}   # the conditions and the offline feedback
    assert not (values.table == "s4.3").any()
    # the offline feedback (§4.3): the training sample, gold found after one refinement, one instruction never asked
    from toolkit.feedback.data import training_set
    stage = X.llm_stages(cfg, tests)[0]
    assert stage.name == "training feedback" and stage.command.endswith("train-feedback --profile smoke")
    train = training_set("train")
    gold_of = {q: next(d for d, r in train.qrels[q].items() if r > 0) for q in stage.qids}
    miss = {q: next(d for d in train.corpus if d not in train.qrels[q]) for q in stage.qids}
    X.save_traces({q: _trace(q, [[miss[q]], [gold_of[q]]] if i else [[miss[q]]], [2.0] if i else [])
                   for i, q in enumerate(stage.qids)}, stage.path)
    values, pending, extra = collect(cfg, tests)
    assert extra["case_study"]["set"] == "I2"                     # a test trace's case first
    v = values.set_index(["table", "set", "method", "metric"])["value"]
    last = f"ToolRetriever + feedback (round {cfg.training.rounds})"
    assert v["s4.3", "ToolLens train", "ToolRetriever + feedback (round 0)", "ndcg@1"] == 0.0
    assert v["s4.3", "ToolLens train", last, "ndcg@1"] == pytest.approx(1 - 1 / len(stage.qids))
    assert v["s4.3", "ToolLens train", "ToolRetriever + feedback (round 1)", "rewritten"] == pytest.approx(1 - 1 / len(stage.qids))
    assert {p["set"] for p in pending if p["condition"] not in CONTROLS | {C.TOOLRETRIEVER_LOOP}} == {"I2"}   # only the Tables 4, 6, 7 conditions remain
    for p in tmp_path.glob("*-test-*"):                            # no test trace yet: the offline feedback's case
        p.unlink()
    _, _, alone = collect(cfg, tests)
    case = alone["case_study"]
    assert case["set"] == "ToolLens train" and case["ndcg@5 last"] > case["ndcg@5 first"] == 0.0
    # per-query values travel with the rows, so the claims table can test Ours against ToolRetriever
    from toolkit.feedback import tables as T
    pq = values.set_index(["table", "set", "method", "metric"])["per_query"]
    assert pq["2", "I2", "Ours", "ndcg@1"] == {"b": 1.0, "c": 1.0}
    c = T.claims(values, metric="ndcg@1").set_index("claim")
    first = c.loc["feedback beats the fine-tuned retriever on every in-domain group (ndcg@1, Table 2)"]
    # two queries resolve nothing (the smallest p of 2 sign flips is 0.5): within noise, not held
    assert first.here == "within noise" and "Ours vs ToolRetriever I2 p=" in first.p
    assert c.loc["removing warm-up, hard negatives, or joint loss and hard negatives lowers ndcg@1 (Table 4)"].here \
        == "pending"


def test_feedback_claims_on_the_paper_s_numbers_and_a_failing_run():
    import pandas as pd

    from toolkit.compare import load_paper_numbers
    from toolkit.feedback import tables as T
    c = T.claims(T.paper_values(load_paper_numbers("iterative_feedback"))).set_index("claim")
    assert c.basis.str.startswith("direction").all()     # printed numbers: no per-query values
    c = c.here
    assert c.iloc[[0, 1, 2, 3, 4, 5, 6, 8]].eq("held").all() and len(c) == 9
    assert c.iloc[7] == "not held"      # the paper's text: RoBERTa more effective; its Table 6: 86.75 < 87.10
    # decided on Ours; the ToolRetrievers are evidence beside it, and their row alone decides nothing
    base_claim = "the RoBERTa-class base beats the BERT-class one (Table 6; here mpnet vs MiniLM, ndcg@5)"
    qs = [f"q{i}" for i in range(30)]
    t6 = [{"table": "6", "set": "I2", "method": m, "metric": "ndcg@5", "value": sum(pq.values()) / 30, "per_query": pq,
           "n": 30, "planned": 30} for m, pq in (("ToolRetriever (BERT-based)", dict.fromkeys(qs, 0.4)),
                                                 ("ToolRetriever (RoBERTa-based)", dict.fromkeys(qs, 0.5)),
                                                 ("Ours (BERT-based)", dict.fromkeys(qs, 0.3)))]
    row = T.claims(pd.DataFrame(t6)).set_index("claim").loc[base_claim]
    assert row.here == "pending" and row.evidence.startswith("Ours: BERT-class 0.300, RoBERTa-class pending; "
                                                             "ToolRetriever: BERT-class 0.400, RoBERTa-class 0.500")
    t6.append({**t6[2], "method": "Ours (RoBERTa-based)", "value": 0.2, "per_query": dict.fromkeys(qs, 0.2)})
    row = T.claims(pd.DataFrame(t6)).set_index("claim").loc[base_claim]
    assert row.here == "not held" and row.p == "Ours (RoBERTa-based) vs Ours (BERT-based) p<0.001"
    assert "ToolRetriever RoBERTa- vs BERT-class +0.100 (p=0.000)" in row.evidence   # evidence beside, not verdict
    # Table 6's "with both bases": a verdict waits for both bases (issue 84: no verdict on a missing comparison)
    both = "feedback beats the fine-tuned retriever of the same base, with both bases (Table 6, ndcg@5)"
    t6 = [{"table": "6", "set": "I2", "method": m, "metric": "ndcg@5", "value": x, "per_query": None, "n": 40,
           "planned": 40} for m, x in (("Ours (BERT-based)", 0.33), ("ToolRetriever (BERT-based)", 0.41))]
    assert T.claims(pd.DataFrame(t6)).set_index("claim").loc[both].here == "pending"
    t6 += [{**t6[0], "method": "Ours (RoBERTa-based)", "value": 0.5}, {**t6[1], "method": "ToolRetriever (RoBERTa-based)"}]
    assert T.claims(pd.DataFrame(t6)).set_index("claim").loc[both].here == "not held"      # by direction: 0.33 < 0.41
    qs = [f"q{i}" for i in range(30)]
    ours = {q: 1.0 if i % 2 else 0.0 for i, q in enumerate(qs)}
    rows = [{"table": "5", "set": "I2", "method": f"Ours (T={t})", "metric": "ndcg@5", "value": 0.5,
             "per_query": ours} for t in (1, 2, 3)]           # flat over the rounds: no rise, p = 1
    rows += [{"table": "5", "set": "I2", "method": f"Ours (T={t})", "metric": "seconds_per_instruction",
              "value": s, "per_query": None} for t, s in ((1, 10.0), (2, 15.0), (3, 21.0))]
    # our own rows (T=0, the stopping rule) are not rounds of the paper's claim: a rise from them changes nothing
    rows += [{"table": "5", "set": "I2", "method": m, "metric": x, "value": 0.0, "per_query": None}
             for m in ("Ours (T=0)", "Ours (T=3, unchanged = N/A)") for x in ("ndcg@5", "seconds_per_instruction")]
    c = T.claims(pd.DataFrame(rows)).set_index("claim")
    assert c.loc["ndcg@5 rises with every round (Table 5)"].evidence == "T=1 0.500 → T=2 0.500 → T=3 0.500"
    assert c.loc["ndcg@5 rises with every round (Table 5)"].here == "within noise"     # a tie is never a verdict
    assert c.loc["ndcg@5 rises with every round (Table 5)"].p == "Ours (T=2) vs Ours (T=1) p=1.000; " \
                                                                  "Ours (T=3) vs Ours (T=2) p=1.000"
    assert c.loc["each further round costs fewer extra LLM seconds per instruction (Table 5)"].here == "not held"
    every = "feedback beats the fine-tuned retriever on every in-domain group (ndcg@5, Table 2)"
    assert c.loc[every].here == "pending"
    # "every group" waits for every group's whole sample (one group below no longer decides it alone: issue 84);
    # a trace still being generated (n < planned) decides nothing
    below = [{"table": "2", "set": "I2", "method": m, "metric": "ndcg@5", "value": x, "per_query": None, "n": 20,
              "planned": 20} for m, x in (("Ours", 0.3), ("ToolRetriever", 0.4))]
    assert T.claims(pd.DataFrame(rows + below)).set_index("claim").loc[every].here == "pending"
    below[0]["planned"] = 30
    assert T.claims(pd.DataFrame(rows + below)).set_index("claim").loc[every].here == "pending"
    # no verdict rests on a trace still being generated: I1's gain on its first 20 of 150 decides nothing
    gains = [{"table": "2", "set": g, "method": "% improve", "metric": "ndcg@5", "value": x, "per_query": None,
              "n": n, "planned": p} for g, x, n, p in (("I1", 0.09, 20, 150), ("I2", -0.18, 230, 230))]
    larger = "the gain is larger on multi-tool I2 than on single-tool I1 (% improve ndcg@5, Table 2)"
    assert T.claims(pd.DataFrame(rows + gains)).set_index("claim").loc[larger].here == "pending"
    gains[0]["n"] = 150
    assert T.claims(pd.DataFrame(rows + gains)).set_index("claim").loc[larger].here == "not held"


def test_a_condition_must_be_a_row_of_tables_4_6_7():
    from toolkit.feedback.__main__ import parse_condition
    cfg = config_for("smoke")
    assert parse_condition(cfg, "7:Ours (dim=512)").training.embedding_size == 512
    with pytest.raises(SystemExit, match="not a row of Tables 4, 6 or 7; known: '4:w/o warm-up'"):
        parse_condition(cfg, "4:w/o everything")


def test_llm_slots_must_be_positive_and_reach_the_backend(tmp_path, monkeypatch):
    from toolkit.feedback import stages
    with pytest.raises(ValueError, match="llm_slots must be >= 1"):
        config_for("standard", llm_slots=0)
    seen = {}
    monkeypatch.setattr("toolkit.llm.client.get_client", lambda *a, **kw: seen.update(kw) or "client")
    assert stages.llm_client(config_for("standard")) == "client" and seen["n_parallel"] == 4
    seen.clear()
    stages.llm_client(config_for("smoke"))
    assert "n_parallel" not in seen                    # None: the backend's own default (echo has no slots)


def _traced(cfg, n):
    """``n`` traces for the first instructions of the training-feedback stage (what status counts as traced)."""
    from toolkit.feedback import experiment as X
    from toolkit.feedback.loop import Trace
    stage = X.llm_stages(cfg, X.test_datasets(cfg))[0]
    return {q: Trace(q, ["x"], [{"a/b/c": 1.0}]) for q in stage.qids[:n]}


def test_budget_plans_every_llm_stage_and_reads_the_benchmark_records(tmp_path, monkeypatch):
    from dataclasses import asdict

    from toolkit.feedback import budget as B
    from toolkit.feedback import experiment as X
    cfg = config_for("smoke")
    plan = B.planned_instructions(cfg, X.test_datasets(cfg))
    # smoke: 8 training instructions, 4 per test group, 9 conditions x 2 I2 queries
    assert plan == {"training feedback": 8, "test I1": 4, "test I2": 4, "test I3": 4, "test UltraTool": 4,
                    "Tables 4, 6, 7 (9 conditions)": 18}
    assert B.plan_hours(plan, rounds=3, seconds_per_round=60) == pytest.approx(42 * 3 / 60)
    monkeypatch.setattr(X, "TRACE_DIR", tmp_path)             # one stage half done: progress counts its lines
    X.save_traces(_traced(cfg, 4), X.train_trace_path(cfg), {"complete": False, "instructions": 4, "wall_s": 5400.0})
    done = B.progress(cfg, X.test_datasets(cfg))
    assert list(done.planned) == list(plan.values()) and list(done.traced) == [4, 0, 0, 0, 0, 0]
    assert done.at["training feedback", "wall h"] == 1.5
    with pytest.raises(ValueError, match="seconds_per_round must be > 0"):
        B.plan_hours(plan, 3, 0)
    path = tmp_path / "bench.json"
    assert B.load_bench(path) == []
    rec = {"measured": "2026-11-26", "model": cfg.llm, "threads": 2, "slots": 1, "n": 4,
           "feedback": asdict(cfg.feedback), "variants": {"chat": {"seconds per round": 58.1, "median latency s": 58.5,
                                                                   "total s": 232.5, "tokens out": 1564, "N/A": 0}}}
    B.add_bench(rec, path)
    B.add_bench({**rec, "variants": {"chat": {**rec["variants"]["chat"], "seconds per round": 50.0}}}, path)
    B.add_bench({**rec, "slots": 4}, path)
    assert len(B.load_bench(path)) == 2                          # the same settings measured again: replaced
    assert B.bench_record(B.load_bench(path), cfg)["variants"]["chat"]["seconds per round"] == 50.0
    assert B.bench_record(B.load_bench(path), cfg, slots=4)["slots"] == 4
    assert B.bench_record(B.load_bench(path), config_for("standard")) is None   # other feedback settings
    assert list(B.bench_table(B.load_bench(path))["s per round"]) == [50.0, 58.1]
    both = {**rec, "variants": {**rec["variants"], "independent": {"seconds per round": 100.0, "total s": 400.0,
                                                                   "tokens out": 1564, "N/A": 0}}}
    assert B.chat_speedup(both) == pytest.approx((100.0 / 58.1, 400.0 / 232.5))
    assert B.bench_record([{**rec, "feedback": {**rec["feedback"], "refine_wording": "enrich-add"}}], cfg) is not None
    assert B.wording_table(tmp_path / "none.json") == (None, None)
    ab = tmp_path / "wording.json"
    ab.write_text(json.dumps({"rounds": 24, "measured": "2026-11-26", "source": "s", "wordings": {
        "enrich": {"changed": 9, "extended": 3, "median words": 30.0},
        "enrich-add": {"changed": 20, "extended": 15, "median words": 40.0}}}))
    table, ab_rec = B.wording_table(ab)
    assert list(table.index) == ["enrich", "enrich-add"] and list(table.changed) == [9, 20] and ab_rec["rounds"] == 24
    path.write_text('{"not": "a list"}')
    with pytest.raises(ValueError, match="bench.json: expected a list of benchmark records"):
        B.load_bench(path)
    path.write_text("[{")
    with pytest.raises(ValueError, match="bench.json: not JSON"):
        B.load_bench(path)


def test_status_prints_the_plan_progress_without_a_model(capsys, monkeypatch, tmp_path):
    from toolkit.feedback import __main__ as M
    from toolkit.feedback import experiment as X
    from toolkit.feedback import stages
    monkeypatch.setattr(X, "TRACE_DIR", tmp_path)

    def no_model(*a, **k):
        raise AssertionError("status must not train, load or call a model")
    for name in ("warmup", "train_feedback", "train", "test", "toolretriever", "llm_client", "dense_search"):
        monkeypatch.setattr(stages, name, no_model)
    assert M.main(["status", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "30_feedback (smoke)" in out and "training feedback" in out and "Tables 4, 6, 7 (9 conditions)" in out
    assert "measured so far" not in out                            # nothing traced yet
    X.save_traces(_traced(config_for("smoke"), 4), X.train_trace_path(config_for("smoke")),
                  {"complete": False, "instructions": 4, "wall_s": 360.0})
    assert M.main(["status", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out             # 42 planned + 4 x 4 for the loop on ToolRetriever, 4 traced at 90 s each
    assert "ToolRetriever + loop I2 (fair LLM)" in out
    assert "measured so far: 90 s per instruction over 4 traced -> ~1.4 h for the 54 left" in out
    import pandas as pd

    from toolkit.feedback import budget as B
    done = pd.DataFrame({"planned": [4, 2], "traced": [4, 2], "wall h": [0.1, 0.1]}, index=["a", "b"])
    monkeypatch.setattr(B, "progress", lambda cfg, tests, **_: done)    # every planned instruction traced
    assert M.main(["status", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "nothing left: all 6 planned instructions are traced, 0.2 h of generation at 120 s per instruction" in out
    assert "left:" not in out.replace("nothing left:", "") and "measured so far" not in out


def test_the_standard_feedback_settings_have_a_recorded_benchmark():
    # the notebook states the plan's hours from this record: changing the standard caps, K or slots without
    # re-running scripts/bench_feedback.py --out results/bench/feedback_round.json would leave it without one
    from toolkit.feedback import budget as B
    cfg = config_for("standard")
    rec = B.bench_record(B.load_bench(), cfg)
    assert rec is not None, "re-run scripts/bench_feedback.py with the standard settings and --out"
    solo = B.bench_record(B.load_bench(), cfg, slots=1, variant="independent")
    assert solo is not None and {"chat", "independent"} <= set(solo["variants"])


def _fake_traces(ds, qids):
    """Traces as the loop writes them (one refinement each), over ``ds``'s first 10 documents."""
    from toolkit.feedback.loop import Trace
    docs = list(ds.corpus)[:10]
    run = {d: 1.0 - i / 10 for i, d in enumerate(docs)}
    return {q: Trace(q, [ds.queries[q].text, "refined"], [run, run], seconds=[1.0], answers=[["no", "yes"]])
            for q in qids}


def test_collect_reports_a_trace_in_progress_through_to_the_notes(tmp_path, monkeypatch):
    # I1's test trace complete, I2's with 2 of its 4 instructions and marked incomplete (as a background run
    # leaves it between chunks), nothing else: rows for both, the rest pending
    from toolkit.feedback import experiment as X
    from toolkit.feedback import tables as T
    cfg = config_for("smoke")
    tests = X.test_datasets(cfg)
    monkeypatch.setattr(X, "TRACE_DIR", tmp_path)
    for group, keep in (("I1", 4), ("I2", 2)):
        qids = X.llm_sample(cfg, tests, group)
        assert len(qids) == 4
        X.save_traces(_fake_traces(tests[group], qids[:keep]), X.test_trace_path(cfg, group, cfg.sample_size(group)),
                      {"stage": "test", "complete": keep == len(qids), "instructions": keep})
    values, pending, _ = collect(cfg, tests)
    ours = values[(values.table == "2") & (values.set == "I2") & (values.method == "Ours")]
    assert len(ours) == 3 and set(ours.n) == {2} and set(ours.planned) == {4}          # NDCG@1/3/5
    assert any(p["set"] == "I2" and p["condition"] == "Ours" for p in pending)
    assert any(p["set"] == "I1" and p["condition"] == "ToolRetriever" for p in pending)
    notes = T.sample_notes(ours, tests, cfg)
    assert all("partial: 2 of the 4 planned instructions traced so far" in n for n in notes)
    full = values[(values.table == "2") & (values.set == "I1") & (values.method == "Ours")]
    assert len(full) == 3 and (full.n == full.planned).all()
    assert not any("partial" in n for n in T.sample_notes(full, tests, cfg))


def test_condition_rounds_split_a_row_into_its_retriever_and_its_loop():
    qids = [f"q{i}" for i in range(4)]
    ds = _ds("i2", qids, {q: "d1" for q in qids})
    hit, miss = ["d1", "d0"], ["d0", "d2"]
    ours = {q: _trace(q, [miss, hit], [3.0]) for q in qids}                 # the loop finds the tool
    cond = {q: _trace(q, [hit], [2.0]) for q in qids}                        # found at once, then "N/A"
    rows = X.condition_rounds({("4", "Ours"): ours, ("4", "w/o hard-negative"): cond}, ds.qrels, 3)
    r = rows.set_index("method")
    assert r.at["Ours", "round 0"] == 0.0 and r.at["Ours", "round 3"] == 1.0 and r.at["Ours", "loop"] == 1.0
    assert r.at["Ours", "N/A at round 1"] == 0.0 and pd.isna(r.at["Ours", "p"])
    assert r.at["w/o hard-negative", "loop"] == 0.0 and r.at["w/o hard-negative", "N/A at round 1"] == 1.0
    assert r.at["w/o hard-negative", "round 0 vs Ours"] == 1.0 and r.at["w/o hard-negative", "p"] < 0.2
    assert X.condition_rounds({}, ds.qrels, 3).empty


def test_condition_rounds_text_names_what_separates_the_rows():
    from toolkit.feedback import tables as T
    assert T.signed(-0.0004) == "+0.000" and T.signed(-0.0006) == "-0.001" and T.signed(0.02) == "+0.020"
    qids = [f"q{i}" for i in range(6)]
    ds = _ds("i2", qids, {q: "d1" for q in qids})
    hit, miss = ["d1", "d0"], ["d0", "d2"]
    ours = {q: _trace(q, [miss, hit], [3.0]) for q in qids}                 # the loop finds the tool
    same_start = {q: _trace(q, [miss], [2.0]) for q in qids}                 # same retriever, the loop stops
    loop_only = X.condition_rounds({("4", "Ours"): ours, ("4", "w/o warm-up"): same_start}, ds.qrels, 3)
    text = T.condition_rounds_text(loop_only, 3)
    assert "Ours 0.000 → 1.000 (+1.000)" in text and "w/o warm-up 0.000 → 0.000 (+0.000; round 0 vs Ours +0.000" in text
    assert "what the loop did, not the retriever" in text
    better_start = {q: _trace(q, [hit], [2.0]) for q in qids}                # another retriever from the start
    trained = X.condition_rounds({("4", "Ours"): ours, ("4", "w/o warm-up"): better_start}, ds.qrels, 3)
    assert "the ablated trainings change the retriever for w/o warm-up" in T.condition_rounds_text(trained, 3)
    assert "separates" not in T.condition_rounds_text(trained[trained.method == "Ours"], 3)
    assert T.condition_rounds_text(trained.iloc[0:0], 3) == ""


def test_all_runs_each_missing_trace_in_its_own_process(monkeypatch, tmp_path):
    import sys

    from toolkit.feedback import __main__ as M
    from toolkit.feedback import stages
    monkeypatch.setattr(X, "TRACE_DIR", tmp_path)

    def no_model(*a, **k):
        raise AssertionError("`all` itself must not train, load or call a model: its children do")
    for name in ("warmup", "train_feedback", "train", "test", "toolretriever", "llm_client", "dense_search"):
        monkeypatch.setattr(stages, name, no_model)
    cfg = config_for("smoke")
    ran: list[list[str]] = []
    M.run_all(cfg, run=ran.append)
    assert all(argv[:3] == [sys.executable, "-m", "toolkit.feedback"] for argv in ran)
    stages_run = [argv[3:] for argv in ran]
    assert stages_run[:4] == [["toolretriever", "--profile", "smoke", "--group", g] for g in ("I1", "I2", "I3", "UltraTool")]
    # issue 48's order: the LLM's loop alone on I2 (the fair step), the training feedback, the groups' tests, their
    # controls (no LLM), the conditions (claims of Tables 4, 6, 7), then the loop on the other groups
    assert stages_run[4] == ["toolretriever-loop", "--profile", "smoke", "--fair", "--group", "I2"]
    assert stages_run[5] == ["train-feedback", "--profile", "smoke"]
    assert [a[0] for a in stages_run[6:10]] == ["test"] * 4
    assert stages_run[10:14] == [["controls", "--profile", "smoke", "--group", g] for g in ("I2", "I3", "I1", "UltraTool")]
    assert stages_run[-3:] == [["toolretriever-loop", "--profile", "smoke", "--fair", "--group", g]
                               for g in ("I1", "I3", "UltraTool")]
    roberta = ["--condition", "6:Ours (RoBERTa-based)"]
    # mpnet (its own warm-up, hours here) after the other conditions: its ToolRetriever run, then its loop
    assert stages_run[-5:-3] == [[s, "--profile", "smoke", "--group", "I2", *roberta] for s in ("toolretriever", "test")]
    assert stages_run[14] == ["test", "--profile", "smoke", "--group", "I2", "--condition", "4:w/o warm-up"]
    assert stages_run[-6] == ["test", "--profile", "smoke", "--group", "I2", "--condition", "7:Ours (dim=2048)"]
    assert len(ran) == 4 + 1 + 1 + 4 + 4 + 3 + 9 + 1
    # a complete trace is not run again; an incomplete one is
    train = X.llm_stages(cfg, X.test_datasets(cfg))[0]
    X.save_traces({q: _trace(q, [["d0"]], []) for q in train.qids}, train.path)
    X.save_traces({}, X.toolretriever_trace_path(cfg, "I1"))
    left = M.missing_commands(cfg)
    assert "python -m toolkit.feedback train-feedback --profile smoke" not in left and len(left) == len(ran) - 2
    X.save_traces({q: _trace(q, [["d0"]], []) for q in train.qids[1:]}, train.path)
    assert "python -m toolkit.feedback train-feedback --profile smoke" in M.missing_commands(cfg)


def test_768_is_best_needs_every_size_and_a_larger_size_decides_not_held():
    from toolkit.feedback import tables as T
    best = "embedding size 768 is the best of Table 7's sizes (ndcg@5)"

    def holds(sizes):
        rows = [{"table": "7", "set": "I2", "method": f"Ours (dim={d})", "metric": "ndcg@5", "value": x,
                 "per_query": None, "n": n, "planned": 40} for d, (x, n) in sizes.items()]
        return T.claims(pd.DataFrame(rows)).set_index("claim").loc[best].here
    assert holds({300: (0.30, 40), 768: (0.35, 40)}) == "pending"            # 768 leads, three sizes untraced
    assert holds({300: (0.30, 40), 768: (0.35, 40), 512: (0.40, 20)}) == "pending"   # 512 still being traced
    assert holds({300: (0.30, 40), 768: (0.35, 40), 512: (0.40, 40)}) == "pending"   # 1024, 2048 untraced
    assert holds({d: (0.4 if d == 512 else 0.35 if d == 768 else 0.3, 40) for d in (300, 512, 768, 1024, 2048)}) \
        == "not held"
    assert holds({d: (0.35 if d == 768 else 0.3, 40) for d in (300, 512, 768, 1024, 2048)}) == "held"
    assert holds({300: (0.30, 40), 512: (0.40, 40)}) == "pending"            # no 768 yet


def test_claims_by_setup_puts_each_claim_s_setups_together_and_judges_each_on_its_own_values():
    import pandas as pd

    from toolkit.compare import load_paper_numbers
    from toolkit.feedback import tables as T
    below = [{"table": "2", "set": "I2", "method": m, "metric": "ndcg@5", "value": x, "per_query": None, "n": 20,
              "planned": 20} for m, x in (("Ours", 0.3), ("ToolRetriever", 0.4))]
    c = T.claims_by_setup({"fair LLM": pd.DataFrame(columns=below[0].keys()), "capped LLM": pd.DataFrame(below)},
                          T.paper_values(load_paper_numbers("iterative_feedback")))
    assert {"claim", "setup", "paper", "here", "evidence", "p", "tests", "condition", "explained_by", "paper_number",
            "headline"} <= set(c.columns)
    assert len(c) == 2 * 9 and list(c.setup[:4]) == ["fair LLM", "capped LLM"] * 2
    assert list(c.headline[:2]) == [True, False]                          # the first setup is the headline
    ood = "feedback beats the fine-tuned retriever out-of-domain (UltraTool ndcg@5, Table 3)"
    first = c[c.claim == ood].set_index("setup")
    assert (first.here == "pending").all() and (first.paper == "held").all()
    assert first.paper_number.iloc[0] > 0                                  # the paper's printed difference
    below += [{**r, "set": "UltraTool", "table": "3"} for r in below]
    c = T.claims_by_setup({"fair LLM": pd.DataFrame(columns=below[0].keys()), "capped LLM": pd.DataFrame(below)})
    first = c[c.claim == ood].set_index("setup")
    assert first.at["capped LLM", "here"] == "not held" and first.at["capped LLM", "explained_by"] == "not explained"
    assert (c.groupby("claim", sort=False).paper.nunique() == 1).all()     # one paper verdict per claim
    with pytest.raises(ValueError, match="at least one setup"):
        T.claims_by_setup({})


def test_the_fair_step_regenerates_the_training_feedback_on_fewer_instructions_stated_per_profile():
    from dataclasses import replace

    from toolkit.feedback import controls as C
    from toolkit.feedback.config import FAIR_TRAIN_FEEDBACK_REQUESTS, config_for, fair_config, with_fair_feedback
    from toolkit.feedback.experiment import train_trace_path
    std = config_for("standard")
    fair = fair_config("standard")
    assert fair.train_feedback_requests == FAIR_TRAIN_FEEDBACK_REQUESTS["standard"] < std.train_feedback_requests
    assert train_trace_path(fair) != train_trace_path(std)
    # a smaller override stays; a profile not named keeps its size (paper: all)
    assert with_fair_feedback(replace(std, train_feedback_requests=50)).train_feedback_requests == 50
    assert with_fair_feedback(config_for("paper")).train_feedback_requests is None
    # the loop on ToolRetriever trains on no feedback: its trace is the same whatever the training size
    assert C.toolretriever_loop_trace_path(fair, "I2", None) == C.toolretriever_loop_trace_path(
        replace(fair, train_feedback_requests=500), "I2", None)


def test_the_gain_claim_tests_the_difference_of_the_two_groups_gains():
    """Claim 2 (a larger gain on I2 than on I1) carries the permutation test of I2's % improve minus I1's: a gain
    only on I2 is significant, and the test needs every row's per-query values."""
    import numpy as np

    from toolkit.feedback import tables as T
    r = np.random.default_rng(0)
    rows = []
    for g, gain in (("I1", 0.0), ("I2", 0.5)):
        base = {f"{g}-{i}": float(v) for i, v in enumerate(r.uniform(0.2, 0.6, 60))}
        ours = {q: v * (1 + gain) for q, v in base.items()}
        for m, pq in (("Ours", ours), ("ToolRetriever", base)):
            rows.append({"table": "2", "set": g, "method": m, "metric": "ndcg@5", "value": float(np.mean(list(pq.values()))),
                         "per_query": pq, "n": 60, "planned": 60})
        rows.append({"table": "2", "set": g, "method": "% improve", "metric": "ndcg@5", "value": gain,
                     "per_query": None, "n": 60, "planned": 60})
    claim = "the gain is larger on multi-tool I2 than on single-tool I1 (% improve ndcg@5, Table 2)"
    row = T.claims(pd.DataFrame(rows)).set_index("claim").loc[claim]
    assert row.here == "held" and row.p == "% improve of Ours I2 vs I1 p<0.001"
    assert row.tests[0]["diff"] == pytest.approx(0.5)
    rows[0]["per_query"] = None
    assert T.claims(pd.DataFrame(rows)).set_index("claim").loc[claim].p == ""
