"""The Re-Invoke experiment (toolkit.reinvoke.experiment): conditions are computed only from complete
cached inputs, "first m samples" keeps the sample index, records land under the paper's keys, case
studies pick what they say. Tiny hand-built data and a fake embedding; no model, no cache file."""
from __future__ import annotations

import pytest

from test_reinvoke import EXPANSIONS, INTENT_MAP, fake_embed, tiny  # noqa: F401  (tiny is a fixture)
from toolkit.reinvoke import experiment as E
from toolkit.reinvoke import tables as T
from toolkit.reinvoke.pipeline import hyde_run, reinvoke_run
from toolkit.results import Recorder


def _gens(ds, m=2, intents=True, hyde=True, gaps=False):
    g = E.Generations(E.MAIN_BACKBONE)
    g.intents["tiny"] = dict(INTENT_MAP) if intents else {"q0": INTENT_MAP["q0"]}
    g.hyde["tiny"] = {q: "weather forecast playlist" for q in ds.queries} if hyde else {}
    g.samples["tiny"] = {d: list(EXPANSIONS[d][:m]) for d in ds.corpus}
    if gaps:
        g.samples["tiny"]["HotelTool"][0] = None     # sample 0 of one tool not generated yet
    return g


def test_complete_m_and_expansions_keep_the_sample_index():
    g = E.Generations("x")
    g.samples["d"] = {"A": ["a0", None, "a2"], "B": ["b0", "", "b2"], "C": ["c0", "c1", "c2"]}
    assert g.complete_m("d") == 1                  # A misses sample 1
    assert g.expansions("d", 1) == {"A": ["a0"], "B": ["b0"], "C": ["c0"]}
    # samples 0..2 -> A has no sample 1, B's sample 1 parsed to nothing: both keep what they have
    assert g.expansions("d", 3) == {"A": ["a0", "a2"], "B": ["b0", "b2"], "C": ["c0", "c1", "c2"]}
    assert g.complete_m("missing") == 0


def _conds(ds, gens, m=2):
    sets = {"tiny": E.EvalSet(ds, ds)}
    return sets, {c.method: c for c in E.conditions(sets, gens, fake_embed, m=m, k=5) if c.dataset == "tiny"}


def test_conditions_computed_from_complete_inputs(tiny):
    sets, c = _conds(tiny, {E.MAIN_BACKBONE: _gens(tiny)})
    assert c["Re-Invoke (dense)"].compute() == reinvoke_run(tiny, "dense", EXPANSIONS, INTENT_MAP, embed=fake_embed, k=5)
    assert c["Re-Invoke (BM25)"].compute() == reinvoke_run(tiny, "bm25", EXPANSIONS, INTENT_MAP, k=5)
    hy = {q: "weather forecast playlist" for q in tiny.queries}
    assert c["HyDE (dense)"].compute() == hyde_run(tiny, "dense", hy, embed=fake_embed, k=5)
    assert c["+ Intent extractor"].compute() == reinvoke_run(tiny, "dense", None, INTENT_MAP, embed=fake_embed, k=5)
    assert c["Synthetic query only"].compute() == reinvoke_run(tiny, "dense", EXPANSIONS, None, embed=fake_embed,
                                                               k=5, mode="query_only")
    assert c["Max similarity"].compute() == reinvoke_run(tiny, "dense", EXPANSIONS, None, embed=fake_embed, k=5,
                                                         copy_agg="max")
    assert c["1 synthetic query"].compute() == reinvoke_run(tiny, "dense", EXPANSIONS, None, embed=fake_embed, k=5,
                                                            m=1)
    assert c["5 synthetic queries"].compute is None and "m=2 < 5" in c["5 synthetic queries"].pending
    # complete at m=2: the extra Re-Invoke rows are m=1 only (m=2 is the main row)
    assert sorted(n for n in c if ", m=" in n) == ["Re-Invoke (BM25), m=1", "Re-Invoke (dense), m=1"]


def test_hyde_name_description_row_drops_the_parameter_schema(tiny):
    g = _gens(tiny)
    g.hyde["tiny"] = {q: '{"api_name": "weather", "api_description": "forecast", "required_parameters": '
                         '[{"name": "city", "description": "the hotel city for a flight"}]}' for q in tiny.queries}
    sets, c = _conds(tiny, {E.MAIN_BACKBONE: g, "qwen-0.5b": _gens(tiny)})
    for kind, label in (("dense", "dense"), ("bm25", "BM25")):
        short = c[f"HyDE ({label}), name + description only"].compute()
        assert short == hyde_run(tiny, kind, {q: "weather: forecast" for q in tiny.queries}, embed=fake_embed, k=5)
        assert short != c[f"HyDE ({label})"].compute()
        assert c[f"HyDE ({label}), name + description only"].tables == ("extra",)
    assert "HyDE (dense) [qwen-0.5b], name + description only" not in c     # main backbone only
    _, c = _conds(tiny, {E.MAIN_BACKBONE: _gens(tiny, hyde=False)})
    assert c["HyDE (dense), name + description only"].compute is None


