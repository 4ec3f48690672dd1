"""toolkit.claims: the verdict rule and the claims table, and notebook 20's claims on a tiny run."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit.claims import Claims, direction, reading, verdict


def _t(diff, p):
    return {"comparison": "x", "n": 10, "mean_a": 0.5 + diff, "mean_b": 0.5, "diff": diff, "p": p}


@pytest.mark.parametrize("tests, expected", [
    ([], "pending"),
    ([_t(0.1, 0.01)], "held"),
    ([_t(0.1, 0.01), _t(0.05, 0.2)], "within noise"),        # one set does not resolve the claimed difference
    ([_t(0.1, 0.01), _t(-0.05, 0.01)], "not held"),          # one set resolves the opposite
    ([_t(-0.05, 0.3)], "within noise"),                      # reversed but not resolved: not evidence against
    ([_t(0.0, 1.0)], "within noise"),
])
def test_verdict_rule(tests, expected):
    assert verdict(tests) == expected


def test_verdict_rejects_a_bad_alpha():
    with pytest.raises(ValueError, match="alpha"):
        verdict([_t(0.1, 0.01)], alpha=1.5)


def test_direction_on_printed_numbers():
    assert direction([(0.6, 0.5), (0.4, 0.3)]) == "held"
    assert direction([(0.6, 0.5), (0.2, 0.3)]) == "not held"
    assert direction([(0.6, None)]) == "pending"


def test_a_tie_is_never_a_verdict():
    """Issue 84: four equal rows (notebook 10's smoke Table 7, all 16.7, p = 1.000) used to read "best: yes"
    because max() picks the first row on a tie; a tie is within noise, by direction and by the paired test."""
    assert direction([(0.167, 0.167)]) == "within noise"
    assert direction([(0.6, 0.5), (0.3, 0.3)]) == "within noise"
    from toolkit.claims import record
    same = {f"q{i}": float(i % 2) for i in range(12)}
    from toolkit.significance import compared
    r = record("tied", [compared("a vs b", same, dict(same))], [(0.5, 0.5)])
    assert r["here"] == "within noise" and r["p"] == "a vs b p=1.000"
    assert r["explained_by"] == "not explained"


def test_toolrerank_table7_tie_is_within_noise():
    """The smoke run's Table 7: all four rows equal. The old code said "extended list for unseen tools only is best:
    yes"; the shared rule says within noise, and the claim record carries the reason field."""
    from toolkit.toolrerank.analysis import claims
    rows = {f"ToolRerank (extended seen={s}, unseen={u})": {"single-avg": {"recall@5": 0.167}}
            for s in ("no", "yes") for u in ("no", "yes")}
    pq = {m: {g: {"q1": 0.0, "q2": 1.0, "q3": 0.0, "q4": 0.5} for g in ("I1-Inst", "I1-Tool", "I1-Cat")}
          for m in rows}
    (row,) = claims({}, {}, {}, rows, per_query=pq)
    assert row["here"] == "within noise"
    assert row["explained_by"] == "not explained"
    (on_paper,) = claims({}, {}, {}, rows)
    assert on_paper["here"] == "within noise" and on_paper["basis"].startswith("direction")


def test_missing_per_query_values_are_judged_by_direction_and_say_so():
    from toolkit.claims import record
    r = record("no per-query values", [], [(0.6, 0.5)], "a 0.6 vs b 0.5")
    assert r["here"] == "held" and r["basis"].startswith("direction")
    assert "judged by direction" in r["evidence"] and r["ci"] is None and r["ours"] == pytest.approx(0.1)


def test_every_claim_not_held_has_a_reason():
    from toolkit.claims import control, explanation, record
    ctl = [control("oracle feedback - ToolRetriever", 0.142, 0.0001, 60), control("1.5B - 0.5B", 0.150, 0.0001, 60)]
    r = record("loop beats", [], [(0.4, 0.5)], controls=ctl, conclusion="LLM-limited")
    assert r["here"] == "not held"
    assert r["explained_by"] == ("oracle feedback - ToolRetriever +0.142 (p<0.001, n=60); 1.5B - 0.5B +0.150 "
                                 "(p<0.001, n=60): LLM-limited")
    assert explanation("held", ctl) == ""
    assert explanation("within noise", []) == "not explained"


def test_oriented_reverses_a_comparison():
    from toolkit.claims import oriented
    t = {"comparison": "A vs B", "n": 3, "mean_a": 0.2, "mean_b": 0.5, "diff": -0.3, "p": 0.01, "ci": [-0.4, -0.1]}
    o = oriented(t)
    assert (o["comparison"], o["diff"], o["ci"]) == ("B vs A", pytest.approx(0.3), [0.1, 0.4])


def test_counts_and_with_paper():
    from toolkit.claims import counts, with_paper
    rows = [{"claim": "a", "here": "held", "ours": 0.1}, {"claim": "b", "here": "within noise", "ours": 0.0}]
    assert counts(rows) == {"held": 1, "not held": 0, "within noise": 1, "pending": 0}
    with pytest.raises(ValueError, match="verdict outside"):
        counts([{"here": "yes"}])
    merged = with_paper(rows, [{"here": "held", "ours": 0.2}, {"here": "pending", "ours": None}])
    assert merged[0]["paper"] == "held" and merged[0]["paper_number"] == 0.2 and "paper" not in merged[1]


def test_paired_bootstrap_interval_covers_the_difference():
    from toolkit.significance import compared, paired_bootstrap_ci
    rng = np.random.default_rng(0)
    a = {f"q{i}": float(rng.random()) for i in range(200)}
    b = {q: v - 0.1 + float(rng.normal(0, 0.05)) for q, v in a.items()}
    lo, hi = paired_bootstrap_ci(a, b)
    t = compared("a vs b", a, b)
    assert lo < t["diff"] < hi and lo > 0 and t["ci"] == [lo, hi]
    same = paired_bootstrap_ci(a, dict(a))
    assert same == (0.0, 0.0)


def test_paired_claim_runs_the_randomization_test_and_lists_pending_sets():
    n = 40
    a = {f"q{i}": 1.0 for i in range(n)}
    b = {f"q{i}": 0.0 if i < 30 else 1.0 for i in range(n)}
    c = Claims()
    row = c.paired("a beats b everywhere", [("set 1: a vs b", a, b), ("set 2: a vs b", None, b)], paper="held")
    assert row["here"] == "held"
    assert row["tests"][0]["n"] == n and row["tests"][0]["diff"] == pytest.approx(0.75)
    assert row["tests"][0]["p"] < 0.001
    assert "pending: set 2: a vs b" in row["evidence"]
    assert "p<0.001" in row["p"]
    # the same comparison the other way round is a resolved contradiction
    row2 = c.paired("b beats a", [("b vs a", b, a)])
    assert row2["here"] == "not held"
    assert c.summary() == "1 held, 1 not held of 2 claims"
    assert list(c.frame().columns)[:3] == ["claim", "paper", "here"]
    assert {"evidence", "p", "tests", "condition", "explained_by", "ours", "ci", "paper_number"} <= set(c.frame())
    assert row2["explained_by"] == "not explained" and row["explained_by"] == ""
    text = reading(c.records())
    assert text.startswith("1. *a beats b everywhere* — here: **held**") and "\n2. *b beats a*" in text


def test_paired_claim_refuses_runs_on_different_queries():
    with pytest.raises(ValueError, match="same queries"):
        Claims().paired("a beats b", [("s", {"q1": 1.0}, {"q2": 0.0})])


def test_a_claim_with_nothing_computed_is_pending():
    row = Claims().paired("a beats b", [("s", None, None)])
    assert row["here"] == "pending" and row["p"] == ""


def test_judged_checks_its_verdict():
    with pytest.raises(ValueError, match="verdict must be one of"):
        Claims().judged("x", "yes", "e")


def test_reinvoke_claims_on_a_tiny_run():
    """Notebook 20's claims read each method's per-query values on the LLM query set; a method without a run is
    pending in the evidence, and a set where Re-Invoke wins every query is "held"."""
    from toolkit.data.contract import Document, Query, RetrievalDataset
    from toolkit.reinvoke.experiment import EvalSet
    from toolkit.reinvoke.tables import claims
    corpus = {f"d{i}": Document(doc_id=f"d{i}", category="c", tool=f"t{i}", api=f"a{i}", text=f"tool {i}")
              for i in range(5)}
    queries = {f"q{i}": Query(qid=f"q{i}", text=f"query {i}") for i in range(30)}
    qrels = {f"q{i}": {f"d{i % 5}": 1} for i in range(30)}
    ds = RetrievalDataset(name="toole-multi", corpus=corpus, queries=queries, qrels=qrels)
    good = {q: {d: 1.0 for d in qrels[q]} for q in queries}                      # gold at rank 1
    bad = {q: {f"d{(i + 1) % 5}": 1.0} for i, q in enumerate(queries)}          # gold never retrieved
    runs = {("toole-multi", "Re-Invoke (dense)", "all"): good, ("toole-multi", "Dense", "all"): bad}
    c = claims(runs, {"toole-multi": EvalSet(ds, ds)}, None)
    rows = {r["claim"].rsplit(" (", 1)[0]: r for r in c.records()}
    assert rows["Re-Invoke (dense) beats dense retrieval on every set"]["here"] == "held"
    assert rows["Re-Invoke (dense) beats dense retrieval on every set"]["paper"] == "held"
    assert rows["Re-Invoke (BM25) beats BM25 on every set"]["here"] == "pending"
    assert "pending: ToolE multi" in rows["Re-Invoke (BM25) beats BM25 on every set"]["evidence"]
    assert rows["round-trip recall@10 is lower on I1 and I2 than on I3 and ToolE, the larger tool sets"]["here"] \
        == "pending"
    assert len(c.records()) == 12
    assert isinstance(c.frame(), pd.DataFrame)


# --- Re-Invoke's query generator: answers that stop where the query ends (issue 52) ---------------------------

ANSWERS = [   # shapes seen in the cache and in fresh ToolBench answers
    ('Sure, here\'s a possible user query that can be handled by the API:\n\n"Find flights to Paris next week."'
     '\n\nThis query is complex enough to', "Find flights to Paris next week."),
    ('Certainly! To illustrate, here\'s a possible user query:\n\n**User Query:**\n"Convert 5 USD to EUR today."**'
     '\n\n**API Call:**\n```\nGET /convert', "Convert 5 USD to EUR today."),
    ('Sure, here\'s a possible user query that can be handled by the Broadway API:\n"How can I find shows tonight? "'
     '\nThis query can be handled by calling', "How can I find shows tonight?"),
    ("Get the weather in Rome for tomorrow.\n\nInput parameters:\n- city: Rome", "Get the weather in Rome for tomorrow."),
]


@pytest.mark.parametrize("answer, query", ANSWERS)
def test_the_stop_strings_end_the_answer_after_the_query_and_keep_it(answer, query):
    from toolkit.llm.base import truncate_at_stop
    from toolkit.llm.tasks import SYNTHETIC_QUERIES, SYNTHETIC_QUERY_STOP
    cut, stopped = truncate_at_stop(answer, SYNTHETIC_QUERY_STOP)
    assert stopped
    assert SYNTHETIC_QUERIES.parse(cut) == query


def test_the_two_synthetic_query_tasks_differ_only_in_their_stop_strings_and_cap():
    from dataclasses import replace

    from toolkit.llm.tasks import SYNTHETIC_QUERIES, SYNTHETIC_QUERIES_NOSTOP
    assert SYNTHETIC_QUERIES.sampling.stop and not SYNTHETIC_QUERIES_NOSTOP.sampling.stop
    assert replace(SYNTHETIC_QUERIES.sampling, stop=(), max_tokens=160) == SYNTHETIC_QUERIES_NOSTOP.sampling
    assert SYNTHETIC_QUERIES.namespace == SYNTHETIC_QUERIES_NOSTOP.namespace
    assert SYNTHETIC_QUERIES.sampling.key() != SYNTHETIC_QUERIES_NOSTOP.sampling.key()   # two cache configs


def test_reinvoke_reads_each_data_set_under_its_own_synthetic_query_task():
    from toolkit.reinvoke.config import config_for
    cfg = config_for("standard")
    assert cfg.queries_task("toolbench-i2") == "synthetic-queries" and cfg.m_toolbench >= 5
    assert cfg.queries_task("toole-multi") == "synthetic-queries-nostop"
    assert config_for("paper").queries_task("toole-multi") == "synthetic-queries"
    with pytest.raises(ValueError, match="queries_task_toole must be one of"):
        config_for("standard", queries_task_toole="synthetic-querys")


def test_generation_time_counts_each_sampling_of_a_shared_cache_file_apart(tmp_path, monkeypatch):
    from toolkit.llm.cache import ResponseCache
    from toolkit.llm.tasks import SYNTHETIC_QUERIES, SYNTHETIC_QUERIES_NOSTOP
    from toolkit.reinvoke import experiment as E
    monkeypatch.setenv("TOOLKIT_LLM_CACHE", str(tmp_path))
    monkeypatch.delenv("TOOLKIT_LLM_BACKEND", raising=False)
    from toolkit.llm import models
    mid = models.canonical_id("qwen-1.5b")
    c = ResponseCache(tmp_path, SYNTHETIC_QUERIES.namespace, mid)
    msgs = [{"role": "user", "content": "doc"}]
    c.put("chat", msgs, SYNTHETIC_QUERIES.sampling.key(), 0, "a", fin="stop", ntok=10, ms=1000)
    c.put("chat", msgs, SYNTHETIC_QUERIES_NOSTOP.sampling.key(), 0, "b", fin="length", ntok=160, ms=9000)
    c.put("chat", msgs, SYNTHETIC_QUERIES_NOSTOP.sampling.key(), 1, "c", fin="stop", ntok=60, ms=3000)
    # a query the stop strings would cut ('"\n' ends the quoted query's first line): its parse changes
    c.put("chat", msgs, SYNTHETIC_QUERIES_NOSTOP.sampling.key(), 2, 'Find "flights"\nto Rome', fin="stop", ntok=8,
          ms=500)
    c.put("chat", msgs, SYNTHETIC_QUERIES_NOSTOP.sampling.key(), 3, "d", fin="stop", ntok=1, ms=100)
    t = E.generation_time("qwen-1.5b", tasks=("synthetic-queries", "synthetic-queries-nostop"))
    assert t.loc[("synthetic-queries-nostop", "qwen-1.5b"), "parsed query changed by the stop strings"] == 0.25
    assert np.isnan(t.loc[("synthetic-queries", "qwen-1.5b"), "parsed query changed by the stop strings"])
    assert t.loc[("synthetic-queries", "qwen-1.5b"), "answers"] == 1
    assert t.loc[("synthetic-queries-nostop", "qwen-1.5b"), "answers"] == 4
    assert t.loc[("synthetic-queries-nostop", "qwen-1.5b"), "capped share"] == 0.25
    assert t.loc[("synthetic-queries", "qwen-1.5b"), "capped at max_tokens"] == 0
