"""Re-Invoke components (toolkit.reinvoke): multi-view ranking (Algorithm 2, Figs. 3/8), document
expansion (§3.1, §4.3, Table 3 B-D), LLM outputs through the response cache, and the pipeline.
No model is loaded: tiny hand-built corpora, a bag-of-words fake embedding, fixture LLM answers."""
from __future__ import annotations

import itertools
import re
import zlib

import numpy as np
import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.llm.backends import EchoBackend, ReplayBackend
from toolkit.llm.base import ReplayMiss
from toolkit.llm.client import LLMClient
from toolkit.llm.tasks import HYDE, INTENTS, SYNTHETIC_QUERIES
from toolkit.reinvoke import generation as gen
from toolkit.reinvoke.expansion import (BM25ExpandedIndex, DenseExpandedIndex, aggregate_copies, expand_corpus,
                                        expand_document, mean_embeddings)
from toolkit.reinvoke.multiview import (aggregate_intents, multiview_rank, multiview_run_row, multiview_tuples,
                                        reversed_ranks)
from toolkit.reinvoke.pipeline import build_index, hyde_run, reinvoke_run, variant_run
from toolkit.retrieval import BM25Retriever, DenseRetriever

# --------------------------------------------------------------------------------------------
# Multi-view similarity ranking
# --------------------------------------------------------------------------------------------

# Worked example in the spirit of Figs. 3 and 8. The figures are images that the text version of
# the paper does not contain, so the similarity values below are ours; the query and the expected
# outcome are the paper's (§3.3): "I want to book a flight from New York City to San Francisco this
# weekend and find highly rated restaurants in downtown San Francisco" -> two intents, and the final
# 2 tools are book_flight (top tool of intent 1) and find_restaurant (top tool of intent 2).
FIG_TOOLS = ["book_flight", "book_hotel", "rent_car", "get_weather", "find_restaurant"]
FIG_S = np.array([
    # book_flight book_hotel rent_car get_weather find_restaurant
    [0.85, 0.82, 0.78, 0.40, 0.30],   # "book a flight from New York City to San Francisco this weekend"
    [0.35, 0.45, 0.25, 0.20, 0.70],   # "find highly rated restaurants in downtown San Francisco"
])


def test_reversed_ranks_lowest_similarity_is_one():
    R = reversed_ranks(FIG_S)
    assert R.tolist() == [[5, 4, 3, 2, 1], [3, 4, 2, 1, 5]]


def test_figure_example_tuples_and_final_order():
    rank, sim = multiview_tuples(FIG_S)
    # max over intents of (reversed rank, similarity), compared lexicographically (App. C)
    assert rank.tolist() == [5, 4, 3, 2, 5]
    assert sim.tolist() == [0.85, 0.82, 0.78, 0.40, 0.70]   # book_hotel: (4, .82) beats (4, .45)
    assert multiview_rank(FIG_S, FIG_TOOLS) == ["book_flight", "find_restaurant", "book_hotel", "rent_car",
                                                "get_weather"]
    assert multiview_rank(FIG_S, FIG_TOOLS, k=2) == ["book_flight", "find_restaurant"]   # §3.3
    # plain max similarity would have put the flight intent's runners-up before the restaurant tool
    assert multiview_rank(FIG_S, FIG_TOOLS, k=2, how="max") == ["book_flight", "book_hotel"]
    assert multiview_rank(FIG_S, FIG_TOOLS, how="mean")[:2] == ["book_hotel", "book_flight"]


def _algorithm2_reference(S):
    """Algorithm 2 written literally with Python tuples (ordinal-free: ties share the larger rank)."""
    n_int, n_doc = S.shape
    r = {}
    for i in range(n_int):
        for d in range(n_doc):
            rev = sum(1 for e in range(n_doc) if S[i, e] <= S[i, d])
            t = (rev, S[i, d])
            r[d] = max(r.get(d, t), t)
    return sorted(range(n_doc), key=lambda d: (tuple(-x for x in r[d]), d)), r


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_matches_literal_algorithm(seed):
    rng = np.random.default_rng(seed)
    S = rng.random((1 + seed % 4, 12)).round(1)   # rounding creates ties
    order_ref, r = _algorithm2_reference(S)
    order, scores = aggregate_intents(S)
    assert order.tolist() == order_ref
    for a, b in itertools.combinations(range(S.shape[1]), 2):   # equal tuples <=> equal scores
        assert (r[a] == r[b]) == (scores[a] == scores[b])
        if r[a] > r[b]:
            assert scores[a] > scores[b]


