"""The committed feedback traces reproduce the standard run's numbers with every model and the LLM patched
to fail if called (issue 16: the standard profile replays without a model)."""
from __future__ import annotations

import json

import pytest

from toolkit.paths import REPO

STANDARD = REPO / "results" / "30_feedback" / "standard.json"


def test_standard_tables_replay_from_the_traces_without_a_model(monkeypatch):
    if not STANDARD.is_file() or not json.loads(STANDARD.read_text()).get("traces"):
        pytest.skip("no standard run from committed feedback traces yet (generated in the background; issue 16)")
    data = json.loads(STANDARD.read_text())
    import toolkit.retrieval.dense as dense
    from toolkit.feedback import experiment as X
    from toolkit.feedback.collect import collect
    from toolkit.feedback import stages
    from toolkit.feedback.config import config_for

    def no_model(*a, **k):
        raise AssertionError("the replay must not train, load or call a model or an LLM")
    for name in ("warmup", "train_feedback", "train", "test", "toolretriever", "llm_client", "dense_search"):
        monkeypatch.setattr(stages, name, no_model)
    monkeypatch.setattr(dense.DenseRetriever, "embed", no_model)
    cfg = config_for("standard", **data["parameters"].get("overrides", {}))
    values, pending, _ = collect(cfg, X.test_datasets(cfg), run_missing=False)
    assert len(pending) == len(data["pending"])
    # Tables 2-3 lead with the fair LLM step, the capped first run beside it (as notebook 30 records them)
    from toolkit.feedback import tables as T
    from toolkit.feedback.config import with_fair_feedback
    fair, _, _ = collect(with_fair_feedback(cfg), X.test_datasets(cfg), run_missing=False)
    values = T.headline_values(fair, values)
    ours = values.set_index(["table", "set", "method", "metric"])["value"]
    from toolkit.feedback.tables import KEY as keys
    want = {(c["table"], c["dataset"], c["method"], c["metric"]): c["value"] for c in data["cells"]
            if c["table"] in ("2", "3", "4", "5", "6", "7", "s4.3") and "BM25" not in c["method"]
            and "Ada" not in c["method"] and "seconds" not in c["metric"]}
    checked = 0
    for (table, label, method, metric), v in ours.items():
        key = (table, keys[label], method, metric)
        if key in want:
            assert v == pytest.approx(want[key], abs=1e-9), key
            checked += 1
    assert checked == len(want) > 0


def test_the_fair_decomposition_replays_from_the_traces(monkeypatch):
    """The fair LLM step's decomposition recorded by notebook 30 (issue 48) is what its committed traces give."""
    if not STANDARD.is_file() or not json.loads(STANDARD.read_text()).get("fair_decomposition"):
        pytest.skip("no fair decomposition recorded in the standard run yet")
    data = json.loads(STANDARD.read_text())
    from toolkit.feedback import experiment as X
    from toolkit.feedback import stages
    from toolkit.feedback.collect import collect
    from toolkit.feedback.config import config_for, with_fair_feedback

    def no_model(*a, **k):
        raise AssertionError("the replay must not train, load or call a model or an LLM")
    for name in ("warmup", "train_feedback", "train", "test", "toolretriever", "llm_client", "dense_search"):
        monkeypatch.setattr(stages, name, no_model)
    import toolkit.retrieval.dense as dense
    monkeypatch.setattr(dense.DenseRetriever, "embed", no_model)
    import toolkit.feedback.collect as collect_module
    read = data["fair_traces"]

    def as_recorded(path, needed, pending, row, partial=False):
        # a trace still growing (committed chunk by chunk between replays) is read as far as the run read it: its
        # first instructions in sample order, which the loop traces in that order
        got = X.load_or_pending(path, needed, pending, row, partial)
        assert got is None or path.name in read, f"{path.name}: a trace the run did not read"
        if got is not None and len(got) > read[path.name]["queries"]:
            got = dict(list(got.items())[:read[path.name]["queries"]])
        return got
    monkeypatch.setattr(collect_module, "load_or_pending", as_recorded)
    cfg = config_for("standard", **data["parameters"].get("overrides", {}))
    _, _, extra = collect(with_fair_feedback(cfg), X.test_datasets(cfg), run_missing=False)
    key = lambda r: (r["set"], r["part"], r["metric"])  # noqa: E731
    got = {key(r): r for r in extra["decomposition"]}
    want = {key(r): r for r in data["fair_decomposition"]}
    assert set(got) == set(want) and want
    for k, r in want.items():
        assert got[k]["n"] == r["n"], k
        assert got[k]["diff"] == pytest.approx(r["diff"], abs=1e-9), k


