"""toolkit.querygen.tables on a hand-made long table (no model, no data)."""
from __future__ import annotations

import pandas as pd
import pytest

from toolkit.querygen import tables as T

IN, OUT = "querygen-in-domain", "querygen-out-of-domain"


def _values() -> pd.DataFrame:
    rows = []

    def add(ds, method, utt, sample, metric, value, n=10):
        rows.append({"dataset": ds, "method": method, "utterance": utt, "sample": sample, "metric": metric,
                     "value": value, "n": n})
    for ds, base in ((IN, 0.30), (OUT, 0.40)):
        add(ds, "Utterance", True, "all", "recall@5", base, 100)
        add(ds, "Utterance", True, "llm", "recall@5", base + 0.01)
        add(ds, "SFT", True, "llm", "recall@5", base + 0.05)
        add(ds, "SFT", False, "llm", "recall@5", base + 0.02)
    # alignment: in-domain rises, out-of-domain peaks at iteration 2
    for t, (vi, vo) in enumerate([(0.31, 0.41), (0.33, 0.46), (0.36, 0.44)], start=1):
        add(IN, f"Alignment it{t}", True, "llm", "recall@5", vi)
        add(OUT, f"Alignment it{t}", True, "llm", "recall@5", vo)
        add(OUT, f"Alignment it{t}", False, "llm", "recall@5", vo - 0.1)
    return pd.DataFrame(rows)


def test_fig4_has_one_row_per_iteration_and_one_column_per_test_set():
    f = T.fig4(_values())
    assert list(f.index) == [1, 2, 3] and set(f.columns) == {IN, OUT}
    assert f.loc[2, OUT] == pytest.approx(0.46) and f.loc[3, IN] == pytest.approx(0.36)


def test_reported_iteration_is_the_best_out_of_domain_unless_fixed():
    v = _values()
    assert T.reported_iteration(v) == 2
    assert T.reported_iteration(v, select_on=IN) == 3
    assert T.reported_iteration(v, iteration=1) == 1
    assert T.reported_iteration(v, iteration=7) is None              # not evaluated: no row rather than a wrong one
    assert T.reported_iteration(v[~v.method.str.startswith("Alignment")]) is None


def test_the_reported_iteration_becomes_table1s_alignment_row_and_its_table2_delta():
    v = T.with_reported_alignment(_values(), 2)
    t1 = T.table1(v)
    assert t1.loc["recall@5", (OUT, "Alignment")] == pytest.approx(0.46)
    assert t1.loc["recall@5", (IN, "Utterance")] == pytest.approx(0.30)     # the whole-set baseline
    t2 = T.table2(v).set_index(["dataset", "method"]).delta
    assert t2[OUT, "Alignment"] == pytest.approx(-0.1) and t2[IN, "SFT"] == pytest.approx(-0.03)
    assert T.with_reported_alignment(_values(), None).equals(_values())


def test_iteration_names_are_parsed_strictly():
    assert T.iteration_of("Alignment it12") == 12
    assert T.iteration_of("Alignment") is None and T.iteration_of("SFT it1") is None


def test_reward_history_and_sample_value():
    h = [{"iteration": 1, "mean": 0.2, "best_mean": 0.5, "drafts": 10, "kept": 4, "drafts_per_s": 0.3},
         {"iteration": 2, "mean": 0.3, "best_mean": 0.6, "drafts": 10, "kept": 5, "drafts_per_s": 0.5}]
    t = T.reward_history(h)
    assert list(t.index) == [1, 2] and list(t["mean reward"]) == [0.2, 0.3] and "drafts/s" in t
    assert T.reward_history([]).empty
    assert T.sample_value(_values(), "SFT", OUT) == pytest.approx(0.45)
    assert T.sample_value(_values(), "Zero-Shot", OUT) is None


