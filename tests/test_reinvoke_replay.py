"""Replaying the committed LLM caches reproduces the standard run's Re-Invoke numbers exactly, with no
model loaded: the standard run stores per-query nDCG@5 of its BM25-based LLM conditions on a slice of
ToolE multi-tool (``replay_check`` in ``results/20_reinvoke/standard.json``); this test re-derives them
from the caches through the replay backend (no LLM), with dense embedding patched to fail if called."""
from __future__ import annotations

import json
import re

import pytest

from toolkit.metrics import evaluate
from toolkit.paths import REPO
import toolkit.retrieval.dense as dense_module
from toolkit.llm.parsers import hyde_name_description
from toolkit.reinvoke import experiment as E
from toolkit.reinvoke import generation as G
from toolkit.reinvoke.pipeline import hyde_run, reinvoke_run

STANDARD = REPO / "results" / "20_reinvoke" / "standard.json"
NAME_DESC = ", name + description only"


def _run(method: str, ds, g, name: str, m: int):
    """The run of one recorded BM25 condition, spelled out (not via experiment.conditions, so the test
    also holds while the caches grow past what the standard run had)."""
    short = method.endswith(NAME_DESC)
    part = re.fullmatch(r"(.+?)(?: \[(.+)\])?(?:, m=(\d+))?", method.removesuffix(NAME_DESC))
    base, mm = part.group(1), int(part.group(3) or m)
    if base == "HyDE (BM25)" and short:
        return hyde_run(ds, "bm25", {q: hyde_name_description(d) for q, d in g.hyde[name].items()})
    if base == "Re-Invoke (BM25)":
        return reinvoke_run(ds, "bm25", g.expansions(name, mm), g.intents[name])
    if base == "HyDE (BM25)":
        return hyde_run(ds, "bm25", g.hyde[name])
    if base == "+ Intent extractor (BM25)":
        return reinvoke_run(ds, "bm25", None, g.intents[name])
    if base == "+ Query generator (BM25)":
        return reinvoke_run(ds, "bm25", g.expansions(name, mm), None)
    raise AssertionError(f"unexpected method in replay_check: {method!r}")


def _config(data):
    """The standard run's configuration, from the parameters it recorded."""
    from toolkit.reinvoke.config import config_for
    return config_for("standard", **data["parameters"].get("overrides", {}))


def test_replay_reproduces_the_standard_slice(monkeypatch):
    monkeypatch.delenv("TOOLKIT_LLM_BACKEND", raising=False)     # the standard profile replays

    def no_model(*a, **k):
        raise AssertionError("the replay check must not load a dense model")
    monkeypatch.setattr(dense_module.DenseRetriever, "embed", no_model)
    data = json.loads(STANDARD.read_text())
    check, p = data["replay_check"], data["parameters"]
    assert check["values"], "the standard run recorded no BM25-based LLM condition to re-derive"
    name = check["dataset"]
    full = E.eval_sets(_config(data), datasets=[name])[name].llm
    ds = full.subset(check["qids"])
    sets = {name: E.EvalSet(ds, ds)}
    for bb in p["backbones"]:
        assert G.client("intents", "standard", model=bb).mode == "replay"
    cfg = _config(data)
    gens = {bb: E.load_generations(sets, bb, "standard", m=p["m"], queries_task=cfg.queries_task)
            for bb in p["backbones"]}
    for method, want in check["values"].items():
        bb = re.search(r"\[(.+)\]", method)
        g = gens[bb.group(1) if bb else p["backbones"][0]]
        run = _run(method, ds, g, name, E.dataset_m(name, p["m"], p.get("m_toolbench", 0)))
        got = evaluate(run, ds.qrels, [check["metric"]], per_query=True, ties=check["ties"])[check["metric"]]
        assert got == pytest.approx(want, abs=0), method          # exact
    assert len(check["qids"]) >= 10


def test_replay_check_fails_on_a_changed_cache_answer(monkeypatch, tmp_path):
    """The check can fail: the same slice with one intent changed gives other numbers."""
    monkeypatch.delenv("TOOLKIT_LLM_BACKEND", raising=False)
    data = json.loads(STANDARD.read_text())
    check, p = data["replay_check"], data["parameters"]
    method = next((m for m in check["values"] if "Intent" in m or "Re-Invoke" in m), None)
    if method is None:
        pytest.skip("no intent-based condition in the replay check")
    name = check["dataset"]
    ds = E.eval_sets(_config(data), datasets=[name])[name].llm.subset(check["qids"])
    g = E.load_generations({name: E.EvalSet(ds, ds)}, p["backbones"][0], "standard", m=p["m"],
                           queries_task=_config(data).queries_task)
    g.intents[name] = {q: ["zzzz unrelated words"] for q in g.intents[name]}
    got = evaluate(_run(method, ds, g, name, p["m"]), ds.qrels, [check["metric"]], per_query=True,
                   ties=check["ties"])[check["metric"]]
    assert got != check["values"][method]
