"""toolkit.querygen.bounds (issue 49): the no-LLM ceiling and floor rows, without a model."""
from __future__ import annotations

import pandas as pd
import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.querygen import bounds as B
from toolkit.querygen import tables as T
from toolkit.querygen.data import api_description
from toolkit.querygen.retrieval import interleave, query_sets
from toolkit.results import Recorder

IN, OUT = "querygen-in-domain", "querygen-out-of-domain"


def _doc(i: int, tool: str, api: str, desc: str) -> Document:
    raw = Document(f"c/{tool}/{api}", "c", tool, api,
                   f"category_name:c, tool_name:{tool}, api_name:{api}, api_description:{desc}, required_params: []")
    return Document(raw.doc_id, "c", tool, api, api_description(raw), {"toollens_text": raw.text})


def _dataset() -> RetrievalDataset:
    docs = [_doc(0, "Weather", "forecast", "Get the weather forecast for a city"),
            _doc(1, "Flights", "search", "Search flights between two airports"),
            _doc(2, "Hotels", "book", "Book a hotel room")]
    corpus = {d.doc_id: d for d in docs}
    queries = {"q1": Query("q1", "plan my trip to Rome"), "q2": Query("q2", "will it rain tomorrow")}
    qrels = {"q1": {"c/Hotels/book": 1, "c/Flights/search": 1}, "q2": {"c/Weather/forecast": 1}}
    return RetrievalDataset("t", corpus, queries, qrels)


def test_oracle_queries_are_the_gold_index_texts_in_doc_id_order():
    ds = _dataset()
    q = B.oracle_queries(ds, ds.corpus)
    assert q["q1"] == ["Flights: search: Search flights between two airports", "Hotels: book: Book a hotel room"]
    assert q["q2"] == [ds.corpus["c/Weather/forecast"].text]


def test_oracle_descriptions_drop_the_tool_and_api_names():
    ds = _dataset()
    q = B.oracle_descriptions(ds, ds.corpus)
    assert q["q1"] == ["Search flights between two airports", "Book a hotel room"]
    assert all("Weather" not in t and "forecast:" not in t for t in q["q2"])
    assert B.description_only(ds.corpus["c/Weather/forecast"]) == "Get the weather forecast for a city"


def test_copy_the_utterance_goes_through_the_generators_path_and_gives_the_utterances_list():
    ds = _dataset()
    sets = query_sets(B.copy_utterance(ds), ds.query_texts(), append_utterance=True)
    assert sets["q1"] == ["plan my trip to Rome", "plan my trip to Rome"]
    ranked = ["a", "b", "c", "d"]
    assert interleave([ranked, ranked], 3) == ranked[:3]          # a list interleaved with itself is itself


def test_each_oracle_list_starting_with_its_gold_puts_every_gold_first():
    # what an index does with its own keys: each gold index text's list starts with that API
    lists = [["g1", "x", "y"], ["g2", "g1", "x"], ["u", "g2", "z"]]      # two oracle queries + the utterance
    assert interleave(lists, 5)[:2] == ["g1", "g2"]


def test_bound_queries_cover_every_request_of_every_set():
    ds = _dataset()
    b = B.bound_queries(ds.corpus, {IN: ds, OUT: ds})
    assert set(b) == set(B.BOUNDS)
    assert all(set(per[n]) == {"q1", "q2"} for per in b.values() for n in (IN, OUT))


def test_gap_closed():
    assert B.gap_closed(0.5, 0.25, 0.75) == pytest.approx(0.5)
    assert B.gap_closed(0.2, 0.25, 0.75) == pytest.approx(-0.1)     # below the floor
    assert B.gap_closed(0.3, 0.4, 0.4) is None                       # no gap to close
    assert B.gap_closed(None, 0.1, 0.9) is None