def test_record_alignment_writes_figure4_points_as_our_own_cells():
    class Rec:
        cells = []

        def add(self, **kw):
            self.cells.append(kw)
    r = Rec()
    T.record_alignment(r, _values(), [{"iteration": 1, "mean": 0.2, "requests": 5, "drafts": 25,
                                       "sampled_from": "it0"}])
    pts = [c for c in r.cells if c["metric"] == "recall@5"]
    assert len(pts) == 6 and all(c["ours_only"] and c["table"] == "fig4" for c in r.cells)
    assert [c["value"] for c in r.cells if c["metric"] == "mean_reward"] == [0.2]


def test_calibration_table_blanks_temperatures_not_answered_on_every_dev_request():
    cal = {"SFT": {"scores": {0.0: 0.32, 0.3: 0.0}, "n": {0.0: 12, 0.3: 1}, "best": 0.0}}
    t = T.calibration_table(cal, needed=12)
    assert t.loc[0.0, "SFT"] == pytest.approx(0.32) and pd.isna(t.loc[0.3, "SFT"])
    assert T.calibration_table(cal).loc[0.3, "SFT"] == 0.0


def test_ablation_deltas_are_against_the_first_row():
    rows = []
    for ds in (IN, OUT):
        for row, v in (("Baseline", 0.40), ("Reduced drafts", 0.37), ("Increased threshold", 0.45)):
            for utt in (True, False):
                rows.append({"dataset": ds, "method": T.ablation_method("3", row), "utterance": utt, "sample": "llm",
                             "metric": "recall@5", "value": v if utt else 0.0, "n": 12})
    d = T.ablation_table(pd.DataFrame(rows), "3", ["Baseline", "Reduced drafts", "Increased threshold", "Decreased threshold"])
    d = d.set_index(["dataset", "method"]).delta
    assert d[IN, "Baseline"] == 0 and d[OUT, "Reduced drafts"] == pytest.approx(-0.03)
    assert d[IN, "Increased threshold"] == pytest.approx(0.05) and (IN, "Decreased threshold") not in d.index


def test_draft_timing_comes_from_the_per_answer_times_in_the_cache(tmp_path, monkeypatch):
    from toolkit.llm.cache import ResponseCache
    from toolkit.querygen.experiment import ALIGN_NAMESPACE, draft_timing
    monkeypatch.setenv("TOOLKIT_LLM_CACHE", str(tmp_path))
    from toolkit.querygen.generation import task_for
    c = ResponseCache(tmp_path, ALIGN_NAMESPACE, "gguf:m.gguf")
    chat = lambda kind, i: [{"role": "user", "content": task_for(kind).build(f"request {i}")}]  # noqa: E731
    for i in range(3):                                   # three drafts at T = 1.0, 2 s and 10 tokens each
        c.put("chat", chat("description", i), {"temperature": 1.0, "max_tokens": 160}, 0, "draft", ms=2000, ntok=10)
    c.put("chat", chat("description", 0), {"temperature": 0.0, "max_tokens": 160}, 0, "test answer", ms=500, ntok=5)
    c.put("chat", chat("intent", 0), {"temperature": 1.0, "max_tokens": 160}, 0, "intent draft", ms=900, ntok=4)
    got = draft_timing("gguf:m.gguf", 1.0)
    assert got["drafts_generated"] == 3 and got["draft_seconds"] == 6.0 and got["drafts_per_s"] == 0.5
    assert got["draft_tokens"] == 30 and draft_timing("gguf:other.gguf", 1.0) == {}
    # the same model's intent drafts (Table 5's row) are counted for their own prompt only
    assert draft_timing("gguf:m.gguf", 1.0, "intent")["drafts_generated"] == 1
    # the test answers of the same model, at the evaluation temperature, under their own names
    from toolkit.querygen.experiment import answer_timing
    assert answer_timing("gguf:m.gguf", 0.0) == {"answers": 1, "seconds": 0.5, "per_s": 2.0, "tokens": 5}
    # the reading is memoised per file content: an answer appended later is counted
    c.put("chat", chat("description", 3), {"temperature": 1.0, "max_tokens": 160}, 0, "draft", ms=2000, ntok=10)
    assert draft_timing("gguf:m.gguf", 1.0)["drafts_generated"] == 4


