"""toolkit.baselines: the 01_baselines tables on a hand-made per-query frame."""
import pandas as pd
import pytest

from toolkit import baselines as B
from toolkit.results import Recorder


def _per_query():
    rows = []
    for i, name in enumerate(B.DATASETS):
        nq = 2 if name == "toolbench-g1-tool" else 1            # groups of unequal size: micro != macro
        for method in ("BM25", "Dense"):
            for q in range(nq):
                for metric in B.METRICS:
                    rows.append({"dataset": name, "method": method, "qid": f"{name}-{q}", "metric": metric,
                                 "value": (i + q) / 10 + (0.05 if method == "Dense" else 0)})
    return pd.DataFrame(rows)


def test_unions_are_micro_and_toolrerank_averages_macro():
    v = B.lookup(B.baseline_table(_per_query()))
    g = {name: i / 10 for i, name in enumerate(B.DATASETS)}
    i1 = [g["toolbench-g1-instruction"], g["toolbench-g1-tool"], g["toolbench-g1-tool"] + 0.1,
          g["toolbench-g1-category"]]
    assert v[("toolbench-i1", "BM25", "ndcg@5")] == (pytest.approx(sum(i1) / 4), 4)
    unseen = [g["toolbench-g1-tool"] + 0.05, g["toolbench-g1-category"], g["toolbench-g2-category"]]
    assert v[("unseen-avg", "BM25", "ndcg@5")][0] == pytest.approx(sum(unseen) / 3)


def test_every_paper_gets_its_rows():
    table = B.baseline_table(_per_query())
    rec = Recorder("01_baselines", "smoke")
    B.record_reinvoke(rec, table, "minilm")
    B.record_toolrerank(rec, table)
    B.record_feedback(rec, table, "minilm")
    by = {}
    for c in rec.cells:
        by.setdefault((c["paper"], c["table"]), set()).add(c["method"])
    assert by == {("reinvoke", "1"): {"BM25", "Dense"}, ("reinvoke", "6"): {"BM25", "Dense"},
                  ("toolrerank", "3"): {"BM25"}, ("iterative_feedback", "2"): {"BM25", "Ada Embedding"},
                  ("iterative_feedback", "3"): {"BM25", "Ada Embedding"}}
    assert len(rec.cells) == 5 * 2 * (1 + 4) + 9 * 2 + (4 * 3 + 4) * 2
