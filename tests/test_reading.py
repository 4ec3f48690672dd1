"""toolkit.report.Reading: prose numbers looked up in a run's results."""
import pandas as pd
import pytest

from toolkit.report import Reading


def _r():
    return Reading(ours={("s", "BM25", "ndcg@5"): 0.366, ("s", "Dense", "ndcg@5"): 0.664,
                         ("s", "Dense", "recall@5"): 0.8},
                   paper={("1", "s", "BM25", "ndcg@5"): 0.374}, tail=("ndcg@5",), paper_tail=("ndcg@5",))


def test_fields_are_looked_up_completed_and_formatted():
    r = _r()
    assert r.format("BM25 {s|BM25} vs {paper:1|s|BM25}") == "BM25 0.366 vs 0.374"
    assert r.format("{s|Dense|recall@5!.1%}") == "80.0%"
    assert r.format("{s|Dense - s|BM25}") == "+0.298"
    assert r.format("{s|Dense % s|BM25}") == "+81%"
    assert r.format("{n} queries, {x!.2f}", n=1000, x=0.5) == "1,000 queries, 0.50"


def test_a_missing_value_prints_na_and_is_listed():
    r = _r()
    assert r.format("{s|HyDE} and {s|HyDE - s|BM25}") == "n/a and n/a"
    assert r.missing == ["s|HyDE", "s|HyDE"]


def test_an_unknown_named_value_is_an_error():
    with pytest.raises(KeyError, match="no such value"):
        _r().format("{count}")


def test_from_frames_reads_long_and_wide_frames():
    long = pd.DataFrame([{"dataset": "s", "method": "A", "metric": "recall@5", "value": 0.5}])
    assert Reading.from_frames(long, ["dataset", "method"]).format("{s|A|recall@5}") == "0.500"
    wide = pd.DataFrame([{"dataset": "s", "method": "A", "ndcg@5": 0.25}])
    assert Reading.from_frames(wide, ["dataset", "method"], ["ndcg@5"], tail=("ndcg@5",)).format("{s|A}") == "0.250"


def test_a_field_may_wrap_across_lines():
    assert _r().format("{s|Dense -\n s|BM25}") == "+0.298"


def test_percentage_points_and_recorded_cells():
    r = _r()
    assert r.format("{s|Dense|recall@5!p} / {s|Dense - s|BM25!+p}") == "80.0 / +29.8"
    cells = [{"paper": "toolrerank", "table": "3", "dataset": "all-avg", "method": "DPR", "metric": "recall@5",
              "value": 0.634, "n_queries": 1530}]
    r = Reading.from_cells(cells, "toolrerank", tail=("recall@5",))
    assert r.format("{3|all-avg|DPR!p} vs {paper:3|all-avg|DPR!p} (n = {3|all-avg|DPR|n})") == "63.4 vs 75.2 (n = 1,530)"
    assert r.format("{3|all-avg|BM25|n}") == "n/a" and r.missing == ["3|all-avg|BM25|n"]