def test_ablation_samples_are_the_first_requests_of_the_llm_samples():
    from toolkit.data.contract import Document, Query, RetrievalDataset
    from toolkit.querygen.config import config_for
    from toolkit.querygen.experiment import Setup, ablation_setup
    docs = {"d": Document("d", "c", "t", "a", "text")}
    full = RetrievalDataset("in", docs, {f"q{i}": Query(f"q{i}", f"request {i}") for i in range(50)},
                            {f"q{i}": {"d": 1} for i in range(50)})
    cfg = config_for("smoke", test_requests=20, ablation_test_requests=8)
    s = Setup(split=None, index=None, dev=full, tests={"in": full},
              llm_tests={"in": full.nested_sample(cfg.test_requests, cfg.sample_seed)})
    a = ablation_setup(cfg, s)
    assert len(a.llm_tests["in"].queries) == 8 and set(a.llm_tests["in"].queries) < set(s.llm_tests["in"].queries)
    assert a.tests is s.tests


def test_reported_iteration_is_the_best_out_of_domain_among_complete_ones():
    import pandas as pd

    from toolkit.querygen.tables import reported_iteration
    rows = [{"dataset": "querygen-out-of-domain", "method": f"Alignment it{t}", "utterance": True,
             "metric": "recall@5", "value": v} for t, v in ((1, 0.30), (2, 0.35), (3, 0.50))]
    values = pd.DataFrame(rows)
    assert reported_iteration(values) == 3
    assert reported_iteration(values, among=[1, 2]) == 2          # iteration 3 only partly answered
    assert reported_iteration(values, iteration=1) == 1
    assert reported_iteration(values, among=[]) is None


def _full(v: pd.DataFrame) -> pd.DataFrame:
    """``_values`` with zero-shot rows and the reported alignment (iteration 2)."""
    extra = []
    for ds, zs, zs_no in ((IN, 0.28, 0.20), (OUT, 0.39, 0.30)):
        extra += [{"dataset": ds, "method": "Zero-Shot", "utterance": u, "sample": "llm", "metric": "recall@5",
                   "value": x, "n": 10} for u, x in ((True, zs), (False, zs_no))]
    v = pd.concat([v, pd.DataFrame(extra)], ignore_index=True)
    return T.with_reported_alignment(v, 2)


def test_claims_read_the_paper_s_findings_off_the_values():
    hist = [{"iteration": t, "mean": m} for t, m in ((1, 0.2), (2, 0.25), (3, 0.3))]
    c = T.claims(_full(_values()), hist, complete=[1, 2, 3], iterations=3,
                 sample_sizes={IN: 10, OUT: 10}).set_index("claim").here
    assert c["SFT is the best method in-domain (recall@5)"] == "held"            # SFT 0.35 > it2 0.33
    assert c["Alignment is the best method out-of-domain (recall@5)"] == "held"
    assert c["zero-shot is below the utterance on both test sets"] == "held"
    assert c["the mean draft reward rises at every iteration (Fig. 4, right)"] == "held"
    assert c["in-domain recall@5 rises at every iteration (Fig. 4)"] == "held"
    assert c["out-of-domain recall@5 peaks before the last iteration (Fig. 4)"] == "held"
    assert c["appending the utterance helps zero-shot on both test sets (Table 2: dropping it lowers it)"] == "held"
    # needs every method without the utterance: the in-domain Alignment row lacks it
    assert c["the utterance helps SFT and alignment less in-domain than out-of-domain (Table 2)"] == "pending"


