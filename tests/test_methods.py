"""The method interface (toolkit.methods): reciprocal-rank fusion against a hand-computed case, the cost record,
the pending path through the benchmark, the Pareto front, and the README's "Add your method" example through the
benchmark's smoke profile."""
from __future__ import annotations

import math
import re

import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.methods import Cost, Fusion, Method, MethodPending, Pending, PendingMethod, rrf
from toolkit.methods import benchmark as B


def test_rrf_matches_a_hand_computed_case():
    a = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    b = {"q": {"b": 5.0, "c": 4.0, "d": 3.0}}
    fused = rrf([a, b], k=60)["q"]
    expected = {"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63 + 1 / 62, "d": 1 / 63}
    assert fused == pytest.approx(expected, abs=1e-15)
    assert list(fused) == ["b", "c", "a", "d"]
    # depth: only each run's first document counts -> a and b tie at 1/61
    assert rrf([a, b], k=60, depth=1)["q"] == pytest.approx({"a": 1 / 61, "b": 1 / 61})
    # weights scale each run's contribution; k = 0 is plain reciprocal rank
    assert rrf([a, b], k=0, weights=[2, 1])["q"]["a"] == pytest.approx(2.0)


def test_rrf_refuses_a_run_without_the_query_and_bad_arguments():
    with pytest.raises(KeyError, match="run 1 has no results for query 'q'"):
        rrf([{"q": {"a": 1.0}}, {"x": {"a": 1.0}}])
    with pytest.raises(ValueError):
        rrf([])
    with pytest.raises(ValueError):
        rrf([{"q": {"a": 1.0}}], depth=0)
    with pytest.raises(ValueError, match="2 weights for 1 runs"):
        rrf([{"q": {"a": 1.0}}], weights=[1, 2])


def test_cost_record():
    c = Cost(llm_seconds=120, training_minutes=3, index_seconds=60, ms_per_query=250, llm_seconds_per_query=2)
    assert c.offline_minutes == pytest.approx(2 + 3 + 1)
    assert c.online_seconds_per_query == pytest.approx(2.25)
    total = c + Cost(ms_per_query=50, llm_tokens=None)
    assert total.ms_per_query == 300 and total.llm_seconds == 120 and total.llm_tokens is None
    assert (c + Cost()).online_seconds_per_query is None          # an unmeasured part leaves the sum unknown
    replay = Cost(ms_as=("Dense", 3.0), llm_seconds_per_query=1.0)
    assert replay.online_seconds_per_query is None
    got = replay.resolved({"Dense": Cost(ms_per_query=20)})
    assert got.ms_per_query == 60 and got.online_seconds_per_query == pytest.approx(1.06)
    assert replay.resolved({}).ms_per_query is None                # the reference is not measured: still unknown


def _toy_sets() -> dict[str, RetrievalDataset]:
    def doc(d, text):
        return Document(d, "cat", "tool", d, text)
    lib = {d: doc(d, t) for d, t in [("weather", "weather forecast city"), ("stocks", "stock price quote"),
                                     ("music", "song lyrics artist"), ("news", "latest news headlines")]}
    other = {d: doc(d, t) for d, t in [("mail", "send email"), ("maps", "route map directions")]}

    def ds(name, corpus, qs):
        return RetrievalDataset(name, corpus, {q: Query(q, t) for q, (t, _) in qs.items()},
                                {q: {g: 1} for q, (_, g) in qs.items()})
    return {"I1": ds("I1", lib, {"q1": ("weather in paris", "weather"), "q2": ("stock price of acme", "stocks")}),
            "I2": ds("I2", lib, {"q3": ("lyrics of a song", "music")}),
            "I3": ds("I3", lib, {"q5": ("latest news", "news")}),
            "UltraTool": ds("UT", other, {"q4": ("send an email", "mail")})}


class Overlap(Method):
    name, cheap = "overlap", True

    def offline(self, corpus):
        self.words = {d: set(doc.text.split()) for d, doc in corpus.items()}

    def online(self, queries):
        return {q: {d: float(len(set(t.split()) & w)) for d, w in self.words.items()} for q, t in queries.items()}


class Reverse(Overlap):
    """Ranks by the opposite order: worse than Overlap."""
    name, cheap = "reverse", False

    def online(self, queries):
        return {q: {d: -s for d, s in r.items()} for q, r in super().online(queries).items()}


class NeedsLLM(Overlap):
    """Pending on every corpus that lacks a 'mail' document: a method whose inputs exist for one corpus only."""
    name, cheap = "needs llm", False

    def online(self, queries):
        if "mail" not in self.words:
            raise MethodPending(Pending("no cached answers", "python -m generate", Cost(llm_seconds=3600),
                                        "1 h measured"))
        self.cost = Cost(llm_seconds_per_query=2.0, training_minutes=5)
        return super().online(queries)


def test_pending_path_and_costs_through_the_benchmark():
    sets = _toy_sets()
    res = B.run_benchmark({"overlap": Overlap, "reverse": Reverse, "needs llm": NeedsLLM,
                           "never": lambda: PendingMethod("never", Pending("not trained", "python -m train")),
                           "fused": lambda: Fusion("fused", [Overlap, Reverse])}, sets, log=None)
    pq = res.per_query
    # pending: no numbers, the reason and command kept per set
    assert set(pq[pq.method == "needs llm"]["set"]) == {"UltraTool"}
    assert pq[pq.method == "never"].empty
    pend = {(p["method"], p["set"]): p for p in res.pending}
    assert set(pend) == {("needs llm", "I1"), ("needs llm", "I2"), ("needs llm", "I3"), ("never", "I1"),
                         ("never", "I2"), ("never", "I3"), ("never", "UltraTool")}
    assert pend["needs llm", "I1"]["command"] == "python -m generate"
    assert pend["needs llm", "I1"]["estimate"].offline_minutes == 60
    board = B.leaderboard(res, n_permutations=200)
    assert math.isnan(board.loc["never", "NDCG@5 I1"]) and board.loc["never", "pending"] == "I1, I2, I3, UltraTool"
    assert board.loc["needs llm", "pending"] == "I1, I2, I3" and board.loc["needs llm", "n UltraTool"] == 1
    assert board.loc["overlap", "NDCG@5 I1"] == 100.0 and board.loc["overlap", "n I1-I3"] == 4
    assert board.loc["reverse", "NDCG@5 I1"] < 100
    # the best cheap baseline is 'overlap' (the only cheap one): its own p is empty, the others' are tested
    assert B.best_cheap_baseline(res, "I1") == "overlap"
    assert math.isnan(board.loc["overlap", "p I1"]) and 0 < board.loc["reverse", "p I1"] <= 1
    # costs: declared ones kept, unmeasured ones measured; a combination costs the sum of its parts
    assert res.costs["needs llm"].llm_seconds_per_query == 2.0 and res.costs["needs llm"].training_minutes == 5
    assert res.costs["overlap"].ms_per_query > 0 and res.costs["overlap"].index_seconds >= 0
    assert res.costs["fused"].ms_per_query == pytest.approx(res.costs["overlap"].ms_per_query
                                                            + res.costs["reverse"].ms_per_query)
    assert res.kinds == {"overlap": "cheap", "reverse": "single", "needs llm": "single", "never": "single",
                         "fused": "combination"}
    assert "never" in B.pending_table(res).index


def test_an_error_that_is_not_pending_is_not_hidden():
    class Broken(Overlap):
        def online(self, queries):
            raise RuntimeError("bug")
    with pytest.raises(RuntimeError, match="bug"):
        B.run_benchmark({"broken": Broken}, _toy_sets(), log=None)


def test_pareto_front():
    pts = {"cheap": (0.001, 40.0), "dense": (0.2, 42.0), "worse": (0.3, 41.0), "same cost better": (0.2, 45.0),
           "llm": (30.0, 55.0), "slow and bad": (60.0, 50.0)}
    assert B.pareto_front(pts) == ["cheap", "same cost better", "llm"]


def test_config_is_checked():
    assert B.config_for("standard").queries_per_set is None
    with pytest.raises(ValueError, match="has no parameter 'queries'"):
        B.config_for("smoke", queries=3)
    with pytest.raises(TypeError):
        B.config_for("smoke", queries_per_set="5")
    with pytest.raises(ValueError):
        B.config_for("smoke", queries_per_set=0)


def _readme_example() -> str:
    from toolkit.paths import REPO
    text = (REPO / "README.md").read_text()
    section = text.split("## Add your method", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the README's 'Add your method' section holds one python example"
    return blocks[0]


@pytest.mark.slow
def test_readme_add_your_method_example_runs_through_the_smoke_benchmark():
    """Exactly the README's example: its class through the benchmark's smoke profile (the 16,427-API library)."""
    ns: dict = {}
    exec(compile(_readme_example(), "README.md (Add your method)", "exec"), ns)
    board, result = ns["board"], ns["result"]
    assert {"BM25", "word overlap"} <= set(board.index)
    smoke = B.config_for("smoke").queries_per_set
    for s in ("I1", "I2", "I3", "UltraTool"):
        assert board.loc["word overlap", f"n {s}"] == smoke
        assert 0 <= board.loc["word overlap", f"NDCG@5 {s}"] <= 100
    assert not result.pending
    assert len(ns["sets"]["I1"].corpus) == 16_427
    assert result.costs["word overlap"].online_seconds_per_query > 0