def test_incomplete_inputs_are_pending_never_partial(tiny):
    sets, c = _conds(tiny, {E.MAIN_BACKBONE: _gens(tiny, intents=False, hyde=False)})
    assert c["Re-Invoke (dense)"].compute is None
    assert c["Re-Invoke (dense)"].pending == "intents for 1/2 queries"
    assert c["HyDE (BM25)"].compute is None and c["HyDE (BM25)"].pending == "HyDE documents for 0/2 queries"
    assert c["+ Intent extractor"].compute is None
    assert c["+ Query generator"].compute is not None          # needs no intents
    # one tool lacks sample 0: nothing with synthetic queries can run; Re-Invoke pending on both counts
    sets, c = _conds(tiny, {E.MAIN_BACKBONE: _gens(tiny, gaps=True)})
    assert c["+ Query generator"].compute is None and c["1 synthetic query"].compute is None
    assert "synthetic queries complete for m=0 < 2" in c["Re-Invoke (dense)"].pending


def test_partial_m_extra_row(tiny):
    gens = {E.MAIN_BACKBONE: _gens(tiny, m=1)}
    sets, c = _conds(tiny, gens, m=2)
    assert c["Re-Invoke (dense)"].compute is None
    extra = c["Re-Invoke (dense), m=1"]
    assert extra.tables == ("extra",)
    assert extra.compute() == reinvoke_run(tiny, "dense", EXPANSIONS, INTENT_MAP, embed=fake_embed, k=5, m=1)
    # with 2 of 3 samples cached: m=2 and, to line up with other backbones / runs, m=1
    sets, c = _conds(tiny, {E.MAIN_BACKBONE: _gens(tiny, m=2)}, m=3)
    assert {n for n in c if n.startswith("Re-Invoke (BM25), m=")} == {"Re-Invoke (BM25), m=1", "Re-Invoke (BM25), m=2"}
    assert c["Re-Invoke (BM25), m=1"].compute() == reinvoke_run(tiny, "bm25", EXPANSIONS, INTENT_MAP, k=5, m=1)


def test_partial_m_ablation_extras(tiny):
    """3B/3D with the m the cache holds (here 2 of 3), so mean vs max can be read before m is complete."""
    sets, c = _conds(tiny, {E.MAIN_BACKBONE: _gens(tiny, m=2)}, m=3)
    assert c["Max similarity"].compute is None
    mx, mean = c["Max similarity, m=2"], c["Mean similarity, m=2"]
    assert mx.tables == mean.tables == ("extra",)
    assert mx.compute() == reinvoke_run(tiny, "dense", EXPANSIONS, None, embed=fake_embed, k=5, m=2, copy_agg="max")
    assert mean.compute() == reinvoke_run(tiny, "dense", EXPANSIONS, None, embed=fake_embed, k=5, m=2)
    assert c["Synthetic query only, m=2"].compute() == reinvoke_run(tiny, "dense", EXPANSIONS, None, embed=fake_embed,
                                                                    k=5, m=2, mode="query_only")
    sets, c = _conds(tiny, {E.MAIN_BACKBONE: _gens(tiny, m=1)}, m=3)
    assert "Max similarity, m=1" not in c       # one copy: max and mean are the same run


def test_second_backbone_rows_are_suffixed(tiny):
    gens = {E.MAIN_BACKBONE: _gens(tiny), "qwen-0.5b": _gens(tiny, intents=False)}
    sets, c = _conds(tiny, gens)
    assert c["Re-Invoke (dense) [qwen-0.5b]"].compute is None
    assert c["HyDE (dense) [qwen-0.5b]"].tables == ("extra",)
    # each component alone for the second backbone: query generator yes (samples complete), intents no
    assert c["+ Query generator [qwen-0.5b], m=2"].compute() == reinvoke_run(tiny, "dense", EXPANSIONS, None,
                                                                             embed=fake_embed, k=5, m=2)
    assert "+ Intent extractor [qwen-0.5b]" not in c
    sets, c = _conds(tiny, {E.MAIN_BACKBONE: _gens(tiny), "qwen-0.5b": _gens(tiny, m=1)})
    assert c["+ Intent extractor [qwen-0.5b]"].compute() == reinvoke_run(tiny, "dense", None, INTENT_MAP,
                                                                         embed=fake_embed, k=5)