def test_claims_can_fail_and_wait_for_incomplete_inputs():
    v = _full(_values())
    v.loc[(v.method == "Zero-Shot") & v.utterance & (v.dataset == OUT), "value"] = 0.9   # zero-shot now wins OOD
    hist = [{"iteration": 1, "mean": 0.3}, {"iteration": 2, "mean": 0.25}]
    c = T.claims(v, hist, complete=[1, 2], iterations=3, sample_sizes={IN: 10, OUT: 10}).set_index("claim").here
    assert c["Alignment is the best method out-of-domain (recall@5)"] == "not held"
    assert c["zero-shot is below the utterance on both test sets"] == "not held"
    assert c["the mean draft reward rises at every iteration (Fig. 4, right)"] == "pending"   # 2 of 3 iterations
    assert c["out-of-domain recall@5 peaks before the last iteration (Fig. 4)"] == "pending"
    # a method answered on fewer requests than the sample is not compared
    c = T.claims(v, hist, complete=[1, 2], iterations=2, sample_sizes={IN: 11, OUT: 10}).set_index("claim").here
    assert c["SFT is the best method in-domain (recall@5)"] == "pending"
    assert c["the mean draft reward rises at every iteration (Fig. 4, right)"] == "not held"


def test_claims_on_the_paper_s_own_numbers():
    from toolkit.compare import load_paper_numbers
    v = T.paper_values(load_paper_numbers("querygen"))
    assert v[(v.dataset == IN) & (v.method == "SFT") & ~v.utterance & (v.metric == "recall@5")].value.iloc[0] \
        == pytest.approx(0.873 - 0.045, abs=1e-3)
    c = T.claims(v, [], [], 3, {IN: 1, OUT: 1}).set_index("claim").here
    assert list(c.iloc[:5]) == ["held"] * 5          # the paper's Tables 1-2 bear out its own text
    assert list(c.iloc[5:]) == ["pending"] * 3      # Figure 4 prints no values


def test_claims_give_the_randomization_p_value_of_the_comparison_they_rest_on():
    import numpy as np

    from toolkit.significance import p_text
    r = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(60)]
    base = {q: float(x) for q, x in zip(qids, r.random(60))}
    per = {"Utterance": base, "SFT": {q: min(1.0, x + 0.4) for q, x in base.items()},     # far above every other
           "Zero-Shot": {q: x for q, x in base.items()},                                  # identical to the utterance
           "Alignment": {q: float(x) for q, x in zip(qids, r.random(60))}}
    rows = [{"dataset": ds, "method": m, "utterance": True, "sample": "llm", "metric": "recall@5",
             "value": float(np.mean(list(pq.values()))), "n": 60, "per_query": pq}
            for ds in (IN, OUT) for m, pq in per.items()]
    c = T.claims(pd.DataFrame(rows), [], [], 3, {IN: 60, OUT: 60}).set_index("claim")
    sft = c.loc["SFT is the best method in-domain (recall@5)"]
    assert sft.here == "held" and sft.p.startswith("SFT vs ") and all(t["p"] < 0.01 for t in sft.tests)
    assert sft.p == p_text(sft.tests)                                      # the column formatted from the tests
    ood = c.loc["Alignment is the best method out-of-domain (recall@5)"]
    assert ood.here == "not held" and ood.p.startswith("Alignment vs SFT") and all(t["p"] < 0.01 for t in ood.tests)
    zs = c.loc["zero-shot is below the utterance on both test sets"]
    # no difference at all: a tie is within noise (the comparisons read as claimed, utterance above zero-shot)
    assert zs.here == "within noise" and zs.p == ("in-domain: Utterance vs Zero-Shot p=1.000; "
                                          "out-of-domain: Utterance vs Zero-Shot p=1.000")
    assert c.loc["the mean draft reward rises at every iteration (Fig. 4, right)"].p == ""   # pending: no p