def test_single_intent_is_similarity_ranking_and_run_row():
    s = np.array([0.1, 0.9, 0.5, 0.9])
    assert multiview_rank(s[None, :]) == [1, 3, 2, 0]           # ties: corpus position
    row = multiview_run_row(s[None, :], ["a", "b", "c", "d"], k=3)
    assert list(row) == ["b", "d", "c"] and row["b"] == row["d"] > row["c"]
    with pytest.raises(ValueError):
        aggregate_intents(np.zeros((0, 3)))
    with pytest.raises(ValueError):
        aggregate_intents(FIG_S, "median")


# --------------------------------------------------------------------------------------------
# Document expansion
# --------------------------------------------------------------------------------------------

def test_expand_document_formats():
    assert expand_document("Weather: forecasts", ["Rain in Paris?", " "]) == \
        ["Documentation: Weather: forecasts Query: Rain in Paris?"]
    assert expand_document("W", ["a\nb", "c"], mode="query_only") == ["a b", "c"]
    assert expand_document("W", []) == ["W"]
    with pytest.raises(ValueError):
        expand_document("W", ["q"], mode="prepend")


def test_expand_corpus_m_and_groups():
    ec = expand_corpus(["x", "y", "z"], ["X doc", "Y doc", "Z doc"],
                       {"x": ["q1", "q2", "q3"], "y": [], "z": ["r1"]}, m=2)
    assert ec.copies == ["Documentation: X doc Query: q1", "Documentation: X doc Query: q2", "Y doc",
                         "Documentation: Z doc Query: r1"]
    assert ec.owner.tolist() == [0, 0, 1, 2] and ec.counts.tolist() == [2, 1, 1] and ec.starts.tolist() == [0, 2, 3]
    plain = expand_corpus(["x", "y"], ["X", "Y"], None)
    assert plain.copies == ["X", "Y"]
    with pytest.raises(ValueError):
        expand_corpus(["x"], ["X"], {}, m=0)


def test_copy_aggregation_mean_max_and_linearity():
    ec = expand_corpus(["x", "y"], ["X", "Y"], {"x": ["a", "b", "c"], "y": ["d"]})
    C = np.array([[1.0, 2.0, 6.0, 5.0], [0.0, 0.0, 3.0, -1.0]])
    assert aggregate_copies(C, ec, "mean").tolist() == [[3.0, 5.0], [1.0, -1.0]]
    assert aggregate_copies(C, ec, "max").tolist() == [[6.0, 5.0], [3.0, -1.0]]
    rng = np.random.default_rng(0)
    E = rng.normal(size=(4, 8))
    q = rng.normal(size=(2, 8))
    # Algorithm 2: f(q) . mean_i f(d_i) == mean_i f(q) . f(d_i)  (Table 3(D) "mean similarity")
    np.testing.assert_allclose(q @ mean_embeddings(E, ec).T, aggregate_copies(q @ E.T, ec, "mean"))
    np.testing.assert_allclose(np.linalg.norm(mean_embeddings(E, ec, renormalize=True), axis=1), 1.0)


# --------------------------------------------------------------------------------------------
# Tiny corpus, fake embedding
# --------------------------------------------------------------------------------------------

def fake_embed(texts, dim=64):
    """Bag of words hashed into ``dim`` buckets, L2-normalised (deterministic, no model)."""
    out = np.zeros((len(texts), dim))
    for i, t in enumerate(texts):
        for w in re.findall(r"\w\w+", t.lower()):
            out[i, zlib.crc32(w.encode()) % dim] += 1.0
    n = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(n > 0, n, 1.0)).astype(np.float32)


