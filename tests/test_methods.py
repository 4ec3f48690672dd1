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
    board = B.leaderboard(res, n_permutations=200, candidates=("overlap", "reverse"))
    assert math.isnan(board.loc["never", "NDCG@5 I1"]) and board.loc["never", "pending"] == "I1, I2, I3, UltraTool"
    assert board.loc["needs llm", "pending"] == "I1, I2, I3" and board.loc["needs llm", "n UltraTool"] == 1
    assert board.loc["overlap", "NDCG@5 I1"] == 100.0 and board.loc["overlap", "n I1-I3"] == 4
    assert board.loc["reverse", "NDCG@5 I1"] < 100
    # the reference is the best of the named candidates, 'overlap': its own p is empty, the others' are tested
    assert B.reference_baseline(res, "I1", candidates=("overlap", "reverse")) == "overlap"
    assert board.attrs["reference"]["I1"] == "overlap" and board.loc["overlap", "reference on"].startswith("I1")
    # without a named candidate among the methods there is no reference (a cheap method is not promoted)
    assert B.reference_baseline(res, "I1") is None
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
        B.run_benchmark({"broken": Broken}, _toy_sets(), log=None, on_error="raise")
    # recorded (the default): the method is marked failed with its error, not left out
    res = B.run_benchmark({"broken": Broken}, _toy_sets(), log=None)
    assert {f["error"] for f in res.failed} == {"RuntimeError: bug"}


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


def test_readme_add_your_method_excerpt_is_the_example_file():
    """The README's excerpt is cut from ``examples/word_overlap.py`` (which tests/test_methods_user.py runs through
    the smoke benchmark): every code line it shows is a line of that file, so the front page cannot go stale."""
    from toolkit.paths import REPO
    source = {line.split("#")[0].strip() for line in (REPO / "examples" / "word_overlap.py").read_text().splitlines()}
    shown = [line.split("#")[0].strip() for line in _readme_example().splitlines()]
    shown = [line for line in shown if line and line != "..."]
    assert shown and all(line in source for line in shown), [line for line in shown if line not in source]


# --- cost growth (toolkit.methods.scaling) ------------------------------------------------------------------------

def test_power_law_fit_recovers_the_exponent_of_synthetic_data():
    import numpy as np
    from toolkit.methods.scaling import fit_power_law
    sizes = [1000, 4000, 16000]
    exact = fit_power_law(sizes, [3.0 * n ** 0.5 for n in sizes])
    assert exact.b == pytest.approx(0.5, abs=1e-12) and exact.a == pytest.approx(3.0, rel=1e-9)
    assert exact.r2 == pytest.approx(1.0) and exact.n_points == 3 and exact.growth() == "N^0.50"
    assert exact(64_000) == pytest.approx(3.0 * 64_000 ** 0.5)
    # linear and constant, each recognised; a quadratic is not linear
    assert fit_power_law(sizes, [2e-3 * n for n in sizes]).growth() == "linear"
    assert fit_power_law(sizes, [0.07] * 3).b == pytest.approx(0.0, abs=1e-12)
    assert fit_power_law(sizes, [0.07] * 3).growth() == "constant"
    assert fit_power_law(sizes, [n ** 2 for n in sizes]).b == pytest.approx(2.0)
    # seeded multiplicative noise (5 %) on t = 0.01 N^1.2 over many sizes: b within 0.05, a low r2 for pure noise
    rng = np.random.default_rng(0)
    n = np.geomspace(100, 100_000, 20)
    noisy = fit_power_law(n, 0.01 * n ** 1.2 * np.exp(rng.normal(0, 0.05, n.size)))
    assert abs(noisy.b - 1.2) < 0.05 and noisy.r2 > 0.99
    assert fit_power_law(n, np.exp(rng.normal(0, 0.5, n.size))).r2 < 0.5
    # least squares on logs, not on the raw times: one large outlier moves b as the log-log line says
    t = [1.0, 2.0, 4.0, 80.0]
    x = np.log([1, 2, 4, 8])
    want = np.polyfit(x, np.log(t), 1)[0]
    assert fit_power_law([1, 2, 4, 8], t).b == pytest.approx(want)