def test_reward_history_says_which_iterations_were_trained_again():
    hist = [{"iteration": 1, "mean": 0.27, "train_final_loss": 1.1749,
             "earlier_training": [{"train_final_loss": 1.1743, "train_seconds": 1139.0}]},
            {"iteration": 2, "mean": 0.30, "train_final_loss": 0.83}]
    t = T.reward_history(hist)
    assert list(t["earlier trainings' final loss"]) == ["1.1743", ""]
    note = T.retrain_note(hist)
    assert "iteration 1 was trained again" in note and "1.1743 then, 1.1749 now" in note and "iteration 2" in note
    assert "iteration 2 was" not in note
    assert T.retrain_note(hist[1:]) == "" and "final loss" not in T.reward_history(hist[1:])


def test_a_last_iteration_peak_is_tested_against_the_best_earlier_one():
    qs = [f"q{i}" for i in range(20)]
    rows = []
    for t, hits in ((1, 12), (2, 8), (3, 13)):            # out-of-domain peaks at the last iteration
        pq = {q: 1.0 if i < hits else 0.0 for i, q in enumerate(qs)}
        for ds in (IN, OUT):
            rows.append({"dataset": ds, "method": f"Alignment it{t}", "utterance": True, "sample": "llm",
                         "metric": "recall@5", "value": hits / 20, "n": 20, "per_query": pq})
    c = T.claims(pd.DataFrame(rows), [], [1, 2, 3], 3, {IN: 20, OUT: 20}).set_index("claim")
    peak = c.loc["out-of-domain recall@5 peaks before the last iteration (Fig. 4)"]
    assert peak.here == "within noise" and peak.p.startswith("it1 vs it3 p=")   # 12 vs 13 of 20: not resolved


def test_smoke_calibrates_on_the_standard_dev_sample():
    # smoke replays the standard caches: on a smaller dev sample its calibration could pick a temperature
    # whose test answers were never generated, and its SFT rows would fall back or vanish
    from toolkit.querygen.config import config_for
    smoke, standard = config_for("smoke"), config_for("standard")
    assert (smoke.dev_requests, smoke.temperatures, smoke.sample_seed) == \
        (standard.dev_requests, standard.temperatures, standard.sample_seed)
    assert smoke.test_requests < standard.test_requests


def test_ablation_claims_hold_on_the_paper_s_deltas_and_test_each_row_against_its_baseline():
    from toolkit.compare import load_paper_numbers
    from toolkit.querygen.alignment import TABLE3_SETTINGS, TABLE4_SETTINGS, TABLE5_SETTINGS
    pn = load_paper_numbers("querygen")
    paper = T.ablation_claims(pn[pn.table.isin(["3", "4", "5"])].rename(columns={"value": "delta"}))
    assert list(paper.here) == ["held", "held", "held"] and (paper.p == "").all()
    assert paper.basis.str.startswith("direction").all()
    # ours: every Table 3 row and the MAP reward; the MAP row is far above the baseline, the rest equal it
    qs = [f"q{i}" for i in range(40)]
    low = {q: float(i % 2) for i, q in enumerate(qs)}
    high = {q: 1.0 for q in qs}
    rows = []
    for tab, settings in (("3", TABLE3_SETTINGS), ("4", dict(list(TABLE4_SETTINGS.items())[:2]))):
        for row in settings:
            pq = high if "MAP" in row else low
            for ds in (IN, OUT):
                rows.append({"dataset": ds, "method": T.ablation_method(tab, row), "utterance": True, "sample": "llm",
                             "metric": "recall@5", "value": sum(pq.values()) / 40, "n": 40, "per_query": pq})
    v = pd.DataFrame(rows)
    deltas = pd.concat([T.ablation_table(v, tab, list(s)).assign(table=tab)
                        for tab, s in (("3", TABLE3_SETTINGS), ("4", TABLE4_SETTINGS), ("5", TABLE5_SETTINGS))])
    c = T.ablation_claims(deltas, v).set_index(T.ablation_claims(deltas, v).claim.str[:10]).drop(columns="claim")
    t3, t4, t5 = c.iloc[0], c.iloc[1], c.iloc[2]
    assert t3.here == "within noise" and len(t3.tests) == 8 and all(t["p"] == 1.0 for t in t3.tests)   # ties
    assert t4.here == "pending" and "Avg(Recall@5,Recall@11) reward) pending" in t4.evidence and t4.p == ""
    assert t5.here == "pending"
    # the MAP row alone, its recall row present: the claim fails, and its test says the gap is real
    v4 = pd.concat([v, v[v.method == T.ablation_method("4", "Alignment (MAP reward)")].assign(
        method=T.ablation_method("4", "Alignment (Avg(Recall@5,Recall@11) reward)"))])
    d4 = T.ablation_table(v4, "4", list(TABLE4_SETTINGS)).assign(table="4")
    r4 = T.ablation_claims(d4, v4).iloc[1]
    assert r4.here == "not held" and r4.tests[0]["comparison"] == "baseline vs Alignment (MAP reward) in-domain"
    assert r4.tests[0]["diff"] == pytest.approx(-0.5) and r4.tests[0]["p"] < 0.01