TOOLS = {
    "FlightTool": "FlightTool: book airline tickets",
    "HotelTool": "HotelTool: reserve hotel rooms and accommodation",
    "RestaurantTool": "RestaurantTool: discover places to dine",
    "WeatherTool": "WeatherTool: weather forecast for any city",
    "MusicTool": "MusicTool: create music playlists",
}
EXPANSIONS = {
    "FlightTool": ["book a flight from New York to Paris", "cheap flight ticket to Tokyo"],
    "HotelTool": ["find a hotel in Rome for two nights", "hotel room near the beach"],
    "RestaurantTool": ["find highly rated restaurants in San Francisco", "best sushi restaurants nearby"],
    "WeatherTool": ["will it rain in London tomorrow", "weather in Berlin this weekend"],
    "MusicTool": ["make a relaxing playlist", "playlist of jazz songs"],
}
QUERIES = {
    "q0": "I am flying to San Francisco, book a flight and find highly rated restaurants there",
    "q1": "What will the weather be in London and can you make a playlist for the trip",
}
QRELS = {"q0": {"FlightTool": 1, "RestaurantTool": 1}, "q1": {"WeatherTool": 1, "MusicTool": 1}}
INTENT_MAP = {"q0": ["book a flight to San Francisco", "find highly rated restaurants in San Francisco"],
              "q1": ["weather in London", "make a playlist"]}


@pytest.fixture
def tiny():
    corpus = {d: Document(d, "toole", d, d, t) for d, t in TOOLS.items()}
    queries = {q: Query(q, t, "multi") for q, t in QUERIES.items()}
    return RetrievalDataset("tiny", corpus, queries, QRELS)


def test_plain_dense_equals_dense_retriever(tiny):
    run = reinvoke_run(tiny, "dense", embed=fake_embed, k=5, intent_agg="max")
    ids, texts = tiny.doc_texts()
    ref = DenseRetriever().index_embeddings(ids, fake_embed(texts)).search_embeddings(
        list(QUERIES), fake_embed(list(QUERIES.values())), k=5)
    for q in QUERIES:
        assert list(run[q]) == list(ref[q])
        np.testing.assert_allclose([run[q][d] for d in ref[q]], list(ref[q].values()), rtol=1e-5)
    # multiview with one intent gives the same order
    mv = reinvoke_run(tiny, "dense", embed=fake_embed, k=5)
    assert all(list(mv[q]) == list(ref[q]) for q in QUERIES)


def test_plain_bm25_equals_bm25_retriever(tiny):
    run = reinvoke_run(tiny, "bm25", k=5)
    ref = BM25Retriever().index(*tiny.doc_texts()).search(tiny.query_texts(), k=5)
    assert {q: list(r) for q, r in run.items()} == {q: list(r) for q, r in ref.items()}


def test_expanded_dense_index_mean_embedding(tiny):
    idx = build_index(tiny, "dense", EXPANSIONS, embed=fake_embed)
    assert isinstance(idx, DenseExpandedIndex) and len(idx.ec) == 10
    first = fake_embed([f"Documentation: {TOOLS['FlightTool']} Query: {q}" for q in EXPANSIONS["FlightTool"]])
    np.testing.assert_allclose(idx.doc_emb[0], first.mean(axis=0), rtol=1e-6)
    mx = build_index(tiny, "dense", EXPANSIONS, embed=fake_embed, copy_agg="max")
    s = mx.scores(["weather in Berlin this weekend"])
    assert s.shape == (1, 5) and np.argmax(s[0]) == 3


def test_expanded_bm25_index(tiny):
    idx = build_index(tiny, "bm25", EXPANSIONS, m=1)
    assert isinstance(idx, BM25ExpandedIndex) and len(idx.ec) == 5
    s = idx.scores(["playlist"])
    assert np.argmax(s[0]) == 4 and (s[0][:4] == 0).all()


