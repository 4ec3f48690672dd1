"""Your method on notebook 50's leaderboard through its ``methods`` parameter (toolkit.methods.user), the example
method of ``examples/word_overlap.py``, and the fixed reference baseline."""
from __future__ import annotations

import json

import pytest
import yaml

from toolkit.methods import Method
from toolkit.methods import benchmark as B
from toolkit.methods.user import load_methods, parse_specs
from toolkit.paths import REPO

EXAMPLE = "examples/word_overlap.py:WordOverlap"


class NoName(Method):
    def online(self, queries):
        return {}


class Named(NoName):
    name = "named"


class NeedsArgs(Named):
    def __init__(self, k):
        super().__init__()


def test_methods_parameter_is_parsed_imported_and_checked():
    assert parse_specs('["a.b:C", "d.py:E"]') == ["a.b:C", "d.py:E"]       # papermill -p passes a string
    assert parse_specs("a.b:C") == ["a.b:C"] and parse_specs([]) == []
    with pytest.raises(TypeError, match="methods must be a list"):
        parse_specs({"a": 1})
    loaded = load_methods([EXAMPLE, f"{__name__}:Named"], reserved=["BM25"])
    assert list(loaded) == ["word overlap", "named"]
    with pytest.raises(ValueError, match="must look like 'mypackage.module:MyMethod'"):
        load_methods(["examples.word_overlap.WordOverlap"])
    with pytest.raises(ModuleNotFoundError, match="cannot import 'no_such_package'"):
        load_methods(["no_such_package:X"])
    with pytest.raises(FileNotFoundError, match="no file 'nowhere.py'"):
        load_methods(["nowhere.py:X"])
    with pytest.raises(AttributeError, match="has no 'Missing'"):
        load_methods([f"{__name__}:Missing"])
    with pytest.raises(TypeError, match="not a subclass of toolkit.methods.Method"):
        load_methods(["json:JSONDecoder"])
    with pytest.raises(ValueError, match="needs a name of its own"):
        load_methods([f"{__name__}:NoName"])
    with pytest.raises(TypeError, match="built without arguments"):
        load_methods([f"{__name__}:NeedsArgs"])
    with pytest.raises(ValueError, match="named 'word overlap' like a built-in"):
        load_methods([EXAMPLE], reserved=["word overlap"])
    with pytest.raises(ValueError, match="two entries are named 'named'"):
        load_methods([f"{__name__}:Named", f"{__name__}:Named"])


@pytest.mark.slow
def test_word_overlap_example_scores_sensibly_on_the_smoke_benchmark():
    """The example beats 0 clearly on I1 and I2, where a raw ``text.lower().split()`` overlap scores 0.00 (stop
    words outnumber content words; punctuation and ToolBench's snake_case ids never match), and it is never the
    reference baseline even though it is cheap and beats BM25 on I1-I3 here."""
    from toolkit.methods.catalog import BM25
    sets = B.benchmark_sets(B.config_for("smoke"))
    result = B.run_benchmark({"BM25": BM25, **load_methods([EXAMPLE])}, sets, log=None)
    board = B.leaderboard(result, n_permutations=500)
    for s in ("I1", "I2", "I1-I3", "UltraTool"):
        assert board.loc["word overlap", f"NDCG@5 {s}"] > 30, s
    assert board.loc["word overlap", "NDCG@5 I1-I3"] > board.loc["BM25", "NDCG@5 I1-I3"]
    assert board.attrs["reference"]["I1-I3"] == "BM25"
    assert 0 < board.loc["word overlap", "p I1-I3"] <= 1


def _cells(run):
    return {(c["table"], c["dataset"], c["method"], c["metric"]): c["value"] for c in run["cells"]}


@pytest.mark.slow
@pytest.mark.notebook
def test_a_method_added_through_notebook_50s_methods_parameter(tmp_path, monkeypatch):
    """``toolkit run 50_headtohead --profile smoke -p methods='[...]'``: the method is on the leaderboard and in the
    cost growth, and every p value of the built-in methods against the reference baseline is the committed smoke
    expectation's (data/expected/50_headtohead/smoke.yaml): adding a cheap method that beats BM25 moves none."""
    from toolkit import runner
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path))
    monkeypatch.setenv("TOOLKIT_FIGURES", str(tmp_path / "figures"))
    runner.run_notebook("50_headtohead", "smoke", {"methods": [EXAMPLE]})
    run = json.loads((tmp_path / "50_headtohead" / "smoke.json").read_text())
    assert run["parameters"]["methods"] == [EXAMPLE]
    got = _cells(run)
    for s in ("I1", "I2", "I3", "I1-I3", "UltraTool"):
        assert got["leaderboard", s, "word overlap", "ndcg@5"] > 0.3 or s == "I3", s
        assert 0 < got["leaderboard", s, "word overlap", "p_ndcg@5_vs_baseline"] <= 1
    assert got["cost", "library", "word overlap", "online_seconds_per_query"] > 0
    growth = [r for r in run["scaling"]["growth"] if r["method"] == "word overlap"]
    assert len(growth) == 3 and all(r["source"] == "measured" and r["offline s"] > 0 for r in growth)
    assert "word overlap" in {r["method"] for r in run["scaling"]["fits"]}
    for n in (200, 400, 800):
        assert 0 < got["scaling", f"library-{n}", "word overlap", "ndcg@5"] <= 1
    # the reference baseline's p values: those of the run without the method
    expected = yaml.safe_load((REPO / "data" / "expected" / "50_headtohead" / "smoke.yaml").read_text())
    expected = expected["cells"] if isinstance(expected, dict) else expected
    ps = {(e["table"], e["dataset"], e["method"], e["metric"]): e["value"] for e in expected
          if e["metric"] == "p_ndcg@5_vs_baseline"}
    assert len(ps) > 40
    for key, value in ps.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key
    mine = {k for k in got if k[3] == "p_ndcg@5_vs_baseline" and k[2] != "word overlap"}
    assert mine == set(ps)