def _values() -> pd.DataFrame:
    rows = []

    def add(ds, method, metric, per_query):
        rows.append({"dataset": ds, "method": method, "utterance": True, "sample": "llm", "metric": metric,
                     "value": sum(per_query.values()) / len(per_query), "n": len(per_query), "per_query": per_query})
    for ds in (IN, OUT):
        for metric in ("recall@5", "mmrr@11"):
            add(ds, B.COPY, metric, {"q1": 0.2, "q2": 0.4, "q3": 0.0})
            add(ds, B.ORACLE, metric, {"q1": 1.0, "q2": 1.0, "q3": 1.0})
            add(ds, B.ORACLE_DESCRIPTIONS, metric, {"q1": 0.8, "q2": 0.6, "q3": 0.4})
            add(ds, "SFT", metric, {"q1": 0.5, "q2": 0.4, "q3": 0.3})
            add(ds, "Zero-Shot", metric, {"q1": 0.2, "q2": 0.4})       # partly answered: its own two requests
    return pd.DataFrame(rows)


def test_gap_table_measures_each_method_between_floor_and_ceiling_on_its_own_requests():
    g = B.gap_table(_values(), ["Zero-Shot", "SFT"]).set_index(["dataset", "method", "ceiling", "metric"])
    sft = g.loc[(IN, "SFT", B.ORACLE, "recall@5")]
    assert sft.floor_value == pytest.approx(0.2) and sft.ceiling_value == pytest.approx(1.0)
    assert sft.share == pytest.approx((0.4 - 0.2) / (1.0 - 0.2))
    assert g.loc[(OUT, "SFT", B.ORACLE_DESCRIPTIONS, "mmrr@11")].share == pytest.approx((0.4 - 0.2) / (0.6 - 0.2))
    zs = g.loc[(IN, "Zero-Shot", B.ORACLE_DESCRIPTIONS, "recall@5")]
    assert zs.floor_value == pytest.approx(0.3) and zs.ceiling_value == pytest.approx(0.7) and zs.n == 2
    assert zs.share == pytest.approx(0.0)
    assert len(g) == 2 * 2 * 2 * 2


def test_bounds_are_recorded_as_our_own_cells_and_read_per_test_set():
    v = _values()
    gaps = B.gap_table(v, ["SFT"])
    rec = Recorder("40_querygen", "smoke")
    T.record_bounds(rec, v[v.method.isin(B.BOUNDS)], gaps)
    cells = {(c["table"], c["dataset"], c["method"], c["metric"]): c for c in rec.cells}
    assert cells["1", IN, B.ORACLE, "mmrr"]["value"] == 1.0 and cells["1", IN, B.ORACLE, "mmrr"]["ours_only"]
    share = cells["1-gap", OUT, f"SFT to {B.ORACLE}", "gap_closed_recall@5"]
    assert share["value"] == pytest.approx(0.25) and share["ours_only"] and share["n_queries"] == 3
    assert not any(c["method"] == "SFT" for c in rec.cells)       # the method's own rows are Table 1's, not these
    lines = T.gap_reading(gaps, B.ORACLE)
    assert len(lines) == 2 and lines[0].startswith("- **in-domain** (n = 3; copy → ceiling: Recall@5 0.200 → 1.000")
    assert lines[1].endswith("share closed (Recall@5 / MMRR): SFT +25.0% / +25.0%")
    assert T.gap_reading(gaps, B.ORACLE, prefix="gap, ")[0].startswith("- **gap, in-domain**")
    rows = T.bounds_rows(v, ["SFT"])
    assert list(rows.index.get_level_values("method")[:4]) == [B.COPY, "SFT", B.ORACLE_DESCRIPTIONS, B.ORACLE]
    assert rows.loc[(IN, B.ORACLE), "recall@5"] == 1.0 and list(rows.columns) == ["mmrr", "recall@5", "n"]


class _WordIndex:
    """ranked(texts, k) by shared words with each document's text (ties: corpus order)"""

    def __init__(self, corpus):
        self.corpus = corpus

    def ranked(self, texts, k):
        out = []
        for t in texts:
            w = set(t.lower().split())
            out.append(sorted(self.corpus, key=lambda d: -len(w & set(self.corpus[d].text.lower().split())))[:k])
        return out


def test_not_first_counts_the_gold_apis_a_text_does_not_retrieve_first():
    ds = _dataset()
    index = _WordIndex(ds.corpus)
    assert B.not_first(index, ds, ds.corpus) == (3, 0)
    assert B.not_first(index, ds, ds.corpus, text=lambda doc: "a") == (3, 2)     # all tie: corpus order, 1 of 3 first