def test_reinvoke_and_variants(tiny):
    kw = dict(embed=fake_embed, k=5)
    runs = {v: variant_run(v, tiny, "dense", EXPANSIONS, INTENT_MAP, **kw)
            for v in ("baseline", "query_generator", "intent_extractor", "reinvoke")}
    for q, rel in QRELS.items():                    # full Re-Invoke puts both gold tools on top
        assert set(list(runs["reinvoke"][q])[:2]) == set(rel)
    assert runs["baseline"] == reinvoke_run(tiny, "dense", **kw)
    assert runs["reinvoke"] == reinvoke_run(tiny, "dense", EXPANSIONS, INTENT_MAP, **kw)
    bm = reinvoke_run(tiny, "bm25", EXPANSIONS, INTENT_MAP, k=5)
    for q, rel in QRELS.items():
        assert set(list(bm[q])[:2]) == set(rel)
    qo = reinvoke_run(tiny, "dense", EXPANSIONS, None, mode="query_only", m=1, **kw)
    assert set(qo) == set(QUERIES)
    with pytest.raises(ValueError):
        variant_run("reinvoke", tiny, "dense", None, INTENT_MAP, **kw)
    with pytest.raises(ValueError):
        variant_run("everything", tiny, "dense", EXPANSIONS, INTENT_MAP, **kw)
    with pytest.raises(KeyError, match="no intents"):
        reinvoke_run(tiny, "dense", None, {"q0": ["x"]}, **kw)
    with pytest.raises(ValueError):
        reinvoke_run(tiny, "sparse", **kw)


def test_empty_intents_fall_back_to_query(tiny):
    a = reinvoke_run(tiny, "dense", None, {"q0": [], "q1": [" "]}, embed=fake_embed)
    assert a == reinvoke_run(tiny, "dense", embed=fake_embed)


def test_hyde_run(tiny):
    docs = {"q0": '{"api_name": "flights", "api_description": "book airline tickets"}', "q1": ""}
    run = hyde_run(tiny, "dense", docs, embed=fake_embed, k=3)
    assert next(iter(run["q0"])) == "FlightTool"
    assert run["q1"] == reinvoke_run(tiny, "dense", embed=fake_embed, k=3)["q1"]    # empty -> query
    with pytest.raises(KeyError):
        hyde_run(tiny, "bm25", {"q0": "x"})


# --------------------------------------------------------------------------------------------
# LLM outputs through the response cache (fixture answers, replayed)
# --------------------------------------------------------------------------------------------

MODEL_ID = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def _fixture_answer(req):
    text = req.prompt[-1]["content"]
    if "The relevant query is:" in text:
        return f"Sure, here's a possible user query:\n\n\"Sample {req.index} for this tool\""
    if text.rstrip().endswith("Intent:"):
        return "1. book a flight\n2. find a restaurant" if "flight" in text.split("Query:")[-1] else ""
    return 'Here is the API documentation:\n```json\n{"api_name": "x"}\n```'


def _fill(tmp_path, task, texts, n):
    live = LLMClient(EchoBackend(model_id=MODEL_ID, answer_fn=_fixture_answer), namespace=task.namespace,
                     cache_root=tmp_path, progress=False)
    live.generate(task.prompts_for(texts), n=n, sampling=task.sampling)


def _replay(tmp_path, task):
    return LLMClient(ReplayBackend(model_id=MODEL_ID), namespace=task.namespace, cache_root=tmp_path,
                     sampling=task.sampling, progress=False)