def test_run_record_and_frames(tiny):
    sets = {"tiny": E.EvalSet(tiny, tiny)}
    conds = E.conditions(sets, {E.MAIN_BACKBONE: _gens(tiny)}, fake_embed, m=2, k=5)
    runs, values, pending = E.run_conditions(conds, sets)
    assert ("tiny", "Dense", "all") in runs and ("tiny", "Dense", "llm") in runs
    assert set(pending["method"]) == {"5 synthetic queries", "10 synthetic queries"}
    rec = Recorder("20_reinvoke", "smoke")
    T.record(rec, values)
    keys = {(c["table"], c["method"], c["metric"]) for c in rec.cells}
    assert ("6", "Re-Invoke (dense)", "recall@1") in keys and ("1", "Re-Invoke (dense)", "ndcg@5") in keys
    assert ("1", "Re-Invoke (dense)", "recall@1") not in keys
    assert ("3A", "Dense", "ndcg@5") in keys and not any(t == "extra" for t, _, _ in keys)
    assert not any(c.get("ours_only") for c in rec.cells)
    f = T.table_frame(values, "3D")
    assert list(f.index) == ["Max similarity", "Mean similarity"]
    check = E.replay_slice(runs, sets, dataset="tiny", n=1)
    assert check["qids"] == ["q0"] and set(check["values"]) == {"Re-Invoke (BM25)", "Re-Invoke (BM25), m=1", "HyDE (BM25)",
                                                                 "HyDE (BM25), name + description only",
                                                                 "+ Query generator (BM25)",
                                                                 "+ Intent extractor (BM25)"}


def test_case_studies_pick_wins_and_losses(tiny):
    base = {"q0": {"HotelTool": 3, "MusicTool": 2, "FlightTool": 1}, "q1": {"WeatherTool": 2, "MusicTool": 1}}
    other = {"q0": {"FlightTool": 3, "RestaurantTool": 2, "HotelTool": 1}, "q1": {"HotelTool": 2, "FlightTool": 1}}
    wins = E.case_studies(tiny, base, other, 2, wins=True, intents=INTENT_MAP)
    assert wins["query"].tolist() == [tiny.queries["q0"].text]
    assert wins.iloc[0]["gold"] == "FlightTool, RestaurantTool" and "book a flight" in wins.iloc[0]["intents"]
    losses = E.case_studies(tiny, base, other, 2, wins=False)
    assert losses["query"].tolist() == [tiny.queries["q1"].text]
    with pytest.raises(KeyError):
        E.case_studies(tiny, base, other, 2).loc[0, "intents"]


def test_roundtrip_table_rows_per_m(tiny):
    from toolkit.reinvoke.roundtrip import roundtrip_run
    from toolkit.metrics import evaluate
    sets = {"tiny-multi": E.EvalSet(tiny, tiny)}
    g = E.Generations(E.MAIN_BACKBONE)
    g.samples["tiny-multi"] = {d: list(EXPANSIONS[d][:2]) for d in tiny.corpus}
    t = E.roundtrip_table(sets, g, fake_embed, m=3, names=("tiny-multi",))
    assert t["m"].tolist() == [1, 2] and t["synthetic queries"].tolist() == [5, 10]
    index = E.build_index(tiny, "dense", None, embed=fake_embed)
    run, qrels = roundtrip_run(index, g.expansions("tiny-multi", 2), k=10)
    assert t.iloc[1]["recall@5"] == evaluate(run, qrels, ["recall@5"])["recall@5"]


