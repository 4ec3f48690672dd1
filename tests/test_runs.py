"""Our runs, saved (toolkit.runs): every evaluated (method, dataset) a notebook records leaves a TREC run file and
its per-query metrics, and a saved run re-evaluated with pytrec_eval gives the number in the notebook's table."""
from __future__ import annotations

import gzip
import json

import pytest

from toolkit import runs as R
from toolkit.paths import RESULTS


def _pytrec(run, qrels, measure):
    import pytrec_eval
    ev = pytrec_eval.RelevanceEvaluator({q: {d: int(v) for d, v in r.items()} for q, r in qrels.items()}, {measure})
    out = ev.evaluate(run)
    key = measure.replace(".", "_")
    return sum(out[q][key] if q in out else 0.0 for q in qrels) / len(qrels)


def test_recorder_writes_trec_runs_and_per_query_metrics(tmp_path, monkeypatch):
    from toolkit.results import Recorder
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path))
    rec = Recorder("99_demo", "standard")
    qrels = {"q1": {"a": 1}, "q2": {"c": 1, "d": 1}}
    run = {"q1": {"a": 0.5, "b": 0.5, "c": 0.1}, "q2": {"d": 2.0, "a": 1.0, **{f"x{i}": -i for i in range(150)}}}
    R.keep("tiny", "BM25 + DPR", run, qrels)
    R.keep("tiny", "BM25 + DPR", dict(run), qrels)                 # the same run behind a second table: once
    rec.save()
    [entry] = R.list_runs(tmp_path)
    assert (entry["dataset"], entry["method"], entry["queries"]) == ("tiny", "BM25 + DPR", 2)
    saved = R.read_run(entry["path"])
    import numpy as np
    assert len(saved["q2"]) == R.DEPTH                              # top 100 of 152
    assert {d: np.float32(s) for d, s in saved["q1"].items()} == {d: np.float32(s) for d, s in run["q1"].items()}
    assert R.depth_for(R.LARGE + 1) == R.DEPTH_LARGE
    for measure, metric in [("ndcg_cut.5", "ndcg@5"), ("recall.5", "recall@5")]:
        assert _pytrec(saved, qrels, measure) == pytest.approx(entry["means"][metric], abs=1e-12)
    pq = R.read_per_query(entry["path"].parent / entry["per_query"].split("/")[-1])
    assert pq["ndcg@5"].keys() == qrels.keys()
    first = entry["path"].read_bytes()
    rec.save()                                                     # an unchanged rerun rewrites the same bytes
    assert entry["path"].read_bytes() == first
    with gzip.open(entry["path"], "rt") as f:
        assert f.readline().split() == ["q1", "Q0", "b", "1", "0.5", "BM25_+_DPR"]   # trec_eval's tie order


def test_a_rerun_removes_runs_that_are_gone(tmp_path, monkeypatch):
    from toolkit.results import Recorder
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path))
    rec = Recorder("99_demo", "standard")
    R.keep("tiny", "old", {"q": {"a": 1.0}}, {"q": {"a": 1}})
    rec.save()
    rec = Recorder("99_demo", "standard")
    R.keep("tiny", "new", {"q": {"a": 1.0}}, {"q": {"a": 1}})
    rec.save()
    assert [r["method"] for r in R.list_runs(tmp_path)] == ["new"]


STANDARD = RESULTS / "01_baselines" / "runs" / "standard"


@pytest.mark.skipif(not (STANDARD / "runs.json").is_file(), reason="notebook 01's standard runs are not committed")
def test_committed_standard_run_reevaluates_to_its_table_cell():
    """01's BM25 on ToolE single-tool: the saved run, re-read and scored by pytrec_eval against the dataset's qrels,
    gives the nDCG@5 recorded in results/01_baselines/standard.json (Re-Invoke Table 1's BM25 row)."""
    from toolkit.baselines import config_for
    from toolkit.data import load_dataset
    index = json.loads((STANDARD / "runs.json").read_text())
    entry = next(r for r in index["runs"] if (r["dataset"], r["method"]) == ("toole-single", "BM25"))
    cfg = config_for("standard")
    ds = load_dataset("toole-single").sample(cfg.sample_queries, seed=cfg.seed)
    saved = R.read_run(STANDARD / entry["run"])
    cells = json.loads((RESULTS / "01_baselines" / "standard.json").read_text())["cells"]
    cell = next(c for c in cells if (c["paper"], c["table"], c["dataset"], c["method"], c["metric"])
                == ("reinvoke", "1", "toole-single", "BM25", "ndcg@5"))
    assert _pytrec(saved, ds.qrels, "ndcg_cut.5") == pytest.approx(cell["value"], abs=1e-9)
    assert entry["queries"] == cell["n_queries"] and set(saved) <= set(ds.qrels)   # a query BM25 scores nothing is absent


def test_runs_cli_lists_them(tmp_path, monkeypatch, capsys):
    from toolkit.__main__ import main
    from toolkit.results import Recorder
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path))
    Recorder("99_demo", "standard")
    R.keep("tiny", "BM25", {"q": {"a": 1.0}}, {"q": {"a": 1}})
    R._ACTIVE[0].save()
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert "99_demo" in out and "BM25" in out and "1 runs" in out
