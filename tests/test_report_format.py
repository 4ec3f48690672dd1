"""The suite's one table formatter (toolkit.report.format_table / paper_table): one scale per metric family (x100,
one decimal), a signed Δ beside every paper value, p as '< 0.001', words instead of NaN, text left-aligned."""
from __future__ import annotations

import math
import types

import pandas as pd

from toolkit.report import NOT_PRINTED, PENDING, format_table, p_value, paper_table, side_by_side


def _rec():
    cell = dict(paper="iterative_feedback", table="2", dataset="toolbench-i1", n_queries=474, note="")
    return types.SimpleNamespace(cells=[
        {**cell, "method": "BM25", "metric": "ndcg@1", "value": 0.460970},
        {**cell, "method": "BM25 (LLM sample)", "metric": "ndcg@1", "value": 0.46, "n_queries": 150},
    ])


def test_paper_table_prints_x100_one_decimal_with_a_signed_delta_and_words_for_missing():
    t = paper_table(_rec(), "iterative_feedback", "2")
    f = t.frame
    assert f.loc[("toolbench-i1", "BM25"), ("ndcg@1", "paper")] == "18.4"     # the paper's 0.1837
    assert f.loc[("toolbench-i1", "BM25"), ("ndcg@1", "ours")] == "46.1"      # not 0.460970
    assert f.loc[("toolbench-i1", "BM25"), ("ndcg@1", "Δ")] == "+27.7"        # not 0.277270
    assert f.loc[("toolbench-i1", "BM25 (LLM sample)"), ("ndcg@1", "paper")] == NOT_PRINTED
    assert f.loc[("toolbench-i1", "BM25"), ("n", "")] == "474"
    assert "nan" not in str(t).lower() and "<NA>" not in str(t)
    # the recorded values keep their scale: the formatter only changes what is shown
    raw = side_by_side(_rec(), "iterative_feedback", "2")
    assert raw.loc[("toolbench-i1", "BM25"), ("ndcg@1", "ours")] == 0.460970


def test_format_table_scales_metrics_once_and_spells_p_and_missing_values():
    df = pd.DataFrame({"method": ["BM25", "Ours"], "ndcg@5": [0.274764, float("nan")], "p": [0.0001, 0.0123],
                       "n": [441, 441], "already x100": [69.196429, 12.0], "seconds": [0.000292, 1234.5]})
    t = format_table(df, percents=["already x100"])
    f = t.frame
    assert list(f["ndcg@5"]) == ["27.5", PENDING]
    assert list(f["p"]) == ["< 0.001", "0.012"] and p_value(0.0009999) == "< 0.001"
    assert list(f["n"]) == ["441", "441"] and list(f["already x100"]) == ["69.2", "12.0"]
    assert list(f["seconds"]) == ["0.000292", "1,234"]
    # text columns left-aligned: in the text form and in the HTML
    lines = str(t).splitlines()
    assert lines[1].split()[1] == "BM25" and "BM25 " in lines[1]
    assert "text-align: left" in t._repr_html_()
    assert format_table(df, missing={"ndcg@5": "reference"}).frame["ndcg@5"].iloc[1] == "reference"
    assert not any(isinstance(v, float) and math.isnan(v) for v in f.to_numpy().ravel())


def test_a_long_paper_table_scales_metrics_but_not_counts():
    cell = dict(paper="iterative_feedback", table="1", dataset="toolbench-i1", method="test", n_queries=None, note="")
    rec = types.SimpleNamespace(cells=[{**cell, "metric": "queries", "value": 474}])
    f = paper_table(rec, "iterative_feedback", "1", wide=False).frame
    assert f["ours"].iloc[0] == "474" and f["paper"].iloc[0] == "796" and f["Δ"].iloc[0] == "-322"