def test_m_toolbench_sets_the_synthetic_queries_per_api_on_toolbench_only(tiny):
    assert E.dataset_m("toolbench-i2", 10, 1) == 1 and E.dataset_m("toole-multi", 10, 1) == 10
    assert E.dataset_m("toolbench-i2", 10, None) == 10               # None: the same m everywhere
    g = E.Generations(E.MAIN_BACKBONE)
    g.intents["toolbench-tiny"] = dict(INTENT_MAP)
    g.hyde["toolbench-tiny"] = {q: "weather" for q in tiny.queries}
    g.samples["toolbench-tiny"] = {d: list(EXPANSIONS[d][:1]) for d in tiny.corpus}   # one sample per API
    sets = {"toolbench-tiny": E.EvalSet(tiny, tiny)}

    def conds(m_toolbench):
        return E.conditions(sets, {E.MAIN_BACKBONE: g}, fake_embed, m=10, k=5, m_toolbench=m_toolbench)
    c = {x.method: x for x in conds(None)}                           # the paper's m = 10: pending
    assert c["Re-Invoke (dense)"].compute is None and "m=1 < 10" in c["Re-Invoke (dense)"].pending
    c = {x.method: x for x in conds(1)}
    assert c["Re-Invoke (dense)"].m == 1 and c["Re-Invoke (dense)"].compute() == reinvoke_run(
        tiny, "dense", EXPANSIONS, INTENT_MAP, embed=fake_embed, k=5, m=1)
    assert c["+ Query generator"].compute is not None and c["Synthetic query only"].compute is not None
    # one copy per API: max = mean over copies, so Table 3D is pending, not a vacuous tie
    assert c["Max similarity"].compute is None and "3D needs m >= 2" in c["Max similarity"].pending
    assert c["5 synthetic queries"].compute is None
    assert not any(", m=" in n for n in c)                            # no extra rows below m_toolbench = 1
    # the m reaches every recorded cell's note
    runs, values, _ = E.run_conditions(conds(1), sets)
    rec = Recorder("20_reinvoke", "smoke")
    T.record(rec, values, {"Re-Invoke (dense)": "minilm"})
    notes = {(x["table"], x["method"]): x["note"] for x in rec.cells if x["metric"] == "ndcg@5"}
    assert notes[("1", "Re-Invoke (dense)")] == "minilm; m=1" and notes[("1", "Dense")] == ""
    rec = Recorder("20_reinvoke", "smoke")
    T.record(rec, values, {"Re-Invoke (dense)": "minilm"}, dataset_notes={"toolbench-tiny": "corpus=pool (3 APIs)"})
    notes = {(x["table"], x["method"]): x["note"] for x in rec.cells if x["metric"] == "ndcg@5"}
    assert notes[("1", "Re-Invoke (dense)")] == "corpus=pool (3 APIs); minilm; m=1"
    assert notes[("1", "Dense")] == "corpus=pool (3 APIs)"
    t = E.roundtrip_table(sets, g, fake_embed, m=10, names=("toolbench-tiny",), m_toolbench=1)
    assert t["m"].tolist() == [1] and t["main"].tolist() == [True]
    assert E.roundtrip_table(sets, g, fake_embed, m=10, names=("toolbench-tiny",))["main"].tolist() == [False]


def test_second_backbone_rows_are_recorded_as_ours_only(tiny):
    """The paper has no Qwen 0.5B row: its cells are our own, so compare lists them apart from naming slips."""
    sets = {"tiny": E.EvalSet(tiny, tiny)}
    conds = E.conditions(sets, {E.MAIN_BACKBONE: _gens(tiny), "qwen-0.5b": _gens(tiny)}, fake_embed, m=2, k=5)
    _, values, _ = E.run_conditions(conds, sets)
    rec = Recorder("20_reinvoke", "smoke")
    T.record(rec, values)
    own = {(c["table"], c["method"]) for c in rec.cells if c.get("ours_only")}
    assert ("1", "Re-Invoke (dense) [qwen-0.5b]") in own and ("6", "Re-Invoke (BM25) [qwen-0.5b]") in own
    assert all("[qwen-0.5b]" in m for _, m in own)
    assert ("1", "Re-Invoke (dense)") not in own and ("1", "HyDE (dense)") not in own


def test_reading_reads_whole_set_rows_first_and_the_papers_numbers():
    import pandas as pd
    rows = [{"dataset": "toole-single", "method": "Dense", "tables": "3A", "backbone": None, "m": None, "queries": 10,
             **{m: 0.5 for m in E.METRICS}},
            {"dataset": "toole-single", "method": "Dense", "tables": "1,6", "backbone": None, "m": None, "queries": 99,
             **{m: 0.6 for m in E.METRICS}}]
    rt = pd.DataFrame([{"dataset": "toole-all", "synthetic queries": 5, "m": 1, "main": False,
                        "recall@5": 0.9, "recall@10": 0.95}])
    r = T.reading(pd.DataFrame(rows), rt)
    assert r.format("{toole-single|Dense}") == "0.600"                      # the whole set, not the sample
    assert r.format("{toole-all|round trip, first 1|recall@10}") == "0.950"
    assert r.format("{paper:1|toole-single|BM25!.4f}") == "0.3735"
    assert T.intent_counts({"a": ["x"], "b": ["x", "y", "z"]}) == {"mean": 2.0, "one": 0.5}