def test_power_law_fit_refuses_what_it_cannot_fit():
    from toolkit.methods.scaling import fit_power_law
    with pytest.raises(ValueError, match="two distinct sizes"):
        fit_power_law([1000, 1000], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite and > 0"):
        fit_power_law([1000, 2000], [1.0, 0.0])
    with pytest.raises(ValueError, match="finite and > 0"):
        fit_power_law([1000, 2000], [1.0, float("nan")])
    with pytest.raises(ValueError):
        fit_power_law([1000, 2000, 4000], [1.0, 2.0])


def test_nested_subsets_keep_the_gold_apis_and_nest():
    from toolkit.methods.scaling import nested_subsets
    ids = [f"d{i}" for i in range(100)]
    keep = {"d5", "d50", "d99"}
    subs = nested_subsets(ids, keep, [40, 10, 100], seed=3)
    assert list(subs) == [10, 40, 100]
    assert all(len(v) == n and len(set(v)) == n and keep <= set(v) for n, v in subs.items())
    assert set(subs[10]) <= set(subs[40]) <= set(subs[100]) == set(ids)
    assert subs[40][:10] == subs[10]                                   # the smaller library is the larger's head
    assert nested_subsets(ids, keep, [40], seed=3)[40] == subs[40]     # seeded: the same draw
    assert nested_subsets(ids, keep, [40], seed=4)[40] != subs[40]
    with pytest.raises(ValueError, match="between the 3 kept ids"):
        nested_subsets(ids, keep, [2])
    with pytest.raises(ValueError, match="between"):
        nested_subsets(ids, keep, [101])
    with pytest.raises(ValueError, match="not in the library"):
        nested_subsets(ids, {"x"}, [10])


def _synthetic_points(sizes=(1000, 4000, 16000)):
    import pandas as pd
    rows = []
    for n in sizes:
        rows += [("BM25", "offline", "index", n, 1e-4 * n), ("BM25", "online", "search", n, 1e-7 * n),
                 ("BM25", "online single", "search", n, 2e-7 * n),
                 ("Dense MiniLM", "offline", "encode documents", n, 0.05 * n),
                 ("Dense MiniLM", "offline", "index vectors", n, 1e-5 * n),
                 ("Dense MiniLM", "online", "encode query", n, 0.02), ("Dense MiniLM", "online", "search", n, 1e-8 * n),
                 ("Dense MiniLM", "online single", "encode query", n, 0.05),
                 ("Dense MiniLM", "online single", "search", n, 1e-8 * n),
                 ("BM25 + Dense MiniLM (RRF)", "online", "fuse", n, 1e-4)]
    points = pd.DataFrame(rows, columns=["method", "part", "component", "size", "seconds"]).assign(how="synthetic")
    parts = points[points["method"].isin(["BM25", "Dense MiniLM"]) & points["part"].isin(["offline", "online"])]
    return pd.concat([points, parts.assign(method="BM25 + Dense MiniLM (RRF)")], ignore_index=True)


def test_growth_table_derives_each_method_from_its_cost_record():
    from toolkit.methods.scaling import batching_table, fit_table, growth_table, reading
    points = _synthetic_points()
    costs = {"BM25": Cost(), "Dense MiniLM": Cost(), "BM25 + Dense MiniLM (RRF)": Cost(),
             # training constant, searched as MiniLM
             "DPR (ToolLens)": Cost(training_minutes=60, ms_as=("Dense MiniLM", 1.0)),
             # per-query LLM constant, three MiniLM rounds
             "Iterative feedback": Cost(llm_seconds=1e5, llm_seconds_per_query=100.0, ms_as=("Dense MiniLM", 3.0)),
             # expansion: LLM answers per API of a 16,000-API library
             "Re-Invoke": Cost(llm_seconds=16000 * 7.0, llm_seconds_per_query=12.0, ms_as=("Dense MiniLM", 1.0)),
             "BM25 + DPR (RRF)": Cost(), "a user's method": Cost(ms_per_query=5.0)}
    g = growth_table(points, costs, library_size=16000, parts={"BM25 + DPR (RRF)": ["BM25", "DPR (ToolLens)"]})
    assert "a user's method" not in set(g["method"])                  # no known index: left out
    row = g.set_index(["method", "size"])
    assert row.loc[("Re-Invoke", 4000), "offline s"] == pytest.approx(4000 * 7.0 + 4000 * (0.05 + 1e-5))
    assert row.loc[("Iterative feedback", 16000), "online s/query"] == pytest.approx(100 + 3 * (0.02 + 1.6e-4))
    assert row.loc[("DPR (ToolLens)", 1000), "offline s"] == pytest.approx(3600 + 1000 * (0.05 + 1e-5))
    assert row.loc[("BM25 + DPR (RRF)", 1000), "online s/query"] == pytest.approx(1e-4 + 0.02 + 1e-5 + 1e-4)
    assert row.loc[("BM25", 16000), "max queries/s"] == pytest.approx(1 / 1.6e-3)
    f = fit_table(g)
    assert f.loc["BM25", "offline b"] == pytest.approx(1.0) and f.loc["BM25", "source"] == "measured"
    assert f.loc["Re-Invoke", "offline grows"] == "linear" and f.loc["Re-Invoke", "online grows"] == "constant"
    assert f.loc["DPR (ToolLens)", "offline b"] < 0.5 and f.loc["DPR (ToolLens)", "source"] == "derived"
    assert f.loc["Iterative feedback", "offline s at 16,000"] == pytest.approx(1e5 + 16000 * (0.05 + 1e-5))
    bt = batching_table(points)
    assert bt.loc[("Dense MiniLM", 1000), "one per call / batched"] == pytest.approx((0.05 + 1e-5) / (0.02 + 1e-5))
    text = reading(f, g, points, bt)
    assert "16,000" in text and "Re-Invoke: offline b = 1.00 (linear)" in text


def test_toolrerank_method_is_pending_without_its_scores_and_replays_them_when_there(monkeypatch, tmp_path):
    """Issue 51: ToolRerank in the head-to-head replays toolkit.toolrerank.headtohead's score cache: without it the
    method is pending with the command that writes it; with it, online() gives ToolRerank's lists at the dev pick."""
    from toolkit.methods import catalog
    from toolkit.toolrerank import headtohead
    from toolkit.toolrerank.pipeline import ToolRerankConfig, as_run, method_lists

    from test_toolrerank_categories import _fake_cands
    cands = _fake_cands()
    sets = {name: c.dataset for name, c in cands.items()}
    corpus = sets["I1-Cat"].corpus
    monkeypatch.setattr(headtohead, "cache_path", lambda cfg: tmp_path / "absent.json.gz")
    m = catalog.ToolRerank(sets, "smoke")
    with pytest.raises(MethodPending) as e:
        m.offline(corpus)
    assert "--headtohead" in e.value.pending.command and "absent.json.gz" in e.value.pending.reason
    timings = {n: {"queries": len(c.dataset.queries), "index_s": 3.0, "retrieve_s": 0.5, "rerank_s": 1.0,
                   "classify_s": 0.5} for n, c in cands.items()}
    monkeypatch.setattr(headtohead, "load", lambda cfg, s: ({n: cands[n] for n in s},
                                                           {"training": {"reranker": {"seconds": 120.0}},
                                                            "timings": timings}))
    best = ToolRerankConfig(m_s=10, m_u=10, har="none")
    monkeypatch.setattr(catalog, "_toolrerank_best", lambda profile: best)
    m = catalog.ToolRerank(sets, "smoke")
    m.offline(corpus)
    assert m.cost.training_minutes == 2.0 and m.cost.index_seconds == 3.0
    assert m.cost.ms_per_query == pytest.approx((2.0 + 2.0) * 1000 / 3)      # both sets share the fake corpus
    run = m.online(sets["I1-Cat"].query_texts())
    assert run == as_run(method_lists(cands["I1-Cat"], best))
    assert run["qb"] and max(run["qb"], key=run["qb"].get) == "tc1"          # the reranker's pick, not the DPR's
    with pytest.raises(KeyError, match="in none of the scored sets"):
        m.online({"nope": "text"})


def test_query_generation_is_pending_without_answers_then_interleaves_them(monkeypatch, tmp_path):
    """Issue 51: the query-generation method replays its own answers (not notebook 40's cache) at notebook 40's
    calibrated temperature; a query with no answer makes it pending with the live command; with answers, each
    generated query and the request retrieve and the lists interleave; answers at the token cap are counted."""
    from toolkit.llm.base import as_messages
    from toolkit.llm.cache import ResponseCache
    from toolkit.methods import catalog
    from toolkit.querygen import generation as G
    from toolkit.querygen import retrieval as R
    monkeypatch.setenv("TOOLKIT_LLM_CACHE", str(tmp_path))
    monkeypatch.delenv("TOOLKIT_LLM_BACKEND", raising=False)
    results = tmp_path / "40.json"
    results.write_text('{"calibration": {"Zero-Shot": {"best": 0.6}}}')
    monkeypatch.setattr(catalog, "QUERYGEN_RESULTS", results)

    class Index:                       # doc "d<word>" for every word of a query: the interleaving is visible
        def run(self, sets, k):
            return {q: {d: float(k - i) for i, d in enumerate(R.interleave([[f"d{w}" for w in t.split()] for t in qs], k))}
                    for q, qs in sets.items()}
    m = catalog.QueryGeneration()
    m.index, m.cost = Index(), Cost()
    queries = {"q1": "weather today", "q2": "book flight"}
    with pytest.raises(MethodPending) as e:
        m.online(queries)
    assert "TOOLKIT_LLM_BACKEND=local" in e.value.pending.command and "2 of 2" in e.value.pending.reason
    task = G.task_for("description")
    model = G.client("standard", "qwen-1.5b").model_id
    cache = ResponseCache(tmp_path, catalog.QUERYGEN_NAMESPACE, model)
    key = G.sampling_at(task, 0.6, G.Decoding(max_lines=5)).with_(max_tokens=catalog.QUERYGEN_MAX_TOKENS).key()
    for (q, text), (answer, fin) in zip(queries.items(), (("1. sky rain\n2. sun", "stop"), ("1. plane", "length"))):
        cache.put("chat", as_messages(task.build(text)), key, 0, answer, ms=3000, ntok=40, fin=fin)
    run = m.online(queries)
    assert list(run["q1"])[:4] == ["dsky", "dsun", "dweather", "drain"]      # first words of each list, then second
    assert m.cap == {"answers": 2, "at the cap": 1, "seconds": 3.0, "tokens": 40.0}
    assert m.cost.llm_seconds_per_query == 3.0 and "1 of 2 answers at the 256-token cap" in m.cost.note
    # notebook 40's temperature is required, by name
    results.write_text("{}")
    with pytest.raises(ValueError, match="calibration.Zero-Shot.best"):
        catalog.QueryGeneration()


def test_reinvoke_intents_online_cost_is_the_pending_estimate_of_the_same_cache():
    """The intents' seconds per query in the cost table and in Re-Invoke's pending estimate come from one source
    (the whole committed intent cache), so the two tables cannot disagree; the tokens are those of the set's queries."""
    from toolkit.methods import catalog as C
    ds = B.benchmark_sets(B.config_for("smoke"))["I3"]
    gold = {d for q in ds.qrels.values() for d in q}
    m = C.ReinvokeIntents()
    m.offline({d: ds.corpus[d] for d in gold})      # the gold documents: the index is not what is tested
    texts = ds.query_texts()
    m.online(texts)
    assert m.cost.llm_seconds_per_query == pytest.approx(C.reinvoke_pending().estimate.llm_seconds_per_query)
    assert m.cost.llm_seconds_per_query > 0
    assert m.cost.llm_tokens_per_query == pytest.approx(
        C.cached_completion_tokens("intents", list(texts.values())))


def test_what_the_pending_estimate_reads_from_other_runs_is_recorded_as_inputs():
    """Notebook 50's Re-Invoke estimate reads notebook 20's coverage and the synthetic-query benchmark: both are
    inputs of the run, by the digest of the field read (notebook 20's re-run alone does not make it stale)."""
    from toolkit import provenance
    from toolkit.methods import catalog as C
    provenance.reset()
    C.reinvoke_pending()
    got = {(r["path"], r.get("field")) for r in provenance.inputs()}
    assert {("results/20_reinvoke/standard.json", "coverage"), ("results/bench/synthetic_queries.json", "results")} <= got
    provenance.reset()