def test_ablation_cost_lists_each_row_s_kept_drafts_and_training():
    hist = {"3": {"Baseline": {"iteration": 1, "drafts": 1500, "kept": 298, "mean": 0.27, "train_seconds": 524.0,
                               "train_tokens_per_s": 142.3, "train_final_loss": 1.17},
                  "Increased threshold": {"iteration": 1, "drafts": 1500, "kept": 120, "mean": 0.27}}}
    t = T.ablation_cost(hist)
    assert list(t.index) == [("3", "Baseline"), ("3", "Increased threshold")]
    assert t.loc[("3", "Increased threshold"), "kept"] == 120 and pd.isna(t.loc[("3", "Increased threshold"), "training s"])
    assert T.ablation_cost({}).empty


def test_ablation_reading_names_the_row_that_retrained_the_baseline_as_the_noise_yardstick():
    from toolkit.querygen.tables import ablation_reading, same_training_as_baseline
    IN, OUT = "querygen-in-domain", "querygen-out-of-domain"
    cost = pd.DataFrame([
        {"table": "3", "row": "Baseline", "kept": 298, "mean draft reward": 0.272, "final loss": 1.1749},
        {"table": "3", "row": "Increased threshold", "kept": 129, "mean draft reward": 0.272, "final loss": 1.03},
        {"table": "3", "row": "Decreased threshold", "kept": 298, "mean draft reward": 0.272, "final loss": 1.1749},
        {"table": "5", "row": "Alignment (description generation)", "kept": 298, "mean draft reward": 0.272,
         "final loss": 1.1749},
        {"table": "5", "row": "Alignment (intent generation)", "kept": 300, "mean draft reward": 0.285,
         "final loss": 1.1076}]).set_index(["table", "row"])
    assert same_training_as_baseline(cost) == [("3", "Decreased threshold")]
    deltas = pd.DataFrame(
        [{"table": "3", "dataset": ds, "method": m, "metric": "delta_recall@5", "delta": v, "n": 100}
         for m, vs in (("Baseline", (0, 0)), ("Decreased threshold", (0.01, -0.018)),
                       ("Increased threshold", (0.023, -0.028))) for ds, v in zip((OUT, IN), vs[::-1])]
        + [{"table": "3", "dataset": IN, "method": "Increased threshold", "metric": "delta_mmrr", "delta": 0.5,
            "n": 100}])
    lines = ablation_reading(deltas, cost)
    # rows in the table's order, in-domain first, Recall@5 only
    assert lines[0].endswith("n = 100/100 requests): Increased threshold +0.023 / -0.028; "
                             "Decreased threshold +0.010 / -0.018")
    assert len(lines) == 2 and "Decreased threshold" in lines[1] and "+0.010 / -0.018" in lines[1]
    assert ablation_reading(deltas, cost.drop(("3", "Decreased threshold")))[1:] == []