def re_derive(cfg, tests, llm, first: int = 6) -> int:
    """Re-run the loop on the first ``first`` instructions of every LLM trace of ``cfg``'s plan that exists, with
    ``llm`` and the trace's own retrieval lists as the search; assert the instructions, yes/no answers and
    recorded seconds equal the trace's. Returns the refinements re-derived."""
    from toolkit.feedback import experiment as X
    from toolkit.feedback.data import training_set
    from toolkit.feedback.loop import iterate, iteration_prefix
    checked = 0
    for stage in X.llm_stages(cfg, tests):
        if not stage.path.is_file():
            continue
        prefix = stage.group is not None and stage.cfg.training.prefix
        corpus = (training_set("train") if stage.group is None else tests[stage.group]).corpus
        recorded = dict(list(X.load_traces(stage.path).items())[:first])
        lists = {(q, iteration_prefix(ins, t, prefix)): tr.runs[t] for q, tr in recorded.items()
                 for t, ins in enumerate(tr.instructions)}

        def search(queries, lists=lists, name=stage.path.name):
            missing = [(q, text) for q, text in queries.items() if (q, text) not in lists]
            assert not missing, f"{name}: the cache's refinements are not the trace's: {missing[:2]}"
            return {q: lists[q, text] for q, text in queries.items()}
        again = iterate({q: tr.instructions[0] for q, tr in recorded.items()}, search, corpus, llm,
                        rounds=stage.cfg.training.rounds, cfg=stage.cfg.feedback, prefix=prefix, progress=False,
                        workers=1)
        for q, tr in recorded.items():
            assert again[q].instructions == tr.instructions, (stage.path.name, q)
            assert again[q].answers == tr.answers, (stage.path.name, q)
            assert [round(s, 3) for s in again[q].seconds] == tr.seconds, (stage.path.name, q)
            checked += len(tr.instructions) - 1
    return checked


def test_committed_llm_cache_re_derives_the_traces_refinements(monkeypatch):
    # Every refinement in a committed trace must come back from the committed LLM cache alone: the loop re-run
    # with a replay-only client (a missing answer raises) and the trace's own retrieval lists as the search,
    # on the first instructions of each LLM trace -- instructions, yes/no answers and recorded seconds equal.
    from toolkit.feedback import experiment as X
    from toolkit.feedback import stages
    from toolkit.feedback.config import config_for
    from toolkit.llm.client import get_client
    cfg = config_for("standard")
    tests = X.test_datasets(cfg)
    if not any(s.path.is_file() for s in X.llm_stages(cfg, tests)):
        pytest.skip("no committed standard LLM trace yet (generated in the background; issue 16)")

    def no_model(*a, **k):
        raise AssertionError("the replay must not train, load or call a model or an LLM")
    for name in ("warmup", "train_feedback", "train", "test", "toolretriever", "llm_client", "dense_search"):
        monkeypatch.setattr(stages, name, no_model)
    llm = get_client(cfg.llm, "replay", namespace="feedback")
    assert llm.mode == "replay"
    assert re_derive(cfg, tests, llm) > 0           # at least one refinement re-derived