def test_generation_replay(tmp_path, tiny):
    _fill(tmp_path, SYNTHETIC_QUERIES, [TOOLS["FlightTool"], TOOLS["HotelTool"]], 3)
    llm = _replay(tmp_path, SYNTHETIC_QUERIES)
    sub = {d: tiny.corpus[d] for d in ("FlightTool", "HotelTool")}
    exp = gen.synthetic_queries(sub, llm, m=3)
    assert exp == {d: [f"Sample {i} for this tool" for i in range(3)] for d in sub}
    with pytest.raises(ReplayMiss):                      # sample 3 was never generated
        gen.synthetic_queries(sub, llm, m=4)
    part = gen.synthetic_queries(tiny.corpus, llm, m=4, partial=True)
    assert [len(part[d]) for d in TOOLS] == [3, 3, 0, 0, 0]
    assert gen.coverage(part, 4) == {"documents": 5, "complete": 0, "partial": 2, "none": 3, "queries": 6}

    _fill(tmp_path, INTENTS, list(QUERIES.values()), 1)
    its = gen.intents(tiny.query_texts(), _replay(tmp_path, INTENTS))
    assert its == {"q0": ["book a flight", "find a restaurant"], "q1": [QUERIES["q1"]]}   # empty -> query
    assert gen.intents({"new": "unseen query"}, _replay(tmp_path, INTENTS), partial=True) == {}

    _fill(tmp_path, HYDE, [QUERIES["q0"]], 1)
    assert gen.hyde_documents(tiny.query_texts(), _replay(tmp_path, HYDE), partial=True) == {"q0": '{"api_name": "x"}'}


def test_committed_intent_cache_replays(repo):
    """The committed Qwen 1.5B intents (data/llm_cache/reinvoke_intents) replay for ToolE multi-tool."""
    from toolkit.data import DataFileError, load_dataset
    try:
        ds = load_dataset("toole-multi")
    except (DataFileError, FileNotFoundError) as e:
        pytest.skip(f"ToolE data not available: {e}")
    qs = dict(list(ds.query_texts().items())[:20])
    llm = LLMClient(ReplayBackend(model_id=MODEL_ID), namespace=INTENTS.namespace,
                    cache_root=repo / "data" / "llm_cache", sampling=INTENTS.sampling, progress=False)
    its = gen.intents(qs, llm)
    assert set(its) == set(qs) and all(its[q] and all(isinstance(t, str) and t for t in its[q]) for q in qs)
    assert sum(len(v) > 1 for v in its.values()) >= 10     # multi-tool queries: mostly several intents


def test_generate_over_items_is_resumable(tmp_path):
    items = [("q0", QUERIES["q0"]), ("q1", QUERIES["q1"])]
    backend = EchoBackend(model_id=MODEL_ID, answer_fn=_fixture_answer)
    llm = LLMClient(backend, namespace=INTENTS.namespace, cache_root=tmp_path, progress=False)
    first = gen.generate("intents", items, llm)
    assert backend.calls == 2 and first[0] == ["1. book a flight\n2. find a restaurant"]
    assert gen.generate("intents", items, llm) == first and backend.calls == 2    # all from the cache
    assert gen.intents(dict(items), _replay(tmp_path, INTENTS))["q0"] == ["book a flight", "find a restaurant"]


def test_cli_over_seeded_sample(tmp_path):
    from toolkit.data import DataFileError
    from toolkit.llm.cache import ResponseCache
    from toolkit.reinvoke.__main__ import main
    try:
        items = gen.sample_items("toole-single", "queries", 3, seed=0)
    except (DataFileError, FileNotFoundError) as e:
        pytest.skip(f"ToolE data not available: {e}")
    assert items == gen.sample_items("toole-single", "queries", 3, seed=0) and len(items) == 3
    assert main(["--task", "intents", "--dataset", "toole-single", "--sample", "3", "--backend", "echo",
                 "--cache-dir", str(tmp_path)]) == 0
    assert len(ResponseCache(tmp_path, INTENTS.namespace, "echo", readonly=True)) == 3


def test_roundtrip_consistency(tiny):
    from toolkit.metrics import evaluate
    from toolkit.reinvoke.roundtrip import roundtrip_dataset, roundtrip_run
    queries, qrels = roundtrip_dataset({"a": ["x", ""], "b": ["y"]})
    assert queries == {"a#0": ["x"], "b#0": ["y"]} and qrels == {"a#0": {"a": 1}, "b#0": {"b": 1}}
    run, qrels = roundtrip_run(build_index(tiny, "bm25"), EXPANSIONS, k=10)
    assert len(run) == 10
    assert list(run["HotelTool#0"])[0] == "HotelTool" and run["MusicTool#0"] == {}   # no shared term
    assert evaluate(run, qrels, "recall@1,recall@5") == pytest.approx({"recall@1": 0.3, "recall@5": 0.4})
